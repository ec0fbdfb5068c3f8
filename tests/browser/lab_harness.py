"""Shared machinery of the browser tests and of ``benchmarks/browser_latency.py``.

A real JupyterLab (or Voila) server on 127.0.0.1 with a random free port and a random token,
every Jupyter/IPython/matplotlib/Chromium side file in a scratch folder, headless Chromium
driven by Playwright, and the checks a person would make by eye: the notebook runs to the
end, nothing errors, figures and sliders render, and moving a slider changes the numbers and
the figure to exactly what ``companion`` computes for the new setting.

Nothing here imports playwright at module level, so the test modules can be collected (and
skip or fail with a clear message) on a machine without it.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

# the one Chromium finder, also the PNGs' (make execute): $CHROMIUM_PATH, else Debian's
# /usr/bin/chromium, else PATH; never the browser `playwright install` downloads
from companion.explorers.static_image import CHROMIUM_CANDIDATES, find_chromium  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from dashboard_assets import link_plotly_js  # noqa: E402  (make dashboard's own step)

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
SCRATCH_NOTEBOOKS = "artifacts/browser"    # inside the Lab server's root, git-ignored
VOILA_SHARE = ROOT / "dashboards" / "share" / "jupyter"

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# lab extensions that only make sense inside JupyterLab and throw inside Voila
VOILA_EXTENSION_DENYLIST = ["jupyterlab-jupytext", "@jupyter-notebook/lab-extension",
                            "@jupyter/nbgrader"]


# --- environment -------------------------------------------------------------------------------

def playwright_missing() -> str | None:
    """None when Playwright's Python package imports, else why not."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"playwright is not installed ({exc}); pip install -e '.[test]'"
    return None


def voila_missing() -> str | None:
    """None when Voila imports, else why not."""
    try:
        import voila  # noqa: F401
    except ImportError as exc:
        return f"voila is not installed ({exc}); pip install -e '.[test]'"
    return None


def unavailable(reason: str):
    """Skip the test, or fail it when the CI environment variable is set (CI must run the
    browser tests, so a missing browser there is a broken setup, not a reason to skip)."""
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{reason}. CI is set, so the browser tests must run: install Debian's "
                    "chromium (apt-get install -y chromium) and the 'test' extra.",
                    pytrace=False)
    pytest.skip(reason)


