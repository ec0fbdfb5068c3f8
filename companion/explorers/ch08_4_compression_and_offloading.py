"""8.4 explorers (notebook 08_4_compression_and_offloading).

Panels: ``QuantizedFitPanel`` (8.4.1: the M2 Max holding a Q2_K Qwen3-235B-A22B plus KV),
``CompressedReadPanel`` (8.4.2: dT = dD / beta - T_c), ``OffloadPanel`` (8.4.3: memory freed by
offloading FFN weights vs the copy every decode round), ``CompressTransferPanel`` (8.4.3:
compress before moving only if R_dec > B / (1 - r)), ``RetryCostPanel`` (8.4.4: the time to a
correct answer counts the failed attempts too), ``PrecisionGridPanel`` (8.4.4, Figure 8-28:
which task fails in which run under each KV/Q precision, for the companion's generated records).

Figures (from the former figures module):

Figures of 8.4: byte layouts of grouped formats (Figure 8-23 and Q2_K), what fits in memory
after loading quantised weights, the H100 BF16/FP8 interval fits and their crossover, and the
task-by-run correctness grids of 8.4.4 (its three figures, the last Figure 8-28; from
generated records).

Builders take results computed by ``companion.calc`` and return plotly figures; the
``*_traces`` helpers return plain trace/layout dicts shared with this module's explorers.
Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import discrete_colorscale
from companion.explorers.common import plotly_go as _go
from companion.formulas import compression as cm
from companion.formulas.limits_compression import (compress_transfer_pipelined_s,
                                                   min_decompress_pipelined_bytes_per_s)
from companion.serves import serves
from companion.sim import offload_pipeline, records_ch08

__all__ = [
    "byte_layout_traces", "byte_layout_figure", "bits_per_value_figure", "memory_stack_traces",
    "memory_stack_layout", "memory_stack_figure", "interval_fit_figure", "LAYOUT_COLORS",
    "precision_grid_traces", "precision_grid_figure",
    "QuantizedFitPanel", "CompressedReadPanel", "OffloadPanel",
    "CompressTransferPanel", "RetryCostPanel", "PrecisionGridPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.4"


LAYOUT_COLORS = {"codes": theme.BLUE, "metadata": theme.ORANGE, "plain": theme.GREY,
                 "header": theme.GREY, "headroom": theme.MEMORY_COLORS["free"],
                 **theme.MEMORY_COLORS}


# --- Figure 8-23: one group as bytes -----------------------------------------------------------

def byte_layout_traces(rows) -> tuple[list, dict]:
    """One bar cell per stored byte, rows top to bottom (Figure 8-23).

    ``rows``: list of dicts with ``label``, ``metadata_bytes`` (the scale, stored first as in
    GGML's block structs), ``code_bytes`` and optionally ``hex`` (the bytes' values, for the
    hover and labels) and ``plain`` (True: the values themselves, no codes/scale split).
    """
    rows = list(v.sequence("rows", rows))
    ys, base, colors, hover, text = [], [], [], [], []
    for r in rows:
        meta = int(round(r.get("metadata_bytes", 0)))
        code = int(round(r["code_bytes"]))
        hexes = list(r.get("hex", ())) or [""] * (meta + code)
        for i in range(meta + code):
            kind = ("value" if r.get("plain") else "scale" if i < meta else "code")
            ys.append(r["label"])
            base.append(i)
            colors.append(LAYOUT_COLORS["plain"] if r.get("plain") else
                          LAYOUT_COLORS["metadata"] if i < meta else LAYOUT_COLORS["codes"])
            h = hexes[i] if i < len(hexes) else ""
            hover.append(f"{r['label']}: byte {i} ({kind})" + (f" = 0x{h}" if h else ""))
            text.append(h)
    traces = [{"type": "bar", "orientation": "h", "y": ys, "base": base, "x": [1] * len(ys),
               "width": 0.7, "marker": {"color": colors, "line": {"color": theme.WHITE,
                                                                  "width": 1}},
               "text": text, "textposition": "inside", "insidetextanchor": "middle",
               "textfont": {"size": 9, "color": [theme.text_on(c) for c in colors]},
               "textangle": -90,
               "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "showlegend": False, "name": "bytes"}]
    for name, color in (("scale (2-byte half float)", LAYOUT_COLORS["metadata"]),
                        ("codes", LAYOUT_COLORS["codes"]),
                        ("BF16 values (no scale)", LAYOUT_COLORS["plain"])):
        # a key for the cells' colours (the bar trace draws them), not data of its own
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": name, "marker": {"symbol": "square", "size": 12,
                                                "color": color}, "hoverinfo": "skip",
                       "meta": {"legend_key": True}})
    totals = [int(round(r.get("metadata_bytes", 0) + r["code_bytes"])) for r in rows]
    traces.append({"type": "scatter", "x": [t + 0.5 for t in totals],
                   "y": [r["label"] for r in rows], "mode": "text",
                   "text": [f"{t} bytes" for t in totals], "textposition": "middle right",
                   "showlegend": False, "hoverinfo": "skip"})
    layout = {"barmode": "overlay",
              "xaxis": {"title": {"text": "byte offset within the group"},
                        "range": [-0.5, max(totals) + 9], "dtick": 4},
              "yaxis": {"autorange": "reversed", "type": "category",
                        "title": {"text": "format (one group)"}},
              "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def byte_layout_figure(rows, *, title: str = ""):
    """Figure 8-23: the same 32 values stored as BF16, q8_0 and q4_0, byte by byte."""
    traces, layout = byte_layout_traces(rows)
    layout.update({"template": theme.TEMPLATE, "height": 120 + 60 * len(list(rows)),
                   "title": {"text": title}, "margin": {"t": 60, "r": 20}})
    return _go().Figure(data=traces, layout=layout)


@serves("8.4.1")
def bits_per_value_figure(layouts, *, title: str = ""):
    """Stored bits per value split into code bits and metadata bits, one bar per format (8.4.1).

    ``layouts``: mapping format name -> ``calc.QuantLayout``.
    """
    items = list(dict(layouts).items())
    names = [n for n, _ in items]
    code = [lay.code_bytes * 8 / lay.group_values for _, lay in items]
    meta = [lay.metadata_bytes * 8 / lay.group_values for _, lay in items]
    totals = [c + m for c, m in zip(code, meta)]
    # one row per format (horizontal bars): each row's label runs to the right of its own bar,
    # so no two labels can meet whatever the formats; the thin metadata segment carries no text
    # of its own, its share is in the row's label
    traces = [
        {"type": "bar", "orientation": "h", "y": names, "x": code,
         "name": "code bits per value", "marker": {"color": LAYOUT_COLORS["codes"]},
         "text": [f"{c:g}" for c in code], "textposition": "inside",
         "insidetextanchor": "middle",
         "hovertemplate": "%{y}: %{x:g} code bits per value<extra></extra>"},
        {"type": "bar", "orientation": "h", "y": names, "x": meta,
         "name": "metadata bits per value", "marker": {"color": LAYOUT_COLORS["metadata"]},
         "hovertemplate": "%{y}: %{x:.3g} metadata bits per value<extra></extra>"},
        {"type": "scatter", "y": names, "x": totals,
         "mode": "text", "showlegend": False, "hoverinfo": "skip",
         "text": [f"\u00a0\u00a0{lay.bits_per_value:g} bits: {lay.group_bytes:g} B / "
                  f"{lay.group_values} values, metadata "
                  + (f"{m:.3g} bits ({100 * lay.metadata_fraction:.1f}%)" if m else
                     f"{100 * lay.metadata_fraction:.1f}%")
                  for m, (_, lay) in zip(meta, items)], "textposition": "middle right"},
    ]
    layout = {"template": theme.TEMPLATE, "height": 420, "barmode": "stack",
              "title": {"text": title},
              "xaxis": {"title": {"text": "stored bits per value"},
                        "range": [0, 2.1 * max(totals)]},
              "yaxis": {"title": {"text": "format"}, "type": "category",
                        "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.2, "traceorder": "normal"}}
    return _go().Figure(data=traces, layout=layout)


# --- 8.4.1: what fits after loading quantised weights ------------------------------------------

@serves("8.4.1")
def memory_stack_traces(rows, capacity: float, *, unit_label: str = "GiB") -> tuple[list, dict]:
    """Stacked horizontal bars of memory parts against a capacity mark (8.4.1).

    ``rows``: list of (label, [(part name, size, colour key), ...]) in display units; the parts
    are stacked left to right and labelled inside; what is left of ``capacity`` is drawn as
    headroom, what lies beyond it as one red segment (the parts drawn up to the capacity, so
    segments never overlap). Two traces whatever the rows hold (the
    segments, the capacity mark), so an explorer updates them in place.
    """
    rows = list(v.sequence("rows", rows))
    cap = v.positive("capacity", capacity)
    ys, xs, base, colors, texts, hover = [], [], [], [], [], []

    def segment(label, start, size, name, key, detail=""):
        ys.append(label)
        xs.append(size)
        base.append(start)
        colors.append(LAYOUT_COLORS[key])
        texts.append(name)
        hover.append(f"{label}: {name}, {size:,.2f} {unit_label}{detail}")

    for label, parts in rows:
        start, beyond = 0.0, []
        for name, size, key in parts:
            # a part is drawn up to the capacity only; what lies beyond is the one red segment,
            # so no two segments (and so no two inside labels) ever overlap
            inside = min(size, max(cap - start, 0.0))
            if inside > 0 or size == 0:
                segment(label, start, inside, name, key)
            if size > inside:
                beyond.append(f"{name} {size - inside:,.2f}")
            start += size
        if start <= cap:
            segment(label, start, cap - start, "headroom", "headroom")
        else:
            segment(label, cap, start - cap, "over capacity", "over",
                    f" ({'; '.join(beyond)} {unit_label})")
    labels = [label for label, _ in rows]
    traces = [
        {"type": "bar", "orientation": "h", "name": "memory", "y": ys, "x": xs, "base": base,
         "text": texts, "textposition": "inside", "insidetextanchor": "middle",
         "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
         "marker": {"color": colors, "line": {"color": theme.WHITE, "width": 1}},
         "showlegend": False},
        # a tall tick at the capacity on every row
        {"type": "scatter", "x": [cap] * len(labels), "y": labels, "mode": "markers",
         "name": f"capacity ({cap:,.2f} {unit_label})",
         "marker": {"symbol": "line-ns", "size": 44, "line": {"color": theme.INK, "width": 3}}},
    ]
    return traces, memory_stack_layout(unit_label)


def memory_stack_layout(unit_label: str = "GiB") -> dict:
    """The (data-independent) layout of ``memory_stack_traces``."""
    return {"barmode": "overlay", "uniformtext": {"minsize": 9, "mode": "hide"},
            "xaxis": {"title": {"text": f"memory ({unit_label})"}},
            "yaxis": {"autorange": "reversed", "type": "category",
                      "title": {"text": "what is loaded"}},
            "legend": {"orientation": "h", "y": -0.3}}


@serves("8.4.1")
def memory_stack_figure(rows, capacity: float, *, title: str = "", unit_label: str = "GiB"):
    """Memory stacked part by part against the capacity (8.4.1's M2 Max example)."""
    traces, layout = memory_stack_traces(rows, capacity, unit_label=unit_label)
    layout.update({"template": theme.TEMPLATE, "height": 200 + 50 * len(list(rows)),
                   "title": {"text": title}, "margin": {"t": 60, "r": 20}})
    return _go().Figure(data=traces, layout=layout)


# --- 8.4.2: two linear fits of the output interval ---------------------------------------------

@serves("8.4.2")
def interval_fit_figure(contexts, fits, *, crossover_tokens=None, marks=(), title: str = ""):
    """Output interval against context length for linear fits a + b L (8.4.2).

    ``contexts``: x values (tokens); ``fits``: mapping name -> intervals in ms at ``contexts``;
    ``crossover_tokens``: where the fits meet (a vertical line); ``marks``: (name, L, ms) points.
    """
    xs = [float(x) for x in v.sequence("contexts", contexts)]
    colors = [theme.BLUE, theme.VERMILLION, theme.GREEN, theme.PINK]
    traces, fit_colors = [], {}
    for k, (name, ys) in enumerate(dict(fits).items()):
        fit_colors[name.split()[0]] = colors[k % len(colors)]
        traces.append({"type": "scatter", "x": xs, "y": list(ys), "mode": "lines",
                       "name": name, "line": {"color": colors[k % len(colors)],
                                              "dash": theme.DASHES[k % len(theme.DASHES)]}})
    # each reading its own marker and legend entry (its fit's colour, a symbol per reading of
    # that fit): labels in the legend cannot run into each other however close the points are
    symbols, seen = ("circle", "diamond", "square", "triangle-up"), {}
    for m in marks:
        fit = str(m[0]).split()[0]
        k = seen[fit] = seen.get(fit, -1) + 1
        traces.append({"type": "scatter", "x": [m[1]], "y": [m[2]], "mode": "markers",
                       "name": f"{m[0]}: {m[2]:.2f} ms",
                       "hovertemplate": f"{m[0]}: L = %{{x:,.0f}}, %{{y:.2f}} ms<extra></extra>",
                       "marker": {"size": 11, "symbol": symbols[k % len(symbols)],
                                  "color": fit_colors.get(fit, theme.INK),
                                  "line": {"color": theme.INK, "width": 1.5}}})
    layout = {"template": theme.TEMPLATE, "height": 420, "title": {"text": title},
              "xaxis": {"title": {"text": "context length L (tokens)"}},
              "yaxis": {"title": {"text": "output interval (ms)"}},
              "legend": {"orientation": "h", "y": -0.2}}
    if crossover_tokens is not None:
        layout["shapes"] = [{"type": "line", "x0": crossover_tokens, "x1": crossover_tokens,
                             "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": theme.GREY, "dash": "dot"}}]
        layout["annotations"] = [{"x": crossover_tokens, "yref": "paper", "y": 1.0,
                                  "text": f"crossover {crossover_tokens:,.0f} tokens",
                                  "showarrow": False, "yanchor": "bottom"}]
    return _go().Figure(data=traces, layout=layout)


