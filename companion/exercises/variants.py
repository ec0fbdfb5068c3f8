"""Helpers to draw per-student variants: seed 0 is always the chapter's data."""

from __future__ import annotations

import numpy as np


def rng_for(exercise_id: str, seed: int) -> np.random.Generator:
    """A generator that differs per exercise and per seed, and is stable across runs."""
    salt = sum((i + 1) * ord(c) for i, c in enumerate(exercise_id))
    return np.random.default_rng([seed, salt])


def pick(rng: np.random.Generator, options):
    """One of ``options`` (a list), chosen by ``rng``."""
    return options[int(rng.integers(len(options)))]
