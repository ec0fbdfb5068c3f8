"""Chapter 17 §1-§6, §9-§10 closed forms against the chapter's printed numbers.

Expected values are the chapter's, at its printed rounding ("printed" = half a unit in the last
printed digit); where the chapter rounds more loosely, the test says so.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion.chapters import ch17
from companion.formulas.levers import mechanism_lever_map
from companion.formulas.performance import batching_decision_table, fused_step_parts
from companion.specs import A100_80GB, H100_SXM, H200_SXM, LLAMA_8B, LLAMA_70B, RTX_PRO_6000
from companion.units import GB, KiB, MB, ms, us
from tests.printed import assert_printed as printed

HW, M8, M70 = H100_SXM, LLAMA_8B, LLAMA_70B
FAST = settings(max_examples=40, deadline=None)


# --- §1 -------------------------------------------------------------------------------------

def test_memory_pyramid_rows_and_ratios():
    rows = {r["key"]: r for r in calc.memory_pyramid(HW)}
    assert list(rows) == ["registers", "shared_l1", "l2", "hbm", "nvlink", "pcie"]
    hbm = rows["hbm"]
    assert hbm["capacity_bytes"] == 80e9 and hbm["bandwidth_bytes_per_s"] == 3.35e12
    printed(rows["l2"]["capacity_bytes"], "50", MB)         # ~50 MB L2
    printed(rows["nvlink"]["hbm_over_level"], "3.7")        # NVLink 3.7x slower than HBM
    r = calc.bandwidth_ratios(HW)
    printed(r["hbm_over_nvlink"], "3.7")
    printed(r["nvlink_over_pcie"], "14")                     # 14x faster than PCIe
    assert r["hbm_over_pcie"] == pytest.approx(r["hbm_over_nvlink"] * r["nvlink_over_pcie"])


def test_memory_pyramid_separates_per_sm_from_per_device():
    rows = {r["key"]: r for r in calc.memory_pyramid(HW)}
    # Hopper: 65,536 32-bit registers and 256 KiB of L1/shared memory in each of 132 SMs
    # (NVIDIA H100 whitepaper); the chapter only says "KBs per SM"
    for key in ("registers", "shared_l1"):
        assert rows[key]["scope"] == "per SM" and "per SM" in rows[key]["level"]
        assert rows[key]["capacity_bytes"] == 65_536 * 4
        assert rows[key]["device_bytes"] == 132 * 65_536 * 4
    for key in ("l2", "hbm"):
        assert rows[key]["scope"] == "per device" and "per device" in rows[key]["level"]
        assert rows[key]["device_bytes"] == rows[key]["capacity_bytes"]
    # one SM's on-chip memory is KBs; all of the card's L2 is tens of MB
    assert rows["shared_l1"]["capacity_bytes"] < rows["l2"]["capacity_bytes"] / 100


def test_memory_pyramid_without_links():
    rows = {r["key"]: r for r in calc.memory_pyramid(RTX_PRO_6000)}  # no NVLink, no SM count
    assert rows["registers"]["capacity_bytes"] is None
    assert rows["shared_l1"]["device_bytes"] is None
    assert rows["nvlink"]["bandwidth_bytes_per_s"] is None
    assert rows["nvlink"]["hbm_over_level"] is None
    with pytest.raises(ValueError, match="^hardware"):
        calc.bandwidth_ratios(RTX_PRO_6000)


def test_full_memory_sweep():
    sweep = calc.memory_sweep_s(HW)
    printed(sweep, "24", ms)                                 # 80 GB / 3.35 TB/s
    assert 1 / sweep == pytest.approx(40, abs=5)             # "~40 such steps per second"
    printed(calc.ridge_point(HW), "295")


# --- §2 -------------------------------------------------------------------------------------

def test_decode_on_the_roofline():
    assert calc.decode_intensity(M8) == pytest.approx(1.0)
    point = calc.roofline_point(calc.decode_intensity(M8), HW)
    printed(point["attainable_flops_per_s"], "3.35", 1e12)
    printed(100 * point["fraction_of_peak"], "0.34")
    assert point["bound"] == "memory"


def test_decode_time_domain():
    split = calc.decode_time_split(M8, HW)
    printed(split["weight_bytes"], "16", GB)
    printed(split["read_s"], "4.78", ms)
    printed(split["tokens_per_s"], "209")
    printed(split["flops_per_token"], "16", 1e9)
    printed(split["compute_s"], "16.2", us)
    printed(split["wait_to_work"], "295")


def test_prefill_on_the_roofline():
    assert calc.prefill_intensity(M8, 2048) == pytest.approx(2048)
    assert calc.roofline_point(2048, HW)["bound"] == "compute"
    assert calc.roofline_point(200, HW)["bound"] == "memory"   # "under ~295 tokens"
    printed(calc.matrix_flops(M8, 2048), "32.8", 1e12)
    printed(calc.prefill_compute_s(M8, HW, 2048, efficiency=1.0), "33", ms)
    printed(calc.prefill_compute_s(M8, HW, 2048), "66", ms)


def test_batched_and_effective_intensity():
    assert calc.decode_intensity(M8, 64) == pytest.approx(64)
    assert calc.decode_intensity(M8, 295) == pytest.approx(295)
    chat = calc.decode_vs_context(M8, HW, 600, batch=64)
    printed(chat["kv_bytes"] / 64, "78.6", MB)
    printed(chat["step_bytes"], "21.0", 1e9)
    printed(calc.decode_intensity(M8, 64, 600), "49")
    long = calc.decode_vs_context(M8, HW, 8000, batch=64)
    printed(long["kv_bytes"] / 64, "1.05", GB)
    # printed 83.2e9 multiplies the rounded 1.05 GB; exact is 83.1e9
    assert long["step_bytes"] / 1e9 == pytest.approx(83.2, abs=0.15)
    printed(calc.decode_intensity(M8, 64, 8000), "12")


def test_roofline_points_for_the_plot():
    pts = calc.roofline_points(M8, HW)
    assert [p["bound"] for p in pts] == ["memory", "memory", "compute"]
    assert pts[0]["intensity_flop_per_byte"] == pytest.approx(1)
    printed(pts[1]["intensity_flop_per_byte"], "49")
    assert pts[2]["intensity_flop_per_byte"] == pytest.approx(2048)
    weights_only = calc.roofline_points(M8, HW, batch=64, context_tokens=0)[1]
    assert weights_only["intensity_flop_per_byte"] == pytest.approx(64)


def test_precision_moves_decode_right():
    assert calc.decode_intensity(M8, bytes_per_param=1) == pytest.approx(2)
    assert calc.decode_intensity(M8, bytes_per_param=4) == pytest.approx(0.5)   # FP32 halves it


# --- §3 -------------------------------------------------------------------------------------

def test_request_budget():
    ttft = calc.prefill_compute_s(M8, HW, 2048)
    b = calc.request_budget(ttft, 250, 6e-3)
    printed(b["decode_s"], "1500", ms)
    printed(b["total_s"], "1.57")
    printed(100 * b["decode_share"], "96")
    printed(100 * b["prefill_share"], "4")
    assert b["decode_share"] + b["prefill_share"] == pytest.approx(1)


def test_head_of_line_blocking():
    s = calc.head_of_line_stall(M8, HW, 8000, 6e-3)
    assert s["prefill_flops"] == pytest.approx(128e12)
    printed(s["stall_s"], "259", ms)
    printed(s["worst_itl_over_step"], "43")


# --- §4 -------------------------------------------------------------------------------------

def test_kv_per_token_and_sequence():
    assert calc.kv_bytes_per_token(M70) == 327_680
    printed(calc.kv_bytes_per_token(M70), "320", KiB)
    assert calc.kv_bytes_per_token(M8) == 131_072
    rows = calc.kv_by_context(M70, [8000, 128_000], HW)
    printed(rows[0]["kv_bytes"], "2.62", GB)
    assert rows[1]["fraction_of_memory"] > 0.5        # "more than half an H100's memory"
    default = calc.kv_by_context(M70)
    assert [r["context_tokens"] for r in default] == list(ch17.KV_TABLE_CONTEXTS)
    assert "fraction_of_memory" not in default[0]


def test_kv_by_context_is_linear():
    rows = calc.kv_by_context(M8, [0, 1000, 2000, 4000])
    assert [r["kv_bytes"] for r in rows] == [0, 131_072_000, 262_144_000, 524_288_000]


def test_70b_needs_tensor_parallelism():
    one = calc.tp_kv_capacity(M70, HW)
    printed(M70.weight_bytes, "140", GB)
    printed(one["weights_over_memory"], "1.75")
    assert not one["fits"] and one["max_sequences"] == 0 and one["free_kv_bytes"] == 0
    tp4 = calc.tp_kv_capacity(M70, HW, tp=4)
    printed(tp4["weight_bytes_per_gpu"], "35", GB)
    assert tp4["kv_heads_per_gpu"] == 2
    printed(tp4["free_kv_bytes_per_gpu"], "41", GB)
    printed(tp4["free_kv_bytes"], "164", GB)
    assert tp4["max_sequences"] == 62


def test_8b_max_concurrency():
    cap = calc.tp_kv_capacity(M8, HW)
    printed(cap["free_kv_bytes"], "60", GB)
    printed(cap["kv_bytes_per_sequence"], "1.05", GB)
    assert cap["max_sequences"] == 57


def test_attention_variants_for_the_70b_shape():
    rows = {r["attention"]: r for r in calc.attention_variants(M70)}
    assert [rows[a]["n_kv_heads"] for a in ("MHA", "GQA", "MQA")] == [64, 8, 1]
    assert rows["GQA"]["kv_bytes_per_token"] == 327_680
    printed(rows["MHA"]["kv_bytes_per_token"], "2560", KiB)
    printed(rows["MQA"]["kv_bytes_per_token"], "40", KiB)
    printed(rows["MHA"]["kv_bytes_per_sequence"], "21.0", GB)
    assert rows["GQA"]["reduction_vs_mha"] == 8
    assert rows["MHA"]["sequences"] == 3             # "three 8K conversations per 80 GB"
    # The chapter says twenty-four; 80 GB / 2.62 GB is 30 (its 24 is 3 x 8, see the ledger).
    assert rows["GQA"]["sequences"] == 30
    assert calc.attention_variants(M70, cache_bytes=64e9)[1]["sequences"] == 24


def test_attention_variants_of_an_mha_model():
    mha = M8.with_(n_kv_heads=32)
    rows = calc.attention_variants(mha)
    assert [r["attention"] for r in rows] == ["MHA", "MQA"]


def test_step_time_as_context_grows():
    expected = {1_000: ("16.1", "4.8", "208"), 10_000: ("17.3", "5.2", None),
                100_000: ("29.1", "8.7", "115")}
    for L, (gb, step_ms, rate) in expected.items():
        row = calc.decode_vs_context(M8, HW, L)
        printed(row["step_bytes"], gb, GB)
        printed(row["step_s"], step_ms, ms)
        if rate:
            printed(row["tokens_per_s"], rate)
    # printed 193 truncates 193.5
    assert calc.decode_vs_context(M8, HW, 10_000)["tokens_per_s"] == pytest.approx(193, abs=1)


def test_kv_weight_crossover():
    x = calc.kv_weight_crossover_tokens(M8)
    assert x == pytest.approx(122_000, rel=1e-3)
    doubled = calc.decode_vs_context(M8, HW, round(x))["step_s"]
    assert doubled / calc.decode_time_split(M8, HW)["step_s"] == pytest.approx(2, rel=1e-4)
    assert calc.kv_weight_crossover_tokens(M8, batch=2) == pytest.approx(x / 2)


# --- §5 -------------------------------------------------------------------------------------

def test_reservation_fragmentation():
    w = calc.reservation_waste(M8, 300)
    printed(w["reserved_bytes"], "1.07", GB)
    printed(w["used_bytes"], "39", MB)
    printed(100 * w["wasted_fraction"], "96")
    assert calc.reservation_waste(M8, 8192)["wasted_fraction"] == 0
    with pytest.raises(ValueError, match="^used_tokens"):
        calc.reservation_waste(M8, 9000)


def test_block_table_and_paged_waste():
    assert calc.block_fill(40, 16) == dict(blocks=3, last_block_tokens=8, empty_slots=8)
    assert calc.block_fill(32, 16) == dict(blocks=2, last_block_tokens=16, empty_slots=0)
    printed(calc.paged_worst_waste(M8, 16)["bytes"], "2", MB)
    assert calc.paged_worst_waste(M8, 1024)["tokens"] == 1023
    assert calc.paged_worst_waste(M8, 1)["bytes"] == 0


def test_prefix_sharing():
    p = calc.prefix_sharing_bytes(M8, 100, 2000)
    printed(p["naive_bytes"], "26.2", GB)
    printed(p["shared_bytes"], "0.26", GB)
    assert p["naive_bytes"] - p["shared_bytes"] == p["saved_bytes"]


def test_paged_batch_gain_reproduces_the_chapter():
    g = calc.paged_batch_gain(M8, HW, block_tokens=1)
    naive, paged = g["naive"], g["paged"]
    printed(g["live_kv_bytes"], "78.6", MB)
    assert naive["batch"] == 57
    assert paged["batch"] == pytest.approx(760, abs=5)       # "~760" (floor gives 762)
    printed(naive["step_bytes"], "20.5", GB)
    printed(naive["step_s"], "6.1", ms)
    assert naive["tokens_per_s"] == pytest.approx(9300, abs=50)
    assert paged["step_bytes"] / GB == pytest.approx(75.7, abs=0.25)   # chapter uses 760
    assert paged["step_s"] / ms == pytest.approx(22.6, abs=0.1)
    assert paged["tokens_per_s"] == pytest.approx(33_600, abs=50)
    printed(g["throughput_gain"], "3.6")
    printed(g["batch_gain"], "13")


def test_paged_batch_gain_block_rounding_and_budget():
    g16 = calc.paged_batch_gain(M8, HW)                       # 600 -> 608 tokens allocated
    assert g16["paged"]["batch"] == int(60e9 // (608 * 131_072))
    assert g16["paged"]["batch"] < calc.paged_batch_gain(M8, HW, block_tokens=1)["paged"]["batch"]
    small = calc.paged_batch_gain(M8, HW, kv_budget_bytes=1e9)   # not even one reservation
    assert small["naive"]["batch"] == 0 and small["batch_gain"] == math.inf
    with pytest.raises(ValueError, match="^model"):
        calc.paged_batch_gain(M70, HW)                        # 140 GB leaves no KV space
    with pytest.raises(ValueError, match="^live_tokens"):
        calc.paged_batch_gain(M8, HW, live_tokens=9000)


# --- §6 -------------------------------------------------------------------------------------

def test_static_batching():
    s = calc.static_batch_slot_steps(list(range(100, 801, 100)))
    assert (s["run"], s["useful"]) == (6400, 3600)
    printed(100 * s["utilization"], "56")


def test_chunked_prefill_trade():
    step = calc.paged_batch_gain(M8, HW, block_tokens=1)["naive"]["step_s"]
    t = calc.chunked_prefill_trade(M8, HW, 8000, 512, step)
    assert t["chunks"] == 16
    printed(t["chunk_s"], "16.6", ms)
    printed(t["iteration_s"], "23", ms)
    printed(t["itl_improvement"], "11")
    assert t["ttft_s"] / ms == pytest.approx(370, abs=10)    # 16 x 23 ms in the chapter
    printed(100 * t["ttft_increase"], "40")
    assert t["ttft_exact_s"] < t["ttft_s"]                   # last chunk is only 320 tokens


def test_chunk_larger_than_prompt_is_one_chunk():
    t = calc.chunked_prefill_trade(M8, HW, 300, 512, 0.006)
    assert t["chunks"] == 1
    assert t["ttft_s"] == pytest.approx(t["ttft_exact_s"])
    assert t["chunk_s"] == pytest.approx(t["dedicated_s"])


def test_batching_decision_table():
    rows = batching_decision_table()
    assert [r["strategy"] for r in rows] == ["static", "continuous", "chunked prefill"]
    assert all(r["fits"] and r["costs"] for r in rows)
    # the chapter's printed numbers, reached through the computed cells
    assert "56% utilization" in rows[0]["costs"]
    assert "~260 ms for 8,000 tokens" in rows[1]["costs"]          # 259 ms at 2 s.f.
    assert "~260 -> ~23 ms (11x)" in rows[2]["fixes"]
    assert "~+40% as the chapter prices it" in rows[2]["costs"]


def test_batching_decision_table_follows_its_inputs():
    base = batching_decision_table()
    even = batching_decision_table(output_lengths=[450] * 8)
    assert "100% utilization" in even[0]["costs"] and even[0]["costs"] != base[0]["costs"]
    long = batching_decision_table(prompt_tokens=32_000)
    assert long[1]["costs"] != base[1]["costs"] and "32,000 tokens" in long[1]["costs"]
    assert long[1]["values"]["stall_s"] == pytest.approx(4 * base[1]["values"]["stall_s"])
    small = batching_decision_table(chunk_tokens=128)
    assert small[2]["fixes"] != base[2]["fixes"] and small[2]["costs"] != base[2]["costs"]
    assert small[2]["values"]["ttft_increase"] > base[2]["values"]["ttft_increase"]
    from companion import tables
    assert tables.decision_table_markdown(chunk_tokens=128) != tables.decision_table_markdown()
    assert tables.decision_table_text(chunk_tokens=128) != tables.decision_table_text()


# --- §9 -------------------------------------------------------------------------------------

def test_sm_share():
    printed(100 * calc.sm_share(1, HW), "0.8")
    assert calc.sm_share(132, HW) == 1
    with pytest.raises(ValueError, match="^active_sms"):
        calc.sm_share(133, HW)
    with pytest.raises(ValueError, match="^hardware"):
        calc.sm_share(1, RTX_PRO_6000)


def test_mbu_mfu_from_measured_rates():
    d = calc.decode_utilization(M8, HW, 146)
    printed(d["bytes_per_s"], "2.34", 1e12)
    printed(100 * d["mbu"], "70")
    printed(d["flops_per_s"], "2.34", 1e12)
    printed(100 * d["mfu"], "0.24")
    printed(d["headroom"], "1.4")
    p = calc.prefill_utilization(M8, HW, 20_000)
    printed(p["flops_per_s"], "3.2", 1e14)
    printed(100 * p["mfu"], "32")


def test_decode_utilization_counts_kv_at_long_context():
    short = calc.decode_utilization(M8, HW, 100)
    long = calc.decode_utilization(M8, HW, 100, context_tokens=100_000)
    assert long["mbu"] > short["mbu"] and long["mfu"] == short["mfu"]


# --- §10 ------------------------------------------------------------------------------------

def test_quantization_ceiling():
    q = calc.quantization_ceiling(M8, HW, 1)
    printed(q["weight_bytes"], "8", GB)
    printed(q["step_s"], "2.39", ms)
    printed(q["tokens_per_s"], "419")
    printed(q["baseline_tokens_per_s"], "209")
    assert q["intensity_flop_per_byte"] == pytest.approx(2)
    assert q["speedup"] == pytest.approx(2)


def test_levers_map_and_cheat_sheet():
    levers = calc.levers_table(M8, HW)
    assert len(levers) >= 8 and all(r["symptom"] and r["lever"] and r["changes"] for r in levers)
    quant = next(r for r in levers if "quantization" in r["lever"])
    printed(quant["before"], "209")
    printed(quant["after"], "419")
    spec = next(r for r in levers if "speculative" in r["lever"])
    printed(spec["after"], "2.77")
    # "does not fit one card" is the 70B at TP = 4 whichever model the table is for (17 §4:
    # "At TP = 4 the weights shard to 35 GB per GPU"), never the 8B, which fits
    for table in (levers, calc.levers_table(M70, HW)):
        tp_row = next(r for r in table if "tensor" in r["lever"])
        printed(tp_row["before"], "140", GB)
        printed(tp_row["after"], "35", GB)
        assert "TP = 4" in tp_row["changes"]
    tp8 = next(r for r in calc.levers_table(M8, HW, tp=8) if "tensor" in r["lever"])
    assert tp8["after"] == pytest.approx(tp8["before"] / 8)
    big = calc.levers_table(M70, HW)             # the 70B does not fit one card
    assert next(r for r in big if "paged" in r["lever"])["after"] is None
    assert len(mechanism_lever_map()) >= 8
    sheet = {r["quantity"]: r["value"] for r in calc.cheat_sheet(M8, HW)}
    printed(sheet["ridge point"], "295")
    printed(sheet["batch-1 decode ceiling"], "209")
    assert sheet["max concurrent 8000-token sequences, one card"] == 57
    assert sheet["GPUs in the smallest TP x PP layout that fits"] == 1
    sheet70 = {r["quantity"]: r["value"] for r in calc.cheat_sheet(M70, HW)}
    assert sheet70["free KV on one card"] == 0
    assert sheet70["GPUs in the smallest TP x PP layout that fits"] == 2


@pytest.mark.parametrize("hw", [H100_SXM, H200_SXM, A100_80GB, RTX_PRO_6000], ids=lambda h: h.name)
def test_cheat_sheet_runs_on_every_card(hw):
    rows = calc.cheat_sheet(M8, hw)
    assert all(isinstance(r["value"], (int, float)) for r in rows)
    assert {r["quantity"]: r["value"] for r in rows}["ridge point"] == pytest.approx(
        hw.peak_flops_per_s / hw.mem_bw_bytes_per_s)


# --- properties -----------------------------------------------------------------------------

@FAST
@given(batch=st.integers(1, 2048), context=st.integers(0, 200_000),
       bpp=st.sampled_from([0.5, 1, 2, 4]))
def test_intensity_bounded_by_batch_and_falls_with_context(batch, context, bpp):
    i = calc.decode_intensity(M8, batch, context, bytes_per_param=bpp)
    assert i <= batch * 2 / bpp * (1 + 1e-12)
    assert calc.decode_intensity(M8, batch, context + 1000, bytes_per_param=bpp) < i
    point = calc.roofline_point(i, HW)
    assert point["attainable_flops_per_s"] <= HW.peak_flops_per_s
    assert point["attainable_flops_per_s"] <= i * HW.mem_bw_bytes_per_s * (1 + 1e-12)


@FAST
@given(tokens=st.integers(1, 100_000), block=st.integers(1, 2048))
def test_block_fill_invariants(tokens, block):
    f = calc.block_fill(tokens, block)
    assert (f["blocks"] - 1) * block < tokens <= f["blocks"] * block
    assert 0 <= f["empty_slots"] < block
    assert f["empty_slots"] <= calc.paged_worst_waste(M8, block)["tokens"]


@FAST
@given(used=st.integers(0, 8192))
def test_reservation_waste_in_unit_interval(used):
    w = calc.reservation_waste(M8, used)
    assert 0 <= w["wasted_fraction"] <= 1


@FAST
@given(tp=st.integers(1, 16), context=st.integers(1, 200_000))
def test_more_tp_never_holds_fewer_sequences(tp, context):
    a = calc.tp_kv_capacity(M70, HW, tp=tp, context_tokens=context)
    b = calc.tp_kv_capacity(M70, HW, tp=tp + 1, context_tokens=context)
    assert b["max_sequences"] >= a["max_sequences"]
    assert a["max_sequences"] * a["kv_bytes_per_sequence"] <= a["free_kv_bytes"] + 1e-6


@FAST
@given(prompt=st.integers(1, 64_000), chunk=st.integers(1, 4096),
       step=st.floats(1e-4, 0.1))
def test_chunked_prefill_invariants(prompt, chunk, step):
    t = calc.chunked_prefill_trade(M8, HW, prompt, chunk, step)
    assert t["chunks"] * chunk >= prompt > (t["chunks"] - 1) * chunk
    assert t["ttft_exact_s"] <= t["ttft_s"] * (1 + 1e-12)
    # the chunks together never compute less than the dedicated prefill
    assert t["ttft_exact_s"] >= t["dedicated_s"] * (1 - 1e-12)


@FAST
@given(context=st.integers(0, 500_000), batch=st.integers(1, 512))
def test_step_grows_with_context(context, batch):
    a = calc.decode_vs_context(M8, HW, context, batch=batch)
    b = calc.decode_vs_context(M8, HW, context + 1, batch=batch)
    assert b["step_s"] >= a["step_s"]
    assert a["tokens_per_s"] == pytest.approx(batch / a["step_s"])


# --- §6 and §5, the fuller models (issue 24): references the companion did not write ---------

CHAT = ch17.CHAT_LIVE_TOKENS


def test_fused_pass_is_the_rooflines_own_max():
    # at the full roof the pass takes FLOPs / attainable(FLOPs / bytes): the roofline of 17 §2
    from companion.formulas.core import attainable_flops
    for c, h, b, L in ((512, 0, 57, 600), (512, 7680, 57, 600), (32, 0, 57, 600),
                       (0, 0, 760, 600), (736, 31_264, 8, 2000)):
        p = fused_step_parts(M8, HW, chunk_tokens=c, history_tokens=h, decode_batch=b,
                             decode_context_tokens=L, efficiency=1.0)
        ref = p["flops"] / attainable_flops(p["flops"] / p["bytes"], HW)
        assert p["step_s"] == pytest.approx(ref, rel=1e-12)
        assert p["bound"] == ("compute" if p["flops"] / p["bytes"] > HW.peak_flops_per_s
                              / HW.mem_bw_bytes_per_s else "memory")


def test_fused_pass_flops_from_a_real_config():
    # Llama-3.1-8B's config.json as shipped, counted by hand: q and o are hidden x hidden, k and
    # v hidden x (kv heads x head dim), the MLP three hidden x intermediate matrices; attention
    # is QK^T plus PV, 2 x 2 x head dim FLOPs per pair per query head per layer
    import json
    from pathlib import Path

    from companion import models
    cfg = json.loads((Path(calc.__file__).parent / "data" / "hf_configs" /
                      "llama-3.1-8b.json").read_text())
    h, i, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads
    layer_matrices = n * (2 * h * h + 2 * h * kv * d + 3 * h * i)
    per_pair = 4 * d * heads * n
    c, hist, b, L = 512, 7680, 57, 600
    pairs = c * hist + c * (c + 1) // 2 + b * (L + 1)
    expected = 2 * layer_matrices * (c + b) + per_pair * pairs
    m = models.load("llama-3.1-8b")
    p = fused_step_parts(m, HW, chunk_tokens=c, history_tokens=hist, decode_batch=b,
                         decode_context_tokens=L)
    assert p["flops"] == pytest.approx(expected, rel=2e-4)       # norms: a few 1e-5 of params
    no_attn = fused_step_parts(m, HW, chunk_tokens=c, history_tokens=hist, decode_batch=b,
                               decode_context_tokens=L, attention=False)
    assert no_attn["flops"] == pytest.approx(2 * layer_matrices * (c + b), rel=2e-4)


def test_fused_chunked_prefill_at_the_chapters_setting():
    step = calc.paged_batch_gain(M8, HW, block_tokens=1)["naive"]["step_s"]
    b = calc.decode_batch_for_step(M8, HW, step)
    assert b == 57                                               # 17 §5's naive batch
    f = calc.fused_chunked_prefill(M8, HW, 8000, 512, decode_batch=b, decode_context_tokens=CHAT)
    chapter = calc.chunked_prefill_trade(M8, HW, 8000, 512, step)
    # the first chunk's pass: 2 x 8e9 x (512 + 57) / 494.5e12 plus its own attention, ~18 ms,
    # against the chapter's 6.1 + 16.6 ~ 23 ms
    assert 2 * 8e9 * 569 / 494.5e12 < f["first_itl_s"] < 19 * ms
    printed(chapter["iteration_s"], "23", ms)                   # the chapter's stays as printed
    assert 0.09 < f["ttft_increase"] < 0.15 < 0.35 < chapter["ttft_increase"]
    assert f["memory_bound_chunks"] == 0


def test_fused_ridge_and_memory_bound_chunks():
    printed(calc.fused_ridge_tokens(M8, HW, efficiency=1.0), "295")   # the 17 §2 ridge
    assert calc.fused_ridge_tokens(M8, HW, efficiency=1.0) == pytest.approx(
        calc.ridge_point(HW))
    half = calc.fused_ridge_tokens(M8, HW)
    assert half == pytest.approx(989e12 / 3.35e12 / 2)
    # a pass below the ridge is memory-bound: a 32-token chunk beside 57 decode tokens
    f = calc.fused_chunked_prefill(M8, HW, 8000, 32, decode_batch=57, decode_context_tokens=CHAT)
    assert f["memory_bound_chunks"] > 0
    assert f["first_itl_s"] == pytest.approx(
        (16e9 + (57 * CHAT + 32) * 131_072) / 3.35e12, rel=1e-9)


def test_attention_grows_with_the_position_in_a_long_prompt():
    kw = dict(decode_batch=57, decode_context_tokens=CHAT)
    f = calc.fused_chunked_prefill(M8, HW, 32_000, 736, **kw)
    # the last full 736-token chunk (the 44th holds the 352-token rest) costs ~2x the first
    assert 1.8 < f["iteration_s"][-2] / f["iteration_s"][0] < 2.1
    flat = calc.fused_chunked_prefill(M8, HW, 32_000, 736, attention=False, **kw)
    assert 1.4 < f["ttft_s"] / flat["ttft_s"] < 1.6                 # about half again
    assert max(flat["iteration_s"]) == pytest.approx(min(flat["iteration_s"][:-1]), rel=0.01)


def test_decode_throughput_ceiling():
    c = calc.decode_throughput_ceiling(M8, HW, batch=760)
    assert c["ceiling_tokens_per_s"] == pytest.approx(3.35e12 / (600 * 131_072))
    assert c["half_ceiling_batch"] == pytest.approx(16e9 / (600 * 131_072))
    # the roofline's own step (decode_vs_context: max of compute and read) at that batch
    half = round(c["half_ceiling_batch"])
    rate = calc.decode_vs_context(M8, HW, 600, batch=half)["tokens_per_s"]
    assert rate == pytest.approx(c["ceiling_tokens_per_s"] / 2, rel=0.005)
    big = calc.decode_vs_context(M8, HW, 600, batch=100_000)["tokens_per_s"]
    assert 0.99 * c["ceiling_tokens_per_s"] < big < c["ceiling_tokens_per_s"]
    # 17 §5's paged batch (~760) sits below the ceiling; its throughput is the chapter's
    paged = calc.paged_batch_gain(M8, HW, block_tokens=1)["paged"]
    assert c["tokens_per_s"] == pytest.approx(paged["tokens_per_s"], rel=1e-3)
    assert c["share_of_ceiling"] < 0.8
