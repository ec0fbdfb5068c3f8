"""Measurements of the package's structure, shared by tests/test_architecture.py and the report.

Each function reads source files (ast), imports nothing of the package but ``companion.chapters``
and returns plain data, so ``python tests/architecture.py`` prints the figures of any checkout.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "companion"

# Unit names a literal may be multiplied by (companion.units), folded into the literal's value.
UNIT_NAMES = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6,
              "GB": 1e9, "TB": 1e12, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "TFLOP": 1e12,
              "GFLOP": 1e9}
# Display scales by what an input measures (its name's suffix, or a dict key's): ms / us for
# times, GiB / GB / MB / TB for sizes and rates, % for fractions, billions for params.
_TIME = (1.0, 1e-3, 1e-6)
_SIZE = (1.0, 2**30, 1e6, 1e9, 1e12)
_FRACTION = (1.0, 0.01)
DISPLAY_SCALES = (("_S", _TIME), ("_S_CASES", _TIME), ("_BYTES", _SIZE), ("_PER_S", _SIZE),
                  ("_PARAMS", (1.0, 1e9)), ("_PROB", _FRACTION), ("EFFICIENCY", _FRACTION),
                  ("_SHARE", _FRACTION), ("_SHARES", _FRACTION), ("_FRACTION", _FRACTION),
                  ("ACCURACY", _FRACTION), ("_MBU", _FRACTION), ("_MFU", _FRACTION),
                  ("ACCEPTANCE", _FRACTION))


def display_scales(name: str) -> tuple:
    """The scales a quantity called ``name`` is shown in (1 when the name says nothing)."""
    upper = name.upper()
    for suffix, scales in DISPLAY_SCALES:
        if upper.endswith(suffix):
            return scales
    return (1.0,)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> path, for every module of companion/."""
    out = {}
    for path in sorted((root / "companion").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _walk(tree: ast.AST, deferred: bool):
    """Every node of ``tree``; without ``deferred``, not those inside a function body (an
    import there runs when the function is called, not when the module is imported)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if deferred or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda)):
                stack.append(child)


def _imports(tree: ast.AST, name: str, known: dict,
             deferred: bool = True) -> list[tuple[str, str, int]]:
    """(imported module, imported name or "", line) of every companion import in a module,
    at module level and (with ``deferred``) inside functions."""
    found = []
    package = name if known.get(name, Path()).name == "__init__.py" else name.rpartition(".")[0]
    for node in _walk(tree, deferred):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            if not base.startswith("companion"):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full if full in known else base,
                              "" if full in known else alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("companion"):
                    found.append((alias.name, "", node.lineno))
    return found


def import_graph(root: Path = ROOT, deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the companion modules it imports: when it is imported, or (``deferred``) also
    inside its functions."""
    known = modules(root)
    graph = {}
    for name, path in known.items():
        graph[name] = {m for m, _, _ in _imports(ast.parse(path.read_text()), name, known,
                                                 deferred)
                       if m in known and m != name}
    return graph


def modules_in_cycles(root: Path = ROOT, deferred: bool = False) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted: of the
    imports that run when a module is imported, or (``deferred``) of all imports, those inside
    functions included (a function-level import is how a module reaches one that imports it)."""
    graph = import_graph(root, deferred)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def private_imports(root: Path = ROOT) -> list[str]:
    """"module:line imports name from other" for every private name (or private module)
    imported from another module of the package."""
    known = modules(root)
    found = []
    for name, path in known.items():
        for module, imported, line in _imports(ast.parse(path.read_text()), name, known):
            parts = module.split(".") + ([imported] if imported else [])
            private = [p for p in parts if p.startswith("_") and not p.startswith("__")]
            if private and module != name:
                found.append(f"{name}:{line} imports {'.'.join(parts)}")
    return found


def largest_modules(root: Path = ROOT, n: int = 5) -> list[tuple[int, str]]:
    sizes = [(len(p.read_text().splitlines()), name) for name, p in modules(root).items()]
    return sorted(sizes, reverse=True)[:n]


# --- façades ---------------------------------------------------------------------------------

# the façades and the readers whose use decides what they list
FACADE_FILES = {"calc": "companion/calc.py", "sim": "companion/sim/__init__.py",
                "plots": "companion/plots.py", "widgets": "companion/widgets.py"}
READERS = ("notebooks/**/*.py", "exercises/*.py", "solutions/*.py", "dashboards/**/*.py")

# The public API promised to students and instructors (/work/shared/design.md §3): each name on
# the module students read it from. A façade lists these beside what its readers use;
# tests/test_public_api.py pins each one with a value the chapters print.
PROMISED = {
    "specs": ("Model", "Hardware", "QWEN3_8B", "LLAMA_8B", "LLAMA_70B", "RTX_PRO_6000",
              "H100_SXM", "model_from_hf_config"),
    "calc": ("kv_bytes_per_token", "kv_bytes", "max_concurrent", "read_bytes_per_output_token",
             "kv_crossover_batch", "ridge_point", "attention_pairs", "quantized_bytes",
             "speculative_expected_tokens", "pipeline_bubble", "static_batch_utilization",
             "amdahl_speedup", "cache_retention_value"),
    "sim": ("Request", "RoundTimeModel", "simulate", "Result"),
    "ledger": ("entries",),
    "grading": ("params", "check"),
}


def _facade_bindings(tree: ast.Module) -> dict[str, str]:
    """Local name -> façade, for the façades a file imports (``from companion import calc``,
    ``import companion.calc as calc``); a name bound to anything else is not a façade."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "companion":
            for a in node.names:
                if a.name in FACADE_FILES:
                    bound[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if len(parts) == 2 and parts[0] == "companion" and parts[1] in FACADE_FILES \
                        and a.asname:
                    bound[a.asname] = parts[1]
    return bound


def facade_reads(tree: ast.Module) -> dict[str, set[str]]:
    """Façade -> the names a parsed file reads from it (``calc.X`` or
    ``from companion.calc import X``)."""
    out: dict[str, set[str]] = {f: set() for f in FACADE_FILES}
    bound = _facade_bindings(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound):
            out[bound[node.value.id]].add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                "companion.") and node.module.split(".", 1)[1] in FACADE_FILES:
            out[node.module.split(".", 1)[1]] |= {a.name for a in node.names}
    # sim.scheduler and friends are the package's submodules, not names the façade lists
    out["sim"] = {n for n in out["sim"] if not (ROOT / "companion" / "sim" / f"{n}.py").exists()}
    return out


def reader_names(root: Path = ROOT) -> dict[str, set[str]]:
    """Façade -> the names the notebooks, exercises, solutions, dashboards and README.md read
    from it: what the façade is for."""
    out: dict[str, set[str]] = {f: set() for f in FACADE_FILES}
    for pattern in READERS:
        for path in root.glob(pattern):
            for f, names in facade_reads(ast.parse(path.read_text(encoding="utf-8"))).items():
                out[f] |= names
    readme = (root / "README.md").read_text(encoding="utf-8")
    for f in FACADE_FILES:
        out[f] |= set(re.findall(rf"(?<![\w.]){f}\.([A-Za-z_]\w*)", readme))
    out["sim"] = {n for n in out["sim"] if not (root / "companion" / "sim" / f"{n}.py").exists()}
    return out


def facade_names(root: Path = ROOT) -> dict[str, set[str]]:
    """Façade -> the names it must list: those its readers use and those promised."""
    used = reader_names(root)
    return {f: used[f] | set(PROMISED.get(f, ())) for f in FACADE_FILES}


def literal_all(tree: ast.Module) -> list[str] | None:
    """The module's ``__all__`` if it is one literal list or tuple of strings, else None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str)
                    for e in node.value.elts):
                return [e.value for e in node.value.elts]
            return None
    return None


def _is_type_checking(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and not node.orelse
            and (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"))


def _lazy_homes(node: ast.AST) -> dict[str, list[str]] | None:
    """``{home: [names]}`` of ``__all__, __getattr__, __dir__ = attach(__name__, {...})`` with
    a literal dict of string tuples, else None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and [getattr(t, "id", None) for t in node.targets[0].elts]
            == ["__all__", "__getattr__", "__dir__"]
            and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "attach"
            and len(node.value.args) == 2 and isinstance(node.value.args[1], ast.Dict)):
        return None
    homes = {}
    for key, value in zip(node.value.args[1].keys, node.value.args[1].values):
        if not (isinstance(key, ast.Constant) and isinstance(value, (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                        for e in value.elts)):
            return None
        homes[key.value] = [e.value for e in value.elts]
    return homes


def facade_listing(tree: ast.Module, rel: str = "") -> tuple[dict, dict, list[str]]:
    """What a façade's source says: ``(listed, imported, problems)`` where ``listed`` maps each
    name it exports to its home module and ``imported`` each name it imports (or imports under
    ``if TYPE_CHECKING:``) to its home. An eager façade imports its names and lists them in a
    literal ``__all__``; a lazy one (``companion.lazy.attach``) names their homes in a literal
    dict and repeats the imports under ``TYPE_CHECKING`` for type checkers."""
    problems: list[str] = []
    listed: dict[str, str] = {}
    imported: dict[str, str] = {}
    literal = literal_all(tree)

    def take_imports(node):
        if any(a.name == "*" for a in node.names):
            problems.append(f"{rel}:{node.lineno}: star import")
        for a in node.names:
            imported[a.asname or a.name] = node.module

    lazy = False
    for node in tree.body:
        homes = _lazy_homes(node)
        if isinstance(node, ast.ImportFrom) and node.module not in ("__future__", "typing",
                                                                     "companion.lazy"):
            take_imports(node)
        elif isinstance(node, ast.ImportFrom):
            pass
        elif _is_type_checking(node):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    take_imports(inner)
                else:
                    problems.append(f"{rel}:{inner.lineno}: a statement other than imports "
                                    f"under TYPE_CHECKING")
        elif homes is not None:
            lazy = True
            for home, names in homes.items():
                for n in names:
                    listed[n] = home
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  or isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "")
                  == "__all__"):
            problems.append(f"{rel}:{node.lineno}: a statement other than imports")
    if not lazy:
        if literal is None:
            problems.append(f"{rel}: __all__ is not a literal list of names")
        else:
            listed = {n: imported.get(n, "") for n in literal}
    return listed, imported, problems


