"""Ledger entries of 8.1 and 8.2 (8.2.1, 8.2.3, 8.2.4): every one agrees or carries a note."""

from __future__ import annotations

import pytest

from companion.ledger import Entry
from companion.ledger_entries import ch08_1, ch08_2

ENTRIES = ch08_1.entries() + ch08_2.entries()


def test_entries_are_well_formed():
    assert all(isinstance(e, Entry) for e in ENTRIES)
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))
    assert 50 <= len(ENTRIES) <= 80
    for e in ENTRIES:
        assert e.id.startswith(e.section + "/"), e.id
        assert e.section == "8.1" or e.section.startswith(("8.1.", "8.2."))
        assert e.source == "calc"


def test_sections_are_split_by_module():
    assert all(e.section.startswith("8.1") for e in ch08_1.entries())
    assert {e.section for e in ch08_2.entries()} == {"8.2.1", "8.2.2", "8.2.3", "8.2.4"}


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_agrees_or_is_explained(e):
    assert e.agrees or e.note, f"{e.id}: printed {e.printed}, computed {e.value}"
    if e.rounding != "printed":
        assert e.note


def test_every_entry_agrees():
    # none of 8.1-8.2's numbers is an erratum; looser roundings are none either
    assert [e.id for e in ENTRIES if not e.agrees] == []


def test_the_stalled_interval_row_shows_its_note_once():
    # the calculation and the simulator both reproduce "about 123 ms" (8.1.1); the listing
    # puts them in one row, which says how the chapter rounded once, not twice
    from companion import ledger

    html = ledger.show("8.1")._repr_html_()
    assert html.count("rounds the half up to 123") == 1
