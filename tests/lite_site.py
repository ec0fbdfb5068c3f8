"""The lite site (make lite -> build/lite/) for the tests that need it: built once when missing
or older than its inputs (lite/artefacts.json, lite/tools.lock, tools/lite_build.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "lite"
INPUTS = [ROOT / "lite" / "artefacts.json", ROOT / "lite" / "tools.lock", ROOT / "tools" / "lite_build.py"]


def unavailable(reason: str):
    """Skip with ``reason``, except under CI, where it is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"lite site: {reason} (CI must be able to build and run it)")
    pytest.skip(f"lite site: {reason}")


def site() -> Path:
    stamp = SITE / "static" / "pyodide" / "pyodide-lock.json"
    stale = not stamp.exists() or any(p.stat().st_mtime > stamp.stat().st_mtime for p in INPUTS)
    if stale:
        if shutil.which("npm") is None:
            unavailable("npm is missing (make lite takes Pyodide from npm)")
        done = subprocess.run(["make", "-C", str(ROOT), "lite"], capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(f"make lite failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return SITE
