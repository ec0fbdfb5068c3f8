"""The one mechanism behind every explorer: controls -> compute (pure) -> figure + readout.

A panel subclass declares its ``controls`` (each with the chapter's setting as default and a
unit in its label) and implements ``compute(**params) -> View``: pure, headless, fast, built
only from ``companion.calc``/``companion.sim`` calls. Everything else is shared here:

- ``update(**params)`` validates the parameters against the controls, recomputes, and, if the
  UI exists, sends the figure its new state (one message) and updates the readout. It is a
  plain function: tests call it at the corners of every range, the benchmark times it.
- ``figure(view)`` builds a static plotly figure (what a stored notebook output shows).
- ``show()`` builds sliders/dropdowns, a "chapter's setting" reset button, the readout and a
  live figure (``companion.explorers.figure_widget.PlotlyFigure``: plotly.js redraws it with
  ``Plotly.react``; the shown figure is always ``figure(view)``).
- After a reader's move, the panel offers the page the views one step either side of the
  moved control (``_lookahead``), so that the next step shows without waiting for the kernel.
  That needs ``compute`` to be a pure function of the controls' values, as it is here.
  After a jump (a drag, a PageUp) that lookahead waits until the reader stops there.
- When the reader's pointer comes over a slider, the page asks for that slider's film: the
  views of every value it can take, the others as they are (``_film``, computed nearest first
  in chunks between the kernel's other messages), which the page draws ahead of time so that
  a drag shows each value's figure without waiting for plotly.js (``figure_widget``).

ipywidgets and plotly are imported lazily, inside methods, so ``import companion.widgets``
stays cheap until a panel is shown.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from companion import theme, validate as v
from companion.explorers.common import plotly_go
from companion.explorers.axes import finish_axes

__all__ = ["Control", "View", "Panel"]


def panel_css() -> str:
    """The explorers' CSS (``panel.css`` beside this module), scoped to ``.companion-panel``."""
    global _PANEL_CSS
    if _PANEL_CSS is None:
        from pathlib import Path

        _PANEL_CSS = (Path(__file__).with_name("panel.css")).read_text(encoding="utf-8")
    return _PANEL_CSS


_PANEL_CSS = None


