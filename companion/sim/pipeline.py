"""A pipeline run event by event: identical jobs through stages in a fixed order (17 §7-§8).

Stage s may start job j once it has finished job j - 1 and stage s - 1 has finished job j. That
is a pipeline of PP stages working through microbatches (17 §7) and also a prefill producing
one layer's KV after another while a link ships each finished layer (17 §8). The closed forms
in ``companion.formulas.communication`` (``uneven_pipeline``, ``kv_layered_transfer``) are
checked against this run; with equal stages it gives 17 §7's bubble (p - 1) / (m + p - 1).

It is the companion's own simulation, not a chapter result.
"""

from __future__ import annotations

import numpy as np

from companion import validate as v
from companion.serves import serves

__all__ = ["pipeline_run"]


@serves("17.7", "17.8")
def pipeline_run(stage_times_s, jobs: int) -> dict:
    """Run ``jobs`` identical jobs through stages taking ``stage_times_s`` each, in order.

    Start of (stage s, job j) = max(finish of (s, j - 1), finish of (s - 1, j)). Returns
    makespan_s, start_s and finish_s (stages x jobs arrays), busy_s (each stage's working
    time, jobs x its time) and bubble: the idle share of all stage-time,
    1 - sum(busy) / (stages x makespan).
    """
    t = v.column("stage_times_s", stage_times_s, positive=True)
    n = v.count("jobs", jobs)
    p = len(t)
    start = np.zeros((p, n))
    finish = np.zeros((p, n))
    for j in range(n):
        for s in range(p):
            ready = finish[s - 1, j] if s else 0.0
            free = finish[s, j - 1] if j else 0.0
            start[s, j] = max(ready, free)
            finish[s, j] = start[s, j] + t[s]
    makespan = float(finish[-1, -1])
    busy = n * t
    return dict(makespan_s=makespan, start_s=start, finish_s=finish, busy_s=busy,
                bubble=1.0 - float(busy.sum()) / (p * makespan))
