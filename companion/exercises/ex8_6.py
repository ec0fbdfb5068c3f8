"""Exercise 8-6: KV compression, answer correctness and retries (8.4.2, 8.4.4)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.exercises.variants import variant
from companion.grading import Exercise, Part, screen_answers
from companion.chapters import ch08
from companion.sim import records_ch08


FORMATS = ("q8_0", "q4_0")


def _params(seed: int) -> dict:
    chosen = variant("8-6", seed, {"prompt": 8192, "budget_gib": 12},
                     {"prompt": (4096, 8192, 16384), "budget_gib": (8, 12, 16, 24)})
    return {
        "model": specs.QWEN3_8B, "prompt_tokens": chosen["prompt"], "output_tokens": 256,
        "block_tokens": 16, "kv_budget_bytes": chosen["budget_gib"] * units.GiB,
        "formats": FORMATS, "precision": records_ch08.precision_results(seed),
        "retries": records_ch08.retry_records(seed, chosen["prompt"]),
    }


def _parts() -> tuple[Part, ...]:
    parts = []
    for fmt in FORMATS:
        parts.append(Part(f"a-input-{fmt}", f"KV of the prompt in {fmt}", "MiB"))
        parts.append(Part(f"a-final-{fmt}", f"KV of a finished long request in {fmt}", "MiB"))
        parts.append(Part(f"a-fit-{fmt}", f"finished long requests that fit the budget in {fmt}",
                          "requests", "exact"))
    parts += [
        Part("b-correct-bf16", "runs answered correctly with BF16 KV", "runs", "exact"),
        Part("b-correct-fp8", "runs answered correctly with FP8 KV", "runs", "exact"),
        Part("b-correct-mixed", "runs answered correctly with FP8 KV + BF16 Q", "runs",
             "exact"),
        Part("b-changed", "runs whose correctness differs between BF16 KV and "
                          "FP8 KV + BF16 Q", "runs", "exact"),
        Part("c-successful", "requests that end with a correct answer", "requests", "exact"),
        Part("c-successful-attempts", "time of every attempt of the successful requests, "
                                      "summed (the chapter's total)", "s"),
        Part("c-total", "time of every attempt of every request, those that never succeed "
                        "included, summed", "s"),
        Part("c-final-only", "time of the successful requests' final attempts only, summed",
             "s"),
    ]
    return tuple(parts)


def _attempts_by_request(records) -> dict:
    by_request: dict = {}
    for a in records.attempts:
        by_request.setdefault(a.request, []).append(a)
    return by_request


def _solve(g: dict) -> dict:
    out = {}
    model, prompt, output = g["model"], g["prompt_tokens"], g["output_tokens"]
    held = calc.held_tokens(prompt, output)
    for fmt in g["formats"]:
        kw = dict(block_tokens=g["block_tokens"])
        out[f"a-input-{fmt}"] = calc.kv_quantized_bytes(model, prompt, fmt, **kw) / units.MiB
        out[f"a-final-{fmt}"] = calc.kv_quantized_bytes(model, held, fmt, **kw) / units.MiB
        out[f"a-fit-{fmt}"] = calc.max_concurrent_kv_format(g["kv_budget_bytes"], model, prompt,
                                                            output, fmt, **kw)
    items = g["precision"].items
    configs = g["precision"].configs
    for key, name in (("bf16", "BF16 KV"), ("fp8", "FP8 KV"), ("mixed", "FP8 KV + BF16 Q")):
        out[f"b-correct-{key}"] = sum(it.correct[configs.index(name)] for it in items)
    i, j = configs.index("BF16 KV"), configs.index("FP8 KV + BF16 Q")
    out["b-changed"] = sum(it.correct[i] != it.correct[j] for it in items)
    by_request = _attempts_by_request(g["retries"])
    done = [a for a in by_request.values() if a[-1].correct]
    out["c-successful"] = len(done)
    out["c-successful-attempts"] = sum(x.time_s for a in done for x in a)
    # a request that never succeeds still spent its attempts: every attempt of every request
    out["c-total"] = sum(calc.time_to_correct_answer_s([x.time_s for x in a])
                         for a in by_request.values())
    out["c-final-only"] = sum(a[-1].time_s for a in done)
    return out


def _chat_attempt_s(output_tokens: int) -> float:
    """An attempt priced as if its prompt were 8.1's 2K chat prompt (the slip (c) warns of)."""
    prefill, decode = records_ch08.retry_round_times(ch08.SHORT_PROMPT_TOKENS)
    return prefill + (output_tokens - 1) * decode


