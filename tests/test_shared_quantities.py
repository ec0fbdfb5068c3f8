"""A quantity that a section notebook and an exercise both compute has one value at seed 0.

Each row names the quantity (as the notebook names it), the notebook and the companion call it
makes, and the exercise part that grades the same quantity. The notebook's value is recomputed
here with that same call (the notebook is not executed; its source must still contain the call),
the exercise's seed-0 answer is ``grading.exercises()[id].solve(grading.params(id, 0))[part]``,
and the two must agree within the part's tolerance: a student who follows the notebook is
graded "correct". Where an exercise also accepts another reading (``also_accepted``), the
notebook's reading must be the one it solves for, not only an accepted one.

Not listed, on purpose: quantities an exercise computes on other inputs than the notebook
(17-11's (d) divides by §5's unrounded decode step, 17_03 by §3's rounded one).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import pytest

from companion import calc, grading, specs, units
from companion.chapters import ch08, ch17

ROOT = Path(__file__).resolve().parents[1]
CH08 = ROOT / "notebooks" / "ch08_inference_optimization"
CH17 = ROOT / "notebooks" / "ch17_performance"

M8, M70, H100 = specs.LLAMA_8B, specs.LLAMA_70B, specs.H100_SXM
QWEN, RTX = specs.QWEN3_8B, specs.RTX_PRO_6000


def _step_17_5() -> float:
    """§5's naive-batch decode step, as 17_03 and 17_06 read it."""
    return calc.paged_batch_gain(M8, H100, block_tokens=1)["naive"]["step_s"]


def _trade_17_6() -> dict:
    return calc.chunked_prefill_trade(M8, H100, ch17.LONG_CONTEXT_TOKENS, ch17.CHUNK_TOKENS,
                                      _step_17_5())


def _crossover_8_2(context_tokens: int) -> int:
    return calc.kv_crossover_batch(QWEN.streamed_weight_bytes, context_tokens,
                                   calc.kv_bytes_per_token(QWEN))


def _variant(name: str) -> dict:
    return next(r for r in calc.attention_variants(M70) if r["attention"] == name)


