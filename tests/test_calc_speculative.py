"""Speculative decoding closed forms (8.5) against the chapter's printed numbers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion.formulas.speculative import (best_draft_length, draft_round_time,
                                            speculative_output_distribution, verification_flops)
from companion.specs import QWEN3_8B, RTX_PRO_6000

MS = 1e-3
P_TOY = (0.25, 0.75)
ALWAYS_A, ALWAYS_B = (1.0, 0.0), (0.0, 1.0)
ROUND_S = 26.26 * MS


def r(x, nd=0):
    return round(x, nd)


# --- 8.5.1 / 8.5.2 -------------------------------------------------------------------------

def test_mean_latency_is_total_time_over_total_tokens():
    assert r(calc.mean_latency_per_token([1.5 * MS, 1.5 * MS], [1, 5]) / MS, 1) == 0.5
    assert r(calc.unweighted_round_latency([1.5 * MS, 1.5 * MS], [1, 5]) / MS, 1) == 0.9


def test_toy_acceptance_and_residual():
    assert calc.speculative_acceptance_rate(P_TOY, ALWAYS_A) == pytest.approx(0.25)
    assert calc.speculative_acceptance_rate(P_TOY, ALWAYS_B) == pytest.approx(0.75)
    # rejecting A means outputting B, and vice versa (8.5.1)
    assert calc.speculative_residual_distribution(P_TOY, ALWAYS_A) == pytest.approx([0, 1])
    assert calc.speculative_residual_distribution(P_TOY, ALWAYS_B) == pytest.approx([1, 0])
    assert calc.speculative_residual_distribution(P_TOY, P_TOY) == [0.0, 0.0]


def test_verification_outcome_figure_8_29_and_k7_k15():
    assert calc.verification_outcome(4, 2) == (3, 2)
    assert calc.verification_outcome(7, 1)[1] == 6
    assert calc.verification_outcome(15, 1)[1] == 14
    assert calc.verification_outcome(7, 7) == (8, 0)  # 7 drafts: 8 positions at most
    with pytest.raises(ValueError, match="^accepted"):
        calc.verification_outcome(4, 5)


def test_expected_tokens_of_the_toy_drafts():
    for draft, printed in ((ALWAYS_A, 1.33), (ALWAYS_B, 3.05)):
        a = calc.speculative_acceptance_rate(P_TOY, draft)
        dist = speculative_output_distribution(a, 4)
        assert len(dist) == 5
        assert r(sum(k * p for k, p in enumerate(dist, start=1)), 2) == printed


def test_extra_verification_flops_and_time():
    extra = calc.verification_extra_flops(QWEN3_8B, 5, 2048)
    assert r(extra / 1e9, 0) == 65
    assert r(calc.time_at_mfu(extra, RTX_PRO_6000, 0.62) / MS, 1) == 0.2
    # scheme D: 16 requests x 8 positions on 8192 cached tokens
    assert r(verification_flops(QWEN3_8B, 8, 8192, 16) / 1e12, 2) == 2.56


def test_per_token_latency_crossover_and_break_even():
    en_a = calc.speculative_expected_tokens(0.25, 4)
    en_b = calc.speculative_expected_tokens(0.75, 4)
    assert r(calc.speculative_latency_per_token(ROUND_S, en_a, 0.1 * MS) / MS, 1) == 19.8
    lat_b = calc.speculative_latency_per_token(ROUND_S, en_b, 0.1 * MS)
    assert r(lat_b / MS, 2) == 8.64
    assert r(calc.draft_cost_crossover(ROUND_S, en_a) / MS, 1) == 8.7
    assert r(calc.draft_cost_crossover(ROUND_S, en_b, ROUND_S) / MS, 1) == 53.9
    assert r((ROUND_S - lat_b) / MS, 1) == 17.6
    assert r(calc.prep_break_even_tokens(2.0, ROUND_S, lat_b)) == 114
    assert calc.prep_break_even_tokens(2.0, ROUND_S, ROUND_S) == math.inf


def test_request_times_plain_and_speculative():
    assert r(calc.speculative_request_time(256, ROUND_S, 0.0, 0), 2) == 6.72
    spec_round = ROUND_S + 0.1 * MS
    exact = calc.speculative_request_time(256, spec_round, 0.75, 4, prep_s=2.0)
    naive = calc.speculative_request_time(256, spec_round, 0.75, 4, prep_s=2.0,
                                          exact_rounds=False)
    assert r(exact, 2) == 4.22          # the chapter's number: last round cut off at 256
    assert r(naive, 2) == 4.21          # 256 / E[N] misses it by a digit
    assert calc.speculative_expected_rounds(256, 0.0, 4) == 256
    assert calc.speculative_expected_rounds(256, 1.0, 4) == pytest.approx(math.ceil(256 / 5))


def test_expected_rounds_small_cases_by_hand():
    # one token to go: always one round; two tokens, m = 1, a: 1 + (1 - a)
    assert calc.speculative_expected_rounds(1, 0.3, 1) == pytest.approx(1.0)
    assert calc.speculative_expected_rounds(2, 0.3, 1) == pytest.approx(1.7)
    # conditional acceptances as a sequence give the same as a constant one
    assert calc.speculative_expected_rounds(50, [0.75] * 4) == pytest.approx(
        calc.speculative_expected_rounds(50, 0.75, 4))


# --- 8.5.3 -----------------------------------------------------------------------------------

def test_draft_forward_and_serial_vs_parallel():
    read = calc.round_read_bytes(QWEN3_8B, 1, 2048)
    assert r(read / 1e9, 2) == 15.44
    bw = calc.effective_read_bandwidth(read, ROUND_S)
    assert r(bw / 1e9) == 588
    fwd = calc.draft_forward_time(2.10e9, bw)
    assert r(fwd / MS, 2) == 3.57
    serial = calc.draft_generation_time(fwd, 4)
    parallel = calc.draft_generation_time(fwd, 4, parallel=True)
    assert serial == pytest.approx(4 * fwd) and parallel == fwd
    assert abs(serial / MS - 14.28) < 0.01   # the text multiplies the rounded 3.57
    assert r(calc.speculative_latency_per_token(ROUND_S, 3, serial) / MS, 1) == 13.5
    assert r(calc.speculative_latency_per_token(ROUND_S, 3, parallel) / MS, 1) == 9.9
    assert r(calc.speculative_latency_per_token(ROUND_S, 2, parallel) / MS, 1) == 14.9
    assert r((serial - parallel) / MS, 1) == 10.7
    assert calc.draft_generation_time(fwd, 0) == 0.0
    with pytest.raises(TypeError, match="^parallel"):
        calc.draft_generation_time(fwd, 4, parallel="yes")



def test_four_stage_round_adds_up_to_the_chapter_rounds():
    fwd = calc.draft_forward_time(2.10e9, calc.effective_read_bandwidth(
        calc.round_read_bytes(QWEN3_8B, 1, 2048), ROUND_S))
    for draft, per_token in ((calc.draft_generation_time(fwd, 4), 13.5),
                             (calc.draft_generation_time(fwd, 4, parallel=True), 9.9)):
        stages = calc.speculative_round_stages(draft, ROUND_S)
        assert [s["stage"] for s in stages] == ["draft generation", "verification preparation",
                                                "target verification", "output determination"]
        assert stages[0]["start_s"] == 0 and stages[2]["duration_s"] == ROUND_S
        for before, after in zip(stages, stages[1:]):
            assert after["start_s"] == before["end_s"]     # one after another, no overlap
        assert r(stages[-1]["end_s"] / 3 / MS, 1) == per_token   # 8.5.3: 3 tokens per round
    padded = calc.speculative_round_stages(3.57 * MS, ROUND_S, prep_s=0.5 * MS, decide_s=0.2 * MS)
    assert padded[-1]["end_s"] == pytest.approx((3.57 + 26.26 + 0.5 + 0.2) * MS)
    with pytest.raises(ValueError, match="^verify_s"):
        calc.speculative_round_stages(3.57 * MS, 0.0)

# --- 8.5.4 / Exercise 8-7 --------------------------------------------------------------------

def test_padded_draft_timing_makes_five_cost_like_eight():
    t = lambda m, g: draft_round_time(m, 26.3 * MS, 3.6 * MS, g)  # noqa: E731
    assert t(4, 1) == pytest.approx(40.7 * MS)
    assert t(5, 4) == pytest.approx(t(8, 4)) == pytest.approx(55.1 * MS)
    assert t(4, 4) == pytest.approx(t(4, 1))
    assert best_draft_length(0.75, [4, 5], 26.3 * MS, 3.6 * MS, group=4) == 4
    gain = calc.marginal_draft_gain(0.75, 5, 26.3 * MS, 3.6 * MS, group=4)
    assert gain["added_tokens"] == pytest.approx(0.75 ** 5)
    assert gain["added_s"] == pytest.approx(14.4 * MS)
    assert not gain["helps"]
    assert gain["marginal_s_per_token"] > gain["current_s_per_token"]


def test_draft_length_table_rows():
    rows = calc.draft_length_table(0.75, [1, 2, 4, 8], 26.3 * MS, 3.6 * MS)
    assert [row["draft_len"] for row in rows] == [1, 2, 4, 8]
    for row in rows:
        assert row["latency_per_token_s"] == pytest.approx(row["round_s"] / row["expected_tokens"])


def test_marginal_condition_matches_direct_comparison():
    # the condition dT/dN < T/N is exactly "the longer draft has lower latency per token"
    for m in range(1, 9):
        for group in (1, 4):
            gain = calc.marginal_draft_gain(0.75, m, 26.3 * MS, 3.6 * MS, group)
            rows = calc.draft_length_table(0.75, [m - 1, m], 26.3 * MS, 3.6 * MS, group)
            direct = rows[1]["latency_per_token_s"] < rows[0]["latency_per_token_s"]
            assert gain["helps"] == direct


def test_marginal_gain_with_conditional_acceptances():
    gain = calc.marginal_draft_gain([0.9, 0.8, 0.5], 3, 26.3 * MS, 3.6 * MS)
    assert gain["added_tokens"] == pytest.approx(0.9 * 0.8 * 0.5)
    with pytest.raises(ValueError, match="^acceptance"):
        calc.marginal_draft_gain([0.9, 0.8], 3, 26.3 * MS, 3.6 * MS)


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="^round_tokens"):
        calc.mean_latency_per_token([1.0, 1.0], [1])
    with pytest.raises(ValueError, match=r"^round_tokens\[0\]"):
        calc.mean_latency_per_token([1.0], [0])
    with pytest.raises(ValueError, match="^draft_probs"):
        calc.speculative_acceptance_rate(P_TOY, (0.5, 0.6))
    with pytest.raises(ValueError, match="^draft_probs"):
        calc.speculative_acceptance_rate(P_TOY, (0.2, 0.3, 0.5))
    with pytest.raises(ValueError, match="^expected_tokens"):
        calc.speculative_latency_per_token(ROUND_S, 0.5)


# --- properties ------------------------------------------------------------------------------

probs = st.floats(0.0, 1.0)
draft_lens = st.integers(0, 8)


@settings(max_examples=60, deadline=None)
@given(a=probs, m=draft_lens)
def test_output_distribution_is_a_distribution_with_mean_E_N(a, m):
    dist = speculative_output_distribution(a, m)
    assert len(dist) == m + 1
    assert sum(dist) == pytest.approx(1.0)
    mean = sum(k * p for k, p in enumerate(dist, start=1))
    assert mean == pytest.approx(calc.speculative_expected_tokens(a, m))
    assert 1.0 - 1e-12 <= mean <= m + 1 + 1e-12


@settings(max_examples=40, deadline=None)
@given(a=probs, m=st.integers(0, 6), g=st.integers(1, 120))
def test_expected_rounds_obey_walds_bounds(a, m, g):
    en = calc.speculative_expected_tokens(a, m)
    rounds = calc.speculative_expected_rounds(g, a, m)
    assert g / en - 1e-9 <= rounds <= (g + m) / en + 1e-9
    assert rounds <= g + 1e-9


@settings(max_examples=60, deadline=None)
@given(p=st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5),
       q=st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5))
def test_acceptance_plus_resampling_gives_the_target(p, q):
    n = min(len(p), len(q))
    p = [x / sum(p[:n]) for x in p[:n]]
    q = [x / sum(q[:n]) for x in q[:n]]
    a = calc.speculative_acceptance_rate(p, q)
    assert 0.0 <= a <= 1.0 + 1e-12
    assert a == pytest.approx(calc.speculative_acceptance_rate(q, p))
    residual = calc.speculative_residual_distribution(p, q)
    for x in range(n):
        assert min(p[x], q[x]) + (1 - a) * residual[x] == pytest.approx(p[x], abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(times=st.lists(st.floats(1e-4, 1.0), min_size=1, max_size=6),
       toks=st.lists(st.integers(1, 9), min_size=6, max_size=6))
def test_mean_latency_is_a_weighted_mean_of_round_ratios(times, toks):
    toks = toks[:len(times)]
    ratios = [t / n for t, n in zip(times, toks)]
    mean = calc.mean_latency_per_token(times, toks)
    assert min(ratios) - 1e-12 <= mean <= max(ratios) + 1e-12


@settings(max_examples=60, deadline=None)
@given(en=st.floats(1.0, 9.0), verify=st.floats(1e-3, 0.1))
def test_crossover_cost_gives_exactly_the_plain_latency(en, verify):
    q = calc.draft_cost_crossover(verify, en)
    assert q >= -1e-15
    assert calc.speculative_latency_per_token(verify, en, max(q, 0.0)) == pytest.approx(verify)


def test_ledger_entries_of_8_5_agree_and_are_prefixed():
    from companion.ledger_entries import ch08_5

    entries = ch08_5.entries()
    assert len(entries) >= 35
    for e in entries:
        assert e.id.startswith(e.section + "/") and e.section.startswith("8.5.")
        assert e.agrees or e.note, e.id
        if e.rounding != "printed":
            assert e.note, e.id


# --- 8.5.4 under load (issue 24 item 1b): references the companion did not write --------------

def test_verification_ridge_batch_on_the_rtx_pro_6000():
    from companion.specs import QWEN3_8B, RTX_PRO_6000
    b = calc.verification_ridge_batch(QWEN3_8B, RTX_PRO_6000, 4)
    # BF16: one row of read-once matrices is 2 FLOP per 2 bytes, so b (m + 1) rows reach the
    # ridge 503.8e12 / 1792e9 = 281 FLOP/byte at b = 281 / 5
    assert b == pytest.approx(503.8e12 / 1792e9 / 5)
    assert math.floor(b) == 56


def test_verification_under_load_is_the_rooflines_max():
    from companion.formulas.core import attainable_flops, kv_bytes_per_token
    from companion.specs import QWEN3_8B, RTX_PRO_6000
    m, hw = QWEN3_8B, RTX_PRO_6000
    for b, d, L in ((1, 4, 2048), (56, 4, 0), (128, 4, 0), (128, 4, 512), (64, 7, 128)):
        r = calc.verification_under_load(m, hw, b, d, L)
        n_bytes = m.streamed_weight_bytes + b * L * kv_bytes_per_token(m)
        flops = b * verification_flops(m, d + 1, L)
        assert r["verify_s"] == pytest.approx(flops / attainable_flops(flops / n_bytes, hw))
        assert (r["bound"] == "compute") == (b > r["compute_bound_from_batch"])
    # below the ridge the extra rows are free; past it they cost time
    assert calc.verification_under_load(m, hw, 56, 4, 0)["verify_over_plain"] == 1.0
    assert calc.verification_under_load(m, hw, 64, 4, 0)["verify_over_plain"] > 1.1
    # with 2,048 tokens of live KV per request the read grows as fast as the compute
    assert math.isinf(calc.verification_under_load(m, hw, 64, 4, 2048)["compute_bound_from_batch"])


def test_draft_weights_come_out_of_the_kv_budget():
    from companion.specs import QWEN3_8B
    from companion.units import GiB, MiB
    r = calc.draft_kv_budget(12 * GiB, 2.10e9, QWEN3_8B, 2048, 256)
    assert r["kv_left_bytes"] == pytest.approx(12 * GiB - 2.10e9)
    # a short request holds 2,303 tokens = 144 blocks of 16 x 144 KiB = 324 MiB (8.1.2)
    assert r["requests_before"] == 12 * 1024 // 324 == 37
    assert r["requests_after"] == int((12 * GiB - 2.10e9) // (324 * MiB)) == 31
