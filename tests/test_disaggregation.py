"""17 §8's goodput comparison: N GPUs shared with chunked prefill against the same GPUs split
into a prefill and a decode pool (``companion.formulas.queueing.fleet_goodput``), held to its
limits and to the closed forms it is built from; and the one-way NVLink rate of the KV hop."""

import math

import pytest

from companion import calc, specs, widgets
from companion.chapters import ch17

HW, M8 = specs.H100_SXM, specs.LLAMA_8B
PREFILL_S = calc.prefill_compute_s(M8, HW, ch17.MEAN_PROMPT_TOKENS)      # one mean prompt


def _split(gpus):
    return calc.best_split(gpus)["prefill_gpus"]


# --- the hop goes one way -------------------------------------------------------------------

def test_nvlink_one_way_is_half_the_spec_figure_and_doubles_the_chapters_hop():
    one_way = calc.nvlink_one_way_bytes_per_s(HW)
    assert one_way == pytest.approx(ch17.H100_NVLINK_BYTES_PER_S / 2)
    L = ch17.LONG_CONTEXT_TOKENS
    printed = calc.kv_transfer_s(specs.LLAMA_70B, L, ch17.H100_NVLINK_BYTES_PER_S)
    assert calc.kv_transfer_s(specs.LLAMA_70B, L, one_way) == pytest.approx(2 * printed)


def test_the_explorers_nvlink_link_runs_one_way():
    from companion.explorers.ch17_08_disaggregation_and_routing import KV_LINKS
    nvlink = [bw for label, bw in KV_LINKS.items() if label.startswith("NVLink")]
    assert nvlink == [pytest.approx(ch17.H100_NVLINK_BYTES_PER_S / 2)]
    n = widgets.DisaggregationDiagramPanel().update(
        link=next(k for k in KV_LINKS if k.startswith("NVLink")), mean_prompt_tokens=8000).numbers
    assert n["ship_ms"] == pytest.approx(
        calc.kv_transfer_s(specs.LLAMA_70B, 8000, ch17.H100_NVLINK_BYTES_PER_S / 2) * 1e3)


# --- goodput: limits ------------------------------------------------------------------------

@pytest.mark.parametrize("gpus", [2, 8])
def test_a_light_load_meets_both_targets_in_both_layouts(gpus):
    rate = 0.05 * gpus
    for out in (calc.fleet_goodput(rate, gpus),
                calc.fleet_goodput(rate, gpus, layout="split", prefill_gpus=_split(gpus))):
        assert out["slo_met"] and out["itl_met"] and out["stable"]
        assert out["goodput_per_s"] == pytest.approx(rate, rel=0.01)
        assert out["goodput_per_s"] <= rate


@pytest.mark.parametrize("gpus", [1, 2, 3, 8])
def test_goodput_never_exceeds_the_offered_rate_and_ends_at_zero(gpus):
    layouts = [("shared", None)] + ([("split", _split(gpus))] if gpus > 1 else [])
    for layout, p in layouts:
        goods = []
        for k in range(1, 121):
            rate = gpus * k / 10
            out = calc.fleet_goodput(rate, gpus, layout=layout, prefill_gpus=p)
            assert 0.0 <= out["goodput_per_s"] <= rate
            assert 0.0 <= out["ttft_met_share"] <= 1.0
            goods.append(out["goodput_per_s"])
        assert goods[-1] == 0.0                  # 12 req/s per GPU is past every limit here
        assert max(goods) > 0.5 * gpus           # and something was carried before


def test_no_goodput_once_the_prefill_stage_cannot_keep_up():
    # the prefill GPUs' capacity, P / (mean prefill time): the queue no longer drains
    for gpus, p in ((2, 1), (8, 6)):
        out = calc.fleet_goodput(1.001 * p / PREFILL_S, gpus, layout="split", prefill_gpus=p)
        assert out["goodput_per_s"] == 0.0 and not out["stable"]
    # a shared GPU prefills more slowly than a dedicated one, so it fails earlier still
    assert calc.fleet_goodput(2 / PREFILL_S, 2)["goodput_per_s"] == 0.0


