#!/usr/bin/env python
"""`make gallery`: every stored figure of the companion on one offline page, its PNG beside it.

For each stored notebook under notebooks/, exercises/, solutions/ and dashboards/ (the .ipynb
files as `make execute` wrote them; .ipynb_checkpoints skipped), one section with a heading,
listed in a table of contents; in it every plotly output (``application/vnd.plotly.v1+json``,
also an explorer's, whose stored output carries its static figure) twice, side by side: the PNG
stored in the same output bundle (what GitHub and print show) and the live figure, drawn by
plotly.js from the stored JSON (what JupyterLab and the book show). So the two can be compared.

Each figure has a stable anchor, ``<key>-<n>``: n counts the notebook's plotly outputs from 1,
in cell order, and key is the notebook's stem ("17_02_roofline"), or, in exercises/ and
solutions/ (which hold the same stems), the folder and the stem ("solutions-ex17_3"). A note
can cite ``build/gallery/index.html#17_02_roofline-2`` or the PNG itself,
``build/gallery/png/17_02_roofline-2.png``. plotly.js is copied from the installed plotly
package into the gallery folder: the page loads nothing from another host.

A colour-vision section comes first: every palette of ``companion.theme`` drawn as swatches for
normal vision and as protanopia, deuteranopia and tritanopia simulate it (Machado et al. 2009,
``theme.simulate_vision``), each row with its closest pair's CIEDE2000 difference against
``theme.MIN_DELTA_E`` and each swatch with its contrast on white. A switch at the top of the page
shows every figure, stored PNG and live plot alike, through the same simulation (an SVG
``feColorMatrix`` filter, which works in linear RGB as the matrices expect).

With ``--before REV`` (a git revision) each figure also shows the PNG that revision stored for the
same anchor, written to ``png/before/<anchor>.png``: a change's before and after, side by side.

With ``--surfaces`` (what ``make gallery`` runs; ``SURFACES=0`` leaves it out) the gallery also
shows every other surface a reader sees, as screenshots from headless Chromium (Debian's, as
the browser tests use; a few minutes on two cores):

- ``surfaces/lab/``: every explorer's widget panel in JupyterLab (``tests/browser/surfaces.py``
  writes one notebook with each explorer of ``companion.widgets`` at the chapter's setting;
  ``lab_harness.LabServer`` runs it), at a 1000 px and a 700 px wide notebook, with what the
  panel probe finds cut or out of line written under each;
- ``surfaces/book/``: the book (``make book`` into ``<out>/book``), each notebook page's
  explorers, figures (with the strip above them where plotly's toolbar shows) and tables.

usage: python tools/make_gallery.py [--out build/gallery] [--root .] [--before REV] [--surfaces]
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "exercises", "solutions", "dashboards")
PREFIXED = ("exercises", "solutions")   # their stems repeat: the key names the folder too
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PLOTLY_JS = "plotly.min.js"

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
nav li { margin: 0.1em 0; }
section { border-top: 1px solid #ccc; margin-top: 2em; }
figure { margin: 1.5em 0; }
figcaption { margin-bottom: 0.4em; }
figcaption a { color: #666; font-family: monospace; }
.pair { display: flex; gap: 1em; align-items: flex-start; }
.pair > div { flex: 1 1 0; min-width: 0; }
.pair img { max-width: 100%; border: 1px solid #eee; }
.label { font-size: 0.8em; color: #666; }
.missing { color: #b00; }
section, figure, h3 { scroll-margin-top: 3em; }
.vision-switch { position: sticky; top: 0; background: #fff; padding: 0.4em 0;
                 border-bottom: 1px solid #ccc; z-index: 10; }
table.cvd { border-collapse: collapse; margin: 0.5em 0 1.5em; }
table.cvd td, table.cvd th { padding: 2px 10px 2px 0; vertical-align: middle; text-align: left; }
table.cvd .fail { color: #b00; font-weight: bold; }
body.sim-protanopia figure img, body.sim-protanopia div.live { filter: url(#cvd-protanopia); }
body.sim-deuteranopia figure img, body.sim-deuteranopia div.live { filter: url(#cvd-deuteranopia); }
body.sim-tritanopia figure img, body.sim-tritanopia div.live { filter: url(#cvd-tritanopia); }
"""

