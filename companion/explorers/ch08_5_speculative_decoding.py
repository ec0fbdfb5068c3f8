"""8.5 explorers (notebook 08_5_speculative_decoding): speculative decoding.

``GreedyVerificationPanel``: Figure 8-29 stepped through by the simulator's greedy verifier.
``RejectionSamplingPanel``: the simulator's rejection sampling on two symbols, emitted
frequencies against the target p (seeded), and tokens per round against the exact law.
``SpeculativeLatencyPanel``: acceptance, draft length, draft and verification cost ->
latency per token, the draft-cost crossover (Figure 8-32), a request's time with an index.
``RoundStagesPanel``: one round's four stages (8.5.3) as a timeline, serial against parallel
drafting, with the latency per output token of each.
``DraftLengthPanel``: Exercise 8-7's serial-draft setting, T_m = T_v + t_d g ceil(m / g),
the best draft length and the marginal condition dT / dN < T / N.
``VerificationLoadPanel`` (fuller, 8.5.4): a verification pass against a plain step of the same
batch on the roofline, beside the chapter's batch-1 reading that they cost the same.
``SpeculativeLatencyPanel`` also takes an acceptance that differs between spans (fuller, 8.5.2).

Figures (from the former figures module):

Figures of 8.5 (speculative decoding): greedy verification step by step (Figure 8-29),
rejection sampling against the target distribution, expected output per round, per-token
latency against the draft's cost (Figure 8-32), serial vs parallel drafting, and the draft
length with shape padding (Exercise 8-7's setting).

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace dicts (and the ``*_LAYOUT`` constants
the data-independent layouts) that this module's explorers reuse, so a slider move only
replaces trace data. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.explorers.common import to_ms as _ms
from companion.formulas.limits_rounds import spread_expected_tokens
from companion.formulas.speculative import best_draft_length
from companion.serves import serves
from companion.sim import speculative as sim
from companion.sim.speculative import MAX_DRAFT, VERIFICATION_WORDS, greedy_example
from companion.specs import QWEN3_8B

__all__ = [
    "greedy_verification_figure", "expected_output_figure",
    "draft_cost_figure", "draft_mode_figure", "round_stages_figure", "GreedyVerificationPanel",
    "RejectionSamplingPanel", "SpeculativeLatencyPanel", "DraftLengthPanel", "RoundStagesPanel",
    "VerificationLoadPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.5"


# Okabe-Ito colours, one meaning each
VERDICT_COLORS = {
    "accepted": theme.GREEN,      # draft token kept
    "corrected": theme.ORANGE,     # the target's token at the first mismatch
    "bonus": theme.BLUE,         # the extra token when every draft token matched
    "discarded": theme.GREY,     # follows a rejected token: rolled back
    "pending": theme.PALE_GREY,       # not yet read in this step
}
PLAIN_COLOR = theme.INK
ROWS = ("draft", "target's choice", "output")


# layouts that do not depend on the data (explorers pass them once, as their base layout)
REJECTION_LAYOUT = {"height": 420,
                    "xaxis": {"domain": [0.0, 0.45], "title": {"text": "symbol"}},
                    "yaxis": {"title": {"text": "probability"}, "range": [0, 1.05]},
                    "legend": {"orientation": "h", "y": -0.25}}
REJECTION_ROUNDS_AXES = {"xaxis2": {"domain": [0.55, 1.0], "anchor": "y2", "dtick": 1,
                                    "title": {"text": "tokens emitted in one round"}},
                         "yaxis2": {"anchor": "x2", "title": {"text": "share of rounds"},
                                    "range": [0, 1.05]}}
DRAFT_COST_LAYOUT = {"height": 500,
                     "xaxis": {"title": {"text": "draft cost per round (ms)"},
                               "rangemode": "tozero"},
                     "yaxis": {"title": {"text": "average latency per output token (ms)"},
                               "rangemode": "tozero"},
                     # two legend columns: a curve, its crossover and the markers each get a
                     # line of their own without the legend taking the plot's height
                     "legend": {"orientation": "h", "y": -0.2, "entrywidth": 0.5,
                                "entrywidthmode": "fraction"}}
DRAFT_LENGTH_LAYOUT = {"height": 420,
                       "xaxis": {"title": {"text": "draft length m (tokens)"}, "dtick": 1},
                       "yaxis": {"title": {"text": "latency per output token T_m / E[X_m] "
                                                   "(ms)"}},
                       "legend": {"orientation": "h", "y": -0.25}}


# --- Figure 8-29: greedy verification ------------------------------------------------------

def _verdict(step: dict) -> str:
    verdict = step["verdict"]
    if verdict == "accept":
        return "accepted"
    if verdict == "bonus":
        return "bonus"
    if verdict.startswith("reject"):
        return "corrected"
    return "discarded"


# the colour key of Figure 8-29, drawn as legend entries (``greedy_verification_traces``)
VERDICT_KEY = (("accepted", "accepted"), ("target's correction", "corrected"),
               ("bonus", "bonus"), ("discarded", "discarded"), ("not read yet", "pending"))


def greedy_verification_layout(n_positions: int) -> dict:
    """Layout of the Figure 8-29 grid for ``n_positions`` columns; the colour key is the
    legend, in its own row at the figure's foot (below the x title, whatever the height)."""
    return {"height": 400, "margin": {"t": 60, "r": 20, "b": 100},
            "showlegend": True,
            "legend": theme.foot_legend(),
            "xaxis": {"title": {"text": "draft position (token index within the round)"},
                      "tickvals": list(range(1, n_positions + 1)),
                      "range": [0.4, n_positions + 0.6], "zeroline": False},
            "yaxis": {"categoryorder": "array", "categoryarray": list(reversed(ROWS)),
                      "type": "category", "title": {"text": "row"}}}


