"""A worked answer starts from the state its prompt sets.

Each prompt of a section notebook's "## Try this" cell that puts an explorer somewhere (or goes
on from where an earlier sentence of it left the explorer, as "Then ..." does) declares those
states right after its text, in an HTML comment the reader does not see::

    2. Serve the weights from ROM. ... Then shorten the context to 128 tokens and push the
       batch to 256: which roofline term wins?
       <!-- states: decode(weights_in_hbm=False); decode(weights_in_hbm=False, context_tokens=128, batch=256) -->

A state is ``panel(control=value, ...)``: the panel variable as the notebook names it and the
controls the prompt moves away from the chapter's setting (``panel()`` is the chapter's
setting itself). A control the reader moves to *find* the answer (a threshold, a crossing) is
written ``control=...``: any value matches it.

The answer of prompt N is the hidden-source code cell after the Try-this cell whose
``answer(...)`` has ``title="Worked answer N"``. For each declared state it must call
``panel.at(...)`` with exactly those keyword arguments, compared as a set of
(name, ``ast.unparse`` of the value) pairs, so the answer computes what the prompt asked and
not a neighbouring state (08_2's ROM answer once went back to HBM for its "then" part). The
declared controls must be controls of the panel's class. The notebooks are read as text
(py:percent sources), never executed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from companion import widgets
from companion.explorers.base import Panel

ROOT = Path(__file__).resolve().parents[1]
SECTION_NOTEBOOKS = sorted(
    [p for p in (ROOT / "notebooks" / "ch08_inference_optimization").glob("08_[1-6]_*.py")]
    + [p for p in (ROOT / "notebooks" / "ch17_performance").glob("17_[01]*.py")
       if not p.name.startswith("17_00")])
PANELS = {name: obj for name, obj in ((n, getattr(widgets, n)) for n in widgets.__all__)
          if isinstance(obj, type) and issubclass(obj, Panel)}

STATES = re.compile(r"<!--\s*states:(.*?)-->", re.S)
TITLE = re.compile(r"""title\s*=\s*["']Worked answer (\d+)["']""")
ANY = "..."


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- reading a py:percent notebook -------------------------------------------------------------

def cells(text: str) -> list[tuple[str, str, str]]:
    """(kind, header line, source) of each cell of a py:percent text; Markdown sources lose
    their leading "# "."""
    out, header, lines = [], None, []

    def close():
        if header is None:
            return
        kind = "markdown" if "[markdown]" in header else "code"
        if kind == "markdown":
            body = "".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                           for line in lines)
        else:
            body = "".join(lines)
        out.append((kind, header, body))

    for line in text.splitlines(keepends=True):
        if line.startswith("# %%"):
            close()
            header, lines = line, []
        elif header is not None:
            lines.append(line)
    close()
    return out


def prompts(markdown: str) -> dict[int, str]:
    """Number -> full text (continuation lines included) of each numbered prompt."""
    found: dict[int, str] = {}
    current = None
    for line in markdown.splitlines():
        m = re.match(r"^(\d+)\.\s", line)
        if m:
            current = int(m.group(1))
            found[current] = line
        elif current is not None and (line.startswith(" ") or not line.strip()):
            found[current] += "\n" + line
        else:
            current = None
    return found


def declared_states(prompt: str) -> list[tuple[str, frozenset, str]]:
    """(panel, {(control, value source)}, text) of each state a prompt declares."""
    states = []
    for block in STATES.findall(prompt):
        for text in (t.strip() for t in block.split(";")):
            if not text:
                continue
            node = ast.parse(text, mode="eval").body
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and not node.args and all(k.arg for k in node.keywords)):
                raise ValueError(f"a state is panel(control=value, ...), not {text!r}")
            states.append((node.func.id,
                           frozenset((k.arg, ast.unparse(k.value)) for k in node.keywords), text))
    return states


def at_calls(source: str, panel: str) -> list[frozenset | None]:
    """The keyword sets of every ``panel.at(...)`` call in ``source`` (None for a call that
    passes ``**kwargs``, whose keywords cannot be read)."""
    calls = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "at" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == panel):
            if any(k.arg is None for k in node.keywords):
                calls.append(None)
            else:
                calls.append(frozenset((k.arg, ast.unparse(k.value)) for k in node.keywords))
    return calls


def matches(state: frozenset, call: frozenset | None) -> bool:
    if call is None:
        return False
    fixed = {(k, v) for k, v in state if v != ANY}
    wild = {k for k, v in state if v == ANY}
    return {(k, v) for k, v in call if k not in wild} == fixed and wild <= {k for k, _ in call}


def panel_classes(text: str) -> dict[str, type]:
    """Panel variable -> class, for every ``name = widgets.SomePanel(...)`` of the notebook."""
    found = {}
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr in PANELS):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = PANELS[node.value.func.attr]
    return found


