"""Clean surfaces: what a reader sees of the explorers and the ledger tables, measured in the
page (tests/browser/surfaces.py).

In JupyterLab, every explorer of ``companion.widgets`` at the chapter's setting (one generated
notebook), the notebook 700 px wide (sidebars closed):
- no control text is cut: a dropdown's options fit its field, labels and slider values fit;
- within a panel, every slider's track has one length and one left edge (and is long enough
  to use);
- no readout table header wraps onto a second line;
- plotly's toolbar, shown while the pointer is over an explorer's figure, is not over its title.
Each check is shown able to fail: with the panels' own stylesheet taken out of the page (the
layout before it), the same probe finds cut dropdowns and uneven tracks.

The ledger table (``companion.ledger``) at the book's content width, its style as it travels
with the output: headers on one line and set off, numbers right-aligned, short claims on one
line. The book's own checks (the modebar over a title there) are in test_book_site.py.
"""

from __future__ import annotations

import pytest

import lab_harness as H
import surfaces as S

pytestmark = pytest.mark.browser

NOTEBOOK_WIDTH = 700
# panels whose old layout the self-check expects to be caught: a cut dropdown (8.3.4's
# retention explorer), a 40 px track (8.3.1's paging explorer), tracks of many lengths
BEFORE_FAILS = ("RetentionPanel", "PagingPanel", "RooflinePanel")


def _measure_all(page, names) -> dict:
    roots = page.locator(f"{H.ACTIVE} .companion-panel")
    assert roots.count() == len(names), (roots.count(), len(names))
    found = {}
    for i, name in enumerate(names):
        root = roots.nth(i)
        root.scroll_into_view_if_needed()
        found[name] = root.evaluate(S.PANEL_PROBE_JS)
    return found


def test_every_explorer_panel_is_clean_at_700_px(lab, browsing):
    page = browsing.page
    notebook = S.write_panels_notebook("clean_surfaces")
    names = S.panel_classes()
    n = H.open_notebook(page, lab, notebook)
    H.run_all_cells(page, n, timeout_ms=600_000)
    assert not H.page_problems(page, H.ACTIVE), H.page_problems(page, H.ACTIVE)
    S.narrow_notebook(page, NOTEBOOK_WIDTH, height=2000)

    measured = _measure_all(page, names)
    problems = {name: S.panel_problems(m) for name, m in measured.items()}
    bad = {name: p for name, p in problems.items() if p}
    for name in ("RetentionPanel", "PagingPanel", "RooflinePanel"):
        H.screenshot(page.locator(f"{H.ACTIVE} .companion-panel").nth(names.index(name)),
                     f"clean_surfaces_{name}_{NOTEBOOK_WIDTH}px")
    assert not bad, "\n".join(f"{name}: {p}" for name, ps in bad.items() for p in ps)
    assert all(m["tracks"] for name, m in measured.items()
               if name in BEFORE_FAILS), "the probe found no slider track"

    # the toolbar of an explorer's figure, the pointer over the figure: not over its title
    root = page.locator(f"{H.ACTIVE} .companion-panel").nth(names.index("RetentionPanel"))
    gd = root.locator(".js-plotly-plot").first
    gd.scroll_into_view_if_needed()
    box = gd.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(500)
    bar = gd.evaluate(S.MODEBAR_PROBE_JS)
    assert bar["shown"] and bar["title"], bar
    assert not S.modebar_over_title(bar), f"the modebar covers the title: {bar}"

    # self-check: without the panels' stylesheet (the layout before it) the probe fails them
    page.evaluate("() => document.querySelectorAll('.companion-panel style')"
                  ".forEach(s => s.remove())")
    page.wait_for_timeout(300)
    before = _measure_all(page, names)
    for name in BEFORE_FAILS:
        assert S.panel_problems(before[name]), f"{name}: the probe finds nothing wrong " \
                                               f"in the old layout: {before[name]}"
    assert any(c["what"].startswith("dropdown") for c in before["RetentionPanel"]["cut"])
    assert any(t["width"] < 100 for t in before["PagingPanel"]["tracks"])
    gd.scroll_into_view_if_needed()
    box = gd.bounding_box()
    page.mouse.move(1, 1)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(500)
    bar = gd.evaluate(S.MODEBAR_PROBE_JS)
    assert S.modebar_over_title(bar), f"the probe misses plotly's own modebar placement: {bar}"
    lab.shutdown_notebook(notebook)


# the readout-header check alone: a header that wraps is found, one that does not is not
WRAP_PAGE = """<div class="companion-panel"><div class="widget-html-content">
<table><tr><th id="narrow" style="width:2em">of peak</th><th>point</th></tr></table>
</div></div>"""


def test_the_panel_probe_finds_a_wrapped_header(browsing):
    page = browsing.page
    page.set_content(WRAP_PAGE)
    found = page.locator(".companion-panel").evaluate(S.PANEL_PROBE_JS)
    assert found["wrapped"] == ["of peak"], found
    assert S.panel_problems(found) == ["readout header wraps: 'of peak'"]


BOOK_WIDTH_PX = 784        # the book's content column at a 1400 px window (sphinx-book-theme)
SHORT_CLAIM = 30           # characters: a claim this short stays on one line


def _ledger_page(page, html: str) -> dict:
    page.set_content(f'<body style="font-family: sans-serif; font-size: 16px">'
                     f'<div id="c" style="width: {BOOK_WIDTH_PX}px">{html}</div></body>')
    return page.evaluate("""() => {
        const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
            return new Set([...r.getClientRects()].filter(x => x.width > 0)
                           .map(x => Math.round(x.top))).size; };
        const t = document.querySelector('table.companion-ledger');
        const d = t.closest('details'); if (d) d.open = true;
        const rows = [...t.querySelectorAll('tbody tr[class]')];
        const cell = (r, i) => r.children[i];
        const head = t.querySelector('thead th');
        return {
            width: t.getBoundingClientRect().width,
            headersWrapped: [...t.querySelectorAll('thead th')].filter(th => lines(th) > 1)
                .map(th => th.textContent),
            headerRule: parseFloat(getComputedStyle(head).borderBottomWidth),
            headerPadding: parseFloat(getComputedStyle(head).paddingRight),
            numbersAlign: rows.map(r => [getComputedStyle(cell(r, 1)).textAlign,
                                         getComputedStyle(cell(r, 2)).textAlign]),
            claims: rows.map(r => [cell(r, 0).textContent, lines(cell(r, 0))]),
        };
    }""")


@pytest.mark.parametrize("section", ["17.2", "8.3.4", "8.4.4"])
def test_ledger_tables_are_styled_where_they_are_shown(browsing, section):
    from companion import ledger

    page = browsing.page
    for html in (ledger.show(section)._repr_html_(), ledger.html_table(section)):
        found = _ledger_page(page, html)
        assert found["width"] <= BOOK_WIDTH_PX + 2, found["width"]
        assert not found["headersWrapped"], found["headersWrapped"]
        assert found["headerRule"] >= 1 and found["headerPadding"] >= 4, found
        assert all(a == ["right", "right"] for a in found["numbersAlign"]), found["numbersAlign"]
        wrapped = [c for c, n in found["claims"] if len(c) <= SHORT_CLAIM and n > 1]
        assert not wrapped, f"short claims wrap: {wrapped}"
    # self-check: the same table without its style runs its headers together and wraps claims
    bare = ledger.show(section)._repr_html_().replace(ledger.LEDGER_STYLE, "")
    found = _ledger_page(page, bare)
    assert found["headerRule"] == 0 or found["headerPadding"] < 4
