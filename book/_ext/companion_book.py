"""Sphinx extension of the companion's book: plotly figures from stored JSON, offline assets.

- Figures: the notebooks store plotly figures as ``application/vnd.plotly.v1+json`` only
  (JupyterLab renders them with the extension inside the plotly wheel). MyST-NB has no renderer
  for that mimetype, so ``PlotlyMimeRenderer`` (a MyST-NB mime-render plugin, registered under
  the ``myst_nb.mime_renderers`` entry point in pyproject.toml) turns each one into plotly's own
  HTML export (``plotly.io.to_html`` without plotly.js). A static explorer is such a figure too:
  its slider steps and readout are part of the figure JSON (``companion.explorers.static``), so
  plotly.js moves it without a kernel.
- Offline: plotly.min.js (from the installed plotly package) and a MathJax 3 subset (from the
  sphinx-mathjax-offline package) are copied into ``_static``; no page loads anything from
  another host.
- Open live: each page of a notebook gets a link to the same notebook in the lite site
  (``make lite``), relative, so that it works wherever build/book and build/lite are served
  side by side (the front page links to the lite site's own front door, START_HERE).
- Exercises: their unanswered cells are stored as not run (tools/execute_notebooks.py), so a
  page shows the question and empty answer cells. The notebooks' links to the exercises
  *folder* (which JupyterLab opens as a file browser) point at the book's list of exercises
  instead.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import importlib
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.fileutil import copy_asset_file

PLOTLY_MIME = "application/vnd.plotly.v1+json"
EXPLORER_META = "companion_explorer"   # companion.explorers.static.META_KEY
PLOTLY_JS = "plotly/plotly.min.js"
MATHJAX_ENTRY = "mathjax/tex-chtml.js"
# what tex-chtml.js loads itself, and lazily (fonts, TeX extensions such as boldsymbol, the
# menu); the speech engine (sre, 3.9 MB) is left out: nothing enables it
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml", "input/tex", "ui", "a11y")
# the lite site beside the book (build/lite next to build/book), and how it opens a notebook
LITE_SITE = "lite"
LITE_NOTEBOOK = "lab/index.html?path={path}"
LIVE_SOURCES = ("notebooks/", "exercises/")   # tools/lite_build.py's CONTENT_DIRS
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True,
                 "modeBarButtonsToRemove": ["sendDataToCloud"]}


class PlotlyMimeRenderer:
    """MyST-NB mime-render plugin: a stored plotly figure -> plotly's HTML export."""

    mime_priority_overrides = [("html", PLOTLY_MIME, 5)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if inline or data.mime_type != PLOTLY_MIME:
            return None
        import plotly.io as pio

        # a stable id per output (no uuid): rebuilding the book gives the same pages
        key = f"{renderer.source}:{data.cell_index}:{data.output_index}"
        div_id = "plotly-" + hashlib.sha1(key.encode()).hexdigest()[:12]
        html = pio.to_html(data.content, include_plotlyjs=False, full_html=False,
                           div_id=div_id, config=PLOTLY_CONFIG, validate=False)
        # the figure is named by its title; its text alternative and numbers follow it (the
        # notes output after a static figure, the readout above an explorer's figure)
        title = _plain_title((data.content.get("layout") or {}).get("title"))
        html = (f'<div role="figure" aria-label="{html_lib.escape(title or "figure")}">'
                f"{html}</div>")
        explorer = ((data.content.get("layout") or {}).get("meta") or {}).get(EXPLORER_META)
        if explorer:
            html = explorer_html(explorer, data.content["layout"], div_id, html)
        return [nodes.raw(text=html, format="html", classes=["output", "text_html"])]


def _plain_title(title) -> str:
    if isinstance(title, dict):
        title = title.get("text", "")
    text = re.sub(r"<br\s*/?>", " ", str(title or ""), flags=re.I)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", text))).strip()


def explorer_html(explorer: dict, layout: dict, div_id: str, figure_html: str) -> str:
    """A static explorer as the live one is laid out: its controls and readout above the
    figure. The main control is a native range input (keyboard and screen reader) bound to the
    plotly slider on top of the figure, which it mirrors; the others are shown, disabled, at
    their values; companion_explorer.js applies a step and swaps the readout as either moves,
    and announces the new value and readout."""
    esc = html_lib.escape
    slider = layout["sliders"][0]
    active = slider["active"]
    labels = [step["label"] for step in slider["steps"]]
    fixed = "".join(
        f'<div class="companion-explorer-fixed"><label>{esc(c["label"])} '
        f'<input type="text" value="{esc(c["value"])}" disabled title="{esc(explorer["hint"])}" '
        f'style="width: {len(c["value"]) + 2}ch">'
        f'</label> <span class="companion-explorer-hint">{esc(explorer["hint"])}</span></div>'
        for c in explorer["others"])
    return (f'<div class="companion-explorer" data-figure="{div_id}">'
            f'<div class="companion-explorer-top"><div class="companion-explorer-controls">'
            f'<div class="companion-explorer-main"><label>{esc(explorer["control"])} '
            f'<input type="range" class="companion-explorer-range" min="0" '
            f'max="{len(labels) - 1}" step="1" value="{active}" '
            f'aria-valuetext="{esc(labels[active])}"></label> '
            f'<span class="companion-explorer-value" aria-hidden="true">'
            f'{esc(labels[active])}</span>'
            f'<div class="companion-explorer-announce companion-sr-only" aria-live="polite">'
            f'</div></div>{fixed}</div>'
            f'<div class="companion-explorer-readout" tabindex="0" role="region" '
            f'aria-label="readout">{explorer["readouts"][active]}</div>'
            f'</div>{figure_html}</div>')


class ExercisesFolderLinks(SphinxPostTransform):
    """A link to the ``exercises/`` folder -> the exercises list of the book's front page
    (before MyST's resolver, priority 9, would report it missing)."""

    default_priority = 8
    formats = ("html",)

    def run(self, **kwargs):
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or \
                    node.get("reftarget", "").rstrip("/").rsplit("/", 1)[-1] != "exercises":
                continue
            uri = self.app.builder.get_relative_uri(self.env.docname, self.config.root_doc)
            link = nodes.reference("", "", refuri=f"{uri}#exercises", internal=True)
            link += node.children
            node.replace_self(link)


def live_url(docname: str, source_suffix: str, root_doc: str = "index") -> str | None:
    """The relative URL of ``docname``'s notebook in the lite site (the site's front door for
    the book's front page); None for a page the lite site does not have."""
    up = "../" * (docname.count("/") + 1)           # from the page's folder to build/
    if docname == root_doc:
        return f"{up}{LITE_SITE}/index.html"
    if not docname.startswith(LIVE_SOURCES) or source_suffix != ".ipynb":
        return None
    return f"{up}{LITE_SITE}/" + LITE_NOTEBOOK.format(path=f"{docname}.ipynb")


def add_live_link(app, doctree, docname):
    """An "open live" link under the page's title (HTML only)."""
    if app.builder.format != "html":
        return
    root_doc = app.config.root_doc
    url = live_url(docname, Path(app.env.doc2path(docname)).suffix, root_doc)
    sections = list(doctree.findall(nodes.section))
    if url is None or not sections:
        return
    what = "the companion" if docname == root_doc else "this notebook"
    link = nodes.raw(text=(
        f'<p class="companion-open-live"><a class="reference external" href="{url}">'
        f"Open live</a>: run {what} in your browser (the lite site, served beside this book)"
        f"</p>"), format="html")
    title = sections[0].next_node(nodes.title)
    sections[0].insert(sections[0].index(title) + 1 if title is not None else 0, link)


# a depth section: its heading cell ends with this comment (and carries JupyterLab's
# ``jp-MarkdownHeadingCollapsed``, so Lab and the lite site open it folded under its heading)
FOLD_MARK = re.compile(r"<!--\s*fold(?::\s*(.*?))?\s*-->", re.S)


def fold_depth_sections(app, doctree, docname):
    """Everything of a depth section after its heading cell's marker goes into a closed
    ``<details>``, as JupyterLab folds the cells under a collapsed heading (HTML only)."""
    if app.builder.format != "html":
        return
    for raw in list(doctree.findall(nodes.raw)):
        mark = FOLD_MARK.fullmatch(raw.astext().strip())
        if mark is None:
            continue
        summary = (mark.group(1) or "").strip() or "show the detail"
        summary = html_lib.escape(summary[0].upper() + summary[1:])
        raw.replace_self(nodes.raw(
            text=f'<details class="companion-depth"><summary>{summary}</summary>',
            format="html"))
    # the closing tags, at the end of each section that opened a fold
    for section in list(doctree.findall(nodes.section)):
        opened = [c for c in section.children if isinstance(c, nodes.raw)
                  and c.astext().startswith('<details class="companion-depth">')]
        for _ in opened:
            section.append(nodes.raw(text="</details>", format="html"))


def _package_dir(module: str) -> Path:
    return Path(importlib.import_module(module).__file__).parent


def copy_assets(app, exception):
    """Copy plotly.js and the MathJax subset into the site (after a successful HTML build)."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    plotly_js = _package_dir("plotly") / "package_data" / "plotly.min.js"
    (static / PLOTLY_JS).parent.mkdir(parents=True, exist_ok=True)
    copy_asset_file(str(plotly_js), str(static / PLOTLY_JS))
    mathjax = _package_dir("sphinx-mathjax-offline") / "static" / "mathjax"
    for part in MATHJAX_PARTS:
        source, target = mathjax / part, static / "mathjax" / part
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def setup(app):
    app.add_js_file(PLOTLY_JS)
    app.add_js_file("companion_explorer.js")
    app.config.mathjax_path = MATHJAX_ENTRY
    app.add_post_transform(ExercisesFolderLinks)
    app.connect("doctree-resolved", add_live_link)
    app.connect("doctree-resolved", fold_depth_sections)
    app.connect("build-finished", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
