"""The fuller models of 17 §1-§5 (companion.formulas.fuller) against references they do not
share code with: hand computations from the chapter's stated inputs, the roofline's own
min(peak, intensity x bandwidth) (``calc.roofline_point``), a brute-force count of attention
pairs, and FLOP counts read straight from the Llama-3.1-8B ``config.json`` on the shelf.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc, models
from companion.chapters import ch17
from companion.formulas.fuller import _windowed_pairs, pass_roofline
from companion.formulas.performance import fused_step_parts
from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B

HW, M8, M70 = H100_SXM, LLAMA_8B, LLAMA_70B
CONFIGS = Path(__file__).resolve().parents[1] / "companion" / "data" / "hf_configs"
FAST = settings(max_examples=40, deadline=None)

# the chapter's stated inputs, by hand (17, "Assumptions, fixed once")
PI, BETA = ch17.H100_PEAK_FLOPS_PER_S, ch17.H100_BW_BYTES_PER_S
P8 = ch17.MODEL_8B_PARAMS
D_W = 2 * P8                                    # 16 GB, every parameter in BF16
K8 = 2 * 32 * 8 * 128 * 2                       # KV bytes per token (17 §4)
A8 = 4 * 128 * 32 * 32                          # attention FLOPs per pair: 4 d H_q layers


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _roofline_time(flops: float, n_bytes: float, peak: float) -> float:
    """Time of a pass by the roofline's own min(): FLOPs over the attainable rate at its
    intensity on a card whose compute roof is ``peak``."""
    card = HW.with_(peak_flops_per_s=peak)
    return flops / calc.roofline_point(flops / n_bytes, card)["attainable_flops_per_s"]


# --- §1 -------------------------------------------------------------------------------------

def test_achieved_rates_by_hand_from_the_chapter_inputs():
    mbu = ch17.DECODE_TOK_PER_S * D_W / BETA                  # 17 §9: 146 tok/s -> ~70%
    r = calc.achieved_rates(HW, compute_efficiency=0.5, bandwidth_efficiency=mbu)
    assert r["ridge_flop_per_byte"] == pytest.approx(0.5 * PI / (mbu * BETA))
    assert r["sweep_s"] == pytest.approx(ch17.H100_MEM_BYTES / (mbu * BETA))
    assert r["ridge_flop_per_byte"] == pytest.approx(211, abs=1)
    assert r["peak_sweep_s"] == pytest.approx(0.024, abs=5e-4)   # the chapter's "24 ms"


def test_achieved_rates_at_full_rates_are_the_chapters():
    r = calc.achieved_rates(HW, sweep_bytes=16e9)
    assert r["ridge_flop_per_byte"] == pytest.approx(calc.ridge_point(HW))
    assert r["sweep_s"] == pytest.approx(calc.memory_sweep_s(HW, 16e9))
    assert r["ridge_ratio"] == 1.0


@FAST
@given(st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_a_lower_bandwidth_share_raises_the_ridge_and_the_sweep(ec, eb):
    r = calc.achieved_rates(HW, compute_efficiency=ec, bandwidth_efficiency=eb)
    assert r["ridge_ratio"] == pytest.approx(ec / eb)
    assert r["sweep_s"] >= r["peak_sweep_s"]


# --- §2 -------------------------------------------------------------------------------------

def test_attention_flops_per_pair_from_the_real_config():
    cfg = _config("llama-3.1-8b")
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    by_hand = 4 * d * cfg["num_attention_heads"] * cfg["num_hidden_layers"]
    assert by_hand == A8
    real = models.load("llama-3.1-8b")
    assert calc.attention_flops_per_pair(real) == by_hand == calc.attention_flops_per_pair(M8)


@pytest.mark.parametrize("L", [0, 600, 8000, 128_000])
def test_decode_attention_intensity_by_hand(L):
    b = ch17.BATCH
    r = calc.decode_attention_intensity(M8, b, L)
    flops = b * (2 * P8 + A8 * (L + 1))
    n_bytes = D_W + b * L * K8
    assert r["intensity"] == pytest.approx(flops / n_bytes)
    assert r["chapter_intensity"] == pytest.approx(b * 2 * P8 / n_bytes)
    assert r["long_context_limit"] == pytest.approx(A8 / K8) == 4.0   # 32 query / 8 KV heads


def test_decode_attention_intensity_tends_to_the_query_heads_per_kv_head():
    cfg = _config("llama-3.1-8b")
    real = models.load("llama-3.1-8b")
    far = calc.decode_attention_intensity(real, 64, 10_000_000)
    group = cfg["num_attention_heads"] / cfg["num_key_value_heads"]
    assert far["long_context_limit"] == pytest.approx(group)
    assert far["intensity"] == pytest.approx(group, rel=0.01)


def test_prefill_matrix_flops_of_the_real_config_by_hand():
    cfg = _config("llama-3.1-8b")
    h, f, d = cfg["hidden_size"], cfg["intermediate_size"], 128
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * f + 2 * h      # q, k, v, o, MLP, norms
    layers = cfg["num_hidden_layers"] * per_layer + h                 # + the final norm
    n = ch17.PROMPT_TOKENS
    r = calc.prefill_readings(models.load("llama-3.1-8b"), HW, n)
    assert r["matrix_flops"] == pytest.approx(2 * layers * n)
    assert r["attention_flops"] == pytest.approx(A8 * n * (n + 1) / 2)


@pytest.mark.parametrize("n", [16, 128, 148, 2048, 8000, 32_768])
def test_prefill_readings_against_the_roofline_min(n):
    r = calc.prefill_readings(M8, HW, n)
    flops = 2 * P8 * n + A8 * n * (n + 1) / 2
    n_bytes = D_W + n * K8                       # weights once, the new KV written
    assert r["chapter_s"] == pytest.approx(2 * P8 * n / (0.5 * PI))
    assert r["attention_s"] == pytest.approx(flops / (0.5 * PI))
    assert r["roofline_s"] == pytest.approx(_roofline_time(flops, n_bytes, 0.5 * PI))
    assert r["roofline_s"] >= r["attention_s"] >= r["chapter_s"]


def test_a_short_prompt_costs_a_weight_read():
    r = calc.prefill_readings(M8, HW, 16)
    assert r["bound"] == "memory"
    assert r["roofline_s"] == pytest.approx((D_W + 16 * K8) / BETA)
    assert r["roofline_over_chapter"] > 9


@FAST
@given(st.integers(1, 300), st.integers(0, 5000), st.sampled_from([None, 1, 7, 512, 4096]))
def test_windowed_pairs_against_a_brute_force_count(new, history, window):
    brute = sum(i if window is None else min(i, window)
                for i in range(history + 1, history + new + 1))
    assert _windowed_pairs(new, history, window) == brute


def test_a_sliding_window_caps_the_attention_of_a_long_prompt():
    mistral = models.load("mistral-7b-v0.1")
    w = _config("mistral-7b-v0.1")["sliding_window"]
    n = 3 * w
    full = pass_roofline(mistral, HW, prompt_tokens=n)["attention_flops"]
    per_pair = calc.attention_flops_per_pair(mistral)
    assert full == pytest.approx(per_pair * (w * (w + 1) / 2 + (n - w) * w))


@pytest.mark.parametrize("c, h, b, L", [(512, 0, 57, 600), (512, 7000, 57, 600),
                                        (8000, 0, 4, 600), (0, 0, 760, 600)])
def test_pass_roofline_agrees_with_the_fused_step_of_17_6(c, h, b, L):
    # two implementations of one pass; the 8B shape's decode and prefill FLOPs coincide
    mine = pass_roofline(M8, HW, prompt_tokens=c, history_tokens=h, decode_batch=b,
                         decode_context_tokens=L)
    theirs = fused_step_parts(M8, HW, chunk_tokens=c, history_tokens=h, decode_batch=b,
                              decode_context_tokens=L)
    for key in ("bytes", "flops", "step_s"):
        assert mine[key] == pytest.approx(theirs[key])


def test_a_pass_needs_tokens():
    with pytest.raises(ValueError, match="prompt_tokens"):
        pass_roofline(M8, HW)


# --- §3 -------------------------------------------------------------------------------------

def test_head_of_line_readings_by_hand():
    n, step, L = ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S, ch17.CHAT_LIVE_TOKENS
    r = calc.head_of_line_readings(M8, HW, n, step)
    b = math.ceil((step * BETA - D_W) / (L * K8))
    assert r["decode_batch"] == b
    chapter = 2 * P8 * n / (0.5 * PI)
    assert r["chapter_s"] == pytest.approx(chapter)                  # the chapter's 259 ms
    assert r["additive_s"] == pytest.approx(step + chapter)
    flops = 2 * P8 * (n + b) + A8 * (n * (n + 1) / 2 + b * (L + 1))
    n_bytes = D_W + b * L * K8 + n * K8
    assert r["fused_s"] == pytest.approx(_roofline_time(flops, n_bytes, 0.5 * PI))
    assert r["fused_s"] > r["additive_s"] > r["chapter_s"]


# --- §4 -------------------------------------------------------------------------------------

def test_a_long_context_in_the_chapters_batch_by_hand():
    b, L0 = 57, ch17.CHAT_LIVE_TOKENS
    L = D_W / K8                                   # the crossover, ~122,070 tokens
    r = calc.long_context_in_batch(M8, HW, round(L), batch=b)
    assert r["own_slowdown"] == pytest.approx(2.0, abs=1e-4)        # "doubles the cost"
    before = (D_W + b * L0 * K8) / BETA
    after = (D_W + b * L0 * K8 + round(L) * K8) / BETA
    assert r["batch_step_s"] == pytest.approx(before)               # 17 §5's 6.1 ms
    assert r["mixed_step_s"] == pytest.approx(after)
    assert r["batch_slowdown"] == pytest.approx(after / before)


@FAST
@given(st.integers(0, 300_000), st.integers(1, 500))
def test_a_longer_guest_slows_the_batch_more(L, b):
    r = calc.long_context_in_batch(M8, HW, L, batch=b)
    longer = calc.long_context_in_batch(M8, HW, L + 1000, batch=b)
    assert 1.0 <= r["batch_slowdown"] <= longer["batch_slowdown"]


def test_block_rounded_capacity_by_hand():
    free = ch17.H100_MEM_BYTES - D_W - ch17.RUNTIME_RESERVE_BYTES     # 60 GB (17 §4)
    r = calc.block_rounded_capacity(M8, HW, context_tokens=100)
    assert r["held_tokens"] == 112
    assert r["sequences"] == int(free // (112 * K8))
    assert r["chapter_sequences"] == int(free // (100 * K8))
    at_8k = calc.block_rounded_capacity(M70, HW, tp=ch17.TP)        # 500 whole blocks
    assert at_8k["sequences"] == at_8k["chapter_sequences"] == 62   # 17 §4's "≈ 62"


# --- §5 -------------------------------------------------------------------------------------

@pytest.mark.parametrize("e", [1.0, 0.5, 0.1])
def test_decode_roofline_batch_against_the_roofline_min(e):
    b, L = 762, ch17.CHAT_LIVE_TOKENS
    r = calc.decode_roofline_batch(M8, HW, b, efficiency=e)
    flops = b * (2 * P8 + A8 * (L + 1))
    n_bytes = D_W + b * L * K8
    assert r["chapter_step_s"] == pytest.approx(n_bytes / BETA)
    assert r["step_s"] == pytest.approx(_roofline_time(flops, n_bytes, e * PI))
    assert r["compute_ceiling_tokens_per_s"] == pytest.approx(e * PI / (2 * P8 + A8 * (L + 1)))


def test_the_paged_batch_is_compute_bound_at_half_of_peak_only():
    assert calc.decode_roofline_batch(M8, HW, 762, efficiency=1.0)["bound"] == "memory"
    half = calc.decode_roofline_batch(M8, HW, 762, efficiency=ch17.PREFILL_EFFICIENCY)
    assert half["bound"] == "compute"
    assert half["tokens_per_s"] < half["chapter_tokens_per_s"]
    # the contiguous batch is memory-bound either way: nothing changes for it
    naive = calc.decode_roofline_batch(M8, HW, 57, efficiency=ch17.PREFILL_EFFICIENCY)
    assert naive["step_s"] == naive["chapter_step_s"]


@pytest.mark.parametrize("e", [1.0, 0.5])
def test_decode_step_per_kernel_adds_the_two_kernels(e):
    b, L = 762, ch17.CHAT_LIVE_TOKENS
    r = calc.decode_step_per_kernel(M8, HW, b, efficiency=e)
    weights = max(D_W / BETA, b * 2 * P8 / (e * PI))
    attention = max(b * L * K8 / BETA, b * A8 * (L + 1) / (e * PI))
    assert r["step_s"] == pytest.approx(weights + attention)
    assert r["tokens_per_s"] == pytest.approx(b / (weights + attention))
    # kernels in sequence never run faster than one overlapped max, nor than the bytes alone
    assert r["step_s"] >= r["overlapped_step_s"] >= r["chapter_step_s"] * (1 - 1e-12)


def test_per_kernel_weights_turn_compute_bound_at_the_ridge():
    ridge = calc.ridge_point(HW)                                    # 295 (17 §2)
    below = calc.decode_step_per_kernel(M8, HW, int(ridge) - 5)
    above = calc.decode_step_per_kernel(M8, HW, int(ridge) + 5)
    assert below["weights_bound"] == "memory" and above["weights_bound"] == "compute"
    # below the ridge at full peak the per-kernel step is the chapter's bytes-only step
    assert below["step_s"] == pytest.approx(below["chapter_step_s"])
    # the paged batch of 17 §5 (762): 12.3 ms of products + 17.9 ms of KV = 30.2 ms
    assert calc.decode_step_per_kernel(M8, HW, 762)["step_s"] == pytest.approx(30.2e-3, abs=1e-4)


# --- the weight products with their activations (17 §2, long prompts) ------------------------

def _gemm_by_hand(t: int, d: int = 4096, q: int = 4096, kv: int = 1024, f: int = 14336):
    """FLOPs and bytes of one layer's seven products, each reading X and writing Y in BF16."""
    shapes = [(d, q), (d, kv), (d, kv), (q, d), (d, f), (d, f), (f, d)]
    flops = sum(2 * t * a * b for a, b in shapes)
    nbytes = sum(2 * (a * b + t * a + t * b) for a, b in shapes)
    return flops, nbytes


