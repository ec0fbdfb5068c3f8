"""The layout check of every figure a reader sees, drawn by plotly.js in headless Chromium.

Figures come from two places:
  * stored: every plotly output in the stored notebooks (notebooks/, exercises/, solutions/,
    dashboards/), plain figures and the static figure an explorer's output carries;
  * explorer states: every explorer panel (the Panel subclasses in ``companion.widgets``) at
    the chapter's setting and at each control's corners (``Panel.corners``), computed here.

Each is drawn at the width a notebook gives it (``WIDE_PX``) and at a laptop half-screen
(``NARROW_PX``), and ``figure_layout.js`` lists what it finds wrong in the SVG: overlapping or
clipped text, legend entries that draw nothing, fractional ticks on counting axes, log axes that
print bare minor digits. ``python tests/browser/figure_layout.py [--stored|--explorers]``
prints the report without pytest; ``--explorers RooflinePanel ...`` checks the panels named and
``--run notebooks/.../x.py ...`` executes notebooks now (storing nothing) and checks theirs;
``--shots DIR`` saves a screenshot of every drawing checked; ``--write-known`` writes what it
found as the list of known defects (``KNOWN``).
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions", "dashboards")
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDE_PX = 760
NARROW_PX = 700
WIDTHS = (WIDE_PX, NARROW_PX)


@dataclass(frozen=True)
class Figure:
    """One figure to check: where a reader meets it, and its plotly JSON."""

    where: str
    figure: dict


def stored_figures(root: Path = ROOT) -> list[Figure]:
    found = []
    for folder in NOTEBOOK_DIRS:
        for path in sorted((root / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            cells = json.loads(path.read_text())["cells"]
            n = 0
            for i, cell in enumerate(cells):
                for output in cell.get("outputs", []):
                    figure = output.get("data", {}).get(PLOTLY_MIME)
                    if figure is not None:
                        n += 1
                        found.append(Figure(f"{path.relative_to(root)} cell {i} figure {n}",
                                            figure))
    return found


def executed_figures(py: Path) -> list[Figure]:
    """The figures of a notebook's py:percent source executed now on a fresh kernel (nothing
    is stored): how a figure builder changed since the notebook was last executed."""
    import os

    import jupytext
    from nbclient import NotebookClient

    os.environ.setdefault("COMPANION_FAST", "1")
    nb = jupytext.read(py)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "language": "python",
                                          "display_name": "Python 3"})
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(py.parent)}}).execute()
    found, n = [], 0
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            figure = output.get("data", {}).get(PLOTLY_MIME)
            if figure is not None:
                n += 1
                found.append(Figure(f"{py.name} (run now) cell {i} figure {n}", figure))
    return found


def panel_classes() -> list:
    from companion import widgets
    from companion.explorers.base import Panel

    return sorted((obj for obj in (getattr(widgets, n) for n in widgets.__all__)
                   if inspect.isclass(obj) and issubclass(obj, Panel) and obj is not Panel),
                  key=lambda c: c.__name__)


def explorer_states(classes=None) -> list[Figure]:
    """Every panel at the chapter's setting and at each control's corners (each distinct
    setting and each distinct figure once), as the page receives it: ``figure_json`` of the
    panel's traces and layout, what ``PlotlyFigure`` sends. (tests/test_panels.py shows that
    equals plotly.py's validated ``panel.figure(view)`` at every corner; building the
    validated Figure here cost 30 of the sweep's 45 s.)"""
    from companion.explorers.figure_widget import figure_json

    found = []
    for cls in classes or panel_classes():
        panel = cls()
        seen = set()
        defaults = panel.defaults()
        for params in panel.corners():
            key = json.dumps(params, sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
            changed = {k: v for k, v in params.items() if v != defaults[k]}
            setting = ", ".join(f"{k}={v!r}" for k, v in changed.items()) or "chapter's setting"
            view = panel.compute(**params)
            figure = figure_json(view.traces, panel._layout(view))
            text = json.dumps(figure, sort_keys=True)
            if text in seen:  # a control that changes only the readout here
                continue
            seen.add(text)
            found.append(Figure(f"{cls.__name__} at {setting}", figure))
    return found


def open_page(browser):
    """A page with plotly.js (the copy plotly.py ships, as the notebooks use) and the check."""
    import plotly

    page = browser.new_page(viewport={"width": WIDE_PX + 100, "height": 900})
    page.set_content("<!doctype html><html><body style='margin:0'>"
                     "<div id='figure-host'></div></body></html>")
    page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" /
                                 "plotly.min.js"))
    page.add_script_tag(path=str(HERE / "figure_layout.js"))
    return page


