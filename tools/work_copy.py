#!/usr/bin/env python
"""A student's own working copy of the notebooks and exercises (what `make lab` opens).

JupyterLab saves a notebook into the file it opened (autosave every two minutes), so a
student who opened the tracked notebooks would overwrite their stored outputs and meet a
conflict at the next `git pull`. `make lab` therefore opens a copy: ``my-work/`` (git-ignored)
holds ``notebooks/`` and ``exercises/`` laid out as in the repository, so the links between
notebooks (``../../exercises/ex8_3.ipynb``) and the files a notebook reads
(``notebooks/lab/measurements/``) resolve there as well. The jupytext ``.py`` sources are not
copied: the copy pairs with nothing, so a save writes only the ``.ipynb`` (``my-work``'s own
``jupytext.toml`` says so).

* ``python tools/work_copy.py [DIR]``: create DIR on first use; later runs add only the files
  that are new in the repository (after a ``git pull``) and never touch one that exists.
* ``python tools/work_copy.py --fresh [DIR]``: move DIR aside to ``DIR.old-<date-time>`` (kept,
  also git-ignored) and make a new copy (``make fresh-copy``).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "exercises")
DEFAULT = ROOT / "my-work"
# jupytext finds the repository's pyproject.toml ([tool.jupytext] formats = "ipynb,py:percent")
# from inside my-work too; this nearer config keeps the copy unpaired
JUPYTEXT_TOML = 'formats = "ipynb"\n'


def sources() -> list[Path]:
    """The files a working copy holds, relative to the repository root."""
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT)
            if (path.is_file() and path.suffix != ".py" and ".ipynb_checkpoints" not in rel.parts
                    and "__pycache__" not in rel.parts):
                found.append(rel)
    return found


def update(work: Path) -> list[Path]:
    """Copy every source file missing from ``work``; return those copied."""
    copied = []
    for rel in sources():
        dest = work / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, dest)
            copied.append(rel)
    toml = work / "jupytext.toml"
    if not toml.exists():
        toml.write_text(JUPYTEXT_TOML)
    return copied


def _shown(path: Path) -> Path:
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def main(argv: list[str]) -> int:
    fresh = "--fresh" in argv
    args = [a for a in argv if a != "--fresh"]
    work = Path(args[0]).resolve() if args else DEFAULT
    if fresh and work.exists():
        old = work.with_name(f"{work.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
        work.rename(old)
        print(f"your previous work is kept in {_shown(old)}/")
    first = not work.exists()
    copied = update(work)
    shown = _shown(work)
    if first:
        print(f"created your working copy in {shown}/ ({len(copied)} files): "
              f"your changes stay there; the repository's notebooks are never modified")
    elif copied:
        print(f"added {len(copied)} new file(s) to {shown}/: "
              + ", ".join(str(c) for c in copied[:5]) + (" ..." if len(copied) > 5 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
