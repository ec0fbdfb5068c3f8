"""8.1's explorer home (notebook 08_1_request_lifecycle): the request timeline (Figure 8-2), the
memory budget, the KV capacity.

Figures (plotly, deterministic: fixed colours, no timestamps): ``request_timeline_figure``
(``timeline_traces``/``timeline_layout``), ``memory_budget_figure`` (``budget_traces``),
``kv_capacity_figure`` (``capacity_bar_traces``). The ``*_traces`` helpers return plain
trace/layout dicts, so a panel draws exactly what a figure builder draws.

Panels: ``RequestTimelinePanel`` (queue, prefill, output interval, length and inserted prefills
-> TTFT, longest interval, request time against the 7 s deadline; the timelines come from
``companion.sim.scenarios.timeline_scenario``; a toggle charges each inserted prefill as a pass
of its own, as 8.1.1 does, or inside this request's decode pass, as 8.2.2's round does),
``MemoryBudgetPanel`` (M_w + M_KV + rest <= C and how many requests' reserved KV fits, 8.1.2,
beside how many would fit by what requests hold on average mid-answer), ``KVCapacityPanel`` (requests that fit as the
prompt grows, independent vs shared prefix, 8.1.2 / 8.3.2).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import plotly_go as _go
from companion.explorers.presets import CH08_MODELS, KV_PRECISIONS, ModelMenu, config_control
from companion.formulas.batching import insertable_prefills, kv_capacity_row
from companion.formulas.limits_rounds import inserted_prefill_stall_s, kv_held_over_answer
from companion.serves import serves
from companion.sim.scenarios import stalled_interval_positions, timeline_scenario

__all__ = [
    "request_timeline_figure", "memory_budget_figure", "kv_capacity_figure",
    "RequestTimelinePanel", "MemoryBudgetPanel", "KVCapacityPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.1"

# the models the 8.1.2 panels offer: Chapter 8's presets, then the shelf
MODELS = ModelMenu(CH08_MODELS)

# how an inserted prefill is charged (8.1.1 adds it; 8.2.2's round shares one pass)
INSERTED_PASS = {"as a pass of its own (8.1.1)": "own",
                 "in the same pass as this decode step (8.2.2's round)": "shared"}

# the shortest pass 8.2.2's round fit prices: its fixed part (26.22 ms: weight read, kernel
# submission), rounded up to the prefill sliders' 1 ms step. A prefill below it is outside the
# fit, where the shared-pass reading max(prefill - fixed, 0) would call any prefill free.
PASS_FLOOR_MS = math.ceil(ch08.ROUND_FIXED_S / units.ms)

# the time the short request's batch-1 decode step needs just to read the weights and its
# 2,048 tokens of KV once at the card's peak bandwidth (8.6.3: 15.44 GB / 1792 GB/s): no
# output interval on this card can be shorter
READ_FLOOR_S = calc.decode_efficiency_table()[0]["read_s"]




# --- Figure 8-2: one request's timeline --------------------------------------------------------

def timeline_traces(scenarios, deadline_s: float | None = None) -> tuple[list, dict]:
    """Trace dicts and layout of Figure 8-2 for one or more request timelines.

    Each scenario is a dict: ``label``, ``queue_s``, ``prefill_s``, ``token_times_s`` (emission
    times after arrival, from ``calc.token_emission_times``) and optionally ``stalls``: a list
    of (start_s, duration_s) output intervals stretched by an inserted prefill. Rows are
    numbered top to bottom (labels on the axis); the deadline is a trace, so the layout depends
    only on the labels.
    """
    scenarios = list(scenarios)
    if not scenarios:
        raise ValueError("scenarios: needs at least one timeline")
    labels = [str(s["label"]) for s in scenarios]
    rows = list(range(len(scenarios)))
    queue = [float(s["queue_s"]) for s in scenarios]
    prefill = [float(s["prefill_s"]) for s in scenarios]
    first = [float(s["token_times_s"][0]) for s in scenarios]
    last = [float(s["token_times_s"][-1]) for s in scenarios]

    def hbar(name, y, base, width, color, hover):
        return {"type": "bar", "orientation": "h", "name": name, "y": y, "base": base,
                "x": width, "marker": {"color": color}, "hovertemplate": hover, "width": 0.5}

    stall_y, stall_base, stall_x = [], [], []
    for row, s in zip(rows, scenarios):
        for start, duration in s.get("stalls", ()):
            stall_y.append(row)
            stall_base.append(float(start))
            stall_x.append(float(duration))
    traces = [
        hbar("queue", rows, [0.0] * len(rows), queue, theme.PHASE_COLORS["queue"],
             "queue %{x:.3f} s<extra></extra>"),
        hbar("prefill (first token at its end)", rows, queue, prefill, theme.PHASE_COLORS["prefill"],
             "prefill %{x:.3f} s<extra></extra>"),
        hbar("decode: G - 1 output intervals", rows, first,
             [b - a for a, b in zip(first, last)], theme.PHASE_COLORS["decode"],
             "decode %{x:.3f} s<extra></extra>"),
        # no legend entry while no interval is stretched (nothing of it is drawn)
        dict(hbar("interval stretched by an inserted prefill", stall_y, stall_base, stall_x,
                  theme.PHASE_COLORS["stall"], "stall %{x:.3f} s<extra></extra>"),
             showlegend=bool(stall_x)),
    ]
    tick_x = np.concatenate([np.asarray(s["token_times_s"], dtype=float) for s in scenarios])
    tick_y = np.concatenate([np.full(len(s["token_times_s"]), float(row))
                             for row, s in zip(rows, scenarios)])
    traces.append({"type": "scatter", "mode": "markers", "name": "token returned",
                   "x": tick_x, "y": tick_y,
                   "marker": {"symbol": "line-ns-open", "size": 14,
                              "color": theme.PHASE_COLORS["token"], "line": {"width": 1}},
                   "hovertemplate": "token at %{x:.4f} s<extra></extra>"})
    traces.append({"type": "scatter", "mode": "text", "name": "request time", "x": last,
                   "y": rows, "text": [f"  {t:.2f} s" for t in last],
                   "textposition": "middle right", "showlegend": False, "hoverinfo": "skip",
                   # past the bar's end: drawn into the right margin rather than cut there
                   "cliponaxis": False})
    edge = [len(rows) - 0.5, -0.5]      # bottom to top (the y axis is reversed): label on top
    deadline = [] if deadline_s is None else [deadline_s, deadline_s]
    traces.append({"type": "scatter", "mode": "lines+text", "name": "deadline",
                   "x": deadline, "y": edge if deadline else [],
                   "text": ["", f"deadline {deadline_s:g} s"] if deadline else [],
                   "textposition": "top center", "cliponaxis": False,   # above the plot
                   "line": {"color": theme.PHASE_COLORS["deadline"], "dash": "dash"},
                   "textfont": {"color": theme.PHASE_COLORS["deadline"]}, "hoverinfo": "skip"})
    return traces, timeline_layout(labels)


def timeline_layout(labels) -> dict:
    """Layout of Figure 8-2: one numbered row per timeline, labelled on the y axis."""
    labels = [str(x) for x in labels]
    return {
        "barmode": "overlay",
        "xaxis": {"title": {"text": "time since arrival (s)"}, "rangemode": "tozero"},
        "yaxis": {"tickvals": list(range(len(labels))), "ticktext": labels,
                  "autorange": "reversed", "zeroline": False},
        "legend": {"orientation": "h", "y": -0.3},
        "height": 220 + 70 * len(labels),
    }


@serves("8.1.1")
def request_timeline_figure(scenarios, deadline_s: float | None = None,
                            title: str = "Figure 8-2: one request's timeline (8.1.1)"):
    """Figure 8-2 as a plotly Figure: queue, prefill, output intervals, token ticks, deadline."""
    traces, layout = timeline_traces(scenarios, deadline_s)
    layout = dict(layout, template=theme.TEMPLATE, title={"text": title})
    return _go().Figure(data=traces, layout=layout)


# --- 8.1.2: the memory budget M_w + M_KV + M_a + M_u <= C -------------------------------------

def budget_traces(budgets, kv_in_use_bytes=None, *, xaxis: str = "x", yaxis: str = "y",
                  unit: str = "GiB", hide_empty: bool = False) -> tuple[list, dict]:
    """Stacked horizontal bars of memory budgets (``calc.memory_budget`` results), in ``unit``.

    ``budgets``: a list of (label, MemoryBudget). ``kv_in_use_bytes`` (one per budget, or None)
    splits the KV pool into what the admitted requests reserve and what stays free; without it
    the whole budget is one bar, "KV pool + auxiliary buffers". The
    remainder C - M_w - M_KV - M_a - M_u is drawn as "activations, graph buffers, workspace"
    when positive, and as an overflow bar when the parts exceed C. ``hide_empty``: a part of
    size zero in every bar gets no legend entry (nothing of it is drawn).
    """
    budgets = list(budgets)
    if not budgets:
        raise ValueError("budgets: needs at least one (label, MemoryBudget)")
    scale = units.BYTE_UNITS[unit]
    labels = [str(label) for label, _ in budgets]
    parts = [b for _, b in budgets]
    in_use = (list(kv_in_use_bytes) if kv_in_use_bytes is not None
              else [b.kv_pool_bytes for b in parts])
    # without requests the whole budget is one bar: the chapter's 12 GiB holds the KV pool
    # and auxiliary buffers, and nothing of it is reserved yet
    kv_name = "KV reserved by admitted requests"
    if kv_in_use_bytes is None:
        sizes = sorted({f"{b.kv_pool_bytes / scale:.3g} {unit}" for b in parts})
        kv_name = "KV pool + auxiliary buffers" + (f" ({sizes[0]})" if len(sizes) == 1 else "")
    free = [b.kv_pool_bytes - u for b, u in zip(parts, in_use)]
    named = [b.activation_bytes + b.other_bytes for b in parts]
    rest = [max(b.slack_bytes, 0.0) for b in parts]
    over = [max(-b.slack_bytes, 0.0) for b in parts]

    def bar(name, values, color):
        trace = {"type": "bar", "orientation": "h", "name": name, "y": labels,
                 "x": [x / scale for x in values], "marker": {"color": color},
                 "xaxis": xaxis, "yaxis": yaxis,
                 "hovertemplate": f"{name}: %{{x:.2f}} {unit}<extra></extra>"}
        if hide_empty:
            trace["showlegend"] = any(x > 0 for x in values)
        return trace

    traces = [
        bar("weights M_w", [b.weight_bytes for b in parts], theme.MEMORY_COLORS["weights"]),
        bar(kv_name, in_use, theme.MEMORY_COLORS["kv"]),
        bar("KV pool left free", free, theme.MEMORY_COLORS["free"]),
        bar("activations + graph buffers (M_a + M_u, listed)", named, theme.MEMORY_COLORS["activations"]),
        bar("left for activations, graph buffers, workspace", rest, theme.MEMORY_COLORS["reserve"]),
        bar("over capacity", over, theme.MEMORY_COLORS["over"]),
    ]
    capacity = [b.capacity_bytes / scale for b in parts]
    traces.append({"type": "scatter", "mode": "markers", "name": "capacity C",
                   "x": capacity, "y": labels, "xaxis": xaxis, "yaxis": yaxis,
                   "marker": {"symbol": "line-ns", "size": 34, "color": theme.INK,
                              "line": {"width": 3}},
                   "hovertemplate": f"C = %{{x:.2f}} {unit}<extra></extra>"})
    layout = {"barmode": "stack", "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


@serves("8.1.2")
def memory_budget_figure(budgets, kv_in_use_bytes=None, *, unit: str = "GiB",
                         title: str = "Memory budget of the instance (8.1.2)",
                         hide_empty: bool = False):
    """The 8.1.2 budget as stacked bars: weights, KV (reserved / free), the rest, capacity C
    (``hide_empty``: no legend entry for a part of size zero)."""
    traces, layout = budget_traces(budgets, kv_in_use_bytes, unit=unit, hide_empty=hide_empty)
    # the legend in its own rows at the figure's foot, below the x title (however it wraps)
    layout.update(template=theme.TEMPLATE, title={"text": title}, height=400,
                  margin={"t": 80, "b": 150},
                  legend=theme.foot_legend(),
                  xaxis={"title": {"text": f"memory ({unit})"}},
                  yaxis={"autorange": "reversed"})
    return _go().Figure(data=traces, layout=layout)


def capacity_bar_traces(rows, *, xaxis: str = "x", yaxis: str = "y") -> list:
    """Grouped bars of one request's KV after prefill and reserved at the end (MiB) per type.

    ``rows``: ``calc.kv_capacity_table`` rows (with "name"); the number that fits is the text.
    """
    names = [r["name"] for r in rows]
    return [
        {"type": "bar", "name": "KV after prefill", "x": names,
         "y": [r["prefill_kv_bytes"] / units.MiB for r in rows], "xaxis": xaxis, "yaxis": yaxis,
         "marker": {"color": theme.MEMORY_COLORS["free"]},
         "text": [f"{r['prefill_kv_bytes'] / units.MiB:,.0f} MiB" for r in rows],
         "textposition": "outside"},
        {"type": "bar", "name": "KV reserved for the whole output", "x": names,
         "y": [r["final_kv_bytes"] / units.MiB for r in rows], "xaxis": xaxis, "yaxis": yaxis,
         "marker": {"color": theme.MEMORY_COLORS["kv"]},
         "text": [f"{r['final_kv_bytes'] / units.MiB:,.0f} MiB: {r['fit']} fit" for r in rows],
         "textposition": "outside"},
    ]


@serves("8.1.2")
def kv_capacity_figure(rows, kv_budget_bytes: float,
                       title: str = "KV per request and requests that fit (8.1.2)"):
    """The 8.1.2 capacity table as bars: MiB per request at prefill and reserved, with the fit."""
    traces = capacity_bar_traces(rows)
    layout = {"template": theme.TEMPLATE, "title": {"text": title}, "barmode": "group",
              "height": 380,
              "yaxis": {"title": {"text": "KV of one request (MiB)"}},
              "xaxis": {"title": {"text": f"request type ({kv_budget_bytes / units.GiB:g} GiB "
                                          f"of KV)"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _go().Figure(data=traces, layout=layout)


@serves("8.1.1", "8.1.3")
class RequestTimelinePanel(Panel):
    """Figure 8-2 live: how queueing, prefill, the output interval and inserted prefills move
    the first and the last token against the deadline (8.1.1, 8.1.3)."""

    title = "One request's timeline against its deadline (8.1.1, Figure 8-2)"
    controls = (
        Control("queue_ms", "queue before admission (ms)", "float", ch08.QUEUE_S / units.ms,
                0.0, 3000.0, 10.0),
        Control("prefill_ms", "prefill + first token (ms)", "float", ch08.PREFILL_S / units.ms,
                PASS_FLOOR_MS, 3000.0, 1.0),
        # in 0.01 ms steps: "Try this" 1 sets the engine's 26.26 ms round beside the client's 26.5
        Control("interval_ms", "output interval (ms)", "float", ch08.CLIENT_ITL_S / units.ms,
                5.0, 100.0, 0.01),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 1024, 1),
        Control("inserted_prefills", "other requests' prefills inserted", "int", 0, 0, 40, 1),
        Control("inserted_prefill_ms", "each inserted prefill (ms)", "float",
                ch08.PREFILL_S / units.ms, PASS_FLOOR_MS, 3000.0, 1.0),
        Control("deadline_s", "deadline (s)", "float", ch08.DEADLINE_S, 1.0, 30.0, 0.5),
        # the chapter adds an inserted prefill to the interval; an engine that batches it with
        # this request's decode step pays the pass's shared fixed part once (8.2.2's round)
        Control("inserted_pass", "an inserted prefill runs", "choice", "own",
                options=INSERTED_PASS),
    )
    main_control = "inserted_prefills"
    # room on the right for the request time printed past the longest bar
    base_layout = dict(timeline_layout(["alone", "with inserted prefills"]),
                       margin={"t": 60, "r": 70})

    def compute(self, *, queue_ms, prefill_ms, interval_ms, output_tokens, inserted_prefills,
                inserted_prefill_ms, deadline_s, inserted_pass) -> View:
        q, p, itl = queue_ms * units.ms, prefill_ms * units.ms, interval_ms * units.ms
        own_stall = inserted_prefill_ms * units.ms
        shared_stall = inserted_prefill_stall_s(own_stall, fused=True)
        stall = own_stall if inserted_pass == "own" else shared_stall
        positions = stalled_interval_positions(output_tokens, inserted_prefills)
        alone = timeline_scenario("alone", q, p, itl, output_tokens)
        n_in = len(positions)
        busy = timeline_scenario(f"with {n_in} inserted prefill{'' if n_in == 1 else 's'}", q, p,
                                 itl, output_tokens, stall_s=stall, stalled_intervals=positions)
        times = busy["token_times_s"]
        # t_G - t_a in closed form (equal to calc.request_time_s(times), without re-validating
        # every emission time): each applied insertion adds its prefill time once
        total = calc.lifecycle_request_time_s(q, p, itl, output_tokens,
                                              stall_s=stall * len(positions))
        intervals = calc.inter_token_intervals(times)
        longest = max(intervals) if intervals else 0.0
        base_total = calc.lifecycle_request_time_s(q, p, itl, output_tokens)
        if stall > 0:
            fit = insertable_prefills(q, p, itl, output_tokens, deadline_s, stall)
        else:       # a prefill that rides free in the shared pass costs this request nothing
            fit = max(output_tokens - 1, 0) if base_total <= deadline_s else 0
        numbers = {
            "ttft_s": calc.ttft_s(times),
            "request_time_s": total,
            "longest_interval_ms": longest / units.ms,
            "margin_s": deadline_s - total,
            "meets_deadline": total <= deadline_s,
            "inserted_prefills_applied": len(positions),
            "prefills_that_still_fit": fit,
            # both readings of an inserted prefill, whichever the control shows (8.1.1)
            "own_pass_request_time_s": base_total + own_stall * len(positions),
            "shared_pass_request_time_s": base_total + shared_stall * len(positions),
            "stall_per_insert_ms": stall / units.ms,
            "below_read_floor": itl < READ_FLOOR_S,
        }
        traces, layout = timeline_traces([alone, busy], deadline_s)
        verdict = "meets" if numbers["meets_deadline"] else "<b>misses</b>"
        text = (f"TTFT: <b>{numbers['ttft_s']:.3f} s</b><br>"
                f"{output_tokens - 1} output intervals, longest "
                f"{numbers['longest_interval_ms']:.1f} ms<br>"
                f"request time: <b>{total:.2f} s</b> ({verdict} the {deadline_s:g} s deadline, "
                f"margin {numbers['margin_s']:+.2f} s)<br>"
                f"alone it takes {base_total:.2f} s; inserted prefills of "
                f"{inserted_prefill_ms:g} ms that still fit: {numbers['prefills_that_still_fit']}"
                f"<br>each adds {stall / units.ms:.1f} ms ("
                + ("a pass of its own" if inserted_pass == "own" else
                   f"in the shared pass; on its own it would add {inserted_prefill_ms:g} ms")
                + ")")
        if numbers["below_read_floor"]:
            text += (f"<br><b>below the read floor</b>: reading the weights and this request's "
                     f"KV once at peak bandwidth takes {READ_FLOOR_S / units.ms:.2f} ms (8.6.3), "
                     f"so no decode step on this card is that short")
        return View(numbers=numbers, traces=traces, text=text,
                    layout={"yaxis": layout["yaxis"]})


# --- 8.1.2 memory budget ------------------------------------------------------------------------

_SWEEP_PROMPTS = np.unique(np.geomspace(128, 131072, 41).astype(int) // 16 * 16)
# 1-3 ticks for the request counts on a log axis (the axis shows the ones its range reaches)
_COUNT_TICKS = [m * 10 ** e for e in range(6) for m in (1, 3)]


@serves("8.1.2")
class MemoryBudgetPanel(Panel):
    """M_w + M_KV + M_a + M_u <= C for the chapter's 32 GiB instance, and how many requests'
    end-of-generation KV fits in the KV pool (8.1.2)."""

    title = "Memory budget and KV capacity (8.1.2)"
    controls = (
        MODELS.control(specs.QWEN3_8B.name),
        Control("kv_precision", "KV format", "choice", 2.0, options=KV_PRECISIONS),
        Control("prompt_tokens", "prompt (tokens)", "int", ch08.SHORT_PROMPT_TOKENS, 16, 131072,
                16),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 8192, 1,
                extra_stops=(300,)),              # "Try this" 4: 300 outputs
        Control("block_tokens", "KV block (tokens)", "int", ch08.BLOCK_TOKENS, 1, 256, 1),
        Control("kv_budget_gib", "KV pool + auxiliary (GiB)", "float",
                ch08.KV_BUDGET_BYTES / units.GiB, 0.5, 80.0, 0.5),
        Control("instance_gib", "instance memory C (GiB)", "float",
                ch08.INSTANCE_MEM_BYTES / units.GiB, 8.0, 89.0, 0.5),
        config_control(),
    )
    main_control = "prompt_tokens"
    base_layout = {
        "height": 560, "barmode": "stack",
        "xaxis": {"title": {"text": "memory (GiB)"}, "domain": [0, 1], "anchor": "y"},
        "yaxis": {"domain": [0.68, 1.0], "anchor": "x"},
        "xaxis2": {"title": {"text": "prompt length (tokens)"}, "type": "log", "anchor": "y2"},
        # log: the counts run from hundreds at short prompts to a few at long ones, and the
        # chapter's own points (37 and 10) sit at the bottom of a linear axis; a count of 0
        # (a request larger than the pool) has no place on it and ends the curve
        "yaxis2": {"title": {"text": "requests that fit (log scale)"}, "type": "log",
                   "domain": [0.0, 0.48], "anchor": "x2", "tickmode": "array",
                   "tickvals": _COUNT_TICKS, "ticktext": [f"{t:,}" for t in _COUNT_TICKS]},
        "legend": {"orientation": "h", "y": -0.18},
    }

    def compute(self, *, model, kv_precision, prompt_tokens, output_tokens, block_tokens,
                kv_budget_gib, instance_gib, config_json) -> View:
        m, source = MODELS.pick(model, config_json)
        pool = kv_budget_gib * units.GiB
        kw = dict(block_tokens=block_tokens, bytes_per_value=kv_precision)
        budget = calc.memory_budget(instance_gib * units.GiB, m.weight_bytes, pool)
        row = kv_capacity_row(m, pool, prompt_tokens, output_tokens, **kw)
        in_use = row["fit"] * row["final_kv_bytes"]
        traces, _ = budget_traces([(f"instance ({instance_gib:g} GiB)", budget)], [in_use],
                                  hide_empty=True)
        reserved = [calc.max_concurrent(pool, m, int(p), output_tokens, **kw)
                    for p in _SWEEP_PROMPTS]
        at_prefill = [int(pool // calc.kv_bytes(m, int(p), **kw)) for p in _SWEEP_PROMPTS]
        # fuller (8.1.2): what requests at staggered points of their answers hold on average
        by_mean = [kv_held_over_answer(m, pool, int(p), output_tokens, **kw)["fit_by_mean"]
                   for p in _SWEEP_PROMPTS]
        held = kv_held_over_answer(m, pool, prompt_tokens, output_tokens, **kw)
        xs = _SWEEP_PROMPTS
        traces += [
            {"type": "scatter", "x": xs, "y": np.asarray(reserved), "mode": "lines", "xaxis": "x2",
             "yaxis": "y2", "name": "fit, reserving KV for the whole output",
             "line": {"shape": "hv", "color": theme.GREEN}},
            {"type": "scatter", "x": xs, "y": np.asarray(at_prefill), "mode": "lines",
             "xaxis": "x2",
             "yaxis": "y2", "name": "fit if sized at prefill (runs out mid-generation)",
             "line": {"shape": "hv", "dash": "dot", "color": theme.GREY}},
            {"type": "scatter", "x": xs, "y": np.asarray(by_mean), "mode": "lines",
             "xaxis": "x2", "yaxis": "y2",
             "name": "fit on average, by what they hold mid-answer (fuller)",
             "line": {"shape": "hv", "dash": "dash", "color": theme.ORANGE}},
            {"type": "scatter", "x": [prompt_tokens], "y": [row["fit"]], "mode": "markers",
             "xaxis": "x2", "yaxis": "y2", "name": "this setting",
             "marker": {"size": 11, "color": theme.NAVY}},
        ]
        per_token = calc.kv_bytes_per_token(m, kv_precision)
        numbers = {
            "kv_per_token_KiB": per_token / units.KiB,
            "after_prefill_MiB": row["prefill_kv_bytes"] / units.MiB,
            "held_tokens": row["computed_tokens"],
            "allocated_tokens": row["allocated_tokens"],
            "reserved_MiB": row["final_kv_bytes"] / units.MiB,
            "requests_that_fit": row["fit"],
            "fit_if_sized_at_prefill": row["fit_if_sized_at_prefill"],
            "those_at_the_end_MiB": row["final_bytes_if_sized_at_prefill"] / units.MiB,
            "weights_GiB": m.weight_bytes / units.GiB,
            "left_for_activations_GiB": budget.slack_bytes / units.GiB,
            # fuller (8.1.2): the reservation against what a request holds on average
            "mean_held_MiB": held["mean_held_bytes"] / units.MiB,
            "reservation_used_on_average": held["used_share"],
            "fit_by_mean_holding": held["fit_by_mean"],
        }
        fits = "fits" if budget.fits else "<b>does not fit</b>"
        text = (f"<b>{m.name}</b>, KV {per_token / units.KiB:,.1f} KiB per token<br>"
                f"after prefill {numbers['after_prefill_MiB']:,.0f} MiB; holds "
                f"{row['computed_tokens']:,} tokens at the end -> {row['allocated_tokens']:,} in "
                f"{block_tokens}-token blocks = <b>{numbers['reserved_MiB']:,.0f} MiB</b><br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{row['fit']}</b> (sized at prefill: "
                f"{row['fit_if_sized_at_prefill']}, which would grow to "
                f"{numbers['those_at_the_end_MiB']:,.0f} MiB)<br>"
                f"weights {numbers['weights_GiB']:.1f} GiB + KV {kv_budget_gib:g} GiB in "
                f"{instance_gib:g} GiB: {fits}, "
                f"{numbers['left_for_activations_GiB']:+.1f} GiB left for activations/graphs"
                f"<br>on average over its answer it holds {numbers['mean_held_MiB']:,.0f} MiB "
                f"({held['used_share']:.0%} of the reservation): {held['fit_by_mean']} would "
                f"fit by that" + source)
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.1.2 / 8.3.2: how many requests' KV fits, independent vs shared prefix --------------------

# the same models and KV formats (bytes per stored value, metadata included) as the budget above
_CAPACITY_PROMPTS = np.unique(np.geomspace(256, 65536, 49).astype(int) // 16 * 16)


class KVCapacityPanel(Panel):
    """Requests that fit in the KV budget as the prompt grows, with and without a shared prefix."""

    title = "KV capacity: requests that fit in the budget (8.1.2, 8.3.2)"
    controls = (
        MODELS.control(specs.QWEN3_8B.name),
        Control("precision", "KV format", "choice", 2.0, options=KV_PRECISIONS),
        Control("prompt_tokens", "prompt (tokens)", "int", ch08.LONG_PROMPT_TOKENS, 256, 65536,
                256),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 4096, 1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                ch08.SHARED_PREFIX_TOKENS, 0, 65536, 256),
        Control("block_tokens", "block size (tokens)", "int", ch08.BLOCK_TOKENS, 1, 256, 1),
        Control("kv_budget_gib", "KV budget (GiB)", "float",
                units.to_unit(ch08.KV_BUDGET_BYTES, "GiB"), 1.0, 80.0, 0.5),
        config_control(),
    )
    main_control = "prompt_tokens"
    base_layout = {
        "xaxis": {"title": {"text": "prompt length (tokens)"}, "type": "log"},
        # log: a few requests at long prompts and hundreds at short ones (or with the whole
        # prompt shared) on one axis, the chapter's 10 and 35 apart; a count of 0 ends a curve
        "yaxis": {"title": {"text": "requests that fit (log scale)"}, "type": "log",
                  "tickmode": "array", "tickvals": _COUNT_TICKS,
                  "ticktext": [f"{t:,}" for t in _COUNT_TICKS]},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, model, precision, prompt_tokens, output_tokens, shared_prefix_tokens,
                block_tokens, kv_budget_gib, config_json) -> View:
        m, source = MODELS.pick(model, config_json)
        budget = kv_budget_gib * units.GiB
        prefix = shared_prefix_tokens
        kw = dict(block_tokens=block_tokens, bytes_per_value=precision)

        def holds_prefix(p: int) -> bool:
            # a prompt shares the prefix only if it contains it, and a request keeps at least
            # one token of its own (the prefix never covers all it holds)
            return p >= prefix and calc.held_tokens(p, output_tokens) > prefix

        independent = [calc.max_concurrent(budget, m, int(p), output_tokens, **kw)
                       for p in _CAPACITY_PROMPTS]
        # the shared curve starts at the prefix itself: shorter prompts cannot contain it
        shared_x = [p for p in sorted({prefix, *(int(p) for p in _CAPACITY_PROMPTS)})
                    if _CAPACITY_PROMPTS[0] <= p <= _CAPACITY_PROMPTS[-1] and holds_prefix(p)]
        shared = [calc.max_concurrent(budget, m, p, output_tokens,
                                      shared_prefix_tokens=prefix, **kw) for p in shared_x]
        n_ind = calc.max_concurrent(budget, m, prompt_tokens, output_tokens, **kw)
        n_shared = (calc.max_concurrent(budget, m, prompt_tokens, output_tokens,
                                        shared_prefix_tokens=prefix, **kw)
                    if holds_prefix(prompt_tokens) else None)
        per_token = calc.kv_bytes_per_token(m, precision)
        after_prefill = calc.kv_bytes(m, prompt_tokens, **kw)
        after_generation = calc.kv_bytes(m, calc.held_tokens(prompt_tokens, output_tokens), **kw)
        numbers = {
            "kv_per_token_KiB": per_token / units.KiB,
            "after_prefill_MiB": after_prefill / units.MiB,
            "after_generation_MiB": after_generation / units.MiB,
            "independent_requests": n_ind,
            # None where the prompt is shorter than the prefix: there is nothing to share
            "shared_prefix_requests": n_shared,
        }
        shared_text = (f"<b>{n_shared}</b> with the {prefix:,}-token prefix shared"
                       if n_shared is not None else
                       f"no shared count: a {prompt_tokens:,}-token prompt cannot contain a "
                       f"{prefix:,}-token prefix")
        text = (f"<b>{m.name}</b><br>KV per token: {numbers['kv_per_token_KiB']:,.1f} KiB<br>"
                f"one request after prefill: {numbers['after_prefill_MiB']:,.0f} MiB<br>"
                f"after {output_tokens} outputs (reserved): "
                f"{numbers['after_generation_MiB']:,.0f} MiB<br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{n_ind}</b> independent; {shared_text}"
                + source)
        traces = [
            {"type": "scatter", "x": _CAPACITY_PROMPTS.tolist(), "y": independent,
             "mode": "lines", "name": "independent contexts", "line": {"shape": "hv"}},
            {"type": "scatter", "x": shared_x, "y": shared, "mode": "lines",
             "name": f"{prefix:,}-token prefix stored once (prompts that contain it)",
             "line": {"shape": "hv", "dash": "dash"}},
            {"type": "scatter", "x": [prompt_tokens] * (1 if n_shared is None else 2),
             "y": [n_ind] + ([] if n_shared is None else [n_shared]),
             "mode": "markers", "name": "this setting", "marker": {"size": 11}},
        ]
        return View(numbers=numbers, traces=traces, text=text)
