"""Measure this machine and put it on the roofline: bandwidth, matmul throughput, decode sweeps.

Both chapters end their derivations with "now measure it" (17 §5 and §9, 8.6.3). This module
does the measuring on whatever machine runs it, with numpy only (torch, when present with CUDA,
adds GPU probes; it is imported lazily and never required):

  stream_probe      STREAM-style copy / scale / add / triad, plus a read-only kernel, on arrays
                    well beyond the last-level cache -> bytes/s
  matmul_probe      square matrix products in float32 and float64 -> FLOP/s
  gpu_probe         (torch + CUDA only) a device copy and bf16/fp16 matrix products
  decode_sweep      a stack of transformer-layer-shaped weight matrices (a companion Model's
                    shape scaled down) times a batch of activation rows, plus an explicit
                    per-request KV read, timed per step as batch and context grow
  measure           all of the above at "fast" (seconds, for tests) or full sizes

and then turns the numbers into the chapters' quantities:

  hardware_from_measurement   a companion.specs.Hardware for "this machine"
  fit_step_time               least squares of step_s = fixed_s + bytes_read / bandwidth
  fit_problems                why such a fit's bandwidth should not be believed (noise, cache)
  analyze_sweep               MBU / MFU per point, where the step stops being flat, and the
                              ridge-point prediction of that batch (17 §2)
  save_measurement / load_measurement / compare_measurements   JSON files a class can pool

Every probe repeats its timing and keeps every sample (``Spread``: median, min, max, quartiles).
Base units throughout: bytes, seconds, FLOP, FLOP/s, bytes/s.

A façade over ``records`` (the result types and file schema), ``probes`` (the timed probes and
``measure``) and ``analysis`` (what the numbers mean, and the files); ``python -m
companion.measure`` is ``__main__``.
"""

from __future__ import annotations

from companion.measure.records import (
    SCHEMA, SCHEMA_VERSION, CPU_DTYPES, GPU_DTYPES, ITEMSIZE, Spread, BandwidthResult,
    MatmulResult, SweepPoint, DecodeSweep, Measurement)
from companion.measure.probes import (
    STREAM_KERNELS, FULL_SIZES, FAST_SIZES, BROWSER_SIZES, in_browser, fast_mode, machine_info, stream_probe,
    matmul_probe, gpu_probe, scaled_decode_model, decode_sweep, measure)
from companion.measure.analysis import (
    hardware_from_measurement, StepTimeFit, fit_step_time, fit_problems, SweepAnalysis,
    analyze_sweep,
    save_measurement, load_measurement, compare_measurements, comparison_text)

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "CPU_DTYPES", "GPU_DTYPES", "ITEMSIZE", "Spread",
    "BandwidthResult", "MatmulResult", "SweepPoint", "DecodeSweep", "Measurement",
    "STREAM_KERNELS", "FULL_SIZES", "FAST_SIZES", "BROWSER_SIZES", "in_browser", "fast_mode", "machine_info", "stream_probe",
    "matmul_probe", "gpu_probe", "scaled_decode_model", "decode_sweep", "measure",
    "hardware_from_measurement", "StepTimeFit", "fit_step_time", "fit_problems", "SweepAnalysis",
    "analyze_sweep", "save_measurement", "load_measurement", "compare_measurements",
    "comparison_text",
]
