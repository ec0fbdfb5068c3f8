"""Every value a notebook's "Try this" prompts name, and every value it sets an explorer to in code (a worked answer's ``panel.at(...)`` or
``panel.update(...)``, a panel built with overrides) can be set exactly with that control's
slider, so a reader can reproduce it by hand. Sliders with log-spaced stops (Control.ladder)
offer only their stops; this test holds them to the values the notebooks use.

Values are read from the notebooks' py:percent sources with ``ast``: int literals, the
chapters' named inputs (``ch08.X``, ``ch17.X``) and simple arithmetic on them; a value computed
from anything else is left out (it names no number a reader is told to set)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from companion import widgets
from companion.chapters import ch08, ch17
from companion.explorers.base import Panel

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("notebooks", "dashboards") for p in (ROOT / folder).rglob("*.py")
                 if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts)
PANELS = {name: obj for name, obj in ((n, getattr(widgets, n)) for n in widgets.__all__)
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


# --- values named in prose: the "Try this" prompts -------------------------------------------------

# a number with a unit, as the prompts write it ("8,000 tokens", "26.26 ms", "12 GiB"), and the
# words of a control's label that carry each unit
PROSE_VALUE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
                         r"(GB/s|TB/s|tokens?|ms|GiB|GB|requests|sequences|%|s)\b")
LABEL_UNITS = {"tokens": ("token",), "token": ("token",), "ms": ("ms",), "s": ("(s)", " s)"),
               "GB": ("GB",), "GiB": ("GiB",), "requests": ("request",),
               "sequences": ("sequence", "batch"), "%": ("%",), "GB/s": ("GB/s",),
               "TB/s": ("TB/s",)}
# values a prompt names that no slider stands for, and why
NOT_SLIDER_VALUES = {
    ("17_04_kv_sizing", "141 GB"): "the H200's memory: chosen with the card menu",
    ("17_04_kv_sizing", "80 GB"): "the H100's memory, in a calculation the reader redoes",
}


def try_this_items(source: str) -> list[str]:
    """The numbered items of a notebook's "## Try this" cell, each as one line of text."""
    items, on = [], False
    for line in source.split("\n"):
        if line.startswith("# ## Try this"):
            on = True
            continue
        if not on:
            continue
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if re.match(r"\d+\.\s", body):
            items.append(body)
        elif items:
            items[-1] += " " + body
    return items


def prose_values(path: Path):
    """(notebook, "value unit", candidate controls, value) for every number with a unit in its
    prompts; candidates are the int and float controls, of the panels the notebook shows, whose
    label carries that unit."""
    source = path.read_text()
    panels = [PANELS[n] for n in sorted(set(re.findall(r"widgets\.(\w+Panel)\b", source)))
              if n in PANELS]
    for item in try_this_items(source):
        for number, unit in PROSE_VALUE.findall(item):
            value = float(number.replace(",", ""))
            candidates = [(cls, c) for cls in panels for c in cls.controls
                          if c.kind in ("int", "float")
                          and any(u in _label_unit(c.label) for u in LABEL_UNITS[unit])]
            yield path.stem, f"{number} {unit}", candidates, value


def _label_unit(label: str) -> str:
    """The unit part of a control's label: its brackets ("prefill + first token (ms)" -> "(ms)"),
    or the whole label when it has none."""
    brackets = re.findall(r"\([^)]*\)", label)
    return " ".join(brackets) if brackets else label


def _settable(control, value: float) -> bool:
    return control.settable(int(value) if control.kind == "int" and value.is_integer() else value)


def test_the_reader_can_set_every_value_the_prompts_name():
    found = [v for path in SOURCES for v in prose_values(path)]
    with_slider = [v for v in found if v[2]]
    assert len(with_slider) >= 25, "the scan found few prompt values: has the prompts' style changed?"
    unreachable = sorted(
        f"{stem}: {text} (" + ", ".join(f"{cls.__name__}.{c.name} {c.min}..{c.max} step {c.step}"
                                        for cls, c in candidates) + ")"
        for stem, text, candidates, value in with_slider
        if (stem, text) not in NOT_SLIDER_VALUES
        and not any(_settable(c, value) for _, c in candidates))
    assert not unreachable, "values a prompt names that no slider can be set to:\n" + \
        "\n".join(unreachable)
    stale = sorted(set(NOT_SLIDER_VALUES) - {(stem, text) for stem, text, *_ in found})
    assert not stale, f"NOT_SLIDER_VALUES names values no prompt names now: {stale}"


def test_the_prompt_scan_reads_items_and_units(tmp_path):
    nb = tmp_path / "x.py"
    nb.write_text("p = widgets.RequestTimelinePanel()\n# ## Try this\n#\n"
                  "# 1. Set the interval to 26.26 ms and the output to\n#    512 tokens.\n"
                  "# 2. Wait 7 s.\n\n# %%\n")
    found = [(text, sorted(c.name for _, c in cands)) for _, text, cands, _ in prose_values(nb)]
    assert found[0] == ("26.26 ms", ["inserted_prefill_ms", "interval_ms", "prefill_ms",
                                     "queue_ms"])
    assert found[1] == ("512 tokens", ["output_tokens"])
    assert found[2] == ("7 s", ["deadline_s"])
