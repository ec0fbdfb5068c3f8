"""8.2 explorers: batching's read volume and step time, chunked prefill, the token budget, and
the scheduling policies of 8.2.2 on the companion's simulator.

``DecodeBatchPanel``: model, hardware, context, KV format, weights in HBM or ROM, batch ->
Figures 8-3/8-4 and the decode roofline with Experiment 8-1's measurements (8.2.1).
``ChunkedPrefillPanel``: prompt, chunk size, decodes running alongside -> pairs and round time
per chunk (8.2.3, Figure 8-8).
``TokenBudgetPanel``: permitted interval, decodes, contexts, captured graph shapes -> new prompt
tokens a round may add (8.2.4).
``SchedulePanel``: policy, chunk size, token budget, concurrency -> Gantt of the four-request
example with total time and longest interval (8.2.2), simulated.
``BudgetSweepPanel``: six staggered requests -> longest interval and queueing vs token budget
(8.2.4), simulated (the chapter's replay data is not printed).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from companion import calc, specs, units
from companion.chapters.ch08 import BATCH_SWEEP_MEASURED
from companion.figures.ch08_lifecycle import PHASE_COLORS
from companion.figures.ch08_batching import (_batch_axis, budget_sweep_traces, chunk_cost_traces,
                                             gantt_traces, read_volume_traces, step_time_traces,
                                             token_budget_traces)
from companion.formulas import batching as bt
from companion.formulas import serving
from companion.explorers.base import Control, Panel, View
from companion.explorers.ch08_lifecycle import KV_PRECISIONS, MODELS

__all__ = ["DecodeBatchPanel", "ChunkedPrefillPanel", "TokenBudgetPanel", "SchedulePanel",
           "BudgetSweepPanel", "BATCH_SWEEP_MEASURED", "chapter_batch_sweep", "chapter_schedules",
           "SWEEP_BUDGETS"]

HARDWARE = {h.name: h for h in (specs.RTX_PRO_6000, specs.H100_SXM, specs.H200_SXM,
                                specs.A100_80GB)}

_BATCHES = np.unique(np.geomspace(1, 256, 48).round().astype(int)).tolist()


def chapter_batch_sweep() -> list[dict]:
    """The 8.2.1 batch sweep's measured endpoints next to what a request timeline implies.

    Per measured batch b: the quoted TTFT, ITL and throughput, and b G / (TTFT + (G - 1) ITL)
    (``calc.lifecycle_request_time_s`` with no queue): what b requests finishing together would
    deliver. The quoted values are rounded medians, so the two agree only roughly.
    """
    d = BATCH_SWEEP_MEASURED
    g = d["output_tokens"]
    rows = []
    for b, thr, ttft, itl in zip(d["batch"], d["tokens_per_s"], d["ttft_s"], d["itl_s"]):
        request_s = calc.lifecycle_request_time_s(0.0, ttft, itl, g)
        rows.append({"batch": b, "tokens_per_s": thr, "ttft_s": ttft, "itl_s": itl,
                     "request_time_s": request_s, "implied_tokens_per_s": b * g / request_s})
    return rows


def _measurement_traces_apply(model, hardware, context_tokens, kv_precision, weights_in_hbm):
    """Experiment 8-1's measurements belong to one setting: Qwen3-8B, RTX PRO 6000, 2K, BF16."""
    return (model == specs.QWEN3_8B.name and hardware == specs.RTX_PRO_6000.name
            and context_tokens == BATCH_SWEEP_MEASURED["context_tokens"] and kv_precision == 2.0
            and weights_in_hbm)


