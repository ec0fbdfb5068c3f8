"""The notebooks' prose is ours, carries no hand-typed results, and teaches to the end.

Four rules, each measured over the Markdown cells of the paired notebooks (the jupytext
py:percent sources; rule 1 in notebooks/, solutions/, exercises/ and dashboards/, rule 2 in
the teaching text of notebooks/ and dashboards/, rules 3 and 4 in the section notebooks):

1. **Our own words.** No run of ``RUN_WORDS`` (10) or more consecutive words shared with either
   chapter (case and punctuation ignored, math, code and URLs removed). A short quotation is
   allowed only inside quotation marks, marked as the chapter's by a section citation right
   after it, and at most ``QUOTE_WORDS`` (15) words: ``“a short phrase” (8.3.2)``. The chapters
   are read from ../shared/seeds/ (CI has them); without that folder the rule is skipped.
2. **No result typed into prose.** A number in a Markdown cell that equals a number the ledger
   lists as printed by a chapter (a result the companion recomputes) fails, unless it is one of
   the chapters' stated inputs (``companion.chapters``: each carries its section and the
   chapter's phrase, so quoting it is quoting the chapter), a section number, or inside a marked
   quotation as in rule 1. Integers below 10 are ignored, and below 100 unless a unit follows
   ("57 sequences" counts, "Exercise 8-3" or "22 of them" does not). Results reach the prose through ``companion.display.md``/``answer``
   (rendered, re-executed outputs that nbval compares) or are said qualitatively.
3. **Worked answers.** Each section notebook's "## Try this" cell lists numbered prompts, and the
   notebook renders one folded worked answer (``<details>``, via ``display.answer``) per prompt
   after it; about a third of all prompts are "**Predict, then move.**" questions.
4. **Takeaways.** Each section notebook ends with a "What you can now compute" box of three to
   five bullets, each linking to an existing exercise notebook (Chapter 17: its own ``ex17_N``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
FOLDERS = ("notebooks", "solutions", "exercises", "dashboards")
RUN_WORDS = 10
QUOTE_WORDS = 15
PREDICT = "**Predict, then move.**"
TAKEAWAY = "What you can now compute"

SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                 if p.with_suffix(".ipynb").exists() and ".ipynb_checkpoints" not in p.parts)
# the teaching text; exercise statements give data, and the solutions' written model answers are
# graded by hand (rule 2 does not apply to them; rule 1 does)
PROSE_SOURCES = [p for p in SOURCES if p.relative_to(ROOT).parts[0] in ("notebooks", "dashboards")]
SECTION_NOTEBOOKS = sorted(
    [p for p in (ROOT / "notebooks" / "ch08_inference_optimization").glob("08_[1-6]_*.py")]
    + [p for p in (ROOT / "notebooks" / "ch17_performance").glob("17_*.py")
       if not p.name.startswith("17_00")])


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- reading Markdown cells ------------------------------------------------------------------

def markdown_cells(path: Path) -> list[tuple[int, str]]:
    """(first line number, text) of each Markdown cell of a py:percent file."""
    cells, cur, start, md = [], [], 0, False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(keepends=True), 1):
        if line.startswith("# %%"):
            if md and cur:
                cells.append((start, "".join(cur)))
            cur, start, md = [], n + 1, "[markdown]" in line
        elif md:
            cur.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    if md and cur:
        cells.append((start, "".join(cur)))
    return cells


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_URL = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>]+>")
_SECTION_REF = r"(?:see\s+)?(?:\d+\.\d+(?:\.\d+)*|17\s*§\s*\d+|§\s*\d+)(?:[,;]\s*(?:\d+\.\d+(?:\.\d+)*|§\s*\d+))*"
_QUOTE = re.compile(r"[“\"]([^”\"\n]{1,300})[”\"]\s*\(\s*" + _SECTION_REF + r"\s*\)")


def _strip(text: str) -> str:
    """Math, code and link targets/HTML tags removed (formulas and names may carry over)."""
    return _URL.sub(" ", _CODE.sub(" ", _MATH.sub(" ", text)))


def _without_marked_quotes(text: str) -> tuple[str, list[str]]:
    """``text`` with every marked chapter quotation of at most QUOTE_WORDS words removed, and
    the quotations that are too long to be exempt."""
    too_long = []

    def cut(m):
        if len(words(m.group(1))) <= QUOTE_WORDS:
            return " "
        too_long.append(m.group(1))
        return m.group(0)

    return _QUOTE.sub(cut, text), too_long


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("\u2019", "").replace("'", ""))


# --- rule 1: our own words -------------------------------------------------------------------

@lru_cache(maxsize=None)
def chapter_runs() -> frozenset:
    grams = set()
    for f in sorted(SEEDS.glob("*.txt")):
        w = words(_MATH.sub(" ", f.read_text(encoding="utf-8")))
        grams.update(tuple(w[i:i + RUN_WORDS]) for i in range(len(w) - RUN_WORDS + 1))
    return frozenset(grams)


def shared_runs(text: str) -> list[str]:
    """The maximal runs of RUN_WORDS+ consecutive words of ``text`` found in a chapter."""
    grams = chapter_runs()
    w = words(text)
    hits, i = [], 0
    while i + RUN_WORDS <= len(w):
        if tuple(w[i:i + RUN_WORDS]) in grams:
            j = i + RUN_WORDS
            while j < len(w) and tuple(w[j - RUN_WORDS + 1:j + 1]) in grams:
                j += 1
            hits.append(" ".join(w[i:j]))
            i = j
        else:
            i += 1
    return hits


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the chapters (../shared/seeds/) are not here")
@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_prose_is_in_our_own_words(path):
    problems = []
    for line, cell in markdown_cells(path):
        text, too_long = _without_marked_quotes(_strip(cell))
        problems += [f"line {line}: quotation over {QUOTE_WORDS} words: “{q}”" for q in too_long]
        problems += [f"line {line}: {len(r.split())} words as in the chapter: {r}"
                     for r in shared_runs(text)]
    assert not problems, "\n".join(problems)


def test_the_own_words_rule_can_fail():
    if not SEEDS.is_dir():
        pytest.skip("the chapters (../shared/seeds/) are not here")
    sentence = " ".join(sorted(chapter_runs())[0])
    assert shared_runs(f"As we saw, {sentence} indeed.") == [sentence]
    quoted, long = _without_marked_quotes(f"“{sentence}” (8.3.2)")
    assert not shared_runs(quoted) and not long
    assert shared_runs(f"“{sentence}” without a citation") == [sentence]


# --- rule 2: no typed results ----------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.,§-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|\.\d|,\d{3})")
_UNIT_AFTER = re.compile(r"\s*(?:ms|s\b|µs|us\b|%|x\b|×|GB|GiB|MiB|MB|KiB|KB|TB|TFLOP|GFLOP|FLOP|"
                         r"tok|W\b|J\b|blocks?|tokens?|requests?|sequences?|B\b)")


def _decimal(token: str) -> str:
    s = token.replace(",", "")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


@lru_cache(maxsize=None)
def ledger_printed() -> dict[str, list[str]]:
    from companion import ledger

    printed: dict[str, list[str]] = {}
    for e in ledger.entries():
        printed.setdefault(_decimal(e.printed), []).append(e.id)
    return printed


_DISPLAY_SCALES = (1, 100, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15, 1e3, 1e6, 1 / 1024, 1 / 1024 ** 2,
                   1 / 1024 ** 3, 1 / 1024 ** 4)


def _forms(value) -> set[str]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, (tuple, list)):
        return set().union(*(_forms(v) for v in value)) if value else set()
    if not isinstance(value, (int, float)):
        return set()
    out = set()
    for scale in _DISPLAY_SCALES:
        x = value * scale
        for digits in (0, 1, 2, 3, 4):
            text = f"{x:.{digits}f}"
            if float(text) and abs(float(text) - x) <= 1e-9 * max(1.0, abs(x)):
                out.add(_decimal(text))
                break
    return out


@lru_cache(maxsize=None)
def stated_inputs() -> frozenset:
    from companion import chapters

    return frozenset(form for i in chapters.inputs() for form in _forms(i.value))


def _is_section_ref(text: str, m: re.Match) -> bool:
    token = m.group(0)
    if re.fullmatch(r"(?:8|17)\.(?:[0-9]|1[01])", token):
        return not _UNIT_AFTER.match(text, m.end())
    return False


def typed_results(text: str) -> list[str]:
    """Numbers in ``text`` (math, code, links and marked quotations removed) that the ledger
    lists as chapter results and that are not stated inputs."""
    text, _ = _without_marked_quotes(_strip(text))
    printed, inputs = ledger_printed(), stated_inputs()
    found = []
    for m in _NUMBER.finditer(text):
        token = _decimal(m.group(0))
        if "." not in token and (int(token) < 10 or
                                 (int(token) < 100 and not _UNIT_AFTER.match(text, m.end()))):
            continue  # small integers count only with a unit after them ("57 sequences")
        if token in printed and token not in inputs and not _is_section_ref(text, m):
            found.append(f"{m.group(0)} (ledger: {', '.join(printed[token][:2])})")
    return found


@pytest.mark.parametrize("path", PROSE_SOURCES, ids=_rel)
def test_no_chapter_result_is_typed_into_prose(path):
    problems = [f"line {line}: {hit}" for line, cell in markdown_cells(path)
                for hit in typed_results(cell)]
    assert not problems, ("computed results typed into Markdown (render them with "
                          "companion.display.md or say it qualitatively):\n" + "\n".join(problems))


def test_the_typed_results_rule_can_fail():
    result = next(p for p in ledger_printed() if "." in p and p not in stated_inputs())
    assert typed_results(f"the step takes {result} ms")
    assert not typed_results(f"the step takes $${result}$$ ms")
    assert not typed_results(f"“it takes {result} ms” (8.2.2)")
    assert not typed_results("see 8.3 and 17.5 for more")


# --- rules 3 and 4: worked answers and takeaways ----------------------------------------------

def _stored_markdown_outputs(path: Path) -> list[tuple[int, str]]:
    """(cell index, text) of every text/markdown output stored in the paired notebook."""
    nb = json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8"))
    out = []
    for index, cell in enumerate(nb["cells"]):
        for o in cell.get("outputs", []):
            text = o.get("data", {}).get("text/markdown")
            if text is not None:
                out.append((index, "".join(text) if isinstance(text, list) else text))
    return out


def _prompts(path: Path) -> tuple[list[str], int]:
    """The numbered prompts of the notebook's "Try this" cell and that cell's index."""
    nb = json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^#+ Try this", source, re.M):
            items = re.findall(r"^\d+\.\s+(.*)", source, re.M)
            return items, index
    return [], -1


@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=_rel)
def test_every_prompt_has_a_folded_worked_answer(path):
    prompts, at = _prompts(path)
    assert prompts, f"{_rel(path)}: no '## Try this' cell with numbered prompts"
    answers = sum(text.count("<details>") for index, text in _stored_markdown_outputs(path)
                  if index > at)
    assert answers >= len(prompts), (f"{len(prompts)} prompts but {answers} rendered worked "
                                     "answers (display.answer) after them")


def test_about_a_third_of_the_prompts_ask_for_a_prediction():
    prompts = [p for path in SECTION_NOTEBOOKS for p in _prompts(path)[0]]
    predict = [p for p in prompts if p.startswith(PREDICT)]
    assert prompts and 0.28 <= len(predict) / len(prompts) <= 0.5, (len(predict), len(prompts))


@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=_rel)
def test_every_section_ends_with_a_takeaway_box(path):
    cells = markdown_cells(path)
    last = cells[-1][1]
    assert TAKEAWAY in last, f"the last Markdown cell has no '{TAKEAWAY}' box"
    bullets = re.findall(r"^\s*>?\s*[-*]\s+(.*)", last, re.M)
    assert 3 <= len(bullets) <= 5, f"{len(bullets)} takeaways (want 3-5)"
    chapter = "17" if path.name.startswith("17_") else "8"
    for bullet in bullets:
        links = re.findall(r"\]\(([^)]*exercises/(ex\d+_\d+)\.ipynb)\)", bullet)
        assert links, f"takeaway without a link to its exercise: {bullet}"
        for target, name in links:
            assert (path.parent / target).resolve().exists(), f"broken link {target}"
            assert name.startswith(f"ex{chapter}_"), f"{name} is not a Chapter {chapter} exercise"


# --- display maths stands alone -----------------------------------------------------------------

def display_math_inside_paragraphs(text: str) -> list[str]:
    """Each $$...$$ block of a Markdown cell that shares a paragraph with text (MyST, hence the
    book, typesets display maths only as its own paragraph; inside one it garbles)."""
    found = []
    for m in re.finditer(r"\$\$.*?\$\$", text, re.S):
        before = text[:m.start()].rsplit("\n", 1)
        after = text[m.end():].split("\n", 1)
        line_before = before[-1].strip()
        line_after = after[0].strip()
        prev_line = before[0].rsplit("\n", 1)[-1].strip() if len(before) > 1 else ""
        next_line = after[1].split("\n", 1)[0].strip() if len(after) > 1 else ""
        if line_before or line_after.strip(".,;") or prev_line or next_line:
            found.append(text[m.start():m.end()][:60])
    return found


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_display_maths_is_its_own_paragraph(path):
    bad = [f"line {n}: {block}" for n, text in markdown_cells(path)
           for block in display_math_inside_paragraphs(text)]
    assert not bad, "put a blank line before and after each $$...$$ block: " + "; ".join(bad)


def test_the_display_maths_rule_can_fail():
    assert display_math_inside_paragraphs("Keeping it saves\n$$V = p T$$\nwhere p is ...")
    assert display_math_inside_paragraphs("so $$a = b$$ inline")
    assert not display_math_inside_paragraphs("Keeping it saves\n\n$$V = p T,$$\n\nwhere p")
    assert not display_math_inside_paragraphs("$$\nV = p\\,T\n$$\n")
