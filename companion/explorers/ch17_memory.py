"""Chapter 17 §1, §4 and §5 explorers: the memory hierarchy of a card, KV sizing and max
concurrency (with tensor parallelism), and what PagedAttention buys.

``MemoryHierarchyPanel`` (17 §1): a hardware preset and the bytes a step must read -> the
card's pyramid, ridge point, full-memory sweep time and link ratios, beside every other preset.
``KVSizingPanel`` (17 §4): model, hardware, context, KV precision, TP degree and runtime reserve
-> KV per token and per sequence, memory per GPU and how many sequences fit.
``PagedKVPanel`` (17 §5): mean live tokens, block size and the contiguous reservation ->
naive vs paged batch, step time (ITL) and throughput.
``allocator_demo`` builds the small BlockManager pools that ``plots.allocator_figure`` draws.
"""

from __future__ import annotations

import numpy as np

from companion import validate as v
from companion import calc, specs, units
from companion.chapters import ch17
from companion.figures.ch17_memory import (SEQ_COLORS, gpu_memory_traces,
                                           memory_hierarchy_layout, memory_hierarchy_traces,
                                           paged_tradeoff_layout, paged_tradeoff_traces)
from companion.explorers.base import Control, Panel, View
from companion.sim.kvcache import BlockManager, OutOfBlocks

__all__ = ["MemoryHierarchyPanel", "KVSizingPanel", "PagedKVPanel", "allocator_demo",
           "ALLOCATOR_DEMO_SEQUENCES"]

_HARDWARE = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB,
                                 specs.RTX_PRO_6000, specs.GH200, specs.M2_MAX)}
_KV_BYTES = {"BF16 (2 B)": 2.0, "FP8 (1 B)": 1.0}


def _hardware_choice():
    return Control("hardware", "hardware", "choice", specs.H100_SXM.name,
                   options={name: name for name in _HARDWARE})


def _opt(x, scale=1.0):
    """None stays None (a level or link the preset does not have), numbers are scaled."""
    return None if x is None else x / scale


# --- §1 the memory hierarchy -----------------------------------------------------------------

class MemoryHierarchyPanel(Panel):
    """17 §1 live: a card's memory pyramid, ridge point and full-memory sweep, vs the others."""

    title = "The memory hierarchy (17 §1): capacity, bandwidth, and the ratio that runs decode"
    controls = (
        _hardware_choice(),
        Control("sweep_gb", "bytes read per step (GB)", "float", 80.0, 1.0, 200.0, 1.0),
    )
    base_layout = memory_hierarchy_layout(
        [r["level"] for r in calc.memory_pyramid(specs.H100_SXM)])
    base_layout["yaxis"]["domain"] = base_layout["yaxis2"]["domain"] = [0.5, 1.0]
    base_layout.update({
        "height": 640, "barmode": "overlay",
        "xaxis3": {"title": {"text": "time to read those bytes once (ms)"}, "domain": [0, 1],
                   "anchor": "y3", "rangemode": "tozero"},
        "yaxis3": {"domain": [0, 0.36], "anchor": "x3", "autorange": "reversed",
                   "type": "category"}})

    def compute(self, *, hardware, sweep_gb) -> View:
        hw = _HARDWARE[hardware]
        rows = calc.memory_pyramid(hw)
        sweep_bytes = sweep_gb * units.GB
        ratios = (calc.bandwidth_ratios(hw) if hw.interconnect_bytes_per_s is not None
                  and hw.host_link_bytes_per_s is not None else {})
        full_s = calc.memory_sweep_s(hw)
        sweep_s = calc.memory_sweep_s(hw, sweep_bytes)
        numbers = {
            "memory_GB": hw.mem_bytes / units.GB,
            "bandwidth_GBs": hw.mem_bw_bytes_per_s / units.GB,
            "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
            "ridge_flop_per_byte": calc.ridge_point(hw),
            "full_sweep_ms": full_s / units.ms,
            "full_sweeps_per_s": 1.0 / full_s,
            "sweep_ms": sweep_s / units.ms,
            "steps_per_s": 1.0 / sweep_s,
            "nvlink_GBs": _opt(hw.interconnect_bytes_per_s, units.GB),
            "host_link_GBs": _opt(hw.host_link_bytes_per_s, units.GB),
            "hbm_over_nvlink": ratios.get("hbm_over_nvlink"),
            "nvlink_over_pcie": ratios.get("nvlink_over_pcie"),
        }
        traces = memory_hierarchy_traces(rows)
        names = list(_HARDWARE)
        times = [calc.memory_sweep_s(h, sweep_bytes) / units.ms for h in _HARDWARE.values()]
        ridges = [calc.ridge_point(h) for h in _HARDWARE.values()]
        traces.append({
            "type": "bar", "orientation": "h", "y": names, "x": times, "name": "sweep time",
            "xaxis": "x3", "yaxis": "y3",
            "marker": {"color": ["#2d6a4f" if n == hardware else "#b7c9bf" for n in names]},
            "text": [f"{t:,.3g} ms (ridge {r:,.0f} FLOP/B)" for t, r in zip(times, ridges)]})
        link = ("" if not ratios else
                f"<br>HBM / NVLink = {ratios['hbm_over_nvlink']:.2g}x, NVLink / PCIe = "
                f"{ratios['nvlink_over_pcie']:.2g}x")
        text = (f"<b>{hw.name}</b>: {numbers['memory_GB']:,.0f} GB at "
                f"{numbers['bandwidth_GBs']:,.0f} GB/s, {numbers['peak_TFLOPs']:,.4g} TFLOP/s"
                f"<br>ridge = peak / bandwidth = <b>{numbers['ridge_flop_per_byte']:,.0f} FLOP "
                f"per byte</b><br>reading all of memory once: <b>{numbers['full_sweep_ms']:.3g} "
                f"ms</b> (at most {numbers['full_sweeps_per_s']:,.0f} such steps/s)<br>"
                f"reading {sweep_gb:g} GB per step: {numbers['sweep_ms']:.3g} ms, "
                f"{numbers['steps_per_s']:,.0f} steps/s"
                + (" (more than the card holds)" if sweep_bytes > hw.mem_bytes else "") + link)
        return View(numbers=numbers, traces=traces, text=text)


