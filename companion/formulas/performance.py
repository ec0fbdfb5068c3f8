"""Closed forms of Chapter 17 §1-§6, §9, §10: memory hierarchy, roofline, the two phases, KV
sizing, paging, batching, MBU/MFU and the levers.

Chapter 17 counts 2 FLOPs per parameter per token and ignores attention FLOPs (it says so in §2),
so prefill time here is ``core.matrix_flops`` over an assumed fraction of peak (50% = 494.5
TFLOP/s). Its decode step is (weights + live KV) / bandwidth, which is ``core.decode_step_time``.
The tables the chapter refers to without printing them (memory pyramid, KV size by context, the
GQA/MHA/MQA comparison, the batching decision, the levers, the mechanism -> lever map, the cheat
sheet) are re-derived here from its formulas and marked as such.
"""

from __future__ import annotations

import math

import numpy as np

from companion import validate as v
from companion.chapters import ch17
# the chapter's inputs (companion.chapters.ch17), exported as calc.CH17_X for the notebooks
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (attainable_flops, attention_flops_per_pair,
                                     attention_pairs, decode_step_parts, decode_step_time,
                                     flops_per_token_or_default, kv_bytes, kv_bytes_at_context,
                                     kv_bytes_per_token, matrix_flops, max_concurrent,
                                     mbu, mfu, moe_streamed_weight_bytes,
                                     read_bytes_per_output_token, ridge_point,
                                     static_batch_utilization, time_at_mfu)
from companion.serves import serves
from companion.specs import H100_SXM, LLAMA_8B, Hardware, Model
from companion.units import KiB

__all__ = [
    # inputs the chapter states (17 §2-§6, §9-§10)
    # §1 memory hierarchy
    "memory_pyramid", "bandwidth_ratios", "memory_sweep_s",
    # §2 roofline
    "decode_intensity", "prefill_intensity", "roofline_point", "roofline_points",
    "decode_time_split", "decode_ridge_batch",
    # §3 two phases
    "prefill_compute_s", "request_budget", "head_of_line_stall",
    # §4 KV sizing
    "kv_by_context", "attention_variants", "tp_kv_capacity", "decode_vs_context",
    "kv_weight_crossover_tokens",
    # §5 paging
    "reservation_waste", "block_fill", "paged_worst_waste", "prefix_sharing_bytes",
    "paged_batch_gain", "decode_throughput_ceiling",
    # §6 batching
    "static_batch_slot_steps", "chunked_prefill_trade", "chunk_trade_sweep",
    "batching_decision_table", "fused_step_parts", "fused_ridge_tokens", "fused_chunked_prefill",
    "fused_chunk_sweep", "decode_batch_for_step",
    # §9 measurement
    "sm_share", "decode_utilization", "prefill_utilization",
    # §10 levers
    "quantization_ceiling",
]

# Per-SM on-chip memory, which the chapter gives only as "KBs per SM, ~1 ns" (§1 pyramid). Hopper
# figures from the NVIDIA H100 whitepaper: a 256 KiB register file (65,536 32-bit registers) and
# 256 KiB of combined L1 data cache / shared memory per SM (up to 228 KiB of it as shared
# memory). The Hardware presets carry no such field, so a card without an SM count gets None.
_REGISTER_BYTES_PER_SM = 256 * KiB
_SHARED_L1_BYTES_PER_SM = 256 * KiB


# --- argument helpers ------------------------------------------------------------------------

def _efficiency(efficiency) -> float:
    return v.probability("efficiency", efficiency, open_low=True)


def _at_precision(model: Model, bytes_per_param) -> Model:
    """The model with its weights stored at ``bytes_per_param`` (None: as the preset has them)."""
    if bytes_per_param is None:
        return model
    b = v.positive("bytes_per_param", bytes_per_param)
    return model.with_(bytes_per_param=b, weight_bytes=model.n_params * b,
                       streamed_weight_bytes=model.streamed_params * b)


# --- §1 the memory hierarchy -----------------------------------------------------------------

@serves("17.1")
def memory_pyramid(hardware: Hardware) -> list[dict]:
    """Rows of the memory pyramid (re-derived: the table is not printed in our copy of 17 §1).

    Each row: key, level (its label, saying whether the capacity is per SM or per device),
    scope ("per SM", "per device" or "link"), where, capacity_bytes (per SM for the per-SM
    rows), device_bytes (the capacity summed over the card's SMs), bandwidth_bytes_per_s,
    latency_s (None where the chapter gives no number), hbm_over_level (HBM bandwidth / this
    level's: NVLink 3.7x slower than HBM, PCIe 14x slower than NVLink on the H100 SXM) and the
    chapter's wording. The chapter's diagram joins shared memory and L2 into one "SRAM" box;
    they are separate here because one is per SM and the other is shared by the whole card.
    """
    hw = _hardware(hardware)

    def per_sm(size):
        return (None, None) if hw.sm_count is None else (size, hw.sm_count * size)

    registers, registers_total = per_sm(_REGISTER_BYTES_PER_SM)
    shared, shared_total = per_sm(_SHARED_L1_BYTES_PER_SM)
    rows = [
        dict(key="registers", level="Registers (per SM)", scope="per SM", where="inside each SM",
             capacity_bytes=registers, device_bytes=registers_total,
             bandwidth_bytes_per_s=None, latency_s=ch17.REGISTER_LATENCY_S,
             text="KBs per SM, ~1 ns"),
        dict(key="shared_l1", level="Shared memory / L1 (per SM)", scope="per SM",
             where="inside each SM", capacity_bytes=shared, device_bytes=shared_total,
             bandwidth_bytes_per_s=None, latency_s=None,
             text="on-die SRAM next to the arithmetic units (the tiles of FlashAttention)"),
        dict(key="l2", level="L2 cache (per device)", scope="per device",
             where="on the die, shared by all SMs", capacity_bytes=hw.l2_bytes,
             device_bytes=hw.l2_bytes, bandwidth_bytes_per_s=None, latency_s=None,
             text="~50 MB L2, tens of TB/s; far too small for a model"),
        dict(key="hbm", level="HBM (per device)", scope="per device", where="on the package",
             capacity_bytes=hw.mem_bytes, device_bytes=hw.mem_bytes,
             bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s, latency_s=None,
             text="the capacity of every 'does it fit' question, the bandwidth of decode"),
        dict(key="nvlink", level="NVLink", scope="link", where="other GPUs in the node",
             capacity_bytes=None, device_bytes=None,
             bandwidth_bytes_per_s=hw.interconnect_bytes_per_s, latency_s=None,
             text="GPU-to-GPU inside a server: where tensor parallelism can live (§7)"),
        dict(key="pcie", level="PCIe", scope="link", where="host DRAM / NVMe",
             capacity_bytes=None, device_bytes=None,
             bandwidth_bytes_per_s=hw.host_link_bytes_per_s, latency_s=None,
             text="the general-purpose bus to the host"),
    ]
    for row in rows:
        bw = row["bandwidth_bytes_per_s"]
        row["hbm_over_level"] = None if bw is None else hw.mem_bw_bytes_per_s / bw
    return rows


