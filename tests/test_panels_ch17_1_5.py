"""Chapter 17 §1-§5 explorers and figures: the default settings reproduce the chapter's printed
numbers (expected values are the chapter's, at its printed rounding), the figures draw what the
companion computed, and the allocator demo behaves like PagedAttention."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc, plots, specs, units, widgets
from companion.sim.kv_scenarios import allocator_demo
from companion.sim.scenarios import hol_scenario


def close(value, printed, decimals=0):
    """``value`` rounds to the chapter's ``printed`` number at its printed decimals."""
    return abs(value - printed) <= 0.5 * 10.0 ** -decimals + 1e-9


def sig(value, printed, figures):
    """``value`` agrees with ``printed`` to ``figures`` significant figures."""
    scale = 10.0 ** (math.floor(math.log10(abs(printed))) - figures + 1)
    return abs(value - printed) <= 0.5 * scale + 1e-9


# --- §1 -------------------------------------------------------------------------------------

def test_memory_hierarchy_defaults_are_the_chapters():
    n = widgets.MemoryHierarchyPanel().update().numbers
    assert close(n["ridge_flop_per_byte"], 295)            # "295 FLOPs per byte"
    assert close(n["full_sweep_ms"], 24)                    # "80 GB / 3.35 TB/s = 24 ms"
    assert sig(n["full_sweeps_per_s"], 40, 1)               # "capped at ~40 such steps"
    assert close(n["hbm_over_nvlink"], 3.7, 1)              # "3.7x slower than HBM"
    assert close(n["nvlink_over_pcie"], 14)                 # "14x faster than PCIe"
    # like for like: 450 GB/s one way over PCIe's 64 GB/s one way
    assert n["nvlink_over_pcie_one_way"] == pytest.approx(450 / 64)
    assert n["memory_GB"] == 80 and n["bandwidth_GBs"] == 3350


def test_memory_hierarchy_other_cards_and_missing_links():
    m2 = widgets.MemoryHierarchyPanel().update(hardware=specs.M2_MAX.name).numbers
    assert m2["hbm_over_nvlink"] is None and m2["nvlink_GBs"] is None
    assert close(m2["ridge_flop_per_byte"], 34)             # 13.6e12 / 400e9
    half = widgets.MemoryHierarchyPanel().update(sweep_gb=40).numbers
    assert close(half["sweep_ms"], 12)


def test_memory_hierarchy_figure_draws_the_pyramid():
    rows = calc.memory_pyramid(specs.H100_SXM)
    fig = plots.memory_hierarchy_figure(rows)
    capacity, _, bandwidth, _ = fig.data
    assert list(capacity.y) == ["Registers (per SM)", "Shared memory / L1 (per SM)",
                                "L2 cache (per device)", "HBM (per device)"]
    assert capacity.x[-1] == 80                              # GB
    assert list(bandwidth.x) == [3350, 900, 64]             # GB/s: HBM, NVLink, PCIe
    assert fig.layout.xaxis.title.text and fig.layout.xaxis2.title.text
    assert fig.to_plotly_json() == plots.memory_hierarchy_figure(rows).to_plotly_json()


# --- §2 -------------------------------------------------------------------------------------

def test_roofline_defaults_are_the_chapters():
    n = widgets.RooflinePanel().update().numbers
    assert close(n["ridge_flop_per_byte"], 295)
    assert n["decode_b1_intensity"] == pytest.approx(1)      # "1 FLOP per byte"
    assert close(n["decode_b1_TFLOPs"], 3.35, 2)             # "3.35e12 FLOP/s"
    assert close(n["decode_b1_pct_of_peak"], 0.34, 2)        # "0.34%"
    assert close(n["decode_b1_step_ms"], 4.78, 2)            # "4.78 ms per token"
    assert close(n["decode_b1_tok_s"], 209)                  # "209 tokens/s"
    assert close(n["wait_to_work"], 295)                     # "295 : 1"
    assert n["decode_batch_weights_only_intensity"] == pytest.approx(64)   # "(not 64)"
    assert close(n["decode_batch_with_kv_intensity"], 49)    # "= 49"
    assert n["prefill_intensity"] == pytest.approx(2048)     # "~ 2,048"
    assert n["prefill_pct_of_peak"] == pytest.approx(100)    # compute-bound: on the roof
    assert close(n["batch_to_reach_ridge"], 295)             # "B ~ 295"


