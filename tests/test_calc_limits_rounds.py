"""The fuller models of 8.1, 8.2 and 8.5 (companion.formulas.limits_rounds) against references
the module did not produce: hand computations from the chapter's stated inputs, counts from
the real Qwen3-8B config.json, the roofline's own max(), the companion's scheduler and
rejection-sampling simulators, and the chapter's measured batch sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from companion import calc, models
from companion.chapters import ch08
from companion.formulas import limits_rounds as lr
from companion.formulas.serving import prefill_efficiency_row
from companion.sim import scheduler
from companion.sim import speculative as spec_sim
from companion.sim.requests import Request
from companion.sim.round_time import RoundTimeModel
from companion.specs import QWEN3_8B, RTX_PRO_6000

MS = 1e-3
GIB = 2 ** 30
CFG = json.loads((Path(calc.__file__).parent / "data" / "hf_configs" / "qwen3-8b.json")
                 .read_text())


def _config_counts():
    """D_w and the layer matrices' parameters of Qwen3-8B, counted from its config.json by hand:
    every weight but the input embedding, in BF16 (q/k norms of width head_dim)."""
    h, i, n = CFG["hidden_size"], CFG["intermediate_size"], CFG["num_hidden_layers"]
    q, kv, d = CFG["num_attention_heads"], CFG["num_key_value_heads"], CFG["head_dim"]
    matrices = h * q * d + 2 * h * kv * d + q * d * h + 3 * h * i
    norms = 2 * h + 2 * d
    layer = n * (matrices + norms)
    streamed = layer + CFG["vocab_size"] * h + h          # + lm_head + final norm
    kv_per_token = 2 * n * kv * d * 2
    return 2 * streamed, layer, kv_per_token


D_W, LAYER_PARAMS, K = _config_counts()


def test_the_config_counts_are_the_chapters():
    assert D_W == QWEN3_8B.streamed_weight_bytes == 15_136_811_008      # footnote 1
    assert K == 147_456                                                # 8.1.2


# --- 8.1.1: an inserted prefill ---------------------------------------------------------------

def test_additive_stall_is_the_chapters_123_ms():
    stretched = ch08.CLIENT_ITL_S + lr.inserted_prefill_stall_s(ch08.PREFILL_S)
    assert stretched == pytest.approx(122.5 * MS)                      # "about 123 ms"
    assert abs(stretched / MS - 123) < 0.5 + 1e-9


def test_fused_stall_is_the_round_fit_of_one_shared_pass():
    # by hand from 8.2.2's fit: one round carrying a 2K decode and a 2K prompt
    t, p, fixed = ch08.ROUND_PER_TOKEN_S, ch08.ROUND_PER_PAIR_S, ch08.ROUND_FIXED_S
    decode = fixed + t + p * 2049
    prefill = fixed + t * 2048 + p * 2048 * 2049 / 2
    shared_pass = fixed + t * 2049 + p * (2049 + 2048 * 2049 / 2)
    assert decode + lr.inserted_prefill_stall_s(prefill, fused=True) == pytest.approx(shared_pass)
    assert calc.mixed_round_time_s(1, 2048, 2048) == pytest.approx(shared_pass)
    # a prefill shorter than the shared part rides along for free; the additive one never does
    assert lr.inserted_prefill_stall_s(5 * MS, fused=True) == 0.0
    assert lr.inserted_prefill_stall_s(5 * MS) == 5 * MS


def test_fused_stall_matches_the_scheduler_simulator():
    # continuous batching puts r1's whole prompt in the same round as r0's decode step
    reqs = [Request("r0", 0.0, 2048, 6), Request("r1", 0.1, 2048, 2)]
    res = scheduler.simulate(reqs, "continuous", max_running=2,
                             round_time=RoundTimeModel.chapter8())
    times = res.token_times["r0"]
    longest = max(b - a for a, b in zip(times, times[1:]))
    decode_s = calc.mixed_round_time_s(1, 2049, 0)     # r0's context when r1 joins is >= 2049
    prefill_s = calc.mixed_round_time_s(0, 0, 2048)
    assert longest == pytest.approx(decode_s + lr.inserted_prefill_stall_s(prefill_s, fused=True),
                                    abs=0.05 * MS)
    assert longest < decode_s + lr.inserted_prefill_stall_s(prefill_s) - 20 * MS


# --- 8.1.1 / 8.1.3: intervals that grow with the context --------------------------------------

def test_growth_follows_experiment_8_1s_measured_slope():
    # Experiment 8-1: 3 more 2K contexts (batch 1 -> 4) cost 26.62 - 26.26 ms
    slope_s_per_byte = (26.62 - 26.26) * MS / (3 * 2048 * K)
    iv = lr.context_growth_intervals_s(QWEN3_8B, ch08.CLIENT_ITL_S, 2048, 256)
    assert len(iv) == 255
    assert iv[0] == pytest.approx(ch08.CLIENT_ITL_S)
    assert iv[-1] - iv[0] == pytest.approx(slope_s_per_byte * 254 * K, rel=1e-9)
    total_growth = sum(x - ch08.CLIENT_ITL_S for x in iv)
    assert total_growth == pytest.approx(slope_s_per_byte * K * sum(range(255)), rel=1e-9)
    assert all(b >= a for a, b in zip(iv, iv[1:]))


# --- 8.1.2: held against reserved ---------------------------------------------------------------

def test_mean_holding_by_hand_at_the_chapters_short_request():
    # after round j the request holds 2048 + j tokens (j = 0..255): 128 + ceil(j / 16) blocks,
    # and sum_j ceil(j / 16) = 16 (1 + ... + 15) + 15 x 16 = 2160
    mean_blocks = 128 + 2160 / 256
    block_bytes = 16 * K
    r = lr.kv_held_over_answer(QWEN3_8B, 12 * GIB, 2048, 256)
    assert r["mean_held_bytes"] == pytest.approx(mean_blocks * block_bytes)
    assert r["reserved_bytes"] == 144 * block_bytes == 324 * 2 ** 20           # 8.1.2
    assert r["fit_reserved"] == 37                                              # 8.1.2
    assert r["fit_by_mean"] == math.floor(12 * GIB / (mean_blocks * block_bytes)) == 40


def test_mean_holding_is_a_staggered_pool_at_one_instant():
    # G requests started one round apart: at any instant they sit at every phase j once
    p, g, bt = 1000, 300, 16
    model = models.model_from_hf_config(CFG)
    pool = sum(math.ceil((p + j) / bt) * bt * K for j in range(g))
    r = lr.kv_held_over_answer(model, 12 * GIB, p, g, block_tokens=bt)
    assert r["mean_held_bytes"] == pytest.approx(pool / g)


def test_sliding_window_model_matches_kv_bytes_token_by_token():
    m = models.load("gemma-2-2b")
    p, g = 3000, 2500
    by_kv_bytes = np.mean([calc.kv_bytes(m, p + j) for j in range(g)])
    r = lr.kv_held_over_answer(m, 12 * GIB, p, g)
    assert r["mean_held_bytes"] == pytest.approx(by_kv_bytes)
    assert r["reserved_bytes"] == calc.kv_bytes(m, p + g - 1)


# --- 8.1.3: throughput over whole requests -----------------------------------------------------

def test_batch_cycle_throughput_against_the_measured_batch_sweep():
    sweep = ch08.BATCH_SWEEP_MEASURED
    rows = {r["batch"]: r for r in prefill_efficiency_row()}
    rounds = dict(zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S))
    for b, measured in zip(sweep["batch"], sweep["tokens_per_s"]):
        got = lr.batch_cycle_throughput(b, 256, rows[b]["prefill_s"], rounds[b])
        assert got == pytest.approx(measured, rel=0.03)
    # the chapter's decode-only count at b = 64 is far above what was measured
    assert calc.decode_tokens_per_s(64, rounds[64]) > 1.8 * sweep["tokens_per_s"][1]
    # hand: 16 x 256 / (0.5 + 255 x 27.44 ms)
    assert lr.batch_cycle_throughput(16, 256, 0.5, 27.44 * MS) == pytest.approx(
        4096 / (0.5 + 255 * 0.02744))


# --- 8.2: the fit against the roofline ---------------------------------------------------------

def test_floored_round_is_the_rooflines_own_max():
    for b, L, c, h in ((64, 2048, 0, 0), (256, 2048, 0, 0), (16, 8192, 512, 7680),
                       (1, 128, 4096, 0)):
        bytes_ = D_W + (b * L + h + c) * K
        flops = 2 * LAYER_PARAMS * (b + c) + 4 * 128 * 32 * 36 * (c * h + c * (c + 1) // 2
                                                                  + b * (L + 1))
        roof = max(bytes_ / RTX_PRO_6000.mem_bw_bytes_per_s, flops / RTX_PRO_6000.peak_flops_per_s)
        fit = (ch08.ROUND_FIXED_S + ch08.ROUND_PER_TOKEN_S * (b + c)
               + ch08.ROUND_PER_PAIR_S * (b * (L + 1) + c * h + c * (c + 1) / 2))
        r = lr.floored_round_time(QWEN3_8B, RTX_PRO_6000, b, L, c, h)
        assert r["roofline_s"] == pytest.approx(roof, rel=1e-9)
        assert r["fit_s"] == pytest.approx(fit, rel=1e-12)
        assert r["floored_s"] == max(r["fit_s"], r["roofline_s"])
        assert r["bound"] == ("roofline" if roof > fit else "fit")


def test_the_fit_agrees_with_experiment_8_1_where_it_was_measured():
    for b, measured in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S):
        r = lr.floored_round_time(QWEN3_8B, RTX_PRO_6000, b, 2048)
        assert r["bound"] == "fit"
        assert r["floored_s"] == pytest.approx(measured, rel=0.04)
        assert r["roofline_s"] < measured


def test_undercut_batch_by_hand():
    beta = ch08.RTX_PRO_6000_BW_BYTES_PER_S
    for L, expected in ((2048, 135), (8192, 29)):
        per_row_fit = ch08.ROUND_PER_TOKEN_S + ch08.ROUND_PER_PAIR_S * (L + 1)
        b_star = (ch08.ROUND_FIXED_S - D_W / beta) / (L * K / beta - per_row_fit)
        assert math.ceil(b_star) == expected
        assert lr.fit_undercut_batch(QWEN3_8B, RTX_PRO_6000, L) == expected
    # at a 64-token context a decode row's KV is cheaper to read than the fit's per-row price
    # only past thousands of rows, and then compute sets the roofline: still a finite batch
    assert lr.fit_undercut_batch(QWEN3_8B, RTX_PRO_6000, 64) > 1000
    assert math.isinf(lr.fit_undercut_batch(QWEN3_8B, RTX_PRO_6000, 2048, max_batch=100))


def test_floored_budget():
    chapter = calc.token_budget_for_itl(50 * MS, 1, 2048)
    assert lr.floored_token_budget(50 * MS, QWEN3_8B, RTX_PRO_6000, 1, 2048) == chapter
    # 64 decodes on 32K contexts read (D_w + 64 x 32768 k) / beta = 181 ms: nothing fits 50 ms
    assert (D_W + 64 * 32768 * K) / RTX_PRO_6000.mem_bw_bytes_per_s > 180 * MS
    assert calc.token_budget_for_itl(50 * MS, 64, 32768) > 0
    assert lr.floored_token_budget(50 * MS, QWEN3_8B, RTX_PRO_6000, 64, 32768) == 0
    for target, b, L, h in ((200 * MS, 64, 32768, 0), (120 * MS, 32, 16384, 4096)):
        c = lr.floored_token_budget(target, QWEN3_8B, RTX_PRO_6000, b, L, h)
        assert 0 < c <= calc.token_budget_for_itl(target, b, L, h)
        at = lr.floored_round_time(QWEN3_8B, RTX_PRO_6000, b, L, c, h)["floored_s"]
        over = lr.floored_round_time(QWEN3_8B, RTX_PRO_6000, b, L, c + 1, h)["floored_s"]
        assert at <= target < over


# --- 8.5.2: acceptance that differs from span to span -----------------------------------------

def test_spread_by_hand_and_without_spread():
    r = lr.spread_expected_tokens(0.75, 0.25, 4)
    assert r["expected_tokens"] == pytest.approx((5 + (1 + 0.5 + 0.25 + 0.125 + 0.0625)) / 2)
    assert r["chapter_expected_tokens"] == pytest.approx(3.05, abs=0.005)   # 8.5.2
    none = lr.spread_expected_tokens(0.75, 0.0, 4)
    assert none["expected_tokens"] == none["chapter_expected_tokens"]
    assert lr.spread_expected_tokens(0.3, 0.5, 4)["spread"] == 0.3          # capped at a
    assert r["second_position_acceptance"] == pytest.approx((1 + 0.25) / 2 / 0.75)


def test_spread_never_lowers_the_expected_output():
    for a in np.linspace(0, 1, 21):
        for s in (0.05, 0.2, 0.5):
            for m in (1, 4, 12):
                r = lr.spread_expected_tokens(float(a), s, m)
                assert r["expected_tokens"] >= r["chapter_expected_tokens"] - 1e-12


def test_spread_matches_the_rejection_sampling_simulator():
    # with p = (1/4, 3/4), a drafter proposing A with probability q_A >= 1/4 is accepted with
    # 1.25 - q_A: q_A = 1/4 gives 1.0 (easy spans), 3/4 gives 0.5 (hard spans)
    p = (0.25, 0.75)
    easy = spec_sim.simulate_rounds(p, (0.25, 0.75), 4, 40_000, seed=3)
    hard = spec_sim.simulate_rounds(p, (0.75, 0.25), 4, 40_000, seed=4)
    pooled = (easy.mean_tokens + hard.mean_tokens) / 2
    r = lr.spread_expected_tokens(0.75, 0.25, 4)
    assert pooled == pytest.approx(r["expected_tokens"], rel=0.01)
    assert pooled > r["chapter_expected_tokens"] * 1.1
