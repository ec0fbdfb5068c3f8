"""A light plotly figure widget for the explorers: one message per update, one ``Plotly.react``.

plotly's ``FigureWidget`` validates every change in Python, sends several comm messages per
update (restyle, relayout, their resets), makes the front end answer each with the figure's
full data and layout (``_js2py_traceDeltas``, ``_js2py_layoutDelta``) and ships its ~5 MB
JavaScript module, plotly.js included, with every widget. Under load, anywidget's 2 s
model-initialisation timeout then leaves it blank or deaf to its sliders.
``PlotlyFigure`` keeps the same picture with far less:

- The figure lives in a plain ipywidgets model (``_FigureState``, no JavaScript of its own):
  its plotly JSON as UTF-8 bytes (one binary buffer, no second JSON escaping), and the
  template apart, since it rarely changes. An update is one ``update`` message carrying the
  new JSON; nothing comes back.
- The view is an anywidget with a small ES module (``figure_widget.js``, a few KB): it finds
  the state model through anywidget's ``host.getModel`` and calls ``Plotly.react`` as soon as
  a figure arrives; a figure that arrives before the next animation frame waits for it, and
  only the newest is drawn, so figures that arrive faster than the page draws are dropped,
  not queued. Nothing it needs goes through the anywidget model after its creation, so that
  model's initialisation timeout cannot leave the figure deaf.
- What a redraw costs in the page (measured by ``make bench``): the figure's
  element is CSS-contained (``layout paint style``), so a redraw does not lay out or paint
  the notebook around it again, and every axis is drawn with ``ticklabeloverflow: "allow"``
  unless the figure says otherwise, which spares plotly.js a measurement of every tick label
  per tick label on each redraw; a label past the figure's edge is clipped instead of hidden.
- plotly.js comes from the installed plotly package, offline: a page that already has the
  same plotly.js version (JupyterLab's plotly renderer publishes ``window.Plotly``) uses it;
  otherwise the page loads the copy that ``_PlotlyLibrary``, one model per kernel, carries
  (``plotly.offline.get_plotlyjs()``), once per page whatever the number of figures.

- Lookahead (a slider step answered without waiting for the kernel). A panel
  tells the figure which control models it depends on (``follow``) and labels each figure with
  its key, the controls' values as the page's models hold them. After a move, the panel sends
  the figures one step either side of the moved control (``lookahead``); the page keeps those
  and the last figures it drew, a few per explorer, keyed that way. When the reader's next step
  lands on a kept key, the page draws that figure and readout at once, in the task of the
  keydown. The kernel still computes the step and sends its figure; an identical figure
  (same digest) is not drawn again. A kept figure is one the kernel computed for exactly those
  values (``compute`` is a pure function of the controls), so what is shown does not change,
  only when.
- A drag (a pointer held on the page). ipywidgets sends a slider's next value only
  once the kernel is idle again, so while a pointer is held the page draws each figure from
  the kernel in the next animation frame instead of in its message's task: it reads the
  kernel's idle first, and the kernel computes the next value's figure while plotly.js draws
  this one. Nothing is drawn ahead of time until the pointer is let go, and the panel offers
  the neighbours of a value reached by a jump only once the hand has stopped there
  (``Panel.LOOKAHEAD_AFTER_JUMP_S``). ``make bench``'s drag rows measure it.
- A slider's film (a figure that follows a dragging hand). A full plotly.js redraw
  takes 25-70 ms, so a drag cannot wait for one per value. When the reader's pointer comes
  over one of the panel's sliders, the page asks (a custom message, ``on_film_request``) for
  the figures of every value that slider can take, the other controls as they are; the panel
  computes them nearest first and sends them in chunks (``film``). The page draws them ahead
  of time while the pointer is up and keeps a copy of each drawing, which it swaps in while a
  slider is dragged: plotly.js's own drawing of exactly the figure the kernel computes for that
  value, shown in well under a frame.

What the front end receives (and draws, but for that axis default) is exactly
``figure(view)``'s plotly JSON with every float
rounded as ``companion.display`` rounds every figure (``to_plotly_json()`` gives it back,
decoded), because the panels' trace and layout dicts are already in plotly's canonical form;
``tests/test_panels.py`` checks that for every panel at every corner, so a panel that leans on
plotly.py's validation (magic underscores, shorthand titles) fails there.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

import anywidget
import ipywidgets
import numpy as np
import traitlets

from companion import display, theme

__all__ = ["PlotlyFigure", "figure_json"]

_ESM = Path(__file__).with_name("figure_widget.js")


class _FigureState(ipywidgets.Widget):
    """The shown figure: plotly JSON (UTF-8) of data + layout, and of the layout's template.
    A core ipywidgets model, so its updates reach the page whatever anywidget's runtime does."""

    figure = traitlets.Bytes(b'{"data": [], "layout": {}}').tag(sync=True)
    template = traitlets.Bytes(b"null").tag(sync=True)
    # for the lookahead: what this figure was computed for (JSON: the followed controls'
    # values, "null" when unknown), a digest of figure + template, and the readout's HTML
    key = traitlets.Unicode("null").tag(sync=True)
    digest = traitlets.Unicode("").tag(sync=True)
    readout = traitlets.Unicode("").tag(sync=True)
    # figures the page may need next: JSON list of {key, digest, readout, figure}
    ahead = traitlets.Bytes(b"[]").tag(sync=True)