def isolated_env(state: Path) -> dict:
    """os.environ with every Jupyter, IPython, matplotlib, XDG and npm path under ``state``,
    plus JupyterLab user settings that turn off the news toast, update checks and autosave
    (a UI test must never write the notebook it runs)."""
    state.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    dirs = {
        "JUPYTER_CONFIG_DIR": "jupyter-config", "JUPYTER_DATA_DIR": "jupyter-data",
        "JUPYTER_RUNTIME_DIR": "jupyter-runtime", "JUPYTERLAB_SETTINGS_DIR": "lab-user-settings",
        "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces", "IPYTHONDIR": "ipython",
        "MPLCONFIGDIR": "mpl", "XDG_CONFIG_HOME": "xdg-config", "XDG_CACHE_HOME": "xdg-cache",
        "npm_config_cache": "npm-cache",
    }
    for var, sub in dirs.items():
        env[var] = str(state / sub)
        (state / sub).mkdir(parents=True, exist_ok=True)
    env.update(JUPYTER_PLATFORM_DIRS="1", MPLBACKEND="Agg", COMPANION_FAST="1",
               PYTHONHASHSEED="0", PYDEVD_DISABLE_FILE_VALIDATION="1")
    # the server's own venv first on PATH (kernels and `jupyter` helpers come from it)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    settings = state / "lab-user-settings" / "@jupyterlab"
    _write_json(settings / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    _write_json(settings / "docmanager-extension" / "plugin.jupyterlab-settings",
                {"autosave": False})
    return env


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- processes ---------------------------------------------------------------------------------

def _children() -> dict[int, list[int]]:
    """{ppid: [pid, ...]} from /proc (Linux); empty elsewhere."""
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        tree.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return tree


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (kernels the server started, their helpers)."""
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _command_line(pid: int) -> str:
    """What a process runs, to name it in a failure (shortened)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    text = " ".join(w.decode(errors="replace") for w in words if w)
    return text if len(text) <= 200 else text[:200] + "..."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Server:
    """A Jupyter server subprocess on 127.0.0.1:<free port>, stopped by PID."""

    name = "server"

    def __init__(self, state: Path, env: dict | None = None):
        self.state = Path(state)
        self.env = env if env is not None else isolated_env(self.state)
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self.log_path = self.state / f"{self.name}-{self.port}.log"
        self.started_at = self.ready_at = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def answers(self) -> bool:
        """Whether the REST API answers (with the token)."""
        try:
            with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}",
                                        timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def start(self, timeout_s: float = 120.0) -> "Server":
        self.started_at = time.perf_counter()
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            if self.answers():
                self.ready_at = time.perf_counter()
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {timeout_s:.0f} s:\n"
                           + self.log_tail())

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def api(self, method: str, path: str, timeout_s: float = 10.0):
        """One REST call with the token; returns parsed JSON (or None)."""
        sep = "&" if "?" in path else "?"
        req = urllib.request.Request(f"{self.base}{path}{sep}token={self.token}", method=method)
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Delete every session and kernel through the REST API (polite shutdown)."""
        try:
            for s in self.api("GET", "/api/sessions"):
                self.api("DELETE", f"/api/sessions/{s['id']}", timeout_s=30)
            for k in self.api("GET", "/api/kernels"):
                self.api("DELETE", f"/api/kernels/{k['id']}", timeout_s=30)
        except (urllib.error.URLError, OSError, ValueError, TypeError):
            pass

    def stop(self) -> list[str]:
        """Shut kernels down, stop the server by its PID, then end any process it left behind
        (by PID). Returns those that had to be killed after the server stopped ("PID (command
        line)")."""
        if self.proc is None:
            return []
        if self.proc.poll() is None:
            self.shutdown_kernels()
        below = descendants(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        alive = [pid for pid in below if _alive(pid)]
        leftovers = [f"{pid} ({_command_line(pid)})" for pid in alive]
        for pid in alive:  # only those: a PID that has ended may be another process's by now
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None
        return leftovers


class LabServer(Server):
    """``jupyter lab`` serving the repository, configured for an unattended test."""

    name = "jupyterlab"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                f"--port={self.port}", f"--IdentityProvider.token={self.token}",
                "--allow-root", "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={ROOT}",
                # JupyterLab checkpoints a notebook when it opens it: keep those copies out of
                # the repository (an absolute checkpoint_dir puts them all in the scratch dir)
                f"--FileCheckpoints.checkpoint_dir={self.state / 'checkpoints'}",
                "--LabApp.extension_manager=readonly", "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                # window.jupyterapp: Run All's progress is read from the cells' models, since a
                # cell whose source is hidden shows no prompt number in the page
                "--LabApp.expose_app_in_browser=True"]

    def notebook_url(self, path: str) -> str:
        # a workspace of its own per page: nothing from an earlier test is restored (no tab,
        # no second kernel), and nothing is written to the default workspace
        self._workspaces = getattr(self, "_workspaces", 0) + 1
        return (f"{self.base}/lab/workspaces/test{self._workspaces}/tree/{path}"
                f"?token={self.token}")

    def code_cell_count(self, path: str) -> int:
        nb = self.api("GET", f"/api/contents/{path}?content=1")
        return sum(c["cell_type"] == "code" for c in nb["content"]["cells"])

    def shutdown_notebook(self, path: str) -> None:
        """Delete ``path``'s session (its kernel goes with it), so that the next test or
        benchmark starts on a quiet server."""
        for s in self.api("GET", "/api/sessions"):
            if s["path"] == path:
                self.api("DELETE", f"/api/sessions/{s['id']}", timeout_s=30)


# `make dashboard`'s own flags beyond the template and the denylist (the Makefile's VOILA_FLAGS):
# one kernel kept executed ahead of the reader (Voila's preheated kernels)
VOILA_FLAGS = ["--VoilaConfiguration.preheat_kernel=True",
               "--VoilaConfiguration.default_pool_size=1"]


class VoilaServer(Server):
    """``voila <notebook>`` with the offline lab template and the extension denylist."""

    name = "voila"

    def __init__(self, notebook: str, state: Path, env: dict | None = None):
        super().__init__(state, env)
        self.notebook = notebook
        self.env["JUPYTER_PATH"] = str(VOILA_SHARE)
        link_plotly_js()   # as `make dashboard` does: the template loads it from the page's start

    def command(self) -> list[str]:
        return [sys.executable, "-m", "voila", self.notebook, "--no-browser",
                f"--port={self.port}", "--Voila.ip=127.0.0.1", "--show_tracebacks=True",
                "--template=lab-offline"] + VOILA_FLAGS + [
                    f"--VoilaConfiguration.extension_denylist={name}"
                    for name in VOILA_EXTENSION_DENYLIST]

    def answers(self) -> bool:
        """Whether the HTTP server answers at all (the dashboard page itself would start a
        kernel; a 404 for a static path is enough)."""
        try:
            with urllib.request.urlopen(f"{self.base}/voila/static/", timeout=5):
                return True
        except urllib.error.HTTPError:
            return True
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def wait_preheated(self, timeout_s: float = 120.0) -> None:
        """Wait until Voila has executed the notebook in its pool's kernel (its log says the
        pool is filled), as it has by the time a reader comes to a dashboard served a while."""
        deadline = time.monotonic() + timeout_s
        while "is filled with" not in self.log_path.read_text(errors="replace"):
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"voila exited:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"Voila's kernel pool was not filled within "
                                     f"{timeout_s:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def shutdown_kernels(self) -> None:
        pass  # Voila's kernels belong to its pages; closing the page ends them, stop() the rest


