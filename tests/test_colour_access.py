"""Colour is never the only channel, and every colour can be read (WCAG 2.1 AA).

- The colour maths of companion/theme.py against values published by others: WCAG's contrast
  ratio, CIELAB, CIEDE2000 (Sharma, Wu and Dalal's test pairs), the colour-vision simulation.
- Every palette of the theme keeps MIN_DELTA_E between any two of its colours for normal vision
  and for protanopia, deuteranopia and tritanopia; each colour that draws keeps 3:1 on the page,
  each text colour 4.5:1.
- Every figure (each explorer at its default setting, and the figure builders of
  companion.plots with the chapters' arguments): its lines and markers keep 3:1 on the page and
  its text 4.5:1 on what it is drawn over; within one subplot no two line traces of different
  colours share one (dash, marker symbol) style unless text on the plot names each.
- A check cell's verdict says it in words, not only in colour.
"""

from __future__ import annotations

import inspect
import re

import pytest

from companion import theme, widgets
from companion.explorers.base import Panel
from tests.figure_helpers import decode

# --- the maths, against values we did not compute ------------------------------------------------


def test_contrast_ratio_matches_wcag():
    # WCAG's own extremes, and the two greys either side of AA for text (WebAIM's checker)
    assert theme.contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert theme.contrast_ratio("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert round(theme.contrast_ratio("#777777"), 2) == 4.48
    assert round(theme.contrast_ratio("#767676"), 2) == 4.54
    assert theme.contrast_ratio("#767676", "#000000") == theme.contrast_ratio("#000000", "#767676")
    assert round(theme.contrast_ratio("#0000ff"), 2) == 8.59          # WebAIM: 8.59:1
    assert theme.relative_luminance("#ffffff") == pytest.approx(1.0)


def test_cielab_matches_the_published_srgb_primaries():
    # D65 CIELAB of sRGB's primaries (Lindbloom's calculator, and every colour library)
    for colour, lab in (("#ff0000", (53.24, 80.09, 67.20)), ("#00ff00", (87.73, -86.18, 83.18)),
                        ("#0000ff", (32.30, 79.19, -107.86)), ("#ffffff", (100.0, 0.0, 0.0)),
                        ("#000000", (0.0, 0.0, 0.0))):
        assert theme.cielab(colour) == pytest.approx(lab, abs=0.01)


# 18 of the 34 pairs of Sharma, Wu and Dalal (2005), Table 1, with their published CIEDE2000;
# the near-neutral ones test the hue angle's wrap-around and the mean hue across 0/360 degrees
SHARMA = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 3.1571, -77.2803), (50.0000, 0.0000, -82.7485), 2.8615),
    ((50.0000, 2.8361, -74.0200), (50.0000, 0.0000, -82.7485), 3.4412),
    ((50.0000, -1.3802, -84.2814), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0009), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0011), 7.2195),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0009, -2.4900), 4.8045),
    ((50.0000, 2.5000, 0.0000), (50.0000, 0.0000, -2.5000), 4.3065),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((50.0000, 2.5000, 0.0000), (61.0000, -5.0000, 29.0000), 22.8977),
    ((50.0000, 2.5000, 0.0000), (56.0000, -27.0000, -3.0000), 31.9030),
    ((50.0000, 2.5000, 0.0000), (58.0000, 24.0000, 15.0000), 19.4535),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((63.0109, -31.0961, -5.8663), (62.8187, -29.7946, -4.0864), 1.2630),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize("lab1, lab2, expected", SHARMA)
def test_ciede2000_matches_sharma_wu_and_dalal(lab1, lab2, expected):
    assert theme.delta_e2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert theme.delta_e2000(lab2, lab1) == pytest.approx(expected, abs=1e-4)


