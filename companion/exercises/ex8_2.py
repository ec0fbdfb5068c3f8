"""Exercise 8-2: prefill chunks, the continuous-batching stall, token budgets (8.2.2-8.2.4)."""

from __future__ import annotations

import math

from companion import calc, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.grading import Exercise, Part, screen_answers
from companion.sim import records_ch08, scheduler


SOURCES_8_2 = ("r3-prefill", "context-growth", "r2-prefill", "queueing")
# the round model's three costs, and the wait they cause
COSTS_8_2 = ("fixed per-round cost", "per-token cost", "per-pair cost", "queue wait")
NO_BUDGET = "none"
_BUDGETS = records_ch08.REPLAY_TOKEN_BUDGETS
# (d)'s table prints the mean prefill load to three decimals
_LOAD_DECIMALS = 3
# a mean prefill load this close to 1 is a knife edge for "keeps up": screened out of the
# variants; at seed 0 (built to fill the chapter's 80 ms gap exactly) "none" is accepted too
_LOAD_EDGE = 0.01


def prefill_load(prompt_tokens: int, budget: int, gap_s: float) -> float:
    """08_2's *prefill load*: one prompt's prefill alone, in rounds of ``budget`` tokens under
    8.2.2's round model, over the gap between arrivals (above 1, prompts arrive faster than
    prefill clears them). The same sum as the 8.2.4 budget-sweep explorer's."""
    alone = sum(calc.mixed_round_time_s(0, 0, c, h)
                for c, h in calc.prefill_chunks(prompt_tokens, budget))
    return alone / gap_s


def replay_prefill_load(replay, budget: int) -> float:
    """The replay's *mean prefill load* at ``budget``: :func:`prefill_load` averaged over the
    prompts a later arrival can queue behind (every prompt but the last)."""
    ahead = replay.prompt_tokens[:-1]
    return sum(prefill_load(n, budget, replay.interarrival_s) for n in ahead) / len(ahead)


def _params(seed: int) -> dict:
    chosen = variant("8-2", seed,
                     {"short": ch08.SHORT_PROMPT_TOKENS, "long": ch08.LONG_PROMPT_TOKENS,
                      "r0_out": ch08.SCHEDULE_EXAMPLE_REQUESTS[0][3], "chunk": ch08.CHUNK_TOKENS,
                      "itl_ms": units.to_unit(ch08.EXERCISE_8_2_ITL_TARGET_S, "ms")},
                     {"short": (1024, 2048, 3072),
                      "long": (4096, 6144, 8192, 12288),   # not a chapter input: variants
                      "r0_out": (6, 8, 10), "chunk": (256, 512, 1024), "itl_ms": (40, 50, 80)})
    s, L = chosen["short"], chosen["long"]
    # 8.2.2's four requests (id, arrival s, prompt tokens, output tokens), at most 2 running
    requests = (("r0", 0.0, s, chosen["r0_out"]), ("r1", 0.0, s, 2), ("r2", 0.020, L, 2),
                ("r3", 0.030, s, 4))
    return {
        "fixed_s": ch08.ROUND_FIXED_S, "per_token_s": ch08.ROUND_PER_TOKEN_S,
        "per_pair_s": ch08.ROUND_PER_PAIR_S, "requests": requests,
        "max_running": ch08.SCHEDULE_EXAMPLE_MAX_RUNNING,
        "chunk_tokens": chosen["chunk"], "itl_target_s": chosen["itl_ms"] * units.ms,
        "replay": records_ch08.budget_replay(seed),
    }


def _parts() -> tuple[Part, ...]:
    return (
        Part("a-prefill", "duration of the first round (both prompts prefilled together)", "ms",
             "rel", 0.002),
        # three decimals; tight enough that leaving out the pair term (0.02% or more) fails
        Part("a-decode", "duration of the next round (one decode step for each request)", "ms",
             "rel", 0.0001),
        Part("b-longest-round", "duration of the longest round that carries a decode step",
             "ms", "rel", 0.002),
        Part("b-source", "what makes that round the longest output interval",
             kind="choice", options=SOURCES_8_2),
        Part("c-pairs-first", "query-key pairs of the first chunk (no cached context)", "pairs",
             "exact"),
        Part("c-pairs-last", "query-key pairs of the last chunk of r2's prompt", "pairs",
             "exact"),
        Part("c-budget-first", "most new prompt tokens a round with one decode step may carry "
                               "within the interval target, on no cached context", "tokens",
             "exact"),
        Part("c-budget-last", "most new prompt tokens a round with one decode step may carry "
                              "within the interval target, on the cached history of the last "
                              "chunk", "tokens", "exact"),
        Part("d-budget-itl", "token budget for the interval goal", "tokens", "choice",
             options=_BUDGETS),
        Part("d-budget-queue", "token budget under which later arrivals queue least", "tokens",
             "choice", options=_BUDGETS),
        Part("d-keeps-up", "smallest token budget whose mean prefill load is below 1, if any",
             kind="choice", options=_BUDGETS + (NO_BUDGET,)),
        Part("d-cost-itl", "the round-model cost behind the longest interval's trend across "
                           "the budgets", kind="choice", options=COSTS_8_2),
        Part("d-cost-queue", "the round-model cost behind the mean prefill load's trend across "
                             "the budgets", kind="choice", options=COSTS_8_2),
    )