@serves("17.1")
def bandwidth_ratios(hardware: Hardware) -> dict:
    """HBM/NVLink, NVLink/PCIe and HBM/PCIe bandwidth ratios (3.7x, 14x on the H100 SXM, 17 §1)."""
    hw = _hardware(hardware)
    if hw.interconnect_bytes_per_s is None or hw.host_link_bytes_per_s is None:
        raise ValueError(f"hardware: {hw.name} needs interconnect_bytes_per_s and "
                         f"host_link_bytes_per_s for these ratios")
    return dict(hbm_over_nvlink=hw.mem_bw_bytes_per_s / hw.interconnect_bytes_per_s,
                nvlink_over_pcie=hw.interconnect_bytes_per_s / hw.host_link_bytes_per_s,
                hbm_over_pcie=hw.mem_bw_bytes_per_s / hw.host_link_bytes_per_s)


@serves("17.1")
def memory_sweep_s(hardware: Hardware, sweep_bytes: float | None = None) -> float:
    """Seconds to read ``sweep_bytes`` (default: all of HBM) once: bytes / bandwidth.

    80e9 / 3.35e12 = 24 ms, so a step that sweeps the card is capped near 40 per second (17 §1).
    """
    hw = _hardware(hardware)
    n = hw.mem_bytes if sweep_bytes is None else v.positive("sweep_bytes", sweep_bytes)
    return n / hw.mem_bw_bytes_per_s


# --- §2 roofline -----------------------------------------------------------------------------

def _pass_intensity(model: Model, tokens: int, kv_tokens: int, kv_bytes_per_value: float) -> float:
    """FLOP per HBM byte of one pass: 2 P x tokens / (weight bytes + KV bytes read)."""
    flops = matrix_flops(model, tokens, include_lm_head=True)
    k = kv_bytes_per_token(model, kv_bytes_per_value)
    if kv_tokens and model.sliding_window is not None:
        # sliding-window layers keep at most W - 1 tokens: the KV per context token, averaged
        k = kv_bytes_at_context(model, kv_tokens, bytes_per_value=kv_bytes_per_value) / kv_tokens
    # read_bytes_per_output_token gives D_w / b + L k per token; x b is the pass's bytes
    # an MoE reads the experts these tokens touch (all of D_w for a dense model)
    weights = moe_streamed_weight_bytes(model, tokens)
    read = read_bytes_per_output_token(weights, tokens, kv_tokens, k) * tokens
    return flops / read


@serves("17.2", "17.10")
def decode_intensity(model: Model, batch: int = 1, context_tokens: int = 0, *,
                     bytes_per_param: float | None = None, kv_bytes_per_value: float = 2) -> float:
    """Decode arithmetic intensity, FLOP per byte: B x 2P / (P x bytes_per_param + B x L x k).

    Batch 1, no KV: 1 FLOP/byte in BF16, 2 in INT8 (17 §2, §10); batch B, no KV: B. With each
    sequence's live KV read every step: 49 at B = 64 and 600 tokens, 12 at 8,000 tokens (17 §2).
    """
    m = _at_precision(_model(model), bytes_per_param)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    return _pass_intensity(m, b, L, kv_bytes_per_value)


@serves("17.2")
def decode_ridge_batch(model: Model, hardware: Hardware, *,
                       bytes_per_param: float | None = None) -> float:
    """Decode batch (weights only, no KV) whose intensity reaches the card's ridge (17 §2).

    A dense model's intensity grows as B x its batch-1 intensity, so B = ridge / I(1): about
    295 for the 8B shape in BF16 on an H100. An MoE's grows more slowly, since each added
    sequence also brings experts no other one touched (D_w(B) rises with B): the smallest
    whole B with ``decode_intensity(model, B) >= ridge`` (found by bisection; Qwen3-30B-A3B
    needs several times the dense model's batch).
    """
    m = _at_precision(_model(model), bytes_per_param)
    ridge = ridge_point(_hardware(hardware))
    dense = ridge / _pass_intensity(m, 1, 0, 2)
    if not m.is_moe:
        return dense
    # D_w(B) <= D_w: at B = dense x D_w / D_w(1) the intensity is past the ridge
    lo = max(1, math.floor(dense))
    hi = max(lo, math.ceil(dense * m.streamed_weight_bytes / moe_streamed_weight_bytes(m, 1)))
    while lo < hi:
        mid = (lo + hi) // 2
        if _pass_intensity(m, mid, 0, 2) >= ridge:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


@serves("17.2")
def prefill_intensity(model: Model, prompt_tokens: int, *,
                      bytes_per_param: float | None = None) -> float:
    """Prefill intensity, FLOP per byte: 2P x n / (P x bytes_per_param) = n in BF16 (17 §2).

    One pass reads the weights once for all n prompt tokens: 2,048 for a 2,048-token prompt,
    compute-bound past the ridge (295); a prompt under ~295 tokens stays on the memory roof.
    """
    m = _at_precision(_model(model), bytes_per_param)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    return _pass_intensity(m, n, 0, 2)


@serves("17.2")
def roofline_point(intensity_flop_per_byte: float, hardware: Hardware) -> dict:
    """Where an intensity lands on the roofline: attainable FLOP/s, fraction of peak, which roof.

    attainable = min(peak, intensity x bandwidth): 3.35e12 FLOP/s = 0.34% of peak at 1 FLOP/byte
    on the H100 SXM (17 §2).
    """
    i = v.positive("intensity_flop_per_byte", intensity_flop_per_byte)
    hw = _hardware(hardware)
    attainable = attainable_flops(i, hw)
    return dict(intensity_flop_per_byte=i, attainable_flops_per_s=attainable,
                fraction_of_peak=attainable / hw.peak_flops_per_s,
                bound="memory" if i < ridge_point(hw) else "compute")


