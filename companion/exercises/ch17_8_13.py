"""Practice problems 17-8 ... 17-13 (Chapter 17): given data by seed, answers by calc, hints.

The data they share with 17-1 ... 17-7 (models beyond the presets, the chapter's inputs, the
option lists) is in ``companion.exercises.ch17``, the variant and unit helpers in
``companion.exercises.variants``.
"""

from __future__ import annotations

import math

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises.ch17 import (
    DRAFT_PARAMS_9, H100, PREFIX_TOKENS_5, PREFIX_USERS_5, SHAPE_14B, SPEC_ACCEPTANCE,
    SPEC_DRAFT_LEN, CARDS, CARDS_17_3, ROUND_SMALL)
from companion.exercises.variants import gb as _gb
from companion.exercises.variants import ms as _ms
from companion.exercises.variants import pct as _pct
from companion.exercises.variants import pick, rng_for
from companion.exercises.variants import variant as _variant
from companion.grading import Exercise, Part, register, screen_answers


# --- 17-8: the quantization ceiling (17 §10) ---------------------------------------------------

_FORMATS_17_8 = ("int8", "fp8", "q8_0", "q4_0")


def _params_17_8(seed: int) -> dict:
    c = _variant("17-8", seed,
                 dict(model=specs.LLAMA_8B, hw=H100, fmt="int8", context=ch17.LONG_CONTEXT_TOKENS),
                 dict(model=ROUND_SMALL, hw=CARDS_17_3, fmt=_FORMATS_17_8,
                      context=(4_000, 8_000, 16_000, 32_000)))
    m = c["model"]
    return dict(model=m, hardware=c["hw"], params=m.n_params, format=c["fmt"],
                bytes_per_param=calc.bits_per_value(c["fmt"]) / 8,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), context_tokens=c["context"])


def _solve_17_8(g: dict) -> dict:
    m, hw, bpp, L = g["model"], g["hardware"], g["bytes_per_param"], g["context_tokens"]
    q = calc.quantization_ceiling(m, hw, bpp)
    long_q = calc.decode_vs_context(m, hw, L, bytes_per_param=bpp)
    long_base = calc.decode_vs_context(m, hw, L)
    return {
        "a-weights": _gb(q["weight_bytes"]),
        "b-step": _ms(q["step_s"]),
        "c-ceiling": q["tokens_per_s"],
        "d-baseline": q["baseline_tokens_per_s"],
        "e-speedup": q["speedup"],
        "f-intensity": q["intensity_flop_per_byte"],
        "g-ceiling-long": long_q["tokens_per_s"],
        "h-speedup-long": long_q["tokens_per_s"] / long_base["tokens_per_s"],
    }


def _mistakes_17_8(g: dict) -> dict:
    s = _solve_17_8(g)
    m, hw, bpp, L, k = (g["model"], g["hardware"], g["bytes_per_param"], g["context_tokens"],
                        g["kv_bytes_per_token"])
    bw, w = hw.mem_bw_bytes_per_s, g["params"] * bpp
    nominal = {"q8_0": 1.0, "q4_0": 0.5}.get(g["format"])
    out = {
        "g-ceiling-long": [(s["c-ceiling"], "the KV cache is still BF16 and is read every step: "
                                            "add L x k bytes"),
                           (bw / (w + L * k / 2), "only the weights are quantized; the KV cache "
                                                  "stays at 2 bytes per value")],
        "h-speedup-long": [(s["e-speedup"], "with a long context the KV bytes do not shrink, so "
                                            "the gain is less than the short-context one")],
        "f-intensity": [(1 / s["f-intensity"], "intensity is FLOPs per byte: 2 / bytes per "
                                               "parameter")],
    }
    if nominal is not None:
        scale = "count the block scales too: this format stores {:g} bits per weight".format(
            calc.bits_per_value(g["format"]))
        out["a-weights"] = [(_gb(g["params"] * nominal), scale)]
        out["c-ceiling"] = [(bw / (g["params"] * nominal), scale)]
    return out


