"""The ledger: every printed number re-derived; a disagreement must carry a note."""

import ast
import json
import math
import re
from pathlib import Path

import pytest

from companion import ledger

ENTRIES = ledger.entries()
LEDGER_DIR = Path(ledger.__file__).parent / "ledger_entries"

CH08_SECTIONS = [f"8.{i}" for i in range(1, 7)]
CH17_SECTIONS = [f"17.{i}" for i in range(1, 11)]


def test_ledger_is_substantial():
    # Both chapters print roughly 400 numbers that follow from stated inputs.
    assert len(ENTRIES) >= 300, len(ENTRIES)


@pytest.mark.parametrize("section", CH08_SECTIONS + CH17_SECTIONS)
def test_every_section_is_covered(section):
    assert ledger.by_section(section), f"no ledger entry for section {section}"


def test_no_disagreement_without_a_note():
    silent = [f"{e.id}: printed {e.printed} {e.unit}, computed {e.value:.6g}"
              for e in ENTRIES if not e.agrees and not e.note]
    assert not silent, "\n".join(silent)


def test_declared_roundings_carry_notes():
    assert all(e.note for e in ENTRIES if e.rounding != "printed")


def test_values_are_finite_and_fields_filled():
    for e in ENTRIES:
        assert math.isfinite(e.value), e.id
        assert e.claim and e.unit and e.section, e.id
        assert e.section.split(".")[0] in ("8", "17"), e.id


def test_printed_rounding_rule():
    e = ledger.entry("x", "8.1.1", "t", "6.95", "s", 6.9525)
    assert e.agrees and e.tolerance == pytest.approx(0.005)
    assert not ledger.entry("x", "8.1.1", "t", "6.95", "s", 6.956).agrees
    assert ledger.entry("x", "17.5", "t", "760", "seq", 763.4, sig=2, note="2 s.f.").agrees
    assert ledger.entry("x", "8.2.3", "t", "131,328", "pairs", 131328).printed_value == 131328
    with pytest.raises(ValueError, match="note"):
        ledger.entry("x", "17.5", "t", "760", "seq", 763.4, sig=2)
    with pytest.raises(ValueError, match="printed"):
        ledger.entry("x", "8.1.1", "t", "about 7", "s", 7.0)
    with pytest.raises(TypeError, match="printed"):
        ledger.entry("x", "8.1.1", "t", 7.0, "s", 7.0)


def _literal_number(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))


@pytest.mark.parametrize("path", sorted(LEDGER_DIR.glob("*.py")), ids=lambda p: p.name)
def test_values_are_computed_not_copied(path):
    """An entry's value must be an expression that computes, never a bare number literal."""
    tree = ast.parse(path.read_text())
    offenders = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "entry":
            value = node.args[5] if len(node.args) > 5 else next(
                (k.value for k in node.keywords if k.arg == "value"), None)
            if value is not None and _literal_number(value):
                offenders.append(node.lineno)
    assert not offenders, f"{path.name}: literal values at lines {offenders}"


def test_table_renders():
    text = ledger.table("8.1")
    assert "chapter" in text and "companion" in text


# --- rendering: "≈" with its reason, display units, the HTML table -------------------------------

APPROXIMATE = [e for e in ENTRIES if e.approximate]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_widened_agreement_is_not_a_plain_agreement():
    ttft = ledger.entry("x", "17.6", "t", "370", "ms", 356.4, tol=15, note="rounded chunks")
    assert ttft.agrees and ttft.approximate and ttft.status == "≈"
    assert "within 15 ms of the printed 370 ms" in ttft.reason and "rounded chunks" in ttft.reason
    # the same declared rounding, but the value rounds to the printed number: a plain agreement
    close = ledger.entry("x", "17.6", "t", "370", "ms", 370.2, tol=15, note="rounded chunks")
    assert close.status == "agrees" and not close.reason
    wrong = ledger.entry("x", "17.6", "t", "370", "ms", 300.0, tol=15, note="a slip")
    assert wrong.status == "disagrees" and "a slip" in wrong.reason


