"""8.6 explorers: serving under load.

``AdmissionPanel``: queue time, prefill/TTFT, output interval and output length against the
deadline (admit or reject, 8.6.1), with Little's law for the arrival rate.
``SchemePanel``: the comprehensive example's schemes A-D (and Exercise 8-9's E) as a live table
and on the memory x deadline plane (Figure 8-35), with sliders for the KV budget, output
length, deadline, tokens per round and shared prefix.
``AmdahlPanel``: the decode fraction, its speedup and an added preparation time -> whole-task
speedup (Figure 8-36, Exercise 8-8's setting).
"""

from __future__ import annotations

import numpy as np

from companion import calc, units
from companion.figures.ch08_serving import (ADMISSION_LAYOUT, AMDAHL_LAYOUT, SCHEME_PLANE_LAYOUT,
                                            admission_traces, amdahl_traces,
                                            scheme_plane_traces)
from companion.formulas import serving as sv
from companion.explorers.base import Control, Panel, View

__all__ = ["AdmissionPanel", "SchemePanel", "AmdahlPanel", "chapter_schemes",
           "SCHEME_SETS", "AMDAHL_FRACTIONS"]


# --- 8.6.1 admission ---------------------------------------------------------------------------

class AdmissionPanel(Panel):
    """Admit a request only if queue + prefill + (G - 1) x interval still meets the deadline;
    Little's law turns its time in the system into the number of requests held."""

    title = "Admission by deadline and Little's law (8.6.1)"
    controls = (
        Control("queue_s", "time already queued (s)", "float", sv.SHORT_QUEUE_S, 0.0, 3.0, 0.01),
        Control("prefill_s", "prefill + first token (s)", "float", sv.SHORT_PREFILL_S, 0.01, 3.0,
                0.001),
        Control("interval_ms", "output interval (ms)", "float", sv.SHORT_INTERVAL_S / units.ms,
                1.0, 100.0, 0.1),
        Control("output_tokens", "output (tokens)", "int", sv.SHORT_OUTPUT_TOKENS, 1, 1024, 1),
        Control("deadline_s", "deadline (s)", "float", sv.DEADLINE_S, 1.0, 30.0, 0.1),
        Control("arrival_rate", "arrival rate (requests/s)", "float",
                sv.LITTLE_ARRIVAL_RATE_PER_S, 0.0, 32.0, 0.5),
    )
    base_layout = ADMISSION_LAYOUT

    def compute(self, *, queue_s, prefill_s, interval_ms, output_tokens, deadline_s,
                arrival_rate) -> View:
        itl = interval_ms * units.ms
        finish = calc.lifecycle_request_time_s(queue_s, prefill_s, itl, output_tokens)
        unqueued = calc.lifecycle_request_time_s(0.0, prefill_s, itl, output_tokens)
        admitted = calc.admit_request(queue_s, prefill_s, itl, output_tokens, deadline_s)
        in_system = calc.requests_in_system(arrival_rate, finish)
        qs = [0.0, max(3.0, 1.2 * queue_s)]
        fs = [calc.lifecycle_request_time_s(q, prefill_s, itl, output_tokens) for q in qs]
        traces = admission_traces(qs, fs, deadline_s, (queue_s, finish),
                                  (queue_s, prefill_s, finish - queue_s - prefill_s))
        numbers = {"ttft_s": queue_s + prefill_s, "generation_s": finish - queue_s - prefill_s,
                   "finish_s": finish, "admitted": admitted, "margin_s": deadline_s - finish,
                   "longest_admissible_queue_s": max(0.0, deadline_s - unqueued),
                   "requests_in_system": in_system}
        verdict = "<b>admit</b>" if admitted else "<b>reject</b> (or send elsewhere)"
        text = (f"first token at {queue_s + prefill_s:.3f} s; {output_tokens - 1} intervals "
                f"take {numbers['generation_s']:.2f} s<br>"
                f"finish at <b>{finish:.2f} s</b> vs the {deadline_s:g} s deadline: {verdict}"
                f"<br>it may wait at most {numbers['longest_admissible_queue_s']:.3f} s in the "
                f"queue<br>Little's law at {arrival_rate:g} req/s with {finish:.2f} s in the "
                f"system: n = <b>{in_system:.1f}</b> requests held")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.6.3 schemes A-E and Figure 8-35 --------------------------------------------------------

