"""Put plotly.js beside the lecture dashboard's Voila template (make dashboard, the tests).

The template (dashboards/share/jupyter/voila/templates/lab-offline) asks for
``voila/static/plotly.min.js`` at the top of the page, so the browser fetches and runs plotly.js
while Voila streams the page and its JavaScript starts, instead of after the kernel has sent
the explorers' figures (``companion/explorers/figure_widget.js`` uses a ``window.Plotly`` of the
same version). The file is a copy of the installed plotly package's own (Voila's static handler
refuses a symlink that leaves the template's folder), made again when plotly changes; it is
git-ignored, not committed.

usage: python tools/dashboard_assets.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "dashboards" / "share" / "jupyter" / "voila" / "templates" / "lab-offline" / "static"


def plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def link_plotly_js(static: Path = STATIC) -> Path:
    """Copy the installed plotly.min.js into ``static`` unless an identical copy is there."""
    import filecmp
    import shutil

    source, target = plotly_js(), static / "plotly.min.js"
    static.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or (target.exists() and not filecmp.cmp(source, target, shallow=False)):
        target.unlink()
    if not target.exists():
        shutil.copyfile(source, target)
    return target


if __name__ == "__main__":
    print(link_plotly_js().relative_to(ROOT))
    sys.exit(0)