class _PlotlyLibrary(ipywidgets.Widget):
    """plotly.js of the installed plotly package, sent to the page once per kernel."""

    version = traitlets.Unicode().tag(sync=True)
    source = traitlets.Bytes().tag(sync=True)


_library: _PlotlyLibrary | None = None


def _plotly_library() -> _PlotlyLibrary:
    global _library
    if _library is None or _library.comm is None:  # first use, or closed (Widget.close_all)
        from plotly.offline import get_plotlyjs, get_plotlyjs_version

        _library = _PlotlyLibrary(version=get_plotlyjs_version(),
                                  source=get_plotlyjs().encode("utf-8"))
    return _library


class PlotlyFigure(anywidget.AnyWidget):
    """A plotly figure drawn by plotly.js in the page and redrawn with ``Plotly.react``.

    ``PlotlyFigure(data, layout)`` shows the traces (plotly trace dicts) and layout;
    ``update(data, layout)`` replaces both in one message; ``to_plotly_json()`` is the figure
    as the page receives it (template included)."""

    _esm = _ESM
    state = anywidget.WidgetTrait().tag(sync=True)
    library = anywidget.WidgetTrait().tag(sync=True)
    # the lookahead's inputs (see ``follow``): widget references ("anywidget:<model id>"), the
    # state attribute the page reads from each, and the readout an arriving figure goes with
    controls = traitlets.List(traitlets.Unicode()).tag(sync=True)
    control_attrs = traitlets.List(traitlets.Unicode()).tag(sync=True)
    readout = anywidget.WidgetTrait().tag(sync=True)

    def __init__(self, data=(), layout=None, *, key=None, readout_html: str = "", **kwargs):
        state = _FigureState()
        _set_figure(state, list(data), dict(layout or {}), key, readout_html)
        super().__init__(state=state, library=_plotly_library(), **kwargs)
        self._film_request = None
        state.on_msg(self._from_page)

    def follow(self, controls, readout=None) -> None:
        """Let the page answer from its kept figures: ``controls`` is a list of (widget,
        attribute) pairs in the order of the figures' keys ("value" for a slider or text box,
        "index" for a dropdown), ``readout`` the HTML widget whose text goes with each figure."""
        with self.hold_sync():
            self.readout = readout
            self.control_attrs = [attr for _, attr in controls]
            self.controls = [f"anywidget:{widget.model_id}" for widget, _ in controls]

    def update(self, data, layout, *, key=None, readout_html: str = "") -> None:
        """Show a new figure (one message); ``key`` (a list of the followed controls' values)
        and ``readout_html`` label it for the page's lookahead."""
        with self.state.hold_sync():  # one message, whatever changed
            _set_figure(self.state, list(data), dict(layout), key, readout_html)

    def lookahead(self, entries) -> None:
        """Offer the page figures it may need next: (key, data, layout, readout_html) each.
        Only figures with the shown figure's template are sent (the page draws them with it)."""
        self.state.ahead = self._offers(entries)

    def on_film_request(self, callback) -> None:
        """Call ``callback(index)`` when the page asks for the film of the followed control
        at ``index`` (the reader's pointer came over that slider)."""
        self._film_request = callback

    def film(self, index: int, entries) -> None:
        """Send the page a chunk of the film of the followed control at ``index``: figures
        for values of that control, (key, data, layout, readout_html) each, as ``lookahead``."""
        self.state.send({"film": index}, buffers=[self._offers(entries)])

    def _offers(self, entries) -> bytes:
        parts = []
        for key, data, layout, readout_html in entries:
            figure, template = _encode_figure(list(data), dict(layout))
            if template != self.state.template:
                continue
            head = json.dumps({"key": key, "digest": _digest(figure, template),
                               "readout": readout_html}, separators=(",", ":"))
            parts.append(head[:-1].encode() + b',"figure":' + figure + b"}")
        return b"[" + b",".join(parts) + b"]"

    def _from_page(self, _state, content, _buffers) -> None:
        if isinstance(content, dict) and "film" in content and self._film_request is not None:
            self._film_request(content["film"])

    def to_plotly_json(self) -> dict:
        figure = json.loads(self.state.figure)
        template = json.loads(self.state.template)
        if template is not None:
            figure["layout"]["template"] = template
        return figure

    def close(self) -> None:
        self.state.close()
        super().close()


