"""A slider step answered from lookahead shows exactly what the kernel computes, before the
kernel has answered, and the same pixels as a redraw.

In JupyterLab, on three explorers of tests/browser/many_explorers.py. After a first step (the
kernel answers it and offers the steps either side, which the page keeps), the kernel's
updates are held: the panel instance's compute waits until the test lets it go (a file the
test creates; the lookahead uses the class's compute). The next step must then show
companion's figure and readout while the kernel is still held, so only a figure offered ahead
can show it, and the page must have received no figure from the kernel meanwhile. Once the
kernel is let go and its answer has reached the page, the step's figure must still be shown,
and must be pixel-identical to plotly.js drawing the same figure from scratch in the same place
(figure_widget.js draws ahead of time in a detached div at the shown width). Nothing here
waits for a fixed time: every wait is for a condition (the counts figure_widget.js keeps on
its element: figures from the kernel, offers of figures ahead).

Then the same slider is dragged with the mouse. The pointer over the slider first makes the
page ask for that slider's film (every value's figure, which it draws ahead of time): the
test waits for all of it. While the pointer is held the explorer must show companion's figure
and readout for the handle's value as a copy of a drawing from the film, and once it is let
go the live figure again; both pixel-identical to plotly.js drawing the figure from scratch.
"""

from __future__ import annotations

import pytest

import lab_harness as H
import many_explorers as M
from kernel_probe import KernelProbe, kernel_id_for

pytestmark = pytest.mark.browser

SPECS = [s for s in M.EXPLORERS if s.variable in ("roofline", "memory", "timeline")]

HOLD_CODE = """
import os as __os, time as __t
def __held(_f={v}.compute, _gate={gate!r}, **params):
    deadline = __t.monotonic() + 300   # never hang a kernel past a failed test
    while not __os.path.exists(_gate) and __t.monotonic() < deadline:
        __t.sleep(0.01)
    return _f(**params)
{v}.compute = __held
"""
# plotly.js draws the shown figure (its data and layout) from scratch in a new graph div, in
# the shown one's place (a drag may show a snapshot of a drawing, which plotly.js cannot redraw
# in place); PUT_BACK_JS returns the explorer's own node afterwards
REDRAW_JS = """gd => { const layout = Object.assign({}, gd.layout); delete layout.width;
    const fresh = document.createElement('div');
    window.__shownNode = gd;
    gd.replaceWith(fresh);
    return window.Plotly.newPlot(fresh, gd.data, layout, {editSelection: false}).then(() =>
        new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))); }"""
PUT_BACK_JS = """fresh => { fresh.replaceWith(window.__shownNode); window.Plotly.purge(fresh);
    delete window.__shownNode; }"""


@pytest.fixture(scope="module")
def notebook():
    return M.write_notebook("lookahead", SPECS)


def test_a_step_from_lookahead_is_the_kernels_figure_early(lab, browsing, notebook, tmp_path):
    page = browsing.page
    try:
        n_code = H.open_notebook(page, lab, notebook)
        H.run_all_cells(page, n_code)
        roots = M.explorer_roots(page, H.ACTIVE)
        probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, notebook))
        try:
            for i, spec in enumerate(SPECS):
                _check(page, roots.nth(i), spec, probe, tmp_path / f"let-{spec.variable}-go")
                _check_drag(page, roots.nth(i), spec)
        finally:
            probe.close()
        assert not H.page_problems(page, H.ACTIVE)
        browsing.assert_offline()
    finally:
        lab.shutdown_notebook(notebook)


def _wait_count_above(root, name: str, n: int, what: str) -> None:
    H.wait_until(lambda: H.view_count(root, name) > n, f"{what}: {name} above {n}")


