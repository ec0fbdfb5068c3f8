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
  analyze_sweep               MBU / MFU per point, where the step stops being flat, and the
                              ridge-point prediction of that batch (17 §2)
  save_measurement / load_measurement / compare_measurements   JSON files a class can pool

Every probe repeats its timing and keeps every sample (``Spread``: median, min, max, quartiles).
Base units throughout: bytes, seconds, FLOP, FLOP/s, bytes/s.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from companion import validate as v
from companion import calc
from companion.specs import QWEN3_8B, Hardware, Model
from companion.units import GB, GFLOP, GiB, MiB

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "STREAM_KERNELS", "CPU_DTYPES", "GPU_DTYPES",
    "Spread", "BandwidthResult", "MatmulResult", "SweepPoint", "DecodeSweep", "Measurement",
    "StepTimeFit", "SweepAnalysis",
    "fast_mode", "machine_info", "stream_probe", "matmul_probe", "gpu_probe",
    "scaled_decode_model", "decode_sweep", "measure", "hardware_from_measurement",
    "fit_step_time", "analyze_sweep", "save_measurement", "load_measurement",
    "compare_measurements", "comparison_text",
]

SCHEMA = "companion.measure"
SCHEMA_VERSION = 1

CPU_DTYPES = ("float32", "float64")
GPU_DTYPES = ("bfloat16", "float16")
_ITEMSIZE = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2}

# STREAM kernels and the arrays each touches per element: (arrays read, arrays written).
# "read" is not in McCalpin's STREAM: a dot product that only reads, which is what a decode
# step mostly does; the other four write, and a normal store first reads the line it writes.
STREAM_KERNELS = ("copy", "scale", "add", "triad", "read")
_STREAM_ARRAYS = {"copy": (1, 1), "scale": (1, 1), "add": (2, 1), "triad": (2, 1), "read": (2, 0)}
_STREAM_SCALAR = 3.0
_TRIAD_CHUNK = 32_768     # elements per triad chunk: 256 KiB of float64 stays in L2

# Preset sizes. FULL takes about 25 s on a quiet 2-core machine (several times that when
# other programs compete for the cores); FAST a second or two.
FULL_SIZES = dict(
    stream=dict(array_bytes=None, repeats=5),
    matmul=dict(n=2048, repeats=5),
    batch_sweep=dict(scale=4, n_layers=4, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256),
                     context_tokens=128, repeats=5),
    context_sweep=dict(scale=4, n_layers=4, batches=(4,), context_tokens=(0, 512, 1024, 2048, 4096),
                       repeats=5),
    gpu=dict(n=8192, array_bytes=2 * GiB, repeats=10),
)
# FAST also runs on one thread (BLAS included, see ``measure``): tiny problems gain nothing
# from threads, and on a busy machine a multi-threaded BLAS call waits for its slowest thread.
FAST_SIZES = dict(
    stream=dict(array_bytes=8 * MiB, repeats=3, threads=1),
    matmul=dict(n=192, repeats=3),
    batch_sweep=dict(scale=8, n_layers=1, batches=(1, 2, 4, 8, 16, 32), context_tokens=32,
                     repeats=3, threads=1),
    context_sweep=dict(scale=8, n_layers=1, batches=(2,), context_tokens=(0, 512, 1024, 2048),
                       repeats=3, threads=1),
    gpu=dict(n=1024, array_bytes=64 * MiB, repeats=3),
)


def fast_mode() -> bool:
    """True when the environment variable COMPANION_FAST is "1" (tests, notebook execution)."""
    return os.environ.get("COMPANION_FAST", "") == "1"


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


# --- machine description -----------------------------------------------------------------------

