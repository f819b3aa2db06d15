"""Compare a pnec product's class band with ground truth and with another product.

Usage: python3 scripts/mapcompare.py PRODUCT GT TRAIN [REF [TILE OVERLAP]]

Prints the OA of PRODUCT's class band on GT's labelled pixels (GT > 0) that
are not training pixels (TRAIN == 0); with REF, the share of pixels whose
class equals REF's, overall, within 8 px of the scene's right and bottom
edges (where a padded input differs) and elsewhere; with TILE and OVERLAP,
also within 8 px of the seams between the cores of pnec's grid of TILE px
tiles overlapping by OVERLAP px, and elsewhere.
"""
import sys
import warnings

import numpy as np
import rasterio

warnings.filterwarnings("ignore", category=rasterio.errors.NotGeoreferencedWarning)


def band(path):
    with rasterio.open(path) as ds:
        return ds.read(1)


def seam_lines(size, tile, overlap):
    """The core borders along an axis of size pixels (processor's grid, tiling.axis)."""
    if size <= tile:
        return []
    up = lambda n: (n + 3) // 4 * 4
    o = [0]
    while o[-1] + tile < size:
        o.append(min(o[-1] + tile - overlap, up(size - tile)))
    return [((o[i + 1] + o[i] + tile) // 2) // 4 * 4 for i in range(len(o) - 1)]


def share(same, where):
    return f"{100 * float(same[where].mean()):.3f}%" if where.any() else "n/a"


def main():
    c, gt, tr = band(sys.argv[1]), band(sys.argv[2]), band(sys.argv[3])
    test = (gt > 0) & (tr == 0)
    out = f"OA {100 * float((c[test] == gt[test]).mean()):.2f} ({test.sum()} px)"
    if len(sys.argv) > 4:
        same = c == band(sys.argv[4])
        edge = np.zeros(same.shape, bool)
        edge[-8:, :] = True
        edge[:, -8:] = True
        out += f"; agreement {share(same, np.ones(same.shape, bool))}, right/bottom 8 px {share(same, edge)}, elsewhere {share(same, ~edge)}"
        if len(sys.argv) > 6:
            tile, overlap = int(sys.argv[5]), int(sys.argv[6])
            near = np.zeros(same.shape, bool)
            for r in seam_lines(same.shape[0], tile, overlap):
                near[max(r - 8, 0):r + 8, :] = True
            for col in seam_lines(same.shape[1], tile, overlap):
                near[:, max(col - 8, 0):col + 8] = True
            out += f"; seams 8 px {share(same, near)}, away from seams {share(same, ~near)}"
    print(out)


if __name__ == "__main__":
    main()