def test_shared_rounds_stay_within_the_itl_target_and_use_the_chapters_chunked_round():
    for rate in (1.0, 20.0, 60.0):
        out = calc.fleet_goodput(rate, 8)
        assert out["round_s"] <= ch17.ITL_TARGET_S * (1 + 1e-12)
        c = out["chunk_tokens"]
        # the largest chunk that fits beside the decode step (17 §6's token budget)
        assert out["step_s"] + calc.prefill_compute_s(M8, HW, c + 1) > ch17.ITL_TARGET_S
        trade = calc.chunked_prefill_trade(M8, HW, ch17.MEAN_PROMPT_TOKENS, c, out["step_s"])
        assert out["round_s"] == pytest.approx(trade["iteration_s"])
        assert out["prefill_service_s"] == pytest.approx(
            ch17.MEAN_PROMPT_TOKENS / c * trade["iteration_s"])
        # the decode step is 17 §5's memory-bound step at the GPU's batch
        context = ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS // 2
        assert out["step_s"] == pytest.approx(
            calc.decode_step_time(M8, HW, out["decode_batch"], context))


def test_the_batch_obeys_littles_law():
    out = calc.fleet_goodput(40.0, 8, layout="split", prefill_gpus=6)
    # batch >= arrivals per decode GPU x rounds a stream stays x round time, and is the least
    need = 40.0 / 2 * (ch17.MEAN_OUTPUT_TOKENS - 1) * out["step_s"]
    assert need <= out["decode_batch"] < need + 1


def test_the_splits_decode_limit_is_the_itl_batch_ceiling():
    context = ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS // 2
    # the first interval is the hop plus a step: the step gets what the hop leaves
    hop = calc.kv_transfer_s(M8, ch17.MEAN_PROMPT_TOKENS, calc.nvlink_one_way_bytes_per_s(HW))
    ceiling = calc.itl_batch_ceiling(M8, HW, ch17.ITL_TARGET_S - hop, context)
    step = calc.decode_step_time(M8, HW, ceiling, context)
    # two decode GPUs, each holding at most `ceiling` streams for G - 1 steps
    limit = 2 * ceiling / ((ch17.MEAN_OUTPUT_TOKENS - 1) * step)
    below = calc.fleet_goodput(0.99 * limit, 8, layout="split", prefill_gpus=6)
    above = calc.fleet_goodput(1.01 * limit, 8, layout="split", prefill_gpus=6)
    assert below["itl_met"] and below["decode_batch"] <= ceiling
    assert not above["itl_met"] and above["goodput_per_s"] == 0.0


def test_the_kv_hop_is_the_splits_first_inter_token_gap_not_its_ttft():
    # the prefill GPU streams token 1; the hop holds back token 2
    fast = calc.fleet_goodput(30.0, 8, layout="split", prefill_gpus=6)
    slow = calc.fleet_goodput(30.0, 8, layout="split", prefill_gpus=6, link_bytes_per_s=1e11)
    one_way = calc.nvlink_one_way_bytes_per_s(HW)
    assert fast["hop_s"] == pytest.approx(calc.kv_transfer_s(M8, ch17.MEAN_PROMPT_TOKENS,
                                                             one_way))
    assert slow["ttft_percentile_s"] == pytest.approx(fast["ttft_percentile_s"])
    for out in (fast, slow):
        assert out["first_gap_s"] == pytest.approx(out["hop_s"] + out["step_s"])
    # a link so slow that the hop alone fills the ITL target: no stream meets it
    crawl = ch17.MEAN_PROMPT_TOKENS * calc.kv_bytes_per_token(M8) / ch17.ITL_TARGET_S
    stalled = calc.fleet_goodput(1.0, 8, layout="split", prefill_gpus=6,
                                 link_bytes_per_s=0.9 * crawl)
    assert not stalled["itl_met"] and stalled["goodput_per_s"] == 0.0
    assert stalled["ttft_percentile_s"] == math.inf or not stalled["slo_met"]
    # shipped layer by layer, the same link leaves only the last layer's share after the prefill
    layered = calc.fleet_goodput(1.0, 8, layout="split", prefill_gpus=6,
                                 link_bytes_per_s=0.9 * crawl, kv_hop="layered")
    assert layered["hop_s"] == pytest.approx(calc.kv_layered_transfer(
        M8, HW, ch17.MEAN_PROMPT_TOKENS, 0.9 * crawl)["exposed_s"])
    assert layered["itl_met"] and layered["goodput_per_s"] > 0.99


