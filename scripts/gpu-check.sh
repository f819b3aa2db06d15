#!/usr/bin/env bash
# gpu-check.sh measures every target of issue 35 in one call of at most 8
# minutes, on a machine with an NVIDIA GPU and Python's jax-cuda13-pjrt (its
# xla_cuda_plugin.so is the PJRT plugin) with the nvidia-* wheels, but neither
# Go nor GDAL: build the bundle where they are (scripts/gpu-bundle.sh, make
# gpu-bundle) and carry it. pnec finds the plugin and its NVIDIA libraries
# itself (pnec backends; docs/backends.md): this script sets no
# LD_LIBRARY_PATH, XLA_FLAGS or GOPJRT_CUDA_CHECKS.
#
# Usage: scripts/gpu-check.sh [--cpu] [--quick] [BUNDLE]   (default BUNDLE: gpu-bundle)
#   --cpu    play the XLA part on the pure-Go backend too (rehearsal on a
#            machine without a GPU: same steps, same table, no GPU figure)
#   --quick  small sizes (2048 x 2048 instead of 10,000 x 10,000, 4 batch
#            scenes, 5 training epochs): targets are then marked "quick"
# Environment:
#   OUT              results (default ./gpu-results): gpu-check.log, results.tsv
#                    (target, measured, verdict), bench.txt
#   PNEC_GPU_PLUGIN  the plugin's absolute path (default: the first CUDA plugin
#                    pnec backends finds)
#   PNEC_GPU_BUDGET  seconds the whole script may take (default 470): each
#                    step gets what is left, and a step that cannot start in
#                    time is reported as not run
#
# The table at the end has one row per target: what was measured, and
# pass, FAIL or "not run" (with why). Exit status 1 when a target failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

cpu=0 quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--cpu) cpu=1 ;;
	--quick) quick=1 ;;
	-*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
bundle=$(cd "${1:-gpu-bundle}" 2>/dev/null && pwd) || { echo "gpu-check: bundle ${1:-gpu-bundle} not found (make gpu-bundle where Go is)" >&2; exit 2; }
out=${OUT:-gpu-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/gpu-check.log
results=$out/results.tsv
: >"$log"
: >"$results"
budget=${PNEC_GPU_BUDGET:-470}
t0=$(date +%s)
left() { echo $((budget - ($(date +%s) - t0))); }
say() { echo "$*" | tee -a "$log"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# record ID TARGET MEASURED VERDICT
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$results"; }
# verdict VALUE LIMIT: pass when VALUE <= LIMIT ("quick" in quick mode).
verdict() {
	if [ "$quick" = 1 ] || [ "$cpu" = 1 ]; then echo "rehearsal"; elif le "$1" "$2"; then echo pass; else echo FAIL; fi
}

# run NAME CAP CMD...: runs CMD with the log, within CAP seconds and what is
# left of the budget (15 s kept for the table); sets $took (seconds) and $rc
# (124: stopped at its time limit, 125: not started, too little time left).
run() {
	local name=$1 cap=$2 limit a
	shift 2
	limit=$(($(left) - 15))
	[ "$cap" -lt "$limit" ] && limit=$cap
	if [ "$limit" -lt 5 ]; then
		say "== $name: not run, $(left) s of the budget left"
		took=0 rc=125
		return
	fi
	say "== $name (at most ${limit} s)"
	a=$(now)
	timeout --signal=TERM --kill-after=10 "$limit" "$@" >>"$log" 2>&1
	rc=$?
	took=$(secs "$a" "$(now)")
	say "== $name: exit $rc in $took s"
}
# notrun ID TARGET: the step did not produce its figure.
notrun() {
	case "$rc" in
	124) record "$1" "$2" "stopped at its time limit after $took s" FAIL ;;
	125) record "$1" "$2" "budget spent before this step" "not run" ;;
	*) record "$1" "$2" "exit $rc (see gpu-check.log)" FAIL ;;
	esac
}

say "gpu-check: bundle $bundle (commit $(cat "$bundle/COMMIT" 2>/dev/null)), $(date -u +%FT%TZ), $(nproc) cores, budget ${budget} s"

