"""Exercise 17-12: what PagedAttention buys (17 §5)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import gb, ms, pct, variant
from companion.grading import Exercise, Part
from companion.seeds import pick, rng_for

# Worst-case contexts a variant reserves in (d), "nK" read as n,000 tokens as 17 §4 reads its
# 8K; a variant keeps only those that fit its maximum length (L_res <= L_max).
RESERVATIONS = (4_000, 8_000, 16_000)
PREFIXES = (500, 1_000, 2_000, 4_000)


def _params(seed: int) -> dict:
    c = variant("17-12", seed,
                dict(model=specs.LLAMA_8B, hw=specs.H100_SXM, max_len=ch17.MAX_LEN_TOKENS,
                     used=ch17.CHAT_TURN_TOKENS, block=16, reservation=ch17.LONG_CONTEXT_TOKENS,
                     prefix=ch17.PREFIX_TOKENS, users=ch17.PREFIX_USERS),
                dict(model=common_ch17.ROUND_SMALL, hw=common_ch17.CARDS,
                     max_len=(4_096, 8_192, 16_384), used=(200, 300, 500, 1_000),
                     block=(8, 16, 32), prefix=PREFIXES,
                     users=(20, 50, 100, 200)))
    m = c["model"]
    if seed == 0:
        c["live"] = ch17.CHAT_LIVE_TOKENS
    else:   # keep the paged step on the memory roof, where the chapter's step formula holds
        c["live"] = common_ch17.memory_bound_live(m, c["hw"], [400, 600, 1_000, 2_000],
                                                  rng_for("17-12/live", seed))
        # a worst-case allocator reserves at most the model's maximum length
        c["reservation"] = pick(rng_for("17-12/reservation", seed),
                                [r for r in RESERVATIONS if r <= c["max_len"]])
        # the shared prompt plus one turn must fit a request's reservation
        fits = [n for n in PREFIXES if n + c["used"] <= c["reservation"]]
        if c["prefix"] not in fits:
            c["prefix"] = pick(rng_for("17-12/prefix", seed), fits)
    return dict(model=m, hardware=c["hw"], weight_bytes=m.weight_bytes,
                kv_bytes_per_token=calc.kv_bytes_per_token(m),
                reserve_bytes=ch17.RUNTIME_RESERVE_BYTES,
                max_len_tokens=c["max_len"], used_tokens=c["used"], block_tokens=c["block"],
                live_tokens=c["live"], reservation_tokens=c["reservation"],
                prefix_tokens=c["prefix"], users=c["users"])


def _solve(g: dict) -> dict:
    m, hw = g["model"], g["hardware"]
    waste = calc.reservation_waste(m, g["used_tokens"], max_len_tokens=g["max_len_tokens"])
    worst = calc.paged_worst_waste(m, g["block_tokens"])
    gain = calc.paged_batch_gain(m, hw, live_tokens=g["live_tokens"],
                                 reservation_tokens=g["reservation_tokens"], block_tokens=1,
                                 reserve_bytes=g["reserve_bytes"])
    prefix = calc.prefix_sharing_bytes(m, g["users"], g["prefix_tokens"])
    return {
        "a-reserved": gb(waste["reserved_bytes"]),
        "b-waste": pct(waste["wasted_fraction"]),
        "c-worst-paged": worst["bytes"] / units.MB,
        "d-naive-tok-s": gain["naive"]["tokens_per_s"],
        "e-paged-tok-s": gain["paged"]["tokens_per_s"],
        "f-gain": gain["throughput_gain"],
        "g-itl-paged": ms(gain["paged"]["step_s"]),
        "h-prefix-naive": gb(prefix["naive_bytes"]),
        "i-prefix-shared": gb(prefix["shared_bytes"]),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    k, p = g["kv_bytes_per_token"], g["block_tokens"]
    m, hw = g["model"], g["hardware"]
    gain = calc.paged_batch_gain(m, hw, live_tokens=g["live_tokens"],
                                 reservation_tokens=g["reservation_tokens"], block_tokens=1,
                                 reserve_bytes=g["reserve_bytes"])
    # the slip of reserving (a)'s L_max in (d) instead of the given L_res
    at_max = calc.paged_batch_gain(m, hw, live_tokens=g["live_tokens"],
                                   reservation_tokens=g["max_len_tokens"], block_tokens=1,
                                   reserve_bytes=g["reserve_bytes"])
    at_max_hint = (f"(d) reserves L_res = {g['reservation_tokens']:,} tokens per request, not "
                   f"(a)'s L_max = {g['max_len_tokens']:,}: the batch is M_KV / (L_res k)")
    return {
        "b-waste": [(100 - s["b-waste"], "waste is the unused share: 1 - used / reserved")],
        "f-gain": [(gain["batch_gain"], "that is the batch gain; each step is heavier at the "
                                        "larger batch, so compare tokens per second"),
                   (at_max["throughput_gain"], at_max_hint)],
        "d-naive-tok-s": [(gain["naive"]["batch"] * hw.mem_bw_bytes_per_s
                           / (gain["naive"]["batch"] * g["reservation_tokens"] * k
                              + g["weight_bytes"]),
                           "empty reservations are never read: a step streams only live KV"),
                          (at_max["naive"]["tokens_per_s"], at_max_hint)],
    }


def _also_accepted(g: dict) -> dict:
    return {"c-worst-paged": [(
        g["block_tokens"] * g["kv_bytes_per_token"] / units.MB,
        f"the chapter's reading, one whole block: {g['block_tokens']} x "
        f"{g['kv_bytes_per_token']:,.0f} B = {g['block_tokens'] * g['kv_bytes_per_token']:,.0f} B"
        f" (that is {g['block_tokens'] * g['kv_bytes_per_token'] / units.MiB:g} MiB, "
        f"{g['block_tokens'] * g['kv_bytes_per_token'] / units.MB:.3g} MB); strictly the last "
        f"block holds at least one token, so at most {g['block_tokens'] - 1} slots sit empty")]}


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-12", title="What PagedAttention buys, in memory and tokens per second",
        section="17 §5",
        parts=(
            Part("a-reserved", "KV reserved per request by a worst-case contiguous allocator",
                 "GB", "rel", 0.005),
            Part("b-waste", "share of that reservation a short chat turn leaves empty", "%", "rel",
                 0.005),
            Part("c-worst-paged", "worst-case paged waste per sequence", "MB", "rel", 0.005),
            Part("d-naive-tok-s", "decode throughput with worst-case reservations of L_res tokens",
                 "tok/s", "rel", 0.005),
            Part("e-paged-tok-s", "decode throughput with paged KV", "tok/s", "rel", 0.005),
            Part("f-gain", "throughput gain from paging", "x", "rel", 0.005, points=2),
            Part("g-itl-paged", "decode step (ITL) of the paged batch", "ms", "rel", 0.005),
            Part("h-prefix-naive", "KV of the shared prefix when every user stores a copy", "GB",
                 "rel", 0.005),
            Part("i-prefix-shared", "KV of the shared prefix with prefix sharing", "GB", "rel",
                 0.005),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
        also_accepted=_also_accepted,
    )]
