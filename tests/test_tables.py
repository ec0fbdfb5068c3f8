"""Every table a notebook shows is computed, and follows its inputs (issue 24, item 3).

Two rules:

1. **Each table builder follows its inputs.** Every builder of ``companion.tables`` (the
   notebooks print or render them through ``widgets``) is called with the chapter's inputs and
   with one input changed, and the rendered table must differ, in the row or header that input
   feeds: a typed cell or header would stay put. Builders read the chapters' inputs when
   called, so changing ``ch08``/``ch17`` (monkeypatched) changes them too.
2. **No chapter result typed into a code cell's string.** The constant parts of every string
   in a code cell of ``notebooks/`` and ``dashboards/`` (headers, labels, f-string text) are
   read like prose (``tests/test_prose.py`` rule 2): a number the ledger lists as printed by a
   chapter, and that is not one of its stated inputs, fails.
"""

from __future__ import annotations

import ast

import pytest

from companion import specs, tables, units
from companion.chapters import ch08, ch17
from companion.formulas.serving import SCHEMES, Scheme

import test_prose
from test_notation import _cells

Q8, L8, L70 = specs.QWEN3_8B, specs.LLAMA_8B, specs.LLAMA_70B
RTX, H100, H200 = specs.RTX_PRO_6000, specs.H100_SXM, specs.H200_SXM
ABCD = [SCHEMES[k] for k in "ABCD"]


def changed_lines(base: str, other: str) -> list[str]:
    """The lines of ``other`` that ``base`` does not have."""
    return [line for line in other.splitlines() if line not in base.splitlines()]


# builder -> (arguments at the chapter's setting, [(one input changed, text the change must
# show in the changed table)])
CASES = {
    "kv_capacity_text": (
        dict(model=Q8), [
            (dict(kv_budget_bytes=6 * units.GiB), "fit in 6 GiB"),
            (dict(block_tokens=256), "blocks of 256"),
            (dict(requests={"Long context": (16_384, 256)}), "16,639")]),
    "kv_format_text": (
        dict(model=Q8), [
            (dict(batch=8), "8 finished"),
            (dict(kv_budget_bytes=24 * units.GiB), "fit in 24 GiB"),
            (dict(prompt_tokens=4096), "4,096-token input")]),
    "verification_load_text": (
        dict(model=Q8, hardware=RTX, draft_len=4, contexts=(0, 128, 512, 2048)), [
            (dict(batches=(32, 256)), "verify / plain at b = 256"),
            (dict(draft_len=8), "x"),
            (dict(hardware=H100), "x")]),
    "decode_efficiency_text": (
        dict(), [
            (dict(hardware=H100), "at 3,350 GB/s"),
            (dict(context_tokens=8192), "GB"),
            (dict(batches=(1, 2), round_s=(0.03, 0.031)), "30.00 ms")]),
    "scheme_definition_markdown": (
        dict(schemes=ABCD), [
            (dict(shared_prefix_tokens=4096), "prefill only 4,096 new tokens"),
            (dict(schemes=ABCD[:2] + [Scheme("C", kv_format="q4_0")]), "q4_0 KV")]),
    "scheme_text": (
        dict(schemes=ABCD), [
            (dict(kv_budget_bytes=8 * units.GiB), "fits 8 GiB"),
            (dict(deadline_s=10), "within 10 s"),
            (dict(output_tokens=128), "127"),
            (dict(schemes=ABCD + [SCHEMES["E"]]), "E")]),
    "reservation_readings_markdown": (
        dict(model=L8, hardware=H100), [
            (dict(chapter_tokens=4000), "4,000 tokens"),
            (dict(max_len_tokens=32_768), "32,768 tokens"),
            (dict(hardware=H200), "tokens")]),
    "model_shapes_text": (
        dict(models=[L8, L70], hardware=H100), [
            (dict(context_tokens=32_000), "KV per 32,000-token sequence"),
            (dict(hardware=H200), "weights / one H200"),
            (dict(models=[L8, Q8]), "Qwen3-8B")]),
    "decision_table_text": (
        dict(), [
            (dict(chunk_tokens=128), "128-token"),
            (dict(prompt_tokens=32_000), "32,000"),
            (dict(output_lengths=[450] * 8), "100%")]),
    "decision_table_markdown": (
        dict(), [
            (dict(chunk_tokens=256), "256-token chunks"),
            (dict(prompt_tokens=16_000), "16,000 tokens")]),
    "levers_text": (
        dict(model=L8, hardware=H100), [
            (dict(hardware=H200), "GB"),
            (dict(model=L70), "320 KiB")]),
    "cheat_sheet_text": (
        dict(models=[L8, L70], hardware=H100), [
            (dict(hardware=H200), "GB"),
            (dict(models=[L8, Q8]), "Qwen3-8B")]),
}
# layout helpers, and the one table with no input (17 §10's map of mechanisms to levers is a
# list of names, with no number in it)
NOT_BUILDERS = {"text_table", "markdown_table", "columns", "mechanism_map_text"}


