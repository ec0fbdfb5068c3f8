"""Throughput of the paged-KV and speculative-sampling simulators (prints figures; not a test).

Times are the best of a few runs, in CPU time (time.process_time: the steadier figure on a
shared machine) with wall time next to it where they differ.

Run: .venv/bin/python benchmarks/bench_sim_kvcache.py
"""

from __future__ import annotations

import time

import numpy as np

from companion.sim.kvcache import BlockManager, PrefixCache
from companion.sim.paged_attention import KVStore, paged_attention
from companion.sim.speculative import simulate_rounds
from companion.specs import QWEN3_8B
from companion.units import GiB


_WALL = {}


def _best(fn, repeat=3):
    """Best CPU time of ``repeat`` runs (the machine is shared; the minimum is the signal); the
    best wall time goes to _WALL[fn]."""
    cpu, wall = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    _WALL[fn] = min(wall)
    return min(cpu)


def bench_allocate_free(n_ops=10_000, request_tokens=2320, live=30):
    """allocate + free pairs of 145-block requests in a 12 GiB Qwen3-8B pool (5461 blocks):
    the list-returning calls, then the count-returning fast path a service simulation uses."""
    def run():
        m = BlockManager.for_budget(12 * GiB, QWEN3_8B)
        for i in range(n_ops):
            m.allocate(i, request_tokens)
            if i >= live:
                m.free(i - live)

    def run_count():
        m = BlockManager.for_budget(12 * GiB, QWEN3_8B)
        for i in range(n_ops):
            m.allocate_count(i, request_tokens)
            if i >= live:
                m.free_count(i - live)

    def run_shared():
        m = BlockManager.for_budget(12 * GiB, QWEN3_8B)
        m.allocate("prefix", 6144)
        for i in range(n_ops):
            m.allocate_count(i, 6144 + request_tokens, share_from="prefix")
            if i >= live:
                m.free_count(i - live)
    for label, fn in (("allocate + free", run), ("allocate_count + free_count", run_count),
                      ("the same on a shared 6144-token prefix", run_shared)):
        s = _best(fn, repeat=5)
        print(f"{label} ({-(-request_tokens // 16)} private blocks each): {n_ops / s:,.0f} "
              f"pairs/s ({s / n_ops * 1e6:.1f} us CPU per pair, "
              f"{_WALL[fn] / n_ops * 1e6:.1f} us wall)")


def bench_append(n_ops=50_000, live=64):
    def run():
        m = BlockManager(16384, 16)
        for i in range(live):
            m.allocate(i, 2048)
        for k in range(n_ops):
            m.append(k % live)
    s = _best(run)
    print(f"append (1 token, decode step): {n_ops / s:,.0f} calls/s ({s / n_ops * 1e6:.2f} us)")


def bench_fork_cow(n_ops=5_000):
    def run():
        m = BlockManager(4 * n_ops + 16, 16)
        m.allocate("root", 1000)  # partial tail block: every child's first append copies it
        for i in range(n_ops):
            m.fork("root", i)
            m.append(i, 1)
        m.pop_copies()
    s = _best(run)
    print(f"fork + copy-on-write append: {n_ops / s:,.0f} pairs/s ({s / n_ops * 1e6:.1f} us)")


def bench_prefix_cache(n_requests=2_000):
    rng = np.random.default_rng(0)
    system = list(range(1024))
    requests = [system + rng.integers(2000, 3000, 512).tolist() for _ in range(n_requests)]

    def run():
        m = BlockManager(2000, 16)
        cache = PrefixCache(m)
        for i, toks in enumerate(requests):
            cache.admit(i, toks)
            cache.finish(i, toks)
        return cache
    s = _best(run, repeat=1)
    print(f"prefix cache admit + finish (1536-token requests, LRU eviction): "
          f"{n_requests / s:,.0f} requests/s")


def bench_paged_attention(n_tokens=2048):
    rng = np.random.default_rng(0)
    m = BlockManager(256, 16)
    table = m.allocate("s", n_tokens)
    store = KVStore.for_manager(m, n_kv_heads=8, head_dim=128)
    store.write(table, 0, rng.normal(size=(n_tokens, 8, 128)), rng.normal(size=(n_tokens, 8, 128)))
    q = rng.normal(size=(32, 128))
    s = _best(lambda: paged_attention(q, store, table, n_tokens))
    print(f"paged_attention, one query, {n_tokens} tokens, 32/8 heads: {s * 1e3:.1f} ms")


def bench_speculative(n_rounds=300_000):
    p, q = [0.25, 0.75], [0.0, 1.0]
    s = _best(lambda: simulate_rounds(p, q, 4, n_rounds, seed=1))
    print(f"speculative Monte Carlo (draft length 4): {n_rounds / s:,.0f} rounds/s, "
          f"{n_rounds / s * 5:,.0f} position samples/s ({n_rounds:,} rounds in {s * 1e3:.0f} ms)")


if __name__ == "__main__":
    bench_allocate_free()
    bench_append()
    bench_fork_cow()
    bench_prefix_cache()
    bench_paged_attention()
    bench_speculative()
