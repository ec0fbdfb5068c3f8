"""companion.sim.scheduler: the chapters' schedules, validation, and fast == reference.

Expected numbers are the chapters' printed values at their printed rounding, or hand
computations from the chapter's stated inputs written out here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.sim import fast_scheduler
from companion import calc
from companion.formulas.core import static_batch_utilization
from companion.sim.scheduler import (POLICIES, Request, RooflineRoundTime, RoundTimeModel,
                                     RoundWork, Scheduler, StepPlusPrefillRoundTime,
                                     chapter17_round_time, simulate)
from companion.sim.scenarios import (chapter_8_2_2_requests, long_prompt_interference,
                                     token_budget_sweep)
from companion.specs import H100_SXM, LLAMA_8B, QWEN3_8B, RTX_PRO_6000

MS = 1e-3
FIT = RoundTimeModel(26.22e-3, 30.4e-6, 3e-9)   # 8.2.2, typed in from the text


def _run(policy, **kw):
    return simulate(chapter_8_2_2_requests(), policy, max_running=2, round_time=FIT, **kw)


def _chunked():
    return _run("chunked", chunk_tokens=2048, token_budget=4096)


# --- 8.2.2, as printed ------------------------------------------------------------------------

def test_fit_reproduces_lone_prefill_and_decode():
    res = simulate([Request("a", 0.0, 2048, 2)], "continuous", max_running=1, round_time=FIT)
    t = res.token_times["a"]
    assert t[0] / MS == pytest.approx(94.8, abs=0.05)
    assert (t[1] - t[0]) / MS == pytest.approx(26.26, abs=0.005)


@pytest.mark.parametrize("policy,kw,total_ms,max_itl_ms", [
    ("static", {}, 870, 26),
    ("continuous", {}, 766, 376),
    ("chunked", dict(chunk_tokens=2048, token_budget=4096), 844, 133),
])
def test_8_2_2_totals_and_longest_intervals(policy, kw, total_ms, max_itl_ms):
    res = _run(policy, **kw)
    assert res.makespan_s / MS == pytest.approx(total_ms, abs=0.5)
    assert res.max_itl_s / MS == pytest.approx(max_itl_ms, abs=0.5)
    assert all(len(res.token_times[r.id]) == r.output_tokens for r in chapter_8_2_2_requests())


def test_8_2_2_ratios():
    static, cont = _run("static"), _run("continuous")
    assert 100 * (1 - cont.makespan_s / static.makespan_s) == pytest.approx(12, abs=0.5)
    assert cont.max_itl_s / static.max_itl_s == pytest.approx(14, abs=0.5)


def test_exercise_8_2_hand_computation():
    """Exercise 8-2: r0/r1's prefill round, their next decode round, the round admitting r2."""
    prefill = 26.22 + 30.4e-3 * 4096 + 3e-6 * 2 * (2048 * 2049 / 2)          # ms
    decode = 26.22 + 30.4e-3 * 2 + 3e-6 * 2 * 2049
    admit_r2 = 26.22 + 30.4e-3 * (1 + 8192) + 3e-6 * (2050 + 8192 * 8193 / 2)
    res = _run("continuous")
    r = res.rounds
    assert r[0].duration_s / MS == pytest.approx(prefill, rel=1e-12)
    assert r[1].duration_s / MS == pytest.approx(decode, rel=1e-12)
    assert r[2].duration_s / MS == pytest.approx(admit_r2, rel=1e-12)
    assert [(s.request_id, s.kind, s.new_tokens, s.history_tokens) for s in r[2].segments] == [
        ("r0", "decode", 1, 2049), ("r2", "prefill", 8192, 0)]
    # the longest interval is r0's wait across r2's whole 8K prefill
    assert res.itl_s["r0"].max() == pytest.approx(r[2].duration_s)


def test_8_2_3_chunk_pairs_on_a_simulated_prefill():
    res = simulate([Request("x", 0.0, 8192, 1)], "chunked", max_running=1, round_time=FIT,
                   chunk_tokens=512)
    assert res.n_rounds == 16
    assert res.round_pairs[0] == 131_328 and res.round_pairs[-1] == 4_063_488


def test_chunked_rounds_respect_decode_first_and_budget():
    res = _chunked()
    for rnd in res.rounds:
        kinds = [s.kind for s in rnd.segments]
        assert kinds == sorted(kinds)        # "decode" segments before "prefill" chunks
        assert sum(s.new_tokens for s in rnd.segments) <= 4096
        assert all(s.new_tokens <= 2048 for s in rnd.segments)
    # r2 (8192 tokens) prefills in four chunks while r0 keeps decoding
    r2 = [s for rnd in res.rounds for s in rnd.segments if s.request_id == "r2"
          and s.kind == "prefill"]
    assert [s.history_tokens for s in r2] == [0, 2048, 4096, 6144]


def test_static_waits_for_the_group_to_drain():
    res = _run("static")
    tt = res.token_times
    assert res.first_scheduled_s[2] == pytest.approx(tt["r0"][-1])   # r2 starts after r0 ends
    for rnd in res.rounds:
        assert len({s.kind for s in rnd.segments}) == 1               # never mixes phases
    assert all(h == 2 for h in res.round_held_slots)                  # r1's slot idles


# --- 8.1.1, 8.2.4 -----------------------------------------------------------------------------

