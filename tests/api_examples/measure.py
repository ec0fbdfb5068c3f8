"""Good calls of companion.measure (tiny sizes: each probe runs in milliseconds)."""

import tempfile
from pathlib import Path

from companion.measure import (compare_measurements, fit_step_time, hardware_from_measurement,
                               load_measurement)
from companion.specs import QWEN3_8B

TARGET = "companion.measure"

REFERENCE = (Path(__file__).resolve().parents[2] / "notebooks" / "lab" / "measurements"
             / "reference_2core_epyc.json")
_REF = load_measurement(REFERENCE)
_SCRATCH = Path(tempfile.gettempdir()) / "companion_api_example_measurement.json"

EXAMPLES = {
    "fast_mode": dict(),
    "machine_info": dict(),
    "stream_probe": dict(array_bytes=256 * 1024, repeats=2, threads=1,
                         kernels=["copy", "triad", "read"]),
    "matmul_probe": dict(n=32, dtypes=["float32", "float64"], repeats=2, seed=1),
    "gpu_probe": dict(n=64, array_bytes=1 << 20, repeats=2),
    "scaled_decode_model": dict(model=QWEN3_8B, scale=8, n_layers=1, dtype="float32"),
    "decode_sweep": dict(model=QWEN3_8B, scale=8, n_layers=1, batches=[1, 2],
                         context_tokens=[0, 8], dtype="float32", repeats=1, threads=1,
                         max_memory_fraction=0.5),
    "measure": dict(fast=True, label="api example", model=QWEN3_8B, gpu=False, threads=1),
    "hardware_from_measurement": dict(measurement=_REF, device="cpu", dtype="float32"),
    "fit_step_time": dict(bytes_read=[1e8, 2e8, 3e8], step_s=[0.011, 0.021, 0.031]),
    "fit_problems": dict(fit=fit_step_time([1e8, 2e8, 3e8], [0.011, 0.021, 0.032]),
                         bytes_read=[1e8, 2e8, 3e8], cache_bytes=32 * 2**20,
                         peak_bytes_per_s=20e9, min_r_squared=0.8),
    "analyze_sweep": dict(sweep=_REF.batch_sweep,
                          hardware=hardware_from_measurement(_REF, dtype="float32"),
                          tolerance=0.5),
    "save_measurement": dict(measurement=_REF, path=_SCRATCH),
    "load_measurement": dict(path=REFERENCE),
    "compare_measurements": dict(paths=[REFERENCE]),
    "comparison_text": dict(rows=compare_measurements([REFERENCE])),
}

ALLOW = {
    "matmul_probe": {"seed": ["zero"]},               # seed 0 is a seed like any other
    "measure": {"label": ["unknown-option"]},         # a label is free text
}
