"""The library leaves the process alone (issue 11, item 5).

* ``sim.load.run_service`` never changes the garbage collector's state, during a run, after it,
  or after a run that raises;
* ``COMPANION_FAST`` changes only the sizes ``companion.measure`` measures: the package reads it
  in that one place, and library results are the same with it set to 0 and to 1;
* the exercises ``companion.grading`` collects and the façades ``companion.plots`` and
  ``companion.widgets`` survive ``importlib.reload`` and re-import.

The reload and environment checks run in fresh interpreters, so they neither see nor leave
state in the test process.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from companion.sim.load import Workload, run_service
from companion.sim.scheduler import RoundTimeModel

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "companion"


def _python(code: str, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (repository root as working directory)."""
    full_env = {k: v for k, v in os.environ.items() if k != "COMPANION_FAST"}
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=300)


# --- the garbage collector ----------------------------------------------------------------------

def _small_workload() -> Workload:
    return Workload(np.zeros(4), 256, 16)


@pytest.fixture
def restore_gc():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_run_service_leaves_the_garbage_collector_as_it_found_it(restore_gc, enabled):
    (gc.enable if enabled else gc.disable)()
    seen_during_run = []
    chapter8 = RoundTimeModel.chapter8()

    def round_time(work):
        seen_during_run.append(gc.isenabled())
        return chapter8.time_s(work)

    res = run_service(_small_workload(), policy="continuous", max_running=4,
                      round_time=round_time)
    assert (res.status == "completed").all()
    assert gc.isenabled() is enabled
    assert seen_during_run and set(seen_during_run) == {enabled}


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_a_raising_run_leaves_the_garbage_collector_as_it_found_it(restore_gc, enabled):
    (gc.enable if enabled else gc.disable)()
    rounds = []

    def failing_round_time(work):
        rounds.append(work)
        if len(rounds) == 3:
            raise RuntimeError("round model failed mid-run")
        return 0.01

    with pytest.raises(RuntimeError, match="mid-run"):
        run_service(_small_workload(), policy="continuous", max_running=4,
                    round_time=failing_round_time)
    assert len(rounds) == 3                       # it failed inside the run, not in validation
    assert gc.isenabled() is enabled


def test_no_library_module_touches_the_garbage_collector():
    offenders = [str(p.relative_to(ROOT)) for p in sorted(PACKAGE.rglob("*.py"))
                 if re.search(r"^\s*(import gc|from gc import)|\bgc\.(disable|enable|freeze)\(",
                              p.read_text(), flags=re.M)]
    assert not offenders


# --- COMPANION_FAST -----------------------------------------------------------------------------

def test_only_measure_reads_companion_fast_or_the_environment():
    readers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if "COMPANION_FAST" in text or re.search(r"\bos\.environ\b|\bgetenv\(", text):
            readers[str(path.relative_to(PACKAGE))] = True
    # besides measure's probes, only the static-output switch that `make execute` sets for the
    # book (COMPANION_STATIC_OUTPUTS, read by explorers/static_image.py) and the variables by
    # which plotly picks another renderer (Colab, VS Code, ...: explorers/common.py decides as
    # plotly would how a figure shows itself) are read: both change how a figure is displayed,
    # never a number
    for display_only in ("explorers/static_image.py", "explorers/common.py"):
        assert "COMPANION_FAST" not in (PACKAGE / display_only).read_text()
    # and who runs the notebook, which picks a student's seed (grading.student_seed; course.py
    # sets the student id for nbgrader's kernels): the suite and `make execute` clear exactly
    # these variables, so stored outputs stay seed 0's
    from companion.grading import IDENTITY_ENV
    for who in ("grading.py", "course.py"):
        text = (PACKAGE / who).read_text()
        assert "COMPANION_FAST" not in text
        named = set(re.findall(r'os\.environ\.get\("([A-Z_]+)"', text))
        assert named <= set(IDENTITY_ENV), (who, named)
    conftest = (ROOT / "conftest.py").read_text()
    assert all(f'"{var}"' in conftest for var in IDENTITY_ENV)
    assert sorted(readers) == ["course.py", "explorers/common.py", "explorers/static_image.py",
                               "grading.py", "measure/probes.py"]
    # inside measure/probes.py, fast_mode() reads it, and only measure() asks fast_mode(), to choose
    # the probe sizes (and the thread count the probes run on)
    source = (PACKAGE / "measure" / "probes.py").read_text()
    assert source.count('os.environ.get("COMPANION_FAST"') == 1
    callers = set()
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, ast.FunctionDef):
            for node in ast.walk(func):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "fast_mode"):
                    callers.add(func.name)
    assert callers == {"measure"}