def test_8_1_1_timeline_with_queueing_and_an_inserted_prefill():
    rt = StepPlusPrefillRoundTime(26.5e-3, 0.096 / 2048)

    def admit(request, now_s, scheduler):
        return True if now_s >= 0.1 else 0.1

    short = Request("s", 0.0, 2048, 256)
    alone = simulate([short], "continuous", max_running=1, round_time=rt, admit=admit)
    assert alone.ttft_s["s"] == pytest.approx(0.196, abs=5e-4)
    assert alone.token_times["s"][-1] == pytest.approx(6.95, abs=0.005)
    assert len(alone.itl_s["s"]) == 255
    both = simulate([short, Request("o", 2.0, 2048, 256)], "continuous", max_running=2,
                    round_time=rt, admit=admit)
    assert both.itl_s["s"].max() / MS == pytest.approx(123, abs=0.5)
    assert both.token_times["s"][-1] == pytest.approx(7.05, abs=0.005)


def test_graph_padding_17_rows_run_as_32():
    res = simulate([Request(i, 0.0, 1, 2) for i in range(17)], "continuous", max_running=17,
                   round_time=FIT, captured_shapes=(16, 32))
    assert list(res.round_rows) == [32, 32]
    assert list(res.round_padding_rows) == [15, 15]
    assert res.padding_rows_total == 30
    plain = simulate([Request(i, 0.0, 1, 2) for i in range(16)], "continuous", max_running=16,
                     round_time=FIT, captured_shapes=(16, 32))
    assert plain.padding_rows_total == 0
    # padding costs per-token time: 15 rows x 30.4 us
    unpadded = simulate([Request(i, 0.0, 1, 2) for i in range(17)], "continuous",
                        max_running=17, round_time=FIT)
    assert (res.round_duration_s - unpadded.round_duration_s) == pytest.approx([15 * 30.4e-6] * 2)
    # beyond the largest captured shape the round runs unpadded
    big = simulate([Request("b", 0.0, 100, 1)], "continuous", max_running=1, round_time=FIT,
                   captured_shapes=(16, 32))
    assert big.round_rows[0] == 100


def test_token_budget_sweep_is_labelled_and_shows_the_trade():
    rows = token_budget_sweep()
    assert [r["token_budget"] for r in rows] == [512, 1024, 2048, 4096, 8192]
    queue = [r["queue_later_mean_s"] for r in rows]
    itl = [r["max_itl_s"] for r in rows]
    assert queue == sorted(queue, reverse=True) and itl == sorted(itl)
    assert "GENERATED" in token_budget_sweep.__doc__
    mixed = token_budget_sweep((1024,), n_requests=2, prompt_tokens=(512, 4096))
    assert len(mixed) == 1
    with pytest.raises(ValueError, match="prompt_tokens"):
        token_budget_sweep((1024,), n_requests=2, prompt_tokens=(512,))
    with pytest.raises(ValueError, match="token_budgets"):
        token_budget_sweep((4,), max_running=6)


# --- Chapter 17 -------------------------------------------------------------------------------

def test_17_3_head_of_line_stall():
    out = long_prompt_interference(8000, round_time=chapter17_round_time(6e-3))
    stall = out["worst_decode_itl_s"] - out["baseline_itl_s"]
    assert stall / MS == pytest.approx(259, abs=0.5)
    assert stall / out["baseline_itl_s"] == pytest.approx(43, abs=0.5)
    assert out["result"].queue_s["long"] == 0.0           # arrived exactly at a boundary


def test_17_6_static_utilization_from_slot_steps():
    outputs = [100, 200, 300, 400, 500, 600, 700, 800]
    res = simulate([Request(i, 0.0, 16, g) for i, g in enumerate(outputs)], "static",
                   max_running=8, round_time=chapter17_round_time())
    assert res.slot_steps() == (6400, 3600)
    assert 100 * res.utilization() == pytest.approx(56, abs=0.5)
    assert res.utilization() == pytest.approx(static_batch_utilization(outputs))
    # continuous batching with a queue keeps the slots busy
    cont = simulate([Request(i, 0.0, 16, g) for i, g in enumerate(outputs * 4)], "continuous",
                    max_running=8, round_time=chapter17_round_time())
    assert cont.utilization() > 0.95


def test_17_6_chunked_prefill():
    whole = long_prompt_interference(8000)
    chunked = long_prompt_interference(8000, 512)
    assert chunked["long_prompt_rounds"] == 16
    assert whole["long_prompt_rounds"] == 1
    assert round(whole["worst_decode_itl_s"] / MS, -1) == 260       # ~260 ms
    assert chunked["worst_decode_itl_s"] / MS == pytest.approx(23, abs=0.5)
    assert chunked["baseline_itl_s"] / MS == pytest.approx(6.1)
    # 15 rounds of 6.1 + 16.57 ms and a last one with the 320-token remainder
    per_token = 2 * 8e9 / (0.5 * 989e12)
    expected = 15 * (6.1e-3 + 512 * per_token) + 6.1e-3 + 320 * per_token
    assert chunked["long_ttft_s"] == pytest.approx(expected, rel=1e-9)
    assert whole["long_ttft_s"] == pytest.approx(6.1e-3 + 8000 * per_token, rel=1e-9)


def test_chapter17_round_time_matches_the_text():
    rt = chapter17_round_time()
    assert rt.prefill_token_s * 8000 / MS == pytest.approx(259, abs=0.5)
    assert rt.prefill_token_s * 512 / MS == pytest.approx(16.6, abs=0.05)
    assert rt == StepPlusPrefillRoundTime.from_hardware(LLAMA_8B, H100_SXM, decode_step_s=6.1e-3)


# --- round-time models ------------------------------------------------------------------------

