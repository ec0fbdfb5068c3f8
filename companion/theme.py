"""The companion's one look: every colour, the font, the default margins, the legend placements
and the palettes, and the plotly template ("companion") built from them.

Every figure the companion draws names ``TEMPLATE`` (plotly.py expands the name when it builds a
Figure; the live explorers send the expanded template to the page once), and every colour a
module uses is a name from here: no other module types a colour (tests/test_theme.py reads the
package for literals). The PNG export draws the figure's own JSON, template included, so the
stored image has the same look as JupyterLab's.

Colours: hues of the Okabe-Ito set for anything that tells things apart, a few darker accents for
marks and limits, and a grey ramp for what stays in the background. Each colour that draws a
line or a marker keeps 3:1 against the white page (WCAG 2.1, 1.4.11), each text colour 4.5:1
(1.4.3), and the pale ones (``FILL_ONLY``) only fill an area that a label or a legend names.
The colours of a palette stay at least ``MIN_DELTA_E`` apart (CIEDE2000) for normal vision and
for protanopia, deuteranopia and tritanopia as simulated here (``contrast_ratio``,
``simulate_vision``, ``colour_difference``; tests/test_colour_access.py), and series drawn
together differ by dash or marker as well (``DASHES``, ``SYMBOLS``). Okabe and Ito's own orange,
sky blue and yellow are too light for a line on white (2.3:1, 2.3:1, 1.3:1): the orange and sky
blue here are darker versions of those hues, and yellow only tints a background.
"""

from __future__ import annotations

import json
from functools import lru_cache
from math import atan2, cos, degrees, exp, hypot, radians, sin, sqrt

__all__ = [
    "BLUE", "ORANGE", "GREEN", "PINK", "SKY", "VERMILLION", "YELLOW", "RED", "NAVY", "PURPLE",
    "BROWN", "OCHRE", "FOREST", "PINE", "PALE_GREEN", "PALE_FOREST", "TINT_GREEN", "TINT_BLUE",
    "TINT_ORANGE", "INK", "TEXT", "DARK_GREY", "GREY", "LIGHT_GREY", "PALE_GREY", "FAINT_GREY",
    "WHITE", "NEAR_BLACK", "TRANSPARENT", "PALETTE", "REQUEST_PALETTE", "SEQUENTIAL_SCALE",
    "PHASE_COLORS", "SERVING_COLORS", "MEMORY_COLORS", "VERDICT_STYLE", "PALETTES", "DASHES",
    "SYMBOLS", "FILL_ONLY", "FONT_FAMILY", "FONT_SIZE", "TEMPLATE", "PANEL_MARGIN", "BACKGROUND",
    "VISIONS", "MIN_TEXT_CONTRAST", "MIN_MARK_CONTRAST", "MIN_DELTA_E",
    "rgba", "foot_legend", "register_template", "template_json", "series_line", "text_on", "hex_rgb",
    "relative_luminance", "contrast_ratio", "vision_matrix", "simulate_vision", "cielab",
    "delta_e2000", "colour_difference", "closest_pair",
]

# --- colours -------------------------------------------------------------------------------------

# the series: Okabe-Ito's hues, each moved (by 3 to 9 CIEDE2000 units) until the palettes below
# keep MIN_DELTA_E under every simulated vision and every one keeps 3:1 on white; orange and sky
# blue are darker than Okabe and Ito's (#e69f00 and #56b4e9 are 2.3:1 on white)
BLUE = "#126bb0"          # 5.6:1 on white
ORANGE = "#ce8303"        # 3.1:1
GREEN = "#1a935f"         # 3.9:1
PINK = "#b2709c"          # 3.7:1, Okabe-Ito's reddish purple
SKY = "#009ede"           # 3.0:1
VERMILLION = "#c24c15"    # 4.8:1
YELLOW = "#f0e442"        # 1.3:1: a background tint only, never a line, marker or text

# darker accents: limits, deadlines, marks that must not read as one of the series
RED = "#a80c0a"
NAVY = "#233cad"
PURPLE = "#4d2c7c"
BROWN = "#533c1f"         # dark, so that protanopes tell it from vermillion
OCHRE = "#bc6c25"
FOREST = "#2d6a4f"
PINE = "#40916c"

# pale fills: free space, the ok region, a phase's background band (each beside a legend entry
# or a label, never the only sign of what it is)
PALE_GREEN = "#b5dcb9"
PALE_FOREST = "#b7c9bf"
TINT_GREEN = "#e5f5ee"
TINT_BLUE = "#eaf5fc"
TINT_ORANGE = "#fdf3e1"

