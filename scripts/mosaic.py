"""Write an N x M mirrored mosaic of a raster (every band) as a tiled GeoTIFF.

Usage: python3 scripts/mosaic.py SRC OUT N [M]   (M defaults to N)

Tile (i, j) of the mosaic is SRC flipped vertically when i is odd and
horizontally when j is odd, so neighbouring copies meet edge to edge. The
mosaic has no georeference (scripts/grid-sweep.sh classifies mosaics of
the real benchmark scenes to measure tiles against whole images).
"""
import sys
import warnings

import numpy as np
import rasterio

warnings.filterwarnings("ignore", category=rasterio.errors.NotGeoreferencedWarning)


def main():
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    m = int(sys.argv[4]) if len(sys.argv) > 4 else n
    with rasterio.open(src) as ds:
        a = ds.read()
        prof = ds.profile
    rows = []
    for i in range(n):
        b = a[:, ::-1, :] if i % 2 else a
        rows.append(np.concatenate([b[:, :, ::-1] if j % 2 else b for j in range(m)], axis=2))
    mos = np.concatenate(rows, axis=1)
    prof.update(height=mos.shape[1], width=mos.shape[2], tiled=True, blockxsize=256, blockysize=256, compress="deflate")
    prof.pop("transform", None)
    prof.pop("crs", None)
    with rasterio.open(out, "w", **prof) as ds:
        ds.write(mos)


if __name__ == "__main__":
    main()
