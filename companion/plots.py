"""Figure builders: results in, plotly (interactive) or matplotlib (static) figures out.

Conventions: every axis has a label with its unit; figures are deterministic (no random
colours, no timestamps) so that stored notebook outputs compare under nbval; a builder
returns a figure and never calls ``show()``. plotly/matplotlib are imported inside the
topic modules under ``companion.figures``, never by ``import companion``.
"""

import companion.figures as _pkg
from companion._registry import reexport as _reexport

__all__ = _reexport(_pkg, globals(), "companion.plots")