# greys, dark to light
NEAR_BLACK = "#111111"    # text on a fill too light for white text (``text_on``)
INK = "#333333"           # reference lines and marks drawn in "black"
TEXT = "#2a3f5f"          # plotly_white's text colour, kept for every label
DARK_GREY = "#444444"
GREY = "#616161"          # 6.2:1 on white: reads as text too
LIGHT_GREY = "#b0b0b0"    # 2.2:1: fills and gridlike guides only
PALE_GREY = "#d9d9d9"
FAINT_GREY = "#ececec"
WHITE = "#ffffff"
TRANSPARENT = "rgba(0, 0, 0, 0)"
RULE_GREY = "#808080"      # the ledger tables' rules, at three strengths (companion.ledger)
ERRATUM_RED = "#d62728"    # the faint tint of a ledger row the chapter gets wrong

# the page every figure is drawn on: plotly_white's paper and plot area
BACKGROUND = WHITE

# colours too light for a line, a marker or text on BACKGROUND: fills beside a label only
FILL_ONLY = (YELLOW, LIGHT_GREY, PALE_GREEN, PALE_FOREST, PALE_GREY, FAINT_GREY, TINT_GREEN,
             TINT_BLUE, TINT_ORANGE)


def hex_rgb(color: str) -> tuple[int, int, int]:
    """``color`` ("#rrggbb") as its three 0-255 channels."""
    if not (isinstance(color, str) and len(color) == 7 and color.startswith("#")):
        raise ValueError(f"color must be '#rrggbb', got {color!r}")
    try:
        return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
    except ValueError:
        raise ValueError(f"color must be '#rrggbb', got {color!r}") from None


def rgba(color: str, alpha: float) -> str:
    """``color`` ("#rrggbb") at opacity ``alpha`` (0-1), as plotly's "rgba(r, g, b, a)"."""
    r, g, b = hex_rgb(color)
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    return f"rgba({r}, {g}, {b}, {alpha:g})"


def css_rgba(color: str, alpha: float) -> str:
    """``rgba(color, alpha)`` written compactly for a stylesheet: "rgba(128,128,128,0.25)"."""
    return rgba(color, alpha).replace(" ", "")


# --- palettes ------------------------------------------------------------------------------------

# series in order (the template's colorway): the six Okabe-Ito hues, then brown and grey
PALETTE = (BLUE, VERMILLION, GREEN, PINK, ORANGE, SKY, BROWN, GREY)

# one colour per request, sequence or slot in a Gantt, a block table or a pool, cycled;
# neighbours in the order differ in hue and lightness; text on a slot is drawn in text_on(colour)
REQUEST_PALETTE = (BLUE, ORANGE, GREEN, PINK, SKY, VERMILLION, BROWN, GREY)

# a quantity that runs from low to high (the lab's batch on its roofline): viridis, as plotly
# spells it, readable in grey and by every common colour-vision deficiency
SEQUENTIAL_SCALE = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89",
                    "#35b779", "#6ece58", "#b5de2b", "#fde725")

# a request's phases (Chapter 8's timelines and schedules)
PHASE_COLORS = {"queue": LIGHT_GREY, "prefill": ORANGE, "decode": SKY, "stall": VERMILLION,
                "token": NAVY, "deadline": RED}

# Chapter 17 §6-§10: phases, pipeline stages, transfers and limits
SERVING_COLORS = {
    "prefill": ORANGE, "decode": SKY, "idle": PALE_GREY, "comm": VERMILLION,
    "read": BLUE, "wire": PINK, "fill": ORANGE, "steady": BLUE,
    "drain": PINK, "cold": VERMILLION, "warm": GREEN, "mix": BLUE,
    "slo": RED, "cap": GREEN, "cap2": GREY, "good": rgba(GREEN, 0.15),
}

# a card's memory, one meaning per colour wherever it is stacked (8.1, 8.4, 17 §4)
MEMORY_COLORS = {"weights": BLUE, "kv": GREEN, "free": PALE_GREEN, "reserve": LIGHT_GREY,
                 "activations": BROWN, "over": VERMILLION}

# a grading verdict's colours in HTML: (text, background); the text keeps 4.5:1 on its
# background, and the three stay MIN_DELTA_E apart under every simulated vision (red and green
# alone would not: the verdict's words and mark say it as well)
VERDICT_STYLE = {"ok": ("#237b55", "#e9f6ec"), "open": ("#7f5701", "#fff6de"),
                 "off": ("#76141a", "#fdeceb")}