class DecodeBatchPanel(Panel):
    """Read volume per output token (Figures 8-3, 8-4) and one decode round's time vs batch,
    with Experiment 8-1's measured rounds and the batch sweep's intervals (8.2.1)."""

    title = "Batching decode: bytes per output token and round time (8.2.1)"
    controls = (
        Control("model", "model", "choice", specs.QWEN3_8B.name,
                options={name: name for name in MODELS}),
        Control("hardware", "accelerator", "choice", specs.RTX_PRO_6000.name,
                options={name: name for name in HARDWARE}),
        Control("context_tokens", "context L (tokens)", "int", 2048, 128, 131072, 128),
        Control("kv_precision", "KV format", "choice", 2.0, options=KV_PRECISIONS),
        Control("weights_in_hbm", "weights served from", "choice", True,
                options={"HBM (conventional)": True, "independent ROM (Figure 8-4)": False}),
        Control("batch", "batch b (requests)", "int", 16, 1, 256, 1),
    )
    base_layout = {
        "height": 500,
        "xaxis": _batch_axis(256, domain=[0, 0.45], anchor="y"),
        "yaxis": {"title": {"text": "HBM read per output token (GiB)"}, "type": "log",
                  "anchor": "x"},
        "xaxis2": _batch_axis(256, domain=[0.55, 1.0], anchor="y2"),
        "yaxis2": {"title": {"text": "one decode round (ms)"}, "anchor": "x2",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.3},
    }

    def compute(self, *, model, hardware, context_tokens, kv_precision, weights_in_hbm,
                batch) -> View:
        m, hw = MODELS[model], HARDWARE[hardware]
        d_w = m.streamed_weight_bytes
        k = calc.kv_bytes_per_token(m, kv_precision)
        L = context_tokens
        reads = calc.read_bytes_curve(d_w, _BATCHES, L, k)
        rom = calc.read_bytes_curve(d_w, _BATCHES, L, k, weights_in_hbm=False)
        b_kv = calc.kv_crossover_batch(d_w, L, k)
        label = f"L = {L:,}"
        traces = read_volume_traces(_BATCHES, {label: (reads, L * k)}, rom_curves={label: rom},
                                    crossovers={label: b_kv})
        here = calc.read_bytes_per_output_token(d_w, batch, L, k) if weights_in_hbm else L * k
        traces.append({"type": "scatter", "mode": "markers", "x": [batch],
                       "y": [here / units.GiB], "name": f"b = {batch}",
                       "marker": {"size": 12, "color": "black", "symbol": "circle-open",
                                  "line": {"width": 3}}})

        kw = dict(bytes_per_value=kv_precision, weights_in_hbm=weights_in_hbm)
        curve = calc.decode_step_time_curve(m, hw, _BATCHES, L, **kw)
        chapter = _measurement_traces_apply(model, hardware, L, kv_precision, weights_in_hbm)
        fitted = ([calc.mixed_round_time_s(b, L, 0) for b in _BATCHES] if chapter else None)
        sweep = BATCH_SWEEP_MEASURED
        measured_round = {"batch": serving.EXP81_BATCHES, "s": serving.EXP81_ROUND_S,
                          "label": "Experiment 8-1: measured decode round (engine)"}
        measured_itl = {"batch": sweep["batch"], "s": sweep["itl_s"],
                        "label": "batch sweep: measured mean output interval (client)"}
        if not chapter:   # keep the trace count fixed so the figure updates in place
            fitted = [math.nan] * len(_BATCHES)
            measured_round = dict(measured_round, batch=[], s=[])
            measured_itl = dict(measured_itl, batch=[], s=[])
        traces += step_time_traces(curve, fitted_s=fitted, measured_round=measured_round,
                                   measured_itl=measured_itl, xaxis="x2", yaxis="y2")
        parts = calc.decode_step_parts(m, hw, batch, L, **kw)
        traces.append({"type": "scatter", "mode": "markers", "x": [batch],
                       "y": [parts.step_s / units.ms], "name": f"bound at b = {batch}",
                       "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                       "marker": {"size": 12, "color": "black", "symbol": "circle-open",
                                  "line": {"width": 3}}})
        catchup = calc.compute_catchup_batch(m, hw, L, **kw)
        fit = calc.max_concurrent(bt.KV_BUDGET_BYTES, m, L, 256, bytes_per_value=kv_precision)
        numbers = {
            "read_per_token_GiB": here / units.GiB,
            "weight_share_GiB": (d_w / batch if weights_in_hbm else 0.0) / units.GiB,
            "kv_share_GiB": L * k / units.GiB,
            "b_KV": b_kv,
            "requests_fit_12GiB": fit,
            "bound_step_ms": parts.step_s / units.ms,
            "bound": parts.bound,
            "bound_tokens_per_s": batch / parts.step_s,
            "compute_catchup_batch": catchup,
            "compute_bound_below_context": calc.compute_bound_context_tokens(
                m, hw, bytes_per_value=kv_precision),
        }
        catch = ("never (each request adds more read time than compute time)"
                 if math.isinf(catchup) else f"b = {catchup:,.0f}")
        text = (f"<b>{m.name}</b> on {hw.name}, L = {L:,}<br>"
                f"read per output token at b = {batch}: <b>{numbers['read_per_token_GiB']:.3f} "
                f"GiB</b> (weights {numbers['weight_share_GiB']:.3f} + KV "
                f"{numbers['kv_share_GiB']:.3f})<br>"
                f"b_KV = {b_kv}; requests whose KV fits 12 GiB (256 out): {fit}<br>"
                f"roofline round: {numbers['bound_step_ms']:.2f} ms ({parts.bound}-bound), "
                f"at most {numbers['bound_tokens_per_s']:,.0f} tok/s<br>"
                f"compute catches up with reads at: {catch}")
        return View(numbers=numbers, traces=traces, text=text)