def greedy_verification_traces(verification, step: int | None = None, words=None) -> list:
    """Three rows of one greedy verification round read left to right.

    ``verification``: a ``companion.sim.speculative.GreedyVerification``. ``step``: how many
    positions have been read (None: all); later positions are drawn as pending. ``words`` maps
    token ids to display strings. Rows: the draft (coloured by verdict), the target's choice
    at each position (computed for every position in the same pass), and the output emitted.
    """
    steps = list(verification.steps)
    shown = len(steps) if step is None else max(0, min(int(step), len(steps)))
    name = (lambda t: str(t)) if words is None else (lambda t: words[t])
    rows = {r: {"x": [], "text": [], "color": []} for r in ROWS}
    for i, s in enumerate(steps):
        pos, kind = s["position"], _verdict(s)
        read = i < shown
        if s["draft"] is not None:
            d = rows[ROWS[0]]
            d["x"].append(pos), d["text"].append(name(s["draft"]))
            d["color"].append(VERDICT_COLORS[kind if read else "pending"])
        t = rows[ROWS[1]]
        t["x"].append(pos), t["text"].append(name(s["target"])), t["color"].append(theme.WHITE)
        if read and kind != "discarded":
            o = rows[ROWS[2]]
            o["x"].append(pos), o["color"].append(VERDICT_COLORS[kind])
            o["text"].append(name(s["draft"] if kind == "accepted" else s["target"]))
    cells = [{"type": "scatter", "mode": "markers+text", "x": r["x"], "y": [row] * len(r["x"]),
              "text": r["text"], "name": row, "hoverinfo": "text",
              "textfont": {"size": 12, "color": [theme.text_on(c) for c in r["color"]]},
              "showlegend": False,
              "marker": {"symbol": "square", "size": 46, "color": r["color"],
                         "line": {"width": 1, "color": theme.DARK_GREY}}}
             for row, r in rows.items()]
    # the colour key: legend entries only (the cells above draw the colours)
    key = [{"type": "scatter", "mode": "markers", "x": [None], "y": [None], "name": label,
            "hoverinfo": "skip", "meta": {"legend_key": True},
            "marker": {"symbol": "square", "size": 12, "color": VERDICT_COLORS[kind],
                       "line": {"width": 1, "color": theme.DARK_GREY}}}
           for label, kind in VERDICT_KEY]
    return cells + key


@serves("8.5.1")
def greedy_verification_figure(verification, *, step: int | None = None, words=None,
                               title: str = "Figure 8-29: greedy verification of a 4-token "
                                            "draft (8.5.1)"):
    """Figure 8-29: which draft tokens a greedy verification keeps, corrects and discards."""
    traces = greedy_verification_traces(verification, step, words)
    return _fig(traces, greedy_verification_layout(len(verification.steps)), title)


# --- 8.5.1: rejection sampling keeps the target distribution ----------------------------------

def rejection_sampling_traces(symbols, target, draft, sampled, exact_output=None, *,
                              rounds_hist=None, rounds_exact=None, samples: int = 0):
    """Two panels: per symbol, the emitted frequency from the simulator (bars) against the
    target p and the draft q (markers; optionally the exact output distribution too), and
    tokens emitted per round (simulated bars, exact markers).

    Every argument is a list over ``symbols`` (or over 1 .. m+1 tokens per round).
    """
    syms = list(symbols)
    traces = [
        {"type": "bar", "x": syms, "y": list(sampled),
         "name": f"emitted tokens, simulated ({samples:,} rounds)",
         "marker": {"color": theme.GREEN}, "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "markers", "x": syms, "y": list(target),
         "name": "target p(x)", "marker": {"symbol": "line-ew-open", "size": 60,
                                            "color": theme.BLUE, "line": {"width": 4}},
         "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "markers", "x": syms, "y": list(draft),
         "name": "draft q(x)", "marker": {"symbol": "diamond", "size": 12, "color": theme.ORANGE},
         "xaxis": "x", "yaxis": "y"},
    ]
    if exact_output is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": syms, "y": list(exact_output),
                       "name": "exact output distribution",
                       "marker": {"symbol": "x", "size": 10, "color": theme.INK},
                       "xaxis": "x", "yaxis": "y"})
    layout = dict(REJECTION_LAYOUT)
    if rounds_hist is not None:
        ks = list(range(1, len(rounds_hist) + 1))
        traces += [
            {"type": "bar", "x": ks, "y": list(rounds_hist), "name": "tokens per round, simulated",
             "marker": {"color": theme.PINK}, "xaxis": "x2", "yaxis": "y2"},
            {"type": "scatter", "mode": "markers", "x": ks, "y": list(rounds_exact),
             "name": "tokens per round, exact", "marker": {"symbol": "diamond", "size": 10,
                                                           "color": theme.INK},
             "xaxis": "x2", "yaxis": "y2"},
        ]
        layout.update(REJECTION_ROUNDS_AXES)
    return traces, layout


# --- 8.5.2: expected output per round -----------------------------------------------------------