def test_the_vision_simulation_is_machados():
    # the matrices are Machado et al.'s table at severity 1.0 (checked digit by digit against
    # colorspacious's cvd.py, which copies the authors' supplementary table); each row sums to
    # one, so white and every grey stay as they are
    for vision in theme.VISIONS:
        for row in theme.vision_matrix(vision):
            assert sum(row) == pytest.approx(1.0, abs=2e-6)
    for vision in theme.VISIONS:
        for grey in ("#ffffff", "#000000", "#777777"):
            assert theme.simulate_vision(grey, vision) == grey
    # a dichromat sees red and green as one hue: the pair's difference collapses to lightness
    red, green = "#d00000", "#008a00"
    assert theme.colour_difference(red, green) > 50
    for vision in ("protanopia", "deuteranopia"):
        assert theme.colour_difference(red, green, vision) < 25
    # a tritan loses blue against green, the red-green dichromats keep it
    assert theme.colour_difference("#0000ff", "#00ffff", "tritanopia") < \
        theme.colour_difference("#0000ff", "#00ffff", "deuteranopia")
    # protanopia darkens red (the long-wave cones are missing), deuteranopia hardly does
    assert theme.relative_luminance(theme.simulate_vision("#ff0000", "protanopia")) < \
        0.5 * theme.relative_luminance(theme.simulate_vision("#ff0000", "deuteranopia"))
    with pytest.raises(ValueError, match="vision"):
        theme.simulate_vision("#ffffff", "monochromacy")


# --- the palettes ---------------------------------------------------------------------------------

def test_every_palette_is_listed():
    listed = {name for name in theme.__all__ if name.endswith(("PALETTE", "_COLORS", "_STYLE"))}
    assert listed == set(theme.PALETTES)


@pytest.mark.parametrize("vision", theme.VISIONS)
@pytest.mark.parametrize("name", sorted(theme.PALETTES))
def test_palette_colours_stay_apart(name, vision):
    d, a, b = theme.closest_pair(theme.PALETTES[name], vision)
    assert d >= theme.MIN_DELTA_E, f"{name}, {vision}: {a} and {b} are {d:.1f} apart"


# the explorers' own sets of colours that tell things apart in one figure
def _explorer_palettes():
    from companion.explorers import (block_pool, ch08_4_compression_and_offloading as c84,
                                     ch08_5_speculative_decoding as c85,
                                     ch08_6_load_and_configuration as c86,
                                     ch17_02_roofline as c172, ch17_03_prefill_vs_decode as c173)
    percentiles = vars(c173)["_PCT_COLORS"]
    return {
        "schemes": tuple(c86.SCHEME_COLORS.values()),
        "17 §3 percentiles": tuple(percentiles.values()),
        "block pool": list(theme.REQUEST_PALETTE) + [block_pool.SHARED_COLOR],
        "roofline points": c172.POINT_COLORS,
        "round stages": tuple(c85.STAGE_COLORS.values()),
        "token cells": tuple(v for v in c85.VERDICT_COLORS.values() if v not in theme.FILL_ONLY),
        "byte layout": tuple(v for v in c84.LAYOUT_COLORS.values() if v not in theme.FILL_ONLY),
        "17 §3 phases": tuple(v for v in c173.PHASE.values() if v not in theme.FILL_ONLY),
    }


@pytest.mark.parametrize("vision", theme.VISIONS)
def test_explorer_colour_sets_stay_apart(vision):
    for name, colours in _explorer_palettes().items():
        d, a, b = theme.closest_pair(colours, vision)
        assert d >= theme.MIN_DELTA_E, f"{name}, {vision}: {a} and {b} are {d:.1f} apart"


def _drawing_colours():
    seen = {}
    for name in theme.__all__:
        value = getattr(theme, name)
        if isinstance(value, str) and re.fullmatch(r"#[0-9a-f]{6}", value):
            seen[name] = value
    return seen


