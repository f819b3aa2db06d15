#!/usr/bin/python3
"""decision_ablation.py: what each choice of the fused decision is worth (issue 45).

    scripts/decision_ablation.py --work /tmp/pnec-bench-baselines [--pnec bin/pnec]

Run after `make bench-baselines` (it reads WORK's default models and their network
probabilities, seed 202501, on the fixed splits of SalinasA and JasperRidge). The decision is
recomputed here in numpy from the network's probabilities as the products store them (percent),
so the figures are close to, not bit for bit, pnec's own (model/decision.go); each row changes one
choice against the fused decision as pnec implements it:

  network, window 9        the paper's decision
  spectra alone            nearest training pixel by spectral angle (1-NN SAM), no network
  fused, plain references  the training spectra without their augmented copies
  fused, copies without a penalty  every copy counts as a training spectrum (pnec before the
                           copy penalty)
  fused, window 9          the recovery window fixed at the paper's instead of chosen
  fused, weight W          the spectral evidence's weight against the network's (pnec: 4, or
                           16 where the window chosen is 1: model.spectralWeightFor)
  fused (pnec)             augmented references aligned to the scene with the copy penalty, T,
                           window and weight chosen by leaving training pixels out

and, on each scene, the same model on changed copies of the scene (tilts of 10% and a band shift,
made here as pnec's Radiometric makes them), classified by `pnec classify`.

The decision here is pnec's until 2026-12-07 (the copy penalty chosen, the nearest training
spectrum); scripts/decision_localmean.py compares it with pnec's since (penalty pi, the local mean
of two).
"""
import argparse
import os
import subprocess

import numpy as np
from osgeo import gdal
from scipy.ndimage import uniform_filter

gdal.UseExceptions()
SEED = 202501


def rd(p):
    return gdal.Open(p).ReadAsArray()


def unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def shape_at(kind, u):
    if kind == "bow":
        x = 2 * u - 1
        return 1 - 2 * x * x
    if kind == "wave":
        return np.sin(2 * np.pi * u)
    return 2 * u - 1


def change(x, tilt=0.0, kind="lin", shift=0):
    """x ([..., bands]) tilted and shifted by whole bands (edge bands repeated)."""
    b = x.shape[-1]
    u = np.arange(b) / (b - 1)
    idx = np.clip(np.arange(b) + shift, 0, b - 1)
    return x[..., idx] * (1 + tilt * shape_at(kind, u))


def augmented(refs, ys, tilt=0.25, shifts=1):
    out, oy = [refs], [ys]
    for kind in ("lin", "bow", "wave"):
        for a in (-tilt, -tilt / 2, tilt / 2, tilt):
            out.append(change(refs, a, kind))
            oy.append(ys)
    for s in range(1, shifts + 1):
        for sg in (s, -s):
            out.append(change(refs, shift=sg))
            oy.append(ys)
            for kind in ("lin", "bow", "wave"):
                for a in (-tilt / 2, tilt / 2):
                    out.append(change(refs, a, kind, sg))
                    oy.append(ys)
    return np.concatenate(out), np.concatenate(oy)


def class_angles(u, refs, ys, vals, exclude=None):
    cos = u @ unit(refs).T
    if exclude is not None:
        cos[:, exclude] = -2
    return np.stack([np.arccos(np.clip(cos[:, ys == v].max(1), -1, 1)) for v in vals], -1)


def softmax_neg(a, t):
    z = -(a - a.min(-1, keepdims=True)) / t
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def box(p, w):
    if w <= 1:
        return p
    ones = uniform_filter(np.ones(p.shape[:2]), w, mode="constant")
    return np.stack([uniform_filter(p[..., k], w, mode="constant") / ones for k in range(p.shape[-1])], -1)


PENALTIES = (0, 0.005, 0.01, 0.02, 0.04, np.pi)


def penalised(plain_angles, copy_angles, pen):
    return np.minimum(plain_angles, copy_angles + pen)


