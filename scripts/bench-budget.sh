#!/usr/bin/env bash
# bench-budget.sh: does --max-memory hold? (issue 10's budget table)
#
# For widths 256, 1024, 4096 and 8192 at 1024 rows, 50, 200 and 400 bands
# and budgets 2G and 4G, classifies a synthetic Int16 scene (a VRT over a
# 1024 x 1024 block beyond 1024 columns) with the go backend under GNU time
# and writes a Markdown table of the plan, the planned peak, the measured
# peak RSS and its ratio to the budget to $OUT/budget-table.md.
#
#   PNEC=bin/pnec OUT=/tmp/pnec-bench-budget scripts/bench-budget.sh [WIDTHS] [BANDS] [BUDGETS]
#
# e.g. scripts/bench-budget.sh "256 1024" "50" "2G" for a short check. The
# whole table takes about 20 minutes on 2 cores; run it on a quiet machine.
# With REPORT set the table is also copied there (make bench-budget: bench/budget.md).
set -euo pipefail
WIDTHS=${1:-256 1024 4096 8192}
BANDS=${2:-50 200 400}
BUDGETS=${3:-2G 4G}
PNEC=${PNEC:-bin/pnec}
OUT=${OUT:-/tmp/pnec-bench-budget}
export PNEC_DATA=${PNEC_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
mkdir -p "$OUT"
T=$OUT/budget-table.md
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "## Memory budget (make bench-budget)"
	echo
	echo "Does \`--max-memory\` hold? \`pnec classify --backend go --max-memory BUDGET\` of synthetic Int16 scenes 1024 rows high (a VRT over a 1024 x 1024 block beyond 1024 columns) under GNU time; scripts/bench-budget.sh. The target is a peak RSS within 10% of the budget (RSS / budget <= 1.10) for every shape. $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), load average at start $LOAD0, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$(dirname "$0")/.." describe --always --dirty 2>/dev/null || echo unknown)."
	echo
	echo "| width x rows | bands | budget | plan | tiles in flight | planned peak | peak RSS | RSS / budget | wall | px/s |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$T"
# Models are kept between runs of the same pnec build only: a build with
# other defaults (issue 23 made the paper encoder the default) trains anew.
BUILD=$("$PNEC" --version | awk '{print $NF}')
for B in $BANDS; do
	MODEL=$OUT/m$B-$BUILD.pnec
	if [ ! -f "$MODEL" ]; then
		[ -f "$OUT/t$B.tif" ] || "$PNEC" synth --layout procedural:96x96 --bands "$B" --out "$OUT/t$B.tif" --labels-out "$OUT/t${B}_gt.tif"
		"$PNEC" train -q --backend go --scene "$OUT/t$B.tif" --labels "$OUT/t${B}_gt.tif" --out "$MODEL" --epochs 5
	fi
	for W in $WIDTHS; do
		S=$OUT/s${B}_${W}.tif
		if [ "$W" -gt 1024 ]; then S=$OUT/s${B}_${W}.vrt; fi
		if [ ! -f "$S" ]; then
			if [ "$W" -gt 1024 ]; then
				"$PNEC" synth --layout procedural:1024x1024 --bands "$B" --out "$S" --vrt "1024x$W"
			else
				"$PNEC" synth --layout "procedural:1024x$W" --bands "$B" --out "$S"
			fi
		fi
		for M in $BUDGETS; do
			rm -f "$OUT/p.tif" "$OUT/p.tif.aux.xml"
			if ! flock /tmp/pnec-bench.lock /usr/bin/time -v -o "$OUT/time.txt" "$PNEC" classify --backend go \
				--model "$MODEL" --scene "$S" --out "$OUT/p.tif" --max-memory "$M" >"$OUT/sum.txt" 2>"$OUT/err.txt"; then
				echo "| ${W} x 1024 | $B | $M | refused or failed: $(tail -1 "$OUT/err.txt" | sed 's/^pnec: [^ ]*: //' | cut -c1-220) | | | | | | |" >>"$T"
				continue
			fi
			rss=$(grep "Maximum resident set size" "$OUT/time.txt" | awk '{print $NF}')
			wall=$(grep "Elapsed (wall clock)" "$OUT/time.txt" | awk '{print $NF}')
			plan=$(head -1 "$OUT/sum.txt" | sed 's/^[^,]*, //; s/, backend.*//; s/ (cols x rows)//g')
			planned=$(grep -o "planned peak [0-9.]* [KMG]iB" "$OUT/sum.txt" | sed 's/planned peak //')
			inflight=$(grep -o "[0-9]* tiles\? in flight" "$OUT/sum.txt" | head -1 | awk '{print $1}')
			pxs=$(grep -o "[0-9.]*[kMG]* px/s" "$OUT/sum.txt" | head -1)
			budget_kb=$(numfmt --from=iec "$M" | awk '{print $1/1024}')
			ratio=$(awk -v r="$rss" -v b="$budget_kb" 'BEGIN {printf "%.2f", r/b}')
			echo "| ${W} x 1024 | $B | $M | $plan | $inflight | $planned | $((rss / 1024)) MiB | $ratio | $wall | $pxs |" >>"$T"
		done
	done
done
cat "$T"
if [ -n "${REPORT:-}" ]; then
	cp "$T" "$REPORT"
fi
