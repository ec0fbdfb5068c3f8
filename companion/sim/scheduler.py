"""Iteration-level scheduling simulator: static, continuous and chunked-prefill batching.

Reproduces 8.2.2's four-request example round by round (870 / 766 / 844 ms; longest output
intervals 26 / 376 / 133 ms), 8.2.4's token budget and CUDA-graph padding, and Chapter 17's
head-of-line stall (§3), static-batch utilisation and chunked prefill (§6).

Semantics (design.md §4, followed literally)
--------------------------------------------
* A *round* computes some new tokens for the running requests; its duration comes from a
  round-time model (below). Rounds run back to back; when nothing is running the clock jumps to
  the next arrival. Requests join and leave only at round boundaries, in arrival order.
* The round that computes the last prompt token emits the request's first token at the round's
  end; every later round gives the request one decode step (c = 1 new token on h cached tokens),
  which emits one token. The request leaves after its ``output_tokens``-th token.
* A request whose first ``cached_tokens`` prompt tokens are already in the KV cache (a cached
  shared prefix) computes only the rest, but its chunks attend to the cached history: c new
  tokens after h cached or computed ones add c h + c(c+1)/2 pairs and read h + c tokens of KV.
  With ``cached_tokens = 0`` (the default) this is the plain prefill above.
* ``"static"``: a group starts only when nothing is running; its prompts are prefilled together
  in one round; finished members drop out, but their slots stay idle until the group drains.
* ``"continuous"``: a freed slot is refilled at the next boundary; the newcomer's whole prompt
  runs in the same round as the others' decode steps.
* ``"chunked"``: each round first schedules one decode token per decoding request (each uses one
  token of ``token_budget``), then, in arrival order, gives each request still prefilling one
  chunk of min(chunk_tokens, its remaining prompt, budget left) tokens, skipping it when no budget
  is left.
* Output interval (ITL) = gap between consecutive tokens of one request (TTFT is not one). Total
  time (``makespan_s``) = end of the round that emits the last token, measured from t = 0.

Round-time models
-----------------
A round's work is summarised as a :class:`RoundWork` (decode steps, prefill tokens, rows executed
after CUDA-graph padding, causal query-key pairs, KV tokens read, tokens emitted). A model is any
object with ``time_s(work) -> seconds`` (the :class:`RoundTime` protocol); set ``vectorized =
True`` on it if ``time_s`` also accepts numpy arrays in the work's fields elementwise (then long
stretches of pure decode rounds are timed in one call). Three are provided:

* :class:`RoundTimeModel` -- 8.2.2's linear fit: fixed + per_token x rows + per_pair x pairs
  (26.22 ms, 30.4 us, 3 ns: ``RoundTimeModel.chapter8()``).
* :class:`RooflineRoundTime` -- any Model x Hardware: overhead + max(FLOPs / (mfu x peak),
  (D_w + KV bytes read) / (mbu x bandwidth)).
* :class:`StepPlusPrefillRoundTime` -- Chapter 17's model (and 8.1.1's measured timeline): a fixed
  decode-step time when the round has decode steps, plus a time per prefill token.

Performance
-----------
Per-request state is never looped over per round. Decoding requests are summarised by their count
and their total cached tokens (each decode step adds one token to every history, so a round's
pairs and KV reads follow from the sum); finishing rounds are known at the first token (a request
emits one token per round from then on) and kept in a heap. A stretch of pure decode rounds in
which nobody can join (until the next finish, or the next arrival when a slot is free) is stepped
with a scalar shortcut of the model's arithmetic, or, when long, timed in one vectorised call (its
pair counts form an arithmetic progression) whose clock is one cumulative sum; both add in the same
order as a round-by-round loop, so results are bit-identical to ``simulate(..., engine=
"reference")``, a plain per-request loop kept for checking. For the companion's own round-time
models the shortcuts evaluate the model's own formula: along a stretch a decode round's time is
(a + b x pairs) / c + e (the roofline's read or compute side, whichever dominates at both ends
of the stretch), with the same operations as ``time_s``. Round ends are stored in numpy blocks,
per-round integer columns as one record per stretch (expanded when first read), emission times as
each request's first-token round (``Result.token_times`` builds lists on demand); the arrivals to
come are one sorted list. benchmarks/bench_sim_scheduler.py prints the figures.

Interface for a load simulator (companion.sim.load)
---------------------------------------------------
Use :class:`Scheduler` directly::

    sched = Scheduler("chunked", max_running=64,
                      round_time=RooflineRoundTime(QWEN3_8B, RTX_PRO_6000),
                      chunk_tokens=2048, token_budget=8192, admit=my_admit, on_finish=my_finish)
    sched.add(requests)          # any order; ids unique over the whole run
    sched.add_many(arrival_s, prompt_tokens, output_tokens, cached_tokens=0)  # columns, bulk
    sched.run(until_s=10.0)      # executes every round that starts before 10 s
    sched.add(more_requests)     # arrivals must be >= the last until_s (the past is decided)
    sched.run()                  # to completion
    result = sched.result()      # a Result (also valid mid-run: tokens emitted so far)

* Admission is strictly in arrival order (ties: order of ``add``). At each boundary where a slot
  is free (static: when nothing is running) the head of the waiting queue is offered to
  ``admit(request, now_s, scheduler)``, which returns ``True``/``"admit"`` (admit it),
  ``False``/``"reject"`` (drop it; ``Result.rejected`` records when), ``None``/``"defer"`` (keep
  it at the head and stop admitting at this boundary), or a number ``retry_s > now_s`` (defer; also
  retry at the first boundary at or after ``retry_s``). A deferred head is offered again at the
  next boundary after any event: an arrival, a request finishing, or its retry time. Without
  ``admit`` every request is admitted as soon as a slot is free.
* ``on_finish(request, now_s, scheduler)`` is called when a request's last token is emitted
  (``now_s`` is that emission time), after its slot is freed: a load simulator frees KV there.
* While inside a callback, ``scheduler.running_count``, ``waiting_count``, ``now_s``,
  ``reserved_tokens`` (sum of prompt + output - 1 over running requests: the 8.1.2 end-of-life
  reservation, unrounded) and ``cached_tokens`` (KV tokens the running requests hold now) describe
  the state. A head deferred while nothing runs and nothing else can happen raises RuntimeError.
* Between ``run`` calls (not from inside a callback) a driver may also change the schedule at the
  current boundary ``now_s``:
  - ``cancel(id) -> tokens emitted``: a queued request leaves the queue, a running one stops being
    scheduled and frees its slot (8.6.1's cancellation; ``Result.cancelled`` records when);
  - ``preempt(id) -> tokens emitted``: a running request leaves the GPU (``Result.preempted``);
    to resume it by recompute, ``requeue_front(Request(new_id, now_s, prompt + emitted,
    output - emitted, cached_tokens))`` queues its continuation at the head of the queue;
  - ``requeue_front(request)``: a request that has arrived goes ahead of the waiting queue.
  And read: ``first_token_round(id)`` (-1 before the first token), ``request_state(id)``,
  ``rounds_done``, ``next_event_s`` (the next arrival or retry time: when idle, nothing happens
  before it), ``round_times()`` (start, duration, end of every round so far) and ``round_time``
  (the model). Cancelled and preempted requests keep the tokens they emitted in the Result.
* Result per request (arrival order, numpy arrays): ``result.requests_table()`` gives arrival,
  admission, first scheduled round start, first token, finish, TTFT, queueing, TPOT and longest
  ITL; ``result.itl_values_s()`` every ITL of every request (for percentiles); per round:
  ``result.round_start_s``, ``round_duration_s``, ``round_rows``, ``round_emitted``, ...
"""

from __future__ import annotations

import bisect
import heapq
import math
import numbers
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from companion import validate as v
# the chapters' inputs of the scheduling examples (companion.chapters), also read as sched.X
from companion.chapters.ch08 import (ROUND_FIXED_S, ROUND_PER_PAIR_S, ROUND_PER_TOKEN_S,
                                     SCHEDULE_EXAMPLE_CHUNK_TOKENS as CHAPTER_8_2_2_CHUNK_TOKENS,
                                     SCHEDULE_EXAMPLE_MAX_RUNNING as CHAPTER_8_2_2_MAX_RUNNING,
                                     REPLAY_INTERARRIVAL_S, REPLAY_REQUESTS,
                                     SCHEDULE_EXAMPLE_REQUESTS,
                                     SCHEDULE_EXAMPLE_TOKEN_BUDGET as CHAPTER_8_2_2_TOKEN_BUDGET)
from companion.chapters.ch17 import (DECODE_STEP_S as CH17_DECODE_STEP_S,
                                     LONG_CONTEXT_TOKENS as CH17_LONG_PROMPT_TOKENS,
                                     PREFILL_EFFICIENCY as CH17_PREFILL_MFU,
                                     SMOOTH_ITL_S as CH17_HOL_DECODE_STEP_S)
from companion.formulas.core import (attention_flops_per_pair, attention_pairs, kv_bytes_per_token,
                                     matrix_flops)
from companion.specs import H100_SXM, LLAMA_8B, Hardware, Model

__all__ = [
    "Request", "RoundWork", "RoundTime", "RoundTimeModel", "RooflineRoundTime",
    "StepPlusPrefillRoundTime", "Segment", "Round", "Result", "Scheduler", "simulate",
    "POLICIES", "ROUND_FIXED_S", "ROUND_PER_TOKEN_S", "ROUND_PER_PAIR_S",
    "chapter_8_2_2_requests", "CHAPTER_8_2_2_MAX_RUNNING", "CHAPTER_8_2_2_CHUNK_TOKENS",
    "CHAPTER_8_2_2_TOKEN_BUDGET", "token_budget_sweep", "long_prompt_interference",
    "CH17_DECODE_STEP_S", "CH17_HOL_DECODE_STEP_S", "CH17_PREFILL_MFU", "chapter17_round_time",
]

POLICIES = ("static", "continuous", "chunked")
ENGINES = ("fast", "reference")


# Below this many rounds a pure-decode stretch is stepped in Python (numpy's per-call overheads
# exceed the loop's); both give identical numbers.
_VECTOR_MIN_ROUNDS = 48


