"""How long a scheduling round takes: the work of a round, and the round-time models.

A round's work is a :class:`RoundWork` (decode steps, prefill tokens, rows executed after
CUDA-graph padding, causal query-key pairs, KV tokens read, tokens emitted). A round-time model
is any object with ``time_s(work) -> seconds`` (the :class:`RoundTime` protocol); a plain
function of the work is accepted too (``as_round_time``).

The companion's own models are :class:`LinearRoundTime` models: a round takes

    overhead_s + max over terms of (constant + sum of coefficient x work field) / rate

with each term linear in the work. That one formula, evaluated in one place
(:meth:`LinearRoundTime.evaluate`), is all their arithmetic:

* :class:`RoundTimeModel` -- 8.2.2's linear fit, one term: fixed + per_token x rows + per_pair x
  pairs (26.22 ms, 30.4 us, 3 ns: ``RoundTimeModel.chapter8()``);
* :class:`RooflineRoundTime` -- any Model x Hardware, two terms: FLOPs / (mfu x peak) and
  (D_w + KV bytes read) / (mbu x bandwidth), plus an overhead;
* :class:`StepPlusPrefillRoundTime` -- Chapter 17's model (and 8.1.1's measured timeline): a
  fixed decode-step time when the round has decode steps, plus a time per prefill token.

Because the terms are linear, a stretch of pure decode rounds (whose pair counts grow by the
number of decoding requests each round) has a round time that is a line in the pair count
wherever one term dominates: :meth:`LinearRoundTime.decode_line` gives it, evaluated with the
same operations in the same order as ``evaluate``, so the fast engine's shortcuts
(``companion.sim.fast_scheduler``) are bit-identical to ``time_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from companion import validate as v
from companion.chapters import ch08, ch17
from companion.formulas.core import attention_flops_per_pair, kv_bytes_per_token, matrix_flops
from companion.serves import serves
from companion.specs import H100_SXM, LLAMA_8B, Hardware, Model

__all__ = ["RoundWork", "round_work", "RoundTime", "LinearRoundTime", "RoundTimeModel", "RooflineRoundTime",
           "StepPlusPrefillRoundTime", "chapter17_round_time", "as_round_time", "round_duration",
           ]


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


@serves("8.2.3", "8.2.4")
def round_work(decodes: int, decode_history_tokens: int, chunks=(), *, completing: int = 0,
               rows: int | None = None) -> RoundWork:
    """The work of a round: ``decodes`` decode steps on ``decode_history_tokens`` cached tokens
    in all, and prompt ``chunks`` (c new tokens on h cached ones each), ``completing`` of which
    finish their prompt.

    Each decode step is c = 1 on its h: h + 1 pairs and h + 1 KV tokens read; a chunk adds
    c h + c(c+1)/2 pairs and reads h + c tokens (8.2.3). Rows are the new tokens, unless the
    caller pads them (``rows``, 8.2.4); a round emits one token per decode step and one per
    completed prompt.
    """
    prefill = sum(c for c, _ in chunks)
    pairs = decode_history_tokens + decodes + sum(c * h + c * (c + 1) // 2 for c, h in chunks)
    context = decode_history_tokens + decodes + sum(h + c for c, h in chunks)
    return RoundWork(decodes, prefill, decodes + prefill if rows is None else rows, pairs,
                     context, decodes + completing)


@runtime_checkable
class RoundTime(Protocol):
    """A round-time model: ``time_s(work: RoundWork) -> seconds``."""

    def time_s(self, work: RoundWork) -> float: ...


def round_duration(value, name: str = "round_time") -> float:
    """A model's answer as a round duration: a finite positive number of seconds."""
    d = float(value)
    if not math.isfinite(d) or d <= 0:
        raise ValueError(f"{name}: time_s returned {value!r}; a round must take a finite "
                         f"positive time")
    return d


class _CallableRoundTime:
    """Wraps a plain function ``f(work) -> seconds`` as a (non-vectorised) round-time model."""

    vectorized = False

    def __init__(self, fn):
        self.fn = fn

    def time_s(self, work):
        return self.fn(work)