def test_the_shared_first_gap_is_a_round():
    out = calc.fleet_goodput(20.0, 8)
    assert out["first_gap_s"] == out["round_s"] and out["hop_s"] == 0.0


def test_ttft_share_is_the_pools_closed_form():
    out = calc.fleet_goodput(50.0, 8, layout="split", prefill_gpus=6)
    share = 1 - calc.pool_time_tail(50.0, PREFILL_S, 6, ch17.TTFT_P90_TARGET_S)
    assert out["ttft_met_share"] == pytest.approx(share)
    assert out["goodput_per_s"] == pytest.approx(50.0 * share)


def test_slo_rate_is_the_edge_of_slo_met():
    for gpus, layout, p in ((2, "shared", None), (8, "split", 6)):
        edge = calc.fleet_slo_rate(gpus, layout=layout, prefill_gpus=p, tolerance_per_s=0.01)
        assert calc.fleet_goodput(edge, gpus, layout=layout, prefill_gpus=p)["slo_met"]
        assert not calc.fleet_goodput(edge + 0.03, gpus, layout=layout, prefill_gpus=p)[
            "slo_met"]


def test_best_split_is_the_best_of_every_division():
    best = calc.best_split(4)
    rates = [calc.fleet_slo_rate(4, layout="split", prefill_gpus=p) for p in (1, 2, 3)]
    assert best["slo_rate_per_s"] == max(rates)
    assert best["prefill_gpus"] + best["decode_gpus"] == 4


def test_share_small_split_large():
    # 17 §8: a fleet too small to keep two pools busy is better shared; a large one, split
    assert calc.fleet_slo_rate(2) > calc.best_split(2)["slo_rate_per_s"]
    assert calc.best_split(8)["slo_rate_per_s"] > calc.fleet_slo_rate(8)


def test_the_verdict_depends_on_the_itl_target():
    # at 20 ms the 8-GPU split carries more; at 50 ms sharing does: a looser target widens the
    # shared GPUs' chunks, while the split's decode GPUs are held by KV memory, not the target
    def rates(gpus, itl):
        return (calc.fleet_slo_rate(gpus, itl_target_s=itl),
                calc.best_split(gpus, itl_target_s=itl)["slo_rate_per_s"])

    shared20, split20 = rates(8, 20e-3)
    shared50, split50 = rates(8, 50e-3)
    assert split20 > 1.05 * shared20 and shared50 > 1.05 * split50
    assert shared50 > shared20                           # looser target, bigger chunks
    # the split's decode GPUs fill their KV memory at a step below 30 ms: 30 and 50 ms agree
    context = ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS
    full = calc.tp_kv_capacity(M8, HW, context_tokens=context)["max_sequences"]
    assert calc.decode_step_time(M8, HW, full, context - ch17.MEAN_OUTPUT_TOKENS // 2) < 30e-3
    assert rates(8, 30e-3)[1] == pytest.approx(split50, rel=1e-3)


def test_a_split_fleet_needs_two_gpus():
    with pytest.raises(ValueError, match="gpus"):
        calc.fleet_goodput(1.0, 1, layout="split")
    with pytest.raises(ValueError, match="prefill_gpus"):
        calc.fleet_goodput(1.0, 4, layout="split", prefill_gpus=4)


def test_pool_panel_sizes_by_the_p90_ttft():
    n = widgets.PoolSizingPanel().update().numbers
    assert n["queued_p90_ttft_ms"] <= ch17.TTFT_P90_TARGET_S * 1e3
    q = calc.prefill_pool_for_ttft(ch17.REQUEST_RATE_PER_S, ch17.MEAN_PROMPT_TOKENS)
    assert n["queued_p90_ttft_ms"] == pytest.approx(q["fuller"]["percentile_time_s"] * 1e3)
    assert n["prefill_p90_ms"] == pytest.approx(q["service_s"] * math.log(10) * 1e3)