# --- requests --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """One request: id, arrival time (s), prompt tokens (>= 1), output tokens (>= 1), and how many
    leading prompt tokens are already in the KV cache (``cached_tokens``, default 0).

    A request with ``cached_tokens`` = C prefills only its last prompt_tokens - C tokens; their
    attention still covers the cached history (c h + c(c+1)/2 pairs with h counting the C cached
    tokens, and the KV reads of h + c tokens), as with a cached shared prefix (8.3.3, 8.6.3).
    C < prompt_tokens: the last prompt token is always computed, since its output is the first
    token.
    """

    id: object
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int = 0

    def __post_init__(self):
        rid = self.id
        if isinstance(rid, bool) or not isinstance(rid, (str, numbers.Integral)):
            raise TypeError(f"id: expected a str or int request id, got "
                            f"{type(rid).__name__} {rid!r}")
        if isinstance(rid, numbers.Integral):
            object.__setattr__(self, "id", int(rid))
        object.__setattr__(self, "arrival_s", v.nonnegative("arrival_s", self.arrival_s))
        object.__setattr__(self, "prompt_tokens",
                           v.tokens("prompt_tokens", self.prompt_tokens, minimum=1))
        object.__setattr__(self, "output_tokens",
                           v.tokens("output_tokens", self.output_tokens, minimum=1))
        cached = v.tokens("cached_tokens", self.cached_tokens)
        if cached >= self.prompt_tokens:
            raise ValueError(f"cached_tokens: {cached} must be < prompt_tokens="
                             f"{self.prompt_tokens} (the last prompt token is always computed: "
                             f"its output is the first token)")
        object.__setattr__(self, "cached_tokens", cached)


_new_object = object.__new__


def _request_unchecked(rid, arrival_s: float, prompt: int, output: int, cached: int) -> Request:
    """A Request from values already validated (in bulk, by ``Scheduler.add_many``)."""
    r = _new_object(Request)
    r.__dict__.update(id=rid, arrival_s=arrival_s, prompt_tokens=prompt, output_tokens=output,
                      cached_tokens=cached)
    return r


def _check_requests(name: str, requests, *, min_len: int = 1) -> list[Request]:
    seq = v.sequence(name, requests, min_len=min_len)
    out, seen = [], set()
    for i, r in enumerate(seq):
        v.instance(f"{name}[{i}]", r, Request, "a companion.sim.scheduler.Request")
        if r.id in seen:
            raise ValueError(f"{name}: duplicate request id {r.id!r} (at index {i})")
        seen.add(r.id)
        out.append(r)
    return out


# --- round work and round-time models ------------------------------------------------------

class RoundWork(NamedTuple):
    """What one round computes, summed over its requests (fields may be numpy arrays when a
    vectorised model times a stretch of rounds at once)."""

    decodes: int          # requests taking one decode step (one new token each)
    prefill_tokens: int   # prompt tokens computed (all chunks of the round)
    rows: int             # rows executed: decodes + prefill_tokens, padded to a captured shape
    pairs: int            # causal query-key pairs: sum of c h + c(c+1)/2 over the segments
    context_tokens: int   # KV tokens attention reads: sum of h + c over the segments
    emitted: int          # tokens emitted at the round's end (decodes + prompts completed)

    @property
    def new_tokens(self):
        """Tokens the round computes (before padding)."""
        return self.decodes + self.prefill_tokens

    @property
    def padding_rows(self):
        """Rows executed only because of CUDA-graph padding (8.2.4)."""
        return self.rows - self.decodes - self.prefill_tokens


@runtime_checkable
class RoundTime(Protocol):
    """A round-time model: ``time_s(work: RoundWork) -> seconds``."""

    def time_s(self, work: RoundWork) -> float: ...


@dataclass(frozen=True)
class RoundTimeModel:
    """8.2.2's linear round time: fixed_s + per_token_s x rows + per_pair_s x pairs.

    With the chapter's fit (26.22 ms, 30.4 us, 3 ns; :meth:`chapter8`) a lone 2048-token prefill
    (2048 rows, 2,098,176 pairs) takes 94.8 ms and a lone decode on 2048 cached tokens (1 row,
    2049 pairs) 26.26 ms. ``rows`` include CUDA-graph padding.
    """

    fixed_s: float
    per_token_s: float
    per_pair_s: float
    vectorized = True

    def __post_init__(self):
        for name in ("fixed_s", "per_token_s", "per_pair_s"):
            object.__setattr__(self, name, v.nonnegative(name, getattr(self, name)))
        if self.fixed_s + self.per_token_s <= 0:
            raise ValueError("per_token_s: with fixed_s = 0 it must be > 0, or a round could take "
                             "no time")

    @classmethod
    def chapter8(cls) -> "RoundTimeModel":
        """The fit of 8.2.2 (Experiment 8-1, batch 1, Qwen3-8B on the RTX PRO 6000)."""
        return cls(ROUND_FIXED_S, ROUND_PER_TOKEN_S, ROUND_PER_PAIR_S)

    def time_s(self, work: RoundWork):
        """Seconds for the round: fixed + per_token x rows + per_pair x pairs."""
        return self.fixed_s + self.per_token_s * work.rows + self.per_pair_s * work.pairs

    # Shortcuts the fast engine uses for its own models: the same operations in the same order
    # as time_s, so the times are bit-identical (tests/test_sim_scheduler.py checks them).
    def _round_fn(self):
        # (decodes, prefill, rows, pairs, context, emitted) -> time_s of that round
        f, pt, pp = self.fixed_s, self.per_token_s, self.per_pair_s
        return lambda decodes, prefill, rows, pairs, context, emitted: f + pt * rows + pp * pairs

    def _decode_fn(self, decodes: int, rows: int):
        # pairs -> time_s of a pure decode round
        c0, pp = self.fixed_s + self.per_token_s * rows, self.per_pair_s
        return lambda pairs: c0 + pp * pairs

    def _decode_linear(self, decodes: int, rows: int, lo: int, hi: int):
        # (a, b, c, e): time_s of a pure decode round is (a + b pairs) / c + e for pairs in
        # [lo, hi], bit for bit (x / 1.0 and x + 0.0 are exact)
        return self.fixed_s + self.per_token_s * rows, self.per_pair_s, 1.0, 0.0


class RooflineRoundTime:
    """Roofline round time of ``model`` on ``hardware``:
    overhead_s + max(FLOPs / (mfu x peak), (D_w + k x KV tokens read) / (mbu x bandwidth)).

    FLOPs = matrix_flops(model, rows) (layer matrices for every executed row, padding included)
    + the lm_head's matrix FLOPs for each emitted token + attention_flops_per_pair(model) x pairs;
    bytes = D_w (streamed_weight_bytes, read once per round) + kv_bytes_per_token x the KV tokens
    the round's attention reads. ``mbu``/``mfu`` scale the peaks down (8.2.1, 17 §2, §9).
    """

    vectorized = True

    def __init__(self, model: Model, hardware: Hardware, *, mbu: float = 1.0, mfu: float = 1.0,
                 overhead_s: float = 0.0, bytes_per_value: float = 2):
        self.model = v.instance("model", model, Model, "a companion.specs.Model")
        self.hardware = v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
        self.mbu = v.probability("mbu", mbu, open_low=True)
        self.mfu = v.probability("mfu", mfu, open_low=True)
        self.overhead_s = v.nonnegative("overhead_s", overhead_s)
        self.bytes_per_value = v.positive("bytes_per_value", bytes_per_value)
        # Per-unit constants, from the core closed forms (linear in rows / pairs / tokens read).
        self.flops_per_row = matrix_flops(model, 1)
        self.flops_per_emitted = matrix_flops(model, 1, include_lm_head=True) - self.flops_per_row
        self.flops_per_pair = attention_flops_per_pair(model)
        self.weight_bytes = model.streamed_weight_bytes
        self.kv_bytes_per_token = kv_bytes_per_token(model, bytes_per_value)
        self.flops_per_s = self.mfu * hardware.peak_flops_per_s
        self.bytes_per_s = self.mbu * hardware.mem_bw_bytes_per_s

    def __repr__(self):
        return (f"RooflineRoundTime({self.model.name!r}, {self.hardware.name!r}, mbu={self.mbu}, "
                f"mfu={self.mfu}, overhead_s={self.overhead_s})")

    def compute_s(self, work: RoundWork):
        """FLOPs / (mfu x peak)."""
        return (self.flops_per_row * work.rows + self.flops_per_emitted * work.emitted
                + self.flops_per_pair * work.pairs) / self.flops_per_s

    def read_s(self, work: RoundWork):
        """(D_w + KV bytes read) / (mbu x bandwidth)."""
        return ((self.weight_bytes + self.kv_bytes_per_token * work.context_tokens)
                / self.bytes_per_s)

    def time_s(self, work: RoundWork):
        """Seconds for the round: overhead + max(compute, read)."""
        c, r = self.compute_s(work), self.read_s(work)
        if type(c) is float and type(r) is float:
            return self.overhead_s + (c if c > r else r)
        return self.overhead_s + np.maximum(c, r)

    # Shortcuts the fast engine uses for its own models: the same operations in the same order
    # as time_s, so the times are bit-identical (tests/test_sim_scheduler.py checks them).
    def _round_fn(self):
        # (decodes, prefill, rows, pairs, context, emitted) -> time_s of that round
        fr, fe, fp, flops_per_s = (self.flops_per_row, self.flops_per_emitted,
                                   self.flops_per_pair, self.flops_per_s)
        w, kb, bytes_per_s, ov = (self.weight_bytes, self.kv_bytes_per_token, self.bytes_per_s,
                                  self.overhead_s)

        def fn(decodes, prefill, rows, pairs, context, emitted):
            c = (fr * rows + fe * emitted + fp * pairs) / flops_per_s
            r = (w + kb * context) / bytes_per_s
            return ov + (c if c > r else r)
        return fn

    def _decode_fn(self, decodes: int, rows: int):
        # pairs -> time_s of a pure decode round
        c1 = self.flops_per_row * rows + self.flops_per_emitted * decodes
        fp, flops_per_s = self.flops_per_pair, self.flops_per_s
        w, kb, bytes_per_s, ov = (self.weight_bytes, self.kv_bytes_per_token, self.bytes_per_s,
                                  self.overhead_s)

        def fn(pairs):
            c = (c1 + fp * pairs) / flops_per_s
            r = (w + kb * pairs) / bytes_per_s
            return ov + (c if c > r else r)
        return fn

    def _decode_linear(self, decodes: int, rows: int, lo: int, hi: int):
        # (a, b, c, e) with time_s = (a + b pairs) / c + e for every pure decode round with
        # pairs in [lo, hi], or None. Compute and read time are both linear in the pairs: when
        # one exceeds the other by a relative 1e-9 at both ends of the range it does so in
        # between, far beyond rounding error, so max() picks that one in every round; its
        # formula is then time_s bit for bit (overhead + x = x + overhead).
        c1 = self.flops_per_row * rows + self.flops_per_emitted * decodes
        fp, flops_per_s = self.flops_per_pair, self.flops_per_s
        w, kb, bytes_per_s = self.weight_bytes, self.kv_bytes_per_token, self.bytes_per_s
        c_lo, c_hi = (c1 + fp * lo) / flops_per_s, (c1 + fp * hi) / flops_per_s
        r_lo, r_hi = (w + kb * lo) / bytes_per_s, (w + kb * hi) / bytes_per_s
        if r_lo > c_lo * (1 + 1e-9) and r_hi > c_hi * (1 + 1e-9):
            return w, kb, bytes_per_s, self.overhead_s
        if c_lo > r_lo * (1 + 1e-9) and c_hi > r_hi * (1 + 1e-9):
            return c1, fp, flops_per_s, self.overhead_s
        return None

    def _decode_into(self, decodes: int, rows: int, pairs: np.ndarray, out: np.ndarray) -> None:
        # time_s of pure decode rounds with these pair counts, written into ``out``
        c1 = self.flops_per_row * rows + self.flops_per_emitted * decodes
        np.maximum((c1 + self.flops_per_pair * pairs) / self.flops_per_s,
                   (self.weight_bytes + self.kv_bytes_per_token * pairs) / self.bytes_per_s,
                   out=out)
        np.add(self.overhead_s, out, out=out)


@dataclass(frozen=True)
class StepPlusPrefillRoundTime:
    """Chapter 17's round: decode_step_s when the round has decode steps, plus prefill_token_s
    per prompt token computed in it.

    17 §3/§6: a 6.1 ms decode step and 2 x 8e9 FLOP per prompt token at 50% of the H100's 989
    TFLOP/s (32.4 us a token: 259 ms for 8,000 tokens, 16.6 ms for a 512-token chunk). 8.1.1's
    measured timeline is the same form (26.5 ms a step, 96 ms for a 2048-token prompt). The
    decode step does not grow with batch or context, and CUDA-graph padding is not charged.
    """

    decode_step_s: float
    prefill_token_s: float
    vectorized = True

    def __post_init__(self):
        object.__setattr__(self, "decode_step_s", v.positive("decode_step_s", self.decode_step_s))
        object.__setattr__(self, "prefill_token_s",
                           v.positive("prefill_token_s", self.prefill_token_s))

    @classmethod
    def from_hardware(cls, model: Model, hardware: Hardware, *, decode_step_s: float,
                      mfu: float = 0.5) -> "StepPlusPrefillRoundTime":
        """Prefill at ``mfu`` of the peak: prefill_token_s = matrix_flops(model, 1) / (mfu x peak)
        (17 §3: 2 x 8e9 / (0.5 x 989e12))."""
        v.instance("model", model, Model, "a companion.specs.Model")
        v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
        step = v.positive("decode_step_s", decode_step_s)
        f = v.probability("mfu", mfu, open_low=True)
        return cls(step, matrix_flops(model, 1) / (f * hardware.peak_flops_per_s))

    def time_s(self, work: RoundWork):
        """Seconds: decode_step_s x [decodes > 0] + prefill_token_s x prefill tokens."""
        return self.decode_step_s * (work.decodes > 0) + self.prefill_token_s * work.prefill_tokens

    # Shortcuts the fast engine uses for its own models (bit-identical to time_s).
    def _round_fn(self):
        # (decodes, prefill, rows, pairs, context, emitted) -> time_s of that round
        ds, pt = self.decode_step_s, self.prefill_token_s
        return lambda decodes, prefill, rows, pairs, context, emitted: (ds * (decodes > 0)
                                                                         + pt * prefill)

    def _decode_fn(self, decodes: int, rows: int):
        const = self.decode_step_s * (decodes > 0) + self.prefill_token_s * 0
        return lambda pairs: const

    def _decode_linear(self, decodes: int, rows: int, lo: int, hi: int):
        # (a, b, c, e): the round time (a + b pairs) / c + e, a constant (a + 0 = a)
        return self._decode_fn(decodes, rows)(0), 0, 1.0, 0.0




def chapter17_round_time(decode_step_s: float = CH17_DECODE_STEP_S) -> StepPlusPrefillRoundTime:
    """Chapter 17's round model: decode_step_s + prompt tokens x 2 x 8e9 / (0.5 x 989e12) s.

    17 §6: a 512-token chunk adds 16.6 ms to the 6.1 ms step (about 23 ms a round); 17 §3: an
    8,000-token prefill takes 259 ms.
    """
    step = v.positive("decode_step_s", decode_step_s)
    return StepPlusPrefillRoundTime.from_hardware(LLAMA_8B, H100_SXM, decode_step_s=step,
                                                  mfu=CH17_PREFILL_MFU)


class _CallableRoundTime:
    """Wraps a plain function ``f(work) -> seconds`` as a (non-vectorised) round-time model."""

    vectorized = False

    def __init__(self, fn):
        self.fn = fn

    def time_s(self, work):
        return self.fn(work)


def _round_time(round_time):
    if hasattr(round_time, "time_s") and callable(round_time.time_s):
        return round_time
    if callable(round_time):
        return _CallableRoundTime(round_time)
    raise TypeError(f"round_time: expected a round-time model with time_s(work) (e.g. "
                    f"RoundTimeModel.chapter8()), got {type(round_time).__name__} {round_time!r}")


def _duration(value, name="round_time"):
    d = float(value)
    if not math.isfinite(d) or d <= 0:
        raise ValueError(f"{name}: time_s returned {value!r}; a round must take a finite "
                         f"positive time")
    return d


_TRUSTED_MODELS = (RoundTimeModel, RooflineRoundTime, StepPlusPrefillRoundTime)


# --- configuration shared by both engines ----------------------------------------------------

@dataclass(frozen=True)
class _Config:
    policy: str
    max_running: int
    round_time: object
    chunk_tokens: float      # math.inf when unlimited
    token_budget: float      # math.inf when unlimited
    shapes: tuple
    admit: object
    on_finish: object


def _config(policy, max_running, round_time, chunk_tokens, token_budget, captured_shapes,
            admit, on_finish) -> _Config:
    policy = v.choice("policy", policy, POLICIES)
    max_running = v.count("max_running", max_running)
    rt = _round_time(round_time)
    chunk = math.inf if chunk_tokens is None else v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    budget = math.inf if token_budget is None else v.tokens("token_budget", token_budget, minimum=1)
    shapes: tuple = ()
    if captured_shapes is not None:
        seq = v.sequence("captured_shapes", captured_shapes)
        shapes = tuple(sorted({v.count(f"captured_shapes[{i}]", s) for i, s in enumerate(seq)}))
    if policy == "chunked":
        if chunk_tokens is None and token_budget is None:
            raise ValueError("chunk_tokens: policy 'chunked' needs chunk_tokens and/or "
                             "token_budget")
        if budget < max_running:
            raise ValueError(f"token_budget: {token_budget} is smaller than max_running="
                             f"{max_running}; every running request's decode token must fit")
    else:
        if chunk_tokens is not None:
            raise ValueError(f"chunk_tokens: only policy 'chunked' splits prompts (policy is "
                             f"{policy!r})")
        if token_budget is not None:
            raise ValueError(f"token_budget: only policy 'chunked' uses a token budget (policy "
                             f"is {policy!r})")
    if admit is not None and not callable(admit):
        raise TypeError(f"admit: expected a callable or None, got {type(admit).__name__}")
    if on_finish is not None and not callable(on_finish):
        raise TypeError(f"on_finish: expected a callable or None, got {type(on_finish).__name__}")
    return _Config(policy, max_running, rt, chunk, budget, shapes, admit, on_finish)


def _padder(shapes: tuple):
    """rows -> rows executed: the smallest captured shape >= rows; beyond the largest, unpadded."""
    if not shapes:
        return lambda n: n
    cache: dict = {}
    top = shapes[-1]

    def pad(n):
        r = cache.get(n)
        if r is None:
            r = shapes[bisect.bisect_left(shapes, n)] if n <= top else n
            cache[n] = r
        return r
    return pad


def _decision(value, now_s: float):
    """Normalise an admit() answer to ("admit"|"reject"|"defer", retry_s)."""
    if isinstance(value, (bool, np.bool_)):
        return ("admit" if value else "reject"), math.inf
    if value is None:
        return "defer", math.inf
    if isinstance(value, str) and value in ("admit", "reject", "defer"):
        return value, math.inf
    if isinstance(value, numbers.Real):
        retry = float(value)
        if not retry > now_s or math.isnan(retry):
            raise ValueError(f"admit: returned retry time {value!r}, which is not after now_s="
                             f"{now_s!r}")
        return "defer", retry
    raise ValueError(f"admit: expected True/'admit', False/'reject', None/'defer' or a retry "
                     f"time, got {value!r}")


# --- the fast engine ---------------------------------------------------------------------------

# Where a request stands (Scheduler._state); "queued" is pending (not yet arrived) or waiting.
_QUEUED, _RUNNING, _FINISHED, _REJECTED, _CANCELLED, _PREEMPTED = range(6)
_STATE_NAMES = {_FINISHED: "finished", _REJECTED: "rejected", _CANCELLED: "cancelled",
                _PREEMPTED: "preempted"}


def _bulk_column(name: str, values, n: int | None, *, whole: bool, minimum: float) -> np.ndarray:
    """A column of ``n`` finite real numbers >= minimum (whole ones if ``whole``) from a scalar
    or a sequence, validated at once (for ``Scheduler.add_many``)."""
    if isinstance(values, numbers.Real) and not isinstance(values, (bool, np.bool_)):
        if n is None:
            raise TypeError(f"{name}: expected a sequence, got {type(values).__name__}")
        x = (v.integer(name, values, minimum=int(minimum), what="a whole number of tokens")
             if whole else v.number(name, values, at_least=minimum))
        return np.full(n, x, dtype=np.int64 if whole else np.float64)
    seq = v.sequence(name, values, min_len=0)
    arr = np.asarray(seq)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name}: has {arr.size} items but arrival_s has {n}")
    if arr.dtype.kind not in "iuf" or (
            not isinstance(seq, np.ndarray) and any(isinstance(x, bool) for x in seq)):
        bad = next((i for i, x in enumerate(seq) if isinstance(x, (bool, np.bool_))
                    or not isinstance(x, numbers.Real)), 0)
        raise TypeError(f"{name}[{bad}]: expected a number, got {type(seq[bad]).__name__} "
                        f"{seq[bad]!r}")
    f = arr.astype(np.float64)
    bad = ~np.isfinite(f)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{name}[{k}]: expected a finite number, got {seq[k]!r}")
    if whole:
        frac = f != np.floor(f)
        if frac.any():
            k = int(np.argmax(frac))
            raise ValueError(f"{name}[{k}]: must be a whole number of tokens, got {seq[k]!r}")
    low = f < minimum
    if low.any():
        k = int(np.argmax(low))
        raise ValueError(f"{name}[{k}]: must be >= {minimum:g}, got {seq[k]!r}")
    return f.astype(np.int64) if whole else f


class Scheduler:
    """An incremental scheduler: ``add`` requests, ``run`` (optionally ``until_s``), ``result``.

    See the module docstring for the semantics, the admission callback and ``on_finish``;
    between ``run`` calls a driver may also ``cancel``, ``preempt`` and ``requeue_front``
    requests and read ``first_token_round``, ``next_event_s`` and ``request_state``.
    ``simulate`` is the one-shot wrapper.
    """

    def __init__(self, policy: str, *, max_running: int, round_time, chunk_tokens=None,
                 token_budget=None, captured_shapes=None, admit=None, on_finish=None):
        self._cfg = _config(policy, max_running, round_time, chunk_tokens, token_budget,
                            captured_shapes, admit, on_finish)
        rt = self._cfg.round_time
        self._pad = _padder(self._cfg.shapes)
        self._static = self._cfg.policy == "static"
        self._vector = bool(getattr(rt, "vectorized", False))
        # the companion's own models give finite positive times, non-decreasing along a decode
        # stretch, and scalar shortcuts with the same arithmetic (``_round_fn``, ``_decode_fn``)
        self._trusted = type(rt) in _TRUSTED_MODELS
        if self._trusted:
            self._round_s = rt._round_fn()
        else:
            def round_s(*work):
                return _duration(rt.time_s(RoundWork(*work)))
            self._round_s = round_s
        self._decode_fns: dict = {}            # decodes -> (rows, pairs -> round time)
        # per request (index = order of add)
        self._reqs: list[Request] = []
        self._index: dict = {}                 # id -> index
        self._state: list[int] = []
        self._first_token: list[int] = []      # round index of the first token, -1 before
        self._first_sched: list[int] = []      # round index of the first prompt chunk, -1 before
        self._admitted_s: list[float] = []
        self._rejected: dict[int, float] = {}
        self._cancelled: dict[int, float] = {}
        self._preempted: dict[int, float] = {}
        self._stopped_emitted: dict[int, int] = {}   # tokens emitted by a cancelled/preempted one
        # rounds: durations and ends of round j at index j + 1 of two growing numpy buffers
        # (index 0 is scratch), the latest scalar rounds in Python lists until the next
        # vectorised stretch (or a read) copies them in; the integer columns as one record per
        # mixed round or per decode stretch
        self._n_rounds = 0
        self._dur: list[float] = []
        self._end: list[float] = []
        self._dur_buf = np.empty(64)
        self._end_buf = np.empty(64)
        self._jumps: list[tuple] = []          # (round, start) of rounds that do not start at
        self._jumped = True                    # the previous round's end (after idle time)
        self._mixed: list[tuple] = []          # (round, decodes, prefill, rows, pairs, context,
        #                                         emitted, held slots) of rounds with prompt work
        self._stretches: list[tuple] = []      # (first round, rounds, decodes, first round's
        #                                         pairs, rows, held slots) of pure decode rounds
        self._chunks: list[tuple] = []         # (round, request, tokens, history) prompt chunks
        # state
        self._t = 0.0
        self._horizon = 0.0
        self._in_run = False
        self._pend_t: list[float] = []         # not yet arrived, sorted by (arrival, add order):
        self._pend_i: list[int] = []           # arrival times and indices, consumed from
        self._pnext = 0                        # position _pnext on
        self._waiting: deque = deque()         # arrived, not admitted, arrival order
        self._blocked = False                  # the head was deferred
        self._retry_s = math.inf               # ... and asked to be retried at this time
        self._prefilling: list[list] = []      # [index, prompt tokens in the KV cache], by
        #                                         admission
        self._n_dec = 0                        # decoding requests
        self._sum_h = 0                        # their cached tokens, summed
        self._finish_heap: list[tuple] = []    # (round index of the last token, index)
        self._n_running = 0
        self._group = 0                        # static: slots the current group holds
        self._reserved = 0

    # -- state visible to callbacks and drivers --
    @property
    def now_s(self) -> float:
        """The current boundary (seconds)."""
        return self._t

    @property
    def running_count(self) -> int:
        return self._n_running

    @property
    def waiting_count(self) -> int:
        """Arrived requests not yet admitted."""
        return len(self._waiting)

    @property
    def reserved_tokens(self) -> int:
        """Sum of prompt + output - 1 over the running requests (8.1.2's end-of-life KV)."""
        return self._reserved

    @property
    def cached_tokens(self) -> int:
        """KV tokens the running requests hold now (cached and computed prompt tokens + outputs
        fed back)."""
        return self._sum_h + sum(done for _, done in self._prefilling)

    @property
    def rounds_done(self) -> int:
        """Rounds executed so far."""
        return self._n_rounds

    @property
    def round_time(self):
        """The round-time model in use (a plain function given as round_time comes wrapped in
        an object with ``time_s(work)``)."""
        return self._cfg.round_time

    @property
    def next_event_s(self) -> float:
        """The earliest future time at which an admission could become possible: the next
        arrival, or the retry time a deferred head asked for; inf when there is none."""
        return self._next_event()

    def _lookup(self, request_id) -> int:
        try:
            return self._index[request_id]
        except (KeyError, TypeError):
            raise ValueError(f"request_id: no request {request_id!r} was added") from None

    def first_token_round(self, request_id) -> int:
        """Index of the round that emitted the request's first token (-1 before it)."""
        return self._first_token[self._lookup(request_id)]

    def request_state(self, request_id) -> str:
        """Where a request stands: "pending" (not yet arrived), "waiting", "prefilling",
        "decoding", "finished", "rejected", "cancelled" or "preempted"."""
        i = self._lookup(request_id)
        st = self._state[i]
        if st == _QUEUED:
            return "waiting" if i in self._waiting else "pending"
        if st == _RUNNING:
            return "decoding" if self._first_token[i] >= 0 else "prefilling"
        return _STATE_NAMES[st]

    # -- input --
    def add(self, requests) -> None:
        """Queue requests (a Request or a sequence of them); arrivals must not precede the
        horizon of the last ``run(until_s)``, and ids must be new. May be called from a
        callback (a closed-loop client adding its next request when one finishes)."""
        if isinstance(requests, Request):
            requests = [requests]
        self._add_checked(_check_requests("requests", requests, min_len=0))

    def add_many(self, arrival_s, prompt_tokens, output_tokens, *, cached_tokens=0,
                 ids=None) -> list:
        """Queue many requests given as columns (numpy arrays or sequences; a scalar token
        count applies to all); return their ids, by default consecutive integers from the
        number of requests added so far.

        Validated as whole columns (the same rules as Request's, and those of ``add``), so a
        10,000-request trace is queued without checking 10,000 Requests one field at a time.
        """
        arrivals = _bulk_column("arrival_s", arrival_s, None, whole=False, minimum=0.0)
        n = arrivals.size
        prompts = _bulk_column("prompt_tokens", prompt_tokens, n, whole=True, minimum=1)
        outputs = _bulk_column("output_tokens", output_tokens, n, whole=True, minimum=1)
        cached = _bulk_column("cached_tokens", cached_tokens, n, whole=True, minimum=0)
        over = cached >= prompts
        if over.any():
            k = int(np.argmax(over))
            raise ValueError(f"cached_tokens[{k}]: {cached[k]} must be < prompt_tokens="
                             f"{prompts[k]} (the last prompt token is always computed)")
        early = arrivals < self._horizon
        if early.any():
            k = int(np.argmax(early))
            raise ValueError(f"arrival_s[{k}]: {arrivals[k]!r} s is before the simulated "
                             f"horizon {self._horizon} s")
        if ids is None:
            start = len(self._reqs)
            id_list = list(range(start, start + n))
        else:
            seq = v.sequence("ids", ids, min_len=0)
            if len(seq) != n:
                raise ValueError(f"ids: has {len(seq)} items but arrival_s has {n}")
            id_list = []
            for k, rid in enumerate(seq):
                if (isinstance(rid, (bool, np.bool_))
                        or not isinstance(rid, (str, numbers.Integral))):
                    raise TypeError(f"ids[{k}]: expected a str or int request id, got "
                                    f"{type(rid).__name__} {rid!r}")
                id_list.append(rid if isinstance(rid, str) else int(rid))
            if len(set(id_list)) != n:
                raise ValueError("ids: duplicate request id")
        index = self._index
        clash = next((rid for rid in id_list if rid in index), None)
        if clash is not None:
            raise ValueError(f"ids: duplicate request id {clash!r} (already added)")
        reqs = list(map(_request_unchecked, id_list, arrivals.tolist(), prompts.tolist(),
                        outputs.tolist(), cached.tolist()))
        self._register(reqs)
        return id_list

    def _add_checked(self, reqs: list) -> None:
        index, seen = self._index, set()
        for r in reqs:
            if r.id in index or r.id in seen:
                raise ValueError(f"requests: duplicate request id {r.id!r}")
            seen.add(r.id)
            if r.arrival_s < self._horizon:
                raise ValueError(f"requests: request {r.id!r} arrives at {r.arrival_s} s, before "
                                 f"the simulated horizon {self._horizon} s")
        self._register(reqs)

    def _register(self, reqs: list, *, pending: bool = True) -> None:
        """Append validated requests to the per-request state (and to the arrivals to come)."""
        start = len(self._reqs)
        n = len(reqs)
        self._reqs.extend(reqs)
        self._index.update(zip([r.id for r in reqs], range(start, start + n)))
        self._state.extend([_QUEUED] * n)
        self._first_token.extend([-1] * n)
        self._first_sched.extend([-1] * n)
        self._admitted_s.extend([math.nan] * n)
        if not pending or not n:
            return
        # merge with the arrivals still to come: a stable sort by arrival keeps ties in the
        # order of add (the earlier adds come first in the list)
        k = self._pnext
        times = self._pend_t[k:] + [r.arrival_s for r in reqs]
        idx = self._pend_i[k:] + list(range(start, start + n))
        if any(a > b for a, b in zip(times, times[1:])):
            order = sorted(range(len(times)), key=times.__getitem__)   # stable
            times = [times[x] for x in order]
            idx = [idx[x] for x in order]
        self._pend_t, self._pend_i, self._pnext = times, idx, 0

    # -- a driver's interventions (between run calls) --
    def _check_not_running(self, what: str) -> None:
        if self._in_run:
            raise RuntimeError(f"{what}: not allowed inside a callback while run() executes; "
                               f"stop the run (run(until_s=...)) and call it between runs")

    def cancel(self, request_id) -> int:
        """Remove a request that has not finished, at the current boundary; return the tokens
        it had emitted (0 unless it was decoding).

        A queued request leaves the queue; a running one stops being scheduled (its slot is
        free for the next admission; the round that just ended counted in full). Its tokens so
        far stay in the Result; ``Result.cancelled`` records when. 8.6.1's cancellation.
        """
        self._check_not_running("cancel")
        i = self._lookup(request_id)
        st = self._state[i]
        if st == _QUEUED:
            try:
                self._waiting.remove(i)
                self._blocked = False          # a change in the queue: offer the head again
            except ValueError:
                k = self._pend_i.index(i, self._pnext)
                del self._pend_i[k], self._pend_t[k]
            emitted = 0
        elif st == _RUNNING:
            emitted = self._stop(i)
        else:
            raise ValueError(f"request_id: request {request_id!r} is {_STATE_NAMES[st]}; only "
                             f"a queued or running request can be cancelled")
        self._state[i] = _CANCELLED
        self._cancelled[i] = self._t
        return emitted

    def preempt(self, request_id) -> int:
        """Take a running request off the GPU at the current boundary; return the tokens it had
        emitted.

        Its slot is freed and nothing of it is rescheduled: to resume it by recompute (8.3.2,
        17 §5) queue a new request with ``requeue_front``, whose prompt is the old prompt plus
        the emitted tokens and whose output is what remains. ``Result.preempted`` records when.
        """
        self._check_not_running("preempt")
        i = self._lookup(request_id)
        if self._state[i] != _RUNNING:
            raise ValueError(f"request_id: request {request_id!r} is not running "
                             f"({self.request_state(request_id)}); only a running request can "
                             f"be preempted")
        emitted = self._stop(i)
        self._state[i] = _PREEMPTED
        self._preempted[i] = self._t
        return emitted

    def _stop(self, i: int) -> int:
        """Remove running request i from the running set; return the tokens it emitted."""
        r = self._reqs[i]
        for k, item in enumerate(self._prefilling):
            if item[0] == i:
                del self._prefilling[k]
                emitted = 0
                break
        else:
            f = self._first_token[i]
            emitted = self._n_rounds - f
            heap = self._finish_heap
            heap.remove((f + r.output_tokens - 1, i))
            heapq.heapify(heap)
            self._n_dec -= 1
            self._sum_h -= r.prompt_tokens + emitted - 1
        self._stopped_emitted[i] = emitted
        self._n_running -= 1
        self._reserved -= r.prompt_tokens + r.output_tokens - 1
        self._blocked = False                  # a slot was freed: offer the head again
        if self._n_running == 0:
            self._group = 0
        return emitted

    def requeue_front(self, request: Request) -> None:
        """Queue a new request that has already arrived (arrival_s <= now_s) at the head of
        the waiting queue, ahead of earlier arrivals: it is offered first at the next boundary.

        The way back for a preempted request (``preempt``), as recompute preemption does.
        """
        self._check_not_running("requeue_front")
        v.instance("request", request, Request, "a companion.sim.scheduler.Request")
        if request.id in self._index:
            raise ValueError(f"request: duplicate request id {request.id!r}")
        if request.arrival_s > self._t:
            raise ValueError(f"request: arrives at {request.arrival_s} s, after now_s="
                             f"{self._t} s; requeue_front queues a request that has arrived")
        self._register([request], pending=False)
        self._waiting.appendleft(len(self._reqs) - 1)
        self._blocked = False

    # -- admission and finishing --
    def _pull_arrivals(self, t: float) -> None:
        k, times = self._pnext, self._pend_t
        if k < len(times) and times[k] <= t:
            e = bisect.bisect_right(times, t, k)
            self._waiting.extend(self._pend_i[k:e])
            self._pnext = e
            self._blocked = False

    def _admit(self, t: float) -> None:
        cfg = self._cfg
        if self._static and self._n_running:
            return
        if self._blocked:
            if t < self._retry_s:
                return
            self._blocked = False
        free = cfg.max_running - self._n_running
        waiting = self._waiting
        admit = cfg.admit
        reqs, state = self._reqs, self._state
        admitted = 0
        while free > 0 and waiting:
            i = waiting[0]
            r = reqs[i]
            if admit is not None:
                answer = admit(r, t, self)
                if answer is None:                        # the common "wait": defer
                    self._blocked, self._retry_s = True, math.inf
                    break
                if answer is not True:
                    kind, retry = _decision(answer, t)
                    if kind == "reject":
                        waiting.popleft()
                        self._rejected[i] = t
                        state[i] = _REJECTED
                        continue
                    if kind == "defer":
                        self._blocked, self._retry_s = True, retry
                        break
            waiting.popleft()
            self._prefilling.append([i, r.cached_tokens])
            self._admitted_s[i] = t
            state[i] = _RUNNING
            self._n_running += 1
            self._reserved += r.prompt_tokens + r.output_tokens - 1
            free -= 1
            admitted += 1
        if self._static and admitted:
            self._group = self._n_running

    def _next_event(self) -> float:
        """Earliest future time at which an admission could become possible."""
        k = self._pnext
        e = self._pend_t[k] if k < len(self._pend_t) else math.inf
        if self._waiting and self._blocked and self._retry_s < e:
            e = self._retry_s
        return e

    def _finish(self, i: int, end: float) -> None:
        r = self._reqs[i]
        self._state[i] = _FINISHED
        self._n_running -= 1
        self._reserved -= r.prompt_tokens + r.output_tokens - 1
        self._blocked = False
        if self._n_running == 0:
            self._group = 0
        if self._cfg.on_finish is not None:
            self._cfg.on_finish(r, end, self)

    def _pop_finished(self, j: int, end: float) -> None:
        heap = self._finish_heap
        while heap and heap[0][0] == j:
            i = heapq.heappop(heap)[1]
            r = self._reqs[i]
            self._n_dec -= 1
            self._sum_h -= r.prompt_tokens + r.output_tokens - 1
            self._finish(i, end)

    # -- rounds --
    def _mixed_round(self, t: float) -> None:
        """One round with prompt work (and the decode steps of everyone already decoding)."""
        cfg = self._cfg
        j = self._n_rounds
        if self._jumped:
            self._jumps.append((j, t))
            self._jumped = False
        n_dec, sum_h = self._n_dec, self._sum_h
        budget = cfg.token_budget - n_dec
        chunk = cfg.chunk_tokens
        pairs = ctx = sum_h + n_dec
        pre = 0
        completed = []
        reqs = self._reqs
        first_sched = self._first_sched
        chunks_append = self._chunks.append
        for item in self._prefilling:
            if budget <= 0:
                break
            i, done = item
            p = reqs[i].prompt_tokens
            c = p - done
            if c > chunk:
                c = chunk
            if c > budget:
                c = budget
            pairs += c * done + c * (c + 1) // 2
            ctx += done + c
            pre += c
            budget -= c
            chunks_append((j, i, c, done))
            if first_sched[i] < 0:
                first_sched[i] = j
            item[1] = done + c
            if done + c == p:
                completed.append(item)
        rows = self._pad(n_dec + pre)
        emitted = n_dec + len(completed)
        d = self._round_s(n_dec, pre, rows, pairs, ctx, emitted)
        end = t + d
        self._dur.append(d)
        self._end.append(end)
        self._n_rounds = j + 1
        self._mixed.append((j, n_dec, pre, rows, pairs, ctx, emitted,
                            self._group if self._static else self._n_running))
        self._sum_h = sum_h + n_dec
        self._t = end
        if completed:
            prefilling = self._prefilling
            for item in completed:
                prefilling.remove(item)
                i = item[0]
                r = reqs[i]
                self._first_token[i] = j
                if r.output_tokens == 1:
                    self._finish(i, end)
                else:
                    self._n_dec += 1
                    self._sum_h += r.prompt_tokens
                    heapq.heappush(self._finish_heap, (j + r.output_tokens - 1, i))
        if self._finish_heap and self._finish_heap[0][0] == j:
            self._pop_finished(j, end)

    def _flush(self, room: int = 0) -> None:
        """Copy the Python round lists into the numpy buffers, which then have space for
        ``room`` more rounds."""
        m = len(self._end)
        need = self._n_rounds + 1 + room
        if need > self._end_buf.size:
            size = max(need, 2 * self._end_buf.size)
            for name in ("_dur_buf", "_end_buf"):
                old = getattr(self, name)
                new = np.empty(size)
                new[:old.size] = old
                setattr(self, name, new)
        if m:
            a = self._n_rounds + 1 - m
            self._dur_buf[a:a + m] = self._dur
            self._end_buf[a:a + m] = self._end
            self._dur, self._end = [], []

    def _decode_model(self, n: int) -> tuple:
        """(rows, pairs -> seconds) of a pure decode round of ``n`` requests (cached per n)."""
        rows = self._pad(n)
        rt = self._cfg.round_time
        if self._trusted:
            fn = rt._decode_fn(n, rows)
        else:
            def fn(pairs):
                return _duration(rt.time_s(RoundWork(n, 0, rows, pairs, pairs, n)))
        self._decode_fns[n] = entry = (rows, fn)
        return entry

    def _decode_stretch(self, t: float, horizon: float) -> None:
        """Pure decode rounds until the first finish, or the first boundary at which an admission
        could happen (an arrival or retry time with a slot free), or the horizon."""
        j0 = self._n_rounds
        if self._jumped:
            self._jumps.append((j0, t))
            self._jumped = False
        n = self._n_dec
        k_finish = k_max = self._finish_heap[0][0] - j0 + 1
        cut = horizon
        if not self._static and self._n_running < self._cfg.max_running:
            e = self._next_event()
            if e < cut:
                cut = e
        rows, fn = self._decode_fns.get(n) or self._decode_model(n)
        base = self._sum_h + n
        rt = self._cfg.round_time
        linear = None
        if self._trusted:
            if k_max >= _VECTOR_MIN_ROUNDS and cut < math.inf:
                # Round times only grow along a stretch (pairs grow), so the first round's time
                # bounds how many rounds can end before the cut. Stopping a stretch early changes
                # nothing: the next boundary admits nobody, since nothing has arrived yet.
                k_max = min(k_max, int((cut - t) / fn(base)) + 2)
        vectorised = self._vector and k_max >= _VECTOR_MIN_ROUNDS
        if self._trusted and (vectorised or k_max >= 16):
            # the model's round time as (a + b pairs) / c + e over this stretch, when it is
            # (worth finding out for more than a few rounds)
            linear = rt._decode_linear(n, rows, base, base + n * (k_max - 1))
        if vectorised:
            self._flush(k_max)
            durs, ends = self._dur_buf, self._end_buf
            d = durs[j0 + 1:j0 + 1 + k_max]               # rounds j0 ... j0 + k_max - 1
            if linear is not None:
                a, b, c, e = linear
                if type(b) is int:                        # b x pairs, exact, in one step
                    if b:
                        np.add(a, np.arange(b * base, b * (base + n * k_max), b * n), out=d)
                    else:
                        d.fill(a)                         # a + 0 = a
                else:
                    np.add(a, b * np.arange(base, base + n * k_max, n), out=d)
                np.divide(d, c, out=d)
                if e:
                    np.add(d, e, out=d)
            else:
                p = np.arange(base, base + n * k_max, n, dtype=np.int64)
                if self._trusted:
                    rt._decode_into(n, rows, p, d)
                else:
                    d[:] = rt.time_s(RoundWork(n, 0, rows, p, p, n))   # a constant broadcasts
                    ok = (d > 0) & (d < math.inf)
                    if not ok.all():
                        _duration(d[~ok][0])
            # the clock: t, then t + d0, + d1, ... added in round order as a loop would, by a
            # cumulative sum that starts at slot j0 (the previous round's, restored after)
            keep_d, keep_e = durs[j0], ends[j0]
            durs[j0] = t
            durs[j0:j0 + 1 + k_max].cumsum(out=ends[j0:j0 + 1 + k_max])
            durs[j0], ends[j0] = keep_d, keep_e
            k = k_max
            if cut < math.inf:
                k = min(k_max, int(ends[j0 + 1:j0 + 1 + k_max].searchsorted(cut)) + 1)
            end = float(ends[j0 + k])
        else:
            dur_append, end_append = self._dur.append, self._end.append
            k = 0
            end = t
            p = base
            if linear is not None:
                a, b, c, e = linear
                while k < k_max:
                    d = (a + b * p) / c + e
                    end = t + d
                    dur_append(d)
                    end_append(end)
                    t = end
                    p += n
                    k += 1
                    if end >= cut:
                        break
            else:
                while k < k_max:
                    d = fn(p)
                    end = t + d
                    dur_append(d)
                    end_append(end)
                    t = end
                    p += n
                    k += 1
                    if end >= cut:
                        break
        self._n_rounds = j0 + k
        self._stretches.append((j0, k, n, base, rows,
                                self._group if self._static else self._n_running))
        self._sum_h += n * k
        self._t = end
        if k == k_finish:
            self._pop_finished(j0 + k - 1, end)

    def run(self, until_s: float | None = None) -> "Scheduler":
        """Execute rounds (all of them, or those starting before ``until_s``); returns self."""
        horizon = math.inf if until_s is None else v.nonnegative("until_s", until_s)
        self._check_not_running("run")
        self._in_run = True
        try:
            self._run(horizon)
        finally:
            self._in_run = False
        if until_s is not None:
            self._horizon = max(self._horizon, horizon)
        return self

    def _run(self, horizon: float) -> None:
        while True:
            t = self._t
            if t >= horizon:
                break
            k = self._pnext
            if k < len(self._pend_t) and self._pend_t[k] <= t:
                self._pull_arrivals(t)
            if self._waiting:
                self._admit(t)
            if self._n_running == 0:
                e = self._next_event()
                if e == math.inf:
                    if self._waiting:
                        r = self._reqs[self._waiting[0]]
                        raise RuntimeError(f"admit: request {r.id!r} was deferred while nothing "
                                           f"is running and nothing else can arrive; reject it "
                                           f"or return a retry time")
                    break
                if e >= horizon:
                    break
                if e > t:
                    self._t = e
                    self._jumped = True
                continue
            if self._prefilling:
                self._mixed_round(t)
            else:
                self._decode_stretch(t, horizon)

    def _round_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, duration, end) of every round so far."""
        self._flush()
        n = self._n_rounds
        ends, durs = self._end_buf[1:n + 1], self._dur_buf[1:n + 1]
        starts = np.empty(len(ends))
        starts[1:] = ends[:-1]
        for j, t in self._jumps:
            starts[j] = t
        return starts, durs, ends

    def round_times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start_s, duration_s, end_s) of every round so far, as read-only numpy arrays (what
        ``result()`` reports, without building per-request records)."""
        out = []
        for arr in self._round_arrays():
            view = arr.view()
            view.flags.writeable = False
            out.append(view)
        return tuple(out)

    def result(self) -> "Result":
        """The rounds and emissions so far, as a Result (arrival-ordered requests)."""
        reqs = self._reqs
        n_req = len(reqs)
        arrivals = [r.arrival_s for r in reqs]
        order = sorted(range(n_req), key=arrivals.__getitem__)   # stable: ties in order of add
        chunks = np.array(self._chunks, dtype=np.int64).reshape(-1, 4)
        if len(chunks):
            remap = np.empty(n_req, dtype=np.int64)
            remap[order] = np.arange(n_req)
            chunks[:, 1] = remap[chunks[:, 1]]
        starts, durs, ends = self._round_arrays()
        durs, ends = durs.copy(), ends.copy()             # the buffers go on growing
        n = len(ends)
        mixed, stretches = list(self._mixed), list(self._stretches)
        stopped = None
        if self._stopped_emitted:
            stopped = [self._stopped_emitted.get(i, -1) for i in order]
        first_token, first_sched, admitted = self._first_token, self._first_sched, self._admitted_s
        return Result(
            policy=self._cfg.policy,
            requests=[reqs[i] for i in order],
            round_start_s=starts, round_duration_s=durs, round_end_s=ends,
            columns=lambda: _columns_from_blocks(
                n, np.array(mixed, dtype=np.int64).reshape(-1, 8),
                np.array(stretches, dtype=np.int64).reshape(-1, 6)),
            first_token_round=[first_token[i] for i in order],
            first_scheduled_round=[first_sched[i] for i in order],
            admitted_s=[admitted[i] for i in order],
            chunks=chunks,
            rejected={reqs[i].id: s for i, s in self._rejected.items()},
            cancelled={reqs[i].id: s for i, s in self._cancelled.items()},
            preempted={reqs[i].id: s for i, s in self._preempted.items()},
            stopped_emitted=stopped,
        )


