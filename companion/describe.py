"""Words and numbers for every figure: a text alternative and a data table, generated from the
figure's own data.

A plotly figure is an SVG that a screen reader cannot read and a keyboard cannot explore. This
module turns a figure (plotly Figure, or its JSON dict, or an explorer's traces and layout)
into:

- ``text_alternative(fig)``: a paragraph a screen reader reads in the figure's place: the title,
  each axis with its title (units included, as the axis shows them), scale and range, and each
  series with the values a reader looks for: every point of a series with few points (the
  markers, a roof's corners, a ridge line), the ends and extremes of a long curve, the rows of
  a timeline, the range of a heatmap; then the labels written on the figure (a crossing, the
  ridge, an optimum, a deadline).
- ``data_table(fig)``: the same data as real HTML tables (one per plot of the figure), a long
  curve thinned to evenly spaced points that keep its ends and its extremes.
- ``notes_html(fig)``: what follows a figure on every surface: the text alternative (visually
  hidden, read by screen readers in reading order) and a "Show the numbers" disclosure holding
  the tables (for everyone).

Nothing is typed: every word comes from the figure's title, axis titles, trace names, text
labels and annotations, every number from its data. The numbers are shown to about four
significant digits after rounding to ``display.SIGNIFICANT_DIGITS``, so the text is the same
on every machine (nbval compares it as it compares the figure).

Companion figures reach a notebook through ``display.install()``'s renderers (a static
figure is followed by its notes) or through an explorer, whose readout carries the notes of
the figure it shows (``Panel.readout_html``), so they follow every control.
"""

from __future__ import annotations

import base64
import html
import math
import re

__all__ = ["text_alternative", "data_table", "notes_html", "SHOW_THE_NUMBERS", "MAX_ROWS"]

SHOW_THE_NUMBERS = "Show the numbers"
# rows per series in a data table, and points listed one by one in the text alternative; a
# series with more is thinned to evenly spaced points (its ends and extremes always kept)
MAX_ROWS = 12
LIST_POINTS = 6
# series described one by one; the rest are counted
MAX_SERIES = 14
MAX_LABELS = 10
# the notes carry their own few rules, so that they look the same wherever the output is shown
# (JupyterLab, the lite site, the book, a dashboard): the text alternative visually hidden but
# read by screen readers (the usual "sr-only" rules), the numbers right-aligned
NOTES_STYLE = (".companion-sr-only{position:absolute;width:1px;height:1px;padding:0;"
               "margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}"
               ".companion-figure-data th,.companion-figure-data td{white-space:normal}"
               ".companion-figure-data td{text-align:right}"
               ".companion-figure-data th[scope=row]{text-align:left;font-weight:normal}"
               ".companion-figure-data caption{text-align:left;caption-side:top}")

_TAG = re.compile(r"<[^>]+>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_FLOAT_DTYPES = {"f4": "<f4", "f8": "<f8", "i1": "<i1", "u1": "<u1", "i2": "<i2", "u2": "<u2",
                 "i4": "<i4", "u4": "<u4"}


# --- reading a figure ----------------------------------------------------------------------------

def _figure_dict(fig=None, *, data=None, layout=None) -> tuple[list, dict]:
    if fig is not None:
        if hasattr(fig, "to_plotly_json"):
            fig = fig.to_plotly_json()
        if not isinstance(fig, dict):
            raise TypeError(f"fig: expected a plotly Figure or a figure dict, got "
                            f"{type(fig).__name__}")
        data, layout = fig.get("data") or [], fig.get("layout") or {}
    return [_plain_trace(t) for t in (data or [])], dict(layout or {})


def _plain_trace(trace) -> dict:
    if hasattr(trace, "to_plotly_json"):
        trace = trace.to_plotly_json()
    return dict(trace)


