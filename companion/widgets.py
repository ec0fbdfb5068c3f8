"""Slider panels: parameters -> calc/sim -> plots, for the notebooks' explorers.

Each panel's ``update(**params)`` is a plain function that a test can call headless across
its slider ranges; ``show()`` builds the ipywidgets UI (sliders, a reset-to-the-chapter's-setting
button, a readout and a plotly FigureWidget). ipywidgets is imported only by the topic modules
under ``companion.panels``, never by ``import companion``.
"""

import importlib
import pkgutil

import companion.panels as _pkg


def _load():
    names = []
    for info in sorted(pkgutil.iter_modules(_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_pkg.__name__}.{info.name}")
        for name in module.__all__:
            if name in globals():
                raise ImportError(f"companion.widgets: {name} defined twice (in {info.name})")
            globals()[name] = getattr(module, name)
            names.append(name)
    return names


__all__ = _load()
