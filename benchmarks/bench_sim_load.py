"""Speed of the service-under-load simulator (prints figures; not a test).

Target: a service run of 10,000 requests (2048-token prompts, 256 output tokens, chunked
prefill, KV reserved per request in a 12 GiB paged pool, Qwen3-8B on the RTX PRO 6000 roofline
model, max 64 running) in at most 1 s on one core. Printed: best wall and CPU time of a few runs
(the machine is shared: CPU time is the steadier figure), rounds simulated, and effective vs
completion throughput; then a short/long mix whose long requests share a cached prefix, the
on-demand KV policy (one round at a time) and a goodput sweep. ``--profile`` prints where a
10,000-request run spends its time (cProfile, top functions by own time).

Run: .venv/bin/python benchmarks/bench_sim_load.py [--profile]
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

from companion.sim.load import (LONG_REQUEST, RETRIEVAL_DEADLINE_S, SHORT_REQUEST, goodput_sweep,
                                poisson_arrivals, run_service, workload)
from companion.specs import QWEN3_8B, RTX_PRO_6000
from companion.units import GiB

N_REQUESTS = 10_000
KV_BUDGET_BYTES = 12 * GiB
DEADLINE_S = 7.0


def _best(fn, repeat):
    """Best wall and best CPU time of ``repeat`` runs, and the last result."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - w)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu, out


def bench_service(rate_per_s: float, n: int = N_REQUESTS, kv_policy: str = "reserve",
                  repeat: int = 5, shapes=SHORT_REQUEST, weights=None, label: str = "") -> None:
    wl = workload(poisson_arrivals(rate_per_s, n, seed=0), shapes, weights=weights,
                  deadline_s=DEADLINE_S)

    def run():
        res = run_service(wl, policy="chunked", max_running=64, model=QWEN3_8B,
                          hardware=RTX_PRO_6000, kv_budget_bytes=KV_BUDGET_BYTES,
                          kv_policy=kv_policy)
        return res, res.summary()

    wall, cpu, (res, summ) = _best(run, repeat)
    print(f"  {n:>6,} {label}requests at {rate_per_s:6.1f}/s, {kv_policy:9s}: wall {wall:6.3f} s, "
          f"CPU {cpu:6.3f} s ({cpu / n * 1e6:5.1f} us/request, {res.n_rounds:,} rounds); "
          f"completion {summ['completion_throughput']:.2f}/s, effective "
          f"{summ['effective_throughput']:.2f}/s, peak KV {summ['peak_kv_blocks']}/"
          f"{summ['kv_blocks']} blocks, preemptions {summ['preemptions']}")


def bench_sweep() -> None:
    rates = (1, 2, 4, 6, 8, 12, 16, 32)
    for deadline in (DEADLINE_S, RETRIEVAL_DEADLINE_S):
        t = time.perf_counter()
        rows = goodput_sweep(rates, n_requests=300, deadline_s=deadline)
        s = time.perf_counter() - t
        print(f"  goodput_sweep: {len(rates)} rates x 300 requests, {deadline:g} s deadline, "
              f"correct with p = 294/336 ({s:.2f} s)")
        print("    rate/s  completion/s  effective/s  late  wrong  TTFT p99 s  latency p50 s")
        for r in rows:
            print(f"    {r['rate_per_s']:6.1f}  {r['completion_throughput']:12.2f}  "
                  f"{r['effective_throughput']:11.2f}  {r['late']:4d}  {r['wrong']:5d}  "
                  f"{r['ttft_p99_s']:10.3f}  {r['latency_p50_s']:13.3f}")


def _reference_loop_s() -> float:
    """CPU time of a fixed pure-Python loop: a yardstick for how contended the core is (compare
    runs on the same machine)."""
    c = time.process_time()
    sum(i * i for i in range(1_000_000))
    return time.process_time() - c


def profile_service(rate_per_s: float = 8.0, top: int = 15) -> None:
    """cProfile of one 10,000-request run (profiling slows it down about 3x)."""
    wl = workload(poisson_arrivals(rate_per_s, N_REQUESTS, seed=0), SHORT_REQUEST,
                  deadline_s=DEADLINE_S)
    prof = cProfile.Profile()
    prof.enable()
    run_service(wl, policy="chunked", max_running=64, model=QWEN3_8B, hardware=RTX_PRO_6000,
                kv_budget_bytes=KV_BUDGET_BYTES).summary()
    prof.disable()
    print(f"profile of {N_REQUESTS:,} requests at {rate_per_s:g}/s (own time, top {top}):")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; reference loop "
          f"{_reference_loop_s():.3f} s CPU")
    if "--profile" in sys.argv:
        profile_service()
        return
    print("service runs: chunked prefill (2048 / 4096), 12 GiB KV reserved at admission, "
          "Qwen3-8B on RTX PRO 6000 roofline, best of 5")
    for rate in (4.0, 6.0, 8.0, 1000.0):
        bench_service(rate)
    print("3 short : 1 long (8192 / 256, 6144-token prefix cached and charged), best of 3")
    bench_service(4.0, shapes=[SHORT_REQUEST, LONG_REQUEST], weights=[3, 1], repeat=3,
                  label="mixed ")
    print("on-demand KV growth with preemption (one round at a time), best of 1")
    bench_service(8.0, n=2000, kv_policy="on_demand", repeat=1)
    bench_sweep()


if __name__ == "__main__":
    main()