# draws each live figure when it scrolls into view (117 figures at once would stall the page)
SCRIPT = """
const draw = (div) => {
  const spec = JSON.parse(document.getElementById(div.dataset.spec).textContent);
  Plotly.newPlot(div, spec.data || [], spec.layout || {}, {displaylogo: false});
};
const seen = new IntersectionObserver((entries) => {
  for (const e of entries) if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target); }
}, {rootMargin: "600px"});
document.querySelectorAll("div.live").forEach((div) => seen.observe(div));
const see = (vision) => { document.body.className = vision === "normal" ? "" : "sim-" + vision; };
document.querySelectorAll("input[name=vision]").forEach((radio) => radio.addEventListener(
  "change", () => see(radio.value)));
// index.html?vision=deuteranopia opens the page already simulated (a link, a screenshot)
const asked = new URLSearchParams(location.search).get("vision");
const radio = asked && document.querySelector(`input[name=vision][value="${asked}"]`);
if (radio) { radio.checked = true; see(asked); }
"""


def notebooks(root: Path) -> list[Path]:
    """The stored notebooks, folder by folder, sorted by path."""
    found = []
    for folder in FOLDERS:
        found += sorted(p for p in (root / folder).rglob("*.ipynb")
                        if ".ipynb_checkpoints" not in p.parts)
    return found


def notebook_key(path: Path, root: Path) -> str:
    folder = path.relative_to(root).parts[0]
    return f"{folder}-{path.stem}" if folder in PREFIXED else path.stem


def plain(text) -> str:
    """Plotly's HTML-ish title text as plain text."""
    return re.sub(r"<[^>]+>", " ", str(text or "")).strip()


def title_of(nb: dict, fallback: str) -> str:
    """The notebook's first markdown heading, else ``fallback``."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return fallback


def figures(nb: dict) -> list[dict]:
    """Every plotly output of a notebook, in cell order: its cell index, figure JSON, stored PNG
    (base64 text or None) and whether it is an explorer's output."""
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY_MIME in data:
                png = data.get("image/png")
                found.append({"cell": index, "figure": data[PLOTLY_MIME],
                              "png": "".join(png) if isinstance(png, list) else png,
                              "explorer": WIDGET_MIME in data})
    return found


def stored_at(root: Path, rev: str, path: Path) -> dict | None:
    """The notebook ``path`` as revision ``rev`` stored it (None where it did not exist)."""
    out = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{path.relative_to(root)}"],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def figure_html(anchor: str, where: str, fig: dict, png_path: str | None,
                before: tuple[str, str] | None = None) -> str:
    esc = html.escape
    title = (fig["figure"].get("layout") or {}).get("title")
    title = plain(title.get("text") if isinstance(title, dict) else title) or "(untitled)"
    kind = "explorer, its static figure" if fig["explorer"] else "figure"
    stored = (f'<img src="{esc(png_path)}" alt="{esc(title)}" loading="lazy">' if png_path else
              '<p class="missing">no PNG stored with this figure</p>')
    from plotly.utils import PlotlyJSONEncoder   # NaN -> null, as plotly writes figures

    spec = json.dumps(fig["figure"], cls=PlotlyJSONEncoder, separators=(",", ":"))
    spec = spec.replace("</", "<\\/")
    return (f'<figure id="{anchor}">\n<figcaption><b>{esc(title)}</b> ({kind}; {esc(where)}, '
            f'cell {fig["cell"]}) <a href="#{anchor}">#{anchor}</a></figcaption>\n'
            f'<div class="pair">\n'
            + (f'<div><div class="label">PNG before ({esc(before[0])}, {esc(before[1])})</div>'
               f'<img src="{esc(before[1])}" alt="before" loading="lazy"></div>\n'
               if before else "")
            + f'<div><div class="label">stored PNG'
            f'{f" ({esc(png_path)})" if png_path else ""}</div>{stored}</div>\n'
            f'<div><div class="label">live plotly.js</div>'
            f'<div class="live" data-spec="{anchor}-json"></div></div>\n</div>\n'
            f'<script type="application/json" id="{anchor}-json">{spec}</script>\n</figure>')


# --- colour vision: the theme's palettes as each vision sees them --------------------------------

