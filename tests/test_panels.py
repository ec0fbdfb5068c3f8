"""Every explorer panel: update() works at the corners of every control, headless and shown."""

import inspect
import json
import math

import pytest

from companion import display, widgets
from companion.explorers.base import Control, Panel
from tests.figure_helpers import plotly_json_equal


@pytest.fixture(autouse=True)
def no_event_loop_running():
    """These tests hold the panels to plain Python, where no event loop runs (films are sent
    at once, asyncio.run starts one). A worker process that has run a browser test first holds
    Playwright's sync loop, marked running for the rest of the session though it runs nothing
    else: there the panels queued their film chunks on it and asyncio.run refused to start
    (24 failures in a run whose order put the browser tests first). Detached for each test."""
    import asyncio

    playwright_loop = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(playwright_loop)


PANELS = sorted((obj for obj in (getattr(widgets, n) for n in widgets.__all__)
                 if inspect.isclass(obj) and issubclass(obj, Panel) and obj is not Panel),
                key=lambda c: c.__name__)


def test_there_are_panels():
    assert PANELS


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_update_at_every_corner(cls):
    panel = cls()
    for params in panel.corners():
        view = panel.update(**params)
        for key, value in view.numbers.items():
            if isinstance(value, (int, float)):
                assert not math.isnan(value), f"{cls.__name__}.{key} is NaN at {params}"
        assert view.traces, f"{cls.__name__} drew nothing at {params}"


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_controls_are_sane(cls):
    for c in cls.controls:
        assert c.label and c.kind in ("int", "float", "choice", "text")
        if c.kind == "text":
            assert isinstance(c.default, str), c.name
        elif c.kind != "choice":
            assert c.min <= c.default <= c.max, c.name
        else:
            assert c.default in c.options.values(), c.name


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_bad_parameter_is_named(cls):
    panel = cls()
    with pytest.raises(TypeError, match="no_such_control"):
        panel.update(no_such_control=1)
    numeric = [c for c in cls.controls if c.kind in ("int", "float")]
    if numeric:
        c = numeric[0]
        with pytest.raises(ValueError, match=c.name):
            panel.update(**{c.name: c.max + (c.step or 1) * 10})
        with pytest.raises((ValueError, TypeError), match=c.name):
            panel.update(**{c.name: float("nan")})


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_shown_panel_updates_its_figure_and_resets(cls):
    panel = cls()
    ui = panel.show()
    assert ui is not None
    before = _shown_y(panel)
    text_before = panel._readout.value
    changed = False
    for c in cls.controls:
        for value in c.corners():
            if value == panel.params[c.name]:
                continue
            panel._widgets[c.name].value = value  # as a user would, through the widget
            after = _shown_y(panel)
            changed |= after != before or panel._readout.value != text_before
        if changed:
            break
    assert changed, "moving a control changed neither the figure nor the readout"
    panel.reset()
    assert panel.params == panel.defaults()
    assert panel._readout.value == text_before
    _assert_shown_equals_static(panel)


def test_a_float_slider_value_off_its_grid_in_the_last_bits_is_read_as_the_grid_value():
    # ipywidgets' slider arithmetic in the page handed the kernel 20.999999999999996 for the
    # 17 §1 sweep slider at 21 GB (seen in the lite site): 21 GB over the H200's 4.8 TB/s is
    # 4.375 ms, which must print 4.38 ms (half to even on the exact value), not 4.37 ms
    def sweep_times(panel):
        (trace,) = [t for t in panel._fig.to_plotly_json()["data"] if "sweep" in t.get("name", "")]
        return trace["text"]

    panel = widgets.MemoryHierarchyPanel()
    panel.show()
    panel.update(sweep_gb=21.0)
    at_21 = sweep_times(panel)
    assert any(t.startswith("4.38 ms") for t in at_21), at_21
    panel.update(sweep_gb=20.0)
    panel._widgets["sweep_gb"].value = 20.999999999999996  # as the page sends it
    assert panel.params["sweep_gb"] == 21.0
    assert sweep_times(panel) == at_21
    sweep = next(c for c in panel.controls if c.name == "sweep_gb")
    assert sweep.snap(21.5) == 21.5                  # a value off the grid stays as it is
    assert sweep.snap(0.30000000000000004) == 0.30000000000000004  # below min: not snapped to it
    tenths = Control("share", "share", "float", 0.5, 0.0, 1.0, 0.1)
    assert tenths.snap(0.30000000000000004) == 0.3 and tenths.snap(0.7000000000000001) == 0.7


