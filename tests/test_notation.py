"""One meaning per symbol, across notebooks, exercises, solutions, dashboards and the notation page.

The table is ``companion.notation.SYMBOLS``; the notation page renders it. This test reads the
maths of every Markdown cell and of every ``md(...)``/``answer(...)`` text (the constant parts
of the f-string; a formatted value reads as a blank) of the paired notebooks in ``notebooks/``,
``solutions/``, ``exercises/`` and ``dashboards/``, and fails on

(a) **a symbol the table lacks** (``companion.notation.lookup`` is None);
(b) **a symbol given another meaning**: where the text defines a symbol, by the words right
    next to it ("the hit probability $p_h$", "where $T_r$ recomputes it", "over $p$ GPUs",
    "a round takes $T_m = ...$"), those words name another entry of the table (its ``cues``)
    and not the symbol's own;
    A letter the table keeps for one form (``P(...)``, a probability; ``q(A)``, a token)
    counts as given another meaning wherever it is written otherwise (``$2P$``).
(c) **one meaning, two symbols**: such words name an entry whose symbol is not the one written
    (reported with (a) or (b), as "<meaning> is written <symbol>, the table writes <entry>"),
    and, in the table itself, two rows with one meaning.

What counts as a definition: an inline maths span that is one symbol alone (``$p_h$``) or an
equation that starts ``symbol =`` with a formula on its right (``$T_m = T_v + t_d\\,m$``); the
words considered are the three before it in the same clause and, for a lone symbol, the three
after it or its parenthesis. A row's cues may mark where the symbol stands with ``@``
("hit probability @", "@ GPUs"). Rows without cues (an index, a token, an operator) are never
held to a meaning.

Findings in ``solutions/`` and ``exercises/`` that other work is rewriting may be listed in
``KNOWN`` below, by exercise (it is empty now): a listed finding that is gone fails too, so the
list can only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from companion import notation
from companion.notation_tex import MATH_SPAN, math_spans, symbols_in

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "exercises", "dashboards")
SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                 if p.with_suffix(".ipynb").exists() and ".ipynb_checkpoints" not in p.parts)
BLANK = "\u25a1"        # stands for a formatted value of an f-string

# Known findings in the exercises and solutions (exercises/exN.py is generated from
# solutions/exN.py, so one entry covers both), as (exercise, symbol, kind). Kinds: "unknown"
# (a), "meaning:<entry tex>" (b or c: the text gives the symbol that entry's meaning), "form"
# (b: a letter the table keeps for one form, P(...) or q(A), used as something else). It held
# the exercises' own letters, mostly the chapters' (17 §2's P and B, 17 §7's p and m, 17 §10's
# k, 8.3.4's p_h and T_r, Exercise 8-7's a, N_m and T_m); the rewritten solutions use the
# table's letters, so it is empty, and a finding may enter it again only with a reason.
KNOWN: frozenset[tuple[str, str, str]] = frozenset()


# --- reading the texts ----------------------------------------------------------------------

def _cells(path: Path) -> list[tuple[str, int, str]]:
    """(kind, first line, source) of each cell of a py:percent file."""
    cells, cur, start, kind = [], [], 1, "code"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(keepends=True), 1):
        if line.startswith("# %%"):
            if cur:
                cells.append((kind, start, "".join(cur)))
            cur, start = [], n + 1
            kind = "markdown" if "[markdown]" in line else "code"
        elif kind == "markdown":
            cur.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        else:
            cur.append(line)
    if cur:
        cells.append((kind, start, "".join(cur)))
    return cells


def _rendered_texts(source: str) -> list[str]:
    """The texts a code cell renders as Markdown: the first argument of each ``md(...)`` or
    ``answer(...)`` call, a formatted value read as BLANK."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name not in ("md", "answer"):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else BLANK
                               for v in arg.values))
    return out


def texts(path: Path) -> list[tuple[int, str]]:
    """(line, Markdown text) of every Markdown cell and every rendered text of ``path``."""
    out = []
    for kind, line, source in _cells(path):
        if kind == "markdown":
            out.append((line, source))
        else:
            out += [(line, t) for t in _rendered_texts(source)]
    return out


# --- definitions: a symbol and the words around it --------------------------------------------

_OPERATOR = re.compile(r"[=<>+*/^]|(?<!\\)-|\\(?:le|ge|approx|times|cdot|frac|sum|min|max)\b")
_VALUE = re.compile(r"^[\s\d.,{}\\%a-z" + BLANK + r"]*$")      # "4", "0.5", "26.26\ \text{ms}", BLANK


