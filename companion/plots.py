"""Figure builders: results in, plotly (interactive) or matplotlib (static) figures out.

Conventions: every axis has a label with its unit; figures are deterministic (no random
colours, no timestamps) so that stored notebook outputs compare under nbval; a builder
returns a figure and never calls ``show()``. plotly/matplotlib are imported inside the
topic modules under ``companion.figures``, never by ``import companion``.
"""

import importlib
import pkgutil

import companion.figures as _pkg


def _load():
    names = []
    for info in sorted(pkgutil.iter_modules(_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_pkg.__name__}.{info.name}")
        for name in module.__all__:
            if name in globals():
                raise ImportError(f"companion.plots: {name} defined twice (in {info.name})")
            globals()[name] = getattr(module, name)
            names.append(name)
    return names


__all__ = _load()
