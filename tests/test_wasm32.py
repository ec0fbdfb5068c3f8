"""The companion on wasm32, where numpy's default integer (intp) is 32 bits: every ledger entry
(each printed number of both chapters, recomputed through calc, the simulators and the
explorers' helpers) is computed inside the lite site's Pyodide under Node and must equal the
value computed here. On wasm32, np.repeat counts, np.bincount input and ndarray.take indices
must be intp, and int64 arrays there raised (kvcache, load, fast_scheduler, result, speculative)."""
from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from companion import ledger
from lite_site import ROOT, site, unavailable

SCRIPT = """
import json, numpy as np
from companion import ledger
assert np.dtype(np.intp).itemsize == 4, "not a 32-bit intp: the test would prove nothing"
print(json.dumps({"intp_bits": 8 * np.dtype(np.intp).itemsize,
                  "values": {e.id: e.value for e in ledger.entries()}}))
"""


@pytest.mark.slow
def test_ledger_inside_pyodide_equals_native(tmp_path):
    if shutil.which("node") is None:
        unavailable("node is missing")
    pyodide = site() / "static" / "pyodide"
    script = tmp_path / "ledger.py"
    script.write_text(SCRIPT)
    done = subprocess.run(["node", str(ROOT / "tests" / "pyodide_run.mjs"), str(pyodide), str(ROOT),
                           str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["intp_bits"] == 32
    native = {e.id: e.value for e in ledger.entries()}
    assert set(got["values"]) == set(native)
    differ = {k: (got["values"][k], v) for k, v in native.items()
              if not (v == got["values"][k] or (isinstance(v, float) and math.isclose(
                  v, got["values"][k], rel_tol=1e-9, abs_tol=1e-12)))}
    assert not differ, f"{len(differ)} ledger values differ on wasm32: {dict(list(differ.items())[:8])}"
