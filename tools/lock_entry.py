#!/usr/bin/env python
"""Print one package's entry of a hash-pinned lock (its ``name==version`` line and its
``--hash`` lines), as a requirements file that pip installs with ``--require-hashes``.

`make setup` bootstraps uv this way (pip installs the lock's own uv, hash-checked, and uv then
installs the rest). Standard library only: it runs in a venv that holds nothing yet.

usage: python tools/lock_entry.py NAME LOCKFILE
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def _normalised(name: str) -> str:
    """A distribution name as PEP 503 compares it (packaging's canonicalize_name, which this
    venv does not have yet)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def entry(name: str, text: str) -> str:
    """The lines of ``name``'s pin in a uv/pip-tools lock; ValueError when it has none."""
    want = _normalised(name)
    out: list[str] = []
    taking = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            pin = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
            taking = bool(pin) and _normalised(pin.group(1)) == want
            if taking:
                out.append(line)
            continue
        if taking and line.strip().startswith("--hash="):
            out.append(line)
    if not out:
        raise ValueError(f"no pin of {name!r} in the lock")
    if not any("--hash=" in line for line in out):
        raise ValueError(f"the lock pins {name!r} without hashes")
    # the last hash line of an entry carries no continuation backslash; keep the file valid
    # even where a comment line ended the entry
    out[-1] = out[-1].rstrip(" \\")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        sys.stdout.write(entry(argv[0], Path(argv[1]).read_text()))
    except (OSError, ValueError) as exc:
        print(f"lock_entry: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
