"""The 8.1 / 8.2 explorers and figures: defaults reproduce the chapter's printed numbers.

Expected values are the chapter's printed numbers at their printed rounding (Chapter 8,
sections 8.1.1-8.2.4); simulated panels are checked for the trade the chapter describes.
"""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc, plots, specs, units, widgets
from companion.chapters import ch08
from companion.formulas.batching import token_emission_times
from tests.printed import rounds_to as printed


# --- 8.1 ----------------------------------------------------------------------------------------

def test_timeline_panel_defaults_are_8_1_1():
    panel = widgets.RequestTimelinePanel()
    n = panel.update().numbers
    assert printed(n["ttft_s"], "0.196")
    assert printed(n["request_time_s"], "6.95")
    assert printed(n["margin_s"], "0.05")
    assert n["meets_deadline"] is True
    assert printed(n["longest_interval_ms"], "26.5")
    one = panel.update(inserted_prefills=1).numbers        # "about 123 ms", "7.05 seconds"
    assert printed(one["longest_interval_ms"], "123")
    assert printed(one["request_time_s"], "7.05")
    assert one["meets_deadline"] is False
    assert panel.reset().numbers == n


@settings(max_examples=25, deadline=None)
@given(inserted=st.integers(0, 40), tokens=st.integers(1, 400),
       stall_ms=st.floats(27.0, 3000.0))
def test_each_inserted_prefill_adds_its_time_once(inserted, tokens, stall_ms):
    n = widgets.RequestTimelinePanel().update(inserted_prefills=inserted, output_tokens=tokens,
                                              inserted_prefill_ms=stall_ms).numbers
    applied = min(inserted, tokens - 1)
    assert n["inserted_prefills_applied"] == applied
    base = calc.lifecycle_request_time_s(ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S, tokens)
    assert n["request_time_s"] == pytest.approx(base + applied * stall_ms * units.ms, rel=1e-9)
    assert printed(n["ttft_s"], "0.196")


def test_timeline_scenario_matches_calc_for_one_stall():
    s = widgets.timeline_scenario("x", 0.1, 0.096, 0.0265, 256, stall_s=0.096,
                                  stalled_intervals=[128])
    assert s["token_times_s"] == token_emission_times(0.1, 0.096, 0.0265, 256,
                                                      stall_s=0.096, stalled_interval=128)
    assert s["stalls"][0][1] == 0.096
    assert widgets.stalled_interval_positions(256, 1) == [128]
    assert widgets.stalled_interval_positions(3, 10) == [1, 2]


def test_memory_panel_defaults_are_the_8_1_2_table():
    panel = widgets.MemoryBudgetPanel()
    short = panel.update().numbers
    assert printed(short["kv_per_token_KiB"], "144")
    assert printed(short["after_prefill_MiB"], "288")
    assert short["held_tokens"] == 2303 and short["allocated_tokens"] == 2304
    assert printed(short["reserved_MiB"], "324")
    assert short["requests_that_fit"] == 37
    assert short["fit_if_sized_at_prefill"] == 42
    assert printed(short["those_at_the_end_MiB"], "13,608")
    assert printed(short["weights_GiB"], "15.3")
    assert printed(short["left_for_activations_GiB"], "4.7")
    long_ = panel.update(prompt_tokens=8192).numbers
    assert printed(long_["after_prefill_MiB"], "1152")
    assert long_["held_tokens"] == 8447 and long_["allocated_tokens"] == 8448
    assert printed(long_["reserved_MiB"], "1188")
    assert long_["requests_that_fit"] == 10


@settings(max_examples=25, deadline=None)
@given(prompt=st.integers(1, 8192).map(lambda x: 16 * x), output=st.integers(1, 8192),
       block=st.integers(1, 256), pool=st.floats(0.5, 80.0),
       precision=st.sampled_from([2.0, 1.0]))
def test_memory_panel_reservations_fit_the_pool(prompt, output, block, pool, precision):
    n = widgets.MemoryBudgetPanel().update(prompt_tokens=prompt, output_tokens=output,
                                           block_tokens=block, kv_budget_gib=pool,
                                           kv_precision=precision).numbers
    assert n["requests_that_fit"] <= n["fit_if_sized_at_prefill"]
    assert n["requests_that_fit"] * n["reserved_MiB"] <= pool * 1024 + 1e-6
    assert (n["requests_that_fit"] + 1) * n["reserved_MiB"] > pool * 1024
    assert 0 <= n["allocated_tokens"] - n["held_tokens"] < block