def as_round_time(round_time):
    """A round-time model from ``round_time``: a model with ``time_s(work)`` as it is, a plain
    function of the RoundWork wrapped in one."""
    if hasattr(round_time, "time_s") and callable(round_time.time_s):
        return round_time
    if callable(round_time):
        return _CallableRoundTime(round_time)
    raise TypeError(f"round_time: expected a round-time model with time_s(work) (e.g. "
                    f"RoundTimeModel.chapter8()), got {type(round_time).__name__} {round_time!r}")


# Work fields in the order a term adds them. "decoding" is 1 when the round has decode steps
# (StepPlusPrefillRoundTime's step), else 0. The pair-like fields come last, so that along a
# stretch of decode rounds everything before them is one constant (see decode_line).
_FIELDS = ("decoding", "decodes", "prefill_tokens", "rows", "emitted", "pairs",
           "context_tokens")
_PAIR_FIELDS = (5, 6)


class _Term(NamedTuple):
    constant: float
    coefficients: tuple       # (field index, coefficient), in _FIELDS order, zeros left out
    rate: float


class LinearRoundTime:
    """A round-time model overhead_s + max_k (constant_k + sum_f c_kf x work_f) / rate_k.

    Subclasses give their terms (``_make_terms``); the evaluation is here only, for scalars
    and for numpy arrays alike.
    """

    vectorized = True
    overhead_s = 0.0

    def _make_terms(self) -> tuple:
        raise NotImplementedError

    @property
    def terms(self) -> tuple:
        """The terms as (constant, {field: coefficient}, rate), for reading."""
        return tuple((t.constant, {_FIELDS[i]: c for i, c in t.coefficients}, t.rate)
                     for t in self._terms())

    def _terms(self) -> tuple:
        terms = self.__dict__.get("_compiled")
        if terms is None:
            terms = tuple(_Term(float(c), tuple((_FIELDS.index(f), float(k))
                                                for f, k in coefs.items() if k), float(r))
                          for c, coefs, r in self._make_terms())
            object.__setattr__(self, "_compiled", terms)
        return terms

    def evaluate(self, decodes, prefill_tokens, rows, pairs, context_tokens, emitted):
        """Seconds for a round with this work (the fields of RoundWork, in its order); numpy
        arrays work elementwise."""
        values = (decodes > 0, decodes, prefill_tokens, rows, emitted, pairs, context_tokens)
        best = None
        for constant, coefficients, rate in self.__dict__.get("_compiled") or self._terms():
            x = constant
            for i, c in coefficients:
                x = x + c * values[i]
            if rate != 1.0:
                x = x / rate
            if best is None:
                best = x
            elif x.__class__ is float and best.__class__ is float:
                if x > best:
                    best = x
            else:
                best = np.maximum(best, x)
        overhead = self.overhead_s
        return overhead + best if overhead else best

    def time_s(self, work: RoundWork):
        """Seconds for the round (``evaluate`` of its fields)."""
        return self.evaluate(*work)

    def _decode_lines(self, decodes: int, rows: int):
        """Per term (a, b, c): a pure decode round's term is (a + b x pairs) / c, with a summed
        in ``evaluate``'s order; None when a term counts both pairs and KV reads. Cached per
        (decodes, rows): a run asks for the same few again and again."""
        cache = self.__dict__.setdefault("_line_cache", {})
        key = (decodes, rows)
        if key in cache:
            return cache[key]
        values = (decodes > 0, decodes, 0, rows, decodes)
        lines = []
        for term in self._terms():
            a, b = term.constant, 0
            for i, c in term.coefficients:
                if i in _PAIR_FIELDS:
                    if b:
                        lines = None        # pairs and KV reads in one term: not one line
                        break
                    b = c
                else:
                    a = a + c * values[i]
            if lines is None:
                break
            lines.append((a, b, term.rate))
        cache[key] = lines = None if lines is None else tuple(lines)
        return lines

    def decode_line(self, decodes: int, rows: int, lo: int, hi: int):
        """(a, b, c, e) such that a pure decode round of ``decodes`` requests on ``rows`` rows
        takes (a + b x pairs) / c + e seconds, bit for bit as ``evaluate``, for every pair count
        in [lo, hi]; None when no single term dominates over that range.

        A pure decode round reads as many KV tokens as it has pairs (each decode token attends
        to its h cached tokens and itself: h + 1 pairs, h + 1 tokens read).
        """
        lines = self._decode_lines(decodes, rows)
        if lines is None:
            return None
        e = self.overhead_s
        if len(lines) == 1:
            a, b, c = lines[0]
            return a, b, c, e
        # Each term is linear in the pairs: when one exceeds the other by a relative 1e-9 at
        # both ends of the range it does so in between, far beyond rounding error, so the max
        # picks it in every round of the range.
        if len(lines) == 2:
            (a1, b1, c1), (a2, b2, c2) = lines
            lo1, hi1 = (a1 + b1 * lo) / c1, (a1 + b1 * hi) / c1
            lo2, hi2 = (a2 + b2 * lo) / c2, (a2 + b2 * hi) / c2
            if lo2 > lo1 * (1 + 1e-9) and hi2 > hi1 * (1 + 1e-9):
                return a2, b2, c2, e
            if lo1 > lo2 * (1 + 1e-9) and hi1 > hi2 * (1 + 1e-9):
                return a1, b1, c1, e
            return None
        for k, (a, b, c) in enumerate(lines):
            if all((a + b * p) / c > (a2 + b2 * p) / c2 * (1 + 1e-9)
                   for j, (a2, b2, c2) in enumerate(lines) if j != k for p in (lo, hi)):
                return a, b, c, e
        return None

    def decode_fn(self, decodes: int, rows: int):
        """pairs -> seconds of a pure decode round (``evaluate``'s arithmetic, as a closure)."""
        lines = self._decode_lines(decodes, rows)
        e = self.overhead_s
        if lines is None:
            return lambda pairs: self.evaluate(decodes, 0, rows, pairs, pairs, decodes)
        if len(lines) == 1:
            (a, b, c), = lines
            if c == 1.0 and not e:
                return lambda pairs: a + b * pairs
            return lambda pairs: (a + b * pairs) / c + e
        if len(lines) == 2:
            (a1, b1, c1), (a2, b2, c2) = lines

            def two(pairs):
                x1 = (a1 + b1 * pairs) / c1
                x2 = (a2 + b2 * pairs) / c2
                best = x2 if x2 > x1 else x1
                return e + best if e else best
            return two
        return lambda pairs: self.evaluate(decodes, 0, rows, pairs, pairs, decodes)