SWATCH = 46          # px, one colour's square


def _theme():
    """companion.theme from this repository (the tool runs without the package installed)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from companion import theme

    return theme


def vision_filters() -> str:
    """Hidden SVG filters, one per simulated vision: Machado et al.'s matrix as an
    feColorMatrix, applied in linear RGB (SVG's default colour space for filters)."""
    theme = _theme()
    parts = []
    for vision in theme.VISIONS[1:]:
        rows = [theme.vision_matrix(vision)[i] for i in range(3)]
        values = "  ".join(" ".join(f"{x:g}" for x in row) + " 0 0" for row in rows)
        parts.append(f'<filter id="cvd-{vision}" color-interpolation-filters="linearRGB">'
                     f'<feColorMatrix type="matrix" values="{values}  0 0 0 1 0"/></filter>')
    return ('<svg width="0" height="0" style="position:absolute" aria-hidden="true">'
            + "".join(parts) + "</svg>")


def _swatches(colours: list[str], vision: str) -> str:
    """An inline SVG row of squares, each colour as ``vision`` sees it, with its hex below."""
    theme = _theme()
    cells = []
    for k, c in enumerate(colours):
        seen = theme.simulate_vision(c, vision)
        x = k * (SWATCH + 6)
        cells.append(f'<rect x="{x}" y="0" width="{SWATCH}" height="{SWATCH}" fill="{seen}" '
                     f'stroke="#999" stroke-width="0.5"><title>{c} seen as {seen}</title></rect>'
                     f'<text x="{x + SWATCH / 2}" y="{SWATCH + 12}" font-size="9" '
                     f'text-anchor="middle" fill="#222">{seen}</text>')
    width = len(colours) * (SWATCH + 6)
    return (f'<svg width="{width}" height="{SWATCH + 16}" role="img" '
            f'aria-label="{len(colours)} colours, {vision}">' + "".join(cells) + "</svg>")


def colour_vision_html() -> str:
    """The gallery's colour-vision section: each palette of the theme, its colours as each
    vision sees them, and the closest pair's CIEDE2000 difference (flagged under
    ``theme.MIN_DELTA_E``); under the normal row each colour's contrast on white."""
    theme = _theme()
    esc = html.escape
    palettes = dict(theme.PALETTES)
    palettes["FILL_ONLY (tints behind a label)"] = theme.FILL_ONLY
    palettes["SEQUENTIAL_SCALE (low to high)"] = theme.SEQUENTIAL_SCALE
    parts = ['<section id="colour-vision">\n<h2>Colour vision: the theme\'s palettes</h2>',
             f'<p>Each palette of <code>companion/theme.py</code> for normal vision and as '
             f'protanopia, deuteranopia and tritanopia simulate it (Machado, Oliveira and '
             f'Fernandes 2009, severity 1). Beside each row: the two colours that vision tells '
             f'apart least and their CIEDE2000 difference; a palette of series keeps at least '
             f'{theme.MIN_DELTA_E:g}. Under the normal row: each colour\'s contrast on white '
             f'(lines and markers need {theme.MIN_MARK_CONTRAST:g}:1, text '
             f'{theme.MIN_TEXT_CONTRAST:g}:1). The switch at the top shows every figure below '
             f'through the same simulation.</p>']
    for name, colours in palettes.items():
        colours = list(dict.fromkeys(c.lower() for c in colours))
        checked = name in theme.PALETTES
        parts.append(f'<h3 id="cvd-{esc(name.split()[0])}">{esc(name)}</h3>\n<table class="cvd">')
        for vision in theme.VISIONS:
            d, a, b = theme.closest_pair(colours, vision)
            flag = ' class="fail"' if checked and d < theme.MIN_DELTA_E else ""
            note = (f'<span{flag}>min &Delta;E<sub>00</sub> = {d:.1f}</span> '
                    f'({theme.simulate_vision(a, vision)} vs {theme.simulate_vision(b, vision)})'
                    if b else "")
            parts.append(f'<tr><th>{vision}</th><td>{_swatches(colours, vision)}</td>'
                         f'<td>{note}</td></tr>')
        ratios = " ".join(f"{theme.contrast_ratio(c):.1f}" for c in colours)
        parts.append(f'<tr><th></th><td class="label">contrast on white: {ratios}</td>'
                     f'<td></td></tr></table>')
    parts.append("</section>")
    return "\n".join(parts)


def vision_switch_html() -> str:
    theme = _theme()
    radios = " ".join(f'<label><input type="radio" name="vision" value="{v}"'
                      f'{" checked" if v == "normal" else ""}> {v}</label>'
                      for v in theme.VISIONS)
    return f'<div class="vision-switch">Show every figure as seen with: {radios}</div>'


def build(root: Path, out: Path, before: str | None = None, extra: str = "") -> int:
    """Write ``out``/index.html, ``out``/png/*.png and ``out``/plotly.min.js; return the
    number of figures. ``extra``: HTML sections appended after the figures' (the surfaces)."""
    import plotly

    (out / "png").mkdir(parents=True, exist_ok=True)
    (out / "png" / "before").mkdir(exist_ok=True)
    for stale in [*(out / "png").glob("*.png"), *(out / "png" / "before").glob("*.png")]:
        stale.unlink()   # only what an earlier gallery wrote
    shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                    out / PLOTLY_JS)
    toc, sections, total = [], [], 0
    for path in notebooks(root):
        nb = json.loads(path.read_text(encoding="utf-8"))
        found = figures(nb)
        if not found:
            continue
        key = notebook_key(path, root)
        where = str(path.relative_to(root))
        title = title_of(nb, path.stem)
        toc.append(f'<li><a href="#{key}">{html.escape(where)}</a>: {html.escape(title)} '
                   f'({len(found)})</li>')
        parts = [f'<section id="{key}">\n<h2>{html.escape(where)}: {html.escape(title)}</h2>']
        old = figures(stored_at(root, before, path) or {}) if before else []
        for n, fig in enumerate(found, start=1):
            anchor = f"{key}-{n}"
            png_path = None
            if fig["png"]:
                png_path = f"png/{anchor}.png"
                (out / png_path).write_bytes(base64.b64decode(fig["png"]))
            was = None
            if n <= len(old) and old[n - 1]["png"]:
                was = (before, f"png/before/{anchor}.png")
                (out / was[1]).write_bytes(base64.b64decode(old[n - 1]["png"]))
            parts.append(figure_html(anchor, where, fig, png_path, was))
        sections.append("\n".join(parts) + "\n</section>")
        total += len(found)
    page = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<title>Figure gallery ({total} figures)</title>\n<style>{STYLE}</style>\n'
            f'<script src="{PLOTLY_JS}"></script>\n</head>\n<body>\n' + vision_filters()
            + vision_switch_html() + '\n'
            f'<h1>Every stored figure: the PNG and the live plotly figure</h1>\n'
            f'<p>{total} figures from {len(sections)} notebooks. Left: the PNG stored beside the '
            f'figure (GitHub, print). Right: plotly.js drawing the stored JSON (JupyterLab, the '
            f'book).</p>\n<nav><ul>\n'
            '<li><a href="#colour-vision">Colour vision: the theme\'s palettes</a></li>\n'
            + "\n".join(toc)
            + ('\n<li><a href="#surfaces-lab">Explorer panels in JupyterLab</a></li>'
               '\n<li><a href="#surfaces-book">The book\'s pages</a></li>' if extra else "")
            + '\n</ul></nav>\n' + colour_vision_html() + "\n"
            + "\n".join(sections) + extra + f'\n<script>{SCRIPT}</script>\n</body>\n</html>\n')
    (out / "index.html").write_text(page, encoding="utf-8")
    return total