def test_timeline_figure_draws_figure_8_2():
    alone = widgets.timeline_scenario("alone", 0.1, 0.096, 0.0265, 256)
    fig = plots.request_timeline_figure([alone], deadline_s=7.0)
    ticks = [t for t in fig.data if t.name == "token returned"][0]
    assert len(ticks.x) == 256
    assert printed(ticks.x[0], "0.196") and printed(ticks.x[-1], "6.95")
    deadline = [t for t in fig.data if t.name == "deadline"][0]
    assert list(deadline.x) == [7.0, 7.0]
    assert fig.layout.xaxis.title.text.endswith("(s)")


def test_memory_and_capacity_figures():
    budget = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, specs.QWEN3_8B.weight_bytes,
                                ch08.KV_BUDGET_BYTES)
    fig = plots.memory_budget_figure([("instance", budget)])
    rest = [t for t in fig.data if t.name.startswith("left for")][0]
    assert printed(rest.x[0], "4.7")
    rows = calc.kv_capacity_table(specs.QWEN3_8B, ch08.KV_BUDGET_BYTES)
    fig = plots.kv_capacity_figure(rows, ch08.KV_BUDGET_BYTES)
    assert [round(y) for y in fig.data[1].y] == [324, 1188]
    assert "37 fit" in fig.data[1].text[0] and "10 fit" in fig.data[1].text[1]


# --- 8.2.1 --------------------------------------------------------------------------------------

def test_decode_batch_panel_reproduces_8_2_1():
    panel = widgets.DecodeBatchPanel()
    n16 = panel.update().numbers
    assert printed(n16["weight_share_GiB"], "0.88")
    assert printed(n16["kv_share_GiB"], "0.28125")
    assert n16["b_KV"] == 51 and n16["requests_fit_12GiB"] == 37
    assert n16["bound"] == "memory" and math.isinf(n16["compute_catchup_batch"])
    assert printed(panel.update(batch=1).numbers["read_per_token_GiB"], "14.38")
    n64 = panel.update(batch=64).numbers
    assert printed(n64["read_per_token_GiB"], "0.50")
    assert printed(n64["weight_share_GiB"], "0.22")
    n8k = panel.update(context_tokens=8192).numbers
    assert n8k["b_KV"] == 13 and n8k["requests_fit_12GiB"] == 10
    rom = panel.update(context_tokens=2048, weights_in_hbm=False).numbers   # Figure 8-4
    assert rom["read_per_token_GiB"] == pytest.approx(0.28125)


def test_decode_batch_panel_shows_measurements_only_where_measured():
    panel = widgets.DecodeBatchPanel()
    measured = [t for t in panel.update().traces if t["name"].startswith("Experiment 8-1")][0]
    assert list(measured["batch" if "batch" in measured else "x"]) == [1, 4, 16, 64]
    other = panel.update(hardware=specs.H100_SXM.name).traces
    assert [t for t in other if t["name"].startswith("Experiment 8-1")][0]["x"] == []


def test_read_volume_figures():
    d_w, k = specs.QWEN3_8B.streamed_weight_bytes, calc.kv_bytes_per_token(specs.QWEN3_8B)
    batches = [1, 2, 4, 8, 16, 32, 64]
    curves = {"2K": (calc.read_bytes_curve(d_w, batches, 2048, k), 2048 * k)}
    fig = plots.read_volume_figure(batches, curves, crossovers={"2K": 51})
    assert printed(fig.data[0].y[0], "14.38") and printed(fig.data[0].y[-1], "0.50")
    assert fig.data[2].text == ("b_KV = 51",)
    rom = plots.rom_weights_figure(batches, calc.read_bytes_curve(d_w, batches, 8192, k),
                                   calc.read_bytes_curve(d_w, batches, 8192, k,
                                                         weights_in_hbm=False))
    assert printed(rom.data[0].y[0], "1.125")
    assert all(a > b for a, b in zip(rom.data[1].y, rom.data[0].y))


def test_batch_sweep_table_quotes_the_measurements():
    rows = widgets.chapter_batch_sweep()
    assert [r["tokens_per_s"] for r in rows] == [37, 1165]
    assert printed(rows[0]["implied_tokens_per_s"], "37")   # 256 / (0.096 + 255 x 0.027)


