#!/usr/bin/env bash
# stress-classify.sh: the heap-corruption stress test of issue 46 item 17.
# One `pnec classify --probabilities network` aborted once in about 460 runs
# with "fatal error: found bad pointer in Go heap" (a pointer slot holding a
# value that is no pointer to a live object); a rerun worked. A crash that
# rare shows only in many runs, so this script makes the case (a
# 43 x 86 half of SalinasA, all 204 bands, a model trained on it) and
# classifies it RUNS times, each run a fresh process as the were,
# stopping at the first run that fails.
#
#   PNEC=bin/pnec OUT=/tmp/pnec-stress scripts/stress-classify.sh [RUNS]
#
# RUNS defaults to 2000 (the bar: 2,000 runs without a crash; about
# 55 minutes on 2 shared cores at about 1.6 s a run). EPOCHS (default 200,
# the models) sets the training; the model is kept in OUT, so a
# second call skips the training. GOGC, GODEBUG and GOTRACEBACK pass through
# to pnec: GOGC=5 makes the collector run (and check every pointer it
# meets) far more often, GOTRACEBACK=system prints every goroutine of a
# crash. A failed run's output is kept as OUT/failed-N.txt and the script
# exits 1; otherwise it prints how many runs passed and exits 0. Not run by
# `make test` (CI's budget); TestClassifyProbabilitiesNoHeapCorruption is
# the in-process short version that go test runs.
set -euo pipefail
export GOEXPERIMENT=${GOEXPERIMENT:-simd} GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
RUNS=${1:-2000}
EPOCHS=${EPOCHS:-200}
PNEC=$(realpath "${PNEC:-bin/pnec}")
DATA=$(realpath "${DATA:-../shared/data}")/SalinasA
OUT=${OUT:-/tmp/pnec-stress}
mkdir -p "$OUT"
cd "$OUT"

if [ ! -s half.pnec ]; then
	"$PNEC" import mat --cube "$DATA/SalinasA_corrected.mat" --labels "$DATA/SalinasA_gt.mat" \
		--out full.tif --labels-out full_gt.tif >/dev/null
	# The half scenes: 43 of SalinasA's 83 rows, every column.
	gdal_translate -q -srcwin 0 0 86 43 full.tif half.tif
	gdal_translate -q -srcwin 0 0 86 43 full_gt.tif half_gt.tif
	# pnec writes the model under its final name only once it is complete.
	"$PNEC" train --scene half.tif --labels half_gt.tif --out half.pnec --epochs "$EPOCHS" -q
fi

start=$(date +%s)
for i in $(seq 1 "$RUNS"); do
	rm -f out.tif out.probabilities.tif out.qml out.thumbnail.png out.tif.aux.xml
	if ! "$PNEC" classify --model half.pnec --scene half.tif --out out.tif --probabilities network -q >run.txt 2>&1; then
		cp run.txt "failed-$i.txt"
		echo "stress-classify: run $i of $RUNS failed after $((i - 1)) good runs ($(($(date +%s) - start)) s); output in $OUT/failed-$i.txt" >&2
		head -20 run.txt >&2
		exit 1
	fi
	if [ $((i % 100)) = 0 ]; then
		echo "stress-classify: $i of $RUNS runs passed ($(($(date +%s) - start)) s)"
	fi
done
echo "stress-classify: all $RUNS runs passed ($(($(date +%s) - start)) s)"