@serves("17.2")
def roofline_points(model: Model, hardware: Hardware, *, batch: int = 64,
                    context_tokens: int = ch17.CHAT_LIVE_TOKENS,
                    prompt_tokens: int = ch17.PROMPT_TOKENS,
                    bytes_per_param: float | None = None) -> list[dict]:
    """The chapter's roofline plot as points: decode at batch 1, batched decode, prefill (17 §2).

    Batched decode counts each sequence's ``context_tokens`` of live KV (0 for weights only).
    Each point is ``roofline_point`` plus a ``label``; the ridge is ``ridge_point(hardware)``.
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    points = [
        ("decode, batch 1", decode_intensity(m, 1, bytes_per_param=bytes_per_param)),
        (f"decode, batch {b}, {L} live tokens each",
         decode_intensity(m, b, L, bytes_per_param=bytes_per_param)),
        (f"prefill, {n}-token prompt", prefill_intensity(m, n, bytes_per_param=bytes_per_param)),
    ]
    return [dict(label=label, **roofline_point(i, hw)) for label, i in points]


@serves("17.2", "17.10")
def decode_time_split(model: Model, hardware: Hardware, *,
                      bytes_per_param: float | None = None) -> dict:
    """Batch-1 decode in the time domain: weight-stream time, compute time, their ratio, tok/s.

    8B on the H100 SXM: 16e9 / 3.35e12 = 4.78 ms to stream, 16e9 FLOP / 989e12 = 16.2 us to
    compute, 295 : 1 waiting to working, a ceiling of 209 tok/s (17 §2); INT8: 419 tok/s (§10).
    """
    m = _at_precision(_model(model), bytes_per_param)
    hw = _hardware(hardware)
    parts = decode_step_parts(m, hw, 1, 0)
    return dict(weight_bytes=m.streamed_weight_bytes,
                flops_per_token=matrix_flops(m, 1, include_lm_head=True), read_s=parts.read_s,
                compute_s=parts.compute_s, wait_to_work=parts.read_s / parts.compute_s,
                step_s=parts.step_s, tokens_per_s=1.0 / parts.step_s)


# --- §3 prefill and decode are two machines --------------------------------------------------

@serves("17.2", "17.3")
def prefill_compute_s(model: Model, hardware: Hardware, prompt_tokens: int, *,
                      efficiency: float = ch17.PREFILL_EFFICIENCY) -> float:
    """Prefill seconds: 2 x params x n / (efficiency x peak), attention ignored as in 17 §2.

    2,048 tokens of the 8B: 32.8 TFLOP, 33 ms at the full roof, 66 ms at 50% (17 §2); 8,000
    tokens: 128e12 FLOP, 259 ms at 50% (17 §3).
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prompt_tokens", prompt_tokens)
    e = _efficiency(efficiency)
    return matrix_flops(m, n) / (e * hw.peak_flops_per_s)


@serves("17.3")
def request_budget(ttft_s: float, output_tokens: int, itl_s: float) -> dict:
    """A request's wall clock: TTFT + output x ITL, and the share each phase takes (17 §3).

    66 ms + 250 x 6 ms = 1.57 s, 96% of it decode. This is the chapter's sum, with G intervals;
    the first token already ends TTFT, so the exact count is G - 1 (as Chapter 8 counts): pass
    ``output_tokens - 1`` for it (1.56 s here; ``sim.slo_run`` reports both under load).
    """
    ttft = v.positive("ttft_s", ttft_s)
    g = v.tokens("output_tokens", output_tokens)
    itl = v.positive("itl_s", itl_s)
    decode_s = g * itl
    total = ttft + decode_s
    return dict(ttft_s=ttft, decode_s=decode_s, total_s=total, decode_share=decode_s / total,
                prefill_share=ttft / total)


