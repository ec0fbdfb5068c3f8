"""Closed forms of Chapter 17 §7-§8: tensor and pipeline parallelism, placement, disaggregated
pools, KV transfer and KV-aware routing; and the interview's batch-size window (the ITL ceiling
of a TP decode step against §4-§5's KV caps).

Communication follows the chapter: each TP all-reduce moves one activation vector (hidden x 2 B
per token), a ring all-reduce sends 2(p-1)/p of it per GPU, and two all-reduces per layer make
the count; each collective costs a fixed latency plus its bytes over the link ("count latency,
not bytes"). Prefill times reuse ``performance.prefill_compute_s`` (2 FLOPs per parameter per
token at an assumed fraction of peak).
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.chapters import ch17
# the chapter's inputs (companion.chapters.ch17), exported as calc.CH17_X for the notebooks
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (kv_bytes, kv_bytes_per_token, matrix_flops,
                                     moe_streamed_weight_bytes, pipeline_bubble, prefill_flops)
from companion.formulas.performance import prefill_compute_s, tp_kv_capacity
from companion.serves import serves
from companion.specs import LLAMA_8B, LLAMA_70B, LLAMA_405B, Hardware, Model

__all__ = [
    # inputs the chapter states
    # §7 tensor / pipeline parallelism and placement
    "tp_allreduce_traffic", "tp_decode_step", "tp_layout_rows", "pp_stages", "PIPE_PHASES",
    "pipeline_grid", "weights_per_gpu_bytes", "layout_candidates", "parallel_layout",
    "placement_model", "placement_candidates",
    # §8 disaggregation and routing
    "disaggregated_pools", "kv_transfer_s", "kv_routing_ttft", "routed_mean_ttft_s",
    "routed_ttft_percentile", "NVLINK_DIRECTIONS", "nvlink_one_way_bytes_per_s",
    # interview: the batch between the ITL target and KV memory (§4-§5 arithmetic, TP of §7)
    "itl_batch_ceiling", "batch_window",
]


def _hidden(model: Model) -> int:
    if model.hidden_size is None:
        raise ValueError(f"model: {model.name} has no hidden_size (needed for activation bytes)")
    return model.hidden_size


# --- §7 tensor parallelism -------------------------------------------------------------------

@serves("17.7")
def tp_allreduce_traffic(model: Model, tp: int, *, bytes_per_value: float = 2) -> dict:
    """Per-token TP all-reduce traffic of one GPU in decode (17 §7).

    activation = hidden x bytes; ring all-reduce sends 2(p-1)/p of it; 2 all-reduces per layer.
    70B at TP 4: 16 KiB ("16 KB"), 24 KiB per collective, 160 collectives, ~3.9 MB per token.
    """
    m = _model(model)
    p = v.count("tp", tp)
    b = v.positive("bytes_per_value", bytes_per_value)
    activation = _hidden(m) * b
    ring = 2 * (p - 1) / p * activation
    collectives = ch17.ALLREDUCES_PER_LAYER * m.n_layers
    return dict(activation_bytes=activation, ring_bytes=ring, collectives=collectives,
                bytes_per_token=collectives * ring)


@serves("17.7")
def tp_decode_step(model: Model, hardware: Hardware, tp: int, *,
                   collective_latency_s: float = ch17.COLLECTIVE_LATENCY_NVLINK_S,
                   link_bytes_per_s: float | None = None, batch: int = 1,
                   context_tokens: int = 0, bytes_per_value: float = 2) -> dict:
    """A TP decode step: each GPU reads 1/p of the weights and KV, then pays its collectives.

    read = (D_w + b L k) / p / bandwidth; comm = collectives x (latency + ring bytes x b / link).
    70B, TP 4, NVLink, batch 1: 10.4 ms + 0.8 ms ~ 11.2 ms (~8% overhead), ~90 tok/s; the
    same collectives over PCIe at ~25 us each: ~4 ms, ~40% (17 §7). ``link_bytes_per_s``
    defaults to the card's interconnect.
    """
    m = _model(model)
    hw = _hardware(hardware)
    p = v.count("tp", tp)
    lat = v.nonnegative("collective_latency_s", collective_latency_s)
    if link_bytes_per_s is None:
        if hw.interconnect_bytes_per_s is None:
            raise ValueError(f"link_bytes_per_s: {hw.name} has no interconnect; pass the link")
        link = hw.interconnect_bytes_per_s
    else:
        link = v.positive("link_bytes_per_s", link_bytes_per_s)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    traffic = tp_allreduce_traffic(m, p, bytes_per_value=bytes_per_value)
    k = kv_bytes_per_token(m, bytes_per_value)
    read_s = (moe_streamed_weight_bytes(m, b) + b * L * k) / p / hw.mem_bw_bytes_per_s
    if p == 1:
        latency_s = wire_s = 0.0   # nothing to all-reduce on one GPU
    else:
        latency_s = traffic["collectives"] * lat
        wire_s = b * traffic["bytes_per_token"] / link
    comm_s = latency_s + wire_s
    step = read_s + comm_s
    return dict(read_s=read_s, latency_s=latency_s, wire_s=wire_s, comm_s=comm_s,
                overhead=comm_s / read_s, step_s=step, tokens_per_s=b / step)


def tp_layout_rows(model, hardware, *, degrees=(1, 2, 4, 8), batch: int = 1,
                   context_tokens: int = 0,
                   nvlink_latency_s: float = ch17.COLLECTIVE_LATENCY_NVLINK_S,
                   pcie_latency_s: float = ch17.COLLECTIVE_LATENCY_PCIE_S,
                   nvlink_bytes_per_s: float | None = None) -> list[dict]:
    """``tp_decode_step`` for each TP degree over NVLink and over PCIe (TP 1 once):
    dicts with label, tp, link, read_s, latency_s, wire_s, step_s, overhead, tokens_per_s.

    A ring all-reduce sends and receives at once, so each direction carries its own bytes:
    the NVLink wire term uses one direction, ``nvlink_bytes_per_s`` (default
    ``nvlink_one_way_bytes_per_s``, 450 GB/s on the H100, half the 900 GB/s that adds both);
    PCIe's figure (64 GB/s for Gen5 x16) is already per direction."""
    hw = _hardware(hardware)
    seq = v.sequence("degrees", degrees)
    tps = [v.count(f"degrees[{i}]", d) for i, d in enumerate(seq)]
    nv_bw = (nvlink_one_way_bytes_per_s(hw) if nvlink_bytes_per_s is None
             else v.positive("nvlink_bytes_per_s", nvlink_bytes_per_s))
    links = {"NVLink": (v.nonnegative("nvlink_latency_s", nvlink_latency_s), nv_bw),
             "PCIe": (v.nonnegative("pcie_latency_s", pcie_latency_s),
                      hw.host_link_bytes_per_s)}
    rows = []
    for tp in tps:
        for link, (lat, bw) in links.items():
            if tp == 1 and link == "PCIe":
                continue
            r = tp_decode_step(model, hw, tp, collective_latency_s=lat,
                                    link_bytes_per_s=bw, batch=batch,
                                    context_tokens=context_tokens)
            label = "TP 1" if tp == 1 else f"TP {tp} · {link}"
            rows.append(dict(r, label=label, tp=tp, link=link if tp > 1 else "none"))
    return rows