_COLUMNS = ("decodes", "prefill_tokens", "rows", "pairs", "context_tokens", "emitted",
            "held_slots")


def _columns_from_blocks(n: int, mixed: np.ndarray, stretches: np.ndarray) -> dict:
    """Per-round integer columns from the fast engine's records (built when first asked for)."""
    cols = {name: np.zeros(n, dtype=np.int64) for name in _COLUMNS}
    if len(mixed):
        for c, name in enumerate(_COLUMNS, start=1):
            cols[name][mixed[:, 0]] = mixed[:, c]
    if len(stretches):
        lengths = stretches[:, 1]
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        local = np.arange(lengths.sum()) - np.repeat(offsets, lengths)
        pos = np.repeat(stretches[:, 0], lengths) + local
        dec = np.repeat(stretches[:, 2], lengths)
        pairs = np.repeat(stretches[:, 3], lengths) + dec * local
        cols["decodes"][pos] = dec
        cols["rows"][pos] = np.repeat(stretches[:, 4], lengths)
        cols["pairs"][pos] = pairs
        cols["context_tokens"][pos] = pairs
        cols["emitted"][pos] = dec
        cols["held_slots"][pos] = np.repeat(stretches[:, 5], lengths)
    return cols


# --- the reference engine: a plain per-request loop -----------------------------------------

