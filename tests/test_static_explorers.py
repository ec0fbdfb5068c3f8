"""Static explorers (companion.explorers.static) and the PNG beside every figure
(companion.explorers.static_image): what the book and GitHub show without a kernel.

The PNG tests draw with plotly's static export (kaleido) in a real Chromium; without one they
skip with the reason, which `make test` lists in its last lines (under CI they fail instead,
as the browser tests do: tests/browser/lab_harness.unavailable)."""

from __future__ import annotations

import inspect
import io
import json
import re
import struct
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from companion import widgets
from companion.explorers import static_image as SI
from companion.explorers.static_image import STATIC_OUTPUTS_ENV, figure_png, use_in_notebooks
from companion.explorers import static as S
from companion.explorers.base import Panel

ROOT = Path(__file__).resolve().parents[1]
PANELS = sorted((obj for obj in (getattr(widgets, n) for n in widgets.__all__)
                 if inspect.isclass(obj) and issubclass(obj, Panel) and obj is not Panel),
                key=lambda c: c.__name__)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_BUDGET_BYTES = 40_000
# the largest PNGs and every kind of figure: subplots with log axes, bars, heatmaps
BIG_PANELS = ["DecodeBatchPanel", "PagedKVPanel", "MemoryHierarchyPanel",
              "PipelineBubblePanel", "PrecisionGridPanel", "RooflinePanel"]