def test_every_colour_that_draws_keeps_3_to_1_on_the_page():
    weak = {n: f"{c} {theme.contrast_ratio(c):.2f}:1" for n, c in _drawing_colours().items()
            if c not in theme.FILL_ONLY and c not in (theme.WHITE,)
            and theme.contrast_ratio(c) < theme.MIN_MARK_CONTRAST}
    assert not weak, f"too light for a line or a marker (or list it in FILL_ONLY): {weak}"
    for name, colours in theme.PALETTES.items():
        for c in colours:
            if c not in theme.FILL_ONLY:
                assert theme.contrast_ratio(c) >= theme.MIN_MARK_CONTRAST, (name, c)


def test_text_colours_keep_4_5_to_1():
    for name in ("TEXT", "INK", "DARK_GREY", "GREY", "NEAR_BLACK"):
        assert theme.contrast_ratio(getattr(theme, name)) >= theme.MIN_TEXT_CONTRAST, name
    for state, (text, background) in theme.VERDICT_STYLE.items():
        assert theme.contrast_ratio(text, background) >= theme.MIN_TEXT_CONTRAST, state


def test_text_on_a_fill_reads():
    fills = {c for p in theme.PALETTES.values() for c in p} | set(theme.FILL_ONLY) | {
        theme.NAVY, theme.RED, theme.PURPLE, theme.INK, theme.WHITE}
    for fill in fills:
        assert theme.contrast_ratio(theme.text_on(fill), fill) >= theme.MIN_TEXT_CONTRAST, fill


def test_series_lines_differ_by_dash_as_well_as_colour():
    lines = [theme.series_line(i) for i in range(len(theme.DASHES))]
    assert len({line["dash"] for line in lines}) == len(lines)
    assert theme.series_line(0, width=3) == {"color": theme.PALETTE[0], "dash": "solid",
                                             "width": 3}


# --- what figures draw ---------------------------------------------------------------------------

RGBA = re.compile(r"rgba?\(\s*(\d+),\s*(\d+),\s*(\d+)(?:,\s*([\d.]+))?\s*\)")


def opaque(colour, under: str = theme.BACKGROUND) -> str | None:
    """A figure's colour string as the opaque "#rrggbb" it shows over ``under`` (None for a
    colour that is not a string: a number on a colour scale, or unset)."""
    if not isinstance(colour, str):
        return None
    if re.fullmatch(r"#[0-9a-fA-F]{6}", colour):
        return colour.lower()
    m = RGBA.fullmatch(colour)
    if not m:
        return None
    alpha = float(m.group(4)) if m.group(4) is not None else 1.0
    base = theme.hex_rgb(under)
    mixed = (round(int(c) * alpha + b * (1 - alpha)) for c, b in zip(m.groups()[:3], base))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def _scaled(values, marker: dict, layout: dict) -> list:
    """A marker's colours as strings: numbers looked up on its colour scale (its own, or its
    colour axis's), the stop at or below each value; strings as they are."""
    values = _many(values)
    if not any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return values
    axis = layout.get(marker.get("coloraxis") or "", {}) or marker
    scale, lo, hi = axis.get("colorscale"), axis.get("cmin"), axis.get("cmax")
    if not isinstance(scale, list) or lo is None or hi is None or hi == lo:
        return [None] * len(values)
    out = []
    for v in values:
        at = (v - lo) / (hi - lo)
        out.append([c for p, c in scale if p <= at][-1] if scale[0][0] <= at else scale[0][1])
    return out


