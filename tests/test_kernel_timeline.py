"""The decode round as kernels (companion.sim.kernel_timeline, 17 §9): its memory time is the
roofline round the simulator charges, launches pace the GPU only when they are slower than the
kernels, a CUDA graph replays the round with one launch, and Speed of Light reads the same
MBU/MFU as calc.decode_utilization. Plus the three new §8-§9 panels at the chapter's setting."""

from __future__ import annotations

import pytest

from companion import calc, specs, widgets
from companion.chapters import ch17
from companion.sim import batching_trace, batching_trace_requests, round_timeline
from companion.sim.kernel_timeline import (BIG_KERNELS, decode_step_timeline, layer_kernels,
                                           speed_of_light)

H100, M8, M70, QWEN = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B, specs.QWEN3_8B


@pytest.mark.parametrize("model", [M8, QWEN], ids=lambda m: m.name)
@pytest.mark.parametrize("batch,context", [(1, 0), (8, 600), (64, 8000)])
def test_the_big_kernels_move_the_rounds_bytes(model, batch, context):
    t = decode_step_timeline(model, H100, batch=batch, context_tokens=context)
    # (D_w + b L k) / beta, the memory term of the simulator's round time
    assert t.memory_time_s == pytest.approx(calc.decode_step_time(model, H100, batch, context),
                                            rel=1e-12)
    assert t.gpu_busy_s >= t.memory_time_s                 # small kernels only add time


def test_a_layer_is_five_big_kernels_plus_the_element_wise_ones():
    for per_layer in (5, 12, 16):
        ks = layer_kernels(M8, H100, kernels_per_layer=per_layer)
        assert len(ks) == per_layer
        assert sum(k.name in BIG_KERNELS for k in ks) == 5
    names = [k.name for k in layer_kernels(M8, H100)]
    assert names.index("qkv_proj") < names.index("attention") < names.index("down_proj")


def test_launches_pace_the_gpu_only_when_slower_than_its_kernels():
    free = decode_step_timeline(M8, H100, launch_overhead_s=0.0)
    assert free.gaps_s == pytest.approx(0.0, abs=1e-15)
    slow = decode_step_timeline(M8, H100, launch_overhead_s=1e-3)   # every kernel is shorter
    last = slow.rows("GPU")[-1]
    assert slow.step_s == pytest.approx(slow.kernels * 1e-3 + (last.end_s - last.start_s))
    assert slow.launches == slow.kernels == 32 * 12 + 1      # layers x kernels + sampling


def test_a_cuda_graph_is_one_launch_then_kernels_back_to_back():
    g = decode_step_timeline(M8, H100, cuda_graphs=True, graph_launch_s=20e-6)
    assert g.launches == 1 and len(g.rows("CPU")) == 1
    assert g.step_s == pytest.approx(20e-6 + g.gpu_busy_s)
    eager = decode_step_timeline(M8, H100)
    assert eager.gpu_busy_s == pytest.approx(g.gpu_busy_s)   # same kernels, other launches
    assert eager.step_s > g.step_s


def test_layers_scale_the_round():
    one = decode_step_timeline(M8, H100, layers=1, launch_overhead_s=0.0, cuda_graphs=True,
                               graph_launch_s=0.0)
    four = decode_step_timeline(M8, H100, layers=4, launch_overhead_s=0.0, cuda_graphs=True,
                                graph_launch_s=0.0)
    sampling = one.rows("GPU")[-1].end_s - one.rows("GPU")[-1].start_s
    assert four.step_s - sampling == pytest.approx(4 * (one.step_s - sampling))


def test_round_timeline_takes_the_simulated_rounds_batch():
    res = batching_trace(batching_trace_requests())["continuous"]
    rnd = res.rounds[40]
    decodes = [s for s in rnd.segments if s.kind == "decode"]
    t = round_timeline(res, 40, M8, H100)
    assert t.batch == len(decodes)
    with pytest.raises(ValueError, match="round_index"):
        round_timeline(res, len(res.rounds), M8, H100)
    with pytest.raises(TypeError, match="result"):
        round_timeline("not a schedule", 0, M8, H100)


def test_a_model_without_a_layer_shape_is_refused():
    bare = specs.Model("no width", n_layers=32, n_kv_heads=8, head_dim=128, n_params=8e9)
    with pytest.raises(ValueError, match="model: no width"):
        decode_step_timeline(bare, H100)


def test_speed_of_light_reads_the_chapters_decode_kernel():
    sol = speed_of_light(M8, H100)                 # default: 17 §9's "memory ~80%" kernel
    mlp = next(r for r in sol["kernels"] if r["name"] == "gate_up_proj")
    assert mlp["memory_pct"] == pytest.approx(80)
    assert mlp["compute_pct"] < 5                  # §9: "compute ~5%" or less at batch 1
    util = calc.decode_utilization(M8, H100, sol["tokens_per_s"], batch=1)
    assert sol["mbu"] == pytest.approx(util["mbu"]) and sol["mfu"] == pytest.approx(util["mfu"])
    lo, hi = ch17.HEALTHY_DECODE_MBU
    assert lo <= sol["mbu"] <= hi                  # the whole step lands in §9's healthy band
    ideal = speed_of_light(M8, H100, roof_fraction=1.0)
    assert next(r for r in ideal["kernels"] if r["name"] == "down_proj")["memory_pct"] == \
        pytest.approx(100)


def test_a_big_batch_moves_the_matmuls_toward_the_compute_roof():
    small = speed_of_light(M8, H100, batch=1)
    big = speed_of_light(M8, H100, batch=512)
    pick = lambda s: next(r for r in s["kernels"] if r["name"] == "gate_up_proj")  # noqa: E731
    assert pick(big)["compute_pct"] > 100 * pick(small)["compute_pct"]


# --- the panels ---------------------------------------------------------------------------------

def test_kernel_timeline_panel_default():
    p = widgets.KernelTimelinePanel()
    n = p.update().numbers
    assert n["kernels"] == 32 * 12 + 1 and n["launches"] == n["kernels"]
    assert n["idle_pct"] > 10                       # eager launches pace the round
    assert n["graph_speedup"] > 1
    g = p.update(graphs=True).numbers
    assert g["launches"] == 1 and g["idle_pct"] < 1
    assert g["memory_ms"] == pytest.approx(1e3 * calc.decode_step_time(M8, H100, 1, 0))


def test_speed_of_light_panel_default():
    n = widgets.SpeedOfLightPanel().update().numbers
    assert n["gate_up_memory_pct"] == pytest.approx(80)
    assert n["gate_up_compute_pct"] < 5
    assert 60 <= n["mbu_pct"] <= 80


def test_disaggregation_diagram_default_is_the_chapters_fleet():
    p = widgets.DisaggregationDiagramPanel()
    n = p.update().numbers
    assert (n["prefill_groups"], n["decode_groups"]) == (20, 10)   # "20 prefill", "10 decode"
    eight_k = p.update(mean_prompt_tokens=8000).numbers
    assert round(eight_k["ship_ms"]) == 52                           # "2.62 / 50 ≈ 52 ms"
    assert eight_k["prefill_groups"] == 80
    view = p.update(request_rate=200)
    squares = [t for t in view.traces if t.get("mode") == "markers"]
    assert [len(t["x"]) for t in squares] == [view.numbers["prefill_groups"],
                                              view.numbers["decode_groups"]]
