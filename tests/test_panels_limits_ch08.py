"""The explorers' second curves and toggles for where 8.3, 8.4 and 8.6 simplify (issue 24): the
chapter's numbers stay the defaults, and the fuller model's readouts match hand computations."""

from __future__ import annotations

import math

import pytest

from companion import calc, widgets
from companion.chapters import ch08
from companion.formulas import kv_management as km
from companion.specs import QWEN3_8B, RTX_PRO_6000
from companion.units import GB, MiB, ms


def test_paging_panel_draws_the_bound_and_the_average():
    n = widgets.PagingPanel().update().numbers
    # four sequences in blocks of 4: at most 4 x 3 slots, on average half of it
    assert (n["waste_bound_tokens"], n["expected_waste_tokens"]) == (12, 6)
    names = [t["name"] for t in widgets.PagingPanel().update().traces]
    assert any("bound" in x for x in names) and any("average" in x for x in names)


def test_retention_panel_keeps_the_chapters_numbers_by_default():
    n = widgets.RetentionPanel().update().numbers
    a = km.prefix_retention(QWEN3_8B, RTX_PRO_6000, ch08.SHARED_PREFIX_TOKENS,
                            hit_prob=ch08.RETENTION_HIT_PROB, efficiency=km.RECOMPUTE_EFFICIENCY,
                            link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
    assert n["value_a_ms"] == pytest.approx(a.value_s / ms)
    assert n["break_even_a_pct"] == pytest.approx(100 * a.break_even_hit_prob)


def test_retention_panel_fuller_pricing_drops_the_write_back():
    n = widgets.RetentionPanel().update(pricing="fuller").numbers
    # by hand: V = p (T_r - T_f), T_m = 0
    assert n["value_a_ms"] == pytest.approx(0.5 * (n["recompute_a_ms"] - n["fetch_a_ms"]))
    assert n["break_even_a_pct"] == 0
    slow = widgets.RetentionPanel().update(link_gb_per_s=4.0).numbers
    assert slow["keep_a_ms"] < 0 < slow["fuller_keep_a_ms"]


def test_retention_panel_piece_cost_adds_to_every_transfer():
    n = widgets.RetentionPanel().update(piece_cost_us=1.0).numbers
    pieces = 384 * 36 * 2
    assert n["fetch_a_ms"] == pytest.approx((864 * MiB / 64e9 + pieces * 1e-6) / ms)


def test_compressed_read_panel_adds_the_measured_rounds_price():
    n = widgets.CompressedReadPanel().update().numbers
    read = QWEN3_8B.streamed_weight_bytes + calc.kv_bytes(QWEN3_8B, ch08.LONG_PROMPT_TOKENS)
    assert n["measured_read_saving_ms"] == pytest.approx(
        calc.read_saving_from_rounds_s(540 * MiB, read) / ms)
    assert n["measured_net_saving_ms"] == pytest.approx(n["measured_read_saving_ms"] - 0.2)
    assert n["measured_read_saving_ms"] < n["read_saving_ms"] / 2


def test_offload_panel_schedules_the_round_layer_by_layer():
    n = widgets.OffloadPanel().update().numbers
    copy = 288 * MiB / (64 * GB)
    assert n["scheduled_round_ms"] == pytest.approx(9 * (copy + 26.26e-3 / 36) / ms)
    two = widgets.OffloadPanel().update(prefetch_buffers=2).numbers
    assert two["scheduled_round_ms"] == pytest.approx(two["round_ms"])


def test_retry_panel_with_every_failure_on_fixed_tasks():
    n = widgets.RetryCostPanel().update(systematic_pct=100.0).numbers
    assert n["answered_a_pct"] == pytest.approx(100 * 28 / 32)
    assert n["independent_answered_a_pct"] == pytest.approx(100 * (1 - (4 / 32) ** 3))
    # defaults: no systematic share, the independent picture, and its readouts unchanged
    d = widgets.RetryCostPanel().update().numbers
    assert d["per_correct_a_s"] == pytest.approx(d["expected_a_s"])


def test_admission_panel_poisson_queue_by_hand():
    n = widgets.AdmissionPanel().update(arrivals="poisson", output_tokens=30, deadline_s=1.0,
                                        queue_rate_per_h=1200.0).numbers
    s, lam = ch08.PREFILL_S + 29 * ch08.CLIENT_ITL_S, 1200.0 / 3600.0
    assert n["utilisation"] == pytest.approx(lam * s)
    assert n["mean_wait_s"] == pytest.approx(lam * s * s / (2 * (1 - lam * s)))
    # the slack 1 - S is under one service time: Erlang's first term alone
    assert 1.0 - s < s
    assert n["on_time_pct"] == pytest.approx(100 * (1 - lam * s) * math.exp(lam * (1.0 - s)))
    # at the chapter's request the queue's default rate is under capacity
    d = widgets.AdmissionPanel().update(arrivals="poisson").numbers
    assert 0 < d["utilisation"] < 1
    assert "utilisation" not in widgets.AdmissionPanel().update().numbers


def test_scheme_panel_counts_d_by_its_slowest_request():
    chapter = widgets.SchemePanel().update().numbers
    slow = widgets.SchemePanel().update(d_rounds="slowest").numbers
    assert chapter["D_mean_rounds"] == 85
    assert slow["D_total_s"] == pytest.approx(
        chapter["D_total_s"] + (slow["D_slowest_median_rounds"] - 85) * ch08.SHARED_ROUND_S)
    assert chapter["D_total_s"] == pytest.approx(slow["D_total_s"] - (
        slow["D_slowest_median_rounds"] - 85) * ch08.SHARED_ROUND_S)


def test_compress_transfer_panel_adds_the_pipelined_line():
    n = widgets.CompressTransferPanel().update().numbers
    size, r = 96 * MiB, 0.25
    assert n["pipelined_ms"] == pytest.approx(max(r * size / 64e9, size / 100e9) / ms)
    assert n["min_decompress_pipelined_GB_per_s"] == pytest.approx(64.0)
    assert n["min_decompress_GB_per_s"] == pytest.approx(64 / 0.75)       # 8.4.3's, unchanged
