#!/usr/bin/env bash
# grid-sweep.sh: the measurements the model's grid (processor.CanonicalTile,
# tiling.DefaultOverlapPixels) and the ladder's padding (tiling.LadderStep)
# were chosen from; docs/classify.md has the tables.
#
#   PNEC=bin/pnec PNEC_REF=/path/to/old/pnec OUT=/tmp/pnec-grid-sweep scripts/grid-sweep.sh [TILES] [OVERLAPS]
#
# 1. Imports SalinasA and Jasper Ridge from ../shared/data and trains a
#    model of each with pnec train's defaults on the fixed split.
# 2. Writes their 8 x 8 mirrored mosaics (scripts/mosaic.py: 688 x 664 and
#    800 x 800 px) and classifies each on the go backend with --tile T
#    --overlap O for every T of TILES (default 96 128 192 256 384 512) and O
#    of OVERLAPS (default 8 12 16 24 32 48, below half the tile), and as the
#    whole image; prints the OA on the labelled pixels that are not training
#    pixels, the agreement with the whole image, near the grid's seams and
#    away from them, and the CPU seconds (scripts/mapcompare.py).
# 3. Padding: classifies scenes below the canonical tile (SalinasA, a
#    260 x 200 crop of its 4 x 4 mosaic, the 4 x 4 mosaic, Jasper Ridge, its
#    3 x 3 mosaic) and SalinasA's 1 x 8 mosaic on 384 px tiles (its 83 rows
#    padded to 128) with PNEC and with PNEC_REF, a pnec that runs inputs
#    unpadded (built at 2ebb491, before the ladder); prints both OAs and the
#    agreement at the padded right and bottom edges and elsewhere. The whole
#    images of step 2 also come from PNEC_REF when it is set (unpadded).
#
# Accuracy runs only: no bench lock. About an hour on 2 quiet cores.
set -euo pipefail
TILES=${1:-96 128 192 256 384 512}
OVERLAPS=${2:-8 12 16 24 32 48}
PNEC=$(realpath "${PNEC:-bin/pnec}")
REF=${PNEC_REF:+$(realpath "$PNEC_REF")}
OUT=${OUT:-/tmp/pnec-grid-sweep}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${PNEC_DATA:-$HERE/../../shared/data}
PY=/usr/bin/python3
mkdir -p "$OUT"
cd "$OUT"
q() { "$@" 2>/dev/null; }
S=$DATA/SalinasA J=$DATA/JasperRidge
[ -f salA.tif ] || q "$PNEC" import mat --cube "$S/SalinasA_corrected.mat" --out salA.tif --labels "$S/SalinasA_gt.mat" --labels-out salA_gt.tif
[ -f salA_train.tif ] || q "$PNEC" import mat --labels "$S/SalinasA_train_seed12345.mat" --labels-out salA_train.tif
[ -f jas.tif ] || q "$PNEC" import mat --cube "$J/JasperRidge2_R198.mat" --out jas.tif --labels "$J/JasperRidge_gt.mat" --labels-out jas_gt.tif
[ -f jas_train.tif ] || q "$PNEC" import mat --labels "$J/JasperRidge_train_seed12345.mat" --labels-out jas_train.tif
for n in salA jas; do
	[ -f $n.pnec ] || "$PNEC" train -q --backend go --scene $n.tif --labels ${n}_gt.tif --train-mask ${n}_train.tif --out $n.pnec
done
# mosaic NAME SUFFIX N [M]: the scene, its labels and its split
mosaic() {
	for f in $1 $1_gt $1_train; do [ -f ${f}_$2.tif ] || $PY "$HERE/mosaic.py" $f.tif ${f}_$2.tif "${@:3}"; done
}
mosaic salA m8 8; mosaic jas m8 8; mosaic salA m4 4; mosaic jas m3 3; mosaic salA r8 1 8
for f in salA salA_gt salA_train; do [ -f ${f}_c.tif ] || gdal_translate -q -srcwin 0 0 260 200 ${f}_m4.tif ${f}_c.tif; done

# cls BIN OUT SCENE MODEL [FLAGS]: classify, print CPU seconds
cls() {
	local bin=$1 out=$2 scene=$3 model=$4
	shift 4
	/usr/bin/time -f "%U %S" -o cpu.txt "$bin" classify -q --backend go --model "$model" --scene "$scene" --out "$out" --max-memory 16G "$@"
	awk '{printf "%.1f", $1 + $2}' cpu.txt
}

echo "## Tiles against the whole image (8 x 8 mirrored mosaics)"
for n in salA jas; do
	whole=whole_$n.tif
	if [ -n "$REF" ]; then cpu=$(cls "$REF" $whole ${n}_m8.tif $n.pnec); else cpu=$(cls "$PNEC" $whole ${n}_m8.tif $n.pnec --tile 100000); fi
	echo "$n m8 whole image: $($PY "$HERE/mapcompare.py" $whole ${n}_gt_m8.tif ${n}_train_m8.tif), CPU ${cpu} s"
	for t in $TILES; do for o in $OVERLAPS; do
		[ $((2 * o)) -lt "$t" ] || continue
		cpu=$(cls "$PNEC" tiled.tif ${n}_m8.tif $n.pnec --tile $t --overlap $o)
		echo "$n m8 tile $t overlap $o: $($PY "$HERE/mapcompare.py" tiled.tif ${n}_gt_m8.tif ${n}_train_m8.tif $whole $t $o | sed 's/; agreement/;\n    agreement/'), CPU ${cpu} s"
	done; done
done

if [ -n "$REF" ]; then
	echo "## Padding to the ladder against unpadded inputs"
	# pad NAME MODEL [FLAGS]
	pad() {
		local n=$1 m=$2 base=${1%%_*}
		local suffix=${1#"$base"}
		shift 2
		cls "$REF" unpadded.tif $n.tif $m "$@" >/dev/null
		cls "$PNEC" padded.tif $n.tif $m "$@" >/dev/null
		echo "$n $(gdalinfo $n.tif | grep -m1 '^Size is' | sed 's/Size is //; s/, /x/') ${*:-whole image}: unpadded $($PY "$HERE/mapcompare.py" unpadded.tif ${base}_gt$suffix.tif ${base}_train$suffix.tif)"
		echo "    padded $($PY "$HERE/mapcompare.py" padded.tif ${base}_gt$suffix.tif ${base}_train$suffix.tif unpadded.tif)"
	}
	pad salA salA.pnec; pad salA_c salA.pnec; pad salA_m4 salA.pnec; pad salA_r8 salA.pnec --tile 384 --overlap 12
	pad jas jas.pnec; pad jas_m3 jas.pnec
fi
