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


# --- Stress runs (issue 26 item 3): `make stress` runs each browser test many times in a row,
# with one busy process per core, to show that no test passes or fails by chance.

def pytest_addoption(parser):
    group = parser.getgroup("stress")
    group.addoption("--repeat", type=int, default=1, metavar="N",
                    help="run every collected test N times in a row (each its own item)")
    group.addoption("--cpu-burners", action="store_true",
                    help="keep one busy-looping process per core running for the session")


def pytest_generate_tests(metafunc):
    n = metafunc.config.getoption("repeat")
    if n > 1:
        # a function-scoped parameter: the N runs of one test are consecutive items, and
        # module- and session-scoped servers are shared by them as in a normal run
        metafunc.fixturenames.append("stress_round")
        metafunc.parametrize("stress_round", range(1, n + 1), ids=lambda i: f"round{i}")


def pytest_sessionstart(session):
    if not session.config.getoption("cpu_burners"):
        return
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 2)]
    session.config._stress_burners = procs


def pytest_sessionfinish(session):
    for p in getattr(session.config, "_stress_burners", []):
        p.kill()
        p.wait(timeout=30)
