#!/usr/bin/env python
"""Speed of companion.sim.scheduler (prints figures; asserts nothing).

  1. 8.2.2's four-request example, per policy (target: under 1 ms a simulation).
  2. 10,000 requests (2048-token prompts, 256 outputs) under continuous batching with chunked
     prefill, Qwen3-8B on the RTX PRO 6000 roofline model, max_running 35 and 80, at several
     Poisson arrival rates and as one burst (target: at most 1 s a run on one core).
  3. The fast engine against the plain per-request reference loop on a small trace.

CPU time (time.process_time, best of a few repeats) is reported next to wall time: on a shared
machine it is the steadier figure. ``--quick`` runs fewer configurations.

usage: python benchmarks/bench_sim_scheduler.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from companion.sim.scenarios import chapter_8_2_2_requests  # noqa: E402
from companion.sim.scheduler import (Request, RooflineRoundTime, RoundTimeModel,  # noqa: E402
                                     simulate)
from companion.specs import QWEN3_8B, RTX_PRO_6000  # noqa: E402

QUICK = "--quick" in sys.argv


def best_of(fn, repeats):
    """(best CPU seconds, best wall seconds, last return value)."""
    cpu, wall, out = [], [], None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall), out


def bench_8_2_2():
    print("8.2.2 example (4 requests, at most 2 running), per simulation:")
    reqs, rt = chapter_8_2_2_requests(), RoundTimeModel.chapter8()
    cases = [("static", {}), ("continuous", {}),
             ("chunked", dict(chunk_tokens=2048, token_budget=4096))]
    n = 200 if QUICK else 1000
    for policy, kw in cases:
        def many():
            for _ in range(n):
                res = simulate(reqs, policy, max_running=2, round_time=rt, **kw)
            return res
        cpu, wall, res = best_of(many, 3)

        def with_stats():
            for _ in range(n):
                r = simulate(reqs, policy, max_running=2, round_time=rt, **kw)
                r.makespan_s, r.max_itl_s
        cpu2, _, _ = best_of(with_stats, 3)
        print(f"  {policy:10s} {cpu / n * 1e6:7.0f} us CPU ({wall / n * 1e6:5.0f} us wall); "
              f"+ makespan and max ITL {cpu2 / n * 1e6:5.0f} us; total "
              f"{res.makespan_s * 1e3:.1f} ms, max ITL {res.max_itl_s * 1e3:.1f} ms")


def bench_10k():
    print("\n10,000 requests, 2048-token prompts, 256 outputs, chunked prefill, "
          "Qwen3-8B on RTX PRO 6000 (roofline, MBU = MFU = 1):")
    rt = RooflineRoundTime(QWEN3_8B, RTX_PRO_6000)
    rng = np.random.default_rng(0)
    rates = [2.0, 8.0, None] if QUICK else [0.5, 1.0, 2.0, 4.0, 8.0, None]
    budgets = [(2048, 8192)] if QUICK else [(2048, 8192), (512, 2048)]
    for rate in rates:
        if rate is None:
            arrivals = np.zeros(10_000)
        else:
            arrivals = np.cumsum(rng.exponential(1 / rate, 10_000))
            arrivals -= arrivals[0]
        reqs = [Request(i, float(a), 2048, 256) for i, a in enumerate(arrivals)]
        for max_running in (35, 80):
            for chunk, budget in budgets:
                cpu, wall, res = best_of(
                    lambda: simulate(reqs, "chunked", max_running=max_running, round_time=rt,
                                     chunk_tokens=chunk, token_budget=budget), 1 if QUICK else 2)
                c0 = time.process_time()
                table = res.requests_table()
                p99 = np.percentile(res.itl_values_s(), 99)
                stats = time.process_time() - c0
                label = "burst" if rate is None else f"{rate:g} req/s"
                print(f"  {label:>10s} max_running {max_running:2d} chunk {chunk:4d} budget "
                      f"{budget:4d}: {cpu:5.2f} s CPU ({wall:5.2f} s wall), {res.n_rounds:>9,} "
                      f"rounds; stats {stats:4.2f} s; makespan {res.makespan_s:7.1f} s, "
                      f"median TTFT {np.nanmedian(table['ttft_s']):6.2f} s, "
                      f"p99 ITL {p99 * 1e3:5.1f} ms")


def bench_reference():
    print("\nfast vs reference engine (200 requests, Poisson 8 req/s, max_running 35):")
    rt = RooflineRoundTime(QWEN3_8B, RTX_PRO_6000)
    rng = np.random.default_rng(1)
    arrivals = np.cumsum(rng.exponential(1 / 8, 200))
    reqs = [Request(i, float(a), 2048, 256) for i, a in enumerate(arrivals)]
    kw = dict(max_running=35, round_time=rt, chunk_tokens=2048, token_budget=8192)
    fast, _, a = best_of(lambda: simulate(reqs, "chunked", **kw), 3)
    ref, _, b = best_of(lambda: simulate(reqs, "chunked", engine="reference", **kw), 1)
    same = dict(a.token_times) == dict(b.token_times)
    print(f"  fast {fast * 1e3:7.1f} ms, reference {ref * 1e3:7.1f} ms ({ref / fast:.0f}x); "
          f"identical emissions: {same}")


if __name__ == "__main__":
    bench_8_2_2()
    bench_10k()
    bench_reference()