# A few results from each layer: closed forms, simulators, the ledger and the exercises'
# answers. Printed as JSON so the two runs compare exactly.
_RESULTS = r"""
import json
from companion import calc, grading, ledger, specs, units
from companion.sim import scheduler
from companion.sim.load import SHORT_REQUEST, poisson_arrivals, run_service, workload

out = {}
out["kv_per_token"] = calc.kv_bytes_per_token(specs.QWEN3_8B)
out["max_concurrent"] = calc.max_concurrent(12 * units.GiB, specs.QWEN3_8B, 8192, 256,
                                            shared_prefix_tokens=6144)
out["ridge"] = calc.ridge_point(specs.H100_SXM)
reqs = [scheduler.Request(i, 0.0, 512 * (i + 1), 32) for i in range(4)]
r = scheduler.simulate(reqs, "chunked", max_running=4,
                       round_time=scheduler.RoundTimeModel.chapter8(),
                       chunk_tokens=256, token_budget=512)
out["simulate"] = [r.makespan_s, r.max_itl_s]
wl = workload(poisson_arrivals(8.0, 300, seed=0), SHORT_REQUEST, deadline_s=7.0)
out["service"] = run_service(wl, policy="chunked", max_running=64).summary()
out["ledger"] = [[e.id, e.value] for e in ledger.entries()]
out["answers"] = {eid: {k: repr(v) for k, v in ex.solve(ex.make_params(1)).items()}
                  for eid, ex in grading.exercises().items() if eid in ("8-2", "8-9", "17-10")}
print(json.dumps(out, default=repr, sort_keys=True))
"""


def test_companion_fast_does_not_change_library_results():
    runs = {}
    for value in ("0", "1"):
        done = _python(_RESULTS, COMPANION_FAST=value)
        assert done.returncode == 0, done.stderr[-2000:]
        runs[value] = json.loads(done.stdout.strip().splitlines()[-1])
    assert runs["0"]["ledger"] and runs["0"]["service"]
    assert runs["0"] == runs["1"]


def test_companion_fast_changes_the_lab_sizes():
    done = _python("from companion import measure as M; print(M.fast_mode())", COMPANION_FAST="1")
    assert done.stdout.strip() == "True"
    done = _python("from companion import measure as M; print(M.fast_mode())", COMPANION_FAST="0")
    assert done.stdout.strip() == "False"


# --- exercises and façades survive reload and re-import ------------------------------------------

_RELOADS = r"""
import importlib, sys
from companion import grading

collected = grading.exercises()
ids = list(collected)
assert len(ids) == 22, ids
answer = grading._solved(collected["8-3"], 0)[1]["b-indep-b16"]

# reloading an exercise module builds its exercise again; collecting gives the same ids, in
# order, and the same answers, with no duplicate-definition error
import companion.exercises.ex8_3 as ex8_3
importlib.reload(ex8_3)
assert list(grading.exercises()) == ids
assert grading.check("8-3", "b-indep-b16", answer, quiet=True)
rebuilt = ex8_3.exercises()[0]
assert rebuilt is not collected["8-3"] and rebuilt.id == "8-3"
assert grading._solved(rebuilt, 0)[1]["b-indep-b16"] == answer

# importing one afresh (dropped from sys.modules) does the same
del sys.modules["companion.exercises.ex17_4"]
importlib.import_module("companion.exercises.ex17_4")
assert list(grading.exercises()) == ids

# reloading grading itself collects the exercise modules again on first use
importlib.reload(grading)
assert list(grading.exercises()) == ids
assert grading.check("8-3", "b-indep-b16", answer, quiet=True)

# a collection made after the reloads grades with the exercises it holds, not with answers
# cached for the objects they replace
grading._collect.cache_clear()
fresh = grading.exercises()
assert fresh["8-3"] == ex8_3.exercises()[0] and fresh["8-3"] is not collected["8-3"]
assert grading.check("8-3", "b-indep-b16", answer, quiet=True)

# a genuine clash (the same id from two modules) is refused, naming both
ex8_3.exercises = lambda: [fresh["8-1"]]
grading._collect.cache_clear()
try:
    grading.exercises()
except ValueError as err:
    assert "8-1" in str(err), err
    assert "companion.exercises.ex8_1" in str(err) and "companion.exercises.ex8_3" in str(err), err
else:
    raise AssertionError("an id defined by two modules was accepted")

# the façades over the explorers re-export the same names on reload
import companion.plots, companion.widgets
names = (list(companion.plots.__all__), list(companion.widgets.__all__))
importlib.reload(companion.plots)
importlib.reload(companion.widgets)
assert (list(companion.plots.__all__), list(companion.widgets.__all__)) == names
print("RELOADS OK")
"""


def test_registries_survive_reload_and_reimport():
    done = _python(_RELOADS)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("RELOADS OK")