register(Exercise(
    id="17-8", title="What weight quantization does to the decode ceiling", section="17 §10",
    parts=(
        Part("a-weights", "quantized weight bytes", "GB", "rel", 0.005),
        Part("b-step", "batch-1 time per token with quantized weights", "ms", "rel", 0.005),
        Part("c-ceiling", "batch-1 decode ceiling with quantized weights", "tok/s", "rel",
             0.005, points=2),
        Part("d-baseline", "batch-1 decode ceiling in BF16", "tok/s", "rel", 0.005),
        Part("e-speedup", "ceiling gain from quantizing", "x", "rel", 0.005),
        Part("f-intensity", "batch-1 decode intensity with quantized weights", "FLOP/B", "rel",
             0.005),
        Part("g-ceiling-long", "batch-1 ceiling at the long context, quantized weights, BF16 KV",
             "tok/s", "rel", 0.005, points=2),
        Part("h-speedup-long", "the gain at the long context", "x", "rel", 0.005),
    ),
    make_params=_params_17_8, solve=_solve_17_8, mistakes=_mistakes_17_8,
))


# --- 17-9: speculative decoding (17 §10) -------------------------------------------------------

_DRAFT_LENS_17_9 = tuple(range(1, 9))


def _params_17_9(seed: int) -> dict:
    c = _variant("17-9", seed,
                 dict(alpha=SPEC_ACCEPTANCE, k=SPEC_DRAFT_LEN, model=specs.LLAMA_8B, hw=H100,
                      draft=DRAFT_PARAMS_9),
                 # at 0.9 the lowest latency lies at or past 8 draft tokens for every draft
                 dict(alpha=(0.5, 0.6, 0.7, 0.75, 0.8), k=(2, 3, 4, 5, 6),
                      model=(specs.LLAMA_8B, SHAPE_14B), hw=CARDS,
                      draft=(0.5e9, 1e9, 1.5e9)))
    m = c["model"]
    return dict(acceptance=c["alpha"], draft_len=c["k"], model=m, hardware=c["hw"],
                target_weight_bytes=m.weight_bytes, draft_params=c["draft"],
                draft_weight_bytes=c["draft"] * 2, draft_lens=_DRAFT_LENS_17_9)


def _spec_times(g: dict) -> tuple[float, float]:
    verify_s = calc.decode_time_split(g["model"], g["hardware"])["step_s"]
    per_draft_s = calc.draft_forward_time(g["draft_weight_bytes"],
                                          g["hardware"].mem_bw_bytes_per_s)
    return verify_s, per_draft_s


def _solve_17_9(g: dict) -> dict:
    a, k = g["acceptance"], g["draft_len"]
    verify_s, per_draft_s = _spec_times(g)
    row = calc.draft_length_table(a, [k], verify_s, per_draft_s)[0]
    step = calc.marginal_draft_gain(a, k + 1, verify_s, per_draft_s)
    return {
        "a-expected": calc.speculative_expected_tokens(a, k),
        "b-marginal": step["added_tokens"],
        # the k -> infinity limit 1 / (1 - a): a long enough draft that a^k has vanished
        "c-limit": calc.speculative_expected_tokens(a, 2_000),
        "d-target-step": _ms(verify_s),
        "e-draft-step": _ms(per_draft_s),
        "f-latency": _ms(row["latency_per_token_s"]),
        "g-speedup": verify_s / row["latency_per_token_s"],
        "h-best-k": calc.best_draft_length(a, g["draft_lens"], verify_s, per_draft_s),
        "i-extend": step["helps"],
    }


def _mistakes_17_9(g: dict) -> dict:
    s = _solve_17_9(g)
    a, k = g["acceptance"], g["draft_len"]
    verify_s, per_draft_s = _spec_times(g)
    return {
        "a-expected": [(s["a-expected"] - 1, "the target pass always yields one token of its own: "
                                             "start the sum at 1"),
                       (s["a-expected"] - a ** k, "the sum runs to a^k: k draft tokens, "
                                                  "k + 1 terms")],
        "b-marginal": [(a ** k, "the (k+1)-th token counts only if it and all k before it are "
                                "accepted: a^(k+1)")],
        "c-limit": [(1 / a, "the geometric series sums to 1 / (1 - a)")],
        "f-latency": [(_ms(verify_s) / s["a-expected"], "the draft's own passes take time too: "
                                                         "(T_target + k x t_draft) / E[tokens]")],
        "g-speedup": [(s["a-expected"], "that is the ideal with a free draft; charge the k draft "
                                        "passes")],
    }


