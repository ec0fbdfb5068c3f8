"""The companion's figures reach a notebook without plotly's renderer module (which imports
nbformat, jsonschema and a Lark grammar: seconds before the first figure), with exactly the
bundle of the rounding renderer (companion.display), and plotly still decides wherever it
would pick another renderer."""

from __future__ import annotations

import json
import sys

import IPython
import pytest

from companion import display, plots, specs
from companion.explorers import common


def test_figures_are_the_companion_figure_class():
    import plotly.graph_objects as go

    fig = plots.roofline_figure(specs.H100_SXM, [])
    assert type(fig).__module__ == common.__name__ and isinstance(fig, go.Figure)


def test_bundle_is_the_rounding_renderers():
    import plotly.io as pio

    fig = plots.roofline_figure(specs.H100_SXM, [])
    saved = pio.renderers.default
    try:
        pio.renderers.default = "plotly_mimetype"
        display.install()
        renderer = pio.renderers[display.RENDERER_PREFIX + "plotly_mimetype"]
        assert display.figure_mimebundle(fig) == renderer.to_mimebundle(fig.to_dict())
    finally:
        pio.renderers.default = saved


def test_outside_a_kernel_plotly_decides():
    assert not common.plain_mimetype_default()  # pytest is no ipykernel shell


@pytest.fixture
def kernel_shell(monkeypatch):
    """plain_mimetype_default() as inside an ipykernel kernel with plotly's renderers unloaded."""
    class ZMQInteractiveShell:
        pass

    ZMQInteractiveShell.__module__ = "ipykernel.zmqshell"
    monkeypatch.setattr(IPython, "get_ipython", lambda: ZMQInteractiveShell())
    monkeypatch.delitem(sys.modules, "plotly.io._renderers", raising=False)
    for name in common._OTHER_RENDERER_ENV + ("COMPANION_STATIC_OUTPUTS",):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("variable, value", [("PLOTLY_RENDERER", "browser"), ("VSCODE_PID", "1"),
                                             ("COLAB_NOTEBOOK_ID", "1"),
                                             ("COMPANION_STATIC_OUTPUTS", "1")])
def test_environments_with_another_renderer_are_left_to_plotly(monkeypatch, kernel_shell,
                                                               variable, value):
    assert common.plain_mimetype_default()
    monkeypatch.setenv(variable, value)
    assert not common.plain_mimetype_default()


KERNEL_CELLS = [
    "import json, sys\nfrom companion import plots, specs\n"
    "fig = plots.roofline_figure(specs.H100_SXM, [])\nfig.show()\nfig",
    'print(json.dumps({"nbformat": "nbformat" in sys.modules,\n'
    '                  "renderers": "plotly.io._renderers" in sys.modules}))',
    "from companion import display\n"
    "print(json.dumps(display.figure_mimebundle(fig)))",
    "import plotly.io as pio\npio.renderers.default = 'json'\nfig.show()",
]


def test_in_a_kernel_figures_show_rounded_without_plotlys_renderer_module():
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", env={
        k: v for k, v in __import__("os").environ.items() if k != "COMPANION_STATIC_OUTPUTS"})
    try:
        outputs = []

        def hook(msg):
            if msg["msg_type"] in ("display_data", "execute_result", "stream", "error"):
                outputs.append(msg)

        for cell in KERNEL_CELLS:
            kc.execute_interactive(cell, timeout=300, output_hook=hook)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert not errors, errors
    shown = [m["content"]["data"] for m in outputs if m["msg_type"] in ("display_data",
                                                                         "execute_result")]
    printed = [json.loads(m["content"]["text"]) for m in outputs if m["msg_type"] == "stream"]
    assert printed[0] == {"nbformat": False, "renderers": False}
    # show(), then the figure as the cell's value: each time the rounded plotly bundle, then
    # the figure's words and numbers (its text alternative and data tables), nothing else
    assert [sorted(d) for d in shown[:4]] == [[display.PLOTLY_MIME],
                                              ["text/html", "text/plain"]] * 2
    assert shown[0] == shown[2] == printed[1]
    from companion import describe

    figure = printed[1][display.PLOTLY_MIME]
    assert shown[1] == shown[3] == {"text/html": describe.notes_html(figure),
                                    "text/plain": describe.text_alternative(figure)}
    assert shown[1]["text/plain"].startswith("Figure: ")
    # a renderer chosen through plotly is plotly's business: the json renderer's bundle only
    assert "application/json" in shown[4] and len(shown) == 5
