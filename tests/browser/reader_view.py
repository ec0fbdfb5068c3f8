"""What a reader sees of a section notebook after Run All, checked the same way in JupyterLab
and in the lite site (tests/browser/test_reading_in_lab.py, test_lite_site.py).

``check_reader_view(page, nb, n_code)``, on a notebook just opened (``lab_harness.open_notebook``)
and not yet run, as a reader runs it (no fold opened by the check):

1. it opens with its depth sections folded (one "cells hidden" button per collapsed heading);
2. Run All finishes with no error output, and the folds are still closed;
3. no visible code cell shows source that writes prose or an answer (``md(``/``answer(``);
4. every worked answer is closed, and opening the first one in view shows its text;
5. every explorer in the kernel still sits at the chapter's setting and its controls show it
   (asked of the page's own kernel through the app, so it works on Pyodide too).

It returns the counts a note reports: code cells showing their source, cells showing only
their output, folds closed.
"""

from __future__ import annotations

import json
import re
import sys

import lab_harness as H

sys.path.insert(0, str(H.ROOT / "tools"))
import reading_stats  # noqa: E402

# every code cell in view: the text of its source editor when that shows, else None (a hidden
# source; a cell under a collapsed heading is not in view at all: offsetParent is null)
VISIBLE_CODE_JS = """(active) => [...document.querySelectorAll(active + ' .jp-CodeCell')]
    .filter(c => c.offsetParent !== null)
    .map(c => { const e = c.querySelector('.jp-InputArea-editor');
                return e && e.offsetParent !== null ? e.innerText : null; })"""

# runs ``code`` in the current notebook's kernel (not in a cell: nothing shows on the page)
# and returns what it printed
KERNEL_PRINT_JS = """async (code) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel.sessionContext.session.kernel;
    const future = kernel.requestExecute({code, silent: false, store_history: false});
    let out = '';
    future.onIOPub = msg => {
        if (msg.header.msg_type === 'stream' && msg.content.name === 'stdout') out += msg.content.text;
        if (msg.header.msg_type === 'error') out += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
    };
    await future.done;
    return out; }"""

# every shown panel: its parameters equal its defaults (a float within half its slider's step:
# a slider snaps a default that is off its grid), and its widgets show its parameters
EXPLORERS_AT_DEFAULTS = r'''
def __explorers_at_defaults():
    import json
    from companion.explorers.base import Panel
    out = {}
    for name, obj in list(get_ipython().user_ns.items()):
        if not isinstance(obj, Panel) or getattr(obj, "_ui", None) is None:
            continue
        steps = {c.name: getattr(c, "step", None) or 0 for c in obj.controls}

        def differs(a, b, k):
            if isinstance(a, float) and isinstance(b, (int, float)):
                return abs(a - b) > steps[k] / 2 + 1e-9
            return a != b
        moved = {k: repr([obj.params[k], v]) for k, v in obj.defaults().items()
                 if differs(obj.params[k], v, k)}
        shown = {k: repr([w.value, obj.params[k]]) for k, w in getattr(obj, "_widgets", {}).items()
                 if k in obj.params and differs(w.value, obj.params[k], k)}
        out[name] = {"moved": moved, "widgets_differ": shown}
    print(json.dumps(out))
__explorers_at_defaults()
del __explorers_at_defaults
'''


def top_level_folds(nb: dict) -> int:
    """How many collapsed headings a reader sees (one inside another shows as one)."""
    return sum(opens for _, _, opens in reading_stats.fold_walk(nb["cells"]))


def explorers_state(page) -> dict:
    printed = page.evaluate(KERNEL_PRINT_JS, EXPLORERS_AT_DEFAULTS)
    assert not printed.startswith("ERROR"), printed
    return json.loads(printed)


def check_reader_view(page, nb: dict, n_code: int, run_all_ms: int = 240_000) -> dict:
    folds = top_level_folds(nb)
    assert page.locator(H.FOLD_BUTTON).count() == folds, "depth sections open folded"

    H.run_all_cells(page, n_code, timeout_ms=run_all_ms, open_folds=False)
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    assert page.locator(H.FOLD_BUTTON).count() == folds, "Run All leaves the folds closed"

    shown = page.evaluate(VISIBLE_CODE_JS, H.ACTIVE)
    sources = [s for s in shown if s is not None]
    prose = [s.splitlines()[0] for s in sources if reading_stats.PROSE_CALL.search(s)]
    assert prose == [], f"visible code cells that write prose: {prose}"

    answers = page.locator(f"{H.ACTIVE} .jp-OutputArea-output details",
                           has=page.locator("summary", has_text=re.compile("Worked answer")))
    assert answers.count() >= 1
    assert all(not answers.nth(i).evaluate("d => d.open") for i in range(answers.count()))
    # the first answer in view (one under a folded section is not)
    in_view = [i for i in range(answers.count())
               if answers.nth(i).evaluate("d => d.offsetParent !== null")]
    assert in_view, "no worked answer outside the folds"
    first = answers.nth(in_view[0])
    body = first.locator(":scope > :not(summary)").first
    first.scroll_into_view_if_needed()
    assert not body.is_visible(), "a worked answer shows before the reader opens it"
    first.locator("summary").click()
    body.wait_for(state="visible")
    assert len(first.inner_text().split()) > 10

    state = explorers_state(page)
    assert state, "no explorer found in the kernel"
    moved = {name: s for name, s in state.items() if s["moved"] or s["widgets_differ"]}
    assert moved == {}, f"explorers left away from the chapter's setting: {moved}"
    assert not H.page_problems(page, H.ACTIVE)
    return {"source_shown": len(sources), "output_only": len(shown) - len(sources),
            "folds": folds, "explorers": len(state)}


def check_fresh_exercise(page, nb: dict, n_code: int, run_all_ms: int = 240_000) -> int:
    """A fresh exercise (empty answers) as a student first runs it: Run All goes to the end
    with no error output and no traceback, and every check cell says, in amber, that its parts
    are not answered yet (none red, none green). Returns the number of check cells."""
    H.run_all_cells(page, n_code, timeout_ms=run_all_ms)
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    assert page.locator(f"{H.ACTIVE} .jp-OutputArea-output", has_text="Traceback").count() == 0
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    checks = [i for i, c in enumerate(code) if "grading.checks()" in "".join(c["source"])]
    assert checks, "the exercise has no check cell"
    cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
    for i in checks:
        cell = cells.nth(i)
        amber = cell.locator(".companion-verdict-open")
        assert amber.count() >= 1, f"check cell {i}: no amber 'not yet answered' verdict"
        assert "not yet answered" in " ".join(amber.all_inner_texts())
        assert cell.locator(".companion-verdict-off, .companion-verdict-ok").count() == 0, \
            f"check cell {i}: a red or green verdict on an empty answer"
    return len(checks)
