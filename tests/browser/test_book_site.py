"""The static book as a reader gets it: ``make book`` builds it from this checkout (the stored
outputs, no kernel) into a scratch folder, Python's http.server serves it on 127.0.0.1, and
headless Chromium reads it with every request that is not for 127.0.0.1 blocked and recorded.

- the build passes with warnings as errors and has a page per notebook and exercise;
- the front page has the chapter and section sidebar with every page, and search finds pages;
- a section page renders its math (MathJax from the site) and every figure its notebook
  stores (plotly.js from the site);
- a static explorer's slider, clicked with the mouse, changes its figure, and its readout
  becomes exactly what the panel computes at the new value; the other controls are shown
  disabled and say how to move them;
- no request left 127.0.0.1, no local file was missing, and nothing logged an error.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser

ROOT = H.ROOT
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SECTION = "notebooks/ch17_performance/17_02_roofline"
EXPLORERS = [("notebooks/START_HERE", "KVCapacityPanel"), (SECTION, "RooflinePanel")]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The book built with the project's own command into a scratch folder."""
    scratch = tmp_path_factory.mktemp("book")
    out = scratch / "site"
    started = time.perf_counter()
    build = subprocess.run(["make", "--no-print-directory", "book", f"BOOK_OUT={out}",
                            f"BOOK_DOCTREES={scratch / 'doctrees'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, f"make book failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}"
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\nbook: built in {time.perf_counter() - started:.0f} s, {len(pages)} pages, "
          f"{size / 2**20:.1f} MiB")
    return out


class _VisibleText(HTMLParser):
    """A page's text as a reader sees it before MathJax runs: no scripts, styles, code
    blocks, or the math Sphinx already marked up (class "math")."""

    HIDDEN = {"script", "style", "pre", "code", "textarea"}
    VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "source", "col", "area"}

    def __init__(self):
        super().__init__()
        self.hidden: list[bool] = []
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.hidden.append(tag in self.HIDDEN or "math" in classes)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.hidden:
            self.hidden.pop()

    def handle_data(self, data):
        if not any(self.hidden):
            self.chunks.append(data)


# "$$", a "$...$" span, or a bare \( \[ left in the text: maths the book did not typeset
RAW_MATH = re.compile(r"\$\$|\$[^$\s][^$\n]{0,80}?[^$\s\\]\$|\$[^$\s]\$|\\\(|\\\[")


def test_no_page_shows_raw_maths(site):
    found = []
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.parts or page.name in ("search.html", "genindex.html"):
            continue
        parser = _VisibleText()
        parser.feed(page.read_text(encoding="utf-8"))
        text = "".join(parser.chunks)
        for m in RAW_MATH.finditer(text):
            context = text[max(0, m.start() - 50):m.end() + 30]
            found.append(f"{page.relative_to(site)}: ...{context!r}")
    assert not found, (f"{len(found)} passages print their LaTeX as text (a computed sentence "
                       f"must be a text/markdown output; display maths needs its own paragraph):\n"
                       + "\n".join(found[:20]))


@pytest.fixture(scope="module")
def server(site, chromium, tmp_path_factory):
    srv = H.StaticSiteServer(site, tmp_path_factory.mktemp("book-server"))
    srv.start(timeout_s=60)
    try:
        yield srv
    finally:
        leftovers = srv.stop()
        assert not leftovers, f"processes left behind by http.server: {leftovers}"


@pytest.fixture
def reader(browsing):
    """The page of ``browsing``, kept to 127.0.0.1 (``lab_harness.local_only``)."""
    with H.local_only(browsing):
        yield browsing


def notebook_docs() -> list[str]:
    docs = [p.relative_to(ROOT).with_suffix("").as_posix()
            for p in sorted((ROOT / "notebooks").rglob("*.ipynb"))
            if ".ipynb_checkpoints" not in p.parts]
    return docs + [p.relative_to(ROOT).with_suffix("").as_posix()
                   for p in sorted((ROOT / "exercises").glob("*.ipynb"))]


def stored_figures(doc: str) -> int:
    """Figures a page must show: the plotly outputs of its notebook (an explorer's static
    figure included; its widget view is not rendered in the book)."""
    nb = json.loads((ROOT / f"{doc}.ipynb").read_text())
    return sum(PLOTLY_MIME in o.get("data", {}) for c in nb["cells"]
               for o in c.get("outputs", []))


def test_the_book_has_every_notebook_and_no_solution(site):
    for doc in notebook_docs():
        assert (site / f"{doc}.html").is_file(), f"no page for {doc}"
    assert not list(site.rglob("solutions/*.html")) and not (site / "solutions").exists()
    assert (site / "index.html").is_file() and (site / "search.html").is_file()
    # what a reader's browser loads is all in the site
    assert (site / "_static" / "plotly" / "plotly.min.js").stat().st_size > 1_000_000
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