def test_roofline_long_contexts_and_int8():
    panel = widgets.RooflinePanel()
    assert close(panel.update(context_tokens=8000).numbers["decode_batch_with_kv_intensity"], 12)
    int8 = panel.update(context_tokens=600, weight_bytes=1.0).numbers
    assert close(int8["decode_b1_tok_s"], 419)               # 17 §10: "419 tok/s"
    assert int8["decode_b1_intensity"] == pytest.approx(2)   # "2 FLOP per byte"


def test_roofline_flags_a_batch_that_does_not_fit():
    panel = widgets.RooflinePanel()
    chat = panel.update()
    assert chat.numbers["fits_in_memory"] and "does not fit" not in chat.text
    # b = 64 at 128,000 live tokens: 64 x 128,000 x 131,072 B = 1.07 TB of KV, 13x the card
    long = panel.update(context_tokens=128_000)
    assert long.numbers["memory_kv_GB"] == pytest.approx(64 * 128_000 * 131_072 / 1e9)
    assert long.numbers["memory_needed_GB"] == pytest.approx(16 + 64 * 128_000 * 131_072 / 1e9
                                                             + 4)
    assert not long.numbers["fits_in_memory"] and "does not fit" in long.text


def test_prefill_has_one_marker_in_every_roofline():
    from companion.explorers.ch17_02_roofline import PREFILL_STYLE, POINT_COLORS

    def prefill_marker(traces):
        return next(t["marker"] for t in traces if t.get("name", "").startswith("prefill"))

    panel = widgets.RooflinePanel().update()
    hw, m8 = specs.H100_SXM, specs.LLAMA_8B
    pts = [dict(label="decode, batch 1", **calc.roofline_point(1.0, hw))]
    for i in (64.0, 49.0, 12.0):
        pts.append(dict(label=f"decode, {i:g}", **calc.roofline_point(i, hw)))
    pts.append(dict(label="prefill, 2,048-token prompt", phase="prefill",
                    **calc.roofline_point(calc.prefill_intensity(m8, 2048), hw)))
    static = plots.roofline_figure(hw, pts).to_dict()["data"]
    for marker in (prefill_marker(panel.traces), prefill_marker(static)):
        assert marker["color"] == POINT_COLORS[PREFILL_STYLE]
        assert marker["symbol"] == "triangle-up"
    # no decode point borrows the prefill's look
    decode = [t["marker"] for t in panel.traces + static
              if t.get("name", "").startswith("decode") and "marker" in t
              and t.get("mode") == "markers"]
    assert decode and all(m["color"] != POINT_COLORS[PREFILL_STYLE] for m in decode)


def test_roofline_readout_lists_the_plotted_numbers():
    panel = widgets.RooflinePanel()
    view = panel.update()
    points = view.traces[-4:]   # one trace per workload, last, its label in the legend
    assert all(len(p["x"]) == 1 for p in points)
    for key, point in zip(("decode_b1", "decode_batch_weights_only", "decode_batch_with_kv",
                           "prefill"), points):
        x, y = point["x"][0], point["y"][0]
        assert f"{x:.3g}" in point["name"] or f"{x:,.0f}" in point["name"]
        assert x == pytest.approx(view.numbers[f"{key}_intensity"])
        assert y == pytest.approx(view.numbers[f"{key}_TFLOPs"])
        # the readout shows it, whole from 100 up ("2,048", never "2.05e+03")
        assert (f"{x:,.0f}" if x >= 100 else f"{x:.3g}") in view.text
        assert "e+" not in view.text
    # every point sits on the roof: min(peak, I x bandwidth)
    hw = specs.H100_SXM
    for x, y in ((p["x"][0], p["y"][0]) for p in points):
        assert y * units.TFLOP == pytest.approx(min(hw.peak_flops_per_s,
                                                    x * hw.mem_bw_bytes_per_s))


