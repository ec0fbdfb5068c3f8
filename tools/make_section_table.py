"""Write companion.sections.section_table() into README.md between its markers.

usage: python tools/make_section_table.py   (tests/test_sections.py checks the result)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from companion.sections import section_table  # noqa: E402

BEGIN, END = "<!-- sections:begin -->", "<!-- sections:end -->"


def with_table(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table}{END}{tail}"


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(with_table(path.read_text(), section_table()))
    print(f"wrote the section table into {path}")