def test_roofline_round_time_reduces_to_the_decode_roofline():
    rt = RooflineRoundTime(QWEN3_8B, RTX_PRO_6000)
    b, L = 16, 2048
    work = RoundWork(b, 0, b, b * (L + 1), b * (L + 1), b)
    k = calc.kv_bytes_per_token(QWEN3_8B)
    read = (QWEN3_8B.streamed_weight_bytes + b * (L + 1) * k) / RTX_PRO_6000.mem_bw_bytes_per_s
    assert rt.time_s(work) == pytest.approx(read)
    # D_w / 1792 GB/s is the "about 8.4 ms" weight read of 8.2.2's fixed part
    assert rt.read_s(RoundWork(1, 0, 1, 0, 0, 1)) / MS == pytest.approx(8.4, abs=0.05)
    # a long prefill is compute-bound: matrix + attention FLOPs at peak
    pre = RoundWork(0, 8192, 8192, 8192 * 8193 // 2, 8192, 1)
    flops = (calc.matrix_flops(QWEN3_8B, 8192)
             + calc.matrix_flops(QWEN3_8B, 1, include_lm_head=True) - calc.matrix_flops(QWEN3_8B, 1)
             + calc.attention_flops(QWEN3_8B, 8192, 0))
    assert rt.time_s(pre) == pytest.approx(flops / RTX_PRO_6000.peak_flops_per_s)
    half = RooflineRoundTime(QWEN3_8B, RTX_PRO_6000, mfu=0.5, mbu=0.5, overhead_s=1e-3)
    assert half.time_s(pre) == pytest.approx(1e-3 + 2 * rt.time_s(pre))
    # arrays elementwise, identical to scalars
    p = np.array([100, 10**6, 10**8])
    arr = rt.time_s(RoundWork(4, 0, 4, p, p, 4))
    assert list(arr) == [rt.time_s(RoundWork(4, 0, 4, int(x), int(x), 4)) for x in p]


@pytest.mark.parametrize("model", [FIT, RooflineRoundTime(QWEN3_8B, RTX_PRO_6000),
                                   chapter17_round_time()])
def test_decode_shortcut_is_identical_to_time_s(model):
    for n, rows, p in [(1, 1, 2049), (35, 64, 35 * 2300), (80, 80, 10**7)]:
        assert model.evaluate(n, 0, rows, p, p, n) == model.time_s(RoundWork(n, 0, rows, p, p, n))
        assert model.time_s(RoundWork(n, 0, rows, p, p, n)) == _formula(model, n, rows, p)


def _formula(model, n, rows, pairs):
    """A pure decode round's time by each model's documented formula, written out here."""
    if isinstance(model, RoundTimeModel):
        return model.fixed_s + model.per_token_s * rows + model.per_pair_s * pairs
    if isinstance(model, StepPlusPrefillRoundTime):
        return model.decode_step_s * (n > 0) + model.prefill_token_s * 0
    c = (model.flops_per_row * rows + model.flops_per_emitted * n
         + model.flops_per_pair * pairs) / model.flops_per_s
    r = (model.weight_bytes + model.kv_bytes_per_token * pairs) / model.bytes_per_s
    return model.overhead_s + (c if c > r else r)


def test_user_round_time_models_plug_in():
    calls = []

    def per_row(work):                   # a plain function: not vectorised
        calls.append(work)
        return 1e-3 * work.rows + 1e-9 * work.pairs

    res = simulate(chapter_8_2_2_requests(), "continuous", max_running=2, round_time=per_row)
    ref = simulate(chapter_8_2_2_requests(), "continuous", max_running=2, round_time=per_row,
                   engine="reference")
    assert dict(res.token_times) == dict(ref.token_times)
    assert all(isinstance(w, RoundWork) for w in calls)

    class Fixed:
        vectorized = True

        def time_s(self, work):
            return 0.01

    res = simulate([Request("a", 0.0, 5, 200)], "continuous", max_running=1, round_time=Fixed())
    assert res.makespan_s == pytest.approx(2.0)
    with pytest.raises(ValueError, match="round_time"):
        simulate([Request("a", 0.0, 5, 2)], "continuous", max_running=1,
                 round_time=lambda work: 0.0)


# --- results ----------------------------------------------------------------------------------

def test_result_views_agree():
    res = _chunked()
    table = res.requests_table()
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    for k, rid in enumerate(res.ids):
        tt = res.token_times[rid]
        assert table["first_token_s"][k] == tt[0] and table["finish_s"][k] == tt[-1]
        assert table["ttft_s"][k] == pytest.approx(tt[0] - table["arrival_s"][k])
        assert table["max_itl_s"][k] == pytest.approx(max(np.diff(tt)))
        assert list(res.itl_s[rid]) == list(np.diff(tt))
    assert res.max_itl_s == max(table["max_itl_s"])
    assert sorted(res.itl_values_s()) == sorted(np.concatenate([res.itl_s[i] for i in res.ids]))
    assert res.round_emitted.sum() == sum(r.output_tokens for r in res.requests)
    gantt = res.gantt_rows()
    assert {k for *_, k in gantt} == {"queued", "prefill", "decode"}
    assert all(start < end for _, start, end, _ in gantt)
    merged = res.gantt_rows(merge_decode=True, include_queue=False)
    assert sum(1 for g in merged if g[3] == "decode") == 4
    assert "policy chunked" in res.summary() and "r3" in res.summary()
    assert res.round(2) == res.rounds[2]
    with pytest.raises(ValueError, match="index"):
        res.round(99)
    assert "chunked" in repr(res)


def test_idle_gap_jumps_to_the_next_arrival():
    res = simulate([Request("a", 0.0, 10, 2), Request("b", 5.0, 10, 2)], "continuous",
                   max_running=4, round_time=FIT)
    assert res.first_scheduled_s[1] == 5.0
    assert res.round_start_s[2] == 5.0
    assert res.queue_s["b"] == 0.0


# --- admission callback and incremental driving -----------------------------------------------

def test_admission_reject_defer_and_finish_callbacks():
    finished = []

    def admit(r, now_s, s):
        if r.id == "r1":
            return "reject"
        if r.id == "r3" and s.running_count:
            return "defer"                         # wait until nothing else runs
        return "admit"

    res = simulate(chapter_8_2_2_requests(), "continuous", max_running=2, round_time=FIT,
                   admit=admit, on_finish=lambda r, t, s: finished.append((r.id, t)))
    assert res.rejected == {"r1": 0.0}
    assert res.token_times["r1"] == [] and math.isnan(res.ttft_s["r1"])
    assert res.first_scheduled_s[3] >= max(res.token_times["r0"][-1], res.token_times["r2"][-1])
    assert sorted(finished) == sorted((rid, res.token_times[rid][-1])
                                      for rid in ("r0", "r2", "r3"))


def test_deferring_forever_while_idle_is_an_error():
    with pytest.raises(RuntimeError, match="admit"):
        simulate([Request("a", 0.0, 5, 2)], "continuous", max_running=1, round_time=FIT,
                 admit=lambda r, t, s: None)
    with pytest.raises(ValueError, match="admit"):
        simulate([Request("a", 0.0, 5, 2)], "continuous", max_running=1, round_time=FIT,
                 admit=lambda r, t, s: t)           # a retry time must lie in the future
    with pytest.raises(ValueError, match="admit"):
        simulate([Request("a", 0.0, 5, 2)], "continuous", max_running=1, round_time=FIT,
                 admit=lambda r, t, s: "maybe")


def test_incremental_driving_matches_one_shot():
    reqs = chapter_8_2_2_requests()
    one = _chunked()
    s = Scheduler("chunked", max_running=2, round_time=FIT, chunk_tokens=2048,
                  token_budget=4096)
    s.add(reqs[:2])
    s.run(until_s=0.015)
    s.add(reqs[2])
    s.run(until_s=0.025)
    s.add([reqs[3]])
    partial = s.run(until_s=0.4).result()
    assert 0 < partial.round_emitted.sum() < one.round_emitted.sum()
    assert not partial.finished.all()
    s.run()
    res = s.result()
    assert dict(res.token_times) == dict(one.token_times)
    assert np.array_equal(res.round_start_s, one.round_start_s)
    with pytest.raises(ValueError, match="horizon"):
        s.add(Request("late", 0.1, 10, 1))
    with pytest.raises(ValueError, match="duplicate"):
        s.add(Request("r0", 5.0, 10, 1))


# --- a cached prefix (Request.cached_tokens) --------------------------------------------------

def test_cached_prefix_is_charged_but_not_recomputed():
    # 8.3.2's long request: 8192 prompt tokens, the first 6144 cached. Its one prefill round
    # computes 2048 tokens that attend to the 6144 cached ones: 2048 x 6144 + 2048 x 2049 / 2 =
    # 14,681,088 pairs and 8192 KV tokens read; then a decode step on 8192 tokens (8193 pairs).
    res = simulate([Request("long", 0.0, 8192, 2, cached_tokens=6144)], "chunked",
                   max_running=1, round_time=FIT, chunk_tokens=2048)
    assert res.n_rounds == 2
    assert list(res.round_prefill_tokens) == [2048, 0]
    assert list(res.round_pairs) == [14_681_088, 8193]
    assert list(res.round_context_tokens) == [8192, 8193]
    prefill_ms = 26.22 + 30.4e-3 * 2048 + 3e-6 * 14_681_088
    assert res.round_duration_s[0] / MS == pytest.approx(prefill_ms, rel=1e-12)
    assert [(s.kind, s.new_tokens, s.history_tokens) for s in res.rounds[0].segments] == [
        ("prefill", 2048, 6144)]
    # the same round as the last 2048-token chunk of the uncached prompt
    whole = simulate([Request("w", 0.0, 8192, 2)], "chunked", max_running=1, round_time=FIT,
                     chunk_tokens=2048)
    assert whole.round_pairs[3] == res.round_pairs[0]
    assert whole.round_duration_s[3] == res.round_duration_s[0]
    # continuous batching: the rest of the prompt in one round, likewise
    cont = simulate([Request("long", 0.0, 8192, 2, cached_tokens=6144)], "continuous",
                    max_running=1, round_time=FIT)
    assert cont.round_duration_s[0] == res.round_duration_s[0]
    assert cont.cached_tokens.tolist() == [6144]


def test_cached_tokens_zero_changes_nothing():
    base = simulate(chapter_8_2_2_requests(), "chunked", max_running=2, round_time=FIT,
                    chunk_tokens=2048, token_budget=4096)
    zero = simulate([dataclasses.replace(r, cached_tokens=0) for r in chapter_8_2_2_requests()],
                    "chunked", max_running=2, round_time=FIT, chunk_tokens=2048,
                    token_budget=4096)
    _same(base, zero)


@pytest.mark.parametrize("cached,error,match", [
    (-1, ValueError, "cached_tokens"),
    (10, ValueError, "cached_tokens"),          # = prompt_tokens: nothing left to compute
    (2.5, ValueError, "cached_tokens"),
    ("3", TypeError, "cached_tokens"),
])
def test_bad_cached_tokens(cached, error, match):
    with pytest.raises(error, match=match):
        Request("a", 0.0, 10, 2, cached)


# --- bulk input and a driver's interventions (the interface companion.sim.load uses) ----------

def test_add_many_equals_add():
    rng = np.random.default_rng(3)
    arrivals = np.sort(rng.uniform(0, 2, 40))
    prompts = rng.integers(1, 3000, 40)
    outputs = rng.integers(1, 60, 40)
    cached = np.minimum(rng.integers(0, 500, 40), prompts - 1)
    kw = dict(max_running=4, round_time=FIT, chunk_tokens=512, token_budget=1024)
    one = Scheduler("chunked", **kw)
    ids = one.add_many(arrivals, prompts, outputs, cached_tokens=cached)
    assert ids == list(range(40))
    two = Scheduler("chunked", **kw)
    two.add([Request(i, float(a), int(p), int(g), int(c))
             for i, (a, p, g, c) in enumerate(zip(arrivals, prompts, outputs, cached))])
    _same(one.run().result(), two.run().result())
    # scalars apply to all; ids may be given and continue after earlier adds
    s = Scheduler("continuous", max_running=2, round_time=FIT)
    s.add(Request("x", 0.0, 10, 2))
    assert s.add_many([0.0, 0.1], 10, 2) == [1, 2]
    assert s.add_many([0.2], [5], [3], ids=["y"]) == ["y"]
    res = s.run().result()
    assert res.ids == ["x", 1, 2, "y"] and res.finished.all()


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(arrival_s=[0.0, math.nan]), ValueError, r"arrival_s\[1\]"),
    (dict(arrival_s=[0.0, -1.0]), ValueError, r"arrival_s\[1\]"),
    (dict(arrival_s="0"), TypeError, "arrival_s"),
    (dict(arrival_s=[0.0, "1"]), TypeError, r"arrival_s\[1\]"),
    (dict(prompt_tokens=[10, 2.5]), ValueError, r"prompt_tokens\[1\]"),
    (dict(prompt_tokens=[10, 0]), ValueError, r"prompt_tokens\[1\]"),
    (dict(prompt_tokens=[10, True]), TypeError, r"prompt_tokens\[1\]"),
    (dict(prompt_tokens=[10]), ValueError, "prompt_tokens"),
    (dict(output_tokens=0), ValueError, "output_tokens"),
    (dict(output_tokens=math.inf), ValueError, "output_tokens"),
    (dict(cached_tokens=[0, 10]), ValueError, r"cached_tokens\[1\]"),
    (dict(cached_tokens=-1), ValueError, "cached_tokens"),
    (dict(ids=["a", "a"]), ValueError, "ids"),
    (dict(ids=["a", 1.5]), TypeError, r"ids\[1\]"),
    (dict(ids=["a"]), ValueError, "ids"),
])
def test_add_many_validates_columns(kwargs, error, match):
    s = Scheduler("continuous", max_running=2, round_time=FIT)
    args = dict(arrival_s=[0.0, 1.0], prompt_tokens=[10, 10], output_tokens=2)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        s.add_many(**args)
    assert s.run().result().n_rounds == 0            # nothing was queued


