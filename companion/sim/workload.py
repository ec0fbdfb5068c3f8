"""The requests of a service run (8.6): arrival processes, request shapes and the ``Workload``
columns that ``companion.sim.load.run_service`` serves.

* ``poisson_arrivals`` (exponential gaps from a seeded numpy Generator), ``trace_arrivals`` (a
  fixed list of times);
* ``RequestShape``: prompt and output tokens and a shared prefix; the chapter's
  ``SHORT_REQUEST`` (2048 in, 256 out) and ``LONG_REQUEST`` (8192 in, 256 out, the first 6144
  shared by every long request);
* ``Workload``: one column per request attribute (arrival, prompt and output tokens, prefix,
  deadline, 17 §8's TTFT/ITL SLOs, correctness, cancellation), validated once with
  ``companion.validate.column``; ``workload`` draws one from arrivals and a mix of shapes.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.serves import serves

__all__ = ["RequestShape", "SHORT_REQUEST", "LONG_REQUEST", "Workload", "poisson_arrivals",
           "trace_arrivals", "workload", "seed_rng"]


class RequestShape(NamedTuple):
    """A kind of request: prompt and output tokens, and how many leading prompt tokens are a
    prefix shared by every request of this shape."""

    prompt_tokens: int
    output_tokens: int
    prefix_tokens: int = 0
    name: str = ""


# 8.1.1-8.1.2: the short conversation (2K in, 256 out) and the long-context request (8K in, 256
# out) whose first 6144 tokens are common to all long requests (8.1.2, 8.3.2, 8.6.3).
SHORT_REQUEST = RequestShape(ch08.SHORT_PROMPT_TOKENS, ch08.OUTPUT_TOKENS, 0, "short")
LONG_REQUEST = RequestShape(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS, ch08.SHARED_PREFIX_TOKENS,
                            "long")


def seed_rng(name: str, seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(v.count(name, seed, minimum=0))


@serves("8.6.1")
def poisson_arrivals(rate_per_s: float, n_requests: int, *, seed=0,
                     start_s: float = 0.0) -> np.ndarray:
    """Arrival times (s) of a Poisson process: start_s + cumulative sums of Exp(rate) gaps (8.6.1).

    ``seed`` is an integer or a numpy Generator. The same seed at different rates gives the same
    unit gaps scaled by 1 / rate, so a rate sweep compares like with like.
    """
    rate = v.positive("rate_per_s", rate_per_s)
    n = v.count("n_requests", n_requests)
    start = v.nonnegative("start_s", start_s)
    rng = seed_rng("seed", seed)
    return start + np.cumsum(rng.standard_exponential(n)) / rate


def trace_arrivals(times) -> np.ndarray:
    """A fixed arrival trace as a float array, checked: finite, >= 0 and non-decreasing."""
    return _arrivals("times", times)


def _arrivals(name: str, times) -> np.ndarray:
    arr = _float_column(name, times, None, minimum=0.0)
    if arr.size > 1 and (np.diff(arr) < 0).any():
        k = int(np.nonzero(np.diff(arr) < 0)[0][0]) + 1
        raise ValueError(f"{name}: must be non-decreasing; {name}[{k}] = {arr[k]!r} comes after "
                         f"{arr[k - 1]!r}")
    return arr


def _float_column(name: str, value, n: int | None, *, minimum: float | None = None,
                  positive: bool = False, allow_inf: bool = False) -> np.ndarray:
    """A float column of length n from a scalar or a sequence (validate.column)."""
    return v.column(name, value, n, minimum=minimum, positive=positive, allow_inf=allow_inf)


def _token_column(name: str, value, n: int, *, minimum: int) -> np.ndarray:
    return v.column(name, value, n, whole=True, minimum=minimum,
                    what="a whole number of tokens")


def _optional_column(name: str, value, n: int, *, positive: bool = False,
                     minimum: float | None = None) -> np.ndarray:
    """None -> all inf (no limit); a scalar -> that value for every request; a sequence may hold
    inf (or None) for the requests without a limit."""
    if value is None:
        return np.full(n, math.inf)
    scalar = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not scalar:
        seq = v.sequence(name, value)
        if any(x is None for x in seq):
            value = [math.inf if x is None else x for x in seq]
    return v.column(name, value, n, positive=positive, minimum=minimum, allow_inf=not scalar)


@serves("8.6.2", "17.8")
class Workload:
    """The requests of a service run, one column per attribute (numpy arrays, request order).

    Columns: ``ids``, ``arrival_s``, ``prompt_tokens``, ``output_tokens``, ``prefix_tokens`` and
    ``prefix_id`` (requests with the same prefix id share their first ``prefix_tokens`` tokens;
    by default requests with the same prefix length share one), ``deadline_s`` (total time from
    arrival, 8.6.2's D_i; inf = none), ``ttft_slo_s`` and ``itl_slo_s`` (17 §8's goodput SLOs;
    inf = none), ``correct`` (1/0, or -1 to draw it with probability ``correct_prob``),
    ``cancel_s`` (absolute time the client cancels; inf = never).

    Scalars apply to every request; sequences give one value per request. Every shared prefix
    leaves at least one prompt token of the request's own (its prefill emits the first token).
    """

    def __init__(self, arrival_s, prompt_tokens, output_tokens, *, prefix_tokens=0,
                 prefix_id=None, deadline_s=None, ttft_slo_s=None, itl_slo_s=None, correct=None,
                 correct_prob=1.0, cancel_s=None, ids=None):
        self.arrival_s = _float_column("arrival_s", arrival_s, None, minimum=0.0)
        n = self.arrival_s.size
        self.prompt_tokens = _token_column("prompt_tokens", prompt_tokens, n, minimum=1)
        self.output_tokens = _token_column("output_tokens", output_tokens, n, minimum=1)
        self.prefix_tokens = _token_column("prefix_tokens", prefix_tokens, n, minimum=0)
        long_prefix = self.prefix_tokens >= self.prompt_tokens
        if long_prefix.any():
            k = int(np.argmax(long_prefix))
            raise ValueError(f"prefix_tokens[{k}]: {self.prefix_tokens[k]} leaves no prompt "
                             f"token of the request's own (prompt_tokens {self.prompt_tokens[k]})")
        if prefix_id is None:
            self.prefix_id = np.where(self.prefix_tokens > 0, self.prefix_tokens, -1)
        else:
            self.prefix_id = _token_column("prefix_id", prefix_id, n, minimum=0)
            self.prefix_id = np.where(self.prefix_tokens > 0, self.prefix_id, -1)
        for pid in np.unique(self.prefix_id[self.prefix_id >= 0]):
            lengths = np.unique(self.prefix_tokens[self.prefix_id == pid])
            if lengths.size > 1:
                raise ValueError(f"prefix_tokens: requests sharing prefix_id {pid} disagree on "
                                 f"its length ({lengths.tolist()})")
        self.deadline_s = _optional_column("deadline_s", deadline_s, n, positive=True)
        self.ttft_slo_s = _optional_column("ttft_slo_s", ttft_slo_s, n, positive=True)
        self.itl_slo_s = _optional_column("itl_slo_s", itl_slo_s, n, positive=True)
        self.correct_prob = _float_column("correct_prob", correct_prob, n, minimum=0.0)
        if (self.correct_prob > 1).any():
            k = int(np.argmax(self.correct_prob > 1))
            raise ValueError(f"correct_prob[{k}]: must be <= 1, got {self.correct_prob[k]!r}")
        if correct is None:
            self.correct = np.full(n, -1, dtype=np.int64)
        elif isinstance(correct, bool):
            self.correct = np.full(n, int(correct), dtype=np.int64)
        else:
            seq = v.sequence("correct", correct)
            self.correct = _token_column("correct", [int(x) if isinstance(x, (bool, np.bool_))
                                                     else x for x in seq], n, minimum=0)
            if (self.correct > 1).any():
                k = int(np.argmax(self.correct > 1))
                raise ValueError(f"correct[{k}]: must be 0 or 1 (or a bool)")
        self.cancel_s = _optional_column("cancel_s", cancel_s, n, minimum=0.0)
        early = self.cancel_s < self.arrival_s
        if early.any():
            k = int(np.argmax(early))
            raise ValueError(f"cancel_s[{k}]: {self.cancel_s[k]!r} is before the request's "
                             f"arrival at {self.arrival_s[k]!r}")
        if ids is None:
            self.ids = np.arange(n, dtype=np.int64)
        else:
            seq = v.sequence("ids", ids)
            if len(seq) != n:
                raise ValueError(f"ids: has {len(seq)} items but there are {n} requests")
            if len(set(seq)) != n:
                raise ValueError("ids: must be unique")
            self.ids = np.array(list(seq), dtype=object)

    def __len__(self) -> int:
        return self.arrival_s.size

    def __repr__(self):
        return (f"<Workload: {len(self)} requests over {self.arrival_s.max(initial=0):.4g} s, "
                f"mean prompt {self.prompt_tokens.mean():.0f}, mean output "
                f"{self.output_tokens.mean():.0f} tokens>")


def workload(arrival_s, shapes=SHORT_REQUEST, *, weights=None, seed=0, deadline_s=None,
             ttft_slo_s=None, itl_slo_s=None, correct=None, correct_prob: float = 1.0,
             cancel_s=None) -> Workload:
    """A Workload from arrival times and a request mix: each request's shape is drawn from
    ``shapes`` with probabilities ``weights`` (equal by default) using ``seed``.

    ``shapes`` is one RequestShape or a sequence of them (e.g. [SHORT_REQUEST, LONG_REQUEST]:
    8.1's 2048/256 short and 8192/256 long requests, the long ones sharing a 6144-token prefix);
    requests of the same shape share its prefix. The other keywords are Workload's.
    """
    arrivals = _arrivals("arrival_s", arrival_s)
    if isinstance(shapes, RequestShape):
        shapes = [shapes]
    seq = v.sequence("shapes", shapes)
    checked = []
    for i, s in enumerate(seq):
        v.instance(f"shapes[{i}]", s, RequestShape, "a RequestShape")
        checked.append(RequestShape(v.tokens(f"shapes[{i}].prompt_tokens", s.prompt_tokens,
                                             minimum=1),
                                    v.tokens(f"shapes[{i}].output_tokens", s.output_tokens,
                                             minimum=1),
                                    v.tokens(f"shapes[{i}].prefix_tokens", s.prefix_tokens), s.name))
    if weights is None:
        p = np.full(len(checked), 1.0 / len(checked))
    else:
        w = _float_column("weights", weights, len(checked), minimum=0.0)
        if w.sum() <= 0:
            raise ValueError("weights: must not all be zero")
        p = w / w.sum()
    rng = seed_rng("seed", seed)
    n = arrivals.size
    pick = rng.choice(len(checked), size=n, p=p) if len(checked) > 1 else np.zeros(n, np.int64)
    table = np.array([(s.prompt_tokens, s.output_tokens, s.prefix_tokens) for s in checked],
                     dtype=np.int64)
    return Workload(arrivals, table[pick, 0], table[pick, 1], prefix_tokens=table[pick, 2],
                    prefix_id=pick, deadline_s=deadline_s, ttft_slo_s=ttft_slo_s,
                    itl_slo_s=itl_slo_s, correct=correct, correct_prob=correct_prob,
                    cancel_s=cancel_s)