def test_roofline_figure_is_deterministic_with_titled_log_axes():
    hw = specs.H100_SXM
    pts = calc.roofline_points(specs.LLAMA_8B, hw)
    a = plots.roofline_figure(hw, pts).to_plotly_json()
    b = plots.roofline_figure(hw, pts).to_plotly_json()
    assert a == b
    layout = a["layout"]
    assert layout["xaxis"]["type"] == "log" and layout["yaxis"]["type"] == "log"
    assert "FLOP per byte" in layout["xaxis"]["title"]["text"]
    assert "TFLOP/s" in layout["yaxis"]["title"]["text"]
    roof = a["data"][0]
    assert roof["y"][1] == pytest.approx(989)               # the compute roof, TFLOP/s
    assert roof["x"][1] == pytest.approx(calc.ridge_point(hw))


# --- §3 -------------------------------------------------------------------------------------

def test_request_budget_defaults_are_the_chapters():
    n = widgets.RequestBudgetPanel().update().numbers
    assert close(n["ttft_ms"], 66)                           # "TTFT = 66 ms"
    assert close(n["decode_ms"], 1500)                       # "250 x 6 ms = 1,500 ms"
    assert close(n["total_s"], 1.57, 2)                      # "total ~ 1.57 s"
    assert close(n["decode_share_pct"], 96)                  # "96%"
    assert close(n["prefill_share_pct"], 4)                  # "the 4%"


def test_head_of_line_defaults_are_the_chapters():
    n = widgets.HeadOfLinePanel().update().numbers
    assert close(n["prefill_TFLOP"], 128)                    # "128e12 FLOP"
    assert close(n["stall_ms"], 259)                         # "259 ms"
    assert close(n["worst_itl_over_step"], 43)               # "~43x baseline"
    assert sig(n["stall_ms"], 260, 2)                        # "stalls for ~260 ms"
    # simulated: the stalled round runs the decode step and the whole prefill
    assert n["sim_baseline_itl_ms"] == pytest.approx(6)
    assert n["sim_worst_itl_ms"] == pytest.approx(n["stall_ms"] + 6)


def test_hol_timeline_draws_the_stall():
    out = hol_scenario(specs.LLAMA_8B, specs.H100_SXM, 8000, 6e-3, 0.5, 3)
    fig = plots.hol_timeline_figure(out["simulated"]["result"])
    by_name = {t.name: t for t in fig.data}
    stalled = by_name["decode step stalled behind the prefill"]
    assert len(stalled.x) == 3                               # one per running decode
    assert all(x == pytest.approx(out["closed_form"]["stall_s"] / units.ms + 6) for x in stalled.x)
    prefill = by_name["prefill (whole prompt in one round)"]
    assert "long" in list(prefill.y)
    assert fig.layout.xaxis.title.text == "time (ms)"


# --- §4 -------------------------------------------------------------------------------------

def test_kv_sizing_defaults_are_the_chapters_70b_at_tp4():
    n = widgets.KVSizingPanel().update().numbers
    assert close(n["kv_per_token_KB"], 320)                  # "327,680 B ~ 320 KB"
    assert close(n["kv_per_sequence_GB"], 2.62, 2)           # "2.62 GB"
    assert close(n["weights_GB"], 140)                       # "140 GB"
    assert close(n["weights_over_card"], 1.75, 2)            # "1.75x the card"
    assert close(n["weights_per_gpu_GB"], 35)                # "35 GB per GPU"
    assert n["kv_heads_per_gpu"] == 2                        # "8 KV heads / 4 GPUs = 2"
    assert close(n["free_kv_per_gpu_GB"], 41)                # "41 GB for KV"
    assert close(n["free_kv_total_GB"], 164)                 # "4 x 41 = 164 GB"
    assert n["max_sequences"] == 62                          # "~ 62"


