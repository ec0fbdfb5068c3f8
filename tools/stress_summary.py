"""Per-test counts of a `make stress` run: how many of its repeated rounds passed.

Reads the JUnit XML that `make stress` writes and prints one line per test (the round id
taken out of its name), then the total, so a note can quote "20/20" per browser test.
Exit status 1 when any round failed or errored.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def main(path: str) -> int:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0.0])  # passed, run, seconds
    for case in ET.parse(path).getroot().iter("testcase"):
        name = re.sub(r"round\d+-?", "", f"{case.get('classname')}::{case.get('name')}")
        name = name.replace("[]", "")
        row = counts[name]
        if case.find("skipped") is not None:
            continue
        row[1] += 1
        row[2] += float(case.get("time", 0))
        if case.find("failure") is None and case.find("error") is None:
            row[0] += 1
    bad = 0
    for name, (passed, run, seconds) in sorted(counts.items()):
        bad += run - passed
        print(f"{passed:3d}/{run:<3d} {seconds / max(run, 1):6.1f} s each  {name}")
    total_pass = sum(r[0] for r in counts.values())
    total_run = sum(r[1] for r in counts.values())
    print(f"{total_pass}/{total_run} rounds passed over {len(counts)} tests")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".state/stress.xml"))