def _round_model(g: dict) -> scheduler.RoundTimeModel:
    return scheduler.RoundTimeModel(g["fixed_s"], g["per_token_s"], g["per_pair_s"])


def _continuous(g: dict):
    reqs = [scheduler.Request(*r) for r in g["requests"]]
    return scheduler.simulate(reqs, "continuous", max_running=g["max_running"],
                              round_time=_round_model(g))


def _long_prompt(g: dict) -> int:
    return dict((r[0], r[2]) for r in g["requests"])["r2"]


def _chunk_budget(g: dict, history: int) -> int:
    """(c)'s chunk size: the most new tokens next to one decode step on the short prompt's
    context, on ``history`` cached tokens, within the interval target (8.2.4)."""
    return calc.token_budget_for_itl(g["itl_target_s"], 1, g["requests"][0][2], history,
                                     fixed_s=g["fixed_s"], per_token_s=g["per_token_s"],
                                     per_pair_s=g["per_pair_s"])


def _chunk_root(g: dict, history: int) -> float:
    """The unrounded chunk size of :func:`_chunk_budget` (the root of its quadratic)."""
    f, t, p = g["fixed_s"], g["per_token_s"], g["per_pair_s"]
    n = g["requests"][0][2]
    slack = g["itl_target_s"] - (f + t + p * (n + 1))
    a, b = p / 2, t + p * (history + 0.5)
    return (-b + math.sqrt(b * b + 4 * a * slack)) / (2 * a)


def _loads(g: dict) -> dict:
    """budget -> the replay's prefill load, rounded as (d)'s table prints it."""
    return {r.token_budget: round(replay_prefill_load(g["replay"], r.token_budget),
                                  _LOAD_DECIMALS) for r in g["replay"].rows}


def _solve(g: dict) -> dict:
    res = _continuous(g)
    rounds = res.rounds
    # every running request emits once per round, so its output interval is one round's
    # duration: the longest interval is the longest round that carries a decode step
    worst = max((r for r in rounds if any(s.kind == "decode" for s in r.segments)),
                key=lambda r: r.duration_s)
    prefills = [s.request_id for s in worst.segments if s.kind == "prefill"]
    source = f"{prefills[0]}-prefill" if prefills else "context-growth"
    c, L = g["chunk_tokens"], _long_prompt(g)
    rows = g["replay"].rows
    meets = [r.token_budget for r in rows if r.max_itl_s < g["itl_target_s"]]
    quickest = min(rows, key=lambda r: (r.queue_later_mean_s, r.token_budget))
    loads = _loads(g)
    keeping_up = [b for b in _BUDGETS if loads[b] < 1]
    return {
        "a-prefill": rounds[0].duration_s / units.ms,
        "a-decode": rounds[1].duration_s / units.ms,
        "b-longest-round": worst.duration_s / units.ms,
        "b-source": source,
        "c-pairs-first": calc.attention_pairs(c, 0),
        "c-pairs-last": calc.attention_pairs(c, L - c),
        "c-budget-first": _chunk_budget(g, 0),
        "c-budget-last": _chunk_budget(g, L - c),
        "d-budget-itl": max(meets) if meets else min(r.token_budget for r in rows),
        "d-budget-queue": quickest.token_budget,
        "d-keeps-up": min(keeping_up) if keeping_up else NO_BUDGET,
        "d-cost-itl": "per-token cost",
        "d-cost-queue": "fixed per-round cost",
    }


