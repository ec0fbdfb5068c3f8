"""The fuller models beside 8.3, 8.4 and 8.6's simplified ones (issue 24), against references
this companion did not write: the public Qwen3-8B config.json counted by hand, the roofline's
own max(), hand computations from the chapter's stated inputs, the discrete uniform
distribution, Pollaczek-Khinchine and Erlang's M/D/1 results checked against a seeded
simulation, and brute-force enumeration."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from companion import calc
from companion.chapters import ch08
from companion.formulas import kv_management as km
from companion.formulas import limits_compression as lc
from companion.formulas import limits_kv as lk
from companion.formulas import limits_serving as ls
from companion.sim import offload_pipeline as op
from companion.sim import queueing as qs
from companion.specs import QWEN3_8B, RTX_PRO_6000
from companion.units import MiB, ms

CONFIG = json.loads((Path(calc.__file__).parent / "data" / "hf_configs" /
                     "qwen3-8b.json").read_text())


def _config_counts():
    """Layer-matrix parameters, D_w in bytes and attention FLOP per pair, from config.json."""
    h, f, n_l = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["num_hidden_layers"]
    q, kv, hd = CONFIG["num_attention_heads"], CONFIG["num_key_value_heads"], CONFIG["head_dim"]
    vocab = CONFIG["vocab_size"]
    per_layer_matrices = h * q * hd * 2 + h * kv * hd * 2 + 3 * h * f
    per_layer_norms = 2 * h + 2 * hd                    # input/post norms, q_norm and k_norm
    layers = n_l * (per_layer_matrices + per_layer_norms)
    streamed = layers + h + vocab * h                   # final norm and the untied lm_head
    return n_l * per_layer_matrices, 2 * streamed, 4 * hd * q * n_l


# --- 8.3.1 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("p,n", [(1, 3), (2, 2), (4, 2), (4, 3), (5, 2)])
def test_tail_waste_distribution_matches_enumeration(p, n):
    # every combination of lengths over 3 whole cycles of the block size: each residue is
    # equally frequent, which is what "lengths land anywhere in a block" means
    counts = {}
    lengths = range(1, 3 * p + 1)
    for combo in itertools.product(lengths, repeat=n):
        w = sum(calc.kv_blocks_needed(L, p) * p - L for L in combo)
        counts[w] = counts.get(w, 0) + 1
    total = sum(counts.values())
    dist = lk.tail_waste_distribution(p, n)
    assert len(dist.pmf) == n * (p - 1) + 1
    for w, prob in enumerate(dist.pmf):
        assert prob == pytest.approx(counts.get(w, 0) / total, abs=1e-12)
    # the discrete uniform's mean and variance, summed over n independent sequences
    assert dist.mean_tokens == pytest.approx(n * (p - 1) / 2)
    assert dist.std_tokens == pytest.approx(math.sqrt(n * (p * p - 1) / 12))
    assert dist.bound_tokens == n * (p - 1)            # 8.3.1: at most p - 1 each


def test_tail_waste_mean_is_half_the_bound_and_quantiles_are_ordered():
    d = lk.tail_waste_distribution(16, 16)
    assert d.mean_tokens == d.bound_tokens / 2
    assert d.quantile(0.0) == 0 or d.pmf[0] > 0
    assert d.quantile(0.05) <= d.quantile(0.5) <= d.quantile(0.95) <= d.bound_tokens
    assert d.quantile(0.5) == pytest.approx(d.mean_tokens, abs=1)   # symmetric


def test_tail_waste_distribution_against_seeded_lengths():
    rng = np.random.default_rng(3)
    p, n = 16, 4
    lengths = rng.integers(1, 10_000, size=(40_000, n))
    waste = (-lengths % p).sum(axis=1)
    d = lk.tail_waste_distribution(p, n)
    assert waste.mean() == pytest.approx(d.mean_tokens, rel=0.02)
    assert waste.std() == pytest.approx(d.std_tokens, rel=0.03)


# --- 8.3.4 ---------------------------------------------------------------------------------------

def test_recompute_compute_term_is_the_chapters_and_counts_flops_from_config():
    matrices, _, per_pair = _config_counts()
    n = 6144
    parts = lk.prefix_recompute_roofline(QWEN3_8B, RTX_PRO_6000, n, km.RECOMPUTE_EFFICIENCY)
    flops = 2 * matrices * n + per_pair * n * (n + 1) / 2
    assert flops == pytest.approx(96.5e12, rel=1e-3)                  # 8.3.4: 96.5 TFLOP
    expected = flops / (km.RECOMPUTE_EFFICIENCY * 503.8e12)
    assert parts.compute_s == pytest.approx(expected, rel=1e-4)       # norms: < 0.01%
    assert parts.compute_s == km.prefix_recompute_s(QWEN3_8B, RTX_PRO_6000, n,
                                                    km.RECOMPUTE_EFFICIENCY)


@pytest.mark.parametrize("n,eff", [(6144, 0.6216), (2048, 0.6216), (256, 0.6216), (256, 1.0),
                                   (64, 0.5), (32768, 1.0)])
def test_recompute_is_the_roofline_max_of_compute_and_one_weight_read(n, eff):
    matrices, streamed_bytes, per_pair = _config_counts()
    assert streamed_bytes == 15_136_811_008                           # the chapter's D_w
    kv = math.ceil(n / 16) * 16 * 2 * 36 * 8 * 128 * 2
    memory = (streamed_bytes + kv) / 1792e9
    compute = (2 * matrices * n + per_pair * n * (n + 1) / 2) / (eff * 503.8e12)
    parts = lk.prefix_recompute_roofline(QWEN3_8B, RTX_PRO_6000, n, eff)
    assert parts.memory_s == pytest.approx(memory, rel=1e-12)
    assert parts.time_s == pytest.approx(max(compute, memory), rel=1e-4)
    assert parts.memory_bound == (memory > compute)


def test_a_short_prefix_at_full_efficiency_is_memory_bound_and_the_chapters_are_not():
    a = lk.prefix_recompute_roofline(QWEN3_8B, RTX_PRO_6000, 6144, km.RECOMPUTE_EFFICIENCY)
    b = lk.prefix_recompute_roofline(QWEN3_8B, RTX_PRO_6000, 2048, km.RECOMPUTE_EFFICIENCY)
    short = lk.prefix_recompute_roofline(QWEN3_8B, RTX_PRO_6000, 256, 1.0)
    assert not a.memory_bound and not b.memory_bound
    assert short.memory_bound and short.time_s > short.compute_s


def test_transfer_pieces_and_the_piece_cost_that_doubles_a_fetch_by_hand():
    # 6144 tokens in 16-token blocks = 384 blocks, 36 layers, K and V apart
    assert lk.kv_transfer_pieces(QWEN3_8B, 6144) == 384 * 36 * 2
    assert lk.kv_transfer_pieces(QWEN3_8B, 6144, pieces_per_block_layer=1) == 384 * 36
    alpha = lk.piece_cost_doubling_fetch_s(QWEN3_8B, 6144, 64e9)
    assert alpha == pytest.approx(864 * MiB / 64e9 / 27_648)
    fetch = lk.prefix_retention_fuller(QWEN3_8B, RTX_PRO_6000, 6144, hit_prob=0.5,
                                       efficiency=0.6216, link_bytes_per_s=64e9,
                                       piece_cost_s=alpha).fetch_s
    assert fetch == pytest.approx(2 * 864 * MiB / 64e9)


def test_fuller_retention_reduces_to_the_chapters_and_drops_the_break_even():
    kw = dict(hit_prob=0.5, efficiency=km.RECOMPUTE_EFFICIENCY, link_bytes_per_s=64e9)
    chapter = km.prefix_retention(QWEN3_8B, RTX_PRO_6000, 6144, **kw)
    same = lk.prefix_retention_fuller(QWEN3_8B, RTX_PRO_6000, 6144, roofline_floor=False,
                                      blocking_writeback=True, **kw)
    assert same == chapter
    full = lk.prefix_retention_fuller(QWEN3_8B, RTX_PRO_6000, 6144, **kw)
    # by hand: the write-back off the critical path, V = p (T_r - T_f)
    assert full.maintain_s == 0
    assert full.value_s == pytest.approx(0.5 * (chapter.recompute_s - chapter.fetch_s))
    assert full.value_s - chapter.value_s == pytest.approx(chapter.maintain_s)
    assert full.break_even_hit_prob == 0
    assert chapter.break_even_hit_prob == pytest.approx(0.048, abs=5e-4)   # 8.3.4's 4.8%


# --- 8.4.2 ---------------------------------------------------------------------------------------

def test_read_saving_from_rounds_by_hand_from_experiment_8_1():
    # one 8K context at batch 1 reads D_w + 8192 k: exactly the batch-4 2K column (16.34 GB,
    # 26.62 ms); 540 MiB less falls between it and the batch-1 column (15.44 GB, 26.26 ms)
    _, d_w, _ = _config_counts()
    k = 2 * 36 * 8 * 128 * 2
    d = d_w + 8192 * k
    x1, y1 = d_w + 1 * 2048 * k, 26.26e-3
    x4, y4 = d_w + 4 * 2048 * k, 26.62e-3
    assert d == x4
    saved = 540 * MiB
    low = y1 + (y4 - y1) * (d - saved - x1) / (x4 - x1)
    assert lc.read_saving_from_rounds_s(saved, d) == pytest.approx(y4 - low, rel=1e-9)
    # the chapter's constant-bandwidth price of the same bytes (0.487 ms) is about twice it
    chapter = calc.compressed_read_saving_s(saved, 34.46e9 / 29.63e-3, 0)
    assert chapter == pytest.approx(0.487e-3, abs=1e-6)
    assert lc.read_saving_from_rounds_s(saved, d) < chapter / 2
    # the slope of that segment, as a bandwidth: above the card's 1792 GB/s
    assert lc.marginal_read_bandwidth(d - saved / 2) == pytest.approx((x4 - x1) / (y4 - y1))
    assert lc.marginal_read_bandwidth(d - saved / 2) > 1792e9


def test_read_saving_from_rounds_is_zero_for_no_bytes_and_rejects_too_many():
    assert lc.read_saving_from_rounds_s(0, 20e9) == 0
    with pytest.raises(ValueError, match="saved_bytes"):
        lc.read_saving_from_rounds_s(30e9, 20e9)


# --- 8.4.3 ---------------------------------------------------------------------------------------

def test_compress_transfer_in_one_chunk_is_the_chapters_serial_order():
    size, r, link, dec = 96 * MiB, 0.25, 64e9, 100e9
    assert lc.compress_transfer_pipelined_s(size, r, link, dec, chunks=1) == pytest.approx(
        calc.compress_then_transfer_s(size, r, link, dec))


def test_compress_transfer_pipelined_by_hand_and_its_limit():
    size, r, link, dec = 96 * MiB, 0.25, 64e9, 100e9
    a, d = r * size / link / 4, size / dec / 4        # 4 chunks: the decompressor is slower
    assert lc.compress_transfer_pipelined_s(size, r, link, dec, chunks=4) == pytest.approx(
        a + d + 3 * max(a, d))
    fine = lc.compress_transfer_pipelined_s(size, r, link, dec, chunks=100_000)
    assert fine == pytest.approx(lc.compress_transfer_pipelined_s(size, r, link, dec), rel=1e-4)
    assert lc.compress_transfer_pipelined_s(size, r, link, dec) == max(r * size / link,
                                                                        size / dec)
    # pipelined, compression pays once the decompressor beats the link; serially, only above
    # B / (1 - r) = 85.3 GB/s (8.4.3)
    at = 70e9
    assert lc.compress_transfer_pipelined_s(size, r, link, at) < size / link
    assert calc.compress_then_transfer_s(size, r, link, at) > size / link
    assert lc.min_decompress_pipelined_bytes_per_s(link, r) == link

T_LAYER = 26.26e-3 / 36               # footnote 16: the batch-1 round over 36 layers
COPY_GEN5 = 288 * MiB / 64e9
COPY_C2C = 288 * MiB / 450e9


def test_spread_layers_one_in_four():
    assert op.spread_layers(36, 9) == tuple(range(3, 36, 4))
    assert op.spread_layers(36, 36) == tuple(range(36))
    assert op.spread_layers(36, 0) == ()


@pytest.mark.parametrize("buffers,expected", [
    (0, 26.26e-3 + 9 * COPY_GEN5),                 # every copy waits for its layer
    (1, 9 * (COPY_GEN5 + T_LAYER)),               # each copy waits for the last offloaded layer
    (2, 9 * COPY_GEN5),                            # the link never idles: the chapter's bound
    (4, 9 * COPY_GEN5)])
def test_offload_round_by_hand_over_pcie_gen5(buffers, expected):
    r = op.offload_round(36, op.spread_layers(36, 9), T_LAYER, COPY_GEN5, buffers=buffers)
    assert r.round_s == pytest.approx(expected, rel=1e-9)
    assert r.bound_s == pytest.approx(max(36 * T_LAYER, 9 * COPY_GEN5))
    assert r.round_s >= r.bound_s - 1e-12


@pytest.mark.parametrize("buffers,expected", [(0, 26.26e-3 + 9 * COPY_C2C), (1, 26.26e-3),
                                              (2, 26.26e-3)])
def test_offload_round_by_hand_over_nvlink_c2c(buffers, expected):
    r = op.offload_round(36, op.spread_layers(36, 9), T_LAYER, COPY_C2C, buffers=buffers)
    assert r.round_s == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("n,m,t,c,k", [(36, 9, 1.0, 3.0, 1), (36, 36, 1.0, 0.5, 1),
                                       (12, 3, 2.0, 7.0, 2), (8, 8, 1.0, 1.0, 0),
                                       (10, 5, 1.0, 0.0, 1), (36, 9, 1.0, 20.0, 3)])
def test_offload_round_never_beats_the_bound_and_reaches_a_steady_state(n, m, t, c, k):
    r = op.offload_round(n, op.spread_layers(n, m), t, c, buffers=k)
    assert r.round_s >= max(n * t, m * c) - 1e-9           # the roofline-style bound
    assert r.round_s <= n * t + m * c + 1e-9                # fully serial is the worst case
    assert r.rounds_simulated < 200
    ends = [end for _, _, end in r.layers]
    assert ends[-1] == pytest.approx(r.round_s)


def test_offload_round_with_nothing_offloaded_is_the_compute_round():
    r = op.offload_round(36, (), T_LAYER, COPY_GEN5)
    assert r.round_s == pytest.approx(26.26e-3) and r.copy_s == 0


# --- 8.4.4 ---------------------------------------------------------------------------------------

def test_retry_outcome_one_shared_chance_is_the_geometric_loop():
    for r in (None, 1, 3, 10):
        out = lc.retry_outcome(6.95, [28 / 32], max_attempts=r, check_s=0.5)
        assert out.time_per_correct_s == pytest.approx((6.95 + 0.5) / (28 / 32))
    assert lc.retry_outcome(6.95, [0.875]).time_per_correct_s == pytest.approx(
        calc.expected_time_to_correct_s(6.95, 0.875))
    three = lc.retry_outcome(1.0, [0.875], max_attempts=3)
    assert three.answered_share == pytest.approx(1 - 0.125 ** 3)
    assert three.attempts_per_task == pytest.approx(1 + 0.125 + 0.125 ** 2)


def test_retry_outcome_when_one_task_of_eight_always_fails():
    # 8.4.4: 28 of 32 right under BF16 KV, task 5 wrong in all four runs: 7 tasks always
    # right, 1 always wrong. Three attempts: 7/8 answered, 7 x 1 + 1 x 3 attempts per 8 tasks
    probs = [1.0] * 7 + [0.0]
    out = lc.retry_outcome(2.0, probs, max_attempts=3)
    assert out.answered_share == pytest.approx(7 / 8)
    assert out.attempts_per_task == pytest.approx((7 + 3) / 8)
    assert out.time_per_correct_s == pytest.approx(2.0 * 10 / 7)
    assert math.isinf(lc.retry_outcome(2.0, probs).time_per_task_s)
    # the same with the two-class mixture at s = 1
    chances, weights = lc.systematic_success_probs(0.875, 1.0)
    mix = lc.retry_outcome(2.0, chances, weights=weights, max_attempts=3)
    assert mix == pytest.approx(out)


def test_retry_outcome_against_a_seeded_retry_simulation():
    rng = np.random.default_rng(7)
    chances, weights = lc.systematic_success_probs(0.8, 0.5)
    out = lc.retry_outcome(1.0, chances, weights=weights, max_attempts=4)
    n = 200_000
    p = np.where(rng.random(n) < weights[0], chances[0], chances[1])
    tries = rng.random((n, 4)) < p[:, None]
    answered = tries.any(axis=1)
    used = np.where(answered, tries.argmax(axis=1) + 1, 4)
    assert answered.mean() == pytest.approx(out.answered_share, abs=0.005)
    assert used.mean() == pytest.approx(out.attempts_per_task, rel=0.01)


def test_systematic_share_keeps_the_mean():
    for s in (0.0, 0.3, 1.0):
        chances, weights = lc.systematic_success_probs(0.8125, s)
        assert sum(c * w for c, w in zip(chances, weights)) == pytest.approx(0.8125)


# --- 8.6.1 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_pollaczek_khinchine_against_a_seeded_md1_simulation(rho):
    s = 2.0
    waits = qs.md1_waits(rho / s, s, 400_000, seed=11)
    # P-K for a deterministic service: W_q = rho S / (2 (1 - rho))
    assert ls.md1_mean_wait_s(rho / s, s) == pytest.approx(rho * s / (2 * (1 - rho)))
    assert waits.mean() == pytest.approx(ls.md1_mean_wait_s(rho / s, s), rel=0.04)
    # Erlang's distribution at a few points, below and above one service time
    for t in (0.0, 0.3 * s, 1.5 * s, 3.2 * s):
        assert (waits <= t).mean() == pytest.approx(ls.md1_wait_cdf(t, rho / s, s), abs=0.01)


def test_md1_and_dd1_limits():
    assert ls.md1_wait_cdf(0.0, 0.25, 2.0) == pytest.approx(0.5)     # P(idle) = 1 - rho
    assert math.isinf(ls.md1_mean_wait_s(1.0, 1.0))
    assert ls.dd1_wait_s(0.49, 2.0) == 0 and math.isinf(ls.dd1_wait_s(0.6, 2.0))
    even = qs.md1_waits(0.45, 2.0, 1000, arrivals="even")
    assert even.max() == 0.0


def test_lindley_by_hand():
    assert qs.fifo_waits([0.0, 1.0, 2.0], 1.5).tolist() == [0.0, 0.5, 1.0]
    assert qs.fifo_waits([0.0, 0.0, 5.0], [2.0, 1.0, 1.0]).tolist() == [0.0, 2.0, 0.0]


def test_pollaczek_khinchine_against_the_companions_service_simulator():
    # companion.sim.load admitting one request at a time is an M/D/1 queue: every short
    # request takes the same time alone on its roofline round model
    from companion.sim import load
    alone = load.run_service(load.workload(np.array([0.0]), load.SHORT_REQUEST,
                                           deadline_s=1e9), policy="continuous", max_running=1)
    s = float(alone.finish_s[0] - alone.arrival_s[0])
    lam = 0.4 / s
    run = load.run_service(load.workload(load.poisson_arrivals(lam, 20_000, seed=1),
                                         load.SHORT_REQUEST, deadline_s=1e9),
                           policy="continuous", max_running=1)
    waits = run.admitted_s - run.arrival_s
    assert np.ptp(run.finish_s - run.admitted_s) < 1e-9          # deterministic service
    assert waits.mean() == pytest.approx(ls.md1_mean_wait_s(lam, s), rel=0.06)
    assert (waits <= 0.3 * s).mean() == pytest.approx(ls.md1_wait_cdf(0.3 * s, lam, s),
                                                      abs=0.02)


def test_queue_on_time_for_the_chapters_short_request():
    service = calc.lifecycle_request_time_s(0, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                            ch08.OUTPUT_TOKENS)
    slack = ch08.DEADLINE_S - service
    lam = 0.5 / service
    even = ls.queue_on_time(lam, service, slack, arrivals="even")
    poisson = ls.queue_on_time(lam, service, slack)
    assert even.on_time_share == 1.0 and even.mean_wait_s == 0
    # Erlang below one service time: (1 - rho) e^(lambda t)
    assert poisson.on_time_share == pytest.approx(0.5 * math.exp(lam * slack))
    assert poisson.mean_in_system == pytest.approx(lam * (service + service / 2))  # Little


# --- 8.6.3 ---------------------------------------------------------------------------------------

def test_acceptance_for_tokens_per_round_inverts_the_expected_output():
    for e in (1.5, 3.0, 5.5):
        a = ls.acceptance_for_tokens_per_round(e, 7)
        assert calc.speculative_expected_tokens(a, 7) == pytest.approx(e, rel=1e-9)
    assert ls.acceptance_for_tokens_per_round(1.0, 7) == 0.0
    assert ls.acceptance_for_tokens_per_round(8.0, 7) == 1.0


def test_tokens_per_round_pmf_sums_to_one_with_the_expected_mean():
    pmf = ls.tokens_per_round_pmf(0.7, 4)
    assert sum(pmf) == pytest.approx(1.0)
    assert sum(k * p for k, p in enumerate(pmf, start=1)) == pytest.approx(
        calc.speculative_expected_tokens(0.7, 4))


def test_speculative_rounds_pmf_against_a_seeded_simulation():
    a, m, n = 0.68, 7, 255
    pmf = np.array(ls.speculative_rounds_pmf(n, a, m))
    assert pmf.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(5)
    step = np.array(ls.tokens_per_round_pmf(a, m))
    draws = rng.choice(np.arange(1, m + 2), size=(20_000, n), p=step)
    rounds = (np.cumsum(draws, axis=1) < n).sum(axis=1) + 1
    r = np.arange(len(pmf))
    assert rounds.mean() == pytest.approx((r * pmf).sum(), rel=0.005)
    batch = rounds[:19_984].reshape(-1, 16).max(axis=1)
    cdf = ls.batch_rounds_cdf(n, a, m, 16)
    for q in (90, 95, 100, 105):
        assert (batch <= q).mean() == pytest.approx(cdf[q], abs=0.03)


def test_speculative_rounds_certain_cases_by_hand():
    # every draft accepted: 8 tokens a round, 255 tokens in ceil(255 / 8) = 32 rounds
    assert ls.speculative_rounds_pmf(255, 1.0, 7)[32] == pytest.approx(1.0)
    # none accepted: one token a round
    assert ls.speculative_rounds_pmf(10, 0.0, 7)[10] == pytest.approx(1.0)


def test_batch_rounds_at_the_chapters_setting():
    b = ls.batch_rounds(ch08.OUTPUT_TOKENS - 1, ch08.DFLASH_TOKENS_PER_ROUND, 7, ch08.LONG_BATCH)
    assert b.average_rounds == 85                                   # 8.6.3: 85 rounds
    assert b.one_request_mean == pytest.approx(85, abs=1.5)
    assert b.batch_median > b.average_rounds and b.batch_p99 > b.batch_median
    assert b.within(b.batch_median) >= 0.5 > b.within(b.batch_median - 1)


def test_scheme_d_with_its_slowest_request_by_hand():
    from companion.formulas.serving import SCHEMES, scheme_result
    chapter = scheme_result(SCHEMES["D"])
    slow, rounds = ls.scheme_result_slowest(SCHEMES["D"])
    assert chapter.rounds == 85 and slow.rounds == rounds.batch_median
    assert slow.total_s == pytest.approx(chapter.prefill_s + rounds.batch_median * 27.35e-3)
    assert slow.memory_bytes == chapter.memory_bytes and slow.prefill_s == chapter.prefill_s
    assert slow.energy_j_per_result == pytest.approx(600 * slow.total_s / 16)
    plain, none = ls.scheme_result_slowest(SCHEMES["B"])
    assert none is None and plain == scheme_result(SCHEMES["B"])


def test_speculative_rounds_when_one_round_can_emit_more_than_is_needed():
    # a round of m = 7 drafts can emit up to 8 tokens: a request needing 2 is done in one round
    # unless the first draft is rejected (1 token), then surely in the second. The explorer's
    # short outputs (2-6 tokens) broke the running-total arithmetic once.
    a = 0.6
    assert ls.speculative_rounds_pmf(2, a, 7) == pytest.approx((0.0, a, 1 - a))
    for n in range(1, 10):
        pmf = ls.speculative_rounds_pmf(n, a, 7)
        assert sum(pmf) == pytest.approx(1.0) and min(pmf) >= 0