# --- the browser -------------------------------------------------------------------------------

# anywidget 0.11 rejects a model's `ready` promise when loading the widget's ES module takes
# over 2 s (AbortSignal.timeout(2e3) in its Runtime), which a loaded machine's busy page can
# cause; it then still renders the view once the module has loaded. The explorers' figures keep
# their state on a core ipywidgets model and never wait on that promise, and every test that
# sees this message also checks that each figure rendered and follows its controls (the
# loaded-machine test exists for exactly that), so this one message is not a failure by itself.
ANYWIDGET_INIT_TIMEOUT = "[anywidget] Failed to initialize model."


class NetworkLog:
    """Records non-loopback requests, console errors and page errors of a browser context
    (apart from anywidget's model-initialisation timeout, counted in ``anywidget_timeouts``)."""

    def __init__(self):
        self.external: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.anywidget_timeouts = 0

    def _request(self, url: str) -> None:
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob", "about", "chrome", "chrome-extension"):
            return
        if (parsed.hostname or "") not in LOOPBACK_HOSTS:
            self.external.append(url)

    def attach_context(self, context) -> None:
        context.on("request", lambda r: self._request(r.url))

    def attach_page(self, page) -> None:
        page.on("websocket", lambda ws: self._request(ws.url))
        page.on("console", lambda m: self.console_errors.append(m.text)
                if m.type == "error" else None)
        page.on("pageerror", self._page_error)

    def _page_error(self, error) -> None:
        if str(error) == ANYWIDGET_INIT_TIMEOUT:
            self.anywidget_timeouts += 1
        else:
            self.page_errors.append(str(error))


def launch_browser(playwright, chromium: str):
    return playwright.chromium.launch(executable_path=chromium, headless=True,
                                      args=CHROMIUM_ARGS)


def _menu(page, top: str, item: str, timeout_s: float = 60) -> None:
    """Click ``top`` > ``item`` in JupyterLab's menu bar, once the item is enabled. A command
    such as Run All Cells is disabled until the notebook is the current widget with its
    kernel, and clicking a disabled item does nothing: on a loaded machine the menu can open
    before that, so the menu is closed and opened again (which re-reads the command's state)
    until the item is enabled."""
    label = re.compile(f"^{re.escape(item)}$")
    deadline = time.monotonic() + timeout_s
    while True:
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
        entry = page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel",
                                                                has_text=label))
        entry.wait_for(state="visible")
        if "lm-mod-disabled" not in (entry.get_attribute("class") or "").split():
            entry.click()
            return
        page.keyboard.press("Escape")
        if time.monotonic() > deadline:
            raise AssertionError(f"menu {top} > {item} stayed disabled for {timeout_s:.0f} s")
        page.wait_for_timeout(250)


ACTIVE = ".jp-NotebookPanel:not(.lm-mod-hidden)"
ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'


class Clock:
    """Named time marks since creation, printed as they happen (pytest shows them with -s or
    on failure)."""

    def __init__(self, label: str = ""):
        self.t0 = time.perf_counter()
        self.label = label
        self.marks: dict[str, float] = {}

    def mark(self, name: str) -> float:
        self.marks[name] = round(time.perf_counter() - self.t0, 2)
        print(f"[{self.label} {self.marks[name]:7.2f} s] {name}", flush=True)
        return self.marks[name]


# The active notebook's kernel as the status bar shows it ("Python 3 (ipykernel) | Idle"):
# JupyterLab's SessionContext.kernelDisplayStatus, which reads "Idle" only once a kernel is
# attached, its socket connected and the kernel idle. The toolbar's execution indicator is no
# such sign: its model starts at "idle" before the session has any kernel (JupyterLab 4.6,
# ExecutionIndicator.Model.attachNotebook), and a Run All clicked in that window meets
# `hasNoKernel`: JupyterLab starts a kernel itself, may ask "Select Kernel", and clears the
# cells it ran in the meantime without executing them.
KERNEL_READY_JS = """active => {
    const items = [...document.querySelectorAll('#jp-main-statusbar .jp-StatusBar-TextItem')];
    const kernel = items.map(e => e.textContent.trim()).find(t => / \\| \\S+$/.test(t));
    const indicator = document.querySelector(active + ' .jp-Notebook-ExecutionIndicator');
    return !!kernel && !kernel.startsWith('No Kernel') && / \\| Idle$/.test(kernel) &&
        !!indicator && indicator.getAttribute('data-status') === 'idle'; }"""


