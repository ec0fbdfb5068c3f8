"""Exercises 8-6 ... 8-9 (Chapter 8): given data by seed, answers by calc/sim, hints."""

from __future__ import annotations

import math

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import data_ch08
from companion.exercises.variants import pick, rng_for
from companion.exercises.variants import variant as _variant
from companion.grading import Exercise, Part, register, screen_answers


# --- Exercise 8-6: KV compression, answer correctness and retries (8.4.2, 8.4.4) ----------------

FORMATS_8_6 = ("q8_0", "q4_0")


def _params_8_6(seed: int) -> dict:
    chosen = _variant("8-6", seed, {"prompt": 8192, "budget_gib": 12},
                      {"prompt": (4096, 8192, 16384), "budget_gib": (8, 12, 16, 24)})
    return {
        "model": specs.QWEN3_8B, "prompt_tokens": chosen["prompt"], "output_tokens": 256,
        "block_tokens": 16, "kv_budget_bytes": chosen["budget_gib"] * units.GiB,
        "formats": FORMATS_8_6, "precision": data_ch08.precision_results(seed),
        "retries": data_ch08.retry_records(seed),
    }


def _parts_8_6() -> tuple[Part, ...]:
    parts = []
    for fmt in FORMATS_8_6:
        parts.append(Part(f"a-input-{fmt}", f"KV of the prompt in {fmt}", "MiB"))
        parts.append(Part(f"a-final-{fmt}", f"KV of a finished long request in {fmt}", "MiB"))
        parts.append(Part(f"a-fit-{fmt}", f"finished long requests that fit the budget in {fmt}",
                          "requests", "exact"))
    parts += [
        Part("b-correct-bf16", "questions answered correctly with BF16 KV", "questions", "exact"),
        Part("b-correct-fp8", "questions answered correctly with FP8 KV", "questions", "exact"),
        Part("b-correct-mixed", "questions answered correctly with FP8 KV + BF16 Q", "questions",
             "exact"),
        Part("b-changed", "questions whose correctness differs between BF16 KV and "
                          "FP8 KV + BF16 Q", "questions", "exact"),
        Part("c-successful", "requests that end with a correct answer", "requests", "exact"),
        Part("c-total", "time to a correct answer, every attempt counted, summed", "s"),
        Part("c-final-only", "time of the final successful attempts only, summed", "s"),
    ]
    return tuple(parts)


def _attempts_by_request_8_6(records) -> dict:
    by_request: dict = {}
    for a in records.attempts:
        by_request.setdefault(a.request, []).append(a)
    return by_request


def _solve_8_6(g: dict) -> dict:
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
    done = [a for a in _attempts_by_request_8_6(g["retries"]).values() if a[-1].correct]
    out["c-successful"] = len(done)
    out["c-total"] = sum(calc.time_to_correct_answer_s([x.time_s for x in a]) for a in done)
    out["c-final-only"] = sum(a[-1].time_s for a in done)
    return out


