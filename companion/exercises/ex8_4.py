"""Exercise 8-4: which prefixes a limited cache should keep (8.3.3-8.3.4)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.formulas import kv_management
from companion.formulas.kv_management import prefix_recompute_s, retention_break_even_hit_prob
from companion.grading import Exercise, Part
from companion.sim import records_ch08


KEEP = ("A", "B")
WHY_SMALL_8_4 = ("the prefix changes every round", "other requests evict the prefix",
                 "a round does not fit in the pool")
WHY_GAP_8_4 = ("the first round has nothing cached", "only whole blocks are reused",
               "other requests evict the prefix")
_CHAPTER_PREFIXES = (ch08.SHARED_PREFIX_TOKENS, ch08.PREFIX_B_TOKENS)   # A and B of 8.3.4
_PREFIXES = [_CHAPTER_PREFIXES, (ch08.SHARED_PREFIX_TOKENS, 3072),
             (ch08.SHARED_PREFIX_TOKENS, 1536), (4096, 1024), (4096, 2048), (8192, 2048),
             (8192, 4096)]


def _params(seed: int) -> dict:
    return dict(_decision_params(seed), replay=records_ch08.agent_cache_replay(seed))


def _decision_params(seed: int) -> dict:
    """The given data of (a)-(c), without the replay of (d)."""
    chosen = variant("8-4", seed, {"prefixes": _CHAPTER_PREFIXES,
                                   "hit": ch08.RETENTION_HIT_PROB},
                     # B's hit probability: A's (as in 8.3.4), or higher, as shorter prefixes
                     # shared by more requests can be; at equal rates A always wins
                     {"prefixes": _PREFIXES, "hit": (0.3, 0.4, 0.5, 0.6, 0.7),
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


def _parts() -> tuple[Part, ...]:
    parts = [
        Part("a-recompute-A", "time to recompute prefix A", "ms"),
        Part("a-fetch-A", "time to fetch prefix A back over PCIe Gen5", "ms"),
        Part("a-value-A", "expected net saving of keeping A (Gen5)", "ms"),
        Part("a-value-B", "expected net saving of keeping the B prefixes (Gen5)", "ms"),
        Part("a-keep", "which to keep over PCIe Gen5", kind="choice", options=KEEP),
        Part("b-threshold", "A's hit probability below which the B prefixes win (Gen5)", "%",
             points=2),
        Part("c-value-A", "expected net saving of keeping A (Gen4)", "ms"),
        Part("c-value-B", "expected net saving of keeping the B prefixes (Gen4)", "ms"),
        Part("c-keep", "which to keep over PCIe Gen4", kind="choice", options=KEEP),
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


def _retention(g: dict, tokens: int, link: str):
    """Keeping prefix A (``tokens == a_tokens``, A's hit probability) or one B prefix (B's)."""
    hit = g["hit_prob"] if tokens == g["a_tokens"] else g["b_hit_prob"]
    return calc.prefix_retention(g["model"], g["hardware"], tokens, hit_prob=hit,
                                 efficiency=g["efficiency"],
                                 link_bytes_per_s=g[f"{link}_link_bytes_per_s"])


def _solve(g: dict) -> dict:
    out = _solve_decision(g)
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


def _screen(seed: int) -> str | None:
    """(a)-(c) only, so that the screen does not replay the cache. (d) cannot degenerate by
    construction of ``records_ch08.agent_cache_replay``: at least 3 x 2500 tokens of other requests
    come between two rounds, more than the 1 GiB pool's 7281 tokens, so the small pool's
    reprocessed count is the whole input (> 0), while at most 4 x 3500 tokens stay far below the
    6 GiB pool, which keeps hits."""
    g = _decision_params(seed)
    out = _solve_decision(g)
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


def _solve_decision(g: dict) -> dict:
    out = {}
    for prefix, link in (("a", "gen5"), ("c", "gen4")):
        a = _retention(g, g["a_tokens"], link)
        b = _retention(g, g["b_tokens"], link)
        b_total = g["b_count"] * b.value_s
        if prefix == "a":
            out["a-recompute-A"] = a.recompute_s / units.ms
            out["a-fetch-A"] = a.fetch_s / units.ms
        out[f"{prefix}-value-A"] = a.value_s / units.ms
        out[f"{prefix}-value-B"] = b_total / units.ms
        out[f"{prefix}-keep"] = "A" if a.value_s >= b_total else "B"
        threshold = retention_break_even_hit_prob(a.recompute_s, a.fetch_s, a.maintain_s,
                                                  target_value_s=b_total)
        out["b-threshold" if prefix == "a" else "c-threshold"] = 100 * threshold
    return out


def _mistakes(g: dict) -> dict:
    hints = {}
    model, hw = g["model"], g["hardware"]
    solved = _solve(g)
    # the batch-16 prefill MFU of Experiment 8-1 (8.6.3): scheme B's 16 x 2048 new tokens on the
    # cached 6144-token prefix in 2.04 s, 57.77% (printed 58%), the same call scheme B prices
    batch16_mfu = calc.measured_prefill_mfu(
        specs.QWEN3_8B, specs.RTX_PRO_6000, ch08.LONG_BATCH,
        ch08.LONG_PROMPT_TOKENS - ch08.SHARED_PREFIX_TOKENS, ch08.SHARED_PREFIX_TOKENS,
        ch08.SHARED_PREFILL_S)
    hints["a-recompute-A"] = [
        (prefix_recompute_s(model, hw, g["a_tokens"], batch16_mfu) / units.ms,
         "use the batch-1 prefill efficiency of Experiment 8-1, not the batch-16 58%"),
        (prefix_recompute_s(model, hw, g["a_tokens"], 1.0) / units.ms,
         "divide by the efficiency actually reached, not the peak"),
        (calc.matrix_flops(model, g["a_tokens"]) / (g["efficiency"] * hw.peak_flops_per_s)
         / units.ms, "include the causal attention FLOPs of the prefix"),
    ]
    # the FLOPs per query-key pair derived wrongly: the score alone (no value mix), or per KV
    # head instead of per query head
    n = g["a_tokens"]
    pairs = n * (n + 1) / 2
    for wrong_a, why in (
            (2 * model.head_dim * model.n_query_heads * model.n_layers,
             "a pair costs the query-key score and the value's multiply-add: "
             "4 d_head FLOPs per query head and layer, not 2 d_head"),
            (4 * model.head_dim * model.n_kv_heads * model.n_layers,
             "attention runs once per query head, not per KV head")):
        hints["a-recompute-A"].append(
            ((calc.matrix_flops(model, n) + wrong_a * pairs)
             / (g["efficiency"] * hw.peak_flops_per_s) / units.ms, why))
    for prefix, link in (("a", "gen5"), ("c", "gen4")):
        a = _retention(g, g["a_tokens"], link)
        b = _retention(g, g["b_tokens"], link)
        p = g["hit_prob"]
        hints[f"{prefix}-value-A"] = [
            (p * (a.recompute_s - a.fetch_s) / units.ms,
             "subtract the maintenance time: the swap-out is paid even when the prefix is "
             "never hit"),
            ((p * a.recompute_s - a.maintain_s) / units.ms,
             "a hit still fetches the prefix: it saves T_rec - T_f, not T_rec"),
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
                                   for o in KEEP if o != solved[f"{prefix}-keep"]]
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


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-4", title="Which prefixes a limited cache should keep", section="8.3.3-8.3.4",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=(
            "keeping A and keeping the B prefixes save more than 1% apart, over Gen5 and Gen4",
            "each break-even hit probability lies strictly between 0 and 100%, and A's hit "
            "probability is more than one percentage point away from it",
        ),
        screen=_screen,
    )]
