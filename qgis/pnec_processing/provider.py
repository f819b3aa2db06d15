"""The Processing provider: pnec's algorithms under the id "pnec"."""

from qgis.core import QgsProcessingProvider

from .algorithms import BatchAlgorithm, ClassifyAlgorithm, ModelItemAlgorithm, TrainAlgorithm
from .runner import pnec_binary


class PnecProvider(QgsProcessingProvider):
    def id(self):
        return "pnec"

    def name(self):
        return "pnec"

    def longName(self):  # noqa: N802
        return "pnec hyperspectral land-cover classification"

    def loadAlgorithms(self):  # noqa: N802
        for alg in (ClassifyAlgorithm(), TrainAlgorithm(), BatchAlgorithm(), ModelItemAlgorithm()):
            self.addAlgorithm(alg)

    def canBeActivated(self):  # noqa: N802
        return pnec_binary() is not None

    def warningMessage(self):  # noqa: N802
        if pnec_binary() is None:
            return "pnec was not found: install it on PATH or set PNEC_BINARY to its path."
        return ""
