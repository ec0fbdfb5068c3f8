"""Chapter 17 §6-§10 and interview explorers: each panel's default setting reproduces the
chapter's printed numbers (expected values below are the chapter's, at its printed rounding),
plus the helpers' invariants and bad input."""

from __future__ import annotations

import importlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc, plots, specs, widgets
from companion.explorers.ch17_06_batching_strategies import batch_slots
from companion.formulas.parallelism import placement_model
from companion.formulas.performance import chunk_trade_sweep
from companion.tables import decision_table_text

H100, M8, M70, M405 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B


def near(x, printed, half_unit):
    """``x`` rounds to the chapter's ``printed`` value (within half a unit of its last digit)."""
    return abs(x - printed) <= half_unit * (1 + 1e-9)


# --- §6 -----------------------------------------------------------------------------------------

def test_batching_trace_default_is_the_chapters_mix_behind_a_queue():
    n = widgets.BatchingTracePanel().update().numbers
    assert round(n["first_group_utilization_pct"]) == 56          # "3,600 / 6,400 = 56%"
    assert round(n["static_utilization_pct"]) == 56                # every group has the same mix
    # over the makespan: refilled while a queue waits, but the last requests run on alone
    assert n["continuous_utilization_pct"] == pytest.approx(
        100 * n["continuous_slot_steps_useful"] / n["continuous_slot_steps_run"])
    assert n["static_utilization_pct"] < n["continuous_utilization_pct"] < 100
    assert n["continuous_makespan_s"] < n["static_makespan_s"]
    assert n["continuous_mean_ttft_s"] < n["static_mean_ttft_s"]


def test_batching_trace_one_group_is_the_chapters_batch():
    n = widgets.BatchingTracePanel().update(n_requests=8).numbers
    assert n["static_slot_steps_run"] == 6400                      # "8 x 800 = 6,400"
    assert n["static_slot_steps_useful"] == 3600                   # "100 + ... + 800 = 3,600"


def test_batching_trace_requests_groups():
    reqs = widgets.batching_trace_requests(16, 8, 100, 800)
    assert [r.id for r in reqs[:3]] == ["A", "B", "C"]
    for g in (reqs[:8], reqs[8:]):
        assert sorted(r.output_tokens for r in g) == [100, 200, 300, 400, 500, 600, 700, 800]
    assert widgets.batching_trace_requests(30)[-1].id == "AD"


def test_chunk_size_panel_default():
    n = widgets.ChunkSizePanel().update().numbers
    assert n["chunks"] == 16                                       # "= 16 chunks"
    assert near(n["chunk_ms"], 16.6, 0.05)                         # "= 16.6 ms"
    assert near(n["iteration_ms"], 23, 0.5)                        # "~ 23 ms"
    assert near(n["itl_improvement"], 11, 0.5)                     # "(11x better)"
    assert near(n["ttft_increase_pct"], 40, 0.5)                   # "(+40%)"
    assert near(n["dedicated_ms"], 260, 5)                         # "~260 ms" (2 s.f.)
    assert near(n["sim_worst_itl_ms"], 23, 0.5)                    # simulated: "~23 ms"
    assert near(n["sim_unchunked_worst_itl_ms"], 260, 5)           # simulated: "260 ms"


def test_chunk_sweep_tracks_closed_form():
    sweep = chunk_trade_sweep(8000, 6.1e-3)
    assert list(sweep["chunk_tokens"]) == sorted(sweep["chunk_tokens"])
    assert max(sweep["chunk_tokens"]) == 8000                     # cut at the prompt
    assert all(a <= b for a, b in zip(sweep["iteration_s"], sweep["iteration_s"][1:]))


# --- §7 -----------------------------------------------------------------------------------------

def test_tensor_parallel_panel_default():
    n = widgets.TensorParallelPanel().update().numbers
    assert n["activation_KiB"] == 16 and n["ring_KiB"] == 24       # "16 KB", "24 KB"
    assert n["collectives"] == 160                                 # "2 x 80 layers = 160"
    assert near(n["nvlink_latency_ms"], 0.8, 0.05)                 # "160 x 5 us = 0.8 ms"
    assert near(n["read_ms"], 10.4, 0.05)                          # "35 GB / 3.35 TB/s = 10.4"
    assert near(n["step_ms"], 11.2, 0.06)                          # "~ 11.2 ms" (+8.7 us of wire)
    assert near(n["tokens_per_s"], 90, 5)                          # "~ 90 tok/s"
    assert near(n["nvlink_overhead_pct"], 8, 0.5)                  # "~ 8%"
    assert near(n["pcie_comm_ms"], 4, 0.5)                         # "~ 4 ms"
    assert near(n["pcie_overhead_pct"], 40, 5)                     # "~40%" (1 s.f.)
    assert n["weights_per_gpu_GB"] == pytest.approx(35) and n["fits"]


