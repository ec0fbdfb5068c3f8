#!/usr/bin/env python
"""`make test`: the whole suite, then the notebooks again on another CPU's code paths, then a
summary whose last lines say what did not run.

Pass 1 runs the first command as given (unit, property, ledger, browser tests and every
notebook under strict nbval). Pass 2 runs the second command (the notebooks only) with the
environment of ``tools/cpu_dispatch.py``: NumPy's widest SIMD tier taken away, OpenBLAS's
plain kernels, another hash seed. Pass 2 runs only when pass 1 passed. Skipped tests are read
from each pass's JUnit XML; when browser tests were skipped (no Chromium or Playwright), the
last lines say so and how to run them (under CI they fail instead, see tests/browser).

usage: python tools/run_tests.py "PASS 1 COMMAND" "PASS 2 COMMAND"   (shell command lines)
       python tools/run_tests.py --second-only "PASS 2 COMMAND"
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
STATE = Path(os.environ.get("COMPANION_STATE", ROOT / ".state"))
BROWSER_PREFIX = "tests.browser."


def _clean_env() -> dict:
    env = dict(os.environ)
    for name in ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE"):
        env.pop(name, None)
    return env


def second_pass_env() -> tuple[dict, str]:
    """The pass-2 variables, computed by cpu_dispatch.py in a fresh interpreter that sees the
    CPU's full dispatch; and its sentence about what they take away."""
    out = subprocess.run([sys.executable, str(HERE / "cpu_dispatch.py")], env=_clean_env(),
                         capture_output=True, text=True, check=True)
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    return env, out.stderr.strip()


def numpy_now_finds(env: dict) -> str:
    """What numpy reports as found under ``env`` (proof that the variables took effect)."""
    code = ("import sys; sys.path.insert(0, %r); import cpu_dispatch as c; "
            "b, d, f = c.simd_targets(); print(' '.join(f) or 'nothing above ' + ' '.join(b))"
            % str(HERE))
    out = subprocess.run([sys.executable, "-c", code], env={**_clean_env(), **env},
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else f"(numpy failed: {out.stderr[-300:]})"


def run(command: str, junit: Path, env: dict) -> tuple[int, float]:
    junit.unlink(missing_ok=True)
    t0 = time.perf_counter()
    rc = subprocess.call(f"{command} --junitxml={junit}", shell=True, cwd=ROOT, env=env)
    return rc, time.perf_counter() - t0


def skipped(junit: Path) -> list[tuple[str, str]]:
    """(classname, reason) of every skipped test in a JUnit XML report."""
    if not junit.exists():
        return []
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for skip in case.findall("skipped"):
            reason = (skip.get("message") or "").removeprefix("Skipped: ")
            out.append((case.get("classname", ""), reason))
    return out


def checked(junit: Path) -> list[str]:
    """What tests said they checked: the value of each ``record_property("checked", ...)``
    (e.g. the figure layout check's counts), in the JUnit XML report."""
    if not junit.exists():
        return []
    return [prop.get("value", "") for case in ET.parse(junit).getroot().iter("testcase")
            for prop in case.iter("property") if prop.get("name") == "checked"]


def summary(results: list[tuple[str, int | None, float]], skips: list[tuple[str, str]],
            counts: list[str] = ()) -> list[str]:
    lines = ["", "=" * 30 + " make test " + "=" * 30]
    for label, rc, seconds in results:
        state = "not run (pass 1 failed)" if rc is None else (
            f"{'passed' if rc == 0 else 'FAILED'} in {seconds:.0f} s")
        lines.append(f"{label}: {state}")
    lines += [f"checked: {line}" for line in counts]
    other = Counter(reason for cls, reason in skips if not cls.startswith(BROWSER_PREFIX))
    for reason, n in sorted(other.items()):
        lines.append(f"skipped: {n} test(s): {reason}")
    browser = Counter(reason for cls, reason in skips if cls.startswith(BROWSER_PREFIX))
    if browser:
        n = sum(browser.values())
        reasons = "; ".join(sorted(browser))
        lines += [f"BROWSER TESTS SKIPPED: {n} browser test(s) did not run ({reasons}).",
                  "To run them: install Chromium (Debian/Ubuntu: apt-get install -y chromium) "
                  "or set CHROMIUM_PATH=/path/to/chromium, keep the 'test' extra installed "
                  "(make setup), then make test. With CI set they fail instead of skipping."]
    return lines


def main(argv: list[str]) -> int:
    second_only = argv[:1] == ["--second-only"]
    counts: list[str] = []
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    STATE.mkdir(parents=True, exist_ok=True)
    env2, said = second_pass_env()
    label2 = f"pass 2 (notebooks; {said.removeprefix('second pass: ')})"
    results, skips = [], []
    if second_only:
        rc1 = 0
    else:
        rc1, t1 = run(argv[0], STATE / "test-pass1.xml", _clean_env())
        results.append(("pass 1 (whole suite, this CPU's full dispatch)", rc1, t1))
        skips += skipped(STATE / "test-pass1.xml")
        counts = checked(STATE / "test-pass1.xml")
    if rc1 == 0:
        print(f"\n{label2}\nnumpy now finds: {numpy_now_finds(env2)}", flush=True)
        rc2, t2 = run(argv[1], STATE / "test-pass2.xml", {**_clean_env(), **env2})
        skips += skipped(STATE / "test-pass2.xml")
    else:
        rc2, t2 = None, 0.0
    results.append((label2, rc2, t2))
    print("\n".join(summary(results, skips, counts)), flush=True)
    return 0 if rc1 == 0 and rc2 == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
