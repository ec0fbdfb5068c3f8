"""Sphinx configuration of the companion's static book (``make book``).

The book is Sphinx + MyST-NB + sphinx-book-theme (what Jupyter Book 1 is made of), built from
the notebooks' stored outputs (no execution). The source folder is the repository root (so the
notebooks' relative links between chapters and exercises resolve as they do in JupyterLab);
``include_patterns`` picks the pages. Everything a reader's browser loads is served from the
site: plotly.js from the plotly wheel and MathJax from the sphinx-mathjax-offline wheel, both
copied by ``_ext/companion_book.py``. See that module for how explorers and figures render.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "LLM inference companion"
author = "the companion's authors"
copyright = "the companion's authors, MIT licence"

# autodoc and autosummary write the API reference (book/api.md) from the package's docstrings
extensions = ["myst_nb", "companion_book", "sphinx.ext.autodoc", "sphinx.ext.autosummary"]

root_doc = "index"
include_patterns = ["index.md", "notebooks/**.ipynb", "exercises/*.ipynb", "book/api.md",
                    "book/accessibility.md"]
exclude_patterns = [".venv", ".state", ".git", "build", "artifacts", "solutions", "dashboards",
                    "**/.ipynb_checkpoints"]

# the stored outputs are the ones `make execute` wrote; the book never runs a kernel
nb_execution_mode = "off"
# no widget state is stored (see tools/execute_notebooks.py), so nothing for the widget
# manager to render, and no reason to load it (it would come from a CDN)
nb_ipywidgets_js = {}
# live widget views need a kernel: the static figure beside them (plotly JSON, see
# companion_book) is what the book shows; the PNG beside it is the print/no-JS fallback
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.plotly.v1+json", 5),
    ("latex", "application/vnd.plotly.v1+json", None),
    ("latex", "application/vnd.jupyter.widget-view+json", None),
]
myst_enable_extensions = ["dollarmath", "amsmath"]
# computed sentences (display.md) and folded answers (display.answer) are text/markdown
# outputs with $...$ maths: parse them as MyST, as Markdown cells are, not as CommonMark
nb_render_markdown_format = "myst"
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]
# the API page lists every name on its own page: no stub pages, members in source order
autosummary_generate = False
autodoc_member_order = "bysource"

html_theme = "sphinx_book_theme"
html_title = "LLM inference companion"
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    # the theme's header links and icons stay local: no repository or launch buttons
    "use_repository_button": False,
}
# a fixed light mode: the theme logs an error on a first visit without a stored mode otherwise
html_context = {"default_mode": "light"}
html_static_path = ["_static"]
html_css_files = ["companion_book.css"]
html_favicon = "_static/favicon.svg"   # a local one: browsers ask for /favicon.ico otherwise
html_last_updated_fmt = None
html_copy_source = False

# pydata-sphinx-theme and sphinx-book-theme keep Jinja macro files (webpack-macros.html,
# sbt-webpack-macros.html) in the static folder that Sphinx copies into every site: templates
# the themes read at build time, not pages. In the site they are HTML files with no title and
# no language that no page links to; they are removed once the site is built.
THEME_TEMPLATES_IN_STATIC = ("webpack-macros.html", "sbt-webpack-macros.html")


def _remove_theme_templates(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for name in THEME_TEMPLATES_IN_STATIC:
        (Path(app.outdir) / "_static" / name).unlink(missing_ok=True)


def setup(app):
    app.connect("build-finished", _remove_theme_templates)
