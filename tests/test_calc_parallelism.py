"""Chapter 17 §7-§8 closed forms against the chapter's printed numbers."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion.chapters import ch08, ch17
from companion.formulas.parallelism import layout_candidates
from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B, LLAMA_405B, RTX_PRO_6000
from companion.units import GB, KiB, ms, us
from tests.printed import assert_printed as printed

HW, M8, M70, M405 = H100_SXM, LLAMA_8B, LLAMA_70B, LLAMA_405B
FAST = settings(max_examples=40, deadline=None)


# --- §7 tensor parallelism ------------------------------------------------------------------

def test_allreduce_traffic_70b_tp4():
    t = calc.tp_allreduce_traffic(M70, 4)
    printed(t["activation_bytes"], "16", KiB)
    printed(t["ring_bytes"], "24", KiB)
    assert t["collectives"] == 160
    # 160 x 24 KiB = 3.93 MB; the chapter prints 3.8 (3,840 "KB" / 1,000)
    assert t["bytes_per_token"] / 1e6 == pytest.approx(3.8, abs=0.15)
    assert calc.tp_allreduce_traffic(M70, 1)["ring_bytes"] == 0


def test_tp4_decode_step_on_nvlink_and_pcie():
    nv = calc.tp_decode_step(M70, HW, 4)
    printed(nv["wire_s"], "4", us)
    printed(nv["latency_s"], "0.8", ms)
    printed(nv["read_s"], "10.4", ms)
    printed(100 * nv["overhead"], "8")
    assert nv["step_s"] / ms == pytest.approx(11.2, abs=0.06)   # 10.45 + 0.80 (+ 4 us wire)
    assert nv["tokens_per_s"] == pytest.approx(90, abs=5)        # "~90 tok/s"
    pcie = calc.tp_decode_step(M70, HW, 4, collective_latency_s=25e-6,
                               link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
    printed(pcie["comm_s"], "4", ms)
    assert 100 * pcie["overhead"] == pytest.approx(40, abs=5)    # "~40% overhead"


def test_tp1_has_no_communication():
    one = calc.tp_decode_step(M8, HW, 1)
    assert one["comm_s"] == 0
    assert one["step_s"] == pytest.approx(calc.decode_time_split(M8, HW)["step_s"])


def test_tp_needs_a_link():
    with pytest.raises(ValueError, match="^link_bytes_per_s"):
        calc.tp_decode_step(M8, RTX_PRO_6000, 2)
    assert calc.tp_decode_step(M8, RTX_PRO_6000, 2, link_bytes_per_s=64e9)["comm_s"] > 0


# --- §7 pipeline parallelism and placement --------------------------------------------------

def test_pipeline_stages_and_bubble():
    p16 = calc.pp_stages(M70, 4, 16)
    assert p16["layers_per_stage"] == 20 and p16["boundaries"] == 3
    printed(p16["handoff_bytes"], "16", KiB)
    assert p16["total_slots"] == 19
    printed(100 * p16["bubble"], "15.8")
    p64 = calc.pp_stages(M70, 4, 64)
    assert p64["total_slots"] == 67
    printed(100 * p64["bubble"], "4.5")
    with pytest.raises(ValueError, match="^stages"):
        calc.pp_stages(M70, 81, 4)


def test_405b_placement():
    printed(M405.weight_bytes, "810", GB)
    printed(calc.weights_per_gpu_bytes(M405, 8), "101", GB)
    layout = calc.parallel_layout(M405, HW)
    assert (layout["tp"], layout["pp"], layout["gpus"]) == (8, 2, 16)
    printed(layout["weight_bytes_per_gpu"], "51", GB)


def test_70b_placement_and_kv_room():
    assert calc.parallel_layout(M70, HW)["tp"] == 2                  # 70 + 4 GB fits 80
    wide = calc.parallel_layout(M70, HW, min_kv_bytes_per_gpu=20e9)
    assert (wide["tp"], wide["pp"]) == (4, 1)
    printed(wide["free_kv_bytes_per_gpu"], "41", GB)
    assert calc.parallel_layout(M8, HW)["gpus"] == 1


def test_nothing_fits():
    with pytest.raises(ValueError, match="^max_nodes"):
        calc.parallel_layout(M405, HW, max_nodes=1)


# --- §8 disaggregation and routing ----------------------------------------------------------

def test_pool_sizing():
    p = calc.disaggregated_pools(100, 2000, 250)
    assert p["prompt_tok_per_s"] == 200_000 and p["output_tok_per_s"] == 25_000
    assert (p["prefill_groups"], p["decode_groups"]) == (20, 10)
    assert p["prefill_to_decode"] == 2
    # longer documents grow the prefill pool only
    longer = calc.disaggregated_pools(100, 4000, 250)
    assert longer["prefill_groups"] == 40 and longer["decode_groups"] == 10


def test_kv_transfer():
    printed(calc.kv_transfer_s(M70, 8000, ch17.H100_NVLINK_BYTES_PER_S), "3", ms)
    printed(calc.kv_transfer_s(M70, 8000, ch17.RDMA_400G_BYTES_PER_S), "52", ms)
    assert calc.kv_transfer_s(M70, 0, 50e9) == 0


def test_kv_aware_routing_turn_20():
    r = calc.kv_routing_ttft(M8, HW, 20)
    assert r["context_tokens"] == 28_800
    printed(r["cold_flops"], "461", 1e12)
    printed(r["cold_s"], "932", ms)
    printed(r["warm_flops"], "19.2", 1e12)
    printed(r["warm_s"], "39", ms)
    printed(r["speedup"], "24")


def test_first_turn_has_nothing_to_reuse():
    r = calc.kv_routing_ttft(M8, HW, 1)
    assert r["context_tokens"] == r["new_tokens"] == 6000 and r["speedup"] == 1


# --- properties -----------------------------------------------------------------------------

@FAST
@given(tp=st.integers(1, 64), latency=st.floats(0, 1e-4))
def test_tp_read_shrinks_and_comm_grows(tp, latency):
    a = calc.tp_decode_step(M70, HW, tp, collective_latency_s=latency)
    b = calc.tp_decode_step(M70, HW, tp + 1, collective_latency_s=latency)
    assert b["read_s"] < a["read_s"]
    assert a["step_s"] == pytest.approx(a["read_s"] + a["comm_s"])


@FAST
@given(stages=st.integers(1, 80), mb=st.integers(1, 1000))
def test_bubble_bounds(stages, mb):
    p = calc.pp_stages(M70, stages, mb)
    assert 0 <= p["bubble"] < 1
    assert calc.pp_stages(M70, stages, mb + 1)["bubble"] <= p["bubble"]


@FAST
@given(reserve=st.floats(0, 20e9), kv=st.floats(0, 30e9))
def test_layout_fits_and_follows_tp_first(reserve, kv):
    lay = calc.parallel_layout(M405, HW, reserve_bytes=reserve, min_kv_bytes_per_gpu=kv)
    assert lay["weight_bytes_per_gpu"] + reserve + kv <= HW.mem_bytes + 1e-3
    assert lay["weight_bytes_per_gpu"] * lay["gpus"] == pytest.approx(M405.weight_bytes)
    if lay["pp"] > 1:
        assert lay["tp"] == 8                                   # PP only on top of a full node
        smaller = calc.weights_per_gpu_bytes(M405, 8, lay["pp"] - 1)
        assert smaller + reserve + kv > HW.mem_bytes or lay["pp"] == 2


@FAST
@given(rate=st.floats(0.1, 1000), prompt=st.floats(1, 1e5), out=st.floats(1, 1e4))
def test_pools_cover_demand(rate, prompt, out):
    p = calc.disaggregated_pools(rate, prompt, out)
    cap_p, cap_d = ch17.PREFILL_TOK_PER_S_PER_GROUP, ch17.DECODE_TOK_PER_S_PER_GROUP
    assert p["prefill_groups"] * cap_p >= p["prompt_tok_per_s"] * (1 - 1e-9)
    assert (p["prefill_groups"] - 1) * cap_p < p["prompt_tok_per_s"]
    assert p["decode_groups"] * cap_d >= p["output_tok_per_s"] * (1 - 1e-9)


@FAST
@given(turn=st.integers(1, 200))
def test_routing_gain_grows_every_turn(turn):
    a = calc.kv_routing_ttft(M8, HW, turn)
    b = calc.kv_routing_ttft(M8, HW, turn + 1)
    assert b["context_tokens"] - a["context_tokens"] == ch17.AGENT_TOKENS_PER_TURN
    if turn > 1:
        assert b["speedup"] > a["speedup"]


# --- §8 routing and the interview's batch window ----------------------------------------------

def test_routed_mean_ttft_bounds():
    assert calc.routed_mean_ttft_s(1.0, 0.1, 1.0) == pytest.approx(0.1)
    assert calc.routed_mean_ttft_s(1.0, 0.1, 0.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="warm_share"):
        calc.routed_mean_ttft_s(1.0, 0.1, 1.5)
    curve = calc.routed_mean_ttft_s([1.0, 2.0], [0.1, 0.2], 0.5)
    assert list(curve) == pytest.approx([0.55, 1.1])
    with pytest.raises(ValueError, match="cold_s"):
        calc.routed_mean_ttft_s([1.0, -1.0], [0.1, 0.2], 0.5)
    with pytest.raises(TypeError, match="warm_s"):
        calc.routed_mean_ttft_s([1.0], ["x"], 0.5)


def test_routers_of_section_8_at_turn_20():
    # 932 ms cold, 39 ms warm: 90% warm -> ~128 ms, 30% warm -> ~664 ms (from the printed inputs)
    r = calc.kv_routing_ttft(M8, HW, 20)
    good, weak = (calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], h)
                  for h in ch17.ROUTER_WARM_SHARES)
    assert good == pytest.approx(0.9 * 0.039 + 0.1 * 0.932, abs=1e-3)
    assert weak == pytest.approx(0.3 * 0.039 + 0.7 * 0.932, abs=1e-3)


def test_layout_candidates_are_tp_first():
    assert layout_candidates(8, 4) == [(1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 3), (8, 4)]
    assert layout_candidates(4, 1) == [(1, 1), (2, 1), (4, 1)]
    with pytest.raises(ValueError, match="gpus_per_node"):
        layout_candidates(0)


def test_batch_window_of_the_interview():
    w = calc.batch_window(M8, HW)
    assert w["reserved_cap"] == 57                                 # "60 / 1.05 ~ 57"
    assert abs(w["paged_cap"] - 760) <= 5                          # "~ 760" (2 s.f.)
    printed(w["reserved_cap_step_s"], "6.1", ms)                   # §5: "6.1 ms"
    printed(w["paged_cap_step_s"], "23", ms)                       # "from 6 to 23 ms"
    # the interview's ITL target (20 ms, the companion's assumption) binds before paged KV's cap
    assert w["binding"] == "ITL target" and w["run_batch"] == w["itl_ceiling"] < w["paged_cap"]
    assert calc.batch_window(M8, HW, itl_target_s=25e-3)["binding"] == "KV memory"
    with pytest.raises(ValueError, match="live_tokens"):
        calc.batch_window(M8, HW, live_tokens=0)
    with pytest.raises(ValueError, match="itl_target_s"):
        calc.itl_batch_ceiling(M8, HW, 0, 600)
    with pytest.raises(ValueError, match="context_tokens"):
        calc.itl_batch_ceiling(M8, HW, 0.025, 600.5)


@settings(max_examples=30, deadline=None)
@given(st.floats(5e-3, 0.1), st.integers(100, 32_000), st.sampled_from([1, 2, 4]))
def test_itl_ceiling_is_the_boundary(target, context, tp):
    b = calc.itl_batch_ceiling(M8, HW, target, context, tp=tp)

    def step(batch):
        return calc.tp_decode_step(M8, HW, tp, batch=batch, context_tokens=context)["step_s"]

    if b:
        assert step(b) <= target
    assert step(b + 1) > target