def _simulate_reference(reqs: list[Request], cfg: _Config) -> "Result":
    """Round by round, request by request, exactly as design.md §4 reads (for checking)."""
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival_s, i))
    R = [reqs[i] for i in order]
    pad = _padder(cfg.shapes)
    done = [r.cached_tokens for r in R]   # prompt tokens in the KV cache (cached or computed)
    got = [0] * len(R)            # tokens emitted
    times: list[list[float]] = [[] for _ in R]
    admitted_s = [math.nan] * len(R)
    first_sched = [-1] * len(R)
    rejected = {}
    pending = deque(range(len(R)))
    waiting: deque = deque()
    running: list[int] = []       # admission order
    blocked, retry_s = False, math.inf
    group = 0
    t = 0.0
    rounds = []                   # (start, dur, end, then the _COLUMNS)
    chunks = []

    class _View:                  # what a callback may look at
        @property
        def now_s(self):
            return t

        @property
        def running_count(self):
            return len(running)

        @property
        def waiting_count(self):
            return len(waiting)

        @property
        def reserved_tokens(self):
            return sum(R[i].prompt_tokens + R[i].output_tokens - 1 for i in running)

        @property
        def cached_tokens(self):
            return sum(done[i] + max(got[i] - 1, 0) for i in running)

    view = _View()
    while True:
        moved = False
        while pending and R[pending[0]].arrival_s <= t:
            waiting.append(pending.popleft())
            moved = True
        if moved:
            blocked = False
        if waiting and not (cfg.policy == "static" and running):
            if blocked and t >= retry_s:
                blocked = False
            admitted = 0
            while len(running) < cfg.max_running and waiting and not blocked:
                i = waiting[0]
                kind, retry = (_decision(cfg.admit(R[i], t, view), t) if cfg.admit is not None
                               else ("admit", math.inf))
                if kind == "admit":
                    running.append(waiting.popleft())
                    admitted_s[i] = t
                    admitted += 1
                elif kind == "reject":
                    rejected[R[waiting.popleft()].id] = t
                else:
                    blocked, retry_s = True, retry
            if cfg.policy == "static" and admitted:
                group = len(running)
        if not running:
            e = R[pending[0]].arrival_s if pending else math.inf
            if waiting and blocked and retry_s < e:
                e = retry_s
            if e == math.inf:
                if waiting:
                    raise RuntimeError(f"admit: request {R[waiting[0]].id!r} was deferred while "
                                       f"nothing is running and nothing else can arrive; reject "
                                       f"it or return a retry time")
                break
            t = max(t, e)
            continue
        # the round's segments: decode steps first, then prompt chunks, in admission order
        j = len(rounds)
        budget = cfg.token_budget
        segments = []
        for i in running:
            if done[i] == R[i].prompt_tokens:
                segments.append((i, 1, R[i].prompt_tokens + got[i] - 1, "decode"))
                budget -= 1
        for i in running:
            remaining = R[i].prompt_tokens - done[i]
            if remaining:
                if budget <= 0:
                    continue
                c = min(cfg.chunk_tokens, remaining, budget)
                segments.append((i, c, done[i], "prefill"))
                budget -= c
        decodes = sum(1 for s in segments if s[3] == "decode")
        prefill = sum(s[1] for s in segments if s[3] == "prefill")
        pairs = sum(attention_pairs(c, h) for _, c, h, _ in segments)
        ctx = sum(h + c for _, c, h, _ in segments)
        emitted = decodes + sum(1 for i, c, h, kind in segments
                                if kind == "prefill" and h + c == R[i].prompt_tokens)
        rows = pad(decodes + prefill)
        d = _duration(cfg.round_time.time_s(RoundWork(decodes, prefill, rows, pairs, ctx,
                                                      emitted)))
        end = t + d
        for i, c, h, kind in segments:
            if kind == "decode":
                got[i] += 1
                times[i].append(end)
            else:
                chunks.append((j, i, c, h))
                if first_sched[i] < 0:
                    first_sched[i] = j
                done[i] += c
                if done[i] == R[i].prompt_tokens:
                    got[i] += 1
                    times[i].append(end)
        rounds.append((t, d, end, decodes, prefill, rows, pairs, ctx, emitted,
                       group if cfg.policy == "static" else len(running)))
        finished = [i for i in running if got[i] == R[i].output_tokens]
        running = [i for i in running if got[i] < R[i].output_tokens]
        if finished:
            blocked = False
        if not running:
            group = 0
        for i in finished:
            if cfg.on_finish is not None:
                cfg.on_finish(R[i], end, view)
        t = end

    first_token = []
    ends = [r[2] for r in rounds]
    for i, ts in enumerate(times):
        if not ts:
            first_token.append(-1)
            continue
        f = ends.index(ts[0])
        # a request emits once in every round from its first token on (no preemption)
        if ts != ends[f:f + len(ts)]:
            raise AssertionError(f"reference: request {R[i].id!r} skipped a round")
        first_token.append(f)
    cols = [np.array(c) for c in zip(*rounds)] if rounds else [np.empty(0)] * 10
    result = Result(
        policy=cfg.policy, requests=R,
        round_start_s=cols[0], round_duration_s=cols[1], round_end_s=cols[2],
        columns=dict(zip(_COLUMNS, cols[3:])), first_token_round=first_token,
        first_scheduled_round=first_sched, admitted_s=admitted_s,
        chunks=np.array(chunks, dtype=np.int64).reshape(-1, 4), rejected=rejected)
    result._explicit_token_times = {R[i].id: ts for i, ts in enumerate(times)}
    return result