# --- surfaces: the explorer panels in JupyterLab and the book's pages, as screenshots ----------

LAB_WIDTHS = (1000, 700)     # the notebook's width in px (sidebars closed)
BOOK_WIDTH = 1400            # the book's window (its content column is then 784 px)


def _browser_tools(root: Path):
    """lab_harness and surfaces (tests/browser/) imported from ``root``."""
    sys.path.insert(0, str(root / "tests" / "browser"))
    import lab_harness
    import surfaces

    return lab_harness, surfaces


def lab_surfaces(root: Path, out: Path, browser, state: Path) -> list[dict]:
    """Screenshot every explorer panel in JupyterLab at each of LAB_WIDTHS; returns one entry
    per shot: its anchor, path (relative to ``out``), panel, width and the probe's findings."""
    H, S = _browser_tools(root)
    (out / "surfaces" / "lab").mkdir(parents=True, exist_ok=True)
    names = S.panel_classes()
    notebook = S.write_panels_notebook("gallery_panels", names)
    lab = H.LabServer(state / "lab")
    lab.start()
    shots = []
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(120_000)
        n = H.open_notebook(page, lab, notebook)
        H.run_all_cells(page, n, timeout_ms=600_000)
        for width in LAB_WIDTHS:
            S.narrow_notebook(page, width, height=2400)
            page.wait_for_timeout(1000)
            roots = page.locator(f"{H.ACTIVE} .companion-panel")
            for i, name in enumerate(names):
                panel = roots.nth(i)
                panel.scroll_into_view_if_needed()
                problems = S.panel_problems(panel.evaluate(S.PANEL_PROBE_JS))
                rel = f"surfaces/lab/{name}-{width}px.png"
                panel.screenshot(path=str(out / rel))
                shots.append({"anchor": f"lab-{name}-{width}", "png": rel, "panel": name,
                              "width": width, "problems": problems})
        context.close()
    finally:
        lab.stop()
        (root / notebook).unlink(missing_ok=True)
    return shots