OPEN_LIVE = re.compile(r'<p class="companion-open-live"><a [^>]*href="([^"]+)"')


def test_every_page_opens_live_in_the_lite_site(site):
    """Each page links to its notebook in the lite site (the front page to the site's front
    door), by a URL relative to the page that lands in build/lite/ when build/book/ and
    build/lite/ are served side by side, at a notebook the lite build serves."""
    sys.path.insert(0, str(ROOT / "tools"))
    import lite_build

    served = set(lite_build.content_notebooks())
    for doc in ["index", *notebook_docs()]:
        hrefs = OPEN_LIVE.findall((site / f"{doc}.html").read_text(encoding="utf-8"))
        assert len(hrefs) == 1, f"{doc}: {len(hrefs)} open-live links"
        # resolved as a browser does on a server whose root holds book/ and lite/
        target = urlparse(urljoin(f"http://127.0.0.1/book/{doc}.html",
                                  html_lib.unescape(hrefs[0])))
        if doc == "index":
            assert target.path == "/lite/index.html", hrefs[0]
            continue
        assert target.path == "/lite/lab/index.html", f"{doc}: {hrefs[0]}"
        assert parse_qs(target.query) == {"path": [f"{doc}.ipynb"]}, f"{doc}: {hrefs[0]}"
        assert f"{doc}.ipynb" in served, f"{doc}: the lite site does not serve {doc}.ipynb"


def test_front_page_sidebar_and_search(server, reader):
    page = reader.page
    page.goto(f"{server.base}/index.html")
    nav = page.locator("nav.bd-docs-nav")
    nav.wait_for()
    for caption in ("Chapter 8 · Inference Optimization", "Chapter 17 · LLM Inference Performance",
                    "Exercises", "Lab and your own model", "Start"):
        assert nav.get_by_text(caption, exact=True).count() == 1, caption
    links = {a.split("#")[0] for a in nav.locator("a").evaluate_all(
        "els => els.map(e => e.getAttribute('href'))")}
    for doc in notebook_docs():
        assert f"{doc}.html" in links, f"{doc} is not in the sidebar"
    H.screenshot(page, "book_1_front_page")
    # Sphinx's own search, on the index it built
    page.locator("form.bd-search input[name=q]").first.wait_for(state="attached")
    page.goto(f"{server.base}/search.html?q=roofline")
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=60_000)
    found = results.evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert any("17_02_roofline" in href for href in found), found
    H.screenshot(page, "book_2_search")


def test_section_page_renders_math_and_every_figure(server, reader):
    page = reader.page
    page.goto(f"{server.base}/{SECTION}.html")
    page.locator("mjx-container").first.wait_for(timeout=60_000)
    assert page.locator("mjx-container").count() >= 5
    assert page.locator("mjx-merror").count() == 0
    expected = stored_figures(SECTION)
    assert expected >= 2
    plots = page.locator(".js-plotly-plot")
    for i in range(expected):
        plots.nth(i).scroll_into_view_if_needed()
        plots.nth(i).locator(".main-svg").first.wait_for(timeout=60_000)
    assert plots.count() == expected
    for i in range(expected):
        assert plots.nth(i).evaluate("gd => gd.data.length") > 0
    H.screenshot(page, "book_3_section")


