"""Chapter 17 §6-§10 and interview explorers: batching, parallelism, disaggregation, measuring,
levers, and the batch-size question.

``BatchingTracePanel`` (§6): one queue of requests under static and continuous batching on the
companion's scheduler simulator (slot Gantt charts, utilization, makespan, TTFT).
``ChunkSizePanel`` (§6): chunked prefill's worst ITL and TTFT against the chunk size, the
chapter's closed form beside the simulator.
``TensorParallelPanel`` (§7): a TP decode step (reads, collective latency, wire) over NVLink and
PCIe for TP = 1..8.
``PipelineBubblePanel`` (§7): the stages x slots diagram (fill, steady, drain) and the bubble.
``PlacementPanel`` (§7): the smallest TP x PP layout that fits a model of any size.
``PoolSizingPanel`` (§8): prefill and decode pool sizes from the request mix.
``KVRoutingPanel`` (§8): cold vs warm TTFT per turn of a conversation.
``UtilizationPanel`` (§9): MBU and MFU of measured decode and prefill rates.
``SpeculativeLeverPanel`` (§10): expected tokens per target pass, exact and simulated.
``BatchSizePanel`` (interview): the batch between the ITL ceiling and the KV-memory cap.

Every number comes from ``companion.calc`` or ``companion.sim``; the small helpers here only
arrange scenarios (``batching_trace_requests``, ``itl_tail_trace``) and sweeps, or format
calc's re-derived tables as text.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from companion import validate as v
from companion import calc, specs, units
from companion.chapters import ch17
from companion.figures.ch17_serving import (batch_window_traces, chunk_trade_traces,
                                            pipeline_grid, pipeline_traces, placement_traces,
                                            pool_sizing_traces, routing_traces,
                                            slot_gantt_traces, speculative_traces,
                                            tp_step_traces, utilization_traces, _stacked_axes)
from companion.explorers.base import Control, Panel, View
from companion.sim import scenarios
from companion.sim import scheduler as sched
from companion.sim import speculative as spec_sim

__all__ = [
    "BatchingTracePanel", "ChunkSizePanel", "TensorParallelPanel", "PipelineBubblePanel",
    "PlacementPanel", "PoolSizingPanel", "KVRoutingPanel", "UtilizationPanel",
    "SpeculativeLeverPanel", "BatchSizePanel",
    "batching_trace_requests", "batching_trace", "chunk_trade_sweep", "tp_layout_rows",
    "placement_model", "placement_candidates", "speculative_check", "itl_tail_trace",
    "decision_table_text", "levers_text", "mechanism_map_text", "cheat_sheet_text",
    "CH17_STATIC_BATCH", "CH17_STATIC_SHORTEST", "CH17_STATIC_LONGEST",
    "CH17_HEALTHY_DECODE_MBU", "CH17_STRONG_PREFILL_MFU",
]

# --- inputs the chapter states -----------------------------------------------------------------
CH17_STATIC_BATCH = 8            # §6: "batch of 8"
CH17_STATIC_SHORTEST = 100       # §6: "output lengths 100, 200, ..., 800 tokens"
CH17_STATIC_LONGEST = 800
CH17_HEALTHY_DECODE_MBU = (0.6, 0.8)    # §9 checklist: "Aggregate MBU at 60-80%"
CH17_STRONG_PREFILL_MFU = (0.4, 0.6)    # §9: "40-60% is strong" for prefill
# The queue behind §6's batch in the simulated trace: three batches' worth of the chapter's mix
# (with no queue there is nothing for continuous batching to admit), 256-token prompts.
TRACE_REQUESTS = 24
TRACE_PROMPT_TOKENS = 256

_H100 = specs.H100_SXM
_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B)}
_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB)}
_WEIGHT_FORMATS = {"BF16 (2 B)": 2.0, "FP8 / INT8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
_TP_DEGREES = {"1": 1, "2": 2, "4": 4, "8": 8}


def _choice(name, label, default, options):
    return Control(name, label, "choice", default, options=options)


def _model_control(default=specs.LLAMA_70B.name, models=None):
    names = models or _MODELS
    return _choice("model", "model", default, {n: n for n in names})


def _card_control(cards=None):
    names = cards or _CARDS
    return _choice("hardware", "GPU", _H100.name, {n: n for n in names})


# === §6 static vs continuous batching on one simulated queue ===================================

def _letters(i: int) -> str:
    """A, B, ..., Z, AA, AB, ...: request names like the chapter's figure."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def batching_trace_requests(n_requests: int = TRACE_REQUESTS, slots: int = CH17_STATIC_BATCH,
                            shortest: int = CH17_STATIC_SHORTEST,
                            longest: int = CH17_STATIC_LONGEST, *,
                            prompt_tokens: int = TRACE_PROMPT_TOKENS,
                            arrival_gap_s: float = 0.0, seed: int = 0) -> list:
    """A queue of requests whose every group of ``slots`` has 17 §6's output lengths.

    Outputs of a group are ``slots`` evenly spaced lengths from ``shortest`` to ``longest``
    (100, 200, ..., 800 for 8 slots), in a shuffled order (numpy Generator seeded with
    ``seed``); requests arrive ``arrival_gap_s`` apart, named A, B, C, ...
    """
    n = v.count("n_requests", n_requests)
    b = v.count("slots", slots)
    lo = v.tokens("shortest", shortest, minimum=1)
    hi = v.tokens("longest", longest, minimum=1)
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    gap = v.nonnegative("arrival_gap_s", arrival_gap_s)
    rng = np.random.default_rng(v.integer("seed", seed))
    lengths = np.rint(np.linspace(min(lo, hi), max(lo, hi), b)).astype(int)
    outputs = np.concatenate([rng.permutation(lengths) for _ in range(-(-n // b))])[:n]
    return [sched.Request(_letters(i), i * gap, p, int(g)) for i, g in enumerate(outputs)]


def batching_trace(requests, slots: int = CH17_STATIC_BATCH, *, round_time=None) -> dict:
    """The same queue under "static" and "continuous" batching: {policy: Result}.

    Round time: Chapter 17's (a 6.1 ms decode step + 2 x 8e9 FLOP per prompt token at 50% of
    989 TFLOP/s), ``sched.chapter17_round_time()``.
    """
    b = v.count("slots", slots)
    rt = sched.chapter17_round_time() if round_time is None else round_time
    return {policy: sched.simulate(requests, policy, max_running=b, round_time=rt)
            for policy in ("static", "continuous")}


def _trace_numbers(results: dict) -> dict:
    out = {}
    for policy, res in results.items():
        run, useful = res.slot_steps()
        ttft = np.array(list(res.ttft_s.values()))
        out[f"{policy}_slot_steps_run"] = run
        out[f"{policy}_slot_steps_useful"] = useful
        out[f"{policy}_utilization_pct"] = 100 * res.utilization()
        out[f"{policy}_makespan_s"] = res.makespan_s
        out[f"{policy}_mean_ttft_s"] = float(ttft.mean())
        out[f"{policy}_max_ttft_s"] = float(ttft.max())
    return out


class BatchingTracePanel(Panel):
    """17 §6 simulated: static batching pads every group to its longest member, continuous
    batching refills a slot at the next token boundary."""

    title = "Static vs continuous batching, simulated (17 §6)"
    controls = (
        Control("n_requests", "requests in the queue", "int", TRACE_REQUESTS, 1, 48, 1),
        Control("slots", "batch slots", "int", CH17_STATIC_BATCH, 1, 16, 1),
        Control("shortest", "shortest output (tokens)", "int", CH17_STATIC_SHORTEST, 1, 2000, 10),
        Control("longest", "longest output (tokens)", "int", CH17_STATIC_LONGEST, 1, 2000, 10),
        Control("prompt_tokens", "prompt (tokens)", "int", TRACE_PROMPT_TOKENS, 16, 4096, 16),
        Control("arrival_gap_ms", "gap between arrivals (ms)", "float", 0.0, 0.0, 500.0, 10.0),
    )
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
        layout, notes = _stacked_axes(2, [labels[p] for p in results])
        for i, res in enumerate(results.values()):
            ax = "" if i == 0 else str(i + 1)
            traces += slot_gantt_traces(res, xaxis=f"x{ax}", yaxis=f"y{ax}", show_legend=i == 0)
        layout["annotations"] = notes
        group = calc.static_batch_slot_steps(
            [r.output_tokens for r in reqs[:min(slots, n_requests)]])
        numbers = {"first_group_utilization_pct": 100 * group["utilization"],
                   **_trace_numbers(results)}
        text = (f"<b>{n_requests} requests, {slots} slots</b> (simulated)<br>"
                f"closed form, first group: {group['useful']:,} of {group['run']:,} "
                f"slot-steps useful = <b>{numbers['first_group_utilization_pct']:.0f}%</b><br>")
        for p in results:
            text += (f"{p}: utilization {numbers[f'{p}_utilization_pct']:.0f}%, all done at "
                     f"{numbers[f'{p}_makespan_s']:.2f} s, mean TTFT "
                     f"{numbers[f'{p}_mean_ttft_s']:.2f} s (worst "
                     f"{numbers[f'{p}_max_ttft_s']:.2f} s)<br>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §6 chunked prefill ==========================================================================

_CHUNK_SWEEP = np.unique(np.geomspace(32, 32_768, 41).round().astype(int))


def chunk_trade_sweep(prompt_tokens: int, decode_step_s: float, *,
                      efficiency: float = calc.CH17_PREFILL_EFFICIENCY, chunk_sizes=None,
                      model=specs.LLAMA_8B, hardware=specs.H100_SXM) -> dict:
    """``calc.chunked_prefill_trade`` over chunk sizes (default: 32 .. 32,768, log-spaced, cut
    at the prompt): arrays chunk_tokens, chunks, iteration_s, ttft_s and the dedicated_s."""
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    step = v.positive("decode_step_s", decode_step_s)
    sizes = _CHUNK_SWEEP if chunk_sizes is None else v.sequence("chunk_sizes", chunk_sizes)
    sizes = sorted({int(min(c, n)) for c in sizes})
    rows = [calc.chunked_prefill_trade(model, hardware, n, c, step, efficiency=efficiency)
            for c in sizes]
    return {"chunk_tokens": np.array(sizes), "chunks": np.array([r["chunks"] for r in rows]),
            "iteration_s": np.array([r["iteration_s"] for r in rows]),
            "ttft_s": np.array([r["ttft_s"] for r in rows]),
            "dedicated_s": rows[0]["dedicated_s"]}


@lru_cache(maxsize=16)
def _unchunked(prompt_tokens: int, decode_step_s: float, efficiency: float) -> tuple:
    """What does not depend on the chunk size (cached while the chunk slider moves): the
    closed-form sweep and the simulated admission of the whole prompt."""
    m, hw = specs.LLAMA_8B, specs.H100_SXM
    sweep = chunk_trade_sweep(prompt_tokens, decode_step_s, efficiency=efficiency)
    rt = sched.StepPlusPrefillRoundTime.from_hardware(m, hw, decode_step_s=decode_step_s,
                                                      mfu=efficiency)
    return sweep, scenarios.long_prompt_interference(prompt_tokens, None, round_time=rt)


class ChunkSizePanel(Panel):
    """17 §6: the chunk size trades the batch's worst ITL against the long prompt's TTFT."""

    title = "Chunked prefill: the chunk-size knob (17 §6, 8B on an H100 SXM)"
    controls = (
        Control("prompt_tokens", "long prompt (tokens)", "int", calc.CH17_LONG_CONTEXT_TOKENS,
                1000, 32_000, 250),
        Control("chunk_tokens", "chunk size (tokens)", "int", 512, 32, 8192, 32),
        Control("decode_step_ms", "decode step of the running batch (ms)", "float",
                sched.CH17_DECODE_STEP_S / units.ms, 1.0, 30.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * calc.CH17_PREFILL_EFFICIENCY, 10.0, 100.0, 5.0),
    )
    base_layout = {"height": 480}

    def compute(self, *, prompt_tokens, chunk_tokens, decode_step_ms, efficiency_pct) -> View:
        m, hw = specs.LLAMA_8B, specs.H100_SXM
        step, eff = decode_step_ms * units.ms, efficiency_pct / 100
        trade = calc.chunked_prefill_trade(m, hw, prompt_tokens, chunk_tokens, step,
                                           efficiency=eff)
        sweep, whole = _unchunked(prompt_tokens, step, eff)
        rt = sched.StepPlusPrefillRoundTime.from_hardware(m, hw, decode_step_s=step, mfu=eff)
        chunked = scenarios.long_prompt_interference(prompt_tokens, chunk_tokens, round_time=rt)
        timelines = {}
        for label, run in (("simulated, whole prompt in one round", whole),
                           (f"simulated, {chunk_tokens}-token chunks", chunked)):
            res = run["result"]
            times = res.token_times["d0"]
            timelines[label] = (times[1:], res.itl_s["d0"])
        selected = {"chunk_tokens": chunk_tokens, "iteration_s": trade["iteration_s"],
                    "ttft_s": trade["ttft_s"], "sim_itl_s": chunked["worst_decode_itl_s"],
                    "sim_ttft_s": chunked["long_ttft_s"]}
        traces, layout = chunk_trade_traces(sweep, selected, itl_timelines=timelines)
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
        }
        text = (f"<b>closed form</b>: {numbers['chunks']} chunks of "
                f"{numbers['chunk_ms']:.1f} ms; iteration {numbers['iteration_ms']:.1f} ms<br>"
                f"worst ITL {numbers['dedicated_ms']:.0f} -> {numbers['iteration_ms']:.1f} ms "
                f"({numbers['itl_improvement']:.0f}x better)<br>"
                f"TTFT {numbers['ttft_ms']:.0f} ms vs {numbers['dedicated_ms']:.0f} ms "
                f"dedicated ({numbers['ttft_increase_pct']:+.0f}%)<br>"
                f"<b>simulated</b>: worst ITL {numbers['sim_worst_itl_ms']:.1f} ms (unchunked "
                f"{numbers['sim_unchunked_worst_itl_ms']:.0f} ms), TTFT "
                f"{numbers['sim_ttft_ms']:.0f} ms")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §7 tensor parallelism =======================================================================

def tp_layout_rows(model, hardware, *, degrees=(1, 2, 4, 8), batch: int = 1,
                   context_tokens: int = 0,
                   nvlink_latency_s: float = calc.CH17_COLLECTIVE_LATENCY_NVLINK_S,
                   pcie_latency_s: float = calc.CH17_COLLECTIVE_LATENCY_PCIE_S) -> list[dict]:
    """``calc.tp_decode_step`` for each TP degree over NVLink and over PCIe (TP 1 once):
    dicts with label, tp, link, read_s, latency_s, wire_s, step_s, overhead, tokens_per_s."""
    hw = v.instance("hardware", hardware, specs.Hardware, "a companion.specs.Hardware")
    seq = v.sequence("degrees", degrees)
    tps = [v.count(f"degrees[{i}]", d) for i, d in enumerate(seq)]
    links = {"NVLink": (nvlink_latency_s, hw.interconnect_bytes_per_s),
             "PCIe": (pcie_latency_s, hw.host_link_bytes_per_s)}
    rows = []
    for tp in tps:
        for link, (lat, bw) in links.items():
            if tp == 1 and link == "PCIe":
                continue
            r = calc.tp_decode_step(model, hw, tp, collective_latency_s=lat,
                                    link_bytes_per_s=bw, batch=batch,
                                    context_tokens=context_tokens)
            label = "TP 1" if tp == 1 else f"TP {tp} · {link}"
            rows.append(dict(r, label=label, tp=tp, link=link if tp > 1 else "none"))
    return rows


class TensorParallelPanel(Panel):
    """17 §7: each GPU reads 1/p of the weights, then pays 2 all-reduces per layer."""

    title = "Tensor parallelism: a decode step over NVLink and PCIe (17 §7)"
    controls = (
        _model_control(),
        _card_control(),
        _choice("tp", "TP degree (highlighted)", 4, _TP_DEGREES),
        Control("batch", "batch (sequences)", "int", 1, 1, 256, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 500),
        Control("nvlink_latency_us", "NVLink collective floor (µs)", "float",
                calc.CH17_COLLECTIVE_LATENCY_NVLINK_S / units.us, 1.0, 20.0, 0.5),
        Control("pcie_latency_us", "PCIe collective floor (µs)", "float",
                calc.CH17_COLLECTIVE_LATENCY_PCIE_S / units.us, 5.0, 100.0, 1.0),
    )
    base_layout = {"height": 460}

    def compute(self, *, model, hardware, tp, batch, context_tokens, nvlink_latency_us,
                pcie_latency_us) -> View:
        m, hw = _MODELS[model], _CARDS[hardware]
        rows = tp_layout_rows(m, hw, batch=batch, context_tokens=context_tokens,
                              nvlink_latency_s=nvlink_latency_us * units.us,
                              pcie_latency_s=pcie_latency_us * units.us)
        pick = {r["link"]: r for r in rows if r["tp"] == tp}
        nv = pick.get("NVLink", pick.get("none"))
        pc = pick.get("PCIe", nv)
        traffic = calc.tp_allreduce_traffic(m, tp)
        cap = calc.tp_kv_capacity(m, hw, tp=tp)
        traces, layout = tp_step_traces(rows, selected=nv["label"])
        numbers = {
            "activation_KiB": traffic["activation_bytes"] / units.KiB,
            "ring_KiB": traffic["ring_bytes"] / units.KiB, "collectives": traffic["collectives"],
            "bytes_per_token_MB": traffic["bytes_per_token"] / units.MB,
            "read_ms": nv["read_s"] / units.ms, "nvlink_latency_ms": nv["latency_s"] / units.ms,
            "nvlink_wire_us": nv["wire_s"] / units.us,
            "nvlink_overhead_pct": 100 * nv["overhead"], "step_ms": nv["step_s"] / units.ms,
            "tokens_per_s": nv["tokens_per_s"], "pcie_comm_ms": pc["comm_s"] / units.ms,
            "pcie_overhead_pct": 100 * pc["overhead"],
            "weights_per_gpu_GB": cap["weight_bytes_per_gpu"] / units.GB,
            "fits": bool(cap["fits"]),
        }
        fit = "fits" if cap["fits"] else "<b>does not fit</b>"
        text = (f"<b>{m.name}, TP {tp}</b>: {numbers['weights_per_gpu_GB']:.0f} GB of weights "
                f"per GPU ({fit} with the 4 GB reserve)<br>"
                f"{numbers['collectives']} all-reduces per token, "
                f"{numbers['ring_KiB']:.0f} KiB each on the ring, "
                f"{numbers['bytes_per_token_MB']:.2f} MB per token<br>"
                f"read {numbers['read_ms']:.2f} ms + NVLink {numbers['nvlink_latency_ms']:.2f} ms"
                f" latency ({numbers['nvlink_wire_us']:.1f} µs on the wire) = "
                f"<b>{numbers['step_ms']:.2f} ms</b>, {numbers['tokens_per_s']:,.0f} tok/s, "
                f"overhead {numbers['nvlink_overhead_pct']:.0f}%<br>"
                f"over PCIe: {numbers['pcie_comm_ms']:.2f} ms of collectives, overhead "
                f"{numbers['pcie_overhead_pct']:.0f}%")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §7 pipeline parallelism =====================================================================

_MICROBATCH_SWEEP = tuple(sorted({int(x) for x in np.geomspace(1, 256, 40).round()}))


@lru_cache(maxsize=32)
def _bubble_curve(stages: int) -> tuple:
    return _MICROBATCH_SWEEP, tuple(calc.pipeline_bubble(stages, m) for m in _MICROBATCH_SWEEP)


class PipelineBubblePanel(Panel):
    """17 §7: stage s runs microbatch j in slot s + j; the empty corners are the bubble."""

    title = "Pipeline parallelism: the bubble (17 §7)"
    controls = (
        Control("stages", "pipeline stages p", "int", 4, 1, 16, 1),
        Control("microbatches", "microbatches m", "int", 16, 1, 64, 1),
    )
    base_layout = {"height": 440}

    def compute(self, *, stages, microbatches) -> View:
        grid = pipeline_grid(stages, microbatches)
        bubble = calc.pipeline_bubble(stages, microbatches)
        curves = {p: _bubble_curve(p) for p in sorted({2, 4, 8, 16, stages}) if p > 1}
        traces, layout = pipeline_traces(grid, bubble_curves=curves,
                                         selected=(microbatches, bubble))
        layers = calc.pp_stages(specs.LLAMA_70B, stages, microbatches)["layers_per_stage"]
        numbers = {"bubble_pct": 100 * bubble, "slots": grid["slots"],
                   "busy_cells": grid["busy_cells"], "idle_cells": grid["idle_cells"],
                   "layers_per_stage_70b": layers}
        text = (f"<b>p = {stages}, m = {microbatches}</b>: {grid['slots']} slots per stage, "
                f"{grid['idle_cells']} of {stages * grid['slots']} stage-slots idle<br>"
                f"bubble (p - 1) / (m + p - 1) = <b>{numbers['bubble_pct']:.1f}%</b><br>"
                f"the 70B shape: {layers:g} layers per stage")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §7 placement ================================================================================

# the three reference shapes; an explored size borrows the nearest one's depth and width
_REFERENCE_SHAPES = (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B)


def placement_model(params: float, bytes_per_param: float = 2.0):
    """A Model of ``params`` parameters stored at ``bytes_per_param`` (weights = their product),
    with the layers and hidden width of the nearest reference shape (8B: 32 x 4,096, 70B:
    80 x 8,192, 405B: 126 x 16,384), which only bound the pipeline stages and size the
    stage-to-stage activation."""
    n = v.positive("params", params)
    b = v.positive("bytes_per_param", bytes_per_param)
    ref = min(_REFERENCE_SHAPES, key=lambda m: abs(math.log(n / m.n_params)))
    return ref.with_(name=f"{n / 1e9:g}B ({b:g} B/param)", n_params=n, bytes_per_param=b,
                     weight_bytes=None, streamed_weight_bytes=None, layer_params=None,
                     source=f"explored size with the {ref.name} depth and width")


def placement_candidates(model, *, gpus_per_node: int = 8, max_pp: int = 4) -> list[dict]:
    """``calc.layout_candidates`` (the order ``calc.parallel_layout`` tries: TP = 1, 2, 4, ...
    up to the node, then the node's width x PP = 2 .. ``max_pp``) with labels and
    ``calc.weights_per_gpu_bytes`` for each."""
    layouts = calc.layout_candidates(gpus_per_node, max_pp)
    return [dict(tp=t, pp=p, gpus=t * p, label=f"TP {t}" if p == 1 else f"TP {t} x PP {p}",
                 weight_bytes_per_gpu=calc.weights_per_gpu_bytes(model, t, p))
            for t, p in layouts]


class PlacementPanel(Panel):
    """17 §7: TP as far as the node reaches, PP across nodes only when a node is too small."""

    title = "Placement: the smallest TP x PP layout that fits (17 §7)"
    controls = (
        Control("params_b", "model size (billion parameters)", "float",
                ch17.MODEL_405B_PARAMS / 1e9, 1.0, 2000.0, 1.0),
        _choice("bytes_per_param", "weight format", 2.0, _WEIGHT_FORMATS),
        Control("gpu_mem_gb", "GPU memory (GB)", "float", _H100.mem_bytes / units.GB, 16.0,
                288.0, 1.0),
        Control("reserve_gb", "runtime reserve per GPU (GB)", "float",
                calc.CH17_RUNTIME_RESERVE_BYTES / units.GB, 0.0, 40.0, 1.0),
        Control("min_kv_gb", "KV space wanted per GPU (GB)", "float", 0.0, 0.0, 80.0, 1.0),
        _choice("gpus_per_node", "GPUs per node (NVLink domain)", 8, {"4": 4, "8": 8}),
    )
    base_layout = {"height": 440}

    def compute(self, *, params_b, bytes_per_param, gpu_mem_gb, reserve_gb, min_kv_gb,
                gpus_per_node) -> View:
        m = placement_model(params_b * 1e9, bytes_per_param)
        hw = _H100.with_(name=f"{gpu_mem_gb:g} GB GPU", mem_bytes=gpu_mem_gb * units.GB)
        reserve, kv_min = reserve_gb * units.GB, min_kv_gb * units.GB
        try:
            layout_ = calc.parallel_layout(m, hw, reserve_bytes=reserve,
                                           gpus_per_node=gpus_per_node,
                                           min_kv_bytes_per_gpu=kv_min)
        except ValueError:
            layout_ = None
        pp_shown = max(4, layout_["pp"] + 1) if layout_ else 4
        rows = placement_candidates(m, gpus_per_node=gpus_per_node, max_pp=min(pp_shown, 16))
        usable = hw.mem_bytes - reserve - kv_min
        chosen = None
        if layout_:
            chosen = next(r["label"] for r in rows
                          if (r["tp"], r["pp"]) == (layout_["tp"], layout_["pp"]))
        traces, layout = placement_traces(rows, max(usable, 1.0), chosen=chosen)
        numbers = {"weights_GB": m.weight_bytes / units.GB, "layout": chosen or "none",
                   "tp": layout_["tp"] if layout_ else 0, "pp": layout_["pp"] if layout_ else 0,
                   "gpus": layout_["gpus"] if layout_ else 0,
                   "weights_per_gpu_GB": (layout_["weight_bytes_per_gpu"] / units.GB
                                          if layout_ else 0.0),
                   "free_per_gpu_GB": (layout_["free_kv_bytes_per_gpu"] / units.GB
                                       if layout_ else 0.0),
                   "layers_per_stage": (calc.pp_stages(m, layout_["pp"], 1)["layers_per_stage"]
                                        if layout_ else 0.0)}
        if layout_:
            text = (f"<b>{m.name}</b>: {numbers['weights_GB']:,.0f} GB of weights<br>"
                    f"smallest layout: <b>{chosen}</b> = {numbers['gpus']} GPUs, "
                    f"{numbers['weights_per_gpu_GB']:,.1f} GB per GPU, "
                    f"{numbers['free_per_gpu_GB']:,.1f} GB left per GPU for KV<br>"
                    f"{m.n_layers} layers (nearest reference shape): "
                    f"{numbers['layers_per_stage']:g} per pipeline stage")
        else:
            text = (f"<b>{m.name}</b>: {numbers['weights_GB']:,.0f} GB: no layout of up to 16 "
                    f"nodes fits")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §8 disaggregated pools ======================================================================

_RATE_SWEEP = tuple(range(5, 505, 5))


class PoolSizingPanel(Panel):
    """17 §8: prefill groups from prompt tokens/s, decode groups from output tokens/s."""

    title = "Disaggregated serving: sizing the two pools (17 §8)"
    controls = (
        Control("request_rate", "request rate (req/s)", "float", 100.0, 1.0, 500.0, 1.0),
        Control("mean_prompt_tokens", "mean prompt (tokens)", "int", 2000, 100, 32_000, 100),
        Control("mean_output_tokens", "mean output (tokens)", "int", 250, 10, 4000, 10),
        Control("prefill_capacity", "prefill capacity per group (tok/s)", "float",
                float(calc.CH17_PREFILL_TOK_PER_S_PER_GROUP), 1000.0, 50_000.0, 500.0),
        Control("decode_capacity", "decode capacity per group (tok/s)", "float",
                float(calc.CH17_DECODE_TOK_PER_S_PER_GROUP), 250.0, 20_000.0, 250.0),
    )
    base_layout = {"height": 420}

    def compute(self, *, request_rate, mean_prompt_tokens, mean_output_tokens, prefill_capacity,
                decode_capacity) -> View:
        kw = dict(prefill_tok_per_s_per_group=prefill_capacity,
                  decode_tok_per_s_per_group=decode_capacity)
        pools = calc.disaggregated_pools(request_rate, mean_prompt_tokens, mean_output_tokens,
                                         **kw)
        sweep = [calc.disaggregated_pools(r, mean_prompt_tokens, mean_output_tokens, **kw)
                 for r in _RATE_SWEEP]
        traces, layout = pool_sizing_traces(
            _RATE_SWEEP, [s["prefill_groups"] for s in sweep], [s["decode_groups"] for s in sweep],
            {"rate": request_rate, "prefill_groups": pools["prefill_groups"],
             "decode_groups": pools["decode_groups"]})
        numbers = {k: pools[k] for k in ("prompt_tok_per_s", "output_tok_per_s",
                                         "prefill_groups", "decode_groups", "prefill_to_decode")}
        text = (f"prompt demand {pools['prompt_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['prefill_groups']} prefill groups</b><br>"
                f"output demand {pools['output_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['decode_groups']} decode groups</b><br>"
                f"ratio {pools['prefill_to_decode']:.2g} : 1")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §8 KV-aware routing =========================================================================

_TURNS = tuple(range(1, 61))


@lru_cache(maxsize=32)
def _routing_curves(model: str, first_turn_tokens: int, tokens_per_turn: int,
                    efficiency: float) -> tuple:
    """Cold and warm TTFT (s) for every turn of ``_TURNS`` (cached while the turn and the warm
    share move)."""
    rows = [calc.kv_routing_ttft(_MODELS[model], _H100, t, first_turn_tokens=first_turn_tokens,
                                 tokens_per_turn=tokens_per_turn, efficiency=efficiency)
            for t in _TURNS]
    return tuple(x["cold_s"] for x in rows), tuple(x["warm_s"] for x in rows)


class KVRoutingPanel(Panel):
    """17 §8: turn t re-sends the whole conversation; a warm worker prefills only the new part."""

    title = "KV-aware routing: TTFT per turn, cold vs warm worker (17 §8)"
    controls = (
        Control("turn", "turn", "int", 20, 1, 60, 1),
        Control("first_turn_tokens", "first turn (tokens, system + tools)", "int",
                calc.CH17_AGENT_FIRST_TURN_TOKENS, 500, 32_000, 500),
        Control("tokens_per_turn", "added per turn (tokens)", "int",
                calc.CH17_AGENT_TOKENS_PER_TURN, 100, 8000, 100),
        Control("warm_share_pct", "turns the router lands warm (%)", "float",
                100 * calc.CH17_ROUTER_WARM_SHARES[0], 0.0, 100.0, 5.0),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * calc.CH17_PREFILL_EFFICIENCY, 10.0, 100.0, 5.0),
        _model_control(specs.LLAMA_8B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
    )
    base_layout = {"height": 420}

    def compute(self, *, turn, first_turn_tokens, tokens_per_turn, warm_share_pct,
                efficiency_pct, model) -> View:
        m, eff, share = _MODELS[model], efficiency_pct / 100, warm_share_pct / 100
        kw = dict(first_turn_tokens=first_turn_tokens, tokens_per_turn=tokens_per_turn,
                  efficiency=eff)
        cold, warm = _routing_curves(model, first_turn_tokens, tokens_per_turn, eff)
        r = calc.kv_routing_ttft(m, _H100, turn, **kw)
        mixed = calc.routed_mean_ttft_s(cold, warm, share).tolist()
        traces, layout = routing_traces(
            _TURNS, cold, warm, mixed_s=mixed,
            mixed_label=f"mean with {warm_share_pct:.0f}% of turns warm",
            selected=(turn, r["cold_s"], r["warm_s"]))
        weak = calc.CH17_ROUTER_WARM_SHARES[1]
        mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)
        weak_mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], weak)
        numbers = {"context_tokens": r["context_tokens"], "cold_TFLOP": r["cold_flops"] / 1e12,
                   "cold_ms": r["cold_s"] / units.ms, "warm_TFLOP": r["warm_flops"] / 1e12,
                   "warm_ms": r["warm_s"] / units.ms, "speedup": r["speedup"],
                   "mean_ms": mean_s / units.ms, "mean_ms_at_30pct": weak_mean_s / units.ms}
        text = (f"turn {turn}: context {r['context_tokens']:,} tokens<br>"
                f"cold: {numbers['cold_TFLOP']:,.1f} TFLOP -> <b>{numbers['cold_ms']:,.0f} ms"
                f"</b>; warm: {numbers['warm_TFLOP']:,.1f} TFLOP -> "
                f"<b>{numbers['warm_ms']:,.0f} ms</b> ({numbers['speedup']:.0f}x)<br>"
                f"mean TTFT at {warm_share_pct:.0f}% warm: {numbers['mean_ms']:,.0f} ms "
                f"(at {100 * weak:.0f}% warm: {numbers['mean_ms_at_30pct']:,.0f} ms)")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §9 MBU / MFU ================================================================================

_MEASURE_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.QWEN3_8B)}
_MEASURE_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB,
                                      specs.RTX_PRO_6000)}


