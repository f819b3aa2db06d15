#!/usr/bin/python3
"""bench_baselines.py: pnec's map against the classic per-pixel baselines on the same pixels.

    scripts/bench_baselines.py --pnec bin/pnec --work /tmp/pnec-bench-baselines [--seeds 5] [--draws 3]
        [--cases fixed,halves,synth] [--scenes SalinasA,JasperRidge] [--synth synth-PaviaU,synth-Houston]
        [--tag NAME --pnec-flags '...']
        [--report bench/baselines.md]

Cases (issue 45):
  fixed   the fixed 15-per-class split of ../shared/data (split seed 12345); test = every
          other labelled pixel. pnec: --seeds runs (202501, ...).
  halves  spatially disjoint halves in four directions (left->right, right->left, top->bottom,
          bottom->top): 15 pixels per class drawn inside the training half (draws 0..D-1),
          pnec trained on the training half alone (run seed 202501 + draw) and applied to
          the other half; OA on the other half's labelled pixels of the classes the
          training half holds (the classes it lacks are listed).
  synth   `pnec synth --layout` of the Pavia University and Houston 2013 ground truths
          (spectra of SalinasA), 15 per class drawn with split seed 12345.

Baselines, all on exactly the training pixels pnec gets (scikit-learn, Debian's
python3-sklearn): RBF-SVM on standardised spectra (C and gamma by 3-fold stratified CV on the
training pixels only), 1-nearest neighbour by spectral angle, random forest (500 trees).
pnec's map is the class band of `pnec classify` with the defaults (what a user gets), scored on
the same pixels. Every result is kept as JSON under WORK (a rerun resumes); the report is
Markdown with the machine and commit.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np
from osgeo import gdal

gdal.UseExceptions()

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.environ.get("PNEC_DATA", os.path.join(ROOT, "..", "shared", "data"))
FIRST_SEED = 202501
DIRECTIONS = ["left->right", "right->left", "top->bottom", "bottom->top"]


def read(path):
    ds = gdal.Open(path)
    a = ds.ReadAsArray()
    return a


def cube_of(path):
    a = read(path).astype(np.float64)
    if a.ndim == 2:
        a = a[None]
    return np.transpose(a, (1, 2, 0))  # rows, cols, bands


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        f.flush()
        t0 = time.time()
        r = subprocess.run(cmd, stdout=f, stderr=f)
        f.write("# %.1f s, exit %d\n" % (time.time() - t0, r.returncode))
    if r.returncode != 0:
        sys.exit("bench_baselines: command failed (log %s): %s" % (log, " ".join(cmd)))


# ---------------------------------------------------------------- scenes


def import_scenes(pnec, work):
    """The benchmark scenes as GeoTIFFs (pnec import mat), once."""
    out = {}
    specs = {
        "SalinasA": ("SalinasA/SalinasA_corrected.mat", "SalinasA/SalinasA_gt.mat", "SalinasA/SalinasA_train_seed12345.mat"),
        "JasperRidge": ("JasperRidge/JasperRidge2_R198.mat", "JasperRidge/JasperRidge_gt.mat", "JasperRidge/JasperRidge_train_seed12345.mat"),
    }
    for name, (cube, gt, train) in specs.items():
        s = os.path.join(work, name + ".tif")
        if not os.path.exists(s):
            run([pnec, "import", "mat", "--cube", os.path.join(DATA, cube), "--labels", os.path.join(DATA, gt),
                 "--out", s, "--labels-out", os.path.join(work, name + "_gt.tif")], os.path.join(work, "import.log"))
            run([pnec, "import", "mat", "--labels", os.path.join(DATA, train), "--labels-out", os.path.join(work, name + "_train.tif")],
                os.path.join(work, "import.log"))
        out[name] = (s, os.path.join(work, name + "_gt.tif"), os.path.join(work, name + "_train.tif"))
    return out


SYNTH_LAYOUTS = {"synth-PaviaU": "PaviaU/paviaU_gt.mat", "synth-Houston": "Houston2013/Houston_gt.mat"}


def synth_scenes(pnec, work, names):
    """Synthetic scenes on the real layouts of Pavia University and Houston 2013 (those named)."""
    out = {}
    for name in names:
        layout = SYNTH_LAYOUTS[name]
        s = os.path.join(work, name + ".tif")
        gt = os.path.join(work, name + "_gt.tif")
        if not os.path.exists(s):
            run([pnec, "synth", "--layout", os.path.join(DATA, layout), "--spectra", "SalinasA", "--data-dir", DATA,
                 "--bands", "103", "--seed", "7", "--out", s, "--labels-out", gt], os.path.join(work, "synth.log"))
        tr = os.path.join(work, name + "_train.tif")
        if not os.path.exists(tr):
            labels = read(gt)
            write_like(gt, tr, draw(labels, 15, 12345))
        out[name] = (s, gt, tr)
    return out


def write_like(template, path, arr, srcwin=None):
    ds = gdal.Open(template)
    drv = gdal.GetDriverByName("GTiff")
    tmp = path + ".tmp.tif"
    o = drv.Create(tmp, arr.shape[1], arr.shape[0], 1, gdal.GDT_Byte)
    gt = list(ds.GetGeoTransform())
    if srcwin is not None:
        gt[0] += srcwin[0] * gt[1] + srcwin[1] * gt[2]
        gt[3] += srcwin[0] * gt[4] + srcwin[1] * gt[5]
    o.SetGeoTransform(gt)
    if ds.GetProjection():
        o.SetProjection(ds.GetProjection())
    o.GetRasterBand(1).WriteArray(arr.astype(np.uint8))
    o = None
    os.replace(tmp, path)


def draw(labels, per_class, seed):
    """per_class pixels of every class, drawn with seed (fewer where a class has fewer)."""
    rng = np.random.default_rng(seed)
    out = np.zeros_like(labels)
    for c in np.unique(labels):
        if c == 0:
            continue
        idx = np.flatnonzero(labels == c)
        pick = rng.choice(idx, size=min(per_class, len(idx)), replace=False)
        out.flat[pick] = c
    return out


def half_windows(rows, cols, direction):
    """(train srcwin, test srcwin) as (xoff, yoff, xsize, ysize)."""
    h, w = rows // 2, cols // 2
    left, right = (0, 0, w, rows), (w, 0, cols - w, rows)
    top, bottom = (0, 0, cols, h), (0, h, cols, rows - h)
    return {"left->right": (left, right), "right->left": (right, left),
            "top->bottom": (top, bottom), "bottom->top": (bottom, top)}[direction]


def crop(src, path, win):
    if not os.path.exists(path):
        gdal.Translate(path + ".tmp.tif", src, srcWin=list(win))
        os.replace(path + ".tmp.tif", path)


# ------------------------------------------------------------- baselines


def baselines(x_train, y_train, x_test):
    """Predictions of the three baselines."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    out = {}
    folds = min(3, int(np.bincount(y_train.astype(int))[np.unique(y_train.astype(int))].min()))
    grid = {"svc__C": [1, 10, 100, 1000, 10000], "svc__gamma": [1e-4, 1e-3, 1e-2, 1e-1, 1]}
    svm = GridSearchCV(make_pipeline(StandardScaler(), SVC(kernel="rbf")), grid,
                       cv=StratifiedKFold(max(folds, 2), shuffle=True, random_state=0), n_jobs=1)
    svm.fit(x_train, y_train)
    out["svm"] = svm.predict(x_test)
    a = x_train / np.maximum(np.linalg.norm(x_train, axis=1, keepdims=True), 1e-12)
    b = x_test / np.maximum(np.linalg.norm(x_test, axis=1, keepdims=True), 1e-12)
    nn = np.empty(len(b), dtype=y_train.dtype)
    for i in range(0, len(b), 4096):
        nn[i:i + 4096] = y_train[np.argmax(b[i:i + 4096] @ a.T, axis=1)]
    out["sam1nn"] = nn
    rf = RandomForestClassifier(n_estimators=500, random_state=0, n_jobs=1)
    rf.fit(x_train, y_train)
    out["rf"] = rf.predict(x_test)
    return out