def choose(cube, tr, vals, plain, py, copies, cy, penalties=PENALTIES):
    """T, copy penalty and window as model/decision_choose.go chose them until 2026-12-07 (since,
    the penalty is pi and the decision measures to a local mean: scripts/decision_localmean.py)."""
    rows, cols, b = cube.shape
    u = unit(cube)
    ti = np.flatnonzero(tr.ravel() > 0)
    n = len(ti)
    y = np.searchsorted(vals, tr.ravel()[ti])
    outs = []
    for q, i in enumerate(ti):
        r, c = divmod(i, cols)
        r0, r1, c0, c1 = max(r - 4, 0), min(r + 5, rows), max(c - 4, 0), min(c + 5, cols)
        px = u[r0:r1, c0:c1].reshape(-1, b)
        shape = (r1 - r0, c1 - c0, -1)
        ap = class_angles(px, plain, py, vals, np.array([q])).reshape(shape)
        ac = class_angles(px, copies, cy, vals, np.arange(q, len(cy), n)).reshape(shape) if len(cy) else np.full_like(ap, np.pi)
        outs.append((ap, ac, r - r0, c - c0))

    def score(t, pen, w):
        ll, right = 0.0, 0
        for q, (ap, ac, rr, cc) in enumerate(outs):
            h = w // 2
            a = penalised(ap, ac, pen)[max(rr - h, 0):rr + h + 1, max(cc - h, 0):cc + h + 1]
            p = softmax_neg(a, t).reshape(-1, len(vals)).mean(0)
            ll += np.log(p[y[q]] + 1e-12)
            right += int(p.argmax() == y[q])
        return ll, right

    best = None
    for pen in penalties if len(cy) else (0,):
        t = max((10 ** e for e in np.arange(-4, 0.001, 0.125)), key=lambda t: score(t, pen, 1)[0])
        right = score(t, pen, 1)[1]
        if best is None or right > best[2]:
            best = (t, pen, right)
    t, pen, _ = best
    rights = {w: score(t, pen, w)[1] for w in (1, 3, 5, 7, 9)}
    return t, pen, max(w for w in rights if rights[w] == max(rights.values()))


def align_from(angles):
    """The group aligned from angles ([groups, pixels]: each sampled pixel's angle to its nearest
    reference of each group), as model.alignFrom chooses it: judged on the quarter of the pixels
    nearest any reference, a group of copies only where it fits them 5% closer than the spectra."""
    nearest = angles.min(0)
    cut = np.sort(nearest)[max(0, int(np.ceil(0.25 * len(nearest))) - 1)]
    m = angles[:, nearest <= cut].sum(1)
    g = int(np.argmin(m))
    return g if g > 0 and m[g] <= 0.95 * m[0] else 0


