"""companion.display: every float of a figure is rounded on its way into a notebook, so that a
figure computed with another CPU's SIMD kernels stores the same JSON."""

from __future__ import annotations

import base64
import dataclasses
import math

import numpy as np
import pytest

from companion import display

go = pytest.importorskip("plotly.graph_objects")
pio = pytest.importorskip("plotly.io")


@pytest.mark.parametrize("x, expected", [
    (0.1 + 0.2, 0.3),
    (6.953500000000042, 6.9535),
    (1 / 3, 0.333333),
    (2 / 3, 0.666667),
    (16381470720.0, 16381500000.0),
    (-0.00012345678, -0.000123457),
    (1e22, 1e22),
    (0.0, 0.0),
])
def test_round_float_keeps_six_significant_digits(x, expected):
    assert display.round_float(x) == expected


def test_round_float_leaves_non_finite_values_and_rejects_bad_digits():
    assert math.isnan(display.round_float(float("nan")))
    assert display.round_float(float("-inf")) == float("-inf")
    for bad in (0, 18, 2.5, True, "6"):
        with pytest.raises(ValueError, match="digits"):
            display.round_float(1.0, bad)


def test_round_floats_walks_containers_numpy_and_dataclasses():
    @dataclasses.dataclass(frozen=True)
    class Point:
        label: str
        x: float
        n: int

    value = {"a": [1 / 3, 2, True, None, "0.30000000000000004"], "b": (np.float64(2 / 3),),
             "c": np.array([[1 / 7, 2.0]]), "d": np.int64(5), "p": Point("p", 1 / 9, 3)}
    out = display.round_floats(value)
    assert out["a"] == [0.333333, 2, True, None, "0.30000000000000004"]  # strings untouched
    assert out["b"] == (0.666667,)
    assert out["c"] == [[0.142857, 2.0]]
    assert out["d"] == 5 and type(out["d"]) is int
    assert out["p"] == Point("p", 0.111111, 3)
    assert "0.111111" in repr(out["p"])
    assert display.round_floats(1 / 3, 2) == 0.33


def _decode(spec):
    return np.frombuffer(base64.b64decode(spec["bdata"]), dtype="<" + spec["dtype"])


def test_typed_arrays_are_rounded_and_stay_typed_arrays():
    fig = go.Figure(go.Scatter(x=np.geomspace(1, 1000, 7), y=np.linspace(0, 1, 7,
                                                                        dtype=np.float32)))
    out = display.round_figure_json(fig)
    x, y = out["data"][0]["x"], out["data"][0]["y"]
    assert x["dtype"] == y["dtype"] == "f8"  # float32 comes back as the rounded float64
    assert _decode(x).tolist() == [float(f"{v:.6g}") for v in np.geomspace(1, 1000, 7)]
    assert _decode(y).tolist() == [float(f"{float(v):.6g}")
                                   for v in np.linspace(0, 1, 7, dtype=np.float32)]


def test_last_bit_differences_vanish_from_the_json():
    """What a CPU with other SIMD kernels does to np.geomspace: one ulp here and there."""
    x = np.geomspace(2.0, 512.0, 200)
    y = 8.0 + 1e-3 * x ** 1.5
    nudged_x = np.nextafter(x, np.inf)
    nudged_y = np.nextafter(y, -np.inf)

    def fig(xs, ys):
        return go.Figure([go.Scatter(x=xs, y=ys), go.Scatter(x=list(xs), y=list(ys))],
                         layout={"xaxis": {"range": [math.log10(xs[0]), math.log10(xs[-1])]}})

    assert fig(x, y).to_plotly_json() != fig(nudged_x, nudged_y).to_plotly_json()
    assert display.round_figure_json(fig(x, y)) == display.round_figure_json(
        fig(nudged_x, nudged_y))


def test_round_figure_json_accepts_dicts_and_rejects_other_things():
    out = display.round_figure_json({"data": [{"type": "bar", "y": [1 / 3]}], "layout": {}})
    assert out["data"][0]["y"] == [0.333333]
    with pytest.raises(TypeError, match="fig"):
        display.round_figure_json([1, 2])


@pytest.fixture
def default_renderer():
    saved = pio.renderers.default
    yield
    pio.renderers.default = saved


@pytest.mark.parametrize("before, after", [
    ("plotly_mimetype", "companion_plotly_mimetype+companion_figure_notes"),
    ("plotly_mimetype+notebook", "companion_plotly_mimetype+notebook+companion_figure_notes"),
    ("jupyterlab", "companion_jupyterlab+companion_figure_notes"),
    ("browser", "browser"),
    ("png", "png"),
])
def test_install_swaps_only_the_plain_mimetype_renderers(default_renderer, before, after):
    pio.renderers.default = before
    assert display.install() == after
    assert display.install() == after  # idempotent
    assert pio.renderers.default == after


def test_a_shown_figure_goes_through_the_rounding_renderer(default_renderer):
    pio.renderers.default = "plotly_mimetype"
    display.install()
    fig = go.Figure(go.Scatter(x=[0.1 + 0.2, 1 / 3], y=np.array([2 / 3, 1 / 7])))
    bundle = fig._repr_mimebundle_()
    data = bundle[display.PLOTLY_MIME]["data"][0]
    assert data["x"] == [0.3, 0.333333]
    assert _decode(data["y"]).tolist() == [0.666667, 0.142857]
    assert bundle == display.figure_mimebundle(fig)


def test_companion_figure_builders_install_the_renderer(default_renderer):
    pio.renderers.default = "plotly_mimetype"
    from companion.explorers.common import titled_figure

    titled_figure([], {}, "t")
    assert pio.renderers.default == "companion_plotly_mimetype+companion_figure_notes"




def test_md_and_answer_render_markdown_with_dedent_and_fold(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    value = 17.25
    display.md(f"""
        the step takes **{value:.1f} ms**
        """)
    display.answer(f"It is {value:.0f} ms.", title="Answer 2")
    assert [o.data for o in shown] == [
        "the step takes **17.2 ms**",
        "<details><summary>Answer 2</summary>\n\nIt is 17 ms.\n\n</details>"]
    with pytest.raises(TypeError, match="text"):
        display.md(3)
    with pytest.raises(TypeError, match="title"):
        display.answer("x", title=None)