def test_kv_sizing_8b_on_one_card_and_70b_not_fitting():
    panel = widgets.KVSizingPanel()
    n = panel.update(model=specs.LLAMA_8B.name, tp=1).numbers
    assert close(n["kv_per_token_KB"], 128)                  # "128 KB"
    assert close(n["kv_per_sequence_GB"], 1.05, 2)           # "1.05 GB"
    assert close(n["free_kv_total_GB"], 60)                  # "80 - 16 - 4 = 60 GB"
    assert n["max_sequences"] == 57                          # "~ 57 sequences"
    assert sig(n["kv_equals_weights_tokens"], 122_000, 3)    # "~ 122,000 tokens"
    alone = panel.update(model=specs.LLAMA_70B.name, tp=1).numbers
    assert alone["fits"] is False and alone["max_sequences"] == 0
    fp8 = panel.update(tp=4, kv_bytes=1.0).numbers
    assert close(fp8["kv_per_token_KB"], 160)                # FP8 KV: "another 2x"


def test_kv_figures_rebuild_the_missing_tables():
    fig = plots.kv_by_context_figure(calc.kv_by_context(specs.LLAMA_70B),
                                     capacity_bytes=specs.H100_SXM.mem_bytes)
    bars = fig.data[0]
    assert list(bars.x) == ["1,000", "4,000", "8,000", "32,000", "128,000"]
    assert close(bars.y[2], 2.62, 2)                         # 8K: 2.62 GB
    assert bars.y[-1] > 40                                   # 128K: more than half of 80 GB
    variants = plots.attention_variants_figure(calc.attention_variants(specs.LLAMA_70B))
    kib, seqs = variants.data
    assert list(kib.y) == [2560, 320, 40]
    assert list(seqs.y)[:2] == [3, 30]       # MHA "three"; GQA 30, the chapter's erratum "24"


def test_context_step_figure_marks_the_chapters_three_contexts():
    m, hw = specs.LLAMA_8B, specs.H100_SXM
    contexts = [1_000, 10_000, 100_000]
    rows = [calc.decode_vs_context(m, hw, L) for L in contexts]
    fig = plots.context_step_figure(contexts, rows, weight_bytes=m.streamed_weight_bytes,
                                    bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s,
                                    crossover_tokens=calc.kv_weight_crossover_tokens(m),
                                    marks=contexts)
    # one marker trace per context, its numbers in its legend entry
    marks = fig.data[2:5]
    assert [close(t.y[0], p, 1) for t, p in zip(marks, (4.8, 5.2, 8.7))] == [True] * 3
    assert "208 tok/s" in marks[0].name and "115 tok/s" in marks[2].name


# --- §5 -------------------------------------------------------------------------------------

def test_paged_defaults_are_the_chapters():
    n = widgets.PagedKVPanel().update().numbers
    assert close(n["live_kv_MB"], 78.6, 1)                   # "78.6 MB"
    assert close(n["kv_budget_GB"], 60)                      # "same 60 GB"
    assert n["naive_batch"] == 57                            # "~ 57 sequences"
    assert sig(n["paged_batch"], 760, 2)                     # "~ 760 sequences"
    assert sig(n["batch_gain"], 13, 2)                       # "13x the batch"
    assert close(n["naive_step_ms"], 6.1, 1)                 # "6.1 ms"
    assert sig(n["naive_tok_s"], 9300, 2)                    # "~ 9,300 tok/s"
    assert sig(n["paged_tok_s"], 33_600, 3)                  # "~ 33,600 tok/s"
    assert close(n["throughput_gain"], 3.6, 1)               # "3.6x"
    assert close(n["worst_waste_MB"], 2)                     # "~ 2 MB"
    # The chapter's 22.6 ms multiplies its rounded batch (760); with the floored 762 the
    # step is 22.66 ms (ledger 17.5/paged-step-ms). Both are "about 23 ms" (the interview).
    assert abs(n["paged_step_ms"] - 22.6) < 0.1 and close(n["paged_step_ms"], 23)
    assert n["paged_batch_blocks"] < n["paged_batch"]        # 16-token block tails cost a few


