"""A second client on the kernel that a page (JupyterLab notebook, Voila dashboard) drives.

The browser benchmark and the coalescing test need two facts only the kernel knows: how long
each explorer update took inside the kernel (``compute`` and the figure/readout refresh
``_apply``), and how many updates were computed at all. ``KernelProbe`` connects to the same
kernel through its connection file (the server writes it into ``$JUPYTER_RUNTIME_DIR``), wraps
the shown panels' ``compute``/``_apply`` on their instances (the classes stay untouched) and
reads the records back as JSON through ``user_expressions``. Its executions are silent, so
the page shows nothing of them.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

INSTRUMENT = r'''
def __probe_instrument():
    import time
    from companion.explorers.base import Panel
    found = {}
    for name, obj in list(get_ipython().user_ns.items()):
        if not isinstance(obj, Panel) or getattr(obj, "_ui", None) is None:
            continue
        found[name] = type(obj).__name__
        if "_probe_log" in vars(obj):
            continue
        log = obj._probe_log = []
        compute, apply = obj.compute, obj._apply

        def timed_compute(_f=compute, _log=log, **params):
            t, c = time.perf_counter(), time.thread_time()
            view = _f(**params)
            _log.append(("compute", time.perf_counter() - t, time.thread_time() - c))
            return view

        def timed_apply(view, _f=apply, _log=log):
            t, c = time.perf_counter(), time.thread_time()
            _f(view)
            _log.append(("apply", time.perf_counter() - t, time.thread_time() - c))

        obj.compute, obj._apply = timed_compute, timed_apply
    return found
'''


class KernelProbe:
    """Runs silent code in a running kernel, next to the page that owns it."""

    def __init__(self, runtime_dir: Path, kernel_id: str, timeout_s: float = 60):
        from jupyter_client import BlockingKernelClient

        path = Path(runtime_dir) / f"kernel-{kernel_id}.json"
        deadline = time.monotonic() + timeout_s
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no connection file {path}")
            time.sleep(0.1)
        self.client = BlockingKernelClient(connection_file=str(path))
        self.client.load_connection_file()
        self.client.start_channels()
        self.timeout_s = timeout_s

    def close(self) -> None:
        self.client.stop_channels()

    def evaluate(self, code: str, expression: str):
        """Run ``code`` silently, then return ``json.loads`` of ``expression``'s value (the
        expression must give a JSON string)."""
        msg_id = self.client.execute(code, silent=True, store_history=False,
                                     user_expressions={"r": expression})
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        content = reply["content"]
        if content["status"] != "ok":
            raise RuntimeError(f"kernel probe failed: {content.get('ename')}: "
                               f"{content.get('evalue')}")
        result = content["user_expressions"]["r"]
        if result.get("status") != "ok":
            raise RuntimeError(f"kernel probe expression failed: {result.get('ename')}: "
                               f"{result.get('evalue')}")
        return json.loads(ast.literal_eval(result["data"]["text/plain"]))

    def instrument(self) -> dict:
        """Wrap every shown panel of the kernel's namespace; returns {variable: class name}."""
        return self.evaluate(INSTRUMENT, "__import__('json').dumps(__probe_instrument())")

    def take_log(self, variable: str) -> list[dict]:
        """The panel's updates since the last call, oldest first: wall and CPU seconds of
        compute and apply ({compute_s, compute_cpu_s, apply_s, apply_cpu_s}); clears the
        record."""
        code = (f"__probe_out = {variable}._probe_log[:]\n"
                f"del {variable}._probe_log[:]")
        raw = self.evaluate(code, "__import__('json').dumps(__probe_out)")
        updates, current = [], {}
        for kind, wall, cpu in raw:
            current[f"{kind}_s"], current[f"{kind}_cpu_s"] = wall, cpu
            if kind == "apply":
                updates.append(current)
                current = {}
        if current:  # computed headless (no figure shown): an update without an apply
            updates.append(current)
        return updates


def kernel_id_for(server, notebook: str, timeout_s: float = 60) -> str:
    """The id of the kernel of ``notebook``'s JupyterLab session."""
    deadline = time.monotonic() + timeout_s
    while True:
        for s in server.api("GET", "/api/sessions"):
            if s["path"] == notebook and s.get("kernel"):
                return s["kernel"]["id"]
        if time.monotonic() > deadline:
            raise RuntimeError(f"no kernel session for {notebook}")
        time.sleep(0.2)
