"""Slider panels: parameters -> calc/sim -> plots, for the notebooks' explorers.

Each panel's ``update(**params)`` is a plain function that a test can call headless across
its slider ranges; ``show()`` builds the ipywidgets UI (sliders, a reset-to-the-chapter's-setting
button, a readout and a plotly FigureWidget). ipywidgets is imported only by the topic modules
under ``companion.panels``, never by ``import companion``.
"""

import companion.panels as _pkg
from companion._registry import reexport as _reexport

__all__ = _reexport(_pkg, globals(), "companion.widgets")
