"""Where 8.6's simplified models stop holding: fuller versions beside the chapter's.

The chapter's formulas stay in ``serving``; this module adds what they leave out:

- 8.6.1 reasons about queueing with averages: a request waits only once the arrival rate
  exceeds what the instance can serve. With arrivals at random moments (a Poisson stream) a
  single server queues long before that. For requests admitted one at a time, each taking the
  same service time S, the queue is M/D/1: the Pollaczek-Khinchine mean wait
  (``md1_mean_wait_s``) and Erlang's distribution of the wait (``md1_wait_cdf``), against the
  evenly spaced D/D/1 queue that waits not at all below full load (``dd1_wait_s``).
- 8.6.3's scheme D emits "3 output tokens per round" on average and so needs ceil(255 / 3) = 85
  rounds. A batch is done when its slowest request is: with each drafted position accepted at
  random (8.5's model), the number of rounds the batch needs is the maximum of 16 draws
  (``speculative_rounds_pmf``, ``batch_rounds_cdf``, ``acceptance_for_tokens_per_round``).

Base units in and out (seconds, requests/s, tokens).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.serving import Scheme, per_qualifying_result, scheme_result
from companion.serves import serves
from companion.specs import RTX_PRO_6000

__all__ = [
    "md1_mean_wait_s", "md1_wait_cdf", "dd1_wait_s", "QueueOnTime", "queue_on_time",
    "acceptance_for_tokens_per_round", "tokens_per_round_pmf", "speculative_rounds_pmf",
    "batch_rounds_cdf", "BatchRounds", "batch_rounds", "scheme_result_slowest",
]


# --- 8.6.1: one server, deterministic service, evenly spaced or Poisson arrivals ---------------

def _load(arrival_rate_per_s: float, service_s: float) -> tuple[float, float, float]:
    lam = v.nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("service_s", service_s)
    return lam, s, lam * s


@serves("8.6.1")
def md1_mean_wait_s(arrival_rate_per_s: float, service_s: float) -> float:
    """Mean time in queue of an M/D/1 queue (Poisson arrivals, one server, service S).

    Pollaczek-Khinchine with a deterministic service (second moment S^2):
    W_q = lambda S^2 / (2 (1 - rho)) = rho S / (2 (1 - rho)), rho = lambda S; inf when
    rho >= 1. At rho = 1/2 a request waits S / 2 on average, although the server is idle half
    the time.
    """
    lam, s, rho = _load(arrival_rate_per_s, service_s)
    if rho >= 1:
        return math.inf
    return rho * s / (2.0 * (1.0 - rho))


@serves("8.6.1")
def md1_wait_cdf(wait_s: float, arrival_rate_per_s: float, service_s: float) -> float:
    """P(W <= t) for the wait in queue of an M/D/1 queue (Erlang, 1909).

    P(W <= t) = (1 - rho) sum_{j=0}^{floor(t/S)} e^{lambda (t - j S)} (lambda (j S - t))^j / j!
    for rho = lambda S < 1 (0 when rho >= 1). For t < S only j = 0 remains:
    (1 - rho) e^{lambda t}; at t = 0 it is 1 - rho, the chance of finding the server idle. The
    alternating sum loses precision when t is many service times; this module uses it for t up
    to a few S.
    """
    t = v.nonnegative("wait_s", wait_s)
    lam, s, rho = _load(arrival_rate_per_s, service_s)
    if rho >= 1:
        return 0.0
    terms = []
    for j in range(int(math.floor(t / s)) + 1):
        x = lam * (j * s - t)          # <= 0
        terms.append(math.exp(-x) * x ** j / math.factorial(j))
    return min(1.0, max(0.0, (1.0 - rho) * math.fsum(terms)))


@serves("8.6.1")
def dd1_wait_s(arrival_rate_per_s: float, service_s: float) -> float:
    """Wait in queue when requests arrive evenly, 1 / lambda apart, at one server of service S.

    Nobody waits while rho = lambda S <= 1; above it the queue grows without end (inf): the
    picture an average arrival rate paints (8.6.1).
    """
    _, _, rho = _load(arrival_rate_per_s, service_s)
    return 0.0 if rho <= 1 else math.inf


class QueueOnTime(NamedTuple):
    utilisation: float        # rho = lambda S
    mean_wait_s: float        # in queue
    on_time_share: float      # P(wait <= slack)
    mean_in_system: float     # Little: lambda (S + W_q)


@serves("8.6.1")
def queue_on_time(arrival_rate_per_s: float, service_s: float, slack_s: float, *,
                  arrivals: str = "poisson") -> QueueOnTime:
    """How a one-at-a-time server treats a deadline when arrivals are even or random (8.6.1).

    ``slack_s`` is the queueing a request can afford (deadline - its own service time).
    "even": D/D/1, no wait below full load, all on time; "poisson": M/D/1, Pollaczek-Khinchine
    mean and Erlang's P(W <= slack). The mean number in the system follows Little's law with
    the mean time in it, S + W_q.
    """
    lam, s, rho = _load(arrival_rate_per_s, service_s)
    slack = v.nonnegative("slack_s", slack_s)
    kind = v.choice("arrivals", arrivals, ("poisson", "even"))
    if kind == "even":
        wait = dd1_wait_s(lam, s)
        share = 1.0 if rho <= 1 else 0.0
    else:
        wait = md1_mean_wait_s(lam, s)
        share = md1_wait_cdf(slack, lam, s)
    return QueueOnTime(utilisation=rho, mean_wait_s=wait, on_time_share=share,
                       mean_in_system=lam * (s + wait) if lam else 0.0)


# --- 8.6.3: scheme D's rounds as a distribution -------------------------------------------------

@serves("8.5.2", "8.6.3")
def acceptance_for_tokens_per_round(tokens_per_round: float, draft_len: int) -> float:
    """The per-position acceptance a that gives ``tokens_per_round`` on average with m drafts.

    Solves 1 + a + a^2 + ... + a^m = E (8.5.2's expected output with independent acceptance),
    by bisection (8.6.3 assumes E = 3 for DFlash, which drafts m = 7).
    """
    m = v.count("draft_len", draft_len)
    e = v.number("tokens_per_round", tokens_per_round, at_least=1.0, at_most=m + 1.0)
    if e == 1.0:
        return 0.0
    if e == m + 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(mid ** i for i in range(m + 1)) < e:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@serves("8.5.2", "8.6.3")
def tokens_per_round_pmf(acceptance: float, draft_len: int) -> tuple:
    """P(a round emits k tokens), k = 1 .. m + 1, when each draft is accepted with prob. a.

    The first rejection at position k ends the round with k tokens (k - 1 drafts and the
    verifier's correction): a^(k-1) (1 - a) for k <= m; all m accepted adds the bonus token:
    a^m for k = m + 1. Its mean is 1 + a + ... + a^m.
    """
    a = v.probability("acceptance", acceptance)
    m = v.count("draft_len", draft_len)
    return tuple([a ** (k - 1) * (1.0 - a) for k in range(1, m + 1)] + [a ** m])


@serves("8.6.3")
def speculative_rounds_pmf(tokens_needed: int, acceptance: float, draft_len: int) -> tuple:
    """P(one request needs exactly r rounds to emit ``tokens_needed`` tokens), r = 0, 1, 2, ...

    Rounds are independent draws of ``tokens_per_round_pmf``; the request is done in the first
    round its running total reaches ``tokens_needed``. Computed exactly by carrying the
    distribution of the running total (capped at the target) round by round.
    """
    n = v.tokens("tokens_needed", tokens_needed)
    step = np.array(tokens_per_round_pmf(acceptance, draft_len))
    if n == 0:
        return (1.0,)
    state = np.zeros(n + 1)
    state[0] = 1.0
    done_before = 0.0
    pmf = [0.0]
    # at least one token per round: n rounds suffice. All n are carried, not stopped once the
    # done mass reaches 1 within rounding, so the length does not depend on the platform's
    # last-bit arithmetic (wasm32 stopped a round earlier than x86-64)
    for _ in range(n):
        nxt = np.zeros(n + 1)
        for k, p in enumerate(step, start=1):
            # a running total j below the target moves to j + k, or reaches the target
            # (a round may emit more tokens than are still needed: k > n - j)
            if k < n:
                nxt[k:n] += p * state[:n - k]
            nxt[n] += p * state[max(0, n - k):n].sum()
        nxt[n] += state[n]
        pmf.append(float(nxt[n] - done_before))
        done_before = float(nxt[n])
        state = nxt
    return tuple(pmf)


@serves("8.6.3")
def batch_rounds_cdf(tokens_needed: int, acceptance: float, draft_len: int,
                     batch: int) -> tuple:
    """P(a batch of ``batch`` independent requests is done within r rounds), r = 0, 1, ...

    The batch runs until its slowest request finishes: P(max_i R_i <= r) = P(R <= r)^b.
    """
    b = v.count("batch", batch)
    one = np.cumsum(speculative_rounds_pmf(tokens_needed, acceptance, draft_len))
    return tuple(float(x) for x in np.minimum(one, 1.0) ** b)


class BatchRounds(NamedTuple):
    acceptance: float          # per drafted position, from the mean tokens per round
    average_rounds: int        # ceil(n / E): the chapter's count
    one_request_mean: float    # E[R] for one request
    batch_mean: float          # E[max R] over the batch
    batch_median: int          # smallest r with P(max R <= r) >= 1/2
    batch_p99: int             # smallest r with P(max R <= r) >= 0.99
    cdf: tuple                 # P(max R <= r), r = 0, 1, ...

    def within(self, rounds: float) -> float:
        """P(the whole batch is done within ``rounds`` rounds)."""
        r = int(math.floor(v.nonnegative("rounds", rounds)))
        return self.cdf[min(r, len(self.cdf) - 1)]


@serves("8.6.3")
def batch_rounds(tokens_needed: int, tokens_per_round: float, draft_len: int,
                 batch: int) -> BatchRounds:
    """Rounds a speculative batch needs when its mean tokens per round hides a spread (8.6.3).

    8.6.3 counts ceil((G - 1) / E) rounds for every request (85 for D: 255 tokens at E = 3). With
    each of the m drafts accepted independently at the a that gives E
    (``acceptance_for_tokens_per_round``), one request needs about as many on average, but the
    batch of 16 finishes with its slowest member.
    """
    n = v.tokens("tokens_needed", tokens_needed, minimum=1)
    m = v.count("draft_len", draft_len)
    a = acceptance_for_tokens_per_round(tokens_per_round, m)
    b = v.count("batch", batch)
    pmf = np.array(speculative_rounds_pmf(n, a, m))
    cdf = np.array(batch_rounds_cdf(n, a, m, b))
    batch_pmf = np.diff(np.concatenate([[0.0], cdf]))
    r = np.arange(len(cdf))
    e = 1.0 + sum(a ** i for i in range(1, m + 1))
    return BatchRounds(acceptance=a, average_rounds=math.ceil(n / e - 1e-9),
                       one_request_mean=float((r[:len(pmf)] * pmf).sum()),
                       batch_mean=float((r * batch_pmf).sum()),
                       batch_median=int(np.searchsorted(cdf, 0.5 - 1e-12)),
                       batch_p99=int(np.searchsorted(cdf, 0.99 - 1e-12)),
                       cdf=tuple(float(x) for x in cdf))


@serves("8.6.3")
def scheme_result_slowest(scheme, **kwargs) -> tuple:
    """``scheme_result`` with a speculative scheme's rounds set by its slowest request (8.6.3).

    The chapter's D needs ceil((G - 1) / E) rounds, as if every request emitted exactly E tokens
    a round. Here each drafted position is accepted independently at the rate that gives E
    (``batch_rounds``), and the batch takes the median of the rounds its slowest request needs
    (half of such batches take longer); memory, prefill and the round time are the chapter's.
    Returns (the adjusted SchemeResult, its BatchRounds); a scheme without drafts is returned
    unchanged with None. D at the chapter's setting: 97 rounds instead of 85.
    """
    s = v.instance("scheme", scheme, Scheme, "a companion.calc.Scheme")
    r = scheme_result(s, **kwargs)
    if s.verify_positions == 1:
        return r, None
    g = kwargs.get("output_tokens", ch08.OUTPUT_TOKENS)
    b = kwargs.get("batch", ch08.LONG_BATCH)
    deadline = kwargs.get("deadline_s", ch08.DEADLINE_S)
    hw = kwargs.get("hardware", RTX_PRO_6000)
    if g - 1 < 1:
        return r, None
    rounds = batch_rounds(g - 1, s.tokens_per_round, s.verify_positions - 1, b)
    decode = rounds.batch_median * r.round_s
    total = r.prefill_s + decode
    on_time = total <= deadline
    good = b if (r.fits_memory and on_time) else 0
    energy = per_qualifying_result(hw.power_w * total, good) if hw.power_w else math.nan
    return replace(r, rounds=rounds.batch_median, decode_s=decode, total_s=total,
                   meets_deadline=on_time, qualifying_results=good,
                   gpu_s_per_result=per_qualifying_result(total, good),
                   energy_j_per_result=energy), rounds