# --- §7 pipeline parallelism -----------------------------------------------------------------

@serves("17.7")
def pp_stages(model: Model, stages: int, microbatches: int, *, bytes_per_value: float = 2) -> dict:
    """Pipeline layout: layers per stage, boundaries, per-token handoff bytes, bubble (17 §7).

    80 layers at p = 4: 20 per stage, 3 boundaries of one 16 KiB activation each; bubble
    (p - 1) / (m + p - 1) = 3 / 19 = 15.8% at m = 16, 3 / 67 = 4.5% at m = 64.
    """
    m = _model(model)
    p = v.count("stages", stages)
    mb = v.count("microbatches", microbatches)
    b = v.positive("bytes_per_value", bytes_per_value)
    if p > m.n_layers:
        raise ValueError(f"stages: {p} exceeds the model's {m.n_layers} layers")
    return dict(layers_per_stage=m.n_layers / p, boundaries=p - 1,
                handoff_bytes=_hidden(m) * b, total_slots=mb + p - 1,
                bubble=pipeline_bubble(p, mb))


PIPE_PHASES = ("idle (bubble)", "fill", "steady", "drain")


def pipeline_grid(stages: int, microbatches: int) -> dict:
    """The pipeline as a stages x slots grid: which microbatch each stage runs in each slot.

    Stage s (0-based) runs microbatch j in slot s + j, so there are m + p - 1 slots. A busy
    cell's phase: "fill" before the last stage has started (slot < p - 1), "drain" once the
    first stage has finished (slot >= m), "steady" otherwise. Returns microbatch (p rows of
    m + p - 1 entries, None when idle), phase (index into PIPE_PHASES), busy and idle counts.
    """
    p = v.count("stages", stages)
    m = v.count("microbatches", microbatches)
    slots = m + p - 1
    micro, phase = [], []
    for s in range(p):
        row_m, row_p = [], []
        for t in range(slots):
            j = t - s
            if 0 <= j < m:
                row_m.append(j + 1)
                row_p.append(1 if t < p - 1 else 3 if t >= m else 2)
            else:
                row_m.append(None)
                row_p.append(0)
        micro.append(row_m)
        phase.append(row_p)
    busy = p * m
    return dict(slots=slots, microbatch=micro, phase=phase, busy_cells=busy,
                idle_cells=p * slots - busy)