def test_lora_figure():
    adapter = calc.lora_adapter_bytes(specs.QWEN3_8B, 16, ("q", "v"))
    fig = plots.lora_capacity_figure(range(1, 101), adapter,
                                     calc.kv_bytes(specs.QWEN3_8B, 8192),
                                     kv_budget_bytes=12 * units.GiB,
                                     matrix_weight_bytes=specs.QWEN3_8B.streamed_weight_bytes)
    assert printed(fig.data[0].y[-1], "1.43") and printed(fig.data[1].y[-1], "112.5")


# --- 8.2.2 (simulated) --------------------------------------------------------------------------

def test_schedule_panel_reproduces_8_2_2():
    panel = widgets.SchedulePanel()
    n = panel.update().numbers
    assert printed(n["static_total_ms"], "870") and printed(n["static_longest_interval_ms"], "26")
    assert printed(n["continuous_total_ms"], "766")
    assert printed(n["continuous_longest_interval_ms"], "376")
    assert printed(n["chunked_total_ms"], "844")
    assert printed(n["chunked_longest_interval_ms"], "133")
    assert n["total_ms"] == n["chunked_total_ms"]
    assert panel.update(policy="static").numbers["total_ms"] == n["static_total_ms"]


def test_smaller_chunks_shorten_the_longest_interval():
    panel = widgets.SchedulePanel()
    small = panel.update(chunk_tokens=512).numbers
    large = panel.update(chunk_tokens=8192, token_budget=16384).numbers
    assert small["longest_interval_ms"] < large["longest_interval_ms"]
    assert small["total_ms"] > large["total_ms"]


def test_gantt_figure_is_deterministic_and_complete():
    runs = widgets.chapter_schedules()
    figs = [plots.schedule_gantt_figure(runs) for _ in range(2)]
    assert json.dumps(figs[0].to_plotly_json(), sort_keys=True, default=str) == \
        json.dumps(figs[1].to_plotly_json(), sort_keys=True, default=str)
    ticks = [t for t in figs[0].data if t.name == "token emitted"]
    assert len(ticks) == 3
    assert all(len(t.x) == 8 + 2 + 2 + 4 for t in ticks)   # every token once per policy
    assert max(ticks[0].x) == pytest.approx(runs["static"].makespan_s / units.ms)


# --- 8.2.3 / 8.2.4 ------------------------------------------------------------------------------

def test_chunked_prefill_panel_reproduces_8_2_3():
    n = widgets.ChunkedPrefillPanel().update().numbers
    assert n["chunks"] == 16
    assert n["first_chunk_pairs"] == 131_328 and n["last_chunk_pairs"] == 4_063_488
    assert printed(n["last_over_first"], "31")


def test_pair_area_figure_is_figure_8_8():
    pairs = [calc.attention_pairs(512, 0), calc.attention_pairs(512, 7680)]
    fig = plots.pair_area_figure(512, [0, 7680], pairs)
    labels = [t.text[0].strip() for t in fig.data if t.mode == "text"]
    assert labels == ["h = 0: 131,328 pairs", "h = 7,680: 4,063,488 pairs"]
    rect = fig.data[3]
    assert max(rect.x) == 7680 and max(rect.y) == 512


def test_graph_padding_and_token_budget():
    shapes = ch08.CAPTURED_SHAPES
    fig = plots.graph_padding_figure([16, 17, 18], [calc.padded_rows(r, shapes)
                                                    for r in (16, 17, 18)],
                                     captured_shapes=shapes)
    assert list(fig.data[0].y) == [16, 32, 32]
    panel = widgets.TokenBudgetPanel()
    for graphs in ("none", "16,32", "pow2"):
        for target in (27.0, 50.0, 120.0):
            n = panel.update(graphs=graphs, itl_target_ms=target).numbers
            assert n["round_ms"] <= target + 1e-9 or n["token_budget"] == 0
    n = panel.update(graphs="16,32", itl_target_ms=27.0).numbers
    assert n["rows_executed"] in (16, 32)


def test_budget_sweep_panel_shows_the_8_2_4_trade():
    n = widgets.BudgetSweepPanel().update().numbers
    budgets = widgets.SWEEP_BUDGETS
    itl = [n[f"max_itl_ms@{b}"] for b in budgets]
    queue = [n[f"queue_mean_ms@{b}"] for b in budgets]
    assert itl == sorted(itl) and queue == sorted(queue, reverse=True)
    assert n["budget_with_least_queueing"] == max(budgets)
    assert n["largest_budget_within_target"] in budgets