def _check(page, root, spec, probe, gate) -> None:
    control = next(c for c in spec.cls.controls if c.name == spec.key)
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    params = spec.make().params
    H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                     what=f"{spec.variable} at its setting")
    slider = H.slider(root, control.label)
    handle = slider.locator(".noUi-handle")

    def step(key: str, what: str) -> None:
        handle.focus()
        page.keyboard.press(key)
        value = H.slider_value(control, slider)
        params[spec.key] = value
        H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                         what=f"{spec.variable}: {what}, {spec.key}={value}")

    def held_step(key: str, what: str) -> None:
        """A step while the kernel is held: shown from lookahead, nothing from the kernel;
        then the kernel is let go and its answer must arrive and change nothing."""
        gate.unlink(missing_ok=True)
        before = H.view_count(root, "companionKernelFigures")
        step(key, f"{what}, the kernel held")
        assert H.view_count(root, "companionKernelFigures") == before, (
            f"{spec.variable}: the page got a figure from the held kernel")
        assert root.locator(".js-plotly-plot").count() == 1
        gate.touch()
        _wait_count_above(root, "companionKernelFigures", before,
                          f"{spec.variable}: the kernel's answer after it was let go")
        H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make), timeout_s=5,
                         what=f"{spec.variable}: still that step after the kernel's answer")

    # the test checks what is offered, not whether this loaded machine's kernel was quick
    # enough to offer it (Panel.LOOKAHEAD_BUDGET_S: a CI run's first step took over 30 ms)
    probe.evaluate(f"{spec.variable}.LOOKAHEAD_BUDGET_S = float('inf')", "'null'")
    offers = H.view_count(root, "companionAheadOffers")
    step("ArrowRight", "a first step, through the kernel")
    _wait_count_above(root, "companionAheadOffers", offers,
                      f"{spec.variable}: the steps either side offered after the first step")
    gate.touch()
    probe.evaluate(HOLD_CODE.format(v=spec.variable, gate=str(gate)), "'null'")
    try:
        held_step("ArrowRight", "a step from lookahead")
        _same_as_a_redraw(root, f"{spec.variable}: a step from lookahead")
        held_step("ArrowLeft", "a step back, also from lookahead")
    finally:
        gate.touch()  # a held kernel answers nothing else
        probe.evaluate(f"del {spec.variable}.compute, {spec.variable}.LOOKAHEAD_BUDGET_S",
                       "'null'")


def _same_as_a_redraw(root, what: str) -> None:
    gd = root.locator(".js-plotly-plot")
    assert gd.count() == 1, f"{what}: {gd.count()} graph divs shown"
    shown = gd.screenshot()
    gd.evaluate(REDRAW_JS)
    try:
        redrawn = gd.screenshot()
    finally:
        gd.evaluate(PUT_BACK_JS)
    assert redrawn == shown, f"{what}: a redraw shows other pixels"


SHOWS_SNAPSHOT_JS = "gd => !gd._fullLayout"  # a copy of a drawing, not plotly.js's live div


def _check_drag(page, root, spec) -> None:
    control = next(c for c in spec.cls.controls if c.name == spec.key)
    root.scroll_into_view_if_needed()
    slider = H.slider(root, control.label)
    # the pointer over the slider asks for its film, which the page draws ahead of time while
    # the pointer is up: every value the slider can take, the other controls as they are
    panel = spec.make()
    panel.show()
    frames = len(panel._film_values(control))
    slider.locator(".noUi-handle").hover()
    H.wait_until(lambda: H.view_count(root, "companionFilm") == frames,
                 f"{spec.variable}: the film of {spec.key} ({frames} figures)")
    H.wait_until(lambda: H.view_count(root, "companionSnapshots") >= frames,
                 f"{spec.variable}: the film of {spec.key} drawn ahead")
    track, y = H.grab_handle(page, slider)
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
            gd = root.locator(".js-plotly-plot")
            if held:  # shown from the film, without a plotly.js redraw
                assert gd.evaluate(SHOWS_SNAPSHOT_JS), f"{what}: not a drawing of the film"
            else:     # and the live figure (hover, zoom) is back once the pointer is let go
                H.wait_until(lambda: not gd.evaluate(SHOWS_SNAPSHOT_JS),
                             f"{what}: the live figure back")
            _same_as_a_redraw(root, what)
    finally:
        if held:
            page.mouse.up()
