"""Serving closed forms (8.6): Little, admission, goodput, GPU-seconds, schemes A-E, Amdahl."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import calc
from companion.formulas.serving import (Scheme, completion_throughput, per_qualifying_result,
                                        prefix_shifted_round_s, round_time_from_reads)
from companion.specs import QWEN3_8B, RTX_PRO_6000

MS, GiB, MiB = 1e-3, 2**30, 2**20
SCHEMES = calc.SCHEMES
A_TO_D = [SCHEMES[k] for k in "ABCD"]


def r(x, nd=0):
    return round(x, nd)


# --- 8.6.1 -----------------------------------------------------------------------------------

def test_littles_law():
    assert calc.requests_in_system(4, 0.5) == 2
    assert calc.requests_in_system(4, 2.0) == 8


def test_admission_by_deadline():
    assert calc.admit_request(0.1, 0.096, 0.0265, 256, 7.0)       # 6.95 s
    assert not calc.admit_request(0.2, 0.096, 0.0265, 256, 7.0)   # another 0.1 s: 7.05 s
    # space: a long request's 1188 MiB does not fit in 1000 MiB
    assert not calc.admit_request(0.1, 0.096, 0.0265, 256, 7.0, kv_needed_bytes=1188 * MiB,
                                  kv_free_bytes=1000 * MiB)
    assert calc.admit_request(0.1, 0.096, 0.0265, 256, 7.0, kv_needed_bytes=1188 * MiB,
                              kv_free_bytes=12 * GiB)
    with pytest.raises(ValueError, match="^kv_free_bytes"):
        calc.admit_request(0.1, 0.096, 0.0265, 256, 7.0, kv_needed_bytes=1.0)
    with pytest.raises(ValueError, match="^deadline_s"):
        calc.admit_request(0.1, 0.096, 0.0265, 256, 0.0)


# --- 8.6.2 -----------------------------------------------------------------------------------

def test_effective_and_completion_throughput():
    assert calc.effective_throughput([1, 1, 0, True], [1, 0, 1, True], 2.0) == 1.0
    assert completion_throughput(4, 2.0) == 2.0
    with pytest.raises(ValueError, match=r"^correct\[0\]"):
        calc.effective_throughput([2], [1], 1.0)
    with pytest.raises(ValueError, match="^on_time"):
        calc.effective_throughput([1, 1], [1], 1.0)


def test_response_losses_and_changes():
    losses = calc.response_losses(336, 294, 155)
    assert losses["late_correct"] == 139 and losses["wrong"] == 42
    assert r(-100 * calc.fractional_change(1.02, 0.60)) == 41
    assert r(100 * calc.fractional_change(652.0, 1083.7)) == 66
    with pytest.raises(ValueError, match="^good"):
        calc.response_losses(10, 5, 6)


# --- 8.6.3: speeds, table -------------------------------------------------------------------

def test_processing_speeds_and_gpu_seconds():
    r_p = calc.prefill_token_rate(32768, 2.04)
    assert r_p == pytest.approx(16059, rel=0.0025)  # printed 16,059 from a time rounded to 2.04
    r_d = calc.decode_tokens_per_s(16, 27.35 * MS)
    assert r(r_d) == 585
    t = calc.gpu_seconds_per_request(2048, 256, r_p, r_d)
    assert r(t, 3) == 0.563
    assert r(16 * t, 2) == 9.01
    assert r(calc.gpu_seconds_per_request(2048, 256, 16059, 585), 3) == 0.563


def test_experiment_8_1_table():
    rows = calc.decode_efficiency_table()
    assert [r(x["read_bytes"] / 1e9, 2) for x in rows] == [15.44, 16.34, 19.97, 34.46]
    assert [r(x["read_s"] / MS, 2) for x in rows] == [8.62, 9.12, 11.14, 19.23]
    assert [r(100 * x["mbu"]) for x in rows] == [33, 34, 41, 65]
    assert r(rows[0]["gap_s"] / MS, 1) == 17.6
    mfu = calc.measured_prefill_mfu(QWEN3_8B, RTX_PRO_6000, 1, 2048, 0, 94.8 * MS)
    assert r(100 * mfu) == 62
    mfu_shared = calc.measured_prefill_mfu(QWEN3_8B, RTX_PRO_6000, 16, 2048, 6144, 2.04)
    assert r(100 * mfu_shared) == 58


def test_experiment_8_1_prefill_row():
    rows = calc.prefill_efficiency_row()
    assert [x["batch"] for x in rows] == [1, 4, 16, 64]
    # the chapter's row prints 62% 61% 61% 58%: batch 1 computed from 94.8 ms, the rest measured
    assert [r(100 * x["mfu"]) for x in rows] == [62, 61, 61, 58]
    assert [x["source"] for x in rows] == ["computed", "measured", "measured", "measured"]
    assert r(rows[0]["flops"] / 1e12, 2) == 29.69                      # ledger note, 8.6.3
    assert rows[0]["prefill_s"] == 94.8 * MS
    # b prompts are b times the work; the implied time is that work at the measured efficiency
    for x in rows[1:]:
        assert x["flops"] == pytest.approx(x["batch"] * rows[0]["flops"])
        assert x["prefill_s"] == pytest.approx(x["flops"] / (x["mfu"] * 503.8e12))
    assert rows[3]["prefill_s"] > 60 * rows[0]["prefill_s"]        # less efficient per token
    with pytest.raises(ValueError, match=r"^batches\[0\]"):
        calc.prefill_efficiency_row(batches=[8])
    with pytest.raises(TypeError, match="^prefill_s"):
        calc.prefill_efficiency_row(prefill_s=[0.1])

def test_round_time_interpolation():
    rows = calc.decode_efficiency_table()
    for row in rows:
        assert round_time_from_reads(row["read_bytes"]) == pytest.approx(row["round_s"])
    assert r(round_time_from_reads(25.40e9, [19.97e9, 34.46e9], [27.44 * MS, 29.63 * MS])
             / MS, 2) == 28.26
    # beyond the last column the last segment is extended
    assert round_time_from_reads(40e9) > 29.63 * MS
    with pytest.raises(ValueError, match="^table_read_bytes"):
        round_time_from_reads(1e9, [2e9, 1e9], [1.0, 2.0])
    with pytest.raises(ValueError, match="^table_round_s"):
        round_time_from_reads(1e9, [1e9, 2e9])


def test_prefix_shifted_round():
    # B/D/E's round was measured at the 6144-token prefix: 27.35 ms there, exactly
    assert prefix_shifted_round_s(27.35 * MS, 6144) == 27.35 * MS
    rounds = [prefix_shifted_round_s(27.35 * MS, p) for p in (0, 2048, 4096, 6144, 8192)]
    # a longer shared prefix means fewer bytes per round, so a shorter round
    assert all(a > b for a, b in zip(rounds, rounds[1:]))
    with pytest.raises(ValueError, match="^shared_prefix_tokens"):
        prefix_shifted_round_s(27.35 * MS, 9000)
    with pytest.raises(ValueError, match="^reference_prefix_tokens"):
        prefix_shifted_round_s(27.35 * MS, 0, reference_prefix_tokens=9000)


# --- 8.6.3: the comprehensive example ------------------------------------------------------

@pytest.fixture(scope="module")
def results():
    return calc.compare_schemes()


def test_scheme_memory(results):
    A, B, C, D, E = (results[k] for k in "ABCDE")
    assert A.memory_mib == 19008 and not A.fits_memory
    assert B.memory_mib == 6048 and r(B.memory_gib, 2) == 5.91
    assert r(C.memory_gib, 2) == 9.86
    assert D.memory_mib == 9236 and r(D.memory_gib, 2) == 9.02
    assert E.memory_mib == B.memory_mib  # the index lives in host memory
    assert all(x.fits_memory for x in (B, C, D, E))


def test_scheme_times(results):
    A, B, C, D, E = (results[k] for k in "ABCDE")
    assert r(A.prefill_flops / 1e12, 1) == pytest.approx(2137.5, abs=0.1)
    assert r(A.prefill_s, 2) == r(C.prefill_s, 2) == 7.34
    assert r(A.round_s / MS, 2) == 29.63
    assert r(B.prefill_s, 2) == 2.04 and r(B.round_s / MS, 2) == 27.35
    assert r(C.read_bytes / 1e9, 2) == 25.40 and r(C.round_s / MS, 2) == 28.26
    assert r(D.prefill_s, 2) == 2.23
    assert A.rounds == B.rounds == C.rounds == 255 and D.rounds == 85 and E.rounds == 128
    assert r(D.verify_flops / 1e12, 2) == 2.56 and r(D.verify_s / MS, 1) == 8.8
    assert D.round_s == pytest.approx(27.35 * MS)  # verification hides under the read-bound round
    assert r(B.total_s, 2) == 9.01 and r(B.decode_s, 2) == 6.97
    assert r(C.total_s, 2) == 14.55
    assert r(D.total_s, 2) == 4.56
    assert E.round_s == pytest.approx(27.45 * MS)


def test_scheme_cost_and_choice(results):
    D, B = results["D"], results["B"]
    assert D.feasible and D.qualifying_results == 16
    assert r(D.gpu_s_per_result, 3) == 0.285 and r(D.energy_j_per_result) == 171
    assert B.qualifying_results == 0 and B.gpu_s_per_result == math.inf
    assert calc.best_scheme(A_TO_D) == "D"
    # 6 GiB: D no longer fits, B fits but is late -> nothing feasible among A-D
    assert calc.best_scheme(A_TO_D, kv_budget_bytes=6 * GiB) is None
    # Exercise 8-9: E needs no GPU memory for its draft and remains feasible
    assert calc.best_scheme(kv_budget_bytes=6 * GiB) == "E"


def test_sixteen_token_variant():
    res = calc.compare_schemes([SCHEMES["B"], SCHEMES["D"]], output_tokens=16)
    B, D = res["B"], res["D"]
    assert B.rounds == 15 and D.rounds == 5
    assert r(B.total_s, 2) == 2.45 and r(D.total_s, 2) == 2.37
    assert r(B.total_s - D.total_s, 2) == 0.08
    assert r(D.prefill_s - B.prefill_s, 2) == 0.19
    assert B.feasible and D.feasible


def test_scheme_is_validated_and_adjustable():
    with pytest.raises(ValueError, match="^kv_format"):
        Scheme("X", kv_format="int3")
    with pytest.raises(ValueError, match="^tokens_per_round"):
        Scheme("X", tokens_per_round=3)
    with pytest.raises(ValueError, match="^prefill_factor"):
        Scheme("X", prefill_factor=0.5)
    with pytest.raises(TypeError, match="^scheme"):
        calc.scheme_result("D")
    faster = SCHEMES["D"].with_(tokens_per_round=4)
    assert calc.scheme_result(faster).rounds == 64
    fp8 = SCHEMES["B"].with_(kv_format="fp8")
    assert calc.scheme_result(fp8).memory_mib == pytest.approx(6048 / 2)


# --- Amdahl, Exercise 8-8, cost per result ---------------------------------------------------

def test_amdahl_examples():
    assert calc.staged_task_time([50, 50], [1, 4]) == 62.5
    assert r(calc.amdahl_speedup(0.5, 4), 1) == 1.6
    assert calc.staged_task_time([80, 20], [1, 4]) == 85
    assert r(calc.amdahl_speedup(0.2, 4), 2) == 1.18


def test_exercise_8_8_break_even():
    stages, speedups = [20.0, 50.0, 30.0], [1.0, 4.0, 1.0]
    even = calc.staged_break_even_s(stages, speedups)
    assert calc.staged_task_speedup(stages, speedups, even) == pytest.approx(1.0)
    assert calc.staged_task_speedup(stages, speedups, 8.0) > 1.0
    assert calc.staged_task_time(stages) == 100.0


def test_per_qualifying_result():
    assert per_qualifying_result(4.56, 16) == pytest.approx(0.285)
    assert per_qualifying_result(9.01, 0) == math.inf


# --- properties ------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(budget_gib=st.floats(1.0, 40.0), out=st.integers(1, 600), deadline=st.floats(0.5, 30.0))
def test_sharing_never_costs_memory_and_more_tokens_per_round_never_slow(budget_gib, out,
                                                                         deadline):
    kw = dict(kv_budget_bytes=budget_gib * GiB, output_tokens=out, deadline_s=deadline)
    res = calc.compare_schemes(**kw)
    assert res["B"].memory_bytes <= res["A"].memory_bytes
    assert res["C"].memory_bytes <= res["A"].memory_bytes
    assert res["D"].decode_s <= res["B"].decode_s + 1e-12
    for x in res.values():
        assert x.feasible == (x.fits_memory and x.meets_deadline)
        assert x.total_s == pytest.approx(x.prefill_s + x.rounds * x.round_s)
        assert x.rounds == math.ceil((out - 1) / SCHEMES[x.name].tokens_per_round - 1e-9)


@settings(max_examples=60, deadline=None)
@given(f=st.floats(0.0, 1.0), s=st.floats(0.1, 50.0), total=st.floats(1.0, 1000.0))
def test_staged_speedup_is_amdahl(f, s, total):
    stages = [total * (1 - f), total * f]
    assert calc.staged_task_speedup(stages, [1.0, s]) == pytest.approx(calc.amdahl_speedup(f, s))


@settings(max_examples=60, deadline=None)
@given(lam=st.floats(0.0, 100.0), t=st.floats(0.0, 100.0))
def test_little_is_linear(lam, t):
    assert calc.requests_in_system(lam, t) == pytest.approx(lam * t)


def test_ledger_entries_of_8_6_agree_and_are_prefixed():
    from companion.ledger_entries import ch08_6

    entries = ch08_6.entries()
    assert len(entries) >= 70
    for e in entries:
        assert e.id.startswith(e.section + "/") and e.section.startswith("8.6.")
        assert e.agrees or e.note, e.id
        if e.rounding != "printed":
            assert e.note, e.id