def test_tensor_parallel_panel_counts_the_kv_cache_in_its_fit():
    # try-this 1's batch of 64 at 8,000 tokens: 64 x 8,000 x 327,680 B / 4 GPUs = 41.9 GB of KV
    # per GPU against 80 - 35 - 4 = 41 GB (17 §4: at most 62 such sequences at TP = 4)
    view = widgets.TensorParallelPanel().update(batch=64, context_tokens=8000)
    n = view.numbers
    assert n["kv_per_gpu_GB"] == pytest.approx(64 * 8000 * 327_680 / 4 / 1e9)
    assert n["free_kv_per_gpu_GB"] == pytest.approx(41) and n["max_sequences"] == 62
    assert n["weights_fit"] and not n["fits"] and "does not fit" in view.text
    assert widgets.TensorParallelPanel().update(batch=62, context_tokens=8000).numbers["fits"]


def test_tp_rows_run_nvlink_one_way():
    # a ring all-reduce sends and receives at once: each direction carries 450 GB/s
    rows = {r["label"]: r for r in widgets.tp_layout_rows(M70, H100)}
    assert rows["TP 4 · NVLink"]["wire_s"] == pytest.approx(160 * 24 * 1024 / 450e9)
    assert rows["TP 4 · PCIe"]["wire_s"] == pytest.approx(160 * 24 * 1024 / 64e9)


def test_pipeline_panel_reaches_an_eight_stage_five_percent_bubble():
    # try-this 3: 7 / (M + 7) <= 5% first at M = 133, which the slider must reach
    panel = widgets.PipelineBubblePanel()
    top = next(c for c in panel.controls if c.name == "microbatches").max
    assert top >= 133
    view = panel.update(stages=8, microbatches=133)
    assert view.numbers["bubble_pct"] == pytest.approx(5.0)
    assert "steady-state decode" in view.text


def test_tp_rows_read_shrinks_latency_does_not():
    rows = [r for r in widgets.tp_layout_rows(M70, H100) if r["link"] in ("none", "NVLink")]
    reads = [r["read_s"] for r in rows]
    assert reads == sorted(reads, reverse=True)
    assert len({round(r["latency_s"], 12) for r in rows[1:]}) == 1


def test_pipeline_panel_default_and_m64():
    panel = widgets.PipelineBubblePanel()
    n = panel.update().numbers
    assert near(n["bubble_pct"], 15.8, 0.05) and n["slots"] == 19  # "3 / 19 = 15.8%"
    assert n["layers_per_stage_70b"] == 20                         # "20 layers per stage"
    n = panel.update(microbatches=64).numbers
    assert near(n["bubble_pct"], 4.5, 0.05) and n["slots"] == 67   # "3 / 67 = 4.5%"


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 24), st.integers(1, 80))
def test_pipeline_grid_idle_share_is_the_bubble(p, m):
    grid = plots.pipeline_grid(p, m)
    assert grid["idle_cells"] == p * (p - 1)
    assert grid["idle_cells"] / (p * grid["slots"]) == pytest.approx(calc.pipeline_bubble(p, m))
    for s, row in enumerate(grid["microbatch"]):
        assert [x for x in row if x is not None] == list(range(1, m + 1))
        assert row[s] == 1


def test_placement_panel_default_is_the_405b_layout():
    n = widgets.PlacementPanel().update().numbers
    assert n["weights_GB"] == pytest.approx(810)                   # "810 GB of weights"
    assert n["layout"] == "TP 8 x PP 2" and n["gpus"] == 16        # "TP = 8 x PP = 2 (16 GPUs)"
    assert near(n["weights_per_gpu_GB"], 51, 0.5)                  # "~51 GB per GPU"
    tp8 = next(r for r in widgets.placement_candidates(M405) if r["label"] == "TP 8")
    assert near(tp8["weight_bytes_per_gpu"] / 1e9, 101, 0.5)       # "810 / 8 = 101 GB"


def test_placement_model_borrows_the_nearest_shape():
    assert placement_model(405e9).n_layers == 126
    assert placement_model(70e9, 1).weight_bytes == pytest.approx(70e9)
    assert placement_model(10e9).n_layers == 32


# --- §8 -----------------------------------------------------------------------------------------

def test_pool_sizing_default():
    n = widgets.PoolSizingPanel().update().numbers
    assert n["prompt_tok_per_s"] == 200_000 and n["prefill_groups"] == 20
    assert n["output_tok_per_s"] == 25_000 and n["decode_groups"] == 10
    assert n["prefill_to_decode"] == 2                             # "A 2:1 pool ratio"


