"""8.2.4's figures (notebook 08_2_batching_and_scheduling): CUDA-graph padding, the token budget
from a permitted output interval, and the simulated token-budget sweep.

Split from ``ch08_2_batching_and_scheduling`` (which keeps the panels that draw them:
``TokenBudgetPanel``, ``BudgetSweepPanel``) so that module stays under 1,000 lines. Builders
take results computed by ``companion.calc`` / ``companion.sim``; the ``*_traces`` helpers return
plain trace dicts the panels reuse. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import numpy as np

from companion import theme, units
from companion.explorers.common import titled_figure as _fig
from companion.serves import serves

__all__ = ["graph_padding_figure", "token_budget_traces", "token_budget_figure",
           "budget_sweep_traces", "budget_sweep_figure"]


# --- 8.2.4: CUDA-graph padding and the token budget ------------------------------------------

@serves("8.2.4")
def graph_padding_figure(rows, executed, *, captured_shapes,
                         title: str = "CUDA-graph padding: rows needed vs rows executed "
                                      "(8.2.4)"):
    """Executed rows (``calc.padded_rows``) vs rows needed, with the captured shapes marked."""
    rows = [int(r) for r in rows]
    traces = [
        {"type": "scatter", "mode": "lines", "x": rows, "y": [int(e) for e in executed],
         "name": "rows executed (next captured graph)", "line": {"shape": "hv", "width": 3,
                                                                 "color": theme.VERMILLION}},
        {"type": "scatter", "mode": "lines", "x": [rows[0], rows[-1]], "y": [rows[0], rows[-1]],
         "name": "rows needed", "line": {"dash": "dash", "color": theme.BLUE}},
        {"type": "scatter", "mode": "markers", "x": list(captured_shapes),
         "y": list(captured_shapes), "name": "captured graph shapes",
         "marker": {"size": 10, "color": theme.INK}},
    ]
    layout = {"height": 380, "xaxis": {"title": {"text": "rows this round needs"}},
              "yaxis": {"title": {"text": "rows the GPU executes"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def token_budget_traces(targets_s, budgets_by_label, *, marker=None, xaxis: str = "x",
                        yaxis: str = "y") -> list:
    """Lines of new prompt tokens a round may add vs the permitted interval (ms), per label.

    ``budgets_by_label``: {label: budgets over ``targets_s``} from ``calc.token_budget_for_itl``;
    ``marker``: optional (target_s, budget, label) point, its budget in its legend entry.
    """
    xs = np.asarray(targets_s, dtype=float) / units.ms
    traces = []
    for i, (label, budgets) in enumerate(budgets_by_label.items()):
        traces.append({"type": "scatter", "mode": "lines", "x": xs,
                       "y": np.asarray(budgets, dtype=int),
                       "name": label, "line": {"color": theme.PALETTE[i % len(theme.PALETTE)],
                                               "dash": theme.DASHES[i % len(theme.DASHES)],
                                               "shape": "hv" if "graph" in label else "linear"},
                       "xaxis": xaxis, "yaxis": yaxis})
    if marker is not None:
        t, b, label = marker
        # the budget in the point's legend entry: a label by the point would leave the plot
        # wherever the point sits at the curve's top or the axis' left end
        traces.append({"type": "scatter", "mode": "markers", "x": [t / units.ms],
                       "y": [int(b)], "name": f"{label}: {int(b):,} tokens",
                       "marker": {"size": 11, "color": theme.INK},
                       "xaxis": xaxis, "yaxis": yaxis})
    return traces


@serves("8.2.4")
def token_budget_figure(targets_s, budgets_by_label, *, marker=None,
                        title: str = "Token budget from the permitted output interval (8.2.4)"):
    """New prompt tokens per round that keep the round within the interval target."""
    traces = token_budget_traces(targets_s, budgets_by_label, marker=marker)
    layout = {"height": 420, "xaxis": {"title": {"text": "permitted output interval (ms)"}},
              "yaxis": {"title": {"text": "new prompt tokens per round"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def budget_sweep_traces(budgets, longest_itl_s, queue_s, *, xaxis: str = "x", yaxis: str = "y",
                        yaxis_queue: str = "y2") -> list:
    """Longest output interval and queueing time (ms) vs the per-round token budget."""
    xs = [int(b) for b in budgets]
    return [
        {"type": "scatter", "mode": "lines+markers", "x": xs,
         "y": [t / units.ms for t in longest_itl_s], "name": "longest output interval (ms)",
         "line": {"color": theme.VERMILLION, "width": 3}, "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": [t / units.ms for t in queue_s],
         "name": "queueing of later arrivals (ms, right axis)",
         "line": {"color": theme.BLUE, "width": 3, "dash": "dash"}, "xaxis": xaxis,
         "yaxis": yaxis_queue},
    ]


@serves("8.2.4")
def budget_sweep_figure(budgets, longest_itl_s, queue_s, *, interval_target_s=None,
                        title: str = "Token budget sweep, six staggered requests "
                                     "(generated by the companion's simulator)"):
    """The 8.2.4 trade: a larger budget empties the queue sooner but stretches intervals."""
    traces = budget_sweep_traces(budgets, longest_itl_s, queue_s)
    layout = {"height": 420,
              "xaxis": {"title": {"text": "token budget per round (tokens)"}, "type": "log",
                        "tickvals": [int(b) for b in budgets],
                        "ticktext": [str(int(b)) for b in budgets]},
              "yaxis": {"title": {"text": "longest output interval (ms)"},
                        "rangemode": "tozero"},
              "yaxis2": {"title": {"text": "queueing (ms)"}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}, "shapes": []}
    if interval_target_s is not None:
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                             "y0": interval_target_s / units.ms,
                             "y1": interval_target_s / units.ms,
                             "line": {"color": theme.RED, "dash": "dot"}}]
    return _fig(traces, layout, title)
