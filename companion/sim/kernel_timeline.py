"""An Nsight-Systems-style timeline of one decode round: the CPU launching kernels, the GPU
running them, and the gaps in between, with and without CUDA Graphs (17 §9).

The GPU side is the roofline of the companion's round-time model, cut into kernels: each layer
runs its four matrix-vector products (QKV, output projection, gate/up, down) and attention,
each taking max(bytes / bandwidth, FLOPs / peak), plus small element-wise kernels (norms,
rotary embedding, KV write, residual adds, activation) that take a minimum kernel time. The
big kernels' bytes add up to the round's D_w + b L k, so their memory times add up to the
simulator's decode round (``companion.formulas.core.decode_step_time``).

The CPU side is what the chapter describes in words (17 §9, "Gaps"): without graphs the host
issues kernels one by one, each launch costing ``launch_overhead_s``, and a kernel cannot
start before its launch is issued; when kernels are shorter than launches, the GPU waits. With
CUDA Graphs the whole round is captured once and replayed by a single launch, so the kernels
run back to back.

The launch costs are **assumptions**, not chapter numbers (the chapter gives none): a few µs
per kernel launch through the CUDA driver, more from a Python framework; they are parameters
with the defaults below so a reader can set them to what their own trace shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import kv_bytes_per_token
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = ["LAUNCH_OVERHEAD_S", "GRAPH_LAUNCH_S", "MIN_KERNEL_S", "KERNELS_PER_LAYER",
           "BIG_KERNELS", "Kernel", "TimelineEvent", "StepTimeline", "layer_kernels",
           "decode_step_timeline", "round_timeline", "speed_of_light", "timeline_unsupported"]

LAUNCH_OVERHEAD_S = 20e-6
"""Assumed host cost of issuing one kernel from an eager Python framework (the CUDA driver's
own share is a few µs; the framework's dispatch adds the rest), s. Set it from your trace."""
GRAPH_LAUNCH_S = 20e-6
"""Assumed host cost of replaying one captured CUDA graph (one launch for the whole round), s."""
MIN_KERNEL_S = 2e-6
"""Assumed shortest kernel on the GPU (a tiny element-wise kernel), s."""
KERNELS_PER_LAYER = 12
"""Assumed kernels per layer of an unfused decode step: 5 big ones and 7 element-wise ones."""

BIG_KERNELS = ("qkv_proj", "attention", "o_proj", "gate_up_proj", "down_proj")
# one layer in execution order; the element-wise kernels are dropped from the end of
# _SMALL_KERNELS first when fewer kernels per layer are asked for (fusion)
_LAYER_ORDER = ("input_norm", "qkv_proj", "rope", "kv_write", "attention", "o_proj",
                "residual_add", "post_norm", "gate_up_proj", "silu_mul", "down_proj",
                "residual_add_2")
_SMALL_KERNELS = ("input_norm", "post_norm", "residual_add", "residual_add_2", "silu_mul",
                  "rope", "kv_write")


class Kernel(NamedTuple):
    """One kernel of a decode round: what it moves and computes, and how long it runs."""

    name: str
    layer: int             # -1 for the kernels after the last layer
    bytes: float
    flops: float
    duration_s: float


class TimelineEvent(NamedTuple):
    """A bar on the timeline: ``row`` is "CPU" (a launch) or "GPU" (a kernel running)."""

    row: str
    name: str
    layer: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class StepTimeline:
    """One decode round laid out in time.

    ``gpu_busy_s`` is the kernels' running time, ``step_s`` the round from the first launch to
    the last kernel's end, ``gaps_s = step_s - gpu_busy_s`` the GPU's idle time inside it.
    """

    events: tuple
    kernels: int
    launches: int
    gpu_busy_s: float
    step_s: float
    cuda_graphs: bool
    memory_time_s: float     # the big kernels' bytes / bandwidth: the simulator's round time
    batch: int = 1
    context_tokens: int = 0

    @property
    def gaps_s(self) -> float:
        return self.step_s - self.gpu_busy_s

    @property
    def idle_fraction(self) -> float:
        return self.gaps_s / self.step_s

    def rows(self, row: str) -> list:
        return [e for e in self.events if e.row == row]


def timeline_unsupported(m: Model) -> str:
    """Why the kernel timeline cannot draw ``m`` ("" when it can): it needs a dense layer whose
    hidden size and head count are known."""
    if m.hidden_size is None or m.n_heads is None:
        return (f"{m.name} has no hidden_size / n_heads; the kernel timeline needs a dense "
                "shape with both")
    if m.n_experts:
        return f"{m.name} is a mixture of experts; the kernel timeline models dense layers only"
    return ""


def _matrix_shares(m: Model) -> dict:
    """Parameters of one layer's four matrix groups (attention projections from the shape, the
    MLP as the rest of the layer; gate/up is two of its three matrices)."""
    if problem := timeline_unsupported(m):
        raise ValueError(f"model: {problem}")
    per_layer = m.layer_params / m.n_layers      # layer_params covers all transformer blocks
    q = m.hidden_size * m.n_heads * m.head_dim
    kv = 2 * m.hidden_size * m.n_kv_heads * m.head_dim
    o = m.n_heads * m.head_dim * m.hidden_size
    mlp = per_layer - q - kv - o
    if mlp <= 0:
        raise ValueError(f"model: {m.name}'s layer is smaller than its attention projections")
    return {"qkv_proj": q + kv, "o_proj": o, "gate_up_proj": 2 * mlp / 3, "down_proj": mlp / 3}


def _duration(nbytes: float, flops: float, hw: Hardware, min_kernel_s: float) -> float:
    return max(nbytes / hw.mem_bw_bytes_per_s, flops / hw.peak_flops_per_s, min_kernel_s)


def layer_kernels(model: Model, hardware: Hardware, *, batch: int = 1, context_tokens: int = 0,
                  kernels_per_layer: int = KERNELS_PER_LAYER,
                  min_kernel_s: float = MIN_KERNEL_S) -> list[Kernel]:
    """The kernels of one layer of a decode round, in execution order (layer index 0).

    Five big kernels read the layer's weights (``batch`` rows each) and its KV
    (``batch x context_tokens`` tokens); ``kernels_per_layer - 5`` element-wise kernels move one
    activation per row. More than 12 kernels adds further element-wise ones (casts, copies).
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    per_layer = v.count("kernels_per_layer", kernels_per_layer, minimum=len(BIG_KERNELS))
    floor = v.nonnegative("min_kernel_s", min_kernel_s)
    shares = _matrix_shares(m)
    bpp = m.bytes_per_param
    kv_layer = kv_bytes_per_token(m) / m.n_layers
    activation = b * m.hidden_size * 2 * 2          # read + write one BF16 vector per row
    n_small = per_layer - len(BIG_KERNELS)
    small = set(_SMALL_KERNELS[:n_small])
    names = [n for n in _LAYER_ORDER if n in BIG_KERNELS or n in small]
    names += [f"elementwise_{i + 1}" for i in range(max(0, n_small - len(_SMALL_KERNELS)))]
    out = []
    for name in names:
        if name in shares:
            nbytes, flops = shares[name] * bpp, 2 * shares[name] * b
        elif name == "attention":
            nbytes = b * L * kv_layer
            flops = 4 * m.n_heads * m.head_dim * L * b
        else:
            nbytes, flops = activation, 0.0
        out.append(Kernel(name, 0, nbytes, flops, _duration(nbytes, flops, hw, floor)))
    return out


def decode_step_timeline(model: Model, hardware: Hardware, *, batch: int = 1,
                         context_tokens: int = 0, layers: int | None = None,
                         cuda_graphs: bool = False,
                         kernels_per_layer: int = KERNELS_PER_LAYER,
                         launch_overhead_s: float = LAUNCH_OVERHEAD_S,
                         graph_launch_s: float = GRAPH_LAUNCH_S,
                         min_kernel_s: float = MIN_KERNEL_S) -> StepTimeline:
    """One decode round of ``batch`` sequences with ``context_tokens`` live tokens each, as a
    CPU row of launches and a GPU row of kernels.

    ``layers`` (default: the model's) repeats the layer that many times, so a deeper or
    shallower model of the same width can be explored. Without graphs kernel i starts at
    max(end of kernel i-1, end of launch i), launches being issued back to back; with
    ``cuda_graphs`` one launch of ``graph_launch_s`` replays every kernel back to back. After
    the layers come the lm_head (when the model has one) and sampling.
    """
    m = _model(model)
    hw = _hardware(hardware)
    n_layers = m.n_layers if layers is None else v.count("layers", layers)
    graphs = v.boolean("cuda_graphs", cuda_graphs)
    t_launch = v.nonnegative("launch_overhead_s", launch_overhead_s)
    t_graph = v.nonnegative("graph_launch_s", graph_launch_s)
    one_layer = layer_kernels(m, hw, batch=batch, context_tokens=context_tokens,
                              kernels_per_layer=kernels_per_layer, min_kernel_s=min_kernel_s)
    kernels = [k._replace(layer=i) for i in range(n_layers) for k in one_layer]
    b = v.count("batch", batch)
    head = m.head_params * m.bytes_per_param
    if head > 0:
        kernels.append(Kernel("lm_head", -1, head, 2 * m.head_params * b,
                              _duration(head, 2 * m.head_params * b, hw, min_kernel_s)))
    kernels.append(Kernel("sampling", -1, 0.0, 0.0, _duration(0.0, 0.0, hw, min_kernel_s)))

    events, gpu_free = [], 0.0
    if graphs:
        events.append(TimelineEvent("CPU", "cudaGraphLaunch", -1, 0.0, t_graph))
        gpu_free = t_graph
    for i, k in enumerate(kernels):
        ready = gpu_free
        if not graphs:
            issued = (i + 1) * t_launch
            events.append(TimelineEvent("CPU", f"launch {k.name}", k.layer, i * t_launch, issued))
            ready = max(gpu_free, issued)
        events.append(TimelineEvent("GPU", k.name, k.layer, ready, ready + k.duration_s))
        gpu_free = ready + k.duration_s
    memory = sum(k.bytes for k in kernels if k.name in BIG_KERNELS or k.name == "lm_head")
    return StepTimeline(events=tuple(events), kernels=len(kernels),
                        launches=1 if graphs else len(kernels),
                        gpu_busy_s=sum(k.duration_s for k in kernels), step_s=gpu_free,
                        cuda_graphs=graphs, memory_time_s=memory / hw.mem_bw_bytes_per_s,
                        batch=b, context_tokens=v.tokens("context_tokens", context_tokens))


@serves("17.9")
def round_timeline(result, round_index: int, model: Model, hardware: Hardware,
                   **kwargs) -> StepTimeline:
    """The timeline of round ``round_index`` of a simulated schedule (``companion.sim.Result``):
    its decode rows as the batch and their mean cached tokens as the context.

    The simulator charges the round one duration; this lays that round's decode work out as
    kernels (prefill chunks in the round are not drawn: a decode-only round is the case 17 §9
    reads). ``kwargs`` go to ``decode_step_timeline``.
    """
    from companion.sim.result import Result

    rounds = v.instance("result", result, Result, "a companion.sim.Result").rounds
    i = v.integer("round_index", round_index, minimum=0)
    if i >= len(rounds):
        raise ValueError(f"round_index: the schedule has {len(rounds)} rounds, got {i}")
    decodes = [s for s in rounds[i].segments if s.kind == "decode"]
    if not decodes:
        raise ValueError(f"round_index: round {i} has no decode rows")
    context = round(sum(s.history_tokens for s in decodes) / len(decodes))
    return decode_step_timeline(model, hardware, batch=len(decodes), context_tokens=context,
                                **kwargs)


@serves("17.9")
def speed_of_light(model: Model, hardware: Hardware, *, batch: int = 1, context_tokens: int = 0,
                   roof_fraction: float = ch17.SOL_DECODE_MEMORY_FRACTION,
                   kernels_per_layer: int = KERNELS_PER_LAYER,
                   min_kernel_s: float = MIN_KERNEL_S) -> dict:
    """What Nsight Compute's Speed of Light section would read for each kernel of a decode
    round, and the whole round's MBU and MFU (17 §9).

    Each big kernel reaches ``roof_fraction`` of its roofline (1 = exactly on the roof; the
    default is 17 §9's example of a decode matrix-vector kernel at ~80% memory), so it runs
    ideal / roof_fraction; the element-wise kernels keep their minimum time. Per kernel:
    ``memory_pct`` = bytes / time / bandwidth and ``compute_pct`` = FLOPs / time / peak, in %.
    The round: ``mbu`` and ``mfu`` from ``calc.decode_utilization`` at the rate the round
    implies (batch / round time), so the two readings are the companion's own ratios.
    """
    from companion.formulas.performance import decode_utilization

    m = _model(model)
    hw = _hardware(hardware)
    share = v.probability("roof_fraction", roof_fraction, open_low=True)
    kernels = layer_kernels(m, hw, batch=batch, context_tokens=context_tokens,
                            kernels_per_layer=kernels_per_layer, min_kernel_s=min_kernel_s)
    rows = []
    for k in kernels:
        t = k.duration_s / share if k.name in BIG_KERNELS else k.duration_s
        rows.append(dict(name=k.name, time_s=t,
                         memory_pct=100 * k.bytes / t / hw.mem_bw_bytes_per_s,
                         compute_pct=100 * k.flops / t / hw.peak_flops_per_s))
    layer_s = sum(r["time_s"] for r in rows)
    for r in rows:
        r["time_share"] = r["time_s"] / layer_s
    round_s = layer_s * m.n_layers
    b = v.count("batch", batch)
    util = decode_utilization(m, hw, b / round_s, batch=b, context_tokens=context_tokens)
    return dict(kernels=rows, round_s=round_s, mbu=util["mbu"], mfu=util["mfu"],
                tokens_per_s=b / round_s)
