#!/usr/bin/env bash
# make demo: the main job end to end on a small scene.
#   1. the scene: SalinasA from the shared data folder when present (pnec import mat),
#      otherwise a generated one (pnec synth from a small built-in spectral source);
#   2. a model trained on it with the pure-Go backend (small configuration: minutes);
#   3. the tile plan, and classification through the tiled path;
#   4. demo/product.tif, its gdalinfo summary, and demo/quicklook.png
#      (class colours left, reliability as grey right);
#   5. a batch of three placed copies and a corrupt file into demo/night: a
#      STAC catalog with thumbnails and the report page demo/night/index.html.
# Environment: PNEC (the binary, default bin/pnec), PNEC_DATA (the shared data
# folder, default ../shared/data), DEMO (output folder, default demo),
# DEMO_EPOCHS (default 100), DEMO_HIDDEN (default 32).
set -euo pipefail

PNEC=${PNEC:-bin/pnec}
DATA=${PNEC_DATA:-../shared/data}
OUT=${DEMO:-demo}
EPOCHS=${DEMO_EPOCHS:-100}
HIDDEN=${DEMO_HIDDEN:-32}
PY=/usr/bin/python3
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

if [ -f "$DATA/SalinasA/SalinasA_corrected.mat" ] && [ -f "$DATA/SalinasA/SalinasA_gt.mat" ]; then
	step "import SalinasA (83 x 86 pixels, 204 bands) from $DATA"
	"$PNEC" import mat --cube "$DATA/SalinasA/SalinasA_corrected.mat" --labels "$DATA/SalinasA/SalinasA_gt.mat" \
		--out "$OUT/scene.tif" --labels-out "$OUT/labels.tif"
	cat >"$OUT/classes.txt" <<'NAMES'
1 Brocoli_green_weeds_1
10 Corn_senesced_green_weeds
11 Lettuce_romaine_4wk
12 Lettuce_romaine_5wk
13 Lettuce_romaine_6wk
14 Lettuce_romaine_7wk
NAMES
	TILE=48 OVERLAP=16
else
	step "no SalinasA under $DATA: generate a 128 x 128 scene (pnec synth, procedural layout)"
	"$PY" scripts/demo_source.py "$OUT/source.tif" "$OUT/source_labels.tif"
	"$PNEC" synth --layout procedural:128x128 --spectra "$OUT/source.tif,$OUT/source_labels.tif" \
		--bands 64 --out "$OUT/scene.tif" --labels-out "$OUT/labels.tif" --seed 7
	: >"$OUT/classes.txt"
	TILE=64 OVERLAP=16
fi

step "train a model (pure-Go backend, hidden $HIDDEN, $EPOCHS epochs)"
names=()
[ -s "$OUT/classes.txt" ] && names=(--class-names "$OUT/classes.txt")
"$PNEC" train --scene "$OUT/scene.tif" --labels "$OUT/labels.tif" --out "$OUT/model.pnec" \
	--hidden "$HIDDEN" --epochs "$EPOCHS" --backend go "${names[@]}"

step "tile plan (--tile $TILE --overlap $OVERLAP)"
"$PNEC" tiles --scene "$OUT/scene.tif" --model "$OUT/model.pnec" --tile "$TILE" --overlap "$OVERLAP"

step "classify through the tiled path"
"$PNEC" classify --model "$OUT/model.pnec" --scene "$OUT/scene.tif" --out "$OUT/product.tif" \
	--tile "$TILE" --overlap "$OVERLAP" --backend go

step "gdalinfo $OUT/product.tif"
gdalinfo "$OUT/product.tif" | grep -v -E '^ {2,}[0-9]+: [0-9]+,[0-9]+,[0-9]+,[0-9]+$'

step "quick-look"
"$PY" scripts/quicklook.py "$OUT/product.tif" "$OUT/quicklook.png" 4

step "a night's batch: three placed copies of the scene and a corrupt file into $OUT/night"
# The copies are put at three places (UTM 10N) so that the report's map has footprints.
mkdir -p "$OUT/incoming"
i=0
for x in 600000 601000 600400; do
	i=$((i + 1))
	gdal_translate -q -a_srs EPSG:32610 -a_ullr "$x" $((4050000 - i * 300)) $((x + 320)) $((4049700 - i * 300)) \
		-mo ACQUISITIONDATETIME=2026-06-0${i}T10:30:00Z "$OUT/scene.tif" "$OUT/incoming/field$i.tif"
done
echo "not a GeoTIFF" >"$OUT/incoming/broken.tif"
"$PNEC" batch --model "$OUT/model.pnec" --out-dir "$OUT/night" --backend go --quiet --report "$OUT/night.jsonl" \
	"$OUT/incoming/" || echo "(exit status $?: the corrupt scene failed, as it should; the others are published)"
echo "demo: wrote $OUT/product.tif, $OUT/quicklook.png, $OUT/night/ (a STAC catalog: catalog.json, KEY.tif,"
echo "      KEY.json, KEY.thumbnail.png) and the night's report page $OUT/night/index.html"
