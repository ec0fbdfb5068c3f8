"""Reading the symbols out of a TeX formula, for the notation table (``companion.notation``).

``symbols_in(tex)`` lists the symbols of a formula such as ``$T_\\text{rec} - T_f$`` in one
canonical spelling each, so that ``b_{KV}``, ``b_\\text{KV}`` and ``b_{\\text{KV}}`` are the
same symbol and ``a_i``, ``a_j`` and ``a_{j+1}`` are one indexed symbol (``a_i``). What is not
a symbol is skipped: numbers, operators, function names (``\\min``, ``\\lceil``), words set in
``\\text{...}`` or ``\\mathrm{...}`` (``\\text{bubble}``, ``\\mathrm{TTFT}``) together with
their sub- and superscripts, and powers (``\\alpha^2``).

Two prefixes are operators, not part of a name: ``\\Delta S`` (the change of ``S``) and
``\\bar S`` (the mean of ``S``). ``symbols_in`` returns the whole spelling (``\\Delta n``,
``\\bar n``); ``base_of`` strips the operator, so a table that lacks the whole spelling can
still check the quantity it changes or averages. No plotting, no numpy.
"""

from __future__ import annotations

import re

__all__ = ["GREEK", "MATH_SPAN", "symbols_in", "canonical", "base_of", "math_spans"]

GREEK = frozenset("""alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota
kappa lambda mu nu xi pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega
Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega""".split())
# commands that set their argument as words: the argument is no symbol, nor are its scripts
# (``\begin{aligned}``: an environment's name is a word too)
_TEXT_COMMANDS = frozenset("text textrm textit textbf mathrm operatorname textsf texttt "
                           "mbox begin end".split())
# commands that carry no symbol themselves (operators, spacing, delimiters, layout)
_OPERATORS = frozenset("""min max sum prod frac tfrac dfrac sqrt lceil rceil lfloor rfloor le
leq ge geq ne neq approx sim times cdot cdots dots ldots vdots to rightarrow leftarrow iff
implies infty xrightarrow underbrace overbrace bmod mod log ln exp in notin subset quad qquad
left right big Big bigg Bigg displaystyle limits star ast pm mp partial nabla langle rangle
lvert rvert vert mid colon propto equiv forall exists cup cap setminus emptyset land lor neg
circ prime hline phantom boxed underline overline mathcal""".split())
# inline maths may run over a line break (MathJax allows it), not over a blank line
MATH_SPAN = re.compile(r"\$\$.*?\$\$|(?<!\\)\$(?:[^$\n]|\n(?![ \t]*\n))+?\$", re.S)
_INDEX_SUBSCRIPTS = frozenset("ij")


def math_spans(text: str) -> list[str]:
    """The ``$...$`` and ``$$...$$`` spans of a Markdown text, dollars included."""
    return MATH_SPAN.findall(text)


def _group(s: str, pos: int) -> tuple[str, int]:
    """The argument starting at ``s[pos]``: a brace group (its inside), a command or one
    character; and the position after it."""
    while pos < len(s) and s[pos] == " ":
        pos += 1
    if pos >= len(s):
        return "", pos
    if s[pos] == "{":
        depth = 0
        for end in range(pos, len(s)):
            depth += {"{": 1, "}": -1}.get(s[end], 0)
            if depth == 0:
                return s[pos + 1:end], end + 1
        return s[pos + 1:], len(s)
    if s[pos] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", s[pos:])
        end = pos + len(m.group(0))
        if m.group(1) in _TEXT_COMMANDS:          # \text{rec} as a script: the command and its words
            arg, end = _group(s, end)
            return m.group(0) + "{" + arg + "}", end
        return m.group(0), end
    return s[pos], pos + 1