# --- 8.4.1: what fits after loading quantised weights ------------------------------------------

_Q2K_FILE_BYTES = calc.q2k_file_bytes()
_KV_FORMATS = {"BF16": "bf16", "FP8": "fp8", "q8_0": "q8_0", "q4_0": "q4_0"}


# --- 8.4.4, the three grids ending with Figure 8-28: task x run correctness --------------

GRID_COLORS = (theme.VERMILLION, theme.GREEN)      # wrong, correct (Okabe-Ito vermillion, green)
_GRID_GAP = 0.06


@serves("8.4.4")
def precision_grid_traces(results) -> tuple[list, dict]:
    """One heatmap per precision configuration: tasks (rows) x runs (columns), green where
    the answer was right (8.4.4). ``results``: a ``records_ch08.PrecisionResults``."""
    configs = list(results.configs)
    tasks = sorted({it.task for it in results.items})
    runs = sorted({it.run for it in results.items})
    labels = {it.task: f"task {it.task} ({it.label})" for it in results.items}
    width = (1 - _GRID_GAP * (len(configs) - 1)) / len(configs)
    traces, layout = [], {"height": 430, "margin": {"t": 60, "l": 150}}
    for c, config in enumerate(configs):
        grid = {(it.task, it.run): it.correct[c] for it in results.items}
        z = [[int(grid[t, q]) for q in runs] for t in tasks]
        ax = "" if c == 0 else str(c + 1)
        # numeric axes with tick labels: the book's PNG renderer then places cells exactly
        traces.append({"type": "heatmap", "z": z, "x": runs, "y": tasks,
                       "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                       "zmin": -0.5, "zmax": 1.5, "colorscale": discrete_colorscale(GRID_COLORS),
                       "showscale": False, "xgap": 2, "ygap": 2, "name": config,
                       "text": [[f"{labels[t]}, run {q}: {'right' if v else 'wrong'}"
                                 for q, v in zip(runs, row)] for t, row in zip(tasks, z)],
                       "hovertemplate": config + ", %{text}<extra></extra>"})
        left = c * (width + _GRID_GAP)
        right = sum(sum(row) for row in z)
        # the configuration and its total sit in the axis title, which every renderer places
        title = f"<b>{config}</b>: {right}/{len(tasks) * len(runs)} right<br>run"
        layout[f"xaxis{ax}"] = {"domain": [round(left, 6), round(left + width, 6)],
                                "anchor": f"y{ax}", "title": {"text": title},
                                "tickvals": runs, "ticktext": [str(q) for q in runs]}
        layout[f"yaxis{ax}"] = {"anchor": f"x{ax}", "autorange": "reversed",
                                "tickvals": tasks, "ticktext": [labels[t] for t in tasks],
                                "showticklabels": c == 0,
                                "title": {"text": "task" if c == 0 else ""}}
    return traces, layout


