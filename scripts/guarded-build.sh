#!/usr/bin/env bash
# guarded-build.sh: builds pnec against a copy of GoMLX's compute module
# whose Go-backend buffers carry 256 guard bytes on each side
# (scripts/gomlx-guard.patch), for the heap-corruption hunt of issue 46
# item 17. Nothing in the repository changes: the copy, a go.mod naming it
# (a replace) and the binary go to OUT.
#
#   OUT=/tmp/pnec-guarded scripts/guarded-build.sh
#   PNEC=/tmp/pnec-guarded/pnec OUT=/tmp/pnec-stress-guarded scripts/stress-classify.sh 1500
#   PNEC=/tmp/pnec-guarded/pnec GODEBUG=efence=1 OUT=/tmp/pnec-stress-efence scripts/stress-classify.sh 300
#
# What it checks:
#   - a write past either end of a GoMLX buffer panics ("GUARD PutBuffer:
#     byte N past a buffer of B bytes (shape S) changed") when the buffer
#     goes back to the pool or is finalized; the patch's own test
#     (TestGuardsCatchAWritePastTheEnd) runs here before the build;
#   - GODEBUG=efence=1 (every object on pages of its own, no address used
#     twice: a write through a stale pointer faults where it happens) can
#     run: GoMLX's partial vector loads read up to 60 bytes past a buffer's
#     end, which faults the plain build at once under efence
#     (simdV2V1AddFloat32) and lands in the guard bytes here.
# The guarded binary is for these checks only: it is slower and larger
# than bin/pnec and never installed.
set -euo pipefail
export GOEXPERIMENT=${GOEXPERIMENT:-simd} GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${OUT:-/tmp/pnec-guarded}")
mkdir -p "$OUT"
src=$(go list -m -f '{{.Dir}}' github.com/gomlx/compute)
version=$(go list -m -f '{{.Version}}' github.com/gomlx/compute)
rm -rf "$OUT/compute"
cp -r "$src" "$OUT/compute"
chmod -R u+w "$OUT/compute"
if ! patch -s -d "$OUT/compute" -p1 <scripts/gomlx-guard.patch; then
	echo "guarded-build: scripts/gomlx-guard.patch does not apply to github.com/gomlx/compute $version (written for v0.1.14)" >&2
	exit 1
fi
(cd "$OUT/compute" && GOFLAGS=-mod=mod go test -count=1 -run TestGuardsCatchAWritePastTheEnd ./internal/gobackend/ >/dev/null)
cp go.mod "$OUT/go.mod"
cp go.sum "$OUT/go.sum"
echo "replace github.com/gomlx/compute => $OUT/compute" >>"$OUT/go.mod"
# The GODEBUG default `make build` compiles in (the Makefile's GODEBUG_DEFAULT);
# GODEBUG=invalidptr=1 at run time brings the collector's check back.
godebug=$(sed -n 's/^GODEBUG_DEFAULT := //p' Makefile)
go build -modfile="$OUT/go.mod" -ldflags "-X github.com/pnec/pnec/version.String=$(git describe --always --dirty)-guarded -X runtime.godebugDefault=$godebug" -o "$OUT/pnec" ./cmd/pnec
echo "guarded-build: $OUT/pnec (github.com/gomlx/compute $version with guard bytes)"
