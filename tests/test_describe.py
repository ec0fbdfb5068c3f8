"""Every figure has words and numbers: ``companion.describe`` and the stored notebooks.

The text alternative and the data table are checked against figures built here with known
data (the numbers asserted are the ones put in, not what the code printed), then every stored
figure of the companion is checked to carry them: a static figure is followed by its notes
output, an explorer's readout holds the notes of the figure it shows at every precomputed step.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from companion import describe, display

ROOT = Path(__file__).resolve().parents[1]
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _rows(table_html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", table_html, re.S)
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows]


def test_a_line_chart_says_its_axes_ranges_and_key_points():
    x = np.arange(1, 101)
    y = (x - 40.0) ** 2          # lowest 0 at x = 40, an interior extreme
    fig = go.Figure([go.Scatter(x=x, y=y, mode="lines", name="cost"),
                     go.Scatter(x=[40], y=[0], mode="markers", name="optimum")],
                    layout=dict(title="A <b>parabola</b><br>with its optimum",
                                xaxis_title="batch (requests)", yaxis_title="time (ms)"))
    text = describe.text_alternative(fig)
    assert text.startswith("Figure: A parabola with its optimum.")
    assert "Horizontal axis: batch (requests), from 1 to 100" in text
    assert "Vertical axis: time (ms), from 0 to 3,600" in text
    assert "cost: a line, 100 points from (1, 1,521) to (100, 3,600), lowest 0 at 40" in text
    assert "optimum: a point at (40, 0)" in text
    rows = _rows(describe.data_table(fig))
    assert rows[0] == ["series", "batch (requests)", "time (ms)"]
    cost = [r for r in rows[1:] if r[0] == "cost"]
    # thinned to MAX_ROWS evenly spaced points, ends and the minimum kept
    assert len(cost) == describe.MAX_ROWS
    assert ["cost", "1", "1,521"] in cost and ["cost", "100", "3,600"] in cost
    assert ["cost", "40", "0"] in cost
    assert ["optimum", "40", "0"] in rows
    assert "cost: 12 of 100 points" in describe.data_table(fig)


def test_log_axes_read_their_shown_range_and_hidden_series_say_so():
    fig = go.Figure([go.Scatter(x=[1, 10], y=[2, 3], mode="lines", name="a"),
                     go.Scatter(x=[1, 10], y=[5, 6], mode="lines", name="b",
                                visible="legendonly"),
                     go.Scatter(x=[1, 10], y=[7, 8], mode="lines", name="gone", visible=False)],
                    layout=dict(xaxis=dict(type="log", range=[-1, 3], title="intensity"),
                                yaxis_title="y"))
    text = describe.text_alternative(fig)
    assert "Horizontal axis: intensity, logarithmic, from 0.1 to 1,000" in text
    assert "b: a line through (1, 5), (10, 6) (hidden until chosen in the legend)" in text
    assert "gone" not in text and "2 series" in text


def test_coded_axes_speak_their_tick_words_and_timelines_their_bars():
    fig = go.Figure([go.Bar(y=[0, 1], x=[2.0, 3.5], base=[0.5, 1.0], orientation="h",
                            name="decode")],
                    layout=dict(yaxis=dict(tickvals=[0, 1], ticktext=["request A", "request B"]),
                                xaxis_title="time (s)"))
    text = describe.text_alternative(fig)
    assert "Vertical axis: untitled, marked request A, request B" in text
    assert "decode: 2 bars: request A from 0.5 to 2.5; request B from 1 to 4.5" in text
    rows = _rows(describe.data_table(fig))
    assert rows[0][2:] == ["start (time (s))", "end (time (s))"]
    assert rows[1:] == [["decode", "request A", "0.5", "2.5"], ["decode", "request B", "1", "4.5"]]


def test_subplots_heatmaps_bars_shapes_and_labels():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("left panel", "right panel"))
    fig.add_trace(go.Bar(x=["x8", "x16"], y=[3, 5], name="bytes"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[1, 2], [3, 40]], x=[1, 2], y=[10, 20], name="grid"), row=1, col=2)
    fig.add_vline(x=1.5, row=1, col=2)
    fig.add_annotation(x=1, y=10, text="a crossing", xref="x2", yref="y2")
    text = describe.text_alternative(fig)
    assert "Plot 1 of 2, left panel." in text and "Plot 2 of 2, right panel." in text
    assert "categories x8, x16" in text
    assert "bytes: bars x8: 3; x16: 5" in text
    assert "grid: a heatmap of 2 by 2 cells, values from 1 to 40" in text
    assert "a vertical line at 1.5" in text
    assert "Labels on the figure: a crossing." in text
    tables = describe.data_table(fig)
    assert tables.count("<table>") == 2
    assert ["20", "3", "40"] in _rows(tables)


def test_notes_hide_the_alternative_and_fold_the_numbers():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="s"), layout=dict(title="t"))
    notes = describe.notes_html(fig)
    assert '<p class="companion-sr-only">Figure: t.' in notes
    assert f"<details class=\"companion-figure-data\"><summary>{describe.SHOW_THE_NUMBERS}" in notes
    assert ".companion-sr-only{position:absolute" in notes
    # numbers the same on every machine: 6 significant digits, then 4 shown
    assert describe.fmt(0.1 + 0.2) == "0.3" and describe.fmt(1234567.89) == "1,234,570"
    assert describe.fmt(2 / 3) == "0.6667" and describe.fmt(1e-5) == "1e-05"


def test_numpy_arrays_and_typed_arrays_read_alike():
    plain = go.Figure(go.Scatter(x=[1.0, 2.0, 3.0], y=[4.0, 5.0, 6.0], name="s"))
    typed = display.round_figure_json(go.Figure(go.Scatter(x=np.array([1.0, 2.0, 3.0]),
                                                           y=np.array([4.0, 5.0, 6.0]),
                                                           name="s")))
    assert isinstance(typed["data"][0]["x"], dict)        # plotly's base64 typed array
    assert describe.text_alternative(typed) == describe.text_alternative(plain)
    assert describe.data_table(typed) == describe.data_table(plain)


# --- every stored figure ------------------------------------------------------------------------

def _stored_notebooks() -> list[Path]:
    found = []
    for folder in ("notebooks", "exercises", "solutions", "dashboards"):
        found += [p for p in sorted((ROOT / folder).rglob("*.ipynb"))
                  if ".ipynb_checkpoints" not in p.parts]
    return found


def _figures(path: Path):
    """(kind, figure, the output after it) for each stored plotly output."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        outputs = cell.get("outputs", [])
        for i, out in enumerate(outputs):
            figure = out.get("data", {}).get(PLOTLY_MIME)
            if figure is None:
                continue
            kind = "explorer" if WIDGET_MIME in out["data"] else "figure"
            yield kind, figure, outputs[i + 1] if i + 1 < len(outputs) else None


def test_every_stored_figure_has_a_text_alternative_and_a_data_table():
    counts = {"figure": 0, "explorer": 0}
    missing = []
    for path in _stored_notebooks():
        for k, (kind, figure, after) in enumerate(_figures(path)):
            where = f"{path.relative_to(ROOT)} figure {k + 1}"
            counts[kind] += 1
            if kind == "figure":
                notes = "".join((after or {}).get("data", {}).get("text/html", ""))
                if notes != describe.notes_html(figure):
                    missing.append(f"{where}: not followed by its notes")
                continue
            meta = figure["layout"]["meta"]["companion_explorer"]
            if not all('<p class="companion-sr-only">Figure' in r
                       and describe.SHOW_THE_NUMBERS in r for r in meta["readouts"]):
                missing.append(f"{where}: a step's readout lacks the figure's notes")
    print(f"\nfigures with words and numbers: {counts['figure']} figures, "
          f"{counts['explorer']} explorers")
    assert counts["figure"] >= 60 and counts["explorer"] >= 45
    assert not missing, "\n".join(missing)
