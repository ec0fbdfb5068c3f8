"""companion.sim.speculative: greedy verification (Figure 8-29), rejection sampling that keeps
the target distribution (8.5.1, chi-square), and outputs per round (8.5.2, 17 §10)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from companion import calc
from companion.sim.speculative import (acceptance_probabilities, acceptance_rate,
                                       expected_tokens_per_round, output_distribution,
                                       residual_distribution, simulate_rounds,
                                       speculative_round, tokens_per_round_distribution,
                                       verify_greedy)

P = [0.25, 0.75]      # 8.5.1: p(A) = 1/4, p(B) = 3/4
ALWAYS_A = [1.0, 0.0]
ALWAYS_B = [0.0, 1.0]


# --- greedy verification ---------------------------------------------------------------------------

def test_figure_8_29_third_token_diverges():
    r = verify_greedy([11, 12, 13, 14], [11, 12, 99, 15, 16])
    assert r.accepted == 2 and r.correction == 99 and r.bonus is None
    assert r.output == (11, 12, 99) and len(r.output) == 3
    assert r.discarded == 2
    assert [s["verdict"].split(":")[0] for s in r.steps] == ["accept", "accept", "reject",
                                                              "discard"]


def test_greedy_all_match_gives_bonus():
    r = verify_greedy([1, 2, 3, 4], [1, 2, 3, 4, 5])
    assert r.output == (1, 2, 3, 4, 5) and r.bonus == 5 and r.discarded == 0
    r = verify_greedy([1, 2, 3, 4], [1, 2, 3, 4])  # no prediction after the draft
    assert r.output == (1, 2, 3, 4) and r.bonus is None


def test_greedy_first_mismatch_still_emits_one_token():
    r = verify_greedy([5, 6], [7, 6, 1])
    assert r.output == (7,) and r.accepted == 0 and r.discarded == 2


def test_8_5_4_single_accepted_draft_discards_m_minus_1():
    for m, discarded in ((7, 6), (15, 14)):
        draft = list(range(1, m + 1))
        r = verify_greedy(draft, [1] + [0] * m)
        assert r.discarded == discarded and len(r.output) == 2


def test_verify_greedy_rejects_bad_input():
    with pytest.raises(ValueError, match="draft_tokens"):
        verify_greedy([], [1])
    with pytest.raises(ValueError, match="target_tokens"):
        verify_greedy([1, 2], [1])
    with pytest.raises(TypeError, match="target_tokens"):
        verify_greedy([1, 2], ["a", "b"])


@given(draft=st.lists(st.integers(0, 3), min_size=1, max_size=8), data=st.data())
def test_greedy_output_is_accepted_prefix_plus_one(draft, data):
    target = data.draw(st.lists(st.integers(0, 3), min_size=len(draft) + 1,
                                max_size=len(draft) + 1))
    r = verify_greedy(draft, target)
    assert len(r.output) == r.accepted + 1
    assert list(r.output) == target[:len(r.output)]  # greedy output = the target's own choices
    assert r.accepted + r.discarded == len(draft)


# --- exact quantities ---------------------------------------------------------------------------------

def test_two_symbol_acceptance_and_residual():
    assert acceptance_rate(P, ALWAYS_A) == pytest.approx(1 / 4)
    assert acceptance_rate(P, ALWAYS_B) == pytest.approx(3 / 4)
    assert acceptance_probabilities(P, ALWAYS_A)[0] == pytest.approx(1 / 4)
    assert acceptance_probabilities(P, ALWAYS_B)[1] == pytest.approx(3 / 4)
    assert np.allclose(residual_distribution(P, ALWAYS_A), [0, 1])  # reject A -> output B
    assert np.allclose(residual_distribution(P, ALWAYS_B), [1, 0])  # reject B -> output A
    for q in (ALWAYS_A, ALWAYS_B, [0.5, 0.5], P):
        assert np.allclose(output_distribution(P, q), P)


def test_expected_tokens_8_5_2_and_17_10():
    assert round(expected_tokens_per_round(P, ALWAYS_A, 4), 2) == 1.33
    assert round(expected_tokens_per_round(P, ALWAYS_B, 4), 2) == 3.05
    assert round(expected_tokens_per_round([0.7, 0.3], [1, 0], 4), 2) == 2.77
    dist = tokens_per_round_distribution([0.7, 0.3], [1, 0], 4)
    tail = dist[::-1].cumsum()[::-1]
    assert np.allclose(tail, [1, 0.7, 0.49, 0.343, 0.2401])
    assert dist.sum() == pytest.approx(1)
    assert expected_tokens_per_round(P, ALWAYS_A, 0) == 1.0


@settings(max_examples=60, deadline=None)
@given(raw_p=st.lists(st.floats(0.01, 1), min_size=2, max_size=6), data=st.data(),
       m=st.integers(0, 8))
def test_expected_tokens_in_one_to_m_plus_one(raw_p, data, m):
    raw_q = data.draw(st.lists(st.floats(0.01, 1), min_size=len(raw_p), max_size=len(raw_p)))
    p = np.array(raw_p) / sum(raw_p)
    q = np.array(raw_q) / sum(raw_q)
    e = expected_tokens_per_round(p, q, m)
    assert 1 <= e <= m + 1 + 1e-12
    assert e == pytest.approx(calc.speculative_expected_tokens(acceptance_rate(p, q), m))
    assert np.allclose(output_distribution(p, q), p)
    dist = tokens_per_round_distribution(p, q, m)
    assert e == pytest.approx((np.arange(1, m + 2) * dist).sum())


def test_distribution_validation():
    with pytest.raises(ValueError, match="p"):
        acceptance_rate([0.5, 0.6], ALWAYS_A)
    with pytest.raises(ValueError, match="q"):
        acceptance_rate(P, [-0.5, 1.5])
    with pytest.raises(ValueError, match="q"):
        acceptance_rate(P, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="p"):
        expected_tokens_per_round([P, P], ALWAYS_A, 4)  # needs m + 1 = 5 rows
    with pytest.raises(TypeError, match="rng"):
        simulate_rounds(P, ALWAYS_A, 4, 10, rng=42)


# --- Monte Carlo ----------------------------------------------------------------------------------------

N = 300_000


@pytest.mark.parametrize("q,expected", [(ALWAYS_A, 1.33), (ALWAYS_B, 3.05)])
def test_monte_carlo_tokens_per_round_matches_calc(q, expected):
    runs = simulate_rounds(P, q, 4, N, seed=2024)
    exact = calc.speculative_expected_tokens(acceptance_rate(P, q), 4)
    se = runs.tokens_per_round.std() / np.sqrt(N)
    assert abs(runs.mean_tokens - exact) < 4 * se
    assert round(runs.mean_tokens, 2) == pytest.approx(expected, abs=0.01)
    # and the whole distribution of N
    observed = np.bincount(runs.tokens_per_round, minlength=6)[1:]
    assert stats.chisquare(observed, N * tokens_per_round_distribution(P, q, 4)).pvalue > 1e-3


@pytest.mark.parametrize("q", [ALWAYS_A, ALWAYS_B, [0.6, 0.4]])
def test_emitted_tokens_follow_the_target(q):
    runs = simulate_rounds(P, q, 4, N, seed=7)
    tokens = runs.emitted_tokens()
    for sample in (tokens, runs.tokens_at(0), runs.tokens_at(2)):
        observed = np.bincount(sample, minlength=2)
        assert stats.chisquare(observed, len(sample) * np.array(P)).pvalue > 1e-3


def test_random_distributions_keep_the_target():
    rng = np.random.default_rng(11)
    for trial in range(3):
        p = rng.dirichlet(np.ones(6))
        q = rng.dirichlet(np.ones(6) * 0.5)
        runs = simulate_rounds(p, q, 3, 200_000, seed=trial)
        tokens = runs.emitted_tokens()
        assert stats.chisquare(np.bincount(tokens, minlength=6), len(tokens) * p).pvalue > 1e-3
        exact = expected_tokens_per_round(p, q, 3)
        assert abs(runs.mean_tokens - exact) < 4 * runs.tokens_per_round.std() / np.sqrt(200_000)


def test_per_position_distributions():
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(4), size=3)  # m + 1 = 3 rows
    q = rng.dirichlet(np.ones(4), size=2)
    runs = simulate_rounds(p, q, 2, 200_000, seed=3)
    for j in range(3):
        sample = runs.tokens_at(j)
        assert stats.chisquare(np.bincount(sample, minlength=4), len(sample) * p[j]).pvalue > 1e-3
    exact = calc.speculative_expected_tokens([acceptance_rate(p[0], q[0]),
                                              acceptance_rate(p[1], q[1])])
    assert expected_tokens_per_round(p, q, 2) == pytest.approx(exact)


def test_seeding_is_reproducible_and_rng_is_used():
    a = simulate_rounds(P, [0.5, 0.5], 4, 1000, seed=9)
    b = simulate_rounds(P, [0.5, 0.5], 4, 1000, seed=9)
    assert np.array_equal(a.emitted, b.emitted)
    c = simulate_rounds(P, [0.5, 0.5], 4, 1000, rng=np.random.default_rng(9))
    assert np.array_equal(a.emitted, c.emitted)


def test_emitted_layout():
    runs = simulate_rounds(P, [0.5, 0.5], 4, 5000, seed=1)
    for row, k, draft in zip(runs.emitted, runs.accepted, runs.draft):
        assert list(row[:k]) == list(draft[:k])
        assert row[k] >= 0 and (row[k + 1:] == -1).all()


def test_speculative_round_trace():
    r = speculative_round(P, ALWAYS_B, 4, seed=3)
    assert len(r.emitted) == r.accepted + 1
    assert all(a == pytest.approx(0.75) for a in r.alpha)
    for step in r.steps[:r.accepted]:
        assert step["verdict"] == "accept" and step["u"] < step["alpha"]
    if r.accepted < 4:
        assert r.steps[r.accepted]["u"] >= r.steps[r.accepted]["alpha"]
        assert r.emitted[-1] == 0  # rejected B -> the residual is all A
    r0 = speculative_round(P, ALWAYS_A, 0, seed=1)
    assert r0.accepted == 0 and len(r0.emitted) == 1 and r0.steps[-1]["verdict"].startswith("bonus")
