"""companion.measure: probes at tiny sizes, the step-time fit, the sweep analysis, files, figures.

Timings are never asserted beyond "positive, finite, physically plausible": the machine is
shared and its speed is what the lab measures, not what the tests check.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion import measure as M
from companion.measure import probes
from companion.specs import H100_SXM, LLAMA_8B, QWEN3_8B, RTX_PRO_6000, Hardware

REFERENCE = (Path(__file__).resolve().parents[1] / "notebooks" / "lab" / "measurements"
             / "reference_2core_epyc.json")


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    # tiny products gain nothing from BLAS threads, and on a shared, busy machine a
    # multi-threaded BLAS call waits for its slowest thread: keep the file fast
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def fast_measurement():
    return M.measure(fast=True, label="test machine", gpu=False)


def _finite_positive(x):
    return math.isfinite(x) and x > 0


# --- probes ------------------------------------------------------------------------------------

def test_spread_summaries():
    s = M.Spread((0.4, 0.1, 0.3, 0.2, 0.5))
    assert (s.median, s.min, s.max, s.q1, s.q3) == (0.3, 0.1, 0.5, 0.2, 0.4)
    with pytest.raises(ValueError, match="samples"):
        M.Spread(())
    with pytest.raises(ValueError, match=r"samples\[1\]"):
        M.Spread((0.1, -0.2))


@pytest.mark.parametrize("threads", [1, 2])
def test_stream_probe_counts_bytes_the_stream_way(threads):
    results = M.stream_probe(array_bytes=512 * 1024, repeats=3, threads=threads)
    by_kernel = {r.kernel: r for r in results}
    assert tuple(by_kernel) == M.STREAM_KERNELS
    n_bytes = 512 * 1024
    # STREAM's count: copy and scale touch 2 arrays, add and triad 3, read 2 (no write)
    expected = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "read": 2}
    with_write_allocate = {"copy": 3, "scale": 3, "add": 4, "triad": 4, "read": 2}
    for name, r in by_kernel.items():
        assert r.device == "cpu" and r.array_bytes == n_bytes
        assert r.bytes_per_run == expected[name] * n_bytes
        assert r.write_allocate_bytes_per_run == with_write_allocate[name] * n_bytes
        assert len(r.time_s.samples) == 3
        assert _finite_positive(r.best_bytes_per_s)
        # plausible, not fast: 1 MB/s (a badly overloaded machine) .. 100 TB/s
        assert 1e6 < r.best_bytes_per_s < 1e14
        assert r.best_bytes_per_s >= r.median_bytes_per_s
    assert by_kernel["copy"].threads == threads


def test_triad_computes_the_triad():
    # the chunked triad must compute c = a + 3 b over the whole array, not just time something
    a, b = np.full(100_003, 1.0), np.full(100_003, 2.0)
    c = np.empty_like(a)
    for start in range(0, len(a), probes._TRIAD_CHUNK):
        stop = min(start + probes._TRIAD_CHUNK, len(a))
        np.add(a[start:stop], probes._STREAM_SCALAR * b[start:stop], out=c[start:stop])
    assert np.all(c == 7.0)


def test_matmul_probe_counts_2n3():
    results = M.matmul_probe(n=48, repeats=3)
    assert [r.dtype for r in results] == ["float32", "float64"]
    for r in results:
        assert r.flop_per_run == 2 * 48**3
        assert 1e5 < r.best_flop_per_s < 1e16
        assert r.best_flop_per_s >= r.median_flop_per_s


def test_gpu_probe_is_skipped_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)     # "import torch" now fails
    assert M.gpu_probe(n=64, array_bytes=1 << 20, repeats=1) == ()
    assert M.machine_info()["gpu_name"] is None


def test_machine_info_describes_the_machine():
    info = M.machine_info()
    assert info["cpu_model"] and info["logical_cores"] >= 1 and info["usable_cores"] >= 1
    assert info["mem_bytes"] > 2**28
    assert info["numpy_version"] == np.__version__
    json.dumps(info)                                    # JSON-ready


# --- the decode sweep --------------------------------------------------------------------------

def test_scaled_decode_model_shape():
    m = M.scaled_decode_model(QWEN3_8B, scale=4, n_layers=4, dtype="float32")
    assert (m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim, m.intermediate_size) == \
        (1024, 8, 2, 128, 3072)
    per_layer = 2 * 1024 * 1024 + 2 * 1024 * 256 + 3 * 1024 * 3072
    assert m.n_params == 4 * per_layer == m.layer_params
    assert m.streamed_weight_bytes == 4 * m.n_params
    assert calc.kv_bytes_per_token(m, bytes_per_value=4) == 2 * 4 * 2 * 128 * 4


def test_unscaled_stack_is_qwen3_8b_layer_matrices():
    # 8,190,735,360 params (book conventions) minus embedding and lm_head (151936 x 4096 each),
    # the final norm and 36 layers' norms (2 x 4096 + 2 x 128 for q/k norms) = layer matrices
    m = M.scaled_decode_model(QWEN3_8B, scale=1, n_layers=36, dtype="float32")
    expected = 8_190_735_360 - 2 * 151_936 * 4096 - 4096 - 36 * (2 * 4096 + 2 * 128)
    assert m.n_params == expected
    assert calc.kv_bytes_per_token(m, bytes_per_value=2) == 147_456   # 144 KiB, 8.1.2


def test_scaled_decode_model_rejects_bad_shapes():
    with pytest.raises(ValueError, match="scale"):
        M.scaled_decode_model(QWEN3_8B, scale=3)
    with pytest.raises(ValueError, match="model"):
        M.scaled_decode_model(LLAMA_8B)                 # no FFN width in the Ch. 17 shape
    with pytest.raises(ValueError, match="dtype"):
        M.scaled_decode_model(QWEN3_8B, dtype="float16")


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_sweep_counts_bytes_and_flop(threads):
    sw = M.decode_sweep(QWEN3_8B, scale=8, n_layers=1, batches=(1, 2, 4),
                        context_tokens=(0, 16), repeats=2, threads=threads)
    assert [(p.context_tokens, p.batch) for p in sw.points] == \
        [(0, 1), (0, 2), (0, 4), (16, 1), (16, 2), (16, 4)]
    m = sw.model
    k = calc.kv_bytes_per_token(m, bytes_per_value=4)
    for p in sw.points:
        assert p.weight_bytes == m.streamed_weight_bytes
        assert p.bytes_read == m.streamed_weight_bytes + p.batch * p.context_tokens * k
        assert p.flop == (2 * m.n_params * p.batch
                          + p.batch * p.context_tokens * 4 * m.head_dim * m.n_heads * m.n_layers)
        assert all(_finite_positive(t) for t in p.step_s.samples)
        if p.context_tokens == 0:
            # float32 weights, no KV: 2 FLOP per 4-byte parameter per row -> b / 2 FLOP/byte
            assert p.intensity_flop_per_byte == pytest.approx(p.batch / 2)


def test_decode_sweep_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="batches"):
        M.decode_sweep(QWEN3_8B, scale=1, n_layers=36, batches=(4096,), context_tokens=(32768,))


# --- the step-time fit -------------------------------------------------------------------------

def test_fit_recovers_exact_parameters():
    bytes_read = np.linspace(2e8, 8e8, 7)
    step = 0.0172 + bytes_read / 25e9
    fit = M.fit_step_time(bytes_read, step)
    assert fit.bandwidth_fitted and fit.n_points == 7
    assert fit.fixed_s == pytest.approx(0.0172, rel=1e-9)
    assert fit.bandwidth_bytes_per_s == pytest.approx(25e9, rel=1e-9)
    assert fit.rms_residual_s < 1e-12


def test_fit_recovers_parameters_through_noise():
    rng = np.random.default_rng(12345)
    bytes_read = np.repeat(np.linspace(2e8, 8e8, 7), 5)
    step = (0.0172 + bytes_read / 25e9) * (1 + 0.01 * rng.standard_normal(len(bytes_read)))
    fit = M.fit_step_time(bytes_read, step)
    assert fit.fixed_s == pytest.approx(0.0172, rel=0.1)
    assert fit.bandwidth_bytes_per_s == pytest.approx(25e9, rel=0.05)


def test_fit_with_bandwidth_fixed_reproduces_8_6_3_overhead():
    # 8.6.3: batch 1 reads 15.44 GB per round, measured 26.26 ms; at 1792 GB/s the read takes
    # 8.62 ms, so the round "exceeds the read lower bound by about 17.6 ms"
    fit = M.fit_step_time([15.44e9], [26.26e-3], bandwidth_bytes_per_s=1792e9)
    assert not fit.bandwidth_fitted
    assert round(fit.fixed_s * 1e3, 1) == 17.6


def test_fit_problems_flag_noise_cache_and_impossible_bandwidth():
    bytes_read = np.linspace(2e8, 8e8, 7)
    clean = M.fit_step_time(bytes_read, 0.0172 + bytes_read / 25e9)
    assert clean.r_squared == pytest.approx(1.0)
    assert M.fit_problems(clean, bytes_read, cache_bytes=32 * 2**20, peak_bytes_per_s=30e9) == []
    # noise far larger than the slope's effect: the line explains little
    rng = np.random.default_rng(7)
    noisy_steps = 0.0172 + bytes_read / 25e9 + 0.02 * rng.standard_normal(len(bytes_read))
    noisy = M.fit_step_time(bytes_read, np.abs(noisy_steps))
    assert noisy.r_squared < 0.8
    assert any("explains" in p for p in M.fit_problems(noisy, bytes_read))
    # reads that fit in the cache measure the cache
    small = np.linspace(0, 4e6, 4)
    in_cache = M.fit_step_time(small, 1e-3 + small / 50e9)
    assert any("cache" in p for p in M.fit_problems(in_cache, small, cache_bytes=32 * 2**20))
    # 8.6.3's free fit gives a bandwidth several times the card's 1792 GB/s spec
    rounds = [15.44e9, 16.34e9, 19.97e9, 34.46e9]
    free = M.fit_step_time(rounds, [26.26e-3, 26.62e-3, 27.44e-3, 29.63e-3])
    assert any("beyond the peak" in p for p in M.fit_problems(free, rounds,
                                                                peak_bytes_per_s=1792e9))
    with pytest.raises(TypeError, match="^fit"):
        M.fit_problems("not a fit", rounds)

def test_fit_errors_name_the_parameter():
    with pytest.raises(ValueError, match="step_s"):
        M.fit_step_time([1e8, 2e8], [0.01])
    with pytest.raises(ValueError, match="bytes_read"):
        M.fit_step_time([1e8, 1e8], [0.01, 0.011])
    with pytest.raises(ValueError, match="step_s"):
        M.fit_step_time([1e8, 2e8], [0.02, 0.01])       # shrinking step: not read-bound
    with pytest.raises(ValueError, match=r"step_s\[1\]"):
        M.fit_step_time([1e8, 2e8], [0.01, 0.0])
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        M.fit_step_time([1e8], [0.01], bandwidth_bytes_per_s=-1.0)


@settings(max_examples=40, deadline=None)
@given(fixed_ms=st.floats(0.0, 50.0), bw_gb=st.floats(1.0, 5000.0),
       scale=st.floats(1e7, 1e11))
def test_fit_inverts_the_model(fixed_ms, bw_gb, scale):
    bytes_read = scale * np.array([1.0, 1.5, 2.0, 3.0])
    step = fixed_ms * 1e-3 + bytes_read / (bw_gb * 1e9)
    fit = M.fit_step_time(bytes_read, step)
    assert fit.bandwidth_bytes_per_s == pytest.approx(bw_gb * 1e9, rel=1e-6)
    assert fit.predict(bytes_read) == pytest.approx(step, rel=1e-6, abs=1e-12)


# --- the sweep analysis on a synthetic sweep with known answers ---------------------------------

def _synthetic_sweep(hw, *, fixed_s, dtype="float32", context=0, batches=(1, 2, 4, 8, 16, 32, 64)):
    """A sweep whose step is exactly fixed + max(bytes / bw, FLOP / peak)."""
    model = M.scaled_decode_model(QWEN3_8B, scale=4, n_layers=4, dtype=dtype)
    k = calc.kv_bytes_per_token(model, bytes_per_value=model.bytes_per_param)
    points = []
    for b in batches:
        kv = b * context * k
        flop = calc.matrix_flops(model, b) + b * context * calc.attention_flops_per_pair(model)
        step = fixed_s + max((model.streamed_weight_bytes + kv) / hw.mem_bw_bytes_per_s,
                             flop / hw.peak_flops_per_s)
        points.append(M.SweepPoint(batch=b, context_tokens=context,
                                   weight_bytes=model.streamed_weight_bytes, kv_bytes=kv,
                                   flop=flop, step_s=M.Spread((step * 0.99, step, step * 1.02))))
    return M.DecodeSweep(model=model, base_model=QWEN3_8B.name, scale=4, dtype=dtype, threads=1,
                         points=tuple(points))


TOY = Hardware("toy CPU", mem_bytes=16e9, mem_bw_bytes_per_s=25e9, peak_flops_per_s=100e9)


def test_analysis_finds_the_known_knee_and_ridge():
    sw = _synthetic_sweep(TOY, fixed_s=0.002)
    a = M.analyze_sweep(sw, TOY)
    assert a.ridge_flop_per_byte == 4.0
    # float32 weights: intensity b / 2 reaches the ridge 4 at b = 8 (2-byte weights: b = 4)
    assert a.ridge_batch == pytest.approx(8.0)
    assert not a.read_fit.bandwidth_fitted               # no KV: bytes equal at every batch
    assert a.read_fit.fixed_s == pytest.approx(0.002, rel=1e-9)
    assert a.compute_flops_per_s == pytest.approx(100e9, rel=1e-9)
    assert a.crossover_batch == pytest.approx(8.0)
    # read model 9.72 ms; b=8 steps 9.72 ms (flat), b=16 steps 17.4 ms (> 1.25 x 9.72)
    assert a.knee_batch == 16
    w = sw.points[0].weight_bytes
    assert a.mbu[0] == pytest.approx(w / (0.002 + w / 25e9) / 25e9)
    assert a.mfu[-1] == pytest.approx(sw.points[-1].flop / a.step_s[-1] / 100e9)
    assert np.allclose(a.model_step_s, a.step_s)
    assert "ridge-point prediction: batch 8" in a.summary()


def test_ridge_batch_scales_with_bytes_per_weight():
    a64 = M.analyze_sweep(_synthetic_sweep(TOY, fixed_s=0.001, dtype="float64"), TOY)
    assert a64.ridge_batch == pytest.approx(16.0)        # float64: intensity b / 4


def test_ridge_batch_with_context_meets_the_ridge():
    sw = _synthetic_sweep(TOY, fixed_s=0.001, context=256, batches=(1, 2, 4, 8, 16, 32, 64, 128))
    a = M.analyze_sweep(sw, TOY)
    m = sw.model
    b = a.ridge_batch
    k = calc.kv_bytes_per_token(m, bytes_per_value=4)
    F = calc.matrix_flops(m, 1) + 256 * calc.attention_flops_per_pair(m)
    intensity = b * F / (m.streamed_weight_bytes + b * 256 * k)
    assert intensity == pytest.approx(4.0)
    assert b > 8                                          # KV reads push the ridge batch out
    assert a.crossover_batch == pytest.approx(b, rel=1e-6)


def test_kv_heavy_decode_never_reaches_the_ridge():
    # attention reads 4 bytes per 2 FLOP (float32 KV): with a ridge above 1/2 FLOP per byte of
    # KV and a long context, each request adds more read than compute time (8.2.1)
    slow = Hardware("wide", mem_bytes=1e9, mem_bw_bytes_per_s=1e9, peak_flops_per_s=1e12)
    sw = _synthetic_sweep(slow, fixed_s=0.0, context=200_000, batches=(1, 2, 4))
    assert M.analyze_sweep(sw, slow).ridge_batch is None


def test_analysis_rejects_a_context_sweep():
    sw = _synthetic_sweep(TOY, fixed_s=0.001)
    mixed = replace(sw, points=sw.points + (replace(sw.points[0], context_tokens=64),))
    with pytest.raises(ValueError, match="sweep"):
        M.analyze_sweep(mixed, TOY)
    with pytest.raises(TypeError, match="hardware"):
        M.analyze_sweep(sw, "H100")
    with pytest.raises(ValueError, match="tolerance"):
        M.analyze_sweep(sw, TOY, tolerance=0)


# --- Hardware from a measurement, files, comparison -----------------------------------------

def test_hardware_from_measurement(fast_measurement):
    m = fast_measurement
    hw = M.hardware_from_measurement(m)
    assert hw.mem_bw_bytes_per_s == max(r.best_bytes_per_s for r in m.bandwidth)
    assert hw.peak_flops_per_s == max(r.best_flop_per_s for r in m.matmul)
    assert hw.mem_bytes == m.machine["mem_bytes"]
    hw64 = M.hardware_from_measurement(m, dtype="float64")
    assert hw64.peak_flops_per_s == [r for r in m.matmul if r.dtype == "float64"][0].best_flop_per_s
    assert calc.ridge_point(hw) > 0
    with pytest.raises(ValueError, match="device"):
        M.hardware_from_measurement(m, device="cuda")
    with pytest.raises(ValueError, match="dtype"):
        M.hardware_from_measurement(m, dtype="bfloat16")


def test_fast_measurement_is_complete(fast_measurement):
    m = fast_measurement
    assert m.fast and m.label == "test machine"
    assert {r.kernel for r in m.bandwidth} == set(M.STREAM_KERNELS)
    assert {r.dtype for r in m.matmul} == set(M.CPU_DTYPES)
    assert len(set(m.batch_sweep.context_tokens)) == 1
    assert len(set(m.context_sweep.batches)) == 1
    a = M.analyze_sweep(m.batch_sweep, M.hardware_from_measurement(m, dtype="float32"))
    assert np.all(np.isfinite(a.mbu)) and np.all(a.mbu > 0) and np.all(a.mfu > 0)


def test_save_load_round_trip(fast_measurement, tmp_path):
    path = M.save_measurement(fast_measurement, tmp_path / "sub" / "m.json")
    back = M.load_measurement(path)
    assert back == fast_measurement
    assert M.load_measurement(M.save_measurement(back, tmp_path / "again.json")) == back
    data = json.loads(path.read_text())
    assert data["schema"] == M.SCHEMA and data["schema_version"] == M.SCHEMA_VERSION
    point = data["batch_sweep"]["points"][0]
    assert {"step_s", "weight_bytes", "kv_bytes", "bytes_read"} <= set(point)
    assert {"time_s", "bytes_per_run", "best_bytes_per_s"} <= set(data["bandwidth"][0])

    data["schema_version"] = 99
    (tmp_path / "future.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="path"):
        M.load_measurement(tmp_path / "future.json")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something else"}))
    with pytest.raises(ValueError, match="path"):
        M.load_measurement(tmp_path / "other.json")
    with pytest.raises(TypeError, match="path"):
        M.save_measurement(fast_measurement, 42)
    with pytest.raises(TypeError, match="measurement"):
        M.save_measurement({"not": "a measurement"}, tmp_path / "x.json")


def test_committed_reference_measurement_loads():
    m = M.load_measurement(REFERENCE)
    assert not m.fast
    assert m.machine["usable_cores"] >= 1 and m.machine["blas"]
    assert max(r.array_bytes for r in m.bandwidth) >= 4 * m.machine["last_level_cache_bytes"]
    assert m.batch_sweep.points[0].weight_bytes > m.machine["last_level_cache_bytes"]
    hw = M.hardware_from_measurement(m, dtype=m.batch_sweep.dtype)
    a = M.analyze_sweep(m.batch_sweep, hw)
    assert a.ridge_batch is not None and a.ridge_batch > 0


def test_compare_measurements(fast_measurement, tmp_path):
    path = M.save_measurement(fast_measurement, tmp_path / "m.json")
    rows = M.compare_measurements([path, REFERENCE])
    assert [r["label"] for r in rows] == ["test machine", M.load_measurement(REFERENCE).label]
    row = rows[0]
    hw = M.hardware_from_measurement(fast_measurement)
    assert row["bandwidth_GB_per_s"] == pytest.approx(hw.mem_bw_bytes_per_s / 1e9)
    assert row["ridge_float32_flop_per_byte"] > 0
    text = M.comparison_text(rows)
    assert text.splitlines()[0].startswith("machine") and len(text.splitlines()) == 3
    with pytest.raises(ValueError, match="paths"):
        M.compare_measurements([])
    with pytest.raises(TypeError, match=r"paths\[0\]"):
        M.compare_measurements([3.5])


def test_fast_mode_follows_the_environment(monkeypatch):
    monkeypatch.setenv("COMPANION_FAST", "1")
    assert M.fast_mode()
    monkeypatch.setenv("COMPANION_FAST", "0")
    assert not M.fast_mode()


def test_measure_rejects_bad_arguments():
    with pytest.raises(TypeError, match="fast"):
        M.measure(fast="yes")
    with pytest.raises(TypeError, match="model"):
        M.measure(fast=True, model="Qwen3-8B")
    with pytest.raises(ValueError, match="threads"):
        M.measure(fast=True, threads=0)
    with pytest.raises(TypeError, match="threads"):
        M.measure(fast=True, threads="one")


def test_measure_threads_limits_every_cpu_probe(monkeypatch):
    # threads=N reaches the probes' own worker threads (STREAM's element-wise kernels, the
    # sweeps' attention) and the BLAS alike, and the file says so
    asked, limits = {}, []

    def record(name, result):
        def probe(*args, **kwargs):
            asked.setdefault(name, []).append(kwargs)
            return result
        return probe

    class Limit:
        def __init__(self, n):
            limits.append(n)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(probes, "stream_probe", record("stream", ()))
    monkeypatch.setattr(probes, "matmul_probe", record("matmul", ()))
    monkeypatch.setattr(probes, "gpu_probe", record("gpu", ()))
    monkeypatch.setattr(probes, "decode_sweep", record("sweep", None))
    monkeypatch.setattr(probes, "_blas_limit", Limit)
    m = probes.measure(fast=False, threads=1, gpu=False)
    assert limits == [1]
    assert asked["stream"] == [dict(probes.FULL_SIZES["stream"], threads=1)]
    assert asked["matmul"] == [probes.FULL_SIZES["matmul"]]
    assert [kw["threads"] for kw in asked["sweep"]] == [1, 1]
    assert m.machine["threads_limit"] == 1
    assert "threads" not in probes.FULL_SIZES["stream"]        # the presets stay untouched
    # without threads, the presets pass through unchanged (fast: the BLAS on one thread)
    asked.clear()
    limits.clear()
    probes.measure(fast=True, gpu=False)
    assert limits == [1] and asked["stream"] == [probes.FAST_SIZES["stream"]]
    ref = M.load_measurement(REFERENCE)
    one = replace(ref, machine={**ref.machine, "threads_limit": 1})
    assert [r["cores"] for r in M.compare_measurements([ref, one])] == [2, 1]


def test_measured_hardware_names_its_format():
    ref = M.load_measurement(REFERENCE)
    assert M.hardware_from_measurement(ref, dtype="float32").peak_precision.startswith("FP32")
    assert M.hardware_from_measurement(ref, dtype="float64").peak_precision.startswith("FP64")
    assert H100_SXM.peak_precision == "dense BF16"


def test_analysis_reports_tokens_per_second():
    sw = _synthetic_sweep(TOY, fixed_s=0.002)
    a = M.analyze_sweep(sw, TOY)
    assert np.allclose(a.tokens_per_s, a.batches / a.step_s)
    assert "MBU vs measured" in a.summary() and "MFU vs measured" in a.summary()


# --- figures -----------------------------------------------------------------------------------

def test_figures_are_labelled_and_deterministic():
    import companion.plots as P

    sw = _synthetic_sweep(TOY, fixed_s=0.002)
    a = M.analyze_sweep(sw, TOY)
    roof = P.measured_roofline(TOY, references=(H100_SXM, RTX_PRO_6000), analysis=a)
    assert roof.to_json() == P.measured_roofline(TOY, analysis=a).to_json()
    assert "FLOP per byte" in roof.layout.xaxis.title.text
    assert "FLOP/s" in roof.layout.yaxis.title.text
    # the H100 roof bends at its ridge, 295 FLOP/byte at 989 TFLOP/s (17 §2)
    h100 = [t for t in roof.data if t.name and t.name.startswith("H100")][0]
    assert h100.x[1] == pytest.approx(989e12 / 3.35e12) and h100.y[1] == 989e12
    measured = roof.data[-1]
    assert list(measured.x) == pytest.approx(a.intensity_flop_per_byte.tolist())

    step = P.measured_step_time(a)
    assert "(ms)" in step.layout.yaxis.title.text and "batch" in step.layout.xaxis.title.text
    assert list(step.data[0].y) == pytest.approx((a.step_s * 1e3).tolist())

    # the ridge prediction's line is not drawn like the roofline-bound series
    bound = [t for t in step.data if t.name and t.name.startswith("roofline bound")][0]
    ridge_line = [sh for sh in step.layout.shapes if sh.x0 == pytest.approx(a.ridge_batch)][0]
    assert (ridge_line.line.color, ridge_line.line.dash) != (bound.line.color, bound.line.dash)
    # every roof names the format its peak counts, and the diamonds have a legend entry
    assert "dense BF16" in h100.name and TOY.peak_precision in roof.data[0].name
    diamonds = [t for t in roof.data if t.marker.symbol == "diamond"]
    assert len(diamonds) == 3 and sum(bool(t.showlegend) for t in diamonds) == 1
    assert "ridge" in diamonds[0].name

    util = P.measured_utilization(a)
    assert "(%)" in util.layout.yaxis.title.text
    assert list(util.data[0].y) == pytest.approx((a.mbu * 100).tolist())
    assert util.data[0].name.startswith("MBU vs measured")

    ctx = _synthetic_sweep(TOY, fixed_s=0.002, context=512, batches=(1, 2))
    fit = M.fit_step_time(ctx.kv_bytes, ctx.step_median_s)
    fig = P.measured_step_vs_bytes(ctx, fit, bytes_kind="kv")
    assert "(MB)" in fig.layout.xaxis.title.text and "(ms)" in fig.layout.yaxis.title.text


def test_figure_arguments_are_checked():
    import companion.plots as P

    with pytest.raises(TypeError, match="hardware"):
        P.measured_roofline("my laptop")
    with pytest.raises(TypeError, match=r"references\[0\]"):
        P.measured_roofline(TOY, references=["H100"])
    with pytest.raises(TypeError, match="analysis"):
        P.measured_step_time(None)
    with pytest.raises(TypeError, match="analysis"):
        P.measured_utilization({})
    sw = _synthetic_sweep(TOY, fixed_s=0.002, context=8, batches=(1, 2))
    fit = M.fit_step_time(sw.bytes_read, sw.step_median_s)
    with pytest.raises(ValueError, match="bytes_kind"):
        P.measured_step_vs_bytes(sw, fit, bytes_kind="weights")
    with pytest.raises(TypeError, match="fit"):
        P.measured_step_vs_bytes(sw, 1.0)


# --- the GPU path, exercised with a stand-in for torch (no GPU or torch here) ---------------------

class _FakeTensor:
    def __init__(self, array):
        self.a = array

    def fill_(self, value):
        self.a.fill(value)
        return self

    def numel(self):
        return self.a.size

    def copy_(self, other):
        np.copyto(self.a, other.a)
        return self

    def sum(self):
        return float(self.a.sum())

    def to(self, dtype):
        return _FakeTensor(self.a.astype(dtype))


class _FakeEvent:
    clock = 0.0

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        _FakeEvent.clock += 0.5          # every recorded event is 0.5 ms after the previous one
        self.t = _FakeEvent.clock

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return end.t - self.t            # milliseconds, like torch


class _FakeCuda:
    Event = _FakeEvent

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_properties(index):
        return type("Props", (), {"name": "Fake GPU", "total_memory": 80 * 10**9})()

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass


class _FakeTorch:
    __version__ = "0.0-fake"
    cuda = _FakeCuda
    float32, bfloat16, float16 = np.float32, np.float32, np.float16

    @staticmethod
    def empty(*shape, dtype=np.float32, device=None):
        return _FakeTensor(np.empty(shape, dtype=dtype))

    @staticmethod
    def empty_like(t):
        return _FakeTensor(np.empty_like(t.a))

    @staticmethod
    def randn(*shape, device=None):
        return _FakeTensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))

    @staticmethod
    def matmul(x, y, out=None):
        np.matmul(x.a, y.a, out=out.a)
        return out


def test_gpu_path_with_a_stand_in_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch)
    results = M.gpu_probe(n=16, array_bytes=1 << 16, repeats=3)
    bw = [r for r in results if isinstance(r, M.BandwidthResult)]
    mm = [r for r in results if isinstance(r, M.MatmulResult)]
    assert [(r.device, r.kernel) for r in bw] == [("cuda", "copy"), ("cuda", "read")]
    assert bw[0].bytes_per_run == 2 * (1 << 16) and bw[1].bytes_per_run == 1 << 16
    assert [r.dtype for r in mm] == list(M.GPU_DTYPES)
    assert all(r.time_s.samples == (0.5e-3,) * 3 for r in bw + mm)   # event ms -> seconds
    assert mm[0].flop_per_run == 2 * 16**3
    info = M.machine_info()
    assert info["gpu_name"] == "Fake GPU" and info["gpu_mem_bytes"] == 80 * 10**9

    m = M.Measurement(label="fake", created_utc="2000-01-01T00:00:00+00:00", fast=True,
                      machine=info, bandwidth=tuple(bw), matmul=tuple(mm))
    gpu = M.hardware_from_measurement(m, device="cuda", dtype="bfloat16")
    assert gpu.mem_bytes == 80e9
    assert gpu.mem_bw_bytes_per_s == pytest.approx(2 * (1 << 16) / 0.5e-3)
    assert gpu.peak_flops_per_s == pytest.approx(2 * 16**3 / 0.5e-3)
    with pytest.raises(ValueError, match="dtype"):
        M.hardware_from_measurement(m, device="cuda", dtype="float32")


def test_in_a_browser_measure_uses_the_browser_sizes_and_says_so(monkeypatch):
    # the lite site's Pyodide kernel: FULL_SIZES there ran past ten minutes, and what is
    # measured is the browser's WebAssembly, which the label must say whatever the caller asks
    from companion.measure import probes

    asked = {}

    def record(name, result):
        def probe(*args, **kwargs):
            asked.setdefault(name, []).append(kwargs)
            return result
        return probe

    monkeypatch.setattr(probes, "stream_probe", record("stream", ()))
    monkeypatch.setattr(probes, "matmul_probe", record("matmul", ()))
    monkeypatch.setattr(probes, "gpu_probe", record("gpu", ()))
    monkeypatch.setattr(probes, "decode_sweep", record("sweep", None))
    monkeypatch.setattr(probes.sys, "platform", "emscripten")
    assert probes.in_browser()
    m = probes.measure(fast=False, label="this machine")
    assert asked["stream"] == [probes.BROWSER_SIZES["stream"]]
    assert asked["sweep"] == [probes.BROWSER_SIZES["batch_sweep"],
                              probes.BROWSER_SIZES["context_sweep"]]
    assert m.label == f"this machine: {probes.IN_BROWSER_LABEL}" and "WebAssembly" in m.label
    assert probes.measure(fast=True).label == probes.IN_BROWSER_LABEL   # fast sizes say it too
    assert asked["stream"][-1] == probes.FAST_SIZES["stream"]
