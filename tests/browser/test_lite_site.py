"""The lite site as a reader gets it: ``make lite`` builds it from this checkout into a scratch
folder, Python's http.server serves it on 127.0.0.1, and headless Chromium uses it with every
request that is not for 127.0.0.1 blocked and recorded; the companion runs in the page's
Pyodide kernel, nothing else computes.

- the site serves every notebook and exercise, opens on START_HERE, keeps every cell in the
  page (windowingMode "none") and never asks PyPI;
- a section notebook runs top to bottom (Run All) with no error output, draws its plain figure
  and its explorer, and the explorer answers a slider dragged with the mouse with the readout
  and figure that ``companion`` computes here;
- in two section notebooks, a reader sees each paragraph once: the depth folds stay closed
  through Run All, no visible code cell writes prose, a worked answer opens on a click and
  the explorers stay at the chapter's setting (``reader_view``, as in JupyterLab);
- an exercise graded in the page: one answer right, one wrong (both computed here with
  ``companion.grading``, only typed into the cell), and the check cell's output gives each part's
  verdict and the cell's verdict exactly as ``companion.grading`` words them;
- no request left 127.0.0.1, no local file was missing, and nothing logged an error.

Where Chromium or the build cannot run (no npm and no cached Pyodide, or the registries out of
reach), the tests skip saying so (under CI they fail). Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser

ROOT = H.ROOT
sys.path.insert(0, str(ROOT / "tools"))
import lite_build  # noqa: E402  (tools/ is no package: the build's own list of notebooks)

START_HERE = "notebooks/START_HERE.ipynb"
# a short section notebook with a plain figure (shown with .show()) and one explorer: one Run
# All covers both kinds (each Pyodide kernel start and Run All costs about 10 s here; make
# bench ARGS=lite runs every notebook)
SECTION = "notebooks/ch17_performance/17_01_memory_hierarchy.ipynb"
EXPLORER_VARIABLE, PANEL, DRAGGED = "panel", "MemoryHierarchyPanel", ("sweep_gb", 0.1)
EXERCISE, EXERCISE_ID = "exercises/ex8_1.ipynb", "8-1"
# the lite build's failures that mean "cannot fetch its pinned artefacts here", not a bug
UNREACHABLE = re.compile(r"npm (ERR|error)|No matching distribution|Could not find a version|"
                         r"NewConnectionError|Temporary failure in name resolution|"
                         r"Network is unreachable|ConnectTimeoutError")
# Pyodide's start (its wheels, then the companion) in a fresh page, and a Run All in it
KERNEL_START_MS = 180_000
RUN_ALL_MS = 300_000


@pytest.fixture(scope="module")
def site(chromium, tmp_path_factory):
    """The lite site built with the project's own command into a scratch folder."""
    cached = list((ROOT / ".state" / "lite" / "cache").glob("pyodide-*.tgz"))
    if shutil.which("npm") is None and not cached:
        H.unavailable("the lite site cannot be built here: npm is missing (make lite takes "
                      "Pyodide from npm) and no Pyodide tarball is cached in .state/lite/cache")
    out = tmp_path_factory.mktemp("lite") / "site"
    started = time.perf_counter()
    build = subprocess.run(["make", "--no-print-directory", "lite", f"LITE_OUT={out}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if build.returncode != 0:
        said = build.stdout[-3000:] + build.stderr[-4000:]
        unreachable = UNREACHABLE.search(said)
        if unreachable:
            H.unavailable("the lite site cannot be built here: its pinned artefacts could not "
                          f"be fetched ({unreachable.group(0)}; see make lite)")
        raise AssertionError(f"make lite failed:\n{said}")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\nlite: built in {time.perf_counter() - started:.0f} s, {size / 2**20:.0f} MiB")
    return out


@pytest.fixture(scope="module")
def server(site, tmp_path_factory):
    srv = H.LiteSite(site, tmp_path_factory.mktemp("lite-server"))
    srv.start(timeout_s=60)
    try:
        yield srv
    finally:
        leftovers = srv.stop()
        assert not leftovers, f"processes left behind by http.server: {leftovers}"


@pytest.fixture
def reader(browsing):
    """The page of ``browsing``, kept to 127.0.0.1 (``lab_harness.local_only``)."""
    with H.local_only(browsing):
        yield browsing


def test_site_serves_every_notebook_offline(site):
    for path in lite_build.content_notebooks() + lite_build.content_data():
        assert (site / "files" / path).is_file(), f"the site does not serve {path}"
    assert lite_build.content_data(), "the lab's reference measurement should be served"
    assert (site / "lab" / "index.html").is_file()
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    # the start-up line is one of the site's extensions, served from the site
    startup = [e for e in config["federated_extensions"]
               if e["name"] == "llm-inference-companion-startup"]
    assert startup and (site / "extensions" / startup[0]["name"] / startup[0]["load"]).is_file()
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["disablePyPIFallback"] is True
    assert "llm-inference-companion" in kernel["loadPyodideOptions"]["packages"]
    # every cell stays in the page, as in `make lab`: the tests below count on it too
    tracker = config["settingsOverrides"]["@jupyterlab/notebook-extension:tracker"]
    assert tracker["windowingMode"] == "none"
    # an arrow key on a focused slider moves the slider, not the notebook's cell cursor: the
    # four cursor shortcuts are disabled where focus is inside an output (make lab's JupyterLab
    # leaves the keys to the slider already)
    shortcuts = config["settingsOverrides"]["@jupyterlab/shortcuts-extension:shortcuts"]
    arrows = {s["keys"][0]: s for s in shortcuts["shortcuts"] if not s.get("disabled")}
    disabled = {s["keys"][0] for s in shortcuts["shortcuts"] if s.get("disabled")}
    assert set(arrows) == disabled == {"ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"}
    assert all(s["selector"].endswith(":not(.jp-OutputArea-output *)") for s in arrows.values())


def test_site_opens_on_start_here(server, reader):
    page = reader.page
    page.goto(f"{server.base}/")
    page.wait_for_url(re.compile(re.escape(f"lab/index.html?path={START_HERE}") + "$"))
    tab = page.locator(".lm-DockPanel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
    tab.wait_for(timeout=120_000)
    assert tab.inner_text() == Path(START_HERE).name
    first = server.notebook(START_HERE)["cells"][0]["source"]
    title = re.search(r"^# (.+)$", "".join(first), re.M).group(1)
    page.locator(f"{H.ACTIVE} .jp-MarkdownCell h1").first.wait_for(timeout=60_000)
    assert title in page.locator(f"{H.ACTIVE} .jp-MarkdownCell h1").first.inner_text()
    H.screenshot(page, "lite_1_start_here")


def test_a_line_says_what_the_kernel_does_until_it_can_run_a_cell(server, reader):
    """While Pyodide starts, the notebook says so (a polite status, with its clock); once the
    kernel is idle the line says it is ready, then goes."""
    page = reader.page
    page.goto(server.notebook_url(START_HERE))
    line = page.locator(f"{H.ACTIVE} .companion-kernel-progress[role=status]")
    line.wait_for(state="visible", timeout=120_000)
    # the kernel takes seconds to start: the line is there before it is ready
    assert not page.evaluate(H.KERNEL_READY_JS, H.ACTIVE)
    assert line.inner_text().startswith("Starting Python in your browser")
    assert re.search(r"\d+ s so far", line.inner_text())
    H.wait_kernel_ready(page, 300_000)
    page.locator(f"{H.ACTIVE} .companion-kernel-progress.companion-ready").wait_for(
        state="attached", timeout=30_000)
    line.wait_for(state="detached", timeout=30_000)


def explorer_cell(nb: dict, variable: str) -> int:
    """Index among the code cells of the one that ends with ``<variable>.show()``."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    shows = re.compile(rf"^{re.escape(variable)}\.show\(\)\s*$", re.M)
    (index,) = [i for i, c in enumerate(code) if shows.search("".join(c["source"]))]
    return index


def test_section_runs_and_explorer_follows_its_slider(server, reader):
    """Run All of a section with no error output; its plain figure goes out through
    companion's own mimetype renderer in the Pyodide kernel too (plotly's would need nbformat,
    which the site does not ship) and every figure draws; its explorer follows a drag."""
    from companion import widgets

    page = reader.page
    panel_cls = getattr(widgets, PANEL)
    clock = H.Clock("lite 17.1")
    n_code = H.open_notebook(page, server, SECTION, timeout_ms=KERNEL_START_MS)
    clock.mark(f"notebook open, Pyodide kernel idle, {n_code} code cells attached")
    H.run_all_cells(page, n_code, timeout_ms=RUN_ALL_MS)
    clock.mark("run all cells finished")
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    nb = server.notebook(SECTION)
    figures = [o["data"] for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if "application/vnd.plotly.v1+json" in
               o.get("data", {})]
    # a plain figure stores no widget view beside it (an explorer's static figure does)
    assert any("application/vnd.jupyter.widget-view+json" not in d for d in figures), \
        f"{SECTION} stores no plain figure: pick a section that has one"
    H.wait_figures_rendered(page, page.locator(H.ACTIVE), len(figures))

    cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
    root = cells.nth(explorer_cell(nb, EXPLORER_VARIABLE)).locator(
        ".jp-OutputArea")
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    missing = H.check_controls(root, panel_cls)
    assert not missing, f"controls not rendered: {missing}"
    params = panel_cls().defaults()
    H.wait_for_state(page, root, H.expected_for(panel_cls, params), what="chapter's setting")
    H.screenshot(root, "lite_2_explorer_before")
    name, fraction = DRAGGED
    params = H.move_and_verify(page, root, panel_cls, params, name, drag_to=fraction)
    clock.mark(f"drag of {name} to {params[name]}: page == companion")
    # and a reader's arrow key on the focused slider steps it (JupyterLab 4.4's notebook
    # shortcuts once took the key: the site's settings leave it to the slider)
    params = H.move_and_verify(page, root, panel_cls, params, name)
    clock.mark(f"ArrowRight on {name}, to {params[name]}: page == companion")
    H.screenshot(root, "lite_3_explorer_after")
    assert not H.page_problems(page, H.ACTIVE)


# the reader's view (tests/browser/reader_view.py) in two notebooks, as JupyterLab checks it
# in every section notebook (tests/browser/test_reading_in_lab.py)
READER_VIEW = [SECTION, "notebooks/ch08_inference_optimization/08_1_request_lifecycle.ipynb"]


@pytest.mark.parametrize("path", READER_VIEW, ids=lambda p: Path(p).stem)
def test_a_reader_sees_prose_once_and_runs_all_without_moving_an_explorer(path, server, reader):
    import reader_view

    n_code = H.open_notebook(reader.page, server, path, timeout_ms=KERNEL_START_MS)
    counts = reader_view.check_reader_view(reader.page, server.notebook(path), n_code,
                                           run_all_ms=RUN_ALL_MS)
    assert counts["explorers"] >= 1


def test_a_fresh_exercise_runs_to_the_end_calmly(server, reader):
    """As in JupyterLab (test_reading_in_lab): Run All on a fresh exercise in the Pyodide
    kernel goes to the end, no traceback, amber 'not yet answered' under every check cell."""
    import reader_view

    n_code = H.open_notebook(reader.page, server, EXERCISE, timeout_ms=KERNEL_START_MS)
    assert reader_view.check_fresh_exercise(reader.page, server.notebook(EXERCISE), n_code,
                                            run_all_ms=RUN_ALL_MS) >= 2


MEASUREMENTS = "notebooks/how_good_are_these_models.ipynb"


def test_the_measurements_notebook_runs_in_the_page(server, reader):
    """'How good are these models?' reads its reference set from the companion's wheel (the
    measurement CSVs are package data) and runs to the end in Pyodide, figures drawn."""
    page = reader.page
    n_code = H.open_notebook(page, server, MEASUREMENTS, timeout_ms=KERNEL_START_MS)
    H.run_all_cells(page, n_code, timeout_ms=RUN_ALL_MS)
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    nb = server.notebook(MEASUREMENTS)
    figures = sum("application/vnd.plotly.v1+json" in o.get("data", {})
                  for c in nb["cells"] for o in c.get("outputs", []))
    assert figures >= 2
    H.wait_figures_rendered(page, page.locator(H.ACTIVE), figures)


def graded(answers: dict) -> tuple[list[str], str]:
    """What the exercise's (b)/(c) check cell says for ``answers`` (its variables b_kv and
    fits), computed here: each part's line (its mark: correct, not yet right, not yet
    answered, then its message) and the cell's verdict."""
    from companion import grading

    given = grading.params(EXERCISE_ID)
    short, long_ = given["contexts"]
    import os
    os.environ["NBGRADER_EXECUTION"] = "validate"     # here only: to catch the verdict
    try:
        with grading.checks() as results:
            for L, name in ((short, "short"), (long_, "long")):
                grading.check(EXERCISE_ID, f"b-{name}", answers["b_kv"], key=L, quiet=True)
                grading.check(EXERCISE_ID, f"c-{name}", answers["fits"], key=L, quiet=True)
    except grading.NotYetCorrect as verdict:
        marks = ["\u2713" if r.ok else "\u2717" if r.answered else "\u2026"
                 for r in verdict.results]
        return [f"{m} {r.message}" for m, r in zip(marks, verdict.results)], str(verdict)
    finally:
        del os.environ["NBGRADER_EXECUTION"]
    raise AssertionError(f"every part correct, a wrong answer was meant: {results}")


