"""One theme: every colour the companion draws is named in companion/theme.py,
and every figure, stored or live, is drawn with its template."""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path

import plotly.colors
import pytest

from companion import theme, widgets

ROOT = Path(__file__).resolve().parents[1]

# what a colour typed into a string looks like: #rrggbb, #rgb after "color:" or as the whole
# string (a bare "#123" is an issue number), rgb(...)/rgba(...), or a CSS colour name
HEX = re.compile(r"#[0-9a-fA-F]{6}\b|color:\s*#[0-9a-fA-F]{3}\b|^#[0-9a-fA-F]{3}$")
FUNCTIONAL = re.compile(r"\brgba?\(")
CSS_NAMES = {"black", "white", "red", "green", "blue", "gray", "grey", "orange", "purple",
             "yellow", "pink", "brown", "navy", "teal", "silver", "gold", "crimson",
             "lightgray", "lightgrey", "darkgray", "darkgrey", "dimgray", "steelblue",
             "firebrick", "tomato", "darkred", "darkblue", "lightblue", "darkgreen"}


def _string_tokens(source: str):
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            yield tok.start[0], tok.string


def colour_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string in ``source`` that types a colour."""
    found = []
    for line, text in _string_tokens(source):
        body = text.strip("rbfuRBFU").strip("\"'")
        if HEX.search(text) or HEX.search(body) or FUNCTIONAL.search(text) or body.lower() in CSS_NAMES:
            found.append((line, text))
    return found


def _sources():
    """The companion's Python and the notebooks', exercises' and solutions' sources."""
    paths = sorted((ROOT / "companion").rglob("*.py"))
    for folder in ("notebooks", "exercises", "solutions", "dashboards"):
        paths += sorted((ROOT / folder).rglob("*.py"))
    return [p for p in paths if p != ROOT / "companion" / "theme.py"
            and ".ipynb_checkpoints" not in p.parts]


def test_the_scan_finds_typed_colours():
    sample = ('a = {"color": "#0072b2"}\nb = "rgba(0, 0, 0, 0.5)"\nc = "black"\n'
              'd = f"<b style=\'color:#c00\'>x</b>"\n# "#123456" in a comment is fine\n'
              'e = "blacklist"\nf = "issue #123"\n')
    assert [line for line, _ in colour_literals(sample)] == [1, 2, 3, 4]


def test_no_colour_is_typed_outside_the_theme():
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in _sources()
             for line, text in colour_literals(p.read_text(encoding="utf-8"))]
    assert not found, "name these colours in companion/theme.py: " + "; ".join(found)


def test_rgba_matches_plotlys_own_conversion():
    for name in ("BLUE", "VERMILLION", "GREEN", "INK"):
        colour = getattr(theme, name)
        r, g, b = plotly.colors.hex_to_rgb(colour)
        assert theme.rgba(colour, 0.35) == f"rgba({r}, {g}, {b}, 0.35)"
    with pytest.raises(ValueError, match="alpha"):
        theme.rgba(theme.BLUE, 1.5)
    with pytest.raises(ValueError, match="color"):
        theme.rgba("blue", 0.5)


def test_the_template_is_plotly_white_with_the_companions_colours():
    import plotly.io as pio

    theme.register_template()
    layout = pio.templates[theme.TEMPLATE].layout
    assert list(layout.colorway) == list(theme.PALETTE)
    assert layout.font.family == theme.FONT_FAMILY and layout.font.color == theme.TEXT
    assert layout.plot_bgcolor == pio.templates["plotly_white"].layout.plot_bgcolor


def test_the_plain_template_is_what_plotly_builds_from_the_same_settings():
    """``theme.template_json`` skips plotly's validation; plotly itself, given plotly_white and
    the companion's three settings as attribute assignments, must build the same template."""
    import plotly.graph_objects as go
    import plotly.io as pio

    built = go.layout.Template(pio.templates["plotly_white"])
    built.layout.colorway = list(theme.PALETTE)
    built.layout.font = {"family": theme.FONT_FAMILY, "size": theme.FONT_SIZE,
                         "color": theme.TEXT}
    built.layout.hoverlabel = {"font": {"family": theme.FONT_FAMILY}}
    assert theme.template_json() == built.to_plotly_json()
    theme.register_template()
    assert pio.templates[theme.TEMPLATE].to_plotly_json() == built.to_plotly_json()


# --- what figures actually draw ------------------------------------------------------------------

def _theme_rgb() -> set[tuple[int, int, int]]:
    colours = set()
    for name in dir(theme):
        value = getattr(theme, name)
        values = (value if isinstance(value, (tuple, list)) else
                  value.values() if isinstance(value, dict) else [value])
        for c in values:
            if isinstance(c, tuple):            # VERDICT_STYLE's pairs
                values = list(values) + list(c)
                continue
            if isinstance(c, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", c):
                colours.add(tuple(plotly.colors.hex_to_rgb(c)))
    return colours


THEME_RGB = _theme_rgb()
RGBA = re.compile(r"rgba?\(\s*(\d+),\s*(\d+),\s*(\d+)(?:,\s*([\d.]+))?\s*\)")


def foreign_colours(node, path="") -> list[str]:
    """Colour strings in a figure's data and layout (its template left out) that are not the
    theme's (a theme colour at any opacity counts as the theme's; full transparency too)."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key != "template":
                found += foreign_colours(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += foreign_colours(value, f"{path}[{i}]")
    elif isinstance(node, str):
        if re.fullmatch(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}", node):
            if tuple(plotly.colors.hex_to_rgb(node)) not in THEME_RGB:
                found.append(f"{path} = {node}")
        elif (m := RGBA.fullmatch(node)):
            rgb = tuple(int(x) for x in m.groups()[:3])
            if rgb not in THEME_RGB and m.group(4) not in ("0", "0.0"):
                found.append(f"{path} = {node}")
    return found


def test_foreign_colours_finds_a_colour_the_theme_lacks():
    fig = {"data": [{"marker": {"color": [theme.BLUE, "#123456"]}},
                    {"fillcolor": theme.rgba(theme.GREEN, 0.2)}, {"line": {"color": "rgb(1, 2, 3)"}}],
           "layout": {"template": {"layout": {"paper_bgcolor": "#abcdef"}}}}
    assert foreign_colours(fig) == [".data[0].marker.color[1] = #123456",
                                    ".data[2].line.color = rgb(1, 2, 3)"]


PANELS = sorted(name for name in widgets.__all__ if name.endswith("Panel"))


@pytest.mark.parametrize("name", PANELS)
def test_every_explorer_draws_with_the_theme(name):
    panel = getattr(widgets, name)()
    fig = panel.figure().to_dict()
    assert list(fig["layout"]["template"]["layout"]["colorway"]) == list(theme.PALETTE)
    assert foreign_colours(fig) == []


def _stored_figures():
    for folder in ("notebooks", "exercises", "solutions", "dashboards"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for k, cell in enumerate(cells):
                for out in cell.get("outputs", []):
                    fig = out.get("data", {}).get("application/vnd.plotly.v1+json")
                    if fig:
                        yield f"{path.relative_to(ROOT)} cell {k}", fig


STORED = list(_stored_figures())


def test_there_are_stored_figures_to_read():
    assert len(STORED) > 100


@pytest.mark.parametrize("where, fig", STORED, ids=[w for w, _ in STORED])
def test_every_stored_figure_is_drawn_with_the_theme(where, fig):
    colorway = fig["layout"].get("template", {}).get("layout", {}).get("colorway")
    assert colorway == list(theme.PALETTE), f"{where}: not drawn with the companion template"
    assert foreign_colours(fig) == []
