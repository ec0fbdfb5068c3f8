"""Figure helpers the explorer modules share: plotly imported on first use (with the rounding
renderer of ``companion.display``), a titled figure in the companion's template, seconds to
milliseconds for an axis, stacked subplots, the palettes several sections share (Chapter 8's
phases, Chapter 17 §4-§5's sequences and §6-§10's serving colours) and ``dict_rows``, the check
of ``companion.calc``'s row lists. The panels' presets and controls are in
``companion.explorers.presets``.

The figures the companion builds are plotly ``Figure``s of a subclass that, in a Jupyter kernel
where plotly would use its plain mimetype renderer, puts the rounding renderer's bundle
(``display.figure_mimebundle``) into the notebook itself. plotly's renderer module imports
nbformat only to check its version, and nbformat imports jsonschema, whose format checkers
build an RFC 3987 grammar with Lark at import: seconds of CPU (30 s on a loaded 2-core
machine) before a notebook's first figure appears. Anywhere else (a renderer chosen by the user
or by ``PLOTLY_RENDERER``, VS Code, Colab, a terminal, ``make execute``'s PNG renderer, any
``show(...)`` argument) plotly's own renderers show them, with the rounding one installed.
"""

from __future__ import annotations

import os
import sys

from companion import theme, units
from companion import validate as v

__all__ = ["plotly_go", "plain_mimetype_default", "titled_figure", "to_ms", "stacked_axes",
           "discrete_colorscale", "dict_rows", "readable", "accuracy_note"]


# environments in which plotly picks a renderer other than its plain mimetype one
# (plotly/io/_renderers.py, "Set default renderer")
_OTHER_RENDERER_ENV = ("PLOTLY_RENDERER", "COLAB_NOTEBOOK_ID", "AZURE_NOTEBOOKS_HOST",
                       "VSCODE_PID", "NTERACT_EXE", "COCALC_PROJECT_ID",
                       "DATABRICKS_RUNTIME_VERSION")
_RENDERERS_MODULE = "plotly.io._renderers"
_graph_objects = None


def plotly_go():
    """``plotly.graph_objects``, imported only when a figure is built (``import companion``
    stays free of plotting libraries), with ``Figure`` replaced by the companion's subclass
    (every other name is plotly's own), whose figures reach a notebook with CPU-independent
    numbers (``companion.display``). If plotly's renderer module is already loaded, the
    rounding renderer is installed there too (cheap then)."""
    global _graph_objects
    if _graph_objects is None:
        import plotly.graph_objects as go

        theme.register_template()   # every figure names it
        _graph_objects = _GraphObjects(go, _figure_class(go))
    if _RENDERERS_MODULE in sys.modules:
        from companion import display

        display.install()
    return _graph_objects


class _GraphObjects:
    """plotly.graph_objects with the companion's ``Figure``; other names are looked up in
    plotly (lazily, as plotly itself imports them)."""

    def __init__(self, go, figure):
        self._go, self.Figure = go, figure

    def __getattr__(self, name):
        return getattr(self._go, name)


def plain_mimetype_default() -> bool:
    """Whether plotly would show a figure here with its (rounding) plain mimetype renderer,
    decided without importing plotly's renderer module: inside an ipykernel kernel (or the
    lite site's Pyodide kernel), no environment that plotly gives another renderer, no static
    outputs being written, and (if the renderer module is loaded, because someone configured
    plotly) a default that is exactly the rounding ``plotly_mimetype`` renderer."""
    from companion import display
    from companion.explorers.static_image import static_outputs_enabled

    if static_outputs_enabled():
        return False  # make execute adds a PNG renderer: plotly's machinery merges the bundle
    if _RENDERERS_MODULE in sys.modules:
        renderers = sys.modules[_RENDERERS_MODULE].renderers
        display.install()
        name = display.RENDERER_PREFIX + "plotly_mimetype"
        return renderers.default == f"{name}+{display.NOTES_RENDERER}" and \
            not renderers[name].config
    if any(os.environ.get(name) for name in _OTHER_RENDERER_ENV) or os.path.exists(
            "/kaggle/input"):
        return False
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    kind = (type(shell).__module__.split(".")[0], type(shell).__name__)
    # ipykernel's shell, or the Pyodide kernel's of the lite site (whose plotly would need
    # nbformat for its own mimetype renderer)
    return kind in (("ipykernel", "ZMQInteractiveShell"), ("pyodide_kernel", "Interpreter"))


