"""What reaches a notebook's stored outputs: numbers that do not depend on the CPU.

NumPy picks SIMD kernels by CPU at run time (and OpenBLAS picks its own), so ``np.geomspace``,
``np.power``, BLAS-reduced sums and friends can differ in the last bits between machines. A
figure's JSON then differs in the 16th digit and strict nbval, which compares plotly JSON
verbatim, fails on a machine that computes correctly. The one remedy for the whole companion:
every float of a figure is rounded to ``SIGNIFICANT_DIGITS`` significant digits (finer than
the eye or a hover label resolves, far coarser than last-bit noise) on its way into a
notebook.

- ``round_floats(value)``: any JSON-like value (dicts, lists, tuples, floats, numpy arrays and
  scalars, plotly's base64 typed arrays, dataclass instances) with every float rounded.
- ``round_figure_json(fig)``: a plotly Figure, FigureWidget or figure dict as the JSON that the
  ``application/vnd.plotly.v1+json`` mimetype carries, rounded. Anything that puts a figure into
  an output by another path (a static fallback, a custom widget's stored state) calls this.
- ``figure_mimebundle(fig)``: ``{"application/vnd.plotly.v1+json": round_figure_json(fig)}``.
- ``md(text)``: shows ``text`` (typically an f-string of computed numbers) as Markdown, so that a
  result reaches the prose only through a rendered output, never typed in by hand.
- ``answer(text, title=...)``: the same, folded in a ``<details>`` block (a "try this" prompt's
  worked answer: the reader opens it after trying).
- ``install()``: registers the rounding plotly renderer and makes it the default in place of
  plain ``plotly_mimetype`` (and the other plain mimetype renderers: ``jupyterlab``,
  ``vscode``, ``nteract``), so ``fig.show()`` and a figure as a cell's last expression go
  through it, and adds ``NOTES_RENDERER`` after it: each shown figure is followed by an output
  with its text alternative and data tables (``companion.describe``). Idempotent; ``companion.explorers.common.plotly_go()`` calls it, so every figure
  the companion builds is displayed through it. A renderer the user chose (``browser``, ...)
  is left alone.

Rounding uses Python's correctly rounded float formatting (``format(x, ".6g")``), not numpy
arithmetic, so it is itself the same on every CPU. Integers, booleans and strings are left
alone. Two limits of rounding to significant digits: a last-bit difference can still flip a
value that sits on a rounding boundary (odds about 1e-10 per value), and a value whose exact
result is zero but that comes out of a cancellation as +-1e-17 noise stays noise (compute
such a value so that it is exactly zero, e.g. from integers).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import textwrap

__all__ = ["tex", "tex_sci", "SIGNIFICANT_DIGITS", "RENDERER_PREFIX", "NOTES_RENDERER",
           "round_float", "round_floats", "round_figure_json", "figure_mimebundle", "notes_bundle", "md", "answer", "install"]

SIGNIFICANT_DIGITS = 6
PLOTLY_MIME = "application/vnd.plotly.v1+json"
RENDERER_PREFIX = "companion_"
NOTES_RENDERER = "companion_figure_notes"
# plotly renderers that only wrap the figure JSON into the plotly mimetype
_PLAIN_MIMETYPE_RENDERERS = ("plotly_mimetype", "jupyterlab", "vscode", "nteract")
# plotly.js typed arrays ("bdata" specs) that hold floats; plotly writes native little-endian
_FLOAT_DTYPES = {"f4": "<f4", "f8": "<f8"}


def _digits(digits) -> int:
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ValueError(f"digits: expected an integer from 1 to 17, got {digits!r}")
    return digits


def round_float(x: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits (NaN and infinities unchanged)."""
    return _round_float(float(x), _digits(digits))


def _round_float(x: float, digits: int) -> float:
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(format(x, f".{digits}g"))


def _round_typed_array(spec: dict, digits: int) -> dict:
    import numpy as np

    values = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=_FLOAT_DTYPES[spec["dtype"]])
    rounded = np.array([_round_float(x, digits) for x in values.tolist()], dtype="<f8")
    # float32 data comes back as float64: its rounded decimal values are not float32 numbers
    return dict(spec, dtype="f8", bdata=base64.b64encode(rounded.tobytes()).decode("ascii"))


def round_floats(value, digits: int = SIGNIFICANT_DIGITS):
    """A copy of ``value`` with every float rounded to ``digits`` significant digits.

    Walks dicts, lists and tuples; numpy arrays and scalars come back as (nested) lists and
    Python numbers; a plotly typed-array spec (``{"dtype": "f8", "bdata": ...}``) stays one;
    a dataclass instance comes back as a copy with its fields rounded (so that its repr prints
    rounded numbers). Integers, booleans, strings and None are returned unchanged.
    """
    return _round(value, _digits(digits))


def _round(value, digits: int):
    if isinstance(value, float):
        return _round_float(value, digits)
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, dict):
        if value.get("dtype") in _FLOAT_DTYPES and isinstance(value.get("bdata"), str):
            return _round_typed_array(value, digits)
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_round(v, digits) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _round(getattr(value, f.name), digits)
                   for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy array or scalar
        return _round(value.tolist(), digits)
    return value


