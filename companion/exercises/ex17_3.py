"""Exercise 17-3: roofline placement (17 §2)."""

from __future__ import annotations

import math

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import pct, variant
from companion.grading import Exercise, Part, screen_answers


MEMORY_OR_COMPUTE = ("memory", "compute")


def _params(seed: int) -> dict:
    c = variant("17-3", seed,
                dict(hw=specs.H100_SXM, model=specs.LLAMA_8B, batch=ch17.BATCH,
                     short=ch17.CHAT_LIVE_TOKENS, long=ch17.LONG_CONTEXT_TOKENS,
                     prompt=ch17.PROMPT_TOKENS, weight_bytes=None),
                dict(hw=common_ch17.CARDS_17_3, model=common_ch17.ROUND_SMALL,
                     batch=(16, 32, 64), short=(300, 600, 1_000, 2_000),
                     long=(4_000, 8_000, 16_000),
                     prompt=(128, 256, 512, 2_048, 8_192),
                     # weights as the chapter stores them (BF16), or weight-only FP8 that is
                     # widened to BF16 for the matrix products
                     weight_bytes=(None, None, 1.0)))
    m = c["model"]
    if c["weight_bytes"] is not None:
        wb = c["weight_bytes"]
        m = m.with_(name=f"{m.name}, FP8 weights (BF16 compute)", bytes_per_param=wb)
    return dict(hardware=c["hw"], model=m, params=m.n_params, bytes_per_param=m.bytes_per_param,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), batch=c["batch"],
                short_context=c["short"], long_context=c["long"], prompt_tokens=c["prompt"])


def long_batch_bytes(g: dict) -> float:
    """Bytes the long-context batch holds: weights + b x L_long x k of KV + 17 §4's reserve."""
    return (g["params"] * g["bytes_per_param"]
            + g["batch"] * g["long_context"] * g["kv_bytes_per_token"]
            + ch17.RUNTIME_RESERVE_BYTES)


def fits(g: dict) -> bool:
    """Does the batch at the long context fit the card's memory, reserve included?"""
    return long_batch_bytes(g) <= g["hardware"].mem_bytes


def _screen(seed: int) -> str | None:
    g = _params(seed)
    # seed 0 is the chapter's own batch, which does not fit an 80 GB card: the statement says so
    if seed != 0 and not fits(g):
        return ("the batch's KV at the long context, the weights and the runtime reserve would "
                "not fit the card's memory")
    return screen_answers(exercises()[0], _solve(g))


