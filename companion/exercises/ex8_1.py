"""Exercise 8-1: read volume per output token, b_KV, the capacity cap, and what share of the
read is still weights at that cap (8.2.1)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import common_ch08
from companion.formulas.batching import crossover_vs_capacity, read_volume_table
from companion.grading import Exercise, Part, screen_answers
from companion.seeds import pick, rng_for


_CONTEXT_PAIRS = [(1024, 4096), (2048, 8192), (4096, 16384), (2048, 16384)]
_BUDGETS_GIB = [8, 12, 16, 24]
# Variants use larger blocks and an output length with G - 1 a multiple of every block size, so
# the never-fed-back last output decides a whole block: a reservation for prompt + G tokens
# takes one block more than prompt + G - 1 (at seed 0, 2048 + 255 and 2048 + 256 both round to
# 2304 in 16-token blocks, and the slip costs nothing). The screen keeps the variants where
# that extra block changes at least one context's capacity.
_BLOCK_TOKENS = [64, 128, 256]
_OUTPUT_TOKENS = [257, 513]


def _params(seed: int) -> dict:
    if seed == 0:
        model = specs.QWEN3_8B
        contexts = (ch08.SHORT_PROMPT_TOKENS, ch08.LONG_PROMPT_TOKENS)
        kv_budget_bytes = ch08.KV_BUDGET_BYTES
    else:
        rng = rng_for("8-1", seed)
        model = pick(rng, common_ch08.VARIANT_MODELS)
        contexts = pick(rng, _CONTEXT_PAIRS)
        kv_budget_bytes = pick(rng, _BUDGETS_GIB) * units.GiB
    block_tokens, output_tokens = ch08.BLOCK_TOKENS, ch08.OUTPUT_TOKENS
    if seed != 0:
        block_tokens = pick(rng, _BLOCK_TOKENS)
        output_tokens = pick(rng, _OUTPUT_TOKENS)
    return {
        "model": model,
        "weight_bytes": model.streamed_weight_bytes,        # D_w
        "kv_bytes_per_token": calc.kv_bytes_per_token(model),  # k
        "batches": ch08.EXP81_BATCHES,
        "contexts": contexts,
        "kv_budget_bytes": kv_budget_bytes,
        "block_tokens": block_tokens,
        "output_tokens": output_tokens,
    }


def _parts() -> tuple[Part, ...]:
    parts = []
    for i, ctx_name in enumerate(("short", "long")):
        for b in ch08.EXP81_BATCHES:
            parts.append(Part(f"a-{ctx_name}-b{b}",
                              f"read volume per output token, {ctx_name} context, batch {b}",
                              "GiB", "rel", 0.005))
    for ctx_name in ("short", "long"):
        parts.append(Part(f"b-{ctx_name}", f"smallest batch with KV reads >= weight reads, "
                                           f"{ctx_name} context", "requests", "exact"))
        parts.append(Part(f"c-{ctx_name}", f"independent requests that fit the KV budget, "
                                           f"{ctx_name} context", "requests", "exact"))
        parts.append(Part(f"d-{ctx_name}", f"fraction of the read per output token that is the "
                                           f"weight read D_w / b, at the batch of (c), "
                                           f"{ctx_name} context", "fraction", "rel", 0.005))
        parts.append(Part(f"d-stops-{ctx_name}", f"does the capacity of (c) stop the batch "
                                                 f"below b_KV, {ctx_name} context?", kind="bool"))
    return tuple(parts)


def _solve(g: dict) -> dict:
    out = {}
    rows = read_volume_table(g["weight_bytes"], g["kv_bytes_per_token"], g["batches"],
                             g["contexts"])
    names = dict(zip(g["contexts"], ("short", "long")))
    for row in rows:
        out[f"a-{names[row['context_tokens']]}-b{row['batch']}"] = (
            row["read_bytes_per_token"] / units.GiB)
    for ctx in g["contexts"]:
        c = crossover_vs_capacity(g["model"], g["kv_budget_bytes"], ctx, g["output_tokens"],
                                  block_tokens=g["block_tokens"])
        out[f"b-{names[ctx]}"] = c["crossover_batch"]
        out[f"c-{names[ctx]}"] = c["max_requests"]
        out[f"d-{names[ctx]}"] = weight_fraction(g["weight_bytes"], c["max_requests"], ctx,
                                                  g["kv_bytes_per_token"])
        out[f"d-stops-{names[ctx]}"] = bool(c["max_requests"] < c["crossover_batch"])
    return out


def weight_fraction(weight_bytes: float, batch: int, context_tokens: int,
                    kv_bytes_per_token: float) -> float:
    """(D_w / b) / d(b, L): the share of one output token's read that is the amortised weight
    read, at batch ``batch`` (8.2.1). Above 1/2 exactly when b < D_w / (L k), that is below
    b_KV; NaN for an empty batch (the screen rejects such a variant on its capacity first)."""
    if batch < 1:
        return float("nan")
    total = calc.read_bytes_per_output_token(weight_bytes, batch, context_tokens,
                                             kv_bytes_per_token)
    return weight_bytes / batch / total


def _mistakes(g: dict) -> dict:
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
        p = g["block_tokens"]
        held = ctx + g["output_tokens"] - 1
        alloc_unrounded = held * k
        hints[f"c-{name}"] = [
            (g["kv_budget_bytes"] // (ctx * k), "reserve the KV a request holds once all outputs "
                                                "exist: prompt + output - 1 tokens"),
            (g["kv_budget_bytes"] // alloc_unrounded, f"round each request up to whole {p}-token "
                                                      f"blocks before dividing"),
            (g["kv_budget_bytes"] // (calc.kv_tokens_allocated(ctx + g["output_tokens"], p) * k),
             "the last output token is never fed back: prompt + output - 1 tokens"),
        ]
        c = crossover_vs_capacity(g["model"], g["kv_budget_bytes"], ctx, g["output_tokens"],
                                  block_tokens=p)
        fit, b_kv = c["max_requests"], c["crossover_batch"]
        if fit >= 1:
            share = weight_fraction(w, fit, ctx, k)
            hints[f"d-{name}"] = [
                (1 - share, "that is the KV term's part of the read; the question asks for the "
                            "weight term D_w / b"),
                (weight_fraction(w, b_kv, ctx, k), "take the batch of (c), the most requests "
                                                   "that fit, not b_KV"),
                (weight_fraction(full_w, fit, ctx, k), "D_w is the weights read once per step "
                                                       "(no embedding table), not all weights"),
            ]
        hints[f"b-{name}"] = [(w / (ctx * k),
                               "the batch must be a whole number: take the ceiling")]
    return hints


def last_output_matters(g: dict) -> bool:
    """Whether reserving prompt + G tokens instead of prompt + G - 1 changes (c) for at least
    one context of the variant ``g``."""
    k, budget, p = g["kv_bytes_per_token"], g["kv_budget_bytes"], g["block_tokens"]
    return any(budget // (calc.kv_tokens_allocated(ctx + g["output_tokens"] - 1, p) * k)
               != budget // (calc.kv_tokens_allocated(ctx + g["output_tokens"], p) * k)
               for ctx in g["contexts"])


def _screen(seed: int) -> str | None:
    g = _params(seed)
    if seed != 0 and not last_output_matters(g):
        return "reserving the last output token changes no capacity"
    return screen_answers(exercises()[0], _solve(g))


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-1", title="How read volume changes as the batch grows", section="8.2.1",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=(
            "at every seed but the chapter's, reserving prompt + G tokens instead of "
            "prompt + G - 1 changes the capacity (c) of at least one context",
        ),
        screen=_screen,
    )]
