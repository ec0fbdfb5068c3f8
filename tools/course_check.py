"""A whole nbgrader course cycle through a real JupyterHub on this machine (`make course-check`).

Starts JupyterHub with deploy/one-machine/jupyterhub_config.py (configurable-http-proxy from
npm, one instructor, two students, nbgrader's exchange), then drives everything through the
hub's proxy, as the people would from their browsers, each with a token they got by logging in
with their password:

  instructor  adds the roster, uploads solutions/ notebooks as the assignment's source (Jupyter
              contents API), generates and releases it (nbgrader's formgrader API)
  students    fetch it (nbgrader's assignment-list API, in their own server), work it in their
              own kernel (contents API + kernel websocket): alice fills in every answer, bob
              only part (a) of each notebook; they save and submit
  instructor  collects, autogrades each student, generates and releases feedback
  students    fetch their feedback and read it

and asserts: alice gets every autograded point, bob exactly the points of the part (a) checks
(both expected values come from the nbgrader metadata of the source notebooks), each student's
feedback reached their home and shows that score, a student cannot open the instructor's
server, no solution text and no raising stub is left in the release copy. Per-student variants:
alice's seed comes from her user name (the documented hash, recomputed here), bob's is pinned by
the instructor's companion_seeds.json; each student's kernel must print that seed, the two must
see different given data in every notebook, and the autograded copy of each must show the same
seed and given data the student worked with. No cell may raise in a student's kernel, and bob's
unanswered check cells must say "not yet answered". It prints each student's seed and score
and the timeline (seconds per step).

Run with the course environment's Python (tools/course_env.sh creates it):
    $COURSE_ENV/venv/bin/python tools/course_check.py --env $COURSE_ENV
Every process the hub starts carries COURSE_CHECK_RUN=<random id>; on every exit path (error,
SIGTERM, SIGINT, SIGHUP; SIGKILL of this script too: the hub gets SIGTERM then) the hub is
stopped and whatever still carries the id is killed by PID. Exit status 0 when everything
holds, 1 with "COURSE CHECK FAILED in step ...: why" otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HUB_CONFIG = ROOT / "deploy" / "one-machine" / "jupyterhub_config.py"
ARTIFACTS = ROOT / "artifacts" / "course-check"
COURSE_ID = "llm-inference"
ASSIGNMENT = "ps1"
INSTRUCTOR = "instructor"
FULL, PARTIAL = "alice", "bob"          # alice answers everything, bob only part (a)
# Seeds: alice's comes from her user name (the documented hash, recomputed below), bob's is
# pinned by the instructor's companion_seeds.json, so both ways a seed is chosen are used.
PINNED = {PARTIAL: 3}
PARTIAL_PARTS = ("a",)                  # bob fills "<part>_answer"; "<part>_check" then passes
DEFAULT_NOTEBOOKS = ("solutions/ex8_1.ipynb", "solutions/ex17_1.ipynb")
MARKER = "COURSE_CHECK_RUN"
SOLUTION_MARKERS = {"### BEGIN SOLUTION", "### END SOLUTION"}


class CheckFailed(Exception):
    """One step of the cycle did not do what it should."""


# --- timeline ------------------------------------------------------------------------------------

class Timeline:
    def __init__(self):
        self.steps: list[tuple[str, float]] = []
        self.current = "setup"
        self.t0 = time.perf_counter()

    def step(self, name: str):
        timeline = self

        class _Step:
            def __enter__(self):
                timeline.current = name
                self.start = time.perf_counter()
                print(f"[{time.perf_counter() - timeline.t0:7.1f} s] {name} ...", flush=True)

            def __exit__(self, exc_type, exc, tb):
                if exc_type is None:
                    timeline.steps.append((name, time.perf_counter() - self.start))
                return False

        return _Step()

    def table(self) -> str:
        width = max(len(n) for n, _ in self.steps) if self.steps else 10
        lines = ["course check timeline (seconds):"]
        lines += [f"  {name:<{width}}  {secs:6.1f}" for name, secs in self.steps]
        lines.append(f"  {'total':<{width}}  {sum(s for _, s in self.steps):6.1f}")
        return "\n".join(lines)


# --- HTTP ----------------------------------------------------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect to the login page is an answer to inspect, not to follow


_OPENER = urllib.request.build_opener(_NoRedirect)


def http(method: str, url: str, *, token: str | None = None, body=None, timeout: float = 120,
         raw: bool = False):
    """(status, decoded JSON or text) of one request; never raises for an HTTP status."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"token {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    text = payload.decode("utf-8", "replace")
    if raw:
        return status, text
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, text


def expect(status_and_body, what: str, ok=(200, 201, 202, 204)):
    status, body = status_and_body
    if status not in ok:
        raise CheckFailed(f"{what}: HTTP {status}: {str(body)[:800]}")
    return body


def nbgrader_ok(body, what: str):
    """nbgrader's API answers {"success": bool, "log"/"error"/"value": text}."""
    if not isinstance(body, dict) or not body.get("success"):
        detail = body.get("error") or body.get("value") or body.get("log") if isinstance(
            body, dict) else body
        raise CheckFailed(f"{what} failed in nbgrader: {str(detail)[-1500:]}")
    return body


def documented_seed(name: str) -> int:
    """A user name's seed as docs/instructors.md states it (not read from the companion)."""
    digest = hashlib.sha256(name.strip().lower().encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % 999_999


def expected_seed(name: str) -> tuple[int, str]:
    if name in PINNED:
        return PINNED[name], "pinned in companion_seeds.json"
    return documented_seed(name), "from the user name"


SEED_LINE = re.compile(r"^Seed (\d+) \(", re.M)


def given_output(nb, who: str, name: str) -> tuple[int, str]:
    """(the seed the given-data cell printed, the given data it printed) of a notebook."""
    cell = next((c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "given"),
                None)
    if cell is None:
        raise CheckFailed(f"{who}'s {name} has no given-data cell")
    text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")
    found = SEED_LINE.findall(text)
    if len(found) != 1:
        raise CheckFailed(f"{who}'s {name}: the given-data cell printed no seed line: {text[:300]!r}")
    return int(found[0]), SEED_LINE.sub("", text, count=1).split("\n", 1)[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- processes -----------------------------------------------------------------------------------

def processes_with_marker(run_id: str) -> list[int]:
    """PIDs of processes whose environment carries MARKER=run_id (the hub and all below it)."""
    needle = f"{MARKER}={run_id}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except (OSError, PermissionError):
            continue
    return found


def kill_marked(run_id: str, grace_s: float = 10) -> list[str]:
    """SIGTERM, then SIGKILL, every process still carrying the run's marker; what was killed."""
    pids = processes_with_marker(run_id)
    described = []
    for pid in pids:
        try:
            cmd = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                   .decode(errors="replace").strip())
            described.append(f"{pid} {cmd[:120]}")
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, OSError):
            pass
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists() and not _is_zombie(p)]
        time.sleep(0.2)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return described


