"""Static explorers: a panel's figure precomputed over its main control, for readers without a
kernel (the book, a page saved from JupyterLab), and what ``Panel.show()`` returns.

``static_figure(panel)`` calls the panel's own pure ``compute()`` at a few dozen values of its
``main_control`` (the others stay where the panel is, normally the chapter's setting) and
returns one plotly figure: the panel's figure at the current setting plus a plotly slider whose
steps carry, as ``Plotly.update`` arguments, only the trace and layout properties that differ
from step to step. Plotly moves it without Python; in JupyterLab's plotly renderer too. The
readout HTML of every step and the other controls' values ride along in ``layout.meta``
(``companion_explorer``): the book shows them beside the figure and swaps the readout when the
slider moves (book/_static/companion_explorer.js). Numbers are rounded to 4 significant
digits, and the step count shrinks until the figure, as a notebook stores it, fits
``BUDGET_BYTES``.

``ExplorerOutput`` is what ``Panel.show()`` returns: it displays as the live ipywidgets
explorer; while static outputs are written (``make execute`` sets COMPANION_STATIC_OUTPUTS=1)
its output also carries the static figure (plotly JSON) and a PNG of the chapter's setting,
so the stored notebook reads well in the book and on GitHub.
"""

from __future__ import annotations

import json
import math

from companion import display, theme
from companion.explorers.static_image import decoded, png_bundle, static_outputs_enabled

__all__ = ["static_figure", "control_values", "explorer_bundle", "ExplorerOutput",
           "round_figure", "stored_size", "META_KEY", "MOVE_ME", "BUDGET_BYTES"]

META_KEY = "companion_explorer"
MOVE_ME = "open in JupyterLab to move me"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
DEFAULT_STEPS = 25
BUDGET_BYTES = 300_000  # as stored in a notebook (nbformat's indented JSON)
SIGNIFICANT_DIGITS = 4
SLIDER_SPACE_PX = 95   # added above the plot for the slider and its current value


def round_figure(value, digits: int = SIGNIFICANT_DIGITS):
    """``value`` with every float rounded to ``digits`` significant digits (ints, strings and
    structure unchanged): smaller JSON, and the same bytes on every CPU. The companion's one
    rounding (``companion.display.round_floats``), at the static figures' coarser precision."""
    return display.round_floats(value, digits)


