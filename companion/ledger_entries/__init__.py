"""Ledger entries, one module per chapter section (``ch08_1`` ... ``ch17_10``, ``sim_*``).

Each module defines ``entries() -> list[companion.ledger.Entry]`` built with
``companion.ledger.entry``; the value is always computed by ``companion.calc`` / ``companion.sim``.
"""
