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

With ``--before REV`` (a git revision) each figure also shows the PNG that revision stored for the
same anchor, written to ``png/before/<anchor>.png``: a change's before and after, side by side.

usage: python tools/make_gallery.py [--out build/gallery] [--root .] [--before REV]
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


def build(root: Path, out: Path, before: str | None = None) -> int:
    """Write ``out``/index.html, ``out``/png/*.png and ``out``/plotly.min.js; return the
    number of figures."""
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
            f'<script src="{PLOTLY_JS}"></script>\n</head>\n<body>\n'
            f'<h1>Every stored figure: the PNG and the live plotly figure</h1>\n'
            f'<p>{total} figures from {len(sections)} notebooks. Left: the PNG stored beside the '
            f'figure (GitHub, print). Right: plotly.js drawing the stored JSON (JupyterLab, the '
            f'book).</p>\n<nav><ul>\n' + "\n".join(toc) + '\n</ul></nav>\n'
            + "\n".join(sections) + f'\n<script>{SCRIPT}</script>\n</body>\n</html>\n')
    (out / "index.html").write_text(page, encoding="utf-8")
    return total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "gallery")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the folder holding notebooks/, exercises/, ... (default: the repository)")
    parser.add_argument("--before", help="a git revision whose stored PNGs to show beside")
    args = parser.parse_args(argv)
    total = build(args.root.resolve(), args.out.resolve(), args.before)
    print(f"gallery: {total} figures in {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