def _screen_17_9(seed: int) -> str | None:
    g = _params_17_9(seed)
    a = g["acceptance"]
    verify_s, per_draft_s = _spec_times(g)
    rows = calc.draft_length_table(a, g["draft_lens"], verify_s, per_draft_s)
    latency = {r["draft_len"]: r["latency_per_token_s"] for r in rows}
    best = min(latency, key=latency.get)
    lens = sorted(latency)
    if best in (lens[0], lens[-1]):
        return (f"the lowest latency per token is at draft length {best}, the edge of "
                f"{lens[0]}-{lens[-1]}, so the true optimum may lie outside the range")
    second = min(v for k, v in latency.items() if k != best)
    if second - latency[best] <= 0.001 * latency[best]:
        return "two draft lengths give latencies per token within 0.1% of each other"
    k = g["draft_len"]
    here, longer = calc.draft_length_table(a, [k, k + 1], verify_s, per_draft_s)
    if abs(here["latency_per_token_s"] - longer["latency_per_token_s"]) <= (
            0.001 * here["latency_per_token_s"]):
        return f"draft lengths {k} and {k + 1} give latencies per token within 0.1%"
    return screen_answers(EXERCISE_17_9, _solve_17_9(g))


EXERCISE_17_9 = register(Exercise(
    id="17-9", title="Speculative decoding: expected tokens and the draft's cost",
    section="17 §10",
    parts=(
        Part("a-expected", "expected tokens per target pass", "tokens", "rel", 0.002, points=2),
        Part("b-marginal", "tokens one more draft token adds", "tokens", "rel", 0.005),
        Part("c-limit", "expected tokens per pass with an unlimited draft", "tokens", "rel",
             0.005),
        Part("d-target-step", "one target pass (batch 1, weights streamed)", "ms", "rel", 0.005),
        Part("e-draft-step", "one draft pass", "ms", "rel", 0.005),
        Part("f-latency", "latency per output token with the draft", "ms", "rel", 0.005),
        Part("g-speedup", "speedup over plain decode", "x", "rel", 0.005),
        Part("h-best-k", "the draft length among 1-8 with the lowest latency per token",
             "tokens", "exact"),
        Part("i-extend", "does going from k to k + 1 draft tokens lower the latency?",
             kind="bool"),
    ),
    make_params=_params_17_9, solve=_solve_17_9, mistakes=_mistakes_17_9,
    conditions=(
        "the draft length with the lowest latency per token lies strictly inside 1-8, and no "
        "other length comes within 0.1% of it",
        "k and k + 1 draft tokens differ in latency per token by more than 0.1%",
    ),
    screen=_screen_17_9,
))


# --- 17-10: choosing the batch between the ITL and memory limits (17 §5, interview) -----------

ITL_OR_MEMORY = ("ITL target", "KV memory")


def _memory_bound_live(m, hw, options, rng) -> int:
    """A live-token count at which each added sequence costs more bytes- than FLOP-time, so the
    step stays on the memory roof (the chapter's step formula is bytes / bandwidth)."""
    per_seq_flop_s = calc.matrix_flops(m, 1, include_lm_head=True) / hw.peak_flops_per_s
    k = calc.kv_bytes_per_token(m)
    ok = [L for L in options if L * k / hw.mem_bw_bytes_per_s > 1.25 * per_seq_flop_s]
    return pick(rng, ok)


def _params_17_10(seed: int) -> dict:
    if seed == 0:
        m, hw, live, reservation = (specs.LLAMA_8B, H100, ch17.CHAT_LIVE_TOKENS,
                                    ch17.LONG_CONTEXT_TOKENS)
        reserve, target = ch17.RUNTIME_RESERVE_BYTES, ch17.ITL_TARGET_S
    else:
        rng = rng_for("17-10", seed)
        m, hw = pick(rng, ROUND_SMALL), pick(rng, CARDS)
        live = _memory_bound_live(m, hw, [400, 600, 800, 1_200, 2_000], rng)
        reservation = pick(rng, [4_000, 8_000, 16_000])
        reserve = pick(rng, [2e9, 4e9, 6e9])
        weights_ms = _ms(m.weight_bytes / hw.mem_bw_bytes_per_s)
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