def test_add_many_respects_the_horizon_and_known_ids():
    s = Scheduler("continuous", max_running=2, round_time=FIT)
    s.add_many([0.0], 10, 2, ids=["a"])
    s.run(until_s=1.0)
    with pytest.raises(ValueError, match="arrival_s"):
        s.add_many([0.5], 10, 2)
    with pytest.raises(ValueError, match="ids"):
        s.add_many([2.0], 10, 2, ids=["a"])


def test_state_queries_between_runs():
    reqs = [Request("a", 0.0, 2048, 20), Request("b", 0.0, 2048, 20),
            Request("c", 5.0, 100, 3)]
    s = Scheduler("continuous", max_running=1, round_time=FIT)
    s.add(reqs)
    assert [s.request_state(r.id) for r in reqs] == ["pending"] * 3
    assert s.next_event_s == 0.0
    s.run(until_s=0.2)
    assert s.request_state("a") == "decoding" and s.request_state("b") == "waiting"
    assert s.request_state("c") == "pending"
    assert s.next_event_s == 5.0                      # the next arrival
    assert s.first_token_round("a") == 0 and s.first_token_round("b") == -1
    assert s.round_time is FIT
    starts, durs, ends = s.round_times()
    assert len(ends) == s.rounds_done and np.array_equal(starts[1:], ends[:-1])
    with pytest.raises(ValueError):
        ends[0] = 0.0                                  # read-only views
    s.run()
    res = s.result()
    assert s.next_event_s == math.inf
    assert all(s.request_state(r.id) == "finished" for r in reqs)
    assert [s.first_token_round(i) for i in res.ids] == res.first_token_round.tolist()
    assert np.array_equal(s.round_times()[2], res.round_end_s)
    assert np.array_equal(s.round_times()[0], res.round_start_s)
    with pytest.raises(ValueError, match="request_id"):
        s.first_token_round("nobody")