# pnec from the bundle, under its own loader and libraries (the GPU machine
# has no GDAL, and its glibc does not matter).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$bundle/e2e.tar.xz" || { say "gpu-check: $bundle/e2e.tar.xz missing or broken (scripts/gpu-bundle.sh)"; exit 2; }
e2e=$work/e2e
loader=$(ls "$e2e"/lib/ld-linux-x86-64.so.* | head -1)
mkdir -p "$work/bin"
cat >"$work/bin/pnec" <<-EOF
	#!/bin/sh
	GDAL_DATA=$e2e/gdal-data PROJ_DATA=$e2e/proj-data PROJ_LIB=$e2e/proj-data exec "$loader" --library-path "$e2e/lib" "$e2e/pnec" "\$@"
EOF
chmod +x "$work/bin/pnec"
export PATH=$work/bin:$PATH
if [ -f "$bundle/model.test.xz" ]; then
	xz -dc "$bundle/model.test.xz" >"$work/model.test" && chmod +x "$work/model.test"
fi
export PNEC_DATA=$bundle/shared/data GOMLX_NO_AUTO_INSTALL=1
py=python3
for p in python3 /usr/bin/python3; do
	if $p -c 'import tifffile' 2>/dev/null || $p -c 'import rasterio' 2>/dev/null; then py=$p; break; fi
done
same_map() { $py "$here/compare_class.py" "$1" "$2" 1.0 >>"$log" 2>&1; }

# The backend under test.
if [ "$cpu" = 1 ]; then
	xla=go
