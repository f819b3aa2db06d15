#!/usr/bin/python3
"""Quick-look PNG of a pnec product: class colours (from the product's colour
table) on the left, reliability as grey (black = 0, white = 1) on the right;
nodata pixels are dark red in both panels. Each product pixel becomes a
SCALE x SCALE block so that small scenes are visible.

Usage: quicklook.py PRODUCT.tif OUT.png [SCALE]
Needs python3-rasterio and python3-numpy (Debian packages; installed by make deps).
"""
import sys
import warnings

import numpy as np
import rasterio
from rasterio.errors import NotGeoreferencedWarning

NODATA_RGB = (90, 0, 0)
GAP = 4  # pixels of white between the panels


def main(product, out, scale):
    with rasterio.open(product) as src:
        cls = src.read(1)
        rel = src.read(2).astype(np.float64)
        cmap = src.colormap(1)
        cls_nodata, rel_nodata = src.nodatavals[0], src.nodatavals[1]
    rows, cols = cls.shape
    # Class no-data: the TIFF's (255 since issue 12, shared by both bands), or 0 in older products.
    nodata = cls == 0
    if cls_nodata is not None:
        nodata |= cls == cls_nodata
    # Reliability: Byte percent (nodata 255) or Float32 0..1 (NaN nodata).
    if rel_nodata is not None and not np.isnan(rel_nodata):
        nodata |= rel == rel_nodata
    nodata |= np.isnan(rel)
    if np.nanmax(np.where(nodata, np.nan, rel), initial=0) > 1.0:
        rel = rel / 100.0
    grey = np.clip(np.nan_to_num(rel) * 255, 0, 255).astype(np.uint8)

    left = np.zeros((rows, cols, 3), np.uint8)
    for value in np.unique(cls):
        r, g, b = cmap.get(int(value), (0, 0, 0, 255))[:3]
        left[cls == value] = (r, g, b)
    right = np.repeat(grey[:, :, None], 3, axis=2)
    left[nodata] = NODATA_RGB
    right[nodata] = NODATA_RGB
    gap = np.full((rows, GAP, 3), 255, np.uint8)
    img = np.concatenate([left, gap, right], axis=1)
    img = img.repeat(scale, axis=0).repeat(scale, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(out, "w", driver="PNG", width=img.shape[1], height=img.shape[0],
                           count=3, dtype="uint8") as dst:
            dst.write(img.transpose(2, 0, 1))
    classes = {int(v): int((cls == v).sum()) for v in np.unique(cls) if v != 0}
    print(f"{out}: {img.shape[1]}x{img.shape[0]} px; left: classes {classes}; right: reliability "
          f"(mean {np.nanmean(np.where(nodata, np.nan, rel)):.2f}); dark red: no data")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 4)