@serves("8.4.4")
def precision_grid_figure(results, *, title: str = "Task by run, per precision "
                          "(generated records, not the chapter's measurements)"):
    """8.4.4's three grids (the last is Figure 8-28) side by side (``precision_grid_traces``)."""
    traces, layout = precision_grid_traces(results)
    layout.update(template=theme.TEMPLATE, title={"text": title})
    return _go().Figure(data=traces, layout=layout)


@serves("8.4.4")
class PrecisionGridPanel(Panel):
    """The task x run grids of 8.4.4 for one seed of the companion's generated precision
    records, with the tasks whose result differs between configurations named."""

    title = "Which task fails where: BF16 KV, FP8 KV, FP8 KV + BF16 Q (8.4.4, generated records)"
    controls = (Control("seed", "record seed (0: the exercise's records; a number, no unit)",
                        "int", 0, 0, 20, 1),)
    main_control = "seed"

    def compute(self, *, seed) -> View:
        results = records_ch08.precision_results(seed)
        traces, layout = precision_grid_traces(results)
        configs = list(results.configs)
        totals = {config: sum(it.correct[c] for it in results.items)
                  for c, config in enumerate(configs)}
        per_task = {}
        for it in results.items:
            per_task.setdefault(it.task, [0] * len(configs))
            for c in range(len(configs)):
                per_task[it.task][c] += it.correct[c]
        differ = sorted(t for t, counts in per_task.items() if len(set(counts)) > 1)
        numbers = {"totals": totals, "tasks_that_differ": differ, "runs": len(results.items)}
        listed = ", ".join(f"{k}: <b>{n}</b>/{len(results.items)}" for k, n in totals.items())
        moved = ", ".join(f"task {t} ({'/'.join(str(x) for x in per_task[t])})" for t in differ)
        text = (f"right answers: {listed}<br>tasks whose count changes between configurations "
                f"(right runs per configuration): {moved or 'none'}<br>"
                f"generated by the companion (seeded numpy FP8 emulation), not measured")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


