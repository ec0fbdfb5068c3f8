"""The fuller models of 17 §7-§10 (issue 24), each held to a reference it did not produce:
the literature's ring all-reduce cost, the chapter's own formulas where the fuller model must
reduce to them, hand computations from the chapter's stated inputs and a real config, the
roofline's own max, and seeded simulations against the closed forms."""

import math

import numpy as np
import pytest

from companion import models, specs
from companion.chapters import ch17
from companion.formulas import communication as comm
from companion.formulas import levers, parallelism, queueing
from companion.formulas.core import (attention_flops_per_pair, decode_step_time,
                                     pipeline_bubble, speculative_expected_tokens)
from companion.sim.load import nearest_rank_percentile
from companion.sim.pipeline import pipeline_run
from companion.sim.queueing import pool_run

HW, M8, M70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B
NVLINK = ch17.H100_NVLINK_BYTES_PER_S


# --- §7 collectives -------------------------------------------------------------------------

def test_ring_allreduce_is_the_alpha_beta_cost():
    # 2(p-1) alpha + 2(p-1)/p n / beta, typed out by hand for p = 4, n = 16 KiB, 1 µs, 900 GB/s
    expected = 6 * 1e-6 + 1.5 * 16384 / 900e9
    assert comm.ring_allreduce_s(16384, 4, hop_latency_s=1e-6,
                                 link_bytes_per_s=900e9) == pytest.approx(expected, rel=1e-12)
    assert comm.ring_allreduce_s(16384, 1, hop_latency_s=1e-6, link_bytes_per_s=900e9) == 0.0


def test_flat_collectives_without_overlap_are_the_chapters_step():
    for tp in (1, 2, 4, 8):
        ours = comm.tp_step_fuller(M70, HW, tp, collectives="flat")
        chapter = parallelism.tp_decode_step(M70, HW, tp)
        assert ours["step_s"] == pytest.approx(chapter["step_s"], rel=1e-12)


def test_chapters_tp4_step_by_hand():
    # 140 GB of weights / 4 / 3.35 TB/s + 160 x 5 µs + 160 x 24 KiB / 900 GB/s
    read = 140e9 / 4 / 3.35e12
    wire = 160 * 2 * 3 / 4 * 8192 * 2 / 900e9
    step = comm.tp_step_fuller(M70, HW, 4, collectives="flat")["step_s"]
    assert step == pytest.approx(read + 160 * 5e-6 + wire, rel=1e-9)


def test_ring_matches_the_flat_floor_at_the_chapters_tp_only():
    flat = comm.tp_step_fuller(M70, HW, 4, collectives="flat")
    ring = comm.tp_step_fuller(M70, HW, 4, collectives="ring")
    assert ring["latency_s"] == pytest.approx(flat["latency_s"], rel=1e-12)
    alpha = 5e-6 / 6
    for tp in (2, 8):
        r = comm.tp_step_fuller(M70, HW, tp, collectives="ring")
        assert r["latency_s"] == pytest.approx(160 * 2 * (tp - 1) * alpha, rel=1e-12)
        # per collective it is the literature's ring cost with the chapter's per-token bytes
        one = comm.ring_allreduce_s(8192 * 2, tp, hop_latency_s=alpha, link_bytes_per_s=NVLINK)
        assert r["comm_s"] == pytest.approx(160 * one, rel=1e-9)


def test_overlap_exposes_only_what_the_reads_cannot_hide():
    pcie = dict(collective_latency_s=ch17.COLLECTIVE_LATENCY_PCIE_S,
                link_bytes_per_s=ch17.H100_PCIE_BYTES_PER_S)
    for tp in (2, 4, 8):
        added = comm.tp_step_fuller(M70, HW, tp, collectives="flat", batch=2, **pcie)
        hidden = comm.tp_step_fuller(M70, HW, tp, collectives="flat", overlap=True, batch=2,
                                     **pcie)
        assert hidden["step_s"] == pytest.approx(max(added["read_s"], added["comm_s"]),
                                                 rel=1e-12)
        # one sequence has no halves to take turns: the collectives stay in the step
        one = comm.tp_step_fuller(M70, HW, tp, collectives="flat", overlap=True, **pcie)
        alone = comm.tp_step_fuller(M70, HW, tp, collectives="flat", **pcie)
        assert one["step_s"] == alone["step_s"] and one["exposed_s"] == one["comm_s"]


# --- §7 pipeline stages ---------------------------------------------------------------------

def test_equal_stages_give_the_chapters_bubble():
    for p in (2, 4, 8):
        for m in (1, 16, 64):
            out = comm.uneven_pipeline([1.0] * p, m)
            assert out["bubble"] == pytest.approx(pipeline_bubble(p, m), rel=1e-12)


