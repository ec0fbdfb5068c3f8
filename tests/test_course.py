"""The course check of `make course-check`, run as part of `make test`.

A real JupyterHub with configurable-http-proxy, one instructor and two students, nbgrader's
exchange and formgrader: release, fetch, work in the students' own kernels, submit, collect,
autograde, feedback (tools/course_check.py does it and asserts; this test runs it and restates
the outcome, each student's seed among it). Its environment ($COURSE_ENV, which the Makefile names; default
.state/course-env) is created on first use by tools/course_env.sh.

When node/npm are missing the test skips with the reason, except under CI (CI is set), where
it fails: CI must be able to run the course.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE_ENV = Path(os.environ.get("COURSE_ENV", ROOT / ".state" / "course-env"))
ARTIFACTS = ROOT / "artifacts" / "course-check"
MISSING_PREREQUISITE = 3  # tools/course_env.sh's exit status for "cannot be set up here"


def _tail(text: str, lines: int = 80) -> str:
    return "\n".join(text.splitlines()[-lines:])


@pytest.mark.slow
def test_course_cycle_through_jupyterhub():
    setup = subprocess.run(["bash", str(ROOT / "tools" / "course_env.sh"), str(COURSE_ENV)],
                           capture_output=True, text=True, timeout=1800,
                           env={**os.environ, "UV": str(Path(sys.executable).with_name("uv"))})
    if setup.returncode == MISSING_PREREQUISITE:
        reason = f"course check cannot run here: {setup.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    assert setup.returncode == 0, (
        f"tools/course_env.sh {COURSE_ENV} failed (status {setup.returncode}):\n"
        f"{_tail(setup.stdout + setup.stderr)}")

    run_id = uuid.uuid4().hex
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    summary_path = ARTIFACTS / "summary.json"
    summary_path.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [str(COURSE_ENV / "venv" / "bin" / "python"), str(ROOT / "tools" / "course_check.py"),
         "--env", str(COURSE_ENV), "--summary", str(summary_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COURSE_CHECK_RUN": run_id})
    try:
        output, _ = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the check stops its hub on SIGTERM
        output, _ = proc.communicate(timeout=120)
        pytest.fail(f"the course check ran past 900 s:\n{_tail(output)}")
    finally:
        # a backstop: the check cleans up after itself; nothing with its marker may survive it
        kill_marked = runpy.run_path(str(ROOT / "tools" / "course_check.py"))["kill_marked"]
        leftovers = kill_marked(run_id)
    (ARTIFACTS / "output.txt").write_text(output)

    failure = [line for line in output.splitlines() if line.startswith("COURSE CHECK FAILED")]
    assert proc.returncode == 0, (
        f"{failure[-1] if failure else f'course check exited with {proc.returncode}'}\n"
        f"--- its output (whole: {ARTIFACTS / 'output.txt'}) ---\n{_tail(output)}")
    assert not leftovers, f"processes of the hub outlived the course check: {leftovers}"

    summary = json.loads(summary_path.read_text())
    assert summary["ok"] and not summary["left_running"]
    grades = summary["grades"]
    full, partial = grades["alice"], grades["bob"]
    # expected values come from the source notebooks' nbgrader points, not from a grading run
    assert full["score"] == full["expected"] > 0
    assert partial["score"] == partial["expected"]
    assert 0 < partial["expected"] < full["expected"], "bob's partial answer must score between"
    # each student worked and was graded with their own seed: alice's from her user name (the
    # documented SHA-256 mapping, recomputed here), bob's pinned by the instructor's file
    digest = hashlib.sha256(b"alice").digest()
    assert full["seed"] == 1 + int.from_bytes(digest[:8], "big") % 999_999
    assert partial["seed"] == 3 and full["seed"] != partial["seed"]
    assert summary["given_data_differ"], "alice's and bob's given data were not compared"
    assert set(summary["feedback"]) == {"alice", "bob"}
    for student, per_notebook in summary["feedback"].items():
        assert per_notebook, f"no feedback notebooks reached {student}"