@serves("8.2.2")
@dataclass(frozen=True)
class RoundTimeModel(LinearRoundTime):
    """8.2.2's linear round time: fixed_s + per_token_s x rows + per_pair_s x pairs.

    With the chapter's fit (26.22 ms, 30.4 us, 3 ns; :meth:`chapter8`) a lone 2048-token prefill
    (2048 rows, 2,098,176 pairs) takes 94.8 ms and a lone decode on 2048 cached tokens (1 row,
    2049 pairs) 26.26 ms. ``rows`` include CUDA-graph padding.

    >>> from companion import sim, units
    >>> from companion.sim.round_time import round_work
    >>> model = sim.RoundTimeModel(26.22 * units.ms, 30.4 * units.us, 3 * units.ns)
    >>> prefill = round_work(0, 0, [(2048, 0)], completing=1)   # a lone 2048-token prompt
    >>> round(model.time_s(prefill) / units.ms, 1)
    94.8
    >>> round(model.time_s(round_work(1, 2048)) / units.ms, 2)  # one decode on 2048 tokens
    26.26
    """

    fixed_s: float
    per_token_s: float
    per_pair_s: float

    def __post_init__(self):
        for name in ("fixed_s", "per_token_s", "per_pair_s"):
            object.__setattr__(self, name, v.nonnegative(name, getattr(self, name)))
        if self.fixed_s + self.per_token_s <= 0:
            raise ValueError("per_token_s: with fixed_s = 0 it must be > 0, or a round could take "
                             "no time")

    @classmethod
    def chapter8(cls) -> "RoundTimeModel":
        """The fit of 8.2.2 (Experiment 8-1, batch 1, Qwen3-8B on the RTX PRO 6000)."""
        return cls(ch08.ROUND_FIXED_S, ch08.ROUND_PER_TOKEN_S, ch08.ROUND_PER_PAIR_S)

    def _make_terms(self):
        return ((self.fixed_s, {"rows": self.per_token_s, "pairs": self.per_pair_s}, 1.0),)


