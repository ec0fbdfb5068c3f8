"""`make lab` opens straight into START_HERE.ipynb, with no first-run dialog over it, for root
and non-root alike, in the student's working copy (never the tracked notebooks).

The real `make lab` starts the real JupyterLab (fresh state: no user settings, no workspace,
as on a new clone; the server flags a headless test needs come through LAB_ARGS, and
--allow-root is not among them: run as root, as CI and this machine run, the test shows that
`make lab` itself adds it; `make -n lab` as an unprivileged user shows it does not), Chromium
opens the URL of the redirect file the server writes for the user's browser, and the first screen must be START_HERE as the active tab,
with no dialog and no notification toast (JupyterLab's "notified about official Jupyter
news?" prompt is a toast) during the first seconds. The control runs the same command
without the project's settings file (an empty app settings dir; the server flags stay, so
nothing is fetched) and must see the news prompt, so the check would catch its return.
`make lab` first creates the working copy (WORK, here a scratch folder) and opens its
START_HERE; a second run keeps the student's edits and adds only files missing from it.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser

START_HERE = "notebooks/START_HERE.ipynb"
DIALOG = ".jp-Dialog"
TOAST = ".Toastify__toast"
# how long a first-run prompt gets to appear after the notebook is on screen
PROMPT_WINDOW_S = 8.0


class MakeLab(H.LabServer):
    """`make lab` itself, with its own state folder and the flags a headless test needs."""

    name = "make-lab"

    def __init__(self, state: Path, project_settings: bool = True):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
        super().__init__(state, env)
        self.project_settings = project_settings
        self.work = self.state / "my-work"
        # autosave off so that opening the notebook can never rewrite it (the one user
        # setting written; the first-run prompts are what is under test)
        H._write_json(self.state / "lab-user-settings" / "@jupyterlab" / "docmanager-extension"
                      / "plugin.jupyterlab-settings", {"autosave": False})

    def command(self) -> list[str]:
        args = [f"--no-browser --ip=127.0.0.1 --port={self.port}",
                f"--IdentityProvider.token={self.token} --ServerApp.port_retries=0",
                f"--FileCheckpoints.checkpoint_dir={self.state / 'checkpoints'}",
                # window.jupyterapp: Run All's progress from the cells' models (lab_harness)
                "--LabApp.expose_app_in_browser=True"]
        cmd = ["make", "--no-print-directory", "lab", f"STATE={self.state}", f"WORK={self.work}"]
        if not self.project_settings:
            empty = self.state / "no-app-settings"
            empty.mkdir(parents=True, exist_ok=True)
            args.append(f"--LabApp.app_settings_dir={empty}")
        return cmd + ["LAB_ARGS=" + " ".join(args)]

    def browser_url(self, timeout_s: float = 30.0) -> str:
        """Where the user's browser goes: the URL in the redirect file the server writes for
        the file `make lab` names (jpserver-file-to-run-<pid>-open.html, token included)."""
        deadline = time.monotonic() + timeout_s
        runtime = self.state / "jupyter-runtime"
        while time.monotonic() < deadline:
            for page in runtime.glob("jpserver-file-to-run-*-open.html"):
                m = re.search(r'<a href="([^"]+)"', page.read_text())
                if m:
                    return html.unescape(m.group(1))
            time.sleep(0.25)
        raise AssertionError(f"no redirect file for the notebook in {runtime}:\n"
                             + self.log_tail())

    def stop(self) -> list[str]:
        """Stop JupyterLab (the child of make) by its PID, then make."""
        if self.proc is None:
            return []
        if self.proc.poll() is None:
            self.shutdown_kernels()
        for pid in H.descendants(self.proc.pid):
            try:
                if b"jupyter" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGTERM)
            except (OSError, ProcessLookupError):
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        return super().stop()


NEWS_PROMPT_SHOWN = """([dialog, toast]) => [...document.querySelectorAll(`${dialog}, ${toast}`)]
    .some(e => /news/i.test(e.innerText))"""


def first_screen(browser, server: MakeLab, shot: str, expect_prompt: bool = False) -> dict:
    """What the first screen shows once the notebook is on it, after the window a first-run
    prompt gets to appear; where one is expected, as soon as it appears within that window (the
    same window: the control shows that a prompt would be seen in it)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    log = H.NetworkLog()
    log.attach_context(context)
    page = context.new_page()
    log.attach_page(page)
    try:
        page.goto(server.browser_url(), timeout=120_000)
        page.wait_for_selector(f"{H.ACTIVE} .jp-Cell", state="attached", timeout=120_000)
        # the notebook's kernel up before anything else: a server stopped while it still starts
        # one can take over 30 s to stop, and then is killed (seen once in 8 control runs)
        H.wait_kernel_ready(page, timeout_ms=120_000)
        if expect_prompt:
            try:
                page.wait_for_function(NEWS_PROMPT_SHOWN, arg=[DIALOG, TOAST],
                                       timeout=PROMPT_WINDOW_S * 1000)
            except PlaywrightTimeout:
                pass  # the caller's assertion says what the screen showed instead
        else:  # when nothing may appear there is no condition to wait for: the whole window
            time.sleep(PROMPT_WINDOW_S)
        seen = page.evaluate("""([dialog, toast]) => ({
            tab: (document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')
                  || {}).textContent || '',
            tabs: [...document.querySelectorAll('.lm-DockPanel .lm-TabBar-tab')]
                  .map(t => t.textContent),
            dialogs: [...document.querySelectorAll(dialog)].map(d => d.innerText),
            toasts: [...document.querySelectorAll(toast)].map(t => t.innerText),
            url: location.pathname,
        })""", [DIALOG, TOAST])
        seen["screenshot"] = str(H.screenshot(page, shot))
        seen["external"] = list(log.external)
        return seen
    finally:
        context.close()


