#!/usr/bin/env bash
# train-windowed-vs-whole.sh: is windowed training as accurate as training
# on the whole scene where both fit? (issue 43, item 2)
#
# Trains a synthetic 500 x 500 x 224 scene (pnec synth, procedural layout,
# SalinasA's spectra; 15 training pixels a class, split seed 12345) with the
# defaults, once on the classify grid's 384 px tiles (the default for a
# scene this size) and once with --whole-scene, for each run seed, and
# scores both with pnec evaluate on every other labelled pixel (the final
# class band's OA). Prints a table and the mean difference.
#
#   PNEC=bin/pnec OUT=/tmp/pnec-train-windows scripts/train-windowed-vs-whole.sh [SEEDS...]
#
# SEEDS default to 202501 ... 202505 (the protocol's five); SIZE (500) and
# EPOCHS (the default 200) make rehearsals shorter. About 12 minutes a
# seed on 2 cores.
set -euo pipefail
PNEC=${PNEC:-bin/pnec}
OUT=${OUT:-/tmp/pnec-train-windows}
SIZE=${SIZE:-500}
EPOCHS=${EPOCHS:-}
DATA=${PNEC_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(202501 202502 202503 202504 202505)
mkdir -p "$OUT"
if [ ! -d "$DATA/SalinasA" ]; then
	echo "train-windowed-vs-whole: no $DATA/SalinasA (../shared/data): skipped" >&2
	exit 0
fi
S=$OUT/s$SIZE.tif
L=$OUT/s${SIZE}_gt.tif
[ -f "$S" ] || "$PNEC" synth --layout "procedural:${SIZE}x${SIZE}" --bands 224 \
	--spectra "$DATA/SalinasA/SalinasA_corrected.mat,$DATA/SalinasA/SalinasA_gt.mat" --out "$S" --labels-out "$L"

oa() { # MODEL: the final class band's OA, percent
	"$PNEC" evaluate --json --model "$1" --scene "$S" --labels "$L" |
		/usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print("%.2f" % (100 * d["with_recovery" if d["final_with_recovery"] else "without_recovery"]["oa"]))'
}

echo "| run seed | tiles (default) OA % | whole scene OA % | tiles s | whole s |"
echo "|---|---|---|---|---|"
sum=0
for seed in "${SEEDS[@]}"; do
	for mode in tiles whole; do
		m=$OUT/$mode-$seed.pnec
		if [ ! -f "$m" ]; then
			flag=()
			[ "$mode" = whole ] && flag=(--whole-scene)
			start=$(date +%s.%N)
			"$PNEC" train -q --backend go --scene "$S" --labels "$L" --seed "$seed" ${EPOCHS:+--epochs "$EPOCHS"} "${flag[@]}" --out "$m"
			awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f\n", b - a}' >"$m.seconds"
		fi
	done
	a=$(oa "$OUT/tiles-$seed.pnec")
	b=$(oa "$OUT/whole-$seed.pnec")
	sum=$(awk -v s="$sum" -v a="$a" -v b="$b" 'BEGIN {print s + a - b}')
	echo "| $seed | $a | $b | $(cat "$OUT/tiles-$seed.pnec.seconds") | $(cat "$OUT/whole-$seed.pnec.seconds") |"
done
awk -v s="$sum" -v n="${#SEEDS[@]}" 'BEGIN {printf "\nmean OA difference, tiles - whole: %+.2f points over %d seeds\n", s / n, n}'
