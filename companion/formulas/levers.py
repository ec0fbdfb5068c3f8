"""Chapter 17's chapter-wide tables, re-derived from its formulas (17 §10; the chapter's tables
are not reproduced here): the levers indexed by symptom with their arithmetic, the mechanism -> lever map, and the
cheat sheet of headline numbers for any model and card.

Below them, the fuller models 17 §9-§10 leave out: MFU and MBU counting the
attention FLOPs and KV bytes the chapter's ratios drop (``utilization_counted``), and the two
levers priced on the roofline at any batch and context instead of at batch 1 with free
drafting (``quantized_decode_speedup``, ``speculative_speedup``), together
(``combined_levers``) rather than multiplied.

The tables draw on every section (the roofline of §2, the KV sizing of §4, paging of §5, chunking of
§6, the layouts of §7, quantization and speculation of §10), so they live here, above
``performance`` and ``parallelism``, rather than in either.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (attention_flops, decode_step_parts, kv_bytes,
                                     kv_bytes_per_token, mfu, ridge_point,
                                     speculative_expected_tokens)
from companion.formulas.parallelism import parallel_layout, weights_per_gpu_bytes
from companion.formulas.speculative import verification_flops, verification_under_load
from companion.formulas.performance import (
    chunked_prefill_trade, decode_utilization, prefill_utilization, decode_intensity, decode_time_split, kv_weight_crossover_tokens,
    memory_sweep_s, paged_batch_gain, prefill_compute_s, quantization_ceiling, roofline_point,
    tp_kv_capacity)
from companion.serves import serves
from companion.specs import LLAMA_70B, Hardware, Model

__all__ = ["levers_table", "mechanism_lever_map", "cheat_sheet", "utilization_counted",
           "quantized_decode_speedup", "speculative_speedup", "combined_levers"]


def _fits_one_gpu(model: Model, hardware: Hardware) -> bool:
    return tp_kv_capacity(model, hardware, tp=1)["fits"]


def _smallest_layout(model: Model, hardware: Hardware, reserve_bytes: float):
    """parallel_layout's answer, or None when nothing fits."""
    try:
        return parallel_layout(model, hardware, reserve_bytes=reserve_bytes)
    except ValueError:
        return None


@serves("17.10")
def levers_table(model: Model, hardware: Hardware, *, large_model: Model = LLAMA_70B,
                 tp: int = ch17.TP) -> list[dict]:
    """The levers, indexed by symptom, with the quantity each changes and its arithmetic for this
    model and card (re-derived from the formulas: 17 §10's table is not reproduced here).

    ``before``/``after`` are the chapter's arithmetic recomputed (None where the chapter gives
    none, or where the model does not fit one card so a single-GPU number means nothing).
    The "does not fit one card" row is about ``large_model`` split over ``tp`` GPUs (by
    default the chapter's own example of a split model, the 70B at TP = 4): a model that fits
    needs no split, so that row is computed for the large model whatever ``model`` is.
    """
    m = _model(model)
    hw = _hardware(hardware)
    big = _model(large_model, "large_model")
    split = v.count("tp", tp)
    one_gpu = _fits_one_gpu(m, hw)
    paged = paged_batch_gain(m, hw) if one_gpu else None
    chunk = None
    if one_gpu:
        chunk = chunked_prefill_trade(m, hw, ch17.LONG_CONTEXT_TOKENS, ch17.CHUNK_TOKENS,
                                      paged["naive"]["step_s"])
    quant = quantization_ceiling(m, hw, ch17.INT8_BYTES_PER_PARAM)
    spec = speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, ch17.SPEC_DRAFT_LEN)
    kv_fp8 = kv_bytes_per_token(m, 1)
    kv_bf16 = kv_bytes_per_token(m, 2)
    return [
        dict(symptom="util reads high, throughput low", lever="measure MBU / MFU, not nvidia-smi",
             changes="nothing: tells you which roof you are on", section="§9",
             unit="fraction of peak (batch-1 decode)", before=None,
             after=roofline_point(decode_intensity(m), hw)["fraction_of_peak"]),
        dict(symptom="decode throughput low at small batch",
             lever="paged KV + continuous batching (raise batch)",
             changes="sequences per weight read (intensity ~ B)", section="§5-§6", unit="tok/s",
             before=paged["naive"]["tokens_per_s"] if paged else None,
             after=paged["paged"]["tokens_per_s"] if paged else None),
        dict(symptom="p99 ITL spikes with long prompts", lever="chunked prefill / token budget",
             changes="worst ITL (prefill split into chunks)", section="§6", unit="s",
             before=chunk["dedicated_s"] if chunk else None,
             after=chunk["iteration_s"] if chunk else None),
        dict(symptom="at the memory roof, ceiling too low", lever="weight quantization (INT8/FP8)",
             changes="bytes per parameter (intensity x2)", section="§10", unit="tok/s",
             before=quant["baseline_tokens_per_s"], after=quant["tokens_per_s"]),
        dict(symptom="single-stream latency too high", lever="speculative decoding",
             changes=f"tokens per target pass (m = {ch17.SPEC_DRAFT_LEN}, "
                     f"alpha = {ch17.SPEC_ACCEPTANCE:g})", section="§10",
             unit="tokens per pass", before=1.0, after=spec),
        dict(symptom="KV memory caps the batch", lever="GQA at design time, FP8 KV at serve time",
             changes="KV bytes per token", section="§4", unit="B per token",
             before=kv_bf16, after=kv_fp8),
        dict(symptom="model does not fit one card", lever="tensor parallelism (in-node, NVLink)",
             changes=f"weight bytes per GPU (/ p); {big.name.split(' (')[0]} at TP = {split}, "
                     f"{hw.mem_bytes / 1e9:.0f} GB per card",
             section="§7", unit="B", before=big.weight_bytes,
             after=weights_per_gpu_bytes(big, split)),
        dict(symptom="TTFT and ITL SLOs keep fighting at fleet scale",
             lever="disaggregated prefill / decode pools", changes="interference (removed)",
             section="§8", unit=None, before=None, after=None),
        dict(symptom="multi-turn chats re-prefill every turn",
             lever="prefix caching + KV-aware routing", changes="prefill tokens per turn",
             section="§8", unit=None, before=None, after=None),
        dict(symptom="gaps between kernels on the nsys timeline", lever="CUDA Graphs",
             changes="launch overhead per step", section="§9", unit=None, before=None,
             after=None),
    ]