def problems(text: str) -> list[str]:
    """What is wrong with the declared prompt states of one notebook's py:percent text."""
    all_cells = cells(text)
    at = next((i for i, (kind, _, src) in enumerate(all_cells)
               if kind == "markdown" and re.search(r"^#+ Try this", src, re.M)), None)
    if at is None:
        return ["no '## Try this' cell"]
    numbered = prompts(all_cells[at][2])
    if sorted(numbered) != list(range(1, len(numbered) + 1)):
        return [f"prompts are not numbered 1..N: {sorted(numbered)}"]
    answers: dict[int, str] = {}
    for kind, header, src in all_cells[at + 1:]:
        if kind != "code" or "source_hidden" not in header:
            continue
        for n in TITLE.findall(src):
            if int(n) in answers:
                return [f"two cells are worked answer {n}"]
            answers[int(n)] = src
    classes = panel_classes(text)
    found = []
    for n, prompt in numbered.items():
        try:
            states = declared_states(prompt)
        except (SyntaxError, ValueError) as e:
            found.append(f"prompt {n}: unreadable states comment ({e})")
            continue
        if states and n not in answers:
            found.append(f"prompt {n} declares states but has no 'Worked answer {n}' cell")
            continue
        for panel, state, shown in states:
            cls = classes.get(panel)
            if cls is None:
                found.append(f"prompt {n}: {panel} is not a panel the notebook builds")
                continue
            names = {c.name for c in cls.controls}
            unknown = sorted(k for k, _ in state if k not in names)
            if unknown:
                found.append(f"prompt {n}: {unknown} not controls of {cls.__name__}")
            calls = at_calls(answers[n], panel)
            if not calls:
                found.append(f"prompt {n} puts {panel} in a state, but its answer never calls "
                             f"{panel}.at(...)")
            elif not any(matches(state, call) for call in calls):
                seen = "; ".join(
                    "**kwargs" if c is None else
                    f"{panel}.at({', '.join(f'{k}={v}' for k, v in sorted(c))})" for c in calls)
                found.append(f"prompt {n}: the answer never computes the prompt's state "
                             f"{shown} (it calls {seen})")
    return found


@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=_rel)
def test_every_answer_starts_from_its_prompts_states(path):
    text = path.read_text(encoding="utf-8")
    found = problems(text)
    assert not found, "\n".join(found)


def test_prompts_that_set_an_explorer_declare_states():
    declared = sum(len(declared_states(p)) for path in SECTION_NOTEBOOKS
                   for kind, _, src in cells(path.read_text(encoding="utf-8"))
                   if kind == "markdown" and re.search(r"^#+ Try this", src, re.M)
                   for p in prompts(src).values())
    assert declared >= 108, f"only {declared} declared states: has the comment's form changed?"


# --- the test can fail ---------------------------------------------------------------------------

_SYNTHETIC = '''# %%
decode = widgets.DecodeBatchPanel()
decode.show()

# %% [markdown]
# ## Try this
#
# 1. Serve the weights from ROM. Does a bigger batch still cut the HBM bytes per output token?
#    Then shorten the context to 128 tokens and push the batch to 256: which term wins?
#    <!-- states: decode(weights_in_hbm=False); decode(weights_in_hbm=False, context_tokens=128, batch=256) -->
# 2. Find the context where the batch of 16 turns compute-bound.
#    <!-- states: decode(context_tokens=...) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
rom = decode.at(weights_in_hbm=False).numbers
tiny = decode.at(context_tokens=128, batch=256).numbers
answer(f"""...""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
ctx = [decode.at(context_tokens=c) for c in (128, 256)]
answer(f"""...""", title="Worked answer 2")
'''


def test_the_rule_catches_an_answer_that_leaves_the_prompts_state():
    # the 08_2 bug: the "then" part of the prompt keeps the weights in ROM; the answer did not
    found = problems(_SYNTHETIC)
    assert len(found) == 1 and found[0].startswith("prompt 1: the answer never computes"), found
    assert "weights_in_hbm=False, context_tokens=128, batch=256" in found[0]
    fixed = _SYNTHETIC.replace("decode.at(context_tokens=128, batch=256)",
                               "decode.at(batch=256, weights_in_hbm=False, context_tokens=128)")
    assert problems(fixed) == []
    # an answer that never asks the explorer fails, and so does a misspelt control
    no_call = fixed.replace("ctx = [decode.at(context_tokens=c) for c in (128, 256)]",
                            "ctx = [calc.something(c) for c in (128, 256)]")
    assert any("never calls decode.at" in p for p in problems(no_call))
    typo = fixed.replace("decode(context_tokens=...)", "decode(context=...)")
    assert any("not controls of DecodeBatchPanel" in p for p in problems(typo))
    # a found control must still be passed, and the rest must be exact
    assert matches(frozenset({("a", "1"), ("b", ANY)}), frozenset({("a", "1"), ("b", "x")}))
    assert not matches(frozenset({("a", "1"), ("b", ANY)}), frozenset({("a", "1")}))
    assert not matches(frozenset({("a", "1")}), frozenset({("a", "1"), ("c", "2")}))
    assert not matches(frozenset({("a", "'q4_0'")}), None)
