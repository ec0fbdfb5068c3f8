"""Fuller models beside the simplified ones of 8.1, 8.2 and 8.5: where each stops holding.

The chapters keep their arithmetic short: an inserted prefill adds its whole time to one
output interval, every interval of an answer is the same, a request reserves its final KV
for its whole life, throughput is counted over decode rounds only, the batch-1 round fit is
used at any batch and context, and a speculative drafter is accepted at one rate in every
round. Each function here is the next step up, so a notebook can show both side by side and
compute the gap. The chapters' own numbers are untouched: these functions never replace
``batching.mixed_round_time_s`` or ``core.speculative_expected_tokens``, they sit beside them.

  8.1.1  inserted_prefill_stall_s      an inserted prefill in its own pass or in this step's
         context_growth_intervals_s    intervals that grow with the KV each step reads
  8.1.2  kv_held_over_answer           what a request holds on average against its reservation
  8.1.3  batch_cycle_throughput        tokens per second over whole requests, prefill included
  8.2    floored_round_time            the 8.2.2 fit, never below the roofline of the same pass
         fit_undercut_batch            the batch from which the fit claims less than the roofline
         floored_token_budget          8.2.4's budget under the floored round time
  8.5.2  spread_expected_tokens        E[X] when acceptance differs from span to span
"""

from __future__ import annotations

import math

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.batching import mixed_round_time_s, token_budget_for_itl
from companion.formulas.core import kv_bytes, max_concurrent, speculative_expected_tokens
from companion.formulas.performance import fused_step_parts
from companion.formulas.serving import round_read_bytes, round_time_from_reads
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = [
    "inserted_prefill_stall_s", "context_growth_intervals_s", "kv_held_over_answer",
    "batch_cycle_throughput", "floored_round_time", "fit_undercut_batch",
    "floored_token_budget", "spread_expected_tokens",
]


# --- 8.1.1: an inserted prefill, and intervals that grow with the context ---------------------

@serves("8.1.1")
def inserted_prefill_stall_s(prefill_s: float, *, fused: bool = False,
                             shared_s: float = ch08.ROUND_FIXED_S) -> float:
    """Seconds an inserted prefill adds to the output interval it lands in (8.1.1).

    ``fused=False`` (the chapter): the prefill runs as a pass of its own, so the interval is
    interval + prefill (26.5 + 96 ms, "about 123 ms"). ``fused=True``: the prefill's tokens
    ride in the same pass as this request's decode step, as in 8.2.2's continuous batching,
    and the part of a pass both would pay anyway (``shared_s``: the fit's fixed cost, weight
    read and launches) is paid once: the interval grows by max(prefill - shared, 0). With
    8.2.2's own fit that is exactly mixed(1, L, c) - mixed(1, L, 0) = prefill(c) - fixed.
    """
    p = v.positive("prefill_s", prefill_s)
    fused = v.boolean("fused", fused)
    shared = v.nonnegative("shared_s", shared_s)
    return max(p - shared, 0.0) if fused else p


@serves("8.1.1", "8.1.3")
def context_growth_intervals_s(model: Model, interval_s: float, prompt_tokens: int,
                               output_tokens: int, *, bytes_per_value: float = 2) -> list[float]:
    """The G - 1 output intervals of one request when each decode step's time follows the
    bytes it reads (8.1.1, 8.1.3; the chapter uses one interval for all of them).

    Interval j (j = 1 .. G - 1) feeds output j back with prompt + j - 1 tokens already cached,
    so it reads (j - 1) k more KV than the first. Its time is ``interval_s`` plus what
    Experiment 8-1's measured rounds say those bytes cost (``serving.round_time_from_reads``:
    the measured decode round against the bytes it reads, linear between its batches):
    interval_j = interval + T(read(prompt + j - 1)) - T(read(prompt)).
    """
    m = _model(model)
    itl = v.positive("interval_s", interval_s)
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    bpv = v.positive("bytes_per_value", bytes_per_value)
    base = round_time_from_reads(round_read_bytes(m, 1, p, bytes_per_value=bpv))
    return [itl + round_time_from_reads(round_read_bytes(m, 1, p + j - 1,
                                                         bytes_per_value=bpv)) - base
            for j in range(1, g)]


# --- 8.1.2: what a request holds while it answers, against its reservation --------------------