def test_paged_explorer_edges():
    panel = widgets.PagedKVPanel()
    same = panel.update(live_tokens=8000).numbers            # every sequence fills its reservation
    assert same["paged_batch"] == same["naive_batch"]
    big = panel.update(live_tokens=600, block_tokens=1024).numbers
    assert big["paged_batch_blocks"] == 60_000_000_000 // (1024 * 131_072)
    assert close(big["worst_waste_MB"] * units.MB / 131_072, 1023)   # "up to 1,023 tokens"


def test_allocator_demo_is_pagedattention():
    demo = allocator_demo()
    paged, naive = demo["paged"], demo["naive"]
    assert demo["admitted"]["paged"] == ["A", "B", "C", "D", "E", "F"]
    assert demo["admitted"]["naive"] == ["A", "B", "C", "D"] and demo["rejected"]["naive"]
    # the chapter's sequence A: 40 tokens in three blocks, the last 8/16 full
    assert paged.num_tokens("A") == 40 and len(paged.block_table("A")) == 3
    assert paged.tail_unused("A") == 8
    paged.check_invariants()
    naive.check_invariants()
    fig = plots.allocator_figure(paged, naive)
    cells = fig.data[0]
    for row in set(cells.y):                                 # each strip covers the pool once
        assert sum(x for x, y in zip(cells.x, cells.y) if y == row) == 1024
    assert fig.layout.xaxis.title.text == "KV memory (token slots)"


def test_allocator_demo_names_bad_arguments():
    with pytest.raises(ValueError, match="pool_tokens"):
        allocator_demo(pool_tokens=1000)
    with pytest.raises(ValueError, match="block_tokens"):
        allocator_demo(block_tokens=0)
    with pytest.raises(ValueError, match="sequences"):
        allocator_demo(sequences=[("A", 300, 10)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 120), st.integers(0, 120)), min_size=1, max_size=8),
       st.sampled_from([1, 4, 16, 32]))
def test_paging_wastes_less_than_a_block_and_admits_at_least_as_many(seqs, block):
    sequences = [(chr(65 + i), p, g) for i, (p, g) in enumerate(seqs)]
    demo = allocator_demo(block_tokens=block, max_len_tokens=256, pool_tokens=4096,
                          sequences=sequences)
    paged = demo["paged"]
    for sid in paged.sequences:
        assert 0 <= paged.tail_unused(sid) < block
    assert len(demo["admitted"]["paged"]) >= len(demo["admitted"]["naive"])


def test_paged_panel_draws_the_throughput_ceiling():
    panel = widgets.PagedKVPanel()
    view = panel.update()
    n = view.numbers
    assert n["ceiling_tok_s"] == pytest.approx(3.35e12 / (600 * 131_072))    # beta / (L k)
    assert n["half_ceiling_batch"] == pytest.approx(16e9 / (600 * 131_072))  # D_w / (L k)
    assert n["paged_tok_s"] < n["ceiling_tok_s"] < n["compute_ceiling_tok_s"]
    assert n["paged_share_of_ceiling_pct"] == pytest.approx(
        100 * n["paged_tok_s"] / n["ceiling_tok_s"], rel=1e-3)
    names = [t.get("name", "") for t in view.traces]
    assert any(x.startswith("ceiling beta / (L k)") for x in names)
    longer = panel.update(live_tokens=2400).numbers
    assert longer["ceiling_tok_s"] == pytest.approx(n["ceiling_tok_s"] / 4)
    _ = panel.reset()


# --- the fuller models in the explorers (issue 24): defaults unchanged, the toggles move -----