# --- results -----------------------------------------------------------------------------------

class Segment(NamedTuple):
    """One request's share of a round."""

    request_id: object
    kind: str              # "decode" or "prefill"
    new_tokens: int
    history_tokens: int    # tokens already cached before this segment
    emits: bool            # whether the segment emits a token at the round's end


class Round(NamedTuple):
    """One scheduling round."""

    index: int
    start_s: float
    duration_s: float
    segments: tuple
    rows: int
    padding_rows: int
    pairs: int

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


class _TokenTimes(Mapping):
    """request id -> list of its tokens' emission times (seconds), built on access."""

    def __init__(self, result: "Result"):
        self._r = result

    def __getitem__(self, rid):
        k = self._r._index[rid]
        f, e = int(self._r._first[k]), int(self._r._emitted_count[k])
        return self._r.round_end_s[f:f + e].tolist() if e else []

    def __iter__(self):
        return iter(self._r.ids)

    def __len__(self):
        return len(self._r.ids)


class _Itls(Mapping):
    """request id -> numpy array of its output intervals (seconds)."""

    def __init__(self, result: "Result"):
        self._r = result

    def __getitem__(self, rid):
        k = self._r._index[rid]
        f, e = int(self._r._first[k]), int(self._r._emitted_count[k])
        return np.diff(self._r.round_end_s[f:f + e]) if e > 1 else np.empty(0)

    def __iter__(self):
        return iter(self._r.ids)

    def __len__(self):
        return len(self._r.ids)


