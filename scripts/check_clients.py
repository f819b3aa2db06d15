#!/usr/bin/python3
"""Open pnec products in headless QGIS (PyQGIS) as a GIS user would, and assert
what they see (make check-clients; the fixture comes from TestClientsFixture).

Usage: QT_QPA_PLATFORM=offscreen /usr/bin/python3 scripts/check_clients.py DIR

Checks, each printed as PASS/FAIL:
  1. the georeferenced product opens with the paletted renderer on band 1 (the
     .qml beside it), one legend entry per class with the model's class names
     and colours, nothing else;
  2. its no-data is transparent: QGIS reads no-data 255 on both bands, and a
     rendered no-data pixel has alpha 0 while a class pixel has its colour;
  3. the product file alone (no .qml, no .aux.xml) still has no-data 255 on both
     bands and the class names in its band metadata; read over HTTP from a local
     server with GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR, QGIS still reads both
     no-data values and its statistics do not count no-data as a class;
  4. the product of an ungeoreferenced scene has no georeference, covers exactly
     the extent of its input in QGIS, and is upright: the rendered top and bottom
     of the right half show the classes of the product's first and last rows.
Exit status 1 when any check fails.
"""
import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading

from osgeo import gdal
from qgis.core import (QgsApplication, QgsMapRendererParallelJob, QgsMapSettings,
                       QgsRasterBandStats, QgsRasterLayer, QgsRectangle)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor

failures = []


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def render(layer, width, height):
    """Renders layer over its own extent into a width x height image."""
    ms = QgsMapSettings()
    ms.setLayers([layer])
    ms.setDestinationCrs(layer.crs())
    ms.setExtent(layer.extent())
    ms.setOutputSize(QSize(width, height))
    ms.setBackgroundColor(QColor(0, 0, 0, 0))
    job = QgsMapRendererParallelJob(ms)
    job.start()
    job.waitForFinished()
    return job.renderedImage()


def classes_of(path):
    """Class value -> (name, colour hex) from the product's band metadata and colour table."""
    ds = gdal.Open(path)
    b = ds.GetRasterBand(1)
    md = b.GetMetadata()
    ct = b.GetColorTable()
    out = {}
    for k, v in md.items():
        if k.startswith("CLASS_") and v != "no data":
            val = int(k[len("CLASS_"):])
            e = ct.GetColorEntry(val)
            out[val] = (v, "#%02x%02x%02x" % e[:3])
    return out, b.ReadAsArray()


