"""Chapter 17's chapter-wide tables, re-derived from its formulas (17 §10; the chapter's tables
are not reproduced here): the levers indexed by symptom with their arithmetic, the mechanism -> lever map, and the
cheat sheet of headline numbers for any model and card.

They draw on every section (the roofline of §2, the KV sizing of §4, paging of §5, chunking of
§6, the layouts of §7, quantization and speculation of §10), so they live here, above
``performance`` and ``parallelism``, rather than in either.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (kv_bytes, kv_bytes_per_token, ridge_point,
                                     speculative_expected_tokens)
from companion.formulas.parallelism import parallel_layout, weights_per_gpu_bytes
from companion.formulas.performance import (
    chunked_prefill_trade, decode_intensity, decode_time_split, kv_weight_crossover_tokens,
    memory_sweep_s, paged_batch_gain, prefill_compute_s, quantization_ceiling, roofline_point,
    tp_kv_capacity)
from companion.serves import serves
from companion.specs import LLAMA_70B, Hardware, Model

__all__ = ["levers_table", "mechanism_lever_map", "cheat_sheet"]


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
             changes="tokens per target pass (k = 4, alpha = 0.7)", section="§10",
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
        ("speculative tokens per pass (k=4, alpha=0.7)",
         speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, ch17.SPEC_DRAFT_LEN),
         "tokens", "§10"),
    ]
    layout = _smallest_layout(m, hw, reserve)
    rows.append(("GPUs in the smallest TP x PP layout that fits",
                 math.nan if layout is None else layout["gpus"], "GPUs", "§7"))
    return [dict(quantity=q, value=val, unit=u, section=s) for q, val, u, s in rows]
