"""The probes of ``companion.measure``: this machine's description, STREAM-style bandwidth,
matrix-multiply throughput, a GPU probe (torch + CUDA only) and the decode-shaped sweep, each
repeated and timed; ``measure`` runs them all at the FAST or FULL preset sizes.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from companion import calc
from companion import validate as v
from companion.measure.records import (
    CPU_DTYPES,
    GPU_DTYPES,
    ITEMSIZE,
    BandwidthResult,
    DecodeSweep,
    MatmulResult,
    Measurement,
    Spread,
    SweepPoint,
)
from companion.specs import QWEN3_8B, Model
from companion.units import GiB, MiB

__all__ = ["STREAM_KERNELS", "FULL_SIZES", "FAST_SIZES", "BROWSER_SIZES", "in_browser",
           "fast_mode", "machine_info",
           "stream_probe", "matmul_probe", "gpu_probe", "scaled_decode_model", "decode_sweep",
           "measure"]

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

# In the lite site the kernel is Pyodide: WebAssembly in the reader's browser, one thread, numpy
# with its own reference BLAS. FULL_SIZES there took over ten minutes; these take about ten
# seconds, and what they measure is that WebAssembly, not the machine's native speed.
BROWSER_SIZES = dict(
    stream=dict(array_bytes=64 * MiB, repeats=3, threads=1),
    matmul=dict(n=512, repeats=3),
    batch_sweep=dict(scale=8, n_layers=2, batches=(1, 2, 4, 8, 16, 32, 64), context_tokens=64,
                     repeats=3, threads=1),
    context_sweep=dict(scale=8, n_layers=2, batches=(4,), context_tokens=(0, 512, 1024, 2048, 4096),
                       repeats=3, threads=1),
    gpu=dict(n=1024, array_bytes=64 * MiB, repeats=3),
)
IN_BROWSER_LABEL = "this browser's WebAssembly (Pyodide, one thread)"


def in_browser() -> bool:
    """True inside Pyodide (the lite site's kernel): Python compiled to WebAssembly."""
    return sys.platform == "emscripten"


def fast_mode() -> bool:
    """True when the environment variable COMPANION_FAST is "1" (tests, notebook execution)."""
    return os.environ.get("COMPANION_FAST", "") == "1"


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
    itemsize = ITEMSIZE[name]
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

    itemsize = ITEMSIZE[dtype]
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
            gpu: bool = True, threads: int | None = None) -> Measurement:
    """Run every probe at the FAST_SIZES (a second or two) or FULL_SIZES (about 25 s) presets;
    in a browser (the lite site's Pyodide kernel) BROWSER_SIZES instead of FULL_SIZES, and the
    label says that the browser's WebAssembly was measured.

    ``fast=None`` follows COMPANION_FAST. Fast sizes fit in cache and run on one thread (the
    BLAS limited to one too), so their numbers check the plumbing, not the machine. The GPU
    probe runs only when torch sees CUDA. ``threads`` (default: the preset's, which is every
    usable core at full size) limits every CPU probe at once: the BLAS (matrix products, the
    STREAM ``read`` kernel, the sweeps' products) and the probes' own worker threads (the
    other STREAM kernels, the sweeps' attention). ``threads=1`` measures one core.
    """
    if fast is not None and not isinstance(fast, bool):
        raise TypeError(f"fast: expected True, False or None, got {fast!r}")
    if not isinstance(label, str):
        raise TypeError(f"label: expected a string, got {type(label).__name__} {label!r}")
    v.instance("model", model, Model, "a companion.specs.Model")
    if not isinstance(gpu, bool):
        raise TypeError(f"gpu: expected True or False, got {gpu!r}")
    n_threads = None if threads is None else v.count("threads", threads)
    is_fast = fast_mode() if fast is None else fast
    sizes = FAST_SIZES if is_fast else BROWSER_SIZES if in_browser() else FULL_SIZES
    if n_threads is not None:
        sizes = {name: (dict(preset, threads=n_threads)
                        if name in ("stream", "batch_sweep", "context_sweep") else preset)
                 for name, preset in sizes.items()}
    if in_browser():  # whatever the caller calls it, say what was measured
        label = f"{label}: {IN_BROWSER_LABEL}" if label else IN_BROWSER_LABEL
    with _blas_limit(n_threads if n_threads is not None else 1 if is_fast else None):
        machine = machine_info()      # inside the limit: it records the BLAS threads used
        if n_threads is not None:
            machine["threads_limit"] = n_threads
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


