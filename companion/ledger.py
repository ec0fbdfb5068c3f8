"""The ledger: every quantitative claim of Chapters 8 and 17, re-derived.

Each entry keeps the number exactly as the chapter prints it (a string, so "615.0" keeps its
trailing zero), its unit, and the value the companion recomputes in that same unit through
``calc`` or ``sim``; never a copy of the printed number. An entry *agrees* when the recomputed
value lies within the printed rounding (half a unit in the last printed digit), or within an
explicitly declared looser rounding, which must then carry a ``note`` saying why (significant
figures, an unstated efficiency, a rounded intermediate, a slip in the chapter).

An entry's ``status`` is "agrees" (within the printed rounding), "≈" (only within its declared
looser rounding; ``reason`` gives the rounding and the note) or "disagrees" (an erratum).
``show`` (the section notebooks: one folded table, each printed number once), ``table`` (plain
text) and ``html_table`` (the ledger notebook: every entry) show it, in the entry's display unit
(``display_number``: "3.35e12" B/s reads 3.35 TB/s).

Entries live in the modules of ``companion.ledger_entries`` (one per chapter section), each
exposing ``entries() -> list[Entry]``; this module collects them.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from companion import theme

__all__ = ["Entry", "entry", "entries", "by_section", "sections", "disagreements", "table",
           "html_table", "show", "folded_rows", "printed_decimals", "display_number"]

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

    @property
    def printed_tolerance(self) -> float:
        """Half a unit in the last printed digit: the tolerance of a plain "agrees"."""
        return 0.5 * 10.0 ** (_exponent(self.printed) - printed_decimals(self.printed))

    @property
    def approximate(self) -> bool:
        """Agrees only under the declared looser rounding, not at the printed one."""
        return self.agrees and not abs(self.error) <= self.printed_tolerance * (1 + 1e-9) + 1e-12

    @property
    def status(self) -> str:
        """"agrees" (within the printed rounding), "≈" (only within the declared, looser
        rounding: ``reason`` says why) or "disagrees" (an erratum: the note works it out)."""
        if not self.agrees:
            return "disagrees"
        return "≈" if self.approximate else "agrees"

    @property
    def reason(self) -> str:
        """Why an entry is "≈" or "disagrees": the declared rounding and the note ("" for a
        plain agreement)."""
        if self.status == "agrees":
            return ""
        if self.status == "≈":
            return f"agrees {self.rounding_text}, not at the printed rounding: {self.note}"
        return self.note if self.note.lower().startswith("erratum") else f"Erratum: {self.note}"

    @property
    def rounding_text(self) -> str:
        """The declared rounding in words, in the entry's display unit ("within 10 ms of the
        printed 370", "to 2 significant figures (printed 260)")."""
        chapter, scale, unit, _ = display_number(self.printed, self.unit)
        printed = f"{chapter} {unit}"
        if self.rounding == "printed":
            return f"to the printed rounding of {printed}"
        if self.rounding.startswith("within") and not self.rounding.endswith("%"):
            return f"within {self.tolerance / scale:g} {unit} of the printed {printed}"
        if self.rounding.startswith("within"):
            return f"{self.rounding} of the printed {printed}"
        return f"to {self.rounding} (printed {printed})"

    def as_row(self) -> dict:
        return {"id": self.id, "section": self.section, "claim": self.claim,
                "printed": self.printed, "unit": self.unit, "value": self.value,
                "agrees": self.agrees, "status": self.status, "note": self.note,
                "source": self.source}


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


def _under(section: str, prefix: str) -> bool:
    """``section`` is ``prefix`` or lies under it ("8.3.2" is under "8.3", "17.10" not under
    "17.1")."""
    return section == prefix or section.startswith(prefix + ".")


@lru_cache(maxsize=1)
def _modules() -> tuple:
    """Every entry module (name order), imported: cheap, nothing is computed yet."""
    import companion.ledger_entries as pkg

    return tuple(importlib.import_module(f"{pkg.__name__}.{info.name}")
                 for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name)
                 if not info.name.startswith("_"))


