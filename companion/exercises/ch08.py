"""Exercises 8-1 ... 8-5 (Chapter 8): given data by seed, answers by calc/sim, hints.

8-6 ... 8-9 are in ``companion.exercises.ch08_6_9``.
"""

from __future__ import annotations


from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import data_ch08
from companion.exercises.variants import pick, rng_for
from companion.exercises.variants import variant as _variant
from companion.formulas import kv_management
from companion.grading import Exercise, Part, register, screen_answers
from companion.sim import kv_scenarios, scheduler


# --- Exercise 8-1: read volume per output token, b_KV, and the capacity cap (8.2.1) -----------

_CONTEXT_PAIRS_8_1 = [(1024, 4096), (2048, 8192), (4096, 16384), (2048, 16384)]
_BUDGETS_GIB_8_1 = [8, 12, 16, 24]
_MODELS_8_1 = [specs.QWEN3_8B, specs.LLAMA_8B, specs.LLAMA_70B]


def _params_8_1(seed: int) -> dict:
    if seed == 0:
        model, contexts, budget_gib = specs.QWEN3_8B, (2048, 8192), 12
    else:
        rng = rng_for("8-1", seed)
        model = pick(rng, _MODELS_8_1)
        contexts = pick(rng, _CONTEXT_PAIRS_8_1)
        budget_gib = pick(rng, _BUDGETS_GIB_8_1)
    return {
        "model": model,
        "weight_bytes": model.streamed_weight_bytes,        # D_w
        "kv_bytes_per_token": calc.kv_bytes_per_token(model),  # k
        "batches": (1, 4, 16, 64),
        "contexts": contexts,
        "kv_budget_bytes": budget_gib * units.GiB,
        "block_tokens": 16,
        "output_tokens": 256,
    }


def _label(context: int) -> str:
    return f"{context // 1024}K" if context % 1024 == 0 else str(context)


def _parts_8_1() -> tuple[Part, ...]:
    parts = []
    for i, ctx_name in enumerate(("short", "long")):
        for b in (1, 4, 16, 64):
            parts.append(Part(f"a-{ctx_name}-b{b}",
                              f"read volume per output token, {ctx_name} context, batch {b}",
                              "GiB", "rel", 0.005))
    for ctx_name in ("short", "long"):
        parts.append(Part(f"b-{ctx_name}", f"smallest batch with KV reads >= weight reads, "
                                           f"{ctx_name} context", "requests", "exact"))
        parts.append(Part(f"c-{ctx_name}", f"independent requests that fit the KV budget, "
                                           f"{ctx_name} context", "requests", "exact"))
        parts.append(Part(f"d-{ctx_name}", f"does capacity stop the batch before b_KV? "
                                           f"({ctx_name} context)", "", "bool"))
    return tuple(parts)


def _solve_8_1(g: dict) -> dict:
    out = {}
    rows = calc.read_volume_table(g["weight_bytes"], g["kv_bytes_per_token"], g["batches"],
                                  g["contexts"])
    names = dict(zip(g["contexts"], ("short", "long")))
    for row in rows:
        out[f"a-{names[row['context_tokens']]}-b{row['batch']}"] = (
            row["read_bytes_per_token"] / units.GiB)
    for ctx in g["contexts"]:
        c = calc.crossover_vs_capacity(g["model"], g["kv_budget_bytes"], ctx, g["output_tokens"],
                                       block_tokens=g["block_tokens"])
        out[f"b-{names[ctx]}"] = c["crossover_batch"]
        out[f"c-{names[ctx]}"] = c["max_requests"]
        out[f"d-{names[ctx]}"] = c["capacity_limited"]
    return out