# --- the 8.1 explorers' ranges and labels ------------------------------------------------------

def test_capacity_panel_draws_the_shared_prefix_only_where_a_prompt_holds_it():
    panel = widgets.KVCapacityPanel()
    view = panel.update()
    shared = view.traces[1]
    prefix = ch08.SHARED_PREFIX_TOKENS
    assert min(shared["x"]) == prefix and all(x >= prefix for x in shared["x"])
    # each point of the curve is the capacity with the whole prefix stored once
    for x, y in zip(shared["x"], shared["y"]):
        assert y == calc.max_concurrent(ch08.KV_BUDGET_BYTES, specs.QWEN3_8B, x, 256,
                                        shared_prefix_tokens=prefix)
    assert "6,144-token prefix" in shared["name"]
    # a prompt shorter than the prefix cannot contain it: no shared count, one marker
    short = panel.update(prompt_tokens=2048)
    assert short.numbers["shared_prefix_requests"] is None
    assert short.numbers["independent_requests"] == 37
    assert len(short.traces[2]["x"]) == 1 and "cannot contain" in short.text


def test_timeline_prefill_sliders_start_at_the_fitted_fixed_part():
    controls = {c.name: c for c in widgets.RequestTimelinePanel.controls}
    floor = math.ceil(ch08.ROUND_FIXED_S / units.ms)          # 26.22 ms -> 27 ms
    assert controls["prefill_ms"].min == controls["inserted_prefill_ms"].min == floor == 27
    # in a shared pass the shortest inserted prefill still costs its per-token part
    n = widgets.RequestTimelinePanel().update(inserted_pass="shared", inserted_prefills=40,
                                              inserted_prefill_ms=floor).numbers
    assert n["stall_per_insert_ms"] == pytest.approx(floor - 26.22)


def test_timeline_flags_an_interval_below_the_read_floor():
    # 8.6.3: 15.44 GB at 1792 GB/s is 8.62 ms, the least a batch-1 decode step can take
    floor_ms = (15_136_811_008 + 2048 * 147_456) / 1792e9 / units.ms
    assert printed(floor_ms, "8.62")
    panel = widgets.RequestTimelinePanel()
    assert not panel.update().numbers["below_read_floor"]
    below = panel.update(interval_ms=round(floor_ms - 0.01, 2))
    assert below.numbers["below_read_floor"] and "read floor" in below.text
    assert not panel.update(interval_ms=round(floor_ms + 0.01, 2)).numbers["below_read_floor"]


def test_timeline_second_row_says_how_many_prefills_it_holds():
    panel = widgets.RequestTimelinePanel()
    labels = lambda view: panel._layout(view)["yaxis"]["ticktext"]   # noqa: E731
    assert labels(panel.update()) == ["alone", "with 0 inserted prefills"]
    assert labels(panel.update(inserted_prefills=1)) == ["alone", "with 1 inserted prefill"]
    assert labels(panel.update(inserted_prefills=3)) == ["alone", "with 3 inserted prefills"]


def test_memory_panel_counts_on_a_log_axis_and_lists_only_parts_it_draws():
    panel = widgets.MemoryBudgetPanel()
    fig = panel.figure(panel.update())
    assert fig.layout.yaxis2.type == "log"
    assert 10 in fig.layout.yaxis2.tickvals and 30 in fig.layout.yaxis2.tickvals
    shown = {t.name for t in fig.data if t.type == "bar" and t.showlegend}
    hidden = {t.name for t in fig.data if t.type == "bar" and t.showlegend is False}
    assert "over capacity" in hidden and "weights M_w" in shown
    # the static figure of 8.1.2: no pool left free, nothing over capacity
    budget = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, specs.QWEN3_8B.weight_bytes,
                                ch08.KV_BUDGET_BYTES)
    static = plots.memory_budget_figure([("instance", budget)], hide_empty=True)
    assert {t.name for t in static.data if t.type == "bar" and t.showlegend is False} == {
        "KV pool left free", "activations + graph buffers (M_a + M_u, listed)", "over capacity"}
    over = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, specs.LLAMA_70B.weight_bytes,
                              ch08.KV_BUDGET_BYTES)
    assert [t for t in plots.memory_budget_figure([("70B", over)], hide_empty=True).data
            if t.name == "over capacity"][0].showlegend