@serves("8.5.2", "8.5.4")
def expected_output_figure(acceptances, curves, *, points=(),
                           title: str = "Expected tokens per round vs acceptance (8.5.2, 8.5.4)"):
    """E[X] = 1 + a + ... + a^m against the per-position acceptance a, one curve per draft
    length. ``curves``: {m: E[X] over ``acceptances``}; ``points``: (a, E[X], label) markers."""
    xs = list(acceptances)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys),
               "name": f"draft length m = {m}", "line": {"color": theme.PALETTE[i % 6],
                                                         "dash": theme.DASHES[i % 6],
                                                         "width": 2.5}}
              for i, (m, ys) in enumerate(curves.items())]
    if points:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [p[0] for p in points], "y": [p[1] for p in points],
                       "text": [p[2] for p in points], "textposition": "top left",
                       "name": "the chapter's AAAA and BBBB drafts",
                       "marker": {"size": 11, "color": theme.INK, "symbol": "diamond"}})
    layout = {"height": 420,
              "xaxis": {"title": {"text": "acceptance α per position (probability)"},
                        "range": [0, 1]},
              "yaxis": {"title": {"text": "expected tokens per round E[X] (tokens)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- Figure 8-32: per-token latency against the draft's cost ----------------------------------

def draft_cost_traces(draft_s, curves, plain_round_s: float, crossovers=(), current=None):
    """Per-token latency (ms) against the draft's cost per round (ms).

    ``curves``: {label: per-token latency (s) over ``draft_s``}; ``crossovers``: (label, draft
    cost s) where a curve meets plain decode; ``current``: (draft s, latency s, label) or None.
    """
    xs = _ms(draft_s)
    traces = [{"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]],
               "y": [plain_round_s / units.ms] * 2,
               "name": f"plain decode ({plain_round_s / units.ms:.2f} ms/token)",
               "line": {"color": PLAIN_COLOR, "dash": "dash"}}]
    colors = {}
    for i, (label, ys) in enumerate(curves.items()):
        colors[label] = theme.PALETTE[i % 6]
        # "dash" is plain decode's and "dot" a spread's line: the curves take the other dashes
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": _ms(ys), "name": label,
                       "line": {"color": theme.PALETTE[i % 6], "width": 2.5,
                                "dash": ("solid", "longdash", "dashdot", "longdashdot")[i % 4]}})
    # each crossover its own marker (its curve's colour) whose legend entry carries the value:
    # crossovers may fall on one another, their labels cannot
    for k, (label, cross_s) in enumerate(crossovers):
        color = next((c for name, c in colors.items() if name.startswith(label)), theme.INK)
        traces.append({"type": "scatter", "mode": "markers", "x": [cross_s / units.ms],
                       "y": [plain_round_s / units.ms],
                       "name": f"{label}: no gain past {cross_s / units.ms:.1f} ms",
                       "hovertemplate": f"{label}: the draft may cost up to "
                                        "%{x:.1f} ms per round<extra></extra>",
                       "marker": {"size": 12, "color": color,
                                  "symbol": ("x", "cross", "star", "triangle-down")[k % 4],
                                  "line": {"width": 1, "color": theme.INK}}})
    if current is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0] / units.ms],
                       "y": [current[1] / units.ms], "name": current[2],
                       "marker": {"size": 13, "color": theme.VERMILLION, "symbol": "circle"}})
    return traces, dict(DRAFT_COST_LAYOUT)


@serves("8.5.2")
def draft_cost_figure(draft_s, curves, plain_round_s: float, *, crossovers=(), current=None,
                      title: str = "Figure 8-32: how much a draft may cost (8.5.2)"):
    """Figure 8-32: (T_verify + T_draft) / E[X] against T_draft, with plain decode and the
    crossovers E[X] T_plain - T_verify."""
    traces, layout = draft_cost_traces(draft_s, curves, plain_round_s, crossovers, current)
    return _fig(traces, layout, title)


# --- 8.5.3: serial vs parallel drafting -------------------------------------------------------

