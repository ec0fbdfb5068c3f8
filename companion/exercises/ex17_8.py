"""Exercise 17-8: the quantization ceiling (17 §10), at batch 1 and at 17 §2's batch."""

from __future__ import annotations

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import gb, ms, variant
from companion.grading import Exercise, Part, screen_answers


_FORMATS = ("int8", "fp8", "q8_0", "q4_0")


def _params(seed: int) -> dict:
    c = variant("17-8", seed,
                dict(model=specs.LLAMA_8B, hw=specs.H100_SXM, fmt="int8",
                     context=ch17.LONG_CONTEXT_TOKENS, batch=ch17.BATCH),   # 17 §2's B = 64
                dict(model=common_ch17.ROUND_SMALL, hw=common_ch17.CARDS_17_3, fmt=_FORMATS,
                     context=(4_000, 8_000, 16_000, 32_000), batch=(8, 16, 32, 64)))
    m = c["model"]
    return dict(model=m, hardware=c["hw"], params=m.n_params, format=c["fmt"],
                bytes_per_param=calc.bits_per_value(c["fmt"]) / 8,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), context_tokens=c["context"],
                batch=c["batch"])


def _batch_kv_bytes(g: dict) -> float:
    # at batch b each sequence's KV is read once per step: b x L x k (BF16)
    return g["batch"] * g["context_tokens"] * g["kv_bytes_per_token"]


def _solve(g: dict) -> dict:
    m, hw, bpp, L = g["model"], g["hardware"], g["bytes_per_param"], g["context_tokens"]
    q = calc.quantization_ceiling(m, hw, bpp)
    long_q = calc.decode_vs_context(m, hw, L, bytes_per_param=bpp)
    long_base = calc.decode_vs_context(m, hw, L)
    batched = calc.quantized_decode_speedup(m, hw, bpp, batch=g["batch"], context_tokens=L)
    return {
        "a-weights": gb(q["weight_bytes"]),
        "b-step": ms(q["step_s"]),
        "c-ceiling": q["tokens_per_s"],
        "d-baseline": q["baseline_tokens_per_s"],
        "e-speedup": q["speedup"],
        "f-intensity": q["intensity_flop_per_byte"],
        "g-ceiling-long": long_q["tokens_per_s"],
        "h-speedup-long": long_q["tokens_per_s"] / long_base["tokens_per_s"],
        "i-kv-batch": gb(_batch_kv_bytes(g)),
        "j-speedup-batch": batched["speedup"],
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    m, hw, bpp, L, k = (g["model"], g["hardware"], g["bytes_per_param"], g["context_tokens"],
                        g["kv_bytes_per_token"])
    bw, w = hw.mem_bw_bytes_per_s, g["params"] * bpp
    kv_b = _batch_kv_bytes(g)
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
        "i-kv-batch": [(gb(L * k), "each of the b sequences reads its own cache: b x L x k")],
        "j-speedup-batch": [
            (s["e-speedup"], "at batch b the step also reads every sequence's BF16 cache, which "
                             "quantizing the weights does not shrink"),
            (s["h-speedup-long"], "that is one sequence's cache; at batch b the step reads b of "
                                  "them beside one copy of the weights"),
            ((g["params"] * 2 + kv_b / 2) / (w + kv_b / 2),
             "only the weights are quantized; the KV cache stays at 2 bytes per value")],
    }
    if nominal is not None:
        scale = "count the block scales too: this format stores {:g} bits per weight".format(
            calc.bits_per_value(g["format"]))
        out["a-weights"] = [(gb(g["params"] * nominal), scale)]
        out["c-ceiling"] = [(bw / (g["params"] * nominal), scale)]
    return out


def fits(g: dict) -> bool:
    """Do the quantized weights and the batch's BF16 KV fit the card with 17 §4's reserve?"""
    need = g["params"] * g["bytes_per_param"] + _batch_kv_bytes(g) + ch17.RUNTIME_RESERVE_BYTES
    return need <= g["hardware"].mem_bytes


def _screen(seed: int) -> str | None:
    g = _params(seed)
    if not fits(g):
        return ("the batch's KV and the quantized weights would not fit the card's memory "
                "with the runtime reserve")
    return screen_answers(exercises()[0], _solve(g))


def exercises() -> list[Exercise]:
    return [Exercise(
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
            Part("g-ceiling-long",
                 "batch-1 ceiling at the long context, quantized weights, BF16 KV",
                 "tok/s", "rel", 0.005, points=2),
            Part("h-speedup-long", "the gain at the long context", "x", "rel", 0.005),
            Part("i-kv-batch", "BF16 KV one decode step reads at batch b and the long context",
                 "GB", "rel", 0.005),
            Part("j-speedup-batch", "the gain of quantized weights at batch b and the long context",
                 "x", "rel", 0.005, points=2),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=("the quantized weights and the batch's BF16 KV fit the card with the "
                    "runtime reserve",),
        screen=_screen,
    )]