def _mistakes_8_1(g: dict) -> dict:
    hints = {}
    k, w = g["kv_bytes_per_token"], g["weight_bytes"]
    full_w = g["model"].weight_bytes
    for ctx, name in zip(g["contexts"], ("short", "long")):
        for b in g["batches"]:
            hints[f"a-{name}-b{b}"] = [
                ((full_w / b + ctx * k) / units.GiB,
                 "D_w is the weights read once per step (no embedding table), not all weights"),
                ((w + ctx * k) / units.GiB, "only the weight term is shared by the batch: divide "
                                            "D_w by b, not the KV term"),
                ((w / b + b * ctx * k) / units.GiB, "this is per output token: each token reads "
                                                    "its own request's KV once, L k"),
            ]
        held = ctx + g["output_tokens"] - 1
        alloc_unrounded = held * k
        hints[f"c-{name}"] = [
            (g["kv_budget_bytes"] // (ctx * k), "reserve the KV a request holds once all outputs "
                                                "exist: prompt + output - 1 tokens"),
            (g["kv_budget_bytes"] // alloc_unrounded, "round each request up to whole 16-token "
                                                      "blocks before dividing"),
            (g["kv_budget_bytes"] // (calc.kv_tokens_allocated(ctx + g["output_tokens"]) * k),
             "the last output token is never fed back: prompt + output - 1 tokens"),
        ]
        hints[f"b-{name}"] = [(w / (ctx * k), "the batch must be a whole number: take the ceiling")]
    return hints


register(Exercise(
    id="8-1", title="How read volume changes as the batch grows", section="8.2.1",
    parts=_parts_8_1(), make_params=_params_8_1, solve=_solve_8_1, mistakes=_mistakes_8_1,
))


# --- shared helpers for 8-2 ... 8-9 ------------------------------------------------------------

# --- Exercise 8-2: prefill chunks, the continuous-batching stall, token budgets (8.2.2-8.2.4) ---

SOURCES_8_2 = ("r3-prefill", "context-growth", "r2-prefill", "queueing")
COSTS_8_2 = ("chunk time per round", "queue wait")
_BUDGETS_8_2 = data_ch08.REPLAY_TOKEN_BUDGETS


def _params_8_2(seed: int) -> dict:
    chosen = _variant("8-2", seed,
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
        "replay": data_ch08.budget_replay(seed),
    }


def _parts_8_2() -> tuple[Part, ...]:
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
             options=_BUDGETS_8_2),
        Part("d-budget-queue", "token budget for the admission goal", "tokens", "choice",
             options=_BUDGETS_8_2),
        Part("d-cost-itl", "the time cost that decides the interval goal", kind="choice",
             options=COSTS_8_2),
        Part("d-cost-queue", "the time cost that decides the admission goal", kind="choice",
             options=COSTS_8_2),
    )


def _round_model_8_2(g: dict) -> scheduler.RoundTimeModel:
    return scheduler.RoundTimeModel(g["fixed_s"], g["per_token_s"], g["per_pair_s"])


def _continuous_8_2(g: dict):
    reqs = [scheduler.Request(*r) for r in g["requests"]]
    return scheduler.simulate(reqs, "continuous", max_running=g["max_running"],
                              round_time=_round_model_8_2(g))


def _long_prompt_8_2(g: dict) -> int:
    return dict((r[0], r[2]) for r in g["requests"])["r2"]


def _solve_8_2(g: dict) -> dict:
    res = _continuous_8_2(g)
    rounds = res.rounds
    admit = next(r for r in rounds
                 if any(s.request_id == "r2" and s.kind == "prefill" for s in r.segments))
    # every running request emits once per round, so its output interval is one round's
    # duration: the longest interval is the longest round that carries a decode step
    worst = max((r for r in rounds if any(s.kind == "decode" for s in r.segments)),
                key=lambda r: r.duration_s)
    prefills = [s.request_id for s in worst.segments if s.kind == "prefill"]
    source = f"{prefills[0]}-prefill" if prefills else "context-growth"
    c, L = g["chunk_tokens"], _long_prompt_8_2(g)
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


def _mistakes_8_2(g: dict) -> dict:
    f, t, p = g["fixed_s"], g["per_token_s"], g["per_pair_s"]
    short = g["requests"][0][2]
    L, c = _long_prompt_8_2(g), g["chunk_tokens"]
    pairs_two = 2 * calc.attention_pairs(short, 0)
    rows = g["replay"].rows
    solved = _solve_8_2(g)
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
_TIE_8_2 = 1e-9
# the replay table prints times to 0.1 ms: a longest interval closer than this to the target,
# or a queueing time closer than this to the quickest, could not be told apart in the table
_EDGE_8_2_S = 0.1 * units.ms


def _tied_queue_8_2(g: dict) -> list[int]:
    """Budgets that queue later arrivals exactly as little as the quickest (every prompt fits
    in one chunk at each of them, so the schedule is the same)."""
    rows = g["replay"].rows
    best = min(r.queue_later_mean_s for r in rows)
    return [r.token_budget for r in rows
            if abs(r.queue_later_mean_s - best) <= _TIE_8_2 * max(best, 1e-12)]