def test_memory_hierarchy_reached_rates_redraw_the_bars():
    panel = widgets.MemoryHierarchyPanel()
    spec = panel.update()
    assert spec.numbers["achieved_ridge_flop_per_byte"] == spec.numbers["ridge_flop_per_byte"]
    reached = panel.update(bandwidth_pct=70, compute_pct=50)
    bars = reached.traces[-1]["x"]
    assert bars[0] == pytest.approx(spec.traces[-1]["x"][0] / 0.7)   # the H100's, at 70%
    assert close(reached.numbers["achieved_ridge_flop_per_byte"], 295 * 0.5 / 0.7)
    assert reached.numbers["ridge_flop_per_byte"] == spec.numbers["ridge_flop_per_byte"]


def test_roofline_flop_toggle_moves_two_points_and_keeps_the_chapters_numbers():
    panel = widgets.RooflinePanel()
    chapter, fuller = panel.update(), panel.update(flops="attention")
    assert chapter.numbers == fuller.numbers                 # every number, both counts
    xs = [t["x"][0] for t in chapter.traces[-4:]]
    xs_full = [t["x"][0] for t in fuller.traces[-4:]]
    assert xs[:2] == xs_full[:2]                             # batch 1 and weights only stay
    assert xs_full[2] > xs[2] and xs_full[3] > xs[3]         # attention adds FLOPs, not bytes
    assert close(chapter.numbers["decode_batch_with_kv_intensity"], 49)   # 17 §2's "49"


def test_request_budget_price_toggle():
    panel = widgets.RequestBudgetPanel()
    chapter = panel.update(prompt_tokens=16)
    roof = panel.update(prompt_tokens=16, prefill_price="roofline")
    assert chapter.numbers == roof.numbers
    assert roof.traces[0]["x"][0] == pytest.approx(roof.numbers["roofline_ttft_ms"])
    assert chapter.traces[0]["x"][0] == pytest.approx(chapter.numbers["ttft_ms"])
    assert roof.numbers["roofline_ttft_ms"] > 9 * roof.numbers["ttft_ms"]   # a weight read


def test_head_of_line_readout_adds_the_fused_pass():
    n = widgets.HeadOfLinePanel().update().numbers
    assert close(n["stall_ms"], 259)                         # the chapter's, unchanged
    assert n["fused_stall_ms"] > n["sim_worst_itl_ms"] > n["stall_ms"]


def test_kv_sizing_counts_on_a_log_axis_from_one_sequence():
    view = widgets.KVSizingPanel().update()
    axis = view.layout["yaxis2"]
    assert axis["type"] == "log" and "log" in axis["title"]["text"]
    assert axis["tickvals"][0] == 1 and all(float(t).is_integer() for t in axis["tickvals"])
    n = widgets.KVSizingPanel().update(model=specs.QWEN3_8B.name).numbers
    assert n["streamed_weights_GB"] < n["weights_GB"]       # D_w: no input embedding table
    assert n["kv_equals_weights_tokens"] == pytest.approx(
        n["streamed_weights_GB"] * units.GB / (n["kv_per_token_KB"] * units.KiB))


def test_kv_sizing_block_curve_never_counts_more():
    view = widgets.KVSizingPanel().update()
    exact, blocks = view.traces[1]["y"], view.traces[2]["y"]
    assert all(b <= e for b, e in zip(blocks, exact))
    assert view.numbers["max_sequences_blocks"] == view.numbers["max_sequences"] == 62


def test_paged_roofline_curve_sits_on_or_under_the_chapters():
    panel = widgets.PagedKVPanel()
    view = panel.update()
    named = {t["name"]: t for t in view.traces}
    bytes_only = next(t for n, t in named.items() if n.startswith("batch 1, 2"))
    fuller = next(t for n, t in named.items() if n.startswith("the same batches"))
    assert all(f <= c + 1e-6 for f, c in zip(fuller["y"], bytes_only["y"]))
    assert close(view.numbers["roofline_paged_step_ms"], 24.8, 1)   # compute-bound at 50%
    full = panel.update(decode_efficiency_pct=100).numbers
    assert full["roofline_paged_step_ms"] == pytest.approx(full["paged_blocks_step_ms"])