def test_cancel_queued_and_running_requests():
    reqs = [Request("a", 0.0, 2048, 50), Request("b", 0.0, 2048, 50),
            Request("c", 0.0, 512, 5), Request("d", 9.0, 512, 5)]
    s = Scheduler("continuous", max_running=1, round_time=FIT)
    s.add(reqs)
    s.run(until_s=0.3)                                 # a is decoding, b and c wait
    emitted = s.rounds_done - s.first_token_round("a")
    assert s.cancel("a") == emitted > 1               # tokens so far; its slot is free now
    assert s.cancel("b") == 0                          # a waiting request just leaves
    assert s.cancel("d") == 0                          # one that has not arrived yet, too
    assert s.running_count == 0 and s.waiting_count == 1
    t_cancel = s.now_s
    s.run()
    res = s.result()
    assert res.cancelled == {"a": t_cancel, "b": t_cancel, "d": t_cancel}
    assert res.requests_table()["emitted"].tolist() == [emitted, 0, 5, 0]
    assert len(res.token_times["a"]) == emitted and res.token_times["b"] == []
    assert res.first_scheduled_s[2] == t_cancel          # c takes the freed slot at once
    assert res.finished.tolist() == [False, False, True, False]
    assert math.isnan(res.finish_s[0]) and s.request_state("a") == "cancelled"
    with pytest.raises(ValueError, match="request_id"):
        s.cancel("a")                                  # already cancelled
    with pytest.raises(ValueError, match="request_id"):
        s.cancel("c")                                  # finished
    with pytest.raises(ValueError, match="request_id"):
        s.cancel("zz")


