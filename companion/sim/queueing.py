"""Queues simulated request by request: the references for the queueing formulas of 8.6.1 and
17 §8 (the companion's own simulations, not chapter results).

- One first-come-first-served server (8.6.1). ``fifo_waits`` runs Lindley's recursion,
  W_1 = 0 and W_{i+1} = max(0, W_i + S_i - A_{i+1}) (A: the gap between arrivals i and i + 1),
  in closed form over numpy arrays: with X the running sum of S_i - A_{i+1},
  W_i = X_i - min(0, min_{j <= i} X_j). ``md1_waits`` feeds it a seeded Poisson stream and a
  fixed service time, the M/D/1 queue whose mean wait Pollaczek-Khinchine gives
  (``companion.formulas.limits_serving``); evenly spaced arrivals give the D/D/1 queue.
- A pool of identical servers (17 §8, which sizes each disaggregated pool by dividing mean
  demand by one group's capacity). ``pool_run`` puts Poisson arrivals through ``servers``
  groups, each serving one request at a time for an exponentially distributed time, first come
  first served (an M/M/c queue), and records each request's wait for a free group and its time
  in the pool (wait plus service, a prefill pool's TTFT); ``companion.formulas.queueing``
  (Erlang's C formula and the time-in-pool tail) is checked against it. ``service="fixed"``
  gives every request the mean service time instead (M/D/c: every prompt the same length),
  which has no closed form as simple.
"""

from __future__ import annotations

import heapq

import numpy as np

from companion import validate as v
from companion.serves import serves

__all__ = ["fifo_waits", "md1_waits", "pool_run"]


@serves("8.6.1")
def fifo_waits(arrival_s, service_s) -> np.ndarray:
    """Each request's wait in queue at one FIFO server (Lindley's recursion, vectorised).

    ``arrival_s``: non-decreasing arrival times; ``service_s``: one service time for all, or
    one per request. Requests 0, 1 and 2 arriving at 0, 1 and 2 s for 1.5 s each wait 0, 0.5
    and 1.0 s.
    """
    t = v.column("arrival_s", arrival_s)
    if np.any(np.diff(t) < 0):
        raise ValueError("arrival_s: must be non-decreasing")
    s = v.column("service_s", service_s, len(t), minimum=0.0, length_of="arrival_s")
    steps = s[:-1] - np.diff(t)
    x = np.concatenate([[0.0], np.cumsum(steps)])
    return x - np.minimum(np.minimum.accumulate(x), 0.0)


@serves("8.6.1")
def md1_waits(arrival_rate_per_s: float, service_s: float, n_requests: int, *, seed: int = 0,
              arrivals: str = "poisson") -> np.ndarray:
    """Waits of ``n_requests`` at one server of fixed service time, arrivals Poisson or even.

    "poisson": exponential gaps of mean 1 / lambda from numpy's default generator seeded with
    ``seed``; "even": gaps of exactly 1 / lambda (the D/D/1 queue).
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.nonnegative("service_s", service_s)
    n = v.count("n_requests", n_requests)
    sd = v.integer("seed", seed)
    kind = v.choice("arrivals", arrivals, ("poisson", "even"))
    if kind == "even":
        gaps = np.full(n, 1.0 / lam)
    else:
        gaps = np.random.default_rng(sd).exponential(1.0 / lam, n)
    return fifo_waits(np.cumsum(gaps) - gaps[0], s)


@serves("17.8")
def pool_run(arrival_rate_per_s: float, mean_service_s: float, servers: int, *,
             n_requests: int = 50_000, seed: int = 0, warmup: int = 1000,
             service: str = "exponential") -> dict:
    """Simulate an M/M/c pool: exponential gaps at ``arrival_rate_per_s``, exponential service
    of mean ``mean_service_s`` (``service="fixed"``: exactly that long, an M/D/c pool),
    ``servers`` servers, first come first served.

    Each arrival takes the server that frees first; its wait is max(0, that time - arrival).
    The first ``warmup`` requests are dropped (the pool starts empty). Returns wait_s and
    time_s (wait plus service; numpy arrays), mean_wait_s, waited_share (share that waited at
    all) and utilization (offered load per server, lambda x service / c).
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("mean_service_s", mean_service_s)
    c = v.count("servers", servers)
    n = v.count("n_requests", n_requests)
    w = v.integer("warmup", warmup)
    kind = v.choice("service", service, ("exponential", "fixed"))
    if w >= n:
        raise ValueError(f"warmup: {w} must be below n_requests={n}")
    rng = np.random.default_rng(v.integer("seed", seed))
    arrivals = np.cumsum(rng.exponential(1.0 / lam, n))
    service_s = rng.exponential(s, n) if kind == "exponential" else np.full(n, s)
    free = [0.0] * c
    waits = np.empty(n)
    for i in range(n):
        t_free = heapq.heappop(free)
        start = max(t_free, arrivals[i])
        waits[i] = start - arrivals[i]
        heapq.heappush(free, start + service_s[i])
    kept = waits[w:]
    return dict(wait_s=kept, time_s=kept + service_s[w:], mean_wait_s=float(kept.mean()),
                waited_share=float((kept > 0).mean()), utilization=lam * s / c)
