"""Unfinished answers get a message, not a traceback.

* ``grading.check`` takes ``None`` (what answer cells start from) as "not yet answered", and
  with ``key=`` looks an entry of a dict or list up itself, so a missing entry is "not yet
  answered" too;
* ``with grading.checks():`` grades every part of a check cell, then names the parts not
  answered and those not yet right in one line and ends normally (Run All goes on); under
  nbgrader (``NBGRADER_EXECUTION`` set) it raises ``NotYetCorrect`` instead (an AssertionError,
  which nbgrader counts as a failed cell), shown as one line without traceback frames;
* every exercise, run cell by cell as Run All does: fresh, nothing raises (the answer stub
  assigns nothing and raises nothing) and each check cell says "not yet answered" for each of
  its parts; under nbgrader each check cell ends in NotYetCorrect naming all its parts, never a
  KeyError, IndexError, TypeError or NameError; answered from the top down to the middle, the
  answered parts pass and the rest are named; with one answer (or one entry of an answer dict)
  removed from a cell, that cell grades the others and names the missing one;
* the stored exercises/ open clean: their unanswered cells are stored as not run, so a student
  sees the question and empty answers; a copy run through a real kernel (nbclient) shows each
  check's amber lines and no error at all, and under nbgrader's autograde NotYetCorrect as one
  line with no traceback frames;
* a block whose every part is right says so; verdicts are coloured HTML inside IPython, with
  the same words as plain text, and plain printed text elsewhere.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import html
import importlib.util
import io
import json
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pytest
from jupytext.config import load_jupytext_config

from companion import grading

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_FILES = sorted((ROOT / "solutions").glob("ex*.py"))
IDS = [p.stem for p in SOLUTION_FILES]


@pytest.fixture
def nbgrader(monkeypatch):
    """Run as nbgrader's autograde does (with the companion's hook, which names the student):
    a check block that is not all right raises."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setenv("COMPANION_STUDENT", "alice")


@pytest.fixture(autouse=True)
def _not_nbgrader(monkeypatch):
    """Unless a test asks for nbgrader, run as a student's own kernel does."""
    for name in ("NBGRADER_EXECUTION", "COMPANION_STUDENT", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)


def _answer(eid, part, seed=0):
    ex = grading.exercises()[eid]
    return ex.solve(ex.make_params(seed))[part]


# --- check: None, key=, and the verdict of a block ---------------------------------------------

def test_none_is_not_yet_answered_and_names_the_part():
    result = grading.check("8-3", "b-indep-b8", None, quiet=True)
    assert not result and not result.answered
    assert result.message.startswith("(b-indep-b8) not yet answered:")
    assert (result.exercise, result.part) == ("8-3", "b-indep-b8")


def test_key_looks_the_entry_up_and_grades_it():
    right = _answer("8-3", "b-indep-b8")
    assert grading.check("8-3", "b-indep-b8", {8: right, 16: 1.0}, key=8, quiet=True)
    wrong = grading.check("8-3", "b-indep-b16", {8: right, 16: 1.0}, key=16, quiet=True)
    assert not wrong and wrong.answered and "not yet:" in wrong.message
    # tuple keys (8-1's reads[(L, b)]) and list indices
    reads = {(2048, 1): _answer("8-1", "a-short-b1")}
    assert grading.check("8-1", "a-short-b1", reads, key=(2048, 1), quiet=True)
    assert grading.check("8-3", "b-indep-b8", [0.0, right], key=1, quiet=True)
    assert grading.check("8-3", "b-indep-b8", np.array([0.0, right]), key=-1, quiet=True)


@pytest.mark.parametrize("answers,key", [
    ({}, 8), ({16: 1.0}, 8), (None, 8), ({8: None}, 8), ([], 0), ([1.0], 3),
    (defaultdict(float), 8),
], ids=["empty-dict", "other-key", "none", "none-entry", "empty-list", "short-list",
        "defaultdict"])
def test_a_missing_entry_is_not_yet_answered(answers, key):
    result = grading.check("8-3", "b-indep-b8", answers, key=key, quiet=True)
    assert not result.ok and not result.answered
    assert result.message.startswith("(b-indep-b8) not yet answered:")
    if isinstance(answers, defaultdict):
        assert not answers, "looking an entry up must not create it"


def test_keys_given_as_text_get_a_hint():
    right = _answer("8-3", "b-indep-b8")
    result = grading.check("8-3", "b-indep-b8", {"8": right}, key=8, quiet=True)
    assert not result.ok and result.answered
    assert result.message.startswith("answer:") and "(8, not '8')" in result.message