def _shown_y(panel):
    return [t.get("y") for t in panel._fig.to_plotly_json()["data"]]


def _assert_shown_equals_static(panel):
    # what the page receives (and hands to Plotly.react) is exactly figure(view)'s JSON as
    # every figure reaches a notebook: floats rounded (companion.display)
    shown = panel._fig.to_plotly_json()
    static = display.round_figure_json(panel.figure())
    assert plotly_json_equal(shown, static)


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_page_gets_the_validated_figure_at_every_corner(cls):
    # PlotlyFigure sends the panel's trace and layout dicts as they are, without plotly.py's
    # validation; that is only right while they are already in plotly's canonical form (no
    # magic underscores, no shorthand titles, no numpy scalars that JSON would refuse). The
    # template, the costly part of validating, is compared once per panel.
    import plotly.graph_objects as go

    from companion.explorers.figure_widget import figure_json

    panel = cls()
    for i, params in enumerate(panel.corners()):
        view = panel.update(**params)
        layout = panel._layout(view)
        sent = figure_json(view.traces, layout)
        if i == 0:
            static = display.round_figure_json(panel.figure(view))
        else:
            sent["layout"].pop("template")
            layout.pop("template")
            static = display.round_figure_json(go.Figure(data=view.traces, layout=layout))
            static["layout"].pop("template")  # plotly.py adds its default one
        assert plotly_json_equal(sent, static), f"{cls.__name__} at {params}"


def test_capacity_panel_defaults_are_the_chapters_setting():
    # 8.1.2 table and 8.3.2: 144 KiB per token, 1152 MiB after prefill, 1188 MiB reserved,
    # 10 independent long requests and 35 with the 6144-token prefix shared, in 12 GiB.
    view = widgets.KVCapacityPanel().update()
    assert view.numbers == {"kv_per_token_KiB": 144, "after_prefill_MiB": 1152,
                            "after_generation_MiB": 1188, "independent_requests": 10,
                            "shared_prefix_requests": 35}
    short = widgets.KVCapacityPanel().update(prompt_tokens=2048, shared_prefix_tokens=0)
    assert (short.numbers["after_prefill_MiB"], short.numbers["after_generation_MiB"],
            short.numbers["independent_requests"]) == (288, 324, 37)


def _widget_state(panel) -> list:
    # what the page's control models hold, in the panel's control order
    return [panel._widgets[c.name].index if c.indexed else panel._widgets[c.name].value
            for c in panel.controls]


def _same_key(a: list, b: list) -> bool:
    # as the page compares keys (figure_widget.js sameKey): numbers within a relative 1e-9, as
    # the kernel reads a float slider's value on its grid (Control.snap) while the page's model
    # may hold it a bit off
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-9) if isinstance(x, (int, float)) and
        isinstance(y, (int, float)) else x == y for x, y in zip(a, b))


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_lookahead_offers_exactly_what_the_kernel_then_sends(cls):
    # the page shows a lookahead figure instead of waiting for the kernel's (figure_widget.js):
    # that is only right if the figure, readout and key offered for a step are the ones the
    # kernel sends when the reader takes that step
    panel = cls()
    panel.LOOKAHEAD_BUDGET_S = math.inf  # this test checks what is offered, not when
    panel.show()
    state = panel._fig.state
    assert json.loads(state.key) == _widget_state(panel)
    steppable = [c for c in cls.controls if c.kind in ("int", "float", "choice")]
    for position, c in ((cls.controls.index(c), c) for c in steppable):
        widget = panel._widgets[c.name]
        start = widget.index if c.indexed else widget.value
        # one step, as the page's arrow key would take it
        if c.indexed:
            widget.index = start + 1 if start + 1 < len(widget.options) else start - 1
        else:
            up = start + widget.step
            widget.value = up if up <= widget.max else start - widget.step
        assert _same_key(json.loads(state.key), _widget_state(panel)), c.name
        offered = json.loads(state.ahead)
        assert offered, f"{cls.__name__}: nothing offered after moving {c.name}"
        for entry in offered:
            assert _same_key([k for i, k in enumerate(entry["key"]) if i != position],
                             [k for i, k in enumerate(_widget_state(panel)) if i != position])
            if c.indexed:
                widget.index = entry["key"][position]
            else:
                widget.value = entry["key"][position]
            assert json.loads(state.key) == entry["key"], (cls.__name__, c.name)
            assert (state.digest, state.readout) == (entry["digest"], entry["readout"]), \
                (cls.__name__, c.name, entry["key"][position])
            assert json.loads(state.figure) == entry["figure"]
        panel.reset()


