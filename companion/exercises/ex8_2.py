"""Exercise 8-2: prefill chunks, the continuous-batching stall, token budgets (8.2.2-8.2.4)."""

from __future__ import annotations

from companion import calc, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.grading import Exercise, Part, screen_answers
from companion.sim import records_ch08, scheduler


SOURCES_8_2 = ("r3-prefill", "context-growth", "r2-prefill", "queueing")
COSTS_8_2 = ("chunk time per round", "queue wait")
_BUDGETS = records_ch08.REPLAY_TOKEN_BUDGETS


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
        Part("a-decode", "duration of the next round (one decode step for each request)", "ms",
             "rel", 0.0005),
        Part("b-admit-round", "duration of the round in which continuous batching admits r2",
             "ms", "rel", 0.002),
        Part("b-source", "what makes the longest output interval under continuous batching",
             kind="choice", options=SOURCES_8_2),
        Part("c-pairs-first", "query-key pairs of the first chunk (no cached context)", "pairs",
             "exact"),
        Part("c-pairs-last", "query-key pairs of the last chunk of r2's prompt", "pairs",
             "exact"),
        Part("d-budget-itl", "token budget for the interval goal", "tokens", "choice",
             options=_BUDGETS),
        Part("d-budget-queue", "token budget for the admission goal", "tokens", "choice",
             options=_BUDGETS),
        Part("d-cost-itl", "the time cost that decides the interval goal", kind="choice",
             options=COSTS_8_2),
        Part("d-cost-queue", "the time cost that decides the admission goal", kind="choice",
             options=COSTS_8_2),
    )


def _round_model(g: dict) -> scheduler.RoundTimeModel:
    return scheduler.RoundTimeModel(g["fixed_s"], g["per_token_s"], g["per_pair_s"])


def _continuous(g: dict):
    reqs = [scheduler.Request(*r) for r in g["requests"]]
    return scheduler.simulate(reqs, "continuous", max_running=g["max_running"],
                              round_time=_round_model(g))


def _long_prompt(g: dict) -> int:
    return dict((r[0], r[2]) for r in g["requests"])["r2"]


def _solve(g: dict) -> dict:
    res = _continuous(g)
    rounds = res.rounds
    admit = next(r for r in rounds
                 if any(s.request_id == "r2" and s.kind == "prefill" for s in r.segments))
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
    return {
        "a-prefill": rounds[0].duration_s / units.ms,
        "a-decode": rounds[1].duration_s / units.ms,
        "b-admit-round": admit.duration_s / units.ms,
        "b-source": source,
        "c-pairs-first": calc.attention_pairs(c, 0),
        "c-pairs-last": calc.attention_pairs(c, L - c),
        "d-budget-itl": max(meets) if meets else min(r.token_budget for r in rows),
        "d-budget-queue": quickest.token_budget,
        "d-cost-itl": COSTS_8_2[0],
        "d-cost-queue": COSTS_8_2[1],
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
        "b-admit-round": [
            ((f + t * (L + 1)) / units.ms, "add the attention term of r2's prompt and r0's "
                                           "decode step"),
            ((f + t * (L + 1) + p * (L * L + short + 2)) / units.ms,
             "causal attention: a prompt of c tokens has c(c+1)/2 pairs, not c squared"),
            ((f + t + p * (short + 2)) / units.ms,
             "continuous batching runs r2's whole prompt in the same round as r0's decode"),
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
        "d-cost-itl": [(COSTS_8_2[1], "a running request waits for the whole round, prompt "
                                      "chunk included")],
        "d-cost-queue": [(COSTS_8_2[0], "later arrivals wait in the queue until a round has "
                                        "budget left for their prompt")],
    }


# budgets whose later arrivals' mean queueing differ by less than this share are a tie
_TIE = 1e-9
# the replay table prints times to 0.1 ms: a longest interval closer than this to the target,
# or a queueing time closer than this to the quickest, could not be told apart in the table
_EDGE_S = 0.1 * units.ms


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
    return screen_answers(exercises()[0], _solve(g))


def _also_accepted(g: dict) -> dict:
    tied = _tied_queue(g)
    quickest = _solve(g)["d-budget-queue"]
    return {"d-budget-queue": [
        (b, f"{len(tied)} budgets queue later arrivals identically here (each later arrival's "
            f"first chunk runs in the same round at each), so each of them is the quickest")
        for b in tied if b != quickest]}


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
        ),
        screen=_screen, also_accepted=_also_accepted,
    )]
