"""QGIS plugin: pnec's commands as Processing algorithms (see docs/qgis.md)."""


def classFactory(iface):  # noqa: N802 (QGIS's name)
    """QGIS calls this to load the plugin."""
    from .plugin import PnecPlugin

    return PnecPlugin(iface)