# --- §4 KV sizing ----------------------------------------------------------------------------

_KV_MODELS = {m.name: m for m in (specs.LLAMA_70B, specs.LLAMA_8B, specs.LLAMA_405B,
                                  specs.QWEN3_8B)}
_TP = {"1": 1, "2": 2, "4": 4, "8": 8}
_CONTEXT_SWEEP = np.unique(np.geomspace(256, 131_072, 41).astype(int))


class KVSizingPanel(Panel):
    """17 §4 live: KV bytes per token and sequence, memory per GPU, sequences that fit."""

    title = "KV cache, sized honestly (17 §4): how many sequences fit"
    controls = (
        Control("model", "model", "choice", specs.LLAMA_70B.name,
                options={name: name for name in _KV_MODELS}),
        _hardware_choice(),
        Control("context_tokens", "context per sequence (tokens)", "int",
                calc.CH17_LONG_CONTEXT_TOKENS, 100, ch17.LONGEST_CONTEXT_TOKENS, 100),
        Control("kv_bytes", "KV precision", "choice", 2.0, options=_KV_BYTES),
        Control("tp", "tensor-parallel GPUs", "choice", 4, options=_TP),
        Control("reserve_gb", "runtime reserve per GPU (GB)", "float",
                calc.CH17_RUNTIME_RESERVE_BYTES / units.GB, 0.0, 20.0, 0.5),
    )
    base_layout = {
        "height": 520, "barmode": "overlay",
        "xaxis": {"title": {"text": "memory of one GPU (GB)"}, "domain": [0, 1], "anchor": "y"},
        "yaxis": {"domain": [0.72, 1.0], "anchor": "x", "showticklabels": False},
        "xaxis2": {"title": {"text": "context per sequence (tokens)"}, "type": "log",
                   "anchor": "y2"},
        "yaxis2": {"title": {"text": "sequences that fit (all GPUs)"}, "domain": [0, 0.5],
                   "anchor": "x2", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    def compute(self, *, model, hardware, context_tokens, kv_bytes, tp, reserve_gb) -> View:
        m, hw = _KV_MODELS[model], _HARDWARE[hardware]
        reserve = reserve_gb * units.GB
        kw = dict(tp=tp, reserve_bytes=reserve, bytes_per_value=kv_bytes)
        cap = calc.tp_kv_capacity(m, hw, context_tokens=context_tokens, **kw)
        per_token = calc.kv_bytes_per_token(m, kv_bytes)
        n = cap["max_sequences"]
        sweep = [calc.tp_kv_capacity(m, hw, context_tokens=int(L), **kw)["max_sequences"]
                 for L in _CONTEXT_SWEEP]
        numbers = {
            "kv_per_token_KB": per_token / units.KiB,     # Chapter 17's "KB" is KiB
            "kv_per_sequence_GB": cap["kv_bytes_per_sequence"] / units.GB,
            "weights_GB": m.weight_bytes / units.GB,
            "weights_over_card": cap["weights_over_memory"],
            "weights_per_gpu_GB": cap["weight_bytes_per_gpu"] / units.GB,
            "kv_heads_per_gpu": cap["kv_heads_per_gpu"],
            "free_kv_per_gpu_GB": cap["free_kv_bytes_per_gpu"] / units.GB,
            "free_kv_total_GB": cap["free_kv_bytes"] / units.GB,
            "fits": cap["fits"],
            "max_sequences": n,
            "sequence_over_card": cap["kv_bytes_per_sequence"] / hw.mem_bytes,
            "kv_equals_weights_tokens": calc.kv_weight_crossover_tokens(m,
                                                                        bytes_per_value=kv_bytes),
        }
        traces = gpu_memory_traces(hw.mem_bytes, cap["weight_bytes_per_gpu"], reserve,
                                   n * cap["kv_bytes_per_sequence"] / tp,
                                   label=f"each of {tp} GPU(s)")
        traces += [
            {"type": "scatter", "mode": "lines", "x": _CONTEXT_SWEEP.tolist(), "y": sweep,
             "name": "sequences that fit vs context", "xaxis": "x2", "yaxis": "y2"},
            {"type": "scatter", "mode": "markers", "x": [context_tokens], "y": [n],
             "name": "this setting", "xaxis": "x2", "yaxis": "y2"},
        ]
        if cap["fits"]:
            verdict = (f"free for KV: {numbers['free_kv_per_gpu_GB']:,.3g} GB per GPU, "
                       f"{numbers['free_kv_total_GB']:,.4g} GB in all<br>"
                       f"sequences of {context_tokens:,} tokens that fit: <b>{n:,}</b>")
        else:
            verdict = (f"<b>does not fit</b>: {numbers['weights_per_gpu_GB']:,.4g} GB of weights "
                       f"+ {reserve_gb:g} GB reserve per GPU exceed {hw.mem_bytes / units.GB:,.0f} "
                       "GB; raise the TP degree")
        heads = numbers["kv_heads_per_gpu"]
        head_note = ("" if float(heads).is_integer() and heads >= 1 else
                     " (TP above the KV-head count replicates heads: not modelled)")
        text = (f"<b>{m.name}</b>: 2 x {m.n_layers} layers x {m.n_kv_heads} KV heads x "
                f"{m.head_dim} x {kv_bytes:g} B = <b>{per_token:,.0f} B</b> = "
                f"{numbers['kv_per_token_KB']:,.4g} KB per token<br>"
                f"one {context_tokens:,}-token sequence: <b>{numbers['kv_per_sequence_GB']:,.3g} "
                f"GB</b> ({100 * numbers['sequence_over_card']:.3g}% of one card)<br>"
                f"weights {numbers['weights_GB']:,.4g} GB = {numbers['weights_over_card']:.3g}x "
                f"the card; at TP {tp}: {numbers['weights_per_gpu_GB']:,.4g} GB and "
                f"{heads:g} KV heads per GPU{head_note}<br>{verdict}<br>"
                f"a sequence's KV equals the weights at "
                f"{numbers['kv_equals_weights_tokens']:,.0f} tokens")
        return View(numbers=numbers, traces=traces, text=text)


# --- §5 PagedAttention -----------------------------------------------------------------------

_PAGED_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.QWEN3_8B)}
_LIVE_SWEEP = np.unique(np.geomspace(16, 32_768, 41).astype(int))