def _mistakes(g: dict) -> dict:
    hints = {}
    model, prompt, output = g["model"], g["prompt_tokens"], g["output_tokens"]
    held = calc.held_tokens(prompt, output)
    code_bits = {"q8_0": 8, "q4_0": 4}
    for fmt in g["formats"]:
        no_scale = code_bits[fmt] / 16
        hints[f"a-input-{fmt}"] = [
            (calc.kv_bytes(model, prompt) * no_scale / units.MiB,
             "each group of 32 values also stores a 2-byte scale"),
        ]
        hints[f"a-final-{fmt}"] = [
            (calc.kv_bytes(model, held) * no_scale / units.MiB,
             "each group of 32 values also stores a 2-byte scale"),
            (calc.kv_quantized_bytes(model, prompt, fmt) / units.MiB,
             "a finished request also holds its output tokens' KV (all but the last)"),
        ]
        hints[f"a-fit-{fmt}"] = [
            (calc.max_concurrent(g["kv_budget_bytes"], model, prompt, output),
             "that is the BF16 capacity: divide by the compressed size"),
            (calc.max_concurrent_kv_format(g["kv_budget_bytes"], model, prompt, 1, fmt),
             "reserve the KV a request holds at the end of generation"),
        ]
    items, configs = g["precision"].items, g["precision"].configs
    i, j = configs.index("BF16 KV"), configs.index("FP8 KV + BF16 Q")
    hints["b-changed"] = [
        (abs(sum(it.correct[i] for it in items) - sum(it.correct[j] for it in items)),
         "compare run by run: equal totals can hide changes in both directions"),
    ]
    by_request = _attempts_by_request(g["retries"])
    done_requests = [a for a in by_request.values() if a[-1].correct]
    hints["c-total"] = [
        (sum(x.time_s for a in by_request.values() if a[-1].correct for x in a),
         "a request that never succeeds still spent its attempts: count them too"),
        (sum(a[-1].time_s for a in by_request.values() if a[-1].correct),
         "a retry's cost includes the failed attempts before it"),
        (sum(_chat_attempt_s(x.output_tokens) for x in g["retries"].attempts),
         "a retry re-sends the request's own prompt: price its prefill at that length"),
    ]
    hints["c-successful-attempts"] = [
        (sum(a[-1].time_s for a in done_requests), "a retry's cost includes the failed attempts "
                                                     "before it"),
        (sum(x.time_s for x in g["retries"].attempts), "count only the requests that end "
                                                        "with a correct answer"),
    ]
    hints["c-final-only"] = [
        (sum(a[0].time_s for a in by_request.values() if a[-1].correct),
         "take each successful request's last attempt, not its first"),
    ]
    hints["c-successful"] = [
        (len(by_request), "some requests never reach a correct answer within the attempts "
                          "allowed"),
    ]
    return hints


def _screen(seed: int) -> str | None:
    g = _params(seed)
    done = [a for a in _attempts_by_request(g["retries"]).values() if a[-1].correct]
    if not any(len(a) > 1 for a in done):
        return ("no request that ends with a correct answer was retried, so (c) would compare "
                "a number with itself")
    answers = _solve(g)
    if answers["b-changed"] == 0:
        return ("no run changes between BF16 KV and FP8 KV + BF16 Q, so the count in (b) "
                "would be zero")
    return screen_answers(exercises()[0], answers)


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-6", title="KV compression: capacity, correctness and retry cost",
        section="8.4.2, 8.4.4",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=(
            "at least one run changes between BF16 KV and FP8 KV + BF16 Q (the count in (b) "
            "is not zero)",
            "at least one request that ends with a correct answer needed a retry (the two sums of "
            "(c) differ)",
        ),
        screen=_screen,
    )]
