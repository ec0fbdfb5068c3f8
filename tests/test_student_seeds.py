"""Per-student variants with nothing to type: ``grading.student_seed()``.

* a name's seed is the documented SHA-256 mapping (recomputed here from its description, not
  read from the code), the same under any PYTHONHASHSEED, never 0, and TLJH's ``jupyter-``
  prefix and the case of a name do not change it;
* the seed follows whoever runs the notebook: the hub user name (JUPYTERHUB_USER), the student
  id nbgrader grades (COMPANION_STUDENT during autograde, even inside the instructor's server
  where JUPYTERHUB_USER is the instructor), and 0 anywhere else; autograde without the hook is
  an error, not the grader's seed;
* the instructor's companion_seeds.json pins a student's seed or everyone's ("*"), is found in
  the system-wide Jupyter config folders and not in the student's own ~/.jupyter, and a bad
  entry is an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion import grading

ROOT = Path(__file__).resolve().parents[1]


def documented(name: str) -> int:
    """The mapping as docs/instructors.md states it."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % 999_999


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for var in ("JUPYTERHUB_USER", "NBGRADER_EXECUTION", "COMPANION_STUDENT", "COMPANION_SEEDS"):
        monkeypatch.delenv(var, raising=False)
    # no system-wide file of this machine may leak in: only an empty folder on the path
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "system-config"))
    monkeypatch.setattr("jupyter_core.paths.SYSTEM_CONFIG_PATH", [])
    monkeypatch.setattr("jupyter_core.paths.ENV_CONFIG_PATH", [])
    return monkeypatch


@pytest.mark.parametrize("name", ["alice", "bob", "carol", "a.b-c_d", "étienne", "x" * 80])
def test_a_names_seed_is_the_documented_hash(name):
    assert grading.seed_for_student(name) == documented(name)
    assert 1 <= grading.seed_for_student(name) <= 999_999


def test_the_seed_ignores_case_spaces_and_tljh_prefixes():
    alice = grading.seed_for_student("alice")
    for spelled in ("Alice", " alice ", "jupyter-alice", "jupyter-jupyter-alice", "JUPYTER-Alice"):
        assert grading.seed_for_student(spelled) == alice, spelled
    assert grading.seed_for_student("alice") != grading.seed_for_student("bob")
    assert grading.student_name("jupyter-") == "jupyter-"   # a prefix alone is a name
    with pytest.raises(ValueError, match="^student:"):
        grading.seed_for_student("  ")


def test_the_seed_does_not_depend_on_pythons_hash_seed():
    code = "from companion import grading; print(grading.seed_for_student('alice'))"
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout.strip()
            for h in ("1", "2", "random")}
    assert seen == {str(documented("alice"))}


def test_a_class_of_two_hundred_rarely_shares_a_seed():
    names = [f"student{i:03d}" for i in range(200)]
    assert len({grading.seed_for_student(n) for n in names}) >= 198


def test_outside_a_hub_and_nbgrader_the_seed_is_the_chapters(clean_env, capsys):
    assert grading.student_seed() == 0
    assert capsys.readouterr().out == ""


def test_on_a_hub_the_seed_comes_from_the_user_name(clean_env, capsys):
    clean_env.setenv("JUPYTERHUB_USER", "alice")
    assert grading.student_seed() == documented("alice")
    out = capsys.readouterr().out
    assert f"Seed {documented('alice')}" in out and "alice" in out
    # nbgrader's Validate button, in the student's own server
    clean_env.setenv("NBGRADER_EXECUTION", "validate")
    assert grading.student_seed(verbose=False) == documented("alice")


def test_at_autograde_the_seed_is_the_graded_students_not_the_graders(clean_env):
    clean_env.setenv("JUPYTERHUB_USER", "instructor")     # the instructor's server runs it
    clean_env.setenv("NBGRADER_EXECUTION", "autograde")
    clean_env.setenv("COMPANION_STUDENT", "jupyter-bob")  # TLJH's id of hub user bob
    assert grading.student_seed(verbose=False) == documented("bob")
    clean_env.delenv("COMPANION_STUDENT")
    with pytest.raises(RuntimeError, match="companion.course import configure"):
        grading.student_seed()


def test_the_override_file_pins_a_student_or_everyone(clean_env, tmp_path):
    seeds = tmp_path / "seeds.json"
    clean_env.setenv("COMPANION_SEEDS", str(seeds))
    seeds.write_text(json.dumps({"Alice": 7}))
    clean_env.setenv("JUPYTERHUB_USER", "alice")
    assert grading.student_seed(verbose=False) == 7
    clean_env.setenv("JUPYTERHUB_USER", "bob")              # not named: the hash
    assert grading.student_seed(verbose=False) == documented("bob")
    seeds.write_text(json.dumps({"alice": 7, "*": 0}))     # everyone else: the chapter's data
    assert grading.student_seed(verbose=False) == 0
    clean_env.setenv("JUPYTERHUB_USER", "alice")
    assert grading.student_seed(verbose=False) == 7


@pytest.mark.parametrize("content", ['{"alice": -1}', '{"alice": 1.5}', '{"alice": true}',
                                     '["alice"]', "{not json"])
def test_a_bad_override_file_is_an_error(clean_env, tmp_path, content):
    seeds = tmp_path / "seeds.json"
    seeds.write_text(content)
    clean_env.setenv("COMPANION_SEEDS", str(seeds))
    clean_env.setenv("JUPYTERHUB_USER", "alice")
    with pytest.raises(ValueError, match="^seeds:"):
        grading.student_seed()


def test_the_override_file_is_the_instructors_not_the_students(clean_env, tmp_path):
    clean_env.setenv("JUPYTERHUB_USER", "alice")
    own = tmp_path / "user-config"
    own.mkdir()
    (own / "companion_seeds.json").write_text('{"alice": 0}')   # a student's own file
    assert grading.student_seed(verbose=False) == documented("alice")
    system = tmp_path / "system-config"
    system.mkdir()
    (system / "companion_seeds.json").write_text('{"alice": 11}')
    assert grading.student_seed(verbose=False) == 11
    clean_env.setenv("COMPANION_SEEDS", str(tmp_path / "missing.json"))
    with pytest.raises(FileNotFoundError):
        grading.student_seed()

# companion.course.configure (nbgrader's answer stub and the Execute step that sets the student
# id) needs nbgrader, which only the course check's environment has: tests/test_course.py runs
# a whole term through it, and its exact full and partial marks fail without the hook.
