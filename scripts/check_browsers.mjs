// check_browsers.mjs: make check-browsers' checks in headless Chromium
// (scripts/check-browsers.sh sets it up). Usage:
//
//   node check_browsers.mjs FIXTURE SHOTS [STAC_BROWSER_DIST PORT]
//
// FIXTURE is TestBrowsersFixture's folder (out/ the batch's output folder,
// report.jsonl its report); SHOTS receives the screenshots. Checks:
//   1. the report page out/index.html opened from disk: no console error,
//      no failed request, every thumbnail loaded (naturalWidth > 0), one
//      row per scene of the report with its status;
//   2. with STAC_BROWSER_DIST (a built STAC Browser whose catalogUrl is
//      http://127.0.0.1:PORT/data/catalog.json), both served from
//      127.0.0.1:PORT (out/ under /data/, with range requests and CORS):
//      the root catalog opens, every Item is listed with its thumbnail
//      loaded, and an Item page opens without errors (its basemap is
//      served from the same server: this machine has no network).
// Exit status 1 with the failures listed; the screenshots are written
// either way.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.join(process.env.PNEC_NODE_MODULES || process.cwd(), 'x.js'));
const puppeteer = require('puppeteer-core');

const [fixture, shots, sbDist, portArg] = process.argv.slice(2);
if (!fixture || !shots) {
  console.error('usage: node check_browsers.mjs FIXTURE SHOTS [STAC_BROWSER_DIST PORT]');
  process.exit(2);
}
const outDir = path.resolve(fixture, 'out');
fs.mkdirSync(shots, { recursive: true });
const failures = [];
const fail = (msg) => { failures.push(msg); console.log('FAIL ' + msg); };
const pass = (msg) => console.log('ok   ' + msg);

// expected: scene key -> status, from the run's report.
function expected() {
  const want = {};
  for (const line of fs.readFileSync(path.join(fixture, 'report.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    const name = r.output || r.input;
    want[path.basename(name).replace(/\.[^.]*$/, '')] = r.status;
  }
  return want;
}

// watch records a page's console errors, uncaught exceptions and failed requests.
function watch(page, label) {
  const seen = [];
  page.on('console', (m) => { if (m.type() === 'error') seen.push(`${label}: console error: ${m.text()}`); });
  page.on('pageerror', (e) => seen.push(`${label}: uncaught: ${e.message}`));
  page.on('requestfailed', (r) => seen.push(`${label}: request failed: ${r.url()} ${r.failure()?.errorText}`));
  return seen;
}

async function checkReportPage(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1300, height: 900 });
  const errors = watch(page, 'report page');
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto('file://' + path.join(outDir, 'index.html'), { waitUntil: 'load' });
  const got = await page.evaluate(() => ({
    rows: [...document.querySelectorAll('#scenes tbody tr')].map((r) => [r.dataset.key, r.dataset.status]),
    imgs: [...document.querySelectorAll('img.thumb')].map((i) => [i.getAttribute('src'), i.complete, i.naturalWidth]),
    footprints: document.querySelectorAll('svg#map path.fp').length,
  }));
  await page.screenshot({ path: path.join(shots, 'report-page.png'), fullPage: true });
  errors.forEach(fail);
  const remote = requests.filter((u) => !u.startsWith('file://') && !u.startsWith('data:'));
  if (remote.length) fail(`report page: requests off the disk: ${remote.join(', ')}`); else pass('report page: nothing requested off the disk');
  const want = expected();
  const rows = Object.fromEntries(got.rows);
  for (const [k, st] of Object.entries(want)) {
    if (rows[k] !== st) fail(`report page: scene ${k} has status ${rows[k]}, want ${st}`);
  }
  if (got.rows.length !== Object.keys(want).length) fail(`report page: ${got.rows.length} rows, want ${Object.keys(want).length}`);
  else pass(`report page: ${got.rows.length} rows, each scene with its status (${got.rows.map((r) => r.join('=')).join(', ')})`);
  const products = Object.values(want).filter((s) => s === 'done' || s === 'skipped').length;
  const loaded = got.imgs.filter(([, complete, w]) => complete && w > 0).length;
  if (got.imgs.length !== products || loaded !== products) fail(`report page: ${loaded} of ${got.imgs.length} thumbnails loaded, want ${products}`);
  else pass(`report page: ${loaded} thumbnails loaded (naturalWidth ${got.imgs.map((i) => i[2]).join(', ')})`);
  if (got.footprints !== products) fail(`report page: ${got.footprints} footprints, want ${products}`); else pass(`report page: ${products} footprints on the map`);
  if (!errors.length) pass('report page: no console error, no failed request');
  await page.close();
}

// blankTile is a 1 x 1 light grey PNG.
const blankTile = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGN48eYDAAWEAsUXo06sAAAAAElFTkSuQmCC', 'base64');