def test_lookahead_is_skipped_when_the_kernel_was_slow():
    panel = widgets.RooflinePanel()
    panel.show()
    panel.LOOKAHEAD_BUDGET_S = 0.0
    panel._widgets["batch"].index += 1            # one stop of the batch's log-spaced slider
    assert panel._fig.state.ahead == b"[]"
    panel.LOOKAHEAD_BUDGET_S = math.inf
    panel._widgets["batch"].index += 1
    assert len(json.loads(panel._fig.state.ahead)) == 2


def test_lookahead_after_a_jump_waits_and_is_dropped_when_the_reader_moves_on():
    # a drag sends values many steps apart, each once the kernel is idle: the lookahead for a
    # value the hand has left would only hold up the next one
    import asyncio

    panel = widgets.RooflinePanel()
    panel.LOOKAHEAD_BUDGET_S = math.inf
    panel.show()
    slider = panel._widgets["batch"]
    at = [c.name for c in panel.controls].index("batch")
    ahead = lambda: sorted(e["key"][at] for e in json.loads(panel._fig.state.ahead))  # noqa: E731

    # the batch slider's stops are log-spaced (1, 2, 3, 4, 6, ... 1024); keys hold stop indices
    stop = panel._stops["batch"].index

    async def moves():
        slider.value = 256                       # a jump: nothing offered yet
        assert ahead() == []
        slider.value = 768                       # the hand moves on: 256's lookahead dropped
        await asyncio.sleep(3 * panel.LOOKAHEAD_AFTER_JUMP_S)
        assert ahead() == [stop(512), stop(1024)]   # and 768's, once the hand has stopped
        slider.value = 512                       # one stop: offered at once
        assert ahead() == [stop(384), stop(768)]

    asyncio.run(moves())
    assert panel._pending_lookahead is None


def test_reset_puts_every_widget_back_dropdowns_included():
    # reset() once unobserved every "value" observer, ipywidgets' own dropdown value -> index
    # link among them: the kernel was back at the chapter's model while the page's dropdown
    # still showed the reader's
    panel = widgets.BatchSizePanel()
    panel.show()
    model = panel._widgets["model"]
    model.index = 1
    panel.reset()
    assert model.index == 0 and model.value == panel.defaults()["model"]
    model.index = 1  # and the controls still drive the figure afterwards
    assert json.loads(panel._fig.state.key)[0] == 1


def test_controls_that_span_decades_have_log_spaced_stops():
    # issue 23: a linear 1-1,024 batch slider jumped from 64 to 1,024 in a 150 px drag, and a
    # linear 0-65k prompt slider put the chapter's 8,192 at the far left of a log-scale figure
    from companion.explorers.base import LADDER_SPAN

    laddered = 0
    for cls in PANELS:
        for c in cls.controls:
            if c.kind != "int" or c.max <= LADDER_SPAN * max(c.min or 0, c.step or 1, 1):
                continue
            laddered += 1
            assert c.ladder is not None, (cls.__name__, c.name)
            stops = c.stops()
            assert (stops[0], stops[-1]) == (c.min, c.max) and c.default in stops, c.name
            # about evenly spaced on a log scale: no stop more than twice the one before it
            assert all(b / a <= 2 for a, b in zip(stops[1:], stops[2:])), (c.name, stops)
            assert len(stops) <= 40, (c.name, len(stops))
    assert laddered >= 2
    batch = next(c for c in widgets.RooflinePanel.controls if c.name == "batch")
    assert batch.step_from(64, +1) == 96 and batch.step_from(1024, +1) is None
    prompt = next(c for c in widgets.KVCapacityPanel.controls if c.name == "prompt_tokens")
    assert prompt.stops().index(8192) > len(prompt.stops()) / 2     # mid-slider, not far left


