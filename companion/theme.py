"""The companion's one look: every colour, the font, the default margins, the legend placements
and the palettes, and the plotly template ("companion") built from them.

Every figure the companion draws names ``TEMPLATE`` (plotly.py expands the name when it builds a
Figure; the live explorers send the expanded template to the page once), and every colour a
module uses is a name from here: no other module types a colour (tests/test_theme.py reads the
package for literals). The PNG export draws the figure's own JSON, template included, so the
stored image has the same look as JupyterLab's.

Colours: the Okabe-Ito set (safe for the common colour-vision deficiencies) for anything that
tells things apart, a few darker accents for marks and limits, and a grey ramp for what stays in
the background.
"""

from __future__ import annotations

__all__ = [
    "BLUE", "ORANGE", "GREEN", "PINK", "SKY", "VERMILLION", "YELLOW", "RED", "NAVY", "PURPLE",
    "BROWN", "OCHRE", "FOREST", "PINE", "PALE_GREEN", "PALE_FOREST", "TINT_GREEN", "TINT_BLUE",
    "TINT_ORANGE", "INK", "TEXT", "DARK_GREY", "GREY", "LIGHT_GREY", "PALE_GREY", "FAINT_GREY",
    "WHITE", "TRANSPARENT", "PALETTE", "REQUEST_PALETTE", "SEQUENTIAL_SCALE", "PHASE_COLORS", "SERVING_COLORS",
    "MEMORY_COLORS", "VERDICT_STYLE", "FONT_FAMILY", "FONT_SIZE", "TEMPLATE", "PANEL_MARGIN",
    "rgba", "foot_legend", "register_template",
]

# --- colours -------------------------------------------------------------------------------------

# Okabe-Ito
BLUE = "#0072b2"
ORANGE = "#e69f00"
GREEN = "#009e73"
PINK = "#cc79a7"          # Okabe-Ito's reddish purple
SKY = "#56b4e9"
VERMILLION = "#d55e00"
YELLOW = "#f0e442"

# darker accents: limits, deadlines, marks that must not read as one of the series
RED = "#c00000"
NAVY = "#0b3d91"
PURPLE = "#6a3d9a"
BROWN = "#8c6d31"
OCHRE = "#bc6c25"
FOREST = "#2d6a4f"
PINE = "#40916c"

# pale fills: free space, the ok region, a phase's background band
PALE_GREEN = "#b5dcb9"
PALE_FOREST = "#b7c9bf"
TINT_GREEN = "#e5f5ee"
TINT_BLUE = "#eaf5fc"
TINT_ORANGE = "#fdf3e1"

# greys, dark to light
INK = "#333333"           # reference lines and marks drawn in "black"
TEXT = "#2a3f5f"          # plotly_white's text colour, kept for every label
DARK_GREY = "#444444"
GREY = "#7f7f7f"
LIGHT_GREY = "#b0b0b0"
PALE_GREY = "#d9d9d9"
FAINT_GREY = "#ececec"
WHITE = "#ffffff"
TRANSPARENT = "rgba(0, 0, 0, 0)"
RULE_GREY = "#808080"      # the ledger tables' rules, at three strengths (companion.ledger)
ERRATUM_RED = "#d62728"    # the faint tint of a ledger row the chapter gets wrong


def rgba(color: str, alpha: float) -> str:
    """``color`` ("#rrggbb") at opacity ``alpha`` (0-1), as plotly's "rgba(r, g, b, a)"."""
    if not (isinstance(color, str) and len(color) == 7 and color.startswith("#")):
        raise ValueError(f"color must be '#rrggbb', got {color!r}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha:g})"


def css_rgba(color: str, alpha: float) -> str:
    """``rgba(color, alpha)`` written compactly for a stylesheet: "rgba(128,128,128,0.25)"."""
    return rgba(color, alpha).replace(" ", "")


# --- palettes ------------------------------------------------------------------------------------

# series in order (the template's colorway): the Okabe-Ito set, then brown and grey
PALETTE = (BLUE, VERMILLION, GREEN, PINK, ORANGE, SKY, BROWN, GREY)

# one colour per request, sequence or slot in a Gantt, a block table or a pool, cycled;
# neighbours in the order differ in hue and lightness, and white text reads on each
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

# a grading verdict's colours in HTML: (text, background)
VERDICT_STYLE = {"ok": ("#1a7f37", "#e9f6ec"), "open": ("#7a5300", "#fff6de"),
                 "off": ("#b42318", "#fdeceb")}

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


def register_template() -> str:
    """Register the "companion" template with plotly (once) and return its name: plotly_white
    with the companion's colorway, font and hover labels."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if TEMPLATE not in pio.templates:
        template = go.layout.Template(pio.templates["plotly_white"])
        template.layout.colorway = list(PALETTE)
        template.layout.font = {"family": FONT_FAMILY, "size": FONT_SIZE, "color": TEXT}
        template.layout.hoverlabel = {"font": {"family": FONT_FAMILY}}
        pio.templates[TEMPLATE] = template
    return TEMPLATE
