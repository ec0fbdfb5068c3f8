"""A pool of identical servers under random arrivals, request by request (17 §8).

17 §8 sizes each disaggregated pool by dividing mean demand by one group's capacity. This
simulation puts Poisson arrivals through a pool of ``servers`` groups, each serving one request
at a time for an exponentially distributed time, first come first served (an M/M/c queue), and
records each request's wait for a free group. ``companion.formulas.queueing`` (Erlang's C
formula) is checked against it. It is the companion's own simulation, not a chapter result.
"""

from __future__ import annotations

import heapq

import numpy as np

from companion import validate as v
from companion.serves import serves

__all__ = ["pool_run"]


@serves("17.8")
def pool_run(arrival_rate_per_s: float, mean_service_s: float, servers: int, *,
             n_requests: int = 50_000, seed: int = 0, warmup: int = 1000) -> dict:
    """Simulate an M/M/c pool: exponential gaps at ``arrival_rate_per_s``, exponential service
    of mean ``mean_service_s``, ``servers`` servers, first come first served.

    Each arrival takes the server that frees first; its wait is max(0, that time - arrival).
    The first ``warmup`` requests are dropped (the pool starts empty). Returns wait_s (numpy
    array), mean_wait_s, waited_share (share that waited at all) and utilization (offered load
    per server, lambda x service / c).
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("mean_service_s", mean_service_s)
    c = v.count("servers", servers)
    n = v.count("n_requests", n_requests)
    w = v.integer("warmup", warmup)
    if w >= n:
        raise ValueError(f"warmup: {w} must be below n_requests={n}")
    rng = np.random.default_rng(v.integer("seed", seed))
    arrivals = np.cumsum(rng.exponential(1.0 / lam, n))
    service = rng.exponential(s, n)
    free = [0.0] * c
    waits = np.empty(n)
    for i in range(n):
        t_free = heapq.heappop(free)
        start = max(t_free, arrivals[i])
        waits[i] = start - arrivals[i]
        heapq.heappush(free, start + service[i])
    kept = waits[w:]
    return dict(wait_s=kept, mean_wait_s=float(kept.mean()),
                waited_share=float((kept > 0).mean()), utilization=lam * s / c)