def test_the_ledger_has_widened_entries_such_as_17_6_ttft():
    ids = {e.id for e in APPROXIMATE}
    assert {"17.6/ttft-ms", "17.6/sim-ttft-chunked-ms"} <= ids
    assert len(APPROXIMATE) >= 20


@pytest.mark.parametrize("e", APPROXIMATE, ids=lambda e: e.id)
def test_every_widened_entry_renders_approx_and_its_reason(e):
    text = ledger.table(ids=[e.id])
    row = text.splitlines()[1]
    assert row.rstrip().endswith("≈ [1]") and " yes" not in row
    assert _flat(f"[1] {e.id} ≈: {e.reason}") in _flat(text)
    assert _flat(e.note) in _flat(text)
    html = ledger.html_table(ids=[e.id])
    assert "<td>≈</td>" in html and "✓" not in html
    from html import escape
    assert escape(e.note) in html and escape(e.rounding_text) in html


def test_the_decode_step_entry_is_not_labelled_as_the_iteration():
    e = next(e for e in ENTRIES if e.id == "17.6/decode-step-ms")
    assert "iteration" not in e.claim and "decode step" in e.claim


@pytest.mark.parametrize("printed, unit, expected", [
    ("3.35e12", "B/s", ("3.35", 1e12, "TB/s", 2)),
    ("3.2e14", "FLOP/s", ("320", 1e12, "TFLOP/s", 0)),
    ("128e12", "FLOP", ("128", 1e12, "TFLOP", 0)),
    ("21.0e9", "B", ("21.0", 1e9, "GB", 1)),
    ("6.95", "s", ("6.95", 1.0, "s", 2)),
    ("16,381,470,720", "bytes", ("16,381,470,720", 1.0, "bytes", 0)),
])
def test_display_number_uses_si_units_for_exponent_prints(printed, unit, expected):
    text, scale, shown_unit, decimals = ledger.display_number(printed, unit)
    assert (text, shown_unit, decimals) == (expected[0], expected[2], expected[3])
    assert scale == pytest.approx(expected[1])


def test_values_render_with_sensible_digits():
    text = ledger.table()
    assert "3,350,000,000,000" not in text and ".000000" not in text
    attainable = next(line for line in text.splitlines() if "min(989e12, 1 x 3.35e12)" in line)
    assert "3.350" in attainable and "TFLOP/s" in attainable


def test_html_table_has_every_full_claim_grouped_by_section():
    from html import escape

    html = ledger.html_table()
    assert html == ledger.html_table()          # deterministic: nbval compares it
    for e in ENTRIES:
        assert escape(e.claim) in html, e.id   # never truncated
    headers = [line for line in html.splitlines() if line.startswith('<tr><th colspan="6"')]
    assert len(headers) == len(ledger.sections())
    long_claim = max(ENTRIES, key=lambda e: len(e.claim))
    assert len(long_claim.claim) > 48 and escape(long_claim.claim) in html
    assert html.count("<strong>Erratum") == len(ledger.disagreements())


def test_display_number_names_a_bad_argument():
    with pytest.raises(TypeError, match="printed"):
        ledger.display_number(3.35e12, "B/s")
    with pytest.raises(ValueError, match="printed"):
        ledger.display_number("about 3", "B/s")
    with pytest.raises(TypeError, match="unit"):
        ledger.display_number("3.35e12", None)


# --- the section notebooks' folded view ----------------------------------------------------------

def test_folded_rows_keep_every_entry_once_and_join_only_a_formula_with_its_simulation():
    groups = ledger.folded_rows()
    ids = [e.id for g in groups for e in g]
    assert sorted(ids) == sorted(e.id for e in ENTRIES)          # nothing lost, nothing twice
    joined = [g for g in groups if len(g) > 1]
    assert joined, "no claim is checked by both the closed form and the simulator"
    for calc_entry, *rest in joined:
        assert len(rest) == 1 and calc_entry.source == "calc" and rest[0].source == "sim"
        sim_entry = rest[0]
        assert (calc_entry.section, calc_entry.printed, calc_entry.unit) == (
            sim_entry.section, sim_entry.printed, sim_entry.unit)