def wait_kernel_ready(page, timeout_ms: int = 120_000) -> None:
    """Wait until the active notebook has a connected, idle kernel (see KERNEL_READY_JS)."""
    try:
        page.wait_for_function(KERNEL_READY_JS, arg=ACTIVE, timeout=timeout_ms)
    except Exception as exc:  # noqa: BLE001 - say where it stood, not only that it timed out
        raise AssertionError(f"the notebook's kernel was not connected and idle within "
                             f"{timeout_ms / 1e3:.0f} s: {run_state(page)}") from exc


def open_notebook(page, lab: LabServer, path: str, timeout_ms: int = 120_000) -> int:
    """Open ``path`` in JupyterLab, wait for its kernel to be connected and idle and for every
    code cell to be attached; returns the number of code cells."""
    page.goto(lab.notebook_url(path), timeout=timeout_ms)
    page.wait_for_selector(f"{ACTIVE} .jp-Cell", state="attached", timeout=timeout_ms)
    wait_kernel_ready(page, timeout_ms)
    n_code = lab.code_cell_count(path)
    page.wait_for_function(
        "([sel, n]) => document.querySelectorAll(sel).length === n",
        arg=[f"{ACTIVE} .jp-CodeCell", n_code], timeout=timeout_ms)
    return n_code


PROMPTS = f"{ACTIVE} .jp-CodeCell .jp-InputArea-prompt"
# Every code cell's prompt text, by position. A cell whose source is hidden shows no prompt
# number in the page, so where the server exposes the app (LabServer, `make lab` in the tests,
# the lite site: exposeAppInBrowser) the numbers come from the cells' models; elsewhere from the
# prompts in the page (``sel``).
PROMPT_LIST_JS = """(sel) => {
    const app = window.jupyterapp, panel = app && app.shell.currentWidget;
    if (panel && panel.content && panel.content.widgets && panel.content.model) {
        return panel.content.widgets.filter(c => c.model.type === 'code').map(c => {
            const n = c.model.executionCount;
            const p = c.promptNode ? c.promptNode.textContent.trim() : '';
            return n != null ? `[${n}]:` :
                (p.includes('*') || c.model.executionState === 'running') ? '[*]:' : ''; });
    }
    return [...document.querySelectorAll(sel)].map(p => p.textContent.trim()); }"""


NO_PROMPT_NUMBERED = ("sel => (" + PROMPT_LIST_JS + ")(sel)"
                      ".every(p => !/\\d/.test(p))")
# done when every prompt is numbered, or as soon as a cell fails (Run All stops there)
ALL_DONE_OR_ERROR = """([sel, err, n]) => { const ps = (""" + PROMPT_LIST_JS + """)(sel);
    if (document.querySelector(err)) return true;
    return ps.length === n && ps.every(p => /\\[\\d+\\]/.test(p)); }"""


FOLD_BUTTON = f"{ACTIVE} .jp-showHiddenCellsButton"


def open_all_folds(page, timeout_s: float = 30) -> int:
    """Open every depth section that a notebook shows folded (a collapsed heading's "N cells
    hidden" button), as a reader who reads everything does; returns how many were opened.
    The cells under a collapsed heading are not in the page, so a check that reads every cell
    opens them first."""
    opened = 0
    deadline = time.monotonic() + timeout_s
    while page.locator(FOLD_BUTTON).count():
        page.locator(FOLD_BUTTON).first.click()
        opened += 1
        if time.monotonic() > deadline:
            raise AssertionError(f"folds still closed after {timeout_s:.0f} s of opening them")
    return opened