class Result:
    """A simulated schedule: its rounds and every request's token emission times.

    Per request (``ids`` in arrival order): ``token_times`` (id -> list of seconds), ``ttft_s``
    (id -> first token - arrival), ``itl_s`` (id -> array of output intervals), and
    ``requests_table()``; ``first_token_round`` (round index of each first token, -1 if none),
    ``rejected``, ``cancelled`` and ``preempted`` (id -> when); overall: ``makespan_s``,
    ``max_itl_s``; per round: the ``round_*`` arrays, ``rounds`` (Round objects with their
    Segments), ``gantt_rows()``, ``summary()``.
    """

    def __init__(self, *, policy, requests, round_start_s, round_duration_s, round_end_s,
                 columns, first_token_round, first_scheduled_round, admitted_s, chunks,
                 rejected, cancelled=None, preempted=None, stopped_emitted=None):
        self.policy = policy
        self.requests = list(requests)
        self.ids = [r.id for r in self.requests]
        self._index = {rid: k for k, rid in enumerate(self.ids)}
        f64, i64 = np.float64, np.int64
        self.round_start_s = np.asarray(round_start_s, dtype=f64)
        self.round_duration_s = np.asarray(round_duration_s, dtype=f64)
        self.round_end_s = np.asarray(round_end_s, dtype=f64)
        self._columns = columns          # dict of per-round integer arrays, or a maker of one
        self.arrival_s = np.array([r.arrival_s for r in self.requests], dtype=f64)
        self.prompt_tokens = np.array([r.prompt_tokens for r in self.requests], dtype=i64)
        self.output_tokens = np.array([r.output_tokens for r in self.requests], dtype=i64)
        self.cached_tokens = np.array([r.cached_tokens for r in self.requests], dtype=i64)
        self._first = np.asarray(first_token_round, dtype=i64).reshape(-1)
        self._first_sched = np.asarray(first_scheduled_round, dtype=i64).reshape(-1)
        self.admitted_s = np.asarray(admitted_s, dtype=f64).reshape(-1)
        self._chunks = np.asarray(chunks, dtype=i64).reshape(-1, 4)
        self.rejected = dict(rejected)
        self.cancelled = dict(cancelled or {})
        self.preempted = dict(preempted or {})
        n_rounds = len(self.round_end_s)
        started = self._first >= 0
        self._emitted_count = np.where(
            started, np.minimum(self.output_tokens, n_rounds - self._first), 0)
        if stopped_emitted is not None:
            # requests cancelled or preempted while running emitted only this many tokens
            stopped = np.asarray(stopped_emitted, dtype=i64).reshape(-1)
            self._emitted_count = np.where(stopped >= 0, stopped, self._emitted_count)
        self.token_times: Mapping = _TokenTimes(self)
        self.itl_s: Mapping = _Itls(self)

    @property
    def first_token_round(self) -> np.ndarray:
        """Index of the round that emitted each request's first token (-1 if none), arrival
        order."""
        return self._first.copy()

    @property
    def emitted(self) -> np.ndarray:
        """Tokens each request has emitted (arrival order)."""
        return self._emitted_count.copy()

    # -- per-round integer columns (built on first access) --
    def _col(self, name: str) -> np.ndarray:
        if callable(self._columns):
            self._columns = self._columns()
        return np.asarray(self._columns[name], dtype=np.int64)

    @property
    def round_decodes(self) -> np.ndarray:
        """Decode steps in each round."""
        return self._col("decodes")

    @property
    def round_prefill_tokens(self) -> np.ndarray:
        """Prompt tokens computed in each round."""
        return self._col("prefill_tokens")

    @property
    def round_new_tokens(self) -> np.ndarray:
        """Tokens computed in each round (decode steps + prompt tokens), before padding."""
        return self.round_decodes + self.round_prefill_tokens

    @property
    def round_rows(self) -> np.ndarray:
        """Rows executed in each round (new tokens padded to a captured graph shape)."""
        return self._col("rows")

    @property
    def round_padding_rows(self) -> np.ndarray:
        """Rows executed only for CUDA-graph padding, per round (8.2.4)."""
        return self.round_rows - self.round_new_tokens

    @property
    def round_pairs(self) -> np.ndarray:
        """Causal query-key pairs of each round."""
        return self._col("pairs")

    @property
    def round_context_tokens(self) -> np.ndarray:
        """KV tokens each round's attention reads (sum of h + c over its segments)."""
        return self._col("context_tokens")

    @property
    def round_emitted(self) -> np.ndarray:
        """Tokens emitted at the end of each round."""
        return self._col("emitted")

    @property
    def round_held_slots(self) -> np.ndarray:
        """Slots held in each round (static: the whole group until it drains)."""
        return self._col("held_slots")

    # -- per request --
    def _at_round(self, rounds: np.ndarray, which: np.ndarray) -> np.ndarray:
        out = np.full(len(rounds), np.nan)
        ok = rounds >= 0
        out[ok] = which[rounds[ok]]
        return out

    @property
    def first_token_s(self) -> np.ndarray:
        """Emission time of each request's first token (NaN if none yet), arrival order."""
        return self._at_round(self._first, self.round_end_s)

    @property
    def first_scheduled_s(self) -> np.ndarray:
        """Start of the first round computing part of each request's prompt (NaN if none)."""
        return self._at_round(self._first_sched, self.round_start_s)

    @property
    def finish_s(self) -> np.ndarray:
        """Emission time of each request's last token (NaN until it has finished)."""
        done = (self._first >= 0) & (self._emitted_count == self.output_tokens)
        last = np.where(done, self._first + self.output_tokens - 1, -1)
        return self._at_round(last, self.round_end_s)

    @property
    def finished(self) -> np.ndarray:
        """Whether each request has emitted all its tokens."""
        return (self._first >= 0) & (self._emitted_count == self.output_tokens)

    @property
    def ttft_s(self) -> dict:
        """id -> time to first token (first token - arrival; NaN if none yet)."""
        return dict(zip(self.ids, (self.first_token_s - self.arrival_s).tolist()))

    @property
    def queue_s(self) -> dict:
        """id -> time from arrival to the first round that computes part of its prompt."""
        return dict(zip(self.ids, (self.first_scheduled_s - self.arrival_s).tolist()))

    @property
    def makespan_s(self) -> float:
        """End of the round that emits the last token (seconds from t = 0)."""
        last = self._first + self._emitted_count - 1
        last = last[self._emitted_count > 0]
        return float(self.round_end_s[last.max()]) if len(last) else 0.0

    def _itl_windows(self):
        """Per request, the range [a, b) of round_end differences that are its ITLs."""
        a = self._first
        b = self._first + self._emitted_count - 1
        ok = (a >= 0) & (b > a)
        return a[ok], b[ok], np.nonzero(ok)[0]

    @property
    def max_itl_s(self) -> float:
        """Longest output interval of any request (NaN when no request has two tokens)."""
        a, b, _ = self._itl_windows()
        if not len(a):
            return math.nan
        gaps = np.diff(self.round_end_s)
        cover = np.zeros(len(gaps) + 1, dtype=np.int64)
        np.add.at(cover, a, 1)
        np.add.at(cover, b, -1)
        inside = np.cumsum(cover)[:-1] > 0
        return float(gaps[inside].max())

    def itl_values_s(self) -> np.ndarray:
        """Every output interval of every request, concatenated (arrival order)."""
        a, b, _ = self._itl_windows()
        if not len(a):
            return np.empty(0)
        lengths = b - a
        offsets = np.repeat(a - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        idx = np.arange(lengths.sum()) + offsets
        return np.diff(self.round_end_s)[idx]

    def max_itl_by_request_s(self) -> np.ndarray:
        """Each request's longest output interval (NaN with fewer than two tokens)."""
        out = np.full(len(self.ids), np.nan)
        a, b, k = self._itl_windows()
        if not len(a):
            return out
        # max over gaps[a:b] per request in one pass: reduceat over the index pairs (a, b),
        # with a sentinel so that b may equal the number of gaps
        gaps = np.append(np.diff(self.round_end_s), -np.inf)
        bounds = np.empty(2 * len(a), dtype=np.int64)
        bounds[0::2], bounds[1::2] = a, b
        out[k] = np.maximum.reduceat(gaps, bounds)[0::2]
        return out

    def requests_table(self) -> dict:
        """Per-request numpy arrays in arrival order: id, arrival_s, prompt_tokens,
        output_tokens, admitted_s, first_scheduled_s, first_token_s, finish_s, queue_s, ttft_s,
        tpot_s (mean ITL), max_itl_s, emitted, rejected."""
        first, finish = self.first_token_s, self.finish_s
        g = self.output_tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(g > 1, (finish - first) / np.maximum(g - 1, 1), np.nan)
        return {
            "id": np.array(self.ids, dtype=object), "arrival_s": self.arrival_s,
            "prompt_tokens": self.prompt_tokens, "output_tokens": g,
            "admitted_s": self.admitted_s, "first_scheduled_s": self.first_scheduled_s,
            "first_token_s": first, "finish_s": finish,
            "queue_s": self.first_scheduled_s - self.arrival_s, "ttft_s": first - self.arrival_s,
            "tpot_s": tpot, "max_itl_s": self.max_itl_by_request_s(),
            "emitted": self._emitted_count.copy(),
            "rejected": np.array([rid in self.rejected for rid in self.ids]),
        }

    # -- rounds --
    @property
    def n_rounds(self) -> int:
        return len(self.round_end_s)

    @property
    def padding_rows_total(self) -> int:
        """Rows executed only because of CUDA-graph padding, over all rounds (8.2.4)."""
        return int(self.round_padding_rows.sum())

    def slot_steps(self) -> tuple[int, int]:
        """(slot-steps run, slot-steps useful): slots held and tokens emitted, summed over rounds.

        Static batching holds a group's slots until it drains: 8 x 800 = 6,400 run, 3,600 useful
        for outputs 100, 200, ..., 800 (17 §6).
        """
        return int(self.round_held_slots.sum()), int(self.round_emitted.sum())

    def utilization(self) -> float:
        """Useful over run slot-steps (17 §6's static-batch utilisation)."""
        run, useful = self.slot_steps()
        return useful / run if run else math.nan

    def _segments_by_round(self, lo: int = 0, hi: int | None = None) -> list[list[Segment]]:
        hi = self.n_rounds if hi is None else hi
        out: list[list[Segment]] = [[] for _ in range(hi - lo)]
        for k, rid in enumerate(self.ids):
            f, e = int(self._first[k]), int(self._emitted_count[k])
            p = int(self.prompt_tokens[k])
            for j in range(max(f + 1, lo), min(f + e, hi)):
                out[j - lo].append(Segment(rid, "decode", 1, p + (j - f) - 1, True))
        for j, k, c, h in self._chunks.tolist():
            if lo <= j < hi:
                out[j - lo].append(Segment(self.ids[k], "prefill", c, h,
                                           h + c == int(self.prompt_tokens[k])))
        return out

    def round(self, index: int) -> Round:
        """One round with its segments (decode steps, then prompt chunks, arrival order)."""
        j = v.integer("index", index, minimum=0)
        if j >= self.n_rounds:
            raise ValueError(f"index: there are {self.n_rounds} rounds, got {index}")
        return self._make_round(j, self._segments_by_round(j, j + 1)[0])

    def _make_round(self, j: int, segs: list) -> Round:
        return Round(j, float(self.round_start_s[j]), float(self.round_duration_s[j]),
                     tuple(segs), int(self.round_rows[j]), int(self.round_padding_rows[j]),
                     int(self.round_pairs[j]))

    @property
    def rounds(self) -> list[Round]:
        """Every round with its segments (built on access: O(tokens) for a long run)."""
        return [self._make_round(j, s) for j, s in enumerate(self._segments_by_round())]

    def gantt_rows(self, *, merge_decode: bool = False, include_queue: bool = True) -> list[tuple]:
        """(request id, start_s, end_s, kind) segments for a Gantt chart; kind is "queued"
        (arrival to its first prompt round), "prefill" or "decode". ``merge_decode`` joins each
        request's consecutive decode rounds into one segment."""
        rows = []
        if include_queue:
            sched = self.first_scheduled_s
            for k, rid in enumerate(self.ids):
                if not math.isnan(sched[k]) and sched[k] > self.arrival_s[k]:
                    rows.append((rid, float(self.arrival_s[k]), float(sched[k]), "queued"))
        for j, k, c, h in self._chunks.tolist():
            rows.append((self.ids[k], float(self.round_start_s[j]), float(self.round_end_s[j]),
                         "prefill"))
        for k, rid in enumerate(self.ids):
            f, e = int(self._first[k]), int(self._emitted_count[k])
            if e <= 1:
                continue
            if merge_decode:
                rows.append((rid, float(self.round_start_s[f + 1]),
                             float(self.round_end_s[f + e - 1]), "decode"))
            else:
                rows.extend((rid, float(self.round_start_s[j]), float(self.round_end_s[j]),
                             "decode") for j in range(f + 1, f + e))
        rows.sort(key=lambda r: (self._index[r[0]], r[1]))
        return rows

    def summary(self) -> str:
        """A plain-text table: one line per request, then totals."""
        table = self.requests_table()
        ms = 1e3
        lines = [f"policy {self.policy}: {self.n_rounds} rounds, total "
                 f"{self.makespan_s * ms:.1f} ms, longest output interval "
                 f"{self.max_itl_s * ms:.1f} ms"]
        if self.padding_rows_total:
            lines[0] += f", padding {self.padding_rows_total} rows"
        lines.append(f"{'id':>8} {'arrive ms':>10} {'queue ms':>9} {'TTFT ms':>9} "
                     f"{'finish ms':>10} {'max ITL ms':>11}")
        for k, rid in enumerate(self.ids):
            lines.append(f"{str(rid):>8} {table['arrival_s'][k] * ms:10.1f} "
                         f"{table['queue_s'][k] * ms:9.1f} {table['ttft_s'][k] * ms:9.1f} "
                         f"{table['finish_s'][k] * ms:10.1f} {table['max_itl_s'][k] * ms:11.1f}")
        if self.rejected:
            lines.append(f"rejected: {sorted(map(str, self.rejected))}")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<Result {self.policy}: {len(self.ids)} requests, {self.n_rounds} rounds, "
                f"makespan {self.makespan_s:.4g} s, max ITL {self.max_itl_s:.4g} s>")


