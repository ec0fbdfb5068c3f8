"""The lecture dashboard (dashboards/lecture.ipynb) served by Voila with the offline lab
template: both explorers (8.6's schemes A-D on the memory x deadline plane, 17 §2's roofline)
render their figure and controls with no request leaving 127.0.0.1, show what ``companion``
computes, and follow a slider moved with the keyboard and one dragged with the mouse.
"""

from __future__ import annotations

import re

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser

DASHBOARD = "dashboards/lecture.ipynb"
# <script src>, <link href>, ES import() / from of an http(s) or protocol-relative URL
EXTERNAL_LOAD = re.compile(r"""<script\b[^>]*\bsrc=["']?(?:https?:)?//[^"'\s>]+|"""
                           r"""<link\b[^>]*\bhref=["']?(?:https?:)?//[^"'\s>]+|"""
                           r"""(?:import\(\s*|\bfrom\s+)["'](?:https?:)?//[^"'\s]+""", re.I)


@pytest.fixture(scope="module")
def voila(chromium, tmp_path_factory):
    missing = H.voila_missing()
    if missing:
        H.unavailable(missing)
    server = H.VoilaServer(DASHBOARD, tmp_path_factory.mktemp("voila-state"))
    server.start()
    try:
        yield server
    finally:
        leftovers = server.stop()
        assert not leftovers, f"processes left behind by Voila had to be killed: {leftovers}"


def explorer_root(page, label: str):
    """The output holding the explorer that has a control labelled ``label``."""
    return page.locator(".jp-OutputArea-output").filter(has=page.locator(
        "label.widget-label", has_text=re.compile(f"^{re.escape(label)}$")))


def test_dashboard_renders_offline_and_follows_sliders(voila, browsing):
    from companion import widgets

    page, shot = browsing.page, "voila_lecture"
    clock = H.Clock("voila")
    # Voila executes the notebook while it streams the page: allow for a slow kernel
    page.goto(f"{voila.base}/", timeout=180_000)
    H.wait_figures_rendered(page, page.locator("body"), 2, timeout_s=120)
    clock.mark("dashboard loaded, 2 figures rendered")
    problems = H.page_problems(page)
    assert not problems, "\n".join(problems)
    assert page.locator(".js-plotly-plot").count() == 2
    # the page itself names no external script, style or module (the offline template)
    loads = EXTERNAL_LOAD.findall(page.content())
    assert not loads, loads
    # the lab extensions that throw inside Voila are left out; the ones the explorers need load
    config = page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    loaded = {e["name"] for e in config.get("federated_extensions", [])}
    assert not loaded & set(H.VOILA_EXTENSION_DENYLIST), loaded
    assert {"anywidget", "jupyterlab-plotly", "@jupyter-widgets/jupyterlab-manager"} <= loaded

    def make_schemes():  # as the dashboard builds it
        return widgets.SchemePanel()

    panels = [
        (widgets.SchemePanel, make_schemes, "output_tokens", None),
        (widgets.RooflinePanel, None, "batch", 0.3),
    ]
    roots = []
    for panel_cls, make, key, _ in panels:
        label = next(c.label for c in panel_cls.controls if c.name == key)
        root = explorer_root(page, label)
        assert root.count() == 1, f"{panel_cls.__name__}: {root.count()} outputs"
        missing = H.check_controls(root, panel_cls)
        assert not missing, f"{panel_cls.__name__}: controls not rendered: {missing}"
        assert root.locator(".js-plotly-plot").count() == 1
        params = (make() if make else panel_cls()).params
        H.wait_for_state(page, root, H.expected_for(panel_cls, params, make),
                         what=f"{panel_cls.__name__} at the dashboard's setting")
        roots.append((root, params))
    H.screenshot(page, f"{shot}_1_page", full_page=True)
    clock.mark("both explorers show what companion computes")

    for (panel_cls, make, key, drag_to), (root, params) in zip(panels, roots):
        root.scroll_into_view_if_needed()
        H.screenshot(root, f"{shot}_2_{panel_cls.__name__}_before")
        params = H.move_and_verify(page, root, panel_cls, params, key, make=make)
        if drag_to is not None:
            second = next(c.name for c in panel_cls.controls
                          if c.kind in ("int", "float") and c.name != key)
            params = H.move_and_verify(page, root, panel_cls, params, second,
                                       drag_to=drag_to, make=make)
        H.screenshot(root, f"{shot}_3_{panel_cls.__name__}_after")
        clock.mark(f"{panel_cls.__name__}: moved {key}, page == companion")

    assert not H.page_problems(page)
    browsing.assert_offline()
