"""Ticks the companion chooses (companion.explorers.axes): log axes labelled with full numbers,
counting axes with whole ones."""

from __future__ import annotations

import math

import pytest

from companion.explorers import axes

SUFFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _number(label: str) -> float:
    # read a label as a reader would: digits, then an SI letter
    digits = label.rstrip("kMGT")
    return float(digits) * SUFFIX[label[len(digits):]]


@pytest.mark.parametrize("lo, hi", [(1, 256), (0.01, 3000), (150, 900), (1, 1e12), (20, 5000),
                                    (0.3, 0.9), (300, 310), (1e-6, 1e-3)])
def test_log_labels_are_the_numbers_they_stand_for(lo, hi):
    values, labels = axes.log_ticks(lo, hi)
    assert values == sorted(values) and len(values) == len(labels) >= 2
    assert len(values) <= 10
    for v, label in zip(values, labels):
        assert lo * 0.99 <= v <= hi * 1.01
        assert _number(label) == pytest.approx(v, rel=1e-9), (label, v)


def test_log_axis_over_few_decades_steps_1_2_5_and_over_many_decades_only():
    assert axes.log_ticks(20, 5000)[1] == ["20", "50", "100", "200", "500", "1k", "2k", "5k"]
    assert axes.log_ticks(1, 1e5)[1] == ["1", "10", "100", "1k", "10k", "100k"]


def test_whole_ticks_are_integers_at_a_readable_step():
    assert axes.whole_ticks(0, 3) == [0, 1, 2, 3]
    assert axes.whole_ticks(-0.5, 12.5) == [0, 2, 4, 6, 8, 10, 12]
    assert axes.whole_ticks(0, 1000) == [0, 200, 400, 600, 800, 1000]
    for lo, hi in [(0, 1), (3, 97), (0, 123456)]:
        ticks = axes.whole_ticks(lo, hi)
        assert all(isinstance(t, int) for t in ticks) and 2 <= len(ticks) <= 9


def test_finish_axes_ticks_log_axes_from_their_data_or_range_and_leaves_others():
    data = [{"type": "scatter", "x": [1, 2, 4, 256], "y": [3, 4, 5, 6]},
            {"type": "scatter", "x": [1, 2], "y": [0.5, 40], "yaxis": "y2"}]
    layout = {"xaxis": {"type": "log"}, "yaxis2": {"type": "log", "range": [-1, 2]},
              "yaxis": {"title": {"text": "linear"}}, "xaxis2": {"type": "log", "dtick": 1}}
    done = axes.finish_axes(data, layout)
    assert done["xaxis"]["ticktext"] == ["1", "10", "100"]
    assert done["yaxis2"]["ticktext"] == ["0.1", "1", "10", "100"]
    assert done["yaxis"] == layout["yaxis"] and done["xaxis2"] == {"type": "log", "dtick": 1}
    assert "tickvals" not in layout["xaxis"]  # the input is left alone
    assert axes.finish_axes(data, done) == done  # and it is idempotent


@pytest.mark.parametrize("bad", [(0, 10), (10, 1), (1, math.inf)])
def test_log_ticks_name_their_parameters(bad):
    with pytest.raises(ValueError, match="lo, hi"):
        axes.log_ticks(*bad)
