# GoMLX's pure-Go backend compiles its SIMD matrix kernels only with this
# experiment on; without it matrix work is 10-20x slower.
export GOEXPERIMENT := simd
# go.mod names `toolchain go1.27.4` (GoMLX v0.28.16 needs Go 1.27); Debian's and
# many distributions' Go default to GOTOOLCHAIN=local, which would refuse it.
# auto lets any Go >= 1.21 fetch that toolchain from the module proxy once.
export GOTOOLCHAIN := auto

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# GODEBUG_DEFAULT is compiled in as the program's GODEBUG default: the
# collector passes over a pointer-typed slot whose value points at no live Go
# object instead of stopping the program. It must equal resources.GODEBUGDefault, whose
# comment says why (godal's stores into fresh C memory; issue 46 item 17);
# a binary built without it runs again with it at every start (about 0.1 s:
# pnec --version took 0.20 s against 0.11-0.12 s, 10 runs each).
GODEBUG_DEFAULT := invalidptr=0
# The version pnec --version prints and products, model files and STAC
# Items record (version.String), and the GODEBUG default.
LDFLAGS := -X github.com/pnec/pnec/version.String=$(VERSION) -X runtime.godebugDefault=$(GODEBUG_DEFAULT)
PREFIX  ?= /usr/local

# Debian/Ubuntu packages the build and the tests need: GDAL's headers and
# tools, rasterio as an independent reader of the products, and python3-gdal
# for GDAL's own COG validator (osgeo_utils), which the product tests run;
# python3-netcdf4 and python3-h5py write the sensor fixtures GDAL cannot
# (EMIT and AVIRIS-3 NetCDF-4, PRISMA and Tanager HDF5: internal/fixture).
APT_PACKAGES := libgdal-dev libhdf5-dev pkg-config gdal-bin python3-rasterio python3-numpy python3-gdal python3-netcdf4 python3-h5py

.PHONY: check-slurm all deps build install test test-short stress-classify bench bench-torch bench-quick bench-big bench-big-cell bench-budget bench-train bench-acquisitions bench-baselines bench-crosssensor calibrate demo gpu-bundle gpu-rehearse check-clients check-browsers qgis-plugin clean

all: build

# deps installs GDAL (and the test readers) with apt-get when missing.
deps:
	@if ! command -v gdal-config >/dev/null 2>&1 || ! command -v gdalinfo >/dev/null 2>&1 || ! pkg-config --exists hdf5 2>/dev/null || ! /usr/bin/python3 -c 'import rasterio, osgeo_utils.samples.validate_cloud_optimized_geotiff, netCDF4, h5py' >/dev/null 2>&1; then \
		echo "make: installing $(APT_PACKAGES) with apt-get"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES); \
	fi

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/pnec ./cmd/pnec

install: build
	install -m 0755 bin/pnec $(PREFIX)/bin/pnec

# RACE_PKGS run their stages, jobs or temporaries concurrently: make test
# runs their tests again under the race detector (about 2.5 minutes more on
# 2 shared cores with the race build cached, 4 more to build it cold).
# The race build's pointer checks (checkptr) are off: GoMLX's compute module
# fails them on working code. Its Go matrix kernels (not assembly) keep
# addresses as uintptr and turn them back into pointers (small_transposed.go
# and its siblings), which checkptr cannot tie to an allocation ("pointer
# arithmetic result points to invalid allocation"). pnec's own unsafe and
# cgo code passes them: a classify built with checkptr on for everything
# but compute (-gcflags=github.com/gomlx/compute/...=-d=checkptr=0, as for
# issue 46 item 17) ran clean.
RACE_PKGS := ./processor ./pipelines ./internal/tempfiles

# test is the README's one command (CI runs it): every package, the race
# build of RACE_PKGS, and the Slurm cluster check (PNEC_CHECK_SLURM=1: a
# plain go test never installs system packages). PKG=./geo (or any package
# pattern) runs one package's vet and tests with the toolchain settings
# above, without the race and Slurm steps.
PKG ?= ./...