@pytest.mark.parametrize("t", [1, 64, 2048, 32_768])
def test_matmul_intensity_matches_a_layer_by_hand(t):
    from companion.formulas.fuller import matmul_intensity

    r = matmul_intensity(M8, t, intermediate_size=14_336)
    flops, nbytes = _gemm_by_hand(t)
    assert r["intensity"] == pytest.approx(flops / nbytes, rel=1e-12)
    assert r["chapter_intensity"] == pytest.approx(t, rel=1e-12)      # 17 §2's "I ~ n"
    assert r["intensity"] < r["chapter_intensity"] < r["intensity"] * 2 + t
    assert r["intensity"] < r["long_prompt_limit"]


def test_matmul_intensity_keeps_the_compute_bound_verdict_and_moves_the_ridge_batch():
    from companion.formulas.fuller import matmul_intensity

    ridge = calc.ridge_point(HW)
    at = {t: matmul_intensity(M8, t, intermediate_size=14_336)["intensity"]
          for t in (2048, 32_768)}
    assert round(at[2048]) == 1158 and round(at[32_768]) == 2462
    assert min(at.values()) > ridge                                   # prefill: compute-bound
    first = next(b for b in range(1, 1000)
                 if matmul_intensity(M8, b, intermediate_size=14_336)["intensity"] >= ridge)
    assert first == 333 and first > math.ceil(ridge)


def test_matmul_intensity_needs_the_mlp_width():
    from companion.formulas.fuller import matmul_intensity

    with pytest.raises(ValueError, match="intermediate_size"):
        matmul_intensity(M8, 2048)
    real = models.load("llama-3.1-8b")
    assert matmul_intensity(real, 2048)["intensity"] == pytest.approx(
        matmul_intensity(M8, 2048, intermediate_size=14_336)["intensity"], rel=1e-12)
