"""Figures of 8.5 (speculative decoding): greedy verification step by step (Figure 8-29),
rejection sampling against the target distribution, expected output per round, per-token
latency against the draft's cost (Figure 8-32), serial vs parallel drafting, and the draft
length with shape padding (Exercise 8-7's setting).

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace dicts (and the ``*_LAYOUT`` constants
the data-independent layouts) that the explorers in ``companion.explorers.ch08_speculative``
reuse, so a slider move only replaces trace data. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

from companion import units
from companion.explorers.common import titled_figure as _fig, to_ms as _ms

__all__ = [
    "greedy_verification_figure", "rejection_sampling_figure", "expected_output_figure",
    "draft_cost_figure", "draft_mode_figure", "draft_length_figure",
]

# Okabe-Ito colours, one meaning each
VERDICT_COLORS = {
    "accepted": "#009e73",      # draft token kept
    "corrected": "#e69f00",     # the target's token at the first mismatch
    "bonus": "#0072b2",         # the extra token when every draft token matched
    "discarded": "#999999",     # follows a rejected token: rolled back
    "pending": "#dddddd",       # not yet read in this step
}
CURVE_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
PLAIN_COLOR = "black"
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
DRAFT_COST_LAYOUT = {"height": 440,
                     "xaxis": {"title": {"text": "draft cost per round (ms)"},
                               "rangemode": "tozero"},
                     "yaxis": {"title": {"text": "average latency per output token (ms)"},
                               "rangemode": "tozero"},
                     "legend": {"orientation": "h", "y": -0.25}}
DRAFT_LENGTH_LAYOUT = {"height": 420,
                       "xaxis": {"title": {"text": "draft length m (tokens)"}, "dtick": 1},
                       "yaxis": {"title": {"text": "latency per output token T_m / E[N_m] "
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


def greedy_verification_layout(n_positions: int) -> dict:
    """Layout of the Figure 8-29 grid for ``n_positions`` columns, with a colour key."""
    key = " ".join(f"<span style='color:{c}'>&#9632;</span> {label}" for label, c in (
        ("accepted", VERDICT_COLORS["accepted"]), ("target's correction",
                                                   VERDICT_COLORS["corrected"]),
        ("bonus", VERDICT_COLORS["bonus"]), ("discarded", VERDICT_COLORS["discarded"]),
        ("not read yet", VERDICT_COLORS["pending"])))
    return {"height": 330, "showlegend": False,
            "xaxis": {"title": {"text": "draft position (token index within the round)"},
                      "tickvals": list(range(1, n_positions + 1)),
                      "range": [0.4, n_positions + 0.6], "zeroline": False},
            "yaxis": {"categoryorder": "array", "categoryarray": list(reversed(ROWS)),
                      "type": "category", "title": {"text": "row"}},
            "annotations": [{"text": key, "xref": "paper", "yref": "paper", "x": 0,
                             "y": -0.32, "showarrow": False, "xanchor": "left"}]}


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
        t["x"].append(pos), t["text"].append(name(s["target"])), t["color"].append("#ffffff")
        if read and kind != "discarded":
            o = rows[ROWS[2]]
            o["x"].append(pos), o["color"].append(VERDICT_COLORS[kind])
            o["text"].append(name(s["draft"] if kind == "accepted" else s["target"]))
    return [{"type": "scatter", "mode": "markers+text", "x": r["x"], "y": [row] * len(r["x"]),
             "text": r["text"], "name": row, "hoverinfo": "text", "textfont": {"size": 12},
             "marker": {"symbol": "square", "size": 46, "color": r["color"],
                        "line": {"width": 1, "color": "#555555"}}}
            for row, r in rows.items()]


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
         "marker": {"color": "#009e73"}, "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "markers", "x": syms, "y": list(target),
         "name": "target p(x)", "marker": {"symbol": "line-ew-open", "size": 60,
                                            "color": "#0072b2", "line": {"width": 4}},
         "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "markers", "x": syms, "y": list(draft),
         "name": "draft q(x)", "marker": {"symbol": "diamond", "size": 12, "color": "#e69f00"},
         "xaxis": "x", "yaxis": "y"},
    ]
    if exact_output is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": syms, "y": list(exact_output),
                       "name": "exact output distribution",
                       "marker": {"symbol": "x", "size": 10, "color": "black"},
                       "xaxis": "x", "yaxis": "y"})
    layout = dict(REJECTION_LAYOUT)
    if rounds_hist is not None:
        ks = list(range(1, len(rounds_hist) + 1))
        traces += [
            {"type": "bar", "x": ks, "y": list(rounds_hist), "name": "tokens per round, simulated",
             "marker": {"color": "#cc79a7"}, "xaxis": "x2", "yaxis": "y2"},
            {"type": "scatter", "mode": "markers", "x": ks, "y": list(rounds_exact),
             "name": "tokens per round, exact", "marker": {"symbol": "diamond", "size": 10,
                                                           "color": "black"},
             "xaxis": "x2", "yaxis": "y2"},
        ]
        layout.update(REJECTION_ROUNDS_AXES)
    return traces, layout


def rejection_sampling_figure(symbols, target, draft, sampled, exact_output=None, *,
                              rounds_hist=None, rounds_exact=None, samples: int = 0,
                              title: str = "Rejection sampling emits the target's distribution "
                                           "(8.5.1)"):
    """Emitted-token frequencies (simulated) against target and draft, and tokens per round."""
    traces, layout = rejection_sampling_traces(symbols, target, draft, sampled, exact_output,
                                               rounds_hist=rounds_hist,
                                               rounds_exact=rounds_exact, samples=samples)
    return _fig(traces, layout, title)


# --- 8.5.2: expected output per round -----------------------------------------------------------

def expected_output_figure(acceptances, curves, *, points=(),
                           title: str = "Expected tokens per round vs acceptance (8.5.2, 8.5.4)"):
    """E[N] = 1 + a + ... + a^m against the per-position acceptance a, one curve per draft
    length. ``curves``: {m: E[N] over ``acceptances``}; ``points``: (a, E[N], label) markers."""
    xs = list(acceptances)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys),
               "name": f"draft length m = {m}", "line": {"color": CURVE_COLORS[i % 6],
                                                         "width": 2.5}}
              for i, (m, ys) in enumerate(curves.items())]
    if points:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [p[0] for p in points], "y": [p[1] for p in points],
                       "text": [p[2] for p in points], "textposition": "top left",
                       "name": "the chapter's AAAA and BBBB drafts",
                       "marker": {"size": 11, "color": "black", "symbol": "diamond"}})
    layout = {"height": 420,
              "xaxis": {"title": {"text": "acceptance a per position (probability)"},
                        "range": [0, 1]},
              "yaxis": {"title": {"text": "expected tokens per round E[N] (tokens)"},
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
    for i, (label, ys) in enumerate(curves.items()):
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": _ms(ys), "name": label,
                       "line": {"color": CURVE_COLORS[i % 6], "width": 2.5}})
    cx = [c[1] / units.ms for c in crossovers]
    traces.append({"type": "scatter", "mode": "markers+text", "x": cx,
                   "y": [plain_round_s / units.ms] * len(cx),
                   "text": [f"{c[0]}: {c[1] / units.ms:.1f} ms" for c in crossovers],
                   "textposition": "top left", "name": "crossover (no gain beyond)",
                   "marker": {"size": 11, "color": "black", "symbol": "x"}})
    if current is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0] / units.ms],
                       "y": [current[1] / units.ms], "name": current[2],
                       "marker": {"size": 13, "color": "#d55e00", "symbol": "circle"}})
    return traces, dict(DRAFT_COST_LAYOUT)


def draft_cost_figure(draft_s, curves, plain_round_s: float, *, crossovers=(), current=None,
                      title: str = "Figure 8-32: how much a draft may cost (8.5.2)"):
    """Figure 8-32: (T_verify + T_draft) / E[N] against T_draft, with plain decode and the
    crossovers E[N] T_plain - T_verify."""
    traces, layout = draft_cost_traces(draft_s, curves, plain_round_s, crossovers, current)
    return _fig(traces, layout, title)


# --- 8.5.3: serial vs parallel drafting -------------------------------------------------------

def draft_mode_figure(rows, *, plain_round_s: float | None = None,
                      title: str = "Serial vs parallel drafting, per output token (8.5.3)"):
    """Stacked bars of draft and verification time per output token (ms).

    ``rows``: dicts with label, draft_s (per round), verify_s (per round), tokens (E[N]).
    """
    labels = [r["label"] for r in rows]
    draft = [r["draft_s"] / r["tokens"] / units.ms for r in rows]
    verify = [r["verify_s"] / r["tokens"] / units.ms for r in rows]
    total = [d + w for d, w in zip(draft, verify)]
    traces = [
        {"type": "bar", "x": labels, "y": verify, "name": "verification / E[N]",
         "marker": {"color": "#0072b2"}},
        {"type": "bar", "x": labels, "y": draft, "name": "draft generation / E[N]",
         "marker": {"color": "#e69f00"}, "text": [f"{t:.1f} ms" for t in total],
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
                       "name": label, "line": {"color": CURVE_COLORS[i % 6], "width": 2.5,
                                               "dash": "solid" if i == 0 else "dash"}})
    if best:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [b[0] for b in best.values()],
                       "y": [b[1] / units.ms for b in best.values()],
                       "text": [f"best m = {b[0]}" for b in best.values()],
                       "textposition": "bottom center", "name": "lowest latency per token",
                       "marker": {"size": 13, "color": "black", "symbol": "star"}})
    if examined is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [examined[0]],
                       "y": [examined[1] / units.ms], "name": f"m = {examined[0]} (examined)",
                       "marker": {"size": 14, "color": "#d55e00", "symbol": "circle-open",
                                  "line": {"width": 3}}})
    return traces, dict(DRAFT_LENGTH_LAYOUT)


def draft_length_figure(tables, *, examined=None, best=None,
                        title: str = "Draft length: latency per token, with and without padding "
                                     "(8.5.4)"):
    """Latency per output token vs draft length for serial drafts, ungrouped and padded."""
    traces, layout = draft_length_traces(tables, examined=examined, best=best)
    return _fig(traces, layout, title)