@serves("8.5.3")
def draft_mode_figure(rows, *, plain_round_s: float | None = None,
                      title: str = "Serial vs parallel drafting, per output token (8.5.3)"):
    """Stacked bars of draft and verification time per output token (ms).

    ``rows``: dicts with label, draft_s (per round), verify_s (per round), tokens (E[X]).
    """
    labels = [r["label"] for r in rows]
    draft = [r["draft_s"] / r["tokens"] / units.ms for r in rows]
    verify = [r["verify_s"] / r["tokens"] / units.ms for r in rows]
    total = [d + w for d, w in zip(draft, verify)]
    traces = [
        {"type": "bar", "x": labels, "y": verify, "name": "verification / E[X]",
         "marker": {"color": theme.BLUE}},
        {"type": "bar", "x": labels, "y": draft, "name": "draft generation / E[X]",
         "marker": {"color": theme.ORANGE}, "text": [f"{t:.1f} ms" for t in total],
         "textposition": "outside"},
    ]
    if plain_round_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": labels,
                       "y": [plain_round_s / units.ms] * len(labels),
                       "name": f"plain decode ({plain_round_s / units.ms:.2f} ms/token)",
                       "line": {"color": PLAIN_COLOR, "dash": "dash"}})
    layout = {"height": 420, "barmode": "stack",
              "xaxis": {"title": {"text": "draft method"}},
              "yaxis": {"title": {"text": "latency per output token (ms)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


STAGE_COLORS = {"draft generation": theme.ORANGE, "verification preparation": theme.PINK,
                "target verification": theme.BLUE, "output determination": theme.GREEN}
ROUND_STAGES_LAYOUT = {"height": 360, "barmode": "overlay",
                       "xaxis": {"title": {"text": "time within one round (ms)"},
                                 "rangemode": "tozero"},
                       "yaxis": {"title": {"text": "drafting method"}, "autorange": "reversed"},
                       "legend": {"orientation": "h", "y": -0.3}}


def round_stages_traces(rows, *, plain_round_s: float | None = None) -> list:
    """Horizontal timeline bars, one trace per stage, one bar row per drafting method.

    ``rows``: {label: stages of ``calc.speculative_round_stages``}; times shown in ms.
    """
    labels = list(rows)
    traces = []
    for stage, color in STAGE_COLORS.items():
        parts = [next(p for p in rows[label] if p["stage"] == stage) for label in labels]
        traces.append({"type": "bar", "orientation": "h", "name": stage, "y": labels,
                       "x": [p["duration_s"] / units.ms for p in parts],
                       "base": [p["start_s"] / units.ms for p in parts],
                       "marker": {"color": color},
                       "hovertemplate": stage + ": %{x:.2f} ms<extra></extra>"})
    if plain_round_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "name":
                       f"one plain decode round ({plain_round_s / units.ms:.2f} ms)",
                       "x": [plain_round_s / units.ms] * 2, "y": [labels[0], labels[-1]],
                       "line": {"color": PLAIN_COLOR, "dash": "dash"}})
    return traces


@serves("8.5.3")
def round_stages_figure(rows, *, plain_round_s: float | None = None,
                        title: str = "One speculative round, stage by stage (8.5.3)"):
    """The four stages of a round as a timeline per drafting method (``round_stages_traces``)."""
    return _fig(round_stages_traces(rows, plain_round_s=plain_round_s), ROUND_STAGES_LAYOUT,
                title)


# --- 8.5.4 / Exercise 8-7: draft length and shape padding -------------------------------------

def draft_length_traces(tables, *, examined=None, best=None):
    """Latency per output token (ms) against the draft length m, one line per table.

    ``tables``: {label: rows of ``calc.draft_length_table``}; ``examined``: (m, latency s) of
    the length under study; ``best``: {label: (m, latency s)}.
    """
    traces = []
    for i, (label, rows) in enumerate(tables.items()):
        traces.append({"type": "scatter", "mode": "lines+markers",
                       "x": [r["draft_len"] for r in rows],
                       "y": [r["latency_per_token_s"] / units.ms for r in rows],
                       "name": label, "line": {"color": theme.PALETTE[i % 6], "width": 2.5,
                                               "dash": theme.DASHES[i % 6]}})
    if best:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [b[0] for b in best.values()],
                       "y": [b[1] / units.ms for b in best.values()],
                       "text": [f"best m = {b[0]}" for b in best.values()],
                       "textposition": "bottom center", "name": "lowest latency per token",
                       "marker": {"size": 13, "color": theme.INK, "symbol": "star"}})
    if examined is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [examined[0]],
                       "y": [examined[1] / units.ms], "name": f"m = {examined[0]} (examined)",
                       "marker": {"size": 14, "color": theme.VERMILLION, "symbol": "circle-open",
                                  "line": {"width": 3}}})
    return traces, dict(DRAFT_LENGTH_LAYOUT)


# --- Figure 8-29 ------------------------------------------------------------------------------
# A toy vocabulary so the figure shows words instead of token ids. The draft proposes
# _DRAFT; at the first mismatch the target prefers _CORRECTION; after a full match it adds ".".
class GreedyVerificationPanel(Panel):
    """Figure 8-29 live: move the first mismatch and read the verification step by step."""

    title = "Greedy verification, position by position (8.5.1, Figure 8-29)"
    controls = (
        Control("draft_len", "draft length m (tokens)", "int", 4, 1, MAX_DRAFT, 1),
        Control("first_mismatch", "first mismatching position (m + 1: all match)", "int", 3,
                1, MAX_DRAFT + 1, 1),
        Control("step", "positions read so far", "int", 4, 0, MAX_DRAFT + 1, 1),
    )
    main_control = "step"
    base_layout = greedy_verification_layout(MAX_DRAFT + 1)

    def compute(self, *, draft_len, first_mismatch, step) -> View:
        ver = greedy_example(draft_len, first_mismatch)
        shown = min(step, len(ver.steps))
        traces = greedy_verification_traces(ver, shown, VERIFICATION_WORDS)
        read = ver.steps[:shown]
        kept = sum(s["verdict"] == "accept" for s in read)
        emitted = sum(s["verdict"] in ("accept", "bonus") or s["verdict"].startswith("reject")
                      for s in read)
        numbers = {"accepted_draft_tokens": ver.accepted, "emitted_tokens": len(ver.output),
                   "discarded_draft_tokens": ver.discarded, "positions_read": shown,
                   "emitted_so_far": emitted}
        words = " ".join(VERIFICATION_WORDS[t] for t in ver.output)
        last = ("correction" if ver.correction is not None else "bonus token")
        text = (f"draft: <i>{' '.join(VERIFICATION_WORDS[t] for t in ver.draft)}</i><br>"
                f"read {shown} of {len(ver.steps)} positions; kept so far: {kept}<br>"
                f"round result: <b>{ver.accepted}</b> draft tokens kept + 1 {last} = "
                f"<b>{len(ver.output)}</b> outputs (<i>{words}</i>)<br>"
                f"discarded: <b>{ver.discarded}</b> draft token(s)")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.1 rejection sampling ------------------------------------------------------------------

