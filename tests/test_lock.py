"""The venv is exactly requirements.lock, and the lock is what pyproject.toml asks for.

`make setup` installs from the lock and runs tools/check_lock.py; this runs the same check
again (a package installed or upgraded by hand since then fails here), and checks that every
dependency of pyproject.toml (runtime, the test extra, the install group) is pinned in the
lock at a version its specifier allows, so a dependency added without `make lock` fails.
Under `make ... LATEST=1` (the unpinned venv) the environment check does not apply.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    """A module of tools/ (not a package), loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_lock = _tool("check_lock")
lock_entry = _tool("lock_entry")

PINS = check_lock.read_lock()


def _pyproject_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    reqs = project["project"]["dependencies"] + extras["test"] + extras["book"]
    reqs += project["dependency-groups"]["install"]
    return [Requirement(r) for r in reqs]


@pytest.mark.skipif(os.environ.get("COMPANION_UNPINNED") == "1",
                    reason="the LATEST=1 venv holds the newest releases, not the lock")
def test_environment_equals_the_lock():
    problems = check_lock.problems(PINS, check_lock.installed())
    assert not problems, "\n".join(problems) + "\nrm -rf .venv && make setup"


@pytest.mark.parametrize("req", _pyproject_requirements(), ids=str)
def test_every_pyproject_dependency_is_pinned_within_its_specifier(req):
    name = canonicalize_name(req.name)
    assert name in PINS, f"{req} is not in requirements.lock: run `make lock`"
    version, _ = PINS[name]
    assert req.specifier.contains(version, prereleases=True), (
        f"requirements.lock pins {name}=={version}, outside {req}: run `make lock`")


def test_the_outputs_deciding_packages_are_pinned_at_the_verified_versions():
    """The versions the stored outputs were made and checked with (see recipes)."""
    verified = {"numpy": "2.4.6", "plotly": "7.1.0", "ipywidgets": "8.1.9",
                "jupyterlab": "4.6.6", "anywidget": "0.11.0", "nbval": "0.11.0",
                "jupytext": "1.19.6", "nbclient": "0.11.0"}
    assert {n: PINS[n][0] for n in verified} == verified


def test_the_checker_reports_a_wrong_a_missing_and_an_extra_package():
    pins = {"numpy": ("2.4.6", None), "plotly": ("7.1.0", None),
            "appnope": ("1.0.0", "sys_platform == 'nonesuch'")}
    present = {"numpy": "2.4.5", "requests": "2.0", "llm-inference-companion": "0.1.0"}
    found = check_lock.problems(pins, present)
    assert "numpy: pinned ==2.4.6 but 2.4.5 is installed" in found
    assert "plotly: pinned ==7.1.0 but not installed" in found
    assert "requests: installed (2.0) but not in the lock" in found
    assert not any("appnope" in p or "companion" in p for p in found)
    assert any("ipywidgets: the lock does not pin it" in p for p in found)


def test_a_pin_overridden_away_is_an_extra_when_installed():
    # lock-overrides.txt leaves rfc3987-syntax in the lock under a marker that never holds:
    # an old venv that still has it must have it removed by make setup (--extras)
    pins = {"numpy": ("2.4.6", None), "rfc3987-syntax": ("1.1.0", "sys_platform == 'never'")}
    present = {"numpy": "2.4.6", "rfc3987-syntax": "1.1.0"}
    assert check_lock.extras(pins, present) == ["rfc3987-syntax"]
    assert "rfc3987-syntax: installed (1.1.0) but not in the lock" in check_lock.problems(pins, present)


def test_no_lock_installs_the_slow_iri_checker():
    # importing it added 1.2-1.4 s to every Jupyter process here (lock-overrides.txt)
    for lock in ("requirements.lock", "requirements-course.lock", "lite/tools.lock"):
        pins = check_lock.read_lock(ROOT / lock)
        assert "rfc3987-syntax" not in check_lock.applying(pins), lock


def test_read_lock_parses_markers_and_rejects_a_lock_without_pins(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# header\nappnope==1.0.0 ; sys_platform == 'darwin' \\\n"
                    "    --hash=sha256:00\nNumPy==2.4.6 \\\n    --hash=sha256:11\n")
    assert check_lock.read_lock(lock) == {"appnope": ("1.0.0", "sys_platform == 'darwin'"),
                                          "numpy": ("2.4.6", None)}
    lock.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no 'name==version' pins"):
        check_lock.read_lock(lock)


def test_read_lock_keeps_the_alternative_whose_marker_holds_here(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("docutils==0.22.4 ; python_full_version < '3.0' \\\n    --hash=sha256:00\n"
                    "docutils==0.23 ; python_full_version >= '3.0' \\\n    --hash=sha256:11\n")
    assert check_lock.read_lock(lock) == {"docutils": ("0.23", "python_full_version >= '3.0'")}
    lock.write_text("docutils==0.22.4 ; python_full_version >= '3.0'\n"
                    "docutils==0.23 ; python_full_version >= '3.1'\n")
    with pytest.raises(ValueError, match="pinned twice for this environment"):
        check_lock.read_lock(lock)
    lock.write_text("docutils==0.22.4\ndocutils==0.23 ; python_full_version >= '3.1'\n")
    with pytest.raises(ValueError, match="pinned twice"):
        check_lock.read_lock(lock)


COURSE_PINS = check_lock.read_lock(ROOT / "requirements-course.lock")


def _course_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = project["project"]["dependencies"] + project["project"]["optional-dependencies"]["course"]
    return [Requirement(r) for r in reqs + project["dependency-groups"]["install"]]


@pytest.mark.parametrize("req", _course_requirements(), ids=str)
def test_the_course_lock_pins_every_course_dependency_within_its_specifier(req):
    """tools/course_env.sh installs the course check's JupyterHub + nbgrader venv from it."""
    name = canonicalize_name(req.name)
    assert name in COURSE_PINS, f"{req} is not in requirements-course.lock: run `make lock`"
    assert req.specifier.contains(COURSE_PINS[name][0], prereleases=True), (
        f"requirements-course.lock pins {name}=={COURSE_PINS[name][0]}, outside {req}")


def test_the_course_lock_agrees_with_the_main_lock_on_every_shared_package():
    """`make lock` compiles it under the main lock as constraints, so the course venv runs the
    notebooks on the same numpy, plotly and widgets the stored outputs were made with."""
    differ = {name: (PINS[name][0], version) for name, (version, _) in COURSE_PINS.items()
              if name in PINS and PINS[name][0] != version}
    assert not differ, f"requirements.lock vs requirements-course.lock: {differ}; run `make lock`"


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-course.lock"])
def test_the_uv_that_make_setup_bootstraps_is_the_locks_with_its_hashes(lock):
    # make setup has pip install exactly this entry with --require-hashes, then uv the rest
    text = (ROOT / lock).read_text()
    lines = lock_entry.entry("uv", text).splitlines()
    assert lines[0].startswith(f"uv=={PINS['uv'][0]} ")
    hashes = [line.strip().rstrip(" \\") for line in lines[1:]]
    assert hashes and all(h.startswith("--hash=sha256:") and len(h) == 14 + 64 for h in hashes)
    # every hash the lock lists for uv, and nothing of the next entry
    block = text.split("\nuv==", 1)[1].split("\n# ", 1)[0].split("\n    # via", 1)[0]
    assert hashes == [line.strip().rstrip(" \\") for line in block.splitlines()[1:]]
    assert not lines[-1].endswith("\\")
    with pytest.raises(ValueError, match="no pin of 'no-such-package'"):
        lock_entry.entry("no-such-package", text)
