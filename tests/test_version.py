"""One version: ``companion.__version__``, which pyproject.toml reads and CHANGELOG.md's newest
release names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import companion

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def test_the_version_is_the_newest_release_in_the_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = RELEASE.findall(text)
    assert releases, "CHANGELOG.md has no '## [x.y.z] - YYYY-MM-DD' release heading"
    assert companion.__version__ == releases[0][0]
    # newest first, each version once
    versions = [tuple(map(int, v.split("."))) for v, _ in releases]
    assert versions == sorted(set(versions), reverse=True)


def test_the_changelog_keeps_an_unreleased_section_above_the_releases():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert 0 <= text.find("## [Unreleased]") < RELEASE.search(text).start()


def test_pyproject_reads_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "companion.__version__"}
