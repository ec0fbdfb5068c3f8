"""Where 17 §8's pool sizing stops holding: a pool sized by dividing mean demand by capacity
runs at 100% of its capacity when the division comes out whole, and a pool that busy queues
without bound. The fuller model treats a prefill pool as c servers, one prompt at a time each,
fed by Poisson arrivals with exponentially distributed service (an M/M/c queue), and sizes it
by a percentile of the queueing wait with Erlang's C formula (Erlang 1917; any queueing text,
e.g. Gross and Harris, "Fundamentals of Queueing Theory", ch. 2):

  P(wait > 0) = C(c, a),  P(wait > t) = C(c, a) exp(-(c mu - lambda) t),
  mean wait = C(c, a) / (c mu - lambda),

with offered load a = lambda / mu (in servers) and C computed through Erlang's B recursion.
``companion.sim.queueing.pool_run`` simulates the same pool for the tests.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.chapters import ch17
from companion.serves import serves

__all__ = ["erlang_c", "pool_wait", "prefill_pool_for_ttft"]


@serves("17.8")
def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue: Erlang's C formula (17 §8, fuller).

    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)) (Erlang B), C = c B / (c - a (1 - B)).
    1.0 when the load reaches the servers (a >= c: the queue never empties). M/M/1: C = rho;
    two servers at a = 1: 1/3.
    """
    c = v.count("servers", servers)
    a = v.nonnegative("offered_load", offered_load)
    if a >= c:
        return 1.0
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1.0 - b))


@serves("17.8")
def pool_wait(arrival_rate_per_s: float, mean_service_s: float, servers: int, *,
              percentile: float = 90.0) -> dict:
    """Queueing wait of an M/M/c pool: utilization, P(wait), mean and a percentile (17 §8).

    a = lambda x service; rho = a / c; mean wait = C / (c mu - lambda); the q-th percentile
    solves C exp(-(c mu - lambda) t) = 1 - q/100 (0 when C is already below 1 - q/100).
    Unstable (rho >= 1): every wait grows without bound, reported as inf.
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("mean_service_s", mean_service_s)
    c = v.count("servers", servers)
    q = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    a = lam * s
    rho = a / c
    if rho >= 1.0:
        return dict(utilization=rho, wait_prob=1.0, mean_wait_s=math.inf,
                    percentile_wait_s=math.inf, stable=False)
    prob = erlang_c(c, a)
    drain = c / s - lam                    # c mu - lambda, per second
    tail = 1.0 - q / 100.0
    pct = 0.0 if prob <= tail else (math.log(prob / tail) / drain if tail > 0 else math.inf)
    return dict(utilization=rho, wait_prob=prob, mean_wait_s=prob / drain,
                percentile_wait_s=pct, stable=True)


@serves("17.8")
def prefill_pool_for_ttft(request_rate_per_s: float, mean_prompt_tokens: float, *,
                          prefill_tok_per_s_per_group: float = ch17.PREFILL_TOK_PER_S_PER_GROUP,
                          ttft_p90_target_s: float = ch17.TTFT_P90_TARGET_S,
                          percentile: float = 90.0, max_groups: int = 100_000) -> dict:
    """Prefill groups sized by the chapter's division and by a queueing-wait budget (17 §8).

    A group prefills one prompt at a time at the given tok/s, so a mean prompt takes
    service = prompt / capacity. The chapter's count is ceil(lambda x service). The fuller
    count is the smallest c whose ``percentile`` queueing wait (``pool_wait``) fits what the
    mean prompt's own prefill leaves of the TTFT target, target - service. Returns
    service_s, chapter_groups and its wait (``chapter``), groups (None when the prefill alone
    exceeds the target) and its wait (``fuller``), and wait_budget_s.
    """
    lam = v.positive("request_rate_per_s", request_rate_per_s)
    prompt = v.positive("mean_prompt_tokens", mean_prompt_tokens)
    cap = v.positive("prefill_tok_per_s_per_group", prefill_tok_per_s_per_group)
    target = v.positive("ttft_p90_target_s", ttft_p90_target_s)
    top = v.count("max_groups", max_groups)
    percentile = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    service = prompt / cap
    load = lam * service
    chapter_groups = max(1, math.ceil(load - 1e-9))
    budget = target - service
    groups, fuller = None, None
    if budget > 0:
        c = max(1, math.floor(load) + 1)            # the fewest that are stable
        b = 1.0
        for k in range(1, c + 1):                   # Erlang B up to c, then one step per c
            b = load * b / (k + load * b)
        tail = 1.0 - percentile / 100.0
        while c <= top:
            prob = c * b / (c - load * (1.0 - b))
            drain = c / service - lam
            wait = (0.0 if prob <= tail else
                    math.log(prob / tail) / drain if tail > 0 else math.inf)
            if wait <= budget:
                groups, fuller = c, pool_wait(lam, service, c, percentile=percentile)
                break
            c += 1
            b = load * b / (c + load * b)
    return dict(service_s=service, offered_load=load, chapter_groups=chapter_groups,
                chapter=pool_wait(lam, service, chapter_groups, percentile=percentile),
                groups=groups, fuller=fuller, wait_budget_s=budget)
