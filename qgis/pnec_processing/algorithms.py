"""pnec's commands as Processing algorithms. Each runs the installed pnec
binary (runner.run_pnec); the parameters map to its flags (docs/qgis.md)."""

import json
import os

from qgis.core import (QgsProcessing, QgsProcessingAlgorithm, QgsProcessingException,
                       QgsProcessingLayerPostProcessorInterface, QgsProcessingOutputFile,
                       QgsProcessingParameterBoolean,
                       QgsProcessingParameterEnum, QgsProcessingParameterFile,
                       QgsProcessingParameterFileDestination, QgsProcessingParameterFolderDestination,
                       QgsProcessingParameterDefinition, QgsProcessingParameterMultipleLayers,
                       QgsProcessingParameterNumber, QgsProcessingParameterRasterDestination,
                       QgsProcessingParameterRasterLayer, QgsProcessingParameterString,
                       QgsProcessingUtils)

from .runner import run_pnec

RELIABILITY_SCORES = ["default (spectral)", "spectral", "spectral-margin", "combined", "margin", "maxprob", "entropy", "gate"]
PROBABILITY_STAGES = ["none", "recovered", "network"]


def _advanced(param):
    param.setFlags(param.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
    return param


def _dataset(layer, what):
    """The GDAL dataset name of a raster layer (pnec opens it itself)."""
    if layer is None:
        raise QgsProcessingException("%s: no layer" % what)
    if layer.providerType() != "gdal":
        raise QgsProcessingException("%s: %s is not a GDAL raster; pnec reads files GDAL opens" % (what, layer.name()))
    return layer.source()


class StyleOnLoad(QgsProcessingLayerPostProcessorInterface):
    """Loads the product's QGIS style (KEY.qml beside it): band 1 paletted
    with the class names and colours, no-data transparent."""

    instances = []  # QGIS keeps no reference: the post-processors live here

    def __init__(self, qml, name):
        super().__init__()
        self.qml, self.name = qml, name

    def postProcessLayer(self, layer, context, feedback):  # noqa: N802
        if os.path.exists(self.qml):
            _, ok = layer.loadNamedStyle(self.qml)
            if not ok:
                feedback.reportError("could not load the style %s" % self.qml)
        layer.setName(self.name)
        layer.triggerRepaint()

    @classmethod
    def create(cls, qml, name):
        pp = cls(qml, name)
        cls.instances.append(pp)
        return pp


class PnecAlgorithm(QgsProcessingAlgorithm):
    def group(self):
        return "pnec"

    def groupId(self):  # noqa: N802
        return "pnec"

    def createInstance(self):  # noqa: N802
        return type(self)()

    def run_command(self, args, feedback):
        code, err = run_pnec(args, feedback)
        if code != 0:
            raise QgsProcessingException(err or "pnec failed (exit status %d)" % code)


class ClassifyAlgorithm(PnecAlgorithm):
    def name(self):
        return "classify"

    def displayName(self):  # noqa: N802
        return "Classify a hyperspectral scene"

    def shortHelpString(self):  # noqa: N802
        return ("Runs 'pnec classify': the model on the whole scene, or on overlapping tiles within the memory "
                "budget, into a Cloud-Optimized GeoTIFF land-cover map: band 1 the class (loaded as a paletted map "
                "with the class names), band 2 the reliability in percent. Optionally within an area of interest "
                "(a raster, non-zero inside, or polygons in any CRS) and with the class probabilities beside it.")

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterRasterLayer("INPUT", "Hyperspectral scene"))
        self.addParameter(QgsProcessingParameterFile("MODEL", "Model file (from pnec train)", extension="pnec"))
        self.addParameter(QgsProcessingParameterFile("MASK", "Area of interest (raster or vector file)", optional=True,
                                                     fileFilter="Rasters and vectors (*.tif *.tiff *.vrt *.gpkg *.geojson *.json *.shp);;All files (*)"))
        self.addParameter(QgsProcessingParameterEnum("RELIABILITY_SCORE", "Reliability score", options=RELIABILITY_SCORES, defaultValue=0))
        self.addParameter(QgsProcessingParameterEnum("PROBABILITIES", "Class probabilities (KEY.probabilities.tif)", options=PROBABILITY_STAGES, defaultValue=0))
        self.addParameter(_advanced(QgsProcessingParameterNumber("TOP_K", "Keep the K most probable classes (0 = all)", type=QgsProcessingParameterNumber.Integer, minValue=0, defaultValue=0)))
        self.addParameter(_advanced(QgsProcessingParameterString("MAX_MEMORY", "Memory budget (e.g. 4G; empty = half of the memory)", optional=True)))
        self.addParameter(_advanced(QgsProcessingParameterNumber("TILE", "Force tiles of N pixels (0 = the budget decides)", type=QgsProcessingParameterNumber.Integer, minValue=0, defaultValue=0)))
        self.addParameter(_advanced(QgsProcessingParameterString("BACKEND", "Compute backend (go, xla:cpu, xla:cuda; empty = default)", optional=True)))
        self.addParameter(QgsProcessingParameterRasterDestination("OUTPUT", "Land-cover map"))
        self.addOutput(QgsProcessingOutputFile("PROBABILITIES_FILE", "Class probabilities"))

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        scene = _dataset(self.parameterAsRasterLayer(parameters, "INPUT", context), "scene")
        model = self.parameterAsFile(parameters, "MODEL", context)
        out = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        if not out.lower().endswith((".tif", ".tiff")):
            raise QgsProcessingException("the map is a GeoTIFF: give an output name ending in .tif")
        args = ["classify", "--model", model]
        mask = self.parameterAsFile(parameters, "MASK", context)
        if mask:
            args += ["--mask", mask]
        score = self.parameterAsEnum(parameters, "RELIABILITY_SCORE", context)
        if score > 0:
            args += ["--reliability-score", RELIABILITY_SCORES[score]]
        stage = PROBABILITY_STAGES[self.parameterAsEnum(parameters, "PROBABILITIES", context)]
        k = self.parameterAsInt(parameters, "TOP_K", context)
        if stage != "none":
            args += ["--probabilities", stage]
            if k > 0:
                args += ["--top-k", str(k)]
        elif k > 0:
            raise QgsProcessingException("TOP_K needs class probabilities (recovered or network)")
        mem = self.parameterAsString(parameters, "MAX_MEMORY", context)
        if mem:
            args += ["--max-memory", mem]
        tile = self.parameterAsInt(parameters, "TILE", context)
        if tile > 0:
            args += ["--tile", str(tile)]
        backend = self.parameterAsString(parameters, "BACKEND", context)
        if backend:
            args += ["--backend", backend]
        self.run_command(args + [scene, out], feedback)
        base = os.path.splitext(out)[0]
        if context.willLoadLayerOnCompletion(out):
            name = os.path.splitext(os.path.basename(scene))[0] + " land cover"
            context.layerToLoadOnCompletionDetails(out).setPostProcessor(StyleOnLoad.create(base + ".qml", name))
        prob = base + ".probabilities.tif" if stage != "none" else ""
        return {"OUTPUT": out, "PROBABILITIES_FILE": prob}