def _screen_8_2(seed: int) -> str | None:
    g = _params_8_2(seed)
    rows, target = g["replay"].rows, g["itl_target_s"]
    meets = [r for r in rows if r.max_itl_s < target]
    if not meets:
        return "no token budget meets the interval goal"
    if len(meets) == len(rows):
        return "every token budget meets the interval goal"
    edge = [r.token_budget for r in rows if abs(r.max_itl_s - target) < _EDGE_8_2_S]
    if edge:
        return (f"budget {edge[0]}'s longest interval is within 0.1 ms of the interval goal")
    best = min(r.queue_later_mean_s for r in rows)
    tied = set(_tied_queue_8_2(g))
    near = [r.token_budget for r in rows if r.token_budget not in tied
            and r.queue_later_mean_s - best < _EDGE_8_2_S]
    if near:
        return f"budget {near[0]} queues within 0.1 ms of the quickest budget"
    return screen_answers(EXERCISE_8_2, _solve_8_2(g))


def _also_accepted_8_2(g: dict) -> dict:
    tied = _tied_queue_8_2(g)
    quickest = _solve_8_2(g)["d-budget-queue"]
    return {"d-budget-queue": [
        (b, f"{len(tied)} budgets queue later arrivals identically here (every prompt fits in "
            f"one chunk at each), so each of them is the quickest")
        for b in tied if b != quickest]}


EXERCISE_8_2 = register(Exercise(
    id="8-2", title="Prefill chunk size from an output-interval target", section="8.2.2-8.2.4",
    parts=_parts_8_2(), make_params=_params_8_2, solve=_solve_8_2, mistakes=_mistakes_8_2,
    conditions=(
        "at least one token budget of the replay meets the interval goal and at least one "
        "misses it, and no budget's longest interval lies within 0.1 ms (the table's "
        "rounding) of the goal",
        "budgets that queue later arrivals identically are all accepted in (d); no other "
        "budget queues within 0.1 ms of the quickest",
    ),
    screen=_screen_8_2, also_accepted=_also_accepted_8_2,
))


# --- Exercise 8-3: block size, paging waste and prefix sharing (8.3.1-8.3.2) -------------------

_SHAPES_8_3 = [  # (prompt, shared prefix, output): prefixes are whole 16-token blocks
    (ch08.LONG_PROMPT_TOKENS, ch08.SHARED_PREFIX_TOKENS, ch08.OUTPUT_TOKENS), (4096, 3072, 256),
    (16384, 12288, 256), (8192, 4096, 128)]


def _params_8_3(seed: int) -> dict:
    if seed == 0:
        lengths, model, shape = ch08.PAGING_EXAMPLE_LENGTHS, specs.QWEN3_8B, _SHAPES_8_3[0]
    else:
        rng = rng_for("8-3", seed)
        lengths = [int(x) for x in rng.integers(3, 21, size=4)]
        if all(L % 2 == 0 for L in lengths):
            lengths[0] += 1    # an odd length leaves a slot unused at every block size
        model = pick(rng, _MODELS_8_1)
        shape = pick(rng, _SHAPES_8_3)
    prompt, prefix, output = shape
    return {"lengths": tuple(lengths), "block_sizes": ch08.EXERCISE_8_3_BLOCK_SIZES,
            "model": model,
            "kv_bytes_per_token": calc.kv_bytes_per_token(model), "prompt_tokens": prompt,
            "shared_prefix_tokens": prefix, "output_tokens": output, "block_tokens": 16,
            "batches": ch08.EXERCISE_8_3_BATCHES}


def _parts_8_3() -> tuple[Part, ...]:
    parts = []
    for p in ch08.EXERCISE_8_3_BLOCK_SIZES:
        parts.append(Part(f"a-p{p}-unused", f"unused slots in the tail blocks, summed "
                                            f"(p = {p})", "tokens", "exact"))
        parts.append(Part(f"a-p{p}-entries", f"block-table entries, summed (p = {p})", "blocks",
                          "exact"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-indep-b{b}", f"KV of {b} finished long requests, independent",
                          "MiB"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-shared-b{b}", f"KV of {b} finished long requests, shared prefix",
                          "MiB"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"c-saved-b{b}", f"physical blocks saved for {b} requests when one "
                                           f"private block joins the prefix", "blocks", "exact"))
    return tuple(parts)