test: deps
	$(GO) vet $(PKG)
ifeq ($(PKG),./...)
	PNEC_CHECK_SLURM=1 $(GO) test -count=1 -timeout 60m ./...
	$(GO) test -race -gcflags=all=-d=checkptr=0 -count=1 -timeout 30m $(RACE_PKGS)
else
	$(GO) test -count=1 -timeout 60m $(PKG)
endif

test-short: deps
	$(GO) test -short -count=1 $(PKG)

# stress-classify is the heap-corruption stress test of issue 46 item 17
# (scripts/stress-classify.sh): it trains models on halves of SalinasA and
# JasperRidge (../shared/data) and runs `pnec classify` on windows of their
# scenes whose sizes change from run to run, with and without
# --probabilities network, every fourth run the issue's own 43 x 86 half,
# RUNS times (default 2000, the issue's bar), each a fresh process,
# stopping at the first that fails. GOGC,
# GODEBUG and GOTRACEBACK pass through (GOGC=5 makes the collector check
# every pointer far more often). Not part of make test; its in-process short
# version, TestClassifyProbabilitiesNoHeapCorruption (about 25 s), is.
RUNS ?= 2000
stress-classify: build
	PNEC=bin/pnec OUT=$${OUT:-/tmp/pnec-stress} ./scripts/stress-classify.sh $(RUNS)

# bench runs every Go benchmark of the module (-count 5) and the rows of
# bench/e2e.tsv under GNU time, then pnec against the PyTorch reference on the
# same network (both encoders; skipped with a message without python3-torch),
# and writes BENCHMARKS.md and bench/results.json (about 45 minutes on 2
# cores). bench-quick does the same
# with smaller inputs and fewer runs (under 3 minutes) and marks the report
# as quick. GNU time (Debian package 'time') gives the peak RSS.
BENCH_TIME_INSTALL = if [ ! -x /usr/bin/time ]; then \
		echo "make: installing GNU time with apt-get"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq time; \
	fi

bench: deps
	@$(BENCH_TIME_INSTALL)
	$(GO) run ./bench/cmd/benchrun -mode full

# bench-torch runs only the side-by-side comparison with the PyTorch reference
# (../shared/reference; needs python3-torch and libopenblas0-openmp, skipped
# with a message otherwise) and writes its own report.
bench-torch: deps
	$(GO) run ./bench/cmd/benchrun -mode full -torch-only -md bench/torch.md -json bench/torch.json

bench-quick: deps
	@$(BENCH_TIME_INSTALL)
	$(GO) run ./bench/cmd/benchrun -mode quick

# bench-big classifies a 10,000 x 10,000 x 200 Int16 DEFLATE scene (synth
# VRT) with --max-memory 4G under GNU time and writes pixels/s, the stage
# shares, the peak RSS and the product checks to $(BIG_OUT)/bench-big.md
# (10-20 minutes on 2 cores; run it on a quiet machine). bench-budget writes
# the table of peak RSS against --max-memory over widths, bands and budgets
# to $(BUDGET_OUT)/budget-table.md (about 20 minutes). Both copy their report
# under bench/ and re-render BENCHMARKS.md, which includes them. calibrate remeasures the
# planner's memory model and rewrites processor/calibration.go (about 5
# minutes; rerun it after changes to the network or the pipeline's buffers).
BIG_OUT    ?= /tmp/pnec-bench-big
BUDGET_OUT ?= /tmp/pnec-bench-budget

bench-big: build
	@$(BENCH_TIME_INSTALL)
	PNEC=bin/pnec OUT=$(BIG_OUT) REPORT=bench/big.md scripts/bench-big.sh
	$(GO) run ./bench/cmd/benchrun -render bench/results.json

# bench-big-cell is bench-big with a model of the cell encoder (the default
# before issue 23 made it the paper's).
bench-big-cell: build
	@$(BENCH_TIME_INSTALL)
	ENCODER=cell PNEC=bin/pnec OUT=$(BIG_OUT) REPORT=bench/big-cell.md scripts/bench-big.sh
	$(GO) run ./bench/cmd/benchrun -render bench/results.json