def follows(builder, base: dict, changes) -> list[str]:
    """Problems: each change whose table equals the base one, or lacks the text it must show."""
    reference = builder(**base)
    problems = []
    for change, shows in changes:
        table = builder(**{**base, **change})
        new = changed_lines(reference, table)
        if not new:
            problems.append(f"{sorted(change)} changed nothing")
        elif not any(shows in line for line in new):
            problems.append(f"{sorted(change)} changed {new[:2]} but not to show {shows!r}")
    return problems


def test_every_table_builder_is_checked():
    assert set(tables.__all__) - NOT_BUILDERS == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_table_follows_its_inputs(name):
    base, changes = CASES[name]
    problems = follows(getattr(tables, name), base, changes)
    assert not problems, f"{name}: " + "; ".join(problems)


def test_tables_read_the_chapters_inputs_when_called(monkeypatch):
    before = (tables.kv_capacity_text(Q8), tables.kv_format_text(Q8),
              tables.reservation_readings_markdown(L8, H100),
              tables.scheme_definition_markdown(ABCD))
    monkeypatch.setattr(ch08, "KV_BUDGET_BYTES", 20 * units.GiB)
    monkeypatch.setattr(ch08, "LONG_BATCH", 12)
    monkeypatch.setattr(ch08, "SHARED_PREFIX_TOKENS", 5120)
    monkeypatch.setattr(ch17, "LONG_CONTEXT_TOKENS", 6000)
    after = (tables.kv_capacity_text(Q8), tables.kv_format_text(Q8),
             tables.reservation_readings_markdown(L8, H100),
             tables.scheme_definition_markdown(ABCD))
    assert "fit in 20 GiB" in after[0] and "fit in 12 GiB" in before[0]
    assert "12 finished" in after[1] and "fit in 20 GiB" in after[1]
    assert "6,000 tokens" in after[2] and after[2] != before[2]
    assert "prefill only 3,072 new tokens" in after[3]


def test_the_follows_rule_can_fail():
    def typed(**_):           # a table typed once: the chapter's numbers, whatever the input
        return "request  fit in 12 GiB\nLong context  10"

    def half_typed(kv_budget_bytes=ch08.KV_BUDGET_BYTES):    # numbers follow, header typed
        n = int(kv_budget_bytes // (1188 * units.MiB))
        return f"request  fit in 12 GiB\nLong context  {n}"

    assert follows(typed, {}, [(dict(kv_budget_bytes=6 * units.GiB), "fit in 6 GiB")])
    assert follows(half_typed, {}, [(dict(kv_budget_bytes=6 * units.GiB), "fit in 6 GiB")])
    assert not follows(tables.kv_capacity_text, dict(model=Q8),
                       [(dict(kv_budget_bytes=6 * units.GiB), "fit in 6 GiB")])


# --- rule 2: code cells' strings --------------------------------------------------------------

def code_strings(source: str) -> list[str]:
    """The constant text of every string of a code cell (an f-string's literal parts; a
    formatted value is left out)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    inside = {id(c) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
              for c in node.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out += [c.value for c in node.values if isinstance(c, ast.Constant)]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in inside):
            out.append(node.value)
    return out


def typed_in_code(path) -> list[str]:
    return [f"line {line}: {hit}" for kind, line, source in _cells(path) if kind == "code"
            for text in code_strings(source) for hit in test_prose.typed_results(text)]


@pytest.mark.parametrize("path", test_prose.PROSE_SOURCES, ids=test_prose._rel)
def test_no_chapter_result_is_typed_into_a_code_string(path):
    problems = typed_in_code(path)
    assert not problems, ("chapter results typed into a code cell's string (compute them, or "
                          "name the chapter input):\n" + "\n".join(problems))


def test_the_code_string_rule_can_fail(tmp_path):
    result = next(p for p in test_prose.ledger_printed()
                  if "." in p and p not in test_prose.stated_inputs())
    path = tmp_path / "nb.py"
    path.write_text(f'# %%\nprint(f"{{x:.1f}} ms against the chapter\'s {result} ms")\n',
                    encoding="utf-8")
    assert typed_in_code(path)
    path.write_text('# %%\nprint(f"{x:.1f} ms against the chapter\'s {y:.2f} ms")\n',
                    encoding="utf-8")
    assert not typed_in_code(path)


def test_kv_format_table_prints_the_chapters_mib_exactly():
    # whole MiB as the other KV tables, and a scale's fraction in full (8.4.2's 631.125 MiB)
    text = tables.kv_format_text(Q8)
    assert "1,188 MiB" in text and "631.125 MiB" in text and "1,188.000" not in text
    assert "2.0000" not in text and "1.0625" in text