def _many(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _mode(trace) -> str:
    n = len(_many(trace.get("x") if trace.get("x") is not None else trace.get("y") or []))
    return trace.get("mode") or ("lines+markers" if n < 20 else "lines")


def _shown(trace) -> bool:
    return trace.get("visible", True) not in (False, "legendonly")


def _legend_key(trace) -> bool:
    """A trace that draws nothing (no point has a value) and only names a colour in the
    legend: the key of a shaded band or of a bar's cells."""
    xs = _many(trace.get("x") if trace.get("x") is not None else [])
    return bool(xs) and all(x is None for x in xs)


def _plain(text) -> str:
    return re.sub(r"<[^>]+>", " ", str(text or "")).strip()


def _font_colour(font, default):
    return (font or {}).get("color", default)


def contrast_problems(fig: dict) -> list[str]:
    """What a figure draws too faintly: lines and markers under 3:1 on the page, text under
    4.5:1 on what it sits on (the page, an annotation's box, or a bar it is written inside)."""
    fig = decode(fig)
    layout = fig.get("layout", {})
    text_default = _font_colour(layout.get("font"), theme.TEXT)
    found = []

    def mark(where, colour, over=theme.BACKGROUND, need=theme.MIN_MARK_CONTRAST, tiles=False):
        for c in _many(colour):
            shown = opaque(c, over)
            if tiles and shown in theme.FILL_ONLY:
                continue          # a pale cell or tile: a fill, its meaning named beside it
            if shown is not None and theme.contrast_ratio(shown, over) < need:
                found.append(f"{where}: {c} on {over} is "
                             f"{theme.contrast_ratio(shown, over):.2f}:1")

    for i, t in enumerate(fig.get("data", [])):
        if not _shown(t):
            continue
        kind, name = t.get("type", "scatter"), t.get("name") or f"trace {i}"
        marker, line = t.get("marker") or {}, t.get("line") or {}
        if kind in ("scatter", "scattergl"):
            mode = _mode(t)
            if "lines" in mode and t.get("fill") in (None, "none") and line.get("width", 2) > 0:
                mark(f"{name} line", line.get("color"))
            outline = marker.get("line") or {}
            if "markers" in mode and not _legend_key(t) and not (
                    outline.get("width", 0) > 0 and all(
                    theme.contrast_ratio(opaque(c) or theme.INK) >= theme.MIN_MARK_CONTRAST
                    for c in _many(outline.get("color")))):
                mark(f"{name} markers", _scaled(marker.get("color"), marker, layout), tiles=True)
            if "text" in mode and t.get("text"):
                font = _many(_font_colour(t.get("textfont"), text_default))
                texts, where = _many(t["text"]), _many(t.get("textposition", "middle center"))
                fills = _scaled(marker.get("color"), marker, layout) if "markers" in mode \
                    else [None]
                for k, text in enumerate(texts):
                    if not str(text if text is not None else "").strip():
                        continue
                    # text centred on a marker is read against the marker's fill
                    under = (opaque(fills[k % len(fills)]) if where[k % len(where)] ==
                             "middle center" else None) or theme.BACKGROUND
                    mark(f"{name} text {text!r}", font[k % len(font)], under,
                         theme.MIN_TEXT_CONTRAST)
        elif kind == "bar" and t.get("text") is not None:
            font = t.get("insidetextfont") or t.get("textfont")
            fills = _scaled(marker.get("color"), marker, layout)
            position = t.get("textposition", "auto")
            if font and font.get("color") and position in ("inside", "auto"):
                colours, texts = _many(font["color"]), _many(t["text"])
                for k, fill in enumerate(fills):
                    under = opaque(fill)
                    if under and str(texts[k % len(texts)] or "").strip():
                        mark(f"{name} text inside", colours[k % len(colours)], under,
                             theme.MIN_TEXT_CONTRAST)
            if position == "outside":
                mark(f"{name} text", _font_colour(t.get("outsidetextfont") or t.get("textfont"),
                                                  text_default), need=theme.MIN_TEXT_CONTRAST)
    for k, a in enumerate(layout.get("annotations") or []):
        if a.get("visible", True) is False or not _plain(a.get("text")):
            continue
        under = opaque(a.get("bgcolor")) if a.get("bgcolor") else theme.BACKGROUND
        mark(f"annotation {_plain(a.get('text'))[:30]!r}",
             _font_colour(a.get("font"), text_default), under or theme.BACKGROUND,
             theme.MIN_TEXT_CONTRAST)
    for k, s in enumerate(layout.get("shapes") or []):
        if s.get("type") == "line" and s.get("visible", True) is not False:
            mark(f"shape {k} line", (s.get("line") or {}).get("color"))
    return found


def line_style_clashes(fig: dict) -> list[str]:
    """Pairs of shown line traces in one subplot that differ by colour alone: the same dash and
    marker symbol, different colours, and not both named by text on the plot (their own text,
    or an annotation that holds the trace's name)."""
    fig = decode(fig)
    layout = fig.get("layout", {})
    colorway = (layout.get("template", {}).get("layout", {}).get("colorway")
                or list(theme.PALETTE))
    notes = " | ".join(_plain(a.get("text")) for a in layout.get("annotations") or [])
    groups: dict[tuple, list] = {}
    for i, t in enumerate(fig.get("data", [])):
        if t.get("type", "scatter") not in ("scatter", "scattergl") or not _shown(t):
            continue
        mode = _mode(t)
        if "lines" not in mode or t.get("fill") not in (None, "none"):
            continue
        line, marker = t.get("line") or {}, t.get("marker") or {}
        symbol = marker.get("symbol", "circle") if "markers" in mode else None
        style = (line.get("dash") or "solid", str(symbol))
        colour = line.get("color") or colorway[i % len(colorway)]
        name = _plain(t.get("name"))
        named = bool("text" in mode and t.get("text")) or bool(name and name in notes)
        groups.setdefault((t.get("xaxis", "x"), t.get("yaxis", "y")), []).append(
            (style, str(colour), named, name or f"trace {i}"))
    found = []
    for sub, items in groups.items():
        for k, (style, colour, named, name) in enumerate(items):
            for style2, colour2, named2, name2 in items[k + 1:]:
                if style == style2 and colour != colour2 and not (named and named2):
                    found.append(f"{sub}: {name!r} and {name2!r} are both {style}, "
                                 f"{colour} vs {colour2}")
    return found


def test_the_checks_can_fail():
    fig = {"data": [{"type": "scatter", "mode": "lines", "x": [0, 1], "y": [0, 1],
                     "name": "a", "line": {"color": "#e69f00"}},
                    {"type": "scatter", "mode": "lines", "x": [0, 1], "y": [1, 0],
                     "name": "b", "line": {"color": theme.BLUE}},
                    {"type": "scatter", "mode": "lines", "x": [0, 1], "y": [1, 1],
                     "name": "c", "line": {"color": theme.GREEN, "dash": "dot"}},
                    {"type": "bar", "x": [1], "y": [1], "text": ["t"],
                     "marker": {"color": theme.SKY}, "textfont": {"color": theme.WHITE}}],
           "layout": {"annotations": [{"text": "note", "font": {"color": "#7f7f7f"}}]}}
    problems = contrast_problems(fig)
    assert [p.split(":")[0] for p in problems] == ["a line", "trace 3 text inside",
                                                   "annotation 'note'"]
    assert len(line_style_clashes(fig)) == 1
    fig["data"][1]["line"]["dash"] = "dash"
    assert line_style_clashes(fig) == []


PANELS = sorted((obj for obj in (getattr(widgets, n) for n in widgets.__all__)
                 if inspect.isclass(obj) and issubclass(obj, Panel) and obj is not Panel),
                key=lambda c: c.__name__)


@pytest.fixture(scope="module")
def panel_figures():
    return {cls.__name__: cls().figure().to_plotly_json() for cls in PANELS}


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_every_explorer_draws_legibly(cls, panel_figures):
    assert contrast_problems(panel_figures[cls.__name__]) == []


@pytest.mark.parametrize("cls", PANELS, ids=lambda c: c.__name__)
def test_no_explorer_tells_lines_apart_by_colour_alone(cls, panel_figures):
    assert line_style_clashes(panel_figures[cls.__name__]) == []


def _builders():
    """The figure builders of companion.plots with the chapters' arguments (as the notebooks
    and tests/test_panels_*.py call them)."""
    from companion import calc, plots, specs, units
    from companion.chapters import ch08
    from companion.sim import kv_scenarios as kvp
    from companion.sim.kv_scenarios import prefix_tree
    from companion.sim.speculative import greedy_example

    m, d_w = specs.QWEN3_8B, specs.QWEN3_8B.streamed_weight_bytes
    k = calc.kv_bytes_per_token(m)
    batches = [1, 2, 4, 8, 16, 32, 64]
    budget = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, m.weight_bytes, ch08.KV_BUDGET_BYTES)
    shapes = ch08.CAPTURED_SHAPES
    return {
        "request_timeline": lambda: plots.request_timeline_figure(
            [widgets.timeline_scenario("alone", 0.1, 0.096, 0.0265, 256)], deadline_s=7.0),
        "memory_budget": lambda: plots.memory_budget_figure([("instance", budget)]),
        "kv_capacity": lambda: plots.kv_capacity_figure(
            calc.kv_capacity_table(m, ch08.KV_BUDGET_BYTES), ch08.KV_BUDGET_BYTES),
        "read_volume": lambda: plots.read_volume_figure(
            batches, {"2K": (calc.read_bytes_curve(d_w, batches, 2048, k), 2048 * k),
                      "8K": (calc.read_bytes_curve(d_w, batches, 8192, k), 8192 * k)},
            crossovers={"2K": 51}),
        "rom_weights": lambda: plots.rom_weights_figure(
            batches, calc.read_bytes_curve(d_w, batches, 8192, k),
            calc.read_bytes_curve(d_w, batches, 8192, k, weights_in_hbm=False)),
        "lora_capacity": lambda: plots.lora_capacity_figure(
            range(1, 101), calc.lora_adapter_bytes(m, 16, ("q", "v")), calc.kv_bytes(m, 8192),
            kv_budget_bytes=12 * units.GiB, matrix_weight_bytes=d_w),
        "schedule_gantt": lambda: plots.schedule_gantt_figure(widgets.chapter_schedules()),
        "pair_area": lambda: plots.pair_area_figure(
            512, [0, 7680], [calc.attention_pairs(512, 0), calc.attention_pairs(512, 7680)]),
        "graph_padding": lambda: plots.graph_padding_figure(
            [16, 17, 18], [calc.padded_rows(r, shapes) for r in (16, 17, 18)],
            captured_shapes=shapes),
        "block_pool_steps": lambda: plots.block_pool_steps_figure(kvp.copy_on_write_steps(),
                                                                  slot_level=True),
        "block_pool": lambda: plots.block_pool_figure(
            plots.snapshot_pool(kvp.grow_sequences([9, 13, 5, 15]))),
        "prefix_tree": lambda: plots.prefix_tree_figure(prefix_tree(kvp.multi_turn_inputs())),
        "pool_usage": lambda: plots.pool_usage_figure(
            [dict(kvp.decode_with_preemption(units.GiB, [512] * 2, 16), label="x")]),
        "retention_bars": lambda: plots.retention_bars_figure(
            [("A", 1, "A", 132.7), ("B", 3, "B", 40.3)]),
        "bits_per_value": lambda: plots.bits_per_value_figure(
            {"q8_0": calc.quant_format_layout("q8_0")}),
        "memory_stack": lambda: plots.memory_stack_figure([("x", [("w", 1.0, "weights")])], 2.0),
        "interval_fit": lambda: plots.interval_fit_figure([0, 1000], {"a": [1, 2], "b": [2, 1]},
                                                          crossover_tokens=500),
        "byte_layout": lambda: plots.byte_layout_figure(
            [{"label": "q4_0", "metadata_bytes": 2, "code_bytes": 16}]),
        "greedy_verification": lambda: plots.greedy_verification_figure(greedy_example()),
        "roofline": lambda: plots.roofline_figure(specs.H100_SXM, [],
                                                  reference=specs.RTX_PRO_6000),
        "memory_hierarchy": lambda: plots.memory_hierarchy_figure(
            calc.memory_pyramid(specs.H100_SXM)),
        "kv_by_context": lambda: plots.kv_by_context_figure(
            calc.kv_by_context(specs.LLAMA_70B), capacity_bytes=specs.H100_SXM.mem_bytes),
        "attention_variants": lambda: plots.attention_variants_figure(
            calc.attention_variants(specs.LLAMA_70B)),
        "context_step": lambda: plots.context_step_figure(
            [1_000, 10_000, 100_000],
            [calc.decode_vs_context(specs.LLAMA_8B, specs.H100_SXM, n)
             for n in (1_000, 10_000, 100_000)],
            weight_bytes=specs.LLAMA_8B.streamed_weight_bytes,
            bandwidth_bytes_per_s=specs.H100_SXM.mem_bw_bytes_per_s,
            crossover_tokens=calc.kv_weight_crossover_tokens(specs.LLAMA_8B),
            marks=[1_000, 10_000, 100_000]),
        "allocator": lambda: plots.allocator_figure(*_allocators()),
        # several series in one plot, with simple numbers of the documented shapes
        "expected_output": lambda: plots.expected_output_figure(
            [0.2, 0.5, 0.8], {1: [1.2, 1.5, 1.8], 2: [1.24, 1.75, 2.44], 4: [1.25, 1.94, 3.36]},
            points=[(0.5, 1.94, "chapter")]),
        "draft_cost": lambda: plots.draft_cost_figure(
            [0.001, 0.002, 0.004], {"AAAA": [0.02, 0.03, 0.04], "BBBB": [0.01, 0.015, 0.02],
                                    "CCCC": [0.015, 0.02, 0.03]}, 0.025,
            crossovers=[("AAAA", 0.002)]),
        "littles_law": lambda: plots.littles_law_figure(
            [1, 2, 4], {"T = 0.5 s": [0.5, 1, 2], "T = 2 s": [2, 4, 8], "T = 4 s": [4, 8, 16]},
            points=[(2, 4, "chapter")]),
        "queueing": lambda: plots.queueing_figure(
            [0.2, 0.5, 0.8], {"even": [100, 100, 90], "random": [90, 70, 40],
                              "bursty": [80, 60, 30]}),
        "goodput": lambda: plots.goodput_figure(
            [1, 2, 4], {"continuous": ([1, 2, 3], [1, 1.8, 2]), "one at a time": ([1, 1, 1],
                                                                                [1, 0.8, 0.5])}),
        "batch_rounds": lambda: plots.batch_rounds_figure(
            {"one request": ([1, 2, 3], [0.5, 0.8, 1.0]), "batch of 16": ([1, 2, 3],
                                                                         [0.1, 0.4, 0.9]),
             "batch of 64": ([1, 2, 3], [0.01, 0.2, 0.8])},
            marks=[("mean", 2), ("p99", 3)]),
        "amdahl": lambda: plots.amdahl_figure(
            [1, 2, 4], {"f = 0.2": [1, 1.1, 1.18], "f = 0.5": [1, 1.33, 1.6],
                        "f = 0.8": [1, 1.67, 2.5], "f = 0.95": [1, 1.9, 3.5]},
            current=(2, 1.33, "s = 2")),
        "kv_transfer": lambda: plots.kv_transfer_figure(
            [1_000, 8_000, 32_000], {"NVLink": [0.0004, 0.003, 0.012],
                                     "PCIe": [0.005, 0.041, 0.16], "RDMA": [0.0065, 0.052, 0.2]},
            marks={"NVLink": (8_000, 0.003)},
            exposed={"NVLink": [0.0001, 0.001, 0.004], "PCIe": [0.002, 0.02, 0.08]},
            exposed_note="exposed"),
        "sm_share": lambda: plots.sm_share_figure([1, 66, 132], [0.01, 0.5, 1.0]),
        "fleet_goodput": lambda: _fleet_goodput(
            {gpus: {"rates": [1.0 * gpus, 2.0 * gpus], "shared": [0.9 * gpus, 1.2 * gpus],
                    "split": [1.0 * gpus, 1.6 * gpus], "split_label": "prefill + decode"}
             for gpus in (2, 4, 8)}),
        "lever_speedup": lambda: plots.lever_speedup_figure(
            [1, 8, 64], {"INT8, chapter": ([2, 2, 2], "chapter"),
                         "speculative, chapter": ([2.5, 2.5, 2.5], "chapter"),
                         "INT8, roofline": ([1.9, 1.8, 1.5], "fuller"),
                         "speculative, roofline": ([2.4, 2.0, 1.2], "fuller"),
                         "both": ([4.5, 3.6, 1.8], "product")}),
        "hol_timeline": lambda: plots.hol_timeline_figure(_hol()),
    }


