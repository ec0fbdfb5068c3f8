"""The records ``companion.measure`` writes and reads: repeated timings (``Spread``), the
STREAM, matmul and decode-sweep results, a whole ``Measurement``, and the file schema.

Base units throughout: bytes, seconds, FLOP, FLOP/s, bytes/s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from companion import validate as v
from companion.specs import Model

__all__ = ["SCHEMA", "SCHEMA_VERSION", "CPU_DTYPES", "GPU_DTYPES", "ITEMSIZE", "Spread",
           "BandwidthResult", "MatmulResult", "SweepPoint", "DecodeSweep", "Measurement"]

SCHEMA = "companion.measure"
SCHEMA_VERSION = 1

CPU_DTYPES = ("float32", "float64")
GPU_DTYPES = ("bfloat16", "float16")
ITEMSIZE = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2}


# --- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Spread:
    """Repeated timings of one probe, in seconds: every sample kept, summaries derived."""

    samples: tuple

    def __post_init__(self):
        seq = v.sequence("samples", self.samples)
        vals = tuple(v.positive(f"samples[{i}]", x) for i, x in enumerate(seq))
        object.__setattr__(self, "samples", vals)

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def q1(self) -> float:
        return float(np.percentile(self.samples, 25))

    @property
    def q3(self) -> float:
        return float(np.percentile(self.samples, 75))

    def to_dict(self) -> dict:
        return {"samples": list(self.samples), "median": self.median, "min": self.min,
                "max": self.max, "q1": self.q1, "q3": self.q3}

    @classmethod
    def from_dict(cls, d: dict) -> "Spread":
        return cls(tuple(d["samples"]))


class _TimedRecord:
    """JSON round trip shared by the timed results: every field as it is, the Spread field as
    a dict, plus derived figures written for readers of the file (never loaded back)."""

    _spread_field = "time_s"
    _derived: tuple = ()

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d[self._spread_field] = getattr(self, self._spread_field).to_dict()
        d.update({name: getattr(self, name) for name in self._derived})
        return d

    @classmethod
    def from_dict(cls, d: dict):
        kw = {f.name: d[f.name] for f in fields(cls)}
        kw[cls._spread_field] = Spread.from_dict(d[cls._spread_field])
        return cls(**kw)


@dataclass(frozen=True)
class BandwidthResult(_TimedRecord):
    """One bandwidth kernel: bytes it moves per run (STREAM's count) and its timings.

    ``bytes_per_run`` counts each array read or written once (STREAM's convention: copy and
    scale 2 arrays, add and triad 3, read 2), so write-allocate is NOT counted there. A normal
    store first reads the line it overwrites; ``write_allocate_bytes_per_run`` adds that read
    (copy 3 arrays, triad 4): the traffic the memory bus carries unless the kernel uses
    non-temporal stores. ``threads`` is how many threads ran it (for "read", the BLAS threads).
    """

    device: str
    kernel: str
    array_bytes: int
    threads: int
    bytes_per_run: int
    write_allocate_bytes_per_run: int
    time_s: Spread

    @property
    def best_bytes_per_s(self) -> float:
        """STREAM's reported figure: bytes over the fastest run."""
        return self.bytes_per_run / self.time_s.min

    @property
    def median_bytes_per_s(self) -> float:
        return self.bytes_per_run / self.time_s.median

    _derived = ('best_bytes_per_s', 'median_bytes_per_s')


@dataclass(frozen=True)
class MatmulResult(_TimedRecord):
    """One square matrix product n x n times n x n: 2 n^3 FLOP per run, and its timings."""

    device: str
    dtype: str
    n: int
    flop_per_run: float
    time_s: Spread

    @property
    def best_flop_per_s(self) -> float:
        return self.flop_per_run / self.time_s.min

    @property
    def median_flop_per_s(self) -> float:
        return self.flop_per_run / self.time_s.median

    _derived = ('best_flop_per_s', 'median_flop_per_s')


@dataclass(frozen=True)
class SweepPoint(_TimedRecord):
    """One decode-shaped step: batch rows, context per request, bytes read, FLOP, step timings."""

    batch: int
    context_tokens: int
    weight_bytes: float
    kv_bytes: float
    flop: float
    step_s: Spread

    @property
    def bytes_read(self) -> float:
        """D(b, L) = D_w + b L k (8.2.1): the weights once plus every request's KV."""
        return self.weight_bytes + self.kv_bytes

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flop / self.bytes_read

    _derived = ('bytes_read',)
    _spread_field = "step_s"


@dataclass(frozen=True)
class DecodeSweep:
    """A decode-shaped sweep: the scaled model it ran, its dtype and threads, and its points."""

    model: Model
    base_model: str
    scale: int
    dtype: str
    threads: int
    points: tuple

    def _array(self, attr: str) -> np.ndarray:
        return np.array([getattr(p, attr) for p in self.points], dtype=float)

    @property
    def batches(self) -> np.ndarray:
        return np.array([p.batch for p in self.points])

    @property
    def context_tokens(self) -> np.ndarray:
        return np.array([p.context_tokens for p in self.points])

    @property
    def bytes_read(self) -> np.ndarray:
        return self._array("bytes_read")

    @property
    def kv_bytes(self) -> np.ndarray:
        return self._array("kv_bytes")

    @property
    def flop(self) -> np.ndarray:
        return self._array("flop")

    @property
    def step_median_s(self) -> np.ndarray:
        return np.array([p.step_s.median for p in self.points])

    @property
    def step_min_s(self) -> np.ndarray:
        return np.array([p.step_s.min for p in self.points])

    @property
    def step_max_s(self) -> np.ndarray:
        return np.array([p.step_s.max for p in self.points])

    @property
    def bytes_per_param(self) -> float:
        return self.model.bytes_per_param

    def to_dict(self) -> dict:
        return {"model": asdict(self.model), "base_model": self.base_model, "scale": self.scale,
                "dtype": self.dtype, "threads": self.threads,
                "points": [p.to_dict() for p in self.points]}

    @classmethod
    def from_dict(cls, d: dict) -> "DecodeSweep":
        return cls(model=Model(**d["model"]), base_model=d["base_model"], scale=d["scale"],
                   dtype=d["dtype"], threads=d["threads"],
                   points=tuple(SweepPoint.from_dict(p) for p in d["points"]))


@dataclass(frozen=True)
class Measurement:
    """Everything measured on one machine: description, bandwidth, matmul, decode sweeps."""

    label: str
    created_utc: str
    fast: bool
    machine: dict
    bandwidth: tuple
    matmul: tuple
    batch_sweep: DecodeSweep | None = None
    context_sweep: DecodeSweep | None = None

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "units": "base units: bytes, seconds (keys ending _s), FLOP, bytes/s, FLOP/s",
            "label": self.label, "created_utc": self.created_utc, "fast": self.fast,
            "machine": self.machine,
            "bandwidth": [r.to_dict() for r in self.bandwidth],
            "matmul": [r.to_dict() for r in self.matmul],
            "batch_sweep": self.batch_sweep.to_dict() if self.batch_sweep else None,
            "context_sweep": self.context_sweep.to_dict() if self.context_sweep else None,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Measurement":
        return cls(
            label=d["label"], created_utc=d["created_utc"], fast=d["fast"], machine=d["machine"],
            bandwidth=tuple(BandwidthResult.from_dict(r) for r in d["bandwidth"]),
            matmul=tuple(MatmulResult.from_dict(r) for r in d["matmul"]),
            batch_sweep=DecodeSweep.from_dict(d["batch_sweep"]) if d["batch_sweep"] else None,
            context_sweep=(DecodeSweep.from_dict(d["context_sweep"]) if d["context_sweep"]
                           else None))


