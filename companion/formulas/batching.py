"""Closed forms of 8.1-8.2: request timeline, memory budget, KV capacity, weight reuse, LoRA,
read volume and step time versus batch, chunked-prefill pair counts, graph padding, token budget.

The 8.2.2 four-request schedule (870 / 766 / 844 ms) needs the round-by-round simulator
(``companion.sim``); this module gives the closed forms that simulator and the notebooks reuse:
token-time metrics (TTFT, output intervals, request time) and the linear round-time model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (attention_pairs, decode_step_parts, held_tokens, kv_bytes,
                                     kv_bytes_per_token, kv_crossover_batch, kv_tokens_allocated,
                                     max_concurrent, prefill_flops, read_bytes_per_output_token,
                                     flops_per_token_or_default)
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = [
    # 8.1.1 / 8.1.3 request timeline and metrics
    "lifecycle_request_time_s", "insertable_prefills", "token_emission_times", "ttft_s",
    "inter_token_intervals", "request_time_s", "decode_tokens_per_s", "SHORT_REQUEST_S",
    # 8.1.2 memory budget and KV capacity
    "MemoryBudget", "memory_budget", "kv_capacity_row", "kv_capacity_table",
    # 8.2.1 weight reuse, LoRA, read volume, step time
    "weight_reuse_intensity", "LORA_PROJECTIONS", "lora_adapter_bytes", "read_bytes_curve",
    "read_volume_table", "crossover_vs_capacity", "batch_resident_bytes",
    "decode_step_time_curve", "compute_catchup_batch",
    "compute_bound_context_tokens", "chapter_batch_sweep",
    # 8.2.3 chunked prefill
    "prefill_chunks", "chunk_pair_series", "chunk_flops_series", "split_weight_read_bytes",
    # 8.2.4 graph padding and token budget
    "padded_rows", "padding_rows", "mixed_round_time_s", "token_budget_for_itl",
]



def _times(name: str, token_times_s) -> list[float]:
    """Validated emission times: finite, non-negative, non-decreasing."""
    seq = v.sequence(name, token_times_s)
    times = [v.nonnegative(f"{name}[{i}]", t) for i, t in enumerate(seq)]
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise ValueError(f"{name}: emission times must not decrease, but item {i} "
                             f"({times[i]!r}) is before item {i - 1} ({times[i - 1]!r})")
    return times


def _counts(name: str, values, *, minimum: int = 1) -> list[int]:
    seq = v.sequence(name, values)
    return [v.integer(f"{name}[{i}]", x, minimum=minimum) for i, x in enumerate(seq)]


# --- 8.1.1 / 8.1.3: the request timeline ------------------------------------------------------

@serves("8.1.1")
def lifecycle_request_time_s(queue_s: float, prefill_s: float, interval_s: float,
                             output_tokens: int, *, stall_s: float = 0.0) -> float:
    """Seconds from arrival to the last token: queue + prefill + (G - 1) x interval + stall (8.1.1).

    0.1 + 0.096 + 255 x 0.0265 = 6.95 s; a 0.096 s prefill inserted into one interval (stall_s)
    gives 7.05 s.
    """
    q = v.nonnegative("queue_s", queue_s)
    p = v.positive("prefill_s", prefill_s)
    itl = v.positive("interval_s", interval_s)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    stall = v.nonnegative("stall_s", stall_s)
    if stall and g < 2:
        raise ValueError("stall_s: a single output token has no output interval to stall")
    return q + p + (g - 1) * itl + stall


@serves("8.1.1")
def insertable_prefills(queue_s: float, prefill_s: float, interval_s: float,
                        output_tokens: int, deadline_s: float, inserted_prefill_s: float) -> int:
    """How many other requests' prefills, each stalling one output interval by
    ``inserted_prefill_s``, a request absorbs and still finishes by ``deadline_s`` (8.1.1).

    floor((deadline - T) / stall), T = ``lifecycle_request_time_s`` without stalls, at most one
    per output interval (G - 1); 0 when the request alone misses the deadline. The chapter's
    request (6.95 s alone, 7 s deadline) absorbs none of 96 ms: one makes it 7.05 s.
    """
    alone_s = lifecycle_request_time_s(queue_s, prefill_s, interval_s, output_tokens)
    deadline = v.positive("deadline_s", deadline_s)
    stall = v.positive("inserted_prefill_s", inserted_prefill_s)
    g = int(output_tokens)
    if alone_s > deadline or g < 2:
        return 0
    # the tolerance keeps an exact fit (deadline - T = n x stall) from losing one to float noise
    return min(math.floor((deadline - alone_s) / stall + 1e-9), g - 1)


@serves("8.1.1")
def token_emission_times(queue_s: float, prefill_s: float, interval_s: float,
                         output_tokens: int, *, stall_s: float = 0.0,
                         stalled_interval: int = 1) -> list[float]:
    """Emission times t_1..t_G (seconds after arrival) of the Figure 8-2 timeline (8.1.1).

    t_1 = queue + prefill; t_{j+1} = t_j + interval, plus stall_s in output interval
    ``stalled_interval`` (1-based: interval j lies between tokens j and j + 1).
    """
    lifecycle_request_time_s(queue_s, prefill_s, interval_s, output_tokens, stall_s=stall_s)
    g = int(output_tokens)
    j_stall = v.count("stalled_interval", stalled_interval)
    if stall_s and j_stall > g - 1:
        raise ValueError(f"stalled_interval: {stalled_interval} exceeds the {g - 1} output "
                         f"interval(s) of {g} tokens")
    times = [float(queue_s) + float(prefill_s)]
    for j in range(1, g):
        times.append(times[-1] + float(interval_s) + (float(stall_s) if j == j_stall else 0.0))
    return times


@serves("8.1.1", "8.1.3")
def ttft_s(token_times_s, arrival_s: float = 0.0) -> float:
    """Time to first token: t_1 - t_a (8.1.3; 0.196 s in 8.1.1's example)."""
    times = _times("token_times_s", token_times_s)
    t_a = v.nonnegative("arrival_s", arrival_s)
    if times[0] < t_a:
        raise ValueError(f"arrival_s: {arrival_s!r} is after the first token ({times[0]!r})")
    return times[0] - t_a


@serves("8.1.3")
def inter_token_intervals(token_times_s) -> list[float]:
    """Output intervals ITL_j = t_{j+1} - t_j, j = 1..G-1, in the unit of the times (8.1.3).

    TTFT is not an interval; G tokens give G - 1 intervals (255 of 26.5 ms total 6.76 s).
    """
    times = _times("token_times_s", token_times_s)
    return [b - a for a, b in zip(times, times[1:])]


@serves("8.1.3")
def request_time_s(token_times_s, arrival_s: float = 0.0) -> float:
    """Complete request time: TTFT + sum of ITL_j = t_G - t_a (8.1.3)."""
    first = ttft_s(token_times_s, arrival_s)
    return first + sum(inter_token_intervals(token_times_s))


@serves("8.1.3")
def decode_tokens_per_s(tokens_per_round: int, round_s: float) -> float:
    """Generation throughput: tokens per round / round time (8.1.3: 16 / 27.44 ms = 583 tok/s)."""
    n = v.tokens("tokens_per_round", tokens_per_round, minimum=1)
    t = v.positive("round_s", round_s)
    return n / t


# the chapter's short request alone (8.1.1): 0.1 s queue + 0.096 s prefill + 255 client
# intervals of 26.5 ms, about 6.95 s (8.4.4 takes it as one attempt)
SHORT_REQUEST_S = request_time_s(token_emission_times(ch08.QUEUE_S, ch08.PREFILL_S,
                                                      ch08.CLIENT_ITL_S,
                                                      ch08.OUTPUT_TOKENS))


# --- 8.1.2: memory budget and KV capacity -----------------------------------------------------

@serves("8.1.2")
@dataclass(frozen=True)
class MemoryBudget:
    """The parts of M_w + M_KV + M_a + M_u <= C, in bytes, and what is left (8.1.2)."""

    capacity_bytes: float
    weight_bytes: float
    kv_pool_bytes: float
    activation_bytes: float
    other_bytes: float

    @property
    def used_bytes(self) -> float:
        return self.weight_bytes + self.kv_pool_bytes + self.activation_bytes + self.other_bytes

    @property
    def slack_bytes(self) -> float:
        """C minus the listed parts; negative when they do not fit."""
        return self.capacity_bytes - self.used_bytes

    @property
    def fits(self) -> bool:
        return self.slack_bytes >= 0

    def as_dict(self) -> dict:
        return {"capacity_bytes": self.capacity_bytes, "weight_bytes": self.weight_bytes,
                "kv_pool_bytes": self.kv_pool_bytes, "activation_bytes": self.activation_bytes,
                "other_bytes": self.other_bytes, "used_bytes": self.used_bytes,
                "slack_bytes": self.slack_bytes, "fits": self.fits}


@serves("8.1.2")
def memory_budget(capacity_bytes: float, weight_bytes: float, kv_pool_bytes: float,
                  activation_bytes: float = 0.0, other_bytes: float = 0.0) -> MemoryBudget:
    """The memory budget M_w + M_KV + M_a + M_u <= C with its slack C - sum (8.1.2).

    Chapter 8's instance: C = 32 GiB, M_w = 15.3 GiB of BF16 weights, M_KV = 12 GiB, leaving
    about 4.7 GiB for activations and graph-replay buffers (leave M_a, M_u at 0 to read the slack
    as their allowance).
    """
    return MemoryBudget(capacity_bytes=v.positive("capacity_bytes", capacity_bytes),
                        weight_bytes=v.nonnegative("weight_bytes", weight_bytes),
                        kv_pool_bytes=v.nonnegative("kv_pool_bytes", kv_pool_bytes),
                        activation_bytes=v.nonnegative("activation_bytes", activation_bytes),
                        other_bytes=v.nonnegative("other_bytes", other_bytes))


@serves("8.1.2")
def kv_capacity_row(model: Model, kv_budget_bytes: float, prompt_tokens: int,
                    output_tokens: int, *, block_tokens: int = 16,
                    bytes_per_value: float = 2) -> dict:
    """One row of 8.1.2's capacity table for independent requests of one type, as a dict.

    prefill_kv_bytes: KV of the prompt (288 / 1152 MiB); computed_tokens: prompt + G - 1
    (2303 / 8447); allocated_tokens: rounded to blocks (2304 / 8448); final_kv_bytes (324 / 1188
    MiB); fit: floor(budget / final) (37 / 10); fit_if_sized_at_prefill: floor(budget / prefill)
    (42 short); final_bytes_if_sized_at_prefill: that many requests at their final size (13,608 MiB).
    """
    m = _model(model)
    budget = v.nonnegative("kv_budget_bytes", kv_budget_bytes)
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    kw = dict(block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    computed = held_tokens(p, output_tokens)
    prefill_bytes = kv_bytes(m, p, **kw)
    final_bytes = kv_bytes(m, computed, **kw)
    fit = max_concurrent(budget, m, p, output_tokens, **kw)
    fit_at_prefill = int(budget // prefill_bytes)
    return {"prompt_tokens": p, "output_tokens": int(output_tokens),
            "prefill_kv_bytes": prefill_bytes, "computed_tokens": computed,
            "allocated_tokens": kv_tokens_allocated(computed, block_tokens),
            "final_kv_bytes": final_bytes, "fit": fit,
            "fit_if_sized_at_prefill": fit_at_prefill,
            "final_bytes_if_sized_at_prefill": fit_at_prefill * final_bytes}


@serves("8.1.2")
def kv_capacity_table(model: Model, kv_budget_bytes: float, requests: Mapping | None = None, *,
                      block_tokens: int = 16, bytes_per_value: float = 2) -> list[dict]:
    """The 8.1.2 capacity table: one ``kv_capacity_row`` per request type, with a "name" column.

    ``requests`` maps a name to (prompt_tokens, output_tokens); default: the chapter's short
    (2048, 256) and long (8192, 256) requests.
    """
    if requests is None:
        requests = ch08.CHAPTER_REQUEST_TYPES
    if not isinstance(requests, Mapping):
        raise TypeError(f"requests: expected a mapping name -> (prompt_tokens, output_tokens), "
                        f"got {type(requests).__name__}")
    if not requests:
        raise ValueError("requests: needs at least one request type")
    rows = []
    for name, shape in requests.items():
        pair = v.sequence(f"requests[{name!r}]", shape, min_len=2)
        if len(pair) != 2:
            raise ValueError(f"requests[{name!r}]: expected (prompt_tokens, output_tokens)")
        row = kv_capacity_row(model, kv_budget_bytes, pair[0], pair[1],
                              block_tokens=block_tokens, bytes_per_value=bytes_per_value)
        rows.append({"name": str(name), **row})
    return rows


# --- 8.2.1: weight reuse, LoRA, read volume and step time -------------------------------------

@serves("8.2.1")
def weight_reuse_intensity(batch: int, bytes_per_weight: float = 2) -> float:
    """FLOP per weight byte when b rows share one read of W: I_weight = 2 b / s_w (8.2.1)."""
    b = v.count("batch", batch)
    s_w = v.positive("bytes_per_weight", bytes_per_weight)
    return 2.0 * b / s_w


def _projection_shapes(m: Model) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each per-layer projection of a Llama/Qwen-style block."""
    missing = [f for f in ("hidden_size", "intermediate_size") if getattr(m, f) is None]
    if missing:
        raise ValueError(f"model: {m.name} lacks {', '.join(missing)}, needed for projection shapes")
    d, f = m.hidden_size, m.intermediate_size
    q_out = m.n_query_heads * m.head_dim
    kv_out = m.n_kv_heads * m.head_dim
    return {"q": (d, q_out), "k": (d, kv_out), "v": (d, kv_out), "o": (q_out, d),
            "gate": (d, f), "up": (d, f), "down": (f, d)}


LORA_PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")


@serves("8.2.1")
def lora_adapter_bytes(model: Model, rank: int, projections=("q", "v"), *,
                       n_adapters: int = 1, bytes_per_value: float = 2) -> float:
    """Bytes of LoRA adapters: n x layers x sum over projections of r (d_in + d_out) x bytes (8.2.1).

    Rank 16 on Q and V of Qwen3-8B in BF16: 36 x 16 x ((4096 + 4096) + (4096 + 1024)) x 2 B
    = 14.6 MiB per adapter; 100 adapters 1.43 GiB.
    """
    m = _model(model)
    r = v.count("rank", rank)
    seq = v.sequence("projections", projections)
    names = [v.choice(f"projections[{i}]", p, LORA_PROJECTIONS) for i, p in enumerate(seq)]
    if len(set(names)) != len(names):
        raise ValueError(f"projections: each projection at most once, got {list(names)}")
    n = v.count("n_adapters", n_adapters)
    b = v.positive("bytes_per_value", bytes_per_value)
    shapes = _projection_shapes(m)
    per_layer = sum(r * (shapes[p][0] + shapes[p][1]) for p in names)
    return n * m.n_layers * per_layer * b


@serves("8.2.1")
def read_bytes_curve(weight_bytes: float, batches, context_tokens: int,
                     kv_bytes_per_token: float, *, weights_in_hbm: bool = True) -> np.ndarray:
    """HBM bytes read per output token for each batch: D_w / b + L k, or L k alone (8.2.1).

    Figure 8-3 (weights in HBM). Figure 8-4: with the weights served from an independent ROM,
    HBM reads only K = L k per output token (``weights_in_hbm=False``).
    """
    bs = _counts("batches", batches)
    L = v.tokens("context_tokens", context_tokens)
    k = v.positive("kv_bytes_per_token", kv_bytes_per_token)
    w = v.positive("weight_bytes", weight_bytes)
    if weights_in_hbm:
        return np.array([read_bytes_per_output_token(w, b, L, k) for b in bs], dtype=float)
    return np.full(len(bs), float(L * k))


def read_volume_table(weight_bytes: float, kv_bytes_per_token: float, batches=ch08.EXP81_BATCHES,
                      contexts=(ch08.SHORT_PROMPT_TOKENS, ch08.LONG_PROMPT_TOKENS)) -> list[dict]:
    """Exercise 8-1 (a): per-output-token reads for each context and batch, as rows.

    Each row: context_tokens, batch, weight_bytes_per_token (D_w / b), kv_read_bytes_per_token
    (L k), read_bytes_per_token (their sum), kv_exceeds_weights (L k >= D_w / b).
    """
    bs = _counts("batches", batches)
    ctx = _counts("contexts", contexts, minimum=0)
    v.positive("weight_bytes", weight_bytes)
    v.positive("kv_bytes_per_token", kv_bytes_per_token)
    rows = []
    for L in ctx:
        totals = read_bytes_curve(weight_bytes, bs, L, kv_bytes_per_token)
        for b, total in zip(bs, totals):
            kv_part = L * kv_bytes_per_token
            rows.append({"context_tokens": L, "batch": b,
                         "weight_bytes_per_token": weight_bytes / b,
                         "kv_read_bytes_per_token": kv_part, "read_bytes_per_token": float(total),
                         "kv_exceeds_weights": kv_part >= weight_bytes / b})
    return rows


def crossover_vs_capacity(model: Model, kv_budget_bytes: float, context_tokens: int,
                          output_tokens: int, *, block_tokens: int = 16,
                          bytes_per_value: float = 2) -> dict:
    """Exercise 8-1 (b-d): b_KV = ceil(D_w / (L k)) against the requests that fit the KV budget.

    Returns crossover_batch, max_requests (end-of-generation reservation, block-rounded) and
    capacity_limited (True when fewer requests fit than b_KV). Qwen3-8B, 12 GiB: 2K 51 vs 37,
    8K 13 vs 10, so capacity stops the batch before KV reads overtake weight reads.
    """
    m = _model(model)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    k = kv_bytes_per_token(m, bytes_per_value)
    crossover = kv_crossover_batch(m.streamed_weight_bytes, L, k)
    fit = max_concurrent(kv_budget_bytes, m, L, output_tokens, block_tokens=block_tokens,
                         bytes_per_value=bytes_per_value)
    return {"context_tokens": L, "crossover_batch": crossover, "max_requests": fit,
            "capacity_limited": fit < crossover}


@serves("8.2.1")
def batch_resident_bytes(model: Model, batch: int, context_tokens: int, *,
                         block_tokens: int = 1, bytes_per_value: float = 2) -> float:
    """Resident weights plus b requests' KV: M_w + b x kv_bytes(L) (8.2.1).

    64 requests at 2K after one decode step (L = 2049 tokens, no block rounding): 35.7 GB.
    """
    m = _model(model)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    per_request = kv_bytes(m, L, block_tokens=block_tokens,
                           bytes_per_value=bytes_per_value)
    return m.weight_bytes + b * per_request


@serves("8.2.1")
def decode_step_time_curve(model: Model, hardware: Hardware, batches, context_tokens: int, *,
                           bytes_per_value: float = 2, flops_per_token: float | None = None,
                           weights_in_hbm: bool = True) -> dict:
    """Arrays batch, compute_s, read_s, step_s of the decode roofline over batches (8.2.1)."""
    bs = _counts("batches", batches)
    parts = [decode_step_parts(model, hardware, b, context_tokens,
                               bytes_per_value=bytes_per_value, flops_per_token=flops_per_token,
                               weights_in_hbm=weights_in_hbm) for b in bs]
    compute = np.array([p.compute_s for p in parts])
    read = np.array([p.read_s for p in parts])
    return {"batch": np.array(bs), "compute_s": compute, "read_s": read,
            "step_s": np.maximum(compute, read)}


@serves("8.2.1")
def compute_catchup_batch(model: Model, hardware: Hardware, context_tokens: int, *,
                          bytes_per_value: float = 2, flops_per_token: float | None = None,
                          weights_in_hbm: bool = True) -> float:
    """Batch where compute time reaches read time: b = (D_w / beta) / (F/P - L k / beta) (8.2.1).

    From b (F/P - L k / beta) = D_w / beta. Returns math.inf when F/P <= L k / beta: each request
    then adds more read time than compute time, so reading stays the longer term at every batch
    (Qwen3-8B decode on the RTX PRO 6000 at any L above ~365 tokens). With ROM-served weights
    (D_w = 0) the answer is 0 (compute-bound at any batch) or inf.
    """
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens)
    F = flops_per_token_or_default(m, flops_per_token)
    k = kv_bytes_per_token(m, bytes_per_value)
    margin_s = F / hw.peak_flops_per_s - L * k / hw.mem_bw_bytes_per_s
    if margin_s <= 0:
        return math.inf
    weights = m.streamed_weight_bytes if weights_in_hbm else 0.0
    return weights / hw.mem_bw_bytes_per_s / margin_s


@serves("8.2.1")
def compute_bound_context_tokens(model: Model, hardware: Hardware, *, bytes_per_value: float = 2,
                                 flops_per_token: float | None = None) -> float:
    """Context length L* = F beta / (P k) below which a request adds more compute than KV reads.

    compute_catchup_batch is finite only for L < L*; with ROM-served weights (Figure 8-4) L*
    alone decides the bound (8.2.1).
    """
    m = _model(model)
    hw = _hardware(hardware)
    F = flops_per_token_or_default(m, flops_per_token)
    k = kv_bytes_per_token(m, bytes_per_value)
    return F * hw.mem_bw_bytes_per_s / (hw.peak_flops_per_s * k)


@serves("8.2.1")
def chapter_batch_sweep() -> list[dict]:
    """The 8.2.1 batch sweep's measured endpoints next to what a request timeline implies.

    Per measured batch b: the quoted TTFT, ITL and throughput, and b G / (TTFT + (G - 1) ITL)
    (``lifecycle_request_time_s`` with no queue): what b requests finishing together would
    deliver. The quoted values are rounded medians, so the two agree only roughly.
    """
    d = ch08.BATCH_SWEEP_MEASURED
    g = d["output_tokens"]
    rows = []
    for b, thr, ttft, itl in zip(d["batch"], d["tokens_per_s"], d["ttft_s"], d["itl_s"]):
        request_s = lifecycle_request_time_s(0.0, ttft, itl, g)
        rows.append({"batch": b, "tokens_per_s": thr, "ttft_s": ttft, "itl_s": itl,
                     "request_time_s": request_s, "implied_tokens_per_s": b * g / request_s})
    return rows


# --- 8.2.3: chunked prefill -------------------------------------------------------------------

@serves("8.2.3")
def prefill_chunks(prompt_tokens: int, chunk_tokens: int, history_tokens: int = 0) -> list[tuple]:
    """(new tokens c, cached history h) of each chunk of a prompt split into chunks (8.2.3).

    The last chunk holds the remainder; h starts at ``history_tokens`` (a cached prefix).
    """
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    c = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    h0 = v.tokens("history_tokens", history_tokens)
    return [(min(c, n - done), h0 + done) for done in range(0, n, c)]


def chunk_pair_series(prompt_tokens: int, chunk_tokens: int, history_tokens: int = 0) -> list[int]:
    """Causal query-key pairs of each chunk, c h + c(c+1)/2 (Figure 8-8).

    8192 tokens in 512-token chunks: 131,328 for the first chunk, 4,063,488 for the last.
    """
    return [attention_pairs(c, h) for c, h in prefill_chunks(prompt_tokens, chunk_tokens,
                                                               history_tokens)]


@serves("8.2.3")
def chunk_flops_series(model: Model, prompt_tokens: int, chunk_tokens: int,
                       history_tokens: int = 0) -> list[float]:
    """Layer-matrix plus attention FLOPs of each chunk (core.prefill_flops) (8.2.3).

    The "model-backbone matrix computation" of 8.2.3: the last 512-token chunk of an 8K prompt
    needs 32% more than the first (7.19 -> 9.51 TFLOP for Qwen3-8B).
    """
    m = _model(model)
    return [prefill_flops(m, c, h) for c, h in prefill_chunks(prompt_tokens, chunk_tokens,
                                                               history_tokens)]


@serves("8.2.3")
def split_weight_read_bytes(weight_bytes: float, new_tokens: int, chunk_tokens: int) -> float:
    """Weight bytes read when ``new_tokens`` run in chunks: ceil(n / c) x weight bytes (8.2.3).

    A 256-token block split into two 128-token chunks reads a 288 MiB FFN twice: 576 MiB
    (the FFN size is ``compression.ffn_weight_bytes_per_layer``).
    """
    w = v.positive("weight_bytes", weight_bytes)
    n = v.tokens("new_tokens", new_tokens, minimum=1)
    c = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    return -(-n // c) * w


# --- 8.2.4: graph padding and token budget ----------------------------------------------------

def _shapes(captured_shapes) -> list[int]:
    return sorted(_counts("captured_shapes", captured_shapes))


@serves("8.2.4")
def padded_rows(rows: int, captured_shapes) -> int:
    """Rows actually executed: the smallest captured graph shape >= rows (8.2.4).

    With graphs for 16 and 32 rows: 16 -> 16, 17 and 18 -> 32. Above the largest captured
    shape no graph applies and the round runs eagerly at its own size.
    """
    r = v.count("rows", rows)
    for shape in _shapes(captured_shapes):
        if shape >= r:
            return shape
    return r


@serves("8.2.4")
def padding_rows(rows: int, captured_shapes) -> int:
    """Padding rows the graph computes for nothing: padded_rows - rows (15 at 17 rows, 8.2.4)."""
    return padded_rows(rows, captured_shapes) - int(rows)


def _round_time_model(fixed_s, per_token_s, per_pair_s) -> tuple[float, float, float]:
    return (v.nonnegative("fixed_s", fixed_s), v.positive("per_token_s", per_token_s),
            v.nonnegative("per_pair_s", per_pair_s))


def _mixed_round_s(b: int, L: int, c: int, h: int, model: tuple, shapes) -> float:
    fixed, per_token, per_pair = model
    rows = b + c
    if rows == 0:
        return fixed
    executed = padded_rows(rows, shapes) if shapes else rows
    # each decode token attends to its L cached tokens and itself: attention_pairs(1, L) = L + 1
    pairs = b * attention_pairs(1, L) + attention_pairs(c, h)
    return fixed + per_token * executed + per_pair * pairs


@serves("8.2.2", "8.2.4")
def mixed_round_time_s(decode_requests: int, context_tokens: int, new_tokens: int,
                       history_tokens: int = 0, *, fixed_s: float = ch08.ROUND_FIXED_S,
                       per_token_s: float = ch08.ROUND_PER_TOKEN_S,
                       per_pair_s: float = ch08.ROUND_PER_PAIR_S,
                       captured_shapes=None) -> float:
    """One round's time: fixed + per_token x rows + per_pair x pairs (8.2.2 model, 8.2.4).

    Rows: b decode tokens plus c new prompt tokens (padded to a captured shape when given);
    pairs: b (L + 1) + c h + c(c+1)/2. Defaults are 8.2.2's fit (26.22 ms, 30.4 us, 3 ns): one
    2K decode 26.26 ms, a 2K prefill alone 94.8 ms.
    """
    b = v.tokens("decode_requests", decode_requests)
    L = v.tokens("context_tokens", context_tokens)
    c = v.tokens("new_tokens", new_tokens)
    h = v.tokens("history_tokens", history_tokens)
    model = _round_time_model(fixed_s, per_token_s, per_pair_s)
    shapes = None if captured_shapes is None else _shapes(captured_shapes)
    return _mixed_round_s(b, L, c, h, model, shapes)


@serves("8.2.4")
def token_budget_for_itl(itl_target_s: float, decode_requests: int, context_tokens: int,
                         history_tokens: int = 0, *, fixed_s: float = ch08.ROUND_FIXED_S,
                         per_token_s: float = ch08.ROUND_PER_TOKEN_S,
                         per_pair_s: float = ch08.ROUND_PER_PAIR_S, captured_shapes=None) -> int:
    """Most new prompt tokens a round can add while its time stays <= the ITL target (8.2.4).

    Step 1: the permitted output interval bounds the round time. Step 2: solve
    fixed + t (b + c) + p (b (L + 1) + c h + c(c+1)/2) <= target for the largest whole c
    (a quadratic; with captured shapes the rows are padded first, so c can only shrink).
    Longer history h leaves fewer tokens. Returns 0 when the decode round alone exceeds it.
    """
    target = v.positive("itl_target_s", itl_target_s)
    b = v.tokens("decode_requests", decode_requests)
    L = v.tokens("context_tokens", context_tokens)
    h = v.tokens("history_tokens", history_tokens)
    model = _round_time_model(fixed_s, per_token_s, per_pair_s)
    shapes = None if captured_shapes is None else _shapes(captured_shapes)
    fixed, per_token, per_pair = model

    def fits(c: int) -> bool:
        return _mixed_round_s(b, L, c, h, model, shapes) <= target * (1 + 1e-12)

    if not fits(0):
        return 0
    # Unpadded bound: (p/2) c^2 + (t + p h + p/2) c + (decode round - target) <= 0.
    slack = target - _mixed_round_s(b, L, 0, h, model, None)
    qa, qb = per_pair / 2, per_token + per_pair * (h + 0.5)
    upper = slack / qb if qa == 0 else (-qb + math.sqrt(qb * qb + 4 * qa * slack)) / (2 * qa)
    lo, hi = 0, int(math.floor(upper)) + 1
    while fits(hi):                      # guard the float edge of the root
        hi += 1
    # bisect for the largest c that fits: the round time never decreases as c grows
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
