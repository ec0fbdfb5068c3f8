"""`make test`'s driver (tools/run_tests.py): when the browser tests cannot run, the last lines
say so and how to run them; under CI they fail instead. The harness is pointed at a Chromium
that does not exist (CHROMIUM_PATH), the way a machine without one looks to it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_TESTS = ROOT / "tools" / "run_tests.py"
_spec = importlib.util.spec_from_file_location("run_tests", RUN_TESTS)
run_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_tests)

# the lightest browser test module: every test there needs the chromium fixture
BROWSER_TESTS = "tests/browser/test_make_lab.py"
NO_OP_PASS_2 = "true"  # a shell no-op that accepts (and ignores) the --junitxml argument


def _drive(tmp_path, ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env.update(CHROMIUM_PATH=str(tmp_path / "no-such-chromium"), COMPANION_STATE=str(tmp_path))
    if ci:
        env["CI"] = "1"
    pass_1 = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:xdist {BROWSER_TESTS}"
    return subprocess.run([sys.executable, str(RUN_TESTS), pass_1, NO_OP_PASS_2], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def test_missing_browser_is_reported_in_the_last_lines(tmp_path):
    done = _drive(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-4:]
    text = "\n".join(last)
    # as many as the browser tests that pytest itself skipped in pass 1 (its JUnit file)
    import xml.etree.ElementTree as ET

    cases = ET.parse(tmp_path / "test-pass1.xml").getroot().iter("testcase")
    n = sum(case.find("skipped") is not None for case in cases)
    assert n >= 2
    assert f"BROWSER TESTS SKIPPED: {n} browser test(s) did not run" in text, text
    assert f"CHROMIUM_PATH={tmp_path / 'no-such-chromium'} is not an executable" in text, text
    assert "apt-get install -y chromium" in text and "CHROMIUM_PATH" in text, text
    assert "pass 1 (whole suite, this CPU's full dispatch): passed" in done.stdout
    assert "pass 2 (notebooks; NumPy" in done.stdout


def test_missing_browser_fails_under_ci(tmp_path):
    done = _drive(tmp_path, ci=True)
    assert done.returncode == 1
    assert "CI is set, so the browser tests must run" in done.stdout
    assert "pass 1 (whole suite, this CPU's full dispatch): FAILED" in done.stdout
    assert "not run (pass 1 failed)" in done.stdout
    assert "BROWSER TESTS SKIPPED" not in done.stdout


def test_summary_counts_skips_by_reason(tmp_path):
    junit = tmp_path / "r.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.browser.test_a" name="t1">'
        '<skipped type="pytest.skip" message="no Chromium found">x</skipped></testcase>'
        '<testcase classname="tests.browser.test_b" name="t2">'
        '<skipped type="pytest.skip" message="no Chromium found">x</skipped></testcase>'
        '<testcase classname="tests.test_lock" name="t3">'
        '<skipped type="pytest.skip" message="unpinned venv">x</skipped></testcase>'
        '<testcase classname="tests.test_c" name="t4"/>'
        '</testsuite></testsuites>')
    skips = run_tests.skipped(junit)
    lines = run_tests.summary([("pass 1", 0, 12.0), ("pass 2", 1, 3.0)], skips)
    assert "pass 1: passed in 12 s" in lines and "pass 2: FAILED in 3 s" in lines
    assert "skipped: 1 test(s): unpinned venv" in lines
    assert lines[-2].startswith("BROWSER TESTS SKIPPED: 2 browser test(s) did not run "
                                "(no Chromium found)")
    assert run_tests.skipped(tmp_path / "absent.xml") == []


def test_summary_prints_what_tests_say_they_checked(tmp_path):
    # record_property("checked", ...) as pytest writes it into a JUnit XML report (xunit1)
    junit = tmp_path / "r.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.browser.test_f" name="t1">'
        '<properties><property name="checked" value="figure layout: 117 figures"/>'
        '<property name="other" value="not this"/></properties></testcase>'
        '</testsuite></testsuites>')
    counts = run_tests.checked(junit)
    assert counts == ["figure layout: 117 figures"]
    lines = run_tests.summary([("pass 1", 0, 12.0)], [], counts)
    assert "checked: figure layout: 117 figures" in lines
    assert run_tests.checked(tmp_path / "absent.xml") == []


def test_property_tests_draw_from_a_fixed_seed_in_the_suite():
    # tests/conftest.py: make test must not pass or fail by the luck of hypothesis's draw
    import os

    from hypothesis import settings

    if os.environ.get("HYPOTHESIS_PROFILE", "suite") == "suite":
        assert settings.default.derandomize is True
        assert settings.default.database is None


def test_the_slowest_files_named_for_the_run_order_exist():
    """tests/conftest.py puts these first; a renamed one would silently drop back to the end."""
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
    suite_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite_conftest)
    missing = [f for f in suite_conftest.SLOWEST_FILES if not (ROOT / f).is_file()]
    assert not missing, f"tests/conftest.py's SLOWEST_FILES names files that do not exist: {missing}"
