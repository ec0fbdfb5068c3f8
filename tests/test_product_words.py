"""The product speaks of itself only: no development history in what students and instructors
read.

Notebooks (their text sources and stored outputs), exercises, solutions, the book's own pages,
the dashboards and the package ``companion/`` (code, comments, docstrings, data) never mention
the project's issue numbers or carry "Changed (...)" notes. History belongs in commit messages
and CHANGELOG.md. A reference to another project's tracker ("plotly.js issue 6920") names that
project right before it and is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("notebooks", "exercises", "solutions", "book", "dashboards", "companion", "jupyter",
           "lite", "deploy")
SUFFIXES = {".py", ".ipynb", ".md", ".js", ".css", ".json", ".html", ".txt", ".cfg", ".toml",
            ".yml", ".yaml", ".csv"}
# the project's own history: "issue 24", "issues 16 and 26", "(issue 12)", "Changed (issue 24)"
HISTORY = re.compile(r"\b(?:issues?\s+#?\d+|changed\s+\((?:issue|in|since)\b[^)]*\))", re.I)
# another project's tracker, named just before the number
UPSTREAM = re.compile(r"(?:plotly\.js|jupyterlab|jupyterlite|pyodide|nbgrader|ipywidgets|"
                      r"github\.com/[\w.-]+/[\w.-]+)\W{1,3}(?:\w+\W{1,3}){0,2}$", re.I)


def history_mentions(text: str) -> list[str]:
    found = []
    for m in HISTORY.finditer(text):
        before = text[max(0, m.start() - 60):m.start()]
        if not UPSTREAM.search(before):
            found.append(m.group(0))
    return found


def product_files() -> list[Path]:
    files = [ROOT / "index.md"]
    for folder in PRODUCT:
        for p in (ROOT / folder).rglob("*"):
            if p.is_file() and p.suffix in SUFFIXES and ".ipynb_checkpoints" not in p.parts \
                    and "__pycache__" not in p.parts:
                files.append(p)
    return sorted(files)


def test_there_are_product_files():
    names = {p.relative_to(ROOT).parts[0] for p in product_files()}
    assert {"notebooks", "exercises", "solutions", "companion", "book"} <= names


@pytest.mark.parametrize("path", product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_development_history(path):
    assert history_mentions(path.read_text(errors="replace")) == []


def test_the_history_rule_can_fail():
    assert history_mentions("# the fuller model (issue 24): the chapter's first") == ["issue 24"]
    assert history_mentions("**Changed (issue 24).** The step is now") == ["Changed (issue 24)"]
    assert history_mentions("See issues 16 and 26.") == ["issues 16"]
    assert history_mentions("plotly.js issue 6920 is open upstream") == []
    assert history_mentions("JupyterLab's shell (jupyterlab/jupyterlab issue 17000)") == []
    assert history_mentions("the weights are no longer in HBM") == []
