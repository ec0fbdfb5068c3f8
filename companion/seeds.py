"""Seeded random streams: one per name and seed, the same on every run.

The exercises' variants (``companion.exercises``) and the generated records they read
(``companion.sim.records_ch08``) draw from these, so a stream's name ("8-3", "data:8-4") and a
seed fix its numbers. This module imports nothing of the companion, so every layer can use it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rng_for", "pick"]


def rng_for(stream: str, seed: int) -> np.random.Generator:
    """A generator that differs per stream name and per seed, and is stable across runs."""
    salt = sum((i + 1) * ord(c) for i, c in enumerate(stream))
    return np.random.default_rng([seed, salt])


def pick(rng: np.random.Generator, options):
    """One of ``options`` (a list), chosen by ``rng``."""
    return options[int(rng.integers(len(options)))]