def test_uneven_pipeline_by_hand():
    # stages of 1 and 2, three microbatches: 1 + 2 + 2 x 2 = 7; busy 3 x 3 = 9 of 2 x 7
    out = comm.uneven_pipeline([1.0, 2.0], 3)
    assert out["makespan_s"] == 7.0
    assert out["bubble"] == pytest.approx(5 / 14)
    assert out["floor"] == pytest.approx(1 - 1.5 / 2)


@pytest.mark.parametrize("seed", range(6))
def test_uneven_pipeline_matches_a_simulated_run(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(2, 7))
    m = int(rng.integers(1, 25))
    times = rng.uniform(0.5, 2.0, p).tolist()
    run = pipeline_run(times, m)
    closed = comm.uneven_pipeline(times, m)
    assert closed["makespan_s"] == pytest.approx(run["makespan_s"], rel=1e-12)
    assert closed["bubble"] == pytest.approx(run["bubble"], rel=1e-9)


def test_stage_bytes_of_the_real_70b_config():
    cfg = models.load("llama-3.1-70b")
    rows = comm.stage_weight_bytes(cfg, 4)
    # the stages stream the config's D_w between them, every layer once and lm_head once
    assert sum(r["weight_bytes"] for r in rows) == pytest.approx(cfg.streamed_weight_bytes,
                                                                 rel=1e-12)
    assert [r["layers"] for r in rows] == [20, 20, 20, 20]
    assert rows[-1]["weight_bytes"] - rows[0]["weight_bytes"] == pytest.approx(
        2 * (8192 * 128256 + 8192))       # lm_head (hidden x vocabulary) + final norm, BF16
    assert [r["layers"] for r in comm.stage_weight_bytes(cfg, 3)] == [27, 27, 26]
    # the chapter's shape has no separate head: equal stages, the chapter's bubble
    chapter = comm.pp_decode_bubble(M70, HW, 4, 16)
    assert chapter["bubble"] == pytest.approx(pipeline_bubble(4, 16), rel=1e-12)
    assert comm.pp_decode_bubble(cfg, HW, 4, 16)["bubble"] > pipeline_bubble(4, 16)


# --- §8 the KV hop --------------------------------------------------------------------------

def test_kv_whole_transfer_is_the_chapters():
    out = comm.kv_layered_transfer(M70, HW, 8000, ch17.RDMA_400G_BYTES_PER_S, tp=4)
    assert out["whole_s"] == pytest.approx(2 * 80 * 8 * 128 * 2 * 8000 / 50e9, rel=1e-12)
    assert out["whole_s"] == pytest.approx(parallelism.kv_transfer_s(M70, 8000, 50e9))


@pytest.mark.parametrize("link", [50e9, 5e9, 0.5e9])
def test_layered_transfer_matches_a_simulated_two_stage_run(link):
    out = comm.kv_layered_transfer(M70, HW, 8000, link, tp=4, links=2)
    n = M70.n_layers
    run = pipeline_run([out["layer_prefill_s"], out["layer_ship_s"]], n)
    assert out["exposed_s"] == pytest.approx(run["makespan_s"] - n * out["layer_prefill_s"],
                                             rel=1e-9)
    assert out["spread_s"] == pytest.approx(out["whole_s"] / 2)


# --- §8 queueing ----------------------------------------------------------------------------

def test_erlang_c_reference_values():
    assert queueing.erlang_c(1, 0.6) == pytest.approx(0.6)           # M/M/1: rho
    assert queueing.erlang_c(2, 1.0) == pytest.approx(1 / 3)         # by hand
    assert queueing.erlang_c(20, 20.0) == 1.0                        # saturated


@pytest.mark.parametrize("servers,load", [(5, 4.0), (22, 20.0)])
def test_pool_wait_matches_a_seeded_simulation(servers, load):
    service = 0.2
    rate = load / service
    closed = queueing.pool_wait(rate, service, servers, percentile=90)
    sim = pool_run(rate, service, servers, n_requests=200_000, seed=7, warmup=5000)
    assert sim["mean_wait_s"] == pytest.approx(closed["mean_wait_s"], rel=0.08)
    assert sim["waited_share"] == pytest.approx(closed["wait_prob"], abs=0.02)
    assert nearest_rank_percentile(sim["wait_s"], 90) == pytest.approx(
        closed["percentile_wait_s"], rel=0.08)