@pytest.mark.parametrize("doc,panel", EXPLORERS, ids=[d.split("/")[-1] for d, _ in EXPLORERS])
def test_static_explorer_follows_its_slider(server, reader, doc, panel):
    from companion import widgets

    page = reader.page
    page.goto(f"{server.base}/{doc}.html")
    box = page.locator(".companion-explorer").first
    box.scroll_into_view_if_needed()
    gd = box.locator(".js-plotly-plot")
    gd.locator(".slider-container").wait_for(timeout=60_000)
    readout = box.locator(".companion-explorer-readout")
    cls = getattr(widgets, panel)
    meta = gd.evaluate("gd => gd.layout.meta.companion_explorer")
    active = gd.evaluate("gd => gd.layout.sliders[0].active")
    defaults = cls().defaults()
    assert meta["values"][active] == defaults[cls.main_control]
    panel_at = cls()
    assert H.html_text(readout.inner_html()) == H.html_text(
        panel_at.readout_html(panel_at.compute(**defaults)))
    # the other controls: shown at the chapter's setting, disabled, saying how to move them
    fixed = box.locator(".companion-explorer-fixed")
    assert fixed.count() == len(cls.controls) - 1
    assert fixed.locator("input[disabled]").count() == fixed.count()
    assert fixed.first.get_by_text("open in JupyterLab to move me").count() == 1
    H.screenshot(box, f"book_explorer_{panel}_before")

    before = gd.evaluate("gd => JSON.stringify(gd.data)")
    rail = gd.locator(".slider-rail-touch-rect").first
    rail.scroll_into_view_if_needed()
    bbox = rail.bounding_box()
    target = 0.1 if active > len(meta["values"]) / 2 else 0.9
    page.mouse.click(bbox["x"] + bbox["width"] * target, bbox["y"] + bbox["height"] / 2)
    page.wait_for_function(
        "([el, a]) => el.layout.sliders[0].active !== a", arg=[gd.element_handle(), active],
        timeout=30_000)
    moved = gd.evaluate("gd => gd.layout.sliders[0].active")
    value = meta["values"][moved]
    expected = cls().compute(**dict(defaults, **{cls.main_control: value}))
    page.wait_for_function(
        "([el, text]) => el.textContent.replace(/\\s+/g, '') === text",
        arg=[readout.element_handle(), H.html_text(panel_at.readout_html(expected))],
        timeout=30_000)
    assert gd.evaluate("gd => JSON.stringify(gd.data)") != before
    # the figure now shows the panel's traces at the new value (to the stored rounding)
    shown_names = gd.evaluate("gd => gd.data.filter(t => t.visible !== false).map(t => t.name)")
    assert [t.get("name") for t in expected.traces] == shown_names[:len(expected.traces)]
    H.screenshot(box, f"book_explorer_{panel}_after")


@pytest.mark.parametrize("doc,panel", EXPLORERS, ids=[d.split("/")[-1] for d, _ in EXPLORERS])
def test_static_explorer_moves_from_the_keyboard(server, reader, doc, panel):
    """The range input above a static explorer is its slider for the keyboard and screen
    readers: it has the control's name and the step's value as text; an arrow key applies the
    next precomputed step (the same frame plotly's slider gives), swaps the readout to the
    panel's own at that value, and announces it."""
    from companion import widgets

    page = reader.page
    page.goto(f"{server.base}/{doc}.html")
    box = page.locator(".companion-explorer").first
    box.scroll_into_view_if_needed()
    gd = box.locator(".js-plotly-plot")
    gd.locator(".slider-container").wait_for(timeout=60_000)
    cls = getattr(widgets, panel)
    meta = gd.evaluate("gd => gd.layout.meta.companion_explorer")
    steps = gd.evaluate("gd => gd.layout.sliders[0].steps.map(s => s.label)")
    active = gd.evaluate("gd => gd.layout.sliders[0].active")
    slider = page.get_by_role("slider", name=meta["control"])
    assert slider.count() == 1, "the range input is named by its control's label"
    assert slider.get_attribute("aria-valuetext") == steps[active]
    # what plotly's own slider shows for the next step, applied to a copy of the figure
    key, moved = ("ArrowLeft", active - 1) if active > 0 else ("ArrowRight", active + 1)
    film = gd.evaluate("""(gd, i) => {
        const div = document.createElement('div');
        document.body.appendChild(div);
        return Plotly.newPlot(div, JSON.parse(JSON.stringify(gd.data)),
                              JSON.parse(JSON.stringify(gd.layout))).then(() => {
          const args = gd.layout.sliders[0].steps[i].args;
          return Plotly.update(div, args[0] || {}, args[1] || {}, args[2]);
        }).then(() => { const data = JSON.stringify(div.data); div.remove(); return data; });
    }""", moved)
    slider.focus()
    page.keyboard.press(key)
    page.wait_for_function("([el, a]) => el.layout.sliders[0].active === a",
                           arg=[gd.element_handle(), moved], timeout=30_000)
    readout = box.locator(".companion-explorer-readout")
    panel_at = cls()
    expected = panel_at.compute(**dict(panel_at.defaults(),
                                       **{cls.main_control: meta["values"][moved]}))
    page.wait_for_function(
        "([el, text]) => el.textContent.replace(/\\s+/g, '') === text",
        arg=[readout.element_handle(), H.html_text(panel_at.readout_html(expected))],
        timeout=30_000)
    assert gd.evaluate("gd => JSON.stringify(gd.data)") == film
    assert slider.get_attribute("aria-valuetext") == steps[moved]
    announced = box.locator(".companion-explorer-announce").text_content()
    assert announced.startswith(steps[moved] + ".") and len(announced) > len(steps[moved]) + 10
    H.screenshot(box, f"book_explorer_{panel}_keyboard")


FOLD_MARK = re.compile(r"<!--\s*fold(?::\s*(.*?))?\s*-->", re.S)