# --- §7 placement ----------------------------------------------------------------------------

@serves("17.7")
def weights_per_gpu_bytes(model: Model, tp: int, pp: int = 1) -> float:
    """Weight bytes each GPU holds when split over tp x pp GPUs: weights / (tp x pp) (17 §7).

    405B in BF16: 810 GB; TP 8: 101 GB per GPU (does not fit 80); TP 8 x PP 2: ~51 GB.
    """
    m = _model(model)
    t = v.count("tp", tp)
    p = v.count("pp", pp)
    return m.weight_bytes / (t * p)


@serves("17.7")
def layout_candidates(gpus_per_node: int = 8, max_pp: int = 16) -> list[tuple[int, int]]:
    """(tp, pp) layouts in the order the chapter's placement rule tries them (17 §7).

    TP = 1, 2, 4, ... up to ``gpus_per_node`` on one node, then the node's widest power-of-two
    TP with PP = 2 .. ``max_pp`` stages (one whole node each): 8 GPUs per node, max_pp 4 ->
    (1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 3), (8, 4).
    """
    node = v.count("gpus_per_node", gpus_per_node)
    top = v.count("max_pp", max_pp)
    layouts, tp = [], 1
    while tp <= node:
        layouts.append((tp, 1))
        tp *= 2
    widest = layouts[-1][0]
    return layouts + [(widest, pp) for pp in range(2, top + 1)]


@serves("17.7")
def parallel_layout(model: Model, hardware: Hardware, *,
                    reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES, gpus_per_node: int = 8,
                    max_nodes: int = 16, min_kv_bytes_per_gpu: float = 0.0) -> dict:
    """The smallest layout that fits, by the chapter's rule: TP first, inside the node (17 §7).

    Try TP = 1, 2, 4, ... up to ``gpus_per_node`` on one node; if none fits, keep TP at the
    node's width and add PP stages (whole nodes) until weights / (tp x pp) + reserve +
    ``min_kv_bytes_per_gpu`` fits the card. 70B on H100s: TP 2 (TP 4 once KV room is asked for);
    405B: TP 8 x PP 2 at ~51 GB per GPU.
    """
    m = _model(model)
    hw = _hardware(hardware)
    reserve = v.nonnegative("reserve_bytes", reserve_bytes)
    node = v.count("gpus_per_node", gpus_per_node)
    nodes = v.count("max_nodes", max_nodes)
    kv_min = v.nonnegative("min_kv_bytes_per_gpu", min_kv_bytes_per_gpu)
    for tp, pp in layout_candidates(node, nodes):
        if pp > m.n_layers:
            break   # a stage needs at least one layer
        per_gpu = weights_per_gpu_bytes(m, tp, pp)
        free = hw.mem_bytes - per_gpu - reserve
        if free >= kv_min and free > 0:
            return dict(tp=tp, pp=pp, gpus=tp * pp, weight_bytes_per_gpu=per_gpu,
                        free_kv_bytes_per_gpu=free)
    raise ValueError(f"max_nodes: no layout of up to {nodes} nodes of {node} x {hw.name} fits "
                     f"{m.name} with {reserve:.3g} B reserve and {kv_min:.3g} B of KV per GPU")