SCHEME_SETS = {"A-D (Figure 8-35)": "ABCD", "A-E (with Exercise 8-9's E)": "ABCDE"}


def chapter_schemes(names: str = "ABCD", *, d_tokens_per_round: float | None = None,
                    e_tokens_per_round: float | None = None,
                    shared_prefix_tokens: int = sv.EXAMPLE_PREFIX_TOKENS) -> list:
    """``calc.SCHEMES`` with D's and E's tokens per round changed, for another shared prefix.

    B, D and E use the decode round measured at the 6144-token prefix (27.35 ms); for another
    prefix it is shifted by the change Experiment 8-1's table predicts for the bytes a round
    then reads (``calc.prefix_shifted_round_s``), so the chapter's setting stays exact.
    """
    out = []
    for name in names:
        s = calc.SCHEMES[name]
        changes = {}
        if s.base_round_s is not None and shared_prefix_tokens != sv.EXAMPLE_PREFIX_TOKENS:
            changes["base_round_s"] = calc.prefix_shifted_round_s(s.base_round_s,
                                                                  shared_prefix_tokens)
        if name == "D" and d_tokens_per_round is not None:
            changes["tokens_per_round"] = d_tokens_per_round
        if name == "E" and e_tokens_per_round is not None:
            changes["tokens_per_round"] = e_tokens_per_round
        out.append(s.with_(**changes) if changes else s)
    return out


def _fmt_cost(x: float, unit: str, digits: int) -> str:
    return f"{x:.{digits}f} {unit}" if np.isfinite(x) else "none qualify"


class SchemePanel(Panel):
    """Sixteen long requests under schemes A-D (E): memory against the KV budget and batch
    completion time against the deadline; only a scheme inside both limits counts."""

    title = "Which configuration serves 16 long requests? (8.6.3, Figure 8-35)"
    controls = (
        Control("kv_budget_gib", "KV + auxiliary budget (GiB)", "float",
                sv.EXAMPLE_KV_BUDGET_BYTES / units.GiB, 2.0, 32.0, 0.5),
        Control("output_tokens", "output per request (tokens)", "int",
                sv.EXAMPLE_OUTPUT_TOKENS, 2, 1024, 1),
        Control("deadline_s", "deadline (s)", "float", sv.DEADLINE_S, 1.0, 30.0, 0.1),
        Control("d_tokens_per_round", "D: tokens per round (acceptance)", "float",
                float(sv.DFLASH_TOKENS_PER_ROUND), 1.0, float(sv.DFLASH_VERIFY_POSITIONS),
                0.1),
        Control("e_tokens_per_round", "E: tokens per round (lookup draft)", "float",
                float(sv.LOOKUP_TOKENS_PER_ROUND), 1.0, 5.0, 0.1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                sv.EXAMPLE_PREFIX_TOKENS, 0, sv.EXAMPLE_PROMPT_TOKENS - 128, 128),
        Control("schemes", "schemes", "choice", "ABCD", options=SCHEME_SETS),
    )
    base_layout = SCHEME_PLANE_LAYOUT

    def compute(self, *, kv_budget_gib, output_tokens, deadline_s, d_tokens_per_round,
                e_tokens_per_round, shared_prefix_tokens, schemes) -> View:
        chosen = chapter_schemes(schemes, d_tokens_per_round=d_tokens_per_round,
                                 e_tokens_per_round=e_tokens_per_round,
                                 shared_prefix_tokens=shared_prefix_tokens)
        budget = kv_budget_gib * units.GiB
        results = calc.compare_schemes(chosen, kv_budget_bytes=budget,
                                       output_tokens=output_tokens, deadline_s=deadline_s,
                                       shared_prefix_tokens=shared_prefix_tokens)
        feasible = [r for r in results.values() if r.feasible]
        best = min(feasible, key=lambda r: r.gpu_s_per_result).name if feasible else None
        traces = scheme_plane_traces(results, budget, deadline_s)
        numbers = {"best": best}
        rows = ["<tr><th>scheme</th><th>memory</th><th>prefill</th><th>round</th>"
                "<th>rounds</th><th>total</th><th>fits</th><th>on time</th>"
                "<th>GPU-s / result</th><th>J / result</th></tr>"]
        for r in results.values():
            numbers[f"{r.name}_memory_GiB"] = r.memory_gib
            numbers[f"{r.name}_total_s"] = r.total_s
            numbers[f"{r.name}_feasible"] = r.feasible
            numbers[f"{r.name}_gpu_s_per_result"] = r.gpu_s_per_result
            numbers[f"{r.name}_energy_J_per_result"] = r.energy_j_per_result
            mark = (lambda ok: "yes" if ok else "<b>no</b>")
            rows.append(f"<tr><td><b>{r.name}</b></td><td>{r.memory_gib:.2f} GiB</td>"
                        f"<td>{r.prefill_s:.2f} s</td><td>{r.round_ms:.2f} ms</td>"
                        f"<td>{r.rounds}</td><td>{r.total_s:.2f} s</td>"
                        f"<td>{mark(r.fits_memory)}</td><td>{mark(r.meets_deadline)}</td>"
                        f"<td>{_fmt_cost(r.gpu_s_per_result, 's', 3)}</td>"
                        f"<td>{_fmt_cost(r.energy_j_per_result, 'J', 0)}</td></tr>")
        verdict = (f"least GPU time per qualifying result: <b>{best}</b>" if best
                   else "<b>no scheme is feasible</b>: relax the deadline, shorten the output "
                        "or free memory")
        text = ("<table style='border-spacing: 8px 2px'>" + "".join(rows) + "</table>"
                + verdict)
        return View(numbers=numbers, traces=traces, text=text)