def test_depth_sections_are_closed_folds_in_the_book(site):
    """Every depth section of a notebook (a heading cell ending with ``<!-- fold: ... -->``,
    collapsed in JupyterLab) is a closed ``<details>`` on its page, summary from the marker,
    holding the rest of the section; no marker shows as text."""
    checked = 0
    for doc in notebook_docs():
        nb = json.loads((ROOT / f"{doc}.ipynb").read_text())
        marks = [m.group(1).strip() for c in nb["cells"] if c["cell_type"] == "markdown"
                 for m in FOLD_MARK.finditer("".join(c["source"]))]
        page = (site / f"{doc}.html").read_text(encoding="utf-8")
        folds = re.findall(r'<details class="companion-depth"( open)?><summary>(.*?)</summary>',
                           page, re.S)
        assert len(folds) == len(marks), f"{doc}: {len(folds)} folds for {len(marks)} markers"
        for (opened, summary), mark in zip(folds, marks):
            assert not opened, f"{doc}: a depth fold opens by itself"
            assert html_lib.unescape(summary).lower() == mark.lower(), (doc, summary, mark)
        assert page.count("<details") == page.count("</details>"), f"{doc}: unbalanced folds"
        assert "&lt;!--" not in page, f"{doc}: a fold marker shows as text"
        checked += len(marks)
    assert checked >= 30


# a page with an explorer whose long title reaches the figure's right edge (8.3.1's paging)
MODEBAR_PAGE = "notebooks/ch08_inference_optimization/08_3_kv_cache"


def test_the_modebar_is_never_over_a_figure_title(server, reader):
    """plotly's toolbar (modebar) sits in a strip above each figure: not over the title, with
    the pointer away from the figure or over it (where a reader moving a static explorer's
    slider has it). Shown able to fail: with plotly's own placement back, it covers a title."""
    import surfaces as S

    page = reader.page
    page.goto(f"{server.base}/{MODEBAR_PAGE}.html")
    plots = page.locator(".js-plotly-plot")
    checked, over = 0, []
    for i in range(plots.count()):
        gd = plots.nth(i)
        if not gd.is_visible():
            continue   # in a fold a reader has not opened
        gd.scroll_into_view_if_needed()
        gd.locator(".main-svg").first.wait_for(timeout=60_000)
        page.mouse.move(1, 1)
        away = gd.evaluate(S.MODEBAR_PROBE_JS)
        box = gd.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(400)
        hovered = gd.evaluate(S.MODEBAR_PROBE_JS)
        assert hovered["shown"], f"figure {i}: no modebar on hover"
        over += [f"figure {i} ({m['titleText'][:60]!r}, {how})"
                 for how, m in (("pointer away", away), ("pointer over it", hovered))
                 if S.modebar_over_title(m)]
        checked += 1
    assert checked >= 5, checked
    assert not over, f"the modebar covers a title: {over}"
    # self-check: plotly's own placement (the modebar at the figure's top right corner)
    gd = page.locator(".companion-explorer .js-plotly-plot").first
    gd.scroll_into_view_if_needed()
    page.add_style_tag(content=".cell_output .js-plotly-plot { margin-top: 0 }"
                               ".cell_output .js-plotly-plot .modebar-container "
                               "{ top: 0 !important }")
    box = gd.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(400)
    assert S.modebar_over_title(gd.evaluate(S.MODEBAR_PROBE_JS)), \
        "the check cannot see a modebar over the title"
    H.screenshot(page, "book_modebar_placement_check")


def test_text_tables_set_their_headers_apart(server, reader):
    """A text table (companion.tables.markdown_table, rendered by MyST) and a static
    explorer's readout table: headers ruled off from the rows, cells padded apart, a readout's
    headers on one line."""
    page = reader.page
    page.goto(f"{server.base}/{SECTION}.html")
    found = page.evaluate("""() => [...document.querySelectorAll(
            '.cell_output table:not(.companion-ledger)')].map(t => {
        const th = t.querySelector('th');
        const cs = th ? getComputedStyle(th) : null;
        const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
            return new Set([...r.getClientRects()].filter(x => x.width > 0)
                           .map(x => Math.round(x.top))).size; };
        // a figure's "Show the numbers" tables wrap their long axis titles on purpose
        return {readout: !!t.closest('.companion-explorer-readout')
                         && !t.closest('.companion-figure-data'),
                rule: cs ? parseFloat(cs.borderBottomWidth) : 0,
                pad: cs ? parseFloat(cs.paddingRight) : 0,
                wrapped: [...t.querySelectorAll('th')].filter(h => lines(h) > 1)
                    .map(h => h.textContent)}; })""")
    assert any(t["readout"] for t in found) and any(not t["readout"] for t in found), found
    for t in found:
        assert t["rule"] >= 1 and t["pad"] >= 4, t
        if t["readout"]:
            assert not t["wrapped"], t