def _figure_class(go):
    from companion import display

    class Figure(go.Figure):
        """plotly's Figure; in a Jupyter kernel it shows itself with the rounding renderer's
        bundle without importing plotly's renderer module (see ``companion.explorers.common``);
        elsewhere exactly as plotly does, with the rounding renderer installed."""

        def _repr_mimebundle_(self, include=None, exclude=None, validate=True, **kwargs):
            if kwargs or not plain_mimetype_default():
                display.install()
                return super()._repr_mimebundle_(include, exclude, validate, **kwargs)
            return display.figure_mimebundle(self)

        def _ipython_display_(self):
            if not plain_mimetype_default():
                display.install()
                return super()._ipython_display_()
            from IPython.display import display as ipython_display

            bundle = display.figure_mimebundle(self)
            ipython_display(bundle, raw=True)
            # what install()'s notes renderer adds after a figure on plotly's own path
            ipython_display(display.notes_bundle(bundle[display.PLOTLY_MIME]), raw=True)

        def to_dict(self):
            # every way out of a figure (display, to_json, the PNG export) goes through here:
            # the companion's own log-axis ticks (companion.explorers.axes)
            from companion.explorers.axes import finish_axes

            fig = super().to_dict()
            fig["layout"] = finish_axes(fig.get("data", []), fig.get("layout", {}))
            return fig

        def show(self, *args, **kwargs):
            if args or kwargs or not plain_mimetype_default():
                display.install()
                return super().show(*args, **kwargs)
            return self._ipython_display_()

    Figure.__module__ = __name__
    Figure.__qualname__ = "Figure"
    return Figure


def titled_figure(traces, layout: dict, title: str):
    """A plotly Figure of ``traces`` with ``layout``, the companion's template and ``title``."""
    layout = dict(layout, template=theme.TEMPLATE, title={"text": title})
    return plotly_go().Figure(data=traces, layout=layout)


def to_ms(seconds) -> list:
    """Seconds -> milliseconds, item by item (for plotting)."""
    return [s / units.ms for s in seconds]


def stacked_axes(n: int, labels, gap: float = 0.1) -> tuple[dict, list]:
    """Layout entries for n stacked subplots sharing x, and an annotation per subplot."""
    height = (1 - gap * (n - 1)) / n
    layout, notes = {}, []
    for i, label in enumerate(labels):
        ax = "" if i == 0 else str(i + 1)
        top = 1 - i * (height + gap)
        domain = [max(0.0, round(top - height, 6)), min(1.0, round(top, 6))]
        layout[f"yaxis{ax}"] = {"domain": domain, "autorange": "reversed",
                               "type": "category", "anchor": f"x{ax}"}
        xa = {"anchor": f"y{ax}", "title": {"text": "time (s)"}}
        if i:
            xa["matches"] = "x"
        layout[f"xaxis{ax}"] = xa
        notes.append({"text": f"<b>{label}</b>", "xref": "paper", "yref": "paper", "x": 0,
                      "y": top, "yanchor": "bottom", "xanchor": "left", "showarrow": False})
    return layout, notes


def discrete_colorscale(colours) -> list:
    """A plotly colour scale mapping the integers 0 .. n-1 (with cmin -0.5, cmax n - 0.5) to
    ``colours``."""
    n = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def dict_rows(name: str, rows) -> list[dict]:
    """``rows`` checked to be a sequence of dict rows (as ``companion.calc`` returns them)."""
    return [v.instance(f"{name}[{i}]", r, dict, "a dict row from companion.calc")
            for i, r in enumerate(v.sequence(name, rows))]


def readable(x: float) -> str:
    """A number for a label: three significant digits, but whole numbers from 100 up written
    out with thousands separators ("2,048", not "2.05e+03"), and no exponent below 1e6."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def accuracy_note(regime: str) -> str:
    """The readout's last line for an explorer that predicts a time or a rate: how far the
    chapter's arithmetic has landed from published measurements in ``regime``
    (``companion.measurements``: the held-out median and worst error, computed from the
    reference set, never typed), and where that is worked out."""
    from companion import measurements

    return ("<br><small>How close to a real server? "
            f"{measurements.accuracy_sentence(regime)} The notebook "
            "<i>How good are these models?</i> shows each measurement.</small>")
