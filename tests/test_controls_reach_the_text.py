"""Every value a notebook sets an explorer to in code (a worked answer's ``panel.at(...)`` or
``panel.update(...)``, a panel built with overrides) can be set exactly with that control's
slider, so a reader can reproduce it by hand. Sliders with log-spaced stops (Control.ladder)
offer only their stops; this test holds them to the values the notebooks use.

Values are read from the notebooks' py:percent sources with ``ast``: int literals, the
chapters' named inputs (``ch08.X``, ``ch17.X``) and simple arithmetic on them; a value computed
from anything else is left out (it names no number a reader is told to set)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from companion import widgets
from companion.chapters import ch08, ch17
from companion.explorers.base import Panel

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("notebooks", "dashboards") for p in (ROOT / folder).rglob("*.py")
                 if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts)
PANELS = {name: obj for name, obj in vars(widgets).items()
          if isinstance(obj, type) and issubclass(obj, Panel)}


def _value(node):
    """The number ``node`` names, or None when it is not a literal, a chapter input or
    arithmetic on those."""
    try:
        return eval(compile(ast.Expression(node), "<value>", "eval"),  # noqa: S307
                    {"__builtins__": {}}, {"ch08": ch08, "ch17": ch17})
    except Exception:  # noqa: BLE001 - a name the notebook computed: not a typed value
        return None


def _settings(source: str):
    """(panel class, control name, value) for every keyword a notebook gives an explorer."""
    tree = ast.parse(source)
    panel_of = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr in PANELS):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    panel_of[target.id] = PANELS[node.value.func.attr]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr in PANELS:
            cls = PANELS[func.attr]
        elif (func.attr in ("at", "update") and isinstance(func.value, ast.Name)
              and func.value.id in panel_of):
            cls = panel_of[func.value.id]
        else:
            continue
        for kw in node.keywords:
            if kw.arg is not None:
                yield cls, kw.arg, _value(kw.value)


def _laddered_settings():
    for path in SOURCES:
        for cls, name, value in _settings(path.read_text()):
            control = next((c for c in cls.controls if c.name == name), None)
            if control is not None and control.ladder is not None and value is not None:
                yield path.relative_to(ROOT), cls, control, value


def test_the_reader_can_set_every_value_the_notebooks_set():
    found = list(_laddered_settings())
    assert len(found) >= 10, "the scan found almost no settings: has the notebooks' style changed?"
    unreachable = sorted({f"{path}: {cls.__name__}.{c.name}={value!r}"
                          for path, cls, c, value in found if value not in c.stops()})
    assert not unreachable, "values the slider cannot be set to:\n" + "\n".join(unreachable)


# chapter settings that are computed, not typed (a measured efficiency, a bandwidth from
# timings): no slider grid holds them exactly; the explorer's Reset button returns to them
DERIVED_DEFAULTS = {
    "CompressedReadPanel.bandwidth_tb_per_s": "8.4.2's achieved bandwidth, from its timings",
    "RetentionPanel.efficiency_pct": "8.3.4's measured prefill efficiency (62.16%)",
    "RetryCostPanel.accuracy_b": "8.4.4's 26 of 32 right",
    "RetryCostPanel.attempt_s": "8.4.4's attempt time, from the round and prefill times",
}


def test_every_slider_can_be_set_to_the_values_the_notebooks_use_and_to_the_chapters():
    # plain sliders too: an int or float slider shows min + k * step, so a value off that
    # grid (450 on a slider from 1 in steps of 10) cannot be set by hand
    found = [(path.relative_to(ROOT), cls, c, value) for path in SOURCES
             for cls, name, value in _settings(path.read_text())
             for c in cls.controls if c.name == name and value is not None]
    assert sum(c.kind == "float" for _, _, c, _ in found) >= 3
    unreachable = sorted({f"{path}: {cls.__name__}.{c.name}={value!r} (slider {c.min}..{c.max} "
                          f"step {c.step})" for path, cls, c, value in found
                          if c.kind in ("int", "float") and not c.settable(value)})
    defaults = sorted(f"{cls.__name__}.{c.name}={c.default!r}" for cls in set(PANELS.values())
                      if cls is not Panel for c in cls.controls
                      if c.kind in ("int", "float") and not c.settable(c.default)
                      and f"{cls.__name__}.{c.name}" not in DERIVED_DEFAULTS)
    assert not unreachable, "values a slider cannot be set to:\n" + "\n".join(unreachable)
    assert not defaults, "chapter settings off their slider's grid:\n" + "\n".join(defaults)


@pytest.mark.parametrize("value, settable", [(450, False), (451, True), (1, True), (801, True),
                                             (802, False), (0, False)])
def test_settable_follows_the_sliders_grid(value, settable):
    from companion.explorers.base import Control

    control = Control("out", "output", "int", 101, min=1, max=801, step=10, ladder=())
    assert control.settable(value) is settable
    fine = Control("t", "time (ms)", "float", 6.1, min=0.5, max=30.0, step=0.1)
    assert fine.settable(6.1) and fine.settable(30.0) and not fine.settable(6.15)


@pytest.mark.parametrize("source, expected", [
    ("p = widgets.RooflinePanel()\np.at(batch=100)", ("RooflinePanel", "batch", 100)),
    ("p = widgets.KVCapacityPanel(prompt_tokens=ch08.LONG_PROMPT_TOKENS * 2)",
     ("KVCapacityPanel", "prompt_tokens", 16384)),
])
def test_the_scan_reads_settings(source, expected):
    (cls, name, value), = [s for s in _settings(source) if s[2] is not None]
    assert (cls.__name__, name, value) == expected