@pytest.mark.parametrize("answers", [3.0, "9504", True, np.float64(2.0), np.array(2.0)],
                         ids=["number", "text", "bool", "numpy-scalar", "0-d-array"])
def test_a_container_of_the_wrong_type_gets_a_message(answers):
    result = grading.check("8-3", "b-indep-b8", answers, key=8, quiet=True)
    assert not result.ok and result.answered
    assert result.message.startswith("answer:") and "dict or list" in result.message


def test_a_list_needs_a_whole_number_key():
    with pytest.raises(TypeError, match="^key:"):
        grading.check("8-3", "b-indep-b8", [1.0], key="8", quiet=True)


def test_checks_block_passes_when_every_part_is_right(capsys):
    right = _answer("8-3", "b-indep-b8")
    with grading.checks() as results:
        grading.check("8-3", "b-indep-b8", right)
        grading.check("8-3", "b-indep-b8", {8: right}, key=8)
    assert [r.ok for r in results] == [True, True]
    assert capsys.readouterr().out.count("(b-indep-b8) correct") == 2
    assert not grading._COLLECTING


def test_checks_block_grades_every_part_then_names_the_missing_and_the_wrong(capsys, nbgrader):
    right = {b: _answer("8-3", f"b-indep-b{b}") for b in (8, 16, 32)}
    answers = {8: right[8], 16: right[16] * 1.3}          # 32 not answered yet
    with pytest.raises(grading.NotYetCorrect) as info:
        with grading.checks():
            for b in (8, 16, 32):
                grading.check("8-3", f"b-indep-b{b}", answers, key=b)
            grading.check("8-3", "c-saved-b8", None)
    err = info.value
    assert isinstance(err, AssertionError)                   # nbgrader: the cell failed
    assert str(err) == ("Exercise 8-3, 1 of 4 parts correct; not yet answered: (b-indep-b32), "
                        "(c-saved-b8); not yet right: (b-indep-b16).")
    assert [r.part for r in err.results] == ["b-indep-b8", "b-indep-b16", "b-indep-b32",
                                             "c-saved-b8"]
    assert err._render_traceback_() == [f"NotYetCorrect: {err}"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("(b-indep-b8) correct") and out[1].startswith("(b-indep-b16) not yet:")
    assert out[2].startswith("(b-indep-b32) not yet answered") and len(out) == 4
    assert not grading._COLLECTING


def test_checks_block_names_each_exercise_of_a_mixed_cell(nbgrader):
    with pytest.raises(grading.NotYetCorrect) as info:
        with grading.checks():
            grading.check("8-3", "c-saved-b8", _answer("8-3", "c-saved-b8"), quiet=True)
            grading.check("17-1", "a-per-token", None, quiet=True)
    assert str(info.value) == ("Exercise 17-1, 0 of 1 part correct; not yet answered: "
                               "(a-per-token).")


def test_checks_block_turns_an_undefined_answer_into_a_message(nbgrader):
    with pytest.raises(grading.NotYetCorrect) as info:
        with grading.checks():
            grading.check("8-3", "c-saved-b8", saved_blocks_never_defined, quiet=True)  # noqa: F821
    assert "'saved_blocks_never_defined' is not defined" in str(info.value)
    assert "Run All" in str(info.value)
    assert isinstance(info.value.__cause__, NameError)


def test_checks_block_lets_other_errors_through_and_always_closes(nbgrader):
    with pytest.raises(ZeroDivisionError):
        with grading.checks():
            grading.check("8-3", "c-saved-b8", None, quiet=True)
            1 / 0
    assert not grading._COLLECTING
    # nested blocks: the inner verdict is raised by the inner block only
    with pytest.raises(grading.NotYetCorrect) as info:
        with grading.checks() as outer:
            grading.check("8-3", "c-saved-b8", _answer("8-3", "c-saved-b8"), quiet=True)
            with contextlib.suppress(grading.NotYetCorrect):
                with grading.checks():
                    grading.check("8-3", "c-saved-b16", None, quiet=True)
            grading.check("8-3", "c-saved-b32", None, quiet=True)
    assert [r.part for r in outer] == ["c-saved-b8", "c-saved-b32"]
    assert "(c-saved-b32)" in str(info.value) and "(c-saved-b16)" not in str(info.value)
    assert not grading._COLLECTING


def test_outside_nbgrader_a_block_shows_its_verdict_and_ends_normally(capsys):
    right = {b: _answer("8-3", f"b-indep-b{b}") for b in (8, 16, 32)}
    answers = {8: right[8], 16: right[16] * 1.3}          # 32 not answered yet
    with grading.checks() as results:
        for b in (8, 16, 32):
            grading.check("8-3", f"b-indep-b{b}", answers, key=b)
    assert [r.ok for r in results] == [True, False, False]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[2].startswith("(b-indep-b32) not yet answered")
    assert out[3] == ("Exercise 8-3, 1 of 3 parts correct; not yet answered: (b-indep-b32); "
                      "not yet right: (b-indep-b16).")
    # a cell whose answers are not defined yet says what to do, and Run All goes on
    with grading.checks():
        grading.check("8-3", "c-saved-b8", saved_blocks_never_defined, quiet=True)  # noqa: F821
    said = capsys.readouterr().out
    assert "'saved_blocks_never_defined' is not defined" in said and "Run All" in said
    assert not grading._COLLECTING


def test_any_nbgrader_run_makes_a_block_fail(monkeypatch):
    """Autograde and the students' Validate button both set NBGRADER_EXECUTION."""
    for mode in ("autograde", "validate"):
        monkeypatch.setenv("NBGRADER_EXECUTION", mode)
        with pytest.raises(grading.NotYetCorrect):
            with grading.checks():
                grading.check("8-3", "c-saved-b8", None, quiet=True)


def test_check_outside_a_block_collects_nothing():
    grading.check("8-3", "c-saved-b8", None, quiet=True)
    assert not grading._COLLECTING


# --- the exercises, run cell by cell as Run All runs them ---------------------------------------

def _make_exercises():
    spec = importlib.util.spec_from_file_location("make_exercises",
                                                  ROOT / "tools" / "make_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def _notebooks(path: Path):
    """(solution notebook, the student's copy that make_exercises generates from it)."""
    solution = jupytext.read(path, config=load_jupytext_config(str(path)))
    blank = _make_exercises().strip_notebook(copy.deepcopy(solution))
    return solution, blank


def _role(cell) -> str:
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("grade"):
        return "check"
    return "answer" if meta.get("solution") else "given"


class _Outcome:
    def __init__(self, index, role, source, error, output):
        self.index, self.role, self.source = index, role, source
        self.error, self.output = error, output


def _run(cells, namespace=None, stop_before=None) -> tuple[list[_Outcome], dict]:
    """Execute code cells in one namespace, going on after an error (the exercises' unanswered
    cells are tagged raises-exception, which Run All does not stop at)."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    outcomes = []
    for index, cell in enumerate(cells):
        if index == stop_before:
            break
        if cell.cell_type != "code":
            continue
        out = io.StringIO()
        error = None
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(cell.source, f"<cell {index}>", "exec"), namespace)
            except Exception as exc:      # noqa: BLE001 - recorded and judged by the test
                error = exc
        outcomes.append(_Outcome(index, _role(cell), cell.source, error, out.getvalue()))
    return outcomes, namespace


def _eid(path: Path) -> str:
    return path.stem[2:].replace("_", "-")


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=IDS)
def test_a_fresh_exercise_runs_to_the_end_saying_not_yet_answered(path):
    """What a student sees on Run All: no cell raises, and every part of the exercise gets its
    "not yet answered" line under its check cell."""
    eid = _eid(path)
    outcomes, _ = _run(_notebooks(path)[1].cells)
    assert [(o.source, repr(o.error)) for o in outcomes if o.error is not None] == []
    said = "".join(o.output for o in outcomes if o.role == "check")
    for part in grading.parts(eid):
        assert f"({part}) not yet answered" in said, part
    assert "not yet:" not in said and "correct:" not in said


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=IDS)
def test_under_nbgrader_a_fresh_exercise_fails_every_check_cell(path, nbgrader):
    eid = _eid(path)
    outcomes, _ = _run(_notebooks(path)[1].cells)
    named = []
    for o in (o for o in outcomes if o.role == "check"):
        assert isinstance(o.error, grading.NotYetCorrect), (o.source, repr(o.error))
        parts = [r.part for r in o.error.results]
        assert parts and all(not r.answered for r in o.error.results), o.source
        for part in parts:
            assert f"({part})" in str(o.error)
            assert f"({part}) not yet answered" in o.output
        named += parts
    assert sorted(named) == sorted(grading.parts(eid))
    # only the check cells fail: the stubs and the given data run
    assert all(o.error is None for o in outcomes if o.role in ("answer", "given"))


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=IDS)
def test_an_exercise_answered_down_to_the_middle_grades_what_is_answered(path, nbgrader):
    solution, blank = _notebooks(path)
    answers = [i for i, c in enumerate(solution.cells) if c.cell_type == "code"
               and _role(c) == "answer"]
    cut = answers[len(answers) // 2]          # answers before this cell are filled in
    cells = [s if i < cut else b for i, (s, b) in enumerate(zip(solution.cells, blank.cells))]
    outcomes, _ = _run(cells)
    before = [o for o in outcomes if o.role == "check" and o.index < cut]
    after = [o for o in outcomes if o.role == "check" and o.index > cut]
    assert before and after, path.name
    for o in before:
        assert o.error is None, (o.source, repr(o.error))
        assert "not yet" not in o.output
    for o in after:
        assert isinstance(o.error, grading.NotYetCorrect), (o.source, repr(o.error))
        assert all(r.ok or not r.answered for r in o.error.results), str(o.error)
        assert any(not r.answered for r in o.error.results)


def _checked_names(source: str) -> list[str]:
    """The answer variables a check cell passes to grading.check, in order."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "check" and len(node.args) >= 3
                and isinstance(node.args[2], ast.Name)):
            names.append(node.args[2].id)
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=IDS)
def test_one_missing_answer_in_a_cell_is_named_and_the_rest_are_graded(path, nbgrader):
    solution, _ = _notebooks(path)
    cells = solution.cells
    target = next(i for i, c in enumerate(cells) if c.cell_type == "code" and _role(c) == "check"
                  and len(_checked_names(c.source)) + ("key=" in c.source) >= 2)
    _, namespace = _run(cells, stop_before=target)
    variable = _checked_names(cells[target].source)[0]
    value = namespace[variable]
    if isinstance(value, dict):
        removed = next(iter(value))
        value.pop(removed)                     # one entry of an answer dict missing
    else:
        namespace[variable] = None             # one scalar answer missing
    outcomes, _ = _run([cells[target]], namespace)
    error = outcomes[0].error
    assert isinstance(error, grading.NotYetCorrect), repr(error)
    missing = [r.part for r in error.results if not r.answered]
    graded = [r.part for r in error.results if r.answered]
    assert missing and graded, str(error)
    assert all(r.ok for r in error.results if r.answered), str(error)
    for part in missing:
        assert f"({part})" in str(error)
    for part in graded:
        assert f"({part})" not in str(error)
        assert f"({part}) correct" in outcomes[0].output


