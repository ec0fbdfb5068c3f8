"""While a slider is dragged, the explorer follows the hand: intermediate values are dropped,
never queued, and the last value always wins.

In JupyterLab, on the roofline explorer of tests/browser/many_explorers.py: a burst of
ArrowRight presses on the focused handle, then a mouse drag across the track. The page counts
the values the slider passed through (page_probe.js is not needed: a MutationObserver on the
slider's readout), the kernel counts the updates it computed (tests/browser/kernel_probe.py).
After each burst the explorer must show exactly what ``companion`` computes for the slider's
final value, and it must have computed fewer updates than the slider took values.
"""

from __future__ import annotations

import pytest

import lab_harness as H
import many_explorers as M
from kernel_probe import KernelProbe, kernel_id_for

pytestmark = pytest.mark.browser

COUNT_VALUES_JS = """el => {
    const seen = [el.textContent];
    const obs = new MutationObserver(() => {
        if (el.textContent !== seen[seen.length - 1]) seen.push(el.textContent); });
    obs.observe(el, {subtree: true, childList: true, characterData: true});
    window.__sliderValues = seen; window.__sliderObserver = obs; }"""
TAKE_VALUES_JS = "() => { window.__sliderObserver.disconnect(); return window.__sliderValues; }"
SENT_CODE = """
__sent = [0]
{v}._fig.state.observe(lambda change: __sent.__setitem__(0, __sent[0] + 1), names="digest")
"""
SENT_EXPR = "__import__('json').dumps(__sent[0])"
KERNEL_VALUE = "__import__('json').dumps({v}.params[{k!r}])"
FIGURES = "companionKernelFigures"


@pytest.fixture(scope="module")
def notebook():
    return M.write_notebook("coalescing", M.EXPLORERS[:1])


def test_a_burst_of_moves_ends_on_the_last_value(lab, browsing, notebook):
    page = browsing.page
    spec = M.EXPLORERS[0]
    control = next(c for c in spec.cls.controls if c.name == spec.key)
    try:
        n_code = H.open_notebook(page, lab, notebook)
        H.run_all_cells(page, n_code)
        root = M.explorer_roots(page, H.ACTIVE).first
        root.scroll_into_view_if_needed()
        params = spec.make().params
        H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make))
        probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, notebook))
        try:
            assert probe.instrument() == {spec.variable: spec.panel}
            slider = H.slider(root, control.label)
            readout = slider.locator(".widget-readout")

            # every figure the kernel sends carries a new digest: count them kernel-side
            probe.evaluate(SENT_CODE.format(v=spec.variable), "'null'")

            def burst(move) -> tuple[int, int]:
                probe.take_log(spec.variable)
                readout.evaluate(COUNT_VALUES_JS)
                sent_before = probe.evaluate("", SENT_EXPR)
                shown_before = H.view_count(root, FIGURES)
                move()
                final = H.slider_value(control, slider)
                expected = H.expected_for(spec.cls, dict(params, **{spec.key: final}), spec.make)
                H.wait_for_state(page, root, expected, what=f"after the burst, {spec.key}={final}")
                # nothing may arrive after the last value: wait until the kernel has taken the
                # final value (it takes messages in order) and the page has received every
                # figure the kernel sent, then the page must still show the final value
                H.wait_until(lambda: probe.evaluate("", KERNEL_VALUE.format(
                    v=spec.variable, k=spec.key)) == final, f"the kernel taking {spec.key}={final}")
                sent = probe.evaluate("", SENT_EXPR) - sent_before
                H.wait_until(lambda: H.view_count(root, FIGURES) - shown_before >= sent,
                             f"the page receiving the kernel's {sent} figures")
                assert H.view_count(root, FIGURES) - shown_before == sent
                H.wait_for_state(page, root, expected, timeout_s=1, what="still the last value")
                values = len(page.evaluate(TAKE_VALUES_JS)) - 1
                computed = len(probe.take_log(spec.variable))
                params[spec.key] = final
                print(f"{spec.key}: {values} slider values, {computed} updates computed")
                return values, computed

            # as many presses as the slider has steps to its right, at most 30 (the batch's
            # log-spaced slider has 8 stops above the chapter's 64)
            presses, value = 0, params[spec.key]
            while presses < 30 and (value := control.step_from(value, +1)) is not None:
                presses += 1
            assert presses >= 8, presses

            def keys():
                handle = slider.locator(".noUi-handle")
                handle.focus()
                for _ in range(presses):
                    page.keyboard.press("ArrowRight")

            values, computed = burst(keys)
            assert values == presses, f"the slider took {values} values for {presses} presses"
            assert 1 <= computed < values, (computed, values)

            # back across most of the track, from the top end the presses reached
            values, computed = burst(lambda: _fast_drag(page, slider, 0.1))
            assert values >= 10, f"the drag passed through only {values} values"
            # a drag crosses the log-spaced stops one at a time, slowly enough that the kernel
            # may keep up with every one; it must never compute more than the page sent (the
            # key burst above is where coalescing has to show)
            assert 1 <= computed <= values, (computed, values)
        finally:
            probe.close()
        assert not H.page_problems(page, H.ACTIVE)
        browsing.assert_offline()
    finally:
        lab.shutdown_notebook(notebook)


def _fast_drag(page, slider, fraction: float, steps: int = 60) -> None:
    """Drag the handle to ``fraction`` of the track in ``steps`` mouse moves, as fast as the
    browser takes them."""
    H.drag(page, slider, fraction, steps=steps)
