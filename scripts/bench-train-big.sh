#!/usr/bin/env bash
# bench-train-big.sh: training at satellite sizes (make bench-train).
#
# Synthesises 224-band scenes of 500 x 500, 1000 x 1000 and 2000 x 2000 px
# (pnec synth, procedural layout, SalinasA's spectra) and trains on each
# with the defaults (15 training pixels a class drawn from the labels) under
# GNU time:
#   - EPOCHS_SHORT epochs (default 20) at every size: the time per epoch
#     (from the progress log, the epochs after the first 5, so that the
#     set-up and the compilation stay out) and the whole command's peak RSS;
#   - the default 200 epochs at 1000 x 1000: wall time and peak RSS, once
#     with 15 pixels a class and once with every pixel labelled
#     (--train-mask of the labels themselves); and at 4000 x 4000 within
#     --max-memory 4G (the scene read by windows);
#   - SalinasA's fixed split, 200 epochs, with the default augmentation and
#     with --augment off: what the augmentation costs;
# and writes the table to $OUT/bench-train.md (and REPORT when set).
#
#   PNEC=bin/pnec OUT=/tmp/pnec-bench-train scripts/bench-train-big.sh
#
# SIZES and FULL=0 (skip the 200-epoch runs) make rehearsals shorter. Runs
# whose model and timing are in OUT are not repeated (delete them to
# measure again).
# About 40 minutes on 2 cores; run it on a quiet machine (it holds
# /tmp/pnec-bench.lock while it measures).
set -euo pipefail
PNEC=${PNEC:-bin/pnec}
OUT=${OUT:-/tmp/pnec-bench-train}
SIZES=${SIZES:-500 1000 2000}
EPOCHS_SHORT=${EPOCHS_SHORT:-20}
FULL=${FULL:-1}
DATA=${PNEC_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
SPECTRA=$DATA/SalinasA/SalinasA_corrected.mat,$DATA/SalinasA/SalinasA_gt.mat
mkdir -p "$OUT"
if [ ! -d "$DATA/SalinasA" ]; then
	echo "bench-train: no $DATA/SalinasA (../shared/data): skipped" >&2
	exit 0
fi

scene() { # SIZE: the scene and its labels, made once
	local n=$1
	[ -f "$OUT/s$n.tif" ] || "$PNEC" synth --layout "procedural:${n}x${n}" --bands 224 --spectra "$SPECTRA" \
		--out "$OUT/s$n.tif" --labels-out "$OUT/s${n}_gt.tif"
}

# run NAME ARGS...: pnec train under GNU time holding the bench lock; the
# progress log in NAME.log, GNU time's in NAME.time.
run() {
	local name=$1
	shift
	if [ -s "$OUT/$name.time" ] && [ -f "$OUT/$name.pnec" ]; then
		return # measured before: a rerun resumes
	fi
	"$PNEC" --version | awk '{print $NF}' >"$OUT/$name.version"
	flock /tmp/pnec-bench.lock /usr/bin/time -v -o "$OUT/$name.time" \
		"$PNEC" --verbose train --backend go "$@" --out "$OUT/$name.pnec" >"$OUT/$name.out" 2>"$OUT/$name.log"
}
wall_s() { awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s*60 + p[i]; print s}' "$OUT/$1.time"; }
ver() { cat "$OUT/$1.version" 2>/dev/null || echo "?"; }
grid() { grep -o 'trained on: .*' "$OUT/$1.out" | sed 's/^trained on: //; s/ (.*//'; }
rss_gb() { awk '/Maximum resident set size/ {printf "%.2f", $NF*1024/1e9}' "$OUT/$1.time"; }
# per_epoch NAME: seconds an epoch over the epochs after the fifth (the
# progress log's elapsed times).
per_epoch() {
	/usr/bin/python3 - "$OUT/$1.log" <<'EOF'
import re, sys
pts = []
for line in open(sys.argv[1]):
    m = re.search(r'epoch (\d+)/\d+.*elapsed=(\S+)', line)
    if m:
        t, s = 0.0, m.group(2)
        for v, u in re.findall(r'([\d.]+)(h|ms|m|s)', s):
            t += float(v) * {'h': 3600, 'm': 60, 's': 1, 'ms': 1e-3}[u]
        pts.append((int(m.group(1)), t))
a = [p for p in pts if p[0] >= 5]
print("%.2f" % ((a[-1][1] - a[0][1]) / (a[-1][0] - a[0][0])) if len(a) > 1 else "n/a")
EOF
}

rows=()
for n in $SIZES; do
	scene "$n"
	name=short$n
	echo "bench-train: ${n}x${n}x224, $EPOCHS_SHORT epochs" >&2
	run "$name" --scene "$OUT/s$n.tif" --labels "$OUT/s${n}_gt.tif" --epochs "$EPOCHS_SHORT"
	rows+=("| ${n} x ${n} x 224 | 15 a class | $EPOCHS_SHORT | $(per_epoch $name) | $(wall_s $name) | $(rss_gb $name) | $(grid $name) | $(ver $name) |")
done
if [ "$FULL" = 1 ]; then
	scene 1000
	echo "bench-train: 1000x1000x224, 200 epochs" >&2
	run full1000 --scene "$OUT/s1000.tif" --labels "$OUT/s1000_gt.tif"
	rows+=("| 1000 x 1000 x 224 | 15 a class | 200 | $(per_epoch full1000) | $(wall_s full1000) | $(rss_gb full1000) | $(grid full1000) | $(ver full1000) |")
	echo "bench-train: 1000x1000x224, every pixel labelled, 200 epochs" >&2
	run dense1000 --scene "$OUT/s1000.tif" --labels "$OUT/s1000_gt.tif" --train-mask "$OUT/s1000_gt.tif"
	rows+=("| 1000 x 1000 x 224 | every pixel | 200 | $(per_epoch dense1000) | $(wall_s dense1000) | $(rss_gb dense1000) | $(grid dense1000) | $(ver dense1000) |")
	# 4000 x 4000 x 224 (14 GB as float32) within --max-memory 4G: a VRT
	# repeating a synthesised 1000 px block 4 x 4 times (a 16 GB scene
	# file would take an hour to write here; the reads are the same).
	if [ ! -f "$OUT/s4000.vrt" ]; then
		"$PNEC" synth --layout procedural:1000x1000 --bands 224 --spectra "$SPECTRA" --vrt 4000x4000 \
			--out "$OUT/s4000.vrt" --labels-out "$OUT/s4000_gt.vrt"
	fi
	echo "bench-train: 4000x4000x224 at --max-memory 4G, 200 epochs" >&2
	run big4000 --scene "$OUT/s4000.vrt" --labels "$OUT/s4000_gt.vrt" --max-memory 4G
	rows+=("| 4000 x 4000 x 224 (VRT of a 1000 px block), --max-memory 4G | 15 a class | 200 | $(per_epoch big4000) | $(wall_s big4000) | $(rss_gb big4000) | $(grid big4000) | $(ver big4000) |")
fi

# The augmentation's cost: SalinasA's fixed split, 200 epochs, with the
# default augmentation and without (--augment off), the whole command.
SA=$DATA/SalinasA
if [ ! -f "$OUT/salinasA_train.tif" ]; then
	"$PNEC" import mat --cube "$SA/SalinasA_corrected.mat" --out "$OUT/salinasA.tif" --labels "$SA/SalinasA_gt.mat" --labels-out "$OUT/salinasA_gt.tif"
	"$PNEC" import mat --labels "$SA/SalinasA_train_seed12345.mat" --labels-out "$OUT/salinasA_train.tif"
fi
echo "bench-train: SalinasA, 200 epochs, with and without augmentation" >&2
SA_ARGS=(--scene "$OUT/salinasA.tif" --labels "$OUT/salinasA_gt.tif" --train-mask "$OUT/salinasA_train.tif")
run salinasA-aug-default "${SA_ARGS[@]}"
run salinasA-aug-off "${SA_ARGS[@]}" --augment off
aug_row="| SalinasA (83 x 86 x 204), fixed split | $(wall_s salinasA-aug-default) | $(wall_s salinasA-aug-off) | $(awk -v a="$(wall_s salinasA-aug-default)" -v b="$(wall_s salinasA-aug-off)" 'BEGIN {printf "%.2f", a / b}') | $(ver salinasA-aug-default) |"

cpu=$(grep -m1 "model name" /proc/cpuinfo | sed 's/.*: //')
{
	echo "## Training at satellite sizes (make bench-train)"
	echo
	echo "Rendered by pnec $("$PNEC" --version | awk '{print $NF}') (the column pnec: the build each run was made with), $cpu, $(nproc) cores, $(date -u +%Y-%m-%d). \`pnec train --backend go\` with the defaults under GNU time: synthetic 224-band scenes (pnec synth, procedural layout, SalinasA's spectra). Time per epoch: the progress log's elapsed time over the epochs after the fifth. Wall and peak RSS: the whole command (reading the scene, training, the statistics passes, writing the model)."
	echo
	echo "| scene | training pixels | epochs | s per epoch | wall s | peak RSS GB | trained on | pnec |"
	echo "|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "The augmentation's cost: the whole command, 200 epochs, with the default augmentation and with \`--augment off\`."
	echo
	echo "| scene | default s | --augment off s | ratio | pnec |"
	echo "|---|---|---|---|---|"
	echo "$aug_row"
} >"$OUT/bench-train.md"
cat "$OUT/bench-train.md"
if [ -n "${REPORT:-}" ]; then
	cp "$OUT/bench-train.md" "$REPORT"
fi