@lru_cache(maxsize=None)
def _module_entries(module) -> tuple[Entry, ...]:
    return tuple(module.entries())


@lru_cache(maxsize=None)
def _collect(prefixes: frozenset | None = None) -> tuple[Entry, ...]:
    """The entries, in section order: all of them, or (``prefixes``) those of the modules whose
    ``SECTIONS`` may hold an entry under one of the prefixes. A section notebook asks only for
    its own: computing every module (the 8.3.4 agent replay and the 8.4.4 precision sweep
    among them) took about 2 s of each such notebook's run. Cached per set of prefixes, as the
    whole collection was before."""
    found: list[Entry] = []
    for module in _modules():
        if prefixes is not None and not any(_under(d, p) or _under(p, d)
                                            for d in module.SECTIONS for p in prefixes):
            continue
        found.extend(_module_entries(module))
    if prefixes is None:
        dupes = sorted(i for i, n in Counter(e.id for e in found).items() if n > 1)
        if dupes:
            raise RuntimeError(f"ledger: duplicate entry ids {dupes}")
    found.sort(key=lambda e: _section_key(e.section))
    return tuple(found)


def entries() -> list[Entry]:
    """Every entry of both chapters, in section order.

    Each entry holds the number as the chapter prints it, in the chapter's unit, and the value
    the companion recomputes in that unit: 2048 tokens of Qwen3-8B's KV are 288 MiB (8.1.2).

    >>> from companion import ledger
    >>> e = next(e for e in ledger.entries() if e.id == "8.1.2/kv-2048-MiB")
    >>> e.section, e.printed, e.unit, e.value, e.agrees
    ('8.1.2', '288', 'MiB', 288.0, True)
    """
    return list(_collect())


def sections() -> list[str]:
    return sorted({e.section for e in _collect()}, key=_section_key)


def by_section(prefix: str) -> list[Entry]:
    """Entries whose section is ``prefix`` or lies under it ("8.3" gives 8.3.1, 8.3.2, ...)."""
    return [e for e in _collect(frozenset([prefix])) if _under(e.section, prefix)]


def disagreements() -> list[Entry]:
    return [e for e in _collect() if not e.agrees]


_SI_UNITS = ("B", "B/s", "bytes", "bytes/s", "FLOP", "FLOP/s")
_SI_PREFIXES = {3: "K", 6: "M", 9: "G", 12: "T", 15: "P"}
_UNIT_WORDS = {"bytes": "B", "bytes/s": "B/s"}