def test_preempt_and_requeue_front_resume_by_recompute():
    reqs = [Request("a", 0.0, 2048, 40), Request("b", 0.01, 1024, 10)]
    s = Scheduler("continuous", max_running=1, round_time=FIT)
    s.add(reqs)
    s.run(until_s=0.3)
    assert s.request_state("a") == "decoding" and s.request_state("b") == "waiting"
    e = s.preempt("a")
    now = s.now_s
    # the continuation: prompt + emitted tokens prefilled again, the rest generated; it goes
    # ahead of b, which arrived earlier
    s.requeue_front(Request("a'", now, 2048 + e, 40 - e))
    assert s.request_state("a'") == "waiting" and s.request_state("a") == "preempted"
    s.run()
    res = s.result()
    assert res.preempted == {"a": now}
    assert len(res.token_times["a"]) == e and len(res.token_times["a'"]) == 40 - e
    assert res.first_scheduled_s[res.ids.index("a'")] == now
    assert res.first_scheduled_s[res.ids.index("b")] == res.token_times["a'"][-1]
    assert res.token_times["a'"][0] > res.token_times["a"][-1]
    # the recompute round prefills 2048 + e tokens
    first = res.rounds[s.first_token_round("a'")]
    assert [(g.kind, g.new_tokens) for g in first.segments] == [("prefill", 2048 + e)]
    with pytest.raises(ValueError, match="request_id"):
        s.preempt("b")                                 # finished, not running
    with pytest.raises(ValueError, match="request"):
        s.requeue_front(Request("late", s.now_s + 1.0, 10, 2))   # has not arrived
    with pytest.raises(ValueError, match="request"):
        s.requeue_front(Request("b", 0.0, 10, 2))                 # id in use
    with pytest.raises(TypeError, match="request"):
        s.requeue_front(("x", 0.0, 10, 2))


def test_interventions_are_refused_inside_callbacks():
    def on_finish(r, t, sched):
        sched.cancel("b")

    s = Scheduler("continuous", max_running=2, round_time=FIT, on_finish=on_finish)
    s.add([Request("a", 0.0, 10, 1), Request("b", 0.0, 10, 5)])
    with pytest.raises(RuntimeError, match="cancel"):
        s.run()


# --- the fast engine's shortcuts for its own round-time models --------------------------------

@pytest.mark.parametrize("model,n,lo,hi,linear", [
    (RooflineRoundTime(QWEN3_8B, RTX_PRO_6000), 4, 4 * 2049, 4 * 2400, True),        # reads
    (RooflineRoundTime(QWEN3_8B, RTX_PRO_6000), 1000, 1000, 9000, True),            # FLOPs
    (RooflineRoundTime(QWEN3_8B, RTX_PRO_6000), 1000, 10**5, 6 * 10**5, False),     # crossing
    (RooflineRoundTime(QWEN3_8B, RTX_PRO_6000, mbu=0.7, mfu=0.4, overhead_s=2e-3), 35,
     35 * 2049, 35 * 2400, True),
    (FIT, 3, 3 * 100, 3 * 5000, True),
    (chapter17_round_time(), 8, 8, 8 * 900, True),
])
def test_decode_shortcuts_are_bit_identical_to_time_s(model, n, lo, hi, linear):
    rows = n
    pairs = np.arange(lo, hi + 1, n, dtype=np.int64)
    exact = [_formula(model, n, rows, int(p)) for p in pairs]
    assert [model.time_s(RoundWork(n, 0, rows, int(p), int(p), n)) for p in pairs] == exact
    lin = model.decode_line(n, rows, lo, int(pairs[-1]))
    assert (lin is not None) == linear
    if lin is not None:
        a, b, c, e = lin
        assert [(a + b * int(p)) / c + e for p in pairs] == exact            # scalar loop
        assert (np.divide(a + b * pairs, c) + e).tolist() == exact           # vector path
    arr = model.evaluate(n, 0, rows, pairs, pairs, n)                      # numpy arrays
    assert np.broadcast_to(arr, pairs.shape).tolist() == exact


# --- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,param", [
    (dict(arrival_s=-1.0), "arrival_s"),
    (dict(output_tokens=0), "output_tokens"),
    (dict(prompt_tokens=0), "prompt_tokens"),
    (dict(prompt_tokens=2.5), "prompt_tokens"),
    (dict(output_tokens=math.nan), "output_tokens"),
])
def test_bad_requests(kwargs, param):
    base = dict(id="a", arrival_s=0.0, prompt_tokens=10, output_tokens=2)
    with pytest.raises(ValueError, match=param):
        Request(**dict(base, **kwargs))


def test_bad_request_types_and_ids():
    with pytest.raises(TypeError, match="id"):
        Request(1.5, 0.0, 10, 2)
    with pytest.raises(TypeError, match="prompt_tokens"):
        Request("a", 0.0, "10", 2)
    dup = [Request("a", 0.0, 10, 2), Request("a", 1.0, 10, 2)]
    with pytest.raises(ValueError, match="requests: duplicate"):
        simulate(dup, "continuous", max_running=1, round_time=FIT)
    with pytest.raises(TypeError, match=r"requests\[0\]"):
        simulate([("a", 0.0, 10, 2)], "continuous", max_running=1, round_time=FIT)


