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


def test_browser_latency_names_an_unknown_section(capsys):
    with pytest.raises(SystemExit):
        _load("browser_latency").parse_args(["latencey"])
    assert "latencey" in capsys.readouterr().err