bench-budget: build
	@$(BENCH_TIME_INSTALL)
	PNEC=bin/pnec OUT=$(BUDGET_OUT) REPORT=bench/budget.md scripts/bench-budget.sh
	$(GO) run ./bench/cmd/benchrun -render bench/results.json

# bench-train trains on synthetic 224-band scenes of 500, 1000 and 2000 px
# a side with the defaults (time per epoch, peak RSS), and 200 epochs at
# 1000 x 1000 with 15 pixels a class and with every pixel labelled
# and SalinasA with and without the default augmentation
# (scripts/bench-train-big.sh; about 40 minutes on 2 cores): bench/train-big.md,
# which BENCHMARKS.md includes.
TRAIN_OUT ?= /tmp/pnec-bench-train

bench-train: build
	@$(BENCH_TIME_INSTALL)
	PNEC=bin/pnec OUT=$(TRAIN_OUT) REPORT=bench/train-big.md scripts/bench-train-big.sh
	$(GO) run ./bench/cmd/benchrun -render bench/results.json

# bench-acquisitions runs the acquisition-shift protocol (pnec experiment
# --shift, 5 seeds, both scenes of ../shared/data, both encoders, the default
# model and the paper's input) and writes bench/acquisitions.md, which
# BENCHMARKS.md includes (hours on 2 cores; JSON kept in $(ACQ_OUT), so a
# rerun resumes).
ACQ_OUT ?= /tmp/pnec-bench-acquisitions

bench-acquisitions: build
	PNEC=bin/pnec OUT=$(ACQ_OUT) scripts/bench-acquisitions.sh

# bench-baselines trains pnec with the defaults and the classic per-pixel
# baselines (RBF-SVM with C and gamma by 3-fold CV on the training pixels,
# 1-NN by spectral angle, random forest of 500 trees; Debian's
# python3-sklearn, installed when missing) on exactly the same training
# pixels: the fixed splits of ../shared/data (5 seeds), spatially disjoint
# halves in four directions (3 draws) and synthetic scenes on the Pavia
# University and Houston layouts, and writes bench/baselines.md (issue 45;
# hours on 2 cores; results kept in $(BASELINES_OUT), so a rerun resumes).
BASELINES_OUT ?= /tmp/pnec-bench-baselines

bench-baselines: build
	@if ! /usr/bin/python3 -c 'import sklearn' >/dev/null 2>&1; then \
		echo "make: installing python3-sklearn with apt-get"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-sklearn; \
	fi
	/usr/bin/python3 scripts/bench_baselines.py --pnec bin/pnec --work $(BASELINES_OUT) --report bench/baselines.md
	$(GO) run ./bench/cmd/benchrun -render bench/results.json

# bench-crosssensor measures one model on several sensors (issue 31): each
# sensor's delivery simulated from SalinasA's and Jasper Ridge's AVIRIS
# spectra, a model trained on each one's bands shared with the others (5
# seeds, default config), applied to every other's: bench/crosssensor.md
# (about 2 hours on 2 shared cores; accuracy only, so no bench lock).
bench-crosssensor: deps
	$(GO) run ./bench/cmd/crosssensor -out bench/crosssensor.json -md bench/crosssensor.md

calibrate: deps
	flock /tmp/pnec-bench.lock $(GO) run ./bench/cmd/calibrate

# demo runs the main job end to end (see scripts/demo.sh): SalinasA from
# ../shared/data when present, else a generated scene; a model trained with
# the pure-Go backend; tiled classification into demo/product.tif; its
# gdalinfo summary and demo/quicklook.png.
demo: build
	PNEC=bin/pnec ./scripts/demo.sh

# gpu-bundle builds what scripts/gpu-check.sh needs on a GPU machine without
# Go or GDAL (docs/development.md, "GPU (XLA/CUDA)"); gpu-rehearse runs that script's
# steps here on the pure-Go backend (PNEC_GPU_BUDGET=1800: this machine is slower).
gpu-bundle: deps
	scripts/gpu-bundle.sh