def test_prefill_pool_sizes():
    out = queueing.prefill_pool_for_ttft(100, 2000)
    # the chapter's division: 100 x 2,000 / 10,000 = 20 groups, all of them busy all the time
    assert out["chapter_groups"] == parallelism.disaggregated_pools(100, 2000, 250)[
        "prefill_groups"]
    assert out["chapter"]["stable"] is False
    c = out["groups"]
    target = ch17.TTFT_P90_TARGET_S
    # sized by the p90 of wait plus prefill: the smallest pool whose share over 500 ms is <= 10%
    assert queueing.pool_time_tail(100, 0.2, c, target) <= 0.1
    assert queueing.pool_time_tail(100, 0.2, c - 1, target) > 0.1
    assert out["fuller"]["percentile_time_s"] <= target
    assert queueing.pool_wait(100, 0.2, c - 1)["percentile_time_s"] > target
    # a p90 wait plus the mean prefill would have accepted the smaller pool: percentiles do
    # not add, so that shortcut misses the target
    short = queueing.pool_wait(100, 0.2, c - 1)
    assert short["percentile_wait_s"] + 0.2 <= target < short["percentile_time_s"]


def test_no_pool_beats_the_prefills_own_percentile():
    # the limit of many groups: no wait, the exponential prefill alone, p90 = service x ln 10
    out = queueing.prefill_pool_for_ttft(100, 2000)
    assert out["service_percentile_s"] == pytest.approx(0.2 * math.log(10), rel=1e-12)
    many = queueing.pool_wait(100, 0.2, 400)
    assert many["percentile_time_s"] == pytest.approx(0.2 * math.log(10), rel=1e-6)
    assert queueing.prefill_pool_for_ttft(100, 2000, ttft_p90_target_s=0.45)["groups"] is None


def test_time_in_pool_of_one_server_is_the_textbook_mm1():
    # M/M/1: the time in system is exponential at rate mu - lambda (Gross and Harris, ch. 2)
    lam, s = 3.0, 0.2
    for t in (0.0, 0.1, 0.5, 2.0):
        assert queueing.pool_time_tail(lam, s, 1, t) == pytest.approx(
            math.exp(-(1 / s - lam) * t), rel=1e-12)
    assert queueing.pool_wait(lam, s, 1)["percentile_time_s"] == pytest.approx(
        math.log(10) / (1 / s - lam), rel=1e-9)


def test_time_in_pool_matches_a_numerical_convolution():
    # P(W + S > t) with W's atom at 0 and exponential tail, S exponential, integrated on a grid
    lam, s, c = 100.0, 0.2, 23
    prob = queueing.erlang_c(c, lam * s)
    theta, mu, t = c / s - lam, 1 / s, 0.5
    x = np.linspace(0.0, t, 200_001)
    density = prob * theta * np.exp(-theta * x) * np.exp(-mu * (t - x))
    integral = float(np.sum((density[1:] + density[:-1]) / 2 * np.diff(x)))
    expected = (1 - prob) * math.exp(-mu * t) + prob * math.exp(-theta * t) + integral
    assert queueing.pool_time_tail(lam, s, c, t) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("servers,load", [(1, 0.7), (5, 4.0), (23, 20.0)])
def test_time_in_pool_matches_a_seeded_simulation(servers, load):
    service = 0.2
    rate = load / service
    closed = queueing.pool_wait(rate, service, servers, percentile=90)
    sim = pool_run(rate, service, servers, n_requests=200_000, seed=11, warmup=5000)
    assert nearest_rank_percentile(sim["time_s"], 90) == pytest.approx(
        closed["percentile_time_s"], rel=0.04)
    assert float(np.mean(sim["time_s"] > 0.5)) == pytest.approx(
        queueing.pool_time_tail(rate, service, servers, 0.5), abs=0.01)


def test_a_fixed_prefill_time_needs_fewer_groups_than_a_spread_one():
    # M/D/c (every prompt the mean length) waits less than M/M/c at the same load
    spread = pool_run(100, 0.2, 22, n_requests=100_000, seed=3, warmup=2000)
    fixed = pool_run(100, 0.2, 22, n_requests=100_000, seed=3, warmup=2000, service="fixed")
    assert np.all(fixed["time_s"] >= 0.2 - 1e-12)
    assert nearest_rank_percentile(fixed["time_s"], 90) < 0.8 * nearest_rank_percentile(
        spread["time_s"], 90)


# --- §8 routing ------------------------------------------------------------------------------

def test_routing_with_attention_by_hand():
    a = 4 * 128 * 32 * 32                           # FLOPs per pair of the 8B shape
    assert attention_flops_per_pair(M8) == a
    r = parallelism.kv_routing_ttft(M8, HW, 20, attention=True)
    L, d = 28_800, 1_200
    assert r["cold_flops"] == pytest.approx(2 * 8e9 * L + a * L * (L + 1) / 2, rel=1e-12)
    assert r["warm_flops"] == pytest.approx(2 * 8e9 * d + a * (d * (L - d) + d * (d + 1) / 2),
                                            rel=1e-12)
    assert r["cold_s"] == pytest.approx(r["cold_flops"] / (0.5 * 989e12), rel=1e-12)
    plain = parallelism.kv_routing_ttft(M8, HW, 20)
    assert plain["speedup"] == pytest.approx(24.0)  # the chapter's ratio stays
    assert r["speedup"] < plain["speedup"]


