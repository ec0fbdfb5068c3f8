"""Iteration-level simulators: who runs in which round, where each token's KV lives, which
draft token survives, which request misses its deadline.

- ``scheduler``: static / continuous batching and chunked prefill with a token budget,
  CUDA-graph padding and pluggable round-time models (8.2.2-8.2.4, 17 §3, §6);
- ``kvcache``: paged KV blocks, block tables, refcounts, copy-on-write, a prefix tree with LRU
  eviction, preemption by recompute, and numpy paged attention (8.3, 17 §5);
- ``speculative``: greedy draft verification and speculative (rejection) sampling (8.5);
- ``load``: arrivals, admission by KV space and deadline, cancellation, goodput and energy (8.6).

Every public name of the four modules is re-exported here (``from companion.sim import
simulate, Request, RoundTimeModel``).
"""

from companion.sim import kvcache, load, scheduler, speculative
from companion.sim.kvcache import *  # noqa: F401,F403
from companion.sim.load import *  # noqa: F401,F403
from companion.sim.scheduler import *  # noqa: F401,F403
from companion.sim.speculative import *  # noqa: F401,F403

__all__ = [name for module in (scheduler, kvcache, speculative, load) for name in module.__all__]