class RejectionSamplingPanel(Panel):
    """Draft from q, accept with min(1, p/q), resample [p - q]+ on rejection: the emitted
    tokens follow p whatever q is; q only changes how many tokens a round yields."""

    title = "Rejection sampling on two symbols (8.5.1-8.5.2), simulated"
    controls = (
        Control("p_a", "target p(A)", "float", ch08.TOY_TARGET_PROBS[0], 0.0, 1.0, 0.01),
        Control("q_a", "draft q(A)", "float", ch08.TOY_DRAFT_ALWAYS_A[0], 0.0, 1.0, 0.01),
        Control("draft_len", "draft length m (tokens)", "int", ch08.TOY_DRAFT_LEN, 0, 8, 1),
        Control("rounds", "simulated rounds", "int", 4000, 100, 20000, 100),
        Control("seed", "random seed", "int", 0, 0, 99, 1),
    )
    main_control = "q_a"
    base_layout = dict(REJECTION_LAYOUT, **REJECTION_ROUNDS_AXES)

    def compute(self, *, p_a, q_a, draft_len, rounds, seed) -> View:
        p, q = [p_a, 1.0 - p_a], [q_a, 1.0 - q_a]
        runs = sim.simulate_rounds(p, q, draft_len, rounds, seed=seed)
        emitted = runs.emitted_tokens()
        sampled = np.bincount(np.asarray(emitted).astype(np.intp), minlength=2)[:2] / len(emitted)
        exact = sim.output_distribution(p, q)
        per_round = np.bincount(runs.tokens_per_round.astype(np.intp), minlength=draft_len + 2)[1:] / rounds
        per_round_exact = sim.tokens_per_round_distribution(p, q, draft_len)
        acceptance = calc.speculative_acceptance_rate(p, q)
        expected = calc.speculative_expected_tokens(acceptance, draft_len)
        # the exact output distribution equals p (the readout checks it); not drawn twice
        traces, _ = rejection_sampling_traces(
            ["A", "B"], p, q, sampled.tolist(), rounds_hist=per_round.tolist(),
            rounds_exact=per_round_exact.tolist(), samples=rounds)
        numbers = {"acceptance": acceptance, "expected_tokens": expected,
                   "exact_output_A": float(exact[0]),
                   "simulated_tokens_per_round": runs.mean_tokens,
                   "simulated_share_A": float(sampled[0]), "target_share_A": p_a,
                   "emitted_tokens": int(len(emitted))}
        text = (f"acceptance &alpha; = &Sigma; min(p<sub>&theta;</sub>, q) = "
                f"<b>{acceptance:.3f}</b><br>"
                f"E[X] = 1 + &alpha; + ... + &alpha;<sup>{draft_len}</sup> = "
                f"<b>{expected:.2f}</b> tokens "
                f"per round; simulated {runs.mean_tokens:.2f}<br>"
                f"emitted A: {sampled[0]:.3f} simulated ({len(emitted):,} tokens), "
                f"{exact[0]:.3f} exact, vs p(A) = {p_a:.2f}<br><i>seeded: seed {seed}</i>")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.2 latency per token and Figure 8-32 ---------------------------------------------------

_CHAPTER_DRAFTS = (("AAAA (a = 1/4)", 0.25), ("BBBB (a = 3/4)", 0.75))


