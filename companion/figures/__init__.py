"""Figure builders by topic; import them through ``companion.plots``."""
