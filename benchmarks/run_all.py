#!/usr/bin/env python
"""Print the companion's speed figures (nothing is asserted; tests never time things).

Sections (all by default; name some to run only those):
  startup     the start-up table (benchmarks/startup.py): import, JupyterLab cold and warm Run
              All -> first live explorer (START_HERE, 8.3, 17.2), the dashboard's URL -> first
              figure, the lite site's kernel ready (first and second notebook) and its Run All
              -> first explorer, each row against its target
  import      `import companion` / `import companion.calc` in a fresh interpreter (median of 7),
              and `python -c "import companion.calc"` less `python -c pass` (target < 150 ms)
  panels      every explorer's update latency inside a Jupyter kernel: recompute + figure
              update, over a sweep of each slider (median and 95th percentile)
  sim         the simulator benchmark scripts benchmarks/bench_sim_*.py
  notebooks   time to execute each notebook on a fresh kernel
  browser     real JupyterLab + headless Chromium (if available): slider step -> repainted
              explorer for the 17 §2, 8.6 and 8.1 explorers with where the time goes, a
              pointer drag across each one's slider (lag, updates per second, largest gap),
              and open -> first figure / Run All -> first live explorer per notebook
              (benchmarks/browser_latency.py; about 10 minutes on a quiet machine)
  lite        the lite site (make lite) in headless Chromium: page open -> kernel ready, Run
              All -> first live explorer, slider steps and drags of the same explorers, and
              Run All of every notebook it serves (benchmarks/lite_latency.py)
  suite       the whole test suite (`make test`'s pytest command)

usage: python benchmarks/run_all.py [section ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def header(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)), flush=True)


IMPORT_TARGET_S = 0.150   # `import companion.calc` over a bare interpreter


def bench_import() -> None:
    header("import time (fresh interpreter, median of 7)")
    for module in ("companion", "companion.calc", "companion.sim", "companion.sim.scheduler",
                   "companion.widgets"):
        code = (f"import time; t = time.perf_counter(); import {module}; "
                f"print(time.perf_counter() - t)")
        runs = []
        for _ in range(7):
            out = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=ROOT)
            if out.returncode:
                print(f"  {module}: failed: {out.stderr.strip().splitlines()[-1:]}")
                break
            runs.append(float(out.stdout))
        if runs:
            print(f"  import {module:28s} median {statistics.median(runs) * 1e3:7.1f} ms"
                  f"   min {min(runs) * 1e3:7.1f} ms")
    # what a reader waits for: a whole interpreter that imports the module, less one that
    # does nothing (interpreter start and site are paid by both)
    print("  whole process, less `python -c pass` (median of 7 each):")
    bare = _process_median("pass")
    for module in ("companion.calc", "numpy"):
        extra = _process_median(f"import {module}") - bare
        target = (f"   (target under {IMPORT_TARGET_S * 1e3:.0f} ms: "
                  f"{'met' if extra < IMPORT_TARGET_S else 'MISSED'})"
                  if module == "companion.calc" else "")
        print(f"  python -c 'import {module}'{'':{max(0, 16 - len(module))}} "
              f"+{extra * 1e3:6.1f} ms over a bare interpreter{target}")


def _process_median(code: str, n: int = 7) -> float:
    """Median wall time of ``python -c code`` in a fresh process, in seconds."""
    runs = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([PY, "-c", code], check=True, cwd=ROOT)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


PANEL_CODE = r'''
import json, statistics, time, inspect
import numpy as np
from companion import widgets
from companion.explorers.base import Panel
results = {}
for name, cls in sorted(((n, getattr(widgets, n)) for n in widgets.__all__)):
    if not (inspect.isclass(cls) and issubclass(cls, Panel) and cls is not Panel):
        continue
    panel = cls()
    panel.show()                      # a live figure widget, as in the notebook
    times = []
    for c in cls.controls:
        if c.kind in ("choice", "text"):   # a text box: its example texts
            values = list((c.options or {}).values())
        elif c.kind == "int":
            values = sorted({int(round(x)) for x in np.linspace(c.min, c.max, 15)})
        else:
            values = list(np.linspace(c.min, c.max, 15))
        for value in values + [c.default]:
            t = time.perf_counter()
            panel.update(**{c.name: value})
            times.append(time.perf_counter() - t)
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    results[name] = dict(n=len(times), median_ms=statistics.median(times) * 1e3, p95_ms=p95 * 1e3)
print("PANELS_JSON" + json.dumps(results))
'''


def _run_in_kernel(code: str, timeout: float = 600) -> str:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        chunks = []

        def output_hook(msg):
            if msg["msg_type"] == "stream":
                chunks.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                chunks.append("\n".join(msg["content"]["traceback"]))

        kc.execute_interactive(code, timeout=timeout, output_hook=output_hook)
        return "".join(chunks)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def bench_panels() -> None:
    header("explorer update latency in a kernel (recompute + figure update)")
    out = _run_in_kernel(PANEL_CODE)
    marker = out.rfind("PANELS_JSON")
    if marker < 0:
        print(out[-2000:])
        return
    results = json.loads(out[marker + len("PANELS_JSON"):].strip())
    print(f"  {'panel':34s} {'updates':>7s} {'median':>10s} {'p95':>10s}   target: <16 / <50 ms")
    for name, r in results.items():
        flag = "" if r["median_ms"] < 16 and r["p95_ms"] < 50 else "   <-- over target"
        print(f"  {name:34s} {r['n']:7d} {r['median_ms']:8.2f} ms {r['p95_ms']:8.2f} ms{flag}")


def bench_sim() -> None:
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        header(f"{script.name}")
        out = subprocess.run([PY, str(script)], capture_output=True, text=True, cwd=ROOT)
        print(out.stdout.rstrip() or out.stderr[-2000:])


def notebook_paths() -> list[Path]:
    return sorted(p for d in ("notebooks", "solutions") for p in (ROOT / d).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def bench_notebooks() -> None:
    import nbformat
    from nbclient import NotebookClient

    header("notebook execution time (fresh kernel each)")
    os.environ.setdefault("COMPANION_FAST", "1")
    total = 0.0
    for path in notebook_paths():
        nb = nbformat.read(path, as_version=4)
        t = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        elapsed = time.perf_counter() - t
        total += elapsed
        print(f"  {str(path.relative_to(ROOT)):64s} {elapsed:6.2f} s")
    print(f"  {'total':64s} {total:6.2f} s")


def bench_browser() -> None:
    header("explorers and notebooks in a real browser (JupyterLab, headless Chromium)")
    print(f"  load average {os.getloadavg()[0]:.2f} (1 min) before; the machine should be quiet",
          flush=True)
    # output streams straight through: the table grows row by row
    subprocess.run([PY, str(ROOT / "benchmarks" / "browser_latency.py")], cwd=ROOT)


def bench_lite() -> None:
    header("the lite site in a real browser (JupyterLite, Pyodide kernel, headless Chromium)")
    print(f"  load average {os.getloadavg()[0]:.2f} (1 min) before; the machine should be quiet",
          flush=True)
    subprocess.run([PY, str(ROOT / "benchmarks" / "lite_latency.py")], cwd=ROOT)


def bench_suite() -> None:
    header("whole test suite (make test's pytest command)")
    cmd = [PY, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q", "--nbval",
           "--nbval-current-env", "--nbval-sanitize-with=nbval_sanitize.cfg",
           "tests", "notebooks", "solutions", "exercises"]
    env = dict(os.environ, COMPANION_FAST="1")
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - t
    last = [line for line in out.stdout.splitlines() if line.strip()][-1:]
    print(f"  {elapsed:.1f} s  ({last[0] if last else 'no output'})")


def bench_startup() -> None:
    header("start-up: the wait for the first figure (each row measured in this run)")
    subprocess.run([PY, str(ROOT / "benchmarks" / "startup.py")], cwd=ROOT)


SECTIONS = {"startup": bench_startup, "import": bench_import, "panels": bench_panels,
            "sim": bench_sim,
            "notebooks": bench_notebooks, "browser": bench_browser, "lite": bench_lite,
            "suite": bench_suite}

if __name__ == "__main__":
    chosen = sys.argv[1:] or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        sys.exit(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    for name in chosen:
        SECTIONS[name]()