@serves("17.3")
def head_of_line_stall(model: Model, hardware: Hardware, prompt_tokens: int, step_s: float, *,
                       efficiency: float = ch17.PREFILL_EFFICIENCY) -> dict:
    """What one unchunked prefill does to in-flight decodes: stall time and worst ITL / step.

    8,000-token prompt on the 8B: 128e12 FLOP, 259 ms at 50% of peak, ~43x a 6 ms step (17 §3).
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    step = v.positive("step_s", step_s)
    stall = prefill_compute_s(m, hw, n, efficiency=efficiency)
    return dict(prefill_flops=matrix_flops(m, n), stall_s=stall, worst_itl_over_step=stall / step)


# --- §4 the KV cache, sized honestly ---------------------------------------------------------

@serves("17.4")
def kv_by_context(model: Model, context_tokens=ch17.KV_TABLE_CONTEXTS,
                  hardware: Hardware | None = None, *, bytes_per_value: float = 2) -> list[dict]:
    """KV bytes of one sequence at each context length (re-derived: 17 §4's table is not printed).

    Linear in context: 2.62 GB at 8,000 tokens of the 70B shape; 128,000 tokens hold 41.9 GB,
    more than half an 80 GB H100 ("8K" = 8,000 tokens, so "128K" is read as 128,000 here).
    With ``hardware``, each row also gives the fraction of its memory.
    """
    m = _model(model)
    seq = v.sequence("context_tokens", context_tokens)
    contexts = [v.tokens(f"context_tokens[{i}]", x) for i, x in enumerate(seq)]
    hw = None if hardware is None else _hardware(hardware)
    rows = []
    for L in contexts:
        n_bytes = kv_bytes(m, L, block_tokens=1, bytes_per_value=bytes_per_value)
        row = dict(context_tokens=L, kv_bytes=n_bytes)
        if hw is not None:
            row["fraction_of_memory"] = n_bytes / hw.mem_bytes
        rows.append(row)
    return rows


def _sequences_that_fit(kv_budget_bytes: float, model: Model, context_tokens: int,
                        bytes_per_value: float) -> int:
    """floor(budget / (L x k)): a sequence held at ``context_tokens`` tokens, no block rounding."""
    if kv_budget_bytes <= 0:
        return 0
    # max_concurrent holds prompt + output - 1 tokens; one output token leaves exactly L held
    return max_concurrent(kv_budget_bytes, model, context_tokens, 1, block_tokens=1,
                          bytes_per_value=bytes_per_value)


@serves("17.4")
def attention_variants(model: Model, *, context_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                       cache_bytes: float = ch17.CACHE_BYTES,
                       bytes_per_value: float = 2) -> list[dict]:
    """The same shape under MHA, GQA and MQA (re-derived: 17 §4's table is not printed).

    KV heads = query heads (MHA), the model's own (GQA), 1 (MQA). For the 70B shape (64 query
    heads, 8 KV heads): 2,560 / 320 / 40 KiB per token, 21.0 / 2.62 / 0.33 GB per 8,000-token
    sequence, and floor(80 GB / per-sequence) = 3 / 30 / 244 sequences per 80 GB of cache.
    """
    m = _model(model)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    cache = v.positive("cache_bytes", cache_bytes)
    v.positive("bytes_per_value", bytes_per_value)
    heads = sorted({m.n_query_heads, m.n_kv_heads, 1}, reverse=True)
    mha_per_token = kv_bytes_per_token(m.with_(n_kv_heads=heads[0]), bytes_per_value)
    rows = []
    for h in heads:
        variant = m.with_(n_kv_heads=h)
        per_token = kv_bytes_per_token(variant, bytes_per_value)
        rows.append(dict(attention=variant.attention_type, n_kv_heads=h,
                         kv_bytes_per_token=per_token, kv_bytes_per_sequence=per_token * L,
                         sequences=_sequences_that_fit(cache, variant, L, bytes_per_value),
                         reduction_vs_mha=mha_per_token / per_token))
    return rows


@serves("17.4")
def tp_kv_capacity(model: Model, hardware: Hardware, *, tp: int = 1,
                   context_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                   reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES,
                   bytes_per_value: float = 2) -> dict:
    """KV space and max concurrency when weights shard over ``tp`` GPUs (17 §4).

    Per GPU: memory - weights / tp - reserve; aggregate: tp x that; sequences = floor(aggregate /
    (L x k)). 8B, TP 1: 80 - 16 - 4 = 60 GB, 57 sequences of 8,000 tokens. 70B: 140 GB of
    weights is 1.75x one card; at TP 4: 35 GB of weights, 41 GB of KV per GPU, 164 GB in all,
    62 sequences; the KV heads shard too (8 / 4 = 2 per GPU). Past tp = KV heads the heads
    would be replicated rather than split, which this closed form does not model.
    """
    m = _model(model)
    hw = _hardware(hardware)
    p = v.count("tp", tp)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    reserve = v.nonnegative("reserve_bytes", reserve_bytes)
    v.positive("bytes_per_value", bytes_per_value)
    weights_per_gpu = m.weight_bytes / p
    free_per_gpu = hw.mem_bytes - weights_per_gpu - reserve
    aggregate = p * max(free_per_gpu, 0.0)
    return dict(weights_over_memory=m.weight_bytes / hw.mem_bytes,
                weight_bytes_per_gpu=weights_per_gpu, fits=free_per_gpu > 0,
                kv_heads_per_gpu=m.n_kv_heads / p, free_kv_bytes_per_gpu=free_per_gpu,
                free_kv_bytes=aggregate,
                kv_bytes_per_sequence=kv_bytes(m, L, block_tokens=1,
                                               bytes_per_value=bytes_per_value),
                max_sequences=_sequences_that_fit(aggregate, m, L, bytes_per_value))


@serves("17.4")
def decode_vs_context(model: Model, hardware: Hardware, context_tokens: int, *, batch: int = 1,
                      bytes_per_param: float | None = None, kv_bytes_per_value: float = 2) -> dict:
    """One decode step as the context grows: (weights + live KV) / bandwidth, and tok/s (17 §4).

    8B at batch 1: 1,000 tokens 16.1 GB -> 4.8 ms -> 208 tok/s; 10,000: 5.2 ms, 193 tok/s;
    100,000: 8.7 ms, 115 tok/s. (The step is core.decode_step_time: the larger of the byte and
    FLOP times; at batch 1 the bytes win by ~300x.)
    """
    m = _at_precision(_model(model), bytes_per_param)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens)
    b = v.count("batch", batch)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    k = kv_bytes_per_token(m, kv_bytes_per_value)
    live_kv = b * L * k
    step = decode_step_time(m, hw, b, L, bytes_per_value=kv_bytes_per_value)
    return dict(kv_bytes=live_kv, step_bytes=m.streamed_weight_bytes + live_kv, step_s=step,
                tokens_per_s=b / step, tokens_per_s_per_sequence=1.0 / step)


@serves("17.4")
def kv_weight_crossover_tokens(model: Model, *, batch: int = 1,
                               bytes_per_value: float = 2) -> float:
    """Context where a batch's KV stream equals the weight stream: D_w / (batch x k) tokens.

    16e9 / 131,072 = 122,070 tokens for the 8B at batch 1 ("~122,000", 17 §4); there one
    sequence's cache doubles the cost of each of its tokens.
    """
    m = _model(model)
    b = v.count("batch", batch)
    return m.streamed_weight_bytes / (b * kv_bytes_per_token(m, bytes_per_value))


# --- §5 PagedAttention -----------------------------------------------------------------------

@serves("17.5")
def reservation_waste(model: Model, used_tokens: int, *,
                      max_len_tokens: int = ch17.MAX_LEN_TOKENS,
                      bytes_per_value: float = 2) -> dict:
    """Internal fragmentation of a worst-case contiguous reservation: 1 - used / reserved (17 §5).

    8B, max_len 8,192: 1.07 GB reserved, a 300-token chat uses 39 MB, 96% wasted.
    """
    m = _model(model)
    used = v.tokens("used_tokens", used_tokens)
    max_len = v.tokens("max_len_tokens", max_len_tokens, minimum=1)
    if used > max_len:
        raise ValueError(f"used_tokens: {used} exceeds max_len_tokens={max_len}")
    reserved = kv_bytes(m, max_len, block_tokens=1, bytes_per_value=bytes_per_value)
    used_bytes = kv_bytes(m, used, block_tokens=1, bytes_per_value=bytes_per_value)
    return dict(reserved_bytes=reserved, used_bytes=used_bytes,
                wasted_fraction=1.0 - used_bytes / reserved)


@serves("17.5")
def block_fill(tokens: int, block_tokens: int = 16) -> dict:
    """A sequence's block table: blocks held, tokens in the last block, empty slots (17 §5).

    40 tokens in 16-token blocks: 3 blocks (0-15, 16-31, 32-39), the last 8/16 full, 8 slots idle.
    """
    t = v.tokens("tokens", tokens, minimum=1)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    blocks = -(-t // p)
    last = t - (blocks - 1) * p
    return dict(blocks=blocks, last_block_tokens=last, empty_slots=p - last)


@serves("17.5")
def paged_worst_waste(model: Model, block_tokens: int = 16, *,
                      bytes_per_value: float = 2) -> dict:
    """Worst-case paged waste of one sequence: a last block holding one token, block - 1 slots.

    16-token blocks of the 8B: 15 x 131,072 B ~ 2 MB (the chapter bounds it by the whole
    16-token block, 2.1 MB); 1,024-token blocks waste up to 1,023 tokens (17 §5).
    """
    m = _model(model)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    slots = p - 1
    return dict(tokens=slots, bytes=slots * kv_bytes_per_token(m, bytes_per_value))


@serves("17.5")
def prefix_sharing_bytes(model: Model, users: int, prefix_tokens: int, *,
                         bytes_per_value: float = 2) -> dict:
    """KV of one shared prefix held per user versus once (17 §5).

    2,000-token system prompt, 100 users, 8B: 26.2 GB naive, 0.26 GB shared.
    """
    m = _model(model)
    n = v.count("users", users)
    t = v.tokens("prefix_tokens", prefix_tokens)
    one = kv_bytes(m, t, block_tokens=1, bytes_per_value=bytes_per_value)
    return dict(naive_bytes=n * one, shared_bytes=one, saved_bytes=(n - 1) * one)


def _batch_row(model: Model, hardware: Hardware, batch: int, live_tokens: int,
               kv_bytes_per_value: float) -> dict:
    """Per-step traffic (weights + live KV), step time and throughput of one decode batch."""
    if batch == 0:
        return dict(batch=0, step_bytes=None, step_s=None, tokens_per_s=0.0)
    step = decode_vs_context(model, hardware, live_tokens, batch=batch,
                             kv_bytes_per_value=kv_bytes_per_value)
    return dict(batch=batch, step_bytes=step["step_bytes"], step_s=step["step_s"],
                tokens_per_s=step["tokens_per_s"])


@serves("17.4", "17.5")
def paged_batch_gain(model: Model, hardware: Hardware, *,
                     live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                     reservation_tokens: int = ch17.LONG_CONTEXT_TOKENS, block_tokens: int = 16,
                     kv_budget_bytes: float | None = None,
                     reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES,
                     kv_bytes_per_value: float = 2) -> dict:
    """Batch and throughput with worst-case reservations versus paged blocks (17 §5).

    Naive: floor(budget / (reservation x k)); paged: floor(budget / kv_bytes(live, blocks)).
    Both stream only live bytes per step: weights + batch x live x k. Budget defaults to one
    GPU's free memory (60 GB for the 8B). The chapter divides by the live bytes alone
    (``block_tokens=1``): 57 vs ~760 sequences, 6.1 vs 22.6 ms, ~9,300 vs ~33,600 tok/s, 3.6x
    (its naive batch reserves 8,000 tokens, the §4 figure, not §5's 8,192).
    """
    m = _model(model)
    hw = _hardware(hardware)
    live = v.tokens("live_tokens", live_tokens, minimum=1)
    reservation = v.tokens("reservation_tokens", reservation_tokens, minimum=1)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    reserve = v.nonnegative("reserve_bytes", reserve_bytes)
    if kv_budget_bytes is None:
        budget = hw.mem_bytes - m.weight_bytes - reserve
    else:
        budget = v.positive("kv_budget_bytes", kv_budget_bytes)
    if live > reservation:
        raise ValueError(f"live_tokens: {live} exceeds reservation_tokens={reservation}")
    if budget <= 0:
        raise ValueError(f"model: {m.name} leaves no KV space on one {hw.name} "
                         f"(weights {m.weight_bytes:.3g} B); shard it first (tp_kv_capacity)")
    per_seq_reserved = kv_bytes(m, reservation, block_tokens=1, bytes_per_value=kv_bytes_per_value)
    per_seq_paged = kv_bytes(m, live, block_tokens=p, bytes_per_value=kv_bytes_per_value)
    naive = _batch_row(m, hw, int(budget // per_seq_reserved), live, kv_bytes_per_value)
    paged = _batch_row(m, hw, int(budget // per_seq_paged), live, kv_bytes_per_value)
    return dict(kv_budget_bytes=budget, live_kv_bytes=kv_bytes(m, live, block_tokens=1,
                                                              bytes_per_value=kv_bytes_per_value),
                naive=naive, paged=paged,
                batch_gain=paged["batch"] / naive["batch"] if naive["batch"] else math.inf,
                throughput_gain=(paged["tokens_per_s"] / naive["tokens_per_s"]
                                 if naive["batch"] else math.inf))


@serves("17.5")
def decode_throughput_ceiling(model: Model, hardware: Hardware, *,
                              live_tokens: int = ch17.CHAT_LIVE_TOKENS, batch=None,
                              kv_bytes_per_value: float = 2) -> dict:
    """Where batching stops paying on the memory roof (17 §5, the fuller reading).

    A decode step streams D_w + b L k bytes, so throughput b beta / (D_w + b L k) rises with b
    but flattens at the ceiling beta / (L k): past some batch each extra sequence brings its
    own KV read and the shared weight read is already amortised. Half the ceiling is reached
    at b = D_w / (L k), the batch whose KV reads equal the weight read. With ``batch``, also
    that batch's throughput and its share of the ceiling. 8B, 600 live tokens, H100 SXM:
    ceiling ~42,600 tok/s, half of it at b ~203. ``compute_ceiling_tokens_per_s`` is the
    compute roof, peak / F (61,800 tok/s there); for short contexts it is the lower one.
    """
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("live_tokens", live_tokens, minimum=1)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    per_seq = L * kv_bytes_per_token(m, kv_bytes_per_value)
    out = dict(ceiling_tokens_per_s=hw.mem_bw_bytes_per_s / per_seq,
               half_ceiling_batch=m.streamed_weight_bytes / per_seq,
               kv_bytes_per_sequence=per_seq,
               # the other roof: b F / peak per step caps throughput at peak / F
               compute_ceiling_tokens_per_s=hw.peak_flops_per_s / flops_per_token_or_default(m))
    if batch is not None:
        b = v.count("batch", batch)
        rate = b * hw.mem_bw_bytes_per_s / (m.streamed_weight_bytes + b * per_seq)
        out.update(batch=b, tokens_per_s=rate,
                   share_of_ceiling=rate / out["ceiling_tokens_per_s"])
    return out


# --- §6 batching strategies ------------------------------------------------------------------

@serves("17.6")
def static_batch_slot_steps(output_lengths) -> dict:
    """Slot-steps a static batch runs (n x longest) and uses (sum of lengths) (17 §6).

    Outputs 100, 200, ..., 800: 6,400 run, 3,600 useful, 56%.
    """
    utilization = static_batch_utilization(output_lengths)
    lengths = [int(x) for x in output_lengths]
    run = len(lengths) * max(lengths)
    return dict(run=run, useful=sum(lengths), utilization=utilization)


@serves("17.6")
def chunked_prefill_trade(model: Model, hardware: Hardware, prompt_tokens: int,
                          chunk_tokens: int, decode_step_s: float, *,
                          efficiency: float = ch17.PREFILL_EFFICIENCY) -> dict:
    """Chunked prefill's ITL/TTFT trade, the chapter's closed form (17 §6).

    chunks = ceil(n / c); iteration = decode step + one chunk's prefill; worst ITL falls from
    the whole prefill to one iteration; TTFT = chunks x iteration. 8,000 tokens in 512-token
    chunks: 16 chunks of 16.6 ms, 6.1 + 16.6 ~ 23 ms iterations, ITL 260 -> 23 ms (11x), TTFT
    ~370 ms vs ~260 ms (+40%). ``ttft_exact_s`` charges the last, shorter chunk its own size.
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    c = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    step = v.positive("decode_step_s", decode_step_s)
    e = _efficiency(efficiency)
    chunks = -(-n // c)
    chunk_s = prefill_compute_s(m, hw, min(c, n), efficiency=e)
    last_s = prefill_compute_s(m, hw, n - (chunks - 1) * c, efficiency=e)
    iteration = step + chunk_s
    dedicated = prefill_compute_s(m, hw, n, efficiency=e)
    ttft = chunks * iteration
    return dict(chunks=chunks, chunk_s=chunk_s, iteration_s=iteration, dedicated_s=dedicated,
                itl_improvement=dedicated / iteration, ttft_s=ttft,
                ttft_increase=ttft / dedicated - 1.0,
                ttft_exact_s=(chunks - 1) * iteration + step + last_s)


# the chunk sizes a sweep tries by default: 41 log-spaced sizes, 32 .. 32,768 tokens
_CHUNK_SWEEP = np.unique(np.geomspace(32, 32_768, 41).round().astype(int))


def chunk_trade_sweep(prompt_tokens: int, decode_step_s: float, *,
                      efficiency: float = ch17.PREFILL_EFFICIENCY, chunk_sizes=None,
                      model: Model = LLAMA_8B, hardware: Hardware = H100_SXM) -> dict:
    """``chunked_prefill_trade`` over chunk sizes (default: 32 .. 32,768, log-spaced, cut
    at the prompt): arrays chunk_tokens, chunks, iteration_s, ttft_s and the dedicated_s."""
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    step = v.positive("decode_step_s", decode_step_s)
    sizes = (_CHUNK_SWEEP.tolist() if chunk_sizes is None else
             [v.tokens(f"chunk_sizes[{i}]", c, minimum=1)
              for i, c in enumerate(v.sequence("chunk_sizes", chunk_sizes))])
    sizes = sorted({min(c, n) for c in sizes})
    rows = [chunked_prefill_trade(model, hardware, n, c, step, efficiency=efficiency)
            for c in sizes]
    return {"chunk_tokens": np.array(sizes), "chunks": np.array([r["chunks"] for r in rows]),
            "iteration_s": np.array([r["iteration_s"] for r in rows]),
            "ttft_s": np.array([r["ttft_s"] for r in rows]),
            "dedicated_s": rows[0]["dedicated_s"]}


@serves("17.5")
def decode_batch_for_step(model: Model, hardware: Hardware, decode_step_s: float, *,
                          live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                          bytes_per_value: float = 2) -> int:
    """The smallest whole decode batch whose memory-bound step (D_w + b L k) / beta reaches
    ``decode_step_s`` (0 when the step is no longer than the weight read alone).

    6.1 ms with 600 live tokens on the 8B / H100 SXM: 57 sequences, the naive batch of 17 §5.
    """
    m = _model(model)
    hw = _hardware(hardware)
    step = v.positive("decode_step_s", decode_step_s)
    L = v.tokens("live_tokens", live_tokens, minimum=1)
    per_seq = L * kv_bytes_per_token(m, bytes_per_value)
    return max(0, math.ceil((step * hw.mem_bw_bytes_per_s - m.streamed_weight_bytes) / per_seq
                            - 1e-9))


def fused_chunk_sweep(prompt_tokens: int, *, decode_batch: int, decode_context_tokens: int,
                      efficiency: float = ch17.PREFILL_EFFICIENCY, attention: bool = True,
                      chunk_sizes=None, model: Model = LLAMA_8B,
                      hardware: Hardware = H100_SXM) -> dict:
    """``fused_chunked_prefill`` over the chunk sizes of ``chunk_trade_sweep``: arrays
    chunk_tokens, worst_itl_s, ttft_s, and the scalars unchunked_s and alone_s."""
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    sizes = (_CHUNK_SWEEP.tolist() if chunk_sizes is None else
             [v.tokens(f"chunk_sizes[{i}]", c, minimum=1)
              for i, c in enumerate(v.sequence("chunk_sizes", chunk_sizes))])
    sizes = sorted({min(c, n) for c in sizes})
    rows = [fused_chunked_prefill(model, hardware, n, c, decode_batch=decode_batch,
                                  decode_context_tokens=decode_context_tokens,
                                  efficiency=efficiency, attention=attention) for c in sizes]
    return {"chunk_tokens": np.array(sizes),
            "worst_itl_s": np.array([r["worst_itl_s"] for r in rows]),
            "ttft_s": np.array([r["ttft_s"] for r in rows]),
            "unchunked_s": rows[0]["unchunked_s"], "alone_s": rows[0]["alone_s"]}


@serves("17.5", "17.6")
def batching_decision_table(model: Model = LLAMA_8B, hardware: Hardware = H100_SXM, *,
                            output_lengths=ch17.STATIC_OUTPUT_LENGTHS,
                            prompt_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                            chunk_tokens: int = ch17.CHUNK_TOKENS,
                            decode_step_s: float | None = None,
                            efficiency: float = ch17.PREFILL_EFFICIENCY) -> list[dict]:
    """The three batching strategies as one decision (re-derived: 17 §6's table is not printed).

    Every number in a cell is computed from the arguments: the static row's utilization
    (``static_batch_slot_steps``), the continuous row's stall (``prefill_compute_s`` of the long
    prompt), the chunked row's worst ITL before -> after and TTFT penalty
    (``chunked_prefill_trade``, the chapter's closed form), with the fused-pass penalty
    (``fused_chunked_prefill``) beside it. ``decode_step_s`` defaults to 17 §5's naive batch
    step (6.1 ms). Each row also carries the numbers under ``values``.
    """
    m = _model(model)
    hw = _hardware(hardware)
    if decode_step_s is None:
        decode_step_s = paged_batch_gain(m, hw, block_tokens=1)["naive"]["step_s"]
    lengths = [v.tokens(f"output_lengths[{i}]", g, minimum=1)
               for i, g in enumerate(v.sequence("output_lengths", output_lengths))]
    static = static_batch_slot_steps(lengths)
    stall = prefill_compute_s(m, hw, prompt_tokens, efficiency=efficiency)
    trade = chunked_prefill_trade(m, hw, prompt_tokens, chunk_tokens, decode_step_s,
                                  efficiency=efficiency)
    batch = decode_batch_for_step(m, hw, decode_step_s)
    fused = fused_chunked_prefill(m, hw, prompt_tokens, chunk_tokens, decode_batch=batch,
                                  decode_context_tokens=ch17.CHAT_LIVE_TOKENS,
                                  efficiency=efficiency)
    ms = 1e-3

    def about(x):           # the chapter's "~260 ms", "~23 ms": two significant figures
        return f"~{float(f'{x:.2g}'):,.0f}"
    span = f"{min(lengths)}..{max(lengths)}"
    return [
        dict(strategy="static", joins="only when the whole batch has drained",
             fixes="nothing: the translation-era default",
             costs=f"padding ({100 * static['utilization']:.0f}% utilization for outputs "
                   f"{span}) and batch-drain queueing",
             fits="offline jobs with similar, predictable output lengths",
             values=dict(utilization=static["utilization"])),
        dict(strategy="continuous", joins="at every token boundary (iteration-level, Orca)",
             fixes="padding and batch-boundary queueing; works without paged KV, which "
                   "raises its batch cap (§5)",
             costs=f"a long prefill still freezes every in-flight decode ({about(stall / ms)} ms "
                   f"for {prompt_tokens:,} tokens)",
             fits="the default for online serving with short prompts",
             values=dict(stall_s=stall)),
        dict(strategy="chunked prefill", joins="at token boundaries, prompts in fixed chunks",
             fixes=f"head-of-line blocking: worst ITL {about(trade['dedicated_s'] / ms)} -> "
                   f"{about(trade['iteration_s'] / ms)} ms ({trade['itl_improvement']:.0f}x) in "
                   f"{chunk_tokens}-token chunks",
             costs=f"TTFT of the long prompt (~{100 * trade['ttft_increase']:+.0f}% as the "
                   f"chapter prices it, ~{100 * fused['ttft_increase']:+.0f}% as one fused "
                   f"pass per round) and weights re-read per chunk",
             fits="mixed long prompts and streaming chat on shared GPUs; the knob is the "
                  "per-iteration token budget",
             values=dict(dedicated_s=trade["dedicated_s"], iteration_s=trade["iteration_s"],
                         itl_improvement=trade["itl_improvement"],
                         ttft_increase=trade["ttft_increase"],
                         fused_ttft_increase=fused["ttft_increase"])),
    ]


# --- §6, the fuller model: decode tokens and a prompt chunk in one forward pass ---------------
# The chapter prices a chunked iteration as decode step + chunk compute: two passes, the
# weights read for the decode and the chunk priced by compute alone, attention left out. An
# engine runs the batch's decode tokens and the chunk as one forward pass, so the weights are
# read once, and the pass costs the roofline's max over everything it reads and computes.

@serves("17.6")
def fused_step_parts(model: Model, hardware: Hardware, *, chunk_tokens: int = 0,
                     history_tokens: int = 0, decode_batch: int = 0,
                     decode_context_tokens: int = 0,
                     efficiency: float = ch17.PREFILL_EFFICIENCY, attention: bool = True,
                     bytes_per_value: float = 2) -> dict:
    """One forward pass carrying ``decode_batch`` decode tokens and a ``chunk_tokens`` chunk
    whose prompt already holds ``history_tokens`` cached tokens, on the roofline (17 §6, fuller).

    bytes = D_w + (b L + h + c) k: the weights once, each decode sequence's KV, the chunk's
    cached prefix and the chunk's own new KV. FLOPs = 2 N (c + b) for the layer matrices plus,
    with ``attention``, (c h + c(c+1)/2 + b (L+1)) pairs x ``attention_flops_per_pair``. Time =
    max(bytes / beta, FLOPs / (efficiency x peak)): the roofline's max over the whole pass, the
    compute at the same fraction of peak as the chapter's prefill and the reads at full
    bandwidth as in its decode step. Returns bytes, flops, memory_s, compute_s, step_s, bound.
    """
    m = _model(model)
    hw = _hardware(hardware)
    c = v.tokens("chunk_tokens", chunk_tokens)
    h = v.tokens("history_tokens", history_tokens)
    b = v.tokens("decode_batch", decode_batch)
    L = v.tokens("decode_context_tokens", decode_context_tokens)
    e = _efficiency(efficiency)
    k = kv_bytes_per_token(m, bytes_per_value)
    n_bytes = m.streamed_weight_bytes + (b * L + h + c) * k
    flops = matrix_flops(m, c + b)
    if attention:
        flops += attention_flops_per_pair(m) * (attention_pairs(c, h) + b * (L + 1))
    memory_s = n_bytes / hw.mem_bw_bytes_per_s
    compute_s = time_at_mfu(flops, hw, e)
    return dict(bytes=n_bytes, flops=flops, memory_s=memory_s, compute_s=compute_s,
                step_s=max(memory_s, compute_s),
                bound="compute" if compute_s > memory_s else "memory")


def fused_ridge_tokens(model: Model, hardware: Hardware, *,
                       efficiency: float = ch17.PREFILL_EFFICIENCY) -> float:
    """Tokens per pass at which computing them takes as long as reading the weights once:
    D_w / beta = 2 N t / (efficiency x peak), so t = ridge x efficiency x D_w / (2 N).

    8B on an H100 SXM: 295 FLOP/byte x 1 FLOP/byte-per-token = ~295 tokens at the full roof;
    at 50% of peak ~148. Below it a pass (chunk plus decode tokens) is memory-bound, so pricing
    the chunk by compute alone undercounts it.
    """
    m = _model(model)
    hw = _hardware(hardware)
    e = _efficiency(efficiency)
    return (e * hw.peak_flops_per_s * m.streamed_weight_bytes
            / (hw.mem_bw_bytes_per_s * matrix_flops(m, 1)))


@serves("17.6")
def fused_chunked_prefill(model: Model, hardware: Hardware, prompt_tokens: int,
                          chunk_tokens: int, *, decode_batch: int, decode_context_tokens: int,
                          efficiency: float = ch17.PREFILL_EFFICIENCY, attention: bool = True,
                          bytes_per_value: float = 2) -> dict:
    """Chunked prefill with each chunk fused into the batch's decode pass (17 §6, fuller model).

    Chunk i (c_i new tokens on h_i = i c cached ones) rides in a pass priced by
    ``fused_step_parts``; the worst ITL of the running batch is the slowest pass, the long
    prompt's TTFT the sum of its passes. The unchunked reference is the whole prompt in one
    pass with the same decode batch (its stall and its TTFT), and ``alone_s`` the prompt with
    the GPU to itself, the chapter's "dedicated" prefill. Returns chunks, iteration_s (array,
    per chunk), worst_itl_s, first_itl_s, ttft_s, unchunked_s, alone_s, ttft_increase (over
    alone_s, as the chapter's), itl_improvement (unchunked over worst), memory_bound_chunks and
    decode_step_s (the decode pass alone on the same roofline).
    """
    m = _model(model)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    c = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    kw = dict(decode_batch=decode_batch, decode_context_tokens=decode_context_tokens,
              efficiency=efficiency, attention=attention, bytes_per_value=bytes_per_value)
    starts = range(0, n, c)
    parts = [fused_step_parts(m, hardware, chunk_tokens=min(c, n - s), history_tokens=s, **kw)
             for s in starts]
    iteration = np.array([p["step_s"] for p in parts])
    unchunked = fused_step_parts(m, hardware, chunk_tokens=n, **kw)["step_s"]
    alone = fused_step_parts(m, hardware, chunk_tokens=n, efficiency=efficiency,
                             attention=attention, bytes_per_value=bytes_per_value)["step_s"]
    ttft = float(iteration.sum())
    return dict(chunks=len(parts), iteration_s=iteration, worst_itl_s=float(iteration.max()),
                first_itl_s=float(iteration[0]), ttft_s=ttft, unchunked_s=unchunked,
                alone_s=alone, ttft_increase=ttft / alone - 1.0,
                itl_improvement=unchunked / float(iteration.max()),
                memory_bound_chunks=sum(p["bound"] == "memory" for p in parts),
                decode_step_s=fused_step_parts(m, hardware, **kw)["step_s"])


# --- §9 measuring it -------------------------------------------------------------------------

@serves("17.9")
def sm_share(active_sms: int, hardware: Hardware) -> float:
    """Upper bound on compute in use when ``active_sms`` SMs are busy: active / SM count (17 §9).

    One always-resident kernel on 1 of 132 SMs reads "GPU util: 100%" yet uses <= 0.8%.
    """
    a = v.count("active_sms", active_sms)
    hw = _hardware(hardware)
    if hw.sm_count is None:
        raise ValueError(f"hardware: {hw.name} has no sm_count")
    if a > hw.sm_count:
        raise ValueError(f"active_sms: {a} exceeds the {hw.sm_count} SMs of {hw.name}")
    return a / hw.sm_count


@serves("17.9")
def decode_utilization(model: Model, hardware: Hardware, tokens_per_s: float, *,
                       batch: int = 1, context_tokens: int = 0,
                       bytes_per_param: float | None = None) -> dict:
    """MBU and MFU of a measured decode rate, and the headroom 1 / MBU (17 §9).

    bytes/s = tok/s x (D_w / b + L k); FLOP/s = tok/s x 2P. 8B at 146 tok/s, batch 1: 2.34e12
    B/s = 70% MBU, 2.34e12 FLOP/s = 0.24% MFU, headroom <= 1 / 0.7 ~ 1.4x.
    """
    m = _at_precision(_model(model), bytes_per_param)
    hw = _hardware(hardware)
    rate = v.positive("tokens_per_s", tokens_per_s)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    per_token = read_bytes_per_output_token(m.streamed_weight_bytes, b, L,
                                            kv_bytes_per_token(m))
    bytes_per_s = rate * per_token
    flops_per_s = rate * matrix_flops(m, 1, include_lm_head=True)
    util_b = mbu(bytes_per_s, hw)
    return dict(bytes_per_s=bytes_per_s, mbu=util_b, flops_per_s=flops_per_s,
                mfu=mfu(flops_per_s, hw), headroom=1.0 / util_b)


@serves("17.9")
def prefill_utilization(model: Model, hardware: Hardware, prompt_tokens_per_s: float) -> dict:
    """MFU of a measured prefill rate: tok/s x 2P / peak (17 §9: 20,000 tok/s -> 3.2e14, 32%)."""
    m = _model(model)
    hw = _hardware(hardware)
    rate = v.positive("prompt_tokens_per_s", prompt_tokens_per_s)
    flops_per_s = rate * matrix_flops(m, 1)
    return dict(flops_per_s=flops_per_s, mfu=mfu(flops_per_s, hw))


# --- §10 the levers --------------------------------------------------------------------------

@serves("17.10")
def quantization_ceiling(model: Model, hardware: Hardware, bytes_per_param: float = 1) -> dict:
    """Batch-1 decode ceiling with weights stored at ``bytes_per_param`` versus as preset (17 §10).

    8B in INT8: 8 GB, 2.39 ms per token, 419 tok/s (was 209), intensity 2 FLOP/byte.
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.positive("bytes_per_param", bytes_per_param)
    base = decode_time_split(m, hw)
    quant = decode_time_split(m, hw, bytes_per_param=b)
    return dict(weight_bytes=quant["weight_bytes"], step_s=quant["step_s"],
                tokens_per_s=quant["tokens_per_s"], baseline_tokens_per_s=base["tokens_per_s"],
                speedup=quant["tokens_per_s"] / base["tokens_per_s"],
                intensity_flop_per_byte=decode_intensity(m, 1, bytes_per_param=b))
