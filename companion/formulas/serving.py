"""Closed forms of serving under load (8.6): Little's law, admission, effective throughput,
GPU-seconds, the efficiency table of Experiment 8-1, the comprehensive example's schemes A-E,
Amdahl over task stages, and cost per qualifying result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.batching import lifecycle_request_time_s
from companion.formulas.compression import kv_format_bytes_per_value
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (QUANT_FORMATS, kv_bytes_per_token, measured_prefill_mfu,
                                     moe_streamed_weight_bytes, prefill_flops,
                                     read_bytes_per_output_token, time_at_mfu)
from companion.formulas.kv_management import prefix_shared_kv_bytes
from companion.formulas.speculative import verification_flops
from companion.serves import serves
from companion.specs import QWEN3_8B, RTX_PRO_6000, Hardware, Model
from companion.units import GiB, MiB, ms

__all__ = [
    "requests_in_system", "admit_request", "effective_throughput",
    "completion_throughput", "response_losses", "fractional_change", "prefill_token_rate",
    "gpu_seconds_per_request", "round_read_bytes", "read_time_at_mbu",
    "decode_efficiency_table", "prefill_efficiency_row", "round_time_from_reads",
    "prefix_shifted_round_s",
    "Scheme", "SchemeResult", "SCHEMES", "scheme_result", "compare_schemes", "best_scheme",
    "chapter_schemes", "instance_kv_budget_bytes", "schemes_for_model",
    "per_qualifying_result", "staged_task_time", "staged_task_speedup", "staged_break_even_s",
]


DFLASH_VERIFY_POSITIONS = ch08.DFLASH_DRAFT_TOKENS + 1   # DFlash verifies its 7 drafts + 1 (8.5.2)


# --- 8.6.1: Little's law and admission -----------------------------------------------------

@serves("8.6.1")
def requests_in_system(arrival_rate_per_s: float, residence_s: float) -> float:
    """Mean number of requests in the system, Little's law: n = lambda T (8.6.1).

    4 req/s at 0.5 s: 2 requests; at 2 s: 8.
    """
    lam = v.nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    t = v.nonnegative("residence_s", residence_s)
    return lam * t


@serves("8.1.1", "8.6.1")
def admit_request(queue_s: float, prefill_s: float, interval_s: float, output_tokens: int,
                  deadline_s: float, *, kv_needed_bytes: float | None = None,
                  kv_free_bytes: float | None = None) -> bool:
    """Admission check: the request can still meet its deadline and its KV fits (8.6.1).

    Time: queue + prefill + (G - 1) x interval (``lifecycle_request_time_s``) <= deadline. The
    short request of 8.1.1: 0.1 + 0.096 + 255 x 26.5 ms = 6.95 s fits 7 s; queueing another
    0.1 s (7.05 s) does not. Space (when both are given): the KV the request will hold at the
    end of generation fits in what is free.
    """
    deadline = v.positive("deadline_s", deadline_s)
    finish = lifecycle_request_time_s(queue_s, prefill_s, interval_s, output_tokens)
    if (kv_needed_bytes is None) != (kv_free_bytes is None):
        missing = "kv_free_bytes" if kv_free_bytes is None else "kv_needed_bytes"
        raise ValueError(f"{missing}: give kv_needed_bytes and kv_free_bytes together")
    fits = True
    if kv_needed_bytes is not None:
        fits = (v.nonnegative("kv_needed_bytes", kv_needed_bytes)
                <= v.nonnegative("kv_free_bytes", kv_free_bytes))
    return finish <= deadline and fits


# --- 8.6.2: effective throughput -----------------------------------------------------------

def _flags(name: str, values) -> list[int]:
    seq = v.sequence(name, values)
    out = []
    for i, x in enumerate(seq):
        if isinstance(x, bool):
            out.append(int(x))
            continue
        f = v.number(f"{name}[{i}]", x)
        if f not in (0.0, 1.0):
            raise ValueError(f"{name}[{i}]: must be 0 or 1 (or a bool), got {x!r}")
        out.append(int(f))
    return out


@serves("8.6.2")
def effective_throughput(correct, on_time, window_s: float) -> float:
    """Requests per second that are both correct and on time: sum_i Q_i D_i / T_obs (8.6.2).

    ``correct`` and ``on_time`` are per-request flags (0/1 or bools) of the completed requests.
    """
    q = _flags("correct", correct)
    d = _flags("on_time", on_time)
    if len(q) != len(d):
        raise ValueError(f"on_time: has {len(d)} items but correct has {len(q)}")
    t = v.positive("window_s", window_s)
    return sum(qi * di for qi, di in zip(q, d)) / t


@serves("8.6.2")
def completion_throughput(completed: int, window_s: float) -> float:
    """Completed requests per second, correct or not, on time or not (8.6.2)."""
    n = v.count("completed", completed, minimum=0)
    return n / v.positive("window_s", window_s)


@serves("8.6.2")
def response_losses(responses: int, correct: int, good: int) -> dict:
    """Where responses went: wrong = responses - correct, late = correct - good (8.6.2).

    336 responses, 294 correct, 155 correct and on time: 42 wrong, 139 correct but late.
    """
    n = v.count("responses", responses, minimum=0)
    c = v.count("correct", correct, minimum=0)
    g = v.count("good", good, minimum=0)
    if c > n:
        raise ValueError(f"correct: {c} exceeds responses={n}")
    if g > c:
        raise ValueError(f"good: {g} exceeds correct={c}")
    return dict(responses=n, correct=c, good=g, wrong=n - c, late_correct=c - g)


@serves("8.6.2", "8.6.3")
def fractional_change(before: float, after: float) -> float:
    """Relative change (after - before) / before: -0.41 for goodput 1.02 -> 0.60 (8.6.2),
    +0.66 for 652.0 -> 1083.7 J per qualifying result (8.6.3)."""
    b = v.positive("before", before)
    a = v.nonnegative("after", after)
    return (a - b) / b


# --- 8.6.3: processing speeds, GPU-seconds, efficiencies -----------------------------------

@serves("8.6.3")
def prefill_token_rate(new_tokens: int, prefill_s: float) -> float:
    """Prefill speed r_P: new input tokens per second of accelerator time (8.6.3).

    32,768 tokens in 2.04 s: about 16,060 tokens/s.
    """
    n = v.tokens("new_tokens", new_tokens, minimum=1)
    return n / v.positive("prefill_s", prefill_s)


@serves("8.6.3")
def gpu_seconds_per_request(new_tokens: int, output_tokens: int, prefill_tokens_per_s: float,
                            decode_calls_per_s: float) -> float:
    """Accelerator occupancy of one request: t_GPU = L / r_P + (G - 1) / r_D (8.6.3).

    2048 / 16,059 + 255 / 585 = 0.563 GPU-seconds. r_D = b / T_round is
    ``decode_tokens_per_s(16, 27.35 ms)`` = 585 calls/s (one call per request per round).
    """
    L = v.tokens("new_tokens", new_tokens)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    rp = v.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    rd = v.positive("decode_calls_per_s", decode_calls_per_s)
    return L / rp + (g - 1) / rd


@serves("8.6.3")
def round_read_bytes(model: Model, batch: int, context_tokens: int, *,
                     bytes_per_value: float = 2, shared_prefix_tokens: int = 0,
                     routed_tokens: int | None = None) -> float:
    """Bytes one decode round reads: D_w + KV tokens read x k (8.6.3 table, schemes A-D).

    Independent contexts read D_w + b L k (15.44 GB at b = 1, 34.46 GB at b = 64, L = 2048).
    A shared prefix is counted once: D_w + (P + b (L - P)) k. No block rounding.

    For a mixture-of-experts model D_w is the part the round's tokens touch
    (``moe_streamed_weight_bytes``): ``routed_tokens`` of them pass the routers, by default
    one per request; a speculative round that verifies P positions per request routes b P
    (scheme D: 16 x 8 = 128). A dense model reads all of D_w either way.
    """
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    p = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if p > L:
        raise ValueError(f"shared_prefix_tokens: {p} exceeds context_tokens={L}")
    routed = b if routed_tokens is None else v.count("routed_tokens", routed_tokens)
    k = kv_bytes_per_token(model, bytes_per_value)
    # b x (D_w / b + (L - P) k) for the private parts, plus the prefix read once; an MoE's D_w
    # is the part the round's routed tokens touch
    d_w = moe_streamed_weight_bytes(_model(model), routed)
    return b * read_bytes_per_output_token(d_w, b, L - p, k) + p * k


@serves("8.6.3")
def read_time_at_mbu(read_bytes: float, hardware: Hardware, efficiency: float = 1.0) -> float:
    """Read time: bytes / (peak bandwidth x efficiency) seconds (8.6.3; 15.44 GB -> 8.62 ms)."""
    n = v.nonnegative("read_bytes", read_bytes)
    hw = _hardware(hardware)
    e = v.probability("efficiency", efficiency, open_low=True)
    return n / (hw.mem_bw_bytes_per_s * e)


@serves("8.6.3")
def decode_efficiency_table(model: Model = QWEN3_8B, hardware: Hardware = RTX_PRO_6000,
                            batches=ch08.EXP81_BATCHES,
                            context_tokens: int = ch08.SHORT_PROMPT_TOKENS,
                            round_s=ch08.EXP81_ROUND_S) -> list[dict]:
    """Experiment 8-1's decode efficiency table, one dict per batch size (8.6.3).

    read_bytes = D_w + b L k with L = 2048 per request (15.44 / 16.34 / 19.97 / 34.46 GB),
    read_s at peak bandwidth (8.62 / 9.12 / 11.14 / 19.23 ms), the measured round_s, MBU =
    read_s / round_s (33 / 34 / 41 / 65%) and the gap round_s - read_s (17.6 ms at b = 1).
    """
    bs = v.sequence("batches", batches)
    rs = v.sequence("round_s", round_s)
    if len(bs) != len(rs):
        raise ValueError(f"round_s: has {len(rs)} items but batches has {len(bs)}")
    rows = []
    for i, (b, r) in enumerate(zip(bs, rs)):
        b = v.count(f"batches[{i}]", b)
        r = v.positive(f"round_s[{i}]", r)
        read = round_read_bytes(model, b, context_tokens)
        read_s = read_time_at_mbu(read, hardware)
        rows.append(dict(batch=b, read_bytes=read, read_s=read_s, round_s=r, mbu=read_s / r,
                         gap_s=r - read_s))
    return rows


@serves("8.6.3")
def prefill_efficiency_row(model: Model = QWEN3_8B, hardware: Hardware = RTX_PRO_6000,
                           batches=ch08.EXP81_BATCHES,
                           context_tokens: int = ch08.SHORT_PROMPT_TOKENS,
                           prefill_s=None, measured_mfu=None) -> list[dict]:
    """The prefill row of Experiment 8-1's efficiency table, one dict per batch size (8.6.3).

    Each batch prefills b prompts of ``context_tokens`` (2048, nothing cached): ``flops`` =
    b x (layer matrices + causal attention), 29.69 TFLOP per prompt. Where a prefill time is
    known (``prefill_s``: {batch: seconds}; by default batch 1's 94.8 ms of footnote 5) the MFU
    is computed from it (62.2%, printed 62%) and ``source`` is "computed"; elsewhere the MFU is
    the chapter's measured value (``measured_mfu``: {batch: fraction}, by default 61/61/58%),
    ``source`` is "measured", and ``prefill_s`` is the time that efficiency implies.
    """
    bs = v.sequence("batches", batches)
    known = ({1: ch08.PREFILL_ROUND_S} if prefill_s is None
             else v.instance("prefill_s", prefill_s, dict, "a dict {batch: seconds}"))
    measured = (ch08.EXP81_PREFILL_MFU_MEASURED if measured_mfu is None
                else v.instance("measured_mfu", measured_mfu, dict, "a dict {batch: fraction}"))
    per_prompt = prefill_flops(_model(model), v.tokens("context_tokens", context_tokens,
                                                       minimum=1))
    rows = []
    for i, b in enumerate(bs):
        b = v.count(f"batches[{i}]", b)
        flops = b * per_prompt
        if b in known:
            t = v.positive(f"prefill_s[{b}]", known[b])
            mfu = measured_prefill_mfu(model, hardware, b, context_tokens, 0, t)
            source = "computed"
        elif b in measured:
            mfu = v.probability(f"measured_mfu[{b}]", measured[b], open_low=True)
            t = time_at_mfu(flops, hardware, mfu)
            source = "measured"
        else:
            raise ValueError(f"batches[{i}]: batch {b} has neither a prefill time (prefill_s) "
                             "nor a measured efficiency (measured_mfu)")
        rows.append(dict(batch=b, flops=flops, mfu=mfu, prefill_s=t, source=source))
    return rows


@serves("8.6.3")
def round_time_from_reads(read_bytes: float, table_read_bytes=None, table_round_s=None) -> float:
    """Decode round time for a read volume, linear between measured points (8.6.3, scheme C).

    Defaults to Experiment 8-1's table (bytes read vs measured round); beyond its ends the
    nearest segment is extended. C reads 25.40 GB: between the 19.97 GB (27.44 ms) and
    34.46 GB (29.63 ms) columns, 28.26 ms.
    """
    x = v.nonnegative("read_bytes", read_bytes)
    if (table_read_bytes is None) != (table_round_s is None):
        missing = "table_round_s" if table_round_s is None else "table_read_bytes"
        raise ValueError(f"{missing}: give table_read_bytes and table_round_s together")
    if table_read_bytes is None:
        rows = decode_efficiency_table()
        xs = [r["read_bytes"] for r in rows]
        ys = [r["round_s"] for r in rows]
    else:
        sx = v.sequence("table_read_bytes", table_read_bytes, min_len=2)
        sy = v.sequence("table_round_s", table_round_s, min_len=2)
        if len(sx) != len(sy):
            raise ValueError(f"table_round_s: has {len(sy)} items but table_read_bytes has "
                             f"{len(sx)}")
        xs = [v.nonnegative(f"table_read_bytes[{i}]", a) for i, a in enumerate(sx)]
        ys = [v.positive(f"table_round_s[{i}]", a) for i, a in enumerate(sy)]
        if any(b <= a for a, b in zip(xs, xs[1:])):
            raise ValueError("table_read_bytes: must be strictly increasing")
    i = 1
    while i < len(xs) - 1 and x > xs[i]:
        i += 1
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@serves("8.6.3")
def prefix_shifted_round_s(measured_round_s: float, shared_prefix_tokens: int, *,
                           reference_prefix_tokens: int = ch08.SHARED_PREFIX_TOKENS,
                           model: Model = QWEN3_8B, batch: int = ch08.LONG_BATCH,
                           prompt_tokens: int = ch08.LONG_PROMPT_TOKENS,
                           bytes_per_value: float = 2) -> float:
    """A decode round measured with one shared prefix, moved to another (8.6.3, schemes B/D/E).

    measured + T(read(P)) - T(read(P_ref)): T is ``round_time_from_reads`` on Experiment 8-1's
    table and read(P) = ``round_read_bytes`` of the batch with P prefix tokens counted once, so
    the measured 27.35 ms stays exact at the 6144-token prefix and moves by what the table
    predicts for the bytes a round then reads.
    """
    measured = v.positive("measured_round_s", measured_round_s)
    p = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    ref = v.tokens("reference_prefix_tokens", reference_prefix_tokens)
    m = _model(model)
    b = v.count("batch", batch)
    L = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    bpv = v.positive("bytes_per_value", bytes_per_value)
    for name, prefix in (("shared_prefix_tokens", p), ("reference_prefix_tokens", ref)):
        if prefix > L:
            raise ValueError(f"{name}: {prefix} exceeds prompt_tokens={L}")

    def table_round_s(prefix: int) -> float:
        return round_time_from_reads(round_read_bytes(m, b, L, bytes_per_value=bpv,
                                                      shared_prefix_tokens=prefix))

    return measured + (table_round_s(p) - table_round_s(ref))


# --- 8.6.3 comprehensive example: schemes A-E -----------------------------------------------

@serves("8.6.3")
@dataclass(frozen=True)
class Scheme:
    """One configuration of the comprehensive example (8.6.3, Exercise 8-9).

    shared_prefix: the common prefix's KV is stored (and cached) once.
    kv_format: KV storage format, a key of ``QUANT_FORMATS`` ("bf16", "q8_0", "fp8", ...).
    tokens_per_round: mean outputs per request per decode round (1 plain, 3 for D, 2 for E).
    verify_positions: rows each request verifies per round (1 plain, 8 for DFlash's 7 + 1).
    draft_bytes: extra accelerator memory of the draft (D: 3188 MiB of peak memory).
    prefill_factor: prefill time multiplier for the draft's own input pass (D: 141.6 / 129.4).
    round_extra_s: per-round cost outside the target pass (E: a 0.1 ms lookup).
    base_round_s: measured decode round without speculation; None interpolates Experiment
      8-1's table on the bytes a round reads.
    """

    name: str
    shared_prefix: bool = False
    kv_format: str = "bf16"
    tokens_per_round: float = 1.0
    verify_positions: int = 1
    draft_bytes: float = 0.0
    prefill_factor: float = 1.0
    round_extra_s: float = 0.0
    base_round_s: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name: expected a non-empty string, got {self.name!r}")
        v.boolean("shared_prefix", self.shared_prefix)
        v.choice("kv_format", self.kv_format, QUANT_FORMATS)
        tpr = v.number("tokens_per_round", self.tokens_per_round, at_least=1.0)
        pos = v.count("verify_positions", self.verify_positions)
        if tpr > pos:
            raise ValueError(f"tokens_per_round: {tpr} exceeds verify_positions={pos} "
                             f"(a round emits at most one token per verified position)")
        v.nonnegative("draft_bytes", self.draft_bytes)
        v.number("prefill_factor", self.prefill_factor, at_least=1.0)
        v.nonnegative("round_extra_s", self.round_extra_s)
        if self.base_round_s is not None:
            v.positive("base_round_s", self.base_round_s)

    def with_(self, **changes) -> "Scheme":
        """A copy with the given fields replaced (validated again), e.g. for a slider."""
        return replace(self, **changes)


SCHEMES = {
    "A": Scheme("A"),
    "B": Scheme("B", shared_prefix=True, base_round_s=ch08.SHARED_ROUND_S),
    "C": Scheme("C", kv_format="q8_0"),
    "D": Scheme("D", shared_prefix=True, base_round_s=ch08.SHARED_ROUND_S,
                tokens_per_round=ch08.DFLASH_TOKENS_PER_ROUND,
                verify_positions=DFLASH_VERIFY_POSITIONS,
                draft_bytes=(ch08.DFLASH_PEAK_AFTER_MIB - ch08.DFLASH_PEAK_BEFORE_MIB) * MiB,
                prefill_factor=ch08.DFLASH_TTFT_AFTER_S / ch08.DFLASH_TTFT_BEFORE_S),
    # E (Exercise 8-9): context lookup from a host-side index; a 4-token lookup draft as in
    # 8.5.2 (5 positions; its verification compute stays far below the round either way)
    "E": Scheme("E", shared_prefix=True, base_round_s=ch08.SHARED_ROUND_S,
                tokens_per_round=ch08.LOOKUP_TOKENS_PER_ROUND, verify_positions=5,
                round_extra_s=ch08.LOOKUP_QUERY_S),
}


@dataclass(frozen=True)
class SchemeResult:
    """What ``scheme_result`` computes for one scheme (base units; MiB/GiB/ms for display)."""

    name: str
    kv_bytes: float
    memory_bytes: float
    read_bytes: float
    prefill_flops: float
    prefill_s: float
    verify_flops: float
    verify_s: float
    round_s: float
    rounds: int
    decode_s: float
    total_s: float
    fits_memory: bool
    meets_deadline: bool
    qualifying_results: int
    gpu_s_per_result: float
    energy_j_per_result: float

    @property
    def memory_mib(self) -> float:
        return self.memory_bytes / MiB

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB

    @property
    def round_ms(self) -> float:
        return self.round_s / ms

    @property
    def feasible(self) -> bool:
        return self.fits_memory and self.meets_deadline


@lru_cache(maxsize=1)
def _default_prefill_mfu() -> float:
    # scheme B's measurement: 16 x 2048 new tokens on the cached 6144-token prefix in 2.04 s
    return measured_prefill_mfu(QWEN3_8B, RTX_PRO_6000, ch08.LONG_BATCH,
                                ch08.LONG_PROMPT_TOKENS - ch08.SHARED_PREFIX_TOKENS,
                                ch08.SHARED_PREFIX_TOKENS, ch08.SHARED_PREFILL_S)


@serves("8.6.3")
def scheme_result(scheme: Scheme, *, kv_budget_bytes: float = ch08.KV_BUDGET_BYTES,
                  output_tokens: int = ch08.OUTPUT_TOKENS, deadline_s: float = ch08.DEADLINE_S,
                  batch: int = ch08.LONG_BATCH, prompt_tokens: int = ch08.LONG_PROMPT_TOKENS,
                  shared_prefix_tokens: int = ch08.SHARED_PREFIX_TOKENS, model: Model = QWEN3_8B,
                  hardware: Hardware = RTX_PRO_6000,
                  prefill_mfu: float | None = None) -> SchemeResult:
    """Memory, time and cost of serving a batch under one scheme (8.6.3, Figure 8-35, Ex. 8-9).

    - memory = KV held at the end of generation (prompt + G - 1 tokens in whole 16-token
      blocks; a shared prefix once) + draft_bytes: A 19008 MiB, B 6048, C 9.86 GiB, D 9236.
    - prefill = b x prefill FLOPs of the uncached tokens / (peak x MFU) x prefill_factor, MFU
      defaulting to B's measured 57.77%: A and C 7.34 s, B 2.04 s, D 2.2323 s.
    - round = max(base round, verification FLOPs / (peak x MFU)) + round_extra_s, the base
      round measured (B, D, E: 27.35 ms) or interpolated from Experiment 8-1 on bytes read
      (A 34.46 GB -> 29.63 ms, C 25.40 GB -> 28.26 ms). The read routes b x
      verify_positions tokens: the same for a dense model, more experts for an MoE.
    - rounds = ceil((G - 1) / tokens_per_round): 255 plain, 85 for D, 128 for E.
    - total = prefill + rounds x round (B 9.01 s, C 14.55 s, D 4.56 s).

    Results qualify only when the batch fits and finishes by the deadline; GPU-seconds and
    energy (at the power cap) per qualifying result are then total / b and P total / b (D:
    0.285 s, 171 J), else infinite.
    """
    s = v.instance("scheme", scheme, Scheme, "a companion.calc.Scheme")
    budget = v.positive("kv_budget_bytes", kv_budget_bytes)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    deadline = v.positive("deadline_s", deadline_s)
    b = v.count("batch", batch)
    L = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    prefix = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if prefix > L:
        raise ValueError(f"shared_prefix_tokens: {prefix} exceeds prompt_tokens={L}")
    _model(model)
    hw = _hardware(hardware)
    eff = (_default_prefill_mfu() if prefill_mfu is None
           else v.probability("prefill_mfu", prefill_mfu, open_low=True))

    bpv = kv_format_bytes_per_value(model, s.kv_format)
    p = prefix if s.shared_prefix else 0
    kv = prefix_shared_kv_bytes(model, b, L, g, shared_prefix_tokens=p, bytes_per_value=bpv)
    memory = kv + s.draft_bytes

    pf_flops = b * prefill_flops(model, L - p, p)
    prefill_s = time_at_mfu(pf_flops, hw, eff) * s.prefill_factor

    # a speculative round routes every verified position (an MoE touches more experts)
    read = round_read_bytes(model, b, L, bytes_per_value=bpv, shared_prefix_tokens=p,
                            routed_tokens=b * s.verify_positions)
    base = s.base_round_s if s.base_round_s is not None else round_time_from_reads(read)
    vf = verification_flops(model, s.verify_positions, L, b)
    verify_s = time_at_mfu(vf, hw, eff)
    round_s = max(base, verify_s) + s.round_extra_s  # read-bound unless verification dominates
    # ceil with a guard against float noise in (G - 1) / tokens_per_round
    rounds = math.ceil((g - 1) / s.tokens_per_round - 1e-9)
    decode_s = rounds * round_s
    total = prefill_s + decode_s

    fits = memory <= budget
    on_time = total <= deadline
    good = b if (fits and on_time) else 0
    gpu_s = per_qualifying_result(total, good)
    energy = per_qualifying_result(hw.power_w * total, good) if hw.power_w else math.nan
    return SchemeResult(name=s.name, kv_bytes=kv, memory_bytes=memory, read_bytes=read,
                        prefill_flops=pf_flops, prefill_s=prefill_s, verify_flops=vf,
                        verify_s=verify_s, round_s=round_s, rounds=rounds, decode_s=decode_s,
                        total_s=total, fits_memory=fits, meets_deadline=on_time,
                        qualifying_results=good, gpu_s_per_result=gpu_s,
                        energy_j_per_result=energy)


def compare_schemes(schemes=None, **kwargs) -> dict:
    """``scheme_result`` for each scheme (default A-E), keyed by name: the points of Figure 8-35.

    Keyword arguments (kv_budget_bytes, output_tokens, deadline_s, ...) go to every call.
    """
    chosen = list(SCHEMES.values()) if schemes is None else list(
        v.sequence("schemes", schemes))
    return {s.name: scheme_result(s, **kwargs) for s in chosen}


@serves("8.6.3")
def best_scheme(schemes=None, **kwargs) -> str | None:
    """Name of the feasible scheme with the least GPU time per qualifying result, or None (8.6.3).

    12 GiB, 256 tokens, 7 s among A-D: "D"; at 6 GiB among A-D: None (Exercise 8-9 adds E).
    """
    results = compare_schemes(schemes, **kwargs)
    feasible = [r for r in results.values() if r.feasible]
    if not feasible:
        return None
    return min(feasible, key=lambda r: r.gpu_s_per_result).name


def chapter_schemes(names: str = "ABCD", *, d_tokens_per_round: float | None = None,
                    e_tokens_per_round: float | None = None,
                    shared_prefix_tokens: int = ch08.SHARED_PREFIX_TOKENS) -> list:
    """``SCHEMES`` with D's and E's tokens per round changed, for another shared prefix.

    B, D and E use the decode round measured at the 6144-token prefix (27.35 ms); for another
    prefix it is shifted by the change Experiment 8-1's table predicts for the bytes a round
    then reads (``prefix_shifted_round_s``), so the chapter's setting stays exact.
    """
    names = v.instance("names", names, str, "a string of scheme letters such as 'ABCD'")
    for letter in names:
        v.choice("names", letter, SCHEMES)
    d_tokens = None if d_tokens_per_round is None else v.positive("d_tokens_per_round",
                                                                   d_tokens_per_round)
    e_tokens = None if e_tokens_per_round is None else v.positive("e_tokens_per_round",
                                                                   e_tokens_per_round)
    prefix = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    out = []
    for name in names:
        s = SCHEMES[name]
        changes = {}
        if s.base_round_s is not None and prefix != ch08.SHARED_PREFIX_TOKENS:
            changes["base_round_s"] = prefix_shifted_round_s(s.base_round_s, prefix)
        if name == "D" and d_tokens is not None:
            changes["tokens_per_round"] = d_tokens
        if name == "E" and e_tokens is not None:
            changes["tokens_per_round"] = e_tokens
        out.append(s.with_(**changes) if changes else s)
    return out


# --- the comparison for another model (what is the model's, what is the chapter's measurement) --

@serves("8.1.2", "8.6.3")
def instance_kv_budget_bytes(model: Model, *, instance_bytes: float = ch08.INSTANCE_MEM_BYTES,
                             reference_model: Model = QWEN3_8B,
                             reference_instance_bytes: float = ch08.INSTANCE_MEM_BYTES,
                             reference_kv_budget_bytes: float = ch08.KV_BUDGET_BYTES) -> float:
    """KV budget a model leaves on an instance: M - W - workspace (8.1.2, 8.6.3).

    The workspace (activations, graphs, allocator slack) is what the chapter's instance keeps
    besides Qwen3-8B's weights and its 12 GiB of KV: 32 GiB - 15.26 GiB - 12 GiB = 4.74 GiB,
    taken as the same for the other model and instance. Negative: the weights do not fit.
    """
    m, ref = _model(model), _model(reference_model)
    instance = v.positive("instance_bytes", instance_bytes)
    ref_instance = v.positive("reference_instance_bytes", reference_instance_bytes)
    ref_budget = v.positive("reference_kv_budget_bytes", reference_kv_budget_bytes)
    workspace = ref_instance - ref.weight_bytes - ref_budget
    return instance - m.weight_bytes - workspace


@serves("8.6.3")
def schemes_for_model(model: Model, schemes=None, *, reference_model: Model = QWEN3_8B,
                      batch: int = ch08.LONG_BATCH, prompt_tokens: int = ch08.LONG_PROMPT_TOKENS,
                      shared_prefix_tokens: int = ch08.SHARED_PREFIX_TOKENS,
                      transfer: str = "table", hardware: Hardware = RTX_PRO_6000) -> dict:
    """Schemes A-E with their measured decode rounds moved to another model (8.6.3).

    The read of a round is the scheme's (``round_read_bytes``: its weights, an MoE's experts
    touched by the b x verify_positions tokens the round routes, and its KV layout). How the
    extra bytes over Qwen3-8B's read are charged (``transfer``):

    - "table" (default): a measured round (B, D, E: 27.35 ms for Qwen3-8B) becomes measured +
      T(read of the model) - T(read of Qwen3-8B), T being Experiment 8-1's bytes-to-round-time
      table of this card (``round_time_from_reads``); schemes without a measured round (A, C)
      are interpolated on the new read as the chapter does. Past the table's last column
      (34.46 GB) T is its last segment extended, 2.19 ms per 14.49 GB: bytes at about 6.6 TB/s,
      far above what the card can read, so for a model that reads more this is the optimistic
      end.
    - "bandwidth": every extra byte at the card's peak bandwidth on top of Qwen3-8B's round
      (measured, or T of its read for A and C): round + (read of the model - read of
      Qwen3-8B) / bandwidth, the pessimistic end (nothing of it hides in the per-round
      overhead). Every scheme then carries a round.

    For the reference model itself both give the chapter's rounds. The draft's memory, its
    prefill share and the tokens per round stay the chapter's (Experiment 8-5's draft for
    Qwen3-8B), an assumption the caller should state. Returns {name: Scheme}.
    """
    m, ref = _model(model), _model(reference_model)
    chosen = list(SCHEMES.values()) if schemes is None else list(v.sequence("schemes", schemes))
    b = v.count("batch", batch)
    L = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    prefix = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if prefix > L:
        raise ValueError(f"shared_prefix_tokens: {prefix} exceeds prompt_tokens={L}")
    how = v.choice("transfer", transfer, ("table", "bandwidth"))
    hw = _hardware(hardware)
    out = {}
    for s in chosen:
        s = v.instance("schemes", s, Scheme, "a companion.calc.Scheme")
        if s.base_round_s is None and how == "table":
            out[s.name] = s
            continue
        p = prefix if s.shared_prefix else 0

        def read(mod, s=s, p=p):
            bpv = kv_format_bytes_per_value(mod, s.kv_format)
            return round_read_bytes(mod, b, L, bytes_per_value=bpv, shared_prefix_tokens=p,
                                    routed_tokens=b * s.verify_positions)

        if how == "table":
            moved = (s.base_round_s + round_time_from_reads(read(m))
                     - round_time_from_reads(read(ref)))
        else:
            start = (s.base_round_s if s.base_round_s is not None
                     else round_time_from_reads(read(ref)))
            moved = start + (read(m) - read(ref)) / hw.mem_bw_bytes_per_s
            # never faster than the model's own read at peak bandwidth
            moved = max(moved, read(m) / hw.mem_bw_bytes_per_s)
        out[s.name] = s.with_(base_round_s=moved)
    return out


# --- cost per qualifying result and stage times (8.6.3, Exercise 8-8) ----------------------

@serves("8.6.3")
def per_qualifying_result(total: float, qualifying_results: int) -> float:
    """GPU time or energy per qualifying result: T_GPU / N_g or E_obs / N_g (8.6.3).

    D: 4.56 s / 16 = 0.285 GPU-seconds. With no qualifying result everything is wasted: inf.
    """
    t = v.nonnegative("total", total)
    n = v.count("qualifying_results", qualifying_results, minimum=0)
    return t / n if n else math.inf


def _stages(stage_times_s, speedups):
    seq = v.sequence("stage_times_s", stage_times_s)
    times = [v.nonnegative(f"stage_times_s[{i}]", t) for i, t in enumerate(seq)]
    if speedups is None:
        return times, [1.0] * len(times)
    sp = v.sequence("speedups", speedups)
    if len(sp) != len(times):
        raise ValueError(f"speedups: has {len(sp)} items but stage_times_s has {len(times)}")
    return times, [v.positive(f"speedups[{i}]", s) for i, s in enumerate(sp)]


@serves("8.6.3")
def staged_task_time(stage_times_s, speedups=None, added_s: float = 0.0) -> float:
    """Task time after speeding up stages: sum_i t_i / s_i + added seconds (8.6.3, Ex. 8-8).

    Decode 50 of 100 s at 4x: 50 + 50/4 = 62.5 s; decode at 1/4 plus 8 s of draft preparation.
    """
    times, sp = _stages(stage_times_s, speedups)
    added = v.nonnegative("added_s", added_s)
    return sum(t / s for t, s in zip(times, sp)) + added


def staged_task_speedup(stage_times_s, speedups=None, added_s: float = 0.0) -> float:
    """Whole-task speedup sum_i t_i / (sum_i t_i / s_i + added) (Amdahl with an added cost)."""
    times, _ = _stages(stage_times_s, speedups)
    return sum(times) / staged_task_time(stage_times_s, speedups, added_s)


def staged_break_even_s(stage_times_s, speedups) -> float:
    """Added time (e.g. draft preparation) at which the speedup stops saving time:
    sum_i (t_i - t_i / s_i) seconds (Exercise 8-8)."""
    times, sp = _stages(stage_times_s, speedups)
    return sum(t - t / s for t, s in zip(times, sp))
