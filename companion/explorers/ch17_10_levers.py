"""17 §10's explorer home (notebook 17_10_levers): the levers, quantization and speculative
decoding.

Figures (plotly, deterministic): ``quantization_figure`` and ``speculative_traces`` (exact and
simulated tokens per target pass, from ``sim.speculative.speculative_check``).

Panel: ``SpeculativeLeverPanel`` (expected tokens per target pass, exact and simulated). The
levers and cheat-sheet tables as text are ``companion.tables``.
"""

from __future__ import annotations

from functools import lru_cache

from companion import calc, specs, theme
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.serves import serves
from companion.sim.speculative import speculative_check

__all__ = ["quantization_figure", "lever_speedup_figure", "speculative_traces",
           "SpeculativeLeverPanel"]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.10"


# --- §10 levers: quantization and speculative decoding ----------------------------------------

@serves("17.10")
def quantization_figure(rows, *, title: str = "Fewer bytes per weight, a higher decode ceiling "
                                              "(17 §10)"):
    """Batch-1 decode ceilings (tok/s) by weight format for each card.

    ``rows``: dicts with hardware, format, tokens_per_s (``calc.quantization_ceiling``)."""
    formats = list(dict.fromkeys(r["format"] for r in rows))
    cards = list(dict.fromkeys(r["hardware"] for r in rows))
    traces = []
    for i, hw in enumerate(cards):
        ys = [next(r["tokens_per_s"] for r in rows if r["hardware"] == hw and r["format"] == f)
              for f in formats]
        traces.append({"type": "bar", "x": formats, "y": ys, "name": hw,
                       "text": [f"{y:,.0f}" for y in ys], "textposition": "outside",
                       "marker": {"color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)]},
                       "cliponaxis": False})
    layout = {"height": 400, "barmode": "group",
              "xaxis": {"title": {"text": "weight format (bytes per parameter)"},
                        "type": "category"},
              "yaxis": {"title": {"text": "batch-1 decode ceiling (tokens/s)"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


@serves("17.10")
def lever_speedup_figure(batches, curves, *, title: str = "The levers' speed-ups against the "
                                                          "batch, on the roofline (17 §10)"):
    """Decode speed-up (x) against the batch (log axis) for each lever: ``curves`` {label:
    (speed-ups, style)} with style "chapter" (the chapter's constant, dashed), "fuller"
    (solid) or "product" (two fuller speed-ups multiplied, dotted); every label goes into the
    legend."""
    xs = list(batches)
    dash = {"chapter": "dash", "fuller": "solid", "product": "dot"}
    traces = []
    for i, (label, (ys, style)) in enumerate(curves.items()):
        # the dash says the style; the marker, with the colour, which lever
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": list(ys),
                       "name": label,
                       "line": {"color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)],
                                "width": 3 if style == "fuller" else 2, "dash": dash[style]},
                       "marker": {"symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)], "size": 7,
                                  "maxdisplayed": 10}})
    layout = {"height": 460,
              "xaxis": {"title": {"text": "decode batch (sequences)"}, "type": "log"},
              "yaxis": {"title": {"text": "speed-up over plain BF16 decode (x)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def speculative_traces(distribution, simulated, curves, selected, *,
                       priced=None) -> tuple[list, dict]:
    """Left: P(N = n tokens per target pass), exact (bars) and simulated (markers); right:
    expected tokens per pass against the draft length for several acceptance rates.

    ``distribution``/``simulated``: probabilities for n = 1 .. m+1; ``curves``: {alpha: (m list,
    expected list)}; ``selected``: (m, expected) marked; ``priced``: (label, m list, speed-ups)
    of the fuller model (``calc.speculative_speedup``: draft and verification priced), dashed.
    """
    ns = list(range(1, len(distribution) + 1))
    traces = [
        {"type": "bar", "x": ns, "y": list(distribution), "name": "exact probability of each count",
         "marker": {"color": theme.SERVING_COLORS["decode"]}},
        {"type": "scatter", "mode": "markers", "x": ns, "y": list(simulated),
         "name": "simulated rounds (rejection sampling, seeded)",
         "marker": {"symbol": "diamond-open", "size": 12, "color": theme.INK,
                    "line": {"width": 2}}},
    ]
    for i, (alpha, (ks, es)) in enumerate(sorted(curves.items())):
        traces.append({"type": "scatter", "mode": "lines", "x": list(ks), "y": list(es),
                       "name": f"E[X], alpha = {alpha:g}", "xaxis": "x2", "yaxis": "y2",
                       # "dash" is the priced line's
                       "line": {"color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)],
                                "dash": ("solid", "dot", "dashdot", "longdash",
                                         "longdashdot")[i % 5]}})
    if priced is not None:
        label, ks, ys = priced
        traces.append({"type": "scatter", "mode": "lines+markers", "x": list(ks), "y": list(ys),
                       "name": label, "xaxis": "x2", "yaxis": "y2",
                       "line": {"color": theme.INK, "dash": "dash", "width": 2},
                       "marker": {"size": 5, "color": theme.INK}})
    traces.append({"type": "scatter", "mode": "markers", "x": [selected[0]], "y": [selected[1]],
                   "name": "this setting", "xaxis": "x2", "yaxis": "y2",
                   "marker": {"size": 12, "color": theme.INK}})
    layout = {"xaxis": {"title": {"text": "tokens produced by one target pass (X)"},
                        "domain": [0, 0.45], "dtick": 1},
              "yaxis": {"title": {"text": "probability"}, "rangemode": "tozero"},
              "xaxis2": {"title": {"text": "draft length m"}, "domain": [0.58, 1],
                         "anchor": "y2", "dtick": 1},
              "yaxis2": {"title": {"text": "tokens per pass, or speed-up"},
                         "anchor": "x2", "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


_CURVE_ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)


_DRAFT_LENGTHS = tuple(range(0, 11))


# the fuller model's example: the chapter's 8B on its H100 SXM, short context (17 §10)
_LEVER_MODEL, _LEVER_CARD = specs.LLAMA_8B, specs.H100_SXM


@lru_cache(maxsize=128)
def _priced_curve(alpha: float, draft_cost: float, batch: int) -> tuple:
    """``calc.speculative_speedup`` for every draft length of ``_DRAFT_LENGTHS``."""
    return tuple(calc.speculative_speedup(_LEVER_MODEL, _LEVER_CARD, alpha, m,
                                          draft_cost=draft_cost, batch=batch)["speedup"]
                 for m in _DRAFT_LENGTHS)


@lru_cache(maxsize=64)
def _expected_curve(alpha: float) -> tuple:
    return _DRAFT_LENGTHS, tuple(calc.speculative_expected_tokens(alpha, m)
                                 for m in _DRAFT_LENGTHS)


@serves("17.10")
class SpeculativeLeverPanel(Panel):
    """17 §10: 1 + alpha + ... + alpha^m tokens per target pass (m, the draft length, is the
    chapter's k), checked by simulation."""

    title = "Speculative decoding: tokens per target pass (17 §10)"
    controls = (
        Control("acceptance", "acceptance rate alpha", "float", ch17.SPEC_ACCEPTANCE, 0.05, 1.0,
                0.01),
        Control("draft_len", "draft length m", "int", ch17.SPEC_DRAFT_LEN, 0, 10, 1),
        Control("rounds", "simulated rounds", "int", 5000, 1000, 10_000, 1000),
        Control("draft_cost_pct", "draft cost per drafted token (% of a target step)", "float",
                0.0, 0.0, 50.0, 1.0),
        Control("batch", "decode batch (sequences)", "int", 1, 1, 1024, 1),
    )
    main_control = "acceptance"
    base_layout = {"height": 420}

    def compute(self, *, acceptance, draft_len, rounds, draft_cost_pct, batch) -> View:
        check = speculative_check(acceptance, draft_len, rounds)
        curves = {a: _expected_curve(a) for a in _CURVE_ALPHAS}
        curves[round(acceptance, 4)] = _expected_curve(round(acceptance, 4))
        priced = _priced_curve(round(acceptance, 4), draft_cost_pct / 100, batch)
        label = f"speed-up, draft and pass priced (alpha = {acceptance:.2f})"
        traces, layout = speculative_traces(check["distribution"], check["simulated"], curves,
                                            (draft_len, check["expected"]),
                                            priced=(label, _DRAFT_LENGTHS, priced))
        fuller = calc.speculative_speedup(_LEVER_MODEL, _LEVER_CARD, acceptance, draft_len,
                                          draft_cost=draft_cost_pct / 100, batch=batch)
        terms = [calc.speculative_expected_tokens(acceptance, j)
                 - calc.speculative_expected_tokens(acceptance, j - 1)
                 for j in range(1, draft_len + 1)]
        numbers = {"expected_tokens": check["expected"], "simulated_mean": check["sim_mean"],
                   "terms": [1.0] + terms, "speedup": fuller["speedup"],
                   "verify_over_plain": fuller["verify_s"] / fuller["plain_s"]}
        shown = " + ".join(f"{t:.3g}" for t in numbers["terms"])
        text = (f"alpha = {acceptance:.2f}, m = {draft_len}: {shown} = "
                f"<b>{check['expected']:.2f}</b> tokens per target pass<br>"
                f"simulated over {rounds:,} rounds: {check['sim_mean']:.3f}<br>"
                f"at most {check['expected']:.1f}x lower single-stream latency (draft and the "
                f"wider pass taken as free)<br>"
                f"<i>priced on the roofline (8B, H100 SXM, batch {batch}): the pass costs "
                f"{numbers['verify_over_plain']:.2f} plain steps ({fuller['bound']}-bound), "
                f"drafting {draft_len * draft_cost_pct / 100:.2f}: speed-up "
                f"<b>{fuller['speedup']:.2f}x</b></i>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