@pytest.fixture
def make_lab(chromium, tmp_path):
    servers = []

    def start(project_settings: bool = True, state: Path | None = None) -> MakeLab:
        """`make lab` on a fresh state folder, or again on ``state``."""
        server = MakeLab(state or tmp_path / f"state-{len(servers)}", project_settings)
        servers.append(server)
        return server.start(timeout_s=180)

    yield start
    for server in servers:
        leftovers = server.stop()
        assert not leftovers, f"processes left behind by make lab had to be killed: {leftovers}"


def test_make_lab_opens_start_here_with_no_dialog_and_a_rerun_keeps_the_work(browser, make_lab):
    """The first screen of `make lab` on a fresh state; then a student's edit survives the next
    `make lab` on that state, and a file deleted from the copy comes back. (One test: each
    start and first screen costs about 15 s, most of it the window a prompt gets to appear.)"""
    server = make_lab()
    seen = first_screen(browser, server, "make_lab_first_screen")
    assert seen["url"].endswith("/lab/tree/" + START_HERE), seen["url"]
    # the server's root is the working copy, which holds what the repository has
    assert (server.work / START_HERE).is_file() and (server.work / "exercises/ex8_3.ipynb").is_file()
    log = server.log_tail(400)
    assert str(server.work) in log, "the server does not serve the working copy"
    # what `make lab` prints is what a student needs: no warning that reads like a failure
    # (setuptools' editable-install notice, ServerApp.token's deprecation, ...)
    assert not re.search(r"Warning\b|WARNING|!!", log), \
        [line for line in log.splitlines() if re.search(r"Warning\b|WARNING|!!", line)]
    assert seen["tab"].strip() == "START_HERE.ipynb", seen
    assert seen["tabs"] == [seen["tab"]], f"other tabs open: {seen['tabs']}"
    assert not seen["dialogs"], f"a dialog covers the notebook: {seen['dialogs']}"
    assert not seen["toasts"], f"a notification pops up: {seen['toasts']}"
    assert not seen["external"], seen["external"]

    leftovers = server.stop()
    assert not leftovers, f"processes left behind by make lab had to be killed: {leftovers}"
    mine = server.work / START_HERE
    mine.write_text(mine.read_text().replace("Start here", "Start here (my notes)", 1))
    (server.work / "exercises/ex8_3.ipynb").unlink()
    again = make_lab(state=server.state)
    assert "Start here (my notes)" in mine.read_text()
    assert (server.work / "exercises/ex8_3.ipynb").read_bytes() == \
        (H.ROOT / "exercises/ex8_3.ipynb").read_bytes()
    assert again.work == server.work


def test_control_without_project_settings_shows_the_news_prompt(browser, make_lab):
    """The same command without the project's settings: the prompt the first test rules out
    does appear, so its absence there is the project's doing and the detection works."""
    seen = first_screen(browser, make_lab(project_settings=False), "make_lab_control_no_settings",
                        expect_prompt=True)
    assert any("news" in t.lower() for t in seen["toasts"] + seen["dialogs"]), json.dumps(seen)