def scores(pred, truth):
    classes = sorted(int(c) for c in np.unique(truth))
    per = {str(c): float(np.mean(pred[truth == c] == c)) * 100 for c in classes}
    return {"oa": float(np.mean(pred == truth)) * 100, "aa": float(np.mean(list(per.values()))), "per_class": per,
            "pixels": int(len(truth))}


# ------------------------------------------------------------------ pnec


def pnec_map(pnec, flags, scene, train_scene, train_mask, train_labels, seed, work, name):
    """The class band of pnec classify (defaults) of scene with a model trained on train_scene."""
    model = os.path.join(work, name + ".pnec")
    prod = os.path.join(work, name + ".tif")
    log = os.path.join(work, name + ".log")
    if not os.path.exists(prod):
        t0 = time.time()
        run([pnec, "train", "--scene", train_scene, "--labels", train_labels, "--train-mask", train_mask,
             "--out", model, "--seed", str(seed), "-q"] + flags, log)
        t1 = time.time()
        # The network's probabilities are kept beside the product for the
        # ablations (the class band is the same with or without them).
        run([pnec, "classify", "--model", model, "--scene", scene, "--out", prod, "-q", "--probabilities", "network"], log)
        with open(os.path.join(work, name + ".time"), "w") as f:
            f.write("%.1f\n" % (t1 - t0))
    return read(prod)[0].astype(np.int64)