@pytest.mark.parametrize("policy,kwargs,param", [
    ("continuous", dict(max_running=0), "max_running"),
    ("continuous", dict(max_running=1.5), "max_running"),
    ("chunked", dict(), "chunk_tokens"),
    ("chunked", dict(token_budget=1, max_running=2), "token_budget"),
    ("chunked", dict(chunk_tokens=0), "chunk_tokens"),
    ("static", dict(chunk_tokens=512), "chunk_tokens"),
    ("continuous", dict(token_budget=512), "token_budget"),
    ("continuous", dict(captured_shapes=(16, 0)), "captured_shapes"),
    ("continuous", dict(captured_shapes=()), "captured_shapes"),
    ("rolling", dict(), "policy"),
    ("continuous", dict(engine="slow"), "engine"),
])
def test_bad_configuration(policy, kwargs, param):
    kw = dict(max_running=2, round_time=FIT)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=param):
        simulate(chapter_8_2_2_requests(), policy, **kw)


def test_bad_models():
    with pytest.raises(TypeError, match="round_time"):
        simulate(chapter_8_2_2_requests(), "static", max_running=2, round_time=3)
    with pytest.raises(ValueError, match="per_token_s"):
        RoundTimeModel(0.0, 0.0, 1e-9)
    with pytest.raises(ValueError, match="fixed_s"):
        RoundTimeModel(-1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="mbu"):
        RooflineRoundTime(QWEN3_8B, RTX_PRO_6000, mbu=0)
    with pytest.raises(TypeError, match="hardware"):
        RooflineRoundTime(QWEN3_8B, "H100")
    with pytest.raises(ValueError, match="decode_step_s"):
        StepPlusPrefillRoundTime(0.0, 1e-5)
    with pytest.raises(ValueError, match="until_s"):
        Scheduler("static", max_running=1, round_time=FIT).run(until_s=-1)


# --- fast engine == reference engine, and the invariants --------------------------------------

MODELS = [FIT, RooflineRoundTime(QWEN3_8B, RTX_PRO_6000), chapter17_round_time(),
          lambda w: 2e-3 + 1e-5 * w.rows + 1e-10 * w.pairs]


@st.composite
def traces(draw):
    n = draw(st.integers(1, 7))
    arrivals = st.one_of(st.sampled_from([0.0, 0.01, 0.05, 0.2]),
                         st.floats(0.0, 0.6, allow_nan=False))
    reqs = []
    for i in range(n):
        a, p, g = draw(arrivals), draw(st.integers(1, 3000)), draw(st.integers(1, 140))
        cached = draw(st.one_of(st.just(0), st.integers(0, p - 1)))   # a cached prefix
        reqs.append(Request(i, a, p, g, cached))
    policy = draw(st.sampled_from(POLICIES))
    max_running = draw(st.integers(1, 4))
    kw = dict(max_running=max_running, round_time=draw(st.sampled_from(MODELS)),
              captured_shapes=draw(st.sampled_from([None, (16, 32), (1, 2, 4, 8, 16, 32, 64)])))
    if policy == "chunked":
        chunk = draw(st.one_of(st.none(), st.integers(1, 2500)))
        budget = draw(st.one_of(st.none(), st.integers(max_running, 4096)))
        if chunk is None and budget is None:
            chunk = 512
        kw.update(chunk_tokens=chunk, token_budget=budget)
    return reqs, policy, kw, draw(st.booleans()), draw(st.sampled_from([1, 48, 10**9]))


@pytest.mark.parametrize("vector_min", [1, 10**9])
@pytest.mark.parametrize("model", MODELS[:3])
def test_arrival_exactly_at_a_boundary_is_admitted_there(vector_min, model):
    """An arrival equal to a round's end joins at that boundary (fast == reference)."""
    old = fast_scheduler.VECTOR_MIN_ROUNDS
    fast_scheduler.VECTOR_MIN_ROUNDS = vector_min
    try:
        base = [Request("a", 0.0, 300, 200), Request("b", 0.0, 40, 150)]
        probe = simulate(base, "continuous", max_running=3, round_time=model)
        for j in (1, 7, 60):
            late = Request("c", float(probe.round_end_s[j]), 100, 3)
            fast, ref = (simulate(base + [late], "continuous", max_running=3, round_time=model,
                                  engine=e) for e in ("fast", "reference"))
            _same(fast, ref)
            assert fast.first_scheduled_s[2] == late.arrival_s
    finally:
        fast_scheduler.VECTOR_MIN_ROUNDS = old


def _admission(log):
    """A deterministic admission policy exercising reject, defer and timed retries."""
    def admit(r, now_s, s):
        log.append((r.id, now_s, s.running_count, s.waiting_count, s.reserved_tokens,
                    s.cached_tokens))
        key = r.id % 6
        if key == 0 and r.prompt_tokens > 2500:
            return False
        if key == 1 and s.running_count and s.cached_tokens + r.prompt_tokens > 4000:
            return None
        if key == 2 and now_s < r.arrival_s + 0.03:
            return now_s + 0.02
        if key == 3 and s.running_count and s.reserved_tokens > 3000:
            return "defer"
        return True
    return admit


