"""A PNG of a plotly figure, drawn with matplotlib, for readers whose viewer runs no JavaScript.

GitHub's notebook view and a printed page cannot run plotly.js, and JupyterLab ignores a PNG
when the plotly mimetype sits beside it. So the stored outputs carry both: plotly JSON for
JupyterLab and the book, and this rendering as ``image/png`` for everything else.

It draws what the companion's figures use: scatter traces (lines, steps, markers, text,
fills), bars (vertical and horizontal, with bases, stacked, grouped or overlaid), heatmaps,
subplot domains, log axes, shapes, annotations and the legend. Hover text, animation and
styling details that plotly alone knows are left out: the picture is a faithful static
summary, not a pixel copy. Small on purpose: 90 dpi and a 64-colour palette (10-40 KB).

``renderer_name`` is a plotly renderer that adds this PNG to ``plotly_mimetype``'s output;
``use_in_notebooks()`` makes it the default where plotly's default is ``plotly_mimetype``
(what a Jupyter kernel gets), only while ``COMPANION_STATIC_OUTPUTS=1`` (``make execute``).
"""

from __future__ import annotations

import base64
import io
import math
import os
import re

__all__ = ["figure_png", "png_bundle", "use_in_notebooks", "static_outputs_enabled",
           "STATIC_OUTPUTS_ENV", "decoded"]

STATIC_OUTPUTS_ENV = "COMPANION_STATIC_OUTPUTS"
RENDERER_NAME = "companion_png"
DPI = 90
WIDTH_PX = 760
COLOURS = 64
_PLOTLY_COLORWAY = ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3",
                    "#FF6692", "#B6E880", "#FF97FF", "#FECB52"]
_DASHES = {"dash": "--", "dot": ":", "dashdot": "-.", "longdash": "--", "longdashdot": "-."}
_MARKERS = {"circle": "o", "square": "s", "diamond": "D", "triangle-up": "^",
            "triangle-down": "v", "triangle-left": "<", "triangle-right": ">", "x": "x",
            "cross": "P", "star": "*", "hexagon": "h", "pentagon": "p", "circle-open": "o",
            "square-open": "s", "diamond-open": "D", "line-ns": "|", "line-ew": "_"}
_TAG = re.compile(r"<[^>]+>")
_RGB = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)")


def static_outputs_enabled() -> bool:
    """Whether outputs for readers without a kernel are being written (``make execute``)."""
    return os.environ.get(STATIC_OUTPUTS_ENV) == "1"


def _text(html) -> str:
    """Plotly's HTML-ish text -> plain text (``<br>`` -> newline, tags dropped)."""
    if html is None:
        return ""
    s = re.sub(r"<br\s*/?>", "\n", str(html), flags=re.I)
    return _TAG.sub("", s).replace("&nbsp;", " ").replace("&amp;", "&")


def _colour(c, default=None):
    """A plotly colour string -> something matplotlib understands."""
    if c is None or isinstance(c, (list, tuple)):
        return default
    if isinstance(c, str):
        m = _RGB.fullmatch(c.strip())
        if m:
            r, g, b = (float(m.group(i)) / 255 for i in (1, 2, 3))
            a = float(m.group(4)) if m.group(4) is not None else 1.0
            return (r, g, b, a)
        return c.strip()
    return default


def _colours(c, n, default):
    if isinstance(c, (list, tuple)):
        return [_colour(x, default) for x in c]
    return [_colour(c, default)] * n


def decoded(values):
    """Plotly's typed-array JSON (``{"dtype": "f8", "bdata": base64, "shape": "r, c"}``, what
    it writes for numpy arrays) -> nested lists; anything else unchanged."""
    if isinstance(values, dict) and "bdata" in values and "dtype" in values:
        import numpy as np

        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        if values.get("shape"):
            array = array.reshape([int(n) for n in str(values["shape"]).split(",")])
        return array.tolist()
    return values