def mechanism_lever_map() -> list[dict]:
    """Chapter 17 in one table: mechanism -> lever (re-derived: the map is not printed)."""
    return [
        dict(mechanism="batch-1 decode does 1 FLOP per HBM byte against a ridge of ~295",
             lever="batch (continuous batching)", section="§2, §6"),
        dict(mechanism="KV reads do not amortize across the batch; long contexts drag "
                       "effective intensity down", lever="GQA/MQA, FP8 KV, context discipline",
             section="§2, §4"),
        dict(mechanism="worst-case contiguous reservations waste ~96% of KV memory",
             lever="PagedAttention (blocks, block tables, prefix sharing)", section="§5"),
        dict(mechanism="static batches run at the pace of their longest member",
             lever="continuous (iteration-level) batching", section="§6"),
        dict(mechanism="a long prefill freezes every in-flight decode",
             lever="chunked prefill / token budget; at fleet scale, disaggregation",
             section="§3, §6, §8"),
        dict(mechanism="on the memory roof, bytes per parameter set the ceiling",
             lever="weight quantization (INT8/FP8)", section="§10"),
        dict(mechanism="decode leaves >99% of the arithmetic idle",
             lever="speculative decoding", section="§10"),
        dict(mechanism="weights exceed one card; TP all-reduces are latency-bound",
             lever="TP inside the NVLink domain, PP across nodes", section="§7"),
        dict(mechanism="multi-turn prompts repeat the whole conversation",
             lever="prefix caching + KV-aware routing", section="§8"),
        dict(mechanism="nvidia-smi util is kernel residency, not work",
             lever="MBU for decode, MFU for prefill; nsys then ncu", section="§9"),
    ]