# the three reference shapes; an explored size borrows the nearest one's depth and width
_REFERENCE_SHAPES = (LLAMA_8B, LLAMA_70B, LLAMA_405B)


def placement_model(params: float, bytes_per_param: float = 2.0):
    """A Model of ``params`` parameters stored at ``bytes_per_param`` (weights = their product),
    with the layers and hidden width of the nearest reference shape (8B: 32 x 4,096, 70B:
    80 x 8,192, 405B: 126 x 16,384), which only bound the pipeline stages and size the
    stage-to-stage activation."""
    n = v.positive("params", params)
    b = v.positive("bytes_per_param", bytes_per_param)
    ref = min(_REFERENCE_SHAPES, key=lambda m: abs(math.log(n / m.n_params)))
    return ref.with_(name=f"{n / 1e9:g}B ({b:g} B/param)", n_params=n, bytes_per_param=b,
                     weight_bytes=None, streamed_weight_bytes=None, layer_params=None,
                     source=f"explored size with the {ref.name} depth and width")


def placement_candidates(model, *, gpus_per_node: int = 8, max_pp: int = 4) -> list[dict]:
    """``layout_candidates`` (the order ``parallel_layout`` tries: TP = 1, 2, 4, ...
    up to the node, then the node's width x PP = 2 .. ``max_pp``) with labels and
    ``weights_per_gpu_bytes`` for each."""
    layouts = layout_candidates(gpus_per_node, max_pp)
    return [dict(tp=t, pp=p, gpus=t * p, label=f"TP {t}" if p == 1 else f"TP {t} x PP {p}",
                 weight_bytes_per_gpu=weights_per_gpu_bytes(model, t, p))
            for t, p in layouts]


# --- §8 disaggregated serving ----------------------------------------------------------------

@serves("17.8")
def disaggregated_pools(request_rate_per_s: float, mean_prompt_tokens: float,
                        mean_output_tokens: float, *,
                        prefill_tok_per_s_per_group: float = ch17.PREFILL_TOK_PER_S_PER_GROUP,
                        decode_tok_per_s_per_group: float = ch17.DECODE_TOK_PER_S_PER_GROUP
                        ) -> dict:
    """Prefill and decode pool sizes as two independent divisions, rounded up (17 §8).

    100 req/s x 2,000 = 200,000 prompt tok/s / 10,000 = 20 prefill groups; 100 x 250 = 25,000
    output tok/s / 2,500 = 10 decode groups: a 2:1 ratio.
    """
    rate = v.positive("request_rate_per_s", request_rate_per_s)
    prompt = v.positive("mean_prompt_tokens", mean_prompt_tokens)
    output = v.positive("mean_output_tokens", mean_output_tokens)
    pcap = v.positive("prefill_tok_per_s_per_group", prefill_tok_per_s_per_group)
    dcap = v.positive("decode_tok_per_s_per_group", decode_tok_per_s_per_group)
    prompt_demand = rate * prompt
    output_demand = rate * output
    # a tiny tolerance so 200,000 / 10,000 stays 20 groups despite float noise
    prefill_groups = math.ceil(prompt_demand / pcap - 1e-9)
    decode_groups = math.ceil(output_demand / dcap - 1e-9)
    return dict(prompt_tok_per_s=prompt_demand, output_tok_per_s=output_demand,
                prefill_groups=prefill_groups, decode_groups=decode_groups,
                prefill_to_decode=prefill_groups / decode_groups)


# A spec sheet's NVLink figure (the H100's 900 GB/s, 17's assumptions) adds both directions:
# 450 GB/s out and 450 GB/s in at once. A KV hop moves bytes one way, prefill GPU to decode GPU.
NVLINK_DIRECTIONS = 2