class SpeculativeLatencyPanel(Panel):
    """Latency per output token (T_verify + T_draft) / E[X] against plain decode, the largest
    draft cost that still pays (Figure 8-32), and one request's time after a one-off index."""

    title = "Latency per token and the draft-cost crossover (8.5.2, Figure 8-32)"
    controls = (
        Control("acceptance", "acceptance α per position", "float", 0.75, 0.0, 1.0, 0.01),
        Control("draft_len", "draft length m (tokens)", "int", ch08.TOY_DRAFT_LEN, 0, 12, 1),
        Control("draft_ms", "draft cost per round (ms)", "float",
                ch08.DRAFT_QUERY_S / units.ms, 0.0, 100.0, 0.1),
        Control("verify_ms", "verification round (ms)", "float",
                ch08.ROUND_B1_S / units.ms, 5.0, 60.0, 0.01),
        Control("plain_ms", "plain decode round (ms)", "float",
                ch08.ROUND_B1_S / units.ms, 5.0, 60.0, 0.01),
        Control("prep_s", "one-off preparation, e.g. index build (s)", "float",
                ch08.INDEX_BUILD_S, 0.0, 10.0, 0.1),
        Control("output_tokens", "request output (tokens)", "int", ch08.OUTPUT_TOKENS,
                1, 1024, 1),
        # fuller (8.5.2): half the rounds at a + s, half at a - s (spans easy and hard to guess)
        Control("acceptance_spread", "acceptance spread between spans, +/- (probability)",
                "float", 0.0, 0.0, 0.5, 0.05),
    )
    main_control = "acceptance"
    base_layout = DRAFT_COST_LAYOUT

    def compute(self, *, acceptance, draft_len, draft_ms, verify_ms, plain_ms, prep_s,
                output_tokens, acceptance_spread) -> View:
        verify, draft, plain = verify_ms * units.ms, draft_ms * units.ms, plain_ms * units.ms
        n = calc.speculative_expected_tokens(acceptance, draft_len)
        latency = calc.speculative_latency_per_token(verify, n, draft)
        crossover = calc.draft_cost_crossover(verify, n, plain)
        spec_s = calc.speculative_request_time(output_tokens, verify + draft, acceptance,
                                               draft_len, prep_s=prep_s)
        plain_s = calc.speculative_request_time(output_tokens, plain, 0.0, 0)
        break_even = calc.prep_break_even_tokens(prep_s, plain, latency)
        refs = [(label, calc.speculative_expected_tokens(a, ch08.TOY_DRAFT_LEN))
                for label, a in _CHAPTER_DRAFTS]
        mine = f"this setting (a = {acceptance:.2f}, m = {draft_len})"
        crossings = [(label, calc.draft_cost_crossover(verify, en, plain)) for label, en in refs]
        crossings.append(("this setting", crossover))
        x_max = max(60 * units.ms, 1.15 * max(c for _, c in crossings), 1.2 * draft)
        xs = [0.0, x_max]
        curves = {f"{label}, m = {ch08.TOY_DRAFT_LEN}":
                  [calc.speculative_latency_per_token(verify, en, d) for d in xs]
                  for label, en in refs}
        curves[mine] = [calc.speculative_latency_per_token(verify, n, d) for d in xs]
        traces, _ = draft_cost_traces(
            xs, curves, plain, [c for c in crossings if c[1] >= 0],
            (draft, latency, "this setting's draft cost"))
        spread = spread_expected_tokens(acceptance, acceptance_spread, draft_len)
        shown = spread["spread"] > 0
        traces.append({"type": "scatter", "mode": "lines", "x": _ms(xs) if shown else [],
                       "y": _ms([calc.speculative_latency_per_token(
                           verify, spread["expected_tokens"], d) for d in xs]) if shown else [],
                       "name": f"this setting, a +/- {spread['spread']:.2f} by span (fuller)",
                       "showlegend": shown,
                       "line": {"color": theme.PALETTE[2], "width": 2.5, "dash": "dot"}})
        numbers = {"expected_tokens": n, "latency_per_token_ms": latency / units.ms,
                   "speedup_vs_plain": plain / latency, "crossover_ms": crossover / units.ms,
                   "request_s": spec_s, "plain_request_s": plain_s,
                   "break_even_tokens": break_even,
                   "spread_expected_tokens": spread["expected_tokens"],
                   "spread_latency_per_token_ms": calc.speculative_latency_per_token(
                       verify, spread["expected_tokens"], draft) / units.ms,
                   "spread_crossover_ms": calc.draft_cost_crossover(
                       verify, spread["expected_tokens"], plain) / units.ms}
        pays = "pays" if crossover > draft else "<b>does not pay</b>"
        be = "never" if math.isinf(break_even) else f"{break_even:,.0f} tokens"
        text = (f"E[X] = <b>{n:.2f}</b> tokens per round<br>"
                f"latency per token: <b>{latency / units.ms:.2f} ms</b> vs plain "
                f"{plain_ms:.2f} ms ({plain / latency:.2f}x)<br>"
                f"draft may cost up to <b>{crossover / units.ms:.1f} ms</b> per round "
                f"(now {draft_ms:g} ms: {pays})<br>"
                f"{output_tokens}-token request: {plain_s:.2f} s plain, <b>{spec_s:.2f} s</b> "
                f"with {prep_s:g} s of preparation<br>"
                f"preparation is paid back after {be}")
        if shown:
            text += (f"<br>with a +/- {spread['spread']:.2f} between spans: E[X] "
                     f"{spread['expected_tokens']:.2f}, "
                     f"{numbers['spread_latency_per_token_ms']:.2f} ms per token")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.3: the four stages of a round ---------------------------------------------------------

@serves("8.5.3")
class RoundStagesPanel(Panel):
    """One round's four stages (draft generation, verification preparation, target verification,
    output determination) for a serial and a parallel drafter of the same network (8.5.3)."""

    title = "The four stages of a speculative round: serial vs parallel drafting (8.5.3)"
    controls = (
        Control("draft_tokens", "draft tokens per round m (tokens)", "int", 4, 1, MAX_DRAFT, 1),
        Control("tokens_per_round", "tokens emitted per round E[X] (tokens)", "float",
                float(ch08.DFLASH_TOKENS_PER_ROUND), 1.0, MAX_DRAFT + 1.0, 0.05),
        Control("draft_gb", "draft network weights (GB)", "float",
                units.to_unit(ch08.DFLASH_DRAFT_WEIGHT_BYTES, "GB"), 0.1, 16.0, 0.05),
        Control("prep_ms", "verification preparation (ms)", "float", 0.0, 0.0, 10.0, 0.1),
        Control("decide_ms", "output determination (ms)", "float", 0.0, 0.0, 10.0, 0.1),
    )
    main_control = "draft_tokens"
    base_layout = ROUND_STAGES_LAYOUT

    def compute(self, *, draft_tokens, tokens_per_round, draft_gb, prep_ms, decide_ms) -> View:
        plain = ch08.ROUND_B1_S
        bandwidth = calc.effective_read_bandwidth(
            calc.round_read_bytes(QWEN3_8B, 1, ch08.SHORT_PROMPT_TOKENS), plain)
        forward = calc.draft_forward_time(draft_gb * units.GB, bandwidth)
        # a round emits at most m + 1 tokens, whatever the slider says
        tokens = min(tokens_per_round, draft_tokens + 1.0)
        rows, per_token = {}, {}
        for label, parallel in ((f"serial: {draft_tokens} draft passes", False),
                                ("parallel: one draft pass", True)):
            draft = calc.draft_generation_time(forward, draft_tokens, parallel=parallel)
            rows[label] = calc.speculative_round_stages(draft, plain, prep_s=prep_ms * units.ms,
                                                        decide_s=decide_ms * units.ms)
            per_token[label] = calc.speculative_latency_per_token(
                rows[label][-1]["end_s"], tokens)
        serial, parallel = (per_token[k] for k in rows)
        numbers = {"draft_pass_ms": forward / units.ms, "tokens_per_round": tokens,
                   "serial_round_ms": rows[next(iter(rows))][-1]["end_s"] / units.ms,
                   "parallel_round_ms": rows[list(rows)[1]][-1]["end_s"] / units.ms,
                   "serial_ms_per_token": serial / units.ms,
                   "parallel_ms_per_token": parallel / units.ms,
                   "plain_ms_per_token": plain / units.ms}
        capped = (f" (capped at m + 1 = {draft_tokens + 1})" if tokens < tokens_per_round
                  else "")
        text = (f"one draft pass: <b>{forward / units.ms:.2f} ms</b> "
                f"({draft_gb:.2f} GB at the batch-1 read rate)<br>"
                f"rounds: serial {numbers['serial_round_ms']:.2f} ms, parallel "
                f"{numbers['parallel_round_ms']:.2f} ms, over E[X] = {tokens:.2f}{capped}<br>"
                f"per output token: serial <b>{serial / units.ms:.1f} ms</b>, parallel "
                f"<b>{parallel / units.ms:.1f} ms</b>, plain decode {plain / units.ms:.2f} ms")
        return View(numbers=numbers, traces=round_stages_traces(rows, plain_round_s=plain),
                    text=text)