def _shared_blocks_8_3(g: dict, batch: int, prefix: int) -> int:
    held = calc.held_tokens(g["prompt_tokens"], g["output_tokens"])
    return kv_scenarios.page_sequences([held] * batch, g["block_tokens"],
                                  shared_prefix_tokens=prefix).physical_blocks


def _solve_8_3(g: dict) -> dict:
    out = _solve_ab_8_3(g)
    for b in g["batches"]:
        prefix = g["shared_prefix_tokens"]
        out[f"c-saved-b{b}"] = (_shared_blocks_8_3(g, b, prefix)
                                - _shared_blocks_8_3(g, b, prefix + g["block_tokens"]))
    return out


def _screen_8_3(seed: int) -> str | None:
    """(a) and (b) only, so that the screen does not page every batch twice: (c) saves
    b - 1 blocks for a batch of b >= 2 at every seed (8.3.2)."""
    return screen_answers(EXERCISE_8_3, _solve_ab_8_3(_params_8_3(seed)))


def _solve_ab_8_3(g: dict) -> dict:
    out = {}
    for p in g["block_sizes"]:
        rep = kv_scenarios.page_sequences(g["lengths"], p)
        out[f"a-p{p}-unused"] = rep.unused_tokens
        out[f"a-p{p}-entries"] = rep.references
    kw = dict(block_tokens=g["block_tokens"])
    for b in g["batches"]:
        out[f"b-indep-b{b}"] = calc.prefix_shared_kv_bytes(
            g["model"], b, g["prompt_tokens"], g["output_tokens"], **kw) / units.MiB
        out[f"b-shared-b{b}"] = calc.prefix_shared_kv_bytes(
            g["model"], b, g["prompt_tokens"], g["output_tokens"],
            shared_prefix_tokens=g["shared_prefix_tokens"], **kw) / units.MiB
    return out