def _solve(g: dict) -> dict:
    m, hw, b = g["model"], g["hardware"], g["batch"]
    ridge = calc.ridge_point(hw)
    i1 = calc.decode_intensity(m, 1)
    i_short = calc.decode_intensity(m, b, g["short_context"])
    i_long = calc.decode_intensity(m, b, g["long_context"])
    i_prefill = calc.prefill_intensity(m, g["prompt_tokens"])
    # the smallest whole batch whose weights-only intensity (B x i1) reaches the ridge
    breakeven = math.ceil(ridge / i1)
    while calc.roofline_point(calc.decode_intensity(m, breakeven), hw)["bound"] != "compute":
        breakeven += 1
    return {
        "a-ridge": ridge,
        "b-i1": i1,
        "c-peak1": pct(calc.roofline_point(i1, hw)["fraction_of_peak"]),
        "d-iB": calc.decode_intensity(m, b),
        "e-iB-short": i_short,
        "f-iB-long": i_long,
        "g-bound-long": calc.roofline_point(i_long, hw)["bound"],
        "h-peak-short": pct(calc.roofline_point(i_short, hw)["fraction_of_peak"]),
        "i-prefill": i_prefill,
        "j-bound-prefill": calc.roofline_point(i_prefill, hw)["bound"],
        "k-breakeven": breakeven,
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    hw, b, k, P = g["hardware"], g["batch"], g["kv_bytes_per_token"], g["params"]
    w = P * g["bytes_per_param"]
    sparse = "use the dense BF16 peak; the headline figure assumes 2:4 sparsity and is 2x"
    no_kv = ("the KV cache does not amortize: every sequence's live KV is read each step, so "
             "add b x L x k to the bytes")
    kv_once = "each of the b sequences reads its own KV: b x L x k bytes, not L x k"
    out = {
        "a-ridge": [(hw.mem_bw_bytes_per_s / hw.peak_flops_per_s, "ridge = peak FLOP/s / "
                                                                  "bandwidth (bytes/s)"),
                    (2 * hw.peak_flops_per_s / hw.mem_bw_bytes_per_s, sparse)],
        "b-i1": ([(2.0, "2 FLOPs per parameter over 2 bytes per parameter")]
                 if g["bytes_per_param"] == 2 else
                 [(2 / 2, f"the weights take {g['bytes_per_param']:g} byte(s) per parameter "
                          "here, not BF16's 2")]),     # 2 FLOPs over BF16's 2 bytes
        "c-peak1": [(pct(s["b-i1"] * hw.mem_bw_bytes_per_s / (2 * hw.peak_flops_per_s)),
                     sparse)],
        "h-peak-short": [(pct(b * hw.mem_bw_bytes_per_s / hw.peak_flops_per_s), no_kv),
                         (pct(s["e-iB-short"] * hw.mem_bw_bytes_per_s
                              / (2 * hw.peak_flops_per_s)), sparse)],
        "k-breakeven": [(math.floor(g["bytes_per_param"] * s["a-ridge"] / 2),
                         "round the batch up: below the ridge it is still memory-bound")],
    }
    if g["bytes_per_param"] != 2:
        # the BF16 answer, b = I*: the weights' s bytes per parameter left out of 2b/s
        s_hint = (f"the weights take {g['bytes_per_param']:g} byte(s) per parameter here: "
                  "2b/s reaches the ridge at b = s I*/2, not at b = I*")
        out["k-breakeven"] += [(math.ceil(s["a-ridge"]), s_hint),
                               (math.floor(s["a-ridge"]), s_hint)]
    for name, L in (("e-iB-short", g["short_context"]), ("f-iB-long", g["long_context"])):
        out[name] = [(b, no_kv), (b * 2 * P / (w + L * k), kv_once)]
    # the chapter prints two significant figures ("49", "12"); the grader wants three
    rounded = ("rounded too far: give at least three significant figures (the grader allows "
               "0.5%)")
    for part in _PARTS:
        if part.kind != "rel":
            continue
        x = s[part.name]
        coarse = {float(f"{x:.2g}"), float(f"{x:.1g}")} | ({float(round(x))} if x >= 1 else set())
        out.setdefault(part.name, []).extend(
            (c, rounded) for c in sorted(coarse) if abs(c - x) > part.tolerance * abs(x))
    return out


# the parts, in the statement's order (``_mistakes`` reads their tolerances)
_PARTS = (
    # no KV in the ridge, batch-1 weights-only decode, the prefill or the break-even batch: a
    # factor of 2 there is not the K-and-V slip the shared hint names
    Part("a-ridge", "ridge point of the card", "FLOP/B", "rel", 0.005, no_slips=(2.0,)),
    Part("b-i1", "decode intensity at batch 1", "FLOP/B", "rel", 0.005, no_slips=(2.0,)),
    Part("c-peak1", "batch-1 decode's attainable share of peak compute", "%", "rel",
         0.005),
    Part("d-iB", "decode intensity at batch b, weights only", "FLOP/B", "rel", 0.005),
    Part("e-iB-short", "effective decode intensity at batch b with short live contexts",
         "FLOP/B", "rel", 0.005),
    Part("f-iB-long", "effective decode intensity at batch b with long live contexts",
         "FLOP/B", "rel", 0.005),
    Part("g-bound-long", "which roof caps batched decode at long contexts", kind="choice",
         options=MEMORY_OR_COMPUTE),
    Part("h-peak-short", "attainable share of peak for batched decode, short contexts",
         "%", "rel", 0.005),
    Part("i-prefill", "prefill intensity of the given prompt", "FLOP/B", "rel", 0.005,
         no_slips=(2.0,)),
    Part("j-bound-prefill", "which roof caps that prefill", kind="choice",
         options=MEMORY_OR_COMPUTE),
    Part("k-breakeven", "smallest whole batch whose weights-only decode reaches the ridge",
         "sequences", "exact", no_slips=(2.0,)),
)


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-3", title="Place decode and prefill on the roofline", section="17 §2",
        parts=_PARTS, make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=("the batch's KV at the long context, the weights and the runtime reserve "
                    "fit the card (except at seed 0, the chapter's own batch)",),
        screen=_screen,
    )]