// serve serves the built STAC Browser at / and the output folder at
// /data/, with byte ranges and CORS (what a COG reader in the page needs).
function serve(dist, port, outDir) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
    '.png': 'image/png', '.tif': 'image/tiff', '.svg': 'image/svg+xml', '.qml': 'application/xml', '.woff2': 'font/woff2' };
  const log = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname.startsWith('/basemap/')) {
      // The build's basemap (check-browsers.sh points it here: this machine
      // has no network): one plain tile for every z/x/y.
      log.push(`200 ${url.pathname}`);
      res.writeHead(200, { 'Content-Type': 'image/png', 'Access-Control-Allow-Origin': '*' }).end(blankTile);
      return;
    }
    let file;
    if (url.pathname.startsWith('/data/')) file = path.join(outDir, decodeURIComponent(url.pathname.slice(6)));
    else file = path.join(dist, decodeURIComponent(url.pathname));
    const root = url.pathname.startsWith('/data/') ? outDir : dist;
    if (!path.resolve(file).startsWith(path.resolve(root))) { res.writeHead(403).end(); return; }
    if (!url.pathname.startsWith('/data/') && (!fs.existsSync(file) || fs.statSync(file).isDirectory())) file = path.join(dist, 'index.html');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Range');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, Accept-Ranges');
    if (req.method === 'OPTIONS') { res.writeHead(204).end(); return; }
    if (!fs.existsSync(file) || fs.statSync(file).isDirectory()) { log.push(`404 ${url.pathname}`); res.writeHead(404).end(); return; }
    const size = fs.statSync(file).size;
    const type = types[path.extname(file)] || 'application/octet-stream';
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
    if (m) {
      const start = m[1] === '' ? size - Number(m[2]) : Number(m[1]);
      const end = m[1] !== '' && m[2] !== '' ? Math.min(Number(m[2]), size - 1) : size - 1;
      log.push(`206 ${url.pathname} ${start}-${end}`);
      res.writeHead(206, { 'Content-Type': type, 'Accept-Ranges': 'bytes', 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': end - start + 1 });
      fs.createReadStream(file, { start, end }).pipe(res);
      return;
    }
    log.push(`200 ${url.pathname}`);
    res.writeHead(200, { 'Content-Type': type, 'Accept-Ranges': 'bytes', 'Content-Length': size });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, log })));
}

// settle waits until the page shows text (STAC Browser loads asynchronously).
async function settle(page, fn, arg, ms = 30000) {
  try { await page.waitForFunction(fn, { timeout: ms }, arg); return true; } catch { return false; }
}

async function checkSTACBrowser(browser, dist, port, outDir, label, shot) {
  const { server, log } = await serve(dist, port, outDir);
  const page = await browser.newPage();
  await page.setViewport({ width: 1300, height: 1000 });
  const errors = watch(page, label);
  const want = Object.entries(expected()).filter(([, s]) => s === 'done' || s === 'skipped').map(([k]) => k);
  await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'networkidle0', timeout: 60000 });
  const listed = await settle(page, (keys) => keys.every((k) => document.body.innerText.includes(k)), want);
  await settle(page, () => [...document.images].filter((i) => i.src.includes('.thumbnail.png')).every((i) => i.complete && i.naturalWidth > 0) &&
    [...document.images].some((i) => i.src.includes('.thumbnail.png')), null, 15000);
  const thumbs = await page.evaluate(() => [...document.images].filter((i) => i.src.includes('.thumbnail.png')).map((i) => [i.src, i.naturalWidth]));
  const kind = JSON.parse(fs.readFileSync(path.join(outDir, 'catalog.json'), 'utf8')).type; // what the served root is
  await page.screenshot({ path: path.join(shots, shot + '-catalog.png'), fullPage: true });
  if (!listed) fail(`${label}: the root page does not list every Item (${want.join(', ')})`);
  else pass(`${label}: the root ${kind} lists every Item (${want.join(', ')})`);
  const shown = new Set(thumbs.filter(([, w]) => w > 0).map(([s]) => path.basename(new URL(s).pathname)));
  if (shown.size < want.length) fail(`${label}: ${shown.size} thumbnails shown, want ${want.length}: ${JSON.stringify(thumbs)}`);
  else pass(`${label}: ${shown.size} thumbnails shown (${[...shown].join(', ')})`);

  // One Item page: follow the catalog's link to the first Item.
  const href = await page.evaluate((k) => {
    const a = [...document.querySelectorAll('a')].find((e) => (e.getAttribute('href') || '').includes(k + '.json'));
    return a ? a.href : null;
  }, want[0]);
  if (!href) {
    fail(`${label}: no link to ${want[0]}.json on the catalog page`);
  } else {
    await page.goto(href, { waitUntil: 'networkidle0', timeout: 60000 });
    const opened = await settle(page, (k) => document.body.innerText.includes(k) && document.body.innerText.includes('classification'), want[0]);
    await new Promise((r) => setTimeout(r, 8000)); // the map's tiles and the COG
    await page.screenshot({ path: path.join(shots, shot + '-item.png'), fullPage: true });
    if (!opened) fail(`${label}: the Item page ${href} does not show ${want[0]} and its assets`);
    else pass(`${label}: the Item page ${href} opened`);
    const cog = log.filter((l) => l.includes(`/data/${want[0]}.tif`));
    console.log(`info ${label} read the COG ${want[0]}.tif: ${cog.length ? cog.join('; ') : 'no request (the map did not draw it)'}`);
  }
  errors.forEach(fail);
  if (!errors.length) pass(`${label}: no console error, no failed request`);
  console.log('info requests served: ' + log.filter((l) => l.includes('/data/')).join('; '));
  console.log(`info basemap tiles served locally: ${log.filter((l) => l.includes('/basemap/')).length}`);
  await page.close();
  server.close();
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  userDataDir: fs.mkdtempSync('/tmp/pnec-chromium-'),
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  await checkReportPage(browser);
  if (sbDist) {
    const port = Number(portArg || 8733);
    await checkSTACBrowser(browser, path.resolve(sbDist), port, outDir, 'STAC Browser (root Catalog)', 'stac-browser');
    await checkSTACBrowser(browser, path.resolve(sbDist), port, path.resolve(fixture, 'out-collection'),
      'STAC Browser (root Collection)', 'stac-browser-collection');
  }
} finally {
  await browser.close();
}
console.log(`screenshots in ${shots}: ${fs.readdirSync(shots).join(', ')}`);
if (failures.length) {
  console.log(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('all browser checks passed');
