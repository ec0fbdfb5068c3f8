"""17 §6's explorer home (notebook 17_06_batching_strategies): batching strategies on one
simulated queue, and chunked prefill.

Figures (plotly, deterministic): ``batching_gantt_figure`` (``slot_gantt_traces`` over
``batch_slots``, a slot per row of a simulated ``Result``) and ``chunk_trade_traces`` (worst ITL
and TTFT against the chunk size, closed form beside the simulator).

Panels: ``BatchingTracePanel`` (one queue under static and continuous batching on the
scheduler simulator: slot Gantt charts, utilization, makespan, TTFT; the queue comes from
``sim.scenarios.batching_trace_requests``), ``ChunkSizePanel`` (``calc.chunked_prefill_trade``
and ``calc.chunk_trade_sweep`` beside ``sim.long_prompt_interference``, with the fuller
``calc.fused_chunk_sweep`` dotted: one pass per iteration, weights read once, attention counted).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import discrete_colorscale, stacked_axes
from companion.explorers.common import titled_figure as _fig
from companion.explorers.common import to_ms as _ms
from companion.formulas.performance import chunk_trade_sweep, fused_chunk_sweep
from companion.serves import serves
from companion.sim.round_time import StepPlusPrefillRoundTime
from companion.sim.scenarios import (
    CH17_STATIC_BATCH,
    CH17_STATIC_LONGEST,
    CH17_STATIC_SHORTEST,
    TRACE_PROMPT_TOKENS,
    TRACE_REQUESTS,
    batching_trace,
    batching_trace_requests,
    long_prompt_interference,
)

__all__ = ["batch_slots", "slot_gantt_traces", "batching_gantt_figure", "chunk_trade_traces",
           "BatchingTracePanel", "ChunkSizePanel"]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.6"


# --- §6 static vs continuous: a slot Gantt of a simulated queue -------------------------------

_PALETTE_SCALE = discrete_colorscale(theme.REQUEST_PALETTE)


def batch_slots(result, *, tolerance_s: float = 1e-9) -> list[tuple]:
    """Assign each request of a scheduler ``Result`` to a batch slot, for drawing.

    Returns (slot, request id, start_s, finish_s) per request that ran, where start is its first
    prompt round and finish its last token; a request takes the lowest-numbered slot whose
    previous occupant finished by its start (the simulator frees a slot at a round boundary,
    so a slot is reused at the very time its previous occupant's last round ends).
    """
    tol = v.nonnegative("tolerance_s", tolerance_s)
    start, finish = result.first_scheduled_s, result.finish_s
    order = sorted((k for k in range(len(result.ids)) if not math.isnan(start[k])),
                   key=lambda k: (start[k], k))
    free_at: list[float] = []     # per slot: when its last occupant finished
    rows = []
    for k in order:
        slot = next((i for i, t in enumerate(free_at) if t <= start[k] + tol), None)
        if slot is None:
            slot = len(free_at)
            free_at.append(0.0)
        end = finish[k] if not math.isnan(finish[k]) else result.makespan_s
        free_at[slot] = end
        rows.append((slot, result.ids[k], float(start[k]), float(end)))
    return rows


def slot_gantt_traces(result, *, xaxis: str = "x", yaxis: str = "y",
                      show_legend: bool = True) -> list:
    """Bars (seconds) of a simulated batch, one row per slot: each request from its first
    prompt round to its last token (labelled with its id), idle stretches in grey.

    Idle: a slot between one occupant's last token and the next occupant's start, or after its
    last occupant until the whole run ends.
    """
    rows = batch_slots(result)
    end = result.makespan_s
    per_slot: dict[int, list] = {}
    for slot, rid, s, e in rows:
        per_slot.setdefault(slot, []).append((s, e))
    idle = []
    for slot, spans in sorted(per_slot.items()):
        cursor = 0.0
        for s, e in spans:
            if s > cursor + 1e-9:
                idle.append((slot, cursor, s))
            cursor = max(cursor, e)
        if end > cursor + 1e-9:
            idle.append((slot, cursor, end))
    index = {rid: k for k, rid in enumerate(result.ids)}
    label = [f"slot {r[0] + 1}" for r in rows]
    traces = [
        {"type": "bar", "orientation": "h", "y": label, "base": [r[2] for r in rows],
         "x": [r[3] - r[2] for r in rows], "text": [str(r[1]) for r in rows],
         "textposition": "inside", "insidetextanchor": "middle", "textangle": 0,
         "name": "a request (its id)",
         # numeric colours through a discrete colour scale: plotly validates a list of
         # numbers far faster than a list of colour strings
         "marker": {"color": [index[r[1]] % len(theme.REQUEST_PALETTE) for r in rows],
                    "colorscale": _PALETTE_SCALE, "cmin": -0.5,
                    "cmax": len(theme.REQUEST_PALETTE) - 0.5,
                    "line": {"color": theme.WHITE, "width": 1}},
         "hovertemplate": "%{text}: %{base:.2f} s + %{x:.2f} s<extra></extra>",
         "xaxis": xaxis, "yaxis": yaxis, "legendgroup": "req", "showlegend": show_legend,
         "width": 0.7},
        {"type": "bar", "orientation": "h", "y": [f"slot {i[0] + 1}" for i in idle],
         "base": [i[1] for i in idle], "x": [i[2] - i[1] for i in idle],
         "name": "slot idle (no token produced)",
         "marker": {"color": theme.SERVING_COLORS["idle"], "line": {"color": theme.WHITE, "width": 1}},
         "hovertemplate": "idle: %{base:.2f} s + %{x:.2f} s<extra></extra>",
         "xaxis": xaxis, "yaxis": yaxis, "legendgroup": "idle", "showlegend": show_legend,
         "width": 0.7},
    ]
    return traces


def _stacked_gantt_axes(labels) -> tuple[dict, list]:
    """``stacked_axes`` for slot Gantts sharing one time axis: only the bottom subplot carries
    the "time (s)" title, so an upper one's title cannot sit on the next subplot's label."""
    labels = list(labels)
    layout, notes = stacked_axes(len(labels), labels)
    for i in range(len(labels) - 1):
        layout["xaxis" if i == 0 else f"xaxis{i + 1}"].pop("title", None)
    return layout, notes


@serves("17.6")
def batching_gantt_figure(results, *, title: str = "Static vs continuous batching on one "
                                                   "simulated queue (17 §6)"):
    """Stacked slot Gantt charts, one per policy: ``results`` maps a label to a Result."""
    results = dict(results)
    traces = []
    layout, notes = _stacked_gantt_axes(results.keys())
    for i, result in enumerate(results.values()):
        ax = "" if i == 0 else str(i + 1)
        traces += slot_gantt_traces(result, xaxis=f"x{ax}", yaxis=f"y{ax}", show_legend=i == 0)
    n_slots = max(len({r[0] for r in batch_slots(res)}) for res in results.values())
    # 30 px a slot: a bar tall enough for its id upright at plotly's smallest uniform size
    layout.update({"barmode": "overlay", "height": 110 + len(results) * (40 + 30 * n_slots),
                   "legend": {"orientation": "h", "y": -0.12}, "annotations": notes,
                   "uniformtext": {"minsize": 8, "mode": "hide"}})
    return _fig(traces, layout, title)


def _trace_numbers(results: dict, slots: int | None = None) -> dict:
    """Per policy: slot-steps, utilization, makespan and TTFTs. With ``slots``, utilization is
    useful slot-steps over ``slots`` x the rounds run (the makespan), so an idle tail counts
    for both policies; without, over the slot-steps each policy held."""
    out = {}
    for policy, res in results.items():
        run, useful = res.slot_steps()
        if slots is not None:
            run = slots * res.n_rounds
        ttft = np.array(list(res.ttft_s.values()))
        out[f"{policy}_slot_steps_run"] = run
        out[f"{policy}_slot_steps_useful"] = useful
        out[f"{policy}_utilization_pct"] = 100 * useful / run if run else math.nan
        out[f"{policy}_makespan_s"] = res.makespan_s
        out[f"{policy}_mean_ttft_s"] = float(ttft.mean())
        out[f"{policy}_max_ttft_s"] = float(ttft.max())
    return out


@serves("17.6")
class BatchingTracePanel(Panel):
    """17 §6 simulated: static batching pads every group to its longest member, continuous
    batching refills a slot at the next token boundary."""

    title = "Static vs continuous batching, simulated (17 §6)"
    controls = (
        Control("n_requests", "requests in the queue", "int", TRACE_REQUESTS, 1, 48, 1),
        Control("slots", "batch slots", "int", CH17_STATIC_BATCH, 1, 16, 1),
        # "Try this" 1 makes both outputs 450 tokens
        Control("shortest", "shortest output (tokens)", "int", CH17_STATIC_SHORTEST, 1, 2000, 10,
                extra_stops=(450,)),
        Control("longest", "longest output (tokens)", "int", CH17_STATIC_LONGEST, 1, 2000, 10,
                extra_stops=(450,)),
        Control("prompt_tokens", "prompt (tokens)", "int", TRACE_PROMPT_TOKENS, 16, 4096, 16),
        Control("arrival_gap_ms", "gap between arrivals (ms)", "float", 0.0, 0.0, 500.0, 10.0),
    )
    main_control = "slots"
    base_layout = {"barmode": "overlay", "height": 620, "legend": {"orientation": "h", "y": -0.1},
                   "uniformtext": {"minsize": 8, "mode": "hide"}}

    def compute(self, *, n_requests, slots, shortest, longest, prompt_tokens,
                arrival_gap_ms) -> View:
        reqs = batching_trace_requests(n_requests, slots, shortest, longest,
                                       prompt_tokens=prompt_tokens,
                                       arrival_gap_s=arrival_gap_ms * units.ms)
        results = batching_trace(reqs, slots)
        labels = {"static": "static: a group runs until its longest member finishes",
                  "continuous": "continuous: a freed slot is refilled at the next step"}
        traces = []
        layout, notes = _stacked_gantt_axes([labels[p] for p in results])
        for i, res in enumerate(results.values()):
            ax = "" if i == 0 else str(i + 1)
            traces += slot_gantt_traces(res, xaxis=f"x{ax}", yaxis=f"y{ax}", show_legend=i == 0)
        layout["annotations"] = notes
        group = calc.static_batch_slot_steps(
            [r.output_tokens for r in reqs[:min(slots, n_requests)]])
        numbers = {"first_group_utilization_pct": 100 * group["utilization"],
                   **_trace_numbers(results, slots)}
        text = (f"<b>{n_requests} requests, {slots} slots</b> (simulated)<br>"
                f"closed form, first group: {group['useful']:,} of {group['run']:,} "
                f"slot-steps useful = <b>{numbers['first_group_utilization_pct']:.0f}%</b><br>")
        for p in results:
            text += (f"{p}: utilization over the run {numbers[f'{p}_utilization_pct']:.0f}%, "
                     f"all done at {numbers[f'{p}_makespan_s']:.2f} s, mean TTFT "
                     f"{numbers[f'{p}_mean_ttft_s']:.2f} s (worst "
                     f"{numbers[f'{p}_max_ttft_s']:.2f} s)<br>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# --- §6 chunked prefill: worst ITL and TTFT against the chunk size ----------------------------

def chunk_trade_traces(sweep: dict, selected: dict, *, itl_timelines=None,
                       fused: dict | None = None) -> tuple[list, dict]:
    """Chunked prefill's trade against the chunk size, closed form (lines) and simulator (markers),
    and optionally the simulated output intervals of one in-flight decode (right panel).

    ``sweep``: chunk_tokens, iteration_s, ttft_s (closed form per chunk size) and the unchunked
    dedicated_s; ``selected``: chunk_tokens, closed-form iteration_s / ttft_s, simulated
    sim_itl_s / sim_ttft_s. ``itl_timelines``: {label: (token times s, intervals s)}.
    ``fused``: the fuller model's sweep (``calc.fused_chunk_sweep``: one forward pass per
    iteration, weights read once, attention counted), drawn dotted beside the closed form.
    """
    xs = [int(c) for c in sweep["chunk_tokens"]]
    ded = sweep["dedicated_s"] / units.ms
    c = int(selected["chunk_tokens"])
    traces = [
        # ITL's markers are circles, TTFT's squares; the dash says which model
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(sweep["iteration_s"]),
         "name": "worst ITL, closed form (decode step + one chunk)",
         "line": {"color": theme.SERVING_COLORS["decode"], "width": 3},
         "marker": {"symbol": "circle", "size": 7, "maxdisplayed": 12}},
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(sweep["ttft_s"]),
         "name": "long prompt's TTFT, closed form (chunks x iteration)",
         "line": {"color": theme.SERVING_COLORS["prefill"], "width": 3},
         "marker": {"symbol": "square", "size": 7, "maxdisplayed": 12}},
    ]
    if fused is not None:
        fx = [int(x) for x in fused["chunk_tokens"]]
        traces += [
            {"type": "scatter", "mode": "lines+markers", "x": fx, "y": _ms(fused["worst_itl_s"]),
             "name": "worst ITL, fused pass (weights once, attention counted)",
             "line": {"color": theme.SERVING_COLORS["decode"], "width": 2, "dash": "dot"},
             "marker": {"symbol": "circle-open", "size": 7, "maxdisplayed": 12}},
            {"type": "scatter", "mode": "lines+markers", "x": fx, "y": _ms(fused["ttft_s"]),
             "name": "TTFT, fused pass (sum of the chunk passes)",
             "line": {"color": theme.SERVING_COLORS["prefill"], "width": 2, "dash": "dot"},
             "marker": {"symbol": "square-open", "size": 7, "maxdisplayed": 12}},
        ]
    traces += [
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [ded, ded],
         "name": "unchunked: whole prefill (stall and TTFT)",
         "line": {"color": theme.SERVING_COLORS["comm"], "dash": "dash"}},
        {"type": "scatter", "mode": "markers", "x": [c, c],
         "y": [selected["sim_itl_s"] / units.ms, selected["sim_ttft_s"] / units.ms],
         "name": "simulated (companion scheduler)", "text": ["worst ITL", "TTFT"],
         "marker": {"symbol": "diamond-open", "size": 13, "color": theme.INK,
                    "line": {"width": 2}},
         "hovertemplate": "%{text}: %{y:.1f} ms (simulated)<extra></extra>"},
    ]
    layout = {
        "xaxis": {"title": {"text": "chunk size (tokens)"}, "type": "log",
                  "domain": [0, 0.5] if itl_timelines else [0, 1]},
        "yaxis": {"title": {"text": "time (ms)"}, "type": "log"},
        "legend": {"orientation": "h", "y": -0.25},
    }
    if itl_timelines:
        colours = (theme.SERVING_COLORS["comm"], theme.SERVING_COLORS["decode"])
        for i, (label, (times, gaps)) in enumerate(itl_timelines.items()):
            traces.append({"type": "scatter", "mode": "lines+markers", "x": _ms(times),
                           "y": _ms(gaps), "name": label, "xaxis": "x2", "yaxis": "y2",
                           "line": {"shape": "hv", "color": colours[i % 2],
                                    "dash": ("solid", "dash")[i % 2]},
                           "marker": {"size": 4, "symbol": ("circle", "square")[i % 2]}})
        layout["xaxis2"] = {"title": {"text": "emission time of the token (ms, simulated)"},
                            "domain": [0.6, 1], "anchor": "y2"}
        layout["yaxis2"] = {"title": {"text": "interval before it (ms)"}, "anchor": "x2",
                            "type": "log"}
    return traces, layout


@lru_cache(maxsize=16)
def _unchunked(prompt_tokens: int, decode_step_s: float, efficiency: float) -> tuple:
    """What does not depend on the chunk size (cached while the chunk slider moves): the
    closed-form sweep and the simulated admission of the whole prompt."""
    m, hw = specs.LLAMA_8B, specs.H100_SXM
    sweep = chunk_trade_sweep(prompt_tokens, decode_step_s, efficiency=efficiency)
    rt = StepPlusPrefillRoundTime.from_hardware(m, hw, decode_step_s=decode_step_s,
                                                      mfu=efficiency)
    batch = calc.decode_batch_for_step(m, hw, decode_step_s)
    fused = fused_chunk_sweep(prompt_tokens, decode_batch=batch,
                              decode_context_tokens=ch17.CHAT_LIVE_TOKENS,
                              efficiency=efficiency, model=m, hardware=hw)
    return sweep, long_prompt_interference(prompt_tokens, None, round_time=rt), batch, fused


@serves("17.6")
class ChunkSizePanel(Panel):
    """17 §6: the chunk size trades the batch's worst ITL against the long prompt's TTFT."""

    title = "Chunked prefill: the chunk-size knob (17 §6, 8B on an H100 SXM)"
    controls = (
        Control("prompt_tokens", "long prompt (tokens)", "int", ch17.LONG_CONTEXT_TOKENS,
                1000, 32_000, 250),
        Control("chunk_tokens", "chunk size (tokens)", "int", ch17.CHUNK_TOKENS, 32, 8192, 32),
        Control("decode_step_ms", "decode step of the running batch (ms)", "float",
                ch17.DECODE_STEP_S / units.ms, 1.0, 30.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 10.0, 100.0, 5.0),
    )
    main_control = "chunk_tokens"
    base_layout = {"height": 480}

    def compute(self, *, prompt_tokens, chunk_tokens, decode_step_ms, efficiency_pct) -> View:
        m, hw = specs.LLAMA_8B, specs.H100_SXM
        step, eff = decode_step_ms * units.ms, efficiency_pct / 100
        trade = calc.chunked_prefill_trade(m, hw, prompt_tokens, chunk_tokens, step,
                                           efficiency=eff)
        sweep, whole, batch, fused_sweep = _unchunked(prompt_tokens, step, eff)
        fused = calc.fused_chunked_prefill(m, hw, prompt_tokens, chunk_tokens,
                                           decode_batch=batch,
                                           decode_context_tokens=ch17.CHAT_LIVE_TOKENS,
                                           efficiency=eff)
        rt = StepPlusPrefillRoundTime.from_hardware(m, hw, decode_step_s=step, mfu=eff)
        chunked = long_prompt_interference(prompt_tokens, chunk_tokens, round_time=rt)
        timelines = {}
        for label, run in (("simulated, whole prompt in one round", whole),
                           (f"simulated, {chunk_tokens}-token chunks", chunked)):
            res = run["result"]
            times = res.token_times["d0"]
            timelines[label] = (times[1:], res.itl_s["d0"])
        selected = {"chunk_tokens": chunk_tokens, "iteration_s": trade["iteration_s"],
                    "ttft_s": trade["ttft_s"], "sim_itl_s": chunked["worst_decode_itl_s"],
                    "sim_ttft_s": chunked["long_ttft_s"]}
        traces, layout = chunk_trade_traces(sweep, selected, itl_timelines=timelines,
                                            fused=fused_sweep)
        numbers = {
            "chunks": trade["chunks"], "chunk_ms": trade["chunk_s"] / units.ms,
            "iteration_ms": trade["iteration_s"] / units.ms,
            "dedicated_ms": trade["dedicated_s"] / units.ms,
            "itl_improvement": trade["itl_improvement"], "ttft_ms": trade["ttft_s"] / units.ms,
            "ttft_increase_pct": 100 * trade["ttft_increase"],
            "sim_worst_itl_ms": chunked["worst_decode_itl_s"] / units.ms,
            "sim_ttft_ms": chunked["long_ttft_s"] / units.ms,
            "sim_unchunked_worst_itl_ms": whole["worst_decode_itl_s"] / units.ms,
            "sim_unchunked_ttft_ms": whole["long_ttft_s"] / units.ms,
            "fused_decode_batch": batch,
            "fused_first_itl_ms": fused["first_itl_s"] / units.ms,
            "fused_worst_itl_ms": fused["worst_itl_s"] / units.ms,
            "fused_ttft_ms": fused["ttft_s"] / units.ms,
            "fused_alone_ms": fused["alone_s"] / units.ms,
            "fused_ttft_increase_pct": 100 * fused["ttft_increase"],
            "fused_memory_bound_chunks": fused["memory_bound_chunks"],
        }
        text = (f"<b>closed form</b>: {numbers['chunks']} chunks of "
                f"{numbers['chunk_ms']:.1f} ms; iteration {numbers['iteration_ms']:.1f} ms<br>"
                f"worst ITL {numbers['dedicated_ms']:.0f} -> {numbers['iteration_ms']:.1f} ms "
                f"({numbers['itl_improvement']:.1f}x better)<br>"
                f"TTFT {numbers['ttft_ms']:.0f} ms vs {numbers['dedicated_ms']:.0f} ms "
                f"dedicated ({numbers['ttft_increase_pct']:+.0f}%)<br>"
                f"<b>simulated</b>: worst ITL {numbers['sim_worst_itl_ms']:.1f} ms (unchunked "
                f"{numbers['sim_unchunked_worst_itl_ms']:.0f} ms), TTFT "
                f"{numbers['sim_ttft_ms']:.0f} ms<br>"
                f"<b>fused pass</b> ({batch} decode sequences of "
                f"{ch17.CHAT_LIVE_TOKENS} tokens, attention counted): first chunk "
                f"{numbers['fused_first_itl_ms']:.1f} ms, worst {numbers['fused_worst_itl_ms']:.1f}"
                f" ms; TTFT {numbers['fused_ttft_ms']:.0f} ms vs {numbers['fused_alone_ms']:.0f}"
                f" ms alone ({numbers['fused_ttft_increase_pct']:+.0f}%); "
                f"{numbers['fused_memory_bound_chunks']} of {numbers['chunks']} passes "
                f"memory-bound")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
