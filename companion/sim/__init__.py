"""Iteration-level simulators: who runs in which round, where each token's KV lives, which
draft token survives, which request misses its deadline.

- ``scheduler``: static / continuous batching and chunked prefill with a token budget and
  CUDA-graph padding (8.2.2-8.2.4, 17 §3, §6): the reference engine ``Scheduler`` and
  ``simulate``; ``fast_scheduler``: the same schedule, fast (``FastScheduler``); ``requests``:
  what both share (``Request``, the driving interface); ``round_time``: the round-time models;
  ``result``: the ``Result`` both return; ``scenarios``: the chapters' scheduling examples;
- ``kvcache``: paged KV blocks, block tables, refcounts, copy-on-write, a prefix cache with LRU
  eviction, preemption by recompute (8.3, 17 §5); ``paged_attention``: K and V read through
  block tables; ``kv_scenarios``: the chapters' paging examples by allocation;
- ``speculative``: greedy draft verification and speculative (rejection) sampling (8.5);
- ``kernel_timeline``: one decode round as CPU launches and GPU kernels, with and without CUDA
  Graphs, and the Speed of Light each kernel would read (17 §9);
- ``workload`` and ``load``: arrivals and request columns; a service under load with admission
  by KV space and deadline, cancellation, goodput and energy (8.6); ``slo``: 17 §3's TTFT and
  ITL targets under load.
- ``pipeline``: stages working through jobs in order, event by event (17 §7's pipeline with
  unequal stages, 17 §8's KV shipped layer by layer); ``queueing``: a pool of servers under
  Poisson arrivals (17 §8's prefill pool as an M/M/c queue). Both check the fuller closed
  forms of ``companion.formulas.communication`` and ``.queueing``.

Notebooks import the modules themselves (``from companion.sim import scheduler``, then
``scheduler.simulate``); this façade lists the few names they read as ``sim.X`` and the public
names promised to students and instructors (``Request``, ``RoundTimeModel``, ``simulate``,
``Result``), and a test (tests/architecture.py) holds it to exactly those. Each is imported
from its module when first read (``companion.lazy``), so ``import companion.sim`` is quick.
The exercises' simulated records are in ``records_ch08``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from companion.lazy import attach

if TYPE_CHECKING:
    from companion.sim.scenarios import (
        batching_trace_requests, batching_trace)
    from companion.sim.slo import (
        slo_run)
    from companion.sim.kernel_timeline import (
        round_timeline)
    from companion.sim.requests import (
        Request)
    from companion.sim.round_time import (
        RoundTimeModel)
    from companion.sim.scheduler import (
        simulate)
    from companion.sim.result import (
        Result)

# what each topic module gives the façade: imported on first use (companion/lazy.py)
__all__, __getattr__, __dir__ = attach(__name__, {
    "companion.sim.scenarios": (
        "batching_trace_requests", "batching_trace"),
    "companion.sim.slo": (
        "slo_run",),
    "companion.sim.kernel_timeline": (
        "round_timeline",),
    "companion.sim.requests": (
        "Request",),
    "companion.sim.round_time": (
        "RoundTimeModel",),
    "companion.sim.scheduler": (
        "simulate",),
    "companion.sim.result": (
        "Result",),
})