def test_8_3_b_with_only_batch_8_filled(nbgrader):
    solution, _ = _notebooks(ROOT / "solutions" / "ex8_3.py")
    cells = solution.cells
    check_b = next(i for i, c in enumerate(cells)
                   if c.metadata.get("nbgrader", {}).get("grade_id") == "b_check")
    _, namespace = _run(cells, stop_before=check_b)
    for answers in (namespace["independent_mib"], namespace["shared_mib"]):
        for b in (16, 32):
            del answers[b]
    outcomes, _ = _run([cells[check_b]], namespace)
    assert str(outcomes[0].error) == (
        "Exercise 8-3, 4 of 8 parts correct; not yet answered: (b-indep-b16), (b-shared-b16), "
        "(b-indep-b32), (b-shared-b32).")


# --- stored outputs: what a student opens, and what a real kernel shows ----------------------

@pytest.mark.parametrize("path", SOLUTION_FILES, ids=IDS)
def test_stored_exercises_open_clean(path):
    """The question, the given data and empty answer cells: the unanswered cells are stored
    as not run, and nothing stored is an error, a traceback or a "not yet" line."""
    nb = nbformat.read(ROOT / "exercises" / f"{path.stem}.ipynb", as_version=4)
    unrun = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = json.dumps(cell.outputs)
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
        assert not [o for o in cell.outputs if o.get("name") == "stderr"], cell.source
        for banned in ("Traceback", "NotYetCorrect", "NotImplementedError", "not yet"):
            assert banned not in text, (banned, cell.source)
        if _role(cell) in ("answer", "check"):
            assert "raises-exception" in cell.metadata.get("tags", []), cell.source
            assert cell.outputs == [] and cell.execution_count is None, cell.source
            unrun += 1
    assert unrun >= 2, path.name