BATCH = 40


def check(page, figures: list[Figure], widths=WIDTHS, shots: Path | None = None
          ) -> list[tuple[str, int, dict]]:
    """(where, width, problem) for every problem of every figure at every width; with
    ``shots``, a screenshot of each drawing is saved there too (one figure at a time, slow)."""
    problems = []
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        for i, fig in enumerate(figures):
            for width in widths:
                found = page.evaluate("([f, w]) => companionLayoutCheck(f, w, true)",
                                      [fig.figure, width])
                slug = re.sub(r"[^A-Za-z0-9]+", "-", fig.where)[:80]
                page.locator("#figure-host").screenshot(path=str(shots / f"{i:03d}-{slug}-{width}.png"))
                problems += [(fig.where, width, p) for p in found]
        return problems
    for start in range(0, len(figures), BATCH):
        batch = figures[start:start + BATCH]
        templates, sent = {}, []
        for fig in batch:
            layout = dict(fig.figure.get("layout") or {})
            template = layout.get("template")
            if isinstance(template, dict):
                key = json.dumps(template, sort_keys=True)
                templates.setdefault(key, len(templates))
                layout["template"] = {"ref": templates[key]}
            sent.append({**fig.figure, "layout": layout})
        # one JSON string, parsed in the page: Playwright's own serialisation of the nested
        # figure dicts took as long as drawing them
        payload = json.dumps([sent, [json.loads(k) for k in templates], list(widths)])
        results = page.evaluate("(s) => companionLayoutChecks(...JSON.parse(s))", payload)
        for fig, per_width in zip(batch, results):
            for width, found in zip(widths, per_width):
                problems += [(fig.where, width, p) for p in found]
    return problems


# Defects found and not yet fixed, one per line: where | width | kind | text (the detail, whose
# pixel counts depend on the fonts, is left out). The sweeps fail on any defect not listed here
# and on any listed one that no longer occurs, so the list can only shrink; it is written by
# `python tests/browser/figure_layout.py --write-known` (issue 21: every figure reads cleanly).
KNOWN = HERE / "figure_layout_known.txt"


def defect_key(where: str, width: int, problem: dict) -> str:
    return f"{where} | {width} | {problem['kind']} | {problem['text']}"


def known_defects() -> set[str]:
    if not KNOWN.exists():
        return set()
    return {line for line in KNOWN.read_text().splitlines()
            if line.strip() and not line.startswith("#")}


def write_known(problems, checked: set[str]) -> None:
    """The list for the figures ``checked`` (their "where"s) replaced by ``problems``; the
    lines of figures not checked now are kept."""
    kept = {k for k in known_defects() if k.split(" | ")[0] not in checked}
    lines = sorted(kept | {defect_key(w, px, p) for w, px, p in problems})
    KNOWN.write_text("# figure layout defects not yet fixed (tests/browser/figure_layout.py)\n"
                     + "".join(f"{line}\n" for line in lines))


def report(problems, checked: int) -> str:
    kinds = Counter(p["kind"] for _, _, p in problems)
    figures = len({where for where, _, _ in problems})
    lines = [f"{checked} figure states checked at {' and '.join(map(str, WIDTHS))} px: "
             f"{len(problems)} problems in {figures} of them "
             f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'})"]
    for where, width, p in problems:
        lines.append(f"  {where} @{width}px: {p['kind']}: {p['text']!r} ({p['detail']})")
    return "\n".join(lines)


def main(argv) -> int:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(HERE))
    import lab_harness as H

    which = {a for a in argv if a.startswith("--")} or {"--stored", "--explorers"}
    shots = Path(argv[argv.index("--shots") + 1]) if "--shots" in argv else None
    names = [a for a in argv if not a.startswith("--") and a != str(shots)]
    figures = []
    if "--stored" in which:
        figures += stored_figures()
    if "--explorers" in which:  # all, or the panels named: --explorers RooflinePanel ...
        classes = [c for c in panel_classes() if not names or c.__name__ in names]
        figures += explorer_states(classes)
    if "--run" in which:  # notebooks' .py sources executed now: --run notebooks/x/y.py ...
        for name in names:
            figures += executed_figures(Path(name).resolve())
    with sync_playwright() as p:
        browser = H.launch_browser(p, H.find_chromium())
        page = open_page(browser)
        problems = check(page, figures, shots=shots)
        browser.close()
    print(report(problems, len(figures)))
    if "--write-known" in which:
        write_known(problems, {f.where for f in figures})
        print(f"wrote {KNOWN.relative_to(ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
