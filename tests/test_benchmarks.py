"""The benchmark scripts' command lines (make bench runs them without arguments)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "tests" / "browser"))


def test_browser_latency_runs_every_section_without_arguments():
    # make bench calls it with no arguments; Python 3.11's argparse once refused that
    args = _load("browser_latency").parse_args([])
    assert args.sections == ["latency", "open"] and args.moves == 24


def test_lite_latency_runs_every_section_without_arguments(capsys):
    lite = _load("lite_latency")
    assert lite.parse_args([]).sections == ["open", "latency", "notebooks"]
    with pytest.raises(SystemExit):
        lite.parse_args(["notebook"])
    assert "notebook" in capsys.readouterr().err


def test_browser_latency_names_an_unknown_section(capsys):
    with pytest.raises(SystemExit):
        _load("browser_latency").parse_args(["latencey"])
    assert "latencey" in capsys.readouterr().err


def _drag_record(final: str, last_frame_data: int = 4) -> dict:
    import json

    def frame(t, text, x):
        return {"t": t, "sig": json.dumps([text, [["scatter", [x], None, None, None, None,
                                                    None]], [None, None, None]])}

    pointer = [{"t": t, "type": kind, "value": value} for t, kind, value in [
        (0, "pointerdown", "1"), (10, "pointermove", "2"), (20, "pointermove", "3"),
        (30, "pointermove", "3"), (40, "pointermove", "4"), (50, "pointerup", "4")]]
    frames = [frame(5, "v1", 1), frame(25, "v2", 2),
              frame(35, "v4", 3),  # the readout of 4 over the figure of 3: not showing 4
              frame(45, "v4", last_frame_data)]
    return {"pointer": pointer, "frames": frames, "plotly": [], "page_cpu_ms": 10.0,
            "move_ms": 1.0, "final": final}


def test_drag_lag_counts_each_value_change_until_its_figure_or_a_later_one_shows():
    from companion.explorers.base import Control

    bench = _load("browser_latency")
    control = Control("n", "n", "int", 1, 1, 4, 1)
    expected = {v: {"text": f"v{v}", "data": [{"x": [v], "type": "scatter"}]}
                for v in (1, 2, 3, 4)}
    r = bench.analyse_drag(_drag_record("4"), control, expected)
    # 2 at t=10 shows at 25 (15 ms); 3 at t=20 never shows, 4 (reached at 40) does at 45:
    # 25 ms; 4 at t=40 shows at 45 (5 ms); the frame at 35 shows 4's readout over 3's figure
    assert r["events"] == 3 and r["median"] == 15 and r["p95"] == 25
    assert r["exact"] == 2 / 3
    # the figure changes at 5, 25, 35 and 45, over the 50 ms of the drag
    assert r["updates_per_s"] == 4 / 0.05 and r["max_gap"] == 20
    # the hand changed the value at 10, 20 and 40: 3 changes in 50 ms, standing still 20 ms
    assert r["values_per_s"] == 3 / 0.05 and r["value_gap"] == 20
    assert bench.on_target(r)
    # 30 updates a second, or as many as the value changed when that is fewer (a slider with
    # few stops), and the lag's median and p95 under 33 and 50 ms
    assert not bench.on_target(dict(r, updates_per_s=20))
    assert bench.on_target(dict(r, values_per_s=10, updates_per_s=9))
    assert not bench.on_target(dict(r, values_per_s=10, updates_per_s=8))
    assert not bench.on_target(dict(r, p95=60)) and not bench.on_target(dict(r, median=40))
    assert r["end_ok"] and r["final"] == 4
    assert not bench.analyse_drag(_drag_record("3"), control, expected)["end_ok"]
    assert not bench.analyse_drag(_drag_record("4", 3), control, expected)["end_ok"]
