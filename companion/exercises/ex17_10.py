"""Exercise 17-10: choosing the batch between the ITL and memory limits (17 §5, interview)."""

from __future__ import annotations

import math

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import gb, ms
from companion.grading import Exercise, Part
from companion.seeds import pick, rng_for


ITL_OR_MEMORY = ("ITL target", "KV memory")


def _params(seed: int) -> dict:
    if seed == 0:
        m, hw, live, reservation = (specs.LLAMA_8B, specs.H100_SXM, ch17.CHAT_LIVE_TOKENS,
                                    ch17.LONG_CONTEXT_TOKENS)
        reserve, target = ch17.RUNTIME_RESERVE_BYTES, ch17.ITL_TARGET_S
    else:
        rng = rng_for("17-10", seed)
        m, hw = pick(rng, common_ch17.ROUND_SMALL), pick(rng, common_ch17.CARDS)
        live = common_ch17.memory_bound_live(m, hw, [400, 600, 800, 1_200, 2_000], rng)
        reservation = pick(rng, [4_000, 8_000, 16_000])
        reserve = pick(rng, [2e9, 4e9, 6e9])
        weights_ms = ms(m.weight_bytes / hw.mem_bw_bytes_per_s)
        target = math.ceil(weights_ms * pick(rng, [1.5, 2, 3, 4, 6])) * units.ms
    return dict(model=m, hardware=hw, weight_bytes=m.weight_bytes,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), live_tokens=live,
                reservation_tokens=reservation, reserve_bytes=reserve, itl_target_s=target)


def _largest_batch_within(g: dict, target_s: float) -> int:
    """Largest batch whose decode step (calc.decode_step_time) stays within ``target_s``."""
    m, hw, L = g["model"], g["hardware"], g["live_tokens"]

    def fits(b: int) -> bool:
        return calc.decode_step_time(m, hw, b, L) <= target_s * (1 + 1e-12)

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:   # the step time never falls as the batch grows
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _solve(g: dict) -> dict:
    m, hw, L = g["model"], g["hardware"], g["live_tokens"]
    # block_tokens=1: the chapter divides the budget by the live bytes alone
    gain = calc.paged_batch_gain(m, hw, live_tokens=L, reservation_tokens=g["reservation_tokens"],
                                 block_tokens=1, reserve_bytes=g["reserve_bytes"])
    cap_reserved, cap_paged = gain["naive"]["batch"], gain["paged"]["batch"]
    itl_batch = _largest_batch_within(g, g["itl_target_s"])
    chosen = min(itl_batch, cap_paged)
    step = calc.decode_vs_context(m, hw, L, batch=chosen)
    return {
        "a-free": gb(gain["kv_budget_bytes"]),
        "b-cap-reserved": cap_reserved,
        "c-cap-paged": cap_paged,
        "d-step-at-cap": ms(gain["paged"]["step_s"]),
        "e-itl-batch": itl_batch,
        "f-binds-paged": ITL_OR_MEMORY[0] if itl_batch < cap_paged else ITL_OR_MEMORY[1],
        "g-throughput": step["tokens_per_s"],
        "h-binds-reserved": ITL_OR_MEMORY[0] if itl_batch < cap_reserved else ITL_OR_MEMORY[1],
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    hw, k, L, w = g["hardware"], g["kv_bytes_per_token"], g["live_tokens"], g["weight_bytes"]
    bw, target = hw.mem_bw_bytes_per_s, g["itl_target_s"]
    free = s["a-free"] * units.GB
    return {
        "a-free": [(gb(hw.mem_bytes - w), "subtract the runtime + activations reserve too")],
        "b-cap-reserved": [(free // (k * L), "a worst-case system reserves the full reservation "
                                             "length per sequence, not the live tokens")],
        "c-cap-paged": [(free // (k * g["reservation_tokens"]),
                         "paged KV holds only the live tokens: divide by L_live x k")],
        "e-itl-batch": [(math.floor((target * bw - w) / (k * g["reservation_tokens"])),
                         "a step streams the live KV, not the reservation"),
                        (math.floor(target * bw / (k * L)),
                         "the weights are streamed every step as well: (D_w + B L k) / bandwidth"),
                        (s["e-itl-batch"] + 1, "the largest batch that still meets the target: "
                                               "round down")],
    }


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-10", title="Pick the batch size between the ITL target and KV memory",
        section="17 §5 and the interview questions",
        parts=(
            Part("a-free", "KV space on the card after weights and reserve", "GB", "rel", 0.005),
            Part("b-cap-reserved", "batch cap with worst-case reservations", "sequences", "exact"),
            Part("c-cap-paged", "batch cap with paged KV (live tokens only)", "sequences",
                 "exact"),
            Part("d-step-at-cap", "decode step at the paged cap", "ms", "rel", 0.005),
            Part("e-itl-batch", "largest batch whose step meets the ITL target", "sequences",
                 "exact", points=2),
            Part("f-binds-paged", "which limit binds with paged KV", kind="choice",
                 options=ITL_OR_MEMORY),
            Part("g-throughput", "decode throughput at the batch you would run (paged)", "tok/s",
                 "rel", 0.005),
            Part("h-binds-reserved", "which limit binds with worst-case reservations",
                 kind="choice", options=ITL_OR_MEMORY),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
