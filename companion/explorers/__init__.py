"""Slider panels by topic; import them through ``companion.widgets``."""