# --- 8.5.4 / Exercise 8-7: draft length and padding --------------------------------------------

_LENGTHS = list(range(0, 17))


@serves("8.5.4")
class DraftLengthPanel(Panel):
    """Latency per token T_r / E[X] for serial drafts of length m, with the draft's positions
    padded to groups of m_grp positions, and the marginal test for the length under study (8.5.4)."""

    title = "Draft length, shape padding and the marginal condition (8.5.4, Exercise 8-7)"
    controls = (
        Control("acceptance", "acceptance α per position", "float", ch08.EXERCISE_8_7_ACCEPTANCE,
                0.0, 1.0, 0.01),
        Control("verify_ms", "verification round T_v (ms)", "float",
                units.to_unit(ch08.EXERCISE_8_7_VERIFY_S, "ms"), 5.0, 60.0, 0.1),
        Control("per_draft_ms", "draft cost per position t_d (ms)", "float",
                units.to_unit(ch08.EXERCISE_8_7_PER_DRAFT_S, "ms"), 0.0, 20.0, 0.1),
        Control("group", "draft positions per padded group, m_grp", "int", 1, 1, 8, 1),
        Control("draft_len", "draft length under study m (tokens)", "int", 4, 1, 16, 1),
    )
    main_control = "acceptance"
    base_layout = DRAFT_LENGTH_LAYOUT

    def compute(self, *, acceptance, verify_ms, per_draft_ms, group, draft_len) -> View:
        verify, per_draft = verify_ms * units.ms, per_draft_ms * units.ms
        plain_rows = calc.draft_length_table(acceptance, _LENGTHS, verify, per_draft, 1)
        padded_rows = calc.draft_length_table(acceptance, _LENGTHS, verify, per_draft, group)
        best_plain = best_draft_length(acceptance, _LENGTHS, verify, per_draft, 1)
        best_padded = best_draft_length(acceptance, _LENGTHS, verify, per_draft, group)
        gain = calc.marginal_draft_gain(acceptance, draft_len, verify, per_draft, group)
        row = padded_rows[draft_len]
        tables = {"one draft position at a time (g = 1)": plain_rows,
                  f"padded to groups of {group}": padded_rows}
        best = {"g = 1": (best_plain, plain_rows[best_plain]["latency_per_token_s"]),
                f"g = {group}": (best_padded, padded_rows[best_padded]["latency_per_token_s"])}
        traces, _ = draft_length_traces(tables, examined=(draft_len, row["latency_per_token_s"]),
                                        best=best)
        numbers = {"expected_tokens": row["expected_tokens"], "round_ms": row["round_s"] / units.ms,
                   "latency_per_token_ms": row["latency_per_token_s"] / units.ms,
                   "added_ms": gain["added_s"] / units.ms, "added_tokens": gain["added_tokens"],
                   "marginal_ms_per_token": gain["marginal_s_per_token"] / units.ms,
                   "current_ms_per_token": gain["current_s_per_token"] / units.ms,
                   "extension_helps": gain["helps"], "best_draft_len": best_padded,
                   "best_draft_len_ungrouped": best_plain}
        verdict = "helps" if gain["helps"] else "<b>does not help</b>"
        text = (f"m = {draft_len}, m_grp = {group}: E[X] = {row['expected_tokens']:.3f}, "
                f"T_r = {row['round_s'] / units.ms:.1f} ms, "
                f"<b>{row['latency_per_token_s'] / units.ms:.2f} ms/token</b><br>"
                f"going from m = {draft_len - 1} to {draft_len}: dT_r = "
                f"{gain['added_s'] / units.ms:.1f} ms for dX = {gain['added_tokens']:.3f} "
                f"tokens<br>dT_r/dX = {gain['marginal_s_per_token'] / units.ms:.1f} ms vs "
                f"T_r/E[X] at m = {draft_len - 1} = {gain['current_s_per_token'] / units.ms:.2f} "
                f"ms: the extra position "
                f"{verdict}<br>best length: {best_plain} (m_grp = 1), {best_padded} "
                f"(m_grp = {group})")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.4, fuller: verification under load -----------------------------------------------------

