#!/usr/bin/env bash
# gpu-bundle.sh builds, on a machine with Go and GDAL, everything that
# scripts/gpu-check.sh needs on a GPU machine that has neither:
#
#   gpu-bundle/model.test        the model package's tests and benchmarks
#                                (GDAL-free; links only libc)
#   gpu-bundle/shared/           SalinasA and the PyTorch reference outputs,
#                                laid out as ../shared beside a checkout
#   gpu-bundle/e2e.tar.xz        (with --e2e) the pnec command, every shared
#                                library ldd lists for it (GDAL and its
#                                dependencies, the dynamic loader included),
#                                GDAL's and PROJ's data: for end-to-end
#                                classify runs
#
# Usage: scripts/gpu-bundle.sh [--e2e | --e2e-only] [OUTDIR]   (default OUTDIR: gpu-bundle)
#   --e2e-only   the data and e2e.tar.xz without model.test: for machines that
#                take 64 MiB per command, carry the core (about 24 MB) and the
#                e2e bundle (about 52 MB) in two commands
# The bundle is ignored by git (gpu-bundle/, gpu-e2e/); name it in the device
# tool's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."

e2e=0 core=1
case "${1:-}" in
--e2e) e2e=1; shift ;;
--e2e-only) e2e=1 core=0; shift ;;
esac
out=${1:-gpu-bundle}
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=simd

data=${PNEC_DATA:-}
if [ -z "$data" ]; then
	for d in ../shared/data ../../shared/data; do
		if [ -f "$d/README.md" ]; then data=$d; break; fi
	done
fi
if [ -z "$data" ]; then
	echo "gpu-bundle: ../shared/data not found (set PNEC_DATA): the bundle needs SalinasA for the training check" >&2
	exit 1
fi
ref=$(dirname "$data")/reference

rm -rf "$out"
mkdir -p "$out/shared/data/SalinasA"
if [ "$core" = 1 ]; then
	echo "gpu-bundle: building model.test"
	go test -c -ldflags="-s -w" -o "$out/model.test" ./model
fi
cp "$data/README.md" "$out/shared/data/"
cp "$data"/SalinasA/SalinasA_corrected.mat "$data"/SalinasA/SalinasA_gt.mat \
	"$data"/SalinasA/SalinasA_train_seed12345.mat "$out/shared/data/SalinasA/"
if [ -d "$ref" ]; then
	mkdir -p "$out/shared/reference"
	cp "$ref"/README.md "$ref"/*.json "$out/shared/reference/"
fi
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

if [ "$e2e" = 1 ]; then
	echo "gpu-bundle: building pnec and collecting its shared libraries"
	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage/e2e/lib" "$stage/e2e/gdal-data" "$stage/e2e/proj-data"
	go build -ldflags "-s -w -X github.com/pnec/pnec/model.Version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o "$stage/e2e/pnec" ./cmd/pnec
	# Every library ldd resolves, and the loader itself: gpu-check.sh runs
	# pnec through this loader so the GPU machine's own glibc does not matter.
	ldd "$stage/e2e/pnec" | awk '/=> \//{print $3} /^\t\/lib.*ld-linux/{print $1}' | while read -r lib; do
		cp -L "$lib" "$stage/e2e/lib/"
	done
	cp -r "$(gdal-config --datadir)"/. "$stage/e2e/gdal-data/"
	proj=$(pkg-config --variable=datadir proj 2>/dev/null)/proj
	[ -f "$proj/proj.db" ] || proj=/usr/share/proj
	cp "$proj/proj.db" "$stage/e2e/proj-data/"
	tar -C "$stage" -cf - e2e | xz -9 -T2 >"$out/e2e.tar.xz"
fi
du -sh "$out" "$out"/* | sed 's/^/gpu-bundle: /'
