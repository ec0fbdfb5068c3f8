"""Nothing the companion stores makes a reader's browser fetch from the internet.

Every executed notebook (notebooks/, solutions/, exercises/, dashboards/) is scanned: stored
outputs must not load scripts, styles, fonts or modules from an external URL (``<script src>``,
``<link href>``, CSS ``@import``/``url()``, ES ``import``, requirejs ``paths``, known CDN
hosts), markdown cells must not embed external images, and every plotly figure must be
stored as ``application/vnd.plotly.v1+json`` (rendered by the JupyterLab extension inside the
plotly wheel), never as the HTML renderer's output that loads plotly.js from a CDN. The Voila
template of the lecture dashboard and the companion widgets' own ES modules are scanned too.
(The browser tests check the same thing live: no request leaves 127.0.0.1.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "exercises", "dashboards")
NOTEBOOKS = sorted(p for d in FOLDERS for p in (ROOT / d).rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
# the project's own template files; plotly.min.js beside them is plotly's (a git-ignored copy,
# tools/dashboard_assets.py), the same file the kernel sends a page that lacks it, whose CDN
# names are for features the companion does not use (geo maps' topojson, MathJax: "local")
TEMPLATES = sorted(p for p in (ROOT / "dashboards").rglob("*")
                   if p.is_file() and p.suffix in (".j2", ".html", ".css", ".js", ".json")
                   and p.name != "plotly.min.js")
# the front-end modules the companion's own widgets send to the page
WIDGET_MODULES = sorted((ROOT / "companion").rglob("*.js"))

PLOTLY_MIME = "application/vnd.plotly.v1+json"
# an external URL: http(s):// or protocol-relative //host
_EXT = r"""(?:https?:)?//[^\s"'<>)]+"""
EXTERNAL_LOADS = [
    ("<script src>", re.compile(rf"""<script\b[^>]*\bsrc\s*=\s*["']?\s*{_EXT}""", re.I)),
    ("<link href>", re.compile(rf"""<link\b[^>]*\bhref\s*=\s*["']?\s*{_EXT}""", re.I)),
    ("<img src>", re.compile(rf"""<img\b[^>]*\bsrc\s*=\s*["']?\s*{_EXT}""", re.I)),
    ("<iframe src>", re.compile(rf"""<iframe\b[^>]*\bsrc\s*=\s*["']?\s*{_EXT}""", re.I)),
    ("CSS @import", re.compile(rf"""@import\s+(?:url\(\s*)?["']?\s*{_EXT}""", re.I)),
    ("CSS url()", re.compile(rf"""\burl\(\s*["']?\s*{_EXT}""", re.I)),
    ("ES import", re.compile(rf"""(?:\bimport\s*\(\s*|\bfrom\s+|^\s*import\s+)["']{_EXT}""",
                             re.I | re.M)),
    ("requirejs paths", re.compile(rf"""\bpaths\s*:\s*\{{[^}}]*["']{_EXT}""", re.I | re.S)),
    ("CDN host", re.compile(
        r"""\b(?:cdn\.plot\.ly|cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|"""
        r"""ajax\.googleapis\.com|fonts\.googleapis\.com|fonts\.gstatic\.com|"""
        r"""code\.jquery\.com|cdn\.mathjax\.org|esm\.sh|cdn\.skypack\.dev|"""
        r"""cdn\.bokeh\.org|stackpath\.bootstrapcdn\.com)\b""", re.I)),
]
# what plotly's HTML renderers ("notebook", "notebook_connected", "iframe", ...) write
PLOTLY_HTML = re.compile(r"""Plotly\.newPlot|PLOTLYENV|require\(\s*\[\s*["']plotly["']""")
MARKDOWN_IMAGE = re.compile(rf"""!\[[^\]]*\]\(\s*<?{_EXT}""")


def external_loads(text: str) -> list[str]:
    """What in ``text`` would make a browser fetch from outside (kind: snippet)."""
    found = []
    for kind, pattern in EXTERNAL_LOADS:
        for m in pattern.finditer(text):
            found.append(f"{kind}: {m.group(0)[:120]!r}")
    return found


