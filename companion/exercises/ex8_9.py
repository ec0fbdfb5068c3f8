"""Exercise 8-9: scheme E, and choosing under memory and deadline limits (8.6.2-8.6.3)."""

from __future__ import annotations

import math

from companion import calc, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.formulas.serving import completion_throughput
from companion.grading import Exercise, Part
from companion.sim import records_ch08


CHOICES = ("A", "B", "C", "D", "E", "none")
LOAD_CHOICES = ("B", "E")
# Where E's lookup index lives: host memory (0, as in the chapter) or the GPU, at this many
# bytes per indexed token. An n-gram or suffix index holds a few token ids and positions per
# token, so one index per request over its n + G tokens takes a few MiB for the whole batch.
_INDEX_BYTES_PER_TOKEN = (0, 0, 16, 32, 64)


def _params(seed: int) -> dict:
    chosen = variant("8-9", seed,
                     {"deadline": ch08.DEADLINE_S, "e_tokens": 2.0, "lookup_ms": 0.1,
                      "small_gib": 6, "short": 16, "rate": records_ch08.LOAD_ARRIVAL_RATE_PER_S,
                      "index_per_token": 0},
                     {"deadline": (7.0, 7.5, 8.0), "e_tokens": (2.0, 2.5),
                      "lookup_ms": (0.1, 0.2, 0.5),
                      # below B's memory, between B's and D's, and enough for D
                      "small_gib": (5, 6, 10),
                      "short": (16, 24, 32, 48), "rate": (1.0, 2.0, 4.0, 6.0, 8.0),
                      "index_per_token": _INDEX_BYTES_PER_TOKEN})
    lookup_s = chosen["lookup_ms"] * units.ms
    indexed_tokens = ch08.LONG_BATCH * (ch08.LONG_PROMPT_TOKENS + ch08.OUTPUT_TOKENS)
    index_bytes = float(chosen["index_per_token"] * indexed_tokens)
    return {
        "kv_budget_bytes": ch08.KV_BUDGET_BYTES, "deadline_s": chosen["deadline"],
        "output_tokens": ch08.OUTPUT_TOKENS, "batch": ch08.LONG_BATCH,
        "prompt_tokens": ch08.LONG_PROMPT_TOKENS,
        "shared_prefix_tokens": ch08.SHARED_PREFIX_TOKENS,
        "shared_prefill_s": ch08.SHARED_PREFILL_S, "shared_round_s": ch08.SHARED_ROUND_S,
        "e_tokens_per_round": chosen["e_tokens"], "lookup_s": lookup_s,
        "small_kv_budget_bytes": chosen["small_gib"] * units.GiB,
        "short_output_tokens": chosen["short"], "index_bytes": index_bytes,
        "index_bytes_per_token": chosen["index_per_token"], "indexed_tokens": indexed_tokens,
        "load": records_ch08.scheme_load_runs(seed, deadline_s=chosen["deadline"],
                                              e_tokens_per_round=chosen["e_tokens"],
                                              lookup_s=lookup_s,
                                              arrival_rate_per_s=chosen["rate"],
                                              e_index_bytes=index_bytes),
    }


def _parts() -> tuple[Part, ...]:
    return (
        # whole blocks plus the index: exact, so an index of a few MiB is not lost in the tolerance
        Part("a-memory-E", "KV and buffer memory of scheme E", "MiB", "abs", 0.5),
        Part("a-total-E", "time for scheme E to finish the batch", "s", "rel", 0.001),
        # the batch of 16 requests is no 16-token block: no blocks-vs-tokens hint here
        Part("a-gpu-E", "GPU-seconds per qualifying result, scheme E", "s", "rel", 0.001,
             no_slips=(16.0,)),
        Part("a-best", "scheme with the least GPU time per qualifying result", kind="choice",
             options=CHOICES),
        Part("b-best-small", "best scheme with the smaller memory", kind="choice",
             options=CHOICES),
        Part("c-total-E-short", "scheme E's total time with the shorter output", "s", "rel",
             0.001),
        Part("c-best-short", "best scheme with the shorter output", kind="choice",
             options=CHOICES),
        Part("d-gpu-E", "GPU-seconds per qualifying result of E in the load experiment",
             "s", no_slips=(16.0,)),
        Part("d-ontime-E", "requests of E that finish by their deadline", "requests", "exact"),
        Part("d-good-E", "effective throughput of E in the load experiment", "req/s"),
        Part("d-better", "which scheme serves more correct answers on time", kind="choice",
             options=LOAD_CHOICES),
    )


def _schemes(g: dict) -> list:
    e = calc.SCHEMES["E"].with_(tokens_per_round=g["e_tokens_per_round"],
                                round_extra_s=g["lookup_s"], draft_bytes=g["index_bytes"])
    return [calc.SCHEMES[k] for k in "ABCD"] + [e]


def _scheme_kwargs(g: dict, **changes) -> dict:
    kw = dict(kv_budget_bytes=g["kv_budget_bytes"], output_tokens=g["output_tokens"],
              deadline_s=g["deadline_s"], batch=g["batch"], prompt_tokens=g["prompt_tokens"],
              shared_prefix_tokens=g["shared_prefix_tokens"])
    kw.update(changes)
    return kw


def _load_window(run) -> float:
    """A run's own observation window: from 0 to its own last completion (as 8.6's load
    simulator counts it), so one scheme's rate does not depend on how slow the other is."""
    return max(r.finish_s for r in run.records)


