"""Exercise 8-8: stage acceleration and draft preparation in a whole task (8.6.3)."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch08
from companion.grading import Exercise, Part
from companion.seeds import pick, rng_for


STAGES = ("prefill", "decode", "tool")


def _params(seed: int) -> dict:
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
    return {"stage_s": tuple(stages), "stage_names": STAGES, "halving_factor": 2.0,
            "decode_factor": factor, "prep_s": prep}


def _parts() -> tuple[Part, ...]:
    parts = [Part(f"a-{name}", f"task time with the {name} stage halved", "s")
             for name in STAGES]
    parts += [
        Part("b-time", "task time with faster decode plus draft preparation", "s"),
        Part("b-speedup", "net speedup of the whole task", "x"),
        Part("b-breakeven", "preparation time at which the change stops saving time", "s"),
    ]
    return tuple(parts)


def _speedups(g: dict, stage: str, factor: float) -> list:
    return [factor if name == stage else 1.0 for name in g["stage_names"]]


def _solve(g: dict) -> dict:
    out = {}
    for name in g["stage_names"]:
        out[f"a-{name}"] = calc.staged_task_time(g["stage_s"],
                                                 _speedups(g, name, g["halving_factor"]))
    faster = _speedups(g, "decode", g["decode_factor"])
    out["b-time"] = calc.staged_task_time(g["stage_s"], faster, g["prep_s"])
    out["b-speedup"] = calc.staged_task_speedup(g["stage_s"], faster, g["prep_s"])
    out["b-breakeven"] = calc.staged_break_even_s(g["stage_s"], faster)
    return out


def _mistakes(g: dict) -> dict:
    total = sum(g["stage_s"])
    decode = g["stage_s"][g["stage_names"].index("decode")]
    faster = _speedups(g, "decode", g["decode_factor"])
    hints = {f"a-{name}": [(total / 2, "halve only that one stage; the others keep their time")]
             for name in g["stage_names"]}
    kept_decode = total + g["prep_s"]                            # decode never sped up
    both_decodes = total + decode / g["decode_factor"] + g["prep_s"]
    hints["b-time"] = [
        (calc.staged_task_time(g["stage_s"], faster), "add the draft preparation time"),
        (kept_decode, "decode runs faster too: replace its time by decode / factor before adding "
                      "the preparation"),
        (both_decodes, "the faster decode replaces the original decode time: take the original "
                       "out before adding decode / factor and the preparation"),
    ]
    hints["b-speedup"] = [
        (calc.staged_task_speedup(g["stage_s"], faster),
         "Amdahl alone leaves out the preparation time: add it to the new total"),
        (1 - calc.staged_task_time(g["stage_s"], faster, g["prep_s"]) / total,
         "speedup is old time / new time, not the fraction saved"),
        (calc.staged_task_time(g["stage_s"], faster, g["prep_s"]) / total,
         "this is new time / old time: a speedup is old time / new time, above 1 when the "
         "task gets faster"),
    ]
    hints["b-breakeven"] = [
        (decode, "the preparation may use up the time decode saves, not all of decode"),
        (decode / g["decode_factor"], "the break-even is the time saved: decode minus "
                                      "decode / factor"),
    ]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-8", title="Stage acceleration and draft preparation in a whole task",
        section="8.6.3",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