else
	plugin=${PNEC_GPU_PLUGIN:-}
	if [ -z "$plugin" ]; then
		plugin=$(pnec backends --json 2>>"$log" | $py -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    b = o.get("backend") or {}
    if b.get("kind") == "xla-cuda":
        print(b["plugin"]); break')
	fi
	if [ -z "$plugin" ]; then
		say "gpu-check: pnec found no CUDA plugin (pip install \"jax[cuda13]\", or set PNEC_GPU_PLUGIN); --cpu rehearses without one"
		exit 2
	fi
	xla=xla:$plugin
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >>"$log" 2>&1
fi
say "gpu-check: backend under test $xla"
export PNEC_CACHE_DIR=$work/cache # a cold cache: a fresh machine's
run "pnec backends (set-up found by pnec alone, device memory, cache)" 60 pnec backends
[ "$rc" = 0 ] && record setup "pnec finds the plugin and its NVIDIA libraries by itself" "pnec backends: all ok" pass ||
	record setup "pnec finds the plugin and its NVIDIA libraries by itself" "pnec backends exit $rc (see log)" FAIL

# Inputs: Pavia and Houston sized scenes, models of 103 and 200 bands.
S=$work/s
mkdir -p "$S"
if [ "$quick" = 1 ]; then big=2048 nbatch=2 epochs=5; else big=10000 nbatch=10 epochs=200; fi
run "inputs: synthetic scenes and two small models (go backend)" 120 bash -c "set -e
	pnec synth --layout procedural:610x340 --bands 103 --seed 3 --out $S/pavia.tif --labels-out $S/pavia_gt.tif
	pnec synth --layout procedural:349x1905 --bands 103 --seed 4 --out $S/houston.tif
	pnec synth --layout procedural:128x128 --bands 103 --seed 5 --out $S/t103.tif --labels-out $S/t103_gt.tif
	pnec synth --layout procedural:128x128 --bands 200 --seed 6 --out $S/t200.tif --labels-out $S/t200_gt.tif
	pnec synth --layout procedural:1024x1024 --bands 200 --seed 7 --out $S/big.vrt --vrt ${big}x${big}
	pnec train --quiet --scene $S/t103.tif --labels $S/t103_gt.tif --out $S/m103.pnec --epochs 20 --backend go
	pnec train --quiet --scene $S/t200.tif --labels $S/t200_gt.tif --out $S/m200.pnec --epochs 20 --backend go"
[ "$rc" = 0 ] || { say "gpu-check: inputs failed: nothing to measure"; exit 1; }

# 1. Pavia-size classify: cold cache (first process on a fresh machine),
# warm cache (a second process), and the default backend's choice.
run "classify Pavia size on $xla, cold cache" 120 pnec classify --quiet --model $S/m103.pnec --backend "$xla" $S/pavia.tif $S/p_xla.tif
[ "$rc" = 0 ] && record pavia-cold "classify 610x340x103 on XLA, cold cache <= 20 s" "$took s" "$(verdict "$took" 20)" || notrun pavia-cold "classify 610x340x103 on XLA, cold cache <= 20 s"
run "classify Pavia size on $xla, warm cache" 60 pnec classify --quiet --model $S/m103.pnec --backend "$xla" $S/pavia.tif $S/p_xla2.tif
[ "$rc" = 0 ] && record pavia-warm "classify 610x340x103 on XLA, warm cache <= 3 s per process" "$took s" "$(verdict "$took" 3)" || notrun pavia-warm "classify 610x340x103 on XLA, warm cache <= 3 s per process"
run "classify Pavia size, default backend" 60 pnec classify --model $S/m103.pnec $S/pavia.tif $S/p_default.tif
chosen=$(grep -o '"backend":"[^"]*"' "$log" | tail -1)
[ "$rc" = 0 ] && record pavia-default "classify 610x340x103 with the defaults <= 3 s (backend the rule picked)" "$took s ($chosen)" "$(verdict "$took" 3)" || notrun pavia-default "classify 610x340x103 with the defaults <= 3 s"
run "classify Pavia size on go" 60 pnec classify --quiet --model $S/m103.pnec --backend go $S/pavia.tif $S/p_go.tif
gotook=$took
if [ "$rc" = 0 ] && [ -f $S/p_xla.tif ]; then
	if same_map $S/p_go.tif $S/p_xla.tif; then m=pass; else m=FAIL; fi
	[ "$cpu" = 1 ] && m=rehearsal
	record agree-map "go and XLA class maps of the Pavia-size scene: 100% agreement" "$(grep 'class agreement' "$log" | tail -1 | cut -d' ' -f3) (go took $gotook s)" $m
else
	notrun agree-map "go and XLA class maps of the Pavia-size scene: 100% agreement"
fi

# 2. The inference call from host memory and the network on the device
# (paper encoder, Pavia size), from the model package's benchmarks.
if [ -x "$work/model.test" ]; then
	run "inference call from host memory, Pavia size" 120 bash -c "cd $bundle/shared && PNEC_BENCH_BACKEND='$xla' $work/model.test -test.run '^\$' -test.bench 'BackendInference(Stages)?\$/paper\$/PaviaU' -test.benchtime 10x -test.timeout 10m"
	grep -E '^Benchmark' "$log" >"$out/bench.txt" || true
	call=$(awk '/^BenchmarkBackendInference\/paper\/PaviaU/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") { printf "%.2f", $i / 1e6; exit } }' "$out/bench.txt")
	net=$(awk '/^BenchmarkBackendInferenceStages\/paper\/PaviaU/ { for (i = 1; i <= NF; i++) if ($(i+1) == "exec-s") { printf "%.2f", $i * 1000; exit } }' "$out/bench.txt")
	[ -n "$call" ] && record infer-call "inference call from host memory, 610x340x103 <= 20 ms" "$call ms" "$(verdict "$call" 20)" || notrun infer-call "inference call from host memory, 610x340x103 <= 20 ms"
	[ -n "$net" ] && record infer-net "the network on the device, 610x340x103 <= 6.7 ms" "$net ms" "$(verdict "$net" 6.7)" || notrun infer-net "the network on the device, 610x340x103 <= 6.7 ms"
else
	rc=127 took=0
	notrun infer-call "inference call from host memory, 610x340x103 <= 20 ms"
fi

# 3. Training: 200 epochs at Pavia size with the defaults, cold cache.
export PNEC_CACHE_DIR=$work/cache-train
run "train $epochs epochs at Pavia size on $xla, defaults, cold cache" 150 pnec train --quiet --scene $S/pavia.tif --labels $S/pavia_gt.tif --out $S/m_pavia.pnec --epochs $epochs --backend "$xla"
[ "$rc" = 0 ] && record train "pnec train, $epochs epochs, 610x340x103, defaults, cold cache <= 35.7 s" "$took s" "$(verdict "$took" 35.7)" || notrun train "pnec train, 200 epochs, 610x340x103, defaults, cold cache <= 35.7 s"
export PNEC_CACHE_DIR=$work/cache

# 4. A batch of 2 x nbatch scenes of mixed sizes, XLA against go; the
# Houston shape compiled into the cache first (the Pavia one is there).
mkdir -p $S/batch
for i in $(seq 1 $nbatch); do cp $S/pavia.tif $S/batch/pavia$i.tif; cp $S/houston.tif $S/batch/houston$i.tif; done
run "precompile the Houston shape on $xla" 120 pnec backends --precompile $S/m103.pnec --shapes 349x1905 --backend "$xla"
run "batch of $((2 * nbatch)) mixed scenes on $xla" 120 pnec batch --quiet --model $S/m103.pnec --backend "$xla" --datetime 2024-06-01T10:00:00Z --out-dir $S/bx $S/batch
bx=$took bxrc=$rc
run "batch of $((2 * nbatch)) mixed scenes on go" 150 pnec batch --quiet --model $S/m103.pnec --backend go --datetime 2024-06-01T10:00:00Z --out-dir $S/bg $S/batch
if [ "$bxrc" = 0 ] && [ "$rc" = 0 ]; then
	ratio=$(awk -v g="$took" -v x="$bx" 'BEGIN { printf "%.2f", g / x }')
	v=$(awk -v r="$ratio" 'BEGIN { print (r >= 3 ? "pass" : "FAIL") }')
	[ "$cpu" = 1 ] || [ "$quick" = 1 ] && v=rehearsal
	record batch "batch of $((2 * nbatch)) mixed scenes: XLA >= 3x faster than go here" "go $took s / XLA $bx s = ${ratio}x" "$v"
else
	notrun batch "batch of 20 mixed scenes: XLA >= 3x faster than go here"
fi

# 5. The large scene at three budgets: the same map, and <= 60 s at 32G.
for mem in 32G 8G 4G; do
	run "classify ${big}x${big}x200 on $xla at --max-memory $mem" 200 python3 "$here/peakrss.py" pnec --config GDAL_NUM_THREADS=ALL_CPUS classify --quiet --model $S/m200.pnec --backend "$xla" --max-memory $mem $S/big.vrt $S/big_$mem.tif
	if [ "$rc" = 0 ]; then
		lim=600
		[ $mem = 32G ] && lim=60
		record big-$mem "${big}x${big}x200 completes at --max-memory $mem$([ $mem = 32G ] && echo ', <= 60 s')" "$took s, $(grep -o 'peak RSS [0-9]* MiB' "$log" | tail -1)" "$(verdict "$took" $lim)"
	else
		notrun big-$mem "${big}x${big}x200 completes at --max-memory $mem"
	fi
done
if [ -f $S/big_32G.tif ] && [ -f $S/big_8G.tif ] && [ -f $S/big_4G.tif ]; then
	same_map $S/big_32G.tif $S/big_8G.tif && same_map $S/big_32G.tif $S/big_4G.tif && m=pass || m=FAIL
	record big-same "${big}x${big}x200: the same map at 4G, 8G and 32G" "$(grep 'class agreement' "$log" | tail -2 | cut -d' ' -f3 | paste -sd' ')" $m
else
	rc=125 took=0
	notrun big-same "${big}x${big}x200: the same map at 4G, 8G and 32G"
fi

# 6. Parity with the PyTorch reference and go against XLA on the network.
if [ -x "$work/model.test" ]; then
	run "parity with the reference on $xla" 90 bash -c "cd $bundle/shared && PNEC_TEST_BACKEND='$xla' $work/model.test -test.run 'Parity' -test.v"
	[ "$rc" = 0 ] && record parity "parity with the PyTorch reference (both encoders) on XLA" "all Parity tests passed" pass || notrun parity "parity with the PyTorch reference on XLA"
	run "go against $xla on the network" 120 bash -c "cd $bundle/shared && PNEC_XLA_BACKEND='$xla' $work/model.test -test.run 'TestBackendsAgreePrediction' -test.v"
	[ "$rc" = 0 ] && record agree-net "go vs XLA probabilities within 1e-4 (Pavia size, both encoders)" "$(grep -o 'P_up max |diff| [0-9.e-]*' "$log" | tail -2 | paste -sd' ')" pass || notrun agree-net "go vs XLA probabilities within 1e-4"
fi
run "pnec backends (the cache after the run)" 30 pnec backends --backend "$xla"

say ""
say "gpu-check: targets of issue 35 ($([ "$cpu" = 1 ] && echo "REHEARSAL on go: no GPU figure" || echo "$xla")$([ "$quick" = 1 ] && echo ", quick sizes"))"
{
	printf '%-14s | %-78s | %-40s | %s\n' id target measured verdict
	printf '%s\n' "---------------+--------------------------------------------------------------------------------+------------------------------------------+--------"
	while IFS=$'\t' read -r id target measured v; do
		printf '%-14s | %-78s | %-40s | %s\n' "$id" "$target" "$measured" "$v"
	done <"$results"
} | tee -a "$log"
say "gpu-check: $(($(date +%s) - t0)) s in all"
if grep -q $'\tFAIL$' "$results"; then exit 1; fi
exit 0
