"""The companion as a student uses it: JupyterLab in headless Chromium runs a section's
notebook top to bottom, and its explorer answers a moved slider with the numbers and the
figure that ``companion`` computes for the new setting.

For each notebook: clear all outputs, Run All Cells, wait until every prompt is numbered and
the kernel is idle; no error output, no "Error displaying widget"; every figure the stored
notebook has is rendered again (scrolled into view, as a reader would); the explorer shows
every control; its readout and its figure's ``gd.data`` equal the panel's ``update()``
computed here, headless, first at the chapter's setting, then after ArrowRight on a focused
slider handle, then after dragging another handle with the mouse, then (where the panel
has one) after a config.json is pasted into its text box (a bad one: the readout names the
field), and again after the "chapter's setting" button. No request may leave 127.0.0.1.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@dataclass(frozen=True)
class Explorer:
    id: str
    notebook: str
    variable: str          # the notebook cell that ends with `<variable>.show()`
    panel: str             # its class in companion.widgets
    key: str               # control moved by ArrowRight on its focused handle
    drag: tuple | None = None   # (control, fraction of its track): dragged with the mouse
    paste: tuple | None = None  # (text control, label of one of its example texts): pasted


CH08 = "notebooks/ch08_inference_optimization"
CH17 = "notebooks/ch17_performance"
EXPLORERS = [
    Explorer("8.1-capacity", f"{CH08}/08_1_request_lifecycle.ipynb", "memory",
             "MemoryBudgetPanel", key="prompt_tokens", drag=("kv_budget_gib", 0.3),
             paste=("config_json", "missing hidden_size")),
    Explorer("8.2-schedule", f"{CH08}/08_2_batching_and_scheduling.ipynb", "schedule",
             "SchedulePanel", key="chunk_tokens", drag=("long_prompt_tokens", 0.6)),
    Explorer("8.6-schemes", f"{CH08}/08_6_load_and_configuration.ipynb", "schemes",
             "SchemePanel", key="output_tokens", drag=("d_tokens_per_round", 0.35)),
    Explorer("17.2-roofline", f"{CH17}/17_02_roofline.ipynb", "panel", "RooflinePanel",
             key="batch", drag=("context_tokens", 0.2),
             paste=("config_json", "Qwen3-30B-A3B (MoE)")),
]


def stored_layout(lab, path: str, variable: str):
    """From the stored notebook, as the server hands it to JupyterLab (jupytext pairing: inputs
    from the .py, outputs from the .ipynb): per code cell, how many plotly figures it shows
    (mimetype figures + the FigureWidget of a shown panel), and the explorer cell's index."""
    nb = lab.api("GET", f"/api/contents/{path}?content=1")["content"]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    shows = re.compile(rf"^{re.escape(variable)}\.show\(\)\s*$", re.M)
    figures, explorer = [], None
    for i, cell in enumerate(code):
        source = "".join(cell["source"])
        # an explorer's output also stores its static figure (for the book) beside the
        # widget view; JupyterLab renders only the widget there
        n = sum(PLOTLY_MIME in o.get("data", {}) and WIDGET_MIME not in o.get("data", {})
                for o in cell.get("outputs", []))
        if shows.search(source):
            explorer = i
        if re.search(r"^\w+\.show\(\)\s*$", source, re.M):
            n += sum(WIDGET_MIME in o.get("data", {}) for o in cell.get("outputs", []))
        figures.append(n)
    assert explorer is not None, f"{path}: no cell ends with {variable}.show()"
    return figures, explorer


@pytest.mark.parametrize("spec", EXPLORERS, ids=lambda s: s.id)
def test_notebook_runs_and_explorer_follows_its_slider(spec, lab, browsing):
    from companion import widgets

    page, shot = browsing.page, f"lab_{spec.id}"
    panel_cls = getattr(widgets, spec.panel)
    controls = {c.name: c for c in panel_cls.controls}
    figures, explorer_index = stored_layout(lab, spec.notebook, spec.variable)
    clock = H.Clock(spec.id)
    try:
        n_code = H.open_notebook(page, lab, spec.notebook)
        clock.mark(f"notebook open, kernel idle, {n_code} code cells attached")
        H.run_all_cells(page, n_code)
        clock.mark("run all cells finished")
        problems = H.page_problems(page, H.ACTIVE)
        assert not problems, "\n".join(problems)

        cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
        for index, n in enumerate(figures):
            if n:  # a reader scrolls past it: it must render (FigureWidgets render when shown)
                cells.nth(index).scroll_into_view_if_needed()
                H.wait_figures_rendered(page, cells.nth(index), n)
        assert page.locator(f"{H.ACTIVE} .js-plotly-plot").count() == sum(figures)
        clock.mark(f"{sum(figures)} figures rendered")

        root = cells.nth(explorer_index).locator(".jp-OutputArea")
        root.scroll_into_view_if_needed()
        missing = H.check_controls(root, panel_cls)
        assert not missing, f"controls not rendered: {missing}"
        assert root.locator(".js-plotly-plot").count() == 1

        params = panel_cls().defaults()
        at_defaults = H.expected_for(panel_cls, params)
        H.wait_for_state(page, root, at_defaults, what="chapter's setting")
        H.screenshot(page, f"{shot}_1_page")
        H.screenshot(root, f"{shot}_2_explorer_before")

        params = H.move_and_verify(page, root, panel_cls, params, spec.key)
        clock.mark(f"ArrowRight on {spec.key}: page == companion")
        if spec.drag:
            name, fraction = spec.drag
            params = H.move_and_verify(page, root, panel_cls, params, name, drag_to=fraction)
            clock.mark(f"drag of {name} to {params[name]}: page == companion")
        if spec.paste:   # a config.json pasted into the text box (a bad one: its error)
            name, example = spec.paste
            text = controls[name].options[example]
            params = H.paste_and_verify(page, root, panel_cls, params, name, text)
            clock.mark(f"pasted {example} into {name}: page == companion")
        H.screenshot(root, f"{shot}_3_explorer_after")

        # the "chapter's setting" button puts everything back
        root.locator("button", has_text="chapter's setting").click()
        H.wait_for_state(page, root, at_defaults, what="after the chapter's-setting button")
        defaults = panel_cls().defaults()
        for name, control in controls.items():
            if control.kind in ("int", "float"):  # the readout rounds to the slider's step
                shown = H.slider_value(control, H.slider(root, control.label))
                assert abs(shown - defaults[name]) <= control.step / 2, (name, shown)
        assert not H.page_problems(page, H.ACTIVE)
        browsing.assert_offline()
        clock.mark("reset button restored the chapter's setting; no external request")
    finally:
        lab.shutdown_notebook(spec.notebook)