class TrainAlgorithm(PnecAlgorithm):
    def name(self):
        return "train"

    def displayName(self):  # noqa: N802
        return "Train a model"

    def shortHelpString(self):  # noqa: N802
        return ("Runs 'pnec train' on a labelled scene (label raster: class values, 0 = unlabelled): a PNEC-Mamba "
                "model file, and its STAC Item (MODEL.pnec.json) beside it. The defaults are the paper's.")

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterRasterLayer("SCENE", "Training scene"))
        self.addParameter(QgsProcessingParameterRasterLayer("LABELS", "Labels (class values, 0 = unlabelled)"))
        self.addParameter(QgsProcessingParameterRasterLayer("TRAIN_MASK", "Fixed training split (optional)", optional=True))
        self.addParameter(QgsProcessingParameterFile("CLASS_NAMES", "Class names file ('VALUE NAME' a line)", optional=True))
        self.addParameter(QgsProcessingParameterNumber("EPOCHS", "Epochs", type=QgsProcessingParameterNumber.Integer, minValue=1, defaultValue=200))
        self.addParameter(_advanced(QgsProcessingParameterNumber("TRAIN_PER_CLASS", "Training pixels per class", type=QgsProcessingParameterNumber.Integer, minValue=1, defaultValue=15)))
        self.addParameter(_advanced(QgsProcessingParameterNumber("HIDDEN", "Feature channels", type=QgsProcessingParameterNumber.Integer, minValue=32, defaultValue=128)))
        self.addParameter(_advanced(QgsProcessingParameterString("BACKEND", "Compute backend (empty = default)", optional=True)))
        self.addParameter(QgsProcessingParameterFileDestination("OUTPUT", "Model file", fileFilter="pnec model (*.pnec)"))
        self.addOutput(QgsProcessingOutputFile("ITEM", "Model STAC Item"))

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        out = self.parameterAsFileOutput(parameters, "OUTPUT", context)
        args = ["train", "--scene", _dataset(self.parameterAsRasterLayer(parameters, "SCENE", context), "scene"),
                "--labels", _dataset(self.parameterAsRasterLayer(parameters, "LABELS", context), "labels"),
                "--out", out,
                "--epochs", str(self.parameterAsInt(parameters, "EPOCHS", context)),
                "--train-per-class", str(self.parameterAsInt(parameters, "TRAIN_PER_CLASS", context)),
                "--hidden", str(self.parameterAsInt(parameters, "HIDDEN", context))]
        mask = self.parameterAsRasterLayer(parameters, "TRAIN_MASK", context)
        if mask is not None:
            args += ["--train-mask", _dataset(mask, "training split")]
        names = self.parameterAsFile(parameters, "CLASS_NAMES", context)
        if names:
            args += ["--class-names", names]
        backend = self.parameterAsString(parameters, "BACKEND", context)
        if backend:
            args += ["--backend", backend]
        self.run_command(args, feedback)
        return {"OUTPUT": out, "ITEM": out + ".json"}