gpu-rehearse: gpu-bundle
	OUT=gpu-results PNEC_GPU_BUDGET=$${PNEC_GPU_BUDGET:-1800} scripts/gpu-check.sh --cpu --quick gpu-bundle

# check-clients opens products in headless QGIS (PyQGIS) as GIS users do
# (docs/product.md): the default paletted renderer with the class names,
# transparent no-data, the product file alone, and an ungeoreferenced
# product upright and aligned with its input; then it runs the QGIS plugin
# (qgis/pnec_processing, docs/qgis.md) through QGIS's Processing with
# bin/pnec: classify with progress, style and Cancel, train, batch. Not part
# of `make test`: it installs qgis, python3-qgis and python3-gdal (about
# 260 MB) when missing.
CLIENT_PACKAGES := qgis python3-qgis python3-gdal
CLIENTS_DIR ?= check-clients

check-clients: build
	@if ! /usr/bin/python3 -c 'import qgis.core, osgeo.gdal' >/dev/null 2>&1; then \
		echo "make: installing $(CLIENT_PACKAGES) with apt-get"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(CLIENT_PACKAGES); \
	fi
	rm -rf $(CLIENTS_DIR)
	PNEC_CLIENTS_OUT=$(abspath $(CLIENTS_DIR)) $(GO) test -count=1 -run '^TestClientsFixture$$' ./cmd/pnec
	QT_QPA_PLATFORM=offscreen /usr/bin/python3 scripts/check_clients.py $(CLIENTS_DIR)
	QT_QPA_PLATFORM=offscreen /usr/bin/python3 scripts/check_qgis_plugin.py $(CLIENTS_DIR) bin/pnec

# check-browsers opens a batch's output folder in the clients a person uses
# (docs/batch.md, "Checked with the real clients"): headless Chromium opens
# the report page index.html from disk (no console error, every thumbnail
# loaded, every scene with its status), and STAC Browser (npm
# @radiantearth/stac-browser at STAC_BROWSER_VERSION, built once in
# $(BROWSERS_DIR)/, a scratch folder never committed) served with the folder
# from 127.0.0.1 lists every Item with its thumbnail and opens an Item page.
# Screenshots in $(BROWSERS_DIR)/shots/. Not part of `make test`: it installs
# chromium when missing and needs node/npm and the npm registry (the first
# build of STAC Browser takes minutes).
BROWSERS_DIR ?= check-browsers
STAC_BROWSER_VERSION ?= 4.0.1
PUPPETEER_VERSION ?= 24.43.1

check-browsers: build
	STAC_BROWSER_VERSION=$(STAC_BROWSER_VERSION) PUPPETEER_VERSION=$(PUPPETEER_VERSION) GO=$(GO) scripts/check-browsers.sh $(BROWSERS_DIR)

# qgis-plugin zips the QGIS plugin for QGIS's "Install from ZIP" (docs/qgis.md).
qgis-plugin:
	mkdir -p bin
	rm -f bin/pnec_processing.zip
	cd qgis && /usr/bin/python3 -c 'import sys, zipfile, pathlib; z = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED); [z.write(p) for p in sorted(pathlib.Path("pnec_processing").rglob("*")) if "__pycache__" not in p.parts]' ../bin/pnec_processing.zip

clean:
	rm -rf bin demo gpu-bundle gpu-results check-clients check-browsers

# check-slurm runs pnec batch as a job array on a real single-node Slurm
# cluster started in a temporary directory (root; installs slurm-wlm and
# munge with apt-get when missing) and checks exactly-once processing, the
# shared STAC Collection, a bad scene, scancel + resubmit and idempotence.
# make test runs it too (TestCheckSlurm, with PNEC_CHECK_SLURM=1) when it
# runs as root.
check-slurm: build
	scripts/check-slurm.sh bin/pnec
