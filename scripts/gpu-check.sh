#!/usr/bin/env bash
# gpu-check.sh runs the whole GPU measurement of pnec in one command, on a
# machine that has an NVIDIA GPU, Python with jax-cuda13-pjrt (its
# xla_cuda_plugin.so is the PJRT plugin) and the NVIDIA pip libraries, but
# neither Go nor GDAL. Build the bundle first, where Go and GDAL are, with
# scripts/gpu-bundle.sh, and carry it there (docs/development.md, "GPU (XLA/CUDA)").
#
# Usage: scripts/gpu-check.sh [--cpu] [--quick] [BUNDLE]   (default BUNDLE: gpu-bundle)
#   --cpu    run every step on the pure-Go backend instead (to rehearse the
#            script on a machine without a GPU: same steps, same outputs)
#   --quick  fewer benchmark iterations and no 200-epoch training
# Environment:
#   OUT              where results go (default ./gpu-results): gpu-check.log,
#                    and bench.txt with the raw benchmark lines
#   PNEC_GPU_PLUGIN  the plugin's absolute path; found through python3 when unset
#
# Steps (each logged with its wall time; a failing step is reported and the
# next one still runs, and the exit status is 1 if any failed):
#   1. the machine: nvidia-smi, the plugin, its PJRT C API version vs pnec's
#   2. correctness: the reference parity tests (both encoders), Go backend vs
#      XLA outputs on a Pavia-sized scene (<= 1e-4), 20 SalinasA epochs on
#      both (OA within 0.5 points)
#   3. speed: full-scene inference of Pavia-University and Houston-2013
#      sized scenes (network + upsampling + recovery) after compilation, the
#      compilation separately, and 200 training epochs at Pavia size
#   4. end to end, when the bundle has e2e.tar.xz: pnec classify whole and
#      tiled on XLA (class bands compared) and a large synthetic scene timed
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
bundle=$(cd "${1:-gpu-bundle}" 2>/dev/null && pwd) || { echo "gpu-check: bundle ${1:-gpu-bundle} not found (run scripts/gpu-bundle.sh where Go is)" >&2; exit 2; }
out=${OUT:-gpu-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/gpu-check.log
: >"$log"
failed=()

say() { echo "$*" | tee -a "$log"; }
# step NAME CMD...: runs CMD with its output in the log, times it, records failure.
step() {
	local name=$1 t0 rc
	shift
	say "== $name"
	t0=$(date +%s%N)
	"$@" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	say "== $name: exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	[ "$rc" = 0 ] || failed+=("$name")
}

say "gpu-check: bundle $bundle (commit $(cat "$bundle/COMMIT" 2>/dev/null)), $(date -u +%FT%TZ), $(nproc) cores"

if [ "$cpu" = 1 ]; then
	backend=go
else
	plugin=${PNEC_GPU_PLUGIN:-}
	if [ -z "$plugin" ]; then
		plugin=$(python3 - <<-'EOF' 2>/dev/null
		import glob, os, site
		for d in site.getsitepackages() + [site.getusersitepackages()]:
		    for p in sorted(glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so"))):
		        print(p); raise SystemExit
		EOF
		)
	fi
	if [ -z "$plugin" ] || [ ! -f "$plugin" ]; then
		say "gpu-check: no xla_cuda_plugin.so found (pip package jax-cuda13-pjrt); set PNEC_GPU_PLUGIN, or use --cpu"
		exit 2
	fi
	site=$(dirname "$(dirname "$(dirname "$plugin")")")
	# The plugin dlopens cuBLAS, cuDNN ... from the NVIDIA pip packages;
	# ptxas and libdevice come from nvidia/cuda_nvcc.
	libs=$(ls -d "$site"/nvidia/*/lib 2>/dev/null | paste -sd:)
	export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	[ -d "$site/nvidia/cuda_nvcc" ] && export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_cuda_data_dir=$site/nvidia/cuda_nvcc"
	export GOPJRT_CUDA_CHECKS=0
	backend=xla:$plugin
	step "nvidia-smi" nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
fi
export PNEC_XLA_BACKEND=$backend PNEC_BENCH_BACKEND=$backend GOMLX_NO_AUTO_INSTALL=1
# synth's class spectra and the real-data tests read the bundled SalinasA.
export PNEC_DATA=$bundle/shared/data
say "gpu-check: backend $backend"

# The test binary finds ../shared/data by walking up from its working
# directory: run it from inside the bundle.
mt() { (cd "$bundle/shared" && "$bundle/model.test" "$@"); }

if [ -x "$bundle/model.test" ]; then
	step "probe: plugin loads, PJRT version, smoke product" mt -test.run 'TestProbeOtherBackend' -test.v
	step "correctness: parity with the reference (both encoders) on $backend" \
		env PNEC_TEST_BACKEND="$backend" "$bundle/model.test" -test.run 'Parity' -test.v
	step "correctness: go vs $backend (both encoders), 20 SalinasA epochs" \
		mt -test.run 'BackendsAgree' -test.v -test.timeout 30m
	n=10 train=BackendTrain200Epochs
	[ "$quick" = 1 ] && n=3 train=NONE
	step "speed: inference (after compilation)" \
		mt -test.run '^$' -test.bench 'BackendInference$' -test.benchtime "${n}x" -test.timeout 30m
	step "speed: inference by stage (host preparation, copies, device, recovery)" \
		mt -test.run '^$' -test.bench 'BackendInferenceStages' -test.benchtime "${n}x" -test.timeout 30m
	# Training with XLA's autotuning off, as pnec train does by default
	# (cmd/pnec/xlaflags.go): compiling the autotuned step costs more than
	# 200 epochs gain from it.
	[ "$train" != NONE ] && step "speed: 200 training epochs, Pavia size" \
		env XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0" \
		bash -c 'cd "$1/shared" && "$1/model.test" -test.run "^\$" -test.bench "$2" -test.benchtime 1x -test.timeout 30m' _ "$bundle" "$train"
else
	say "gpu-check: no model.test in the bundle: model steps skipped"
fi
grep -E '^Benchmark' "$log" >"$out/bench.txt" || true

if [ -f "$bundle/e2e.tar.xz" ]; then
	e2e=$(mktemp -d)
	tar -C "$e2e" -xJf "$bundle/e2e.tar.xz"
	e2e=$e2e/e2e
	loader=$(ls "$e2e"/lib/ld-linux-x86-64.so.* | head -1)
	# pnec runs under the bundled loader and libraries, so the GPU machine's
	# glibc and its (absent) GDAL do not matter.
	w=$(mktemp -d)
	mkdir -p "$w/bin"
	cat >"$w/bin/pnec" <<-EOF
	#!/bin/sh
	GDAL_DATA=$e2e/gdal-data PROJ_DATA=$e2e/proj-data PROJ_LIB=$e2e/proj-data exec "$loader" --library-path "$e2e/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$e2e/pnec" "\$@"
	EOF
	chmod +x "$w/bin/pnec"
	export PATH=$w/bin:$PATH
	# An independent reader of the products: tifffile (on the GPU machines) or rasterio.
	py=python3
	for p in python3 /usr/bin/python3; do
		if $p -c 'import tifffile' 2>/dev/null || $p -c 'import rasterio' 2>/dev/null; then py=$p; break; fi
	done
	step "e2e: backends" pnec backends --backend "$backend"
	step "e2e: synth + train" bash -c "set -e
		pnec synth --layout procedural:256x256 --bands 103 --seed 3 --out $w/s.tif --labels-out $w/s_gt.tif
		pnec train --quiet --scene $w/s.tif --labels $w/s_gt.tif --out $w/m.pnec --epochs 30 --backend $backend"
	[ "$quick" = 0 ] && step "e2e: 200 training epochs of both encoders at Pavia size (pnec train)" bash -c "set -e
		pnec synth --layout procedural:610x340 --bands 103 --seed 3 --out $w/pavia.tif --labels-out $w/pavia_gt.tif
		for enc in paper cell; do pnec train --scene $w/pavia.tif --labels $w/pavia_gt.tif --out $w/m_\$enc.pnec --encoder \$enc --epochs 200 --backend $backend 2>&1 | tail -1; done"
	step "e2e: classify whole vs tiled" bash -c "set -e
		pnec classify --quiet --model $w/m.pnec --backend $backend --tile 0 $w/s.tif $w/whole.tif
		pnec classify --quiet --model $w/m.pnec --backend $backend --tile 128 --overlap 32 $w/s.tif $w/tiled.tif
		$py $here/compare_class.py $w/whole.tif $w/tiled.tif"
	if [ "$quick" = 0 ]; then
		step "e2e: 10000x10000x200 synthetic scene" bash -c "set -e
			pnec synth --layout procedural:1024x1024 --bands 200 --seed 5 --out $w/big.vrt --vrt 10000x10000
			pnec synth --layout procedural:256x256 --bands 200 --seed 6 --out $w/t200.tif --labels-out $w/t200_gt.tif
			pnec train --quiet --scene $w/t200.tif --labels $w/t200_gt.tif --out $w/m200.pnec --epochs 30 --backend $backend
			T=\"python3 $here/peakrss.py\"; /usr/bin/time -v true >/dev/null 2>&1 && T='/usr/bin/time -v'
			\$T pnec --config GDAL_NUM_THREADS=ALL_CPUS classify --model $w/m200.pnec --backend $backend --max-memory 32G $w/big.vrt $w/big_map.tif"
	fi
	rm -rf "$w"
fi

if [ ${#failed[@]} -gt 0 ]; then
	say "gpu-check: FAILED: ${failed[*]}"
	exit 1
fi
say "gpu-check: all steps passed"