def memory_mib(run_id: str, user: str) -> dict[str, float]:
    """Peak resident memory (VmHWM, MiB) of the user's server and of their kernels, summed by
    kind: the figure a per-user memory limit has to cover (deploy/README.md)."""
    needle = f"{MARKER}={run_id}".encode() + b"\0"
    owner = f"JUPYTERHUB_USER={user}".encode() + b"\0"
    found = {"server": 0.0, "kernel": 0.0}
    for pid in processes_with_marker(run_id):
        proc = Path(f"/proc/{pid}")
        try:
            environ = (proc / "environ").read_bytes()
            if needle not in environ or owner not in environ:
                continue
            cmd = (proc / "cmdline").read_bytes()
            peak_kib = next(int(line.split()[1]) for line in
                            (proc / "status").read_text().splitlines()
                            if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            continue
        kind = "kernel" if b"ipykernel" in cmd else "server"
        found[kind] += peak_kib / 1024
    return found


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _die_with_parent():
    """In the hub's process: get SIGTERM when this script dies, even by SIGKILL (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Hub:
    """A JupyterHub (and its proxy) in a temporary folder, on free loopback ports."""

    def __init__(self, env_dir: Path, work: Path, run_id: str):
        self.env_dir, self.work, self.run_id = env_dir, work, run_id
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(16)
        self.log_path = work / "hub.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 120):
        env = dict(os.environ)
        env.update({
            "COURSE_WORK": str(self.work), "COURSE_ENV": str(self.env_dir),
            "COURSE_ID": COURSE_ID, "COURSE_INSTRUCTOR": INSTRUCTOR,
            "COURSE_STUDENTS": f"{FULL},{PARTIAL}", "COURSE_PASSWORD": self.password,
            "COURSE_PORT": str(self.port), "COURSE_HUB_PORT": str(free_port()),
            "COURSE_PROXY_API_PORT": str(free_port()), MARKER: self.run_id,
            "COURSE_SEEDS": json.dumps(PINNED),
        })
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(self.env_dir / "venv" / "bin" / "jupyterhub"), "-f", str(HUB_CONFIG)],
            cwd=self.work, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CheckFailed(f"jupyterhub exited with status {self.proc.returncode}")
            try:
                status, body = http("GET", f"{self.url}/hub/api/", timeout=5)
                if status == 200 and isinstance(body, dict) and "version" in body:
                    return body["version"]
            except OSError:
                pass
            time.sleep(0.5)
        raise CheckFailed(f"the hub did not answer on {self.url} within {timeout_s:.0f} s")

    def stop(self, timeout_s: float = 60) -> list[str]:
        """Stop the hub (it stops its servers and proxy), then kill whatever is left."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return kill_marked(self.run_id)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no hub log)"


# --- one person at the hub -----------------------------------------------------------------------

class Person:
    """A user who logged in: their API token, their server's URL."""

    def __init__(self, hub: Hub, name: str):
        self.hub, self.name = hub, name
        self.server = f"{hub.url}/user/{name}"
        body = expect(http("POST", f"{hub.url}/hub/api/users/{name}/tokens", body={
            "auth": {"username": name, "password": hub.password},
            "note": "course check", "expires_in": 3600}), f"{name} logging in")
        self.token = body["token"]
        self.peak_mib: dict[str, float] = {}  # filled while the student works

    def call(self, method, path, body=None, *, timeout=120, what=None, ok=(200, 201, 202, 204)):
        return expect(http(method, f"{self.server}{path}", token=self.token, body=body,
                           timeout=timeout), what or f"{self.name}: {method} {path}", ok)

    def request_server(self):
        expect(http("POST", f"{self.hub.url}/hub/api/users/{self.name}/server",
                    token=self.token), f"{self.name} starting a server", ok=(201, 202, 400))

    def server_ready(self) -> bool:
        body = expect(http("GET", f"{self.hub.url}/hub/api/users/{self.name}",
                           token=self.token), f"{self.name}'s hub record")
        server = (body.get("servers") or {}).get("")
        return bool(server and server.get("ready"))

    # contents API (paths relative to the server's root, the user's home)
    def get_notebook(self, path):
        return nbformat.from_dict(
            self.call("GET", f"/api/contents/{quote(path)}?content=1")["content"])

    def put_notebook(self, path, nb):
        self.call("PUT", f"/api/contents/{quote(path)}",
                  {"type": "notebook", "format": "json", "content": nb})

    def get_text(self, path):
        return self.call("GET", f"/api/contents/{quote(path)}?type=file&format=text&content=1"
                         )["content"]

    # nbgrader's assignment list (student side)
    def assignments(self):
        body = self.call("GET", f"/assignments?course_id={COURSE_ID}")
        if not body.get("success"):
            raise CheckFailed(f"{self.name}'s assignment list: {str(body.get('value'))[-800:]}")
        return [a for a in body["value"] if a["assignment_id"] == ASSIGNMENT]

    def assignment_action(self, action, timeout=300):
        return self.call("POST", f"/assignments/{action}",
                         {"course_id": COURSE_ID, "assignment_id": ASSIGNMENT}, timeout=timeout)

    # nbgrader's formgrader (instructor side)
    def formgrader(self, method, path, body=None, timeout=600):
        return self.call(method, f"/formgrader/api/{path}", body, timeout=timeout)


# --- working a notebook in a kernel --------------------------------------------------------------

async def _run_cells(person: Person, kernel_id: str, sources: list[str],
                     timeout_s: float) -> list[tuple[list, int | None]]:
    """Execute each source in the kernel, one after the other (like a student pressing
    Shift+Enter through the notebook, past errors); its outputs and execution count."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    session = uuid.uuid4().hex
    url = (f"ws://127.0.0.1:{person.hub.port}/user/{person.name}/api/kernels/{kernel_id}"
           f"/channels?session_id={session}")
    conn = await websocket_connect(HTTPRequest(
        url, headers={"Authorization": f"token {person.token}"}, request_timeout=60))

    def message(msg_type, content):
        msg_id = uuid.uuid4().hex
        return msg_id, json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": session,
                       "username": person.name, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
            "buffers": []})

    async def until_done(msg_id, outputs=None):
        reply, idle, count = False, False, None
        while not (reply and idle):
            raw = await asyncio.wait_for(conn.read_message(), timeout_s)
            if raw is None:
                raise CheckFailed(f"{person.name}'s kernel websocket closed")
            if isinstance(raw, bytes):
                continue  # binary frames carry widget buffers; nothing here needs them
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if msg["channel"] == "shell" and kind.endswith("_reply"):
                reply = True
                count = msg["content"].get("execution_count")
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                idle = True
            elif outputs is not None and kind in (
                    "stream", "display_data", "execute_result", "error"):
                outputs.append(nbformat.v4.output_from_msg(msg))
        return count

    try:
        msg_id, text = message("kernel_info_request", {})
        await conn.write_message(text)
        await until_done(msg_id)
        results = []
        for source in sources:
            outputs: list = []
            msg_id, text = message("execute_request", {
                "code": source, "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
            await conn.write_message(text)
            results.append((outputs, await until_done(msg_id, outputs)))
        return results
    finally:
        conn.close()


def answer_source(solution_cell) -> str:
    """What a student who knows the answer types: the solution without nbgrader's markers."""
    return "\n".join(line for line in solution_cell.source.splitlines()
                     if line.strip() not in SOLUTION_MARKERS)


def work_notebook(person: Person, path: str, solution_nb, fill_ids: set[str] | None):
    """Open the fetched notebook, write the answers of the cells in fill_ids (None: all),
    run every code cell in the student's own kernel, save it; the errored cells' grade ids and
    the notebook with its outputs."""
    nb = person.get_notebook(path)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c for c in solution_nb.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and (fill_ids is None or meta["grade_id"] in fill_ids):
            cell.source = answer_source(solutions[meta["grade_id"]])
    session = person.call("POST", "/api/sessions", {
        "path": path, "name": path.rsplit("/", 1)[-1], "type": "notebook",
        "kernel": {"name": "python3"}}, what=f"{person.name} opening a kernel for {path}")
    try:
        code_cells = [c for c in nb.cells if c.cell_type == "code"]
        results = asyncio.run(_run_cells(person, session["kernel"]["id"],
                                         [c.source for c in code_cells], timeout_s=300))
        peak = memory_mib(person.hub.run_id, person.name)
        for kind, mib in peak.items():
            person.peak_mib[kind] = max(person.peak_mib.get(kind, 0.0), mib)
    finally:
        person.call("DELETE", f"/api/sessions/{session['id']}", ok=(204, 404))
    errored = []
    for cell, (outputs, count) in zip(code_cells, results):
        cell.outputs, cell.execution_count = outputs, count
        if any(o.output_type == "error" for o in outputs):
            errored.append(cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id")))
    person.put_notebook(path, nb)
    return errored, nb


# --- expected grades, from the source notebooks' nbgrader metadata -------------------------------

def autograded_points(nb, only_ids: set[str] | None = None) -> float:
    """Points of the code cells nbgrader grades automatically (test cells and autograded
    answers), all of them or those in only_ids."""
    total = 0.0
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and (
                only_ids is None or meta["grade_id"] in only_ids):
            total += float(meta.get("points", 0))
    return total


def partial_ids(name: str, nb) -> tuple[set[str], set[str]]:
    """bob's answer cells and the check cells they satisfy, checked to exist in nb."""
    ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    answers = {f"{p}_answer" for p in PARTIAL_PARTS}
    checks = {f"{p}_check" for p in PARTIAL_PARTS}
    missing = (answers | checks) - ids
    if missing:
        raise CheckFailed(f"the partial student needs cells {sorted(missing)} in "
                          f"{name}; pick notebooks that have "
                          f"parts {PARTIAL_PARTS} as '<part>_answer' + '<part>_check'")
    return answers, checks


FEEDBACK_SCORE = re.compile(r"<h4>\s*(?P<nb>[^<(]+?)\s*\(Score:\s*(?P<score>[\d.]+)\s*/\s*"
                            r"(?P<max>[\d.]+)\)\s*</h4>")


# --- the cycle -----------------------------------------------------------------------------------

def cycle(hub: Hub, tl: Timeline, notebooks: list[Path]) -> dict:
    sources = {p.stem: nbformat.read(p, as_version=4) for p in notebooks}
    expected = {FULL: {}, PARTIAL: {}}
    bob_answers = set()
    for name, nb in sources.items():
        answers, checks = partial_ids(name, nb)
        bob_answers |= answers
        expected[FULL][name] = autograded_points(nb)
        expected[PARTIAL][name] = autograded_points(nb, checks)

    with tl.step("log in 3 users, start their servers"):
        people = {n: Person(hub, n) for n in (INSTRUCTOR, FULL, PARTIAL)}
        # all at once, as a class does: the hub holds each request up to 10 s before it
        # answers "pending", so one after the other would only add waiting
        with ThreadPoolExecutor(len(people)) as pool:
            list(pool.map(Person.request_server, people.values()))
        deadline = time.monotonic() + 240
        waiting = set(people)
        while waiting:
            if time.monotonic() > deadline:
                raise CheckFailed(f"servers not ready after 240 s: {sorted(waiting)}")
            if hub.proc.poll() is not None:
                raise CheckFailed("the hub exited while servers were starting")
            waiting = {n for n in waiting if not people[n].server_ready()}
            time.sleep(0.5)
        for p in people.values():
            p.call("GET", "/api/status", what=f"{p.name}'s server through the proxy")
    teacher, alice, bob = people[INSTRUCTOR], people[FULL], people[PARTIAL]

    with tl.step("a student is kept out of the instructor's server"):
        status, _ = http("GET", f"{teacher.server}/api/contents", token=alice.token, timeout=30)
        if status in (200, 201):
            raise CheckFailed(f"{FULL}'s token opened {INSTRUCTOR}'s server (HTTP {status})")
        access = {"student at the instructor's server": status}
        status, _ = http("GET", f"{alice.server}/formgrader/api/status", token=alice.token)
        if status == 200:
            raise CheckFailed(f"the formgrader is enabled in {FULL}'s server")
        access["formgrader in a student's server"] = status

    with tl.step("instructor: roster, assignment, upload solutions/ as source"):
        for sid in (FULL, PARTIAL):
            teacher.formgrader("PUT", f"student/{sid}",
                               {"first_name": sid.title(), "last_name": "Student", "email": None})
        teacher.formgrader("PUT", f"assignment/{ASSIGNMENT}", {})
        for name, nb in sources.items():
            teacher.put_notebook(f"course/source/{ASSIGNMENT}/{name}.ipynb", nb)

    with tl.step("instructor: generate_assignment"):
        nbgrader_ok(teacher.formgrader("POST", f"assignment/{ASSIGNMENT}/assign"),
                    "generate_assignment")
        for name in sources:
            released = teacher.get_notebook(f"course/release/{ASSIGNMENT}/{name}.ipynb")
            if any("BEGIN SOLUTION" in c.source or "BEGIN HIDDEN TESTS" in c.source
                   for c in released.cells):
                raise CheckFailed(f"solution text left in the release copy of {name}")
            if any("NotImplementedError" in c.source for c in released.cells):
                raise CheckFailed(f"the release copy of {name} has nbgrader's raising stub: "
                                  "the instructor's nbgrader_config.py lacks "
                                  "companion.course.configure(c)")

    with tl.step("instructor: release_assignment"):
        nbgrader_ok(teacher.formgrader("POST", f"assignment/{ASSIGNMENT}/release"), "release")

    with tl.step("students: see it released, fetch it"):
        for s in (alice, bob):
            if not any(a["status"] == "released" for a in s.assignments()):
                raise CheckFailed(f"{s.name} does not see {ASSIGNMENT} as released")
            listing = s.assignment_action("fetch")
            fetched = [a for a in listing.get("value", []) if a["assignment_id"] == ASSIGNMENT
                       and a["status"] == "fetched"]
            if not fetched:
                raise CheckFailed(f"{s.name}'s fetch did not bring {ASSIGNMENT} home: "
                                  f"{str(listing)[:800]}")
            got = {Path(n["path"]).stem for n in fetched[0]["notebooks"]}
            if got != set(sources):
                raise CheckFailed(f"{s.name} fetched {sorted(got)}, expected {sorted(sources)}")

    errors = {}
    seen = {}      # student -> notebook -> (seed, given data) as their own kernel printed them
    for s, fill in ((alice, None), (bob, bob_answers)):
        with tl.step(f"{s.name}: answer, run in own kernel, save"):
            errors[s.name], seen[s.name] = {}, {}
            for name, nb in sources.items():
                errored, worked = work_notebook(s, f"{ASSIGNMENT}/{name}.ipynb", nb, fill)
                errors[s.name][name] = errored
                if "given" in errored:
                    raise CheckFailed(f"the given-data cell of {name} failed in {s.name}'s "
                                      "kernel: is the companion installed in the single-user "
                                      "environment?")
                # a calm run: whatever is not answered yet, no cell raises in a student's kernel
                if errored:
                    raise CheckFailed(f"cells {errored} of {name} raised in {s.name}'s kernel")
                if fill is not None:
                    open_checks = [c for c in worked.cells if c.cell_type == "code"
                                   and c.metadata.get("nbgrader", {}).get("grade")
                                   and c.metadata["nbgrader"]["grade_id"] not in
                                   {f"{p}_check" for p in PARTIAL_PARTS}]
                    quiet = [c.metadata["nbgrader"]["grade_id"] for c in open_checks
                             if "not yet answered" not in json.dumps(c.outputs)]
                    if not open_checks or quiet:
                        raise CheckFailed(f"{s.name}'s unanswered check cells of {name} do not "
                                          f"say 'not yet answered': {quiet}")
                seed, data = given_output(worked, s.name, name)
                want, _ = expected_seed(s.name)
                if seed != want:
                    raise CheckFailed(f"{s.name}'s kernel gave seed {seed} for {name}, expected "
                                      f"{want} ({expected_seed(s.name)[1]})")
                seen[s.name][name] = (seed, data)
    for name in sources:
        if seen[FULL][name][1] == seen[PARTIAL][name][1]:
            raise CheckFailed(f"{FULL} and {PARTIAL} got the same given data in {name} "
                              f"(seeds {seen[FULL][name][0]} and {seen[PARTIAL][name][0]})")

    with tl.step("students: submit"):
        for s in (alice, bob):
            body = s.assignment_action("submit")
            if not body.get("success"):
                raise CheckFailed(f"{s.name}'s submit: {str(body.get('value'))[-800:]}")

    with tl.step("instructor: collect"):
        nbgrader_ok(teacher.formgrader("POST", f"assignment/{ASSIGNMENT}/collect"), "collect")

    for sid in (FULL, PARTIAL):
        with tl.step(f"instructor: autograde {sid}"):
            nbgrader_ok(teacher.formgrader("POST", f"submission/{ASSIGNMENT}/{sid}/autograde"),
                        f"autograde of {sid}")

    with tl.step("instructor: generate_feedback"):
        nbgrader_ok(teacher.formgrader("POST", f"assignment/{ASSIGNMENT}/generate_feedback"),
                    "generate_feedback")
    with tl.step("instructor: release_feedback"):
        nbgrader_ok(teacher.formgrader("POST", f"assignment/{ASSIGNMENT}/release_feedback"),
                    "release_feedback")

    with tl.step("instructor: each student graded against their own seed"):
        for sid in (FULL, PARTIAL):
            for name in sources:
                graded = teacher.get_notebook(f"course/autograded/{sid}/{ASSIGNMENT}/{name}.ipynb")
                seed, data = given_output(graded, f"the autograded copy of {sid}", name)
                if (seed, data) != seen[sid][name]:
                    raise CheckFailed(f"{sid}'s {name} was graded with seed {seed}, but {sid} "
                                      f"worked with seed {seen[sid][name][0]}"
                                      + ("" if seed != seen[sid][name][0] else
                                         " (same seed, other given data)"))

    submissions = {s["student"]: s for s in teacher.formgrader("GET", f"submissions/{ASSIGNMENT}")}
    grades = {}
    for sid in (FULL, PARTIAL):
        sub = submissions.get(sid)
        if not sub or not sub.get("autograded"):
            raise CheckFailed(f"no autograded submission of {sid} in the gradebook: {sub}")
        want = sum(expected[sid].values())
        seed, how = expected_seed(sid)
        grades[sid] = {"score": float(sub["score"]), "max_score": float(sub["max_score"]),
                       "expected": want, "seed": seed, "seed_from": how}
        if abs(float(sub["score"]) - want) > 1e-9:
            raise CheckFailed(f"{sid} scored {sub['score']} of {sub['max_score']}, expected "
                              f"{want} (per notebook: {expected[sid]})")

    feedback = {}
    with tl.step("students: fetch and read feedback"):
        for s in (alice, bob):
            s.assignment_action("fetch_feedback")
            submitted = [a for a in s.assignments() if a["status"] == "submitted"]
            latest = submitted[0]["submissions"][-1] if submitted else {}
            if not latest.get("has_local_feedback"):
                raise CheckFailed(f"{s.name} has no feedback after fetch_feedback: {latest}")
            folder = latest["local_feedback_path"]  # relative to the student's home
            feedback[s.name] = {}
            for name in sources:
                html = s.get_text(f"{folder}/{name}.html")
                match = FEEDBACK_SCORE.search(html)
                if not match:
                    raise CheckFailed(f"{s.name}'s feedback for {name} shows no score")
                score = float(match["score"])
                feedback[s.name][name] = f"{score:g} / {float(match['max']):g}"
                if abs(score - expected[s.name][name]) > 0.01:
                    raise CheckFailed(f"{s.name}'s feedback for {name} says {score}, expected "
                                      f"{expected[s.name][name]}")
    return {"grades": grades, "feedback": feedback, "expected_per_notebook": expected,
            "given_data_differ": sorted(sources),
            "cells_that_raised": errors, "refused": access,
            "peak_memory_mib": {s.name: s.peak_mib for s in (alice, bob)}}


def versions(env_dir: Path) -> dict:
    from importlib.metadata import version  # importing nbgrader itself takes seconds
    chp = env_dir / "proxy" / "node_modules" / "configurable-http-proxy" / "package.json"
    return {"jupyterhub": version("jupyterhub"), "nbgrader": version("nbgrader"),
            "configurable-http-proxy": json.loads(chp.read_text())["version"]}


def _raise_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", type=Path, default=Path(os.environ.get(
        "COURSE_ENV", ROOT / ".state" / "course-env")), help="the folder tools/course_env.sh made")
    parser.add_argument("--notebooks", nargs="+", type=Path,
                        default=[ROOT / p for p in DEFAULT_NOTEBOOKS],
                        help="solution notebooks that make up the assignment")
    parser.add_argument("--summary", type=Path, help="write the timeline and grades as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_on_signal)
    env_dir = args.env.resolve()
    if not (env_dir / "venv" / "bin" / "jupyterhub").exists():
        print(f"COURSE CHECK FAILED in step 'setup': no JupyterHub in {env_dir}/venv; run "
              f"tools/course_env.sh {env_dir}")
        return 1
    (ARTIFACTS / "hub.log").unlink(missing_ok=True)  # a log there belongs to this run's failure
    run_id = os.environ.get(MARKER) or uuid.uuid4().hex
    work = Path(tempfile.mkdtemp(prefix="course-check-"))
    hub = Hub(env_dir, work, run_id)
    tl = Timeline()
    summary = {"ok": False, "versions": versions(env_dir), "run_id": run_id}
    print(f"course check: JupyterHub {summary['versions']['jupyterhub']}, nbgrader "
          f"{summary['versions']['nbgrader']}, configurable-http-proxy "
          f"{summary['versions']['configurable-http-proxy']}; hub on {hub.url}; work in {work}",
          flush=True)
    failure = None
    try:
        with tl.step("start hub and proxy"):
            hub.start()
        summary.update(cycle(hub, tl, [p.resolve() for p in args.notebooks]))
    except CheckFailed as err:
        failure = f"COURSE CHECK FAILED in step '{tl.current}': {err}"
    except BaseException as err:  # SystemExit from a signal, KeyboardInterrupt, a bug
        failure = f"COURSE CHECK FAILED in step '{tl.current}': {type(err).__name__}: {err}"
        if not isinstance(err, (SystemExit, KeyboardInterrupt)):
            import traceback
            traceback.print_exc()
    finally:
        with tl.step("stop hub, servers, kernels, proxy"):
            killed = hub.stop()
        left = processes_with_marker(run_id)
        summary["killed_after_hub_stop"], summary["left_running"] = killed, left
        if failure:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(hub.log_path, ARTIFACTS / "hub.log") if hub.log_path.exists() else None
            print(f"--- last lines of the hub's log (whole log: {ARTIFACTS / 'hub.log'}) ---")
            print(hub.log_tail())
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    if killed:
        print(f"cleanup: {len(killed)} process(es) outlived the hub and were killed: {killed}")
    if left and not failure:
        failure = f"COURSE CHECK FAILED in step 'cleanup': processes still running: {left}"
    summary["timeline"] = tl.steps
    summary["total_s"] = sum(s for _, s in tl.steps)
    print(tl.table())
    if failure is None:
        g = summary["grades"]
        for sid in (FULL, PARTIAL):
            print(f"  {sid:<6} seed {g[sid]['seed']:>6} ({g[sid]['seed_from']}): score "
                  f"{g[sid]['score']:g} / {g[sid]['max_score']:g}, expected "
                  f"{g[sid]['expected']:g}; graded against the seed {sid} worked with")
        print(f"  given data differ between {FULL} and {PARTIAL} in "
              f"{', '.join(summary['given_data_differ'])}")
        print(f"COURSE CHECK OK: {FULL} {g[FULL]['score']:g}/{g[FULL]['max_score']:g} "
              f"(all answers), {PARTIAL} {g[PARTIAL]['score']:g}/{g[PARTIAL]['max_score']:g} "
              f"(part {', '.join(PARTIAL_PARTS)} only, expected {g[PARTIAL]['expected']:g}); "
              f"feedback reached both: {summary['feedback']}")
        summary["ok"] = True
    else:
        print(failure)
        summary["failure"] = failure
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(summary, indent=1, default=str))
    return 0 if failure is None else 1


if __name__ == "__main__":
    sys.exit(main())
