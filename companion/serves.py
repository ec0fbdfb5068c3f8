"""The sections of the chapters a piece of code serves, stated once, next to the code.

``@serves("8.3.4")`` above a public function or class records the sections it computes, draws
or explains; ``companion.where("8.3.4")`` reads these marks (never the docstrings' prose).
A section is "8.x.y" (or "8.x") for Chapter 8 and "17.N" or "17 §N" for Chapter 17. This module
imports nothing of the companion but ``validate``, so every layer can use it.
"""

from __future__ import annotations

import re

from companion import validate as v

__all__ = ["serves", "served_sections", "section_key"]


def section_key(text: str) -> str:
    """"17 §4", "§4", "17.4" -> "17.4"; "8.3.4" -> "8.3.4" (whitespace ignored)."""
    s = v.instance("section", text, str, "a string such as '8.3.4' or '17 §4'").strip()
    m = re.fullmatch(r"(?:17\s*)?§\s*(\d+)", s)
    if m:
        return f"17.{int(m.group(1))}"
    m = re.fullmatch(r"(8|17)(?:\.(\d+))?(?:\.(\d+))?", s)
    if not m:
        raise ValueError(f"section: expected a section such as '8.3.4', '8.3', '17.4' or "
                         f"'17 §4', got {text!r}")
    return ".".join(str(int(g)) for g in m.groups() if g is not None)


def serves(*sections: str):
    """Decorator: mark a function or class as serving ``sections`` ("8.3.4", "17 §6", ...)."""
    if not sections:
        raise ValueError("sections: name at least one section, such as '8.3.4' or '17 §4'")
    keys = tuple(dict.fromkeys(section_key(s) for s in sections))

    def mark(obj):
        obj.__serves__ = keys
        return obj
    return mark


def served_sections(obj) -> tuple[str, ...]:
    """The sections ``obj`` was marked with (a class's own mark, not one it inherits)."""
    if isinstance(obj, type):
        return vars(obj).get("__serves__", ())
    return getattr(obj, "__serves__", ())