def run_all_cells(page, n_code: int, timeout_ms: int = 240_000, open_folds: bool = True) -> None:
    """Open every fold (unless ``open_folds`` is false: a reader who runs everything and reads
    the core path), Edit > Clear Outputs of All Cells, Run > Run All Cells, then wait until
    every cell has its number and the kernel is idle (stored prompts would otherwise look
    finished).

    Run once, as a reader runs it: call it after ``open_notebook`` (whose wait for a connected
    kernel is what makes Run All reliable, see KERNEL_READY_JS). Anything a reader would see
    go wrong fails at once, with where the run stood: an error output (Run All stops there),
    a "Select Kernel" dialog, or cells JupyterLab left unexecuted (empty prompts, nothing
    queued, the kernel idle, the same for 5 s of polls)."""
    if open_folds:
        open_all_folds(page)
    _menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(NO_PROMPT_NUMBERED, arg=PROMPTS, timeout=30_000)
    _menu(page, "Run", "Run All Cells")
    deadline = time.monotonic() + timeout_ms / 1e3
    still, last = None, None
    while True:
        no_kernel_dialog(page)
        p = _progress(page)
        if p["error"]:
            raise AssertionError("Run All stopped at an error:\n" +
                                 "\n".join(page_problems(page, ACTIVE)))
        if p["n"] == n_code and p["done"] == n_code:
            break
        stuck = p["queued"] == 0 and p["kernel"] == "idle"
        if stuck and p == last:
            if still is None:
                still = time.monotonic()
            elif time.monotonic() - still > 5:
                raise AssertionError(f"Run All left cells unexecuted: {run_state(page)}")
        else:
            still = None
        last = p
        if time.monotonic() > deadline:
            raise AssertionError(f"Run All did not finish in {timeout_ms / 1e3:.0f} s: "
                                 f"{run_state(page)}")
        page.wait_for_timeout(250)
    page.wait_for_selector(f'{ACTIVE} .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                           timeout=timeout_ms)


def _progress(page) -> dict:
    """How far a Run All has come: code cells, numbered, queued, an error shown, the kernel."""
    state = page.evaluate(RUN_STATE_JS, [PROMPTS, ACTIVE])
    prompts = state["prompts"]
    return {"n": len(prompts), "done": sum(bool(re.search(r"\[\d+\]", p)) for p in prompts),
            "queued": sum("[*]" in p for p in prompts), "kernel": state["kernel"],
            "error": page.locator(f"{ACTIVE} {ERROR_OUTPUT}").count() > 0}


RUN_STATE_JS = """([sel, active]) => {
    const prompts = (""" + PROMPT_LIST_JS + """)(sel);
    const kernel = document.querySelector(active + ' .jp-Notebook-ExecutionIndicator');
    return {prompts, kernel: kernel && kernel.getAttribute('data-status'),
            dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.slice(0, 200)),
            status: (document.querySelector('#jp-main-statusbar') || {}).innerText || ''}; }"""


def run_state(page) -> str:
    """Where a notebook's run stands, for a failure message: each code cell's prompt (by
    position), the kernel's execution state, open dialogs and the status bar."""
    try:
        state = page.evaluate(RUN_STATE_JS, [PROMPTS, ACTIVE])
    except Exception as exc:  # noqa: BLE001 - a dead page: say so
        return f"(page unreadable: {exc})"
    prompts = " ".join(f"{i}:{p or '[ ]'}" for i, p in enumerate(state["prompts"]))
    return (f"prompts {prompts}; kernel {state['kernel']}; dialogs {state['dialogs']}; "
            f"status bar {state['status'][:200]!r}")


def no_kernel_dialog(page) -> None:
    """Fail if JupyterLab asks "Select Kernel": with the notebook's kernel connected (every
    notebook here names its kernel) it asks only when a cell ran before the kernel was there,
    which the harness's waits rule out, so a dialog is a failure a reader would meet too."""
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    if dialog.count():
        raise AssertionError(f'JupyterLab asked "Select Kernel": {run_state(page)}')


def page_problems(page, scope: str = "") -> list[str]:
    """Error outputs and widget failures visible on the page (empty when clean)."""
    problems = []
    errors = page.locator(f"{scope} {ERROR_OUTPUT}")
    for i in range(errors.count()):
        problems.append("error output: " + errors.nth(i).inner_text()[:600])
    if page.get_by_text("Error displaying widget").count():
        problems.append('"Error displaying widget" shown')
    return problems


FIGURE_STATUS_JS = """els => els.map(gd => ({
    data: !!gd.data && gd.data.length, svg: !!gd.querySelector('.main-svg'),
    full: !!gd._fullLayout, width: gd.getBoundingClientRect().width}))"""


def wait_figures_rendered(page, scope, expected: int, timeout_s: float = 60) -> list:
    """Wait until ``expected`` plotly figures under locator ``scope`` each have data and an
    SVG."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = scope.locator(".js-plotly-plot").evaluate_all(FIGURE_STATUS_JS)
        good = [s for s in status if s["data"] and s["svg"] and s["full"]]
        if len(status) >= expected and len(good) == len(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {expected} rendered plotly figures, page has "
                                 f"{len(status)} ({len(good)} rendered): {status}")
        page.wait_for_timeout(250)


# --- an explorer on the page -------------------------------------------------------------------

STATE_JS = """root => {
    const conv = v => (v && ArrayBuffer.isView(v)) ? Array.from(v) : v;
    const keys = %s;
    const gd = root.querySelector('.js-plotly-plot');
    const readout = root.querySelector('.widget-html-content');
    const data = (gd && gd.data) ? gd.data.map(t => {
        const out = {};
        for (const k of keys) if (t[k] !== undefined) out[k] = conv(t[k]);
        out.type = t.type || 'scatter';
        return out;
    }) : null;
    return {text: readout ? readout.textContent : null, data};
}"""
DATA_KEYS = ("x", "y", "z", "base", "text", "name", "width", "customdata")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def html_text(markup: str) -> str:
    """The text a browser shows for ``markup`` (its textContent), whitespace removed."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return re.sub(r"\s+", "", html.unescape("".join(parser.parts)))


def _decode(value):
    """plotly's typed-array spec {dtype, bdata, shape} -> list; arrays -> lists."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            shape = value["shape"]
            shape = [int(s) for s in (shape.split(",") if isinstance(shape, str) else shape)]
            arr = arr.reshape(shape)
        return arr.tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return [_decode(v) for v in value]
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _same(a, b, rtol: float = 1e-9) -> bool:
    a, b = _decode(a), _decode(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b))
    nan_a = a is None or (isinstance(a, float) and a != a)
    nan_b = b is None or (isinstance(b, float) and b != b)
    if nan_a or nan_b:
        return nan_a and nan_b
    if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        return bool(a) == bool(b)
    if isinstance(a, (int, float, np.number)) and isinstance(b, (int, float, np.number)):
        return bool(np.isclose(float(a), float(b), rtol=rtol, atol=1e-12))
    return str(a) == str(b)


def expected_state(view, readout_html: str | None = None) -> dict:
    """What the page must show for a ``View`` computed headless: readout text (the panel's
    ``readout_html(view)`` where given: the view's text and its figure's words and numbers)
    and trace data."""
    from companion import display

    traces = []
    for t in view.traces:
        # rounded as every figure the companion displays (the live figure widget's too)
        t = display.round_floats(t if isinstance(t, dict) else t.to_plotly_json())
        traces.append({k: _decode(t[k]) for k in DATA_KEYS if k in t}
                      | {"type": t.get("type", "scatter")})
    return {"text": html_text(view.text if readout_html is None else readout_html),
            "data": traces}


def state_differences(shown: dict, expected: dict) -> list[str]:
    """Human-readable differences between the page (``shown``) and ``expected``."""
    diffs = []
    text = html_text(shown["text"] or "") if shown["text"] is not None else None
    if text != expected["text"]:
        diffs.append(f"readout:\n  page:     {text}\n  expected: {expected['text']}")
    data = shown["data"]
    if data is None:
        return diffs + ["no plotly figure"]
    if len(data) != len(expected["data"]):
        diffs.append(f"figure has {len(data)} traces, expected {len(expected['data'])}")
        return diffs
    for i, (got, want) in enumerate(zip(data, expected["data"])):
        for key, value in want.items():
            if key == "type":
                if got.get("type", "scatter") != value:
                    diffs.append(f"trace {i}: type {got.get('type')!r} != {value!r}")
            elif not _same(got.get(key), value):
                diffs.append(f"trace {i} ({want.get('name', '')!s:.40}) {key}: page "
                             f"{_short(got.get(key))} != expected {_short(value)}")
    return diffs


def _short(value, n: int = 160) -> str:
    s = json.dumps(_decode(value), default=str)
    return s if len(s) <= n else s[:n] + "..."


def read_state(root) -> dict:
    """The readout and figure data shown by the explorer under locator ``root``."""
    return root.evaluate(STATE_JS % json.dumps(list(DATA_KEYS)))


def wait_for_state(page, root, expected: dict, timeout_s: float = 60, what: str = "") -> dict:
    """Poll until the explorer under ``root`` shows ``expected``; AssertionError with the
    differences otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = read_state(root)
        diffs = state_differences(shown, expected)
        if not diffs:
            return shown
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: the page does not show what companion computes "
                                 f"after {timeout_s:.0f} s:\n" + "\n".join(diffs[:12]))
        page.wait_for_timeout(200)


