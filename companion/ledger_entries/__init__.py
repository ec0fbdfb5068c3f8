"""Ledger entries, one module per chapter section (``ch08_1`` ... ``ch17_10``, ``sim_*``).

Each module defines ``entries() -> list[companion.ledger.Entry]`` built with
``companion.ledger.entry``; the value is always computed by ``companion.calc`` / ``companion.sim``.
Each also declares ``SECTIONS``, the sections its entries lie in or under, so that a notebook
that lists one section computes only the modules that can hold it (tests/test_ledger.py checks
every entry against its module's declaration).
"""