def facade_problems(root: Path = ROOT) -> list[str]:
    """What keeps a façade from listing exactly what readers use plus the promised names: an
    ``__all__`` that is not a literal, a statement other than imports, an import it does not
    list (or, lazily, a name whose home differs from its ``TYPE_CHECKING`` import), a listed
    name no reader uses and nobody was promised, a read or promised name it lacks."""
    wanted = facade_names(root)
    problems = []
    for f, rel in FACADE_FILES.items():
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        listed, imported, found = facade_listing(tree, rel)
        problems += found
        if not listed and found:
            continue
        if set(imported) - set(listed):
            problems.append(f"{rel}: imports but does not list "
                            f"{sorted(set(imported) - set(listed))}")
        if set(listed) - set(imported):
            problems.append(f"{rel}: lists but does not import "
                            f"{sorted(set(listed) - set(imported))}")
        moved = sorted(n for n, home in listed.items()
                       if n in imported and home and home != imported[n])
        if moved:
            problems.append(f"{rel}: the lazy homes and the TYPE_CHECKING imports disagree on "
                            f"{moved}")
        if set(listed) - wanted[f]:
            problems.append(f"{rel}: lists names no reader uses and nobody was promised "
                            f"(import them from their topic module instead): "
                            f"{sorted(set(listed) - wanted[f])}")
        if wanted[f] - set(listed):
            problems.append(f"{rel}: readers use or were promised "
                            f"{sorted(wanted[f] - set(listed))}, which it lacks")
    return problems