@serves("8.4.1")
class QuantizedFitPanel(Panel):
    """8.4.1: a Q2_K Qwen3-235B-A22B file on the 96 GB M2 Max: weights, quantisation metadata,
    the system reserve, the KV of the requests, and what is left."""

    title = "After loading quantised weights, how much context still fits? (8.4.1)"
    controls = (
        Control("weight_file", "weight file", "choice", "Q2_K",
                options={"Q2_K (79.81 GiB)": "Q2_K", "UD-Q2_K_XL (81.97 GiB)": "UD-Q2_K_XL"}),
        Control("context_tokens", "context per request (tokens)", "int", ch08.LONG_PROMPT_TOKENS,
                1024, 65536, 1024),
        Control("requests", "requests", "int", 1, 1, 16, 1),
        Control("kv_format", "KV format", "choice", "bf16", options=_KV_FORMATS),
        Control("reserve_gib", "system and workspace reserve (GiB)", "float",
                ch08.M2_SYSTEM_RESERVE_BYTES / units.GiB, 0.0, 24.0, 0.5),
        Control("memory_gb", "unified memory (GB)", "float", specs.M2_MAX.mem_bytes / units.GB,
                64.0, 192.0, 1.0),
    )
    main_control = "requests"
    base_layout = {"height": 360, **memory_stack_layout()}

    def compute(self, *, weight_file, context_tokens, requests, kv_format, reserve_gib,
                memory_gb) -> View:
        big = specs.QWEN3_235B_A22B
        mem, reserve = memory_gb * units.GB, reserve_gib * units.GiB
        file_bytes = (_Q2K_FILE_BYTES if weight_file == "Q2_K"
                      else ch08.UD_Q2K_XL_FILE_GIB * units.GiB)
        kv_one = calc.kv_quantized_bytes(big, context_tokens, kv_format, block_tokens=1)
        kv_all = requests * kv_one
        left = calc.memory_headroom_bytes(mem, reserve, file_bytes)
        left_after = calc.memory_headroom_bytes(mem, reserve, file_bytes, kv_all)
        fits = (calc.max_concurrent_kv_format(left, big, context_tokens, 1, kv_format,
                                              block_tokens=1) if left > 0 else 0)
        numbers = {
            "available_GiB": calc.memory_headroom_bytes(mem, reserve, 0) / units.GiB,
            "file_GiB": file_bytes / units.GiB,
            "left_after_weights_GiB": left / units.GiB,
            "kv_per_request_GiB": kv_one / units.GiB,
            "left_after_kv_GiB": left_after / units.GiB,
            "requests_that_fit": fits,
        }
        G = units.GiB
        if weight_file == "Q2_K":
            weights = [("codes + unquantised floats", ch08.Q2K_FILE_PAYLOAD_BYTES / G, "weights"),
                       ("quantisation metadata", ch08.Q2K_FILE_METADATA_BYTES / G, "codes"),
                       ("header and padding", ch08.Q2K_FILE_HEADER_BYTES / G, "header")]
        else:
            weights = [("UD-Q2_K_XL file (no breakdown given)", file_bytes / G, "weights")]
        rows = [(weight_file, weights + [("system reserve", reserve / G, "reserve"),
                                         (f"KV: {requests} x {context_tokens:,} tokens",
                                          kv_all / G, "kv")])]
        traces, _ = memory_stack_traces(rows, mem / G)
        verdict = ("fits" if left_after >= 0 else "<b>does not fit</b>")
        text = (f"{memory_gb:g} GB - {reserve_gib:g} GiB reserve = "
                f"{numbers['available_GiB']:.2f} GiB<br>{weight_file}: "
                f"{numbers['file_GiB']:.2f} GiB, leaving <b>"
                f"{numbers['left_after_weights_GiB']:.2f} GiB</b><br>KV per request "
                f"({kv_format}, {context_tokens:,} tokens): {numbers['kv_per_request_GiB']:.2f} "
                f"GiB; requests that fit: <b>{fits}</b><br>{requests} request(s) {verdict}, "
                f"leaving {numbers['left_after_kv_GiB']:.2f} GiB")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.4.2: net time of a compressed read ------------------------------------------------------

_BETA_TB_PER_S = cm.MEASURED_READ_BYTES / cm.MEASURED_ROUND_S / units.TB
_SWEEP_CONVERSION_MS = np.linspace(0.0, 2.0, 41)
_READ_FORMATS = {"q8_0": "q8_0", "q4_0": "q4_0", "FP8": "fp8"}


