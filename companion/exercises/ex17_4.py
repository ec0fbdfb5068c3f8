"""Exercise 17-4: MBU and MFU from a measurement (17 §9)."""

from __future__ import annotations

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import gb, pct
from companion.grading import Exercise, Part
from companion.seeds import pick, rng_for


def _params(seed: int) -> dict:
    if seed == 0:
        m, hw, b, L = specs.LLAMA_8B, specs.H100_SXM, 1, 0
        decode_rate, prefill_rate, promised = ch17.DECODE_TOK_PER_S, ch17.PREFILL_TOK_PER_S, \
            ch17.PROMISED_SPEEDUP
    else:
        rng = rng_for("17-4", seed)
        m, hw = pick(rng, common_ch17.ROUND_SMALL), pick(rng, common_ch17.CARDS)
        b, L = pick(rng, [1, 4, 16, 32]), pick(rng, [0, 500, 1_000, 2_000, 4_000])
        ceiling = calc.decode_vs_context(m, hw, L, batch=b)["tokens_per_s"]
        decode_rate = round(pick(rng, [0.45, 0.55, 0.62, 0.7, 0.78, 0.85]) * ceiling)
        mfu = pick(rng, [0.22, 0.3, 0.38, 0.45, 0.55])
        prefill_rate = round(mfu * hw.peak_flops_per_s / calc.matrix_flops(m, 1), -2)
        promised = pick(rng, [1.2, 1.5, 2, 3, 5])
    return dict(model=m, hardware=hw, params=m.n_params, weight_bytes=m.weight_bytes,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), batch=b, context_tokens=L,
                decode_tokens_per_s=decode_rate, prefill_tokens_per_s=prefill_rate,
                promised_speedup=promised)


def _solve(g: dict) -> dict:
    m, hw, b, L = g["model"], g["hardware"], g["batch"], g["context_tokens"]
    dec = calc.decode_utilization(m, hw, g["decode_tokens_per_s"], batch=b, context_tokens=L)
    per_token = calc.read_bytes_per_output_token(m.streamed_weight_bytes, b, L,
                                                 g["kv_bytes_per_token"])
    return {
        "a-bytes-per-token": gb(per_token),
        "b-mbu": pct(dec["mbu"]),
        "c-mfu-decode": pct(dec["mfu"]),
        "d-headroom": dec["headroom"],
        "e-ceiling": calc.decode_vs_context(m, hw, L, batch=b)["tokens_per_s"],
        "f-promise-possible": dec["headroom"] >= g["promised_speedup"],
        "g-mfu-prefill": pct(calc.prefill_utilization(m, hw, g["prefill_tokens_per_s"])["mfu"]),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    hw, b, L, k = g["hardware"], g["batch"], g["context_tokens"], g["kv_bytes_per_token"]
    w, rate = g["weight_bytes"], g["decode_tokens_per_s"]
    step_bytes = w + b * L * k
    sparse = "divide by the dense BF16 peak, not the 2:4-sparse headline (2x)"
    out = {
        "a-bytes-per-token": [(gb(step_bytes), "that is one step's bytes; a step emits b tokens, "
                                               "so divide the shared weight read by b")],
        "b-mbu": [(pct(rate * step_bytes / hw.mem_bw_bytes_per_s),
                   "bytes per token are D_w / b + L k: each step's weight read serves b tokens")],
        "c-mfu-decode": [(s["c-mfu-decode"] / 2, sparse)],
        "d-headroom": [(s["b-mbu"] / 100, "headroom is 1 / MBU: how far the rate can still rise")],
        "g-mfu-prefill": [(s["g-mfu-prefill"] / 2, sparse)],
    }
    if L > 0:
        out["a-bytes-per-token"].append((gb(w / b), "add each sequence's own live KV, L x k"))
        out["b-mbu"].append((pct(rate * w / b / hw.mem_bw_bytes_per_s),
                             "the live KV is streamed too: add L x k per token"))
    return out


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-4", title="Judge a deployment by MBU and MFU", section="17 §9",
        parts=(
            Part("a-bytes-per-token", "bytes streamed per output token", "GB", "rel", 0.005),
            Part("b-mbu", "decode MBU", "%", "rel", 0.005, points=2),
            Part("c-mfu-decode", "decode MFU", "%", "rel", 0.005),
            Part("d-headroom", "most the decode rate can still improve on this workload", "x",
                 "rel", 0.005),
            Part("e-ceiling", "decode ceiling at this batch and context", "tok/s", "rel", 0.005),
            Part("f-promise-possible", "is the promised kernel speedup possible?", kind="bool"),
            Part("g-mfu-prefill", "prefill MFU", "%", "rel", 0.005, points=2),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