def test_routing_default():
    n = widgets.KVRoutingPanel().update().numbers
    assert n["context_tokens"] == 28_800                           # "6,000 + 19 x 1,200"
    assert near(n["cold_TFLOP"], 461, 0.5) and near(n["cold_ms"], 932, 0.5)
    assert near(n["warm_TFLOP"], 19.2, 0.05) and near(n["warm_ms"], 39, 0.5)
    assert near(n["speedup"], 24, 0.5)                             # "~ 24x"
    assert n["warm_ms"] < n["mean_ms"] < n["mean_ms_at_30pct"] < n["cold_ms"]


# --- §9 -----------------------------------------------------------------------------------------

def test_utilization_default():
    n = widgets.UtilizationPanel().update().numbers
    assert near(n["decode_bytes_per_s"] / 1e12, 2.34, 0.005)       # "2.34e12"
    assert near(n["decode_mbu_pct"], 70, 0.5)                      # "70%"
    assert near(n["decode_mfu_pct"], 0.24, 0.005)                  # "0.24%"
    assert near(n["headroom"], 1.4, 0.05)                          # "1/0.7 ~ 1.4x"
    assert near(n["prefill_flops_per_s"] / 1e14, 3.2, 0.05)        # "3.2e14"
    assert near(n["prefill_mfu_pct"], 32, 0.5)                     # "32%"
    assert near(n["ceiling_tok_s"], 209, 0.5)                      # §2's "209 tok/s"


# --- §10 ----------------------------------------------------------------------------------------

def test_speculative_default():
    n = widgets.SpeculativeLeverPanel().update().numbers
    assert near(n["expected_tokens"], 2.77, 0.005)                 # "2.77 tokens per pass"
    assert [round(t, 3) for t in n["terms"]] == [1.0, 0.7, 0.49, 0.343, 0.240]
    assert abs(n["simulated_mean"] - n["expected_tokens"]) < 0.1   # 5,000 seeded rounds


def test_speculative_check_distribution_sums_to_one():
    check = widgets.speculative_check(0.7, 4, 2000)
    assert sum(check["distribution"]) == pytest.approx(1)
    assert sum(check["simulated"]) == pytest.approx(1)
    assert len(check["simulated"]) == 5


def test_text_tables_are_re_derived():
    decision = decision_table_text()
    for word in ("static", "continuous", "chunked"):
        assert word in decision
    levers = widgets.levers_text(M8, H100)
    assert "209 tok/s -> 419 tok/s" in levers                      # §10's quantization row
    assert "128 KiB -> 64 KiB" in levers                           # FP8 KV halves the bytes
    assert "speculative decoding" in widgets.mechanism_map_text()
    sheet = widgets.cheat_sheet_text([M8, M70], H100)
    assert "57 sequences" in sheet and "320 KiB" in sheet and "209 tok/s" in sheet
    # counts read as English: one GPU, one token per pass, and no sequence beside 70B weights
    # that do not fit one card (the builders' singular and zero cases)
    assert "1 GPU " in sheet and "1 GPUs" not in sheet and "0 sequences" not in sheet
    assert "none" in sheet
    assert "1 token per pass ->" in levers and "1 tokens" not in levers
    assert "140 GB -> 35 GB" in levers                              # the 70B at TP = 4


# --- interview ----------------------------------------------------------------------------------

def test_batch_size_default():
    n = widgets.BatchSizePanel().update().numbers
    assert n["reserved_cap"] == 57                                 # "60 / 1.05 ~ 57"
    assert near(n["paged_cap"], 760, 5)                            # "~ 760" (2 s.f.)
    assert near(n["reserved_cap_step_ms"], 6.1, 0.05)              # §5: "6.1 ms"
    assert near(n["paged_cap_step_ms"], 23, 0.5)                   # "from 6 to 23 ms"
    assert near(n["free_kv_GB"], 60, 0.5)                          # "80 - 16 - 4 = 60 GB"
    assert n["binding"] == "ITL target" and n["run_batch"] == n["itl_ceiling"] < n["paged_cap"]


def test_itl_tail_trace_spikes_only_the_tail():
    whole = widgets.itl_tail_trace()
    chunked = widgets.itl_tail_trace(512)
    assert whole["itl_p50_s"] == pytest.approx(chunked["itl_p50_s"])
    assert whole["itl_p99_s"] > 10 * chunked["itl_p99_s"]
    assert near(whole["itl_p99_s"] * 1e3, 260, 5)                  # the ~260 ms freeze
    assert chunked["long_ttft_mean_s"] > whole["long_ttft_mean_s"]


# --- figures and bad input ----------------------------------------------------------------------

