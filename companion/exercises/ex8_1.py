"""Exercise 8-1: read volume per output token, b_KV, and the capacity cap (8.2.1)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import common_ch08
from companion.formulas.batching import crossover_vs_capacity, read_volume_table
from companion.grading import Exercise, Part
from companion.seeds import pick, rng_for


_CONTEXT_PAIRS = [(1024, 4096), (2048, 8192), (4096, 16384), (2048, 16384)]
_BUDGETS_GIB = [8, 12, 16, 24]


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
    return {
        "model": model,
        "weight_bytes": model.streamed_weight_bytes,        # D_w
        "kv_bytes_per_token": calc.kv_bytes_per_token(model),  # k
        "batches": ch08.EXP81_BATCHES,
        "contexts": contexts,
        "kv_budget_bytes": kv_budget_bytes,
        "block_tokens": ch08.BLOCK_TOKENS,
        "output_tokens": ch08.OUTPUT_TOKENS,
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
        parts.append(Part(f"d-{ctx_name}", f"does capacity stop the batch before b_KV? "
                                           f"({ctx_name} context)", "", "bool"))
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
        out[f"d-{names[ctx]}"] = c["capacity_limited"]
    return out


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
        hints[f"b-{name}"] = [(w / (ctx * k),
                               "the batch must be a whole number: take the ceiling")]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-1", title="How read volume changes as the batch grows", section="8.2.1",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
