"""Fixtures of the browser tests: one headless Chromium and one JupyterLab server per session.

Skipped with a message when Playwright or Chromium is missing, except under CI (the CI
environment variable is set), where a missing browser is a failure: CI must install both.
Every process started here is stopped at the end of the session, also after a failure
(kernels through the REST API, the server by its PID, anything left below it by PID).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import lab_harness as H

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).resolve().parent == HERE:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def chromium() -> str:
    missing = H.playwright_missing()
    if missing:
        H.unavailable(missing)
    path = H.find_chromium()
    if path is None and os.environ.get("CHROMIUM_PATH"):
        H.unavailable(f"CHROMIUM_PATH={os.environ['CHROMIUM_PATH']} is not an executable")
    if path is None:
        H.unavailable("no Chromium found (looked for $CHROMIUM_PATH, /usr/bin/chromium, "
                      "chromium, chromium-browser, google-chrome on PATH)")
    return path


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = H.launch_browser(p, chromium)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def lab(chromium, tmp_path_factory):
    """One JupyterLab for the whole session (random port and token, settings in a temp dir)."""
    server = H.LabServer(tmp_path_factory.mktemp("jupyterlab-state"))
    server.start()
    try:
        yield server
    finally:
        leftovers = server.stop()
        assert not leftovers, f"processes left behind by JupyterLab had to be killed: {leftovers}"


@dataclass
class Browsing:
    """A fresh browser context and page, with its network and console log."""

    page: object
    log: H.NetworkLog
    name: str

    def assert_offline(self):
        """No request left 127.0.0.1; no uncaught page error; nothing logged as an error
        (a widget that fails in its JavaScript may show nothing else)."""
        assert not self.log.external, (
            f"{len(self.log.external)} non-loopback request(s): {self.log.external[:10]}")
        assert not self.log.page_errors, f"uncaught page errors: {self.log.page_errors[:5]}"
        assert not self.log.console_errors, (
            f"console errors: {[t[:300] for t in self.log.console_errors[:5]]}")


@pytest.fixture
def browsing(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    log = H.NetworkLog()
    log.attach_context(context)
    page = context.new_page()
    log.attach_page(page)
    page.set_default_timeout(60_000)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    try:
        yield Browsing(page, log, name)
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            try:
                H.screenshot(page, f"FAILED_{name}")
            except Exception:  # the page may be gone; the failure itself is what matters
                pass
        context.close()