def _solve_17_10(g: dict) -> dict:
    m, hw, L = g["model"], g["hardware"], g["live_tokens"]
    # block_tokens=1: the chapter divides the budget by the live bytes alone
    gain = calc.paged_batch_gain(m, hw, live_tokens=L, reservation_tokens=g["reservation_tokens"],
                                 block_tokens=1, reserve_bytes=g["reserve_bytes"])
    cap_reserved, cap_paged = gain["naive"]["batch"], gain["paged"]["batch"]
    itl_batch = _largest_batch_within(g, g["itl_target_s"])
    chosen = min(itl_batch, cap_paged)
    step = calc.decode_vs_context(m, hw, L, batch=chosen)
    return {
        "a-free": _gb(gain["kv_budget_bytes"]),
        "b-cap-reserved": cap_reserved,
        "c-cap-paged": cap_paged,
        "d-step-at-cap": _ms(gain["paged"]["step_s"]),
        "e-itl-batch": itl_batch,
        "f-binds-paged": ITL_OR_MEMORY[0] if itl_batch < cap_paged else ITL_OR_MEMORY[1],
        "g-throughput": step["tokens_per_s"],
        "h-binds-reserved": ITL_OR_MEMORY[0] if itl_batch < cap_reserved else ITL_OR_MEMORY[1],
    }