def _values(value) -> list:
    """A trace's array (list, tuple, numpy array or plotly typed array) as a Python list."""
    if value is None:
        return []
    if isinstance(value, dict) and "bdata" in value:
        import numpy as np

        array = np.frombuffer(base64.b64decode(value["bdata"]),
                              dtype=_FLOAT_DTYPES.get(value.get("dtype"), "<f8"))
        shape = value.get("shape")
        if shape:
            dims = [int(n) for n in str(shape).split(",")]
            array = array.reshape(dims)
        return array.tolist()
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _text(value) -> str:
    """Plain words from a title, name or label (plotly's HTML and entities removed)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("text", "")
    value = _BREAK.sub(" ", str(value))
    return _SPACES.sub(" ", html.unescape(_TAG.sub("", value))).strip()


def _number(x) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x) if math.isfinite(x) else None
    return None


def fmt(x) -> str:
    """A value as the text shows it: about four significant digits, thousands grouped."""
    number = _number(x)
    if number is None:
        return _text(x) if x is not None else "none"
    number = float(format(number, ".6g"))       # display.SIGNIFICANT_DIGITS: machine-independent
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    if abs(number) >= 1000:
        return f"{number:,.0f}"
    if abs(number) >= 0.001:
        return f"{number:.4g}"
    return f"{number:.3g}"


# --- axes and plots ------------------------------------------------------------------------------

def _axis_key(ref: str | None, letter: str) -> str:
    """'x2' -> 'xaxis2'; None or 'x' -> 'xaxis'."""
    ref = ref or letter
    return f"{letter}axis{ref[1:]}"


def _axis_title(layout: dict, key: str) -> str:
    axis = layout.get(key) or {}
    title = _text(axis.get("title"))
    if not title and isinstance(axis.get("matches"), str):
        return _axis_title(layout, _axis_key(axis["matches"], key[0]))
    return title


def _tick_names(layout: dict, key: str) -> dict:
    """An axis that codes its values (rows of a timeline, named settings) shows words at its
    ticks: value -> that word, used in place of the number. Numeric tick labels ("1k") are not
    names."""
    axis = layout.get(key) or {}
    vals, texts = _values(axis.get("tickvals")), _values(axis.get("ticktext"))
    if len(vals) != len(texts) or not any(
            isinstance(t, str) and len(re.findall(r"[A-Za-z]", _text(t))) >= 2 for t in texts):
        return {}
    return {_number(v): _text(t) for v, t in zip(vals, texts) if _number(v) is not None}


def _named(value, names: dict) -> str:
    number = _number(value)
    if names and number is not None and number in names:
        return names[number]
    return fmt(value)


def _axis_range(layout: dict, key: str, traces: list, letter: str) -> tuple | None:
    axis = layout.get(key) or {}
    log = axis.get("type") == "log"
    shown = axis.get("range")
    if isinstance(shown, (list, tuple)) and len(shown) == 2 and all(
            _number(v) is not None for v in shown):
        lo, hi = (10 ** shown[0], 10 ** shown[1]) if log else (shown[0], shown[1])
        return min(lo, hi), max(lo, hi)
    numbers = []
    for trace in traces:
        numbers += [v for v in (_number(x) for x in _coordinates(trace, letter))
                    if v is not None and (v > 0 or not log)]
    if not numbers:
        return None
    return min(numbers), max(numbers)


def _categories(traces: list, letter: str) -> list:
    seen = []
    for trace in traces:
        for x in _coordinates(trace, letter):
            if isinstance(x, str) and x not in seen:
                seen.append(x)
    return seen


def _coordinates(trace: dict, letter: str) -> list:
    values = _values(trace.get(letter))
    if trace.get("type") == "bar" and trace.get("orientation") == "h" and letter == "x":
        base = _values(trace.get("base"))
        if base:
            return base + [_plus(b, v) for b, v in zip(base, values)]
    return values


def _plus(a, b):
    a, b = _number(a), _number(b)
    return None if a is None or b is None else a + b


def _axis_sentence(layout: dict, key: str, traces: list, name: str) -> str:
    letter = key[0]
    axis = layout.get(key) or {}
    title = _axis_title(layout, key) or "untitled"
    words = f"{name}: {title}"
    categories = _categories(traces, letter)
    if categories or axis.get("type") == "category":
        shown = ", ".join(_text(c) for c in categories[:8])
        more = f" and {len(categories) - 8} more" if len(categories) > 8 else ""
        return f"{words}, categories {shown}{more}" if categories else words
    names = _tick_names(layout, key)
    if names:
        return f"{words}, marked {', '.join(names.values())}"
    extent = _axis_range(layout, key, traces, letter)
    scale = ", logarithmic" if axis.get("type") == "log" else ""
    if extent is None:
        return words + scale
    return f"{words}{scale}, from {fmt(extent[0])} to {fmt(extent[1])}"


def _plots(traces: list, layout: dict) -> list[tuple[str, str, list]]:
    """(x axis key, y axis key, visible traces) per plot of the figure, in trace order."""
    plots: dict[tuple[str, str], list] = {}
    for trace in traces:
        if trace.get("visible") is False or not _has_data(trace):
            continue
        key = (_axis_key(trace.get("xaxis"), "x"), _axis_key(trace.get("yaxis"), "y"))
        plots.setdefault(key, []).append(trace)
    return [(x, y, ts) for (x, y), ts in plots.items()]


def _has_data(trace: dict) -> bool:
    kind = trace_kind(trace)
    if kind == "heatmap":
        return bool(_values(trace.get("z")))
    if kind == "timeline":
        return bool(_values(trace.get("x")))
    return bool(_pairs(trace))


def _plot_titles(plots: list, layout: dict) -> tuple[dict, list]:
    """Subplot titles (make_subplots writes them as paper-anchored annotations just above a
    plot's domain), and every other annotation's text."""
    titles: dict[tuple, str] = {}
    others = []
    for note in layout.get("annotations") or []:
        text = _text(note.get("text"))
        if not text:
            continue
        match = None
        if len(plots) > 1 and note.get("xref") == "paper" and note.get("yref") == "paper":
            for x, y, _ in plots:
                x_dom = (layout.get(x) or {}).get("domain") or [0, 1]
                y_dom = (layout.get(y) or {}).get("domain") or [0, 1]
                nx, ny = _number(note.get("x")), _number(note.get("y"))
                if nx is not None and ny is not None and x_dom[0] - 1e-6 <= nx <= x_dom[1] + 1e-6 \
                        and 0 <= ny - y_dom[1] <= 0.08 and (x, y) not in titles:
                    match = (x, y)
                    break
        if match:
            titles[match] = text
        else:
            others.append(text)
    return titles, others


# --- series --------------------------------------------------------------------------------------

def trace_kind(trace: dict) -> str:
    kind = trace.get("type") or "scatter"
    if kind == "bar":
        return "timeline" if trace.get("orientation") == "h" else "bar"
    if kind == "heatmap":
        return "heatmap"
    mode = trace.get("mode") or "lines+markers"
    if "lines" in mode:
        return "line"
    if "markers" in mode:
        return "points"
    return "labels"


def _position(traces: list, trace: dict) -> int:
    """Where ``trace`` is in ``traces`` (by identity: traces may hold numpy arrays)."""
    return next(i for i, t in enumerate(traces) if t is trace)


def _series_name(trace: dict, index: int) -> str:
    return _text(trace.get("name")) or f"series {index + 1}"


def _pairs(trace: dict) -> list[tuple]:
    xs, ys = _values(trace.get("x")), _values(trace.get("y"))
    if not xs:
        xs = list(range(len(ys)))
    if not ys:
        ys = list(range(len(xs)))
    return [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]


def _keep(pairs: list, limit: int, value_index: int = 1) -> list[int]:
    """Indices of at most ``limit`` evenly spaced points, the ends and the extremes included."""
    n = len(pairs)
    if n <= limit:
        return list(range(n))
    numbers = [(_number(p[value_index]), i) for i, p in enumerate(pairs)]
    numbers = [(v, i) for v, i in numbers if v is not None]
    keep = {0, n - 1}
    if numbers:
        keep |= {min(numbers)[1], max(numbers)[1]}
    spaced = limit - len(keep)
    for k in range(max(spaced, 0)):
        keep.add(round((k + 1) * (n - 1) / (spaced + 1)))
    return sorted(keep)


def _point(x, y, xn: dict, yn: dict) -> str:
    return f"({_named(x, xn)}, {_named(y, yn)})"


def _series_sentence(trace: dict, index: int, xn: dict, yn: dict) -> str:
    name = _series_name(trace, index)
    kind = trace_kind(trace)
    hidden = " (hidden until chosen in the legend)" if trace.get("visible") == "legendonly" else ""
    if kind == "heatmap":
        z = _values(trace.get("z"))
        flat = [v for row in z for v in (row if isinstance(row, list) else [row])
                if _number(v) is not None]
        rows, cols = len(z), max((len(r) for r in z if isinstance(r, list)), default=1)
        if not flat:
            return f"{name}: a heatmap of {rows} by {cols} cells{hidden}"
        return (f"{name}: a heatmap of {rows} by {cols} cells, values from {fmt(min(flat))} "
                f"to {fmt(max(flat))}{hidden}")
    if kind == "timeline":
        ys, lengths, bases = (_values(trace.get("y")), _values(trace.get("x")),
                              _values(trace.get("base")))
        bars = [(y, b if b is not None else 0, _plus(b if b is not None else 0, v))
                for y, v, b in zip(ys, lengths, bases or [0] * len(lengths))]
        if not bars:
            return f"{name}: no bars{hidden}"
        shown = "; ".join(f"{_named(y, yn) if not isinstance(y, str) else _text(y)} from {fmt(s)} to {fmt(e)}" for y, s, e in bars[:LIST_POINTS])
        more = f"; and {len(bars) - LIST_POINTS} more" if len(bars) > LIST_POINTS else ""
        return f"{name}: {len(bars)} bar{'s' * (len(bars) != 1)}: {shown}{more}{hidden}"
    pairs = _pairs(trace)
    if kind == "labels":
        labels = [_text(t) for t in _values(trace.get("text")) if _text(t)]
        return f"{name}: labels {', '.join(labels[:LIST_POINTS])}{hidden}" if labels else ""
    if kind == "bar":
        shown = "; ".join(f"{_named(x, xn)}: {_named(y, yn)}" for x, y in pairs[:MAX_ROWS])
        more = f"; and {len(pairs) - MAX_ROWS} more" if len(pairs) > MAX_ROWS else ""
        return f"{name}: bars {shown}{more}{hidden}"
    what = "a line" if kind == "line" else ("a point" if len(pairs) == 1 else "points")
    if len(pairs) <= LIST_POINTS:
        points = ", ".join(_point(x, y, xn, yn) for x, y in pairs)
        through = " at " if what == "a point" else (" through " if kind == "line" else " at ")
        return f"{name}: {what}{through}{points}{hidden}"
    first, last = pairs[0], pairs[-1]
    words = f"{name}: {what}, {len(pairs)} points from {_point(*first, xn, yn)} to {_point(*last, xn, yn)}"
    numbers = [(_number(y), i) for i, (_, y) in enumerate(pairs) if _number(y) is not None]
    if numbers:
        (lo, i_lo), (hi, i_hi) = min(numbers), max(numbers)
        if i_hi not in (0, len(pairs) - 1):
            words += f", highest {fmt(hi)} at {_named(pairs[i_hi][0], xn)}"
        if i_lo not in (0, len(pairs) - 1):
            words += f", lowest {fmt(lo)} at {_named(pairs[i_lo][0], xn)}"
    return words + hidden


def _lines(layout: dict) -> list[str]:
    """Reference lines drawn as shapes (a deadline, a budget, a ridge)."""
    out = []
    for shape in layout.get("shapes") or []:
        if shape.get("type", "line") != "line":
            continue
        x0, x1, y0, y1 = (shape.get(k) for k in ("x0", "x1", "y0", "y1"))
        if shape.get("xref", "x") != "paper" and x0 == x1 and _number(x0) is not None:
            out.append(f"a vertical line at {fmt(x0)}")
        elif shape.get("yref", "y") != "paper" and y0 == y1 and _number(y0) is not None:
            out.append(f"a horizontal line at {fmt(y0)}")
    return out


# --- public --------------------------------------------------------------------------------------

def text_alternative(fig=None, *, data=None, layout=None) -> str:
    """One paragraph that says what the figure shows: its title, axes (titles, scales, ranges)
    and series (their key values), and the labels written on it."""
    traces, layout = _figure_dict(fig, data=data, layout=layout)
    title = _text(layout.get("title"))
    plots = _plots(traces, layout)
    titles, labels = _plot_titles(plots, layout)
    sentences = [f"Figure: {title}." if title else "Figure."]
    if not plots:
        sentences.append("It shows no data.")
    count = 0
    for number, (x, y, plot_traces) in enumerate(plots):
        head = ""
        if len(plots) > 1:
            head = f"Plot {number + 1} of {len(plots)}"
            head += f", {titles[(x, y)]}. " if (x, y) in titles else ". "
        axes = [
            _axis_sentence(layout, x, plot_traces, "Horizontal axis"),
            _axis_sentence(layout, y, plot_traces, "Vertical axis")]
        series = []
        x_names, y_names = _tick_names(layout, x), _tick_names(layout, y)
        for trace in plot_traces:
            count += 1
            if count > MAX_SERIES:
                continue
            sentence = _series_sentence(trace, _position(traces, trace), x_names, y_names)
            if sentence:
                series.append(sentence)
        body = ". ".join(axes) + "."
        if series:
            body += f" {len(plot_traces)} series. " + ". ".join(series) + "."
        sentences.append(head + body)
    if count > MAX_SERIES:
        sentences.append(f"And {count - MAX_SERIES} more series, listed in the numbers.")
    lines = _lines(layout)
    if lines:
        sentences.append("Reference lines: " + ", ".join(lines) + ".")
    if labels:
        shown = "; ".join(labels[:MAX_LABELS])
        sentences.append(f"Labels on the figure: {shown}.")
    return " ".join(sentences)


def _cell(value, header: bool = False, scope: str = "") -> str:
    tag = "th" if header else "td"
    text = html.escape(fmt(value) if not isinstance(value, str) else _text(value))
    scope_attr = f' scope="{scope}"' if scope else ""
    return f"<{tag}{scope_attr}>{text}</{tag}>"


def _table(caption: str, header: list[str], rows: list[list], note: str = "") -> str:
    head = "".join(_cell(h, header=True, scope="col") for h in header)
    body = "".join("<tr>" + _cell(r[0], header=True, scope="row")
                   + "".join(_cell(v) for v in r[1:]) + "</tr>" for r in rows)
    foot = f"<p>{html.escape(note)}</p>" if note else ""
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{foot}")


def data_table(fig=None, *, data=None, layout=None) -> str:
    """The figure's data as HTML tables, one per plot (a heatmap gets its own grid)."""
    traces, layout = _figure_dict(fig, data=data, layout=layout)
    title = _text(layout.get("title")) or "the figure"
    plots = _plots(traces, layout)
    titles, _ = _plot_titles(plots, layout)
    tables = []
    for number, (x, y, plot_traces) in enumerate(plots):
        caption = f"The numbers of {title}"
        if len(plots) > 1:
            caption += f", plot {number + 1}" + (f" ({titles[(x, y)]})" if (x, y) in titles else "")
        x_title = _axis_title(layout, x) or "horizontal axis"
        y_title = _axis_title(layout, y) or "vertical axis"
        rows, timeline, thinned = [], [], []
        xn, yn = _tick_names(layout, x), _tick_names(layout, y)
        for trace in plot_traces:
            name = _series_name(trace, _position(traces, trace))
            kind = trace_kind(trace)
            if kind == "heatmap":
                tables.append(_heatmap_table(trace, f"{caption}: {name}", x_title, y_title))
                continue
            if kind == "labels":
                continue
            if kind == "timeline":
                ys, lengths = _values(trace.get("y")), _values(trace.get("x"))
                bases = _values(trace.get("base")) or [0] * len(lengths)
                bars = list(zip(ys, lengths, bases))
                keep = _keep([(i, _plus(b, v)) for i, (_, v, b) in enumerate(bars)], MAX_ROWS)
                if len(keep) < len(bars):
                    thinned.append(f"{name}: {len(keep)} of {len(bars)} bars")
                for row, length, base in (bars[i] for i in keep):
                    timeline.append([name, _named(row, yn) if not isinstance(row, str) else row,
                                     base, _plus(base, length)])
                continue
            pairs = _pairs(trace)
            keep = _keep(pairs, MAX_ROWS)
            if len(keep) < len(pairs):
                thinned.append(f"{name}: {len(keep)} of {len(pairs)} points")
            rows += [[name, _named(pairs[i][0], xn) if xn else pairs[i][0],
                      _named(pairs[i][1], yn) if yn else pairs[i][1]] for i in keep]
        note = ("Long series are thinned to evenly spaced entries that keep their ends and "
                "extremes (" + "; ".join(thinned) + ").") if thinned else ""
        if rows:
            tables.append(_table(caption, ["series", x_title, y_title], rows,
                                 "" if timeline else note))
        if timeline:
            tables.append(_table(caption, ["series", y_title, f"start ({x_title})",
                                           f"end ({x_title})"], timeline, note))
    return "".join(tables)


def _heatmap_table(trace: dict, caption: str, x_title: str, y_title: str) -> str:
    z = [row if isinstance(row, list) else [row] for row in _values(trace.get("z"))]
    xs = _values(trace.get("x")) or list(range(max((len(r) for r in z), default=0)))
    ys = _values(trace.get("y")) or list(range(len(z)))
    cols = _keep([(x, 0) for x in xs], MAX_ROWS, 0)
    rows = _keep([(y, 0) for y in ys], MAX_ROWS, 0)
    header = [f"{y_title} \\ {x_title}"] + [xs[c] for c in cols]
    body = [[ys[r]] + [z[r][c] if c < len(z[r]) else None for c in cols] for r in rows]
    note = ""
    if len(cols) < len(xs) or len(rows) < len(ys):
        note = (f"Thinned to {len(rows)} of {len(ys)} rows and {len(cols)} of {len(xs)} "
                "columns, evenly spaced.")
    return _table(caption, header, body, note)


def notes_html(fig=None, *, data=None, layout=None) -> str:
    """The text alternative (visually hidden) and the "Show the numbers" tables, as one block
    of HTML that follows the figure."""
    traces, layout = _figure_dict(fig, data=data, layout=layout)
    alternative = html.escape(text_alternative(data=traces, layout=layout))
    tables = data_table(data=traces, layout=layout)
    numbers = (f'<details class="companion-figure-data"><summary>{SHOW_THE_NUMBERS}</summary>'
               f"{tables}</details>") if tables else ""
    return (f'<div class="companion-figure-notes"><style>{NOTES_STYLE}</style>'
            f'<p class="companion-sr-only">{alternative}</p>{numbers}</div>')
