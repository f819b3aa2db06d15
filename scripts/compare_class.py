"""Compare the class bands (band 1) of two pnec products; exit 1 below a threshold.

Usage: python3 scripts/compare_class.py A.tif B.tif [MIN_AGREEMENT]   (default 0.995)
Reads with tifffile where installed (the GPU machines have it), else rasterio.
"""
import sys


def class_band(path):
    try:
        import tifffile
        a = tifffile.imread(path, key=0)
        return a[..., 0] if a.ndim == 3 else a
    except ImportError:
        import rasterio
        with rasterio.open(path) as ds:
            return ds.read(1)


def main():
    a, b = class_band(sys.argv[1]), class_band(sys.argv[2])
    floor = float(sys.argv[3]) if len(sys.argv) > 3 else 0.995
    if a.shape != b.shape:
        print(f"class bands differ in shape: {a.shape} vs {b.shape}")
        return 1
    agree = float((a == b).mean())
    print(f"class agreement {100 * agree:.3f}% over {a.size} pixels (floor {100 * floor:.1f}%)")
    return 0 if agree >= floor else 1


if __name__ == "__main__":
    sys.exit(main())
