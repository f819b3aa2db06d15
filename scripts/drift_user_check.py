#!/usr/bin/env python3
"""drift_user_check.py: the drift verdict as a new user meets it (issue 33).

Trains the default model on each benchmark scene's fixed split (pnec train),
writes changed copies of the scene as GeoTIFFs (calibration shifts, tilts,
gains, the bands reversed), classifies each with pnec classify and scores it
with pnec evaluate, and prints one Markdown row per scene and change: OA, the
points lost against the unchanged scene, the product's verdict and its two
judged figures, read back from the product with GDAL.

    scripts/drift_user_check.py --work /tmp/drift-user [--pnec bin/pnec] [--data ../shared/data]

Needs numpy and GDAL's Python bindings (make deps installs them).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()

SCENES = {
    "SalinasA": ("SalinasA/SalinasA_corrected.mat", "SalinasA/SalinasA_gt.mat", "SalinasA/SalinasA_train_seed12345.mat"),
    "JasperRidge": ("JasperRidge/JasperRidge2_R198.mat", "JasperRidge/JasperRidge_gt.mat", "JasperRidge/JasperRidge_train_seed12345.mat"),
}


def tilt(cube, amount, rising_only=False):
    """Per-band gain linear in the band position: from 1 to 1+amount
    (rising_only) or from 1-amount to 1+amount."""
    b = cube.shape[0]
    x = np.linspace(0.0, 1.0, b) if rising_only else np.linspace(-1.0, 1.0, b)
    return cube * (1.0 + amount * x)[:, None, None]


def shift(cube, n):
    """Band b holds what band b+n held (the band axis moved by n bands),
    the edge band repeated."""
    b = cube.shape[0]
    idx = np.clip(np.arange(b) + n, 0, b - 1)
    return cube[idx]


CHANGES = [
    ("unchanged", lambda c: c),
    ("one-band calibration shift (band 40 x 1.25)", lambda c: np.concatenate([c[:40], c[40:41] * 1.25, c[41:]])),
    ("tilt rising to +12%", lambda c: tilt(c, 0.12, rising_only=True)),
    ("linear tilt -12% .. +12%", lambda c: tilt(c, 0.12)),
    ("gain 0.85", lambda c: c * 0.85),
    ("gain 1.15", lambda c: c * 1.15),
    ("band axis shifted by 1 band", lambda c: shift(c, 1)),
    ("linear tilt -30% .. +30%", lambda c: tilt(c, 0.30)),
    ("band axis shifted by 3 bands", lambda c: shift(c, 3)),
    ("bands reversed", lambda c: c[::-1]),
]


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def write_like(src, cube, path):
    ds = gdal.Open(src)
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(path, ds.RasterXSize, ds.RasterYSize, cube.shape[0], gdal.GDT_Float32, ["TILED=YES", "COMPRESS=DEFLATE"])
    out.SetGeoTransform(ds.GetGeoTransform())
    out.SetProjection(ds.GetProjection())
    for i in range(cube.shape[0]):
        band, sb = out.GetRasterBand(i + 1), ds.GetRasterBand(i + 1)
        band.WriteArray(cube[i].astype(np.float32))
        if sb.GetNoDataValue() is not None:
            band.SetNoDataValue(sb.GetNoDataValue())
        if sb.GetDescription():
            band.SetDescription(sb.GetDescription())
    # The band metadata (wavelengths) as the original carries it.
    for i in range(cube.shape[0]):
        md = ds.GetRasterBand(i + 1).GetMetadata()
        if md:
            out.GetRasterBand(i + 1).SetMetadata(md)
    out.SetMetadata(ds.GetMetadata())
    out = None


def oa(pnec, model, scene, labels):
    res = json.loads(run([pnec, "evaluate", "--model", model, "--scene", scene, "--labels", labels, "--json"]).stdout)
    return 100.0 * res["with_recovery"]["oa"]  # the final labels, as products carry them


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pnec", default=os.path.join(os.path.dirname(__file__), "..", "bin", "pnec"),
                    help="the pnec binary (default: bin/pnec of this checkout, as make builds it)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    a = ap.parse_args()
    pnec = os.path.abspath(a.pnec)
    os.makedirs(a.work, exist_ok=True)
    print("| scene | change | OA % | points lost | verdict | far cells (feature_far_share) | probe: pixels changing class (recalibration_change_share) |")
    print("|---|---|---|---|---|---|---|")
    for name, (cube_mat, gt_mat, train_mat) in SCENES.items():
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        scene, gt, train, model = (os.path.join(d, f) for f in ("scene.tif", "gt.tif", "train.tif", "model.pnec"))
        if not os.path.exists(scene):
            run([pnec, "import", "mat", "--cube", os.path.join(a.data, cube_mat), "--labels", os.path.join(a.data, gt_mat), "--out", scene, "--labels-out", gt])
            run([pnec, "import", "mat", "--labels", os.path.join(a.data, train_mat), "--labels-out", train])
        if not os.path.exists(model):
            run([pnec, "train", "--scene", scene, "--labels", gt, "--train-mask", train, "--out", model, "-q"])
        cube = gdal.Open(scene).ReadAsArray().astype(np.float64)
        base = None
        for label, change in CHANGES:
            slug = "".join(ch if ch.isalnum() else "_" for ch in label)
            path = scene if label == "unchanged" else os.path.join(d, slug + ".tif")
            if not os.path.exists(path):
                write_like(scene, change(cube), path)
            prod = os.path.join(d, slug + "_product.tif")
            if os.path.exists(prod):
                os.remove(prod)
            run([pnec, "classify", "--model", model, "--scene", path, "--out", prod, "-q"])
            md = gdal.Open(prod).GetMetadata("PNEC")
            acc = oa(pnec, model, path, gt)
            if base is None:
                base = acc
            print(f"| {name} | {label} | {acc:.2f} | {base - acc:.2f} | {md.get('DRIFT_VERDICT')} | "
                  f"{float(md.get('DRIFT_FEATURE_FAR_SHARE', 'nan')):.3f} | {float(md.get('DRIFT_RECALIBRATION_CHANGE_SHARE', 'nan')):.3f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