def _scaled_colours(container, layout, n, default):
    """``container["color"]`` (marker or marker line) as n colours: strings as they are,
    numbers through its colorscale (its own or its coloraxis's), stop by stop."""
    c = decoded((container or {}).get("color"))
    if not isinstance(c, list) or not c or isinstance(c[0], str) or c[0] is None:
        return _colours(c, n, default)
    scale_spec = layout.get(container.get("coloraxis") or "", {}) or container
    scale = scale_spec.get("colorscale")
    if not isinstance(scale, list):
        return [default] * len(c)
    lo = scale_spec.get("cmin", min(c))
    hi = scale_spec.get("cmax", max(c))
    out = []
    for v in c:
        t = 0.0 if hi == lo else (v - lo) / (hi - lo)
        colour = scale[0][1]
        for stop, stop_colour in scale:
            if stop <= t:
                colour = stop_colour
        out.append(_colour(colour, default))
    return out


def _numbers(values):
    """Plotly data values -> floats (None -> NaN); categories stay strings."""
    out = []
    for v in decoded(values) or []:
        if v is None:
            out.append(math.nan)
        elif isinstance(v, (int, float)):
            out.append(float(v))
        else:
            out.append(v)
    return out


def _axis_key(ref: str, letter: str) -> str:
    """Trace axis reference ("x", "x2") -> layout key ("xaxis", "xaxis2")."""
    ref = ref or letter
    return f"{letter}axis{ref[1:]}"


