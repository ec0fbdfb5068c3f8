"""Closed forms: performance (filled in per the module's sections)."""

from __future__ import annotations

__all__: list[str] = []
