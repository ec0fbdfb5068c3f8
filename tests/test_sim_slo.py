"""17 §3's latency targets under load (companion.sim.slo): percentiles, targets, G vs G - 1."""

import numpy as np
import pytest

from companion import calc, sim, specs, units, widgets
from companion.chapters import ch17
from companion.sim.load import nearest_rank_percentile


def test_an_idle_service_shows_the_no_contention_numbers():
    # one request at a time (arrivals far apart): TTFT is the prefill of 17 §2 and every
    # interval is one batch-1 decode step of (weights + live KV) / bandwidth
    run = sim.slo_run(0.05, n_requests=5)
    prefill = calc.prefill_compute_s(specs.LLAMA_8B, specs.H100_SXM, ch17.PROMPT_TOKENS)
    # the simulator also counts attention FLOPs over the prompt, which the chapter leaves out
    assert prefill < run["ttft_pct"]["p50"] < 1.05 * prefill
    step_first = calc.decode_vs_context(specs.LLAMA_8B, specs.H100_SXM, ch17.PROMPT_TOKENS)
    step_last = calc.decode_vs_context(specs.LLAMA_8B, specs.H100_SXM,
                                       ch17.PROMPT_TOKENS + ch17.OUTPUT_TOKENS)
    # within a few percent: the round model adds the attention FLOPs and the KV it reads
    assert step_first["step_s"] * 0.99 <= run["itl_pct"]["p50"] <= step_last["step_s"] * 1.03
    assert run["slo_met"] and run["completed"] == 5


def test_percentiles_are_nearest_rank_over_the_right_populations():
    run = sim.slo_run(4.0, n_requests=60)
    # TTFT: one value per completed request; ITL: G - 1 per request
    assert run["ttft_s"].size == run["completed"] == 60
    assert run["itl_s"].size == 60 * (ch17.OUTPUT_TOKENS - 1)
    for q in (50, 90, 99):
        assert run["ttft_pct"][f"p{q}"] == nearest_rank_percentile(run["ttft_s"], q)
        assert run["itl_pct"][f"p{q}"] == nearest_rank_percentile(run["itl_s"], q)
    assert np.all(np.diff(run["itl_s"]) >= 0)


def test_request_time_counts_g_minus_one_intervals():
    run = sim.slo_run(3.0, n_requests=40)
    assert run["intervals_mean_s"] == pytest.approx(run["measured_mean_s"], rel=1e-9)
    # 17 §3's TTFT + G x ITL adds one mean interval on top
    extra = run["chapter_mean_s"] - run["measured_mean_s"]
    assert run["itl_pct"]["p50"] * 0.5 < extra < run["itl_pct"]["p99"]


def test_whole_prefills_break_the_itl_tail_and_chunks_repair_it():
    whole = sim.slo_run(4.0, n_requests=100)
    chunked = sim.slo_run(4.0, n_requests=100, policy="chunked")
    stall = calc.prefill_compute_s(specs.LLAMA_8B, specs.H100_SXM, ch17.PROMPT_TOKENS)
    assert whole["itl_pct"]["p99"] > stall                 # a stalled round holds a prefill
    assert not whole["itl_ok"]
    assert chunked["itl_pct"]["p99"] < whole["itl_pct"]["p99"] / 2
    # more load never shortens the tail of TTFT
    heavy = sim.slo_run(10.0, n_requests=100)
    assert heavy["ttft_pct"]["p90"] > whole["ttft_pct"]["p90"]


def test_targets_decide_the_verdict():
    run = sim.slo_run(2.0, n_requests=40, ttft_target_s=1e-3)
    assert not run["ttft_ok"] and not run["slo_met"]
    loose = sim.slo_run(2.0, n_requests=40, itl_target_s=1.0, ttft_target_s=10.0)
    assert loose["slo_met"]


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="^rate_per_s"):
        sim.slo_run(0.0)
    with pytest.raises(ValueError, match="^policy"):
        sim.slo_run(1.0, policy="fifo")
    with pytest.raises(ValueError, match="^output_tokens"):
        sim.slo_run(1.0, output_tokens=1)
    with pytest.raises(ValueError, match="^model"):
        sim.slo_run(1.0, model=specs.LLAMA_405B)


def test_slo_panel_defaults_are_the_chapters_targets():
    panel = widgets.SLOPanel()
    n = panel.update().numbers
    assert panel.params["ttft_target_ms"] == pytest.approx(500)    # "TTFT p90 under ~500 ms"
    assert panel.params["itl_target_ms"] == pytest.approx(ch17.ITL_TARGET_S / units.ms)
    assert n["ttft_p50_ms"] <= n["ttft_p90_ms"] <= n["ttft_p99_ms"]
    assert n["itl_p50_ms"] <= n["itl_p90_ms"] <= n["itl_p99_ms"]
    busy = panel.update(rate_per_s=8.0).numbers
    assert busy["itl_p99_ms"] > n["itl_p99_ms"] and not busy["slo_met"]
    fig = panel.figure()
    targets = [t for t in fig.data if t.name.endswith("target")]
    assert [t.x[0] for t in targets] == [500, pytest.approx(ch17.ITL_TARGET_S / units.ms)]
    assert fig.layout.xaxis.title.text and fig.layout.xaxis2.title.text
