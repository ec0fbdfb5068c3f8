"""solutions/ (the single source) and exercises/ (generated from it).

* exercises/ is exactly what tools/make_exercises.py generates (its --check mode);
* nothing of a solution leaks into an exercise: no line of a solution block, no solution
  markdown, no expected answer at seed 0, in the sources or the stored outputs;
* every solution notebook also passes for seeds 1 and 2 (all notebooks run in one kernel, each
  in a fresh namespace, with ``SEED = grading.student_seed()`` replaced in its given-data cell), and checks every
  part of its exercise;
* the nbgrader metadata is well formed (what nbgrader's validator enforces), the points of a
  notebook's grade cells add up to its exercise's points, and the instructor index lists every
  registered exercise.

The notebooks themselves (seed 0, stored outputs) are run by nbval in the main suite.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

from companion import grading

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SOLUTION_FILES = sorted(SOLUTIONS.glob("ex*.py"))
OTHER_SEEDS = (1, 2)


def _exercise_id(path: Path) -> str:
    """ex8_3.py -> "8-3", ex17_10.py -> "17-10"."""
    return path.stem[2:].replace("_", "-")


@lru_cache(maxsize=None)
def _read(path: Path):
    """The notebook of a py:percent file (cached; callers only read it)."""
    return jupytext.read(path, config=load_jupytext_config(str(path)))


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _ids(paths):
    return [p.stem for p in paths]


def _make_exercises():
    spec = importlib.util.spec_from_file_location("make_exercises",
                                                  ROOT / "tools" / "make_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- generation -------------------------------------------------------------------------------

def test_exercises_are_exactly_what_generation_yields():
    assert _make_exercises().main(["--check"]) == 0, "run `make exercises`"


def test_every_solution_has_an_exercise_and_a_registered_id():
    registered = grading.exercises()
    for path in SOLUTION_FILES:
        assert _exercise_id(path) in registered, path.name
        assert (EXERCISES / path.name).exists(), path.name
        assert path.with_suffix(".ipynb").exists(), path.name
    assert not (EXERCISES / "index.py").exists(), "the instructor index must stay in solutions/"


# --- no leaks ----------------------------------------------------------------------------------

_BLOCK = re.compile(r"### BEGIN SOLUTION[^\n]*\n(.*?)### END SOLUTION", re.S)


def _solution_lines(nb) -> tuple[set, set]:
    """(lines only a solution contains, lines of the rest of the notebook)."""
    secret, public = set(), set()
    for cell in nb.cells:
        if cell.cell_type == "markdown" and _nbgrader(cell).get("solution"):
            body = cell.source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
            secret |= {ln.strip() for ln in body.splitlines()}
            continue
        inside = set()
        for block in _BLOCK.findall(cell.source):
            inside |= {ln.strip() for ln in block.splitlines()}
        outside = _BLOCK.sub("", cell.source)
        secret |= inside
        public |= {ln.strip() for ln in outside.splitlines()}
    # blank lines and short comments say nothing about the solution
    return {ln for ln in secret if ln and (not ln.startswith("#") or len(ln) > 20)}, public


def _exercise_text(name: str) -> str:
    """The exercise's text file plus every stored output of its notebook."""
    text = (EXERCISES / f"{name}.py").read_text()
    nb = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        text += "\n" + cell.source
        for out in cell.get("outputs", []):
            text += "\n" + out.get("text", "")
            for key in ("text/plain", "text/html", "text/markdown"):
                value = out.get("data", {}).get(key, "")
                text += "\n" + ("".join(value) if isinstance(value, list) else value)
            text += "\n" + "\n".join(out.get("traceback", []))
    return text


def _significant_digits(s: str) -> int:
    s = s.replace(",", "").lstrip("-")
    digits = s.replace(".", "").lstrip("0") if "." in s else s.lstrip("0").rstrip("0")
    return len(re.sub(r"\D", "", digits))


def _renderings(x: float) -> set[str]:
    """How an answer might appear in a file, keeping those with at least 3 significant digits
    (shorter numbers are indistinguishable from the given data)."""
    out = {f"{x:.{d}g}" for d in (3, 4, 5, 6)} | {f"{x:.{d}f}" for d in (1, 2, 3)}
    out |= {repr(float(x)), f"{x:,.0f}", f"{x:,.1f}", f"{x:,.2f}"}
    if float(x).is_integer():
        out |= {str(int(x)), f"{int(x):,}"}
    return {s for s in out if _significant_digits(s) >= 3}