def _plain(value):
    """Plotly's JSON with typed arrays (``{"dtype", "bdata"}``, how it writes numpy arrays)
    decoded into lists, so that they can be rounded and sent through ``Plotly.update``."""
    value = decoded(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def stored_size(figure: dict) -> int:
    """Bytes ``figure`` takes in a .ipynb file (nbformat writes JSON with indent=1)."""
    return len(json.dumps(figure, indent=1))


def _snap(control, value):
    """``value`` on ``control``'s grid (min + k step) and inside its range."""
    lo, hi = control.min, control.max
    if control.step:
        value = lo + round((value - lo) / control.step) * control.step
    value = min(max(value, lo), hi)
    if control.kind == "int":
        return int(round(value))
    if control.step:  # no 0.30000000000000004 on the slider
        decimals = max(0, -math.floor(math.log10(control.step)) + 1)
        value = round(value, decimals)
    return float(value)


def control_values(control, steps: int = DEFAULT_STEPS, include=()) -> list:
    """The values a static slider offers: every option of a choice; otherwise ``steps`` values
    across the range (geometric where it spans more than 50x, as sizes and lengths do),
    on the control's grid, plus ``include`` (the chapter's setting)."""
    if control.kind == "choice":
        return list(control.options.values())
    if steps < 2:
        raise ValueError(f"steps: need at least 2, got {steps!r}")
    if control.ladder is not None:   # the live slider's own stops, every k-th if too many
        kept = [control.check(x) for x in include]
        stops = control.stops(include=kept)
        if len(stops) <= steps:
            return stops
        picked = {stops[round(i * (len(stops) - 1) / (steps - 1))] for i in range(steps)}
        return sorted(picked | set(kept))
    lo, hi = control.min, control.max
    if lo > 0 and hi / lo > 50:
        raw = [lo * (hi / lo) ** (i / (steps - 1)) for i in range(steps)]
    else:
        raw = [lo + (hi - lo) * i / (steps - 1) for i in range(steps)]
    values = {_snap(control, x) for x in raw} | {control.check(x) for x in include}
    return sorted(values)


def _label(control, value) -> str:
    if control.kind == "text":  # a pasted config cannot be precomputed: say where to paste it
        return (f"{len(value):,} characters given" if value else "empty") + f" ({MOVE_ME})"
    if control.kind == "choice":
        return next(label for label, v in control.options.items() if v == value)
    if control.kind == "int":
        return f"{value:,}"
    decimals = max(0, -math.floor(math.log10(control.step))) if control.step else 3
    return f"{value:,.{decimals}f}"


def _varying(values: list) -> bool:
    first = json.dumps(values[0], sort_keys=True)
    return any(json.dumps(v, sort_keys=True) != first for v in values[1:])


def _step_updates(figures: list[dict]) -> list[tuple[dict, dict, list]]:
    """Per step, the ``Plotly.update`` arguments (trace update, layout update, trace indices)
    that turn any step's figure into this one. A property that no step changes is left out;
    one that a step lacks is sent as None (plotly resets it)."""
    n_traces = len(figures[0]["data"])
    changing = []   # (trace index, property) pairs that vary
    for i in range(n_traces):
        keys = sorted({k for f in figures for k in f["data"][i]})
        changing += [(i, k) for k in keys if _varying([f["data"][i].get(k) for f in figures])]
    indices = sorted({i for i, _ in changing})
    props = sorted({k for _, k in changing})
    layout_keys = sorted({k for f in figures for k in f["layout"]})
    layout_keys = [k for k in layout_keys if _varying([f["layout"].get(k) for f in figures])]
    updates = []
    for f in figures:
        traces = {k: [f["data"][i].get(k) for i in indices] for k in props}
        layout = {k: f["layout"].get(k) for k in layout_keys}
        updates.append((traces, layout, indices))
    return updates


def _padded(figures: list[dict]) -> list[dict]:
    """Give every step the same number of traces (missing ones invisible), so that one
    ``Plotly.update`` per step suffices."""
    n = max(len(f["data"]) for f in figures)
    for f in figures:
        f["data"] += [{"type": "scatter", "x": [], "y": [], "visible": False,
                       "showlegend": False}] * (n - len(f["data"]))
    return figures


def static_figure(panel, control: str | None = None, steps: int | None = None) -> dict:
    """The panel's figure with a precomputed slider for ``control`` (default: the panel's
    ``main_control``), as a plotly figure dict; see the module docstring."""
    from plotly.io.json import to_json_plotly

    from companion.explorers.common import plotly_go

    go = plotly_go()  # registers the companion's template, which every figure names
    name = control or panel.main_control
    controls = {c.name: c for c in panel.controls}
    if name not in controls:
        raise ValueError(f"control: {name!r} is not a control of {type(panel).__name__} "
                         f"(controls: {list(controls)})")
    main = controls[name]
    steps = steps or DEFAULT_STEPS
    base = dict(panel.params)
    while True:
        values = control_values(main, steps, include=[base[name]])
        views = [panel.compute(**dict(base, **{name: value})) for value in values]
        # the steps as plain JSON (plotly's encoder: numpy arrays too); plotly's validation
        # is paid once, for the figure at the current setting, below
        figures = _padded([round_figure(_plain(json.loads(to_json_plotly(
            {"data": view.traces, "layout": panel._layout(view)})))) for view in views])
        active = values.index(base[name])
        figure = _assemble(panel, main, values, views, figures, active)
        # the validated figure (plotly fills in the template); the slider steps stay as built
        validated = round_figure(_plain(json.loads(go.Figure(figure).to_json())))
        validated["layout"]["sliders"] = figure["layout"]["sliders"]
        size = stored_size(validated)
        if size <= BUDGET_BYTES or main.kind == "choice" or steps <= 5:
            break
        steps = max(5, int(steps * BUDGET_BYTES / size * 0.9))
    return validated


def _assemble(panel, main, values, views, figures, active) -> dict:
    updates = _step_updates(figures)
    figure = figures[active]
    layout = figure["layout"]
    height = layout.get("height") or 450
    margin = dict(layout.get("margin") or {})
    top = margin.get("t", 100)
    layout["height"] = height + SLIDER_SPACE_PX
    layout["margin"] = dict(margin, t=top + SLIDER_SPACE_PX)
    if isinstance(layout.get("title"), dict):
        layout["title"] = dict(layout["title"], y=1 - 14 / layout["height"], yanchor="top",
                               yref="container")
    layout["sliders"] = [{
        "active": active,
        "x": 0, "len": 1, "xanchor": "left",
        "y": 1, "yanchor": "bottom", "pad": {"t": 0, "b": 18},
        "currentvalue": {"prefix": f"{main.label}: ", "font": {"size": 13, "color": theme.TEXT},
                         "xanchor": "left"},
        "font": {"size": 9, "color": theme.TRANSPARENT},   # the current value says it
        "ticklen": 3, "minorticklen": 0,
        "steps": [{"label": _label(main, value), "method": "update",
                   "args": [traces, lay, indices]}
                  for value, (traces, lay, indices) in zip(values, updates)],
    }]
    others = [{"label": c.label, "value": _label(c, panel.params[c.name])}
              for c in panel.controls if c.name != main.name]
    layout["meta"] = {META_KEY: {
        "control": main.label,
        "name": main.name,
        "values": list(values),
        "readouts": [panel.readout_html(view) for view in views],
        "others": others,
        "hint": MOVE_ME,
    }}
    return figure


def explorer_bundle(panel) -> dict:
    """The static part of an explorer's output: the static figure (plotly JSON) and a PNG of
    the panel at its current setting."""
    figure = static_figure(panel)
    png = png_bundle(panel.figure(panel.compute(**panel.params)))
    return {PLOTLY_MIME: figure, **png}


class ExplorerOutput:
    """What ``Panel.show()`` returns: displays as the live explorer (an ipywidgets view); while
    static outputs are written, the output also holds ``explorer_bundle(panel)``. Attribute
    access goes to the widget, so code that used the returned VBox keeps working; ``widget``
    is the VBox itself (to place the explorer inside another widget)."""

    def __init__(self, panel, widget):
        self.panel = panel
        self.widget = widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude)
        bundle["text/plain"] = (f"{self.panel.title or type(self.panel).__name__}: an explorer "
                                "(run this cell in JupyterLab to move its controls)")
        if static_outputs_enabled():
            bundle.update(explorer_bundle(self.panel))
        return bundle

    def __getattr__(self, name):
        return getattr(self.widget, name)