@serves("17.10")
def cheat_sheet(model: Model, hardware: Hardware, *,
                context_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                prompt_tokens: int = ch17.PROMPT_TOKENS,
                reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES,
                efficiency: float = ch17.PREFILL_EFFICIENCY) -> list[dict]:
    """The chapter's headline numbers re-derived for any model and card (17 §10's cheat sheet,
    re-derived from the formulas). Rows: quantity, value (base units), unit, section."""
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    reserve = v.nonnegative("reserve_bytes", reserve_bytes)
    e = v.probability("efficiency", efficiency, open_low=True)
    split = decode_time_split(m, hw)
    cap = tp_kv_capacity(m, hw, context_tokens=L, reserve_bytes=reserve)
    rows = [
        ("ridge point", ridge_point(hw), "FLOP/byte", "§1-§2"),
        ("full-HBM sweep", memory_sweep_s(hw), "s", "§1"),
        ("batch-1 decode intensity", decode_intensity(m), "FLOP/byte", "§2"),
        ("batch-1 decode fraction of peak",
         roofline_point(decode_intensity(m), hw)["fraction_of_peak"], "fraction", "§2"),
        ("weights", m.weight_bytes, "B", "§2"),
        ("batch-1 decode step (weights only)", split["step_s"], "s", "§2"),
        ("batch-1 decode ceiling", split["tokens_per_s"], "tok/s", "§2"),
        (f"prefill, {n} tokens at {e:.0%} of peak", prefill_compute_s(m, hw, n, efficiency=e),
         "s", "§2"),
        ("KV per token", kv_bytes_per_token(m), "B", "§4"),
        (f"KV per {L}-token sequence", kv_bytes(m, L, block_tokens=1), "B", "§4"),
        ("weights / card memory", cap["weights_over_memory"], "x", "§4"),
        ("free KV on one card", max(cap["free_kv_bytes_per_gpu"], 0.0), "B", "§4"),
        (f"max concurrent {L}-token sequences, one card", cap["max_sequences"], "sequences",
         "§4"),
        ("KV = weights crossover context", kv_weight_crossover_tokens(m), "tokens", "§4"),
        ("INT8 batch-1 decode ceiling",
         quantization_ceiling(m, hw, ch17.INT8_BYTES_PER_PARAM)["tokens_per_s"], "tok/s",
         "§10"),
        (f"speculative tokens per pass (m={ch17.SPEC_DRAFT_LEN}, "
         f"alpha={ch17.SPEC_ACCEPTANCE:g})",
         speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, ch17.SPEC_DRAFT_LEN),
         "tokens", "§10"),
    ]
    layout = _smallest_layout(m, hw, reserve)
    rows.append(("GPUs in the smallest TP x PP layout that fits",
                 math.nan if layout is None else layout["gpus"], "GPUs", "§7"))
    return [dict(quantity=q, value=val, unit=u, section=s) for q, val, u, s in rows]


# --- where the §9-§10 arithmetic stops holding (the fuller models) ------------------

@serves("17.9")
def utilization_counted(model: Model, hardware: Hardware, *, decode_tokens_per_s: float,
                        prefill_tokens_per_s: float, batch: int = 1, context_tokens: int = 0,
                        prompt_tokens: int = ch17.PROMPT_TOKENS) -> dict:
    """MBU and MFU as 17 §9 computes them and with the work they leave out (17 §9, fuller).

    The chapter's decode MBU streams the weights only ("short context, KV negligible"):
    tok/s x D_w / b / beta; counting each sequence's live KV adds L k per token
    (``decode_utilization``). Its MFUs count 2 FLOPs per parameter; a decode token also
    attends to L + 1 positions and a prompt of n tokens has n(n+1)/2 causal pairs, a FLOP per
    pair of ``core.attention_flops_per_pair``. Returns decode_mbu_chapter, decode_mbu,
    decode_mfu_chapter, decode_mfu, prefill_mfu_chapter, prefill_mfu (fractions of peak).
    """
    m = _model(model)
    hw = _hardware(hardware)
    decode_tokens_per_s = v.positive("decode_tokens_per_s", decode_tokens_per_s)
    prefill_tokens_per_s = v.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    weights_only = decode_utilization(m, hw, decode_tokens_per_s, batch=b)
    with_kv = decode_utilization(m, hw, decode_tokens_per_s, batch=b, context_tokens=L)
    pre = prefill_utilization(m, hw, prefill_tokens_per_s)
    decode_attn = decode_tokens_per_s * attention_flops(m, 1, L)
    prefill_attn = prefill_tokens_per_s * attention_flops(m, n) / n
    return dict(decode_mbu_chapter=weights_only["mbu"], decode_mbu=with_kv["mbu"],
                decode_mfu_chapter=weights_only["mfu"],
                decode_mfu=mfu(weights_only["flops_per_s"] + decode_attn, hw),
                prefill_mfu_chapter=pre["mfu"],
                prefill_mfu=mfu(pre["flops_per_s"] + prefill_attn, hw))


def _at_precision(model: Model, bytes_per_param) -> Model:
    """The model with its weights stored at ``bytes_per_param`` (None: as the preset has
    them); the parameter counts, and so the FLOPs, stay."""
    if bytes_per_param is None:
        return model
    b = v.positive("bytes_per_param", bytes_per_param)
    return model.with_(bytes_per_param=b, weight_bytes=model.n_params * b,
                       streamed_weight_bytes=model.streamed_params * b)


def _plain_parts(m: Model, hw: Hardware, b: int, L: int):
    """One plain decode step on the roofline: every sequence's token through the read-once
    matrices and its attention over L cached tokens (``verification_flops`` of one row)."""
    return decode_step_parts(m, hw, b, L, flops_per_token=verification_flops(m, 1, L))