# --- Figure 8-36 Amdahl ------------------------------------------------------------------------

AMDAHL_FRACTIONS = (0.2, 0.5, 0.8, 0.95)
_FACTORS = np.geomspace(1.0, 64.0, 37)
_REFERENCE_CURVES = {f"decode fraction f = {f:g}": [calc.amdahl_speedup(f, s) for s in _FACTORS]
                     for f in AMDAHL_FRACTIONS}


class AmdahlPanel(Panel):
    """Speeding up one stage of a task: 1 / ((1 - f) + f / s), and what an added preparation
    time (a draft index, Exercise 8-8) takes back."""

    title = "Task speedup from speeding up decode (8.6.3, Figure 8-36)"
    controls = (
        Control("decode_fraction", "decode fraction f of the task", "float", 0.5, 0.0, 1.0,
                0.01),
        Control("factor", "decode speedup s (x)", "float", sv.AMDAHL_FACTOR, 1.0, 64.0, 0.5),
        Control("prep_s", "added preparation (s)", "float", 0.0, 0.0, 60.0, 0.5),
        Control("task_s", "original task time (s)", "float", sv.AMDAHL_TASK_S, 10.0, 1000.0,
                10.0),
    )
    base_layout = AMDAHL_LAYOUT

    def compute(self, *, decode_fraction, factor, prep_s, task_s) -> View:
        stages = [task_s * (1.0 - decode_fraction), task_s * decode_fraction]
        total = calc.staged_task_time(stages, [1.0, factor], prep_s)
        speedup = calc.staged_task_speedup(stages, [1.0, factor], prep_s)
        break_even = calc.staged_break_even_s(stages, [1.0, factor])
        curves = dict(_REFERENCE_CURVES)
        label = f"this setting: f = {decode_fraction:g}, +{prep_s:g} s preparation"
        curves[label] = [calc.staged_task_speedup(stages, [1.0, s], prep_s) for s in _FACTORS]
        traces = amdahl_traces(_FACTORS.tolist(), curves,
                               current=(factor, speedup, f"s = {factor:g}"))
        traces[len(AMDAHL_FRACTIONS)]["line"].update({"color": "black", "dash": "dot"})
        numbers = {"task_time_s": total, "speedup": speedup, "break_even_prep_s": break_even,
                   "saves_time": total < task_s}
        text = (f"{stages[0]:g} s unchanged + {stages[1]:g} s / {factor:g} + {prep_s:g} s = "
                f"<b>{total:.1f} s</b><br>task speedup <b>{speedup:.2f}x</b><br>"
                f"the change stops saving time at {break_even:.1f} s of preparation")
        return View(numbers=numbers, traces=traces, text=text)