class PagedKVPanel(Panel):
    """17 §5 live: worst-case reservations vs paged blocks: batch, ITL and throughput."""

    title = "What PagedAttention buys (17 §5): batch, step time and throughput"
    controls = (
        Control("model", "model", "choice", specs.LLAMA_8B.name,
                options={name: name for name in _PAGED_MODELS}),
        _hardware_choice(),
        Control("live_tokens", "mean live tokens per sequence", "int",
                calc.CH17_CHAT_LIVE_TOKENS, 16, 8000, 8),
        Control("block_tokens", "block size (tokens)", "int", 16, 1, 1024, 1),
        Control("reservation_tokens", "contiguous reservation per request (tokens)", "int",
                calc.CH17_LONG_CONTEXT_TOKENS, 1024, 32_768, 64),
    )
    base_layout = {
        "height": 520,
        "xaxis": {"title": {"text": "mean live tokens per sequence"}, "type": "log",
                  "domain": [0, 0.44], "anchor": "y"},
        "yaxis": {"title": {"text": "sequences that fit in the KV space"}, "type": "log",
                  "anchor": "x"},
        **paged_tradeoff_layout(xaxis="x2", yaxis="y2"),
        "legend": {"orientation": "h", "y": -0.22},
    }
    base_layout["xaxis2"].update(domain=[0.56, 1.0], anchor="y2")
    base_layout["yaxis2"].update(anchor="x2")

    def compute(self, *, model, hardware, live_tokens, block_tokens, reservation_tokens) -> View:
        m, hw = _PAGED_MODELS[model], _HARDWARE[hardware]
        live = min(live_tokens, reservation_tokens)
        kw = dict(live_tokens=live, reservation_tokens=reservation_tokens)
        # the chapter divides the KV space by live bytes alone (no block tail): block 1
        ideal = calc.paged_batch_gain(m, hw, block_tokens=1, **kw)
        blocks = calc.paged_batch_gain(m, hw, block_tokens=block_tokens, **kw)
        frag = calc.reservation_waste(m, live, max_len_tokens=reservation_tokens)
        worst = calc.paged_worst_waste(m, block_tokens)
        tail = calc.block_fill(live, block_tokens)
        budget = ideal["kv_budget_bytes"]
        naive, paged, paged_b = ideal["naive"], ideal["paged"], blocks["paged"]
        numbers = {
            "kv_budget_GB": budget / units.GB,
            "live_kv_MB": ideal["live_kv_bytes"] / units.MB,
            "reservation_GB": calc.kv_bytes(m, reservation_tokens, block_tokens=1) / units.GB,
            "internal_fragmentation_pct": 100 * frag["wasted_fraction"],
            "naive_batch": naive["batch"],
            "paged_batch": paged["batch"],
            "paged_batch_blocks": paged_b["batch"],
            "batch_gain": ideal["batch_gain"],
            "naive_step_ms": naive["step_s"] / units.ms,
            "paged_step_ms": paged["step_s"] / units.ms,
            "paged_blocks_step_ms": paged_b["step_s"] / units.ms,
            "naive_tok_s": naive["tokens_per_s"],
            "paged_tok_s": paged["tokens_per_s"],
            "paged_blocks_tok_s": paged_b["tokens_per_s"],
            "throughput_gain": ideal["throughput_gain"],
            "worst_waste_MB": worst["bytes"] / units.MB,
            "tail_empty_slots": tail["empty_slots"],
        }
        # left: sequences that fit as live tokens vary (naive: flat at budget / reservation)
        lives = [int(x) for x in _LIVE_SWEEP if x <= reservation_tokens]
        paged_fit = [calc.max_concurrent(budget, m, x, 1, block_tokens=block_tokens)
                     for x in lives]
        traces = [
            {"type": "scatter", "mode": "lines", "x": lives, "y": [naive["batch"]] * len(lives),
             "name": f"contiguous: {reservation_tokens:,}-token reservations",
             "line": {"color": SEQ_COLORS[5], "dash": "dash"}},
            {"type": "scatter", "mode": "lines+markers", "x": lives + [None, live, live],
             "y": paged_fit + [None, naive["batch"], paged_b["batch"]],
             "name": f"paged: {block_tokens}-token blocks (markers: this workload)",
             "marker": {"size": [0] * len(lives) + [0, 11, 11]},
             "line": {"color": SEQ_COLORS[0]}},
        ]
        top = max(paged["batch"], 2)
        batches = np.unique(np.geomspace(1, top * 1.25, 40).astype(int))
        steps = [calc.decode_vs_context(m, hw, live, batch=int(b)) for b in batches]
        marks = [("contiguous", naive["batch"], naive["step_s"], naive["tokens_per_s"]),
                 ("paged", paged_b["batch"], paged_b["step_s"], paged_b["tokens_per_s"])]
        traces += paged_tradeoff_traces(batches.tolist(), [s["step_s"] for s in steps],
                                        [s["tokens_per_s"] for s in steps], marks,
                                        xaxis="x2", yaxis="y2")
        clipped = ("" if live == live_tokens
                   else f" (clipped to the {reservation_tokens:,} reserved)")
        text = (f"live KV per sequence: {live:,} tokens{clipped} = "
                f"<b>{numbers['live_kv_MB']:,.3g} MB</b>; a contiguous reservation of "
                f"{reservation_tokens:,} tokens = {numbers['reservation_GB']:.3g} GB, "
                f"{numbers['internal_fragmentation_pct']:.3g}% of it empty<br>"
                f"KV space {numbers['kv_budget_GB']:,.3g} GB: contiguous "
                f"<b>{naive['batch']:,}</b> sequences, paged <b>{paged['batch']:,}</b> "
                f"(chapter's arithmetic, live bytes only) / <b>{paged_b['batch']:,}</b> with "
                f"{block_tokens}-token blocks ({numbers['batch_gain']:.3g}x)<br>"
                f"step = ITL: {numbers['naive_step_ms']:.3g} ms vs "
                f"{numbers['paged_step_ms']:.3g} ms; throughput "
                f"<b>{numbers['naive_tok_s']:,.0f}</b> vs <b>{numbers['paged_tok_s']:,.0f}</b> "
                f"tok/s ({numbers['throughput_gain']:.2g}x)<br>"
                f"worst-case tail per sequence: {block_tokens - 1} slots = "
                f"{numbers['worst_waste_MB']:,.3g} MB; this workload's tail: "
                f"{numbers['tail_empty_slots']} empty slots")
        return View(numbers=numbers, traces=traces, text=text)


