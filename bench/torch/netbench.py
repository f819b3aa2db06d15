#!/usr/bin/python3
"""Times the reference PyTorch PNEC-Mamba on a synthetic scene, for bench/cmd/torchcmp.

It imports the reference implementation from --ref (../shared/reference/pnec_torch.py; it is
used, not copied) and measures, in this one process, either full-scene inference (the
reference's infer(): network, bilinear upsampling, softmax and AvgPool recovery) or one full
training step (forward with train labels, the four losses, backward, Adam). One untimed
warm-up operation runs first; the result is one JSON line on stdout with the median seconds
per operation of --steps timed operations. Peak RSS is measured by the caller (wait4).

The scene is the same deterministic pattern bench/cmd/netbench builds for pnec: smooth class
blocks plus a per-band ramp, values in [0, 1]; timings do not depend on the values.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True, help="folder holding pnec_torch.py")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--cols", type=int, required=True)
    ap.add_argument("--bands", type=int, required=True)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--encoder", choices=["paper", "cell"], required=True)
    ap.add_argument("--mode", choices=["infer", "train"], required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    # The reference reads its encoder from the environment at import time.
    os.environ["PNEC_ENCODER"] = "full" if a.encoder == "paper" else "cell"
    sys.path.insert(0, a.ref)
    import numpy as np
    import torch
    import pnec_torch as ref

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    H, W, B, K = a.rows, a.cols, a.bands, a.classes
    r = np.arange(H)[:, None]
    c = np.arange(W)[None, :]
    labels = ((r // 37) * 7 + (c // 29)) % K  # class blocks
    # Built directly in the network's [bands, H, W] layout and shared with the tensor, so the
    # process holds one copy of the scene, as pnec does.
    band = np.arange(B, dtype=np.float32)[:, None, None]
    X = (0.2 + 0.6 * (labels[None] + 1) / (K + 1) + 0.1 * np.sin(band / 7.0 + labels[None])).astype(np.float32)
    x = torch.from_numpy(X)[None]

    model = ref.PNECMamba(B, K)
    h, w = ref.low_res_shape(H, W)

    if a.mode == "infer":
        def op():
            ref.infer(model, x, 1.0, H, W)
    else:
        train_mask, _ = ref.split_train_test(labels.astype(np.int64), 15, 12345)
        y_train = np.where(train_mask, labels, -1).astype(np.int64)
        info = ref.make_train_info(y_train, H, W, h, w)
        y_full = torch.from_numpy(y_train)[None]
        opt = torch.optim.Adam(model.parameters(), lr=3e-4)

        def op():
            model.train()
            out = model(x, s=1.0, train_info=info)
            loss, _ = ref.compute_loss(out, y_full, H, W)
            opt.zero_grad()
            loss.backward()
            opt.step()

    t0 = time.perf_counter()
    op()
    warm = time.perf_counter() - t0
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        op()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"impl": "torch", "version": torch.__version__, "threads": torch.get_num_threads(),
                      "first_s": warm, "median_s": times[len(times) // 2], "min_s": times[0],
                      "max_s": times[-1], "steps": a.steps, "low_res": [h, w]}))


if __name__ == "__main__":
    main()