def figure_png(fig) -> bytes:
    """PNG bytes of a plotly figure (a ``go.Figure`` or its dict), drawn with matplotlib."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib import transforms
    from PIL import Image

    spec = fig if isinstance(fig, dict) else fig.to_plotly_json()
    layout = dict(spec.get("layout") or {})
    template = (layout.get("template") or {}).get("layout", {}) \
        if isinstance(layout.get("template"), dict) else {}
    colorway = layout.get("colorway") or template.get("colorway") or _PLOTLY_COLORWAY
    height_px = layout.get("height") or 450
    margin = {"l": 80, "r": 80, "t": 100, "b": 80}
    margin.update(layout.get("margin") or {})
    width_px = WIDTH_PX
    traces = [t for t in spec.get("data") or [] if t.get("visible", True) is True]
    # plotly widens the left margin to fit category labels (automargin); do the same
    labels = [v for t in traces if t.get("type") == "bar" and t.get("orientation") == "h"
              for v in (t.get("y") or []) if isinstance(v, str)]
    if labels:
        margin["l"] = min(max(margin["l"], 6 * max(len(v) for v in labels) + 24),
                          0.35 * width_px)

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "font.family": "DejaVu Sans",
                         "svg.hashsalt": "companion"})
    figure = plt.figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI)
    left, right = margin["l"] / width_px, 1 - margin["r"] / width_px
    bottom, top = margin["b"] / height_px, 1 - margin["t"] / height_px
    right = max(right, left + 0.3)
    top = max(top, bottom + 0.3)

    # one matplotlib Axes per (x axis, y axis) pair the traces use, placed at their domains
    pairs = []
    for t in traces:
        pair = (_axis_key(t.get("xaxis"), "x"), _axis_key(t.get("yaxis"), "y"))
        if pair not in pairs:
            pairs.append(pair)
    if not pairs:
        pairs = [("xaxis", "yaxis")]
    axes = {}
    pairs.sort(key=lambda pair: bool((layout.get(pair[1]) or {}).get("overlaying")))
    for xk, yk in pairs:
        over = (layout.get(yk) or {}).get("overlaying")
        if over and (xk, _axis_key(over, "y")) in axes:
            twin = axes[(xk, _axis_key(over, "y"))].twinx()
            twin.grid(False)
            axes[(xk, yk)] = twin
            continue
        xd = (layout.get(xk) or {}).get("domain") or [0, 1]
        yd = (layout.get(yk) or {}).get("domain") or [0, 1]
        box = [left + xd[0] * (right - left), bottom + yd[0] * (top - bottom),
               (xd[1] - xd[0]) * (right - left), (yd[1] - yd[0]) * (top - bottom)]
        axes[(xk, yk)] = figure.add_axes(box)
    main = axes[pairs[0]]

    def ax_for(t):
        return axes[(_axis_key(t.get("xaxis"), "x"), _axis_key(t.get("yaxis"), "y"))]

    barmode = layout.get("barmode", "group")
    stacks: dict = {}
    bar_traces = [t for t in traces if t.get("type") == "bar"]
    categories: dict = {}

    def positions(ax, values):
        """Categorical values -> integer positions per axes (plotly keeps first-seen order)."""
        if not values or all(isinstance(v, float) for v in values):
            return values
        cats = categories.setdefault(id(ax), {})
        return [cats.setdefault(v, len(cats)) if not isinstance(v, float) else v
                for v in values]

    for index, t in enumerate(traces):
        ax = ax_for(t)
        kind = t.get("type", "scatter")
        default = colorway[index % len(colorway)]
        name = t.get("name")
        label = name if (name and t.get("showlegend", True) is not False) else None
        if kind in ("scatter", "scattergl"):
            x, y = _numbers(t.get("x")), _numbers(t.get("y"))
            if not y:
                continue
            if not x:
                x = list(range(len(y)))
            x, y = positions(ax, x), positions(ax, y)
            mode = t.get("mode", "lines+markers" if len(y) < 20 else "lines")
            line = t.get("line") or {}
            marker = t.get("marker") or {}
            colour = _colour(line.get("color"), None) or _colour(marker.get("color"), default)
            fill = t.get("fill")
            if fill in ("tozeroy", "tonexty", "toself", "tozerox"):
                fc = _colour(t.get("fillcolor"), None) or colour
                alpha = None if isinstance(fc, tuple) else 0.3
                if fill == "toself":
                    ax.fill(x, y, color=fc, alpha=alpha, linewidth=0)
                elif fill == "tonexty" and index > 0 and len(_numbers(traces[index - 1].get("y"))) == len(y):
                    ax.fill_between(x, _numbers(traces[index - 1].get("y")), y, color=fc,
                                    alpha=alpha, linewidth=0)
                else:
                    ax.fill_between(x, y, 0, color=fc, alpha=alpha, linewidth=0)
            if "lines" in mode:
                shape = line.get("shape")
                ax.plot(x, y, color=colour, linewidth=line.get("width", 2) * 0.75,
                        linestyle=_DASHES.get(line.get("dash"), "-"),
                        drawstyle={"hv": "steps-post", "vh": "steps-pre",
                                   "hvh": "steps-mid"}.get(shape, "default"),
                        label=label)
                label = None
            if "markers" in mode:
                size = marker.get("size", 6)
                size = decoded(size)
                # plotly sizes are diameters in px; matplotlib wants points squared
                sizes = [((s if isinstance(s, (int, float)) else 6) * 0.6) ** 2
                         for s in (size if isinstance(size, list) else [size] * len(y))]
                symbol = marker.get("symbol", "circle")
                ax.scatter(x, y, s=sizes, c=_scaled_colours(marker, layout, len(y), colour),
                           marker=_MARKERS.get(symbol if isinstance(symbol, str) else "circle",
                                               "o"),
                           zorder=3, label=label, linewidths=0)
                label = None
            if "text" in mode and t.get("text") is not None:
                texts = t["text"] if isinstance(t["text"], list) else [t["text"]] * len(y)
                pos = t.get("textposition", "middle center")
                pos = pos if isinstance(pos, str) else "middle center"
                va = {"top": "bottom", "bottom": "top"}.get(pos.split()[0], "center")
                ha = {"left": "right", "right": "left"}.get(pos.split()[-1], "center")
                for xi, yi, s in zip(x, y, texts):
                    if s and not (isinstance(yi, float) and math.isnan(yi)):
                        ax.annotate(_text(s), (xi, yi), ha=ha, va=va, fontsize=7,
                                    color=_colour((t.get("textfont") or {}).get("color"),
                                                  "#333333"),
                                    xytext=({"left": 3, "right": -3}.get(ha, 0),
                                            {"bottom": 3, "top": -3}.get(va, 0)),
                                    textcoords="offset points")
        elif kind == "bar":
            horizontal = t.get("orientation") == "h"
            pos_key, len_key = ("y", "x") if horizontal else ("x", "y")
            lengths = _numbers(t.get(len_key))
            pos = _numbers(t.get(pos_key)) or list(range(len(lengths)))
            pos = positions(ax, pos)
            lengths = [0.0 if isinstance(v, str) else v for v in lengths]
            base = decoded(t.get("base"))
            bases = _numbers(base) if isinstance(base, list) else [base or 0.0] * len(lengths)
            width = decoded(t.get("width", 0.8))
            widths = width if isinstance(width, list) else [width] * len(lengths)
            if barmode == "group" and len(bar_traces) > 1 and "width" not in t:
                k, n = bar_traces.index(t), len(bar_traces)
                widths = [0.8 / n] * len(lengths)
                pos = [p + (k - (n - 1) / 2) * 0.8 / n if not isinstance(p, str) else p
                       for p in pos]
            if barmode in ("stack", "relative") and base is None:
                key = id(ax)
                acc = stacks.setdefault(key, {})
                bases = [acc.get(p, 0.0) for p in pos]
                for p, v in zip(pos, lengths):
                    acc[p] = acc.get(p, 0.0) + (v if not math.isnan(v) else 0.0)
            marker = t.get("marker") or {}
            colours = _scaled_colours(marker, layout, len(lengths), default)
            edge = _scaled_colours(marker.get("line") or {}, layout, len(lengths), None)
            edge = edge if any(e is not None for e in edge) else None
            draw = ax.barh if horizontal else ax.bar
            kw = {"height" if horizontal else "width": widths,
                  "left" if horizontal else "bottom": bases}
            opacity = t.get("opacity", marker.get("opacity"))
            draw(pos, lengths, color=colours, edgecolor=edge, linewidth=0.5 if edge else 0,
                 alpha=opacity if isinstance(opacity, (int, float)) else None, label=label, **kw)
            texts = t.get("text")
            if isinstance(texts, list) and len(texts) == len(lengths) and len(lengths) <= 60:
                for p, v, b, s in zip(pos, lengths, bases, texts):
                    if not s or isinstance(v, str) or math.isnan(v):
                        continue
                    inside = t.get("textposition") in ("inside", "auto", None)
                    end = (b or 0) + (v / 2 if inside else v)
                    xy = (end, p) if horizontal else (p, end)
                    ax.annotate(_text(s), xy, fontsize=6.5,
                                ha="center" if inside or not horizontal else "left",
                                va="center" if inside or horizontal else "bottom")
        elif kind == "heatmap":
            z = decoded(t.get("z")) or []
            if not z:
                continue
            x = _numbers(t.get("x")) or list(range(len(z[0])))
            y = _numbers(t.get("y")) or list(range(len(z)))
            ax.pcolormesh(positions(ax, list(x)), positions(ax, list(y)),
                          [[math.nan if v is None else v for v in row] for row in z],
                          shading="nearest", cmap="viridis")

    for (xk, yk), ax in axes.items():
        for key, set_label, set_scale, set_lim, invert in (
                (xk, ax.set_xlabel, ax.set_xscale, ax.set_xlim, ax.invert_xaxis),
                (yk, ax.set_ylabel, ax.set_yscale, ax.set_ylim, ax.invert_yaxis)):
            spec_axis = layout.get(key) or {}
            title = spec_axis.get("title")
            title = title.get("text") if isinstance(title, dict) else title
            if title:
                set_label(_text(title))
            log = spec_axis.get("type") == "log"
            if log:
                set_scale("log")
            rng = spec_axis.get("range")
            if isinstance(rng, list) and len(rng) == 2 and None not in rng and \
                    all(isinstance(v, (int, float)) for v in rng):
                set_lim(*(10 ** v for v in rng) if log else rng)
            if spec_axis.get("autorange") == "reversed":
                invert()
            if spec_axis.get("visible") is False or spec_axis.get("showticklabels") is False:
                (ax.xaxis if key == xk else ax.yaxis).set_ticklabels([])
        cats = categories.get(id(ax))
        if cats:
            horizontal_cats = any(isinstance(v, str) for t in traces if ax_for(t) is ax
                                  for v in (t.get("y") or []))
            ticks = list(cats.values()), [_text(c) for c in cats]
            if horizontal_cats:
                ax.set_yticks(*ticks)
            else:
                ax.set_xticks(*ticks)
        twin = bool((layout.get(yk) or {}).get("overlaying"))
        if not twin:
            ax.grid(True, color="#e5e5e5", linewidth=0.6)
            ax.set_axisbelow(True)
        for side in ("top",) if twin else ("top", "right"):
            ax.spines[side].set_visible(False)

    def ref_transform(xref, yref, ax):
        x_paper = (xref or "x").startswith("paper") or (xref or "").endswith("domain")
        y_paper = (yref or "y").startswith("paper") or (yref or "").endswith("domain")
        if x_paper and y_paper:
            return ax.transAxes
        if x_paper:
            return ax.get_yaxis_transform()
        if y_paper:
            return ax.get_xaxis_transform()
        return ax.transData

    def axes_of_ref(xref, yref):
        for (xk, yk), ax in axes.items():
            xr = (xref or "x").split()[0]
            yr = (yref or "y").split()[0]
            if (xr == "paper" or _axis_key(xr, "x") == xk) and \
                    (yr == "paper" or _axis_key(yr, "y") == yk):
                return ax
        return main

    for shape in layout.get("shapes") or []:
        ax = axes_of_ref(shape.get("xref"), shape.get("yref"))
        tr = ref_transform(shape.get("xref"), shape.get("yref"), ax)
        line = shape.get("line") or {}
        colour = _colour(line.get("color"), "#444444")
        x0, x1, y0, y1 = (shape.get(k) for k in ("x0", "x1", "y0", "y1"))
        if None in (x0, x1, y0, y1) or any(isinstance(v, str) for v in (x0, x1, y0, y1)):
            continue
        if shape.get("type") == "rect":
            from matplotlib.patches import Rectangle

            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, transform=tr,
                                   facecolor=_colour(shape.get("fillcolor"), "none"),
                                   alpha=shape.get("opacity", 1), edgecolor=colour,
                                   linewidth=line.get("width", 1) * 0.75, zorder=0.5))
        elif shape.get("type", "line") == "line":
            ax.plot([x0, x1], [y0, y1], transform=tr, color=colour,
                    linewidth=line.get("width", 1) * 0.75,
                    linestyle=_DASHES.get(line.get("dash"), "-"))

    for note in layout.get("annotations") or []:
        ax = axes_of_ref(note.get("xref"), note.get("yref"))
        tr = ref_transform(note.get("xref"), note.get("yref"), ax)
        x, y = note.get("x", 0.5), note.get("y", 0.5)
        if isinstance(x, str) or isinstance(y, str) or x is None or y is None:
            continue
        font = note.get("font") or {}
        ax.annotate(_text(note.get("text")), (x, y), xycoords=tr, fontsize=7,
                    ha={"left": "left", "right": "right"}.get(note.get("xanchor"), "center"),
                    va={"top": "top", "bottom": "bottom"}.get(note.get("yanchor"), "center"),
                    color=_colour(font.get("color"), "#333333"), annotation_clip=False)

    handles, labels = [], []
    for ax in axes.values():
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    if handles and layout.get("showlegend", True) is not False:
        figure.legend(handles, [_text(s) for s in labels], loc="lower center",
                      ncol=min(4, len(labels)), fontsize=7, frameon=False,
                      bbox_to_anchor=(0.5, 0.0))
    title = layout.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    if title:
        figure.suptitle(_text(title), fontsize=9.5, x=left, ha="left",
                        y=1 - 12 / height_px, va="top")

    raw = io.BytesIO()
    figure.savefig(raw, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(figure)
    raw.seek(0)
    image = Image.open(raw).convert("RGB").quantize(colors=COLOURS,
                                                    method=Image.Quantize.MEDIANCUT,
                                                    dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="png", optimize=True)
    return out.getvalue()


def png_bundle(fig) -> dict:
    """``{"image/png": base64 text}`` of ``figure_png(fig)``, for a display bundle."""
    return {"image/png": base64.b64encode(figure_png(fig)).decode("ascii")}


def use_in_notebooks() -> None:
    """While static outputs are written, make plotly's notebook output carry the PNG too:
    registers the ``companion_png`` renderer and, where the default renderer is
    ``plotly_mimetype`` (a Jupyter kernel), makes the default ``plotly_mimetype+companion_png``
    (plotly merges the bundles of "+"-joined renderers). Elsewhere nothing changes."""
    if not static_outputs_enabled():
        return
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    if RENDERER_NAME not in pio.renderers:
        class _PngRenderer(MimetypeRenderer):
            def to_mimebundle(self, fig_dict):
                return png_bundle(fig_dict)

        pio.renderers[RENDERER_NAME] = _PngRenderer()
    names = pio.renderers.default.split("+")
    if "plotly_mimetype" in names and RENDERER_NAME not in names:
        pio.renderers.default = "+".join(names + [RENDERER_NAME])