KERNEL_EXERCISES = ["ex8_3", "ex17_1"]


def _kernel_run(stem, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "exercises" / f"{stem}.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    checks = [c for c in nb.cells if c.cell_type == "code" and _role(c) == "check"]
    assert checks
    return nb, checks


def _amber_lines(cell):
    lines = [o for o in cell.outputs if o.output_type == "display_data"]
    assert lines, cell.source
    for line in lines:
        plain, rich = line.data["text/plain"], line.data["text/html"]
        assert "not yet answered" in plain
        assert "companion-verdict-open" in rich and html.escape(plain) in rich
    return lines


@pytest.mark.parametrize("stem", KERNEL_EXERCISES)
def test_a_real_kernel_runs_a_fresh_exercise_to_the_end_in_amber(stem, tmp_path, monkeypatch):
    """A copy of the stored exercise, run by nbclient through a real kernel as Run All runs it:
    no cell has an error output; each check cell shows each part's "not yet answered" line and
    the cell's summary, amber (coloured HTML with the same plain text)."""
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    nb, checks = _kernel_run(stem, tmp_path)
    errors = [(c.source, o.ename) for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert errors == []
    for cell in checks:
        lines = _amber_lines(cell)
        assert lines[-1].data["text/plain"].startswith("Exercise ")


@pytest.mark.parametrize("stem", KERNEL_EXERCISES)
def test_under_autograde_a_real_kernel_fails_blank_checks_with_one_line(stem, tmp_path,
                                                                        monkeypatch):
    """The same copy as nbgrader's autograde runs it: each check cell shows its lines, then
    NotYetCorrect as one line (IPython's _render_traceback_), with no traceback frames."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setenv("COMPANION_STUDENT", "alice")
    nb, checks = _kernel_run(stem, tmp_path)
    for cell in checks:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert len(errors) == 1 and errors[0].ename == "NotYetCorrect", cell.source
        assert errors[0].traceback == [f"NotYetCorrect: {errors[0].evalue}"]
        assert "not yet answered:" in errors[0].evalue
        _amber_lines(cell)
    given = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "given")
    assert f"Seed {grading.seed_for_student('alice')} " in given.outputs[0]["text"]
    assert not (ROOT / "exercises" / f"{stem}.ipynb").read_text().count('"ename"')


# --- how verdicts look: colour in IPython, plain text elsewhere ---------------------------------

def test_a_block_with_every_part_right_says_so(capsys):
    right = {b: _answer("8-3", f"b-indep-b{b}") for b in (8, 16)}
    with grading.checks():
        for b in (8, 16):
            grading.check("8-3", f"b-indep-b{b}", right, key=b)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "Exercise 8-3: all 2 parts of this cell correct."
    with grading.checks():
        grading.check("8-3", "b-indep-b8", right[8], quiet=True)
    assert capsys.readouterr().out == "Exercise 8-3: this cell's part is correct.\n"


def test_verdicts_are_coloured_html_inside_ipython_and_plain_text_outside(capsys, monkeypatch,
                                                                          nbgrader):
    import IPython
    from IPython.core.interactiveshell import InteractiveShell

    right = _answer("8-3", "b-indep-b8")
    shown = []
    shell = InteractiveShell.instance()
    try:
        monkeypatch.setattr(IPython.display, "display",
                            lambda obj, raw=False: shown.append((obj, raw)))
        with pytest.raises(grading.NotYetCorrect):
            with grading.checks():
                grading.check("8-3", "b-indep-b8", right)
                grading.check("8-3", "b-indep-b16", right)        # answered, off
                grading.check("8-3", "b-indep-b32", None)         # not answered
        with grading.checks():
            grading.check("8-3", "b-indep-b8", right)
    finally:
        InteractiveShell.clear_instance()
    assert capsys.readouterr().out == ""
    states = [re.search(r"companion-verdict-(\w+)", obj["text/html"]).group(1)
              for obj, raw in shown]
    assert states == ["ok", "off", "open", "ok", "ok"]
    colours = [re.search(r"color:(#\w+)", obj["text/html"]).group(1) for obj, _ in shown]
    assert len(set(colours[:3])) == 3, colours
    for obj, raw in shown:
        assert raw and html.escape(obj["text/plain"]) in obj["text/html"]
    assert shown[-1][0]["text/plain"] == "Exercise 8-3: this cell's part is correct."
    # outside IPython: the same words, printed
    with pytest.raises(grading.NotYetCorrect):
        with grading.checks():
            grading.check("8-3", "b-indep-b8", right)
            grading.check("8-3", "b-indep-b16", right)
            grading.check("8-3", "b-indep-b32", None)
    assert capsys.readouterr().out.splitlines() == [obj["text/plain"] for obj, _ in shown[:3]]