def spectral_angles(u, plain, py, copies, cy, vals, pen):
    """Angles ([n, classes]) as model.NewAlignedReference measures them: the pixels u are aligned
    to the group of copies (blocks of len(py), in the order of augmented()) or the spectra that
    fit a sample of them best (align_from), and the angles to every other reference count pen
    more."""
    ap = class_angles(u, plain, py, vals)
    if not len(cy):
        return ap
    groups = [ap] + [class_angles(u, g, py, vals) for g in np.split(copies, len(cy) // len(py))]
    if pen == 0:
        return np.min(groups, axis=0)
    sample = np.arange(0, len(u), max(1, len(u) // 4096))
    g = align_from(np.array([a[sample].min(-1) for a in groups]))
    others = np.min([a for k, a in enumerate(groups) if k != g], axis=0)
    return np.minimum(groups[g], others + pen)


def weight_for(window):
    """The spectral weight pnec takes for the window the training pixels support
    (model.spectralWeightFor)."""
    return 16.0 if window <= 1 else 4.0


def fused(pnet, ang, t, w, weight=4.0):
    s = np.log(np.maximum(pnet, 1e-3)) - weight * ang / t
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    return box(p / p.sum(-1, keepdims=True), w)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/pnec-bench-baselines")
    ap.add_argument("--pnec", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bin", "pnec"))
    args = ap.parse_args()
    w_ = args.work
    print("| scene | decision | OA %% (fixed split, seed %d) |" % SEED)
    print("|---|---|---|")
    shifted = {}
    for name in ("SalinasA", "JasperRidge"):
        cube = np.transpose(rd(f"{w_}/{name}.tif").astype(np.float64), (1, 2, 0))
        gt, tr = rd(f"{w_}/{name}_gt.tif").astype(int), rd(f"{w_}/{name}_train.tif").astype(int)
        vals = np.array(sorted(int(v) for v in np.unique(tr) if v > 0))
        test = (gt > 0) & (tr == 0)
        b = cube.shape[-1]
        ti = np.flatnonzero(tr.ravel() > 0)
        plain, py = cube.reshape(-1, b)[ti], tr.ravel()[ti]
        aug, ay = augmented(plain, py)
        copies, cy = aug[len(py):], ay[len(py):]
        none = np.zeros((0, b)), np.zeros(0, int)
        t_p, _, w_p = choose(cube, tr, vals, plain, py, *none)
        t_0, _, w_0 = choose(cube, tr, vals, plain, py, copies, cy, penalties=(0,))
        t_a, pen, w_a = choose(cube, tr, vals, plain, py, copies, cy)
        prob = f"{w_}/{name}-fixed-{SEED}.probabilities.tif"
        pnet = rd(prob).astype(np.float64).transpose(1, 2, 0) / 100

        def oa(p, test=test, gt=gt, vals=vals):
            return 100 * np.mean(vals[p.argmax(-1)][test] == gt[test])

        u = unit(cube).reshape(-1, b)
        a_p = spectral_angles(u, plain, py, *none, vals, 0).reshape(gt.shape + (-1,))
        a_0 = spectral_angles(u, plain, py, copies, cy, vals, 0).reshape(gt.shape + (-1,))
        a_a = spectral_angles(u, plain, py, copies, cy, vals, pen).reshape(gt.shape + (-1,))
        rows = [("network, window 9 (the paper's decision)", box(pnet, 9)),
                ("spectra alone (1-NN by spectral angle)", softmax_neg(a_p, 1e-4)),
                ("fused, plain references (T %.3g, window %d)" % (t_p, w_p), fused(pnet, a_p, t_p, w_p, weight_for(w_p))),
                ("fused, copies without a penalty (T %.3g, window %d)" % (t_0, w_0), fused(pnet, a_0, t_0, w_0, weight_for(w_0))),
                ("fused, window 9 instead of %d" % w_a, fused(pnet, a_a, t_a, 9, weight_for(w_a)))]
        wt_a = weight_for(w_a)
        rows += [("fused, weight %g" % wt, fused(pnet, a_a, t_a, w_a, wt)) for wt in (1, 2, 4, 10, 16, 64) if wt != wt_a]
        rows.append(("fused as pnec decides (weight %g, copies with penalty %g rad, T %.3g, window %d)" % (wt_a, pen, t_a, w_a),
                     fused(pnet, a_a, t_a, w_a, wt_a)))
        for label, p in rows:
            print("| %s | %s | %.2f |" % (name, label, oa(p)))
        model = f"{w_}/{name}-fixed-{SEED}.pnec"
        ds = gdal.Open(f"{w_}/{name}.tif")
        for label, kw in [("tilt +10% linear", dict(tilt=0.1)), ("tilt -10% linear", dict(tilt=-0.1)),
                          ("tilt +10% bow", dict(tilt=0.1, kind="bow")), ("tilt -10% wave", dict(tilt=-0.1, kind="wave")),
                          ("band shift +1", dict(shift=1)), ("tilt -10% linear, band shift -1", dict(tilt=-0.1, shift=-1))]:
            path = os.path.join(w_, "ablation-%s-%s.tif" % (name, label.replace(" ", "_").replace("%", "")))
            if not os.path.exists(path + ".out.tif"):
                x = change(cube, **kw)
                out = gdal.GetDriverByName("GTiff").CreateCopy(path, ds)
                for k in range(b):
                    out.GetRasterBand(k + 1).WriteArray(np.round(x[..., k]))
                out = None
                subprocess.run([args.pnec, "classify", "--model", model, "--scene", path, "--out", path + ".out.tif", "-q",
                                "--probabilities", "network"], check=True)
            pn = rd(path + ".out.probabilities.tif").astype(np.float64).transpose(1, 2, 0) / 100
            xu = unit(np.transpose(rd(path).astype(np.float64), (1, 2, 0))).reshape(-1, b)
            shifted[(name, label)] = (oa(box(pn, 9)),
                              oa(fused(pn, spectral_angles(xu, plain, py, *none, vals, 0).reshape(gt.shape + (-1,)), t_p, w_p, weight_for(w_p))),
                              oa(fused(pn, spectral_angles(xu, plain, py, copies, cy, vals, pen).reshape(gt.shape + (-1,)), t_a, w_a, wt_a)))
    print()
    print("| scene | changed scene | network, window 9 | fused, plain references | fused (pnec) |")
    print("|---|---|---|---|---|")
    for (name, label), (a, b_, c) in shifted.items():
        print("| %s | %s | %.2f | %.2f | %.2f |" % (name, label, a, b_, c))


if __name__ == "__main__":
    main()
