"""The chapters' stated inputs: ``companion.chapters.ch08`` and ``companion.chapters.ch17``.

One home for every number a chapter gives rather than derives (a card's specification, a
request shape, a measured time, the data of a worked example or an exercise). Every other
module imports them from here: the specs presets, the formulas' defaults, the simulators'
scenarios, the ledger, the explorers and the exercises. Derived quantities are computed from
them, never typed in.

Each input is a module-level name followed by a string that gives its section and a short
phrase of the chapter (``"8.1.1: \\"...\\""``); :func:`inputs` reads them from the source.

The rule a test enforces (``tests/test_architecture.py``): a *distinctive* input value may not
appear as a number literal in any other module of ``companion/``, nor in the notebooks',
solutions' and dashboard's code. A value is distinctive when it has at least three
significant digits and is not a power of two (6144, 26.26 ms, 12 GiB, 503.8 TFLOP/s are;
16, 2048, 0.5, 6 ms are not: they recur for reasons of their own). Literals are compared
after folding unit products (``26.26 * ms``, ``12 * GiB``) and in the usual display units
(26.26 for 26.26 ms, 864 for 864 MiB). Values that are not distinctive are still defined
once here; the test cannot tell their repeats from coincidences, so reviews must.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Input", "inputs", "CHAPTER_MODULES"]

CHAPTER_MODULES = {"8": "companion.chapters.ch08", "17": "companion.chapters.ch17"}

_SECTION_8 = re.compile(r"\b8\.\d(?:\.\d)?\b")
_SECTION_17 = re.compile(r"§(\d+)")
_EXERCISE = re.compile(r"Exercise (\d+-\d+)")


@dataclass(frozen=True)
class Input:
    """One stated input: where it is defined, its value, and where the chapter states it."""

    chapter: str          # "8" or "17"
    name: str             # the name in its chapter module
    value: object
    where: str            # the text before the first colon: "8.3.4, footnote 28", "§4", ...
    quote: str            # the chapter's phrase, between the first pair of double quotes
    assumed: bool         # the companion's assumption where the chapter gives no number
    sections: tuple       # sections the input belongs to: ("8.3.4",), ("17.4", "17.7"), ...
    exercises: tuple      # exercises that state it: ("8-1",) ...

    @property
    def module(self) -> str:
        return CHAPTER_MODULES[self.chapter]


def _sections(chapter: str, where: str) -> tuple:
    if chapter == "8":
        found = _SECTION_8.findall(where)
    else:
        found = [f"17.{n}" for n in _SECTION_17.findall(where)]
    return tuple(dict.fromkeys(found)) or (chapter,)


@lru_cache(maxsize=None)
def _read(chapter: str) -> tuple:
    import ast
    import inspect

    module = importlib.import_module(CHAPTER_MODULES[chapter])
    tree = ast.parse(inspect.getsource(module))
    found = []
    body = tree.body
    for node, after in zip(body, body[1:] + [None]):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        doc = (after.value.value if isinstance(after, ast.Expr)
               and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)
               else None)
        if doc is None:
            raise ValueError(f"{module.__name__}.{name}: no string after it giving its section "
                             f"and the chapter's phrase")
        where, _, rest = doc.partition(":")
        quote = re.search(r'"([^"]+)"', doc)
        found.append(Input(chapter=chapter, name=name, value=getattr(module, name),
                           where=where.strip(), quote=quote.group(1) if quote else "",
                           assumed="(assumed)" in where, sections=_sections(chapter, where),
                           exercises=tuple(_EXERCISE.findall(where))))
    return tuple(found)


def inputs(chapter: str | None = None) -> list[Input]:
    """Every stated input of Chapter ``chapter`` ("8" or "17"), or of both, in source order."""
    if chapter is None:
        return [i for c in CHAPTER_MODULES for i in _read(c)]
    if chapter not in CHAPTER_MODULES:
        raise ValueError(f"chapter: expected one of {sorted(CHAPTER_MODULES)}, got {chapter!r}")
    return list(_read(chapter))
