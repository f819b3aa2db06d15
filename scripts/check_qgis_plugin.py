#!/usr/bin/python3
"""Run the QGIS plugin qgis/pnec_processing headless, as QGIS's Processing
does, against the pnec binary (make check-clients; the fixture comes from
TestClientsFixture).

Usage: QT_QPA_PLATFORM=offscreen /usr/bin/python3 scripts/check_qgis_plugin.py DIR PNEC

Checks, each printed as PASS/FAIL:
  1. the provider loads and lists classify, train, batch and modelitem;
  2. classify on a scene yields the product, streams pnec's progress into the
     feedback (rising percentages) and loads a paletted layer with the
     model's class names (its style);
  3. classify with class probabilities gives their file;
  4. Cancel during classify stops pnec (SIGTERM): the algorithm fails as
     cancelled and leaves no product and no temporary file;
  5. train writes a model and its STAC Item; batch writes products, Items and
     the report;
  6. a bad input fails with pnec's one-line error;
  7. unloading the plugin removes the provider.
Exit status 1 when any check fails.
"""
import json
import os
import shutil
import sys
import tempfile

from qgis.core import (QgsApplication, QgsProcessingContext, QgsProcessingException,
                       QgsProcessingFeedback, QgsProject)

failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


class Recorder(QgsProcessingFeedback):
    """Keeps what the algorithm reports; cancels at a line that says when."""

    def __init__(self, cancel_at=None):
        super().__init__()
        self.progress, self.lines, self.cancel_at = [], [], cancel_at

    def setProgress(self, p):  # noqa: N802
        self.progress.append(p)
        super().setProgress(p)

    def pushInfo(self, s):  # noqa: N802
        self.lines.append(s)
        if self.cancel_at and self.cancel_at in s and not self.isCanceled():
            self.cancel()
        super().pushInfo(s)


def main(root, pnec):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PNEC_BINARY"] = os.path.abspath(pnec)
    QgsApplication.setPrefixPath("/usr", True)
    app = QgsApplication([], False)
    app.initQgis()
    sys.path.insert(0, "/usr/share/qgis/python/plugins")
    sys.path.insert(0, os.path.join(repo, "qgis"))
    import processing
    from processing.core.Processing import Processing
    Processing.initialize()
    import pnec_processing
    plugin = pnec_processing.classFactory(None)  # as QGIS loads it (no interface headless)
    plugin.initProcessing()
    provider = plugin.provider
    ids = sorted(a.name() for a in provider.algorithms())
    check(provider.canBeActivated() and ids == ["batch", "classify", "modelitem", "train"],
          "the provider loads with pnec found and lists %s" % ids)

    d = os.path.join(root, "plugin")
    model, scene, big = os.path.join(d, "model.pnec"), os.path.join(root, "geo", "scene.tif"), os.path.join(d, "big.tif")
    work = tempfile.mkdtemp(prefix="pnec-plugin-")

    # 2. classify, loaded with its style (runAndLoadResults runs the post-processor).
    fb = Recorder()
    out = os.path.join(work, "map.tif")
    res = processing.runAndLoadResults("pnec:classify", {"INPUT": big, "MODEL": model, "TILE": 64, "OUTPUT": out}, feedback=fb)
    check(os.path.exists(res["OUTPUT"]) and os.path.exists(os.path.join(work, "map.qml")), "classify writes the product and its style")
    rising = len(fb.progress) >= 3 and fb.progress == sorted(fb.progress) and fb.progress[-1] == 100
    check(rising, "classify streams pnec's progress into the feedback (%d updates, last %s)" %
          (len(fb.progress), fb.progress[-1] if fb.progress else None))
    check(any(l.startswith("classify ") and "tile " in l for l in fb.lines), "pnec's progress lines reach the log")
    layers = [l for l in QgsProject.instance().mapLayers().values() if l.source() == out]
    ok = len(layers) == 1 and layers[0].renderer() is not None and layers[0].renderer().type() == "paletted"
    names = sorted(c.label for c in layers[0].renderer().classes()) if ok else []
    check(ok and names == ["crop", "forest", "water"], "the map is loaded as a paletted layer with the class names %s" % names)

    # 3. probabilities
    out2 = os.path.join(work, "prob.tif")
    res = processing.run("pnec:classify", {"INPUT": scene, "MODEL": model, "PROBABILITIES": 1, "TOP_K": 2, "OUTPUT": out2})
    check(res["PROBABILITIES_FILE"] == os.path.join(work, "prob.probabilities.tif") and os.path.exists(res["PROBABILITIES_FILE"]),
          "classify with probabilities writes them")

    # 4. cancel at pnec's first tile line.
    fb = Recorder(cancel_at="tile 1/")
    out3 = os.path.join(work, "cancelled.tif")
    try:
        processing.run("pnec:classify", {"INPUT": big, "MODEL": model, "TILE": 64, "OUTPUT": out3}, feedback=fb)
        check(False, "cancel stops the algorithm")
    except QgsProcessingException as e:
        check("Cancelled" in str(e), "cancel stops the algorithm: %s" % e)
    left = [f for f in os.listdir(work) if f.startswith("cancelled") or f.startswith(".cancelled")]
    check(fb.isCanceled() and not left, "cancel leaves no product and no temporary file (%s)" % left)

    # 5. train, batch
    out4 = os.path.join(work, "new.pnec")
    fb = Recorder()
    processing.run("pnec:train", {"SCENE": scene, "LABELS": os.path.join(d, "labels.tif"), "EPOCHS": 20, "HIDDEN": 32,
                                  "TRAIN_PER_CLASS": 10, "OUTPUT": out4}, feedback=fb)
    item = {}
    if os.path.exists(out4 + ".json"):
        with open(out4 + ".json") as f:
            item = json.load(f)
    check(os.path.exists(out4) and item.get("properties", {}).get("mlm:name") == "new",
          "train writes the model and its STAC Item")
    check(fb.progress and fb.progress[-1] == 100, "train streams the epochs as progress")
    outdir = os.path.join(work, "products")
    fb = Recorder()
    res = processing.run("pnec:batch", {"INPUTS": [scene], "MODEL": model, "DATETIME": "2024-06-01", "COLLECTION": True,
                                        "OUT_DIR": outdir}, feedback=fb)
    files = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    check(all(f in files for f in ["scene.tif", "scene.json", "collection.json"]) and os.path.exists(res["REPORT"]),
          "batch writes the product, its Item, the Collection and the report (%s)" % files)

    # 6. a bad input
    bad = os.path.join(work, "bad.pnec")
    with open(bad, "w") as f:
        f.write("not a model")
    try:
        processing.run("pnec:classify", {"INPUT": scene, "MODEL": bad, "OUTPUT": os.path.join(work, "x.tif")})
        check(False, "a bad model fails")
    except QgsProcessingException as e:
        check(str(e).startswith("pnec: ") and "bad.pnec" in str(e), "a bad model fails with pnec's line: %s" % e)

    plugin.unload()
    shutil.rmtree(work, ignore_errors=True)
    check(QgsApplication.processingRegistry().providerById("pnec") is None, "unloading the plugin removes the provider")
    app.exitQgis()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
