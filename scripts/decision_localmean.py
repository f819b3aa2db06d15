#!/usr/bin/python3
"""decision_localmean.py: the fused decision's local mean and copy penalty pi (issue 45).

    scripts/decision_localmean.py --work /tmp/pnec-bench-baselines [--scenes SalinasA,JasperRidge]

Run after `make bench-baselines` (it reads WORK's scenes and the network probabilities of every
fixed-split seed and half draw). The decision is recomputed in numpy as scripts/decision_ablation.py
computes it (close to, not bit for bit, pnec's own), four ways on the same pixels and networks:

  before       the nearest training spectrum of each class, the copy penalty chosen from 0 to pi
               by the left-out pixels (the smallest at which as many are right as at any), T and
               the window chosen with it (pnec until 2026-12-07)
  nearest, pi  the nearest, the copies counted only where the scene aligns to them (penalty pi)
  mean, pi, chosen on the mean   the angle to the unit mean of the class's two nearest
               references of the aligned group (model.DecisionLocalMean), T and the window
               chosen by the left-out pixels measured the same way
  mean, pi     the same with T and the window chosen on the nearest (pnec now)

Halves: each direction's mean over its draws; fixed: the mean over the seeds' networks. About 15
minutes on 2 cores for both scenes.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.argv, _argv = sys.argv[:1], sys.argv  # bench_baselines parses nothing at import
from bench_baselines import cube_of, draw, half_windows, read  # noqa: E402
from decision_ablation import (PENALTIES, align_from, augmented, class_angles, fused, rd,  # noqa: E402
                               softmax_neg, unit, weight_for)
sys.argv = _argv

DIRECTIONS = ("left->right", "right->left", "top->bottom", "bottom->top")
TEMPERATURES = [10 ** e for e in np.arange(-4, 0.001, 0.125)]


def mean_angles(u, refs, ys, vals, k=2, exclude=None):
    """Angle ([n, classes]) from each pixel to the unit mean of the k nearest of each class."""
    R = unit(refs)
    cos = np.clip(u @ R.T, -1, 1)
    out = []
    for v in vals:
        sel = np.flatnonzero(ys == v)
        if exclude is not None:
            sel = sel[~np.isin(sel, exclude)]
        c = cos[:, sel]
        if k <= 1 or len(sel) < 2:
            out.append(np.arccos(c.max(1)))
            continue
        idx = np.argsort(-c, 1)[:, :min(k, len(sel))]
        m = unit(R[sel][idx].sum(1))
        out.append(np.arccos(np.clip(np.sum(u * m, 1), -1, 1)))
    return np.stack(out, -1)


def left_out(cube, tr, vals, plain, py, copies, cy, k):
    """Each training pixel's 9 x 9 window: angles to the other training spectra (nearest or local
    mean of k) and to the other pixels' copies."""
    rows, cols, b = cube.shape
    u = unit(cube)
    ti = np.flatnonzero(tr.ravel() > 0)
    n = len(ti)
    outs = []
    for q, i in enumerate(ti):
        r, c = divmod(i, cols)
        r0, r1, c0, c1 = max(r - 4, 0), min(r + 5, rows), max(c - 4, 0), min(c + 5, cols)
        px = u[r0:r1, c0:c1].reshape(-1, b)
        shape = (r1 - r0, c1 - c0, -1)
        ap = mean_angles(px, plain, py, vals, k, np.array([q])).reshape(shape)
        ac = class_angles(px, copies, cy, vals, np.arange(q, len(cy), n)).reshape(shape)
        outs.append((ap, ac, r - r0, c - c0))
    return outs, np.searchsorted(vals, tr.ravel()[ti])


def score(outs, y, nv, t, pen, w):
    ll, right = 0.0, 0
    for q, (ap, ac, rr, cc) in enumerate(outs):
        h = w // 2
        a = np.minimum(ap, ac + pen)[max(rr - h, 0):rr + h + 1, max(cc - h, 0):cc + h + 1]
        p = softmax_neg(a, t).reshape(-1, nv).mean(0)
        ll += np.log(p[y[q]] + 1e-12)
        right += int(p.argmax() == y[q])
    return ll, right


