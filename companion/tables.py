"""Re-derived tables as plain text, for notebooks to print: 17 §6's batching decision table,
17 §10's levers, mechanism -> lever map and cheat sheet, and 8.2's measured batch sweep.

The rows come from ``companion.calc`` (``batching_decision_table``, ``levers_table``,
``mechanism_lever_map``, ``cheat_sheet``); this module only lays them out in fixed-width
columns and the chapters' display units. No plotting library, no widgets.
"""

from __future__ import annotations

import math
import textwrap

from companion import calc, units
from companion import validate as v
from companion.formulas.levers import mechanism_lever_map
from companion.formulas.performance import batching_decision_table
from companion.serves import serves

__all__ = ["text_table", "markdown_table", "decision_table_text", "decision_table_markdown",
           "levers_text", "mechanism_map_text", "cheat_sheet_text"]


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width) or [""]


def text_table(headers, rows, widths) -> str:
    """A plain-text table whose cells wrap inside fixed column widths."""
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [_wrap(str(c), w) for c, w in zip(row, widths)]
        for i in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[i] if i < len(c) else "").ljust(w)
                                   for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


_DECISION_HEADERS = ("strategy", "who may join, when", "fixes", "costs", "fits")


def _decision_rows(**inputs) -> list[tuple]:
    return [(r["strategy"], r["joins"], r["fixes"], r["costs"], r["fits"])
            for r in batching_decision_table(**inputs)]


@serves("17.6")
def decision_table_text(**inputs) -> str:
    """``calc.batching_decision_table(**inputs)`` as a plain-text table (17 §6, re-derived)."""
    return text_table(_DECISION_HEADERS, _decision_rows(**inputs), (11, 22, 24, 26, 24))


def markdown_table(headers, rows) -> str:
    """A Markdown (pipe) table; a ``|`` inside a cell is escaped."""
    def cell(x):
        return str(x).replace("|", "\\|")
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def decision_table_markdown(**inputs) -> str:
    """``calc.batching_decision_table(**inputs)`` as a Markdown table, for ``display.md``."""
    return markdown_table(_DECISION_HEADERS, _decision_rows(**inputs))


def _display(value, unit) -> str:
    """A value of ``calc.levers_table`` / ``calc.cheat_sheet`` in the chapter's display units."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        return f"{value / units.ms:,.3g} ms"
    if unit in ("B", "B per token"):
        if 0 < value < 1e6:
            return f"{value / units.KiB:,.0f} KiB"
        return f"{value / units.GB:,.3g} GB"
    if unit is not None and unit.startswith("fraction"):
        return f"{100 * value:.2g}%"
    if unit == "x card memory":
        return f"{value:.2f}x card"
    if unit in ("tok/s",):
        return f"{value:,.0f} tok/s"
    if value == 0 and unit in _COUNT_UNITS:
        return "none"                  # e.g. no sequence fits beside weights that do not fit
    if abs(value) >= 1e4:
        return f"{value:,.0f} {unit}"
    return f"{value:,.4g} {_singular(unit) if value == 1 else unit}"


# units that count things: "0 sequences" reads as "none", "1 GPUs" as "1 GPU"
_COUNT_UNITS = ("tokens", "GPUs", "sequences", "tokens per pass")


def _singular(unit: str) -> str:
    """``unit`` for exactly one thing: the plural "s" of its first word dropped."""
    if unit not in _COUNT_UNITS:
        return unit
    first, _, rest = unit.partition(" ")
    return " ".join(filter(None, (first[:-1], rest)))


@serves("17.10")
def levers_text(model, hardware) -> str:
    """``calc.levers_table(model, hardware)`` as text: symptom, lever, what it changes, and the
    chapter's arithmetic before -> after for this model and card (17 §10, re-derived)."""
    rows = []
    for r in calc.levers_table(model, hardware):
        if r["before"] is None and r["after"] is None:
            change = "-"
        elif r["before"] is None:
            change = _display(r["after"], r["unit"])
        else:
            change = f"{_display(r['before'], r['unit'])} -> {_display(r['after'], r['unit'])}"
        rows.append((r["symptom"], r["lever"], r["changes"], change, r["section"]))
    return text_table(("symptom", "lever", "what it changes", "arithmetic", "where"), rows,
                      (24, 24, 24, 24, 6))


@serves("17.10")
def mechanism_map_text() -> str:
    """``calc.mechanism_lever_map()`` as text (17 §10, re-derived)."""
    rows = [(r["mechanism"], r["lever"], r["section"]) for r in mechanism_lever_map()]
    return text_table(("mechanism", "lever", "where"), rows, (46, 40, 10))


@serves("17.10")
def cheat_sheet_text(models, hardware) -> str:
    """``calc.cheat_sheet`` for several models side by side, in display units (17 §10)."""
    seq = v.sequence("models", models)
    sheets = [calc.cheat_sheet(m, hardware) for m in seq]
    headers = ("quantity",) + tuple(m.name.split(" (")[0] for m in seq) + ("where",)
    rows = []
    for i, row in enumerate(sheets[0]):
        rows.append((row["quantity"],) + tuple(_display(s[i]["value"], s[i]["unit"])
                                               for s in sheets) + (row["section"],))
    widths = (44,) + (18,) * len(seq) + (6,)
    return text_table(headers, rows, widths)
