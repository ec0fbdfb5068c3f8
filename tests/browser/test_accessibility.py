"""Accessibility of what a reader gets, checked with axe-core's WCAG 2.0/2.1 level A and AA
rules (``axe.run_axe``; axe-core's version is pinned by requirements.lock, see axe.py).

- the static book (``make book`` into a scratch folder, served on 127.0.0.1, every request
  elsewhere blocked): every HTML page of the site has no violation, once its maths is typeset
  and its figures are drawn; the counts per page are printed;
- JupyterLab, after Run All of a section notebook and of START_HERE: the notebook's outputs
  (``.jp-OutputArea-output``) have no violation. JupyterLab's own shell is not the
  companion's: the whole page's violations are counted by rule, printed and kept in
  artifacts/a11y/, not asserted. In the explorer, every control has its label as accessible
  name, the figure is a named figure, and Tab reaches every control, the "chapter's setting"
  button, the readout and the figure;
- the keyboard alone moves an explorer: Tab onto the first slider's handle, ArrowRight, and
  the page shows the figure and readout that the kernel computes for the new value; the
  explorer's accessibility tree (what a screen reader gets) goes to
  artifacts/a11y/lab_explorer_tree.txt;
- the lite site (``make lite``): the section notebook's outputs after Run All in the Pyodide
  kernel, as in JupyterLab.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import types

import pytest

import axe
import lab_harness as H

pytestmark = pytest.mark.browser

ROOT = H.ROOT
ARTIFACTS = ROOT / "artifacts" / "a11y"
OUTPUTS = f"{H.ACTIVE} .jp-OutputArea-output"
SECTION = "notebooks/ch17_performance/17_02_roofline.ipynb"
# (id, notebook, the variable whose .show() shows the explorer, its panel class)
NOTEBOOKS = [("17_02", SECTION, "panel", "RooflinePanel"),
             ("START_HERE", "notebooks/START_HERE.ipynb", "capacity", "KVCapacityPanel")]


def save(name: str, data) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def targets(violations) -> dict[str, list[str]]:
    """{rule id: the elements that break it (axe's selectors, markup cut short)}."""
    return {v.id: [f"{t} :: {n['html'][:160]}" for t, n in zip(v.targets, v.nodes)]
            for v in violations}


def test_axe_finds_what_it_should(browsing):
    """The check can fail: a page with a nameless slider, an image without alt text and no
    title or language breaks the rules axe must report."""
    page = browsing.page
    page.set_content('<html><body><main><div role="slider" tabindex="0" aria-valuenow="1">'
                     '</div><img src="data:,"></main></body></html>')
    found = axe.counts(axe.run_axe(page))
    assert {"aria-input-field-name", "image-alt", "html-has-lang",
            "document-title"} <= set(found), found
    assert axe.counts(axe.run_axe(page, include="main")).keys() == {
        "aria-input-field-name", "image-alt"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", axe.AXE_VERSION)


# --- the book --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book built with the project's own command into a scratch folder."""
    scratch = tmp_path_factory.mktemp("a11y-book")
    out = scratch / "site"
    build = subprocess.run(["make", "--no-print-directory", "book", f"BOOK_OUT={out}",
                            f"BOOK_DOCTREES={scratch / 'doctrees'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, \
        f"make book failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}"
    return out


@pytest.fixture(scope="module")
def book_server(book, chromium, tmp_path_factory):
    srv = H.StaticSiteServer(book, tmp_path_factory.mktemp("a11y-book-server"))
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


# the page as a reader meets it: loaded, maths typeset (MathJax changes what is laid out)
TYPESET_JS = """async () => {
    if (document.readyState !== 'complete')
        await new Promise(r => addEventListener('load', r, {once: true}));
    const mj = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (mj) await mj;
}"""
DRAWN_JS = "() => [...document.querySelectorAll('.js-plotly-plot')].every(gd => gd._fullLayout)"
# the theme makes each of these focusable once it scrolls (pydata-sphinx-theme, on load and
# 300 ms after the page's content last changed): the check waits for it to have done so
THEME_SCROLLABLE = ("pre, .nboutput > .output_area, .cell_output > .output, "
                    ".jp-RenderedHTMLCommon, .pst-scrollable-table-container")
SETTLED_JS = """sel => [...document.querySelectorAll(sel)].every(e =>
    !(e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight) || e.tabIndex === 0)"""


def test_every_book_page_passes_axe(book, book_server, reader, record_property):
    page = reader.page
    pages = sorted(p.relative_to(book).as_posix() for p in book.rglob("*.html"))
    assert len(pages) >= 40, pages
    started = time.perf_counter()
    counts, failing = {}, []
    for rel in pages:
        page.goto(f"{book_server.base}/{rel}")
        page.evaluate(TYPESET_JS)
        page.wait_for_function(DRAWN_JS, timeout=60_000)
        try:
            page.wait_for_function(SETTLED_JS, arg=THEME_SCROLLABLE, timeout=5_000)
        except Exception:  # noqa: BLE001 - not settled: axe says which region, if any
            pass
        found = axe.run_axe(page)
        counts[rel] = axe.counts(found)
        if found:
            failing.append(f"{rel}:\n{axe.report(found)}")
    took = time.perf_counter() - started
    print(f"\naxe {axe.AXE_VERSION} on {len(pages)} book pages in {took:.0f} s:")
    for rel, c in counts.items():
        print(f"  {sum(c.values()):3d}  {rel}" + (f"  {c}" if c else ""))
    save("book.json", {"axe": axe.AXE_VERSION, "pages": counts})
    total = sum(sum(c.values()) for c in counts.values())
    record_property("checked", f"axe {axe.AXE_VERSION}: {len(pages)} book pages, "
                               f"{total} violations")
    assert not failing, f"{len(failing)} of {len(pages)} pages break WCAG 2.1 AA rules:\n" + \
        "\n".join(failing[:10])


# --- JupyterLab ------------------------------------------------------------------------------

def explorer_cell(nb: dict, variable: str) -> int:
    """Index among the code cells of the one that ends with ``<variable>.show()``."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    shows = re.compile(rf"^{re.escape(variable)}\.show\(\)\s*$", re.M)
    (index,) = [i for i, c in enumerate(code) if shows.search("".join(c["source"]))]
    return index


# every slider handle of the explorer has its name (figure_widget.js gives it in the page)
LABELLED_JS = """root => { const hs = [...root.querySelectorAll('.noUi-handle[role=slider]')];
    return hs.length > 0 && hs.every(h => h.getAttribute('aria-labelledby')); }"""


def run_explorer_notebook(page, server, path: str, variable: str, panel_cls, *,
                          kernel_ms: int = 120_000, run_ms: int = 240_000):
    """Open ``path``, Run All, and wait until its explorer has drawn its figure and shows
    every control, named; returns the explorer's output area (a locator)."""
    n_code = H.open_notebook(page, server, path, timeout_ms=kernel_ms)
    H.run_all_cells(page, n_code, timeout_ms=run_ms)
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    nb = server.notebook(path) if hasattr(server, "notebook") else \
        server.api("GET", f"/api/contents/{path}?content=1")["content"]
    cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
    # a figure is drawn once its output is on screen: scroll past each output, as a reader
    # would, then wait until every figure has drawn
    for i in range(cells.count()):
        if cells.nth(i).locator(".jp-OutputArea-output").count():
            cells.nth(i).scroll_into_view_if_needed()
    H.wait_figures_rendered(page, page.locator(H.ACTIVE), 1)
    root = cells.nth(explorer_cell(nb, variable)).locator(".jp-OutputArea")
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    missing = H.check_controls(root, panel_cls)
    assert not missing, f"controls not rendered: {missing}"
    page.wait_for_function(LABELLED_JS, arg=root.element_handle(), timeout=30_000)
    return root


# what has keyboard focus, as a reader's assistive technology names it (roles and names as
# the page sets them: a control's name is its label's text)
FOCUSED_JS = """() => {
    const a = document.activeElement;
    if (!a || !a.closest('.companion-panel')) return null;
    const byId = id => (document.getElementById(id) || {}).textContent || '';
    const label = a.id && document.querySelector(`label[for="${a.id}"]`);
    const name = a.getAttribute('aria-label') ||
        (a.getAttribute('aria-labelledby') || '').split(/\\s+/).map(byId).join(' ') ||
        (label ? label.textContent : '') || a.textContent;
    const role = a.getAttribute('role') || {SELECT: 'combobox', TEXTAREA: 'textbox',
        BUTTON: 'button', SUMMARY: 'summary', A: 'link'}[a.tagName] || a.tagName.toLowerCase();
    return `${role}: ${name.replace(/\\s+/g, ' ').trim()}`; }"""


def tab_through(page, root, limit: int = 60) -> list[str]:
    """Focus the explorer's first control, then press Tab until focus leaves the explorer;
    returns what had focus, in order."""
    root.locator(".companion-control-0").locator(
        "select, textarea, .noUi-handle").first.focus()
    seen = [page.evaluate(FOCUSED_JS)]
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED_JS)
        if now is None:
            break
        seen.append(now)
    return seen


def figure_title(root) -> str:
    """The drawn figure's title as text (plotly's title markup removed)."""
    return root.locator(".js-plotly-plot").first.evaluate("""gd => {
        const t = gd.layout.title, raw = typeof t === 'string' ? t : (t && t.text) || '';
        const d = document.createElement('template');
        d.innerHTML = raw.replace(/<br\\s*\\/?>/gi, ' ');
        return d.content.textContent.replace(/\\s+/g, ' ').trim(); }""")


def role_of(control) -> str:
    """The ARIA role of a control's widget: a dropdown, a text box, else a slider."""
    return {"choice": "combobox", "text": "textbox"}.get(control.kind, "slider")


def check_explorer_names(page, root, panel_cls) -> list[str]:
    """Every control named by its label, the reset button and the figure named, and Tab
    reaching each of them; returns the focus order."""
    for c in panel_cls.controls:
        assert root.get_by_role(role_of(c), name=c.label, exact=True).count() == 1, \
            f"no {role_of(c)} named {c.label!r}"
    reset = root.get_by_role("button", name="chapter's setting", exact=True)
    assert reset.count() == 1, "the reset button has no name 'chapter's setting'"
    title = figure_title(root)
    assert title, "the figure has no title to be named by"
    figure = root.get_by_role("figure", name=title, exact=True)
    assert figure.count() == 1, f"no figure named {title!r}"
    order = tab_through(page, root)
    wanted = ([f"{role_of(c)}: {c.label}" for c in panel_cls.controls]
              + ["button: chapter's setting", "region: readout", f"figure: {title}"])
    missing = [w for w in wanted if w not in order]
    assert not missing, f"Tab does not reach {missing}; it went: {order}"
    return order


@pytest.mark.parametrize("spec", NOTEBOOKS, ids=lambda s: s[0])
def test_lab_outputs_pass_axe(spec, lab, browsing, record_property):
    from companion import widgets

    name, path, variable, panel = spec
    page = browsing.page
    panel_cls = getattr(widgets, panel)
    try:
        root = run_explorer_notebook(page, lab, path, variable, panel_cls)
        outputs = axe.run_axe(page, include=OUTPUTS)
        whole = axe.run_axe(page)
        order = check_explorer_names(page, root, panel_cls)
        summary = {"axe": axe.AXE_VERSION, "outputs": axe.counts(outputs),
                   "whole_page": axe.counts(whole), "whole_page_targets": targets(whole),
                   "tab_order": order}
        save(f"lab_{name}.json", summary)
        print(f"\nJupyterLab, {path} after Run All (axe {axe.AXE_VERSION}): outputs "
              f"{summary['outputs']}; whole page (JupyterLab's shell) {summary['whole_page']}")
        record_property("checked", f"{name}: outputs {sum(summary['outputs'].values())} "
                                   f"violations; whole page {summary['whole_page']}")
        assert not outputs, "the notebook's outputs break WCAG 2.1 AA rules:\n" + \
            axe.report(outputs)
        browsing.assert_offline()
    finally:
        lab.shutdown_notebook(path)


# the panel's state, computed in the kernel that shows it: its parameters, and the readout
# and traces of compute() for them (floats rounded as every shown figure's)
KERNEL_VIEW = """
def __a11y_view(p):
    import json
    from companion import display
    v = p.compute(**p.params)
    return json.dumps({"params": p.params,
                       "text": p.readout_html(v) if hasattr(p, "readout_html") else v.text,
                       "traces": [display.round_floats(t if isinstance(t, dict)
                                                       else t.to_plotly_json())
                                  for t in v.traces]}, default=str)
"""


def kernel_view(probe, variable: str) -> dict:
    return probe.evaluate(KERNEL_VIEW, f"__a11y_view({variable})")


def expected_from(view: dict) -> dict:
    return H.expected_state(types.SimpleNamespace(text=view["text"], traces=view["traces"]))


def test_keyboard_moves_an_explorer_in_lab(lab, browsing, record_property):
    """Tab onto the first slider's handle, ArrowRight: the kernel's panel moves one stop, and
    the page shows the figure and readout that the kernel computes there."""
    from companion import widgets
    from kernel_probe import KernelProbe, kernel_id_for

    name, path, variable, panel = NOTEBOOKS[0]
    page = browsing.page
    panel_cls = getattr(widgets, panel)
    try:
        root = run_explorer_notebook(page, lab, path, variable, panel_cls)
        probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, path))
        try:
            before = kernel_view(probe, variable)
            index, control = next((i, c) for i, c in enumerate(panel_cls.controls)
                                  if c.kind in ("int", "float"))
            handle = root.locator(f".companion-control-{index} .noUi-handle")
            if index:   # Tab from the control before it, as a reader goes
                root.locator(f".companion-control-{index - 1}").locator(
                    "select, textarea, .noUi-handle").first.focus()
                page.keyboard.press("Tab")
            else:
                handle.focus()
            assert handle.evaluate("h => h === document.activeElement"), \
                f"Tab did not land on the {control.label!r} slider: {page.evaluate(FOCUSED_JS)}"
            assert page.evaluate(FOCUSED_JS) == f"slider: {control.label}"
            old = before["params"][control.name]
            new = control.step_from(old, +1)
            page.keyboard.press("ArrowRight")

            def moved():
                return kernel_view(probe, variable)["params"][control.name] == new
            H.wait_until(moved, f"the kernel's {control.name} to become {new}", timeout_s=60)
            after = kernel_view(probe, variable)
            want = expected_from(after)
            assert want != expected_from(before), f"{control.name} {old} -> {new} changes nothing"
            H.wait_for_state(page, root, want, what=f"ArrowRight: {control.name} {old} -> {new}")
            shown = root.locator(f".companion-control-{index} .widget-readout").inner_text()
            assert handle.get_attribute("aria-valuetext") == shown.strip()
        finally:
            probe.close()
        panel_root = root.locator(".companion-panel")
        tree = explorer_tree(page, panel_root)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        out = ARTIFACTS / "lab_explorer_tree.txt"
        out.write_text(f"# {panel} in JupyterLab ({path}), after ArrowRight on "
                       f"{control.label!r}: {old} -> {new}\n"
                       "# Chromium's accessibility tree of the explorer (CDP "
                       "Accessibility.getFullAXTree; ignored and generic nodes left out; a "
                       "slider's valuetext read from its aria-valuetext)\n\n"
                       + tree + "\n\n# Playwright's ARIA snapshot of the same element\n\n"
                       + panel_root.aria_snapshot() + "\n")
        assert f'slider "{control.label}"' in tree, tree[:2000]
        record_property("checked", f"keyboard: {control.name} {old} -> {new}, page == kernel; "
                                   f"tree in {out.relative_to(ROOT)}")
        browsing.assert_offline()
    finally:
        lab.shutdown_notebook(path)


AX_PROPERTIES = ("focusable", "expanded", "disabled", "checked", "selected", "editable",
                 "multiline", "valuemin", "valuemax")
# aria-valuetext of each slider handle under the root, by the handle's name: Chromium's
# getFullAXTree reports "valuetext" empty even where the attribute is set (a static
# role="slider" with aria-valuetext too), so the transcript takes it from the element
VALUETEXT_JS = """root => Object.fromEntries([...root.querySelectorAll('[role=slider]')].map(h => [
    (h.getAttribute('aria-labelledby') || '').split(/\\s+/)
        .map(id => (document.getElementById(id) || {}).textContent || '').join(' ').trim(),
    h.getAttribute('aria-valuetext')]))"""


def explorer_tree(page, root) -> str:
    """The accessibility tree under ``root`` as Chromium computes it, as indented text: role,
    "name", value and the properties that matter to a screen reader; a text node only where
    its words are not its parent's name already."""
    valuetext = root.evaluate(VALUETEXT_JS)
    cdp = page.context.new_cdp_session(page)
    try:
        root.evaluate("e => e.setAttribute('data-a11y-root', '')")
        doc = cdp.send("DOM.getDocument", {"depth": 0})
        node = cdp.send("DOM.querySelector", {"nodeId": doc["root"]["nodeId"],
                                              "selector": "[data-a11y-root]"})
        backend = cdp.send("DOM.describeNode", {"nodeId": node["nodeId"]})["node"]["backendNodeId"]
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        root.evaluate("e => e.removeAttribute('data-a11y-root')")
        cdp.detach()
    by_id = {n["nodeId"]: n for n in nodes}
    start = next(n for n in nodes if n.get("backendDOMNodeId") == backend)
    lines: list[str] = []

    def value(n, key):
        v = n.get(key)
        return v.get("value") if isinstance(v, dict) else None

    def walk(n, depth, parent_name):
        role = value(n, "role")
        name = " ".join((value(n, "name") or "").split())
        if role == "InlineTextBox":
            return
        if role == "StaticText":
            if name and name != parent_name:
                lines.append("  " * depth + f"text {json.dumps(name, ensure_ascii=False)}")
            return
        shown = not n.get("ignored") and role not in ("generic", "none", None)
        if shown:
            parts = [role] + ([json.dumps(name, ensure_ascii=False)] if name else [])
            if value(n, "value") not in (None, ""):
                parts.append(f"value={value(n, 'value')}")
            if role == "slider" and valuetext.get(name):
                parts.append(f"valuetext={json.dumps(valuetext[name], ensure_ascii=False)}")
            for p in n.get("properties", []):
                if p["name"] in AX_PROPERTIES and p["value"].get("value") not in (None, False, ""):
                    parts.append(f"{p['name']}={p['value'].get('value')}")
            lines.append("  " * depth + " ".join(str(x) for x in parts))
        for child in n.get("childIds", []):
            if child in by_id:
                walk(by_id[child], depth + 1 if shown else depth,
                     name if shown else parent_name)

    walk(start, 0, None)
    return "\n".join(lines)


# --- the lite site ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lite(chromium, tmp_path_factory):
    """The lite site built with the project's own command (as test_lite_site.py builds it)
    and served on 127.0.0.1."""
    from test_lite_site import UNREACHABLE

    cached = list((ROOT / ".state" / "lite" / "cache").glob("pyodide-*.tgz"))
    if shutil.which("npm") is None and not cached:
        H.unavailable("the lite site cannot be built here: npm is missing and no Pyodide "
                      "tarball is cached in .state/lite/cache")
    scratch = tmp_path_factory.mktemp("a11y-lite")
    build = subprocess.run(["make", "--no-print-directory", "lite",
                            f"LITE_OUT={scratch / 'site'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if build.returncode != 0:
        said = build.stdout[-3000:] + build.stderr[-4000:]
        unreachable = UNREACHABLE.search(said)
        if unreachable:
            H.unavailable(f"the lite site cannot be built here ({unreachable.group(0)})")
        raise AssertionError(f"make lite failed:\n{said}")
    srv = H.LiteSite(scratch / "site", tmp_path_factory.mktemp("a11y-lite-server"))
    srv.start(timeout_s=60)
    try:
        yield srv
    finally:
        leftovers = srv.stop()
        assert not leftovers, f"processes left behind by http.server: {leftovers}"


def test_lite_outputs_pass_axe(lite, reader, record_property):
    from companion import widgets
    from test_lite_site import KERNEL_START_MS, RUN_ALL_MS

    name, path, variable, panel = NOTEBOOKS[0]
    page = reader.page
    panel_cls = getattr(widgets, panel)
    root = run_explorer_notebook(page, lite, path, variable, panel_cls,
                                 kernel_ms=KERNEL_START_MS, run_ms=RUN_ALL_MS)
    outputs = axe.run_axe(page, include=OUTPUTS)
    whole = axe.run_axe(page)
    check_explorer_names(page, root, panel_cls)
    summary = {"axe": axe.AXE_VERSION, "outputs": axe.counts(outputs),
               "whole_page": axe.counts(whole), "whole_page_targets": targets(whole)}
    save(f"lite_{name}.json", summary)
    print(f"\nlite site, {path} after Run All (axe {axe.AXE_VERSION}): outputs "
          f"{summary['outputs']}; whole page (JupyterLab's shell) {summary['whole_page']}")
    record_property("checked", f"lite {name}: outputs {sum(summary['outputs'].values())} "
                               f"violations; whole page {summary['whole_page']}")
    assert not outputs, "the notebook's outputs break WCAG 2.1 AA rules:\n" + \
        axe.report(outputs)