def choose(outs, y, nv, penalties):
    best = None
    for pen in penalties:
        t = max(TEMPERATURES, key=lambda t: score(outs, y, nv, t, pen, 1)[0])
        right = score(outs, y, nv, t, pen, 1)[1]
        if best is None or right > best[2]:
            best = (t, pen, right)
    t, pen, _ = best
    rights = {w: score(outs, y, nv, t, pen, w)[1] for w in (1, 3, 5, 7, 9)}
    return t, pen, max(w for w in rights if rights[w] == max(rights.values()))


def angles(u, plain, py, copies, cy, vals, pen, k):
    """The aligned decision's angles: the group the scene aligns to (model.alignFrom, on the
    nearest) measured to the nearest or the local mean of k, the others plus pen."""
    groups = [class_angles(u, plain, py, vals)]
    cg = np.split(copies, len(cy) // len(py))
    groups += [class_angles(u, g, py, vals) for g in cg]
    if pen == 0:
        return np.min(groups, axis=0)
    sample = np.arange(0, len(u), max(1, len(u) // 4096))
    g = align_from(np.array([a[sample].min(-1) for a in groups])) if len(sample) >= 2048 else 0
    own = mean_angles(u, plain if g == 0 else cg[g - 1], py, vals, k)
    others = np.min([a for j, a in enumerate(groups) if j != g], axis=0)
    return np.minimum(own, others + pen)


def cases(work, name):
    """(case, training cube, training labels, test cube, test labels, network probability files)."""
    cube = cube_of(f"{work}/{name}.tif")
    gt = read(f"{work}/{name}_gt.tif").astype(int)
    trf = read(f"{work}/{name}_train.tif").astype(int)
    seeds = sorted(f for f in os.listdir(work) if f.startswith(f"{name}-fixed-") and f.endswith(".probabilities.tif"))
    yield "fixed", cube, trf, cube, np.where(trf > 0, 0, gt), [f"{work}/{f}" for f in seeds]
    rows, cols = gt.shape
    for direction in DIRECTIONS:
        trw, tew = half_windows(rows, cols, direction)
        sl = lambda w: (slice(w[1], w[1] + w[3]), slice(w[0], w[0] + w[2]))  # noqa: E731
        slug = direction.replace("->", "-to-")
        d = 0
        while os.path.exists(f"{work}/{name}-{slug}-{d}.probabilities.tif"):
            yield (direction, cube[sl(trw)], draw(gt[sl(trw)], 15, 1000 + d), cube[sl(tew)], gt[sl(tew)],
                   [f"{work}/{name}-{slug}-{d}.probabilities.tif"])
            d += 1


VARIANTS = (  # name, local mean k, penalties, k the choices are made with
    ("before", 1, PENALTIES, 1),
    ("nearest, pi", 1, (np.pi,), 1),
    ("mean, pi, chosen on the mean", 2, (np.pi,), 2),
    ("mean, pi (pnec)", 2, (np.pi,), 1),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/pnec-bench-baselines")
    ap.add_argument("--scenes", default="SalinasA,JasperRidge")
    args = ap.parse_args()
    print("| scene | case | " + " | ".join(v[0] for v in VARIANTS) + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    for name in args.scenes.split(","):
        rows = {}
        for case, ctr, tr, cte, gte, nets in cases(args.work, name):
            b = ctr.shape[-1]
            vals = np.array(sorted(int(v) for v in np.unique(tr) if v > 0))
            ti = np.flatnonzero(tr.ravel() > 0)
            plain, py = ctr.reshape(-1, b)[ti], tr.ravel()[ti]
            aug, ay = augmented(plain, py)
            copies, cy = aug[len(py):], ay[len(py):]
            test = np.isin(gte, vals) & (gte > 0)
            u = unit(cte).reshape(-1, b)
            pnets = [rd(f).astype(np.float64).transpose(1, 2, 0) / 100 for f in nets]
            outs = {k: left_out(ctr, tr, vals, plain, py, copies, cy, k) for k in (1, 2)}
            for vname, k, pens, kc in VARIANTS:
                t, pen, w = choose(*outs[kc], len(vals), pens)
                a = angles(u, plain, py, copies, cy, vals, pen, k).reshape(gte.shape + (-1,))
                oa = np.mean([100 * np.mean(vals[fused(p, a, t, w, weight_for(w)).argmax(-1)][test] == gte[test])
                              for p in pnets])
                rows.setdefault(case, {}).setdefault(vname, []).append(oa)
        for case, by in rows.items():
            print(f"| {name} | {case} | " + " | ".join("%.2f" % np.mean(by[v[0]]) for v in VARIANTS) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