def _fleet_goodput(fleets):
    from companion.explorers.ch17_08_disaggregation_and_routing import goodput_figure
    return goodput_figure(fleets)


def _allocators():
    from companion.sim.kv_scenarios import allocator_demo
    demo = allocator_demo()
    return demo["paged"], demo["naive"]


def _hol():
    from companion import specs
    from companion.sim.scenarios import hol_scenario
    out = hol_scenario(specs.LLAMA_8B, specs.H100_SXM, 8000, 6e-3, 0.5, 3)
    return out["simulated"]["result"]


BUILDERS = _builders()


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_figure_builder_draws_legibly_and_not_by_colour_alone(name):
    fig = BUILDERS[name]()
    spec = fig.to_plotly_json()
    assert contrast_problems(spec) == []
    assert line_style_clashes(spec) == []


# --- verdicts --------------------------------------------------------------------------------------

@pytest.mark.parametrize("state, word, mark", [("ok", "correct", "\u2713"),
                                                ("open", "not yet answered", "\u2026"),
                                                ("off", "not yet right", "\u2717")])
def test_a_verdict_says_it_in_words(state, word, mark, capsys):
    """A real check block's verdict holds its words in plain text, and its HTML (coloured by
    state) holds the same words and a mark: the colour only repeats them."""
    from companion import grading

    ex_id = sorted(grading.exercises())[0]
    ex = grading.exercises()[ex_id]
    part = ex.parts[0].name
    answer = {"ok": ex.solve(grading.params(ex_id))[part], "open": None, "off": -12345.678}
    with grading.checks():
        grading.check(ex_id, part, answer[state], quiet=True)
    said = capsys.readouterr().out.strip()
    assert word in said, said
    plain = re.sub(r"<[^>]+>", "", grading._verdict_html(said, state))
    assert word in plain and mark in plain


# --- the gallery's colour-vision section -----------------------------------------------------------

def test_the_gallery_shows_every_palette_under_every_vision(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "make_gallery.py"
    spec = importlib.util.spec_from_file_location("make_gallery", path)
    gallery = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery)
    (tmp_path / "repo" / "notebooks").mkdir(parents=True)
    assert gallery.build(tmp_path / "repo", tmp_path / "out") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'id="colour-vision"' in page and 'href="#colour-vision"' in page
    for name in theme.PALETTES:
        assert f"<h3 id=\"cvd-{name}\">{name}</h3>" in page
    for vision in theme.VISIONS[1:]:
        assert f'<filter id="cvd-{vision}"' in page and f'value="{vision}"' in page
        # each swatch is the simulated colour, so the page shows what the test measures
        assert f'fill="{theme.simulate_vision(theme.ORANGE, vision)}"' in page
    assert 'class="fail"' not in page          # no palette of series under MIN_DELTA_E
