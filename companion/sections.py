"""Where a section of the chapters lives in the companion: ``companion.where("8.3.4")``.

The map is read off explicit marks, never kept by hand and never parsed from prose:

* formulas, simulator, explorers and figures: the ``@serves(...)`` mark
  (``companion.serves``) on the public names of ``companion.formulas.*`` (listed as ``calc.X``
  where the façade exports them), ``companion.sim.*`` (``sim.X``), ``companion.explorers.*``
  (panels as ``widgets.X``, figure builders as ``plots.X``) and ``companion.tables``;
* ledger entries: ``Entry.section``; exercises: ``Exercise.section`` ("8.2.2-8.2.4",
  "8.4.2, 8.4.4", "17 §3 and §6", "17 §5 and the interview questions");
* notebooks: the file names (``08_3_kv_cache.py`` is 8.3, ``17_04_kv_sizing.py`` is 17.4);
* the chapters' stated inputs: ``companion.chapters.inputs()``.

``where(s)`` lists what serves ``s`` or one of its subsections, and the notebook of ``s`` or
of the section above it. ``section_table()`` is the Markdown table README.md carries
(``python -m companion.sections`` prints it; tests/test_sections.py checks that README.md
holds the current one).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from companion.serves import section_key, served_sections

__all__ = ["Where", "where", "sections", "section_key", "cited_sections", "section_table"]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIRS = ("notebooks/ch08_inference_optimization", "notebooks/ch17_performance")
INTERVIEW = "17.11"           # the interview questions: 17_11_interview_questions

_CH8 = re.compile(r"\b8\.(\d)(?:\.(\d))?\b")
_CH8_RANGE = re.compile(r"\b8\.(\d)\.(\d)-8\.\1\.(\d)\b")
_CH17 = re.compile(r"§(\d+)(?:-§(\d+))?")
_NOTEBOOK = re.compile(r"^(08|17)_(\d\d?)_")


def cited_sections(text: str) -> set[str]:
    """The sections an exercise's ``section`` field names: "8.2.2-8.2.4" -> {"8.2.2", "8.2.3",
    "8.2.4"}; "17 §3 and §6" -> {"17.3", "17.6"}; "the interview" -> {"17.11"}."""
    out = set()
    for a, b, c in _CH8_RANGE.findall(text):
        out |= {f"8.{a}.{k}" for k in range(int(b), int(c) + 1)}
    for a, b in _CH8.findall(text):
        out.add(f"8.{a}" + (f".{b}" if b else ""))
    for a, b in _CH17.findall(text):
        out |= {f"17.{k}" for k in range(int(a), int(b or a) + 1)}
    if "interview" in text.lower():
        out.add(INTERVIEW)
    return out


@dataclass(frozen=True)
class Where:
    """What the companion has for one section; names as a notebook writes them."""

    section: str
    notebooks: tuple = ()      # paths from the repository root
    formulas: tuple = ()       # calc.X (and tables.X for the text tables)
    simulator: tuple = ()      # sim.X
    explorers: tuple = ()      # widgets.X (the slider panels)
    figures: tuple = ()        # plots.X
    ledger: tuple = ()         # ledger entry ids
    exercises: tuple = ()      # exercise ids ("8-4")
    inputs: tuple = ()         # chapters.chNN.NAME

    KINDS = ("notebooks", "formulas", "simulator", "explorers", "figures", "ledger",
             "exercises", "inputs")

    def __str__(self) -> str:
        lines = [f"Section {self.section}:"]
        for kind in self.KINDS:
            items = getattr(self, kind)
            lines.append(f"  {kind:10} " + (", ".join(items) if items else "-"))
        return "\n".join(lines)


def _public(module) -> list[tuple[str, object]]:
    return [(n, getattr(module, n)) for n in getattr(module, "__all__", [])
            if inspect.isfunction(getattr(module, n)) or inspect.isclass(getattr(module, n))]


def _own(module, obj) -> bool:
    """Defined in ``module`` (not a name it imports for convenience)."""
    return getattr(obj, "__module__", None) == module.__name__


def _submodules(package: str) -> list:
    pkg = importlib.import_module(package)
    return [importlib.import_module(f"{package}.{m.name}")
            for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]


def _notebooks(root: Path) -> dict[str, str]:
    """Notebook path -> its section ("8.3", "17.4"; the overviews "8" and "17")."""
    out = {}
    for folder in NOTEBOOK_DIRS:
        for path in sorted((root / folder).glob("*.py")):
            m = _NOTEBOOK.match(path.name)
            if m:
                chapter, number = str(int(m.group(1))), int(m.group(2))
                key = chapter if number == 0 else f"{chapter}.{number}"
                out[str(path.relative_to(root))] = key
    return out


@lru_cache(maxsize=None)
def _index(root: Path = ROOT) -> tuple[frozenset, tuple]:
    """(known sections, ((kind, name, sections), ...)) for the whole package."""
    from companion import calc, chapters, grading, ledger, plots, widgets
    from companion.explorers.base import Panel

    rows = []
    for e in ledger.entries():
        rows.append(("ledger", e.id, frozenset({section_key(e.section)})))
    for eid, ex in grading.exercises().items():
        rows.append(("exercises", eid, frozenset(cited_sections(ex.section))))
    for inp in chapters.inputs():
        rows.append(("inputs", f"{inp.module.removeprefix('companion.')}.{inp.name}",
                     frozenset(inp.sections)))
    for path, key in _notebooks(root).items():
        rows.append(("notebooks", path, frozenset({key})))
    known = frozenset(s for _, _, secs in rows for s in secs)

    def add(kind, name, obj):
        secs = frozenset(served_sections(obj))
        unknown = secs - known
        if unknown:
            raise ValueError(f"@serves: {name} names {sorted(unknown)}, which no notebook, "
                             f"ledger entry, exercise or input covers")
        if secs:
            rows.append((kind, name, secs))

    def named(facade, module, n):
        """``calc.X`` where the façade lists it, else its home (``sim.scenarios.X``)."""
        return (f"{facade.__name__.removeprefix('companion.')}.{n}" if n in facade.__all__
                else f"{module.__name__.removeprefix('companion.')}.{n}")

    for module in _submodules("companion.formulas"):
        for n, obj in _public(module):
            if _own(module, obj):
                add("formulas", named(calc, module, n), obj)
    tables = importlib.import_module("companion.tables")
    for n, obj in _public(tables):
        add("formulas", f"tables.{n}", obj)
    sim = importlib.import_module("companion.sim")
    for module in _submodules("companion.sim"):
        for n, obj in _public(module):
            if _own(module, obj):
                add("simulator", named(sim, module, n), obj)
    for module in _submodules("companion.explorers"):
        for n, obj in _public(module):
            if not _own(module, obj):
                continue
            if inspect.isclass(obj) and issubclass(obj, Panel):
                add("explorers", named(widgets, module, n), obj)
            else:
                add("figures", named(plots, module, n), obj)
    return known, tuple(rows)


def sections() -> list[str]:
    """Every section the companion knows, in the chapters' order."""
    known, _ = _index()
    return sorted(known, key=lambda s: [int(p) for p in s.split(".")])


