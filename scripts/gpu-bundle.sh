#!/usr/bin/env bash
# gpu-bundle.sh builds, on a machine with Go and GDAL, everything that
# scripts/gpu-check.sh needs on a GPU machine that has neither, in one folder
# that travels with the checkout within the device tool's 64 MiB:
#
#   gpu-bundle/e2e.tar.xz      the pnec command, every shared library ldd lists
#                              for it (GDAL and its dependencies, the dynamic
#                              loader included), GDAL's and PROJ's data
#   gpu-bundle/model.test.xz   the model package's tests and benchmarks
#                              (parity, go against XLA, inference stages)
#   gpu-bundle/shared/         SalinasA and the PyTorch reference outputs,
#                              laid out as ../shared beside a checkout
#
# Usage: scripts/gpu-bundle.sh [OUTDIR]   (default OUTDIR: gpu-bundle)
# The bundle is ignored by git (gpu-bundle/); name it in the device tool's
# carry list. It fails when the folder would not fit in 60 MiB, leaving room
# for the checkout beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

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
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
echo "gpu-bundle: building model.test"
go test -c -ldflags="-s -w" -o "$stage/model.test" ./model
xz -9 -T2 -c "$stage/model.test" >"$out/model.test.xz"
cp "$data/README.md" "$out/shared/data/"
cp "$data"/SalinasA/SalinasA_corrected.mat "$data"/SalinasA/SalinasA_gt.mat \
	"$data"/SalinasA/SalinasA_train_seed12345.mat "$out/shared/data/SalinasA/"
if [ -d "$ref" ]; then
	mkdir -p "$out/shared/reference"
	cp "$ref"/README.md "$ref"/*.json "$out/shared/reference/"
fi
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

echo "gpu-bundle: building pnec and collecting its shared libraries"
mkdir -p "$stage/e2e/lib" "$stage/e2e/gdal-data" "$stage/e2e/proj-data"
# The GODEBUG default `make build` compiles in (the Makefile's GODEBUG_DEFAULT).
godebug=$(sed -n 's/^GODEBUG_DEFAULT := //p' Makefile)
go build -ldflags "-s -w -X github.com/pnec/pnec/version.String=$(git describe --tags --always --dirty 2>/dev/null || echo dev) -X runtime.godebugDefault=$godebug" -o "$stage/e2e/pnec" ./cmd/pnec
# Every library ldd resolves, and the loader itself: gpu-check.sh runs pnec
# through this loader so the GPU machine's own glibc does not matter.
ldd "$stage/e2e/pnec" | awk '/=> \//{print $3} /^\t\/lib.*ld-linux/{print $1}' | while read -r lib; do
	cp -L "$lib" "$stage/e2e/lib/"
done
strip --strip-unneeded "$stage"/e2e/lib/*.so* 2>/dev/null || true
cp -r "$(gdal-config --datadir)"/. "$stage/e2e/gdal-data/"
proj=$(pkg-config --variable=datadir proj 2>/dev/null)/proj
[ -f "$proj/proj.db" ] || proj=/usr/share/proj
cp "$proj/proj.db" "$stage/e2e/proj-data/"
tar -C "$stage" -cf - e2e | xz -9 -T2 >"$out/e2e.tar.xz"
du -sh "$out" "$out"/* | sed 's/^/gpu-bundle: /'
size=$(du -sm "$out" | cut -f1)
if [ "$size" -gt 60 ]; then
	echo "gpu-bundle: $out is $size MiB: over the 60 MiB that leave room for the checkout in one device call" >&2
	exit 1
fi