# --- chapter input literals ---------------------------------------------------------------------

def _significant_digits(x: float) -> int:
    if x == 0 or not math.isfinite(x):
        return 0
    mantissa = f"{abs(x):.12e}".split("e")[0].replace(".", "").rstrip("0")
    return len(mantissa)


def _power_of_two(x: float) -> bool:
    if x <= 0:
        return False
    e = math.log2(x)
    return abs(e - round(e)) < 1e-12


def distinctive(x: float) -> bool:
    """At least three significant digits and not a power of two (see companion.chapters)."""
    return _significant_digits(x) >= 3 and not _power_of_two(abs(x))


def _numbers(value, name: str):
    """(number, the name that says its unit) of a value: a number, a tuple, a dict (whose str
    keys name their values' units, e.g. "ttft_s")."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value), name
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, k if isinstance(k, str) and "_" in k else name)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _numbers(v, name)


def input_targets() -> dict[float, list[str]]:
    """Distinctive values (in base and display units) -> the inputs they stand for."""
    sys.path.insert(0, str(ROOT))
    from companion.chapters import inputs

    targets = defaultdict(list)
    for item in inputs():
        for x, unit_name in _numbers(item.value, item.name):
            for scale in display_scales(unit_name):
                shown = float(f"{x / scale:.12g}")
                if distinctive(shown):
                    targets[shown].append(f"ch{item.chapter}.{item.name}")
    return targets


def _fold(node):
    """The number a literal expression stands for (unit products folded), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in UNIT_NAMES:
        return float(UNIT_NAMES[node.id])
    if isinstance(node, ast.Attribute) and node.attr in UNIT_NAMES \
            and isinstance(node.value, ast.Name) and node.value.id == "units":
        return float(UNIT_NAMES[node.attr])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        x = _fold(node.operand)
        return None if x is None else -x
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.Pow)):
        a, b = _fold(node.left), _fold(node.right)
        if a is None or b is None:
            return None
        try:
            if isinstance(node.op, ast.Mult):
                return a * b
            return a / b if isinstance(node.op, ast.Div) else a ** b
        except (ZeroDivisionError, OverflowError):
            return None
    return None


