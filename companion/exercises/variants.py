"""Helpers the exercise modules share: per-student variants (seed 0 is always the chapter's
data) and answers in display units."""

from __future__ import annotations

from companion import units
from companion.seeds import pick, rng_for

__all__ = ["variant", "gb", "ms", "pct"]


def variant(exercise_id: str, seed: int, chapter: dict, options: dict) -> dict:
    """Seed 0: the chapter's values; other seeds: one pick per key from ``options``."""
    if seed == 0:
        return dict(chapter)
    rng = rng_for(exercise_id, seed)
    return {key: pick(rng, list(opts)) for key, opts in options.items()}


def gb(x: float) -> float:
    """Bytes -> GB (decimal), for an answer stated in GB."""
    return x / units.GB


def ms(x: float) -> float:
    """Seconds -> ms, for an answer stated in ms."""
    return x / units.ms


def pct(x: float) -> float:
    """A fraction -> percent, for an answer stated in %."""
    return 100.0 * x