@pytest.fixture(scope="module")
def chromium():
    """Chromium for kaleido, or the test skips (fails under CI) saying what is missing."""
    missing = SI.chromium_missing()
    if missing:
        sys.path.insert(0, str(ROOT / "tests" / "browser"))
        try:
            import lab_harness
        finally:
            sys.path.remove(str(ROOT / "tests" / "browser"))
        lab_harness.unavailable(f"{missing}: the PNG tests draw with plotly's static export "
                                "(kaleido) in Chromium")
    return SI.find_chromium()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from the PNG's IHDR chunk."""
    assert png.startswith(PNG_SIGNATURE) and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def pixels(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_every_panel_names_a_main_control(cls):
    assert cls.main_control in {c.name for c in cls.controls}, (
        f"{cls.__name__}.main_control = {cls.main_control!r} is not one of its controls")


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_static_figure_steps_through_the_main_control(cls):
    panel = cls()
    figure = panel.static_figure()
    go.Figure(figure)  # plotly accepts it as it is stored
    meta = figure["layout"]["meta"][S.META_KEY]
    slider = figure["layout"]["sliders"][0]
    main = next(c for c in cls.controls if c.name == cls.main_control)
    values = meta["values"]
    assert len(slider["steps"]) == len(values) == len(meta["readouts"]) >= 2
    assert values == sorted(values) or main.kind == "choice"
    # it opens at the chapter's setting, with that setting's readout
    assert values[slider["active"]] == panel.params[main.name]
    assert meta["readouts"][slider["active"]] == panel.readout_html(panel.compute(**panel.params))
    # every step's readout is the panel's own computation at that value
    for value, readout in list(zip(values, meta["readouts"]))[::5]:
        assert readout == panel.readout_html(panel.compute(**dict(panel.params, **{main.name: value})))
    # the other controls are listed at their values and say how to move them
    others = {o["label"] for o in meta["others"]}
    assert others == {c.label for c in cls.controls if c.name != main.name}
    assert meta["hint"] == S.MOVE_ME
    # moving the slider changes the figure (not only the readout)
    assert any(step["args"][0] for step in slider["steps"]), (
        f"{cls.__name__}: {main.name} changes no trace; pick a main control that does")
    # steps shrink until it fits; a choice control keeps all its options
    size = S.stored_size(figure)
    assert size <= S.BUDGET_BYTES or main.kind == "choice", f"{cls.__name__}: {size:,} bytes"


@pytest.mark.parametrize("cls", [widgets.RequestTimelinePanel, widgets.SchedulePanel,
                                 widgets.DecodeBatchPanel], ids=lambda c: c.__name__)
def test_static_figure_is_deterministic(cls):
    first = json.dumps(cls().static_figure(), sort_keys=True)
    assert json.dumps(cls().static_figure(), sort_keys=True) == first


def test_a_slider_step_restores_exactly_its_own_figure():
    # applying step k's update to the figure at the chapter's setting gives step k's figure
    panel = widgets.KVCapacityPanel()
    figure = panel.static_figure()
    slider = figure["layout"]["sliders"][0]
    meta = figure["layout"]["meta"][S.META_KEY]
    k = 0 if slider["active"] else len(slider["steps"]) - 1
    traces, layout, indices = slider["steps"][k]["args"]
    expected = panel.figure(panel.compute(**dict(panel.params, prompt_tokens=meta["values"][k])))
    for prop, per_trace in traces.items():
        for index, value in zip(indices, per_trace):
            want = getattr(expected.data[index], prop)
            want = list(want) if isinstance(want, tuple) else want
            if isinstance(value, list) and value and isinstance(value[0], float):
                assert value == pytest.approx(list(want), rel=1e-3)
            elif prop not in ("line", "marker"):
                assert value == want, prop
    assert not layout or set(layout) <= set(expected.layout.to_plotly_json())


def test_control_values_cover_the_range_on_the_grid():
    panel = widgets.KVCapacityPanel()
    prompt = next(c for c in panel.controls if c.name == "prompt_tokens")
    values = S.control_values(prompt, 25, include=[8192])
    assert values[0] == prompt.min and values[-1] == prompt.max and 8192 in values
    # a prompt spanning 256x has log-spaced stops: the static slider offers the live one's
    assert values == prompt.stops() and prompt.ladder is not None
    assert all(1 < b / a <= 2 for a, b in zip(values, values[1:]))   # no stop jumps > 2x
    assert values[1] - values[0] < values[-1] - values[-2]  # geometric over 256x
    linear = next(c for c in widgets.SnapshotSpacingPanel.controls
                  if c.name == "snapshot_mib")          # a float: no ladder, 25 grid values
    values = S.control_values(linear, 25)
    assert len(values) == 25 and linear.ladder is None
    budget = next(c for c in panel.controls if c.name == "kv_budget_gib")
    assert all(isinstance(v, float) for v in S.control_values(budget, 10))
    model = next(c for c in panel.controls if c.name == "model")
    assert S.control_values(model) == list(model.options.values())
    with pytest.raises(ValueError, match="steps"):
        S.control_values(linear, 1)


def test_static_figure_names_a_wrong_control():
    with pytest.raises(ValueError, match="control"):
        widgets.KVCapacityPanel().static_figure(control="no_such_control")


def test_round_figure_keeps_four_significant_digits_and_structure():
    assert S.round_figure({"x": [1234567.0, 0.000123456, 3, "a", None, 0.0]}) == \
        {"x": [1235000.0, 0.0001235, 3, "a", None, 0.0]}


def test_show_returns_the_live_explorer_and_adds_static_outputs_only_when_asked(monkeypatch):
    # the PNG itself is drawn by Chromium (tested below); here only which parts are there
    monkeypatch.setattr(S, "png_bundle", lambda fig: {"image/png": "PNG"})
    panel = widgets.RooflinePanel()
    shown = panel.show()
    assert shown.widget is panel._ui and shown.children == panel._ui.children
    monkeypatch.delenv(STATIC_OUTPUTS_ENV, raising=False)
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {S.WIDGET_MIME, "text/plain"}
    assert "explorer" in bundle["text/plain"]
    monkeypatch.setenv(STATIC_OUTPUTS_ENV, "1")
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {S.WIDGET_MIME, "text/plain", S.PLOTLY_MIME, "image/png"}
    assert bundle[S.PLOTLY_MIME]["layout"]["sliders"]


def test_png_is_760_px_wide_by_the_layout_height(chromium):
    tall = go.Figure(go.Bar(y=[1, 2]), layout=dict(height=333))
    assert png_size(figure_png(tall)) == (SI.WIDTH_PX, 333) == (760, 333)
    # no height: plotly's default, 450 (also from a figure dict, as the renderer passes it)
    assert png_size(figure_png(go.Figure(go.Bar(y=[1, 2])).to_dict())) == (760, 450)


def test_png_shows_a_red_line_where_plotly_js_puts_it(chromium):
    # plot area 50..710 px across, 50..350 px down; y = 7.5 of 0..10 -> row 125;
    # x = 2..8 of 0..10 -> columns 182..578
    figure = {"data": [{"type": "scatter", "x": [2, 8], "y": [7.5, 7.5], "mode": "lines",
                        "line": {"color": "#ff0000", "width": 6}}],
              "layout": {"height": 400, "showlegend": False,
                         "margin": {"l": 50, "r": 50, "t": 50, "b": 50, "pad": 0},
                         "xaxis": {"range": [0, 10], "automargin": False},
                         "yaxis": {"range": [0, 10], "automargin": False}}}
    image = pixels(figure_png(figure))

    def red(x, y):
        r, g, b = image.getpixel((x, y))
        return r > 200 and g < 80 and b < 80

    assert all(red(x, 125) for x in range(190, 571, 10))
    assert not any(red(x, 125) for x in (60, 170, 590, 700))       # only between x = 2 and 8
    column = [y for y in range(400) if red(380, y)]
    assert column and 121 <= min(column) and max(column) <= 129    # 6 px thick, at y = 7.5
    assert not any(red(x, y) for x in range(0, 760, 20) for y in (100, 150, 200, 300))


@pytest.mark.parametrize("name", BIG_PANELS)
def test_png_of_a_panel_figure_is_small(chromium, name):
    figure = getattr(widgets, name)().figure()
    png = figure_png(figure)
    assert png_size(png) == (760, figure.layout.height or 450)
    assert 2_000 < len(png) < PNG_BUDGET_BYTES, f"{name}: {len(png):,} bytes"
    assert len(pixels(png).getcolors(256)) <= SI.COLOURS   # the palette keeps it small


def test_png_is_the_same_every_time(chromium):
    figure = widgets.PagingPanel().figure()
    assert figure_png(figure) == figure_png(figure)


def test_without_chromium_the_error_names_chromium_path(monkeypatch):
    monkeypatch.setenv("CHROMIUM_PATH", "/no/such/chromium")
    monkeypatch.setattr(SI, "_server", None)
    with pytest.raises(RuntimeError, match="CHROMIUM_PATH=/no/such/chromium"):
        figure_png(go.Figure(go.Bar(y=[1, 2])))


def test_the_page_kaleido_draws_in_loads_only_local_files():
    page = SI.page_generator().generate_index()
    sources = re.findall(r"""src=["']([^"']+)""", page)
    assert SI.plotly_js_path().as_uri() in sources and SI.plotly_js_path().is_file()
    assert all(src.startswith("file:///") for src in sources), sources
    assert "mathjax" not in page.lower()


def test_png_renderer_joins_plotly_mimetype_only_when_static_outputs_are_written(monkeypatch):
    import plotly.io as pio

    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    monkeypatch.setattr(SI, "figure_png", lambda fig: PNG_SIGNATURE)  # no Chromium needed here
    monkeypatch.delenv(STATIC_OUTPUTS_ENV, raising=False)
    use_in_notebooks()
    assert pio.renderers.default == "plotly_mimetype"
    monkeypatch.setenv(STATIC_OUTPUTS_ENV, "1")
    use_in_notebooks()
    assert pio.renderers.default == "plotly_mimetype+companion_png"
    bundle = pio.renderers._build_mime_bundle(go.Figure(go.Bar(y=[1, 2])).to_dict())
    assert bundle["image/png"] and "application/vnd.plotly.v1+json" in bundle
    monkeypatch.setattr(pio.renderers, "default", "browser")
    use_in_notebooks()
    assert pio.renderers.default == "browser"  # outside a kernel nothing changes