# --- one-shot entry point ----------------------------------------------------------------------

def simulate(requests, policy: str, *, max_running: int, round_time, chunk_tokens=None,
             token_budget=None, captured_shapes=None, admit=None, on_finish=None,
             engine: str = "fast") -> Result:
    """Simulate ``requests`` under ``policy`` ("static", "continuous", "chunked"); returns a Result.

    Round time = ``round_time.time_s(RoundWork)`` (``round_time`` may also be a plain function of
    the RoundWork); 8.2.2's model: fixed + per_token x rows + per_pair x (c h + c(c+1)/2 summed).
    The four requests of 8.2.2, at most 2 running, give totals 870 / 766 / 844 ms and longest
    output intervals 26 / 376 / 133 ms (static, continuous, chunked with 2048-token chunks and a
    4096-token budget). ``captured_shapes`` pads each round's
    rows up to the next captured CUDA-graph shape for timing (8.2.4: 17 rows run as 32).
    ``engine="reference"`` runs the plain per-request loop (same results, slower). ``admit`` and
    ``on_finish`` are the callbacks described in the module docstring.
    """
    reqs = _check_requests("requests", requests)
    cfg = _config(policy, max_running, round_time, chunk_tokens, token_budget, captured_shapes,
                  admit, on_finish)
    engine = v.choice("engine", engine, ENGINES)
    if engine == "reference":
        return _simulate_reference(reqs, cfg)
    sched = Scheduler(policy, max_running=max_running, round_time=round_time,
                      chunk_tokens=chunk_tokens, token_budget=token_budget,
                      captured_shapes=captured_shapes, admit=admit, on_finish=on_finish)
    sched._add_checked(reqs)
    return sched.run().result()