# ----------------------------------------------------------------- cases


def load(key):
    return json.load(open(key)) if os.path.exists(key) else None


def save(key, res):
    with open(key + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(key + ".tmp", key)


def fixed_case(args, name, paths, work):
    """The fixed split: baselines once, pnec (this variant) for every seed asked."""
    scene, gt, train = paths
    key = os.path.join(work, "%s-fixed.json" % name)
    res = load(key) or {"scene": name, "case": "fixed", "methods": {}}
    cube, labels, tr = cube_of(scene), read(gt).astype(np.int64), read(train).astype(np.int64)
    test = (labels > 0) & (tr == 0)
    res["train_pixels"] = int((tr > 0).sum())
    if not args.pnec_only and "svm" not in res["methods"]:
        b = baselines(cube[tr > 0], tr[tr > 0], cube[test])
        for k, v in b.items():
            res["methods"][k] = [scores(v, labels[test])]
        save(key, res)
    method = "pnec" + args.tag_suffix
    res.setdefault("flags", {})[method] = args.pnec_flags
    runs = res["methods"].setdefault(method, [])
    done = {r.get("seed") for r in runs}
    for i in range(args.seeds):
        seed = FIRST_SEED + i
        if seed in done:
            continue
        m = pnec_map(args.pnec, args.flags, scene, scene, train, gt, seed, work, "%s-fixed%s-%d" % (name, args.tag_suffix, seed))
        sc = scores(m[test], labels[test])
        sc["seed"] = seed
        sc["version"] = args.version
        runs.append(sc)
        save(key, res)
    return res


def halves_case(args, name, paths, direction, d, work):
    """One draw of one direction: baselines once, pnec (this variant) once."""
    scene, gt, _ = paths
    tag = direction.replace("->", "-to-")
    key = os.path.join(work, "%s-%s-%d.json" % (name, tag, d))
    res = load(key) or {"scene": name, "case": direction, "draw": d, "methods": {}}
    method = "pnec" + args.tag_suffix
    if method in res["methods"] and (args.pnec_only or "svm" in res["methods"]):
        return res
    labels_all = read(gt).astype(np.int64)
    rows, cols = labels_all.shape
    trw, tew = half_windows(rows, cols, direction)
    base = os.path.join(work, "%s-%s" % (name, tag))
    crop(scene, base + "-train-scene.tif", trw)
    crop(gt, base + "-train-gt.tif", trw)
    crop(scene, base + "-test-scene.tif", tew)
    crop(gt, base + "-test-gt.tif", tew)
    trl = read(base + "-train-gt.tif").astype(np.int64)
    tel = read(base + "-test-gt.tif").astype(np.int64)
    mask_path = "%s-train-%d.tif" % (base, d)
    if not os.path.exists(mask_path):
        write_like(gt, mask_path, draw(trl, 15, 1000 + d), srcwin=trw)
    tr = read(mask_path).astype(np.int64)
    held = set(int(c) for c in np.unique(tr) if c > 0)
    res["lacking"] = sorted(set(int(c) for c in np.unique(tel) if c > 0) - held)
    test = np.isin(tel, list(held))
    if not args.pnec_only and "svm" not in res["methods"]:
        cube_tr, cube_te = cube_of(base + "-train-scene.tif"), cube_of(base + "-test-scene.tif")
        b = baselines(cube_tr[tr > 0], tr[tr > 0], cube_te[test])
        for k, v in b.items():
            res["methods"][k] = [scores(v, tel[test])]
        save(key, res)
    if method not in res["methods"]:
        res.setdefault("flags", {})[method] = args.pnec_flags
        m = pnec_map(args.pnec, args.flags, base + "-test-scene.tif", base + "-train-scene.tif", mask_path, base + "-train-gt.tif",
                     FIRST_SEED + d, work, "%s-%s-%d%s" % (name, tag, d, args.tag_suffix))
        sc = scores(m[test], tel[test])
        sc["version"] = args.version
        res["methods"][method] = [sc]
        save(key, res)
    return res


# ---------------------------------------------------------------- report


def mean(xs):
    return float(np.mean(xs)) if xs else float("nan")


def flags_of(results):
    """Each variant's pnec train flags."""
    seen = {}
    for r in results:
        for m, f in r.get("flags", {}).items():
            if m != "pnec":
                seen[m] = f
    return "; ".join("`%s`: `pnec train %s`" % (m, f) for m, f in sorted(seen.items()))


def versions_of(results):
    """Which pnec versions made each variant's runs (a result kept from an earlier run keeps its own)."""
    seen = {}
    for r in results:
        for m, runs in r["methods"].items():
            if m.startswith("pnec"):
                for x in runs:
                    seen.setdefault(m, set()).add(x.get("version", "unrecorded"))
    return "; ".join("%s %s" % (m, ", ".join(sorted(v))) for m, v in sorted(seen.items()))


def seeds_of(results):
    """How many seeds pnec's fixed-split rows average, per scene."""
    out = []
    for r in results:
        if r["case"] == "fixed":
            out.append("%s %d" % (r["scene"], len(r["methods"].get("pnec", []))))
    return ", ".join(out) or "none"


def render(results, args):
    rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    methods = []
    for r in results:
        for k in r["methods"]:
            if k not in methods:
                methods.append(k)
    lines = ["## pnec against the classic baselines (issue 45)", "",
             "Rendered by `make bench-baselines` (scripts/bench_baselines.py) at %s on %s, %s, %d cores, %s." % (
                 rev, platform.node() or "this machine", cpu, os.cpu_count(), datetime.date.today().isoformat()), "",
             "OA %% on the same test pixels for every method; pnec: the class band of `pnec classify` with the "
             "defaults (fixed splits: mean of the seeds run, %s; halves: one run per draw), halves: mean of the draws. "
             "Variants: %s. pnec's runs were made by: %s." % (
                 seeds_of(results), flags_of(results) or "none", versions_of(results)), ""]
    if args.note:
        lines += [args.note, ""]
    groups = {}
    for r in results:
        groups.setdefault((r["scene"], r["case"]), []).append(r)
    lines.append("| scene | case | " + " | ".join(methods) + " | classes the training half lacks |")
    lines.append("|---|---|" + "---|" * len(methods) + "---|")
    for (scene, case), rs in groups.items():
        cells = []
        for m in methods:
            oa = [s["oa"] for r in rs for s in r["methods"].get(m, [])]
            cells.append("%.2f" % mean(oa) if oa else "")
        lack = sorted(set(c for r in rs for c in r.get("lacking", [])))
        lines.append("| %s | %s | %s | %s |" % (scene, case, " | ".join(cells), ", ".join(map(str, lack)) or ""))
    lines += ["", "AA % and per-class accuracy %:", ""]
    lines.append("| scene | case | method | AA | per class |")
    lines.append("|---|---|---|---|---|")
    for (scene, case), rs in groups.items():
        for m in methods:
            ss = [s for r in rs for s in r["methods"].get(m, [])]
            if not ss:
                continue
            per = {}
            for s in ss:
                for c, v in s["per_class"].items():
                    per.setdefault(c, []).append(v)
            lines.append("| %s | %s | %s | %.2f | %s |" % (scene, case, m, mean([s["aa"] for s in ss]),
                                                           " ".join("%s:%.1f" % (c, mean(v)) for c, v in sorted(per.items(), key=lambda kv: int(kv[0])))))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pnec", default=os.path.join(ROOT, "bin", "pnec"))
    ap.add_argument("--work", default="/tmp/pnec-bench-baselines")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--cases", default="fixed,halves,synth")
    ap.add_argument("--scenes", default="SalinasA,JasperRidge")
    ap.add_argument("--directions", default=",".join(DIRECTIONS))
    ap.add_argument("--synth", default=",".join(SYNTH_LAYOUTS), help="the synthetic scenes of --cases synth")
    ap.add_argument("--tag", default="", help="name of a pnec variant (results kept apart)")
    ap.add_argument("--pnec-flags", default="", help="extra pnec train flags of the variant")
    ap.add_argument("--pnec-only", action="store_true", help="skip the baselines (a variant's rerun)")
    ap.add_argument("--report", default="")
    ap.add_argument("--note", default="", help="a paragraph the report prints under its header (how kept results were made)")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(DATA, "SalinasA")):
        print("bench_baselines: no benchmark data under %s (set PNEC_DATA): skipped" % DATA, file=sys.stderr)
        return
    args.pnec = os.path.abspath(args.pnec)
    args.flags = shlex.split(args.pnec_flags)
    args.tag_suffix = ("-" + args.tag) if args.tag else ""
    args.version = subprocess.run([args.pnec, "--version"], capture_output=True, text=True).stdout.strip().split()[-1]
    os.makedirs(args.work, exist_ok=True)
    cases = args.cases.split(",")
    scenes = import_scenes(args.pnec, args.work)
    results = []
    for name in args.scenes.split(","):
        if "fixed" in cases:
            results.append(fixed_case(args, name, scenes[name], args.work))
            print("bench_baselines: %s fixed done" % name, file=sys.stderr)
        if "halves" in cases:
            for direction in args.directions.split(","):
                for d in range(args.draws):
                    results.append(halves_case(args, name, scenes[name], direction, d, args.work))
                    print("bench_baselines: %s %s draw %d done" % (name, direction, d), file=sys.stderr)
    if "synth" in cases:
        for name, paths in synth_scenes(args.pnec, args.work, args.synth.split(",")).items():
            results.append(fixed_case(args, name, paths, args.work))
            print("bench_baselines: %s fixed done" % name, file=sys.stderr)
    md = render(results, args)
    if args.report:
        with open(args.report + ".tmp", "w") as f:
            f.write(md)
        os.replace(args.report + ".tmp", args.report)
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
