"""Ledger: what 8.4.4 prints about its precision runs, recounted from Exercise 8-6's seed-0
record (``companion.sim.records_ch08.precision_results``) (source="sim")."""

from __future__ import annotations

from companion.chapters import ch08
from companion.ledger import Entry, entry
from companion.sim.records_ch08 import precision_results


def _right(results, config: str, task: int | None = None) -> int:
    c = results.configs.index(config)
    return sum(it.correct[c] for it in results.items if task is None or it.task == task)


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.4.4",)


def entries() -> list[Entry]:
    s, S = "8.4.4", "sim"
    res = precision_results(0)
    built = ("Exercise 8-6's seed-0 record: a seeded retrieval computation in numpy (FP8 "
             "emulated bit by bit) whose documents and questions are searched "
             "(records_ch08._seed0_draws) to keep what 8.4.4 prints; the runs are computed, "
             "not measured.")
    t5, t6 = ch08.PRECISION_TASK_WRONG_BF16_KV, ch08.PRECISION_TASK_WRONG_FP8_KV_BF16_Q
    return [
        entry(f"{s}/sim-runs", s, "runs per configuration (8 tasks, 2 runs x 2 concurrency "
              "levels)", "32", "runs", len(res.items), source=S, note=built),
        entry(f"{s}/sim-right-bf16-kv", s, "BF16 KV answers correctly", "28", "runs",
              _right(res, "BF16 KV"), source=S, note=built),
        entry(f"{s}/sim-right-fp8-kv", s, "the original FP8 path answers correctly", "26",
              "runs", _right(res, "FP8 KV"), source=S, note=built),
        entry(f"{s}/sim-right-fp8-kv-bf16-q", s, "FP8 KV with Q restored to BF16 answers "
              "correctly", "28", "runs", _right(res, "FP8 KV + BF16 Q"), source=S, note=built),
        entry(f"{s}/sim-task5-bf16-kv", s, "task 5 (n512-r0) under BF16 KV: right runs of four",
              "0", "runs", _right(res, "BF16 KV", t5), source=S, note=built),
        entry(f"{s}/sim-task5-fp8-kv-bf16-q", s, "task 5 under FP8 KV + BF16 Q: right runs of "
              "four", "4", "runs", _right(res, "FP8 KV + BF16 Q", t5), source=S, note=built),
        entry(f"{s}/sim-task6-bf16-kv", s, "task 6 (n512-r1) under BF16 KV: right runs of four",
              "4", "runs", _right(res, "BF16 KV", t6), source=S, note=built),
        entry(f"{s}/sim-task6-fp8-kv-bf16-q", s, "task 6 under FP8 KV + BF16 Q: right runs of "
              "four", "0", "runs", _right(res, "FP8 KV + BF16 Q", t6), source=S, note=built),
    ]
