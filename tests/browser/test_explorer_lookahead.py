"""A slider step answered from lookahead shows exactly what the kernel computes, before the
kernel has answered, and the same pixels as a redraw.

In JupyterLab, on three explorers of tests/browser/many_explorers.py. After a first step (the
kernel answers it and offers the steps either side, which the page draws ahead of time), the
kernel's updates are made slow (2 s: the panel instance's compute is wrapped; the lookahead
uses the class's), and the next steps must show companion's figure and readout within 1 s:
only a figure offered ahead can do that. The step's figure must stay after the kernel's own
answer arrives, and must be pixel-identical to plotly.js drawing the same figure from scratch
in the same place (figure_widget.js draws ahead of time in a detached div at the shown width).

Then the same slider is dragged with the mouse (Playwright's pointer moves, held while
figures arrive: figure_widget.js then draws each in the next animation frame and nothing ahead
of time): still held, and again after it is let go, the explorer must show companion's
figure and readout for the handle's value, pixel-identical to a redraw from scratch.
"""

from __future__ import annotations

import pytest

import lab_harness as H
import many_explorers as M
from kernel_probe import KernelProbe, kernel_id_for

pytestmark = pytest.mark.browser

SPECS = [s for s in M.EXPLORERS if s.variable in ("roofline", "memory", "timeline")]
SLOW_S = 2.0

SLOW_CODE = """
import time as __t
def __slow(_f={v}.compute, **params):
    __t.sleep({s})
    return _f(**params)
{v}.compute = __slow
"""
REDRAW_JS = """gd => { const layout = Object.assign({}, gd.layout); delete layout.width;
    return window.Plotly.newPlot(gd, gd.data, layout, {editSelection: false}).then(() =>
        new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))); }"""


@pytest.fixture(scope="module")
def notebook():
    return M.write_notebook("lookahead", SPECS)


def test_a_step_from_lookahead_is_the_kernels_figure_early(lab, browsing, notebook):
    page = browsing.page
    try:
        n_code = H.open_notebook(page, lab, notebook)
        H.run_all_cells(page, n_code)
        roots = M.explorer_roots(page, H.ACTIVE)
        probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, notebook))
        try:
            for i, spec in enumerate(SPECS):
                _check(page, roots.nth(i), spec, probe)
                _check_drag(page, roots.nth(i), spec)
        finally:
            probe.close()
        assert not H.page_problems(page, H.ACTIVE)
        browsing.assert_offline()
    finally:
        lab.shutdown_notebook(notebook)


def _check(page, root, spec, probe) -> None:
    control = next(c for c in spec.cls.controls if c.name == spec.key)
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    params = spec.make().params
    H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                     what=f"{spec.variable} at its setting")
    slider = H.slider(root, control.label)
    handle = slider.locator(".noUi-handle")

    def step(key: str, timeout_s: float, what: str) -> None:
        handle.focus()
        page.keyboard.press(key)
        value = H.slider_value(control, slider)
        params[spec.key] = value
        H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                         timeout_s=timeout_s, what=f"{spec.variable}: {what}, {spec.key}={value}")

    # the test checks what is offered, not whether this loaded machine's kernel was quick
    # enough to offer it (Panel.LOOKAHEAD_BUDGET_S: a CI run's first step took over 30 ms)
    probe.evaluate(f"{spec.variable}.LOOKAHEAD_BUDGET_S = float('inf')", "'null'")
    step("ArrowRight", 60, "a first step, through the kernel")
    page.wait_for_timeout(1500)  # the page draws the offered steps when it is idle
    probe.evaluate(SLOW_CODE.format(v=spec.variable, s=SLOW_S), "'null'")
    try:
        step("ArrowRight", 1.0, f"a step from lookahead while the kernel takes {SLOW_S} s")
        assert root.locator(".js-plotly-plot").count() == 1
        page.wait_for_timeout(1000 * (SLOW_S + 1))  # the kernel's answer has come
        H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make), timeout_s=1,
                         what=f"{spec.variable}: still that step after the kernel's answer")
        gd = root.locator(".js-plotly-plot")
        shown = gd.screenshot()
        gd.evaluate(REDRAW_JS)
        assert gd.screenshot() == shown, f"{spec.variable}: a redraw shows other pixels"
        step("ArrowLeft", 1.0, "a step back, also from lookahead")
        page.wait_for_timeout(1000 * (SLOW_S + 1))
    finally:
        probe.evaluate(f"del {spec.variable}.compute, {spec.variable}.LOOKAHEAD_BUDGET_S",
                       "'null'")


def _same_as_a_redraw(root, what: str) -> None:
    gd = root.locator(".js-plotly-plot")
    assert gd.count() == 1, f"{what}: {gd.count()} graph divs shown"
    shown = gd.screenshot()
    gd.evaluate(REDRAW_JS)
    assert gd.screenshot() == shown, f"{what}: a redraw shows other pixels"


def _check_drag(page, root, spec) -> None:
    control = next(c for c in spec.cls.controls if c.name == spec.key)
    root.scroll_into_view_if_needed()
    slider = H.slider(root, control.label)
    slider.scroll_into_view_if_needed()
    page.wait_for_timeout(150)  # bounding boxes are viewport coordinates: let scrolling settle
    track = slider.locator(".noUi-target").bounding_box()
    handle = slider.locator(".noUi-handle").bounding_box()
    y = handle["y"] + handle["height"] / 2
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    held = True
    try:
        for fraction in (0.3, 0.7):  # held at 0.3 of the track, then let go at 0.7
            page.mouse.move(track["x"] + fraction * track["width"], y, steps=20)
            value = H.slider_value(control, slider)
            params = dict(spec.make().params, **{spec.key: value})
            if fraction == 0.7:
                page.mouse.up()
                held = False
            what = f"{spec.variable}: dragged to {spec.key}={value}" + (
                ", pointer held" if held else ", let go")
            H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                             timeout_s=60, what=what)
            _same_as_a_redraw(root, what)
    finally:
        if held:
            page.mouse.up()