def defined_symbol(span: str) -> tuple[str | None, bool]:
    """(the symbol an inline maths span defines, whether it is an equation) or (None, False):
    a lone symbol (``$p_h$``) or an equation that starts with one and has a formula on its
    right (``$T_m = T_v + t_d\\,m$``, ``$t(B) = ...$``). A value (``$m = 4$``) sets a symbol
    rather than defining it, and display maths is left out: it often defines several symbols
    at once, so the words before it belong to none in particular."""
    if span.startswith("$$"):
        return None, False
    inner = span.strip("$").strip()
    found = symbols_in(inner)
    if len(found) == 1 and not _OPERATOR.search(re.sub(r"_\{[^{}]*\}", "", inner)):
        return found[0], False
    lhs, eq, rhs = inner.partition("=")
    if eq and not _VALUE.match(re.sub(r"\\text\{[^{}]*\}", "", rhs.split("=")[0])):
        lhs = re.sub(r"\([^()]*\)\s*$", "", lhs.strip())
        lone = symbols_in(lhs)
        if len(lone) == 1 and not _OPERATOR.search(re.sub(r"_\{[^{}]*\}", "", lhs)):
            return lone[0], True
    return None, False


def context(text: str, start: int, end: int, equation: bool) -> str:
    """The words that define the maths span ``text[start:end]``, with ``@`` where the symbol
    stands: up to four before it in the same clause, and for a lone symbol up to three after
    it (or the words of its parenthesis)."""
    before = re.split(r"[.,;:!?](?:\s|$)|\$|[()]|\n\s*\n|\*\*", text[:start])[-1]
    words = before.split()[-4:] + ["@"]
    if not equation:
        after = text[end:]
        paren = re.match(r"\s*\(([^()$]*)\)", after)
        if paren:
            words += paren.group(1).split()[:8]
        else:
            words += re.split(r"[.,;:!?()]|\$|\n\s*\n", after)[0].split()[:3]
    return " ".join(words)


def _family(symbol: str) -> set:
    """The entries a symbol may be read as: its own, and for a variant (``b_KV``, ``X_r``) the
    entry of its letter too (a particular batch is still a batch)."""
    own = notation.lookup(symbol)
    letter = notation.lookup(symbol.split("_")[0]) if "_" in symbol else None
    return {e for e in (own, letter) if e is not None}


# --- the checks -----------------------------------------------------------------------------

# the letters the chapters write instead of the table's (its "chapter" column): a text may name
# them as the chapter's ("8.3.4 writes $p_h$"), and the words before say so
CHAPTER_LETTERS = frozenset(sym for s in notation.SYMBOLS for span in math_spans(s.chapter)
                            for sym in symbols_in(span))


def quotes_a_chapter_letter(text: str, start: int, symbol: str) -> bool:
    """Whether the maths at ``text[start:]`` names the chapter's own letter, as in "8.6.3 writes
    them $r_P$ and $r_D$" or "(the exercise writes $T_m$)"."""
    before = re.split(r"[.;:!?](?:\s|$)|[()]|\n\s*\n", text[:start])[-1]
    return symbol in CHAPTER_LETTERS and re.search(r"\bwrites?\b", before) is not None