def _strings(value):
    """Every string inside a JSON value (outputs hold dicts, lists, and split text lines)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            yield "".join(value)
        else:
            for v in value:
                yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def notebook_problems(nb: dict) -> list[str]:
    """External loads in a notebook's stored outputs and markdown, and plotly figures not
    stored as the plotly mimetype."""
    problems = []
    if "widgets" in nb.get("metadata", {}):
        for text in _strings(nb["metadata"]["widgets"]):
            problems += [f"widget state: {p}" for p in external_loads(text)]
    for i, cell in enumerate(nb.get("cells", [])):
        where = f"cell {i}"
        if cell.get("cell_type") == "markdown":
            source = "".join(cell.get("source", ""))
            problems += [f"{where} markdown: external image {m.group(0)[:100]!r}"
                         for m in MARKDOWN_IMAGE.finditer(source)]
            problems += [f"{where} markdown: {p}" for p in external_loads(source)
                         if not p.startswith("CDN host")]  # a link to a CDN page is no load
            continue
        for j, output in enumerate(cell.get("outputs", [])):
            data = output.get("data", {})
            for mime, value in data.items():
                if mime == PLOTLY_MIME:
                    continue  # JSON figure: rendered locally by jupyterlab-plotly
                for text in _strings(value):
                    problems += [f"{where} output {j} {mime}: {p}"
                                 for p in external_loads(text)]
                    if mime in ("text/html", "application/javascript") and \
                            PLOTLY_HTML.search(text):
                        problems.append(f"{where} output {j}: plotly figure stored as {mime} "
                                        "(an HTML renderer); use the default plotly_mimetype")
            if output.get("output_type") == "display_data" and "text/html" in data and \
                    "plotly" in "".join(_strings(data["text/html"])).lower() and \
                    PLOTLY_MIME not in data:
                problems.append(f"{where} output {j}: plotly HTML without the plotly mimetype")
    return problems


def test_there_are_notebooks_to_scan():
    assert NOTEBOOKS
    assert any(p.parts[-2] == "dashboards" for p in NOTEBOOKS)


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_notebook_loads_nothing_from_outside(ipynb):
    problems = notebook_problems(json.loads(ipynb.read_text()))
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_plotly_figures_are_stored_as_the_plotly_mimetype(ipynb):
    nb = json.loads(ipynb.read_text())
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            fig = output.get("data", {}).get(PLOTLY_MIME)
            if fig is None:
                continue
            assert isinstance(fig, dict) and "data" in fig and "layout" in fig, (
                f"{ipynb.name}: malformed {PLOTLY_MIME} output")
            # a figure's config could still point plotly.js at a CDN (mathjax, topojson)
            problems = [p for text in _strings(fig.get("config", {}))
                        for p in external_loads(text)]
            assert not problems, problems


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dashboard_template_loads_nothing_from_outside(path):
    problems = external_loads(path.read_text())
    assert not problems, "\n".join(problems)


def test_there_are_widget_modules():
    assert WIDGET_MODULES


@pytest.mark.parametrize("path", WIDGET_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_widget_module_loads_nothing_from_outside(path):
    problems = external_loads(path.read_text())
    assert not problems, "\n".join(problems)


# --- the scanner itself catches what it must ---------------------------------------------------

@pytest.mark.parametrize("snippet", [
    '<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>',
    "<script type='text/javascript' src='//cdn.jsdelivr.net/npm/vega@5'></script>",
    '<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@fortawesome/all.min.css">',
    "<style>@import url('https://fonts.googleapis.com/css?family=Roboto');</style>",
    "<style>@font-face { src: url(https://example.org/f.woff2) }</style>",
    'require.config({paths: {"plotly": "https://cdn.plot.ly/plotly-2.35.2.min"}});',
    'import * as d3 from "https://esm.sh/d3@7";',
    'const m = await import("https://unpkg.com/lodash-es");',
    '<img src="https://example.org/figure.png">',
])
def test_scanner_flags_external_loads(snippet):
    assert external_loads(snippet)


@pytest.mark.parametrize("snippet", [
    '<a href="https://arxiv.org/abs/2309.06180">PagedAttention</a>',
    "see https://docs.vllm.ai for the engine",
    '<script src="/static/local.js"></script>',
    '<link rel="icon" href="data:;base64,=">',
    "<table><tr><td>35</td></tr></table>",
])
def test_scanner_passes_local_content_and_plain_links(snippet):
    assert not external_loads(snippet)


def test_scanner_flags_a_plotly_html_figure_and_an_external_markdown_image():
    html = ('<div id="x"></div><script type="text/javascript">window.PLOTLYENV=window.PLOTLYENV'
            '||{}; Plotly.newPlot("x", [], {})</script>')
    nb = {"metadata": {}, "cells": [
        {"cell_type": "code", "source": "", "outputs": [
            {"output_type": "display_data", "data": {"text/html": html}, "metadata": {}}]},
        {"cell_type": "markdown", "source": "![roofline](https://example.org/roofline.png)"},
    ]}
    problems = notebook_problems(nb)
    assert any("HTML renderer" in p for p in problems)
    assert any("external image" in p for p in problems)