def figure_json(data, layout) -> dict:
    """The plotly JSON that ``PlotlyFigure(data, layout)`` sends (template expanded, floats
    rounded to ``display.SIGNIFICANT_DIGITS``)."""
    figure, template = _encode_figure(list(data), dict(layout))
    out = json.loads(figure)
    if json.loads(template) is not None:
        out["layout"]["template"] = json.loads(template)
    return out


def _set_figure(state: _FigureState, data: list, layout: dict, key, readout_html: str) -> None:
    figure, template = _encode_figure(data, layout)
    state.template = template
    state.figure = figure
    state.key = json.dumps(key, separators=(",", ":"))
    state.digest = _digest(figure, template)
    state.readout = readout_html


def _digest(figure: bytes, template: bytes) -> str:
    return hashlib.blake2b(figure + b"\0" + template, digest_size=8).hexdigest()


def _encode_figure(data: list, layout: dict) -> tuple[bytes, bytes]:
    # the same rounding as every figure the companion displays: what the page draws does not
    # depend on the CPU's SIMD path either (round_floats also turns numpy arrays into lists)
    template = layout.pop("template", None)
    figure = _dumps(display.round_floats({"data": data, "layout": layout}))
    return figure, (_template_json(template) if isinstance(template, str)
                    else _dumps(display.round_floats(template)))


@lru_cache(maxsize=8)
def _template_json(name: str) -> bytes:
    """A named template (``theme.TEMPLATE``) as plotly.js needs it: the full template object,
    which is what plotly.py puts in a figure's JSON. The companion's own comes from
    ``theme.template_json`` (no plotly objects built); another name is asked of plotly."""
    if name == theme.TEMPLATE:
        return _dumps(display.round_floats(theme.template_json()))
    import plotly.io as pio

    return _dumps(display.round_floats(pio.templates[name].to_plotly_json()))


# plotly's JSON encoder writes NaN and infinities as null (JSON has no NaN); so do we
_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _dumps(obj) -> bytes:
    text = json.dumps(obj, default=_default, separators=(",", ":"), ensure_ascii=False)
    if "NaN" in text or "Infinity" in text:
        text = _NON_FINITE.sub(lambda m: "null" if m.group(1) else m.group(0), text)
    return text.encode("utf-8")


def _default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"figure data: {type(value).__name__} is not JSON serialisable")
