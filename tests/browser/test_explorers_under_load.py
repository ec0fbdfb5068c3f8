"""Explorers never come up empty, even on a busy machine (issue 11, item 4).

Six explorers open at once (one notebook, tests/browser/many_explorers.py) while two CPU
burners keep both cores busy, in JupyterLab (Run All) and in Voila (the page executes the
notebook while it streams). Every figure must render with the data ``companion`` computes,
and each must follow an ArrowRight on its slider. plotly's FigureWidget failed here: under
load anywidget's 2 s model-initialisation timeout left figures without data or deaf to
their sliders.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from playwright.sync_api import expect

import lab_harness as H
import many_explorers as M

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_S = 180  # generous: the point is that it happens, not how fast


@pytest.fixture
def cpu_burners():
    """One busy-looping process per core for the duration of the test (stopped by PID)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 2)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)


@pytest.fixture(scope="module")
def notebook():
    return M.write_notebook("explorers_under_load")


def _check_all(page, roots) -> None:
    # a kernel that has finished has not yet drawn every widget view: wait until it has
    expect(roots).to_have_count(len(M.EXPLORERS), timeout=TIMEOUT_S * 1000)
    for i, spec in enumerate(M.EXPLORERS):
        M.check_explorer(page, roots.nth(i), spec, TIMEOUT_S)
    problems = H.page_problems(page)
    assert not problems, "\n".join(problems)


def test_lab_explorers_render_and_follow_under_load(lab, browsing, notebook, cpu_burners):
    page = browsing.page
    page.set_default_timeout(TIMEOUT_S * 1000)
    try:
        n_code = H.open_notebook(page, lab, notebook, timeout_ms=TIMEOUT_S * 1000)
        H.run_all_cells(page, n_code, timeout_ms=TIMEOUT_S * 1000)
        _check_all(page, M.explorer_roots(page, H.ACTIVE))
        assert not browsing.log.external, browsing.log.external[:5]
    finally:
        lab.shutdown_notebook(notebook)


def test_voila_explorers_render_and_follow_under_load(chromium, tmp_path, browsing, notebook,
                                                      cpu_burners):
    missing = H.voila_missing()
    if missing:
        H.unavailable(missing)
    server = H.VoilaServer(notebook, tmp_path / "voila-state")
    server.start(timeout_s=TIMEOUT_S)
    try:
        page = browsing.page
        page.set_default_timeout(TIMEOUT_S * 1000)
        page.goto(f"{server.base}/", timeout=TIMEOUT_S * 1000)
        H.wait_figures_rendered(page, page.locator("body"), len(M.EXPLORERS),
                                timeout_s=TIMEOUT_S)
        _check_all(page, M.explorer_roots(page))
        assert not browsing.log.external, browsing.log.external[:5]
    finally:
        leftovers = server.stop()
        assert not leftovers, f"processes left behind by Voila had to be killed: {leftovers}"
