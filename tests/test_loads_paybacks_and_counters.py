"""Quantities the notebooks' text leans on, held to what it says about them.

- 8.2.4's budget sweep: the prefill load (one prompt's prefill alone over the arrival gap) is
  above 1 at every budget at the chapter's 80 ms gap, so its queueing is backlog, and below 1
  at every budget 400 ms apart, where queueing no longer falls as the budget grows.
- 8.2.1 with ROM-served weights: no finite crossover in the batch exists.
- 8.3.3's summary: repaid sooner counted in KV bytes than in read time at batch 1, and the
  batch-1 figure is the weight reads of the summary steps added to the KV reads.
- 8.5: an engine's acceptance counters (accepted / proposed, mean acceptance length, rate per
  position) against alpha and E[X].
- 17 §6: with equal outputs, static and continuous batching finish together.
"""

from __future__ import annotations

import math

import pytest

from companion import calc, specs, widgets
from companion.chapters import ch08
from companion.sim import speculative as sim
from companion.sim.kv_scenarios import context_organisation


def _loads(numbers):
    return [numbers[f"prefill_load@{b}"] for b in widgets.SWEEP_BUDGETS]


def test_the_chapters_gap_overloads_prefill_at_every_budget():
    n = widgets.BudgetSweepPanel().at().numbers
    loads = _loads(n)
    assert min(loads) > 1
    assert loads == sorted(loads, reverse=True)     # a larger budget pays the fixed cost less
    assert "backlog" in widgets.BudgetSweepPanel().at().text


def test_sparse_arrivals_carry_the_load_and_queueing_stops_buying():
    panel = widgets.BudgetSweepPanel()
    n = panel.at(interarrival_ms=400.0).numbers
    assert max(_loads(n)) < 1
    queue = [n[f"queue_mean_ms@{b}"] for b in widgets.SWEEP_BUDGETS]
    itl = [n[f"max_itl_ms@{b}"] for b in widgets.SWEEP_BUDGETS]
    # every later arrival waits about one round, whatever the budget; intervals still grow
    assert max(queue) - min(queue) < 0.1 * max(queue)
    assert itl[-1] > 3 * itl[0]
    assert n["budget_with_least_queueing"] == widgets.SWEEP_BUDGETS[0]


def test_the_load_matches_the_round_model():
    budget, gap_ms = 1024, 300.0
    alone = sum(calc.mixed_round_time_s(0, 0, c, h) for c, h in calc.prefill_chunks(4096, budget))
    n = widgets.BudgetSweepPanel().at(interarrival_ms=gap_ms).numbers
    assert n[f"prefill_load@{budget}"] == pytest.approx(alone / (gap_ms * 1e-3))
    assert math.isinf(widgets.BudgetSweepPanel().at(interarrival_ms=0.0)
                      .numbers[f"prefill_load@{budget}"])


@pytest.mark.parametrize("context", [16, 128, 2048, 8192])
def test_rom_served_weights_have_no_crossover_in_the_batch(context):
    b = calc.compute_catchup_batch(specs.QWEN3_8B, specs.RTX_PRO_6000, context,
                                   weights_in_hbm=False)
    assert b == 0 or math.isinf(b)


@pytest.mark.parametrize("history", [ch08.CONTEXT_HISTORY_TOKENS, 32768])
def test_summary_payback_in_bytes_and_in_time(history):
    n = widgets.ContextOrganisationPanel().at(history_tokens=history).numbers
    o = {x.name: x for x in context_organisation(history_tokens=history)}
    saving = o["append"].kv_read_per_step_bytes - o["summarise"].kv_read_per_step_bytes
    reads_b1 = (o["summarise"].summary_tokens * specs.QWEN3_8B.streamed_weight_bytes
                + o["summarise"].summary_kv_read_bytes)
    assert n["summary_repaid_after_tokens"] == math.ceil(
        o["summarise"].summary_kv_read_bytes / saving)
    assert n["summary_repaid_after_tokens_batch1"] == math.ceil(reads_b1 / saving)
    assert n["summary_repaid_after_tokens_batch1"] > 2 * n["summary_repaid_after_tokens"]


def test_the_chapters_summary_pays_back_in_3072_bytes_tokens_and_far_later_in_time():
    n = widgets.ContextOrganisationPanel().at().numbers
    assert n["summary_repaid_after_tokens"] == 3072
    assert 30_000 < n["summary_repaid_after_tokens_batch1"] < 40_000


def test_engine_acceptance_counters_are_not_alpha():
    m, alpha = ch08.TOY_DRAFT_LEN, 0.75
    runs = sim.simulate_rounds(ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_ALWAYS_B, m, 40_000,
                               seed=4)
    expected = calc.speculative_expected_tokens(alpha, m)
    accepted = runs.accepted.sum()
    assert accepted / (m * runs.n_rounds) == pytest.approx((expected - 1) / m, abs=0.01)
    assert accepted / (m * runs.n_rounds) < alpha - 0.2
    assert 1 + accepted / runs.n_rounds == pytest.approx(expected, abs=0.03)
    for i in range(1, m + 1):
        assert (runs.accepted >= i).mean() == pytest.approx(alpha ** i, abs=0.01)


def test_equal_outputs_make_static_and_continuous_batching_tie():
    n = widgets.BatchingTracePanel().at(shortest=450, longest=450).numbers
    assert n["static_makespan_s"] == pytest.approx(n["continuous_makespan_s"])