@serves("8.2.1", "17.2", "17.9")
class RooflineRoundTime(LinearRoundTime):
    """Roofline round time of ``model`` on ``hardware``:
    overhead_s + max(FLOPs / (mfu x peak), (D_w + k x KV tokens read) / (mbu x bandwidth)).

    FLOPs = matrix_flops(model, rows) (layer matrices for every executed row, padding included)
    + the lm_head's matrix FLOPs for each emitted token + attention_flops_per_pair(model) x pairs;
    bytes = D_w (streamed_weight_bytes, read once per round) + kv_bytes_per_token x the KV tokens
    the round's attention reads. ``mbu``/``mfu`` scale the peaks down (8.2.1, 17 §2, §9).
    """

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

    def _make_terms(self):
        return ((0.0, {"rows": self.flops_per_row, "emitted": self.flops_per_emitted,
                       "pairs": self.flops_per_pair}, self.flops_per_s),
                (self.weight_bytes, {"context_tokens": self.kv_bytes_per_token},
                 self.bytes_per_s))

    def compute_s(self, work: RoundWork):
        """FLOPs / (mfu x peak): the first term alone."""
        return _term_time(self._terms()[0], work)

    def read_s(self, work: RoundWork):
        """(D_w + KV bytes read) / (mbu x bandwidth): the second term alone."""
        return _term_time(self._terms()[1], work)


def _term_time(term: _Term, work: RoundWork):
    values = (work.decodes > 0, work.decodes, work.prefill_tokens, work.rows, work.emitted,
              work.pairs, work.context_tokens)
    x = term.constant
    for i, c in term.coefficients:
        x = x + c * values[i]
    return x / term.rate


@serves("8.1.1", "17.3", "17.6")
@dataclass(frozen=True)
class StepPlusPrefillRoundTime(LinearRoundTime):
    """Chapter 17's round: decode_step_s when the round has decode steps, plus prefill_token_s
    per prompt token computed in it.

    17 §3/§6: a 6.1 ms decode step and 2 x 8e9 FLOP per prompt token at 50% of the H100's 989
    TFLOP/s (32.4 us a token: 259 ms for 8,000 tokens, 16.6 ms for a 512-token chunk). 8.1.1's
    measured timeline is the same form (26.5 ms a step, 96 ms for a 2048-token prompt). The
    decode step does not grow with batch or context, and CUDA-graph padding is not charged.
    """

    decode_step_s: float
    prefill_token_s: float

    def __post_init__(self):
        object.__setattr__(self, "decode_step_s", v.positive("decode_step_s", self.decode_step_s))
        object.__setattr__(self, "prefill_token_s",
                           v.positive("prefill_token_s", self.prefill_token_s))

    @classmethod
    def from_hardware(cls, model: Model, hardware: Hardware, *, decode_step_s: float,
                      mfu: float = ch17.PREFILL_EFFICIENCY) -> "StepPlusPrefillRoundTime":
        """Prefill at ``mfu`` of the peak: prefill_token_s = matrix_flops(model, 1) / (mfu x peak)
        (17 §3: 2 x 8e9 / (0.5 x 989e12))."""
        v.instance("model", model, Model, "a companion.specs.Model")
        v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
        step = v.positive("decode_step_s", decode_step_s)
        f = v.probability("mfu", mfu, open_low=True)
        return cls(step, matrix_flops(model, 1) / (f * hardware.peak_flops_per_s))

    def _make_terms(self):
        return ((0.0, {"decoding": self.decode_step_s, "prefill_tokens": self.prefill_token_s},
                 1.0),)


@serves("17.3", "17.6")
def chapter17_round_time(decode_step_s: float = ch17.DECODE_STEP_S) -> StepPlusPrefillRoundTime:
    """Chapter 17's round model: decode_step_s + prompt tokens x 2 x 8e9 / (0.5 x 989e12) s.

    17 §6: a 512-token chunk adds 16.6 ms to the 6.1 ms step (about 23 ms a round); 17 §3: an
    8,000-token prefill takes 259 ms.
    """
    step = v.positive("decode_step_s", decode_step_s)
    return StepPlusPrefillRoundTime.from_hardware(LLAMA_8B, H100_SXM, decode_step_s=step,
                                                  mfu=ch17.PREFILL_EFFICIENCY)