@serves("8.4.2")
class CompressedReadPanel(Panel):
    """8.4.2: reading compressed KV saves dD / beta but conversion adds T_c in series:
    dT = dD / beta - T_c, for one Qwen3-8B context on the RTX PRO 6000."""

    title = "Does a compressed KV read pay for its conversion? (8.4.2)"
    controls = (
        Control("context_tokens", "context (tokens)", "int", ch08.LONG_PROMPT_TOKENS, 512, 131072,
                512),
        Control("kv_format", "compressed format", "choice", "q8_0", options=_READ_FORMATS),
        Control("bandwidth_tb_per_s", "effective read bandwidth (TB/s)", "float",
                _BETA_TB_PER_S, 0.2, 5.0, 0.01),
        Control("conversion_ms", "added conversion time T_c (ms)", "float",
                ch08.CONVERSION_S_CASES[0] / units.ms, 0.0, 2.0, 0.01),
    )
    main_control = "context_tokens"
    base_layout = {
        "xaxis": {"title": {"text": "added conversion time T_c (ms)"}},
        "yaxis": {"title": {"text": "net time saved per read dT (ms)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, context_tokens, kv_format, bandwidth_tb_per_s, conversion_ms) -> View:
        m = specs.QWEN3_8B
        beta = bandwidth_tb_per_s * units.TB
        bf16 = calc.kv_bytes(m, context_tokens)
        xs = _SWEEP_CONVERSION_MS.tolist()
        traces, saved = [], {}
        colors = {"q8_0": theme.BLUE, "q4_0": theme.GREEN, "fp8": theme.PINK}
        # the dash tells the formats apart too ("dash" and "dot" are the lines below)
        dashes = {"q8_0": "solid", "q4_0": "longdash", "fp8": "dashdot"}
        for label, fmt in _READ_FORMATS.items():
            saved[fmt] = bf16 - calc.kv_quantized_bytes(m, context_tokens, fmt)
            ys = [calc.compressed_read_saving_s(saved[fmt], beta, x * units.ms) / units.ms
                  for x in xs]
            traces.append({"type": "scatter", "x": xs, "y": ys, "mode": "lines",
                           "name": f"{label}: {saved[fmt] / units.MiB:,.0f} MiB fewer",
                           "line": {"color": colors[fmt], "dash": dashes[fmt],
                                    "width": 3 if fmt == kv_format else 1.5}})
        net = calc.compressed_read_saving_s(saved[kv_format], beta, conversion_ms * units.ms)
        gross = calc.compressed_read_saving_s(saved[kv_format], beta, 0.0)
        # The same bytes priced by Experiment 8-1's measured rounds (one request at
        # this context), where most of a round does not shrink with the bytes read
        read = m.streamed_weight_bytes + bf16
        measured = calc.read_saving_from_rounds_s(saved[kv_format], read)
        traces.append({"type": "scatter", "x": xs, "y": [(measured - x * units.ms) / units.ms
                                                         for x in xs],
                       "mode": "lines", "name": f"{kv_format}, priced by Experiment 8-1's rounds",
                       "line": {"color": colors[kv_format], "width": 3, "dash": "dash"}})
        traces += [
            {"type": "scatter", "x": [0, xs[-1]], "y": [0, 0], "mode": "lines",
             "name": "break even", "line": {"color": theme.GREY, "dash": "dot"}},
            {"type": "scatter", "x": [conversion_ms], "y": [net / units.ms], "mode": "markers",
             "name": "this setting", "marker": {"size": 11, "color": theme.INK}},
        ]
        numbers = {
            "bf16_MiB": bf16 / units.MiB,
            "saved_MiB": saved[kv_format] / units.MiB,
            "read_saving_ms": gross / units.ms,
            "net_saving_ms": net / units.ms,
            "break_even_conversion_ms": gross / units.ms,
            "measured_read_saving_ms": measured / units.ms,
            "measured_net_saving_ms": (measured - conversion_ms * units.ms) / units.ms,
            "marginal_bandwidth_TB_per_s": calc.marginal_read_bandwidth(
                read - saved[kv_format] / 2) / units.TB,
        }
        sign = "saves" if net >= 0 else "<b>costs</b>"
        text = (f"BF16 KV of {context_tokens:,} tokens: {numbers['bf16_MiB']:,.0f} MiB; "
                f"{kv_format} reads {numbers['saved_MiB']:,.0f} MiB fewer<br>"
                f"at {bandwidth_tb_per_s:.3f} TB/s that is {numbers['read_saving_ms']:.3f} ms"
                f"<br>with {conversion_ms:.2f} ms of conversion it {sign} "
                f"<b>{abs(net) / units.ms:.3f} ms</b> per read<br>"
                f"conversion must stay under {numbers['break_even_conversion_ms']:.3f} ms<br>"
                f"priced by Experiment 8-1's measured rounds: "
                f"{numbers['measured_read_saving_ms']:.3f} ms saved, net "
                f"<b>{numbers['measured_net_saving_ms']:+.3f} ms</b> (a byte less there is worth "
                f"{numbers['marginal_bandwidth_TB_per_s']:.2f} TB/s)")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.4.3: weight offload and the per-round copy ----------------------------------------------

_SWEEP_LINK_GB = np.geomspace(8, 1000, 61)
_LINKS = (("PCIe Gen4 x16", ch08.PCIE_GEN4_X16_BYTES_PER_S),
          ("PCIe Gen5 x16", ch08.PCIE_GEN5_X16_BYTES_PER_S),
          ("NVLink-C2C", ch08.NVLINK_C2C_BYTES_PER_S))


def _link_text_position(gb_per_s: float) -> str:
    """Where a named link's label goes on the link axis (``_SWEEP_LINK_GB``, log)."""
    middle = float(np.sqrt(_SWEEP_LINK_GB[0] * _SWEEP_LINK_GB[-1]))
    return "top right" if gb_per_s < middle else "bottom left"


@serves("8.4.3")
class OffloadPanel(Panel):
    """8.4.3: offloading FFN weights frees memory for KV, net of prefetch buffers, but every
    decode round must copy them back: T_copy >= bytes / link."""

    title = "Weight offload: memory freed vs copy per decode round (8.4.3)"
    controls = (
        Control("layers", "FFN layers offloaded (of 36)", "int",
                specs.QWEN3_8B.n_layers // ch08.OFFLOAD_EVERY_N_LAYERS, 0, 36, 1),
        Control("prefetch_buffers", "prefetch buffer sets", "int", 1, 0, 4, 1),
        Control("link_gb_per_s", "host link (GB/s per direction)", "float",
                ch08.PCIE_GEN5_X16_BYTES_PER_S / units.GB, 8.0, 1000.0, 1.0),
        Control("batch", "requests per round", "int", ch08.OFFLOAD_BATCH, 1, 64, 1),
        Control("compute_round_ms", "decode round without copying (ms)", "float",
                ch08.ROUND_B1_S / units.ms, 5.0, 100.0, 0.01),
        Control("output_tokens", "output tokens per request", "int", ch08.OUTPUT_TOKENS, 2, 2048,
                1),
    )
    main_control = "layers"
    base_layout = {
        "height": 440,
        "xaxis": {"domain": [0, 0.36], "title": {"text": "accelerator memory"}},
        "yaxis": {"title": {"text": "MiB"}, "rangemode": "tozero"},
        "xaxis2": {"domain": [0.48, 1], "type": "log", "anchor": "y2",
                   "title": {"text": "host link (GB/s per direction)"}},
        "yaxis2": {"title": {"text": "time per decode round (ms)"}, "anchor": "x2",
                   "type": "log"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    def compute(self, *, layers, prefetch_buffers, link_gb_per_s, batch, compute_round_ms,
                output_tokens) -> View:
        m = specs.QWEN3_8B
        plan = calc.ffn_offload(m, layers=layers, prefetch_buffers=min(prefetch_buffers, layers))
        rounds = output_tokens - 1
        compute_s = compute_round_ms * units.ms
        net = max(plan.net_saved_bytes, 0.0)
        extra_inputs = calc.max_concurrent(net, m, ch08.LONG_PROMPT_TOKENS, 1)
        extra_complete = calc.max_concurrent(net, m, ch08.LONG_PROMPT_TOKENS, output_tokens)
        if plan.offloaded_bytes > 0:
            copy = calc.offload_copy_bound(plan.offloaded_bytes, link_gb_per_s * units.GB,
                                           compute_s, batch=batch, rounds=rounds)
            copy_s, round_s, total_s = copy.copy_s, copy.round_s, copy.total_copy_s
            tokens_per_s, hidden = copy.tokens_per_s, copy.copy_hidden
            sweep = [calc.offload_copy_bound(plan.offloaded_bytes, float(g) * units.GB,
                                             compute_s).copy_s / units.ms
                     for g in _SWEEP_LINK_GB]
        else:
            copy_s, round_s, total_s, hidden = 0.0, compute_s, 0.0, True
            tokens_per_s = batch / compute_s
            sweep = [None] * len(_SWEEP_LINK_GB)
        # The round scheduled layer by layer with these buffers (footnote 16's
        # compute per layer), against the bound max(copy, compute) above
        n_layers = m.n_layers
        spread = offload_pipeline.spread_layers(n_layers, layers)
        buffers = min(prefetch_buffers, layers)
        per_layer = calc.ffn_weight_bytes_per_layer(m)

        def scheduled(link_bytes_per_s: float) -> float:
            return offload_pipeline.offload_round(
                n_layers, spread, compute_s / n_layers, per_layer / link_bytes_per_s,
                buffers=buffers).round_s

        sched_s = scheduled(link_gb_per_s * units.GB)
        sched_sweep = [scheduled(float(g) * units.GB) / units.ms for g in _SWEEP_LINK_GB]
        MiB = units.MiB
        numbers = {
            "offloaded_MiB": plan.offloaded_bytes / MiB,
            "buffers_MiB": plan.buffer_bytes / MiB,
            "net_saved_MiB": plan.net_saved_bytes / MiB,
            "extra_8k_inputs": extra_inputs,
            "extra_complete_requests": extra_complete,
            "copy_per_round_GB": plan.offloaded_bytes / units.GB,
            "copy_ms": copy_s / units.ms,
            "round_ms": round_s / units.ms,
            "tokens_per_s": tokens_per_s,
            "total_copy_s": total_s,
            "copy_hidden": hidden,
            "scheduled_round_ms": sched_s / units.ms,
            "scheduled_tokens_per_s": batch / sched_s,
            "scheduled_total_s": rounds * sched_s,
            "scheduled_over_bound": sched_s / round_s,
        }
        traces = [
            {"type": "bar", "x": ["offloaded", "prefetch buffers", "net freed"],
             "y": [numbers["offloaded_MiB"], numbers["buffers_MiB"], numbers["net_saved_MiB"]],
             "marker": {"color": [LAYOUT_COLORS["headroom"], LAYOUT_COLORS["over"],
                                  LAYOUT_COLORS["kv"]]},
             "text": [f"{x:,.0f}" for x in (numbers["offloaded_MiB"], numbers["buffers_MiB"],
                                            numbers["net_saved_MiB"])],
             "textposition": "outside", "name": "memory (MiB)", "showlegend": False},
            # with nothing offloaded nothing is copied: the copy traces draw nothing and leave
            # the legend
            {"type": "scatter", "x": _SWEEP_LINK_GB.tolist(), "y": sweep, "mode": "lines",
             "name": f"copy of {numbers['copy_per_round_GB']:.2f} GB per round",
             "showlegend": bool(copy_s),
             "xaxis": "x2", "yaxis": "y2", "line": {"color": theme.VERMILLION,
                                                    "dash": "longdash"}},
            {"type": "scatter", "x": _SWEEP_LINK_GB.tolist(), "y": sched_sweep, "mode": "lines",
             "name": f"round, layer by layer with {buffers} buffer(s)", "xaxis": "x2",
             "yaxis": "y2", "line": {"color": theme.INK, "width": 2.5}},
            {"type": "scatter", "x": [8, 1000], "y": [compute_round_ms] * 2, "mode": "lines",
             "name": f"compute round ({compute_round_ms:g} ms): copies below it can hide",
             "xaxis": "x2", "yaxis": "y2", "line": {"color": theme.BLUE, "dash": "dash"}},
            {"type": "scatter", "x": [g / units.GB for _, g in _LINKS],
             "y": [calc.link_transfer_s(plan.offloaded_bytes, g) / units.ms if copy_s else None
                   for _, g in _LINKS],
             "mode": "markers+text", "text": [name for name, _ in _LINKS],
             # labels face into the plot: right of the links in the left half of the (fixed)
             # link axis, below and left (under the falling copy line) in the right half
             "textposition": [_link_text_position(g / units.GB) for _, g in _LINKS],
             "name": "named links", "xaxis": "x2", "yaxis": "y2", "showlegend": bool(copy_s),
             "marker": {"size": 9, "color": theme.INK, "symbol": "diamond"}},
            {"type": "scatter", "x": [link_gb_per_s], "y": [copy_s / units.ms or None],
             "mode": "markers", "name": "this link", "xaxis": "x2", "yaxis": "y2",
             "showlegend": bool(copy_s), "marker": {"size": 12, "color": theme.VERMILLION}},
        ]
        hide = "hidden behind compute" if hidden else "<b>longer than the compute round</b>"
        text = (f"{layers} FFN layers x 288 MiB = {numbers['offloaded_MiB']:,.0f} MiB freed; "
                f"{plan.buffer_bytes / MiB:,.0f} MiB of buffers: net <b>"
                f"{numbers['net_saved_MiB']:,.0f} MiB</b><br>room for {extra_inputs} more 8K "
                f"input(s) or {extra_complete} more complete request(s)<br>"
                f"copy per round: <b>{numbers['copy_ms']:.1f} ms</b> ({hide}); round "
                f"{numbers['round_ms']:.1f} ms, at most {tokens_per_s:,.0f} tokens/s for "
                f"{batch}<br>copying over {rounds} rounds: <b>{total_s:.2f} s</b><br>"
                f"scheduled layer by layer with {buffers} buffer(s): round "
                f"<b>{numbers['scheduled_round_ms']:.1f} ms</b> "
                f"({numbers['scheduled_over_bound']:.2f}x the bound), "
                f"{numbers['scheduled_total_s']:.2f} s over {rounds} rounds")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.4.3: compress before moving? ------------------------------------------------------------

_SWEEP_DECOMP_GB = np.geomspace(1, 10000, 81)


@serves("8.4.3")
class CompressTransferPanel(Panel):
    """8.4.3: send S bytes raw (S / B) or compressed to rS and decompressed at R_dec
    (rS / B + S / R_dec): compressing wins only when R_dec > B / (1 - r)."""

    title = "Compress before moving? (8.4.3)"
    controls = (
        Control("size_mib", "data moved (MiB)", "float", ch08.COMPRESS_EXAMPLE_BYTES / units.MiB,
                1.0, 4096.0, 1.0),
        Control("compressed_fraction", "compressed size f_c (fraction of the original)", "float",
                ch08.COMPRESS_EXAMPLE_FRACTION, 0.05, 0.95, 0.01),
        Control("link_gb_per_s", "link (GB/s per direction)", "float",
                ch08.PCIE_GEN5_X16_BYTES_PER_S / units.GB, 8.0, 1000.0, 1.0),
        Control("decompress_gb_per_s", "decompression rate R_dec (GB/s of output)", "float",
                100.0, 1.0, 10000.0, 1.0),
    )
    main_control = "compressed_fraction"
    base_layout = {
        "xaxis": {"title": {"text": "decompression rate R_dec (GB/s of original bytes)"},
                  "type": "log"},
        "yaxis": {"title": {"text": "time to move the data (ms)"}, "type": "log"},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, size_mib, compressed_fraction, link_gb_per_s,
                decompress_gb_per_s) -> View:
        size, link = size_mib * units.MiB, link_gb_per_s * units.GB
        r = compressed_fraction
        direct = calc.link_transfer_s(size, link)
        moved = calc.compress_then_transfer_s(size, r, link)
        total = calc.compress_then_transfer_s(size, r, link, decompress_gb_per_s * units.GB)
        threshold = calc.min_decompress_bytes_per_s(link, r)
        xs = _SWEEP_DECOMP_GB.tolist()
        ys = [calc.compress_then_transfer_s(size, r, link, g * units.GB) / units.ms for g in xs]
        # Sent in fine chunks, decompression overlaps the link
        piped = compress_transfer_pipelined_s(size, r, link, decompress_gb_per_s * units.GB)
        piped_ys = [compress_transfer_pipelined_s(size, r, link, g * units.GB) / units.ms
                    for g in xs]
        numbers = {
            "pipelined_ms": piped / units.ms,
            "pipelined_wins": piped < direct,
            "min_decompress_pipelined_GB_per_s": min_decompress_pipelined_bytes_per_s(
                link, r) / units.GB,
            "direct_ms": direct / units.ms,
            "compressed_transfer_ms": moved / units.ms,
            "transfer_saving_ms": (direct - moved) / units.ms,
            "with_decompression_ms": total / units.ms,
            "min_decompress_GB_per_s": threshold / units.GB,
            "compression_wins": total < direct,
        }
        traces = [
            {"type": "scatter", "x": xs, "y": ys, "mode": "lines",
             "name": "compressed: rS/B + S/R_dec", "line": {"color": theme.GREEN}},
            {"type": "scatter", "x": xs, "y": piped_ys, "mode": "lines",
             "name": "compressed, in fine chunks: max(rS/B, S/R_dec)",
             "line": {"color": theme.GREEN, "dash": "dashdot", "width": 2.5}},
            {"type": "scatter", "x": [xs[0], xs[-1]], "y": [direct / units.ms] * 2,
             "mode": "lines", "name": "raw: S/B", "line": {"color": theme.BLUE, "dash": "dash"}},
            {"type": "scatter", "x": [xs[0], xs[-1]], "y": [moved / units.ms] * 2,
             "mode": "lines", "name": "compressed transfer alone: rS/B",
             "line": {"color": theme.GREY, "dash": "dot"}},
            {"type": "scatter", "x": [threshold / units.GB], "y": [direct / units.ms],
             "mode": "markers+text", "text": [f"R_dec = {threshold / units.GB:,.1f} GB/s"],
             "textposition": "top left", "name": "break even B/(1-r)",
             "marker": {"size": 11, "symbol": "diamond", "color": theme.INK}},
            {"type": "scatter", "x": [decompress_gb_per_s], "y": [total / units.ms],
             "mode": "markers", "name": "this decompressor",
             "marker": {"size": 11, "color": theme.VERMILLION}},
        ]
        verdict = "faster" if numbers["compression_wins"] else "<b>slower</b>"
        text = (f"raw: {numbers['direct_ms']:.2f} ms; compressed transfer "
                f"{numbers['compressed_transfer_ms']:.2f} ms (saves "
                f"{numbers['transfer_saving_ms']:.2f} ms)<br>with decompression at "
                f"{decompress_gb_per_s:g} GB/s: {numbers['with_decompression_ms']:.2f} ms, "
                f"{verdict} than raw<br>break even: R_dec > <b>"
                f"{numbers['min_decompress_GB_per_s']:.1f} GB/s</b><br>in fine chunks, "
                f"decompressing while the next chunk travels: {numbers['pipelined_ms']:.2f} ms, "
                f"break even at R_dec > {numbers['min_decompress_pipelined_GB_per_s']:.1f} GB/s")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.4.4: the time to a correct answer -------------------------------------------------------

_SWEEP_ACCURACY = np.linspace(0.5, 1.0, 51)


@serves("8.4.4")
class RetryCostPanel(Panel):
    """8.4.4: when wrong answers are retried until one passes, each configuration pays
    (attempt + check) / accuracy on average: a faster but less accurate format can lose."""

    title = "Time to a correct answer when failures are retried (8.4.4)"
    controls = (
        Control("attempt_s", "one attempt, format A (s)", "float", calc.SHORT_REQUEST_S, 0.5,
                30.0, 0.05),
        Control("accuracy_a", "accuracy of A (BF16 KV: 28/32)", "float", ch08.ACCURACY_BF16_KV,
                0.5, 1.0, 0.005),
        Control("speed_factor_b", "attempt time of B relative to A", "float", 1.0, 0.5, 1.5,
                0.01),
        Control("accuracy_b", "accuracy of B (FP8 KV: 26/32)", "float", ch08.ACCURACY_FP8_KV,
                0.5, 1.0, 0.005),
        Control("check_s", "checking one answer (s)", "float", 0.0, 0.0, 10.0, 0.1),
        # The same accuracies with part of the failures stuck to fixed tasks
        Control("systematic_pct", "failures that stick to fixed tasks (%)", "float", 0.0, 0.0,
                100.0, 1.0),
        Control("max_attempts", "attempts allowed per task", "int", 3, 1, 10, 1),
    )
    main_control = "accuracy_b"
    base_layout = {
        "xaxis": {"title": {"text": "accuracy (share of attempts that pass)"}},
        "yaxis": {"title": {"text": "expected time to a correct answer (s)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, attempt_s, accuracy_a, speed_factor_b, accuracy_b, check_s,
                systematic_pct=0.0, max_attempts=3) -> View:
        tb = attempt_s * speed_factor_b
        share = systematic_pct / 100

        def spread(t: float, p: float):
            chances, weights = calc.systematic_success_probs(p, share)
            return calc.retry_outcome(t, chances, weights=weights, max_attempts=max_attempts,
                                      check_s=check_s)

        spread_a, spread_b = spread(attempt_s, accuracy_a), spread(tb, accuracy_b)
        even_a = calc.retry_outcome(attempt_s, [accuracy_a], max_attempts=max_attempts,
                                    check_s=check_s)
        even_b = calc.retry_outcome(tb, [accuracy_b], max_attempts=max_attempts, check_s=check_s)
        ea = calc.expected_time_to_correct_s(attempt_s, accuracy_a, check_s)
        eb = calc.expected_time_to_correct_s(tb, accuracy_b, check_s)
        xs = _SWEEP_ACCURACY.tolist()
        numbers = {
            "expected_a_s": ea, "expected_b_s": eb,
            "first_attempt_a_s": calc.time_to_correct_answer_s([attempt_s], check_s),
            "first_attempt_b_s": calc.time_to_correct_answer_s([tb], check_s),
            "b_wins": eb < ea,
            "independent_answered_a_pct": 100 * even_a.answered_share,
            "independent_answered_b_pct": 100 * even_b.answered_share,
            "answered_a_pct": 100 * spread_a.answered_share,
            "answered_b_pct": 100 * spread_b.answered_share,
            "per_correct_a_s": spread_a.time_per_correct_s,
            "per_correct_b_s": spread_b.time_per_correct_s,
        }
        traces = [
            {"type": "scatter", "x": xs,
             "y": [calc.expected_time_to_correct_s(attempt_s, p, check_s) for p in xs],
             "mode": "lines", "name": f"attempt {attempt_s:g} s (A's speed)",
             "line": {"color": theme.BLUE}},
            {"type": "scatter", "x": xs,
             "y": [calc.expected_time_to_correct_s(tb, p, check_s) for p in xs],
             "mode": "lines", "name": f"attempt {tb:.2f} s (B's speed)",
             "line": {"color": theme.VERMILLION, "dash": "dash"}},
            {"type": "scatter", "x": [accuracy_a, accuracy_b], "y": [ea, eb],
             "mode": "markers+text", "text": ["A", "B"], "textposition": "top center",
             "name": "the two formats", "marker": {"size": 11, "color": [theme.BLUE,
                                                                         theme.VERMILLION]}},
        ]
        if share > 0:
            # time spent per correct answer when that share of failures sticks to fixed tasks
            for t, color, who in ((attempt_s, theme.BLUE, "A"), (tb, theme.VERMILLION, "B")):
                traces.append({"type": "scatter", "x": xs, "mode": "lines",
                               "y": [spread(t, p).time_per_correct_s for p in xs],
                               "name": f"{who}'s speed, {systematic_pct:g}% of failures on "
                                       f"fixed tasks, {max_attempts} attempts",
                               "line": {"color": color, "dash": "dot", "width": 2.5}})
        text = (f"A: one attempt {numbers['first_attempt_a_s']:.2f} s, expected "
                f"<b>{ea:.2f} s</b> to a correct answer<br>B: one attempt "
                f"{numbers['first_attempt_b_s']:.2f} s, expected <b>{eb:.2f} s</b><br>"
                f"{'B' if eb < ea else 'A'} reaches a correct answer sooner on average "
                f"(independent retries assumed)<br>within {max_attempts} attempt(s): "
                f"A answers {numbers['independent_answered_a_pct']:.1f}%, B "
                f"{numbers['independent_answered_b_pct']:.1f}% if retries are independent; "
                f"with {systematic_pct:g}% of failures on fixed tasks A "
                f"<b>{numbers['answered_a_pct']:.1f}%</b>, B "
                f"<b>{numbers['answered_b_pct']:.1f}%</b>, at {spread_a.time_per_correct_s:.2f} s "
                f"and {spread_b.time_per_correct_s:.2f} s per correct answer")
        return View(numbers=numbers, traces=traces, text=text)