def main(root):
    QgsApplication.setPrefixPath("/usr", True)
    app = QgsApplication([], False)
    app.initQgis()

    product = os.path.join(root, "geo", "out", "scene.tif")
    classes, arr = classes_of(product)
    # The scene's no-data pixels: the product's no-data must be exactly those.
    sds = gdal.Open(os.path.join(root, "geo", "scene.tif"))
    sb = sds.GetRasterBand(1)
    scene_nd = sb.ReadAsArray() == sb.GetNoDataValue()
    sds = None
    check(bool(scene_nd.any()) and bool(((arr == 255) == scene_nd).all()),
          "the product's no-data value (255) is exactly at the scene's %d no-data pixels" % int(scene_nd.sum()))
    check(len(classes) > 0, "the fixture's product has classes in its band metadata (%s)" % sorted(classes))

    # 1. Default renderer and legend.
    lyr = QgsRasterLayer(product, "product")
    check(lyr.isValid(), "QGIS opens %s" % product)
    r = lyr.renderer()
    check(r.type() == "paletted", "default renderer is paletted (got %s)" % r.type())
    if r.type() == "paletted":
        check(r.band() == 1, "paletted renderer draws band 1 (got %d)" % r.band())
        got = {int(c.value): (c.label, c.color.name()) for c in r.classes()}
        check(got == classes, "legend is the classes only, named and coloured: %s (want %s)" % (got, classes))

    # 2. No-data transparent.
    prov = lyr.dataProvider()
    for band in (1, 2):
        check(prov.sourceHasNoDataValue(band) and prov.sourceNoDataValue(band) == 255,
              "QGIS reads no-data 255 on band %d" % band)
    rows, cols = arr.shape
    img = render(lyr, cols, rows)
    nd_rc = next(((r_, c_) for r_ in range(rows) for c_ in range(cols) if arr[r_, c_] == 255), None)
    check(nd_rc is not None, "the fixture has no-data pixels")
    if nd_rc:
        px = QColor(img.pixelColor(nd_rc[1], nd_rc[0]))
        check(px.alpha() == 0, "a no-data pixel renders transparent (got alpha %d)" % px.alpha())
    cls_rc = (2, cols - 3)
    want = classes.get(int(arr[cls_rc]), ("?", "?"))[1]
    px = QColor(img.pixelColor(cls_rc[1], cls_rc[0]))
    check(px.alpha() == 255 and px.name() == want, "a class pixel renders in its class colour (got %s, want %s)" % (px.name(), want))

    # 3. The product file alone.
    alone = tempfile.mkdtemp(prefix="pnec-alone-")
    try:
        shutil.copy(product, os.path.join(alone, "product.tif"))
        la = QgsRasterLayer(os.path.join(alone, "product.tif"), "alone")
        pa = la.dataProvider()
        check(all(pa.sourceHasNoDataValue(b) and pa.sourceNoDataValue(b) == 255 for b in (1, 2)),
              "the product file alone: QGIS reads no-data 255 on both bands")
        ads = gdal.Open(os.path.join(alone, "product.tif"))  # kept: a band must not outlive its dataset
        md = ads.GetRasterBand(1).GetMetadata()
        ads = None
        del la, pa
        check(all(md.get("CLASS_%d" % v) == n for v, (n, _) in classes.items()), "the product file alone carries the class names")
    finally:
        shutil.rmtree(alone)

    # 3b. Over HTTP as COG servers hand it out: /vsicurl/ from a local server
    # with GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR (no sidecar, no style):
    # QGIS's statistics leave no-data out instead of counting it as a class.
    served = tempfile.mkdtemp(prefix="pnec-http-")
    shutil.copy(product, os.path.join(served, "product.tif"))
    handler = functools.partial(QuietHandler, directory=served)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        gdal.SetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR")
        url = "/vsicurl/http://127.0.0.1:%d/product.tif" % srv.server_address[1]
        lh = QgsRasterLayer(url, "http")
        check(lh.isValid(), "QGIS opens %s" % url)
        ph = lh.dataProvider()
        check(all(ph.sourceHasNoDataValue(b) and ph.sourceNoDataValue(b) == 255 for b in (1, 2)),
              "over HTTP with EMPTY_DIR: QGIS reads no-data 255 on both bands")
        st = ph.bandStatistics(1, QgsRasterBandStats.All, QgsRectangle(), 0)
        valid = int((~scene_nd).sum())
        check(st.elementCount == valid and st.maximumValue <= max(classes),
              "over HTTP: QGIS statistics count %d valid pixels (want %d), values up to %g (want <= %d): no-data is not a class"
              % (st.elementCount, valid, st.maximumValue, max(classes)))
        del lh, ph
    finally:
        gdal.SetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", None)
        srv.shutdown()
        shutil.rmtree(served)

    # 4. Ungeoreferenced: no georeference, aligned with its input, upright.
    scene = os.path.join(root, "local", "scene.tif")
    lp = os.path.join(root, "local", "product.tif")
    ds = gdal.Open(lp)
    check(ds.GetGeoTransform(can_return_null=True) is None and ds.GetProjection() == "",
          "the product of an ungeoreferenced scene has no geotransform and no CRS")
    ls, lq = QgsRasterLayer(scene, "scene"), QgsRasterLayer(lp, "local product")
    check(ls.extent() == lq.extent(), "product and input cover the same extent in QGIS (%s vs %s)" %
          (lq.extent().toString(), ls.extent().toString()))
    check(lq.renderer().type() == "paletted", "the ungeoreferenced product opens paletted too")
    larr = ds.GetRasterBand(1).ReadAsArray()
    lclasses, _ = classes_of(lp)
    lrows, lcols = larr.shape
    limg = render(lq, lcols, lrows)
    ok = True
    for r_ in (1, lrows - 2):
        c_ = lcols - 3
        want = lclasses.get(int(larr[r_, c_]), ("?", "?"))[1]
        got = QColor(limg.pixelColor(c_, r_)).name()
        ok = ok and got == want
        print("  row %d col %d: rendered %s, product class %d colour %s" % (r_, c_, got, larr[r_, c_], want))
    check(larr[1, lcols - 3] != larr[lrows - 2, lcols - 3], "the fixture's right half differs top to bottom")
    check(ok, "the ungeoreferenced product renders upright (first row at the top)")

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all client checks passed")
    return 0


if __name__ == "__main__":
    rc = main(sys.argv[1])
    sys.stdout.flush()
    # QGIS 3.22 can crash in exitQgis while Python still holds layers; the
    # checks are done, so leave without tearing QGIS down.
    os._exit(rc)
