"""The ledger: every quantitative claim of Chapters 8 and 17, re-derived.

Each entry keeps the number exactly as the chapter prints it (a string, so "615.0" keeps its
trailing zero), its unit, and the value the companion recomputes in that same unit through
``calc`` or ``sim``; never a copy of the printed number. An entry *agrees* when the recomputed
value lies within the printed rounding (half a unit in the last printed digit), or within an
explicitly declared looser rounding, which must then carry a ``note`` saying why (significant
figures, an unstated efficiency, a rounded intermediate, a slip in the chapter).

Entries live in the modules of ``companion.ledger_entries`` (one per chapter section), each
exposing ``entries() -> list[Entry]``; this module collects them.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Entry", "entry", "entries", "by_section", "sections", "disagreements", "table",
           "printed_decimals"]

_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")


def _parse_printed(printed: str) -> float:
    if not isinstance(printed, str):
        raise TypeError(f"printed: keep the number as the chapter prints it, as a string "
                        f"(got {type(printed).__name__} {printed!r})")
    s = printed.strip()
    if not _NUMBER.match(s):
        raise ValueError(f"printed: {printed!r} is not a plain number as printed "
                         f"(digits, optional thousands commas, optional decimals)")
    return float(s.replace(",", ""))


def printed_decimals(printed: str) -> int:
    """Digits after the decimal point in a printed number ("6.95" -> 2, "131,328" -> 0)."""
    s = printed.strip().replace(",", "")
    mantissa = s.split("e")[0].split("E")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _exponent(printed: str) -> int:
    s = printed.strip().lower()
    return int(s.split("e")[1]) if "e" in s else 0


@dataclass(frozen=True)
class Entry:
    """One printed number and its recomputation."""

    id: str
    section: str
    claim: str
    printed: str
    unit: str
    value: float
    tolerance: float
    note: str = ""
    rounding: str = "printed"  # "printed" or a description of the declared looser rounding
    source: str = "calc"       # "calc" or "sim"

    @property
    def printed_value(self) -> float:
        return _parse_printed(self.printed)

    @property
    def error(self) -> float:
        return self.value - self.printed_value

    @property
    def agrees(self) -> bool:
        if not math.isfinite(self.value):
            return False
        return abs(self.error) <= self.tolerance * (1 + 1e-9) + 1e-12

    def as_row(self) -> dict:
        return {"id": self.id, "section": self.section, "claim": self.claim,
                "printed": self.printed, "unit": self.unit, "value": self.value,
                "agrees": self.agrees, "note": self.note, "source": self.source}


def entry(id: str, section: str, claim: str, printed: str, unit: str, value: float, *,
          note: str = "", sig: int | None = None, tol: float | None = None,
          rel: float | None = None, source: str = "calc") -> Entry:
    """Make an Entry. By default the tolerance is the printed rounding: half a unit in the last
    printed digit. ``sig`` (significant figures), ``tol`` (absolute, in ``unit``) or ``rel``
    (relative) declare a looser rounding and require a ``note`` explaining it."""
    pv = _parse_printed(printed)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"value of {id}: expected a number, got {type(value).__name__}") from None
    value = float(value)
    default_tol = 0.5 * 10.0 ** (_exponent(printed) - printed_decimals(printed))
    declared = [x is not None for x in (sig, tol, rel)]
    if sum(declared) > 1:
        raise ValueError(f"{id}: declare at most one of sig, tol, rel")
    if any(declared) and not note:
        raise ValueError(f"{id}: a declared rounding (sig/tol/rel) needs a note saying why")
    if sig is not None:
        if pv == 0:
            raise ValueError(f"{id}: sig makes no sense for a printed zero")
        tolerance = 0.5 * 10.0 ** (math.floor(math.log10(abs(pv))) - sig + 1)
        rounding = f"{sig} significant figures"
    elif tol is not None:
        tolerance, rounding = float(tol), f"within {tol:g} {unit}"
    elif rel is not None:
        tolerance, rounding = abs(pv) * float(rel), f"within {rel:.1%}"
    else:
        tolerance, rounding = default_tol, "printed"
    if source not in ("calc", "sim"):
        raise ValueError(f"source: expected 'calc' or 'sim', got {source!r}")
    return Entry(id=id, section=section, claim=claim, printed=printed, unit=unit, value=value,
                 tolerance=max(tolerance, default_tol), note=note, rounding=rounding,
                 source=source)


def _section_key(section: str):
    parts = []
    for p in section.split("."):
        parts.append(int(p) if p.isdigit() else p)
    return parts


@lru_cache(maxsize=1)
def _collect() -> tuple[Entry, ...]:
    import companion.ledger_entries as pkg

    found: list[Entry] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        found.extend(module.entries())
    ids = [e.id for e in found]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RuntimeError(f"ledger: duplicate entry ids {dupes}")
    found.sort(key=lambda e: _section_key(e.section))
    return tuple(found)


def entries() -> list[Entry]:
    """Every entry of both chapters, in section order."""
    return list(_collect())


def sections() -> list[str]:
    return sorted({e.section for e in _collect()}, key=_section_key)


def by_section(prefix: str) -> list[Entry]:
    """Entries whose section is ``prefix`` or lies under it ("8.3" gives 8.3.1, 8.3.2, ...)."""
    return [e for e in _collect() if e.section == prefix or e.section.startswith(prefix + ".")]


def disagreements() -> list[Entry]:
    return [e for e in _collect() if not e.agrees]


def _fmt_value(x: float, printed: str) -> str:
    """One digit more than printed, so the reader sees how the rounding went; whole numbers
    that the chapter prints as whole numbers stay whole."""
    d = printed_decimals(printed)
    if d == 0 and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.{d + 1}f}"


def table(prefix: str | None = None, *, ids=None) -> str:
    """A plain-text "chapter says / companion computes" table for a section (or chosen ids)."""
    rows = _collect() if prefix is None else by_section(prefix)
    if ids is not None:
        wanted = list(ids)
        rows = [e for e in rows if e.id in wanted]
    lines = [f"{'section':8} {'claim':48} {'chapter':>12} {'companion':>14} {'unit':8} ok"]
    for e in rows:
        mark = "yes" if e.agrees else "NO"
        if e.note:
            mark += " *"
        lines.append(f"{e.section:8} {e.claim[:48]:48} {e.printed:>12} "
                     f"{_fmt_value(e.value, e.printed):>14} {e.unit[:8]:8} {mark}")
    if any(e.note for e in rows):
        lines.append("* see the entry's note (ledger.by_section(...)[i].note)")
    return "\n".join(lines)