def _held_bytes_series(m: Model, tokens: np.ndarray, block_tokens: int,
                       bytes_per_value: float) -> np.ndarray:
    """KV bytes in whole blocks at each token count (sliding layers keep W - 1 at most)."""
    def blocks(t):
        return -(-t // block_tokens) * block_tokens
    if m.sliding_window is None:
        slots = m.n_layers * blocks(tokens)
    else:
        slots = sum(blocks(tokens if w is None else np.minimum(tokens, w - 1))
                    for w in m.layer_windows)
    return slots * m.kv_values_per_layer * bytes_per_value


@serves("8.1.2")
def kv_held_over_answer(model: Model, kv_budget_bytes: float, prompt_tokens: int,
                        output_tokens: int, *, block_tokens: int = 16,
                        bytes_per_value: float = 2) -> dict:
    """A request's KV over its life against what 8.1.2 reserves for it (8.1.2, fuller).

    The request holds its prompt after prefill and one more token after each of its G - 1
    decode steps: prompt + j tokens after round j (j = 0 .. G - 1), in whole blocks. The
    chapter reserves the last of these for the whole life (``core.max_concurrent``). Averaged
    over its G rounds (what a pool of requests started at staggered times holds per request)
    it holds ``mean_held_bytes``. Returns reserved_bytes, mean_held_bytes, used_share
    (mean / reserved), fit_reserved (the chapter's count) and fit_by_mean: floor(budget /
    mean), the requests a pool could run on average if it admitted by what they hold and
    preempted when a burst of long answers overran it.
    """
    m = _model(model)
    budget = v.nonnegative("kv_budget_bytes", kv_budget_bytes)
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    bt = v.tokens("block_tokens", block_tokens, minimum=1)
    bpv = v.positive("bytes_per_value", bytes_per_value)
    kw = dict(block_tokens=bt, bytes_per_value=bpv)
    reserved = kv_bytes(m, p + g - 1, **kw)
    held = _held_bytes_series(m, np.arange(p, p + g, dtype=np.int64), bt, bpv)
    mean = float(held.sum()) / g
    return dict(reserved_bytes=reserved, mean_held_bytes=mean, used_share=mean / reserved,
                fit_reserved=max_concurrent(budget, m, p, g, **kw),
                fit_by_mean=int(budget // mean))


# --- 8.1.3: throughput over whole requests ---------------------------------------------------

@serves("8.1.3")
def batch_cycle_throughput(batch: int, output_tokens: int, prefill_s: float,
                           round_s: float) -> float:
    """Tokens per second of b requests that arrive together and run to the end (8.1.3, fuller).

    b G / (T_prefill + (G - 1) T_round): every token of the batch over the whole cycle, the
    prefill of all b prompts included. The chapter's b / T_round (583 tokens/s at b = 16)
    counts decode rounds only, which is the rate between first tokens and last.
    """
    b = v.count("batch", batch)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    pre = v.nonnegative("prefill_s", prefill_s)
    r = v.positive("round_s", round_s)
    return b * g / (pre + (g - 1) * r)


# --- 8.2: the batch-1 round fit against the roofline of the same pass -------------------------

@serves("8.2.1", "8.2.2", "8.2.4")
def floored_round_time(model: Model, hardware: Hardware, decode_requests: int,
                       context_tokens: int, new_tokens: int = 0, history_tokens: int = 0, *,
                       captured_shapes=None, bytes_per_value: float = 2) -> dict:
    """8.2.2's round fit beside the roofline of the same pass, and the larger of the two.

    fit_s: fixed + per token x rows + per pair x pairs (``batching.mixed_round_time_s``, fitted
    on batch-1 rounds of Qwen3-8B on the RTX PRO 6000). roofline_s: the pass on the roofline at
    peak (``performance.fused_step_parts`` at efficiency 1: bytes D_w + (b L + h + c) k, FLOPs
    of its layer matrices and attention pairs). No real round is faster than its roofline, so
    floored_s = max(fit, roofline); bound says which one sets it ("fit" or "roofline").
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.tokens("decode_requests", decode_requests)
    L = v.tokens("context_tokens", context_tokens)
    c = v.tokens("new_tokens", new_tokens)
    h = v.tokens("history_tokens", history_tokens)
    fit = mixed_round_time_s(b, L, c, h, captured_shapes=captured_shapes)
    roof = fused_step_parts(m, hw, chunk_tokens=c, history_tokens=h, decode_batch=b,
                            decode_context_tokens=L, efficiency=1.0,
                            bytes_per_value=bytes_per_value)["step_s"]
    return dict(fit_s=fit, roofline_s=roof, floored_s=max(fit, roof),
                bound="roofline" if roof > fit else "fit")


@serves("8.2.1", "8.2.2")
def fit_undercut_batch(model: Model, hardware: Hardware, context_tokens: int, *,
                       max_batch: int = 1 << 16, bytes_per_value: float = 2) -> float:
    """Smallest decode batch at which 8.2.2's fit claims a round faster than its roofline.

    The fit adds t + p (L + 1) per decode row (36.5 us at 2K); reading that row's KV at peak
    bandwidth costs L k / beta (169 us at 2K). The fit starts higher (its fixed 26.22 ms against
    D_w / beta = 8.4 ms) but grows slower, so the two cross: at 2K near b = 135, at 8K near 29.
    Returns math.inf when they do not cross below ``max_batch``.
    """
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens)
    top = v.count("max_batch", max_batch)
    kw = dict(bytes_per_value=bytes_per_value)

    def under(b: int) -> bool:
        r = floored_round_time(m, hw, b, L, **kw)
        return r["roofline_s"] > r["fit_s"]

    if not under(top):
        return math.inf
    lo, hi = 0, top            # under(hi) holds; find the first b that is under
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if under(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)


@serves("8.2.4")
def floored_token_budget(itl_target_s: float, model: Model, hardware: Hardware,
                         decode_requests: int, context_tokens: int, history_tokens: int = 0, *,
                         captured_shapes=None, bytes_per_value: float = 2) -> int:
    """8.2.4's token budget with the round priced by ``floored_round_time``: the most new
    prompt tokens c whose round, max(fit, roofline), stays within the target (8.2.4, fuller).

    Never more than ``batching.token_budget_for_itl`` (the fit alone); 0 when the decode steps
    alone already exceed the target on the roofline.
    """
    target = v.positive("itl_target_s", itl_target_s)
    m = _model(model)
    hw = _hardware(hardware)
    b = v.tokens("decode_requests", decode_requests)
    L = v.tokens("context_tokens", context_tokens)
    h = v.tokens("history_tokens", history_tokens)
    kw = dict(captured_shapes=captured_shapes, bytes_per_value=bytes_per_value)

    def fits(c: int) -> bool:
        # the fit pads the rows to a captured graph; the roofline prices the real rows (a
        # padded row reads no KV, and its compute only matters where the pass is compute-bound)
        return floored_round_time(m, hw, b, L, c, h, **kw)["floored_s"] <= target * (1 + 1e-12)

    hi = token_budget_for_itl(target, b, L, h, captured_shapes=captured_shapes)
    if hi == 0 or not fits(0):
        return 0
    if fits(hi):
        return hi
    lo = 0                      # fits(lo), not fits(hi): bisect; the round grows with c
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


# --- 8.5.2: acceptance that differs from span to span ----------------------------------------

@serves("8.5.2", "8.5.4")
def spread_expected_tokens(acceptance: float, spread: float, draft_len: int) -> dict:
    """E[X] when half the rounds fall in easy spans and half in hard ones (8.5.2, fuller).

    The chapter's E[X] = 1 + a + ... + a^m takes one acceptance a for every round and position.
    Real text mixes spans a drafter copies well (a repeated name, code) with spans it cannot
    guess. Here half the rounds accept each position with a + s and half with a - s, so the
    mean acceptance is still a (s is capped at min(a, 1 - a) to keep both in [0, 1]), and
    E[X] = (E[X](a + s) + E[X](a - s)) / 2. Since 1 + a + ... + a^m is convex in a, the spread
    never lowers E[X]. Returns expected_tokens, chapter_expected_tokens, spread (as used),
    gain (the ratio), and the conditional acceptance of the second position, which the spread
    lifts above a (acceptances no longer independent of position).
    """
    a = v.probability("acceptance", acceptance)
    s = v.probability("spread", spread)
    m = v.tokens("draft_len", draft_len)
    s = min(s, a, 1.0 - a)
    hi, lo = a + s, a - s
    mixed = 0.5 * (speculative_expected_tokens(hi, m) + speculative_expected_tokens(lo, m))
    plain = speculative_expected_tokens(a, m)
    second = (0.5 * (hi * hi + lo * lo) / a) if a > 0 else 0.0
    return dict(expected_tokens=mixed, chapter_expected_tokens=plain, spread=s,
                gain=mixed / plain, second_position_acceptance=second)
