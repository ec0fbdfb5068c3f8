"""Every figure reads cleanly in a real browser: plotly.js draws it in headless Chromium at the
width a notebook gives it and at a laptop half-screen, and figure_layout.js reads the SVG for
overlapping or clipped text, legend entries that draw nothing, fractional ticks on axes that
count whole things and log axes that print bare minor digits (see figure_layout.py).

The first test shows that the check catches each kind of defect on small figures built to
have it (and passes a clean one), so the sweeps below cannot pass by checking nothing. The
sweeps fail on any defect not in figure_layout_known.txt (defects found and not yet fixed) and
on any listed one that is gone, so that list only shrinks.
"""

from __future__ import annotations

import pytest

import figure_layout as FL

PLAIN = {"template": "plotly_white", "height": 320, "margin": {"t": 40, "r": 20, "b": 50, "l": 60}}


def _figure(data, **layout):
    return FL.Figure("synthetic", {"data": data, "layout": {**PLAIN, **layout}})


CLEAN = _figure([{"type": "scatter", "x": [1, 2, 3], "y": [2, 1, 3], "name": "measured"},
                 {"type": "scatter", "x": [1, 3], "y": [1, 3], "name": "model"}],
                xaxis={"title": {"text": "batch (requests)"}, "dtick": 1},
                yaxis={"title": {"text": "step time (ms)"}})

DEFECTS = {
    "overlap": _figure([{"type": "scatter", "x": [1, 1.02], "y": [1, 1], "mode": "markers+text",
                         "text": ["b=128", "b=256"], "textposition": "top center"}],
                       xaxis={"range": [0, 2]}),
    "clipped": _figure([{"type": "scatter", "x": [0], "y": [0], "mode": "markers"}],
                       annotations=[{"text": "a long note that runs off the page", "x": 1.4,
                                     "y": 0.5, "xref": "paper", "yref": "paper",
                                     "showarrow": False}]),
    "empty-legend": _figure([{"type": "scatter", "x": [1, 2], "y": [1, 2], "name": "curve"},
                             {"type": "scatter", "x": [None], "y": [None], "name": "crossover",
                              "mode": "markers"}]),
    "fraction": _figure([{"type": "bar", "x": [0, 1], "y": [3, 4]}],
                        xaxis={"title": {"text": "logical block"}}),
    "minor-digit": _figure([{"type": "scatter", "x": [1, 1000], "y": [1, 2]}],
                           xaxis={"type": "log", "title": {"text": "prompt length"}}),
    "power": _figure([{"type": "scatter", "x": [1, 1000], "y": [1, 2]}],
                     xaxis={"type": "log", "dtick": 1, "exponentformat": "power",
                            "title": {"text": "batch (requests)"}}),
}


def test_the_check_finds_each_kind_of_defect_and_passes_a_clean_figure(browser):
    page = FL.open_page(browser)
    assert FL.check(page, [CLEAN]) == []
    for kind, figure in DEFECTS.items():
        kinds = {p["kind"] for _, _, p in FL.check(page, [figure])}
        assert kind in kinds, f"the check missed a {kind} defect (found {sorted(kinds)})"
    # nor is an empty entry missed when the trace's arrays come base64-packed, as plotly.py
    # writes numpy arrays (two NaNs, float64: a line with no point to draw)
    packed = _figure([{"type": "scatter", "x": [1, 2], "y": [1, 2], "name": "curve"},
                      {"type": "scatter", "x": [1, 2], "name": "fit",
                       "y": {"dtype": "f8", "bdata": "AAAAAAAA+H8AAAAAAAD4fw=="}}])
    assert {p["kind"] for _, _, p in FL.check(page, [packed])} == {"empty-legend"}
    # a key trace that says what it stands for is not an empty legend entry
    key = _figure([{"type": "scatter", "x": [1, 2], "y": [1, 2], "name": "curve"},
                   {"type": "scatter", "x": [None], "y": [None], "name": "free block",
                    "mode": "markers", "meta": {"legend_key": True}}])
    assert FL.check(page, [key]) == []
    # text a reader cannot see (a fully transparent fill, as the static explorer's slider step
    # labels) is not reported however it is placed; the same text in ink is
    note = {"text": "a long note that runs off the page", "x": 1.4, "y": 0.5, "xref": "paper",
            "yref": "paper", "showarrow": False}
    unseen = _figure([{"type": "scatter", "x": [0], "y": [0], "mode": "markers"}],
                     annotations=[dict(note, font={"color": "rgba(0, 0, 0, 0)"})])
    assert FL.check(page, [unseen]) == []
    seen = _figure([{"type": "scatter", "x": [0], "y": [0], "mode": "markers"}],
                   annotations=[dict(note, font={"color": "rgba(0, 0, 0, 0.5)"})])
    assert {p["kind"] for _, _, p in FL.check(page, [seen])} == {"clipped"}


def _sweep(browser, figures, what, record_property):
    page = FL.open_page(browser)
    problems = FL.check(page, figures)
    text = FL.report(problems, len(figures))
    found = {FL.defect_key(w, px, p) for w, px, p in problems}
    wheres = {f.where for f in figures}
    known = {k for k in FL.known_defects() if k.split(" | ")[0] in wheres}
    # make test's summary prints this line (tools/run_tests.py reads "checked" properties)
    record_property("checked", f"figure layout, {what}: {text.splitlines()[0]}; "
                               f"{len(found & known)} of them listed as known, not yet fixed")
    new = sorted(found - known)
    assert not new, f"{what}: {len(new)} new layout defects:\n" + "\n".join(new) + \
        f"\n\nfull report:\n{text}"
    fixed = sorted(known - found)
    assert not fixed, (f"{what}: fixed, so remove them from {FL.KNOWN.name} (python "
                       f"tests/browser/figure_layout.py --write-known):\n" + "\n".join(fixed))


def test_every_stored_figure_reads_cleanly(browser, record_property):
    _sweep(browser, FL.stored_figures(), "stored figures", record_property)


@pytest.mark.parametrize("half", [0, 1], ids=["first-half", "second-half"])
def test_every_explorer_reads_cleanly_at_its_corners(browser, half, record_property):
    classes = FL.panel_classes()
    _sweep(browser, FL.explorer_states(classes[half::2]),
           f"explorers ({len(classes[half::2])} of {len(classes)} panels)", record_property)