# (quantity, notebook, the call the notebook makes, exercise, part, the notebook's value in the
# part's unit)
SHARED = [
    # 17 §6: the worst-ITL improvement of chunked prefill, and the numbers it is built from
    ("worst-ITL improvement (x better)", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "h-itl-gain",
     lambda: _trade_17_6()["itl_improvement"]),
    ("worst ITL unchunked: the dedicated prefill (ms)", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "c-stall",
     lambda: _trade_17_6()["dedicated_s"] / units.ms),
    ("chunks", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "e-chunks",
     lambda: _trade_17_6()["chunks"]),
    ("iteration: decode step + one chunk (ms)", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "g-iteration",
     lambda: _trade_17_6()["iteration_s"] / units.ms),
    ("TTFT of the chunked prompt (ms)", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "i-ttft-chunked",
     lambda: _trade_17_6()["ttft_s"] / units.ms),
    ("TTFT increase over a dedicated prefill (%)", CH17 / "17_06_batching_strategies.py",
     "calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)", "17-11", "j-ttft-increase",
     lambda: 100 * _trade_17_6()["ttft_increase"]),
    # 17 §4: KV bytes per token of the 70B shape, BF16 and FP8, and what fits
    ("KV per token, 70B, BF16 (B)", CH17 / "17_04_kv_sizing.py",
     "calc.kv_bytes_per_token(m70, 2)", "17-1", "a-per-token",
     lambda: calc.kv_bytes_per_token(M70, 2)),
    ("KV per token, 70B, FP8 (B)", CH17 / "17_04_kv_sizing.py",
     "calc.kv_bytes_per_token(m70, 1)", "17-1", "g-fp8",
     lambda: calc.kv_bytes_per_token(M70, 1)),
    ("MHA KV per 8,000-token sequence (GB)", CH17 / "17_04_kv_sizing.py",
     "calc.attention_variants(m70)", "17-1", "d-mha-seq",
     lambda: _variant("MHA")["kv_bytes_per_sequence"] / units.GB),
    ("GQA sequences in the cache", CH17 / "17_04_kv_sizing.py",
     "calc.attention_variants(m70)", "17-1", "e-fit-own", lambda: _variant("GQA")["sequences"]),
    ("MHA sequences in the cache", CH17 / "17_04_kv_sizing.py",
     "calc.attention_variants(m70)", "17-1", "f-fit-mha", lambda: _variant("MHA")["sequences"]),
    ("max concurrent 8K sequences, 8B on one H100", CH17 / "17_04_kv_sizing.py",
     "calc.tp_kv_capacity(m8, hw)", "17-2", "b-small-seqs",
     lambda: calc.tp_kv_capacity(M8, H100)["max_sequences"]),
    ("max concurrent 8K sequences, 70B at TP = 4", CH17 / "17_04_kv_sizing.py",
     "calc.tp_kv_capacity(m70, hw, tp=4)", "17-2", "g-big-seqs",
     lambda: calc.tp_kv_capacity(M70, H100, tp=4)["max_sequences"]),
    # 17 §2: the ridge point
    ("ridge point (FLOP per byte)", CH17 / "17_02_roofline.py", "calc.ridge_point(hw)", "17-3",
     "a-ridge", lambda: calc.ridge_point(H100)),
    # 17 §5: worst-case reservations against paged KV
    ("max concurrent requests, worst-case reservations", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-10", "b-cap-reserved",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["naive"]["batch"]),
    ("max concurrent requests, paged KV", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-10", "c-cap-paged",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["paged"]["batch"]),
    ("decode throughput, worst-case reservations (tok/s)", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-12", "d-naive-tok-s",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["naive"]["tokens_per_s"]),
    ("decode throughput, paged KV (tok/s)", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-12", "e-paged-tok-s",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["paged"]["tokens_per_s"]),
    ("throughput gain from paging (x)", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-12", "f-gain",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["throughput_gain"]),
    ("decode step of the paged batch (ms)", CH17 / "17_05_paged_attention.py",
     "calc.paged_batch_gain(m8, hw, block_tokens=1)", "17-12", "g-itl-paged",
     lambda: calc.paged_batch_gain(M8, H100, block_tokens=1)["paged"]["step_s"] / units.ms),
    # 17 §7: tensor parallelism's all-reduce traffic, 70B at TP = 4
    ("ring all-reduce traffic per GPU (B)", CH17 / "17_07_parallelism.py",
     "calc.tp_allreduce_traffic(m70, 4)", "17-5", "b-ring",
     lambda: calc.tp_allreduce_traffic(M70, 4)["ring_bytes"]),
    ("collectives per token", CH17 / "17_07_parallelism.py",
     "calc.tp_allreduce_traffic(m70, 4)", "17-5", "c-collectives",
     lambda: calc.tp_allreduce_traffic(M70, 4)["collectives"]),
    ("pipeline bubble, 4 stages, 16 microbatches (%)", CH17 / "17_07_parallelism.py",
     "calc.pipeline_bubble(4, 16)", "17-6", "d-bubble-m1",
     lambda: 100 * calc.pipeline_bubble(4, 16)),
    # 17 §8: pool sizes, the RDMA hop, KV-aware routing
    ("prompt demand (tok/s)", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.disaggregated_pools(100, 2000, 250)", "17-7", "a-prompt-demand",
     lambda: calc.disaggregated_pools(100, 2000, 250)["prompt_tok_per_s"]),
    ("prefill groups", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.disaggregated_pools(100, 2000, 250)", "17-7", "b-prefill-groups",
     lambda: calc.disaggregated_pools(100, 2000, 250)["prefill_groups"]),
    ("decode groups", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.disaggregated_pools(100, 2000, 250)", "17-7", "d-decode-groups",
     lambda: calc.disaggregated_pools(100, 2000, 250)["decode_groups"]),
    ("KV of one 8,000-token 70B request over RDMA (ms)",
     CH17 / "17_08_disaggregation_and_routing.py",
     "calc.kv_transfer_s(m70, L, bw)", "17-7", "h-rdma",      # its links table, RDMA row
     lambda: calc.kv_transfer_s(M70, ch17.LONG_CONTEXT_TOKENS, ch17.RDMA_400G_BYTES_PER_S)
     / units.ms),
    # NVLink one way (the spec figure adds both directions; the ledger's erratum)
    ("KV of one 8,000-token 70B request over NVLink, one way (ms)",
     CH17 / "17_08_disaggregation_and_routing.py",
     "calc.kv_transfer_s(m70, L, bw)", "17-7", "g-nvlink",      # its links table, NVLink row
     lambda: calc.kv_transfer_s(M70, ch17.LONG_CONTEXT_TOKENS,
                                calc.nvlink_one_way_bytes_per_s(H100)) / units.ms),
    ("cold TTFT at turn 20 (ms)", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.kv_routing_ttft(m8, hw, 20)", "17-13", "c-cold",
     lambda: calc.kv_routing_ttft(M8, H100, 20)["cold_s"] / units.ms),
    ("warm TTFT at turn 20 (ms)", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.kv_routing_ttft(m8, hw, 20)", "17-13", "d-warm",
     lambda: calc.kv_routing_ttft(M8, H100, 20)["warm_s"] / units.ms),
    ("hit vs miss at turn 20 (x)", CH17 / "17_08_disaggregation_and_routing.py",
     "calc.kv_routing_ttft(m8, hw, 20)", "17-13", "e-ratio",
     lambda: calc.kv_routing_ttft(M8, H100, 20)["speedup"]),
    # 17 §10 at 17 §2's batch: INT8 weights' speed-up at 64 sequences of 8,000 tokens
    ("INT8 speed-up at batch 64, 8,000 tokens each (x)", CH17 / "17_10_levers.py",
     "calc.quantized_decode_speedup(m8, hw, ch17.INT8_BYTES_PER_PARAM", "17-8",
     "j-speedup-batch",
     lambda: calc.quantized_decode_speedup(M8, H100, ch17.INT8_BYTES_PER_PARAM, batch=ch17.BATCH,
                                           context_tokens=ch17.LONG_CONTEXT_TOKENS)["speedup"]),
    # 8.2.1: the batch at which KV reads reach the weight read (the crossover batch)
    ("crossover batch b_KV, 2K context", CH08 / "08_2_batching_and_scheduling.py",
     "calc.kv_crossover_batch(d_w, L, k)", "8-1", "b-short",
     lambda: _crossover_8_2(ch08.SHORT_PROMPT_TOKENS)),
    ("crossover batch b_KV, 8K context", CH08 / "08_2_batching_and_scheduling.py",
     "calc.kv_crossover_batch(d_w, L, k)", "8-1", "b-long",
     lambda: _crossover_8_2(ch08.LONG_PROMPT_TOKENS)),
]


@lru_cache(maxsize=None)
def _answers(exercise_id: str) -> dict:
    return grading.exercises()[exercise_id].solve(grading.params(exercise_id, 0))


def _agree(value, expected, part: grading.Part) -> bool:
    if part.kind in ("bool", "choice"):
        return value == expected
    if part.kind == "exact":
        return float(value) == float(expected)
    if part.kind == "abs":
        return abs(float(value) - float(expected)) <= part.tolerance
    return math.isclose(float(value), float(expected), rel_tol=part.tolerance)


def test_the_list_covers_the_quantities_the_brief_names():
    names = " ".join(row[0] for row in SHARED)
    for wanted in ("worst-ITL improvement", "KV per token", "crossover batch",
                   "max concurrent", "ridge point"):
        assert wanted in names, wanted


@pytest.mark.parametrize("name,notebook,call,exercise,part,value", SHARED,
                         ids=[f"{row[3]}:{row[4]}" for row in SHARED])
def test_notebook_and_exercise_agree_at_seed_0(name, notebook, call, exercise, part, value):
    # the notebook still makes the call this row recomputes (read, not executed)
    assert call in notebook.read_text(encoding="utf-8"), (notebook.name, call)
    p = grading.exercises()[exercise].part(part)
    expected = _answers(exercise)[part]
    got = value()
    assert _agree(got, expected, p), (
        f"{name}: {notebook.name} computes {got!r}, Exercise {exercise} ({part}) solves "
        f"{expected!r} at seed 0 (tolerance {p.kind} {p.tolerance})")