def literals(path: Path):
    """(line, value) of every number literal of a Python file, unit products folded, the
    outermost foldable expression only."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, (ast.Constant, ast.BinOp, ast.UnaryOp)):
            continue
        x = _fold(node)
        if x is None:
            continue
        skip.update(id(sub) for sub in ast.walk(node))
        if isinstance(node, ast.Constant) or any(isinstance(s, ast.Constant)
                                                 for s in ast.walk(node)):
            yield node.lineno, x


# A line may hold a number that equals an input by coincidence (a plot's 2% headroom 1.02, a
# prompt-length variant 6144): it says so with this comment and the scan passes over it.
IGNORE_MARK = "not a chapter input"


def scanned_files(root: Path = ROOT) -> list[Path]:
    """Where chapter inputs must not be typed again: the package outside companion/chapters/
    and the code of the notebooks, solutions, exercises and dashboards."""
    files = [p for p in sorted((root / "companion").rglob("*.py"))
             if "chapters" not in p.relative_to(root).parts]
    for folder in ("notebooks", "solutions", "exercises", "dashboards"):
        files += sorted((root / folder).rglob("*.py"))
    return files


def repeated_inputs(root: Path = ROOT) -> list[str]:
    """"file:line value (input names)" for every distinctive chapter input typed outside
    companion/chapters/."""
    targets = input_targets()
    keys = sorted(targets)
    found = []
    for path in scanned_files(root):
        source = path.read_text().splitlines()
        for line, x in literals(path):
            if not distinctive(x) or IGNORE_MARK in source[line - 1]:
                continue
            for t in keys:
                if abs(x - t) <= 1e-9 * abs(t):
                    found.append(f"{path.relative_to(root)}:{line} {x:g} "
                                 f"({', '.join(sorted(set(targets[t])))})")
                    break
    return found


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    cycles = modules_in_cycles(root)
    print("modules in import cycles:", sum(len(c) for c in cycles), cycles)
    cycles = modules_in_cycles(root, deferred=True)
    print("... counting imports inside functions too:", sum(len(c) for c in cycles), cycles)
    private = private_imports(root)
    print("private cross-module imports:", len(private))
    for p in private:
        print("  ", p)
    print("largest modules:", largest_modules(root))
    problems = facade_problems(root)
    print("façade problems:", len(problems))
    for p in problems:
        print("  ", p)
    rep = repeated_inputs(root)
    print("chapter input literals outside companion/chapters/:", len(rep))
    for r in rep:
        print("  ", r)