def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _cpu_model() -> str:
    text = _read_text("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def _mem_bytes() -> int:
    """Installed memory: MemTotal from /proc/meminfo, else the page count from os.sysconf."""
    text = _read_text("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def _mem_available_bytes() -> int | None:
    text = _read_text("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _last_level_cache_bytes() -> int | None:
    """Size of the highest cache level of CPU 0 from sysfs (Linux); None elsewhere."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    best = None
    for index in sorted(base.glob("index*")) if base.is_dir() else []:
        level, size = _read_text(str(index / "level")), _read_text(str(index / "size"))
        if not level or not size:
            continue
        size = size.strip()
        mult = {"K": 1024, "M": MiB, "G": GiB}.get(size[-1:], 1)
        try:
            nbytes = int(size.rstrip("KMG")) * mult
        except ValueError:
            continue
        if best is None or int(level) > best[0] or (int(level) == best[0] and nbytes > best[1]):
            best = (int(level), nbytes)
    return best[1] if best else None


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _blas_info() -> list:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("user_api", "internal_api", "version", "num_threads", "threading_layer",
            "architecture")
    return [{k: info.get(k) for k in keys} for info in threadpool_info()]


class _blas_limit:
    """Limit the BLAS to ``n`` threads inside a with-block (no-op for None or no threadpoolctl)."""

    def __init__(self, n: int | None):
        self.n, self.ctl = n, None

    def __enter__(self):
        if self.n is not None:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:
                return self
            self.ctl = threadpool_limits(limits=self.n, user_api="blas")
        return self

    def __exit__(self, *exc):
        if self.ctl is not None:
            self.ctl.restore_original_limits()
        return False


def _blas_threads() -> int:
    counts = [b["num_threads"] for b in _blas_info() if b.get("user_api") == "blas"]
    return int(counts[0]) if counts else 1


def _torch_cuda():
    """torch when it imports and sees a CUDA device, else None (torch is optional)."""
    try:
        import torch
    except Exception:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def machine_info() -> dict:
    """A JSON-ready description of this machine: CPU, cores, memory, caches, numpy, BLAS, GPU."""
    info = {
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count() or 1,
        "usable_cores": _usable_cores(),
        "mem_bytes": _mem_bytes(),
        "last_level_cache_bytes": _last_level_cache_bytes(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "blas": _blas_info(),
        "gpu_name": None,
        "gpu_mem_bytes": None,
        "torch_version": None,
    }
    torch = _torch_cuda()
    if torch is not None:
        props = torch.cuda.get_device_properties(0)
        info.update(gpu_name=props.name, gpu_mem_bytes=int(props.total_memory),
                    torch_version=str(torch.__version__))
    return info


# --- timing helpers --------------------------------------------------------------------------

def _time_interleaved(runs: list, repeats: int) -> list:
    """Time each of ``runs`` ``repeats`` times, round-robin, after one untimed warm-up each.

    Round-robin rather than one probe after another: a burst of foreign load (a shared
    machine, a browser) then costs every probe one slow sample, which the median ignores,
    instead of ruining every sample of whichever probe was running.
    """
    for run in runs:
        run()
    samples = [[] for _ in runs]
    for _ in range(repeats):
        for run, out in zip(runs, samples):
            t0 = time.perf_counter()
            run()
            out.append(time.perf_counter() - t0)
    return [Spread(tuple(s)) for s in samples]


def _threads(name: str, threads) -> int:
    return _usable_cores() if threads is None else v.count(name, threads)


def _slices(n: int, parts: int) -> list:
    edges = np.linspace(0, n, parts + 1).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _parallel(executor, fn, parts: list) -> None:
    """Run fn(part) for every part, on the executor when there is one (numpy drops the GIL)."""
    if executor is None or len(parts) == 1:
        for p in parts:
            fn(p)
        return
    for future in [executor.submit(fn, p) for p in parts]:
        future.result()


# --- bandwidth (17 §1: the bytes side of the ratio) -------------------------------------------

def stream_probe(*, array_bytes: int | None = None, repeats: int = 5, threads: int | None = None,
                 kernels=STREAM_KERNELS) -> tuple:
    """Memory bandwidth of STREAM-style kernels, one ``BandwidthResult`` per kernel.

    Three float64 arrays of ``array_bytes`` each (default: 4 x the last-level cache, at least
    64 MiB, STREAM's rule so no array is served from cache). copy c = a, scale c = 3 a,
    add c = a + b, triad c = a + 3 b (in L2-sized chunks, so it moves 3 arrays, not 5), read
    a . b. Bytes counted STREAM's way (write-allocate not counted; see ``BandwidthResult``).
    The bytes/s a decode step can stream is the denominator of the ridge point (17 §1-§2).
    """
    if array_bytes is None:
        llc = _last_level_cache_bytes()
        array_bytes = max(4 * llc, 64 * MiB) if llc else 256 * MiB
    nbytes = v.integer("array_bytes", array_bytes, minimum=8 * 1024)
    reps = v.count("repeats", repeats)
    n_threads = _threads("threads", threads)
    names = [v.choice(f"kernels[{i}]", k, STREAM_KERNELS)
             for i, k in enumerate(v.sequence("kernels", kernels))]

    n = nbytes // 8
    a = np.full(n, 1.0)
    b = np.full(n, 2.0)
    c = np.full(n, 0.0)        # np.zeros would map lazily: first-touch page faults in the timing
    parts = _slices(n, n_threads)
    scratch = {i: np.empty(_TRIAD_CHUNK) for i in range(len(parts))}

    def triad(i_part):
        i, s = i_part
        tmp = scratch[i]
        for start in range(s.start, s.stop, _TRIAD_CHUNK):
            stop = min(start + _TRIAD_CHUNK, s.stop)
            t = tmp[:stop - start]
            np.multiply(b[start:stop], _STREAM_SCALAR, out=t)
            np.add(a[start:stop], t, out=c[start:stop])

    per_part = {
        "copy": lambda s: np.copyto(c[s], a[s]),
        "scale": lambda s: np.multiply(a[s], _STREAM_SCALAR, out=c[s]),
        "add": lambda s: np.add(a[s], b[s], out=c[s]),
    }
    with ThreadPoolExecutor(n_threads) if n_threads > 1 else nullcontext() as ex:
        runs, used = [], []
        for name in names:
            if name == "read":
                # one BLAS dot product: the library spreads it over its own threads
                runs.append(lambda: np.dot(a, b))
                used.append(_blas_threads())
            elif name == "triad":
                runs.append(lambda: _parallel(ex, triad, list(enumerate(parts))))
                used.append(len(parts))
            else:
                runs.append(lambda fn=per_part[name]: _parallel(ex, fn, parts))
                used.append(len(parts))
        spreads = _time_interleaved(runs, reps)
    results = []
    for name, threads_used, spread in zip(names, used, spreads):
        reads, writes = _STREAM_ARRAYS[name]
        results.append(BandwidthResult(
            device="cpu", kernel=name, array_bytes=n * 8, threads=threads_used,
            bytes_per_run=(reads + writes) * n * 8,
            write_allocate_bytes_per_run=(reads + 2 * writes) * n * 8, time_s=spread))
    return tuple(results)


# --- matrix multiply (17 §1: the FLOP side of the ratio) ---------------------------------------

def matmul_probe(*, n: int = 2048, dtypes=CPU_DTYPES, repeats: int = 5, seed: int = 0) -> tuple:
    """Dense matmul throughput on the CPU: 2 n^3 FLOP per n x n product, one result per dtype.

    This is the machine's "peak" in the roofline sense (17 §2): what a large, cache-friendly
    matrix product attains with the installed BLAS, not a datasheet number.
    """
    size = v.count("n", n, minimum=2)
    names = [v.choice(f"dtypes[{i}]", d, CPU_DTYPES)
             for i, d in enumerate(v.sequence("dtypes", dtypes))]
    reps = v.count("repeats", repeats)
    s = v.integer("seed", seed, minimum=0)
    rng = np.random.default_rng(s)
    runs = []
    for name in names:
        x = rng.standard_normal((size, size)).astype(name)
        y = rng.standard_normal((size, size)).astype(name)
        out = np.empty((size, size), dtype=name)
        runs.append(lambda x=x, y=y, out=out: np.matmul(x, y, out=out))
    return tuple(MatmulResult(device="cpu", dtype=name, n=size, flop_per_run=2.0 * size**3,
                              time_s=spread)
                 for name, spread in zip(names, _time_interleaved(runs, reps)))


def gpu_probe(*, n: int = 8192, array_bytes: int = 2 * GiB, repeats: int = 10) -> tuple:
    """GPU bandwidth and bf16/fp16 matmul throughput with torch; () without torch + CUDA.

    A device-to-device copy moves 2 x array_bytes per run (read + write, STREAM's count), a sum
    reads array_bytes; the products are n x n in bfloat16 and float16, 2 n^3 FLOP each. All
    timed with CUDA events. Compare with the chapters' spec sheets (H100: 3.35 TB/s, 989 dense
    BF16 TFLOP/s, 17 §1).
    """
    size = v.count("n", n, minimum=2)
    nbytes = v.integer("array_bytes", array_bytes, minimum=8 * 1024)
    reps = v.count("repeats", repeats)
    torch = _torch_cuda()
    if torch is None:
        return ()

    def timed(op) -> Spread:
        op()
        torch.cuda.synchronize()
        samples = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            op()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)   # elapsed_time is in ms
        return Spread(tuple(samples))

    results = []
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    spread = timed(lambda: dst.copy_(src))
    moved = src.numel() * 4
    results.append(BandwidthResult(device="cuda", kernel="copy", array_bytes=moved, threads=1,
                                   bytes_per_run=2 * moved, write_allocate_bytes_per_run=2 * moved,
                                   time_s=spread))
    spread = timed(lambda: src.sum())          # a reduction only reads, like a decode step
    results.append(BandwidthResult(device="cuda", kernel="read", array_bytes=moved, threads=1,
                                   bytes_per_run=moved, write_allocate_bytes_per_run=moved,
                                   time_s=spread))
    del src, dst
    for name in GPU_DTYPES:
        dt = getattr(torch, name)
        x = torch.randn(size, size, device="cuda").to(dt)
        y = torch.randn(size, size, device="cuda").to(dt)
        out = torch.empty(size, size, device="cuda", dtype=dt)
        spread = timed(lambda: torch.matmul(x, y, out=out))
        results.append(MatmulResult(device="cuda", dtype=name, n=size,
                                    flop_per_run=2.0 * size**3, time_s=spread))
        del x, y, out
    torch.cuda.empty_cache()
    return tuple(results)


# --- decode-shaped sweep (17 §2 "Batching moves decode up the roofline", 8.2.1) ---------------

def scaled_decode_model(model: Model = QWEN3_8B, *, scale: int = 4, n_layers: int = 4,
                        dtype: str = "float32") -> Model:
    """The layer stack a decode sweep runs: ``model``'s shape with widths divided by ``scale``.

    Hidden size, query heads, KV heads and FFN width are divided by ``scale`` (head_dim is
    kept, so every attention head has its real size); ``n_layers`` blocks of Q, K, V, O,
    gate, up, down matrices. The returned Model holds only those matrices (no embedding, no
    lm_head, no norms), stored in ``dtype``: its streamed_weight_bytes is the sweep's D_w and
    kv_bytes_per_token(model, itemsize) its k. QWEN3_8B / 4: hidden 1024, 8 query and 2 KV
    heads of 128, FFN 3072, about 12.1e6 parameters (48 MB in float32) per layer.
    """
    base = v.instance("model", model, Model, "a companion.specs.Model")
    s = v.count("scale", scale)
    layers = v.count("n_layers", n_layers)
    name = v.choice("dtype", dtype, CPU_DTYPES)
    for attr in ("hidden_size", "intermediate_size"):
        if getattr(base, attr) is None:
            raise ValueError(f"model: {base.name!r} has no {attr}; a decode sweep needs the "
                             f"layer shape (QWEN3_8B has it)")
    for attr, value in (("hidden_size", base.hidden_size), ("n_kv_heads", base.n_kv_heads),
                        ("n_query_heads", base.n_query_heads),
                        ("intermediate_size", base.intermediate_size)):
        if value % s:
            raise ValueError(f"scale: {s} does not divide the model's {attr} ({value})")
    hidden, ffn = base.hidden_size // s, base.intermediate_size // s
    n_q, n_kv, hd = base.n_query_heads // s, base.n_kv_heads // s, base.head_dim
    per_layer = 2 * hidden * n_q * hd + 2 * hidden * n_kv * hd + 3 * hidden * ffn
    params = per_layer * layers
    itemsize = _ITEMSIZE[name]
    return Model(
        name=f"{base.name} / {s}, {layers} layer(s), {name}", n_layers=layers, n_kv_heads=n_kv,
        head_dim=hd, n_params=params, weight_bytes=params * itemsize,
        streamed_weight_bytes=params * itemsize, hidden_size=hidden, n_heads=n_q,
        intermediate_size=ffn, layer_params=params, bytes_per_param=itemsize,
        source=f"companion.measure.scaled_decode_model({base.name}, scale={s}, "
               f"n_layers={layers}, dtype={name}): layer matrices only")


def _int_list(name: str, value, *, minimum: int) -> tuple:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    seq = v.sequence(name, value)
    return tuple(v.integer(f"{name}[{i}]", x, minimum=minimum) for i, x in enumerate(seq))


def decode_sweep(model: Model = QWEN3_8B, *, scale: int = 4, n_layers: int = 4,
                 batches=(1, 2, 4, 8, 16, 32, 64, 128, 256), context_tokens=128,
                 dtype: str = "float32", repeats: int = 5, threads: int | None = None,
                 max_memory_fraction: float = 0.5) -> DecodeSweep:
    """Time decode-shaped steps on this CPU for every (context, batch) pair; a ``DecodeSweep``.

    One step, per layer of ``scaled_decode_model(model, scale, n_layers, dtype)``: the batch's
    activation rows (b x hidden) times Q, K, V; attention of each request's query heads over
    its own cached K and V (``context_tokens`` tokens, a separate array per request, grouped
    as in GQA; the softmax is left out: it touches only the scores, not the cache); times O;
    times gate and up, their product times down. Bytes read per step are the chapters'
    D(b, L) = D_w + b L k (8.2.1; activations, a few MB, are not counted); FLOP per step are
    2 x params x b plus b L x attention_flops_per_pair. Weights are read once per step
    whatever b is, so the step stays flat while the read dominates and grows once the FLOPs
    do (17 §2). Attention runs on ``threads`` threads (default: usable cores), split by
    request; the matrix products use the BLAS's own threads. Values are constants: they do
    not change the timing.
    """
    scaled = scaled_decode_model(model, scale=scale, n_layers=n_layers, dtype=dtype)
    bs = _int_list("batches", batches, minimum=1)
    contexts = _int_list("context_tokens", context_tokens, minimum=0)
    reps = v.count("repeats", repeats)
    n_threads = _threads("threads", threads)
    frac = v.number("max_memory_fraction", max_memory_fraction, positive=True, at_most=1.0)

    itemsize = _ITEMSIZE[dtype]
    k_bytes = calc.kv_bytes_per_token(scaled, bytes_per_value=itemsize)
    b_max, l_max = max(bs), max(contexts)
    need = scaled.streamed_weight_bytes + b_max * l_max * k_bytes
    available = _mem_available_bytes() or _mem_bytes()
    if available and need > frac * available:
        raise ValueError(f"batches: batch {b_max} x context_tokens {l_max} needs "
                         f"{need / GiB:.2f} GiB for weights and KV, more than "
                         f"{frac:.0%} of the {available / GiB:.1f} GiB available")

    hidden, ffn = scaled.hidden_size, scaled.intermediate_size
    n_q, n_kv, hd = scaled.n_query_heads, scaled.n_kv_heads, scaled.head_dim
    group = n_q // n_kv

    def filled(shape):
        return np.full(shape, 0.01, dtype=dtype)   # np.full touches every page up front

    layers = [dict(q=filled((hidden, n_q * hd)), k=filled((hidden, n_kv * hd)),
                   v=filled((hidden, n_kv * hd)), o=filled((n_q * hd, hidden)),
                   gate=filled((hidden, ffn)), up=filled((hidden, ffn)),
                   down=filled((ffn, hidden)))
              for _ in range(n_layers)]
    weight_bytes = sum(w.nbytes for layer in layers for w in layer.values())
    assert weight_bytes == scaled.streamed_weight_bytes
    caches = ([(filled((b_max, n_kv, l_max, hd)), filled((b_max, n_kv, l_max, hd)))
               for _ in range(n_layers)] if l_max else [])

    def make_step(b: int, L: int, ex):
        """One decode step at batch b and context L, with its own activation buffers."""
        # every buffer starts filled: garbage from np.empty can hold denormals, which slow a
        # matmul down by orders of magnitude
        x = filled((b, hidden))
        q_out = filled((b, n_q * hd))
        kv_new = filled((b, n_kv * hd))
        scores = filled((b, n_kv, group, L))
        attn = filled((b, n_kv, group, hd))
        attn_rows = attn.reshape(b, n_q * hd)
        q_heads = q_out.reshape(b, n_kv, group, hd)
        proj = filled((b, hidden))
        gate, up = filled((b, ffn)), filled((b, ffn))
        down = filled((b, hidden))
        parts = _slices(b, min(n_threads, b))

        def step():
            for i, w in enumerate(layers):
                np.matmul(x, w["q"], out=q_out)
                np.matmul(x, w["k"], out=kv_new)   # the new token's K and V (its cache
                np.matmul(x, w["v"], out=kv_new)   # write is not modelled)
                if L:
                    K, V = caches[i]

                    def attend(s, K=K, V=V):
                        np.matmul(q_heads[s], K[s, :, :L, :].transpose(0, 1, 3, 2),
                                  out=scores[s])
                        np.matmul(scores[s], V[s, :, :L, :], out=attn[s])
                    _parallel(ex, attend, parts)
                np.matmul(attn_rows, w["o"], out=proj)
                np.matmul(x, w["gate"], out=gate)
                np.matmul(x, w["up"], out=up)
                np.multiply(gate, up, out=gate)
                np.matmul(gate, w["down"], out=down)
        return step

    grid = [(b, L) for L in contexts for b in bs]
    with ThreadPoolExecutor(n_threads) if n_threads > 1 else nullcontext() as ex:
        spreads = _time_interleaved([make_step(b, L, ex) for b, L in grid], reps)
    matrix_flop_per_row = calc.matrix_flops(scaled, 1)
    flop_per_pair = calc.attention_flops_per_pair(scaled)
    points = tuple(SweepPoint(batch=b, context_tokens=L, weight_bytes=weight_bytes,
                              kv_bytes=b * L * k_bytes,
                              flop=matrix_flop_per_row * b + flop_per_pair * b * L, step_s=spread)
                   for (b, L), spread in zip(grid, spreads))
    return DecodeSweep(model=scaled, base_model=model.name, scale=scale, dtype=dtype,
                       threads=n_threads, points=points)


# --- everything at once ------------------------------------------------------------------------

def measure(*, fast: bool | None = None, label: str = "", model: Model = QWEN3_8B,
            gpu: bool = True) -> Measurement:
    """Run every probe at the FAST_SIZES (a second or two) or FULL_SIZES (about 25 s) presets.

    ``fast=None`` follows COMPANION_FAST. Fast sizes fit in cache and run on one thread (the
    BLAS limited to one too), so their numbers check the plumbing, not the machine. The GPU
    probe runs only when torch sees CUDA.
    """
    if fast is not None and not isinstance(fast, bool):
        raise TypeError(f"fast: expected True, False or None, got {fast!r}")
    if not isinstance(label, str):
        raise TypeError(f"label: expected a string, got {type(label).__name__} {label!r}")
    v.instance("model", model, Model, "a companion.specs.Model")
    if not isinstance(gpu, bool):
        raise TypeError(f"gpu: expected True or False, got {gpu!r}")
    is_fast = fast_mode() if fast is None else fast
    sizes = FAST_SIZES if is_fast else FULL_SIZES
    machine = machine_info()
    with _blas_limit(1 if is_fast else None):
        bandwidth = stream_probe(**sizes["stream"])
        matmul = matmul_probe(**sizes["matmul"])
        if gpu:
            gpu_results = gpu_probe(**sizes["gpu"])
            bandwidth += tuple(r for r in gpu_results if isinstance(r, BandwidthResult))
            matmul += tuple(r for r in gpu_results if isinstance(r, MatmulResult))
        batch = decode_sweep(model, **sizes["batch_sweep"])
        context = decode_sweep(model, **sizes["context_sweep"])
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Measurement(label=label or machine["cpu_model"], created_utc=created, fast=is_fast,
                       machine=machine, bandwidth=bandwidth, matmul=matmul,
                       batch_sweep=batch, context_sweep=context)


def _measurement(name: str, value) -> Measurement:
    return v.instance(name, value, Measurement, "a companion.measure.Measurement")


def hardware_from_measurement(measurement: Measurement, *, device: str = "cpu",
                              dtype: str | None = None) -> Hardware:
    """A ``Hardware`` for the measured machine: best bandwidth, best matmul FLOP/s, memory size.

    mem_bw_bytes_per_s is the best STREAM-style figure (bytes over the fastest run, the highest
    of all kernels, STREAM's count without write-allocate); peak_flops_per_s the best matmul
    FLOP/s over the dtypes (or of ``dtype`` only: use the dtype your workload runs in, since a
    CPU's float64 peak is about half its float32 peak). Then calc.ridge_point gives this
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
    whatever it reads (launches, synchronisation, Python). A free fit needs at least two
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
    return StepTimeFit(fixed_s=fixed, bandwidth_bytes_per_s=bw, bandwidth_fitted=fitted,
                       n_points=len(x), rms_residual_s=float(np.sqrt(np.mean(residual**2))))


@dataclass(frozen=True, eq=False)
class SweepAnalysis:
    """A batch sweep read through the roofline: fits, knee, ridge prediction, MBU and MFU.

    Arrays are per sweep point, in sweep order. ``knee_batch``, ``crossover_batch`` and
    ``ridge_batch`` are defined in ``analyze_sweep``'s docstring.
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
            f"read model: fixed {fit.fixed_s * 1e3:.2f} ms + bytes / "
            f"{fit.bandwidth_bytes_per_s / GB:.1f} GB/s "
            f"({'fitted' if fit.bandwidth_fitted else 'bandwidth fixed at the measured STREAM best'})",
            "compute line: " + ("none (no point is clearly compute-bound)"
                                if self.compute_flops_per_s is None else
                                f"{self.compute_flops_per_s / GFLOP:.1f} GFLOP/s effective"),
            f"step stops being flat (>{self.tolerance:.0%} above the read model) at batch "
            f"{'none in the sweep' if self.knee_batch is None else self.knee_batch}",
            f"fitted lines cross at batch {fmt_b(self.crossover_batch)}; "
            f"ridge-point prediction: batch {fmt_b(self.ridge_batch)}",
            f"MBU {self.mbu.min():.0%}..{self.mbu.max():.0%}, "
            f"MFU {self.mfu.min():.1%}..{self.mfu.max():.1%}",
        ]
        if self.noisy_batches:
            lines.append(f"noisy (slowest repeat > {_NOISY:g} x fastest) at batch "
                         f"{', '.join(map(str, self.noisy_batches))}: was the machine busy?")
        return "\n".join(lines)

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
    MBU and MFU per point: calc.mbu(bytes_read / step) and calc.mfu(flop / step) (17 §9).
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

    Columns: label, cpu, cores, bandwidth_GB_per_s (best STREAM), float32_GFLOP_per_s,
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
            "cores": m.machine.get("usable_cores"),
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


# --- command line ------------------------------------------------------------------------------

def main(argv=None) -> int:
    """python -m companion.measure OUT.json [--fast] [--label TEXT]: measure and save."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m companion.measure",
                                     description="Measure this machine and save it as JSON.")
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--fast", action="store_true", help="small sizes (a few seconds)")
    parser.add_argument("--label", default="", help="a name for this machine")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    m = measure(fast=args.fast, label=args.label)
    path = save_measurement(m, args.out)
    print(comparison_text(compare_measurements([m])))
    print(f"saved {path} after {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