def display_number(printed: str, unit: str) -> tuple[str, float, str, int]:
    """How the ledger shows an entry: ``(chapter's number, scale, unit, decimals)``.

    A number printed with an exponent ("3.35e12" B/s, "128e12" FLOP) is shown in the SI unit
    its size calls for ("3.35" TB/s, "128" TFLOP), with the printed digits kept; a unit without
    SI prefixes keeps the exponent in the unit ("x 1e12"). Anything else is shown as printed.
    A value in the entry's unit is displayed as ``value / scale`` with ``decimals`` digits (one
    more than the chapter printed, so the reader sees how the rounding went)."""
    pv = _parse_printed(printed)
    if not isinstance(unit, str):
        raise TypeError(f"unit: expected a string, got {type(unit).__name__}")
    exp = _exponent(printed)
    decimals = printed_decimals(printed)
    if exp == 0:
        return printed.strip(), 1.0, unit, decimals
    magnitude = math.floor(math.log10(abs(pv))) if pv else 0
    if unit in _SI_UNITS:
        power = min(max(3 * (magnitude // 3), 0), 15)
        base = _UNIT_WORDS.get(unit, unit)
        shown_unit = (_SI_PREFIXES.get(power, "") + base) if power else base
    else:
        power, shown_unit = exp, f"x 1e{exp} {unit}"
    scale = 10.0 ** power
    shown_decimals = max(0, decimals + power - exp)
    return f"{pv / scale:,.{shown_decimals}f}", scale, shown_unit, shown_decimals


def _fmt_value(x: float, printed: str, unit: str = "") -> str:
    """The companion's value in the entry's display unit, one digit more than printed; whole
    numbers that the chapter prints as whole numbers stay whole."""
    _, scale, _, d = display_number(printed, unit)
    x = x / scale
    plain_whole = printed_decimals(printed) == 0 and _exponent(printed) == 0
    if d == 0 and plain_whole and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.{d + 1}f}"


def _rows(prefix: str | None, ids) -> list[Entry]:
    if prefix is not None:
        rows = by_section(prefix)
    elif ids is not None:
        # an entry's id starts with its section ("8.3.2/branch-references"; tests/test_ledger)
        rows = list(_collect(frozenset(i.split("/")[0] for i in ids)))
    else:
        rows = list(_collect())
    if ids is not None:
        wanted = list(ids)
        rows = [e for e in rows if e.id in wanted]
    return rows


_MARKS = {"agrees": "yes", "≈": "≈", "disagrees": "NO"}
_CLAIM_WIDTH = 48


def table(prefix: str | None = None, *, ids=None) -> str:
    """A plain-text "chapter says / companion computes" table for a section (or chosen ids).

    The ok column reads "yes" (agrees at the printed rounding), "≈" (agrees only within a
    declared looser rounding) or "NO" (an erratum); "*" marks a note. Under the table each
    "≈" and "NO" row gets its reason. Long claims wrap inside their column."""
    import textwrap

    rows = _rows(prefix, ids)
    width = max([8] + [len(display_number(e.printed, e.unit)[2]) for e in rows])
    lines = [f"{'section':8} {'claim':{_CLAIM_WIDTH}} {'chapter':>12} {'companion':>14} "
             f"{'unit':{width}} ok"]
    reasons = []
    for e in rows:
        chapter, _, unit, _ = display_number(e.printed, e.unit)
        mark = _MARKS[e.status]
        if e.status != "agrees":
            reasons.append(e)
            mark += f" [{len(reasons)}]"
        elif e.note:
            mark += " *"
        claim = textwrap.wrap(e.claim, _CLAIM_WIDTH, break_on_hyphens=False) or [""]
        lines.append(f"{e.section:8} {claim[0]:{_CLAIM_WIDTH}} {chapter:>12} "
                     f"{_fmt_value(e.value, e.printed, e.unit):>14} {unit:{width}} {mark}")
        lines += [f"{'':8} {more}" for more in claim[1:]]
    for n, e in enumerate(reasons, 1):
        lines += textwrap.wrap(f"[{n}] {e.id} {e.status}: {e.reason}", 96,
                               subsequent_indent="    ", break_on_hyphens=False,
                               break_long_words=False)
    if any(e.note and e.status == "agrees" for e in rows):
        lines.append("* see the entry's note (ledger.by_section(...)[i].note)")
    return "\n".join(lines)


_HTML_STATUS = {"agrees": ("agrees", "✓"), "≈": ("approximate", "≈"),
                "disagrees": ("erratum", "✗ erratum")}


def _note_html(e: Entry) -> str:
    """An entry's note as the HTML tables show it: an erratum's reason in bold, a looser
    rounding named before its note, else the note as it is."""
    from html import escape

    if e.status == "≈":
        return f"<em>{escape(e.rounding_text)}:</em> {escape(e.note)}"
    if e.status == "disagrees":
        return f"<strong>{escape(e.reason)}</strong>"
    return escape(e.note)


# The ledger tables' style, sent with each table (the project has no JupyterLab extension, and
# the book shows the same output): scoped to the tables' class. Columns: claim, chapter,
# companion, unit, verdict, [checked by,] note. A short claim stays on one line, the numbers
# sit right, the headers are set off from the rows, and the note takes the rest of the width.
LEDGER_CSS = (
    "table.companion-ledger{border-collapse:collapse;font-size:0.82em;line-height:1.35;"
    "margin:0.4em 0 0.8em;width:auto;max-width:100%}"
    "table.companion-ledger th,table.companion-ledger td{padding:0.25em 0.4em;"
    "vertical-align:top;text-align:right;border:none;"
    f"border-bottom:1px solid {theme.css_rgba(theme.RULE_GREY, 0.25)}}}"
    "table.companion-ledger thead th{white-space:nowrap;font-weight:600;"
    f"border-bottom:2px solid {theme.css_rgba(theme.RULE_GREY, 0.7)};vertical-align:bottom}}"
    "table.companion-ledger tbody th{padding-top:0.7em;"
    f"border-bottom:1px solid {theme.css_rgba(theme.RULE_GREY, 0.5)}}}"
    "table.companion-ledger td:first-child{text-align:left;min-width:16em}"
    "table.companion-ledger td:nth-child(2),table.companion-ledger td:nth-child(3)"
    "{white-space:nowrap;font-variant-numeric:tabular-nums}"
    "table.companion-ledger th:nth-child(4),table.companion-ledger td:nth-child(4)"
    "{text-align:left}"
    "table.companion-ledger td:nth-child(5){white-space:nowrap;text-align:center}"
    "table.companion-ledger td.by{text-align:left;min-width:4.5em}"
    "table.companion-ledger th:last-child,table.companion-ledger td:last-child"
    "{text-align:left;min-width:11em}"
    f"table.companion-ledger tr.erratum td{{background:{theme.css_rgba(theme.ERRATUM_RED, 0.07)}}}"
    "details.companion-ledger>summary{cursor:pointer}")
LEDGER_STYLE = f"<style>{LEDGER_CSS}</style>"


def html_table(prefix: str | None = None, *, ids=None) -> str:
    """The entries as one HTML table grouped by section: the full claim, the chapter's number
    and the companion's in the entry's display unit (``display_number``), the verdict ("✓",
    "≈" or "✗ erratum") and the note, visible in its row (for "≈" the declared rounding too).
    Deterministic: the same entries give the same text (notebooks store it; nbval compares)."""
    from html import escape

    rows = _rows(prefix, ids)
    out = [LEDGER_STYLE, '<table class="companion-ledger">',
           '<thead><tr><th style="text-align:left">claim</th><th>chapter</th><th>companion</th>'
           '<th>unit</th><th>verdict</th><th style="text-align:left">note</th></tr></thead>',
           "<tbody>"]
    section = None
    for e in rows:
        if e.section != section:
            section = e.section
            out.append(f'<tr><th colspan="6" style="text-align:left">{escape(section)}</th></tr>')
        chapter, _, unit, _ = display_number(e.printed, e.unit)
        css, verdict = _HTML_STATUS[e.status]
        note = _note_html(e)
        value = _fmt_value(e.value, e.printed, e.unit)
        out.append(f'<tr class="{css}"><td style="text-align:left">{escape(e.claim)}</td>'
                   f"<td>{escape(chapter)}</td><td>{escape(value)}</td>"
                   f'<td style="white-space:nowrap">{escape(unit)}</td><td>{verdict}</td>'
                   f'<td style="text-align:left">{note}</td></tr>')
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


# --- the section notebooks' view: each printed number once, folded -------------------------------

_SOURCE_WORDS = {"calc": "closed form", "sim": "simulator"}


def folded_rows(prefix: str | None = None, *, ids=None) -> list[list[Entry]]:
    """The entries of ``prefix`` (or ``ids``) with each printed number once: a simulator entry
    joins the closed-form entry of the same section that prints the same number in the same
    unit (the first such one not yet joined, in ledger order), so a claim that both the formula
    and the simulator re-derive is one row checked two ways. Every entry lands in exactly one
    group; each group's first entry is the one its row shows."""
    rows = _rows(prefix, ids)
    groups: list[list[Entry]] = []
    open_calc: dict[tuple, list[list[Entry]]] = {}
    for e in rows:
        if e.source == "calc":
            groups.append([e])
            open_calc.setdefault((e.section, e.printed, e.unit), []).append(groups[-1])
    for e in rows:
        if e.source != "sim":
            continue
        waiting = open_calc.get((e.section, e.printed, e.unit), [])
        partner = next((g for g in waiting if len(g) == 1), None)
        if partner is None:
            groups.append([e])
        else:
            partner.append(e)
    order = {e.id: i for i, e in enumerate(rows)}
    groups.sort(key=lambda g: order[g[0].id])
    return groups


class LedgerView:
    """What ``show`` returns: in JupyterLab and the book an HTML table folded under a one-line
    summary (open when it holds an erratum); as plain text the summary alone."""

    def __init__(self, groups: list[list[Entry]], label: str):
        self.groups = groups
        self.label = label

    def _counts(self) -> dict[str, int]:
        counts = {"agrees": 0, "≈": 0, "disagrees": 0}
        for g in self.groups:
            counts[_group_status(g)] += 1
        return counts

    def summary(self) -> str:
        c = self._counts()
        n = len(self.groups)
        parts = [f"{c['agrees']} at the printed rounding"]
        if c["≈"]:
            parts.append(f"{c['≈']} only at a looser, stated rounding")
        if c["disagrees"]:
            parts.append(f"{c['disagrees']} errat{'a' if c['disagrees'] > 1 else 'um'}")
        twice = sum(len(g) > 1 for g in self.groups)
        also = f": {twice} of the numbers by the simulator as well" if twice else ""
        return (f"Ledger, {self.label}: {n} printed number{'s' if n != 1 else ''} re-derived, "
                f"{', '.join(parts)} ({sum(len(g) for g in self.groups)} checks{also})")

    def __repr__(self) -> str:
        return (self.summary() + ". The table opens under this line in JupyterLab and the book; "
                "ledger.ipynb lists every entry.")

    def _repr_html_(self) -> str:
        from html import escape

        c = self._counts()
        out = [f'<details class="companion-ledger"{" open" if c["disagrees"] else ""}>',
               f"<summary>{escape(self.summary())}</summary>", LEDGER_STYLE,
               '<table class="companion-ledger">',
               '<thead><tr><th style="text-align:left">claim</th><th>chapter</th>'
               '<th>companion</th><th>unit</th><th>verdict</th><th>checked by</th>'
               '<th style="text-align:left">note</th></tr></thead>', "<tbody>"]
        first_with: dict[str, str] = {}     # a note's HTML -> the claim of the row showing it
        for g in self.groups:
            e = g[0]
            chapter, _, unit, _ = display_number(e.printed, e.unit)
            css, verdict = _HTML_STATUS[_group_status(g)]
            notes = []
            for i, member in enumerate(g):
                # a plain note that an earlier member of the row already carries is not repeated
                if member.status != "agrees" or (
                        member.note and member.note not in [m.note for m in g[:i]]):
                    note = _note_html(member)
                    # nor is a note an earlier row of this listing shows: it points there
                    if note in first_with:
                        note = f"(see the note on “{escape(first_with[note])}” above)"
                    else:
                        first_with[note] = e.claim
                    notes.append(note)
            values = sorted({_fmt_value(m.value, m.printed, m.unit) for m in g})
            by = " + ".join(_SOURCE_WORDS[m.source] for m in g)
            out.append(f'<tr class="{css}"><td style="text-align:left">{escape(e.claim)}</td>'
                       f"<td>{escape(chapter)}</td><td>{escape(' / '.join(values))}</td>"
                       f'<td style="white-space:nowrap">{escape(unit)}</td><td>{verdict}</td>'
                       f'<td class="by">{escape(by)}</td>'
                       f'<td style="text-align:left">{" ".join(notes)}</td></tr>')
        out += ["</tbody>", "</table>", "</details>"]
        return "\n".join(out)


def _group_status(group: list[Entry]) -> str:
    statuses = {e.status for e in group}
    for worst in ("disagrees", "≈"):
        if worst in statuses:
            return worst
    return "agrees"


def show(prefix: str | None = None, *, ids=None, label: str | None = None) -> LedgerView:
    """The section notebooks' ledger listing: ``folded_rows`` as one table folded under its
    summary (errata keep it open), each note in its row, so nothing repeats on the page: a note
    that several rows share is printed in the first and pointed to from the others."""
    groups = folded_rows(prefix, ids=ids)
    if not groups:
        raise ValueError(f"ledger.show: no entry for {prefix if ids is None else ids!r}")
    if label is None:
        label = f"section {prefix}" if prefix else "selected claims"
    return LedgerView(groups, label)