def test_exercise_check_cell_grades_a_right_and_a_wrong_answer(server, reader):
    from companion import grading

    page = reader.page
    ex = grading.exercises()[EXERCISE_ID]
    given = grading.params(EXERCISE_ID)
    short, long_ = given["contexts"]
    right = ex.solve(given)["b-short"]
    wrong = ex.solve(given)["b-long"] * 2 + 3
    assert grading.check(EXERCISE_ID, "b-short", right, quiet=True)
    assert not grading.check(EXERCISE_ID, "b-long", wrong, quiet=True)
    messages, verdict = graded({"b_kv": {short: right, long_: wrong}, "fits": {}})

    nb = server.notebook(EXERCISE)
    H.open_notebook(page, server, EXERCISE, timeout_ms=KERNEL_START_MS)
    H._menu(page, "Edit", "Clear Outputs of All Cells")
    cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
    H.type_into_cell(page, cells.nth(H.cell_by_grade_id(nb, "bc_answer")),
                     f"b_kv = {{short: {right!r}, long_: {wrong!r}}}; fits = {{}}")
    for grade_id in ("given", "bc_answer", "bc_check"):
        H.run_cell(page, cells.nth(H.cell_by_grade_id(nb, grade_id)))
    check = cells.nth(H.cell_by_grade_id(nb, "bc_check"))
    # each part's line, then the cell's verdict as a line of its own; no error output
    check.locator(".companion-verdict").nth(len(messages)).wait_for(timeout=60_000)
    shown = [H.html_text(t) for t in check.locator(".companion-verdict").all_inner_texts()]
    assert shown == [H.html_text(m) for m in messages] + [H.html_text(f"\u2717 {verdict}")], shown
    assert any("(b-short) correct" in m for m in messages)
    assert any("(b-long) not yet:" in m for m in messages)
    assert check.locator(H.ERROR_OUTPUT).count() == 0
    H.screenshot(check, "lite_4_exercise_verdicts")

