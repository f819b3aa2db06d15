#!/usr/bin/env bash
# make check-browsers: the batch's output folder in the clients a person uses.
#   1. TestBrowsersFixture runs pnec batch on three placed scenes and a corrupt
#      file into DIR/fixture/out (catalog.json, Items, thumbnails, index.html);
#   2. headless Chromium (Debian's chromium, driven by puppeteer-core) opens
#      DIR/fixture/out/index.html from disk;
#   3. STAC Browser (npm @radiantearth/stac-browser, built once in
#      DIR/stac-browser-VERSION, a scratch folder never committed) is served
#      with the output folder from 127.0.0.1 and opened in the same Chromium.
# Screenshots: DIR/shots/{report-page,stac-browser-catalog,stac-browser-item}.png.
# Environment: STAC_BROWSER_VERSION, STAC_BROWSER_PINS (npm packages pinned in its
# build, default ol-stac@1.1.0), PUPPETEER_VERSION, PORT, NO_STAC_BROWSER=1
# (only the report page), GO (the go command).
set -euo pipefail

DIR=$(mkdir -p "${1:-check-browsers}" && cd "${1:-check-browsers}" && pwd)
SB_VERSION=${STAC_BROWSER_VERSION:-4.0.1}
PPTR_VERSION=${PUPPETEER_VERSION:-24.43.1}
PORT=${PORT:-8733}
SB_PINS=${STAC_BROWSER_PINS:-ol-stac@1.1.0}
GO=${GO:-go}
ROOT=$(pwd)

step() { printf '\n== %s\n' "$*"; }

if ! command -v chromium >/dev/null 2>&1; then
	step "installing chromium with apt-get"
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi
command -v node >/dev/null 2>&1 || { echo "check-browsers: node and npm are needed (apt-get install nodejs npm; STAC Browser 4 builds with Node 20)"; exit 1; }

step "the batch's output folder (TestBrowsersFixture)"
rm -rf "$DIR/fixture" "$DIR/shots"
PNEC_BROWSERS_OUT="$DIR/fixture" $GO test -count=1 -run '^TestBrowsersFixture$' ./cmd/pnec

if [ ! -f "$DIR/node/node_modules/puppeteer-core/package.json" ] ||
	[ "$(node -p "require('$DIR/node/node_modules/puppeteer-core/package.json').version")" != "$PPTR_VERSION" ]; then
	step "puppeteer-core $PPTR_VERSION (npm) into $DIR/node"
	mkdir -p "$DIR/node"
	(cd "$DIR/node" && [ -f package.json ] || echo '{"private": true}' >package.json)
	(cd "$DIR/node" && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --save-exact "puppeteer-core@$PPTR_VERSION")
fi

SB_DIST=
if [ "${NO_STAC_BROWSER:-}" != 1 ]; then
	SB="$DIR/stac-browser-$SB_VERSION"
	CATALOG="http://127.0.0.1:$PORT/data/catalog.json"
	if [ ! -f "$SB/dist/index.html" ] || [ "$(cat "$SB/.catalog-url" 2>/dev/null)" != "$CATALOG basemap" ]; then
		step "STAC Browser $SB_VERSION (npm @radiantearth/stac-browser), built in $SB for $CATALOG"
		rm -rf "$SB" && mkdir -p "$SB"
		(cd "$SB" && npm pack --silent "@radiantearth/stac-browser@$SB_VERSION" >/dev/null && tar xzf radiantearth-stac-browser-"$SB_VERSION".tgz --strip-components=1)
		(cd "$SB" && npm install --no-audit --no-fund)
		# STAC Browser 4.0.1 asks for ol-stac ^1.1.0 and ol ~10.6.0 and ships no
		# lockfile: ol-stac's newest 1.x imports OpenLayers functions newer than
		# 10.6 and the build fails; the pins below are the versions it builds with.
		(cd "$SB" && npm install --no-audit --no-fund --save-exact $SB_PINS)
		# No network here: the map's basemap (OpenStreetMap's tiles) comes from
		# the check's own server instead (plain tiles; docs/basemaps.md of STAC
		# Browser describes this file).
		sed -i "s#https://tile.openstreetmap.org/{z}/{x}/{y}.png#http://127.0.0.1:$PORT/basemap/{z}/{x}/{y}.png#" "$SB/basemaps.config.js"
		grep -q "127.0.0.1:$PORT/basemap/" "$SB/basemaps.config.js" || { echo "check-browsers: basemaps.config.js has no OpenStreetMap URL to replace"; exit 1; }
		(cd "$SB" && npm run build -- --catalogUrl="$CATALOG" --historyMode=hash)
		echo "$CATALOG basemap" >"$SB/.catalog-url"
	fi
	SB_DIST="$SB/dist"
fi

step "headless Chromium: the report page${SB_DIST:+ and STAC Browser}"
cd "$ROOT"
PNEC_NODE_MODULES="$DIR/node/node_modules" node scripts/check_browsers.mjs "$DIR/fixture" "$DIR/shots" ${SB_DIST:+"$SB_DIST" "$PORT"}