def _mistakes_8_3(g: dict) -> dict:
    hints = {}
    lengths = g["lengths"]
    for p in g["block_sizes"]:
        hints[f"a-p{p}-unused"] = [
            (sum(p - L % p for L in lengths),
             "a sequence that fills its last block exactly leaves no slot unused"),
            (sum(calc.kv_tokens_allocated(L, p) for L in lengths),
             "unused slots are allocated minus stored tokens"),
        ]
        hints[f"a-p{p}-entries"] = [
            (sum(calc.kv_tokens_allocated(L, p) for L in lengths),
             "a block-table entry maps one block, not one token slot"),
            (sum(L // p for L in lengths), "a partly filled tail block needs an entry too: "
                                           "round up"),
        ]
    model, prompt, out_t = g["model"], g["prompt_tokens"], g["output_tokens"]
    k = g["kv_bytes_per_token"]
    held = calc.held_tokens(prompt, out_t)
    prefix = g["shared_prefix_tokens"]
    private = calc.kv_bytes(model, held - prefix) / units.MiB
    for b in g["batches"]:
        hints[f"b-indep-b{b}"] = [
            (b * calc.kv_bytes(model, prompt) / units.MiB,
             "reserve what a request holds when generation ends: prompt + output - 1 tokens"),
            (b * held * k / units.MiB, "round each request up to whole 16-token blocks"),
        ]
        hints[f"b-shared-b{b}"] = [
            (b * calc.kv_bytes(model, held) / units.MiB,
             "with sharing the common prefix is stored once, not once per request"),
            (b * private, "the shared prefix is still stored, once"),
            (b * (private + calc.kv_bytes(model, prefix) / units.MiB),
             "with sharing the common prefix is stored once, not once per request"),
        ]
        hints[f"c-saved-b{b}"] = [
            (b, "the common prefix gains that block, stored once: count it"),
            (b + 1, "each request loses one private block and the prefix gains one"),
        ]
    return hints


EXERCISE_8_3 = register(Exercise(
    id="8-3", title="KV block size and prefix sharing", section="8.3.1-8.3.2",
    parts=_parts_8_3(), make_params=_params_8_3, solve=_solve_8_3, mistakes=_mistakes_8_3,
    screen=_screen_8_3,
))


# --- Exercise 8-4: which prefixes a limited cache should keep (8.3.3-8.3.4) --------------------

KEEP_8_4 = ("A", "B")
WHY_SMALL_8_4 = ("the prefix changes every round", "other requests evict the prefix",
                 "a round does not fit in the pool")
WHY_GAP_8_4 = ("the first round has nothing cached", "only whole blocks are reused",
               "other requests evict the prefix")
_CHAPTER_PREFIXES_8_4 = (ch08.SHARED_PREFIX_TOKENS, ch08.PREFIX_B_TOKENS)   # A and B of 8.3.4
_PREFIXES_8_4 = [_CHAPTER_PREFIXES_8_4, (ch08.SHARED_PREFIX_TOKENS, 3072),
                 (ch08.SHARED_PREFIX_TOKENS, 1536), (4096, 1024), (4096, 2048), (8192, 2048),
                 (8192, 4096)]


def _params_8_4(seed: int) -> dict:
    return dict(_decision_params_8_4(seed), replay=data_ch08.agent_cache_replay(seed))


def _decision_params_8_4(seed: int) -> dict:
    """The given data of (a)-(c), without the replay of (d)."""
    chosen = _variant("8-4", seed, {"prefixes": _CHAPTER_PREFIXES_8_4,
                                     "hit": ch08.RETENTION_HIT_PROB},
                      # B's hit probability: A's (as in 8.3.4), or higher, as shorter prefixes
                      # shared by more requests can be; at equal rates A always wins
                      {"prefixes": _PREFIXES_8_4, "hit": (0.3, 0.4, 0.5, 0.6, 0.7),
                       "b_more": (0.0, 0.0, 0.2, 0.3)})
    a_tokens, b_tokens = chosen["prefixes"]
    model, hw = specs.QWEN3_8B, specs.RTX_PRO_6000
    cache = calc.kv_bytes(model, a_tokens)
    return {
        "model": model, "hardware": hw, "cache_bytes": cache,
        "a_tokens": a_tokens, "b_tokens": b_tokens,
        "b_count": int(cache // calc.kv_bytes(model, b_tokens)),
        "hit_prob": chosen["hit"],
        "b_hit_prob": round(chosen["hit"] + chosen.get("b_more", 0.0), 2),
        # Experiment 8-1's batch-1 prefill efficiency: 62.2% of peak, printed "62%" (8.3.4)
        "efficiency": kv_management.RECOMPUTE_EFFICIENCY,
        "gen5_link_bytes_per_s": ch08.PCIE_GEN5_X16_BYTES_PER_S,
        "gen4_link_bytes_per_s": ch08.PCIE_GEN4_X16_BYTES_PER_S,
    }


def _parts_8_4() -> tuple[Part, ...]:
    parts = [
        Part("a-recompute-A", "time to recompute prefix A", "ms"),
        Part("a-fetch-A", "time to fetch prefix A back over PCIe Gen5", "ms"),
        Part("a-value-A", "expected net saving of keeping A (Gen5)", "ms"),
        Part("a-value-B", "expected net saving of keeping the B prefixes (Gen5)", "ms"),
        Part("a-keep", "which to keep over PCIe Gen5", kind="choice", options=KEEP_8_4),
        Part("b-threshold", "A's hit probability below which the B prefixes win (Gen5)", "%",
             points=2),
        Part("c-value-A", "expected net saving of keeping A (Gen4)", "ms"),
        Part("c-value-B", "expected net saving of keeping the B prefixes (Gen4)", "ms"),
        Part("c-keep", "which to keep over PCIe Gen4", kind="choice", options=KEEP_8_4),
        Part("c-threshold", "A's hit probability below which the B prefixes win (Gen4)", "%"),
        Part("d-prefix-ratio", "common-prefix ratio of the replay", "%"),
        Part("d-hit-large", "actual hit ratio with the large pool", "%"),
        Part("d-reprocessed-small", "input tokens prefilled again with the small pool", "tokens",
             "exact"),
        Part("d-why-small", "why the small pool hits so little", kind="choice",
             options=WHY_SMALL_8_4),
        Part("d-why-gap", "why even the large pool hits less than the common prefix",
             kind="choice", options=WHY_GAP_8_4),
    ]
    return tuple(parts)


def _retention_8_4(g: dict, tokens: int, link: str):
    """Keeping prefix A (``tokens == a_tokens``, A's hit probability) or one B prefix (B's)."""
    hit = g["hit_prob"] if tokens == g["a_tokens"] else g["b_hit_prob"]
    return calc.prefix_retention(g["model"], g["hardware"], tokens, hit_prob=hit,
                                 efficiency=g["efficiency"],
                                 link_bytes_per_s=g[f"{link}_link_bytes_per_s"])


def _solve_8_4(g: dict) -> dict:
    out = _solve_decision_8_4(g)
    rounds = g["replay"].rounds
    total = sum(r.input_tokens for r in rounds)
    out["d-prefix-ratio"] = 100 * sum(r.common_prefix_tokens for r in rounds) / total
    out["d-hit-large"] = 100 * calc.cache_replay_hits(
        total, sum(r.hit_tokens_large for r in rounds)).hit_ratio
    out["d-reprocessed-small"] = calc.cache_replay_hits(
        total, sum(r.hit_tokens_small for r in rounds)).reprocessed_tokens
    # what the large pool misses beyond whole-block rounding of each round's common prefix
    p = g["replay"].block_tokens
    whole = sum(r.common_prefix_tokens // p * p for r in rounds)
    evicted_large = whole - sum(r.hit_tokens_large for r in rounds)
    out["d-why-small"] = "other requests evict the prefix"
    out["d-why-gap"] = ("only whole blocks are reused" if evicted_large == 0
                        else "other requests evict the prefix")
    return out


def _screen_8_4(seed: int) -> str | None:
    """(a)-(c) only, so that the screen does not replay the cache. (d) cannot degenerate by
    construction of ``data_ch08.agent_cache_replay``: at least 3 x 2500 tokens of other requests
    come between two rounds, more than the 1 GiB pool's 7281 tokens, so the small pool's
    reprocessed count is the whole input (> 0), while at most 4 x 3500 tokens stay far below the
    6 GiB pool, which keeps hits."""
    g = _decision_params_8_4(seed)
    out = _solve_decision_8_4(g)
    for prefix, link, key in (("a", "Gen5", "b-threshold"), ("c", "Gen4", "c-threshold")):
        a, b = out[f"{prefix}-value-A"], out[f"{prefix}-value-B"]
        if abs(a - b) <= 0.01 * max(abs(a), abs(b)):
            return f"keeping A and keeping the B prefixes save within 1% of each other ({link})"
        if not 0 < out[key] < 100:
            return f"the break-even hit probability over {link} is outside 0-100%"
        if abs(out[key] - 100 * g["hit_prob"]) < 1.0:
            return (f"A's hit probability is within one percentage point of the break-even "
                    f"over {link}")
    return None


def _solve_decision_8_4(g: dict) -> dict:
    out = {}
    for prefix, link in (("a", "gen5"), ("c", "gen4")):
        a = _retention_8_4(g, g["a_tokens"], link)
        b = _retention_8_4(g, g["b_tokens"], link)
        b_total = g["b_count"] * b.value_s
        if prefix == "a":
            out["a-recompute-A"] = a.recompute_s / units.ms
            out["a-fetch-A"] = a.fetch_s / units.ms
        out[f"{prefix}-value-A"] = a.value_s / units.ms
        out[f"{prefix}-value-B"] = b_total / units.ms
        out[f"{prefix}-keep"] = "A" if a.value_s >= b_total else "B"
        threshold = calc.retention_break_even_hit_prob(a.recompute_s, a.fetch_s, a.maintain_s,
                                                       target_value_s=b_total)
        out["b-threshold" if prefix == "a" else "c-threshold"] = 100 * threshold
    return out


def _mistakes_8_4(g: dict) -> dict:
    hints = {}
    model, hw = g["model"], g["hardware"]
    solved = _solve_8_4(g)
    hints["a-recompute-A"] = [
        (calc.prefix_recompute_s(model, hw, g["a_tokens"], 0.5777) / units.ms,
         "use the batch-1 prefill efficiency of Experiment 8-1, not the batch-16 58%"),
        (calc.prefix_recompute_s(model, hw, g["a_tokens"], 1.0) / units.ms,
         "divide by the efficiency actually reached, not the peak"),
        (calc.matrix_flops(model, g["a_tokens"]) / (g["efficiency"] * hw.peak_flops_per_s)
         / units.ms, "include the causal attention FLOPs of the prefix"),
    ]
    for prefix, link in (("a", "gen5"), ("c", "gen4")):
        a = _retention_8_4(g, g["a_tokens"], link)
        b = _retention_8_4(g, g["b_tokens"], link)
        p = g["hit_prob"]
        hints[f"{prefix}-value-A"] = [
            (p * (a.recompute_s - a.fetch_s) / units.ms,
             "subtract the maintenance time: the swap-out is paid even when the prefix is "
             "never hit"),
            ((p * a.recompute_s - a.maintain_s) / units.ms,
             "a hit still fetches the prefix: it saves T_r - T_f, not T_r"),
            ((a.recompute_s - a.fetch_s - a.maintain_s) / units.ms,
             "weight the saving per hit by the hit probability"),
        ]
        hints[f"{prefix}-value-B"] = [
            (b.value_s / units.ms, "the same space holds several B prefixes: add their values"),
        ]
        key = "b-threshold" if prefix == "a" else "c-threshold"
        hints[key] = [
            (100 * a.break_even_hit_prob,
             "that is the break-even against keeping nothing; compare with the B prefixes' "
             "value instead"),
            (100 * g["b_count"] * b.value_s / (a.recompute_s - a.fetch_s),
             "A still pays its maintenance time: add T_m before dividing"),
        ]
        hints[f"{prefix}-keep"] = [(o, "compare the two expected savings for the same space")
                                   for o in KEEP_8_4 if o != solved[f"{prefix}-keep"]]
    rounds = g["replay"].rounds
    total = sum(r.input_tokens for r in rounds)
    hints["d-prefix-ratio"] = [
        (100 * sum(r.hit_tokens_large for r in rounds) / total,
         "that is what the pool actually hit; the common-prefix ratio counts every token "
         "shared with the previous round's input"),
    ]
    hints["d-hit-large"] = [
        (100 * sum(r.common_prefix_tokens for r in rounds) / total,
         "that is the common-prefix ratio; read the hits the pool actually served"),
    ]
    hints["d-reprocessed-small"] = [
        (sum(r.hit_tokens_small for r in rounds), "count the tokens that must be prefilled "
                                                  "again, not the hits"),
    ]
    hints["d-why-small"] = [(o, "look at how many tokens other requests bring in between two "
                                "rounds, against the small pool's size")
                            for o in WHY_SMALL_8_4 if o != solved["d-why-small"]]
    hints["d-why-gap"] = [(o, "compare each round's hits with its common prefix, block by "
                              "block") for o in WHY_GAP_8_4 if o != solved["d-why-gap"]]
    return hints


register(Exercise(
    id="8-4", title="Which prefixes a limited cache should keep", section="8.3.3-8.3.4",
    parts=_parts_8_4(), make_params=_params_8_4, solve=_solve_8_4, mistakes=_mistakes_8_4,
    conditions=(
        "keeping A and keeping the B prefixes save more than 1% apart, over Gen5 and Gen4",
        "each break-even hit probability lies strictly between 0 and 100%, and A's hit "
        "probability is more than one percentage point away from it",
    ),
    screen=_screen_8_4,
))


# --- Exercise 8-5: weight offloading, prefetch buffers and copy time (8.4.3) -------------------

LINKS_8_5 = ("pcie", "c2c")

def _params_8_5(seed: int) -> dict:
    chosen = _variant("8-5", seed, {"every": 4, "prompt": 8192, "output": 256, "budget_s": 1.0},
                      {"every": (2, 3, 4), "prompt": (4096, 8192), "output": (128, 256, 512),
                       "budget_s": (0.5, 1.0, 2.0)})
    return {
        "model": specs.QWEN3_8B, "every_n_layers": chosen["every"], "buffer_sets": (1, 2),
        "prompt_tokens": chosen["prompt"], "output_tokens": chosen["output"],
        "pcie_link_bytes_per_s": ch08.PCIE_GEN5_X16_BYTES_PER_S,
        "c2c_link_bytes_per_s": ch08.NVLINK_C2C_BYTES_PER_S,
        "compute_round_s": ch08.ROUND_B1_S, "copy_budget_s": chosen["budget_s"],
    }


def _parts_8_5() -> tuple[Part, ...]:
    parts = []
    for n in (1, 2):
        parts.append(Part(f"a-net-{n}buf", f"net GPU memory freed with {n} buffer set(s)", "MiB"))
    for n in (1, 2):
        parts.append(Part(f"a-inputs-{n}buf", f"extra prompt-sized KV states that fit "
                                              f"({n} buffer set(s))", "requests", "exact"))
        parts.append(Part(f"a-complete-{n}buf", f"extra finished-request KV states that fit "
                                                f"({n} buffer set(s))", "requests", "exact"))
    for link, name in (("pcie", "PCIe Gen5 x16"), ("c2c", "NVLink-C2C")):
        parts.append(Part(f"b-copy-{link}", f"lower bound of the copy per step over {name}",
                          "ms"))
        parts.append(Part(f"b-total-{link}", f"lower bound of the copying over all steps, {name}",
                          "s"))
        parts.append(Part(f"b-hidden-{link}", f"can prefetch hide the copy behind a decode round "
                                              f"over {name}?", kind="bool"))
    parts.append(Part("c-min-bw", "smallest one-way bandwidth for the copy budget", "GB/s"))
    return tuple(parts)


def _steps_8_5(g: dict) -> int:
    return calc.held_tokens(0, g["output_tokens"])  # G - 1 forward passes after the prefill


def _solve_8_5(g: dict) -> dict:
    out = {}
    model = g["model"]
    input_state = calc.kv_bytes(model, g["prompt_tokens"])
    complete_state = calc.kv_bytes(model, calc.held_tokens(g["prompt_tokens"], g["output_tokens"]))
    for n in g["buffer_sets"]:
        net = calc.ffn_offload(model, g["every_n_layers"], n).net_saved_bytes
        out[f"a-net-{n}buf"] = net / units.MiB
        out[f"a-inputs-{n}buf"] = int(net // input_state)
        out[f"a-complete-{n}buf"] = int(net // complete_state)
    moved = calc.ffn_offload(model, g["every_n_layers"], 1).offloaded_bytes
    steps = _steps_8_5(g)
    for link in LINKS_8_5:
        bw = g[f"{link}_link_bytes_per_s"]
        copy = calc.offload_copy_bound(moved, bw, g["compute_round_s"], rounds=steps)
        out[f"b-copy-{link}"] = copy.copy_s / units.ms
        out[f"b-total-{link}"] = copy.total_copy_s
        out[f"b-hidden-{link}"] = bool(copy.copy_hidden)
    out["c-min-bw"] = calc.min_link_bytes_per_s(moved, steps, g["copy_budget_s"]) / units.GB
    return out


def _mistakes_8_5(g: dict) -> dict:
    hints = {}
    model = g["model"]
    off = calc.ffn_offload(model, g["every_n_layers"], 1)
    input_state = calc.kv_bytes(model, g["prompt_tokens"])
    complete_state = calc.kv_bytes(model, calc.held_tokens(g["prompt_tokens"], g["output_tokens"]))
    steps = _steps_8_5(g)
    for n in g["buffer_sets"]:
        net = calc.ffn_offload(model, g["every_n_layers"], n).net_saved_bytes
        hints[f"a-net-{n}buf"] = [
            (off.offloaded_bytes / units.MiB, "the prefetch buffers stay on the GPU: subtract "
                                              "them"),
        ]
        hints[f"a-inputs-{n}buf"] = [
            (-(-net // input_state), "only whole states fit: round down"),
            (off.offloaded_bytes // input_state, "divide the net saving, after the buffers"),
        ]
        hints[f"a-complete-{n}buf"] = [
            (-(-net // complete_state), "only whole states fit: round down"),
            (net // input_state, "a finished request holds prompt + output - 1 tokens"),
        ]
    for link in LINKS_8_5:
        bw = g[f"{link}_link_bytes_per_s"]
        net1 = calc.ffn_offload(model, g["every_n_layers"], 1).net_saved_bytes
        hints[f"b-copy-{link}"] = [
            (net1 / bw / units.ms, "every step copies all offloaded weights, not the net "
                                   "saving"),
        ]
        hints[f"b-total-{link}"] = [
            ((steps + 1) * off.offloaded_bytes / bw,
             "the first token comes from the prefill: G - 1 steps copy weights"),
        ]
    hints["c-min-bw"] = [
        ((steps + 1) * off.offloaded_bytes / g["copy_budget_s"] / units.GB,
         "the first token comes from the prefill: G - 1 steps copy weights"),
    ]
    return hints


register(Exercise(
    id="8-5", title="Capacity freed by weight offloading versus added copying", section="8.4.3",
    parts=_parts_8_5(), make_params=_params_8_5, solve=_solve_8_5, mistakes=_mistakes_8_5,
))