@pytest.mark.parametrize("share,qs", [(0.9, (50, 95, 99)), (0.3, (10, 50, 90))])
def test_routed_percentile_matches_a_seeded_sample(share, qs):
    cold, warm = 0.932, 0.039
    rng = np.random.default_rng(3)
    sample = np.where(rng.random(20_000) < share, warm, cold)
    for q in qs:
        assert parallelism.routed_ttft_percentile(cold, warm, share, q) == \
            nearest_rank_percentile(sample, q)


# --- §9 utilization --------------------------------------------------------------------------

def test_utilization_counted_by_hand():
    out = levers.utilization_counted(M8, HW, decode_tokens_per_s=146,
                                     prefill_tokens_per_s=20_000, context_tokens=8000,
                                     prompt_tokens=2048)
    assert out["decode_mbu_chapter"] == pytest.approx(146 * 16e9 / 3.35e12)
    assert out["decode_mbu"] == pytest.approx(146 * (16e9 + 8000 * 131072) / 3.35e12)
    assert out["prefill_mfu_chapter"] == pytest.approx(20_000 * 2 * 8e9 / 989e12)
    a = 4 * 128 * 32 * 32
    assert out["prefill_mfu"] == pytest.approx(20_000 * (2 * 8e9 + a * 2049 / 2) / 989e12)
    assert out["decode_mfu"] == pytest.approx(146 * (2 * 8e9 + a * 8001) / 989e12)


# --- §10 levers ----------------------------------------------------------------------------

def test_quantization_at_batch_one_is_the_chapters_doubling():
    out = levers.quantized_decode_speedup(M8, HW, 1)
    assert out["chapter_speedup"] == pytest.approx(2.0)
    assert out["speedup"] == pytest.approx(2.0)


def test_quantization_with_kv_by_hand_and_on_the_roofline():
    # memory-bound: (D_w + b L k) / (D_w / 2 + b L k)
    b, L, k = 64, 8000, 131072
    out = levers.quantized_decode_speedup(M8, HW, 1, batch=b, context_tokens=L)
    assert out["speedup"] == pytest.approx((16e9 + b * L * k) / (8e9 + b * L * k), rel=1e-9)
    # far past the ridge both steps are compute-bound: nothing left to gain
    big = levers.quantized_decode_speedup(M8, HW, 1, batch=2048)
    assert big["speedup"] == pytest.approx(1.0)
    # the roofline's own max, each token's F being its matrices and its one attention pair
    f = 2 * 8e9 + 4 * 128 * 32 * 32
    assert big["step_s"] == pytest.approx(max(2048 * f / 989e12, 16e9 / 3.35e12), rel=1e-12)
    assert big["step_s"] == pytest.approx(decode_step_time(M8, HW, 2048, 0, flops_per_token=f),
                                          rel=1e-12)


def test_speculative_speedup_reduces_to_the_chapter_and_by_hand():
    e = speculative_expected_tokens(0.7, 4)
    assert levers.speculative_speedup(M8, HW)["speedup"] == pytest.approx(e, rel=1e-12)
    # a draft token at a tenth of a step: E / (1 + 4 x 0.1) while the pass is memory-bound
    assert levers.speculative_speedup(M8, HW, draft_cost=0.1)["speedup"] == pytest.approx(
        e / 1.4, rel=1e-12)
    # both passes compute-bound at L = 0: a plain token is 2P FLOPs and one attention pair,
    # a verification 5 x 2P and the 15 causal pairs of 5 rows: E x F_plain / F_verify
    a = 4 * 128 * 32 * 32
    deep = levers.speculative_speedup(M8, HW, batch=1024)
    assert deep["bound"] == "compute"
    assert deep["speedup"] == pytest.approx(e * (16e9 + a) / (5 * 16e9 + 15 * a), rel=1e-9)


def test_levers_multiply_only_while_memory_bound():
    one = levers.combined_levers(M8, HW, 1)
    assert one["joint"] == pytest.approx(one["product"], rel=1e-12)
    assert one["chapter"] == pytest.approx(2 * speculative_expected_tokens(0.7, 4))
    busy = levers.combined_levers(M8, HW, 1, batch=64, context_tokens=ch17.CHAT_LIVE_TOKENS)
    assert busy["joint"] < busy["product"] < busy["chapter"]
    assert math.isfinite(busy["joint"])
