"""8.4's closed forms against the chapter's printed numbers, Exercises 8-5 and 8-6, invariants.

Expected values are the chapter's printed numbers at their printed rounding (or, for exercise
parts the chapter does not print, worked by hand in the comment next to them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from companion import calc
from companion.chapters import ch08
from companion.formulas import compression as cm
from companion.formulas.compression import quant_group_layout
from companion.formulas.core import QUANT_FORMATS
from companion.ledger_entries import ch08_4
from companion.specs import M2_MAX, QWEN3_8B, QWEN3_235B_A22B, RTX_PRO_6000
from companion.units import GB, GiB, MiB, ms

M = QWEN3_8B
FAST = settings(max_examples=60, deadline=None)


# --- 8.4.1 ----------------------------------------------------------------------------------

def test_q2k_layout():
    q = calc.quant_format_layout("Q2_K")
    assert (q.code_bytes, q.metadata_bytes, q.group_bytes) == (64, 20, 84)
    assert q.bits_per_value == 2.625
    assert round(100 * q.metadata_fraction) == 24
    assert quant_group_layout(256, 2, 20) == q


@pytest.mark.parametrize("fmt", sorted(QUANT_FORMATS))
def test_named_layouts_agree_with_core(fmt):
    layout = calc.quant_format_layout(fmt)
    group, group_bytes = QUANT_FORMATS[fmt]
    assert layout.group_values == group
    assert layout.group_bytes == group_bytes
    assert layout.bits_per_value == calc.bits_per_value(fmt)
    assert 0 <= layout.metadata_fraction < 1


def test_metadata_share_rises_as_bits_fall():
    shares = [calc.quant_format_layout(f).metadata_fraction for f in ("bf16", "q8_0", "q4_0")]
    assert shares == sorted(shares)
    assert shares[0] == 0


def test_m2_max_example():
    file_bytes = calc.q2k_file_bytes()
    assert file_bytes == 85_691_002_112
    assert round(file_bytes / GiB, 2) == 79.81
    assert round(ch08.Q2K_FILE_PAYLOAD_BYTES / GiB, 2) == 64.43
    assert round(ch08.Q2K_FILE_METADATA_BYTES / GiB, 2) == 15.37
    reserve = 8 * GiB
    assert round(calc.memory_headroom_bytes(M2_MAX.mem_bytes, reserve, 0) / GiB, 2) == 81.41
    left = calc.memory_headroom_bytes(M2_MAX.mem_bytes, reserve, file_bytes)
    assert round(left / GiB, 2) == 1.60
    xl = calc.memory_headroom_bytes(M2_MAX.mem_bytes, reserve, 81.97 * GiB)
    assert round(-xl / GiB, 2) == 0.56
    kv_8k = calc.kv_bytes(QWEN3_235B_A22B, 8192, block_tokens=1)
    assert round(kv_8k / GiB, 2) == 1.47
    assert round(calc.memory_headroom_bytes(M2_MAX.mem_bytes, reserve, file_bytes, kv_8k)
                 / GiB, 2) == 0.13
    assert calc.max_concurrent(left, QWEN3_235B_A22B, 8192, 1, block_tokens=1) == 1
    assert round(calc.kv_bytes(QWEN3_235B_A22B, 32_768, block_tokens=1) / GiB, 2) == 5.88


# --- 8.4.2 ----------------------------------------------------------------------------------

def test_kv_formats_at_8k():
    bf16 = calc.kv_bytes(M, 8192)
    q8 = calc.kv_quantized_bytes(M, 8192, "q8_0")
    q4 = calc.kv_quantized_bytes(M, 8192, "q4_0")
    assert (bf16 / MiB, q8 / MiB, q4 / MiB) == (1152, 612, 324)
    assert ((bf16 - q8) / MiB, (bf16 - q4) / MiB) == (540, 828)
    assert cm.kv_format_bytes_per_value(M, "q8_0") * 64 / 2 == 34  # 34/64 of BF16
    assert cm.kv_format_bytes_per_value(M, "q4_0") * 64 / 2 == 18
    assert calc.kv_quantized_bytes(M, 8192, "bf16") == bf16


def test_long_request_q8_0():
    held = calc.held_tokens(8192, 256)
    assert calc.kv_quantized_bytes(M, held, "q8_0") / MiB == 631.125
    assert round(16 * calc.kv_quantized_bytes(M, held, "q8_0") / GiB, 2) == 9.86


def test_groups_follow_head_rows():
    # a head_dim that is not a multiple of 32 pays for a partial group in every head row
    odd = M.with_(head_dim=80, n_heads=None)
    assert cm.kv_format_bytes_per_value(odd, "q8_0") == 3 * 34 / 80


@pytest.mark.parametrize("fmt,input_8k_mib,complete_mib,fit_8k,fit_complete", [
    # Exercise 8-6 by hand: 1152 and 1188 MiB x 34/64 or 18/64; floor(12288 / size)
    ("q8_0", 612, 631.125, 20, 19),
    ("q4_0", 324, 334.125, 37, 36),
    ("bf16", 1152, 1188, 10, 10),
])
def test_exercise_8_6_capacity(fmt, input_8k_mib, complete_mib, fit_8k, fit_complete):
    budget = 12 * GiB
    assert calc.kv_quantized_bytes(M, 8192, fmt) / MiB == input_8k_mib
    assert calc.kv_quantized_bytes(M, calc.held_tokens(8192, 256), fmt) / MiB == complete_mib
    assert calc.max_concurrent_kv_format(budget, M, 8192, 1, fmt) == fit_8k
    assert calc.max_concurrent_kv_format(budget, M, 8192, 256, fmt) == fit_complete


def test_compressed_read_saving():
    beta = cm.MEASURED_READ_BYTES / cm.MEASURED_ROUND_S
    assert round(beta / 1e12, 2) == 1.16
    assert round(100 * calc.mbu(beta, RTX_PRO_6000)) == 65
    saved = 540 * MiB
    assert round(calc.compressed_read_saving_s(saved, beta, 0) / ms, 3) == 0.487
    assert round(calc.compressed_read_saving_s(saved, beta, 0.2e-3) / ms, 3) == 0.287
    assert round(calc.compressed_read_saving_s(saved, beta, 0.8e-3) / ms, 3) == -0.313


def test_bf16_fp8_fits():
    bf16 = (ch08.BF16_INTERVAL_FIXED_S, ch08.BF16_INTERVAL_PER_TOKEN_S)
    fp8 = (ch08.FP8_INTERVAL_FIXED_S, ch08.FP8_INTERVAL_PER_TOKEN_S)
    assert round(calc.interval_crossover_tokens(*bf16, *fp8)) == 7000
    assert round(calc.fitted_interval_s(*bf16, 2048) / ms, 2) == 6.53
    assert round(calc.fitted_interval_s(*fp8, 2048) / ms, 2) == 6.63
    assert round(calc.fitted_interval_s(*bf16, 16_384) / ms, 2) == 7.16
    assert round(calc.fitted_interval_s(*fp8, 16_384) / ms, 2) == 6.97
    assert calc.interval_crossover_tokens(1, 2, 3, 2) == math.inf


@FAST
@given(a1=st.floats(0, 10), b1=st.floats(0, 1e-3), a2=st.floats(0, 10), b2=st.floats(0, 1e-3))
def test_fits_meet_at_the_crossover(a1, b1, a2, b2):
    L = calc.interval_crossover_tokens(a1, b1, a2, b2)
    if math.isfinite(L) and abs(b1 - b2) > 1e-9:
        assert a1 + b1 * L == pytest.approx(a2 + b2 * L, rel=1e-9, abs=1e-9)


def test_deepseek_state_totals():
    total = ch08.DEEPSEEK_V41_GLOBAL_MIB + ch08.DEEPSEEK_V41_SWA_MIB
    assert round(total, 3) == 9.531
    assert round(ch08.DEEPSEEK_V4_TOTAL_MIB / total, 2) == 3.20


# --- 8.4.2 GGML's q8_0 / q4_0 groups (Figure 8-23) ------------------------------------------

def _half_rounding_error(d: float) -> float:
    """Largest error of storing the scale d as IEEE half (round to nearest): half an ulp,
    relative 2^-11 for normal halves, but an absolute 2^-25 below 2^-14, where halves are
    subnormal (a block whose largest value is under about 0.002 for q8_0)."""
    return max(d * 2**-11, 2**-25)


def _ggml_refuses(x_max: float, divisor: int) -> bool:
    """Whether ggml's float32 arithmetic makes 1/d overflow for d = x_max / divisor (q8_0
    divides by 127, q4_0 by 8), where its quantizer is undefined and the encoder refuses."""
    d = np.float32(x_max) / np.float32(divisor)
    with np.errstate(over="ignore", divide="ignore"):
        return bool(d != 0 and not np.isfinite(np.float32(1.0) / d))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=32, max_size=32))
@example([0.0] * 31 + [1e-5])    # CI's counterexample: a subnormal half scale
@example([0.0] * 31 + [1e-40])   # 1/d overflows float32: refused
@example([0.0] * 31 + [127 * 2.0**-127])  # d = 2^-127, below FLT_MIN but 1/d still finite
@example([0.0] * 31 + [1e-44])   # q8_0's d rounds to 0 (accepted), q4_0's 1/d overflows
def test_q8_0_and_q4_0_round_trip_within_half_a_step(values):
    x = np.asarray(values)
    x_max = float(np.abs(x.astype(np.float32)).max())
    d8, d4 = x_max / 127, x_max / 8
    # half a quantisation step, the scale's rounding to half precision times the largest code,
    # and as much again for float32 inputs and ggml's float32 1/d (each relative 2^-23 or less)
    slack8 = 127 * (_half_rounding_error(d8) + d8 * 2**-11)
    slack4 = 8 * (_half_rounding_error(d4) + d4 * 2**-11)
    for encode, decode, divisor, bound, size in (
            (calc.encode_q8_0_group, calc.decode_q8_0_group, 127, d8 / 2 + slack8, 34),
            (calc.encode_q4_0_group, calc.decode_q4_0_group, 8, d4 + slack4, 18)):
        if _ggml_refuses(x_max, divisor):
            # refused by name (test_ggml_codecs covers the exact boundary)
            with pytest.raises(ValueError, match="values"):
                encode(x)
            continue
        block = encode(x)
        assert len(block) == size
        assert np.abs(decode(block) - x).max() <= bound + 1e-9
    assert calc.quant_format_layout("q8_0").group_bytes == 34
    assert calc.quant_format_layout("q4_0").group_bytes == 18


@pytest.mark.parametrize("top", [1e-5, 2e-4, 1e-3])
def test_round_trip_where_the_half_scale_is_subnormal(top):
    # found by hypothesis: 1e-5 among zeros has d = 7.9e-8, stored as the subnormal half
    # 5.96e-8 (2^-24), so the value decodes as 127 x 2^-24 = 7.57e-6: further than a relative
    # 2^-11 scale error allows, but within half a subnormal ulp of the scale times 127
    x = np.zeros(32)
    x[-1] = top
    d = top / 127
    d_half = float(np.float16(np.float32(d)))
    decoded = calc.decode_q8_0_group(calc.encode_q8_0_group(x))
    assert decoded[-1] == pytest.approx(127 * d_half, rel=1e-12)
    assert abs(decoded[-1] - top) <= d / 2 + 127 * _half_rounding_error(d) + 1e-12


def test_encoders_reject_bad_groups():
    with pytest.raises(ValueError, match="values"):
        calc.encode_q8_0_group([1.0] * 31)
    with pytest.raises(ValueError, match="values"):
        calc.encode_q4_0_group([math.nan] + [1.0] * 31)
    with pytest.raises(ValueError, match="block"):
        calc.decode_q4_0_group(b"\x00" * 34)
    assert not calc.decode_q8_0_group(calc.encode_q8_0_group([0.0] * 32)).any()


# --- 8.4.3 ----------------------------------------------------------------------------------

def test_ffn_offload_memory():
    assert calc.ffn_weight_bytes_per_layer(M) / MiB == 288
    one, two = calc.ffn_offload(M, 4, 1), calc.ffn_offload(M, 4, 2)
    assert one.offloaded_layers == 9
    assert one.offloaded_bytes / MiB == 2592
    assert (one.net_saved_bytes / MiB, two.net_saved_bytes / MiB) == (2304, 2016)
    assert two.buffer_bytes / MiB == 576
    # Exercise 8-5: extra 1152-MiB inputs 2 and 1; extra 1188-MiB complete requests 1 and 1
    assert [x.net_saved_bytes // (1152 * MiB) for x in (one, two)] == [2, 1]
    assert [x.net_saved_bytes // (1188 * MiB) for x in (one, two)] == [1, 1]
    assert calc.ffn_offload(M, 4, 0).net_saved_bytes == one.offloaded_bytes
    with pytest.raises(ValueError, match="model"):
        calc.ffn_weight_bytes_per_layer(M.with_(intermediate_size=None))


def test_ffn_offload_by_layer_count():
    # 9 layers offloaded with two buffers = one layer in four (8.4.3)
    assert calc.ffn_offload(M, layers=9, prefetch_buffers=2) == calc.ffn_offload(M, 4, 2)
    assert calc.ffn_offload(M, layers=0).net_saved_bytes == 0
    with pytest.raises(ValueError, match="layers"):
        calc.ffn_offload(M, layers=37, prefetch_buffers=1)
    with pytest.raises(ValueError, match="layers"):
        calc.ffn_offload(M, layers=-1)
    with pytest.raises(TypeError, match="every_n_layers"):
        calc.ffn_offload(M, 4, 1, layers=9)
    with pytest.raises(TypeError, match="every_n_layers"):
        calc.ffn_offload(M, prefetch_buffers=1)


def test_offload_copy_per_round():
    copy = 2592 * MiB
    assert round(copy / GB, 2) == 2.72
    pcie = calc.offload_copy_bound(copy, ch08.PCIE_GEN5_X16_BYTES_PER_S, 26.26e-3, batch=4,
                                   rounds=255)
    assert round(pcie.copy_s / ms, 1) == 42.5
    assert not pcie.copy_hidden
    assert round(pcie.tokens_per_s) == 94
    assert round(pcie.total_copy_s, 1) == 10.8
    c2c = calc.offload_copy_bound(copy, ch08.NVLINK_C2C_BYTES_PER_S, 26.26e-3, rounds=255)
    assert round(c2c.copy_s / ms, 1) == 6.0
    assert round(c2c.total_copy_s, 2) == 1.54
    assert c2c.copy_hidden and c2c.round_s == 26.26e-3
    # Exercise 8-5 by hand: 255 x 2.718 GB / 1 s = 693 GB/s
    assert round(calc.min_link_bytes_per_s(copy, 255, 1.0) / GB) == 693


def test_compress_before_transfer():
    size = 96 * MiB
    link = ch08.PCIE_GEN5_X16_BYTES_PER_S
    direct = calc.link_transfer_s(size, link)
    compressed = calc.compress_then_transfer_s(size, 1 / 4, link)
    assert round(direct / ms, 2) == 1.57
    assert round(compressed / ms, 2) == 0.39
    assert round((direct - compressed) / ms, 2) == 1.18
    threshold = calc.min_decompress_bytes_per_s(link, 1 / 4)
    assert round(threshold / GB, 1) == 85.3
    # at the threshold the two paths take the same time
    assert calc.compress_then_transfer_s(size, 1 / 4, link, threshold) == pytest.approx(direct)


@FAST
@given(r=st.floats(0.01, 0.99), link=st.floats(1e9, 1e12), rate=st.floats(1e9, 1e13),
       size=st.floats(1e6, 1e10))
def test_compression_pays_iff_decompression_is_fast_enough(r, link, rate, size):
    direct = calc.link_transfer_s(size, link)
    via = calc.compress_then_transfer_s(size, r, link, rate)
    threshold = calc.min_decompress_bytes_per_s(link, r)
    if rate > threshold * (1 + 1e-9):
        assert via < direct
    elif rate < threshold * (1 - 1e-9):
        assert via > direct


@FAST
@given(copy=st.floats(1e6, 1e10), link=st.floats(1e9, 1e12), compute=st.floats(0, 0.1),
       batch=st.integers(1, 64), rounds=st.integers(1, 1000))
def test_offload_round_bounds(copy, link, compute, batch, rounds):
    o = calc.offload_copy_bound(copy, link, compute, batch=batch, rounds=rounds)
    assert o.round_s >= o.copy_s and o.round_s >= compute
    assert o.total_copy_s == pytest.approx(rounds * o.copy_s)
    # the minimum link for the total copy time is exactly met
    need = calc.min_link_bytes_per_s(copy, rounds, o.total_copy_s)
    assert need == pytest.approx(link)


# --- 8.4.4 ----------------------------------------------------------------------------------

def test_time_to_correct_answer():
    # a failed first answer and a retry: both generations count, plus each check
    assert calc.time_to_correct_answer_s([1.5, 2.0]) == 3.5
    assert calc.time_to_correct_answer_s([1.5, 2.0], check_s=0.25) == 4.0
    assert calc.time_to_correct_answer_s([2.0]) == 2.0


def test_expected_time_to_correct():
    # (T + c) / p: 2 s attempts checked in 1 s, half of them pass -> 6 s on average
    assert calc.expected_time_to_correct_s(2.0, 0.5, 1.0) == 6.0
    assert calc.expected_time_to_correct_s(2.0, 1.0) == calc.time_to_correct_answer_s([2.0])
    with pytest.raises(ValueError, match="success_prob"):
        calc.expected_time_to_correct_s(2.0, 0.0)


@FAST
@given(times=st.lists(st.floats(0, 100), min_size=1, max_size=8), check=st.floats(0, 5))
def test_retries_never_cost_less_than_the_final_attempt(times, check):
    assert calc.time_to_correct_answer_s(times, check) >= times[-1]


# --- ledger ---------------------------------------------------------------------------------

def test_ledger_entries_of_8_4():
    entries = ch08_4.entries()
    assert len(entries) >= 60
    ids = [e.id for e in entries]
    assert len(ids) == len(set(ids))
    for e in entries:
        assert e.id.startswith(e.section + "/")
        assert e.section.startswith("8.4.")
        assert e.agrees or e.note, e.id
        if e.rounding != "printed":
            assert e.note, e.id
    assert all(e.agrees for e in entries)
