"""Figure builders by topic; import them through ``companion.plots``."""

from companion.figures._static_image import use_in_notebooks as _use_png_renderer

# only while `make execute` writes outputs for readers without JavaScript (a PNG beside each
# plotly figure); otherwise this does nothing and imports nothing
_use_png_renderer()