def _mistakes_8_6(g: dict) -> dict:
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
         "compare question by question: equal totals can hide changes in both directions"),
    ]
    by_request = _attempts_by_request_8_6(g["retries"])
    everything = sum(a.time_s for a in g["retries"].attempts)
    hints["c-total"] = [
        (everything, "count only the requests that end with a correct answer"),
        (sum(a[-1].time_s for a in by_request.values() if a[-1].correct),
         "a retry's cost includes the failed attempts before it"),
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


def _screen_8_6(seed: int) -> str | None:
    g = _params_8_6(seed)
    done = [a for a in _attempts_by_request_8_6(g["retries"]).values() if a[-1].correct]
    if not any(len(a) > 1 for a in done):
        return ("no request that ends with a correct answer was retried, so (c) would compare "
                "a number with itself")
    answers = _solve_8_6(g)
    if answers["b-changed"] == 0:
        return ("no question changes between BF16 KV and FP8 KV + BF16 Q, so the list in (b) "
                "would be empty")
    return screen_answers(EXERCISE_8_6, answers)


EXERCISE_8_6 = register(Exercise(
    id="8-6", title="KV compression: capacity, correctness and retry cost",
    section="8.4.2, 8.4.4",
    parts=_parts_8_6(), make_params=_params_8_6, solve=_solve_8_6, mistakes=_mistakes_8_6,
    conditions=(
        "at least one question changes between BF16 KV and FP8 KV + BF16 Q (the list in (b) "
        "is not empty)",
        "at least one request that ends with a correct answer needed a retry (the two sums of "
        "(c) differ)",
    ),
    screen=_screen_8_6,
))


# --- Exercise 8-7: the draft length with the lowest latency per token (8.5.2-8.5.4) -------------



def _params_8_7(seed: int) -> dict:
    # 8.5.3's RTX PRO 6000 figures rounded to one decimal: 26.26 -> 26.3 ms, 3.57 -> 3.6 ms
    chosen = _variant("8-7", seed, {"a": ch08.EXERCISE_8_7_ACCEPTANCE,
                                    "verify_s": ch08.EXERCISE_8_7_VERIFY_S,
                                    "draft_s": ch08.EXERCISE_8_7_PER_DRAFT_S},
                      {"a": (0.6, 0.7, 0.8, 0.85, 0.9),
                       "verify_s": (ch08.DFLASH_PLAIN_STEP_S, 20.0 * units.ms,
                                    ch08.EXERCISE_8_7_VERIFY_S),
                       "draft_s": (2.0 * units.ms, ch08.EXERCISE_8_7_PER_DRAFT_S,
                                   5.0 * units.ms)})
    return {"acceptance": chosen["a"], "verify_s": chosen["verify_s"],
            "per_draft_s": chosen["draft_s"], "draft_lens": ch08.EXERCISE_8_7_DRAFT_LENS,
            "group": ch08.EXERCISE_8_7_GROUP}


def _parts_8_7() -> tuple[Part, ...]:
    parts = [Part(f"a-m{m}", f"expected tokens per round, draft length {m}", "tokens", "rel",
                  0.002) for m in ch08.EXERCISE_8_7_DRAFT_LENS]
    parts += [Part(f"b-m{m}", f"average latency per output token, draft length {m}", "ms")
              for m in ch08.EXERCISE_8_7_DRAFT_LENS]
    parts += [
        Part("b-best", "draft length with the lowest latency per token", kind="choice",
             options=ch08.EXERCISE_8_7_DRAFT_LENS),
        Part("c-m5", "latency per output token at draft length 5, grouped drafting", "ms"),
        Part("c-marginal", "added time per added expected token, going from 4 to 5 (grouped)",
             "ms"),
        Part("c-extend", "does going from 4 to 5 lower the latency per token (grouped)?",
             kind="bool"),
    ]
    return tuple(parts)


def _solve_8_7(g: dict) -> dict:
    a, tv, td = g["acceptance"], g["verify_s"], g["per_draft_s"]
    out = {}
    for row in calc.draft_length_table(a, g["draft_lens"], tv, td):
        m = row["draft_len"]
        out[f"a-m{m}"] = row["expected_tokens"]
        out[f"b-m{m}"] = row["latency_per_token_s"] / units.ms
    out["b-best"] = calc.best_draft_length(a, g["draft_lens"], tv, td)
    grouped = calc.draft_length_table(a, [5], tv, td, g["group"])[0]
    out["c-m5"] = grouped["latency_per_token_s"] / units.ms
    step = calc.marginal_draft_gain(a, 5, tv, td, g["group"])
    out["c-marginal"] = step["marginal_s_per_token"] / units.ms
    out["c-extend"] = bool(step["helps"])
    return out


def _mistakes_8_7(g: dict) -> dict:
    a, tv, td = g["acceptance"], g["verify_s"], g["per_draft_s"]
    hints = {}
    for m in g["draft_lens"]:
        n = calc.speculative_expected_tokens(a, m)
        t = calc.draft_round_time(m, tv, td)
        dist = calc.speculative_output_distribution(a, m)
        per_round_mean = sum(p * t / k for k, p in enumerate(dist, start=1))
        hints[f"a-m{m}"] = [
            (n - 1, "a round always yields the target's own token: E[X] starts at 1"),
            (calc.speculative_expected_tokens(a, m - 1),
             "sum the survival products up to a^m, one term per draft position"),
            (m + 1, "that is the most a round can yield; weight each count by its probability"),
        ]
        hints[f"b-m{m}"] = [
            (t / (m + 1) / units.ms, "divide by the expected output, not the most a round can "
                                     "yield"),
            (per_round_mean / units.ms,
             "divide the round time by the expected output: averaging per-round latencies "
             "weighs a one-token round like a long one"),
            (t / m / units.ms, "divide by the tokens a round outputs, E[X], not the draft "
                               "length"),
        ]
    n5 = calc.speculative_expected_tokens(a, 5)
    n4 = calc.speculative_expected_tokens(a, 4)
    hints["c-m5"] = [
        (calc.draft_round_time(5, tv, td) / n5 / units.ms,
         "a partial group of draft positions is timed as a full group"),
    ]
    hints["c-marginal"] = [
        (td / (n5 - n4) / units.ms, "with groups of 4 the fifth position costs a whole new "
                                    "group"),
        (calc.draft_round_time(5, tv, td, g["group"]) / n5 / units.ms,
         "the marginal condition compares the added time per added token, dT/dN"),
    ]
    hints["c-extend"] = [(True, "compare dT/dN with the current T/N")]
    return hints


register(Exercise(
    id="8-7", title="The draft length with the lowest latency per output token",
    section="8.5.2-8.5.4",
    parts=_parts_8_7(), make_params=_params_8_7, solve=_solve_8_7, mistakes=_mistakes_8_7,
))


# --- Exercise 8-8: stage acceleration and draft preparation in a whole task (8.6.3) ------------

STAGES_8_8 = ("prefill", "decode", "tool")


def _params_8_8(seed: int) -> dict:
    if seed == 0:
        stages, factor, prep = ch08.EX88_STAGE_S, ch08.EX88_DECODE_FACTOR, ch08.EX88_PREP_S
    else:
        rng = rng_for("8-8", seed)
        prefill = pick(rng, [10.0, 15.0, 20.0, 25.0])
        decode = pick(rng, [40.0, 50.0, 60.0])
        stages = (prefill, decode, 100.0 - prefill - decode)
        factor = pick(rng, [2.0, 3.0, 4.0, 8.0])
        saved = decode - decode / factor
        prep = float(round(saved * pick(rng, [0.15, 0.25, 0.4, 0.6]) * 2) / 2)
    return {"stage_s": tuple(stages), "stage_names": STAGES_8_8, "halving_factor": 2.0,
            "decode_factor": factor, "prep_s": prep}


def _parts_8_8() -> tuple[Part, ...]:
    parts = [Part(f"a-{name}", f"task time with the {name} stage halved", "s")
             for name in STAGES_8_8]
    parts += [
        Part("b-time", "task time with faster decode plus draft preparation", "s"),
        Part("b-speedup", "net speedup of the whole task", "x"),
        Part("b-breakeven", "preparation time at which the change stops saving time", "s"),
    ]
    return tuple(parts)


def _speedups_8_8(g: dict, stage: str, factor: float) -> list:
    return [factor if name == stage else 1.0 for name in g["stage_names"]]


def _solve_8_8(g: dict) -> dict:
    out = {}
    for name in g["stage_names"]:
        out[f"a-{name}"] = calc.staged_task_time(g["stage_s"],
                                                 _speedups_8_8(g, name, g["halving_factor"]))
    faster = _speedups_8_8(g, "decode", g["decode_factor"])
    out["b-time"] = calc.staged_task_time(g["stage_s"], faster, g["prep_s"])
    out["b-speedup"] = calc.staged_task_speedup(g["stage_s"], faster, g["prep_s"])
    out["b-breakeven"] = calc.staged_break_even_s(g["stage_s"], faster)
    return out


def _mistakes_8_8(g: dict) -> dict:
    total = sum(g["stage_s"])
    decode = g["stage_s"][g["stage_names"].index("decode")]
    faster = _speedups_8_8(g, "decode", g["decode_factor"])
    hints = {f"a-{name}": [(total / 2, "halve only that one stage; the others keep their time")]
             for name in g["stage_names"]}
    hints["b-time"] = [(calc.staged_task_time(g["stage_s"], faster),
                        "add the draft preparation time")]
    hints["b-speedup"] = [
        (calc.staged_task_speedup(g["stage_s"], faster),
         "Amdahl alone leaves out the preparation time: add it to the new total"),
        (1 - calc.staged_task_time(g["stage_s"], faster, g["prep_s"]) / total,
         "speedup is old time / new time, not the fraction saved"),
    ]
    hints["b-breakeven"] = [
        (decode, "the preparation may use up the time decode saves, not all of decode"),
        (decode / g["decode_factor"], "the break-even is the time saved: decode minus "
                                      "decode / factor"),
    ]
    return hints


register(Exercise(
    id="8-8", title="Stage acceleration and draft preparation in a whole task", section="8.6.3",
    parts=_parts_8_8(), make_params=_params_8_8, solve=_solve_8_8, mistakes=_mistakes_8_8,
))


# --- Exercise 8-9: scheme E, and choosing under memory and deadline limits (8.6.2-8.6.3) -------

CHOICES_8_9 = ("A", "B", "C", "D", "E", "none")
LOAD_CHOICES_8_9 = ("B", "E")


def _params_8_9(seed: int) -> dict:
    chosen = _variant("8-9", seed,
                      {"deadline": ch08.DEADLINE_S, "e_tokens": 2.0, "lookup_ms": 0.1,
                       "small_gib": 6, "short": 16, "rate": data_ch08.LOAD_ARRIVAL_RATE_PER_S},
                      {"deadline": (7.0, 7.5, 8.0), "e_tokens": (2.0, 2.5),
                       "lookup_ms": (0.1, 0.2, 0.5), "small_gib": (6, 7, 8),
                       "short": (16, 24, 32), "rate": (4.0, 6.0, 8.0)})
    lookup_s = chosen["lookup_ms"] * units.ms
    return {
        "kv_budget_bytes": ch08.KV_BUDGET_BYTES, "deadline_s": chosen["deadline"],
        "output_tokens": ch08.OUTPUT_TOKENS, "batch": ch08.LONG_BATCH,
        "prompt_tokens": ch08.LONG_PROMPT_TOKENS,
        "shared_prefix_tokens": ch08.SHARED_PREFIX_TOKENS,
        "shared_prefill_s": ch08.SHARED_PREFILL_S, "shared_round_s": ch08.SHARED_ROUND_S,
        "e_tokens_per_round": chosen["e_tokens"], "lookup_s": lookup_s,
        "small_kv_budget_bytes": chosen["small_gib"] * units.GiB,
        "short_output_tokens": chosen["short"],
        "load": data_ch08.scheme_load_runs(seed, deadline_s=chosen["deadline"],
                                           e_tokens_per_round=chosen["e_tokens"],
                                           lookup_s=lookup_s,
                                           arrival_rate_per_s=chosen["rate"]),
    }


def _parts_8_9() -> tuple[Part, ...]:
    return (
        Part("a-memory-E", "KV and buffer memory of scheme E", "MiB"),
        Part("a-total-E", "time for scheme E to finish the batch", "s", "rel", 0.001),
        Part("a-gpu-E", "GPU-seconds per qualifying result, scheme E", "s", "rel", 0.001),
        Part("a-best", "scheme with the least GPU time per qualifying result", kind="choice",
             options=CHOICES_8_9),
        Part("b-best-small", "best scheme with the smaller memory", kind="choice",
             options=CHOICES_8_9),
        Part("c-total-E-short", "scheme E's total time with the shorter output", "s", "rel",
             0.001),
        Part("c-best-short", "best scheme with the shorter output", kind="choice",
             options=CHOICES_8_9),
        Part("d-late-B", "requests of B that finish after their deadline", "requests", "exact"),
        Part("d-ontime-E", "requests of E that finish by their deadline", "requests", "exact"),
        Part("d-good-E", "effective throughput of E in the load experiment", "req/s"),
        Part("d-better", "which scheme serves more correct answers on time", kind="choice",
             options=LOAD_CHOICES_8_9),
    )


def _schemes_8_9(g: dict) -> list:
    e = calc.SCHEMES["E"].with_(tokens_per_round=g["e_tokens_per_round"],
                                round_extra_s=g["lookup_s"])
    return [calc.SCHEMES[k] for k in "ABCD"] + [e]


def _scheme_kwargs_8_9(g: dict, **changes) -> dict:
    kw = dict(kv_budget_bytes=g["kv_budget_bytes"], output_tokens=g["output_tokens"],
              deadline_s=g["deadline_s"], batch=g["batch"], prompt_tokens=g["prompt_tokens"],
              shared_prefix_tokens=g["shared_prefix_tokens"])
    kw.update(changes)
    return kw


def _load_window_8_9(experiment) -> float:
    """Common observation window: from 0 to the last completion of either run."""
    return max(r.finish_s for run in experiment.runs for r in run.records)


def _load_throughputs_8_9(experiment) -> dict:
    window = _load_window_8_9(experiment)
    out = {}
    for run in experiment.runs:
        on_time = [r.finish_s - r.arrival_s <= experiment.deadline_s for r in run.records]
        out[run.scheme] = {
            "on_time": sum(on_time),
            "completion": calc.completion_throughput(len(run.records), window),
            "effective": calc.effective_throughput([r.correct for r in run.records], on_time,
                                                   window)}
    return out


def _solve_8_9(g: dict) -> dict:
    schemes = _schemes_8_9(g)
    e = calc.scheme_result(schemes[-1], **_scheme_kwargs_8_9(g))
    short = _scheme_kwargs_8_9(g, output_tokens=g["short_output_tokens"])
    load = _load_throughputs_8_9(g["load"])
    return {
        "a-memory-E": e.memory_bytes / units.MiB,
        "a-total-E": e.total_s,
        "a-gpu-E": e.gpu_s_per_result,
        "a-best": calc.best_scheme(schemes, **_scheme_kwargs_8_9(g)) or "none",
        "b-best-small": calc.best_scheme(schemes, **_scheme_kwargs_8_9(
            g, kv_budget_bytes=g["small_kv_budget_bytes"])) or "none",
        "c-total-E-short": calc.scheme_result(schemes[-1], **short).total_s,
        "c-best-short": calc.best_scheme(schemes, **short) or "none",
        "d-late-B": len(g["load"].runs[0].records) - load["B"]["on_time"],
        "d-ontime-E": load["E"]["on_time"],
        "d-good-E": load["E"]["effective"],
        "d-better": max(LOAD_CHOICES_8_9, key=lambda s: load[s]["effective"]),
    }


def _mistakes_8_9(g: dict) -> dict:
    schemes = _schemes_8_9(g)
    results = calc.compare_schemes(schemes, **_scheme_kwargs_8_9(g))
    b, d, e = results["B"], results["D"], results["E"]
    solved = _solve_8_9(g)
    plain_rounds = calc.held_tokens(0, g["output_tokens"])
    e_round = g["shared_round_s"] + g["lookup_s"]
    hints = {
        "a-memory-E": [
            (d.memory_bytes / units.MiB, "E's draft index lives in host memory: no draft "
                                         "weights on the GPU"),
            (results["A"].memory_bytes / units.MiB, "E shares the prefix, stored once"),
        ],
        "a-total-E": [
            (g["shared_prefill_s"] + plain_rounds * e_round,
             "each round yields several tokens per request: fewer rounds than G - 1"),
            (g["shared_prefill_s"] + e.rounds * g["shared_round_s"],
             "add the lookup time to every round"),
            (d.prefill_s + e.rounds * e_round, "E adds no prefill: only D's draft model reads "
                                               "the input"),
        ],
        "a-gpu-E": [
            (e.total_s, "divide the batch's time by the number of qualifying results"),
            (b.total_s / g["batch"], "that is B, whose results all miss the deadline"),
        ],
    }
    for key in ("a-best", "b-best-small", "c-best-short"):
        hints[key] = [(o, "check memory first, then the deadline, then the GPU time per "
                          "qualifying result") for o in CHOICES_8_9 if o != solved[key]]
    load = g["load"]
    throughputs = _load_throughputs_8_9(load)
    own_window = {run.scheme: max(r.finish_s for r in run.records) for run in load.runs}
    hints["d-good-E"] = [
        (throughputs["E"]["completion"], "count only answers that are correct and on time"),
        (throughputs["E"]["effective"] * _load_window_8_9(load) / own_window["E"],
         "use the common observation window for both schemes"),
    ]
    late_or_wrong = {run.scheme: sum(r.finish_s - r.arrival_s > load.deadline_s or not r.correct
                                     for r in run.records) for run in load.runs}
    hints["d-late-B"] = [(late_or_wrong["B"], "count lateness only: a wrong answer can still be "
                                              "on time")]
    hints["d-ontime-E"] = [(throughputs["E"]["effective"] * _load_window_8_9(load),
                            "count every on-time request, correct or not")]
    hints["d-better"] = [(o, "compare effective throughput, not completion throughput")
                         for o in LOAD_CHOICES_8_9 if o != solved["d-better"]]
    return hints


def _also_accepted_8_9(g: dict) -> dict:
    """E's times with the rounds not rounded up, (G - 1) / tokens per round: where E yields a
    fractional number of tokens per round (2.5) this differs from whole rounds by more than
    the 0.1% tolerance. Both readings are accepted; the note names the difference."""
    e = _schemes_8_9(g)[-1]
    out = {}
    for key, part, output in (("a", "a-total-E", g["output_tokens"]),
                              ("c", "c-total-E-short", g["short_output_tokens"])):
        res = calc.scheme_result(e, **_scheme_kwargs_8_9(g, output_tokens=output))
        exact_rounds = calc.held_tokens(0, output) / g["e_tokens_per_round"]
        if math.isclose(exact_rounds, res.rounds, rel_tol=1e-12):
            continue
        unrounded = res.total_s - (res.rounds - exact_rounds) * res.round_s
        note = (f"accepted with {exact_rounds:g} rounds, not rounded up; a batch runs whole "
                f"rounds, {res.rounds}, which the stated answer counts")
        out[part] = [(unrounded, note)]
        if key == "a" and math.isfinite(res.gpu_s_per_result):
            out["a-gpu-E"] = [(res.gpu_s_per_result * unrounded / res.total_s, note)]
    return out


register(Exercise(
    id="8-9", title="Scheme E: GPU time per qualifying result under memory and deadline limits",
    section="8.6.2-8.6.3",
    parts=_parts_8_9(), make_params=_params_8_9, solve=_solve_8_9, mistakes=_mistakes_8_9,
    also_accepted=_also_accepted_8_9,
))