# the book page's surfaces, in page order: explorers, figures outside one, tables
BOOK_SURFACES_JS = """() => {
    const out = [];
    const seen = new Set();
    for (const el of document.querySelectorAll(
            '.companion-explorer, .cell_output .js-plotly-plot, .cell_output table')) {
        if (el.closest('.companion-explorer') && !el.classList.contains('companion-explorer'))
            continue;
        if (el.parentElement.closest('table')) continue;
        if (!el.offsetParent) continue;       // in a fold a reader has not opened
        out.push(el.classList.contains('companion-explorer') ? 'explorer'
                 : el.tagName === 'TABLE' ? 'table' : 'figure');
        el.setAttribute('data-gallery-shot', String(out.length - 1));
    }
    return out;
}"""


def book_surfaces(root: Path, out: Path, browser, state: Path) -> list[dict]:
    """Build the book into ``out``/book and screenshot each notebook page's explorers,
    figures and tables; returns one entry per shot (anchor, path, page, kind)."""
    H, _ = _browser_tools(root)
    site = out / "book"
    built = subprocess.run(["make", "--no-print-directory", "book", f"BOOK_OUT={site}",
                            f"BOOK_DOCTREES={state / 'book-doctrees'}"], cwd=root,
                           capture_output=True, text=True)
    if built.returncode != 0:
        print(f"gallery: make book failed, no book screenshots:\n{built.stderr[-2000:]}",
              file=sys.stderr)
        return []
    (out / "surfaces" / "book").mkdir(parents=True, exist_ok=True)
    server = H.StaticSiteServer(site, state / "book-server")
    (state / "book-server").mkdir(parents=True, exist_ok=True)
    server.start(timeout_s=60)
    shots = []
    try:
        context = browser.new_context(viewport={"width": BOOK_WIDTH, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(60_000)
        for html_page in sorted((site / "notebooks").rglob("*.html")):
            doc = html_page.relative_to(site).with_suffix("").as_posix()
            key = html_page.stem
            page.goto(f"{server.base}/{doc}.html")
            page.wait_for_load_state("networkidle")
            page.mouse.move(1, 1)
            # open the ledger listings folded under their summary line
            page.evaluate("() => document.querySelectorAll('details.companion-ledger')"
                          ".forEach(d => d.open = true)")
            kinds = page.evaluate(BOOK_SURFACES_JS)
            for i, kind in enumerate(kinds):
                el = page.locator(f'[data-gallery-shot="{i}"]')
                el.scroll_into_view_if_needed()
                if kind != "table":
                    el.locator(".main-svg").first.wait_for(timeout=60_000)
                box = el.bounding_box()
                if not box or not box["width"] or not box["height"]:
                    continue
                rel = f"surfaces/book/{key}-{i + 1}-{kind}.png"
                # 30 px above: the strip where plotly's toolbar shows on hover
                top = 30 if kind != "table" else 4
                page.screenshot(path=str(out / rel), full_page=True, clip={
                    "x": max(0, box["x"] - 4), "y": max(0, box["y"] + page.evaluate(
                        "() => window.scrollY") - top),
                    "width": box["width"] + 8, "height": min(box["height"] + top + 4, 6000)})
                shots.append({"anchor": f"book-{key}-{i + 1}", "png": rel, "page": doc,
                              "kind": kind})
        context.close()
    finally:
        server.stop()
    return shots


def surfaces(root: Path, out: Path) -> tuple[list[dict], list[dict]]:
    """The Lab panels' and the book's screenshots (headless Chromium via Playwright)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    H, _ = _browser_tools(root)
    chromium = H.find_chromium()
    if chromium is None:
        raise SystemExit("gallery --surfaces: no Chromium (apt-get install -y chromium, or set "
                         "CHROMIUM_PATH)")
    for stale in (out / "surfaces").rglob("*.png") if (out / "surfaces").exists() else ():
        stale.unlink()
    with tempfile.TemporaryDirectory(prefix="gallery-") as tmp, sync_playwright() as p:
        browser = H.launch_browser(p, chromium)
        try:
            lab = lab_surfaces(root, out, browser, Path(tmp))
            book = book_surfaces(root, out, browser, Path(tmp))
        finally:
            browser.close()
    return lab, book


def surfaces_html(lab: list[dict], book: list[dict]) -> str:
    """The gallery's second part: the Lab panels (with the probe's findings), the book."""
    esc = html.escape
    parts = ['<section id="surfaces-lab">\n<h2>Explorer panels in JupyterLab</h2>\n'
             f'<p>{len(lab)} screenshots: every explorer at the chapter\'s setting, the notebook '
             f'{" and ".join(f"{w} px" for w in LAB_WIDTHS)} wide. Under each, what the panel '
             f'probe (tests/browser/surfaces.py) finds cut or out of line.</p>']
    for s in lab:
        found = ("<br>".join(esc(p) for p in s["problems"]) if s["problems"] else "clean")
        parts.append(f'<figure id="{s["anchor"]}"><figcaption><b>{esc(s["panel"])}</b>, '
                     f'{s["width"]} px <a href="#{s["anchor"]}">#{s["anchor"]}</a></figcaption>'
                     f'<img src="{esc(s["png"])}" loading="lazy" alt="{esc(s["panel"])}">'
                     f'<div class="label{" missing" if s["problems"] else ""}">{found}</div>'
                     f'</figure>')
    parts.append("</section>")
    parts.append('<section id="surfaces-book">\n<h2>The book\'s pages</h2>\n'
                 f'<p>{len(book)} screenshots: each notebook page\'s explorers, figures (with '
                 f'the strip above, where plotly\'s toolbar shows) and tables, at a '
                 f'{BOOK_WIDTH} px window; the pages are in book/ beside this file.</p>')
    for s in book:
        parts.append(f'<figure id="{s["anchor"]}"><figcaption><a href="book/{esc(s["page"])}'
                     f'.html">{esc(s["page"])}</a>, {s["kind"]} '
                     f'<a href="#{s["anchor"]}">#{s["anchor"]}</a></figcaption>'
                     f'<img src="{esc(s["png"])}" loading="lazy" alt="{esc(s["kind"])}">'
                     f'</figure>')
    parts.append("</section>")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "gallery")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the folder holding notebooks/, exercises/, ... (default: the repository)")
    parser.add_argument("--before", help="a git revision whose stored PNGs to show beside")
    parser.add_argument("--surfaces", action="store_true",
                        help="also screenshot every explorer panel in JupyterLab and the book's "
                             "pages (headless Chromium; a few minutes)")
    args = parser.parse_args(argv)
    root, out = args.root.resolve(), args.out.resolve()
    extra = ""
    if args.surfaces:
        lab, book = surfaces(root, out)
        extra = surfaces_html(lab, book)
        flagged = sum(bool(s["problems"]) for s in lab)
        print(f"gallery: {len(lab)} panel screenshots ({flagged} with findings), "
              f"{len(book)} of the book")
    total = build(root, out, args.before, extra=extra)
    print(f"gallery: {total} figures in {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
