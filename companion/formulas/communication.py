"""Where 17 §7-§8's communication and pipeline arithmetic stops holding: the fuller models the
notebooks show beside the chapter's.

- **Collectives.** 17 §7 charges every tensor-parallel all-reduce one flat floor (5 µs on
  NVLink, 25 µs on PCIe) whatever the TP degree, and adds it to the step. A ring all-reduce over
  p GPUs (Thakur, Rabenseifner & Gropp 2005; Patarasuk & Yuan 2009) takes 2(p - 1) steps, each
  paying a per-message latency alpha, and moves 2(p - 1)/p of the message:
  T = 2(p - 1) alpha + 2(p - 1)/p x n / beta. ``ring_allreduce_s`` is that cost;
  ``tp_step_fuller`` prices a decode step with it (alpha set so that the ring costs the
  chapter's floor at the chapter's own TP = 4) and optionally with the collectives overlapped
  with the reads, the best case that 17 §9's checklist asks a trace for.
- **Pipeline stages.** 17 §7's bubble (p - 1)/(m + p - 1) assumes equal stages. With stage
  times t_s, m microbatches through the stages in order finish at
  sum(t) + (m - 1) max(t) (a flow shop of identical jobs), so the idle share never falls below
  1 - mean(t)/max(t). ``stage_weight_bytes`` splits a real config's layers (lm_head on the last
  stage) and ``uneven_pipeline`` prices the result.
- **The KV hop.** 17 §8 ships a request's whole KV at the full link rate after the prefill.
  Shipped layer by layer while the prefill computes later layers, only what the link cannot
  keep up with is exposed: the same flow shop with two stages (``kv_layered_transfer``).

``companion.sim.pipeline.pipeline_run`` runs the flow shop event by event for the tests.
"""

from __future__ import annotations

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import kv_bytes, pipeline_bubble
from companion.formulas.parallelism import tp_allreduce_traffic, tp_decode_step
from companion.formulas.performance import prefill_compute_s
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = ["COLLECTIVE_MODELS", "ring_allreduce_s", "ring_hop_latency_s", "tp_step_fuller",
           "stage_weight_bytes", "uneven_pipeline", "pp_decode_bubble", "kv_layered_transfer"]

# how a TP step prices its all-reduces: the chapter's flat floor, or a ring of 2(p - 1) hops
COLLECTIVE_MODELS = ("flat", "ring")


@serves("17.7")
def ring_allreduce_s(message_bytes: float, gpus: int, *, hop_latency_s: float,
                     link_bytes_per_s: float) -> float:
    """Seconds for a ring all-reduce of ``message_bytes`` over ``gpus`` GPUs (17 §7, fuller).

    T = 2(p - 1) alpha + 2(p - 1)/p x n / beta: a reduce-scatter and an all-gather of p - 1
    steps each, every step one message of n/p bytes per GPU (the standard alpha-beta cost of
    the ring algorithm). 0 on one GPU.
    """
    n = v.nonnegative("message_bytes", message_bytes)
    p = v.count("gpus", gpus)
    alpha = v.nonnegative("hop_latency_s", hop_latency_s)
    beta = v.positive("link_bytes_per_s", link_bytes_per_s)
    if p == 1:
        return 0.0
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / beta


@serves("17.7")
def ring_hop_latency_s(collective_latency_s: float = ch17.COLLECTIVE_LATENCY_NVLINK_S, *,
                       at_tp: int = ch17.TP) -> float:
    """The per-hop latency alpha at which a ring all-reduce over ``at_tp`` GPUs costs the
    chapter's flat floor: floor / (2(p - 1)). 5 µs at TP = 4: 0.83 µs per hop (17 §7)."""
    floor = v.nonnegative("collective_latency_s", collective_latency_s)
    p = v.count("at_tp", at_tp, minimum=2)
    return floor / (2 * (p - 1))


@serves("17.7")
def tp_step_fuller(model: Model, hardware: Hardware, tp: int, *, collectives: str = "ring",
                   overlap: bool = False,
                   collective_latency_s: float = ch17.COLLECTIVE_LATENCY_NVLINK_S,
                   link_bytes_per_s: float | None = None, batch: int = 1,
                   context_tokens: int = 0, calibration_tp: int = ch17.TP) -> dict:
    """A TP decode step with the collectives priced as a ring and/or hidden under the reads.

    ``collectives="flat"``: the chapter's floor per all-reduce; ``"ring"``: 2(p - 1) hops of
    ``ring_hop_latency_s(collective_latency_s, at_tp=calibration_tp)`` each, so the two agree
    at the chapter's TP = 4 and part at other degrees. The bytes on the wire are the chapter's
    in both. ``overlap=False`` adds the collectives to the reads (the chapter); ``True``
    exposes only max(0, comm - read), the bound for collectives fully overlapped with the
    weight and KV reads. Overlap needs the batch split into two halves that take turns (one
    reads weights while the other all-reduces), so it takes a batch of 2 or more: at batch 1
    nothing hides and the step is the added one. Returns read_s, latency_s, wire_s, comm_s,
    exposed_s, step_s, overhead (exposed / read), tokens_per_s and hop_latency_s (17 §7,
    fuller).
    """
    kind = v.choice("collectives", collectives, COLLECTIVE_MODELS)
    hide = v.boolean("overlap", overlap)
    at = v.count("calibration_tp", calibration_tp, minimum=2)
    base = tp_decode_step(model, hardware, tp, collective_latency_s=collective_latency_s,
                          link_bytes_per_s=link_bytes_per_s, batch=batch,
                          context_tokens=context_tokens)
    hop = ring_hop_latency_s(collective_latency_s, at_tp=at)
    latency = base["latency_s"]
    if kind == "ring" and tp > 1:
        count = tp_allreduce_traffic(model, tp)["collectives"]
        latency = count * 2 * (tp - 1) * hop
    comm = latency + base["wire_s"]
    # a single sequence cannot be split into halves that take turns: nothing to overlap
    exposed = max(0.0, comm - base["read_s"]) if hide and batch >= 2 else comm
    step = base["read_s"] + exposed
    return dict(read_s=base["read_s"], latency_s=latency, wire_s=base["wire_s"], comm_s=comm,
                exposed_s=exposed, step_s=step, overhead=exposed / base["read_s"],
                tokens_per_s=batch / step, hop_latency_s=hop)


