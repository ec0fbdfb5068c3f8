"""Suite-wide settings.

Property tests (hypothesis) draw their examples from a fixed seed here (``derandomize``, no
example database), so ``make test`` passes or fails the same way on every run and every clone:
a counterexample is found again on the next run, never by chance on one run in many.
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples, with the database, for a search
while changing a codec or a simulator (what is found there becomes an ``@example``).
"""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


# --- Order of the files (issue 26 item 3: the suite's time). make test's first pass runs with
# --dist loadfile: a free worker takes the next whole file. xdist's own order (most tests
# first) left the slowest files last, as they hold one to four long tests each: in a
# fresh-clone run the course check started at 496 s and one worker ran it alone for the last
# 54 s. Longest first instead, so that short files fill the end (the Makefile passes
# --no-loadscope-reorder so that xdist keeps this order).
# Seconds each took in fresh-clone `CI=1 .ci/run`s on 2 cores (the mean of two runs,
# 2026-12-06, after the ledger and install speed-ups), rounded; every other file took under
# 10 s. tests/test_run_tests.py checks that each still exists.
SLOWEST_FILES = {
    "tests/browser/test_figure_layout.py": 121,
    "tests/browser/test_lab_explorers.py": 94,
    "tests/browser/test_lite_site.py": 75,
    "tests/browser/test_make_lab.py": 68,
    "tests/test_course.py": 52,
    "tests/browser/test_book_site.py": 45,
    "tests/browser/test_explorers_under_load.py": 40,
    "tests/test_wasm32.py": 40,
    "tests/test_panels.py": 35,
    "tests/test_variant_screen.py": 31,
    "tests/browser/test_explorer_lookahead.py": 30,
    "tests/test_static_explorers.py": 16,
    "tests/browser/test_explorer_coalescing.py": 14,
    "tests/browser/test_voila_dashboard.py": 10,
}


def pytest_collection_modifyitems(config, items):
    """The slowest files first (SLOWEST_FILES), then the others as xdist orders them (most
    tests first, which puts the long notebooks before the short ones); a file's tests stay
    together and in their order."""
    def file_of(item) -> str:
        return item.nodeid.split("::")[0]

    per_file = Counter(map(file_of, items))  # in collection order, as a dict keeps it
    rank = {f: (-SLOWEST_FILES.get(f, 0), -n, i) for i, (f, n) in enumerate(per_file.items())}
    items.sort(key=lambda item: rank[file_of(item)])  # a stable sort: each file keeps its order


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