def _has_number(text: str, token: str) -> bool:
    return re.search(rf"(?<![\d.,]){re.escape(token)}(?![\d])", text) is not None


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=_ids(SOLUTION_FILES))
def test_no_solution_code_or_markdown_leaks(path):
    if not (EXERCISES / path.name).exists():
        pytest.fail(f"exercises/{path.name} missing: run `make exercises`")
    secret, public = _solution_lines(_read(path))
    text = _exercise_text(path.stem)
    exercise_lines = {ln.strip() for ln in text.splitlines()}
    leaked = sorted(ln for ln in secret - public if ln in exercise_lines)
    assert not leaked, f"solution lines in exercises/{path.name}: {leaked[:5]}"
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "correct:" not in text, "a stored output shows a passed check"


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=_ids(SOLUTION_FILES))
def test_no_expected_answer_appears_in_the_exercise(path):
    if not (EXERCISES / path.name).exists():
        pytest.fail(f"exercises/{path.name} missing: run `make exercises`")
    eid = _exercise_id(path)
    ex = grading.exercises()[eid]
    answers = ex.solve(ex.make_params(0))
    text = _exercise_text(path.stem)
    # a number the question itself states is an input, even when an answer equals it
    # (a prefill's FLOP per byte equals its prompt length, say)
    statement = "\n".join(c.source for c in _read(path).cells
                          if c.cell_type == "markdown" and not _nbgrader(c).get("solution"))
    for part in ex.parts:
        if part.kind not in ("rel", "abs", "exact"):
            continue      # True/False and choices from a printed list are not numbers to hide
        for token in _renderings(answers[part.name]):
            if _has_number(statement, token):
                continue
            assert not _has_number(text, token), (
                f"exercises/{path.name} shows {token}, the answer of ({part.name})")


# --- other seeds -------------------------------------------------------------------------------

# Record every check a notebook makes, on the module (it survives %reset).
_RECORDER = """
import companion.grading as _grading
_grading._test_checked = []
_grading._test_original_check = _grading.check

def _recording_check(exercise, part, answer, seed=0, **kw):
    result = _grading._test_original_check(exercise, part, answer, seed=seed, **kw)
    _grading._test_checked.append([exercise, part, seed, bool(result)])
    return result

_grading.check = _recording_check
"""
_FRESH = "%reset -f\nimport companion.grading as _grading\n_grading._test_checked.clear()"
_REPORT = ("import json as _json\nimport companion.grading as _grading\n"
           "print(_json.dumps(_grading._test_checked))")


@pytest.fixture(scope="module")
def kernel():
    """One kernel for every notebook and seed (starting kernels is the slow part)."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}})
    client = NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(SOLUTIONS)}})
    with client.setup_kernel():
        _run(client, _RECORDER)
        yield client


def _run(client, source: str):
    cell = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(cell)
    client.execute_cell(cell, len(client.nb.cells) - 1)
    return cell


def _seeded_cells(path: Path, seed: int) -> list[str]:
    cells = [c for c in _read(path).cells if c.cell_type == "code"]
    given = [c for c in cells if _nbgrader(c).get("grade_id") == "given"]
    line = "SEED = grading.student_seed()"
    assert len(given) == 1 and given[0].source.count(line) == 1, (
        f"{path.name}: the given-data cell must set {line} once")
    out = []
    for c in cells:
        source = c.source.replace(line, f"SEED = {seed}", 1) if c is given[0] else c.source
        out.append(f"# {path.name}, seed {seed}\n{source}")
    return out


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=_ids(SOLUTION_FILES))
def test_solution_passes_for_other_seeds(kernel, path):
    eid = _exercise_id(path)
    for seed in OTHER_SEEDS:
        # a fresh namespace per run: nothing carries over between notebooks or seeds
        _run(kernel, _FRESH)
        for source in _seeded_cells(path, seed):
            _run(kernel, source)
        cell = _run(kernel, _REPORT)
        checked = json.loads("".join(o.get("text", "") for o in cell.outputs))
        assert all(ok for *_, ok in checked)
        parts = {p for e, p, s, _ in checked if e == eid and s == seed}
        missing = set(grading.parts(eid)) - parts
        assert not missing, f"{path.name} never checks {sorted(missing)} at seed {seed}"


# --- nbgrader metadata, points, index ----------------------------------------------------------

@pytest.mark.parametrize("path", SOLUTION_FILES, ids=lambda p: p.stem)
def test_nbgrader_metadata_is_valid(path):
    """The rules of nbgrader's MetadataValidatorV3, without installing nbgrader."""
    seen = set()
    for cell in _read(path).cells:
        meta = _nbgrader(cell)
        if not meta:
            continue
        assert meta.get("schema_version") == 3
        grade, solution, locked = meta["grade"], meta["solution"], meta["locked"]
        if grade or solution or locked:
            assert meta.get("grade_id"), cell.source[:60]
            assert meta["grade_id"] not in seen, f"duplicate grade_id {meta['grade_id']}"
            seen.add(meta["grade_id"])
        if grade:
            assert "points" in meta, meta["grade_id"]
        if cell.cell_type == "markdown" and not meta.get("task", False):
            assert bool(grade) == bool(solution), (
                f"markdown cell {meta.get('grade_id')}: nbgrader needs grade and solution "
                f"together")
        if cell.cell_type == "code" and grade:
            assert not solution and locked, f"{meta['grade_id']}: a check cell must be locked"


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=_ids(SOLUTION_FILES))
def test_grade_cell_points_add_up_to_the_exercise(path):
    eid = _exercise_id(path)
    cells = _read(path).cells
    points = sum(_nbgrader(c).get("points", 0) for c in cells
                 if c.cell_type == "code" and _nbgrader(c).get("grade"))
    assert points == sum(p.points for p in grading.exercises()[eid].parts)
    for c in cells:
        if c.cell_type == "code" and _nbgrader(c).get("grade"):
            assert "grading.check(" in c.source and "SOLUTION" not in c.source