def test_a_folded_section_shows_each_printed_number_once():
    # 8.3.1's eleven numbers are each re-derived by the closed form and by the simulator: the
    # plain table lists 22 rows, the folded view one row per number, checked two ways
    view = ledger.show("8.3.1")
    assert len(ledger.by_section("8.3.1")) == 2 * len(view.groups)
    html = view._repr_html_()
    assert html.startswith('<details class="companion-ledger">')     # folded, no erratum
    assert html.count("<tr class=") == len(view.groups)
    assert html.count("closed form + simulator") == len(view.groups)
    assert "11 printed numbers re-derived" in repr(view)


def test_a_folded_section_with_an_erratum_opens_and_says_so():
    errata = {e.section for e in ledger.disagreements()}
    section = sorted(errata)[0]
    view = ledger.show(section)
    assert view._repr_html_().startswith('<details class="companion-ledger" open>')
    n = sum(e.status == "disagrees" for e in ledger.by_section(section))
    assert f"{n} errat" in view.summary()
    assert view._repr_html_().count("<strong>Erratum") >= 1


def _listing_notes(html: str) -> list[str]:
    import re

    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[-1]
            for row in re.findall(r"<tr class=[^>]*>(.*?)</tr>", html, re.S)]


def test_a_listing_prints_each_note_once():
    # every section's listing: a note several rows share is printed in the first row only, the
    # others point to it (8.4.4's eight records of Exercise 8-6 share one note)
    for section in sorted({e.section for e in ledger.entries()}):
        notes = [n for n in _listing_notes(ledger.show(section)._repr_html_()) if n]
        full = [n for n in notes if not n.startswith("(see the note on")]
        assert len(full) == len(set(full)), section
    notes = _listing_notes(ledger.show("8.4.4")._repr_html_())
    assert sum(n.startswith("(see the note on") for n in notes) >= 2


def test_the_note_once_rule_can_fail():
    html = ("<tr class=a><td>x</td><td>same note</td></tr>"
            "<tr class=a><td>y</td><td>same note</td></tr>")
    full = [n for n in _listing_notes(html) if n]
    assert len(full) != len(set(full))


def test_show_names_what_it_could_not_find():
    with pytest.raises(ValueError, match="ledger.show: no entry"):
        ledger.show(ids=["no/such-entry"])


SECTION_NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("ch*/*.ipynb"))


@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=lambda p: p.stem)
def test_section_notebooks_fold_their_ledger_listings(path):
    # the plain table's note footnote and its column header must not appear in a section
    # notebook: its listings are folded views (the full ledger stays in ledger.ipynb)
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert "see the entry's note" not in text, path.name
            assert not re.search(r"^section\s+claim\s+chapter", text, re.M), path.name
            html = "".join(out.get("data", {}).get("text/html", ""))
            if 'class="companion-ledger"' in html:
                assert html.startswith('<details class="companion-ledger"'), path.name


def test_every_entry_lies_under_its_modules_declared_sections():
    # a section notebook computes only the modules whose SECTIONS may hold its entries
    # (ledger._collect); an entry outside its module's declaration would silently drop out
    for module in ledger._modules():
        for e in module.entries():
            assert any(e.section == d or e.section.startswith(d + ".") for d in module.SECTIONS), \
                f"{module.__name__}: {e.id} lies in {e.section}, outside SECTIONS {module.SECTIONS}"


def test_every_id_starts_with_its_section():
    # show(ids=...) picks the modules to compute from the ids' sections
    assert [e.id for e in ENTRIES if e.id.split("/")[0] != e.section] == []


@pytest.mark.parametrize("prefix", ["8", "8.3", "8.3.2", "8.1.1", "17", "17.1", "17.10", "17.5"])
def test_a_section_computed_alone_is_the_whole_ledgers_part(prefix):
    under = [e.id for e in ENTRIES if e.section == prefix or e.section.startswith(prefix + ".")]
    assert [e.id for e in ledger.by_section(prefix)] == under
    some = under[::3]
    assert [e.id for e in ledger._rows(None, some)] == [i for i in under if i in some]