class BatchAlgorithm(PnecAlgorithm):
    def name(self):
        return "batch"

    def displayName(self):  # noqa: N802
        return "Classify many scenes (batch, STAC)"

    def shortHelpString(self):  # noqa: N802
        return ("Runs 'pnec batch': every scene (layers, files, globs, directories, STAC Items or catalogs) into "
                "KEY.tif and its STAC Item KEY.json in the output folder; scenes whose product is up to date are "
                "skipped, a failing scene does not stop the others (its error is reported here).")

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterMultipleLayers("INPUTS", "Scenes (layers)", layerType=QgsProcessing.TypeRaster, optional=True))
        self.addParameter(QgsProcessingParameterString("INPUT_PATHS", "More inputs: files, globs, directories or STAC documents, one a line", multiLine=True, optional=True))
        self.addParameter(QgsProcessingParameterFile("MODEL", "Model file (from pnec train)", extension="pnec"))
        self.addParameter(QgsProcessingParameterString("DATETIME", "Acquisition time (RFC 3339, a date, or START/END) when the scenes do not say", optional=True))
        self.addParameter(QgsProcessingParameterString("MASK", "Area of interest: a file, a pattern with {key}, or asset:ROLE", optional=True))
        self.addParameter(QgsProcessingParameterEnum("PROBABILITIES", "Class probabilities", options=PROBABILITY_STAGES, defaultValue=0))
        self.addParameter(QgsProcessingParameterBoolean("COLLECTION", "Add the Items to a STAC Collection (collection.json in the folder)", defaultValue=False))
        self.addParameter(_advanced(QgsProcessingParameterString("MAX_MEMORY", "Memory budget of the whole run (e.g. 8G)", optional=True)))
        self.addParameter(_advanced(QgsProcessingParameterNumber("JOBS", "Scenes at once (0 = automatic)", type=QgsProcessingParameterNumber.Integer, minValue=0, defaultValue=0)))
        self.addParameter(_advanced(QgsProcessingParameterBoolean("FORCE", "Redo scenes whose product is up to date", defaultValue=False)))
        self.addParameter(QgsProcessingParameterFolderDestination("OUT_DIR", "Output folder"))
        self.addOutput(QgsProcessingOutputFile("REPORT", "Run report (a JSON line per scene)"))

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        inputs = [_dataset(l, "scene") for l in self.parameterAsLayerList(parameters, "INPUTS", context)]
        inputs += [p.strip() for p in self.parameterAsString(parameters, "INPUT_PATHS", context).splitlines() if p.strip()]
        if not inputs:
            raise QgsProcessingException("no scenes: give layers or input paths")
        out = self.parameterAsString(parameters, "OUT_DIR", context)
        os.makedirs(out, exist_ok=True)
        report = QgsProcessingUtils.generateTempFilename("pnec-batch-report.jsonl")
        args = ["batch", "--model", self.parameterAsFile(parameters, "MODEL", context), "--out-dir", out, "--report", report]
        for flag, key in (("--datetime", "DATETIME"), ("--mask", "MASK"), ("--max-memory", "MAX_MEMORY")):
            v = self.parameterAsString(parameters, key, context)
            if v:
                args += [flag, v]
        stage = PROBABILITY_STAGES[self.parameterAsEnum(parameters, "PROBABILITIES", context)]
        if stage != "none":
            args += ["--probabilities", stage]
        if self.parameterAsBool(parameters, "COLLECTION", context):
            args += ["--stac-collection", os.path.join(out, "collection.json")]
        jobs = self.parameterAsInt(parameters, "JOBS", context)
        if jobs > 0:
            args += ["--jobs", str(jobs)]
        if self.parameterAsBool(parameters, "FORCE", context):
            args.append("--force")
        code, err = run_pnec(args + inputs, feedback)
        done = failed = 0
        if os.path.exists(report):
            with open(report) as f:
                for line in f:
                    r = json.loads(line)
                    if r.get("status") in ("done", "skipped"):
                        done += 1
                    elif r.get("status") == "failed":
                        failed += 1
                        feedback.reportError("%s: %s" % (r.get("input"), r.get("reason")), fatalError=False)
        if code != 0 and done == 0:
            raise QgsProcessingException(err or "pnec batch failed (exit status %d)" % code)
        feedback.pushInfo("%d scenes done or up to date, %d failed" % (done, failed))
        return {"OUT_DIR": out, "REPORT": report}


class ModelItemAlgorithm(PnecAlgorithm):
    def name(self):
        return "modelitem"

    def displayName(self):  # noqa: N802
        return "Describe a model as a STAC Item"

    def shortHelpString(self):  # noqa: N802
        return "Runs 'pnec model-item': the model's STAC Item (machine learning model extension) beside it."

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterFile("MODEL", "Model file", extension="pnec"))
        self.addOutput(QgsProcessingOutputFile("ITEM", "Model STAC Item"))

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        model = self.parameterAsFile(parameters, "MODEL", context)
        self.run_command(["model-item", "--model", model], feedback)
        return {"ITEM": model + ".json"}