def test_index_lists_every_registered_exercise():
    nb = nbformat.read(SOLUTIONS / "index.ipynb", as_version=4)
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)
    for eid, ex in grading.exercises().items():
        points = sum(p.points for p in ex.parts)
        assert f"Exercise {eid} ({ex.section}): {ex.title} -- {len(ex.parts)} parts, " \
               f"{points} points" in text, f"re-execute solutions/index.py ({eid} missing)"


def test_the_docs_state_each_chapters_points_as_the_exercises_sum_them():
    """README, solutions/README and the instructors' page each type the two totals (an
    instructor reads them before opening a notebook): they must be the parts' sum."""
    totals: dict[str, int] = {}
    for eid, ex in grading.exercises().items():
        chapter = eid.split("-")[0]
        totals[chapter] = totals.get(chapter, 0) + sum(p.points for p in ex.parts)
    for doc in ("README.md", "solutions/README.md", "docs/instructors.md"):
        text = " ".join((ROOT / doc).read_text().split())
        for chapter, points in totals.items():
            last = max(int(eid.split("-")[1]) for eid in grading.exercises()
                       if eid.startswith(f"{chapter}-"))
            stated = re.findall(rf"{chapter}-1 to {chapter}-{last}\b[^)]{{0,40}}?\b(\d+) points",
                                text)
            assert stated, f"{doc}: no '({chapter}-1 to {chapter}-{last} ... (N points)' found"
            assert all(int(n) == points for n in stated), \
                f"{doc} states {stated} points for Chapter {chapter}; the parts sum to {points}"


# --- Exercise 8-1's graded numbers, from the chapter's inputs alone ---------------------------

def test_8_1_weight_fraction_at_the_capacity_batch():
    # (d) at seed 0: D_w = 15,136,811,008 B, k = 2 x 36 x 8 x 128 x 2 = 147,456 B (8.2.1); the
    # capacities are floor(12288 / 324) = 37 and floor(12288 / 1188) = 10 (8.1.2)
    d_w, k = 15_136_811_008, 2 * 36 * 8 * 128 * 2
    answers = grading.exercises()["8-1"].solve(grading.params("8-1", 0))
    for name, context, fit in (("short", 2048, 37), ("long", 8192, 10)):
        assert answers[f"c-{name}"] == fit
        expected = (d_w / fit) / (d_w / fit + context * k)
        assert answers[f"d-{name}"] == pytest.approx(expected, rel=1e-12)
        assert expected > 0.5        # below b_KV the weight read is still the larger part
    assert answers["d-short"] == pytest.approx(0.5753, abs=5e-5)
    assert answers["d-long"] == pytest.approx(0.5562, abs=5e-5)


def test_8_1_variants_make_the_last_output_token_count():
    # at seed 0, 2048 + 255 and 2048 + 256 tokens both take 2304 slots in 16-token blocks; every
    # variant handed out must instead lose at least one request when a student reserves
    # prompt + G tokens instead of prompt + G - 1
    def fits(g, context, held):
        slots = -(-held // g["block_tokens"]) * g["block_tokens"]
        return g["kv_budget_bytes"] // (slots * g["kv_bytes_per_token"])

    chapter = grading.params("8-1", 0)
    assert all(fits(chapter, L, L + 255) == fits(chapter, L, L + 256)
               for L in chapter["contexts"])
    for seed in range(1, 40):
        g = grading.params("8-1", seed)
        G = g["output_tokens"]
        assert any(fits(g, L, L + G - 1) != fits(g, L, L + G) for L in g["contexts"]), seed
        assert (G - 1) % g["block_tokens"] == 0, seed
