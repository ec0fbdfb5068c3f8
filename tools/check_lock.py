#!/usr/bin/env python
"""Check that this Python environment holds exactly what requirements.lock pins.

Every distribution installed here must be pinned in the lock at the installed version (the
project itself excepted), every pin whose environment marker applies here must be installed,
and the packages whose versions decide the stored notebook outputs must be among the pins.
Run by `make setup` after installing from the lock; tests/test_lock.py runs it too.

usage: python tools/check_lock.py [--extras]   (--extras: print the names of installed
       distributions the lock does not pin, one a line, and exit 0; `make setup` removes them)
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PROJECT = "llm-inference-companion"
# the stored outputs depend on these: a lock without them would not reproduce anything
MUST_PIN = ("numpy", "plotly", "ipywidgets", "jupyterlab", "anywidget", "nbval", "jupytext",
            "nbclient", "ipykernel")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\#]+?))?\s*(?:\\|#|$)")


def read_lock(path: Path = LOCK) -> dict[str, tuple[str, str | None]]:
    """{normalised name: (version, marker or None)} of every pin in a uv/pip-tools lock.

    A universal lock may pin one package at different versions for different environments
    (``docutils==0.22.4 ; python_full_version < '3.13'`` and ``==0.23`` for 3.13+): of such
    alternatives the one whose marker holds here is kept; two that both hold are an error."""
    pins: dict[str, tuple[str, str | None]] = {}
    for line in path.read_text().splitlines():
        m = _PIN.match(line)
        if not m:
            continue
        name = canonicalize_name(m.group(1))
        pin = (m.group(2), m.group(3).strip() if m.group(3) else None)
        if name in pins:
            if pins[name][1] is None or pin[1] is None:
                raise ValueError(f"{path.name}: {name} is pinned twice")
            here = [p for p in (pins[name], pin) if Marker(p[1]).evaluate()]
            if len(here) == 2:
                raise ValueError(f"{path.name}: {name} is pinned twice for this environment")
            pin = here[0] if here else pins[name]
        pins[name] = pin
    if not pins:
        raise ValueError(f"{path.name}: no 'name==version' pins found")
    return pins


def installed() -> dict[str, str]:
    """{normalised name: version} of every distribution in this environment."""
    return {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()
            if d.metadata["Name"]}


def applying(pins: dict) -> dict:
    """The pins whose environment marker holds here (a pin the lock overrides away, with a
    marker that never holds, is not among them: lock-overrides.txt)."""
    return {name: pin for name, pin in pins.items() if pin[1] is None or Marker(pin[1]).evaluate()}


def extras(pins: dict, present: dict) -> list[str]:
    """Installed distributions that no pin applying here asks for (the project excepted)."""
    return sorted(set(present) - set(applying(pins)) - {canonicalize_name(PROJECT)})


def problems(pins: dict, present: dict) -> list[str]:
    """What differs between the lock's pins and what is installed, one sentence each."""
    out = [f"{name}: the lock does not pin it" for name in MUST_PIN if name not in pins]
    for name, (version, _) in sorted(applying(pins).items()):
        if name not in present:
            out.append(f"{name}: pinned =={version} but not installed")
        elif present[name] != version:
            out.append(f"{name}: pinned =={version} but {present[name]} is installed")
    for name in extras(pins, present):
        out.append(f"{name}: installed ({present[name]}) but not in the lock")
    return out


def main(argv: list[str]) -> int:
    pins, present = read_lock(), installed()
    if argv == ["--extras"]:
        for name in extras(pins, present):
            print(name)
        return 0
    found = problems(pins, present)
    if found:
        print(f"{sys.prefix} does not match {LOCK.name}:", *found, sep="\n  ", file=sys.stderr)
        print("Reinstall from the lock: rm -rf .venv && make setup", file=sys.stderr)
        return 1
    print(f"environment matches {LOCK.name}: {len(pins)} pins "
          f"({', '.join(f'{n} {pins[n][0]}' for n in MUST_PIN[:6])})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