def round_figure_json(fig, digits: int = SIGNIFICANT_DIGITS) -> dict:
    """``fig`` (plotly Figure, FigureWidget or figure dict) as the JSON dict that the plotly
    mimetype carries (numpy arrays as plotly's typed arrays, as plotly itself encodes them),
    with every float rounded to ``digits`` significant digits."""
    import plotly.io as pio

    if hasattr(fig, "to_plotly_json"):
        fig = fig.to_plotly_json()
    elif not isinstance(fig, dict):
        raise TypeError(f"fig: expected a plotly Figure or a figure dict, got "
                        f"{type(fig).__name__}")
    return round_floats(json.loads(pio.to_json(fig, validate=False, remove_uids=False)), digits)


def figure_mimebundle(fig, digits: int = SIGNIFICANT_DIGITS) -> dict:
    """The mimebundle of ``fig`` as the rounding renderer displays it."""
    return {PLOTLY_MIME: round_figure_json(fig, digits)}


def _markdown_text(name: str, text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a string, got {type(text).__name__}")
    return textwrap.dedent(text).strip("\n")


def md(text: str) -> None:
    """Display ``text`` as Markdown (common indentation removed, so an indented triple-quoted
    f-string works). Notebooks write ``md(f"... {value:.1f} ms ...")`` wherever a sentence needs
    a number the companion computes; the number then lives in a rendered, re-executed output
    that nbval compares, not in hand-typed prose."""
    from IPython.display import Markdown, display

    display(Markdown(_markdown_text("text", text)))


def answer(text: str, title: str = "Worked answer") -> None:
    """Display ``text`` as Markdown folded inside ``<details>`` under ``title``: the worked
    answer to a "try this" prompt, with its numbers computed in the cell that renders it."""
    body = _markdown_text("text", text)
    summary = _markdown_text("title", title)
    md(f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>")


def tex(x, spec: str = ",") -> str:
    """``x`` formatted with ``spec`` for LaTeX maths, its thousands grouped as ``{,}`` (a bare
    comma is punctuation in maths and gets a space after it): the worked solutions render their
    derivations with it, ``md(rf"$$ ... = {tex(n_tokens)} $$")``."""
    return format(x, spec).replace(",", "{,}")


def tex_sci(x: float, digits: int = 3) -> str:
    """``x`` in LaTeX scientific notation to ``digits`` significant digits: ``8 \\times 10^{9}``."""
    exponent = math.floor(math.log10(abs(x)))
    return rf"{x / 10 ** exponent:.{digits}g} \times 10^{{{exponent}}}"


def _renderer_class():
    from plotly.io._base_renderers import PlotlyRenderer

    class RoundedPlotlyRenderer(PlotlyRenderer):
        """plotly's mimetype renderer, with every float of the figure rounded (see
        ``companion.display``)."""

        def __init__(self, config=None, digits=SIGNIFICANT_DIGITS):
            super().__init__(config=config)
            self.digits = _digits(digits)

        def to_mimebundle(self, fig_dict):
            bundle = super().to_mimebundle(fig_dict)
            return {mime: _round(value, self.digits) if mime == PLOTLY_MIME else value
                    for mime, value in bundle.items()}

    return RoundedPlotlyRenderer


def notes_bundle(figure: dict) -> dict:
    """The display bundle that follows a figure (its rounded JSON dict): the text alternative
    and the "Show the numbers" tables of ``companion.describe``."""
    from companion import describe

    return {"text/html": describe.notes_html(figure),
            "text/plain": describe.text_alternative(figure)}


def _notes_renderer():
    from plotly.io._base_renderers import ExternalRenderer

    class FigureNotesRenderer(ExternalRenderer):
        """Displays, right after a figure, its words and numbers (``companion.describe``): the
        text alternative a screen reader reads and the "Show the numbers" tables."""

        def render(self, fig_dict):
            from IPython.display import display

            display(notes_bundle(round_figure_json(fig_dict)), raw=True)

    return FigureNotesRenderer()


def install() -> str:
    """Register the rounding renderers and put them in plotly's default renderer string in
    place of the plain mimetype renderers, followed by ``NOTES_RENDERER`` (a figure's text
    alternative and data tables, as an output of their own); returns the new default. Safe to
    call often."""
    import plotly.io as pio

    from plotly.io._base_renderers import PlotlyRenderer

    renderers = pio.renderers
    cls = None
    names = renderers.default.split("+") if renderers.default else []
    swapped = []
    for name in names:
        if name in _PLAIN_MIMETYPE_RENDERERS and type(renderers[name]) is PlotlyRenderer:
            rounded = RENDERER_PREFIX + name
            if rounded not in renderers:
                cls = cls or _renderer_class()
                renderers[rounded] = cls(config=renderers[name].config)
            name = rounded
        swapped.append(name)
    if any(name.startswith(RENDERER_PREFIX) for name in swapped) and NOTES_RENDERER not in swapped:
        if NOTES_RENDERER not in renderers:
            renderers[NOTES_RENDERER] = _notes_renderer()
        swapped.append(NOTES_RENDERER)
    if swapped != names:
        renderers.default = "+".join(swapped)
    return renderers.default
