"""``make handout``'s tool prints exercises with a chosen seed's data to PDF, offline: the
given-data cells ran with that seed (their printed data are ``grading.params(id, seed)``),
no solution text is in it, and Chromium wrote a multi-page PDF."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import lab_harness as H

pytestmark = pytest.mark.browser


def test_handout_of_two_exercises_for_seed_3(chromium, tmp_path):
    from companion import grading

    pdf, page = tmp_path / "handout.pdf", tmp_path / "handout.html"
    # paths relative to the repository, as `make handout` passes them
    run = subprocess.run([sys.executable, "tools/make_handout.py", "--seed", "3", "--only",
                          "ex8_1", "ex17_1", "--out", os.path.relpath(pdf, H.ROOT),
                          "--html", os.path.relpath(page, H.ROOT)],
                         cwd=H.ROOT, capture_output=True, text=True, timeout=900,
                         env=dict(H.isolated_env(tmp_path / "state"), CHROMIUM_PATH=chromium))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type\s*/Page\b", data)) >= 3  # a title page and two exercises
    html = page.read_text()
    assert "SEED = 3" in html and "student_seed()" not in html
    short, long_ = grading.params("8-1", 3)["contexts"]
    assert (short, long_) != tuple(grading.params("8-1", 0)["contexts"])
    assert f"short {short} tokens, long {long_} tokens" in html
    assert "BEGIN SOLUTION" not in html and "YOUR CODE HERE" in html
    # the stub is there (highlighted); nothing raised
    assert "Traceback" not in html and "NotImplementedError" not in html
    # nothing but local files: MathJax is a file:// script
    assert re.search(r'<script src="file://[^"]*tex-chtml\.js"', html)
    assert not re.search(r'<(?:script|link)\b[^>]*(?:src|href)="(?:https?:)?//', html)