def _mistakes_17_10(g: dict) -> dict:
    s = _solve_17_10(g)
    hw, k, L, w = g["hardware"], g["kv_bytes_per_token"], g["live_tokens"], g["weight_bytes"]
    bw, target = hw.mem_bw_bytes_per_s, g["itl_target_s"]
    free = s["a-free"] * units.GB
    return {
        "a-free": [(_gb(hw.mem_bytes - w), "subtract the runtime + activations reserve too")],
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


register(Exercise(
    id="17-10", title="Pick the batch size between the ITL target and KV memory",
    section="17 §5 and the interview questions",
    parts=(
        Part("a-free", "KV space on the card after weights and reserve", "GB", "rel", 0.005),
        Part("b-cap-reserved", "batch cap with worst-case reservations", "sequences", "exact"),
        Part("c-cap-paged", "batch cap with paged KV (live tokens only)", "sequences", "exact"),
        Part("d-step-at-cap", "decode step at the paged cap", "ms", "rel", 0.005),
        Part("e-itl-batch", "largest batch whose step meets the ITL target", "sequences",
             "exact", points=2),
        Part("f-binds-paged", "which limit binds with paged KV", kind="choice",
             options=ITL_OR_MEMORY),
        Part("g-throughput", "decode throughput at the batch you would run (paged)", "tok/s",
             "rel", 0.005),
        Part("h-binds-reserved", "which limit binds with worst-case reservations", kind="choice",
             options=ITL_OR_MEMORY),
    ),
    make_params=_params_17_10, solve=_solve_17_10, mistakes=_mistakes_17_10,
))


# --- 17-11: head-of-line blocking and chunked prefill (17 §3, §6) ------------------------------

def _params_17_11(seed: int) -> dict:
    c = _variant("17-11", seed,
                 dict(model=specs.LLAMA_8B, hw=H100, eff=ch17.PREFILL_EFFICIENCY,
                      prompt=ch17.PROMPT_TOKENS,
                      output=ch17.OUTPUT_TOKENS, step=ch17.SMOOTH_ITL_S,
                      long=ch17.LONG_CONTEXT_TOKENS,
                      chunk=ch17.CHUNK_TOKENS),
                 dict(model=ROUND_SMALL, hw=CARDS, eff=(0.4, 0.5, 0.6),
                      prompt=(1_024, 2_048, 4_096), output=(150, 250, 500),
                      step=(4e-3, 6e-3, 8e-3, 10e-3), long=(4_000, 8_000, 16_000, 32_000),
                      chunk=(256, 512, 1_024, 2_048)))
    m = c["model"]
    return dict(model=m, hardware=c["hw"], params=m.n_params, efficiency=c["eff"],
                prompt_tokens=c["prompt"], output_tokens=c["output"], decode_step_s=c["step"],
                long_prompt_tokens=c["long"], chunk_tokens=c["chunk"])


def _solve_17_11(g: dict) -> dict:
    m, hw, e, step = g["model"], g["hardware"], g["efficiency"], g["decode_step_s"]
    ttft = calc.prefill_compute_s(m, hw, g["prompt_tokens"], efficiency=e)
    budget = calc.request_budget(ttft, g["output_tokens"], step)
    stall = calc.head_of_line_stall(m, hw, g["long_prompt_tokens"], step, efficiency=e)
    trade = calc.chunked_prefill_trade(m, hw, g["long_prompt_tokens"], g["chunk_tokens"], step,
                                       efficiency=e)
    return {
        "a-ttft": _ms(ttft),
        "b-decode-share": _pct(budget["decode_share"]),
        "c-stall": _ms(stall["stall_s"]),
        "d-stall-ratio": stall["worst_itl_over_step"],
        "e-chunks": trade["chunks"],
        "f-chunk": _ms(trade["chunk_s"]),
        "g-iteration": _ms(trade["iteration_s"]),
        "h-itl-gain": trade["itl_improvement"],
        "i-ttft-chunked": _ms(trade["ttft_s"]),
        "j-ttft-increase": _pct(trade["ttft_increase"]),
    }


def _mistakes_17_11(g: dict) -> dict:
    s = _solve_17_11(g)
    n, c = g["long_prompt_tokens"], g["chunk_tokens"]
    m, hw, e, step = g["model"], g["hardware"], g["efficiency"], g["decode_step_s"]
    trade = calc.chunked_prefill_trade(m, hw, n, c, step, efficiency=e)
    full_peak = "prefill runs at the assumed fraction of peak, not the full roof"
    return {
        "a-ttft": [(s["a-ttft"] * e, full_peak)],
        "b-decode-share": [(100 - s["b-decode-share"], "the decode share is output x ITL over "
                                                       "the whole request")],
        "c-stall": [(s["c-stall"] * e, full_peak)],
        "e-chunks": [(n // c, "a partial last chunk is still a chunk: round up")],
        "f-chunk": [(s["f-chunk"] * e, full_peak)],
        "g-iteration": [(s["f-chunk"], "an iteration runs the decode step and the chunk")],
        "i-ttft-chunked": [(_ms(trade["ttft_exact_s"]),
                            "charge every chunk a full iteration, as the chapter does"),
                           (_ms(trade["dedicated_s"]), "the chunks share iterations with the "
                                                       "decode steps")],
    }


register(Exercise(
    id="17-11", title="Head-of-line blocking, and what chunked prefill trades",
    section="17 §3 and §6",
    parts=(
        Part("a-ttft", "prefill time (TTFT before queueing) of the typical prompt", "ms", "rel",
             0.005),
        Part("b-decode-share", "share of the request's wall clock spent decoding", "%", "rel",
             0.005),
        Part("c-stall", "stall an unchunked long prompt imposes on in-flight decodes", "ms",
             "rel", 0.005),
        Part("d-stall-ratio", "worst ITL over the normal decode step", "x", "rel", 0.005),
        Part("e-chunks", "chunks the long prompt splits into", "chunks", "exact"),
        Part("f-chunk", "compute time of one chunk", "ms", "rel", 0.005),
        Part("g-iteration", "one iteration: decode step plus one chunk", "ms", "rel", 0.005),
        Part("h-itl-gain", "how much the worst ITL improves", "x", "rel", 0.005),
        Part("i-ttft-chunked", "TTFT of the long prompt when chunked", "ms", "rel", 0.005),
        Part("j-ttft-increase", "TTFT increase over a dedicated prefill", "%", "rel", 0.01),
    ),
    make_params=_params_17_11, solve=_solve_17_11, mistakes=_mistakes_17_11,
))


# --- 17-12: what PagedAttention buys (17 §5) ---------------------------------------------------

def _params_17_12(seed: int) -> dict:
    c = _variant("17-12", seed,
                 dict(model=specs.LLAMA_8B, hw=H100, max_len=ch17.MAX_LEN_TOKENS,
                      used=ch17.CHAT_TURN_TOKENS, block=16, reservation=ch17.LONG_CONTEXT_TOKENS,
                      prefix=PREFIX_TOKENS_5, users=PREFIX_USERS_5),
                 dict(model=ROUND_SMALL, hw=CARDS, max_len=(4_096, 8_192, 16_384),
                      used=(200, 300, 500, 1_000), block=(8, 16, 32),
                      reservation=(8_000, 16_000), prefix=(500, 1_000, 2_000, 4_000),
                      users=(20, 50, 100, 200)))
    m = c["model"]
    if seed == 0:
        c["live"] = ch17.CHAT_LIVE_TOKENS
    else:   # keep the paged step on the memory roof, where the chapter's step formula holds
        c["live"] = _memory_bound_live(m, c["hw"], [400, 600, 1_000, 2_000],
                                       rng_for("17-12/live", seed))
    return dict(model=m, hardware=c["hw"], weight_bytes=m.weight_bytes,
                kv_bytes_per_token=calc.kv_bytes_per_token(m),
                reserve_bytes=ch17.RUNTIME_RESERVE_BYTES,
                max_len_tokens=c["max_len"], used_tokens=c["used"], block_tokens=c["block"],
                live_tokens=c["live"], reservation_tokens=c["reservation"],
                prefix_tokens=c["prefix"], users=c["users"])


def _solve_17_12(g: dict) -> dict:
    m, hw = g["model"], g["hardware"]
    waste = calc.reservation_waste(m, g["used_tokens"], max_len_tokens=g["max_len_tokens"])
    worst = calc.paged_worst_waste(m, g["block_tokens"])
    gain = calc.paged_batch_gain(m, hw, live_tokens=g["live_tokens"],
                                 reservation_tokens=g["reservation_tokens"], block_tokens=1,
                                 reserve_bytes=g["reserve_bytes"])
    prefix = calc.prefix_sharing_bytes(m, g["users"], g["prefix_tokens"])
    return {
        "a-reserved": _gb(waste["reserved_bytes"]),
        "b-waste": _pct(waste["wasted_fraction"]),
        "c-worst-paged": worst["bytes"] / units.MB,
        "d-naive-tok-s": gain["naive"]["tokens_per_s"],
        "e-paged-tok-s": gain["paged"]["tokens_per_s"],
        "f-gain": gain["throughput_gain"],
        "g-itl-paged": _ms(gain["paged"]["step_s"]),
        "h-prefix-naive": _gb(prefix["naive_bytes"]),
        "i-prefix-shared": _gb(prefix["shared_bytes"]),
    }


def _mistakes_17_12(g: dict) -> dict:
    s = _solve_17_12(g)
    k, p = g["kv_bytes_per_token"], g["block_tokens"]
    m, hw = g["model"], g["hardware"]
    gain = calc.paged_batch_gain(m, hw, live_tokens=g["live_tokens"],
                                 reservation_tokens=g["reservation_tokens"], block_tokens=1,
                                 reserve_bytes=g["reserve_bytes"])
    return {
        "b-waste": [(100 - s["b-waste"], "waste is the unused share: 1 - used / reserved")],
        "f-gain": [(gain["batch_gain"], "that is the batch gain; each step is heavier at the "
                                        "larger batch, so compare tokens per second")],
        "d-naive-tok-s": [(gain["naive"]["batch"] * hw.mem_bw_bytes_per_s
                           / (gain["naive"]["batch"] * g["reservation_tokens"] * k
                              + g["weight_bytes"]),
                           "empty reservations are never read: a step streams only live KV")],
    }


register(Exercise(
    id="17-12", title="What PagedAttention buys, in memory and tokens per second",
    section="17 §5",
    parts=(
        Part("a-reserved", "KV reserved per request by a worst-case contiguous allocator", "GB",
             "rel", 0.005),
        Part("b-waste", "share of that reservation a short chat turn leaves empty", "%", "rel",
             0.005),
        Part("c-worst-paged", "worst-case paged waste per sequence", "MB", "rel", 0.005),
        Part("d-naive-tok-s", "decode throughput with worst-case reservations", "tok/s", "rel",
             0.005),
        Part("e-paged-tok-s", "decode throughput with paged KV", "tok/s", "rel", 0.005),
        Part("f-gain", "throughput gain from paging", "x", "rel", 0.005, points=2),
        Part("g-itl-paged", "decode step (ITL) of the paged batch", "ms", "rel", 0.005),
        Part("h-prefix-naive", "KV of the shared prefix when every user stores a copy", "GB",
             "rel", 0.005),
        Part("i-prefix-shared", "KV of the shared prefix with prefix sharing", "GB", "rel",
             0.005),
    ),
    make_params=_params_17_12, solve=_solve_17_12, mistakes=_mistakes_17_12,
    also_accepted=lambda g: {"c-worst-paged": [(
        g["block_tokens"] * g["kv_bytes_per_token"] / units.MB,
        f"the chapter's reading, one whole block: {g['block_tokens']} x "
        f"{g['kv_bytes_per_token']:,.0f} B = {g['block_tokens'] * g['kv_bytes_per_token']:,.0f} B"
        f" (that is {g['block_tokens'] * g['kv_bytes_per_token'] / units.MiB:g} MiB, "
        f"{g['block_tokens'] * g['kv_bytes_per_token'] / units.MB:.3g} MB); strictly the last "
        f"block holds at least one token, so at most {g['block_tokens'] - 1} slots sit empty")]},
))


# --- 17-13: KV-aware routing (17 §8) -----------------------------------------------------------

def _params_17_13(seed: int) -> dict:
    c = _variant("17-13", seed,
                 dict(model=specs.LLAMA_8B, hw=H100, eff=ch17.PREFILL_EFFICIENCY,
                      turn=ch17.ROUTING_TURN,
                      first=ch17.AGENT_FIRST_TURN_TOKENS,
                      per_turn=ch17.AGENT_TOKENS_PER_TURN, hits=ch17.ROUTER_WARM_SHARES),
                 dict(model=ROUND_SMALL, hw=CARDS, eff=(0.4, 0.5, 0.6),
                      turn=(5, 10, 20, 30), first=(2_000, 4_000, 6_000),
                      per_turn=(400, 800, 1_200, 2_000),
                      hits=((0.9, 0.3), (0.95, 0.5), (0.8, 0.2))))
    m = c["model"]
    return dict(model=m, hardware=c["hw"], params=m.n_params, efficiency=c["eff"],
                turn=c["turn"], first_turn_tokens=c["first"], tokens_per_turn=c["per_turn"],
                hit_rates=c["hits"])


def _solve_17_13(g: dict) -> dict:
    r = calc.kv_routing_ttft(g["model"], g["hardware"], g["turn"],
                             first_turn_tokens=g["first_turn_tokens"],
                             tokens_per_turn=g["tokens_per_turn"], efficiency=g["efficiency"])
    good, poor = g["hit_rates"]

    def expected_ms(hit: float) -> float:
        return _ms(hit * r["warm_s"] + (1 - hit) * r["cold_s"])

    return {
        "a-context": r["context_tokens"],
        "b-cold-flop": r["cold_flops"] / units.TFLOP,
        "c-cold": _ms(r["cold_s"]),
        "d-warm": _ms(r["warm_s"]),
        "e-ratio": r["speedup"],
        "f-expected-good": expected_ms(good),
        "g-expected-poor": expected_ms(poor),
    }


def _mistakes_17_13(g: dict) -> dict:
    s = _solve_17_13(g)
    t, first, per = g["turn"], g["first_turn_tokens"], g["tokens_per_turn"]
    good, poor = g["hit_rates"]
    swapped = "a warm hit costs the warm TTFT: hit x warm + (1 - hit) x cold"
    return {
        "a-context": [(first + t * per, "turn t adds t - 1 messages to the first turn's prompt")],
        "c-cold": [(s["c-cold"] * g["efficiency"], "prefill runs at the assumed fraction of "
                                                   "peak")],
        "f-expected-good": [(good * s["c-cold"] + (1 - good) * s["d-warm"], swapped)],
        "g-expected-poor": [(poor * s["c-cold"] + (1 - poor) * s["d-warm"], swapped)],
    }


register(Exercise(
    id="17-13", title="What KV-aware routing is worth on a multi-turn conversation",
    section="17 §8",
    parts=(
        Part("a-context", "tokens in the conversation at the given turn", "tokens", "exact"),
        Part("b-cold-flop", "prefill FLOPs on a cold worker", "TFLOP", "rel", 0.005),
        Part("c-cold", "TTFT on a cold worker", "ms", "rel", 0.005),
        Part("d-warm", "TTFT on a warm worker", "ms", "rel", 0.005),
        Part("e-ratio", "cold over warm TTFT", "x", "rel", 0.005),
        Part("f-expected-good", "mean TTFT for the router with the higher warm-hit rate", "ms",
             "rel", 0.005),
        Part("g-expected-poor", "mean TTFT for the router with the lower warm-hit rate", "ms",
             "rel", 0.005),
    ),
    make_params=_params_17_13, solve=_solve_17_13, mistakes=_mistakes_17_13,
))