_LOAD_BATCHES = np.unique(np.geomspace(1, 256, 40).round().astype(int)).tolist()
LOAD_HARDWARE = {h.name: h for h in (specs.RTX_PRO_6000, specs.H100_SXM, specs.H200_SXM)}
VERIFY_LOAD_LAYOUT = {"height": 460,
                      "xaxis": {"title": {"text": "batch b (requests, each verifying m + 1 "
                                                  "positions)"}, "type": "log",
                                "tickvals": [1, 2, 4, 8, 16, 32, 64, 128, 256]},
                      "yaxis": {"title": {"text": "verification pass / plain decode step (x)"},
                                "rangemode": "tozero"},
                      "legend": {"orientation": "h", "y": -0.25}}


@serves("8.5.4")
class VerificationLoadPanel(Panel):
    """What a verification pass costs against a plain decode step of the same batch, on the
    roofline, beside the chapter's batch-1 reading (a verification round costs a plain one),
    and what a resident drafter takes from the KV budget (8.5.4, fuller)."""

    title = "Verification under load: is the extra work still free? (8.5.4)"
    controls = (
        Control("batch", "batch b (requests)", "int", 1, 1, 256, 1),
        Control("draft_len", "draft length m (tokens)", "int", ch08.TOY_DRAFT_LEN, 1, 16, 1),
        Control("context_tokens", "context per request (tokens)", "int",
                ch08.SHORT_PROMPT_TOKENS, 0, 32768, 128),
        Control("acceptance", "acceptance a per position", "float", 0.75, 0.0, 1.0, 0.01),
        Control("hardware", "accelerator", "choice", specs.RTX_PRO_6000.name,
                options={name: name for name in LOAD_HARDWARE}),
    )
    main_control = "batch"
    base_layout = VERIFY_LOAD_LAYOUT

    def compute(self, *, batch, draft_len, context_tokens, acceptance, hardware) -> View:
        hw = LOAD_HARDWARE[hardware]

        def ratios(L):
            return [calc.verification_under_load(QWEN3_8B, hw, b, draft_len, L)
                    ["verify_over_plain"] for b in _LOAD_BATCHES]

        here = calc.verification_under_load(QWEN3_8B, hw, batch, draft_len, context_tokens)
        ridge = here["ridge_batch"]
        n = calc.speculative_expected_tokens(acceptance, draft_len)
        budget = calc.draft_kv_budget(ch08.KV_BUDGET_BYTES, ch08.DFLASH_DRAFT_MEMORY_BYTES,
                                      QWEN3_8B, context_tokens, ch08.OUTPUT_TOKENS)
        traces = [
            {"type": "scatter", "mode": "lines", "x": [1, 256], "y": [1.0, 1.0],
             "name": "the chapter (8.5.2): a verification pass costs a plain step",
             "line": {"color": PLAIN_COLOR, "dash": "dash"}},
            {"type": "scatter", "mode": "lines", "x": _LOAD_BATCHES, "y": ratios(context_tokens),
             "name": f"roofline, {context_tokens:,} tokens of context each (fuller)",
             "line": {"color": theme.BLUE, "width": 3}},
            {"type": "scatter", "mode": "lines", "x": _LOAD_BATCHES, "y": ratios(0),
             "name": "roofline, no context (weights only)",
             "line": {"color": theme.VERMILLION, "dash": "dot", "width": 2}},
            {"type": "scatter", "mode": "markers", "x": [ridge], "y": [1.0],
             "name": f"weights-only ridge: b = {ridge:.0f}",
             "marker": {"size": 12, "color": theme.VERMILLION, "symbol": "x"}},
            {"type": "scatter", "mode": "markers", "x": [batch], "y": [here["verify_over_plain"]],
             "name": f"this batch: {here['verify_over_plain']:.2f}x",
             "marker": {"size": 13, "color": theme.INK, "symbol": "circle-open",
                        "line": {"width": 3}}},
        ]
        start = here["compute_bound_from_batch"]
        numbers = {"verify_over_plain": here["verify_over_plain"],
                   "plain_step_ms": here["plain_s"] / units.ms,
                   "verify_step_ms": here["verify_s"] / units.ms,
                   "ridge_batch": ridge, "compute_bound_from_batch": start,
                   "expected_tokens": n,
                   "chapter_speedup": n,
                   "speedup_under_load": n / here["verify_over_plain"],
                   "requests_fit_without_drafter": budget["requests_before"],
                   "requests_fit_with_drafter": budget["requests_after"]}
        bound = ("never (each request's KV read grows as fast as its compute)"
                 if math.isinf(start) else f"b = {start:,.0f}")
        text = (f"{QWEN3_8B.name} on {hw.name}, m = {draft_len}, {context_tokens:,} tokens each"
                f"<br>verification pass <b>{here['verify_over_plain']:.2f}x</b> a plain step "
                f"({numbers['verify_step_ms']:.2f} vs {numbers['plain_step_ms']:.2f} ms on the "
                f"roofline, {here['bound']}-bound)<br>"
                f"compute-bound from: {bound}<br>"
                f"speculation per request: E[X] = {n:.2f} at batch 1, "
                f"<b>{numbers['speedup_under_load']:.2f}x</b> at b = {batch} (draft cost left "
                f"out)<br>12 GiB of KV holds {budget['requests_before']} such requests, "
                f"{budget['requests_after']} beside the "
                f"{ch08.DFLASH_DRAFT_MEMORY_BYTES / units.GiB:.2f} GiB drafter (8.6.3's "
                f"measured footprint)")
        return View(numbers=numbers, traces=traces, text=text)
