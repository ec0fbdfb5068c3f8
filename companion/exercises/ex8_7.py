"""Exercise 8-7: the draft length with the lowest latency per token (8.5.2-8.5.4)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.formulas.speculative import (best_draft_length, draft_round_time,
                                            speculative_output_distribution)
from companion.grading import Exercise, Part

# Other seeds keep every time within Experiment 8-1's batch-1 round (T_v, 26.26 -> 26.3 ms, as
# the exercise rounds it) and change the draft network: its weights, read at the rate that round
# reaches (8.5.3: 2.10 GB -> 3.57 -> 3.6 ms per pass), give t_d.
DRAFT_WEIGHT_OPTIONS = (1.2e9, ch08.DFLASH_DRAFT_WEIGHT_BYTES, 3.0e9)


def _draft_pass_s(draft_weight_bytes: float) -> float:
    """One serial draft pass at Experiment 8-1's batch-1 read rate, to 0.1 ms as Exercise 8-7
    rounds 8.5.3's 3.57 ms (seconds)."""
    read = calc.round_read_bytes(specs.QWEN3_8B, 1, ch08.SHORT_PROMPT_TOKENS)
    rate = calc.effective_read_bandwidth(read, ch08.ROUND_B1_S)
    return round(calc.draft_forward_time(draft_weight_bytes, rate) / units.ms, 1) * units.ms


def _params(seed: int) -> dict:
    chosen = variant("8-7", seed, {"a": ch08.EXERCISE_8_7_ACCEPTANCE,
                                   "draft_bytes": ch08.DFLASH_DRAFT_WEIGHT_BYTES},
                     {"a": (0.6, 0.7, 0.8, 0.85, 0.9), "draft_bytes": DRAFT_WEIGHT_OPTIONS})
    # seed 0 keeps the exercise's printed 3.6 ms (the same as _draft_pass_s gives for 2.10 GB)
    draft_s = (ch08.EXERCISE_8_7_PER_DRAFT_S if seed == 0
               else _draft_pass_s(chosen["draft_bytes"]))
    return {"acceptance": chosen["a"], "verify_s": ch08.EXERCISE_8_7_VERIFY_S,
            "per_draft_s": draft_s, "draft_bytes": chosen["draft_bytes"],
            "draft_lens": ch08.EXERCISE_8_7_DRAFT_LENS, "group": ch08.EXERCISE_8_7_GROUP}


def _parts() -> tuple[Part, ...]:
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


def _solve(g: dict) -> dict:
    a, tv, td = g["acceptance"], g["verify_s"], g["per_draft_s"]
    out = {}
    for row in calc.draft_length_table(a, g["draft_lens"], tv, td):
        m = row["draft_len"]
        out[f"a-m{m}"] = row["expected_tokens"]
        out[f"b-m{m}"] = row["latency_per_token_s"] / units.ms
    out["b-best"] = best_draft_length(a, g["draft_lens"], tv, td)
    grouped = calc.draft_length_table(a, [5], tv, td, g["group"])[0]
    out["c-m5"] = grouped["latency_per_token_s"] / units.ms
    step = calc.marginal_draft_gain(a, 5, tv, td, g["group"])
    out["c-marginal"] = step["marginal_s_per_token"] / units.ms
    out["c-extend"] = bool(step["helps"])
    return out


def _mistakes(g: dict) -> dict:
    a, tv, td = g["acceptance"], g["verify_s"], g["per_draft_s"]
    hints = {}
    for m in g["draft_lens"]:
        n = calc.speculative_expected_tokens(a, m)
        t = draft_round_time(m, tv, td)
        dist = speculative_output_distribution(a, m)
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
        (draft_round_time(5, tv, td) / n5 / units.ms,
         "a partial group of draft positions is timed as a full group"),
    ]
    hints["c-marginal"] = [
        (td / (n5 - n4) / units.ms, "with groups of 4 the fifth position costs a whole new "
                                    "group"),
        (draft_round_time(5, tv, td, g["group"]) / n5 / units.ms,
         "the marginal condition compares the added time per added token, dT_r/dX"),
    ]
    hints["c-extend"] = [(True, "compare dT_r/dX with the current T_r/E[X]")]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-7", title="The draft length with the lowest latency per output token",
        section="8.5.2-8.5.4",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
