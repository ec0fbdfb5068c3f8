"""Suite-wide settings.

Property tests (hypothesis) draw their examples from a fixed seed here (``derandomize``, no
example database), so ``make test`` passes or fails the same way on every run and every clone:
a counterexample is found again on the next run, never by chance on one run in many.
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples, with the database, for a search
while changing a codec or a simulator (what is found there becomes an ``@example``).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))