# --- the chapters' scenarios -------------------------------------------------------------------

def chapter_8_2_2_requests() -> list[Request]:
    """8.2.2's four requests: r0, r1 at 0 s with 2048-token prompts and 8 and 2 outputs; r2 at
    20 ms with 8192 and 2; r3 at 30 ms with 2048 and 4."""
    return [Request(*r) for r in SCHEDULE_EXAMPLE_REQUESTS]


def token_budget_sweep(token_budgets=(512, 1024, 2048, 4096, 8192), *,
                       n_requests: int = REPLAY_REQUESTS,
                       interarrival_s: float = REPLAY_INTERARRIVAL_S, prompt_tokens=4096,
                       output_tokens: int = 64, max_running: int = 6,
                       round_time=None) -> list[dict]:
    """Rows of a generated arrival sweep (GENERATED by the companion's simulator; the chapter's
    replay data is not printed): ``n_requests`` requests every ``interarrival_s`` under chunked
    prefill with chunk = token budget, for each budget.

    Each row: token_budget, queue_later_mean_s / queue_later_max_s (arrival to the first round
    computing part of its prompt, over every request but the first), max_itl_s, makespan_s.
    8.2.4 describes the same trade on its six-request replay (as the budget rises from 512 to
    8192, later arrivals queue less and the longest output interval grows). The defaults
    (4096-token prompts, or one length per request; 64 outputs; 8.2.2's round model) are the
    companion's own choice.
    """
    seq = v.sequence("token_budgets", token_budgets)
    budgets = [v.tokens(f"token_budgets[{i}]", b, minimum=1) for i, b in enumerate(seq)]
    n = v.count("n_requests", n_requests)
    gap = v.nonnegative("interarrival_s", interarrival_s)
    if isinstance(prompt_tokens, numbers.Real):
        prompts = [v.tokens("prompt_tokens", prompt_tokens, minimum=1)] * n
    else:
        pseq = v.sequence("prompt_tokens", prompt_tokens)
        if len(pseq) != n:
            raise ValueError(f"prompt_tokens: give one length per request ({n}), got {len(pseq)}")
        prompts = [v.tokens(f"prompt_tokens[{i}]", x, minimum=1) for i, x in enumerate(pseq)]
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    m = v.count("max_running", max_running)
    rt = RoundTimeModel.chapter8() if round_time is None else _round_time(round_time)
    for b in budgets:
        if b < m:
            raise ValueError(f"token_budgets: {b} is smaller than max_running={m}")
    reqs = [Request(f"q{i}", i * gap, prompts[i], g) for i in range(n)]
    rows = []
    for b in budgets:
        res = simulate(reqs, "chunked", max_running=m, round_time=rt, chunk_tokens=b,
                       token_budget=b)
        queue = np.array([res.queue_s[r.id] for r in reqs[1:]]) if n > 1 else np.zeros(1)
        rows.append({"token_budget": b, "queue_later_mean_s": float(queue.mean()),
                     "queue_later_max_s": float(queue.max()), "max_itl_s": res.max_itl_s,
                     "makespan_s": res.makespan_s})
    return rows


def long_prompt_interference(prompt_tokens: int = CH17_LONG_PROMPT_TOKENS, chunk_tokens: int | None = None, *,
                             decode_batch: int = 8, round_time=None,
                             warmup_rounds: int = 4) -> dict:
    """A long prompt admitted into a running decode batch (17 §3, §6); returns a dict with
    worst_decode_itl_s, baseline_itl_s, long_ttft_s, long_prompt_rounds and the Result.

    ``decode_batch`` one-token-prompt requests start together and decode; the long request arrives
    exactly at the boundary after ``warmup_rounds`` decode rounds. Without ``chunk_tokens`` it is
    admitted whole (continuous batching: one round of decode step + whole prefill); with it,
    chunked prefill co-schedules one chunk per round with the decode steps. Default round model:
    17's 6.1 ms decode step + 2 x 8e9 FLOP per prompt token at 50% of 989 TFLOP/s.
    """
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    chunk = None if chunk_tokens is None else v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    b = v.count("decode_batch", decode_batch)
    w = v.count("warmup_rounds", warmup_rounds)
    rt = chapter17_round_time() if round_time is None else _round_time(round_time)
    kw = dict(max_running=b + 1, round_time=rt)
    if chunk is None:
        policy = "continuous"
    else:
        policy, kw["chunk_tokens"] = "chunked", chunk
    # The boundary after `warmup_rounds` decode rounds, from the same simulator (identical
    # arithmetic, so the long request arrives exactly at a boundary and never queues).
    probe = simulate([Request(f"d{i}", 0.0, 1, 1 + w) for i in range(b)], policy, **kw)
    arrival = float(probe.round_end_s[w])
    long_req = Request("long", arrival, p, 1)
    outputs = 1 + w + (1 if chunk is None else math.ceil(p / chunk)) + 2
    decoders = [Request(f"d{i}", 0.0, 1, outputs) for i in range(b)]
    res = simulate(decoders + [long_req], policy, **kw)
    itls = np.concatenate([res.itl_s[r.id] for r in decoders])
    rounds_of_long = int(np.sum(res._chunks[:, 1] == res._index["long"]))
    return {"worst_decode_itl_s": float(itls.max()), "baseline_itl_s": float(itls.min()),
            "long_ttft_s": res.ttft_s["long"], "long_prompt_rounds": rounds_of_long,
            "result": res}