def _film_of(panel, index: int) -> list:
    """The film the page gets when its pointer comes over control ``index``: the chunks the
    panel sends, decoded (no event loop here, so they are sent at once)."""
    chunks = []
    send = panel._fig.film
    panel._fig.film = lambda i, entries: (chunks.append(i), send(i, entries),
                                          chunks.append(json.loads(panel._fig._offers(entries))))
    try:
        panel._fig._from_page(panel._fig.state, {"film": index}, [])
    finally:
        panel._fig.film = send
    assert all(i == index for i in chunks[::2])
    return [entry for chunk in chunks[1::2] for entry in chunk]


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_a_sliders_film_is_exactly_what_the_kernel_sends_for_each_value(cls):
    # a drag shows the film's figures without waiting for the kernel (figure_widget.js): only
    # right if the film holds every value the slider can take, each with the figure, readout
    # and key the kernel sends when the handle lands there
    # (each panel's main slider, the one the book precomputes, and its first dropdown: every
    # kind of control once, in a time the suite can afford)
    panel = cls()
    panel.show()
    state = panel._fig.state
    choices = [c for c in cls.controls if c.kind == "choice"][:1]
    for index, c in enumerate(cls.controls):
        if c.name != cls.main_control and c not in choices:
            continue
        widget = panel._widgets[c.name]
        film = _film_of(panel, index)
        if c.kind not in ("int", "float"):
            assert film == [], f"{cls.__name__}: a film for {c.name}, not a slider"
            continue
        settable = (list(panel._stops[c.name]) if c.ladder is not None else
                    sorted({widget.max} | {round(widget.min + i * widget.step, 12) for i in range(
                        int((widget.max - widget.min) / widget.step + 1e-9) + 1)}))
        keys = [entry["key"][index] for entry in film]
        expected = ([panel._stops[c.name].index(x) for x in settable] if c.ladder is not None
                    else settable)
        assert len(film) == min(len(settable), Panel.FILM_VALUES), (cls.__name__, c.name)
        assert set(keys) <= set(expected) and len(set(keys)) == len(keys), (cls.__name__, c.name)
        # nearest to the slider's value first
        position = (panel._stop_index(c, panel.params[c.name]) if c.ladder is not None
                    else panel.params[c.name])
        distances = [abs(k - position) for k in keys] if c.ladder is None else None
        if distances is not None:
            assert distances == sorted(distances), (cls.__name__, c.name)
        # the film's ends and middle, as the kernel sends them when the handle lands there
        for entry in {id(e): e for e in (film[0], film[len(film) // 2], film[-1])}.values():
            if c.ladder is not None:
                widget.value = panel._stops[c.name][entry["key"][index]]
            else:
                widget.value = entry["key"][index]
            assert json.loads(state.key) == entry["key"], (cls.__name__, c.name)
            assert (state.digest, state.readout) == (entry["digest"], entry["readout"]), \
                (cls.__name__, c.name, entry["key"][index])
            assert json.loads(state.figure) == entry["figure"]
        panel.reset()
        # asked again at the same setting of the other controls: nothing is sent twice
        assert _film_of(panel, index) == [] or panel._film_job is None


def test_a_film_comes_in_chunks_between_the_kernels_messages_and_stops_when_stale():
    # the kernel takes the slider's own messages between two chunks of a film, and a film for
    # a setting of the other controls the reader has left is not finished
    import asyncio

    panel = widgets.AmdahlPanel()
    panel.show()
    index = [c.name for c in panel.controls].index("decode_fraction")
    sent = []
    panel._fig.film = lambda i, entries: sent.append(len(entries))
    panel.FILM_CHUNK_S = 0.0         # one value per chunk

    async def drag():
        panel._film(index)
        assert sent == [1]            # the first chunk at once, the rest from the event loop
        await asyncio.sleep(0)
        assert len(sent) == 2
        other = next(c for c in panel.controls if c.name != "decode_fraction"
                     and c.kind in ("int", "float"))
        panel._widgets[other.name].value = panel._widgets[other.name].value + \
            panel._widgets[other.name].step
        await asyncio.sleep(0.05)
        return len(sent)

    assert asyncio.run(drag()) == 2   # stale once another control moved
    assert panel._film_job is None
    sent.clear()
    panel._film(index)                # a new setting: a new film, all of it
    assert sum(sent) == len(panel._film_values(panel.controls[index]))