# --- §5 the allocator, drawn from BlockManager pools ----------------------------------------

# (name, prompt tokens, tokens appended while decoding): A ends holding 40 tokens, the
# chapter's sequence A (blocks 0-15, 16-31 and 32-39)
ALLOCATOR_DEMO_SEQUENCES = (("A", 24, 16), ("B", 100, 20), ("C", 10, 13), ("D", 60, 30),
                            ("E", 50, 20), ("F", 30, 25))


def allocator_demo(block_tokens: int = 16, max_len_tokens: int = 256, pool_tokens: int = 1024,
                   sequences=ALLOCATOR_DEMO_SEQUENCES) -> dict:
    """Run the same arrivals through two ``sim.kvcache.BlockManager`` pools over the same
    ``pool_tokens`` slots (17 §5): contiguous (one ``max_len_tokens`` block per request,
    reserved on arrival) and paged (``block_tokens`` blocks, allocated as tokens arrive).

    Every request arrives at once with its prompt, then each appends one token per decode step,
    in turn, so the paged pool interleaves blocks of different sequences. A request the
    contiguous pool cannot reserve for is turned away. Returns the two managers and the lists
    of admitted and rejected names for each.
    """
    block_tokens = v.tokens("block_tokens", block_tokens, minimum=1)
    max_len_tokens = v.tokens("max_len_tokens", max_len_tokens, minimum=1)
    pool_tokens = v.tokens("pool_tokens", pool_tokens, minimum=1)
    sequences = [(str(name), v.tokens(f"sequences[{i}] prompt", prompt, minimum=1),
                  v.tokens(f"sequences[{i}] growth", grow))
                 for i, (name, prompt, grow) in enumerate(v.sequence("sequences", sequences))]
    if pool_tokens % block_tokens or pool_tokens % max_len_tokens:
        raise ValueError(f"pool_tokens: {pool_tokens} must be a multiple of both block sizes")
    paged = BlockManager(pool_tokens // block_tokens, block_tokens)
    naive = BlockManager(pool_tokens // max_len_tokens, max_len_tokens)
    admitted = {"paged": [], "naive": []}
    rejected = {"paged": [], "naive": []}
    pools = {"paged": paged, "naive": naive}
    for name, prompt, grow in sequences:
        if prompt + grow > max_len_tokens:
            raise ValueError(f"sequences: {name} holds more than max_len_tokens")
        for kind, mgr in pools.items():
            try:
                mgr.allocate(name, prompt)
                admitted[kind].append(name)
            except OutOfBlocks:
                rejected[kind].append(name)
    grows = {name: grow for name, _, grow in sequences}
    for step in range(max(grows.values())):
        for name in grows:
            if step < grows[name]:
                for kind, mgr in pools.items():
                    if name in mgr:
                        mgr.append(name, 1)
    return {"paged": paged, "naive": naive, "admitted": admitted, "rejected": rejected}
