"""Explorers by topic; import their figures through ``companion.plots`` and panels through ``companion.widgets``."""