VIEW_COUNT_JS = "(el, name) => Number(el.dataset[name] || 0)"


def view_count(root, name: str) -> int:
    """A count figure_widget.js keeps on the explorer view under ``root`` (data attributes of
    its element): companionKernelFigures, the figures received from the kernel, and
    companionAheadOffers, the offers of figures ahead."""
    return root.locator(".companion-plotly-figure").first.evaluate(VIEW_COUNT_JS, name)


def wait_until(condition, what: str, timeout_s: float = 120) -> None:
    """Poll ``condition()`` until it holds; AssertionError naming ``what`` past the timeout."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.05)


def slider(root, label: str):
    """The ipywidgets slider labelled ``label`` inside ``root``."""
    return root.locator(".widget-slider", has=root.page.locator(
        "label.widget-label", has_text=re.compile(f"^{re.escape(label)}$")))


def dropdown(root, label: str):
    return root.locator(".widget-dropdown", has=root.page.locator(
        "label.widget-label", has_text=re.compile(f"^{re.escape(label)}$")))


def text_box(root, label: str):
    """The ipywidgets Textarea labelled ``label`` inside ``root``."""
    return root.locator(".widget-textarea", has=root.page.locator(
        "label.widget-label", has_text=re.compile(f"^{re.escape(label)}$")))


def slider_value(control, slider_locator):
    """The value a slider's readout shows, as the control's type."""
    text = slider_locator.locator(".widget-readout").inner_text().strip().replace(",", "")
    return int(float(text)) if control.kind == "int" else float(text)


def press_right(slider_locator, times: int = 1) -> None:
    """Focus the noUiSlider handle and press ArrowRight (one step each)."""
    handle = slider_locator.locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(times):
        handle.press("ArrowRight")


STILL_JS = """el => new Promise(resolve => {
    // resolves once the element's viewport position is the same over two animation frames
    let last = null;
    const look = () => {
        const r = el.getBoundingClientRect();
        const now = [r.x, r.y, r.width, r.height].join();
        if (now === last) resolve(true);
        else { last = now; requestAnimationFrame(() => requestAnimationFrame(look)); }
    };
    look(); })"""


def scroll_to_still(locator) -> None:
    """Scroll ``locator`` into view and wait until it stops moving (bounding boxes are
    viewport coordinates: a smooth scroll or a late layout would move the pointer's target)."""
    locator.scroll_into_view_if_needed()
    locator.evaluate(STILL_JS)


def grab_handle(page, slider_locator) -> tuple[dict, float]:
    """Scroll the slider into view until it is still, put the mouse on its handle and press;
    returns the track's bounding box and the pointer's y (move along the track, then
    ``page.mouse.up()``)."""
    scroll_to_still(slider_locator)
    track = slider_locator.locator(".noUi-target").bounding_box()
    handle = slider_locator.locator(".noUi-handle").bounding_box()
    y = handle["y"] + handle["height"] / 2
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    return track, y


def drag(page, slider_locator, fraction: float, steps: int = 6) -> None:
    """Drag the handle with the mouse to ``fraction`` of the track (0 = left end) in
    ``steps`` pointer moves."""
    track, y = grab_handle(page, slider_locator)
    page.mouse.move(track["x"] + fraction * track["width"], y, steps=steps)
    page.mouse.up()


def expected_for(panel_cls, params: dict, make=None) -> dict:
    """What the explorer must show for ``params``: a fresh panel's ``update``, headless, in
    this process (``make``: how the notebook built the panel, default ``panel_cls()``)."""
    panel = make() if make is not None else panel_cls()
    view = panel.update(**params)
    return expected_state(view, panel.readout_html(view))


def _wait_value(control, slider_locator, want, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        got = slider_value(control, slider_locator)
        if np.isclose(got, want, rtol=1e-9, atol=1e-9):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{control.name}: slider shows {got}, expected {want}")
        time.sleep(0.05)


def move_and_verify(page, root, panel_cls, params: dict, name: str, *, drag_to=None,
                    make=None, timeout_s: float = 60) -> dict:
    """Move the slider of control ``name`` one step with ArrowRight on its focused handle (or
    drag it with the mouse to ``drag_to`` of its track), then wait until the page shows what
    companion computes for the new setting; the move must change both the readout and the
    figure. Returns the new parameters."""
    control = next(c for c in panel_cls.controls if c.name == name)
    handle_slider = slider(root, control.label)
    before_value = slider_value(control, handle_slider)
    assert np.isclose(before_value, params[name]), (name, before_value, params[name])
    if drag_to is None:
        press_right(handle_slider)
        value = control.step_from(params[name], +1)   # the next stop on a log-spaced slider
        _wait_value(control, handle_slider, value)
        how = f"ArrowRight: {name} {before_value} -> {value}"
    else:
        drag(page, handle_slider, drag_to)
        value = slider_value(control, handle_slider)
        assert value != before_value, f"dragging {name} did not move it"
        how = f"drag: {name} {before_value} -> {value}"
    new_params = dict(params, **{name: value})
    before = expected_for(panel_cls, params, make)
    after = expected_for(panel_cls, new_params, make)
    assert after["text"] != before["text"], f"{how} must change the readout"
    assert after["data"] != before["data"], f"{how} must change the figure"
    wait_for_state(page, root, after, timeout_s=timeout_s, what=how)
    return new_params


def paste_and_verify(page, root, panel_cls, params: dict, name: str, text: str, *,
                     make=None, timeout_s: float = 60) -> dict:
    """Paste ``text`` into the text box of control ``name`` as a reader would (fill, then
    leave the box: it applies on blur), then wait until the page shows what companion
    computes with it. Returns the new parameters."""
    control = next(c for c in panel_cls.controls if c.name == name)
    box = text_box(root, control.label).locator("textarea")
    box.scroll_into_view_if_needed()
    box.fill(text)
    box.press("Tab")
    new_params = dict(params, **{name: text})
    after = expected_for(panel_cls, new_params, make)
    assert after["text"] != expected_for(panel_cls, params, make)["text"], (
        f"pasting into {name} must change the readout")
    wait_for_state(page, root, after, timeout_s=timeout_s, what=f"text pasted into {name}")
    return new_params


def check_controls(root, panel_cls) -> list[str]:
    """Every control of ``panel_cls`` has its slider (with a noUi handle) or dropdown."""
    missing = []
    for c in panel_cls.controls:
        if c.kind == "choice":
            if dropdown(root, c.label).count() != 1:
                missing.append(f"dropdown {c.label!r}")
        elif c.kind == "text":
            if text_box(root, c.label).count() != 1:
                missing.append(f"text box {c.label!r}")
        else:
            s = slider(root, c.label)
            if s.count() != 1 or s.locator(".noUi-handle").count() != 1:
                missing.append(f"slider {c.label!r}")
    return missing


def cell_by_grade_id(nb: dict, grade_id: str) -> int:
    """The index, among ``nb``'s code cells, of the one nbgrader knows as ``grade_id``."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    (index,) = [i for i, c in enumerate(code)
                if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id]
    return index


def run_cell(page, cell, timeout_s: float = 120) -> None:
    """Run one cell as a reader does (click into it, Shift+Enter) and wait for its number
    (after ``open_notebook``: the kernel is connected; a "Select Kernel" dialog fails)."""
    no_kernel_dialog(page)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    numbered = cell.locator(".jp-InputArea-prompt", has_text=re.compile(r"\[\d+\]"))
    deadline = time.monotonic() + timeout_s
    while not numbered.count():
        no_kernel_dialog(page)
        if time.monotonic() > deadline:
            raise AssertionError(f"the cell did not run in {timeout_s:.0f} s: {run_state(page)}")
        page.wait_for_timeout(250)


def type_into_cell(page, cell, code: str) -> None:
    """Replace a cell's source with one line of ``code``, typed as a reader pastes it (one line,
    so the editor's auto-indent has nothing to add)."""
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)


def write_scratch_notebook(name: str, intro: str, code: list[str]) -> str:
    """Write ``artifacts/browser/<name>.ipynb`` (a Markdown cell ``intro``, then one code cell
    per source in ``code``, for the venv's Python kernel); returns its path relative to the
    repository root, as a Lab server opens it."""
    import nbformat

    cells = [nbformat.v4.new_markdown_cell(intro)] + [nbformat.v4.new_code_cell(c) for c in code]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    notebook = f"{SCRATCH_NOTEBOOKS}/{name}.ipynb"
    path = ROOT / notebook
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return notebook


def screenshot(target, name: str, **options) -> Path:
    """Save a PNG of a page or element under artifacts/screenshots/ (git-ignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    target.screenshot(path=str(path), **options)
    return path


@contextmanager
def local_only(browsing):
    """Block every request of ``browsing``'s page outside 127.0.0.1 (the network log records
    the attempt) and record local responses >= 400; on exit, fail if any local file was
    missing or anything tried to leave the machine."""
    page = browsing.page
    missing: list[str] = []

    def route(r):
        host = r.request.url.split("/")[2].split(":")[0] if "://" in r.request.url else ""
        if host in LOOPBACK_HOSTS or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            r.abort()

    page.context.route("**/*", route)
    page.on("response", lambda resp: missing.append(f"{resp.status} {resp.url}")
            if resp.status >= 400 else None)
    yield
    assert not missing, f"local files missing: {missing[:10]}"
    browsing.assert_offline()


class StaticSiteServer(Server):
    """Python's http.server serving a built static site (the book) from 127.0.0.1."""

    name = "static-site"

    def __init__(self, site: Path, state: Path):
        super().__init__(state, env=dict(os.environ))
        self.site = Path(site)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                "--directory", str(self.site)]

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/index.html", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def shutdown_kernels(self) -> None:
        pass  # no kernels: the book runs none


class LiteSite(StaticSiteServer):
    """The built lite site (make lite) on 127.0.0.1, with what the harness asks of a JupyterLab
    server: a notebook's address in the site, its stored content and its code cells."""

    name = "lite-site"

    def notebook_url(self, path: str) -> str:
        return f"{self.base}/lab/index.html?path={path}"

    def notebook(self, path: str) -> dict:
        return json.loads((self.site / "files" / path).read_text(encoding="utf-8"))

    def code_cell_count(self, path: str) -> int:
        return sum(c["cell_type"] == "code" for c in self.notebook(path)["cells"])
