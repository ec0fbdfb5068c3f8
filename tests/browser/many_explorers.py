"""A notebook with several explorers at once, for the loaded-machine and coalescing tests.

Written at test time under artifacts/ (git-ignored, inside the server's root) from EXPLORERS:
one code cell per explorer, built exactly as ``make()`` builds it here, so the test can ask
``companion`` headless what each one must show. Each test module writes its own file: the
browser test modules run side by side under xdist (one Lab server per worker, one folder), so a
shared file would be rewritten under the other test's open notebook.
"""

from __future__ import annotations

from dataclasses import dataclass

import lab_harness as H



@dataclass(frozen=True)
class Spec:
    variable: str
    panel: str           # class in companion.widgets
    kwargs: str          # constructor arguments, as Python source
    key: str             # the slider moved with ArrowRight

    def make(self):
        from companion import widgets

        return eval(f"widgets.{self.panel}({self.kwargs})", {"widgets": widgets})  # noqa: S307

    @property
    def cls(self):
        from companion import widgets

        return getattr(widgets, self.panel)


EXPLORERS = [
    Spec("roofline", "RooflinePanel", "", "batch"),
    Spec("schemes", "SchemePanel", "", "output_tokens"),
    Spec("admission", "AdmissionPanel", "", "output_tokens"),
    Spec("amdahl", "AmdahlPanel", "", "decode_fraction"),
    Spec("memory", "MemoryBudgetPanel", "", "prompt_tokens"),
    Spec("timeline", "RequestTimelinePanel", "", "output_tokens"),
]


def write_notebook(name: str, specs=EXPLORERS) -> str:
    """Write the notebook ``artifacts/browser/<name>.ipynb`` and return that path (relative to
    the repository root)."""
    return H.write_scratch_notebook(
        name, "Several explorers at once (browser tests).",
        ["from companion import widgets"]
        + [f"{s.variable} = widgets.{s.panel}({s.kwargs})\n{s.variable}.show()" for s in specs])


def explorer_roots(page, scope: str = "body"):
    """The explorers' output areas, in cell order (each holds one explorer's widgets)."""
    return page.locator(f"{scope} .jp-OutputArea-output").filter(
        has=page.locator(".widget-slider"))


def check_explorer(page, root, spec: Spec, timeout_s: float) -> None:
    """The explorer shows what companion computes, follows one ArrowRight on its key slider,
    and its figure is drawn (data and SVG)."""
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1, timeout_s=timeout_s)
    params = spec.make().params
    H.wait_for_state(page, root, H.expected_for(spec.cls, params, spec.make),
                     timeout_s=timeout_s, what=f"{spec.variable} at its setting")
    H.move_and_verify(page, root, spec.cls, params, spec.key, make=spec.make,
                      timeout_s=timeout_s)

