"""What ``companion.measure`` makes of a measurement: a ``Hardware`` for this machine, the
step-time fit step_s = fixed_s + bytes_read / bandwidth, the sweep analysis (MBU / MFU per
point, where the step stops being flat, the ridge-point prediction of that batch, 17 §2), and
the JSON files a class can pool and compare.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from companion import calc
from companion import validate as v
from companion.measure.records import (
    CPU_DTYPES,
    GPU_DTYPES,
    SCHEMA,
    SCHEMA_VERSION,
    DecodeSweep,
    Measurement,
)
from companion.specs import Hardware
from companion.units import GB, GFLOP, MiB

__all__ = ["hardware_from_measurement", "StepTimeFit", "fit_step_time", "fit_problems",
           "SweepAnalysis",
           "analyze_sweep", "save_measurement", "load_measurement", "compare_measurements",
           "comparison_text"]

def _measurement(name: str, value) -> Measurement:
    return v.instance(name, value, Measurement, "a companion.measure.Measurement")


def hardware_from_measurement(measurement: Measurement, *, device: str = "cpu",
                              dtype: str | None = None) -> Hardware:
    """A ``Hardware`` for the measured machine: best bandwidth, best matmul FLOP/s, memory size.

    mem_bw_bytes_per_s is the best STREAM-style figure (bytes over the fastest run, the highest
    of all kernels, STREAM's count without write-allocate); peak_flops_per_s the best matmul
    FLOP/s over the dtypes (or of ``dtype`` only: use the dtype your workload runs in, since a
    CPU's float64 peak is about half its float32 peak); peak_precision names that dtype
    ("FP32 (measured matmul)"), as a datasheet preset's says "dense BF16", so a comparison
    with a GPU can say which formats it sets side by side. Then calc.ridge_point gives this
    machine's ridge (17 §2) and every explorer can use it in place of a datasheet preset.
    """
    m = _measurement("measurement", measurement)
    dev = v.choice("device", device, ("cpu", "cuda"))
    allowed = CPU_DTYPES if dev == "cpu" else GPU_DTYPES
    if dtype is not None:
        v.choice("dtype", dtype, allowed)
    bws = [r for r in m.bandwidth if r.device == dev]
    mms = [r for r in m.matmul if r.device == dev and (dtype is None or r.dtype == dtype)]
    if not bws or not mms:
        raise ValueError(f"device: the measurement has no {dev} "
                         f"{'bandwidth' if not bws else 'matmul'} results"
                         f"{'' if dtype is None else f' for dtype {dtype}'}")
    best_bw = max(bws, key=lambda r: r.best_bytes_per_s)
    best_mm = max(mms, key=lambda r: r.best_flop_per_s)
    # the format the peak counts, in the words the datasheet presets use ("dense BF16")
    precision = {"float32": "FP32", "float64": "FP64", "bfloat16": "dense BF16",
                 "float16": "dense FP16"}.get(best_mm.dtype, best_mm.dtype)
    mem = m.machine.get("mem_bytes") if dev == "cpu" else m.machine.get("gpu_mem_bytes")
    who = m.machine.get("cpu_model") if dev == "cpu" else m.machine.get("gpu_name")
    return Hardware(
        name=f"{who} (measured{', ' + dtype if dtype else ''})",
        mem_bytes=mem or 1.0,
        mem_bw_bytes_per_s=best_bw.best_bytes_per_s,
        peak_flops_per_s=best_mm.best_flop_per_s,
        source=(f"companion.measure, {m.created_utc}: bandwidth = STREAM '{best_bw.kernel}' "
                f"({best_bw.array_bytes / MiB:.0f} MiB arrays, {best_bw.threads} thread(s), "
                f"fastest of {len(best_bw.time_s.samples)}); peak = {best_mm.dtype} matmul "
                f"n={best_mm.n}, fastest of {len(best_mm.time_s.samples)}"),
        extra={"label": m.label, "bandwidth_kernel": best_bw.kernel,
               "peak_dtype": best_mm.dtype, "created_utc": m.created_utc},
        peak_precision=f"{precision} (measured matmul)",
    )


# --- the step-time model (8.6.3, 17 §9) --------------------------------------------------------

@dataclass(frozen=True)
class StepTimeFit:
    """step_s = fixed_s + bytes_read / bandwidth_bytes_per_s, fitted by least squares."""

    fixed_s: float
    bandwidth_bytes_per_s: float
    bandwidth_fitted: bool
    n_points: int
    rms_residual_s: float
    # share of the step times' variance the line explains (1: every point on it; NaN when the
    # step times do not vary)
    r_squared: float = float("nan")

    def predict(self, bytes_read) -> np.ndarray:
        return self.fixed_s + np.asarray(bytes_read, dtype=float) / self.bandwidth_bytes_per_s


def _float_array(name: str, value, *, min_len: int, positive: bool) -> np.ndarray:
    seq = v.sequence(name, value, min_len=min_len)
    check = v.positive if positive else v.nonnegative
    return np.array([check(f"{name}[{i}]", x) for i, x in enumerate(seq)], dtype=float)


def fit_step_time(bytes_read, step_s, *, bandwidth_bytes_per_s: float | None = None) -> StepTimeFit:
    """Least-squares fit of step_s = fixed_s + bytes_read / bandwidth (8.6.3's round model).

    Both fixed_s and the bandwidth are fitted (the slope is 1 / bandwidth), unless
    ``bandwidth_bytes_per_s`` is given: then only fixed_s = mean(step_s - bytes_read / bw),
    which is how 8.6.3 splits a measured round into a read at spec bandwidth plus overhead.
    The fitted bandwidth is what the step actually streams at; fixed_s is what a step costs
    whatever it reads (launches, synchronisation, Python), but only as far as the model holds:
    with the bandwidth held, any per-byte slowness lands in fixed_s too, and where the costs
    overlap rather than add (8.6.3's rounds) no split is exact. A free fit needs at least two
    distinct byte counts and a step time that grows with them.
    """
    x = _float_array("bytes_read", bytes_read, min_len=1, positive=False)
    y = _float_array("step_s", step_s, min_len=1, positive=True)
    if len(x) != len(y):
        raise ValueError(f"step_s: has {len(y)} values but bytes_read has {len(x)}")
    if bandwidth_bytes_per_s is not None:
        bw = v.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
        fixed = float(np.mean(y - x / bw))
        fitted = False
    else:
        if len(x) < 2 or np.ptp(x) == 0:
            raise ValueError("bytes_read: a free fit needs at least two different byte counts; "
                             "pass bandwidth_bytes_per_s to fit fixed_s alone")
        design = np.column_stack([np.ones_like(x), x])
        (fixed, slope), *_ = np.linalg.lstsq(design, y, rcond=None)
        if slope <= 0:
            raise ValueError(f"step_s: does not grow with bytes_read (slope {slope:.3g} s/B), "
                             "so no bandwidth can be fitted; the points are not read-bound, "
                             "or pass bandwidth_bytes_per_s")
        bw, fixed, fitted = 1.0 / float(slope), float(fixed), True
    residual = y - (fixed + x / bw)
    spread = float(np.var(y))
    r2 = 1.0 - float(np.mean(residual**2)) / spread if spread > 0 else float("nan")
    return StepTimeFit(fixed_s=fixed, bandwidth_bytes_per_s=bw, bandwidth_fitted=fitted,
                       n_points=len(x), rms_residual_s=float(np.sqrt(np.mean(residual**2))),
                       r_squared=r2)


def fit_problems(fit: StepTimeFit, bytes_read, *, cache_bytes: float | None = None,
                 peak_bytes_per_s: float | None = None, min_r_squared: float = 0.8) -> list[str]:
    """Why a step-time fit's bandwidth should not be believed; an empty list when none applies.

    Three checks, each a sentence in the list: the line explains less than ``min_r_squared``
    of the step times' variance (noise or a wrong model); the largest read fits in the
    last-level cache (``cache_bytes``), so the slope measures the cache, not DRAM; the fitted
    bandwidth exceeds ``peak_bytes_per_s`` by half again (8.6.3's free fit, which returns
    several times the card's spec, fails this one). A fit with the bandwidth held fixed is
    judged on the first two only.
    """
    fit = v.instance("fit", fit, StepTimeFit, "a companion.measure.StepTimeFit")
    x = _float_array("bytes_read", bytes_read, min_len=1, positive=False)
    floor = v.probability("min_r_squared", min_r_squared, open_low=True)
    problems = []
    if not np.isfinite(fit.r_squared) or fit.r_squared < floor:
        share = "none" if not np.isfinite(fit.r_squared) else f"{max(fit.r_squared, 0.0):.0%}"
        problems.append(f"the line explains {share} of the variation in step time (R^2 below "
                        f"{floor:g}): noise or another cost hides the slope")
    if cache_bytes is not None:
        cache = v.positive("cache_bytes", cache_bytes)
        if x.max() <= cache:
            problems.append(f"the largest read ({x.max() / 1e6:.1f} MB) fits in the "
                            f"{cache / MiB:.0f} MiB last-level cache, so the slope is a cache "
                            "rate, not a memory bandwidth")
    if peak_bytes_per_s is not None:
        peak = v.positive("peak_bytes_per_s", peak_bytes_per_s)
        if fit.bandwidth_fitted and fit.bandwidth_bytes_per_s > 1.5 * peak:
            problems.append(f"the fitted bandwidth ({fit.bandwidth_bytes_per_s / 1e9:.4g} GB/s) "
                            f"is beyond the peak ({peak / 1e9:.4g} GB/s): the model's terms do "
                            "not simply add up")
    return problems


@dataclass(frozen=True, eq=False)
class SweepAnalysis:
    """A batch sweep read through the roofline: fits, knee, ridge prediction, MBU and MFU.

    Arrays are per sweep point, in sweep order. ``knee_batch``, ``crossover_batch`` and
    ``ridge_batch`` are defined in ``analyze_sweep``'s docstring. ``mbu`` and ``mfu`` divide by
    the *measured* roofs of ``hardware`` (best STREAM bandwidth, best matmul rate), not by a
    datasheet peak: "MBU vs measured" and "MFU vs measured" in what the lab prints.
    """

    sweep: DecodeSweep
    hardware: Hardware
    tolerance: float
    read_fit: StepTimeFit
    compute_flops_per_s: float | None
    knee_batch: int | None
    crossover_batch: float | None
    ridge_flop_per_byte: float
    ridge_batch: float | None
    batches: np.ndarray = field(repr=False)
    intensity_flop_per_byte: np.ndarray = field(repr=False)
    step_s: np.ndarray = field(repr=False)
    read_model_s: np.ndarray = field(repr=False)
    model_step_s: np.ndarray = field(repr=False)
    roofline_step_s: np.ndarray = field(repr=False)
    mbu: np.ndarray = field(repr=False)
    mfu: np.ndarray = field(repr=False)

    def summary(self) -> str:
        """A few lines with the headline numbers (for printing in a notebook)."""
        hw, fit = self.hardware, self.read_fit
        fmt_b = lambda b: "none in the sweep" if b is None else f"{b:.3g}"  # noqa: E731
        lines = [
            f"{hw.name}: {hw.mem_bw_bytes_per_s / GB:.1f} GB/s, "
            f"{hw.peak_flops_per_s / GFLOP:.1f} GFLOP/s, ridge {self.ridge_flop_per_byte:.2f} "
            f"FLOP/byte",
            f"sweep: {self.sweep.model.name}, D_w {self.sweep.points[0].weight_bytes / 1e6:.1f} MB, "
            f"context {self.sweep.points[0].context_tokens} tokens, batch "
            f"{int(self.batches[0])}..{int(self.batches[-1])}",
            f"read model: bytes / {fit.bandwidth_bytes_per_s / GB:.1f} GB/s + "
            f"{fit.fixed_s * 1e3:.2f} ms "
            + ("(both fitted)" if fit.bandwidth_fitted else
               "(bandwidth held at the STREAM best; the constant is the read-bound points' "
               "mean excess)"),
            "compute line: " + ("none (no point is clearly compute-bound)"
                                if self.compute_flops_per_s is None else
                                f"{self.compute_flops_per_s / GFLOP:.1f} GFLOP/s effective"),
            f"step stops being flat (>{self.tolerance:.0%} above the read model) at batch "
            f"{'none in the sweep' if self.knee_batch is None else self.knee_batch}",
            f"fitted lines cross at batch {fmt_b(self.crossover_batch)}; "
            f"ridge-point prediction: batch {fmt_b(self.ridge_batch)}",
            f"MBU vs measured {self.mbu.min():.0%}..{self.mbu.max():.0%}, "
            f"MFU vs measured {self.mfu.min():.1%}..{self.mfu.max():.1%}",
        ]
        if self.noisy_batches:
            lines.append(f"noisy (slowest repeat > {_NOISY:g} x fastest) at batch "
                         f"{', '.join(map(str, self.noisy_batches))}: was the machine busy?")
        return "\n".join(lines)

    @property
    def tokens_per_s(self) -> np.ndarray:
        """Decode throughput per point: batch / median step, one token per request per step
        (17 §5's tokens/s; each request's inter-token latency is the step itself)."""
        return self.batches / self.step_s

    @property
    def noisy_batches(self) -> list:
        """Batches whose slowest repeat took more than 1.5 x their fastest."""
        ratio = self.sweep.step_max_s / self.sweep.step_min_s
        return [int(b) for b, r in zip(self.batches, ratio) if r > _NOISY]


_NOISY = 1.5


def _crossover_batch(weight_bytes: float, kv_bytes_per_request: float, flop_per_request: float,
                     flops_per_s: float, bytes_per_s: float) -> float | None:
    """Batch b where compute time b F / P reaches read time (D_w + b L k) / beta.

    b (F / P - L k / beta) = D_w / beta, i.e. where the step's intensity b F / (D_w + b L k)
    reaches P / beta; None when each request adds more read time than compute time (then
    decode never leaves the memory roof, 8.2.1).
    """
    per_request = flop_per_request / flops_per_s - kv_bytes_per_request / bytes_per_s
    if per_request <= 0:
        return None
    return (weight_bytes / bytes_per_s) / per_request


def analyze_sweep(sweep: DecodeSweep, hardware: Hardware, *,
                  tolerance: float = 0.5) -> SweepAnalysis:
    """Read a batch sweep through the roofline of ``hardware`` (usually this machine, measured).

    Read model: step_s = fixed_s + bytes_read / bandwidth fitted (``fit_step_time``) to the
    read-bound points, those whose intensity is at most half the ridge. The bandwidth is
    fitted only if those points span at least 25% in bytes (3 points or more); otherwise it is
    fixed at hardware.mem_bw_bytes_per_s and only fixed_s is fitted (a batch sweep at short
    context reads almost the same bytes at every small batch).
    Compute line: step_s = fixed_s + flop / P_eff, P_eff fitted through the points whose
    intensity is at least twice the ridge (None if there are none).
    ``knee_batch``: the first sweep batch whose median step exceeds the read model by more
    than ``tolerance`` (default 50%): where the step visibly "stops being flat" (with context
    it rises slowly even while read-bound, which the read model follows). A generous
    tolerance, because on a CPU batch 1 often runs a faster matrix-vector kernel than
    batches 2-8, so the flat part itself is not quite level, and shared machines are noisy.
    ``crossover_batch``: where the fitted compute line meets the fitted read line.
    ``ridge_batch``: the roofline prediction, the batch where the step's intensity
    b F / (D_w + b L k) reaches ridge_point(hardware) (17 §2). With 2-byte weights and no KV
    that is b = ridge; the sweep's weights are float32 (4 bytes, intensity about b / 2, so
    b = 2 x ridge) or float64 (b / 4, so b = 4 x ridge).
    MBU and MFU per point: calc.mbu(bytes_read / step) and calc.mfu(flop / step) (17 §9),
    against ``hardware``'s roofs: measured ones when it comes from hardware_from_measurement.
    The read model's constant is not necessarily a per-step cost: with the bandwidth held at
    the STREAM best it is the mean time the read-bound points take beyond a read at that
    rate, so a kernel that streams the weights more slowly for a few rows than for one lands
    in it too (a per-byte loss). A sweep over the weight size at fixed batch separates the
    two: its slope is the rate the step streams at, its intercept the per-step cost.
    """
    sw = v.instance("sweep", sweep, DecodeSweep, "a companion.measure.DecodeSweep")
    hw = v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
    tol = v.positive("tolerance", tolerance)
    batches = sw.batches
    if len(set(batches.tolist())) != len(batches) or len(set(sw.context_tokens.tolist())) != 1:
        raise ValueError("sweep: needs one point per batch at a single context length "
                         "(for a context sweep use fit_step_time directly)")
    order = np.argsort(batches, kind="stable")
    if not np.array_equal(order, np.arange(len(batches))):
        raise ValueError("sweep: points must be in increasing batch order")

    bytes_read, flop, step = sw.bytes_read, sw.flop, sw.step_median_s
    intensity = flop / bytes_read
    ridge = calc.ridge_point(hw)

    read_bound = intensity <= ridge / 2
    if not read_bound.any():
        read_bound[0] = True
    xb, yb = bytes_read[read_bound], step[read_bound]
    fit = None
    if len(xb) >= 3 and xb.max() >= 1.25 * xb.min():
        try:
            fit = fit_step_time(xb, yb)
        except ValueError:
            fit = None
    if fit is None:
        fit = fit_step_time(xb, yb, bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s)
    read_model = fit.predict(bytes_read)

    compute_bound = intensity >= 2 * ridge
    p_eff = None
    if compute_bound.any():
        f, extra = flop[compute_bound], step[compute_bound] - fit.fixed_s
        inverse = float(np.sum(f * extra) / np.sum(f * f))   # least squares of extra = f / P
        p_eff = 1.0 / inverse if inverse > 0 else None

    above = np.nonzero(step > (1 + tol) * read_model)[0]
    knee = int(batches[above[0]]) if len(above) else None

    first = sw.points[0]
    L = first.context_tokens
    k_bytes = calc.kv_bytes_per_token(sw.model, bytes_per_value=sw.bytes_per_param)
    flop_per_request = calc.matrix_flops(sw.model, 1) + L * calc.attention_flops_per_pair(sw.model)
    kv_per_request = L * k_bytes
    crossover = (None if p_eff is None else
                 _crossover_batch(first.weight_bytes, kv_per_request, flop_per_request, p_eff,
                                  fit.bandwidth_bytes_per_s))
    ridge_b = _crossover_batch(first.weight_bytes, kv_per_request, flop_per_request,
                               hw.peak_flops_per_s, hw.mem_bw_bytes_per_s)

    if p_eff is None:
        model_step = read_model
    else:
        model_step = fit.fixed_s + np.maximum(bytes_read / fit.bandwidth_bytes_per_s,
                                              flop / p_eff)
    roofline = np.array([calc.decode_step_time(sw.model, hw, int(b), L,
                                               bytes_per_value=sw.bytes_per_param,
                                               flops_per_token=flop_per_request)
                         for b in batches])
    mbu = np.array([calc.mbu(x / t, hw) for x, t in zip(bytes_read, step)])
    mfu = np.array([calc.mfu(f / t, hw) for f, t in zip(flop, step)])
    return SweepAnalysis(sweep=sw, hardware=hw, tolerance=tol, read_fit=fit,
                         compute_flops_per_s=p_eff, knee_batch=knee, crossover_batch=crossover,
                         ridge_flop_per_byte=ridge, ridge_batch=ridge_b, batches=batches,
                         intensity_flop_per_byte=intensity, step_s=step, read_model_s=read_model,
                         model_step_s=model_step, roofline_step_s=roofline, mbu=mbu, mfu=mfu)


# --- files -------------------------------------------------------------------------------------

def _path(name: str, value) -> Path:
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path, got {type(value).__name__} {value!r}")
    return Path(value)


def save_measurement(measurement: Measurement, path) -> Path:
    """Write a measurement as JSON (schema SCHEMA, version SCHEMA_VERSION); returns the path.

    Samples are stored in full, so ``load_measurement`` gives back an equal Measurement and
    files from several machines can be pooled (``compare_measurements``).
    """
    m = _measurement("measurement", measurement)
    p = _path("path", path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(m.to_dict(), indent=1) + "\n", encoding="utf-8")
    return p


def load_measurement(path) -> Measurement:
    """Read a JSON file written by ``save_measurement``; checks the schema name and version."""
    p = _path("path", path)
    with open(p, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"path: {p} is not a {SCHEMA} file")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"path: {p} has schema_version {data.get('schema_version')!r}; "
                         f"this companion reads version {SCHEMA_VERSION}")
    return Measurement.from_dict(data)


def compare_measurements(paths) -> list:
    """One row per measurement file (or Measurement): the numbers to compare machines by.

    Columns: label, cpu, cores (the usable cores, or fewer when ``measure(threads=...)``
    limited the run), bandwidth_GB_per_s (best STREAM), float32_GFLOP_per_s,
    float64_GFLOP_per_s, ridge_float32_flop_per_byte, knee_batch and ridge_batch of the
    batch sweep (analyzed against the machine's own roofline in the sweep's dtype), gpu.
    """
    seq = v.sequence("paths", paths)
    rows = []
    for i, item in enumerate(seq):
        m = item if isinstance(item, Measurement) else load_measurement(_path(f"paths[{i}]", item))
        hw = hardware_from_measurement(m)
        best = {r.dtype: r.best_flop_per_s for r in m.matmul if r.device == "cpu"}
        row = {
            "label": m.label,
            "cpu": m.machine.get("cpu_model"),
            "cores": (m.machine.get("usable_cores") if m.machine.get("threads_limit") is None
                      else min(m.machine["threads_limit"], m.machine.get("usable_cores") or
                               m.machine["threads_limit"])),
            "bandwidth_GB_per_s": hw.mem_bw_bytes_per_s / GB,
            "float32_GFLOP_per_s": best["float32"] / GFLOP if "float32" in best else None,
            "float64_GFLOP_per_s": best["float64"] / GFLOP if "float64" in best else None,
            "ridge_float32_flop_per_byte": (best["float32"] / hw.mem_bw_bytes_per_s
                                            if "float32" in best else None),
            "knee_batch": None,
            "ridge_batch": None,
            "gpu": m.machine.get("gpu_name"),
        }
        if m.batch_sweep is not None and m.batch_sweep.dtype in best:
            a = analyze_sweep(m.batch_sweep,
                              hardware_from_measurement(m, dtype=m.batch_sweep.dtype))
            row["knee_batch"], row["ridge_batch"] = a.knee_batch, a.ridge_batch
        rows.append(row)
    return rows


def comparison_text(rows) -> str:
    """``compare_measurements`` rows as a fixed-width text table."""
    seq = v.sequence("rows", rows)
    for i, r in enumerate(seq):
        v.instance(f"rows[{i}]", r, dict, "a row dict from compare_measurements")
    cols = [("label", "machine", "{}"), ("cores", "cores", "{}"),
            ("bandwidth_GB_per_s", "GB/s", "{:.1f}"), ("float32_GFLOP_per_s", "fp32 GFLOP/s",
                                                       "{:.1f}"),
            ("float64_GFLOP_per_s", "fp64 GFLOP/s", "{:.1f}"),
            ("ridge_float32_flop_per_byte", "ridge fp32", "{:.2f}"),
            ("knee_batch", "knee b", "{}"), ("ridge_batch", "ridge b", "{:.1f}")]
    cells = [[h for _, h, _ in cols]]
    for r in seq:
        cells.append(["-" if r.get(k) is None else f.format(r[k]) for k, _, f in cols])
    widths = [max(len(row[j]) for row in cells) for j in range(len(cols))]
    return "\n".join("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in
                               enumerate(zip(row, widths))) for row in cells)


