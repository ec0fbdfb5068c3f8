"""Naming figures for issue 20: façade sizes, upper-case constants outside companion/chapters,
the names each of the ten most-read chapter inputs goes by, and import circles.

    .venv/bin/python tools/naming_report.py
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests import architecture  # noqa: E402
FACADES = ("calc", "sim", "plots", "widgets", "specs", "ledger", "grading", "units", "tables")
READERS = ["notebooks", "exercises", "solutions", "companion", "tests", "tools"]


def py_files(*tops):
    for top in tops:
        for p in sorted((ROOT / top).rglob("*.py")):
            if ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts:
                yield p


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def upper_constants():
    """(module, name) for module-level upper-case names bound outside companion/chapters."""
    found = []
    for path in py_files("companion"):
        if "chapters" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.ImportFrom):
                names = [a.asname or a.name for a in node.names]
            for n in names:
                if re.fullmatch(r"_?[A-Z][A-Z0-9_]+", n) and n != "__all__":
                    found.append((module_name(path), n, type(node).__name__))
    return found


def input_names():
    """chapter input 'ch08.X' -> {names it is bound to or read as}, and read counts."""
    from companion import chapters
    values = {f"ch{int(i.chapter):02d}.{i.name}": i for i in chapters.inputs()}
    names = defaultdict(set)
    reads = Counter()
    modules = {module_name(p): p for p in py_files("companion")}
    alias_of = {}          # (module, local name) -> input key
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in (
                    "companion.chapters.ch08", "companion.chapters.ch17"):
                ch = node.module.rsplit(".", 1)[1]
                for a in node.names:
                    key = f"{ch}.{a.name}"
                    if key in values:
                        alias_of[(name, a.asname or a.name)] = key
    # module-level copies Y = X / Y = chNN.X, and re-imports from other companion modules
    changed = True
    while changed:
        changed = False
        for name, path in modules.items():
            tree = ast.parse(path.read_text())
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    val = node.value
                    key = None
                    if isinstance(val, ast.Name):
                        key = alias_of.get((name, val.id))
                    elif isinstance(val, ast.Attribute) and isinstance(val.value, ast.Name) \
                            and val.value.id in ("ch08", "ch17"):
                        key = f"{val.value.id}.{val.attr}" if f"{val.value.id}.{val.attr}" \
                            in values else None
                    if key and (name, node.targets[0].id) not in alias_of:
                        alias_of[(name, node.targets[0].id)] = key
                        changed = True
                if isinstance(node, ast.ImportFrom) and node.module in modules:
                    for a in node.names:
                        key = alias_of.get((node.module, a.name))
                        if key and (name, a.asname or a.name) not in alias_of:
                            alias_of[(name, a.asname or a.name)] = key
                            changed = True
    for (mod, local), key in alias_of.items():
        short = mod.rsplit(".", 1)[-1]
        names[key].add(local if local == key.split(".")[1] else local)
        names[key].add(f"{short}.{local}")
    # reads: attribute reads X.Y anywhere, bare names in their modules
    attr_to_key = defaultdict(set)
    for (mod, local), key in alias_of.items():
        attr_to_key[local].add(key)
    for path in py_files(*READERS):
        text = path.read_text()
        for key in values:
            ch, n = key.split(".")
            reads[key] += len(re.findall(rf"\b{ch}\.{n}\b", text))
        for (mod, local), key in alias_of.items():
            short = mod.rsplit(".", 1)[-1]
            if module_name(path) == mod:
                reads[key] += len(re.findall(rf"(?<![.\w]){local}\b", text)) - 1
            reads[key] += len(re.findall(rf"\b\w+\.{local}\b", text)) if local != key.split(
                ".")[1] else 0
    return values, names, reads, alias_of


def main():
    print("## façade exports (len(__all__))")
    for f in FACADES:
        m = importlib.import_module(f"companion.{f}")
        print(f"  {f:8} {len(getattr(m, '__all__', []))}")
    consts = upper_constants()
    print(f"\n## upper-case module-level names outside companion/chapters: {len(consts)} "
          f"({sum(1 for c in consts if c[2] == 'ImportFrom')} imported, "
          f"{sum(1 for c in consts if c[2] != 'ImportFrom')} assigned)")
    values, names, reads, alias_of = input_names()
    print(f"\n## chapter inputs bound under another module's name: {len(alias_of)} bindings")
    print("## the ten most-read inputs: distinct names (chNN.X counts as one)")
    for key, n in reads.most_common(10):
        spelled = {x.split(".")[-1] for x in names.get(key, ())} | {key.split(".")[1]}
        print(f"  {key:40} reads {n:4}  distinct names {len(spelled)}  "
              f"{sorted(spelled - {key.split('.')[1]})}")
    cyc = architecture.modules_in_cycles(deferred=True)   # the measure the test holds to 0
    print(f"\n## import circles (imports inside functions included): {len(cyc)}")
    for c in cyc:
        print("  " + " <-> ".join(c))




def _module_files(package: str, collect: str) -> dict[str, str]:
    """Id -> file of the module under ``package`` whose ``collect()`` returns it (ledger
    entries, exercises: both are lists their modules return)."""
    pkg = importlib.import_module(package)
    out = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        if callable(getattr(module, collect, None)):
            for item in getattr(module, collect)():
                out[item.id] = str(Path(module.__file__).relative_to(ROOT))
    return out


def files_for(section: str) -> list[str]:
    """The files that hold what ``where(section)`` lists: what a change to it touches."""
    import inspect

    from companion import where
    w = where(section)
    files = set(w.notebooks)
    for kind in ("formulas", "simulator", "explorers", "figures"):
        for name in getattr(w, kind):
            mod, _, attr = name.rpartition(".")
            obj = getattr(importlib.import_module(f"companion.{mod}"), attr)
            files.add(str(Path(inspect.getsourcefile(obj)).relative_to(ROOT)))
    ledger_files = _module_files("companion.ledger_entries", "entries")
    files |= {ledger_files[eid] for eid in w.ledger}
    exercise_files = _module_files("companion.exercises", "exercises")
    for eid in w.exercises:
        files.add(exercise_files[eid])
        files.add(f"solutions/ex{eid.replace('-', '_')}.py")
    files |= {f"companion/{name.rsplit('.', 1)[0].replace('.', '/')}.py" for name in w.inputs}
    return sorted(files)


if __name__ == "__main__":
    if "--files" in sys.argv:
        for f in files_for(sys.argv[sys.argv.index("--files") + 1]):
            print(f)
    else:
        main()
