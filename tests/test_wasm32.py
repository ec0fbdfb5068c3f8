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


def _run_in_pyodide(script, source: str, timeout_s: int):
    """Run `source` in the lite site's Pyodide under node (tests/pyodide_run.mjs, the repository
    mounted at /src) and return the JSON its last line of output prints."""
    if shutil.which("node") is None:
        unavailable("node is missing")
    script.write_text(source)
    done = subprocess.run(["node", str(ROOT / "tests" / "pyodide_run.mjs"),
                           str(site() / "static" / "pyodide"), str(ROOT), str(script)],
                          capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])

@pytest.mark.slow
def test_ledger_inside_pyodide_equals_native(tmp_path):
    got = _run_in_pyodide(tmp_path / "ledger.py", SCRIPT, timeout_s=600)
    assert got["intp_bits"] == 32
    native = {e.id: e.value for e in ledger.entries()}
    assert set(got["values"]) == set(native)
    differ = {k: (got["values"][k], v) for k, v in native.items()
              if not (v == got["values"][k] or (isinstance(v, float) and math.isclose(
                  v, got["values"][k], rel_tol=1e-9, abs_tol=1e-12)))}
    assert not differ, f"{len(differ)} ledger values differ on wasm32: {dict(list(differ.items())[:8])}"


CALLS_SCRIPT = """
import json, numpy as np
assert np.dtype(np.intp).itemsize == 4, "not a 32-bit intp: the test would prove nothing"
import sys; sys.path.insert(0, "/src")
from tests import wasm32_calls
print(json.dumps(wasm32_calls.collect()))
"""


def _differences(got, want, where: str = "") -> list[str]:
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        ok = math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
        return [] if ok else [f"{where}: {got!r} != {want!r}"]
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(set(got) ^ set(want))[:5]} differ"]
        return [d for k in want for d in _differences(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want))
                for d in _differences(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {str(got)[:80]!r} != {str(want)[:80]!r}"]


@pytest.mark.slow
def test_every_public_call_inside_pyodide_equals_native(tmp_path):
    """The audit of the package for wasm32's integer width: every good call the bad-input walker
    knows (tests/api_examples: every formula, every simulator entry point), and every public
    property and argument-free method of what it returns, inside Pyodide, against native. It
    found Result.max_itl_by_request_s's reduceat indices (int64; wasm32 wants intp), which the
    ledger above never reached: 08_2's round-by-round summary failed in the lite site."""
    from tests import wasm32_calls

    got = _run_in_pyodide(tmp_path / "calls.py", CALLS_SCRIPT, timeout_s=900)
    native = json.loads(json.dumps(wasm32_calls.collect()))
    assert len(native) > 300, "the examples should cover every public function"
    differ = _differences(got, native)
    assert not differ, f"{len(differ)} results differ on wasm32:\n" + "\n".join(differ[:40])


def test_the_comparison_can_fail():
    assert _differences({"a": [1.0, "x"]}, {"a": [1.0 + 1e-6, "x"]})
    assert _differences({"a": "!TypeError"}, {"a": 3})
    assert not _differences({"a": [1.0, 2]}, {"a": [1.0 + 1e-12, 2]})