class ChunkedPrefillPanel(Panel):
    """A prompt split into chunks: causal pairs and round time of each chunk, with decode steps
    of other requests sharing the rounds (8.2.3, Figure 8-8)."""

    title = "Chunked prefill: pairs and round time per chunk (8.2.3)"
    controls = (
        Control("prompt_tokens", "prompt (tokens)", "int", 8192, 512, 32768, 512),
        Control("chunk_tokens", "chunk c (tokens)", "int", 512, 128, 8192, 128),
        Control("decode_requests", "decoding requests in each round", "int", 0, 0, 64, 1),
        Control("decode_context", "their context (tokens)", "int", 2048, 0, 32768, 256),
    )
    base_layout = {
        "height": 420, "xaxis": {"title": {"text": "chunk (in prompt order)"}},
        "yaxis": {"title": {"text": "causal query-key pairs"}},
        "yaxis2": {"title": {"text": "round time (ms)"}, "overlaying": "y", "side": "right",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, prompt_tokens, chunk_tokens, decode_requests, decode_context) -> View:
        chunks = calc.prefill_chunks(prompt_tokens, chunk_tokens)
        pairs = calc.chunk_pair_series(prompt_tokens, chunk_tokens)
        rounds = [calc.mixed_round_time_s(decode_requests, decode_context, c, h)
                  for c, h in chunks]
        # a round with only the decode steps (with none: the fixed cost of an empty round)
        alone = calc.mixed_round_time_s(decode_requests, decode_context, 0)
        weights = calc.split_weight_read_bytes(specs.QWEN3_8B.streamed_weight_bytes,
                                               prompt_tokens, chunk_tokens)
        numbers = {
            "chunks": len(chunks),
            "first_chunk_pairs": pairs[0],
            "last_chunk_pairs": pairs[-1],
            "last_over_first": pairs[-1] / pairs[0],
            "first_round_ms": rounds[0] / units.ms,
            "last_round_ms": rounds[-1] / units.ms,
            "prefill_total_ms": sum(rounds) / units.ms,
            "decode_round_alone_ms": alone / units.ms,
            "weight_reads_GB": weights / units.GB,
        }
        text = (f"{len(chunks)} chunks of up to {chunk_tokens:,} tokens<br>"
                f"pairs: first {pairs[0]:,}, last {pairs[-1]:,} "
                f"({numbers['last_over_first']:.1f}x)<br>"
                f"round time with {decode_requests} decode(s): first "
                f"{numbers['first_round_ms']:.1f} ms, last {numbers['last_round_ms']:.1f} ms "
                f"(the round without the chunk: {numbers['decode_round_alone_ms']:.2f} ms)<br>"
                f"whole prompt: {numbers['prefill_total_ms']:,.0f} ms; weights read "
                f"{len(chunks)} times = {numbers['weight_reads_GB']:,.1f} GB")
        return View(numbers=numbers, traces=chunk_cost_traces(pairs, rounds), text=text)


GRAPH_SHAPES = {"no CUDA graphs": "none", "graphs for 16 and 32 rows (8.2.4)": "16,32",
                "graphs for powers of two, 1 to 8192 rows": "pow2"}


def graph_shapes(choice: str):
    """Captured graph row counts of a GRAPH_SHAPES choice (None: no graphs)."""
    if choice == "none":
        return None
    if choice == "pow2":
        return tuple(2 ** i for i in range(14))
    return tuple(int(x) for x in choice.split(","))


_TARGETS_S = (np.linspace(27, 300, 28) * units.ms).tolist()
_LAST_CHUNK_HISTORY = 7680        # 8.2.3: the last 512-token chunk of an 8K prompt


@lru_cache(maxsize=256)
def _budget_curve(decode_requests: int, context_tokens: int, history_tokens: int,
                  graphs: str) -> tuple:
    """calc.token_budget_for_itl over _TARGETS_S (cached: only the marker moves with the target)."""
    return tuple(calc.token_budget_for_itl(t, decode_requests, context_tokens, history_tokens,
                                           captured_shapes=graph_shapes(graphs))
                 for t in _TARGETS_S)


class TokenBudgetPanel(Panel):
    """From a permitted output interval to the new prompt tokens a round may add, for running
    decodes with context L and a prompt whose first h tokens are cached (8.2.4)."""

    title = "Token budget from the permitted output interval (8.2.4)"
    controls = (
        Control("itl_target_ms", "permitted interval (ms)", "float", 50.0, 27.0, 300.0, 1.0),
        Control("decode_requests", "decoding requests", "int", 1, 0, 64, 1),
        Control("context_tokens", "their context L (tokens)", "int", 2048, 0, 32768, 256),
        Control("history_tokens", "prompt tokens already cached h", "int", 0, 0, 16384, 256),
        Control("graphs", "CUDA graphs", "choice", "none", options=GRAPH_SHAPES),
    )
    base_layout = {
        "height": 420, "xaxis": {"title": {"text": "permitted output interval (ms)"}},
        "yaxis": {"title": {"text": "new prompt tokens per round"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, itl_target_ms, decode_requests, context_tokens, history_tokens,
                graphs) -> View:
        shapes = graph_shapes(graphs)
        kw = dict(captured_shapes=shapes)
        target = itl_target_ms * units.ms
        args = (decode_requests, context_tokens)
        budget = calc.token_budget_for_itl(target, *args, history_tokens, **kw)
        curves = {f"h = {h:,} cached": _budget_curve(decode_requests, context_tokens, h, graphs)
                  for h in sorted({0, history_tokens, _LAST_CHUNK_HISTORY})}
        traces = token_budget_traces(_TARGETS_S, curves,
                                     marker=(target, budget, "this setting"))
        rows = decode_requests + budget
        round_s = calc.mixed_round_time_s(*args, budget, history_tokens, **kw)
        decode_only = calc.mixed_round_time_s(*args, 0, **kw)
        executed = calc.padded_rows(rows, shapes) if shapes and rows else rows
        numbers = {
            "token_budget": budget,
            "round_ms": round_s / units.ms,
            "decode_round_ms": decode_only / units.ms,
            "rows": rows,
            "rows_executed": executed,
        }
        text = (f"permitted interval {itl_target_ms:g} ms -> a round may add "
                f"<b>{budget:,}</b> prompt tokens (h = {history_tokens:,})<br>"
                f"that round: {numbers['round_ms']:.1f} ms; the decode round alone "
                f"{numbers['decode_round_ms']:.2f} ms<br>"
                f"rows {rows:,}, executed {executed:,}")
        if budget == 0:
            text += "<br><b>the decode steps alone already exceed the interval</b>"
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.2.2 / 8.2.4 on the scheduling simulator -------------------------------------------------

POLICY_LABELS = {"fixed (static) batching": "static", "continuous batching": "continuous",
                 "continuous + chunked prefill": "chunked"}
_TRADE_CHUNKS = (256, 512, 1024, 2048, 4096, 8192)
# 8.2.4: "as the per-round token limit rises from 512 to 8192"
SWEEP_BUDGETS = (512, 1024, 2048, 4096, 8192)


def _requests(long_prompt_tokens=None, requests=None) -> list:
    """8.2.2's four requests (or ``requests``), with r2's prompt replaced if asked."""
    from companion.sim import scenarios
    from companion.sim import scheduler as sch

    reqs = list(scenarios.chapter_8_2_2_requests() if requests is None else requests)
    if long_prompt_tokens is None:
        return reqs
    return [sch.Request(r.id, r.arrival_s, long_prompt_tokens, r.output_tokens)
            if r.id == "r2" else r for r in reqs]


def _run(reqs, policy: str, max_running, chunk_tokens, token_budget):
    """One policy on ``reqs`` with 8.2.2's round model; None means the chapter's setting."""
    from companion.sim import scheduler as sch

    kw = dict(max_running=sch.CHAPTER_8_2_2_MAX_RUNNING if max_running is None else max_running,
              round_time=sch.RoundTimeModel.chapter8())
    if policy == "chunked":
        kw["chunk_tokens"] = (sch.CHAPTER_8_2_2_CHUNK_TOKENS if chunk_tokens is None
                              else chunk_tokens)
        kw["token_budget"] = (sch.CHAPTER_8_2_2_TOKEN_BUDGET if token_budget is None
                              else token_budget)
    return sch.simulate(reqs, policy, **kw)


@lru_cache(maxsize=512)
def _chapter_run(policy: str, max_running, chunk_tokens, token_budget, long_prompt_tokens):
    """Cached runs of the chapter's four requests (a slider usually changes one policy only)."""
    return _run(_requests(long_prompt_tokens), policy, max_running, chunk_tokens, token_budget)


def chapter_schedules(*, max_running: int | None = None, chunk_tokens: int | None = None,
                      token_budget: int | None = None, long_prompt_tokens: int | None = None,
                      requests=None) -> dict:
    """The 8.2.2 four-request example under the three policies: {policy: scheduler Result}.

    Defaults are the chapter's: at most 2 running, 2048-token chunks, a 4096-token budget and
    8.2.2's round model (26.22 ms + 30.4 us per token + 3 ns per pair). ``long_prompt_tokens``
    replaces r2's 8192-token prompt; ``requests`` replaces the four requests altogether.
    """
    policies = ("static", "continuous", "chunked")
    if requests is None:
        return {p: _chapter_run(p, max_running, chunk_tokens if p == "chunked" else None,
                                token_budget if p == "chunked" else None, long_prompt_tokens)
                for p in policies}
    reqs = _requests(long_prompt_tokens, requests)
    return {p: _run(reqs, p, max_running, chunk_tokens, token_budget) for p in policies}


class SchedulePanel(Panel):
    """8.2.2's four requests on the companion's scheduler: the Gantt chart of one policy, and
    the trade between total time and the longest output interval as the chunk size moves."""

    title = "Four requests, three policies (8.2.2), simulated"
    controls = (
        Control("policy", "policy", "choice", "chunked", options=POLICY_LABELS),
        Control("chunk_tokens", "prefill chunk (tokens)", "int", 2048, 128, 8192, 128),
        Control("token_budget", "token budget per round", "int", 4096, 256, 16384, 256),
        Control("max_running", "requests running at most", "int", 2, 1, 4, 1),
        Control("long_prompt_tokens", "r2's prompt (tokens)", "int", 8192, 1024, 32768, 1024),
    )
    base_layout = {
        "height": 620, "barmode": "overlay",
        "xaxis": {"title": {"text": "time (ms)"}, "anchor": "y"},
        "yaxis": {"domain": [0.5, 1.0], "autorange": "reversed", "type": "category",
                  "anchor": "x"},
        "xaxis2": {"title": {"text": "longest output interval (ms)"}, "anchor": "y2"},
        "yaxis2": {"title": {"text": "total time (ms)"}, "domain": [0.0, 0.36], "anchor": "x2"},
        "legend": {"orientation": "h", "y": -0.15},
    }

    def compute(self, *, policy, chunk_tokens, token_budget, max_running,
                long_prompt_tokens) -> View:
        runs = chapter_schedules(max_running=max_running, chunk_tokens=chunk_tokens,
                                 token_budget=token_budget, long_prompt_tokens=long_prompt_tokens)
        shown = runs[policy]
        traces = gantt_traces(shown)
        sweep = [_chapter_run("chunked", max_running, c, token_budget, long_prompt_tokens)
                 for c in _TRADE_CHUNKS]
        ms = units.ms
        traces.append({"type": "scatter", "mode": "lines+markers+text", "xaxis": "x2",
                       "yaxis": "y2", "x": [r.max_itl_s / ms for r in sweep],
                       "y": [r.makespan_s / ms for r in sweep],
                       "text": [f"{c}" for c in _TRADE_CHUNKS], "textposition": "top center",
                       "name": f"chunked, chunk sizes (budget {token_budget:,})",
                       "line": {"color": PHASE_COLORS["prefill"]}})
        for name, color in (("static", "#7f7f7f"), ("continuous", "#0072b2")):
            r = runs[name]
            traces.append({"type": "scatter", "mode": "markers+text", "xaxis": "x2",
                           "yaxis": "y2", "x": [r.max_itl_s / ms], "y": [r.makespan_s / ms],
                           "text": [name], "textposition": "bottom center", "name": name,
                           "marker": {"size": 11, "color": color}})
        traces.append({"type": "scatter", "mode": "markers", "xaxis": "x2", "yaxis": "y2",
                       "x": [shown.max_itl_s / ms], "y": [shown.makespan_s / ms],
                       "name": "shown above", "marker": {"size": 18, "color": "black",
                                                         "symbol": "circle-open",
                                                         "line": {"width": 3}}})
        numbers = {"total_ms": shown.makespan_s / ms, "longest_interval_ms": shown.max_itl_s / ms,
                   "rounds": shown.n_rounds}
        for name, r in runs.items():
            numbers[f"{name}_total_ms"] = r.makespan_s / ms
            numbers[f"{name}_longest_interval_ms"] = r.max_itl_s / ms
        label = {v: k for k, v in POLICY_LABELS.items()}[policy]
        text = (f"<b>{label}</b>: total <b>{numbers['total_ms']:.0f} ms</b>, longest output "
                f"interval <b>{numbers['longest_interval_ms']:.0f} ms</b>, "
                f"{shown.n_rounds} rounds<br>"
                + "<br>".join(f"{name}: {numbers[f'{name}_total_ms']:.0f} ms total, "
                              f"{numbers[f'{name}_longest_interval_ms']:.0f} ms longest"
                              for name in runs)
                + "<br><i>round model fitted to Experiment 8-1 (8.2.2); simulated</i>")
        return View(numbers=numbers, traces=traces, text=text)


@lru_cache(maxsize=256)
def _budget_sweep(n_requests: int, interarrival_ms: float, prompt_tokens: int,
                  output_tokens: int) -> tuple:
    """scenarios.token_budget_sweep over SWEEP_BUDGETS, all requests allowed to run (cached)."""
    from companion.sim import scenarios

    return tuple(scenarios.token_budget_sweep(SWEEP_BUDGETS, n_requests=n_requests,
                                              interarrival_s=interarrival_ms * units.ms,
                                              prompt_tokens=prompt_tokens,
                                              output_tokens=output_tokens, max_running=n_requests))


class BudgetSweepPanel(Panel):
    """Staggered arrivals under chunked prefill: how the per-round token budget trades the
    queueing of later arrivals against the longest output interval (8.2.4). Generated by the
    companion's simulator; the chapter's six-request replay data is not printed."""

    title = "Token budget sweep, staggered arrivals (8.2.4), generated by the simulator"
    controls = (
        Control("n_requests", "requests", "int", 6, 2, 12, 1),
        Control("interarrival_ms", "arrival every (ms)", "float", 80.0, 0.0, 400.0, 10.0),
        Control("prompt_tokens", "prompt (tokens)", "int", 4096, 256, 16384, 256),
        Control("output_tokens", "output (tokens)", "int", 64, 2, 256, 1),
        Control("itl_target_ms", "interval target (ms)", "float", 50.0, 27.0, 400.0, 1.0),
    )
    base_layout = {
        "height": 420,
        "xaxis": {"title": {"text": "token budget per round (tokens)"}, "type": "log",
                  "tickvals": list(SWEEP_BUDGETS),
                  "ticktext": [str(b) for b in SWEEP_BUDGETS]},
        "yaxis": {"title": {"text": "longest output interval (ms)"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "queueing (ms)"}, "overlaying": "y", "side": "right",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, n_requests, interarrival_ms, prompt_tokens, output_tokens,
                itl_target_ms) -> View:
        rows = _budget_sweep(n_requests, interarrival_ms, prompt_tokens, output_tokens)
        budgets = [r["token_budget"] for r in rows]
        traces = budget_sweep_traces(budgets, [r["max_itl_s"] for r in rows],
                                     [r["queue_later_mean_s"] for r in rows])
        target = itl_target_ms * units.ms
        traces.append({"type": "scatter", "mode": "lines", "x": [budgets[0], budgets[-1]],
                       "y": [itl_target_ms, itl_target_ms], "name": "interval target",
                       "line": {"color": "#c00000", "dash": "dot"}})
        within = [r["token_budget"] for r in rows if r["max_itl_s"] <= target]
        fastest = min(rows, key=lambda r: (r["queue_later_mean_s"], -r["token_budget"]))
        numbers = {
            "largest_budget_within_target": max(within) if within else 0,
            "budget_with_least_queueing": fastest["token_budget"],
        }
        for r in rows:
            b = r["token_budget"]
            numbers[f"max_itl_ms@{b}"] = r["max_itl_s"] / units.ms
            numbers[f"queue_mean_ms@{b}"] = r["queue_later_mean_s"] / units.ms
        best = (f"<b>{numbers['largest_budget_within_target']:,}</b> tokens" if within
                else "<b>none</b> of the budgets")
        text = (f"{n_requests} requests of {prompt_tokens:,} + {output_tokens} tokens, one every "
                f"{interarrival_ms:g} ms<br>longest interval under {itl_target_ms:g} ms: "
                f"{best}<br>least queueing of later arrivals: "
                f"<b>{fastest['token_budget']:,}</b> tokens "
                f"({fastest['queue_later_mean_s'] / units.ms:.0f} ms mean)<br>"
                f"<i>generated by the companion's simulator (8.2.2's round model)</i>")
        return View(numbers=numbers, traces=traces, text=text)