def _mistakes(g: dict) -> dict:
    f, t, p = g["fixed_s"], g["per_token_s"], g["per_pair_s"]
    short = g["requests"][0][2]
    L, c = _long_prompt(g), g["chunk_tokens"]
    pairs_two = 2 * calc.attention_pairs(short, 0)
    rows = g["replay"].rows
    solved = _solve(g)
    too_big = [r.token_budget for r in rows if r.max_itl_s >= g["itl_target_s"]]
    slowest_queue = max(rows, key=lambda r: r.queue_later_mean_s).token_budget
    target = g["itl_target_s"]
    loads = _loads(g)
    keeps = solved["d-keeps-up"]

    def no_decode(h):
        return calc.token_budget_for_itl(target, 0, 0, h, fixed_s=f, per_token_s=t,
                                         per_pair_s=p)

    budget_hints = {}
    for name, h in (("c-budget-first", 0), ("c-budget-last", L - c)):
        best = solved[name]
        budget_hints[name] = [
            (best + 1, "round down: the round with the chunk must not exceed the target"),
            (no_decode(h), "the round also carries the decode step: one more row and its "
                           "n + 1 pairs"),
        ]
    budget_hints["c-budget-last"].append(
        (solved["c-budget-first"], "the chunk's new tokens also attend to the h cached ones: "
                                   "add the rectangle c h"))
    return {
        "a-prefill": [
            ((f + t * 2 * short) / units.ms, "add the attention term: per_pair x the causal "
                                             "pairs of both prompts"),
            ((f + t * short + p * calc.attention_pairs(short, 0)) / units.ms,
             "both prompts run in the same round: twice the rows and twice the pairs"),
            ((f + t * 2 * short + p * 2 * short * short) / units.ms,
             "causal attention: a prompt of c tokens has c(c+1)/2 pairs, not c squared"),
        ],
        "a-decode": [
            ((f + t + p * calc.attention_pairs(1, short)) / units.ms,
             "two requests decode in this round: two rows, and h + 1 pairs for each"),
            ((f + t * 2 * short + p * pairs_two) / units.ms,
             "this is the round after the prefill: one new token per request"),
        ],
        "b-longest-round": [
            ((f + t * (L + 1)) / units.ms, "add the attention term of the prompt in that round "
                                           "and of the decode step beside it"),
            ((f + t * (L + 1) + p * (L * L + short + 2)) / units.ms,
             "causal attention: a prompt of c tokens has c(c+1)/2 pairs, not c squared"),
            ((f + t + p * (short + 2)) / units.ms,
             "continuous batching runs a newly admitted prompt whole, in the same round as the "
             "running requests' decode steps"),
        ],
        "b-source": [(s, "look at what else runs in the round where r0 waits longest")
                     for s in SOURCES_8_2 if s != solved["b-source"]],
        "c-pairs-first": [
            (c * c, "causal attention: the k-th token sees k tokens, so c(c+1)/2, not c^2"),
            (c * c // 2, "count the diagonal too: each token also attends to itself"),
            (c * (c - 1) // 2, "count the diagonal too: each token also attends to itself"),
        ],
        "c-pairs-last": [
            (c * (L - c), "add the triangle inside the chunk: c(c+1)/2"),
            (c * L, "the k-th new token sees h + k tokens: c h + c(c+1)/2"),
            (c * (L - c) + c * c // 2, "count the diagonal too: c(c+1)/2"),
        ],
        **budget_hints,
        "d-budget-itl": [
            (min(r.token_budget for r in rows),
             "choose the largest budget that still meets the interval target: fewer, larger "
             "chunks mean fewer launches and weight reads"),
        ] + ([(min(too_big), "the longest output interval must stay below the target")]
             if too_big else []),
        "d-budget-queue": [
            (max(r.token_budget for r in rows),
             "read the queueing column: the largest budget is not always the quickest"),
            (slowest_queue, "the admission goal wants the least queueing, not the most"),
        ],
        "d-keeps-up": (
            [(b, "read the prefill-load column: keeping up needs a load below 1")
             for b in _BUDGETS if loads[b] >= 1 and b != keeps]
            + ([(NO_BUDGET, "a budget whose load is below 1 keeps up: look again at the "
                            "largest budgets")]
               if keeps != NO_BUDGET and not _knife_edge(g) else [])
            + [(b, "the smallest budget that keeps up is asked for") for b in _BUDGETS
               if loads[b] < 1 and b != keeps]),
        "d-cost-itl": [
            ("fixed per-round cost", "every round pays it whatever its budget: it does not "
                                     "grow with the chunk"),
            ("per-pair cost", "it grows too, but each extra token's pairs cost less than the "
                              "token itself here: compare t_pair (h + c) with t_token"),
            ("queue wait", "a running request does not queue: it waits for the round it is in"),
        ],
        "d-cost-queue": [
            ("per-token cost", "a prompt's tokens cost the same however it is split: count "
                               "what each extra round adds"),
            ("per-pair cost", "a prompt's pairs sum to n(n+1)/2 however it is split: count "
                              "what each extra round adds"),
            ("queue wait", "the queue wait is the effect; name the cost that causes it"),
        ],
    }


# budgets whose later arrivals' mean queueing differ by less than this share are a tie
_TIE = 1e-9
# the replay table prints times to 0.1 ms: a longest interval closer than this to the target,
# or a queueing time closer than this to the quickest, could not be told apart in the table
_EDGE_S = 0.1 * units.ms
# (c)'s chunk sizes are whole tokens: an unrounded root this close to a whole number would
# turn on the last digits of the student's arithmetic
_ROOT_EDGE = 0.005


def _tied_queue(g: dict) -> list[int]:
    """Budgets that queue later arrivals exactly as little as the quickest (each later
    arrival's first chunk runs in the same round at each of them)."""
    rows = g["replay"].rows
    best = min(r.queue_later_mean_s for r in rows)
    return [r.token_budget for r in rows
            if abs(r.queue_later_mean_s - best) <= _TIE * max(best, 1e-12)]


def _screen(seed: int) -> str | None:
    g = _params(seed)
    rows, target = g["replay"].rows, g["itl_target_s"]
    meets = [r for r in rows if r.max_itl_s < target]
    if not meets:
        return "no token budget meets the interval goal"
    if len(meets) == len(rows):
        return "every token budget meets the interval goal"
    edge = [r.token_budget for r in rows if abs(r.max_itl_s - target) < _EDGE_S]
    if edge:
        return (f"budget {edge[0]}'s longest interval is within 0.1 ms of the interval goal")
    best = min(r.queue_later_mean_s for r in rows)
    tied = set(_tied_queue(g))
    near = [r.token_budget for r in rows if r.token_budget not in tied
            and r.queue_later_mean_s - best < _EDGE_S]
    if near:
        return f"budget {near[0]} queues within 0.1 ms of the quickest budget"
    loads = _loads(g)
    if seed != 0 and _knife_edge(g):
        return f"a budget's mean prefill load lies within {_LOAD_EDGE} of 1"
    if any(loads[r.token_budget] < 1 for r in meets):
        return "a budget both meets the interval goal and keeps up with the arrivals"
    L, c = _long_prompt(g), g["chunk_tokens"]
    for h in (0, L - c):
        x = _chunk_root(g, h)
        if min(x % 1, 1 - x % 1) < _ROOT_EDGE:
            return f"(c)'s chunk size on {h} cached tokens is within {_ROOT_EDGE} of a whole token"
    return screen_answers(exercises()[0], _solve(g))


def _knife_edge(g: dict) -> bool:
    """A mean prefill load within ``_LOAD_EDGE`` of 1: whether prefill keeps up turns on it."""
    return any(abs(load - 1) < _LOAD_EDGE for load in _loads(g).values())


def _also_accepted(g: dict) -> dict:
    tied = _tied_queue(g)
    solved = _solve(g)
    quickest = solved["d-budget-queue"]
    out = {"d-budget-queue": [
        (b, f"{len(tied)} budgets queue later arrivals identically here (each later arrival's "
            f"first chunk runs in the same round at each), so each of them is the quickest")
        for b in tied if b != quickest]}
    if _knife_edge(g) and solved["d-keeps-up"] != NO_BUDGET:
        out["d-keeps-up"] = [(NO_BUDGET, "the mean prefill load is within a hair of 1 (the "
                                         "prompts are built to fill the gap exactly), so "
                                         "reading it as not keeping up is accepted too")]
    return out


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-2", title="Prefill chunk size from an output-interval target", section="8.2.2-8.2.4",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=(
            "at least one token budget of the replay meets the interval goal and at least one "
            "misses it, and no budget's longest interval lies within 0.1 ms (the table's "
            "rounding) of the goal",
            "budgets that queue later arrivals identically are all accepted in (d); no other "
            "budget queues within 0.1 ms of the quickest",
            "no budget's mean prefill load lies within 0.01 of 1 (seed 0, built to fill the "
            "chapter's gap exactly, keeps its load of 0.999 and also accepts \"none\"), and no "
            "budget both meets the interval goal and has a mean prefill load below 1 (the "
            "worked solution's lesson)",
            "(c)'s unrounded chunk sizes lie at least 0.005 tokens from a whole number",
        ),
        screen=_screen, also_accepted=_also_accepted,
    )]
