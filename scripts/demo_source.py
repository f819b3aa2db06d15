#!/usr/bin/python3
"""Writes a small labelled spectral source (scene + labels GeoTIFFs) for
'pnec synth --spectra SCENE,LABELS' when the real SalinasA data is absent:
five classes with smooth, distinct reflectance-like spectra (sums of Gaussian
bumps over 400-2500 nm) and sensor-like noise, in 16x16 blocks.

Usage: demo_source.py SCENE.tif LABELS.tif
Needs python3-rasterio and python3-numpy (installed by make deps).
"""
import sys
import warnings

import numpy as np
import rasterio
from rasterio.errors import NotGeoreferencedWarning

ROWS = COLS = 64
BANDS = 96
CLASSES = 5


def main(scene, labels):
    rng = np.random.default_rng(5)
    wl = np.linspace(400, 2500, BANDS)
    spectra = []
    for _ in range(CLASSES):
        s = np.full(BANDS, 0.05)
        for _ in range(3):
            centre, width, height = rng.uniform(450, 2400), rng.uniform(80, 400), rng.uniform(0.1, 0.5)
            s += height * np.exp(-0.5 * ((wl - centre) / width) ** 2)
        spectra.append(s)
    lab = np.zeros((ROWS, COLS), np.uint8)
    cube = np.zeros((BANDS, ROWS, COLS), np.float64)
    for r in range(ROWS):
        for c in range(COLS):
            k = (r // 16 * 3 + c // 16) % CLASSES
            lab[r, c] = k + 1
            cube[:, r, c] = spectra[k] * rng.normal(1, 0.05) + rng.normal(0, 0.005, BANDS)
    data = np.clip(cube * 10000, 0, 32767).astype(np.int16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(scene, "w", driver="GTiff", width=COLS, height=ROWS, count=BANDS, dtype="int16") as dst:
            dst.write(data)
        with rasterio.open(labels, "w", driver="GTiff", width=COLS, height=ROWS, count=1, dtype="uint8") as dst:
            dst.write(lab[None])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