def _same(a, b):
    for name in ("round_start_s", "round_duration_s", "round_end_s", "round_decodes",
                 "round_prefill_tokens", "round_rows", "round_pairs", "round_context_tokens",
                 "round_emitted", "round_held_slots", "first_scheduled_s", "admitted_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert np.array_equal(a.chunks, b.chunks)
    assert a.rejected == b.rejected
    assert dict(a.token_times) == dict(b.token_times)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_fast_engine_equals_reference_and_invariants(trace):
    reqs, policy, kw, use_admit, vector_min = trace
    logs = ([], [])
    finishes = ([], [])
    old = fast_scheduler.VECTOR_MIN_ROUNDS
    fast_scheduler.VECTOR_MIN_ROUNDS = vector_min
    try:
        results = [simulate(reqs, policy, engine=engine,
                            admit=_admission(logs[k]) if use_admit else None,
                            on_finish=lambda r, t, s, k=k: finishes[k].append((r.id, t)), **kw)
                   for k, engine in enumerate(("fast", "reference"))]
    finally:
        fast_scheduler.VECTOR_MIN_ROUNDS = old
    fast, ref = results
    _same(fast, ref)
    assert dict(ref.token_times) == ref.recorded_token_times   # lazy lists = explicit emissions
    assert logs[0] == logs[1]
    assert sorted(finishes[0]) == sorted(finishes[1])

    by_id = {r.id: r for r in reqs}
    for rid, times in fast.token_times.items():
        r = by_id[rid]
        if rid in fast.rejected:
            assert times == []
            continue
        assert len(times) == r.output_tokens                      # every token exactly once
        assert times[0] >= r.arrival_s
        assert all(b > a for a, b in zip(times, times[1:]))       # increasing
    assert len(finishes[0]) == len(reqs) - len(fast.rejected)
    table = fast.requests_table()
    for k, rid in enumerate(fast.ids):
        gaps = np.diff(fast.token_times[rid])
        assert (math.isnan(table["max_itl_s"][k]) if len(gaps) == 0
                else table["max_itl_s"][k] == gaps.max())
    if len(fast.itl_values_s()):
        assert fast.max_itl_s == fast.itl_values_s().max()
    assert np.all(fast.round_held_slots <= kw["max_running"])
    assert np.all(fast.round_duration_s > 0)
    assert np.all(fast.round_start_s[1:] >= fast.round_end_s[:-1])
    if policy == "chunked" and kw["token_budget"] is not None:
        assert np.all(fast.round_new_tokens <= kw["token_budget"])
    computed = {}
    for rnd in fast.rounds:
        assert len({s.request_id for s in rnd.segments}) <= fast.round_held_slots[rnd.index]
        assert rnd.rows >= sum(s.new_tokens for s in rnd.segments)
        for s in rnd.segments:
            if s.kind == "prefill":
                computed[s.request_id] = computed.get(s.request_id, 0) + s.new_tokens
                if policy == "chunked" and kw["chunk_tokens"] is not None:
                    assert s.new_tokens <= kw["chunk_tokens"]
        if policy == "static":
            assert len({s.kind for s in rnd.segments}) == 1
    # every uncached prompt token is computed once; a cached prefix is never recomputed
    assert computed == {rid: by_id[rid].prompt_tokens - by_id[rid].cached_tokens
                        for rid in by_id if rid not in fast.rejected}
    for j, k, c, h in fast.chunks.tolist():
        assert h >= fast.cached_tokens[k]


@settings(max_examples=30, deadline=None)
@given(traces(), st.lists(st.floats(0.0, 3.0, allow_nan=False), max_size=4))
def test_incremental_runs_equal_one_shot(trace, cuts):
    reqs, policy, kw, _, _ = trace
    one = simulate(reqs, policy, **kw)
    s = Scheduler(policy, **kw)
    added = set()
    for cut in sorted(cuts):
        s.add([r for r in reqs if r.arrival_s < cut and r.id not in added])
        added |= {r.id for r in reqs if r.arrival_s < cut}
        s.run(until_s=cut)
    s.add([r for r in reqs if r.id not in added])
    _same(s.run().result(), one)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.floats(0.0, 1.0, allow_nan=False), st.integers(0, 11))
def test_cancel_equals_a_request_that_asked_for_fewer_tokens(trace, frac, pick):
    """Cancelling a decoding request at a boundary gives the schedule of the reference engine in
    which it only asked for the tokens it got; cancelling a queued one, the schedule without
    it (a preempted one, with its continuation queued first: the same, plus the continuation)."""
    reqs, policy, kw, _, _ = trace
    s = Scheduler(policy, **kw)
    s.add(reqs)
    s.run(until_s=frac * simulate(reqs, policy, **kw).makespan_s)
    states = {r.id: s.request_state(r.id) for r in reqs}
    candidates = [r for r in reqs if states[r.id] in ("decoding", "waiting", "pending")]
    decoding = [r for r in candidates if states[r.id] == "decoding"]
    pool = decoding if decoding and pick % 3 else candidates
    if not pool:
        return
    target = pool[pick % len(pool)]
    state = states[target.id]
    now = s.now_s
    others_queued = any(s.request_state(r.id) in ("waiting", "pending") and r.arrival_s < now
                        for r in reqs if r.id != target.id)
    preempt = state == "decoding" and not others_queued and pick % 2 == 0
    if preempt:
        e = s.preempt(target.id)
        rest = Request("rest", now, target.prompt_tokens + e, target.output_tokens - e,
                       target.cached_tokens)
        s.requeue_front(rest)
    else:
        e = s.cancel(target.id)
    assert e == (s.rounds_done - s.first_token_round(target.id) if state == "decoding" else 0)
    res = s.run().result()
    if state == "decoding":
        expected = [dataclasses.replace(r, output_tokens=e) if r.id == target.id else r
                    for r in reqs]
    else:
        expected = [r for r in reqs if r.id != target.id]
    if preempt:
        expected = [rest] + expected
    if not expected:
        assert res.n_rounds == s.rounds_done
        return
    ref = simulate(expected, policy, engine="reference", **kw)
    for name in ("round_start_s", "round_duration_s", "round_end_s", "round_pairs",
                 "round_context_tokens", "round_emitted", "round_held_slots"):
        assert np.array_equal(getattr(res, name), getattr(ref, name)), name
    for rid in ref.ids:
        assert res.token_times[rid] == ref.token_times[rid]
    assert (res.preempted if preempt else res.cancelled) == {target.id: now}