# the sets whose colours tell things apart in one figure (series, phases, verdicts); the tests
# and the gallery's colour-vision section read them; a colour named twice in a set (SERVING's
# "fill" is its "prefill") is one meaning in two figures, and the tint "good" is a background
PALETTES = {
    "PALETTE": PALETTE,
    "REQUEST_PALETTE": REQUEST_PALETTE,
    "PHASE_COLORS": tuple(PHASE_COLORS.values()),
    "SERVING_COLORS": tuple(dict.fromkeys(c for k, c in SERVING_COLORS.items() if k != "good")),
    "MEMORY_COLORS": tuple(MEMORY_COLORS.values()),
    "VERDICT_STYLE": tuple(text for text, _ in VERDICT_STYLE.values()),
}

# line dashes and marker symbols in the order series take them, so that two series never
# differ by colour alone: the i-th series of a figure is PALETTE[i] drawn with DASHES[i]
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down")


def series_line(i: int, width: float | None = None) -> dict:
    """The line of a figure's ``i``-th series (from 0): ``PALETTE[i]`` with ``DASHES[i]``,
    both cycled, as plotly's ``line`` dict; ``width`` in px when given."""
    line = {"color": PALETTE[i % len(PALETTE)], "dash": DASHES[i % len(DASHES)]}
    if width is not None:
        line["width"] = width
    return line


# --- the plotly template -------------------------------------------------------------------------

FONT_FAMILY = '"Open Sans", verdana, arial, sans-serif'   # plotly's own stack
FONT_SIZE = 12
TEMPLATE = "companion"
# an explorer's margins: room for a one-line title, none wasted on the right
PANEL_MARGIN = {"t": 60, "r": 20}


def foot_legend(**extra) -> dict:
    """A horizontal legend in its own rows at the figure's foot, below the x title (the figure's
    bottom margin must hold it): it covers no data and no axis text at any size."""
    return {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
            "x": 0, "xanchor": "left", **extra}


def template_json() -> dict:
    """The "companion" template as plotly JSON: plotly_white with the companion's colorway,
    font and hover-label font, read from plotly's own template file without building plotly
    objects (which validate every property: a fifth of a second before an explorer's first
    figure). ``register_template`` registers exactly this with plotly; a test holds the two
    equal."""
    return json.loads(_template_text())


@lru_cache(maxsize=1)
def _template_text() -> str:
    import pkgutil

    template = json.loads(pkgutil.get_data("plotly", "package_data/templates/plotly_white.json"))
    layout = template.setdefault("layout", {})
    layout["colorway"] = list(PALETTE)
    layout["font"] = {"family": FONT_FAMILY, "size": FONT_SIZE, "color": TEXT}
    layout["hoverlabel"] = {"font": {"family": FONT_FAMILY}}
    return json.dumps(template, sort_keys=True)


def register_template() -> str:
    """Register the "companion" template with plotly (once) and return its name: plotly_white
    with the companion's colorway, font and hover labels (``template_json``)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if TEMPLATE not in pio.templates:
        pio.templates[TEMPLATE] = go.layout.Template(template_json())
    return TEMPLATE


# --- what a reader can tell apart: contrast, colour-vision deficiency, colour difference --------

VISIONS = ("normal", "protanopia", "deuteranopia", "tritanopia")
# WCAG 2.1 AA: 1.4.3 (text below 18 pt, which every figure label is) and 1.4.11 (the lines,
# markers and bars a reader needs to understand a figure)
MIN_TEXT_CONTRAST = 4.5
MIN_MARK_CONTRAST = 3.0
# CIEDE2000 between two colours of a palette. About 1 is the smallest difference seen between
# large patches side by side; the difference needed grows as marks shrink to lines a few pixels
# wide (Szafir, "Modeling Color Difference for Visualization Design", IEEE TVCG 24(1), 2018),
# and categorical colours are meant to be told apart at a glance, not found on close look: 10,
# a common working threshold for categorical palettes, keeps that margin for 2 px lines.
MIN_DELTA_E = 10.0

# Machado, Oliveira and Fernandes, "A Physiologically-based Model for Simulation of Color Vision
# Deficiency", IEEE TVCG 15(6), 2009, the matrices of their supplementary table at severity 1.0
# (dichromacy); they act on linear RGB
_MACHADO = {
    "protanopia": ((0.152286, 1.052583, -0.204868),
                   (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968),
                     (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779),
                   (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
}


def _linear(channel: int, knee: float = 0.04045) -> float:
    """An sRGB channel (0-255) as linear light (0-1): IEC 61966-2-1's transfer function."""
    c = channel / 255
    return c / 12.92 if c <= knee else ((c + 0.055) / 1.055) ** 2.4


def _encode(value: float) -> int:
    """Linear light (clipped to 0-1) as an sRGB channel (0-255)."""
    v = min(1.0, max(0.0, value))
    c = 12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055
    return round(c * 255)