def _running_loop():
    """The event loop running this thread's code (a Jupyter kernel's), or None."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def binary_ladder(lo: int, hi: int) -> tuple:
    """Slider stops for a count that spans decades: the powers of two and one and a half times
    them (1, 2, 3, 4, 6, 8, 12, ...; every chapter batch and length), from ``lo`` to ``hi``,
    both included. A zero ``lo`` is kept as the first stop (no context yet)."""
    stops = {lo, hi}
    x = 1
    while x <= hi:
        stops.update(v for v in (x, x * 3 // 2) if lo <= v <= hi)
        x *= 2
    return tuple(sorted(stops))


def decimal_ladder(lo: int, hi: int) -> tuple:
    """Slider stops for a count that spans decades, in round decimal numbers: 1, 1.5, 2, 3, 4,
    5, 6 and 8 times each power of ten (the chapters' 600, 4,000, 8,000), from ``lo`` to
    ``hi``, both included (a zero ``lo`` too)."""
    stops = {lo, hi}
    x = 1
    while x <= hi:
        for mantissa in (1, 1.5, 2, 3, 4, 5, 6, 8):
            v = x * mantissa
            if lo <= v <= hi and v == int(v):
                stops.add(int(v))
        x *= 10
    return tuple(sorted(stops))


# an int slider whose range spans more than this factor gets log-spaced stops (a
# linear 1-1024 slider jumps from 64 to 1,024 in a short drag)
LADDER_SPAN = 100


def log_ladder(lo: int, hi: int, default: int) -> tuple:
    """The stops for an int control spanning decades: ``binary_ladder`` where the default is a
    power of two or three times one (the chapters' 2,048, 8,192, batch 64), else
    ``decimal_ladder`` (600, 8,000)."""
    # a default at the range's low end (0, 1) says nothing: then the high end decides
    decides = default if default != lo else hi
    odd = decides
    while odd > 0 and odd % 2 == 0:
        odd //= 2
    binary = odd in (1, 3)     # a power of two, or three times one
    return binary_ladder(lo, hi) if binary else decimal_ladder(lo, hi)


@dataclass(frozen=True)
class Control:
    """One slider, dropdown or text box. ``kind``: "int", "float", "choice" (``options``:
    label -> value) or "text" (a string the reader pastes or types, such as a config.json;
    ``options``, label -> text, are examples that ``corners`` tries besides the default).

    ``ladder``: for a quantity whose range spans decades (a batch, a prompt length), the
    values its slider stops at, spaced about evenly on a log scale; the default is always one
    of them, and the API still accepts any value in [min, max]. An int control spanning more
    than ``LADDER_SPAN`` gets ``log_ladder``'s stops unless it passes ``ladder=()`` (a plain
    linear slider)."""

    name: str
    label: str
    kind: str
    default: Any
    min: float | None = None
    max: float | None = None
    step: float | None = None
    options: dict | None = None
    ladder: tuple | None = None
    # values a laddered slider stops at besides its ladder: those a notebook's prompt or worked
    # answer sets it to (tests/test_controls_reach_the_text.py finds those set in code)
    extra_stops: tuple = ()

    def __post_init__(self):
        if self.ladder == ():
            object.__setattr__(self, "ladder", None)
        elif (self.ladder is None and self.kind == "int" and self.max is not None
              and self.max > LADDER_SPAN * max(self.min or 0, self.step or 1, 1)):
            # no stop finer than the control's step, apart from the range's own ends
            lo, hi = int(self.min), int(self.max)
            object.__setattr__(self, "ladder", tuple(
                x for x in log_ladder(lo, hi, int(self.default))
                if x in (lo, hi) or x >= (self.step or 1)))

    @property
    def indexed(self) -> bool:
        """Whether the page holds this control's option index rather than its value: a
        dropdown, or a slider with log-spaced stops (the figures' lookahead keys follow it)."""
        return self.kind == "choice" or self.ladder is not None

    def stops(self, include=()) -> list:
        """A ladder control's slider stops: the ladder, its extra stops, the default and
        ``include``."""
        return sorted({*self.ladder, *self.extra_stops, self.default, *include})

    def settable(self, value) -> bool:
        """Whether a reader can set this control to exactly ``value`` by hand: one of a
        laddered slider's stops, a plain slider's min + k * step within its range, a
        dropdown's option; a text box takes anything."""
        if self.kind == "choice":
            return value in self.options.values()
        if self.kind == "text":
            return isinstance(value, str)
        if self.ladder is not None:
            return value in self.stops()
        if not self.min <= value <= self.max:
            return False
        return self._grid_index(value) is not None

    def _grid_index(self, value) -> int | None:
        """k where ``value`` is min + k * step up to its last bits; None off that grid."""
        k = (value - self.min) / (self.step or 1)
        return round(k) if abs(k - round(k)) <= 1e-9 * max(1.0, abs(k)) else None

    def snap(self, value):
        """A plain float slider's value from the page on its grid (min + k * step, as a clean
        decimal) where it misses the grid only in the last bits: the page's slider maps values
        through percentages of its track and hands over 20.999999999999996 for 21, and
        21 GB / 4.8 TB/s must read 4.38 ms, not the 4.37 ms of the number below it. Any other
        value is returned as it is."""
        if self.kind != "float" or self.ladder is not None or not self.step:
            return value
        k = self._grid_index(value)
        return value if k is None else round(self.min + k * self.step, 12)

    def step_from(self, value, direction: int = 1):
        """The value one slider step (an arrow key) from ``value``; None past the range."""
        if self.ladder is not None:
            stops = self.stops(include=(value,))
            i = stops.index(value) + direction
            return stops[i] if 0 <= i < len(stops) else None
        x = value + direction * self.step
        x = int(x) if self.kind == "int" else round(x, 12)
        return x if self.min <= x <= self.max else None

    def check(self, value):
        """Validate one value against this control (a clear error naming the control)."""
        if self.kind == "choice":
            if value in self.options.values():
                return value
            if isinstance(value, str) and value in self.options:
                return self.options[value]
            raise ValueError(f"{self.name}: expected one of {list(self.options)}, got {value!r}")
        if self.kind == "text":
            return v.instance(self.name, value, str, "text (a string)")
        if self.kind == "int":
            x = v.integer(self.name, value, minimum=None)
        else:
            x = v.number(self.name, value)
        if (self.min is not None and x < self.min) or (self.max is not None and x > self.max):
            raise ValueError(f"{self.name}: {value!r} is outside the range "
                             f"[{self.min}, {self.max}]")
        return x

    def corners(self) -> list:
        if self.kind == "choice":
            return list(self.options.values())
        if self.kind == "text":
            return [self.default, *(self.options or {}).values()]
        return [self.min, self.default, self.max]


def _slider_positions(widget, kind: str) -> list:
    """The values a linear ipywidgets slider can be dragged to: its minimum plus whole steps,
    and its maximum (which a drag to the end reaches even off the step grid)."""
    count = int(math.floor((widget.max - widget.min) / widget.step + 1e-9)) + 1
    values = [widget.min + i * widget.step for i in range(count)] + [widget.max]
    values = [int(x) if kind == "int" else round(x, 12) for x in values]
    return sorted(set(values))


@dataclass
class View:
    """What ``compute`` returns: readout numbers, plotly trace dicts, layout changes, text."""

    numbers: dict = field(default_factory=dict)
    traces: list = field(default_factory=list)
    layout: dict = field(default_factory=dict)
    text: str = ""


class Panel:
    """Base class of every explorer; subclasses set ``title``, ``controls``, ``base_layout``
    and implement ``compute``."""

    title: str = ""
    controls: tuple[Control, ...] = ()
    base_layout: dict = {}
    # the control that a reader without a kernel can still move: the book's static explorer
    # precomputes the figure over its range (companion.explorers.static)
    main_control: str = ""

    def __init__(self, **overrides):
        self._ui = None
        self._fig = None
        self.params = self.defaults()
        if overrides:
            self.params.update(self.check(**overrides))

    # --- pure part ------------------------------------------------------------------------
    def defaults(self) -> dict:
        return {c.name: c.default for c in self.controls}

    def check(self, **params) -> dict:
        names = {c.name: c for c in self.controls}
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise TypeError(f"{unknown[0]}: not a control of {type(self).__name__} "
                            f"(controls: {list(names)})")
        return {k: names[k].check(val) for k, val in params.items()}

    def compute(self, **params) -> View:  # pragma: no cover - abstract
        raise NotImplementedError

    def corners(self):
        """Parameter sets at each control's min/default/max with the others at default."""
        base = self.defaults()
        yield dict(base)
        for c in self.controls:
            for value in c.corners():
                yield dict(base, **{c.name: value})

    def at(self, **params) -> View:
        """The view at the chapter's setting with ``params`` changed, leaving the panel's own
        settings and figure alone (a worked answer's "what if", computed by the panel)."""
        return self.compute(**{**self.defaults(), **self.check(**params)})

    def update(self, **params) -> View:
        """Recompute for changed parameters and refresh the figure/readout if shown."""
        self.params.update(self.check(**params))
        view = self.compute(**self.params)
        if self._fig is not None:
            self._apply(view)
        return view

    # --- figure ---------------------------------------------------------------------------
    def _layout(self, view: View) -> dict:
        layout = {"template": theme.TEMPLATE, "height": 420, "margin": dict(theme.PANEL_MARGIN)}
        layout.update(self.base_layout)
        layout.update(view.layout)
        if self.title and "title" not in view.layout:
            layout["title"] = {"text": self.title}
        return finish_axes(view.traces, layout)

    def figure(self, view: View | None = None):
        """A static plotly Figure of ``view`` (default: the current parameters)."""
        go = plotly_go()
        view = view if view is not None else self.compute(**self.params)
        return go.Figure(data=view.traces, layout=self._layout(view))

    def static_figure(self, control: str | None = None, steps: int | None = None) -> dict:
        """The figure at the current setting with a slider precomputed over ``control``
        (default ``main_control``), as a plotly figure dict (``companion.explorers.static``)."""
        from companion.explorers.static import static_figure

        return static_figure(self, control=control, steps=steps)

    def _apply(self, view: View) -> None:
        """Refresh the shown figure and readout: the figure gets ``figure(view)``'s whole
        plotly JSON in one message (a few KB; the page's ``Plotly.react`` redraws only what
        differs), so it never depends on what was shown before."""
        # the readout's message first: the page applies it (a little HTML) before the figure's
        # message starts plotly.js, so both show in the same frame instead of the readout
        # waiting behind the redraw
        layout = self._layout(view)
        readout = self.readout_html(view, layout)
        if self._readout is not None:
            self._readout.value = readout
        self._fig.update(view.traces, layout, key=self._widget_key(self.params),
                         readout_html=readout)

    def readout_html(self, view: View, layout: dict | None = None) -> str:
        """What the readout shows for ``view``: its text, then the words and numbers of the
        figure beside it (``companion.describe.notes_html``: the text alternative a screen
        reader reads, and "Show the numbers"), so that they follow every move of a control,
        including the page's lookahead and film."""
        from companion.describe import notes_html

        layout = self._layout(view) if layout is None else layout
        return view.text + notes_html(data=view.traces, layout=layout)

    # --- lookahead (figure_widget.PlotlyFigure.follow) -------------------------------------
    # a move that took the kernel longer than this gets no lookahead: the next move would wait
    # behind it
    LOOKAHEAD_BUDGET_S = 0.030

    def _widget_key(self, params: dict) -> list:
        """``params`` as the page's control models hold them: a slider's or text box's value,
        a dropdown's option index (the figure's key for the page's lookahead)."""
        key = []
        for c in self.controls:
            value = params[c.name]
            if c.kind == "choice":
                key.append(list(c.options.values()).index(value))
            elif c.ladder is not None:
                key.append(self._stop_index(c, value))
            elif c.kind == "int":
                key.append(int(value))
            elif c.kind == "float":
                key.append(float(value))
            else:
                key.append(str(value))
        return key

    def _control(self, name: str) -> Control:
        return next(c for c in self.controls if c.name == name)

    def _stop_index(self, control: Control, value) -> int:
        """Where ``value`` sits among the stops its slider shows (the nearest stop's index for
        a value set from code that the slider does not offer)."""
        stops = self._stops.get(control.name) or control.stops()
        if value in stops:
            return stops.index(value)
        return min(range(len(stops)), key=lambda i: abs(stops[i] - value))

    _stops: dict = {}

    def _neighbours(self, name: str) -> list:
        """The values one step either side of control ``name``'s, as its widget steps (arrow
        keys), inside its range."""
        control = self._control(name)
        value = self.params[name]
        if control.indexed:     # the option or stop either side
            if control.kind == "choice":
                values = list(control.options.values())
                i = values.index(value)
            else:
                values, i = self._stops[name], self._stop_index(control, value)
            return [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]
        if control.kind not in ("int", "float"):
            return []
        widget = self._widgets[name]
        out = []
        for x in (value - widget.step, value + widget.step):
            x = int(x) if control.kind == "int" else round(x, 12)
            if widget.min <= x <= widget.max:
                out.append(x)
        return out

    def _lookahead(self, name: str) -> None:
        """Offer the page the figures one step either side of control ``name``."""
        entries = []
        for value in self._neighbours(name):
            params = {**self.params, name: value}
            try:
                # the class's compute, not an instance's wrapper of it (the browser tests'
                # kernel probe counts the updates the reader asked for)
                view = type(self).compute(self, **params)
            except Exception:  # noqa: BLE001 - that step reports its error when it is taken
                continue
            layout = self._layout(view)
            entries.append((self._widget_key(params), view.traces, layout,
                            self.readout_html(view, layout)))
        self._fig.lookahead(entries)

    # after a move of more than one step (a drag, a PageUp), the lookahead waits this long and
    # is dropped if another move comes first: while a slider is dragged, the page sends its next
    # value only once the kernel is idle, and neighbours of a value the hand has already left
    # are not worth that wait (None: look ahead at once, as after a step)
    LOOKAHEAD_AFTER_JUMP_S: float | None = 0.05
    _pending_lookahead = None

    def _one_step(self, name: str, previous, value) -> bool:
        control = self._control(name)
        if control.kind not in ("int", "float") or previous is None:
            return True
        if control.ladder is not None:
            return abs(self._stop_index(control, value)
                       - self._stop_index(control, previous)) <= 1
        return abs(value - previous) <= self._widgets[name].step * (1 + 1e-9)

    def _moved(self, name: str, value) -> None:
        """A control moved in the page: update, then (if that was quick) look ahead: at once
        after one step, a little later after a jump (unless the reader moves on first)."""
        if self._resetting:
            return
        value = self._control(name).snap(value)
        previous = self.params.get(name)
        if self._pending_lookahead is not None:
            self._pending_lookahead.cancel()
            self._pending_lookahead = None
        start = time.perf_counter()
        self.update(**{name: value})
        if time.perf_counter() - start > self.LOOKAHEAD_BUDGET_S:
            return
        delay = self.LOOKAHEAD_AFTER_JUMP_S
        loop = _running_loop() if delay is not None else None
        if loop is None or self._one_step(name, previous, value):
            self._lookahead(name)
            return
        params = dict(self.params)

        def later():
            self._pending_lookahead = None
            if self.params == params and self._fig is not None:
                self._lookahead(name)

        self._pending_lookahead = loop.call_later(delay, later)

    # --- film: a slider's whole range, for a drag (figure_widget.PlotlyFigure.film) ---------
    # most values of one slider sent (nearest to its value first), and how long one chunk may
    # keep the kernel from the slider's own messages
    FILM_VALUES = 256
    FILM_CHUNK_S = 0.025
    _film_job = None     # (control name, the other controls' values) being sent or sent

    def _film_values(self, control: Control) -> list:
        """Every value the slider of ``control`` can take, nearest to its value first (at
        most ``FILM_VALUES``); none for a dropdown or a text box."""
        if control.kind not in ("int", "float"):
            return []
        if control.ladder is not None:
            values = list(self._stops[control.name])
        else:
            values = _slider_positions(self._widgets[control.name], control.kind)
        value = self.params[control.name]
        return sorted(values, key=lambda x: abs(x - value))[:self.FILM_VALUES]

    def _film(self, index) -> None:
        """The page asks for the film of control ``index``: send the views of its values,
        once per setting of the other controls."""
        if not isinstance(index, int) or not 0 <= index < len(self.controls) or not self._fig:
            return
        control = self.controls[index]
        others = {k: v for k, v in self.params.items() if k != control.name}
        if self._film_job == (control.name, others):
            return
        values = self._film_values(control)
        if not values:
            return
        self._film_job = (control.name, others)
        self._film_chunk(index, control.name, others, values)

    def _film_chunk(self, index: int, name: str, others: dict, values: list) -> None:
        if self._fig is None or self._film_job != (name, others):
            return  # another film was asked for since
        if any(self.params[k] != v for k, v in others.items()):
            self._film_job = None  # another control moved: this film is stale
            return
        start, entries, tried = time.perf_counter(), [], 0
        while values and (not tried or time.perf_counter() - start < self.FILM_CHUNK_S):
            tried += 1
            params = {**others, name: values.pop(0)}
            try:
                view = type(self).compute(self, **params)  # the class's, as _lookahead
            except Exception:  # noqa: BLE001 - that value reports its error when it is taken
                continue
            layout = self._layout(view)
            entries.append((self._widget_key(params), view.traces, layout,
                            self.readout_html(view, layout)))
        if entries:
            self._fig.film(index, entries)
        if values:
            loop = _running_loop()
            if loop is None:
                self._film_chunk(index, name, others, values)
            else:  # the kernel takes the slider's messages between two chunks
                loop.call_soon(self._film_chunk, index, name, others, values)

    # --- UI -------------------------------------------------------------------------------
    def _widget_for(self, control: Control):
        import ipywidgets as w

        style = {"description_width": "initial"}
        layout = w.Layout(width="420px")
        value = self.params[control.name]
        if control.kind == "choice":
            return w.Dropdown(options=list(control.options.items()), value=value,
                              description=control.label, style=style, layout=layout)
        if control.kind == "text":  # applied when the box loses focus, not on every keystroke
            return w.Textarea(value=value, description=control.label, continuous_update=False,
                              placeholder="a path to config.json, or its text pasted here",
                              style=style, layout=w.Layout(width="420px", height="4.5em"))
        if control.ladder is not None:  # log-spaced stops; the readout shows the value
            return w.SelectionSlider(
                options=[(f"{x:,}", x) for x in self._stops[control.name]], value=value,
                description=control.label, continuous_update=True, style=style,
                layout=layout)
        cls = w.IntSlider if control.kind == "int" else w.FloatSlider
        kwargs = dict(value=value, min=control.min, max=control.max, description=control.label,
                      continuous_update=True, style=style, layout=layout)
        if control.step is not None:
            kwargs["step"] = control.step
        if control.kind == "float" and control.step is not None:
            kwargs["readout_format"] = f".{max(0, -math.floor(math.log10(control.step)))}f"
        return cls(**kwargs)

    def show(self):
        """The explorer: controls, a reset button, the readout and a live figure."""
        import ipywidgets as w

        from companion.explorers.figure_widget import PlotlyFigure

        # the figure's model first: the page starts loading plotly.js when it arrives, while
        # this computes the figure (figure_widget.js, initialize)
        self._fig = PlotlyFigure()
        view = self.compute(**self.params)
        readout = self.readout_html(view)
        self._stops = {c.name: c.stops(include=(self.params[c.name],))
                       for c in self.controls if c.ladder is not None}
        self._fig.update(view.traces, self._layout(view), key=self._widget_key(self.params),
                         readout_html=readout)
        # the readout may shrink and scroll; the controls keep their width so that every
        # slider's value stays visible next to a long readout
        self._readout = w.HTML(value=readout, layout=w.Layout(flex="1 1 16em", min_width="0",
                                                                overflow="auto"))
        self._readout.add_class("companion-readout")
        self._widgets = {c.name: self._widget_for(c) for c in self.controls}
        self._fig.follow([(self._widgets[c.name], "index" if c.indexed else "value")
                          for c in self.controls], self._readout)
        # the page finds a control by these classes when the pointer comes over it (film)
        for i, c in enumerate(self.controls):
            self._widgets[c.name].add_class("companion-control")
            self._widgets[c.name].add_class(f"companion-control-{i}")
        self._film_job = None
        self._fig.on_film_request(self._film)

        for name, widget in self._widgets.items():
            widget.observe(lambda ch, n=name: self._moved(n, ch["new"]), names="value")
        reset = w.Button(description="chapter's setting", icon="undo",
                         tooltip="Restore the chapter's values")
        reset.on_click(lambda _: self.reset())
        controls = w.VBox(list(self._widgets.values()) + [reset], layout=w.Layout(flex="0 0 auto"))
        controls.add_class("companion-controls")
        # controls and readout side by side; the readout goes under the controls where the
        # page is too narrow for both (panel.css lays out the controls)
        top = w.HBox([controls, self._readout], layout=w.Layout(flex_flow="row wrap"))
        top.add_class("companion-top")
        # the panel's CSS travels with it: a <style> in a hidden HTML widget, last, so that the
        # readout stays the panel's first HTML widget
        style = w.HTML(value=f"<style>{panel_css()}</style>", layout=w.Layout(display="none"))
        self._ui = w.VBox([top, self._fig, style])
        self._ui.add_class("companion-panel")
        from companion.explorers.static import ExplorerOutput

        return ExplorerOutput(self, self._ui)

    def reset(self) -> View:
        """Back to the chapter's setting (the controls' defaults)."""
        defaults = self.defaults()
        if self._ui is not None:
            # the widgets follow without updating the figure once per control (a dropdown's
            # own value -> index observer must stay: unobserving "value" left its index behind)
            self._resetting = True
            try:
                for name, widget in self._widgets.items():
                    widget.value = defaults[name]
            finally:
                self._resetting = False
        return self.update(**defaults)

    _readout = None
    _resetting = False
