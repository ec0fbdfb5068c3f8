"""The ledger: every printed number re-derived; a disagreement must carry a note."""

import ast
import math
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