def test_make_lab_runs_as_root_without_a_flag():
    """CI and this machine run as root: the browser tests above then start `make lab` with no
    --allow-root in LAB_ARGS. The flag is `make lab`'s own doing, and only for root."""
    dry = ["make", "--no-print-directory", "-n", "lab", "WORK=/tmp/unused"]
    root_cmd = subprocess.run(dry, cwd=H.ROOT, capture_output=True, text=True, check=True).stdout
    lab_line = next(line for line in root_cmd.splitlines() if "jupyter lab" in line)
    assert ("--allow-root" in lab_line) == (os.geteuid() == 0), lab_line
    if os.geteuid() == 0:
        # the same dry run as an unprivileged user: no --allow-root
        nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 *dry], cwd=H.ROOT, capture_output=True, text=True)
        assert nobody.returncode == 0, nobody.stderr
        lab_line = next(line for line in nobody.stdout.splitlines() if "jupyter lab" in line)
        assert "--allow-root" not in lab_line, lab_line


SECTION = "notebooks/ch08_inference_optimization/08_1_request_lifecycle.ipynb"
EXERCISE, EXERCISE_ID = "exercises/ex8_1.ipynb", "8-1"


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=H.ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_a_students_first_hour_leaves_the_repository_as_it_was(browser, make_lab):
    """Issue 23's first hour, as root on this clone: `make lab`, START_HERE run to the end, one
    section run to the end, one exercise answered wrong and then right, saved. The student's
    saved work is in the working copy, and `git status` is what it was before."""
    from companion import grading

    before = _git_status()
    server = make_lab()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(server.browser_url(), timeout=120_000)
        H.wait_kernel_ready(page, timeout_ms=120_000)
        for path in (START_HERE, SECTION):
            n_code = H.open_notebook(page, server, path)
            H.run_all_cells(page, n_code)
            assert not H.page_problems(page, H.ACTIVE), path
            assert page.locator(f"{H.ACTIVE} {H.ERROR_OUTPUT}").count() == 0, path
            server.shutdown_notebook(path)

        ex = grading.exercises()[EXERCISE_ID]
        given = grading.params(EXERCISE_ID)
        short, long_ = given["contexts"]
        solved = ex.solve(given)
        nb = json.loads((server.work / EXERCISE).read_text())
        H.open_notebook(page, server, EXERCISE)
        # as the lite test does: no stored prompt number can pass for a run
        H._menu(page, "Edit", "Clear Outputs of All Cells")
        cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
        answer = cells.nth(H.cell_by_grade_id(nb, "bc_answer"))
        check = cells.nth(H.cell_by_grade_id(nb, "bc_check"))
        H.run_cell(page, cells.nth(H.cell_by_grade_id(nb, "given")))
        # wrong first: the long context's fit is off by one, a slip the checker names
        H.type_into_cell(page, answer, f"b_kv = {{short: {solved['b-short']!r}, long_: "
                                       f"{solved['b-long']!r}}}; fits = {{short: "
                                       f"{solved['c-short']!r}, long_: {solved['c-long'] + 1!r}}}")
        H.run_cell(page, answer)
        H.run_cell(page, check)
        # each part's line, then the cell's summary line; outside nbgrader no error output
        check.locator(".companion-verdict", has_text="(c-long) not yet").wait_for(timeout=60_000)
        shown = " ".join(check.locator(".companion-verdict").all_inner_texts())
        assert "(c-long) not yet" in shown and "(c-short) correct" in shown, shown
        assert check.locator(H.ERROR_OUTPUT).count() == 0
        # then right: the cell says so, and shows no error
        H.type_into_cell(page, answer, f"b_kv = {{short: {solved['b-short']!r}, long_: "
                                       f"{solved['b-long']!r}}}; fits = {{short: "
                                       f"{solved['c-short']!r}, long_: {solved['c-long']!r}}}")
        H.run_cell(page, answer)
        H.run_cell(page, check)
        verdict = check.locator(".companion-verdict", has_text="all 4 parts of this cell correct")
        verdict.wait_for(timeout=60_000)
        assert check.locator(H.ERROR_OUTPUT).count() == 0
        H.screenshot(check, "make_lab_first_hour_all_correct")
        page.keyboard.press("ControlOrMeta+s")
        H.wait_until(lambda: "fits = {short:" in (server.work / EXERCISE).read_text(),
                     "the student's answer saved into the working copy", timeout_s=60)
    finally:
        context.close()
    assert "fits = {short:" not in (H.ROOT / EXERCISE).read_text()
    assert _git_status() == before, "a student's session changed the repository"