@serves("17.8")
def nvlink_one_way_bytes_per_s(hardware: Hardware) -> float:
    """One direction of the card's NVLink: its spec-sheet figure, which adds both directions,
    over ``NVLINK_DIRECTIONS`` (17 §8: a KV hop runs one way).

    >>> from companion import specs
    >>> nvlink_one_way_bytes_per_s(specs.H100_SXM) / 1e9     # 900 GB/s both ways
    450.0
    """
    hw = _hardware(hardware)
    if hw.interconnect_bytes_per_s is None:
        raise ValueError(f"hardware: {hw.name} has no NVLink figure")
    return hw.interconnect_bytes_per_s / NVLINK_DIRECTIONS


@serves("17.8")
def kv_transfer_s(model: Model, context_tokens: int, link_bytes_per_s: float, *,
                  bytes_per_value: float = 2) -> float:
    """Seconds to ship one sequence's KV from the prefill to the decode pool (17 §8).

    8,000 tokens of the 70B (2.62 GB): ~3 ms over 900 GB/s NVLink as the chapter divides, 5.8 ms
    at NVLink's one-way 450 GB/s (``nvlink_one_way_bytes_per_s``), ~52 ms over 50 GB/s RDMA.
    """
    m = _model(model)
    L = v.tokens("context_tokens", context_tokens)
    link = v.positive("link_bytes_per_s", link_bytes_per_s)
    return kv_bytes(m, L, block_tokens=1, bytes_per_value=bytes_per_value) / link


@serves("17.8")
def kv_routing_ttft(model: Model, hardware: Hardware, turn: int, *,
                    first_turn_tokens: int = ch17.AGENT_FIRST_TURN_TOKENS,
                    tokens_per_turn: int = ch17.AGENT_TOKENS_PER_TURN,
                    efficiency: float = ch17.PREFILL_EFFICIENCY,
                    attention: bool = False) -> dict:
    """TTFT of a multi-turn conversation's turn on a cold versus a warm (prefix-holding) worker.

    Context at turn t: first + (t - 1) x per_turn; cold re-prefills all of it, warm only the new
    message. Turn 20 on the 8B: 28,800 tokens, 461 TFLOP -> 932 ms vs 19.2 TFLOP -> 39 ms at 50%
    of peak, ~24x (17 §8). Attention FLOPs are ignored as in the chapter; ``attention=True``
    adds them (``core.prefill_flops``: the cold prefill's L(L+1)/2 causal pairs, the warm
    one's new tokens against the whole cached history), the fuller model.
    """
    m = _model(model)
    hw = _hardware(hardware)
    t = v.count("turn", turn)
    first = v.tokens("first_turn_tokens", first_turn_tokens, minimum=1)
    per_turn = v.tokens("tokens_per_turn", tokens_per_turn, minimum=1)
    context = first + (t - 1) * per_turn
    new = first if t == 1 else per_turn
    if v.boolean("attention", attention):
        e = v.probability("efficiency", efficiency, open_low=True)
        cold_f = prefill_flops(m, context)
        warm_f = prefill_flops(m, new, context - new)
        cold_s = cold_f / (e * hw.peak_flops_per_s)
        warm_s = warm_f / (e * hw.peak_flops_per_s)
    else:
        cold_f, warm_f = matrix_flops(m, context), matrix_flops(m, new)
        cold_s = prefill_compute_s(m, hw, context, efficiency=efficiency)
        warm_s = prefill_compute_s(m, hw, new, efficiency=efficiency)
    return dict(context_tokens=context, new_tokens=new, cold_flops=cold_f,
                cold_s=cold_s, warm_flops=warm_f, warm_s=warm_s,
                speedup=cold_s / warm_s)