def relative_luminance(color: str) -> float:
    """WCAG 2.1's relative luminance of ``color`` ("#rrggbb"), 0 (black) to 1 (white):
    0.2126 R + 0.7152 G + 0.0722 B of the linearised channels (WCAG writes the knee as 0.03928,
    which no 8-bit channel tells from sRGB's 0.04045)."""
    r, g, b = (_linear(c, 0.03928) for c in hex_rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(color: str, background: str = BACKGROUND) -> float:
    """WCAG 2.1's contrast ratio (L1 + 0.05) / (L2 + 0.05) of two colours, the lighter's relative
    luminance over the darker's: 1 (the same) to 21 (black on white)."""
    a, b = relative_luminance(color), relative_luminance(background)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def text_on(fill: str) -> str:
    """The text colour for a label on ``fill``: WHITE, or NEAR_BLACK where white would fall
    under MIN_TEXT_CONTRAST (the one of the two with the higher contrast)."""
    return WHITE if contrast_ratio(WHITE, fill) >= contrast_ratio(NEAR_BLACK, fill) else NEAR_BLACK


def vision_matrix(vision: str) -> tuple[tuple[float, float, float], ...]:
    """Machado et al.'s 3x3 matrix for ``vision`` (one of VISIONS; "normal" is the identity),
    rows acting on linear (R, G, B)."""
    if vision not in VISIONS:
        raise ValueError(f"vision must be one of {VISIONS}, got {vision!r}")
    return _MACHADO.get(vision, ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))


def simulate_vision(color: str, vision: str) -> str:
    """``color`` ("#rrggbb") as a reader with ``vision`` sees it (one of VISIONS; "normal" returns
    it unchanged): Machado et al.'s matrix applied to the linear channels, clipped to sRGB."""
    if vision not in VISIONS:
        raise ValueError(f"vision must be one of {VISIONS}, got {vision!r}")
    if vision == "normal":
        hex_rgb(color)
        return color.lower()
    rgb = [_linear(c) for c in hex_rgb(color)]
    out = (_encode(sum(m * x for m, x in zip(row, rgb))) for row in vision_matrix(vision))
    return "#" + "".join(f"{c:02x}" for c in out)


def cielab(color: str) -> tuple[float, float, float]:
    """``color`` ("#rrggbb") in CIELAB (L*, a*, b*) under D65: sRGB's matrix to XYZ, then CIE
    1976's cube root (linear near black)."""
    r, g, b = (_linear(c) for c in hex_rgb(color))
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """CIEDE2000 colour difference of two CIELAB colours (k_L = k_C = k_H = 1), as Sharma, Wu
    and Dalal write it out ("The CIEDE2000 Color-Difference Formula: Implementation Notes",
    Color Research and Application 30(1), 2005)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (hypot(a1, b1) + hypot(a2, b2)) / 2
    g = 0.5 * (1 - sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = hypot(a1p, b1), hypot(a2p, b2)
    h1p = degrees(atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = degrees(atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh -= 360 if dh > 180 else (-360 if dh < -180 else 0)
    d_h = 2 * sqrt(c1p * c2p) * sin(radians(dh / 2))
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    if not c1p * c2p:
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + (360 if h1p + h2p < 360 else -360)) / 2
    t = (1 - 0.17 * cos(radians(h_mean - 30)) + 0.24 * cos(radians(2 * h_mean))
         + 0.32 * cos(radians(3 * h_mean + 6)) - 0.20 * cos(radians(4 * h_mean - 63)))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = (-2 * sqrt(cp_mean ** 7 / (cp_mean ** 7 + 25 ** 7))
           * sin(radians(60 * exp(-((h_mean - 275) / 25) ** 2))))
    return sqrt((dl / s_l) ** 2 + (dc / s_c) ** 2 + (d_h / s_h) ** 2
                + r_t * (dc / s_c) * (d_h / s_h))


def colour_difference(a: str, b: str, vision: str = "normal") -> float:
    """CIEDE2000 between colours ``a`` and ``b`` ("#rrggbb") as a reader with ``vision`` sees
    them (``simulate_vision``)."""
    return delta_e2000(cielab(simulate_vision(a, vision)), cielab(simulate_vision(b, vision)))


def closest_pair(colors, vision: str = "normal") -> tuple[float, str, str]:
    """The two distinct colours of ``colors`` that a reader with ``vision`` tells apart least:
    (CIEDE2000, a, b); (inf, "", "") for fewer than two."""
    distinct = list(dict.fromkeys(c.lower() for c in colors))
    best = (float("inf"), "", "")
    for i, a in enumerate(distinct):
        for b in distinct[i + 1:]:
            d = colour_difference(a, b, vision)
            if d < best[0]:
                best = (d, a, b)
    return best