def _within(cited: str, query: str) -> bool:
    return cited == query or cited.startswith(query + ".")


def where(section: str) -> Where:
    """What the companion has for ``section`` ("8.3.4", "8.3", "17.4" or "17 §4"): its
    notebook, formulas, simulator, explorers, figures, ledger entries, exercises and inputs."""
    key = section_key(section)
    known, rows = _index()
    if key not in known and not any(_within(s, key) for s in known):
        raise ValueError(f"section: the companion has nothing for {section!r}; known sections: "
                         f"{', '.join(sections())}")
    found = {kind: [] for kind in Where.KINDS}
    for kind, name, secs in rows:
        if kind == "notebooks":    # the section's notebook, or its parent's (not the overview)
            hit = any(_within(s, key) or ("." in s and _within(key, s)) for s in secs)
        else:
            hit = any(_within(s, key) for s in secs)
        if hit and name not in found[kind]:
            found[kind].append(name)
    return Where(section=key, **{k: tuple(v) for k, v in found.items()})


def _cell(items: tuple, limit: int = 6) -> str:
    names = [i.split(".")[-1] if not i.startswith("notebooks/") else Path(i).stem
             for i in items]
    if len(names) > limit:
        names = names[:limit] + [f"... {len(items) - limit} more"]
    return ", ".join(f"`{n}`" if not n.startswith("...") else n for n in names) or "-"


def section_table() -> str:
    """The Markdown table of every section (README.md's "Where each section lives")."""
    head = ("| section | notebook | formulas (`calc`) | simulator (`sim`) | explorers "
            "(`widgets`) | figures (`plots`) | ledger | exercises |")
    lines = [head, "|" + "---|" * 8]
    for s in sections():
        if "." not in s:          # a whole chapter: where("8") lists it all
            continue
        w = where(s)
        lines.append(f"| {s} | {_cell(w.notebooks, 2)} | {_cell(w.formulas)} | "
                     f"{_cell(w.simulator)} | {_cell(w.explorers)} | {_cell(w.figures)} | "
                     f"{len(w.ledger)} | {', '.join(w.exercises) or '-'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(section_table(), end="")
