"""One first-come-first-served server, simulated: the reference for 8.6.1's queueing formulas.

``fifo_waits`` runs Lindley's recursion, W_1 = 0 and W_{i+1} = max(0, W_i + S_i - A_{i+1}) (A: the
gap between arrivals i and i + 1), in closed form over numpy arrays: with X the running sum of
S_i - A_{i+1}, W_i = X_i - min(0, min_{j <= i} X_j). ``md1_waits`` feeds it a seeded Poisson
stream and a fixed service time, the M/D/1 queue whose mean wait Pollaczek-Khinchine gives
(``companion.formulas.limits_serving``); evenly spaced arrivals give the D/D/1 queue.
"""

from __future__ import annotations

import numpy as np

from companion import validate as v
from companion.serves import serves

__all__ = ["fifo_waits", "md1_waits"]


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