def _common_window(experiment) -> float:
    """From 0 to the last completion of either run (a mistake the hints name)."""
    return max(_load_window(run) for run in experiment.runs)


def _load_throughputs(experiment) -> dict:
    out = {}
    for run in experiment.runs:
        window = _load_window(run)
        on_time = [r.finish_s - r.arrival_s <= experiment.deadline_s for r in run.records]
        good = sum(t and r.correct for r, t in zip(run.records, on_time))
        out[run.scheme] = {
            "on_time": sum(on_time), "good": good, "window": window,
            "gpu_per_good": run.busy_s / good if good else math.inf,
            "completion": completion_throughput(len(run.records), window),
            "effective": calc.effective_throughput([r.correct for r in run.records], on_time,
                                                   window)}
    return out


def _solve(g: dict) -> dict:
    schemes = _schemes(g)
    e = calc.scheme_result(schemes[-1], **_scheme_kwargs(g))
    short = _scheme_kwargs(g, output_tokens=g["short_output_tokens"])
    load = _load_throughputs(g["load"])
    return {
        "a-memory-E": e.memory_bytes / units.MiB,
        "a-total-E": e.total_s,
        "a-gpu-E": e.gpu_s_per_result,
        "a-best": calc.best_scheme(schemes, **_scheme_kwargs(g)) or "none",
        "b-best-small": calc.best_scheme(schemes, **_scheme_kwargs(
            g, kv_budget_bytes=g["small_kv_budget_bytes"])) or "none",
        "c-total-E-short": calc.scheme_result(schemes[-1], **short).total_s,
        "c-best-short": calc.best_scheme(schemes, **short) or "none",
        "d-gpu-E": load["E"]["gpu_per_good"],
        "d-ontime-E": load["E"]["on_time"],
        "d-good-E": load["E"]["effective"],
        # the same trace and the same problems: compare the counts of qualifying results
        "d-better": max(LOAD_CHOICES, key=lambda s: load[s]["good"]),
    }


def _mistakes(g: dict) -> dict:
    schemes = _schemes(g)
    results = calc.compare_schemes(schemes, **_scheme_kwargs(g))
    b, d, e = results["B"], results["D"], results["E"]
    solved = _solve(g)
    plain_rounds = calc.held_tokens(0, g["output_tokens"])
    e_round = g["shared_round_s"] + g["lookup_s"]
    hints = {
        "a-memory-E": [
            (d.memory_bytes / units.MiB, "E's drafts come from a lookup index, not D's draft "
                                         "model"),
            (results["A"].memory_bytes / units.MiB, "E shares the prefix, stored once"),
        ] + ([(b.memory_bytes / units.MiB, "the index lives on the GPU here: add its memory")]
             if g["index_bytes"] else []),
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
                          "qualifying result") for o in CHOICES if o != solved[key]]
    load = g["load"]
    throughputs = _load_throughputs(load)
    e_window = throughputs["E"]["window"]
    hints["d-good-E"] = [
        (throughputs["E"]["completion"], "count only answers that are correct and on time"),
        (throughputs["E"]["good"] / _common_window(load),
         "divide by E's own window, from 0 to E's last completion, not to B's"),
    ]
    e_run = load.runs[1]
    hints["d-gpu-E"] = [
        (e_run.busy_s / len(e_run.records), "divide by the qualifying results (correct and on "
                                            "time), not by every request"),
        (e_run.busy_s / throughputs["E"]["on_time"] if throughputs["E"]["on_time"] else math.inf,
         "a late answer does not qualify, and neither does a wrong one: count only answers "
         "that are both correct and on time"),
        (e_window / throughputs["E"]["good"] if throughputs["E"]["good"] else math.inf,
         "take the time the card was busy (the run's GPU busy time), not the whole observation "
         "window"),
        (e.gpu_s_per_result, "that is the batch design of (a); here divide the run's busy time by "
                             "the results that qualified in the run"),
    ]
    hints["d-ontime-E"] = [(throughputs["E"]["good"],
                            "count every on-time request, correct or not")]
    hints["d-better"] = [(o, "compare correct and on-time answers, not completed ones")
                         for o in LOAD_CHOICES if o != solved["d-better"]]
    return hints


def _also_accepted(g: dict) -> dict:
    """E's times with the rounds not rounded up, (G - 1) / tokens per round: where E yields a
    fractional number of tokens per round (2.5) this differs from whole rounds by more than
    the 0.1% tolerance. Both readings are accepted there; the note names the difference. At a
    whole number of tokens per round the chapter's own count of whole rounds stands alone."""
    e = _schemes(g)[-1]
    out = {}
    if float(g["e_tokens_per_round"]).is_integer():
        # a whole number of tokens per round: the chapter counts whole rounds (2 tokens per
        # round, "followed by 128 subsequent rounds"), so that reading is the only one
        return out
    for key, part, output in (("a", "a-total-E", g["output_tokens"]),
                              ("c", "c-total-E-short", g["short_output_tokens"])):
        res = calc.scheme_result(e, **_scheme_kwargs(g, output_tokens=output))
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


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-9",
        title="Scheme E: GPU time per qualifying result under memory and deadline limits",
        section="8.6.2-8.6.3",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        also_accepted=_also_accepted,
    )]
