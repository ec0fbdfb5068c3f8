"""make gallery (tools/make_gallery.py): one offline page with every stored figure, its PNG
beside the live plotly figure, and with --before a revision's PNG beside those."""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("make_gallery", ROOT / "tools" / "make_gallery.py")
gallery = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gallery)

PNG = b"\x89PNG\r\n\x1a\n" + b"tiny"


def _notebook(png: bytes, title: str) -> dict:
    figure = {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4]}],
              "layout": {"title": {"text": title}}}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# A section"},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "fig",
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {gallery.PLOTLY_MIME: figure,
                               "image/png": base64.b64encode(png).decode()}}]}]}


def test_the_gallery_shows_each_figure_as_png_and_live_with_its_anchor(tmp_path):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    path = root / "notebooks" / "17_02_roofline.ipynb"
    path.write_text(json.dumps(_notebook(PNG + b"old", "before")))
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    path.write_text(json.dumps(_notebook(PNG + b"new", "after")))

    out = tmp_path / "gallery"
    assert gallery.build(root, out, before="HEAD") == 1
    page = (out / "index.html").read_text()
    assert 'id="17_02_roofline-1"' in page and 'href="#17_02_roofline"' in page
    assert (out / "png" / "17_02_roofline-1.png").read_bytes() == PNG + b"new"
    assert (out / "png" / "before" / "17_02_roofline-1.png").read_bytes() == PNG + b"old"
    assert 'src="png/17_02_roofline-1.png"' in page
    assert 'src="png/before/17_02_roofline-1.png"' in page
    # the live figure: its JSON in the page and plotly.js beside it, nothing from another host
    assert '"title":{"text":"after"}' in page and (out / gallery.PLOTLY_JS).stat().st_size > 1e6
    assert "https://" not in page.replace("https://www.w3.org", "")