@serves("17.7")
def stage_weight_bytes(model: Model, stages: int) -> list[dict]:
    """The weight bytes each pipeline stage streams per decode step (17 §7, fuller).

    The layers are split into ``stages`` contiguous runs as evenly as possible, the spare
    layers going to the first stages (the last one also holds the output head); the last
    stage adds lm_head (``model.head_params``). The input embedding is a table lookup, not a
    read of the table, so it adds nothing. A shape without a separate head (the chapter's 70B,
    n_params only) gives equal stages whenever the layers divide evenly. Each row: stage
    (from 1), layers, weight_bytes.
    """
    m = _model(model)
    p = v.count("stages", stages)
    if p > m.n_layers:
        raise ValueError(f"stages: {p} exceeds the model's {m.n_layers} layers")
    per_layer = m.layer_params * m.bytes_per_param / m.n_layers
    head = (m.head_params or 0.0) * m.bytes_per_param
    base, spare = divmod(m.n_layers, p)
    rows = []
    for s in range(p):
        layers = base + (1 if s < spare else 0)
        rows.append(dict(stage=s + 1, layers=layers,
                         weight_bytes=layers * per_layer + (head if s == p - 1 else 0.0)))
    return rows


@serves("17.7")
def uneven_pipeline(stage_times_s, microbatches: int) -> dict:
    """Makespan and bubble of ``microbatches`` through stages of unequal times (17 §7, fuller).

    makespan = sum(t) + (m - 1) max(t); bubble = 1 - m sum(t) / (p x makespan), which is
    (p - 1)/(m + p - 1) for equal stages and tends to 1 - mean(t)/max(t) (``floor``) as m
    grows: the slowest stage paces the pipe. Returns makespan_s, bubble, floor, imbalance
    (max / mean) and equal_bubble (the chapter's formula for the same p and m).
    """
    t = [v.positive(f"stage_times_s[{i}]", x)
         for i, x in enumerate(v.sequence("stage_times_s", stage_times_s))]
    m = v.count("microbatches", microbatches)
    p = len(t)
    total, slowest = sum(t), max(t)
    makespan = total + (m - 1) * slowest
    mean = total / p
    return dict(makespan_s=makespan, bubble=1.0 - m * total / (p * makespan),
                floor=1.0 - mean / slowest, imbalance=slowest / mean,
                equal_bubble=pipeline_bubble(p, m))


@serves("17.7")
def pp_decode_bubble(model: Model, hardware: Hardware, stages: int, microbatches: int) -> dict:
    """The bubble of a decode pipeline whose stages stream their own weights (17 §7, fuller).

    Each stage's time is its ``stage_weight_bytes`` over the card's bandwidth (a small
    microbatch's decode is memory-bound), priced by ``uneven_pipeline``. Returns its dict plus
    stage_layers and stage_times_s.
    """
    hw = _hardware(hardware)
    rows = stage_weight_bytes(model, stages)
    times = [r["weight_bytes"] / hw.mem_bw_bytes_per_s for r in rows]
    out = uneven_pipeline(times, microbatches)
    return dict(out, stage_layers=[r["layers"] for r in rows], stage_times_s=times)


@serves("17.8")
def kv_layered_transfer(model: Model, hardware: Hardware, context_tokens: int,
                        link_bytes_per_s: float, *, tp: int = 1, links: int = 1,
                        efficiency: float = ch17.PREFILL_EFFICIENCY) -> dict:
    """The KV hop shipped whole after the prefill versus layer by layer during it (17 §8).

    whole_s = KV bytes / link (the chapter); spread_s = KV / (links x link) when each of
    ``links`` GPUs ships its shard over its own link. Layer by layer, layer i's KV leaves once
    the prefill has computed layer i; with per-layer prefill t_p = prefill / n_layers (the
    prompt at ``efficiency`` of peak on ``tp`` GPUs) and per-layer shipping t_x = spread / n,
    the last byte arrives t_x + (n - 1) max(0, t_x - t_p) after the prefill ends (a two-stage
    flow shop). Returns kv_bytes, whole_s, spread_s, prefill_s, layer_prefill_s,
    layer_ship_s, exposed_s and hidden_share (1 - exposed / spread).
    """
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    link = v.positive("link_bytes_per_s", link_bytes_per_s)
    g = v.count("tp", tp)
    k = v.count("links", links)
    size = kv_bytes(m, L, block_tokens=1)
    whole = size / link
    spread = whole / k
    prefill = prefill_compute_s(m, hw, L, efficiency=efficiency) / g
    n = m.n_layers
    t_p, t_x = prefill / n, spread / n
    exposed = t_x + (n - 1) * max(0.0, t_x - t_p)
    return dict(kv_bytes=size, whole_s=whole, spread_s=spread, prefill_s=prefill,
                layer_prefill_s=t_p, layer_ship_s=t_x, exposed_s=exposed,
                hidden_share=1.0 - exposed / spread)