def test_batch_slots_never_overlap():
    reqs = widgets.batching_trace_requests(20, 5, 30, 300, arrival_gap_s=0.01)
    for res in widgets.batching_trace(reqs, 5).values():
        rows = batch_slots(res)
        assert len(rows) == 20 and max(r[0] for r in rows) < 5
        for slot in range(5):
            spans = sorted((s, e) for k, _, s, e in rows if k == slot)
            assert all(e1 <= s2 + 1e-9 for (_, e1), (s2, _) in zip(spans, spans[1:]))


# the explorers of 17 §6-§11: the panels of the section modules whose SECTION is one of them
SECTION_6_11_PANELS = [
    n for n in widgets.__all__ if n.endswith("Panel") and importlib.import_module(
        getattr(widgets, n).__module__).SECTION in {f"17.{k}" for k in range(6, 12)}]


def test_the_section_6_11_panels_are_found():
    assert len(SECTION_6_11_PANELS) >= 10, SECTION_6_11_PANELS


@pytest.mark.parametrize("name", SECTION_6_11_PANELS)
def test_every_axis_has_a_title(name):
    fig = getattr(widgets, name)().figure()
    layout = fig.layout.to_plotly_json()
    # stacked subplots that share one axis (matches) may title it once, on the bottom one
    def group(key, axis):  # "x2" matched by xaxis3 -> both in group "xaxis2"
        ref = axis.get("matches")
        return f"{ref[0]}axis{ref[1:]}" if ref else key

    titled_groups = {group(k, a) for k, a in layout.items() if k.startswith(("xaxis", "yaxis"))
                     and a.get("title", {}).get("text")}
    sharing = {group(k, a) for k, a in layout.items() if k.startswith(("xaxis", "yaxis"))
               and a.get("matches")}
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and not axis.get("overlaying") \
                and axis.get("type") != "category" and axis.get("visible", True):
            titled = axis.get("title", {}).get("text") or (
                group(key, axis) in sharing and group(key, axis) in titled_groups)
            assert titled, f"{name}: {key} has no title"


@pytest.mark.parametrize("call, name", [
    (lambda: widgets.batching_trace_requests(0), "n_requests"),
    (lambda: widgets.batching_trace_requests(8, 8, 100, 800, arrival_gap_s=-1), "arrival_gap_s"),
    (lambda: chunk_trade_sweep(8000, math.nan), "decode_step_s"),
    (lambda: placement_model(-1), "params"),
    (lambda: widgets.placement_candidates(M405, gpus_per_node=0), "gpus_per_node"),
    (lambda: widgets.speculative_check(1.5, 4), "acceptance"),
    (lambda: widgets.itl_tail_trace(0), "chunk_tokens"),
    (lambda: plots.pipeline_grid(0, 4), "stages"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_tensor_parallel_panel_flags_a_kv_cache_it_cannot_split():
    # Gemma-3-1B-it has 1 KV head: at TP 4 each GPU keeps a copy. Its 2.0 GB of BF16 weights
    # are 0.5 GB per GPU (the readout once rounded that to "0 GB").
    panel = widgets.TensorParallelPanel()
    view = panel.update(model="gemma-3-1b-it", tp=4)
    assert view.numbers["kv_replicated"]
    assert "0.5 GB of weights per GPU" in view.text
    assert "more than the model's 1 KV head" in view.text
    # DeepSeek-V3's MLA latent is shared by all 128 heads: replicated at any TP > 1
    view = panel.update(model="deepseek-v3", tp=8)
    assert view.numbers["kv_replicated"] and "MLA" in view.text
    # the chapter's 70B at TP 4 splits its 8 KV heads 2 per GPU: no note
    view = panel.update(**panel.defaults())
    assert not view.numbers["kv_replicated"] and "more than the model" not in view.text
    assert "35 GB of weights per GPU" in view.text


def test_chunk_panel_draws_the_fused_model_beside_the_chapters():
    panel = widgets.ChunkSizePanel()
    view = panel.update()
    names = [t.get("name", "") for t in view.traces]
    assert any(n.startswith("worst ITL, fused pass") for n in names)
    assert any(n.startswith("TTFT, fused pass") for n in names)
    n = view.numbers
    assert n["fused_decode_batch"] == 57                           # 17 §5's naive batch, 6.1 ms
    assert n["fused_first_itl_ms"] < 19 < 22 < n["iteration_ms"]   # ~18 vs ~23 ms
    assert n["fused_ttft_increase_pct"] < 15 < 35 < n["ttft_increase_pct"]
    small = panel.update(chunk_tokens=32).numbers
    assert small["fused_memory_bound_chunks"] == small["chunks"]   # below the ridge
    long = panel.update(prompt_tokens=32_000, chunk_tokens=736).numbers
    assert long["fused_worst_itl_ms"] > 1.8 * long["fused_first_itl_ms"]
    _ = panel.reset()
