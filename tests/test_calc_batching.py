"""8.1-8.2 closed forms (companion.formulas.batching) against the chapter's printed numbers.

Expected values are the chapter's, at its printed rounding; invariants are checked with hypothesis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion.formulas.batching import (LORA_PROJECTIONS, crossover_vs_capacity,
                                         insertable_prefills, kv_capacity_row, read_volume_table,
                                         token_emission_times)
from companion.formulas.core import decode_step_parts
from companion.specs import QWEN3_8B, RTX_PRO_6000
from companion.units import GB, GiB, KiB, MiB

M = QWEN3_8B
HW = RTX_PRO_6000
K = 147_456
D_W = 15_136_811_008
SETTINGS = settings(max_examples=60, deadline=None)


# --- 8.1.1 / 8.1.3: timeline and metrics -------------------------------------------------------

def test_request_time_of_the_short_request():
    assert calc.lifecycle_request_time_s(0.1, 0.096, 0.0265, 256) == pytest.approx(6.95, abs=0.005)
    stalled = calc.lifecycle_request_time_s(0.1, 0.096, 0.0265, 256, stall_s=0.096)
    assert stalled == pytest.approx(7.05, abs=0.005)


def test_prefills_a_request_absorbs_before_its_deadline():
    # 6.95 s alone against 7 s: no 96 ms prefill fits (one makes it 7.05 s, 8.1.1)
    assert insertable_prefills(0.1, 0.096, 0.0265, 256, 7.0, 0.096) == 0
    # an 8 s deadline leaves 1.05 s: 10 of them
    assert insertable_prefills(0.1, 0.096, 0.0265, 256, 8.0, 0.096) == 10
    # at most one per output interval, none when it misses alone
    assert insertable_prefills(0.1, 0.096, 0.0265, 4, 100.0, 0.096) == 3
    assert insertable_prefills(0.1, 0.096, 0.0265, 256, 6.0, 0.096) == 0
    assert insertable_prefills(0.1, 0.096, 0.0265, 1, 100.0, 0.096) == 0


def test_timeline_metrics():
    times = token_emission_times(0.1, 0.096, 0.0265, 256)
    assert len(times) == 256
    assert calc.ttft_s(times) == pytest.approx(0.196)
    itl = calc.inter_token_intervals(times)
    assert len(itl) == 255
    assert sum(itl) == pytest.approx(6.76, abs=0.005)
    assert calc.request_time_s(times) == pytest.approx(6.95, abs=0.005)


def test_inserted_prefill_stretches_one_interval():
    times = token_emission_times(0.1, 0.096, 0.0265, 256, stall_s=0.096, stalled_interval=10)
    itl = calc.inter_token_intervals(times)
    assert max(itl) * 1e3 == pytest.approx(123, abs=0.5)
    assert itl.index(max(itl)) == 9          # interval 10 is the 10th gap
    assert calc.request_time_s(times) == pytest.approx(7.05, abs=0.005)


def test_metrics_with_an_arrival_time():
    times = [1.3, 1.35, 1.5]
    assert calc.ttft_s(times, arrival_s=1.0) == pytest.approx(0.3)
    assert calc.request_time_s(times, arrival_s=1.0) == pytest.approx(0.5)
    assert calc.inter_token_intervals([2.0]) == []


def test_timeline_rejects_bad_orders():
    with pytest.raises(ValueError, match="token_times_s"):
        calc.inter_token_intervals([0.3, 0.2])
    with pytest.raises(ValueError, match="arrival_s"):
        calc.ttft_s([0.3, 0.4], arrival_s=0.5)
    with pytest.raises(ValueError, match="stalled_interval"):
        token_emission_times(0.1, 0.1, 0.02, 4, stall_s=0.1, stalled_interval=4)
    with pytest.raises(ValueError, match="stall_s"):
        calc.lifecycle_request_time_s(0.1, 0.1, 0.02, 1, stall_s=0.1)


def test_decode_throughput():
    assert calc.decode_tokens_per_s(16, 0.02744) == pytest.approx(583, abs=0.5)
    assert calc.decode_tokens_per_s(1, 0.02626) == pytest.approx(38, abs=0.5)


@SETTINGS
@given(queue=st.floats(0, 5), prefill=st.floats(1e-3, 5), itl=st.floats(1e-4, 0.5),
       g=st.integers(1, 400), stall=st.floats(0, 1), arrival=st.floats(0, 100))
def test_request_time_is_ttft_plus_intervals(queue, prefill, itl, g, stall, arrival):
    stall = stall if g > 1 else 0.0
    times = [arrival + t for t in token_emission_times(queue, prefill, itl, g, stall_s=stall)]
    closed = calc.lifecycle_request_time_s(queue, prefill, itl, g, stall_s=stall)
    total = calc.request_time_s(times, arrival)
    assert total == pytest.approx(closed, rel=1e-9, abs=1e-9)
    assert total == pytest.approx(calc.ttft_s(times, arrival)
                                  + sum(calc.inter_token_intervals(times)), rel=1e-9, abs=1e-9)
    assert len(calc.inter_token_intervals(times)) == g - 1


# --- 8.1.2: memory budget and capacity table ---------------------------------------------------

def test_memory_budget_of_the_instance():
    b = calc.memory_budget(32 * GiB, M.weight_bytes, 12 * GiB)
    assert b.weight_bytes / GiB == pytest.approx(15.3, abs=0.05)
    assert b.slack_bytes / GiB == pytest.approx(4.7, abs=0.05)
    assert b.fits
    over = calc.memory_budget(32 * GiB, M.weight_bytes, 12 * GiB, activation_bytes=5 * GiB)
    assert not over.fits and over.slack_bytes < 0
    assert over.as_dict()["used_bytes"] == over.used_bytes


def test_capacity_table_rows():
    short, long_ = calc.kv_capacity_table(M, 12 * GiB)
    assert (short["name"], long_["name"]) == ("Short conversation", "Long context")
    assert short["prefill_kv_bytes"] / MiB == 288 and long_["prefill_kv_bytes"] / MiB == 1152
    assert (short["computed_tokens"], long_["computed_tokens"]) == (2303, 8447)
    assert (short["allocated_tokens"], long_["allocated_tokens"]) == (2304, 8448)
    assert short["final_kv_bytes"] / MiB == 324 and long_["final_kv_bytes"] / MiB == 1188
    assert (short["fit"], long_["fit"]) == (37, 10)
    assert short["fit_if_sized_at_prefill"] == 42
    assert short["final_bytes_if_sized_at_prefill"] / MiB == 13_608


def test_capacity_table_custom_and_bad_requests():
    rows = calc.kv_capacity_table(M, 12 * GiB, {"tiny": (16, 1)})
    assert rows[0]["allocated_tokens"] == 16
    with pytest.raises(TypeError, match="requests"):
        calc.kv_capacity_table(M, 12 * GiB, [(2048, 256)])
    with pytest.raises(ValueError, match="requests"):
        calc.kv_capacity_table(M, 12 * GiB, {})
    with pytest.raises(ValueError, match="requests"):
        calc.kv_capacity_table(M, 12 * GiB, {"x": (1, 2, 3)})


@SETTINGS
@given(budget_gib=st.floats(0, 64), prompt=st.integers(1, 20000), out=st.integers(1, 2000),
       block=st.sampled_from([1, 8, 16, 32]))
def test_capacity_row_is_a_tight_floor(budget_gib, prompt, out, block):
    budget = budget_gib * GiB
    row = kv_capacity_row(M, budget, prompt, out, block_tokens=block)
    assert row["fit"] * row["final_kv_bytes"] <= budget < (row["fit"] + 1) * row["final_kv_bytes"]
    assert row["fit"] <= row["fit_if_sized_at_prefill"]
    assert 0 <= row["allocated_tokens"] - row["computed_tokens"] < block


# --- 8.2.1: weight reuse, LoRA, read volume, step time ---------------------------------------

def test_weight_reuse_intensity():
    assert calc.weight_reuse_intensity(1) == 1.0
    assert calc.weight_reuse_intensity(16) / calc.weight_reuse_intensity(1) == 16


def test_lora_adapter_sizes():
    one = calc.lora_adapter_bytes(M, 16, ("q", "v"))
    assert one / MiB == pytest.approx(14.6, abs=0.05)
    hundred = calc.lora_adapter_bytes(M, 16, ("q", "v"), n_adapters=100)
    assert hundred / GiB == pytest.approx(1.43, abs=0.005)
    assert M.streamed_weight_bytes / GiB == pytest.approx(14.1, abs=0.05)
    assert 100 * calc.kv_bytes(M, 8192) / GiB == 112.5
    with pytest.raises(ValueError, match="projections"):
        calc.lora_adapter_bytes(M, 16, ("q", "q"))
    with pytest.raises(ValueError, match="projections"):
        calc.lora_adapter_bytes(M, 16, ("qkv",))
    with pytest.raises(ValueError, match="model"):
        calc.lora_adapter_bytes(calc_model_without_shape(), 16)


def calc_model_without_shape():
    from companion.specs import LLAMA_8B
    return LLAMA_8B.with_(intermediate_size=None)


@SETTINGS
@given(rank=st.integers(1, 256), n=st.integers(1, 200),
       projs=st.sets(st.sampled_from(LORA_PROJECTIONS), min_size=1))
def test_lora_is_linear_in_rank_and_adapters(rank, n, projs):
    projs = sorted(projs)
    base = calc.lora_adapter_bytes(M, 1, projs)
    assert calc.lora_adapter_bytes(M, rank, projs, n_adapters=n) == rank * n * base


def test_read_volume_per_output_token():
    reads = calc.read_bytes_curve(D_W, [1, 16, 64], 2048, K) / GiB
    assert reads[0] == pytest.approx(14.38, abs=0.005)
    assert reads[2] == pytest.approx(0.50, abs=0.005)
    assert reads[0] / reads[2] == pytest.approx(29, abs=0.5)
    weights_only = calc.read_bytes_curve(D_W, [16, 64], 0, K) / GiB
    assert weights_only == pytest.approx([0.88, 0.22], abs=0.005)
    rom = calc.read_bytes_curve(D_W, [1, 16, 64], 2048, K, weights_in_hbm=False)
    assert np.all(rom == 2048 * K) and rom[0] / GiB == 0.28125


@SETTINGS
@given(batches=st.lists(st.integers(1, 4096), min_size=1, max_size=20, unique=True),
       ctx=st.integers(0, 65536))
def test_read_curve_falls_toward_the_kv_line(batches, ctx):
    batches = sorted(batches)
    hbm = calc.read_bytes_curve(D_W, batches, ctx, K)
    rom = calc.read_bytes_curve(D_W, batches, ctx, K, weights_in_hbm=False)
    assert np.all(np.diff(hbm) < 0) or len(batches) == 1
    assert np.all(hbm > rom)
    assert np.allclose(hbm - rom, D_W / np.array(batches))


def test_exercise_8_1_read_table():
    rows = read_volume_table(D_W, 144 * KiB)
    got = {(r["context_tokens"], r["batch"]): r for r in rows}
    assert len(rows) == 8
    # worked by hand: D_w / b + L k in GiB
    assert got[2048, 1]["read_bytes_per_token"] / GiB == pytest.approx(14.3785, abs=1e-3)
    assert got[8192, 1]["read_bytes_per_token"] / GiB == pytest.approx(15.222, abs=1e-3)
    assert got[8192, 16]["read_bytes_per_token"] / GiB == pytest.approx(2.006, abs=1e-3)
    assert [got[2048, b]["kv_exceeds_weights"] for b in (1, 4, 16, 64)] == [0, 0, 0, 1]
    assert [got[8192, b]["kv_exceeds_weights"] for b in (1, 4, 16, 64)] == [0, 0, 1, 1]


def test_exercise_8_1_crossover_vs_capacity():
    short = crossover_vs_capacity(M, 12 * GiB, 2048, 256)
    long_ = crossover_vs_capacity(M, 12 * GiB, 8192, 256)
    assert (short["crossover_batch"], short["max_requests"]) == (51, 37)
    assert (long_["crossover_batch"], long_["max_requests"]) == (13, 10)
    assert short["capacity_limited"] and long_["capacity_limited"]
    roomy = crossover_vs_capacity(M, 96 * GiB, 8192, 256)
    assert not roomy["capacity_limited"]


def test_resident_bytes_of_64_requests():
    total = calc.batch_resident_bytes(M, 64, calc.held_tokens(2048, 2))
    assert total / GB == pytest.approx(35.7, abs=0.05)


def test_step_parts_match_core_and_the_efficiency_table():
    for b in (1, 4, 16, 64):
        parts = decode_step_parts(M, HW, b, 2048)
        assert parts.step_s == pytest.approx(calc.decode_step_time(M, HW, b, 2048))
        assert parts.bound == "memory"
    # 8.6.3's "time required at 1792 GB/s": 8.62 ms at batch 1, 19.23 ms at batch 64
    curve = calc.decode_step_time_curve(M, HW, [1, 64], 2048)
    assert curve["read_s"] * 1e3 == pytest.approx([8.62, 19.23], abs=0.005)
    assert np.all(curve["step_s"] == np.maximum(curve["compute_s"], curve["read_s"]))
    rom = decode_step_parts(M, HW, 1, 2048, weights_in_hbm=False)
    assert rom.read_s == pytest.approx(2048 * K / HW.mem_bw_bytes_per_s)


def test_compute_never_catches_up_at_2k():
    assert calc.compute_catchup_batch(M, HW, 2048) == math.inf
    assert calc.compute_catchup_batch(M, HW, 8192) == math.inf
    l_star = calc.compute_bound_context_tokens(M, HW)
    assert 300 < l_star < 400           # F/P = 30.0 us against k/beta = 82 ns per token
    b = calc.compute_catchup_batch(M, HW, 256)
    assert math.isfinite(b)
    assert calc.compute_catchup_batch(M, HW, 256, weights_in_hbm=False) == 0


@SETTINGS
@given(ctx=st.integers(0, 4096), flops=st.floats(1e9, 1e12))
def test_catchup_batch_balances_the_two_terms(ctx, flops):
    b = calc.compute_catchup_batch(M, HW, ctx, flops_per_token=flops)
    l_star = calc.compute_bound_context_tokens(M, HW, flops_per_token=flops)
    if ctx >= l_star * (1 + 1e-9):
        assert b == math.inf
    elif ctx < l_star * (1 - 1e-6):
        assert math.isfinite(b) and b > 0
        F, P, beta = flops, HW.peak_flops_per_s, HW.mem_bw_bytes_per_s
        compute = b * F / P
        read = (M.streamed_weight_bytes + b * ctx * K) / beta
        assert compute == pytest.approx(read, rel=1e-9)


# --- 8.2.3: chunked prefill ---------------------------------------------------------------------

def test_chunk_pairs_of_an_8k_prompt():
    pairs = calc.chunk_pair_series(8192, 512)
    assert len(pairs) == 16
    assert pairs[0] == 131_328 and pairs[-1] == 4_063_488
    assert pairs[-1] / pairs[0] == pytest.approx(31, abs=0.5)
    assert calc.prefill_chunks(8192, 512)[-1] == (512, 7680)


def test_backbone_computation_rises_32_percent():
    flops = calc.chunk_flops_series(M, 8192, 512)
    assert (flops[-1] / flops[0] - 1) * 100 == pytest.approx(32, abs=0.5)


def test_split_block_doubles_ffn_reads():
    ffn = 3 * 4096 * 12288 * 2
    assert ffn / MiB == 288
    assert calc.split_weight_read_bytes(ffn, 256, 128) / MiB == 576
    assert calc.split_weight_read_bytes(ffn, 256, 256) / MiB == 288
    assert calc.split_weight_read_bytes(ffn, 257, 128) / MiB == 3 * 288


@SETTINGS
@given(n=st.integers(1, 20000), c=st.integers(1, 4096), h0=st.integers(0, 10000))
def test_chunking_preserves_total_pairs(n, c, h0):
    chunks = calc.prefill_chunks(n, c, h0)
    assert sum(ci for ci, _ in chunks) == n
    assert all(ci <= c for ci, _ in chunks)
    pairs = calc.chunk_pair_series(n, c, h0)
    assert sum(pairs) == calc.attention_pairs(n, h0)
    assert pairs == sorted(pairs) or chunks[-1][0] < c     # full chunks never get cheaper


# --- 8.2.4: graph padding and token budget ---------------------------------------------------

def test_graph_padding_example():
    shapes = (16, 32)
    assert calc.padded_rows(18, shapes) == 32
    assert calc.padded_rows(17, shapes) == 32
    assert calc.padded_rows(16, shapes) == 16
    assert calc.padding_rows(17, shapes) == 15
    assert calc.padding_rows(16, shapes) == 0
    assert calc.padded_rows(40, shapes) == 40      # above every graph: eager, no padding
    assert calc.padded_rows(3, [32, 16]) == 16     # order of the shapes does not matter


@SETTINGS
@given(rows=st.integers(1, 5000),
       shapes=st.lists(st.integers(1, 4096), min_size=1, max_size=12, unique=True))
def test_padding_picks_the_smallest_fitting_graph(rows, shapes):
    padded = calc.padded_rows(rows, shapes)
    assert padded >= rows
    fitting = [s for s in shapes if s >= rows]
    assert padded == (min(fitting) if fitting else rows)
    assert calc.padding_rows(rows, shapes) == padded - rows


def test_round_model_reproduces_the_fitted_rounds():
    # 8.2.2's fit: one 2K decode round 26.26 ms, a 2K prefill alone 94.8 ms
    assert calc.mixed_round_time_s(1, 2048, 0) * 1e3 == pytest.approx(26.26, abs=0.005)
    assert calc.mixed_round_time_s(0, 0, 2048) * 1e3 == pytest.approx(94.8, abs=0.05)
    assert calc.mixed_round_time_s(0, 0, 0) == pytest.approx(26.22e-3)
    assert (calc.mixed_round_time_s(1, 2048, 17, captured_shapes=[16, 32])
            == pytest.approx(calc.mixed_round_time_s(1, 2048, 31, captured_shapes=[16, 32])
                             - 3e-9 * (calc.attention_pairs(31, 0) - calc.attention_pairs(17, 0))))


def test_token_budget_for_an_itl_target():
    full = calc.token_budget_for_itl(0.0948, 0, 0)
    assert full == 2048 or abs(full - 2048) <= 1        # a 2K prefill alone takes 94.8 ms
    assert calc.token_budget_for_itl(0.02, 1, 2048) == 0   # the decode round alone is 26.26 ms
    short_ctx = calc.token_budget_for_itl(0.05, 1, 2048, 0)
    long_ctx = calc.token_budget_for_itl(0.05, 1, 2048, 7680)
    assert long_ctx < short_ctx                          # longer context, fewer new tokens
    padded = calc.token_budget_for_itl(0.05, 1, 2048, captured_shapes=[256, 512, 1024])
    assert padded == 511                                 # 1 decode + 511 new = the 512 graph


@SETTINGS
@given(target_ms=st.floats(20, 400), b=st.integers(0, 64), L=st.integers(0, 8192),
       h=st.integers(0, 8192), pad=st.booleans())
def test_token_budget_is_the_largest_fit(target_ms, b, L, h, pad):
    shapes = [16, 32, 64, 128, 256, 512, 1024, 2048] if pad else None
    target = target_ms * 1e-3
    c = calc.token_budget_for_itl(target, b, L, h, captured_shapes=shapes)
    t = calc.mixed_round_time_s(b, L, c, h, captured_shapes=shapes)
    t_next = calc.mixed_round_time_s(b, L, c + 1, h, captured_shapes=shapes)
    assert t_next > target
    if c > 0:
        assert t <= target * (1 + 1e-9)
    if pad:
        assert c <= calc.token_budget_for_itl(target, b, L, h)