def _subscript_name(sub: str) -> str:
    """A subscript's name: words and letters kept, commands and braces dropped; an index
    (``i``, ``j``, a digit from 1, an expression like ``j+1``) becomes ``i``. ``_0`` stays: it
    usually names a constant (a fixed cost ``t_0``), not the first of a list."""
    inner = re.sub(r"\\(?:text|mathrm|textrm|mathit|operatorname)\s*", "", sub)
    greek = re.fullmatch(r"\s*\\([A-Za-z]+)\s*", inner)
    if greek and greek.group(1) in GREEK:
        return "\\" + greek.group(1)
    inner = re.sub(r"\\([A-Za-z]+)", r"\1", re.sub(r"\\[,;:! ]|[{}\s]", "", inner))
    if inner in _INDEX_SUBSCRIPTS or (inner.isdigit() and inner != "0") \
            or re.search(r"[+\-]", inner):
        return "i"
    return inner


def canonical(tex: str) -> str:
    """The canonical spelling of one symbol written in TeX (``b_{KV}`` -> ``b_KV``)."""
    found = symbols_in(tex)
    if len(found) != 1:
        raise ValueError(f"tex: expected exactly one symbol, got {found!r} from {tex!r}")
    return found[0]


def base_of(symbol: str) -> str:
    """A canonical symbol without its operator prefix (``\\Delta T`` -> ``T``, ``\\bar n`` ->
    ``n``); other symbols unchanged."""
    return re.sub(r"^(?:\\Delta |\\bar )", "", symbol)


def symbols_in(tex: str) -> list[str]:
    """The symbols of a TeX formula (with or without its dollars), canonical, in order, each
    as often as it occurs."""
    s = tex.strip().strip("$")
    s = re.sub(r"\\[,;:! ]", " ", s)
    out: list[str] = []
    prefix = ""
    pos = 0
    while pos < len(s):
        ch = s[pos]
        if ch in "_^":                       # a limit or a power: its own symbols count
            arg, pos = _group(s, pos + 1)
            if re.sub(r"[{}\s]", "", arg) not in ("\\star", "*", "\\ast"):
                out += symbols_in(arg)
            prefix = ""
            continue
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[pos:])
            name, after = m.group(1), pos + len(m.group(0))
            if name in _TEXT_COMMANDS:        # words, and any scripts they carry
                _, pos = _group(s, after)
                while pos < len(s) and s[pos] in "_^":
                    _, pos = _group(s, pos + 1)
                continue
            if name == "Delta" and prefix == "":
                prefix, pos = "\\Delta ", after
                continue
            if name == "bar":
                arg, pos = _group(s, after)
                inner = symbols_in(arg)
                base = ("\\bar " + inner[0]) if len(inner) == 1 else None
                if base is None:
                    out += inner
                    prefix = ""
                    continue
                pos = _scripts(s, pos, base, prefix, out)
                prefix = ""
                continue
            if name in ("mathbb", "mathbf", "boldsymbol", "mathit"):
                arg, pos = _group(s, after)
                letter = re.sub(r"[{}\s]", "", arg)
                base = f"\\{'mathbf' if name == 'boldsymbol' else name}{{{letter}}}"
                if name == "mathit":
                    base = letter
                pos = _scripts(s, pos, base, prefix, out)
                prefix = ""
                continue
            if name in GREEK:
                pos = _scripts(s, after, "\\" + name, prefix, out)
                prefix = ""
                continue
            pos = after                        # an operator, delimiter or spacing command
            continue
        if ch.isalpha() and ch.isascii():
            pos = _scripts(s, pos + 1, ch, prefix, out)
            prefix = ""
            continue
        if not ch.isspace():
            prefix = ""
        pos += 1
    return out


def _scripts(s: str, pos: int, base: str, prefix: str, out: list[str]) -> int:
    """Read the subscript and a ``^\\star``/``^*`` of ``base`` at ``pos``; append the symbol to
    ``out`` and return the position after it (a power such as ``^2`` is left for the caller,
    which skips it)."""
    name = base
    while pos < len(s) and s[pos] == " ":
        pos += 1
    if pos < len(s) and s[pos] == "_":
        sub, pos = _group(s, pos + 1)
        name += "_" + _subscript_name(sub)
    if pos < len(s) and s[pos] == "^":
        sup, after = _group(s, pos + 1)
        if re.sub(r"[{}\s]", "", sup) in ("\\star", "*", "\\ast"):
            name += "^*"
            pos = after
    out.append(prefix + name)
    return pos