class UtilizationPanel(Panel):
    """17 §9: the same measurement over two denominators; decode by MBU, prefill by MFU."""

    title = "MBU and MFU from measured token rates (17 §9)"
    controls = (
        _choice("model", "model", specs.LLAMA_8B.name, {n: n for n in _MEASURE_MODELS}),
        _choice("hardware", "GPU", _H100.name, {n: n for n in _MEASURE_CARDS}),
        Control("decode_tok_s", "measured decode (tokens/s, whole batch)", "float",
                float(ch17.DECODE_TOK_PER_S), 1.0, 20_000.0, 1.0),
        Control("batch", "decode batch (sequences)", "int", 1, 1, 512, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 100),
        Control("prefill_tok_s", "measured prefill (prompt tokens/s)", "float",
                float(ch17.PREFILL_TOK_PER_S), 500.0, 100_000.0, 500.0),
    )
    base_layout = {"height": 400}

    def compute(self, *, model, hardware, decode_tok_s, batch, context_tokens,
                prefill_tok_s) -> View:
        m, hw = _MEASURE_MODELS[model], _MEASURE_CARDS[hardware]
        dec = calc.decode_utilization(m, hw, decode_tok_s, batch=batch,
                                      context_tokens=context_tokens)
        pre = calc.prefill_utilization(m, hw, prefill_tok_s)
        ceiling = decode_tok_s / dec["mbu"]
        ratios = {"decode MBU": dec["mbu"], "decode MFU": dec["mfu"], "prefill MFU": pre["mfu"]}
        traces, layout = utilization_traces(
            ratios, {"measured": decode_tok_s, "memory-roof ceiling": ceiling},
            bands={"decode MBU": CH17_HEALTHY_DECODE_MBU,
                   "prefill MFU": CH17_STRONG_PREFILL_MFU})
        numbers = {"decode_bytes_per_s": dec["bytes_per_s"], "decode_mbu_pct": 100 * dec["mbu"],
                   "decode_flops_per_s": dec["flops_per_s"], "decode_mfu_pct": 100 * dec["mfu"],
                   "headroom": dec["headroom"], "ceiling_tok_s": ceiling,
                   "prefill_flops_per_s": pre["flops_per_s"], "prefill_mfu_pct": 100 * pre["mfu"]}
        lo, hi = CH17_HEALTHY_DECODE_MBU
        if dec["mbu"] > 1:
            verdict = "above the memory roof: recheck the rate, batch or context"
        elif dec["mbu"] >= lo:
            verdict = "healthy: near the memory roof; only batch or fewer bytes help now"
        else:
            verdict = "low: suspect a small batch, unfused kernels or scattered KV (profile)"
        text = (f"<b>decode</b>: {dec['bytes_per_s']:.3g} B/s -> MBU "
                f"<b>{numbers['decode_mbu_pct']:.0f}%</b>; {dec['flops_per_s']:.3g} FLOP/s -> "
                f"MFU {numbers['decode_mfu_pct']:.2g}%<br>"
                f"headroom at most {dec['headroom']:.2f}x (ceiling {ceiling:,.0f} tok/s): "
                f"{verdict}<br><b>prefill</b>: {pre['flops_per_s']:.3g} FLOP/s -> MFU "
                f"<b>{numbers['prefill_mfu_pct']:.0f}%</b>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === §10 speculative decoding ====================================================================

_CURVE_ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
_DRAFT_LENGTHS = tuple(range(0, 11))


def speculative_check(acceptance: float, draft_len: int, rounds: int = 5000, *,
                      seed: int = 0) -> dict:
    """Expected tokens per target pass three ways: ``calc.speculative_expected_tokens``, the
    exact distribution and a seeded Monte Carlo run of ``companion.sim.speculative``.

    alpha is realised as two symbols, target p = (alpha, 1 - alpha), draft q = (1, 0), so each
    draft token is accepted with probability alpha (as in the ledger's 17 §10 entries).
    Returns expected, distribution (P(N = n), n = 1 .. k+1), simulated (frequencies), sim_mean.
    """
    a = v.probability("acceptance", acceptance)
    k = v.integer("draft_len", draft_len)
    n = v.count("rounds", rounds)
    p, q = (a, 1.0 - a), (1.0, 0.0)
    runs = spec_sim.simulate_rounds(p, q, k, n, seed=seed)
    freq = np.bincount(runs.tokens_per_round, minlength=k + 2)[1:] / n
    return {"expected": calc.speculative_expected_tokens(a, k),
            "distribution": spec_sim.tokens_per_round_distribution(p, q, k),
            "simulated": freq, "sim_mean": runs.mean_tokens}


@lru_cache(maxsize=64)
def _expected_curve(alpha: float) -> tuple:
    return _DRAFT_LENGTHS, tuple(calc.speculative_expected_tokens(alpha, k)
                                 for k in _DRAFT_LENGTHS)


class SpeculativeLeverPanel(Panel):
    """17 §10: 1 + alpha + ... + alpha^k tokens per target pass, checked by simulation."""

    title = "Speculative decoding: tokens per target pass (17 §10)"
    controls = (
        Control("acceptance", "acceptance rate alpha", "float", 0.7, 0.05, 1.0, 0.01),
        Control("draft_len", "draft length k", "int", 4, 0, 10, 1),
        Control("rounds", "simulated rounds", "int", 5000, 1000, 10_000, 1000),
    )
    base_layout = {"height": 420}

    def compute(self, *, acceptance, draft_len, rounds) -> View:
        check = speculative_check(acceptance, draft_len, rounds)
        curves = {a: _expected_curve(a) for a in _CURVE_ALPHAS}
        curves[round(acceptance, 4)] = _expected_curve(round(acceptance, 4))
        traces, layout = speculative_traces(check["distribution"], check["simulated"], curves,
                                            (draft_len, check["expected"]))
        terms = [calc.speculative_expected_tokens(acceptance, j)
                 - calc.speculative_expected_tokens(acceptance, j - 1)
                 for j in range(1, draft_len + 1)]
        numbers = {"expected_tokens": check["expected"], "simulated_mean": check["sim_mean"],
                   "terms": [1.0] + terms}
        shown = " + ".join(f"{t:.3g}" for t in numbers["terms"])
        text = (f"alpha = {acceptance:.2f}, k = {draft_len}: {shown} = "
                f"<b>{check['expected']:.2f}</b> tokens per target pass<br>"
                f"simulated over {rounds:,} rounds: {check['sim_mean']:.3f}<br>"
                f"at most {check['expected']:.1f}x lower single-stream latency (draft and the "
                f"wider pass taken as free)")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === interview: what batch size should we run? ===================================================

_BATCH_SWEEP = tuple(sorted({int(x) for x in np.geomspace(1, 4096, 49).round()}))


class BatchSizePanel(Panel):
    """Interview: the batch is pinned between the ITL target (ceiling) and KV memory (cap)."""

    title = "What batch size should we run? (17, interview; §4-§5 arithmetic)"
    controls = (
        _model_control(specs.LLAMA_8B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
        _card_control(),
        _choice("tp", "TP degree", 1, _TP_DEGREES),
        Control("itl_target_ms", "ITL target (ms, assumed)", "float",
                calc.CH17_ASSUMED_ITL_TARGET_S / units.ms, 5.0, 100.0, 1.0),
        Control("live_tokens", "live KV per sequence (tokens)", "int",
                calc.CH17_CHAT_LIVE_TOKENS, 100, 32_000, 100),
        Control("reservation_tokens", "worst-case reservation (tokens)", "int",
                calc.CH17_LONG_CONTEXT_TOKENS, 1000, 32_000, 500),
    )
    base_layout = {"height": 460}

    def compute(self, *, model, hardware, tp, itl_target_ms, live_tokens,
                reservation_tokens) -> View:
        m, hw = _MODELS[model], _CARDS[hardware]
        reservation = max(reservation_tokens, live_tokens)
        w = calc.batch_window(m, hw, tp=tp, live_tokens=live_tokens,
                              reservation_tokens=reservation,
                              itl_target_s=itl_target_ms * units.ms)
        rows = [calc.tp_decode_step(m, hw, tp, batch=b, context_tokens=live_tokens)
                for b in _BATCH_SWEEP]
        caps = {"KV cap, paged (live tokens)": w["paged_cap"],
                f"KV cap, {reservation:,}-token reservations": w["reserved_cap"]}
        traces, layout = batch_window_traces(
            _BATCH_SWEEP, [r["step_s"] for r in rows], [r["tokens_per_s"] for r in rows],
            slo_s=itl_target_ms * units.ms, caps=caps,
            chosen=(w["run_batch"], w["run_step_s"]))
        numbers = {"itl_ceiling": w["itl_ceiling"], "paged_cap": w["paged_cap"],
                   "reserved_cap": w["reserved_cap"], "run_batch": w["run_batch"],
                   "binding": w["binding"], "run_step_ms": w["run_step_s"] / units.ms,
                   "run_tokens_per_s": w["run_tokens_per_s"],
                   "reserved_cap_step_ms": w["reserved_cap_step_s"] / units.ms,
                   "paged_cap_step_ms": w["paged_cap_step_s"] / units.ms,
                   "free_kv_GB": w["free_kv_bytes"] / units.GB}
        text = (f"free KV: {numbers['free_kv_GB']:.0f} GB (TP {tp})<br>"
                f"KV cap: <b>{w['paged_cap']:,}</b> paged, {w['reserved_cap']:,} with "
                f"{reservation:,}-token reservations<br>"
                f"ITL ceiling at {itl_target_ms:g} ms: <b>{w['itl_ceiling']:,}</b><br>"
                f"run at <b>{w['run_batch']:,}</b> ({w['binding']} binds): step "
                f"{numbers['run_step_ms']:.1f} ms, {numbers['run_tokens_per_s']:,.0f} tok/s")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# === interview: "P99 ITL is terrible but the mean is fine" ======================================

def itl_tail_trace(chunk_tokens: int | None = None, *, decoders: int = 8,
                   decode_outputs: int = 500, long_prompts: int = 6,
                   long_prompt_tokens: int = calc.CH17_LONG_CONTEXT_TOKENS,
                   first_long_s: float = 0.2, long_every_s: float = 0.4,
                   round_time=None) -> dict:
    """A generated trace for the ITL-tail interview question, on the scheduler simulator.

    ``decoders`` chat streams (one-token prompts, ``decode_outputs`` tokens each) decode from
    t = 0 while ``long_prompts`` prompts of ``long_prompt_tokens`` tokens arrive every
    ``long_every_s`` from ``first_long_s``; every request runs at once (no queueing). Whole
    prompts (continuous batching) or ``chunk_tokens`` chunks; Chapter 17's round time. Returns
    the streams' ITL mean, median, 99th percentile and max (seconds, numpy's linear
    percentile), the long prompts' mean TTFT and the Result.
    """
    chunk = None if chunk_tokens is None else v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    d = v.count("decoders", decoders)
    g = v.tokens("decode_outputs", decode_outputs, minimum=2)
    n_long = v.count("long_prompts", long_prompts, minimum=0)
    p = v.tokens("long_prompt_tokens", long_prompt_tokens, minimum=1)
    first = v.nonnegative("first_long_s", first_long_s)
    every = v.nonnegative("long_every_s", long_every_s)
    rt = sched.chapter17_round_time() if round_time is None else round_time
    streams = [sched.Request(f"chat{i}", 0.0, 1, g) for i in range(d)]
    longs = [sched.Request(f"long{j}", first + j * every, p, 1) for j in range(n_long)]
    kw = dict(max_running=d + max(n_long, 1), round_time=rt)
    if chunk is None:
        res = sched.simulate(streams + longs, "continuous", **kw)
    else:
        res = sched.simulate(streams + longs, "chunked", chunk_tokens=chunk, **kw)
    itl = np.concatenate([res.itl_s[r.id] for r in streams])
    ttft = [res.ttft_s[r.id] for r in longs]
    return {"itl_mean_s": float(itl.mean()), "itl_p50_s": float(np.percentile(itl, 50)),
            "itl_p99_s": float(np.percentile(itl, 99)), "itl_max_s": float(itl.max()),
            "intervals": len(itl),
            "long_ttft_mean_s": float(np.mean(ttft)) if ttft else math.nan, "result": res}


# === re-derived tables as text (17 §6, §10) ======================================================

def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def _table(headers, rows, widths) -> str:
    """A plain-text table whose cells wrap inside fixed column widths."""
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [_wrap(str(c), w) for c, w in zip(row, widths)]
        for i in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[i] if i < len(c) else "").ljust(w)
                                   for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


def decision_table_text() -> str:
    """``calc.batching_decision_table()`` as a plain-text table (17 §6, re-derived)."""
    rows = [(r["strategy"], r["joins"], r["fixes"], r["costs"], r["fits"])
            for r in calc.batching_decision_table()]
    return _table(("strategy", "who may join, when", "fixes", "costs", "fits"), rows,
                  (11, 22, 24, 26, 24))


def _display(value, unit) -> str:
    """A value of ``calc.levers_table`` / ``calc.cheat_sheet`` in the chapter's display units."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        return f"{value / units.ms:,.3g} ms"
    if unit in ("B", "B per token"):
        if 0 < value < 1e6:
            return f"{value / units.KiB:,.0f} KiB"
        return f"{value / units.GB:,.3g} GB"
    if unit is not None and unit.startswith("fraction"):
        return f"{100 * value:.2g}%"
    if unit == "x card memory":
        return f"{value:.2f}x card"
    if unit in ("tok/s",):
        return f"{value:,.0f} tok/s"
    if abs(value) >= 1e4:
        return f"{value:,.0f} {unit}"
    return f"{value:,.4g} {unit}"


def levers_text(model, hardware) -> str:
    """``calc.levers_table(model, hardware)`` as text: symptom, lever, what it changes, and the
    chapter's arithmetic before -> after for this model and card (17 §10, re-derived)."""
    rows = []
    for r in calc.levers_table(model, hardware):
        if r["before"] is None and r["after"] is None:
            change = "-"
        elif r["before"] is None:
            change = _display(r["after"], r["unit"])
        else:
            change = f"{_display(r['before'], r['unit'])} -> {_display(r['after'], r['unit'])}"
        rows.append((r["symptom"], r["lever"], r["changes"], change, r["section"]))
    return _table(("symptom", "lever", "what it changes", "arithmetic", "where"), rows,
                  (24, 24, 24, 24, 6))


def mechanism_map_text() -> str:
    """``calc.mechanism_lever_map()`` as text (17 §10, re-derived)."""
    rows = [(r["mechanism"], r["lever"], r["section"]) for r in calc.mechanism_lever_map()]
    return _table(("mechanism", "lever", "where"), rows, (46, 40, 10))


def cheat_sheet_text(models, hardware) -> str:
    """``calc.cheat_sheet`` for several models side by side, in display units (17 §10)."""
    seq = v.sequence("models", models)
    sheets = [calc.cheat_sheet(m, hardware) for m in seq]
    headers = ("quantity",) + tuple(m.name.split(" (")[0] for m in seq) + ("where",)
    rows = []
    for i, row in enumerate(sheets[0]):
        rows.append((row["quantity"],) + tuple(_display(s[i]["value"], s[i]["unit"])
                                               for s in sheets) + (row["section"],))
    widths = (44,) + (18,) * len(seq) + (6,)
    return _table(headers, rows, widths)
