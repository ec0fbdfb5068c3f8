"""The fuller models in the 17 §7-§10 explorers (issue 24): at the chapter's setting every
panel still shows the chapter's numbers, and its toggle or second curve shows the fuller
model's, as ``companion.calc`` computes it."""

import pytest

from companion import calc, models, specs, widgets
from companion.chapters import ch17

HW, M8, M70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B


def test_tp_panel_defaults_to_the_chapter_and_toggles_to_the_ring_and_overlap():
    p = widgets.TensorParallelPanel()
    # NVLink's wire at one direction's rate, 450 of the spec sheet's 900 GB/s
    one_way = dict(link_bytes_per_s=calc.nvlink_one_way_bytes_per_s(HW))
    chapter = p.update().numbers
    assert chapter["step_ms"] == pytest.approx(
        calc.tp_decode_step(M70, HW, 4, **one_way)["step_s"] * 1e3)
    assert chapter["nvlink_wire_us"] == pytest.approx(160 * 24 * 1024 / 450e9 * 1e6)  # 8.7 µs
    assert chapter["chapter_step_ms"] == pytest.approx(chapter["step_ms"])
    ring8 = p.update(tp=8, collectives="ring").numbers
    assert ring8["step_ms"] == pytest.approx(
        calc.tp_step_fuller(M70, HW, 8, **one_way)["step_s"] * 1e3)
    assert ring8["step_ms"] > ring8["chapter_step_ms"]
    # hiding needs two sequences that take turns: at batch 1 nothing hides
    alone = p.update(tp=4, collectives="flat", overlap=True)
    assert alone.numbers["step_ms"] == pytest.approx(chapter["step_ms"])
    assert "cannot be split" in alone.text
    hidden = p.update(tp=4, collectives="flat", overlap=True, batch=2).numbers
    assert hidden["step_ms"] == pytest.approx(hidden["read_ms"])
    # the stacked bars still add up to the step
    view = p.update()
    assert len(view.traces) >= 3


def test_pipeline_panel_draws_the_real_config_beside_the_chapter():
    p = widgets.PipelineBubblePanel()
    view = p.update()
    real = calc.pp_decode_bubble(models.load("llama-3.1-70b"), HW, ch17.PP_STAGES,
                                 ch17.PP_MICROBATCHES[0])
    assert view.numbers["bubble_pct"] == pytest.approx(100 * calc.pipeline_bubble(4, 16))
    assert view.numbers["uneven_bubble_pct"] == pytest.approx(100 * real["bubble"])
    assert any(t.get("line", {}).get("dash") == "dash" for t in view.traces)


def test_pool_panel_adds_the_queueing_line():
    p = widgets.PoolSizingPanel()
    n = p.update().numbers
    q = calc.prefill_pool_for_ttft(ch17.REQUEST_RATE_PER_S, ch17.MEAN_PROMPT_TOKENS)
    assert n["prefill_groups"] == q["chapter_groups"]
    assert n["queued_prefill_groups"] == q["groups"] > n["prefill_groups"]
    # a target no pool can meet draws no line at all
    strict = p.update(ttft_p90_target_ms=100.0)
    assert not any("queueing" in t.get("name", "") for t in strict.traces)


def test_routing_panel_gives_percentiles_and_attention():
    n = widgets.KVRoutingPanel().update().numbers
    assert n["p99_ms"] == pytest.approx(n["cold_ms"])
    assert n["p50_ms"] == pytest.approx(n["warm_ms"])
    full = calc.kv_routing_ttft(M8, HW, 20, attention=True)
    assert n["cold_attention_ms"] == pytest.approx(full["cold_s"] * 1e3)


def test_diagram_panel_toggles_the_kv_hop():
    p = widgets.DisaggregationDiagramPanel()
    whole = p.update().numbers
    assert whole["hop_ms"] == pytest.approx(whole["ship_ms"])
    layered = p.update(kv_hop="layered").numbers
    assert layered["ship_ms"] == pytest.approx(whole["ship_ms"])
    assert layered["hop_ms"] == pytest.approx(layered["exposed_ms"])
    assert layered["hop_ms"] < whole["ship_ms"]


def test_utilization_panel_marks_the_counted_ratios():
    n = widgets.UtilizationPanel().update(prompt_tokens=32_768).numbers
    u = calc.utilization_counted(M8, HW, decode_tokens_per_s=ch17.DECODE_TOK_PER_S,
                                 prefill_tokens_per_s=ch17.PREFILL_TOK_PER_S,
                                 prompt_tokens=32_768)
    assert n["prefill_mfu_attention_pct"] == pytest.approx(100 * u["prefill_mfu"])
    assert n["prefill_mfu_attention_pct"] > n["prefill_mfu_pct"]


def test_speculative_panel_prices_the_draft_only_when_asked():
    p = widgets.SpeculativeLeverPanel()
    n = p.update().numbers
    assert n["speedup"] == pytest.approx(n["expected_tokens"])
    priced = p.update(draft_cost_pct=10.0).numbers
    assert priced["speedup"] == pytest.approx(priced["expected_tokens"] / 1.4)