def findings(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, symbol, kind, message) of every finding in ``path``."""
    out = []
    for line, text in texts(path):
        for m in MATH_SPAN.finditer(text):
            span = m.group(0)
            if all(quotes_a_chapter_letter(text, m.start(), sym) for sym in symbols_in(span)):
                continue
            for symbol in symbols_in(span):
                entry = notation.lookup(symbol)
                if entry is None:
                    out.append((line, symbol, "unknown",
                                f"${symbol}$ is not in the notation table (in {span[:60]!r})"))
                elif entry.written and not re.search(entry.written, span):
                    out.append((line, symbol, "form",
                                f"${symbol}$ is the table's {entry.meaning}, which it writes only "
                                f"as /{entry.written}/ (in {span[:60]!r})"))
            defined, equation = defined_symbol(span)
            if defined is None:
                continue
            words = context(text, m.start(), m.end(), equation)
            named = [e for e in notation.SYMBOLS if e.names(words)]
            own = notation.lookup(defined)
            if own is not None and not own.cues:
                continue        # an index, a token, an operator: any words may stand beside it
            if named and not _family(defined) & set(named):
                for e in named:
                    out.append((line, defined, f"meaning:{e.tex}",
                                f"${defined}$ is given the meaning of ${e.tex}$ ({e.meaning}): "
                                f"{words!r}" + ("" if own is None else
                                                f"; the table's ${own.tex}$ is {own.meaning}")))
    return sorted(set(out))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _known_key(path: Path, symbol: str, kind: str) -> tuple[str, str, str] | None:
    if path.parent.name in ("solutions", "exercises"):
        return (path.stem, symbol, kind)
    return None


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_every_symbol_has_the_tables_meaning(path):
    problems = [f"line {line}: {message}" for line, symbol, kind, message in findings(path)
                if _known_key(path, symbol, kind) not in KNOWN]
    assert not problems, ("symbols off the notation table (companion/notation.py):\n"
                          + "\n".join(problems))


def test_known_findings_are_still_there():
    """The KNOWN list only shrinks: an entry whose finding is gone must be removed."""
    found = {_known_key(p, s, k) for p in SOURCES for _, s, k, _ in findings(p)}
    stale = sorted(KNOWN - found)
    assert not stale, f"remove from KNOWN (fixed): {stale}"


# --- the table itself -----------------------------------------------------------------------

def test_the_table_has_one_row_per_symbol_and_per_meaning():
    keys = [k for s in notation.SYMBOLS for k in s.keys]
    assert len(keys) == len(set(keys))
    meanings = [s.meaning.lower() for s in notation.SYMBOLS]
    assert len(meanings) == len(set(meanings))


def test_each_rows_cues_name_its_own_meaning():
    """A row's cues must recognise the row's own meaning, or they could never confirm it."""
    bad = [s.tex for s in notation.SYMBOLS if s.cues and not any(
        s.names(text) for text in (s.meaning, f"@ {s.meaning}", f"{s.meaning} @"))]
    assert not bad, f"cues that do not match their own meaning: {bad}"


def test_every_row_is_used_outside_the_notation_page():
    used = {notation.lookup(symbol) for p in SOURCES if p.name != "notation.py"
            for _, text in texts(p) for span in MATH_SPAN.findall(text)
            for symbol in symbols_in(span)}
    unused = [s.tex for s in notation.SYMBOLS if s not in used]
    assert not unused, f"rows no notebook, exercise or solution writes: {unused}"


def test_the_notation_page_renders_the_table():
    page = ROOT / "notebooks" / "notation.py"
    source = page.read_text(encoding="utf-8")
    assert "notation.markdown_table()" in source
    assert "| symbol |" not in source, "the page types a table instead of rendering it"


# --- the rules can fail ---------------------------------------------------------------------

def _findings_of(markdown: str, tmp_path: Path) -> list[tuple[int, str, str, str]]:
    path = tmp_path / "nb.py"
    path.write_text("# %% [markdown]\n" + "".join(f"# {line}\n" for line in
                                                  markdown.splitlines()), encoding="utf-8")
    return findings(path)


def test_the_symbol_rules_can_fail(tmp_path):
    # (a) a symbol the table lacks
    assert [k for _, s, k, _ in _findings_of("Let $Z_q$ be a new letter.", tmp_path)] == ["unknown"]
    # (b) a table symbol with another row's meaning: Exercise 8-4's T_r for the recompute time
    got = _findings_of("where $T_r$ recomputes it by prefill", tmp_path)
    assert [(s, k) for _, s, k, _ in got] == [("T_r", r"meaning:T_\text{rec}")]
    # (c) one meaning, two symbols: 8.3.4's p_h for the table's rho, 17 §7's p for g
    got = _findings_of("with the hit probability $p_h$", tmp_path)
    assert {(s, k) for _, s, k, _ in got} == {("p_h", "unknown"), ("p_h", r"meaning:\rho")}
    got = _findings_of("Tensor parallelism over $p$ GPUs", tmp_path)
    assert [(s, k) for _, s, k, _ in got] == [("p", "meaning:g")]
    # 8.5 with the chapter's N for the tokens a round emits, and an equation's left side
    got = _findings_of("a round emits $N$ tokens on average", tmp_path)
    assert [(s, k) for _, s, k, _ in got] == [("N", "meaning:X")]
    got = _findings_of("so a round takes $T_m = T_v + t_d\\,m$", tmp_path)
    assert [(s, k) for _, s, k, _ in got] == [("T_m", "meaning:T_r")]
    # 17 §2's P for the parameters, where the table keeps P for a probability P(...)
    got = _findings_of("a prefill costs $2Pn$ FLOPs", tmp_path)
    assert [(s, k) for _, s, k, _ in got] == [("P", "form")]
    assert not _findings_of("a prefill costs $2Nn$ FLOPs, and $P(X > j)$ is", tmp_path)
    # and the same texts in the table's letters pass
    for ok in ("where $T_\\text{rec}$ recomputes it by prefill",
               "with the hit probability $\\rho$", "Tensor parallelism over $g$ GPUs",
               "a round emits $X$ tokens", "so a round takes $T_r = T_v + t_d\\,m$",
               "the chunk $c$ (tokens a round adds)",
               "the table's $\\rho$ (8.3.4 writes $p_h$)"):
        assert not _findings_of(ok, tmp_path), ok


def test_rendered_texts_are_read_too(tmp_path):
    path = tmp_path / "nb.py"
    path.write_text('# %%\nanswer(f"""a round emits $N$ tokens: {x:.1f}""")\n',
                    encoding="utf-8")
    assert [(s, k) for _, s, k, _ in findings(path)] == [("N", "meaning:X")]


def test_symbols_are_read_in_one_spelling():
    assert symbols_in(r"$b_{KV} + b_\text{KV} + b_{\text{KV}}$") == ["b_KV"] * 3
    assert symbols_in(r"$t_{j+1} - t_j$") == ["t_i", "t_i"]
    assert symbols_in(r"$\mathrm{TTFT} + \sum_{j=1}^{G-1} \mathrm{ITL}_j$") == ["j", "G"]
    assert symbols_in(r"$\alpha^2 + \Delta T_r/\bar n$") == [r"\alpha", r"\Delta T_r", r"\bar n"]
    assert symbols_in(r"$$\begin{aligned} k &= 2\,n_\text{kv} \end{aligned}$$") == ["k", "n_kv"]
    assert notation.lookup(r"\Delta T_r") is notation.entry_for("T_r")
    assert notation.lookup("G_i") is notation.entry_for("G")
    assert notation.lookup("p_h") is None