@serves("17.10")
def quantized_decode_speedup(model: Model, hardware: Hardware, bytes_per_param: float = 1, *,
                             batch: int = 1, context_tokens: int = 0) -> dict:
    """Decode speed-up of weight-only quantization at any batch and context (17 §10, fuller).

    The chapter's 2x is the batch-1 weight read alone: bytes per weight 2 -> 1. On the
    roofline a step takes max(b F / peak, (D_w + b L k) / beta); quantizing the weights
    shrinks D_w only (the KV cache stays BF16 and the arithmetic runs at the same peak), so
    the speed-up falls toward 1 as the KV read grows or the step turns compute-bound.
    Returns chapter_speedup (``quantization_ceiling``), speedup, step_s, quantized_step_s
    and bound (of the quantized step).
    """
    m = _model(model)
    hw = _hardware(hardware)
    s = v.positive("bytes_per_param", bytes_per_param)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    base = _plain_parts(m, hw, b, L)
    quant = _plain_parts(_at_precision(m, s), hw, b, L)
    return dict(chapter_speedup=quantization_ceiling(m, hw, s)["speedup"],
                speedup=base.step_s / quant.step_s, step_s=base.step_s,
                quantized_step_s=quant.step_s, bound=quant.bound)


@serves("17.10")
def speculative_speedup(model: Model, hardware: Hardware, acceptance: float = ch17.SPEC_ACCEPTANCE,
                        draft_len: int = ch17.SPEC_DRAFT_LEN, *, draft_cost: float = 0.0,
                        batch: int = 1, context_tokens: int = 0,
                        bytes_per_param: float | None = None) -> dict:
    """Speed-up of speculative decoding with the draft and the verification priced (17 §10).

    The chapter's bound is E[X] = 1 + alpha + ... + alpha^m (m = ``draft_len``; 17 §10 writes
    k): drafting free and the wider pass as cheap as a plain step. Here a round costs
    m x ``draft_cost`` plain steps of drafting plus one verification pass of b (m + 1) rows on
    the roofline (``speculative.verification_under_load``: free only while memory-bound), so
    speed-up = E[X] x plain / (m c plain + verify). Returns chapter_speedup (E[X]), speedup,
    plain_s, verify_s, round_s and bound (of the verification pass).
    """
    m = _at_precision(_model(model), bytes_per_param)
    hw = _hardware(hardware)
    a = v.probability("acceptance", acceptance)
    k = v.tokens("draft_len", draft_len)
    c = v.nonnegative("draft_cost", draft_cost)
    load = verification_under_load(m, hw, batch, k, context_tokens)
    expected = speculative_expected_tokens(a, k)
    round_s = k * c * load["plain_s"] + load["verify_s"]
    return dict(chapter_speedup=expected, speedup=expected * load["plain_s"] / round_s,
                plain_s=load["plain_s"], verify_s=load["verify_s"], round_s=round_s,
                bound=load["bound"])


@serves("17.10")
def combined_levers(model: Model, hardware: Hardware, bytes_per_param: float = 1,
                    acceptance: float = ch17.SPEC_ACCEPTANCE,
                    draft_len: int = ch17.SPEC_DRAFT_LEN, *, draft_cost: float = 0.0,
                    batch: int = 1, context_tokens: int = 0) -> dict:
    """Quantization and speculative decoding together versus their speed-ups multiplied
    (17 §10, fuller).

    joint = plain BF16 step / (quantized round / E[X]), the draft costing ``draft_cost``
    quantized plain steps per token; product = quantization speed-up x speculative speed-up,
    each computed alone at the same batch and context; chapter = 2/s x E[X], the two
    headline numbers multiplied. The joint equals the product while both passes stay
    memory-bound and the KV read is small, and falls below it once quantization has moved
    the verification pass past the ridge. Returns quantization, speculative (the dicts of
    the two functions), product, joint and chapter.
    """
    q = quantized_decode_speedup(model, hardware, bytes_per_param, batch=batch,
                                 context_tokens=context_tokens)
    s = speculative_speedup(model, hardware, acceptance, draft_len, draft_cost=draft_cost,
                            batch=batch, context_tokens=context_tokens)
    sq = speculative_speedup(model, hardware, acceptance, draft_len, draft_cost=draft_cost,
                             batch=batch, context_tokens=context_tokens,
                             bytes_per_param=bytes_per_param)
    joint = q["step_s"] * sq["chapter_speedup"] / sq["round_s"]
    return dict(quantization=q, speculative=s, product=q["speedup"] * s["speedup"],
                joint=joint, chapter=q["chapter_speedup"] * s["chapter_speedup"])
