"""Exercise 17-9: speculative decoding (17 §10)."""

from __future__ import annotations

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import ms, variant
from companion.formulas.speculative import best_draft_length
from companion.grading import Exercise, Part, screen_answers


# an assumption for the draft-cost parts the chapter does not quantify (stated in the given data
# and the notebook): a 1e9-parameter BF16 draft model
DRAFT_PARAMS = 1e9
_DRAFT_LENS = tuple(range(1, 9))


def _params(seed: int) -> dict:
    c = variant("17-9", seed,
                dict(alpha=ch17.SPEC_ACCEPTANCE, k=ch17.SPEC_DRAFT_LEN, model=specs.LLAMA_8B,
                     hw=specs.H100_SXM, draft=DRAFT_PARAMS),
                # at 0.9 the lowest latency lies at or past 8 draft tokens for every draft
                dict(alpha=(0.5, 0.6, 0.7, 0.75, 0.8), k=(2, 3, 4, 5, 6),
                     model=(specs.LLAMA_8B, common_ch17.SHAPE_14B), hw=common_ch17.CARDS,
                     draft=(0.5e9, 1e9, 1.5e9)))
    m = c["model"]
    return dict(acceptance=c["alpha"], draft_len=c["k"], model=m, hardware=c["hw"],
                target_weight_bytes=m.weight_bytes, draft_params=c["draft"],
                draft_weight_bytes=c["draft"] * 2, draft_lens=_DRAFT_LENS)


def _spec_times(g: dict) -> tuple[float, float]:
    verify_s = calc.decode_time_split(g["model"], g["hardware"])["step_s"]
    per_draft_s = calc.draft_forward_time(g["draft_weight_bytes"],
                                          g["hardware"].mem_bw_bytes_per_s)
    return verify_s, per_draft_s


def _solve(g: dict) -> dict:
    a, k = g["acceptance"], g["draft_len"]
    verify_s, per_draft_s = _spec_times(g)
    row = calc.draft_length_table(a, [k], verify_s, per_draft_s)[0]
    step = calc.marginal_draft_gain(a, k + 1, verify_s, per_draft_s)
    return {
        "a-expected": calc.speculative_expected_tokens(a, k),
        "b-marginal": step["added_tokens"],
        # the k -> infinity limit 1 / (1 - a): a long enough draft that a^k has vanished
        "c-limit": calc.speculative_expected_tokens(a, 2_000),
        "d-target-step": ms(verify_s),
        "e-draft-step": ms(per_draft_s),
        "f-latency": ms(row["latency_per_token_s"]),
        "g-speedup": verify_s / row["latency_per_token_s"],
        "h-best-k": best_draft_length(a, g["draft_lens"], verify_s, per_draft_s),
        "i-extend": step["helps"],
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    a, k = g["acceptance"], g["draft_len"]
    verify_s, per_draft_s = _spec_times(g)
    return {
        "a-expected": [(s["a-expected"] - 1, "the target pass always yields one token of its own: "
                                             "start the sum at 1"),
                       (s["a-expected"] - a ** k, "the sum runs to alpha^m: m draft tokens, "
                                                  "m + 1 terms")],
        "b-marginal": [(a ** k, "the (m+1)-th token counts only if it and all m before it are "
                                "accepted: count every acceptance it needs")],
        "c-limit": [(1 / a, "sum the geometric series 1 + alpha + alpha^2 + ... in closed form, "
                            "then let m grow")],
        "f-latency": [(ms(verify_s) / s["a-expected"], "the draft's own passes take time too: "
                                                       "(T_v + m x t_d) / E[X]")],
        "g-speedup": [(s["a-expected"], "that is the ideal with a free draft; charge the m draft "
                                        "passes")],
    }


def _screen(seed: int) -> str | None:
    g = _params(seed)
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
    return screen_answers(exercises()[0], _solve(g))


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-9", title="Speculative decoding: expected tokens and the draft's cost",
        section="17 §10",
        parts=(
            Part("a-expected", "expected tokens per target pass", "tokens", "rel", 0.002,
                 points=2),
            Part("b-marginal", "tokens one more draft token adds", "tokens", "rel", 0.005),
            Part("c-limit", "expected tokens per pass with an unlimited draft", "tokens", "rel",
                 0.005),
            Part("d-target-step", "one target pass (batch 1, weights streamed)", "ms", "rel",
                 0.005),
            Part("e-draft-step", "one draft pass", "ms", "rel", 0.005),
            Part("f-latency", "latency per output token with the draft", "ms", "rel", 0.005),
            Part("g-speedup", "speedup over plain decode", "x", "rel", 0.005),
            Part("h-best-k", "the draft length among 1-8 with the lowest latency per token",
                 "tokens", "exact"),
            Part("i-extend", "does going from m to m + 1 draft tokens lower the latency?",
                 kind="bool"),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=(
            "the draft length with the lowest latency per token lies strictly inside 1-8, and no "
            "other length comes within 0.1% of it",
            "m and m + 1 draft tokens differ in latency per token by more than 0.1%",
        ),
        screen=_screen,
    )]