def _positive_values(name: str, value):
    """A positive number, or a sequence of them as a float array (for whole curves)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return v.positive(name, value)
    return v.column(name, value, positive=True)


@serves("17.8")
def routed_mean_ttft_s(cold_s, warm_s, warm_share: float):
    """Mean TTFT when a router lands ``warm_share`` of turns on the worker holding the prefix.

    share x warm + (1 - share) x cold: the 90%- versus 30%-warm routers of 17 §8 (turn 20 on the
    8B: 932 and 39 ms -> 128 ms versus 664 ms). ``cold_s``/``warm_s`` may be sequences (one
    value per turn): then an array.
    """
    c = _positive_values("cold_s", cold_s)
    w = _positive_values("warm_s", warm_s)
    h = v.probability("warm_share", warm_share)
    return h * w + (1.0 - h) * c


@serves("17.8")
def routed_ttft_percentile(cold_s: float, warm_s: float, warm_share: float,
                           percentile: float) -> float:
    """A percentile of TTFT when ``warm_share`` of turns land warm (17 §8, fuller).

    The TTFTs take two values only, warm for a share h of turns and cold for the rest, so
    the q-th percentile (nearest rank over many turns) is the warm TTFT while q/100 <= h and
    the cold one above: a 90%-warm router's p99 is a full cold prefill, which the mean
    (``routed_mean_ttft_s``) does not show.
    """
    c = v.positive("cold_s", cold_s)
    w = v.positive("warm_s", warm_s)
    h = v.probability("warm_share", warm_share)
    q = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    low, high = min(c, w), max(c, w)
    # the warm turns are the low ones (a cold prefill is never shorter than a warm one)
    return low if q / 100.0 <= h + 1e-12 else high


# --- interview: what batch size should we run? -----------------------------------------------

@serves("17.5", "17.11")
def itl_batch_ceiling(model: Model, hardware: Hardware, itl_target_s: float,
                      context_tokens: int, *, tp: int = 1, max_batch: int = 1 << 20) -> int:
    """Largest batch whose decode step (``tp_decode_step``: reads + TP collectives) stays within
    ``itl_target_s``; 0 when even batch 1 misses it (17 interview, §5's step arithmetic).

    The step grows linearly with the batch (each sequence adds its KV stream), so a bisection
    over ``tp_decode_step`` finds the boundary. 8B, 600 live tokens, 25 ms: 861.
    """
    target = v.positive("itl_target_s", itl_target_s)
    L = v.tokens("context_tokens", context_tokens)
    p = v.count("tp", tp)
    top = v.count("max_batch", max_batch)

    def step(b):
        return tp_decode_step(model, hardware, p, batch=b, context_tokens=L)["step_s"]

    if step(1) > target:
        return 0
    if step(top) <= target:
        return top
    lo, hi = 1, top        # step(lo) <= target < step(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if step(mid) <= target else (lo, mid)
    return lo


@serves("17.5", "17.11")
def batch_window(model: Model, hardware: Hardware, *, tp: int = 1,
                 live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                 reservation_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                 itl_target_s: float = ch17.ITL_TARGET_S,
                 reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES) -> dict:
    """The interview's batch-size window: the ITL ceiling, the KV caps and the batch to run.

    KV cap with paged KV: free KV / (live tokens x k); with worst-case reservations: free KV /
    (reservation x k) (``tp_kv_capacity``). ITL ceiling: ``itl_batch_ceiling`` at the live
    context. Run at min(ITL ceiling, paged cap). 8B on an H100: caps 762 (paged, 600 live
    tokens) and 57 (8,000-token reservations); steps 6.1 ms at 57 and 22.7 ms at 762 (17 §5).
    """
    p = v.count("tp", tp)
    live = v.tokens("live_tokens", live_tokens, minimum=1)
    reservation = v.tokens("reservation_tokens", reservation_tokens, minimum=1)
    paged = tp_kv_capacity(model, hardware, tp=p, context_tokens=live,
                           reserve_bytes=reserve_bytes)
    reserved = tp_kv_capacity(model, hardware, tp=p, context_tokens=reservation,
                              reserve_bytes=reserve_bytes)
    ceiling = itl_batch_ceiling(model, hardware, itl_target_s, live, tp=p)
    run = min(ceiling, paged["max_sequences"])

    def step(b):
        return tp_decode_step(model, hardware, p, batch=b, context_tokens=live)

    out = {"itl_ceiling": ceiling, "paged_cap": paged["max_sequences"],
           "reserved_cap": reserved["max_sequences"], "run_batch": run,
           "binding": ("nothing fits" if run == 0 else
                       "ITL target" if ceiling < paged["max_sequences"] else "KV memory"),
           "free_kv_bytes": paged["free_kv_bytes"]}
    for key, b in (("run", run), ("paged_cap", paged["max_sequences"]),
                   ("reserved_cap", reserved["max_sequences"])):
        s = step(b) if b >= 1 else None
        out[f"{key}_step_s"] = s["step_s"] if s else 0.0
        out[f"{key}_tokens_per_s"] = s["tokens_per_s"] if s else 0.0
    return out
