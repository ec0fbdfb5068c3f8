"""What a reader sees of every explorer panel and every figure, measured in the page: shared by
tests/browser/test_clean_surfaces.py and ``make gallery`` (tools/make_gallery.py).

- ``narrow_notebook``: the notebook sized to a given width (both sidebars closed).
- ``write_panels_notebook``: one notebook with every explorer of ``companion.widgets`` at the
  chapter's setting (one code cell each), written under artifacts/ (git-ignored, inside the
  Lab server's root).
- ``PANEL_PROBE_JS``: what one ``.companion-panel`` shows cut or out of line: control text cut
  (a dropdown's chosen option, a control's label, a slider's value), the sliders' tracks (their
  widths and left edges) and readout table headers that wrap onto a second line.
- ``MODEBAR_PROBE_JS``: whether a plotly figure's toolbar (modebar) is visible over its title.

Nothing here imports playwright; the callers hold the page.
"""

from __future__ import annotations

import lab_harness as H


def panel_classes() -> list[str]:
    """Every explorer class that ``companion.widgets`` exports, by name."""
    from companion import widgets
    from companion.explorers.base import Panel

    return sorted(n for n in dir(widgets)
                  if isinstance(getattr(widgets, n), type) and issubclass(getattr(widgets, n), Panel)
                  and getattr(widgets, n) is not Panel)


def write_panels_notebook(name: str, panels: list[str] | None = None) -> str:
    """Write ``artifacts/browser/<name>.ipynb``: one cell per explorer (``panels``, default
    every one) showing it at the chapter's setting, each cell starting with a comment that
    names the class. Returns the path relative to the repository root."""
    panels = panel_classes() if panels is None else panels
    return H.write_scratch_notebook(
        name, "Every explorer at the chapter's setting (tests/browser/surfaces.py).",
        ["from companion import widgets"] + [f"# {p}\nwidgets.{p}().show()" for p in panels])


def narrow_notebook(page, width: int, height: int | None = None) -> None:
    """Close both JupyterLab sidebars and size the window (``height`` px high, when given) so
    that the notebook is ``width`` px wide."""
    page.evaluate("() => { const s = window.jupyterapp.shell; s.collapseLeft(); "
                  "s.collapseRight(); }")
    if height:
        page.set_viewport_size({"width": page.viewport_size["width"], "height": height})
    for _ in range(3):
        shown = page.evaluate(f"() => document.querySelector('{H.ACTIVE}')"
                              ".getBoundingClientRect().width")
        if abs(shown - width) < 1:
            return
        size = page.viewport_size
        page.set_viewport_size({"width": int(size["width"] + width - shown),
                                "height": size["height"]})


# One panel, measured. A <select> shows its chosen option's text without reporting it in
# scrollWidth, so that text is measured with the select's own font (a canvas) against the room
# the select leaves it (its content box less the drop-down arrow's padding); labels and a
# slider's value are ordinary boxes (scrollWidth > clientWidth: cut). Readout headers: a <th>
# whose text runs over more than one line box.
PANEL_PROBE_JS = """panel => {
    const canvas = document.createElement('canvas').getContext('2d');
    const px = v => parseFloat(v) || 0;
    const textOf = el => (el.textContent || '').trim();
    const cut = [];
    for (const sel of panel.querySelectorAll('select')) {
        const cs = getComputedStyle(sel);
        canvas.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
        const option = sel.options[sel.selectedIndex];
        for (const o of sel.options) {
            const need = canvas.measureText(o.text).width;
            const room = sel.clientWidth - px(cs.paddingLeft) - px(cs.paddingRight);
            if (need > room + 0.5) {
                cut.push({what: 'dropdown option' + (o === option ? ' (shown)' : ''),
                          text: o.text, need: Math.ceil(need), room: Math.floor(room)});
            }
        }
    }
    for (const el of panel.querySelectorAll('.widget-label, .widget-readout, button')) {
        if (!el.offsetParent) continue;
        if (el.scrollWidth > el.clientWidth + 1) {
            cut.push({what: el.className.split(' ')[0] || el.tagName, text: textOf(el),
                      need: el.scrollWidth, room: el.clientWidth});
        }
    }
    const tracks = [...panel.querySelectorAll('.widget-slider .slider-container')].map(t => {
        const r = t.getBoundingClientRect();
        const label = t.parentElement.querySelector('.widget-label');
        return {label: label ? textOf(label) : '', left: Math.round(r.left),
                width: Math.round(r.width)};
    });
    const wrapped = [];
    for (const th of panel.querySelectorAll('.widget-html-content th')) {
        const range = document.createRange();
        range.selectNodeContents(th);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                             .map(r => Math.round(r.top)));
        if (tops.size > 1) wrapped.push(textOf(th));
    }
    const r = panel.getBoundingClientRect();
    return {cut, tracks, wrapped, width: Math.round(r.width),
            overflow: panel.scrollWidth > panel.clientWidth + 1};
}"""


def panel_problems(measured: dict, tolerance_px: int = 3) -> list[str]:
    """What ``PANEL_PROBE_JS`` found wrong in one panel, as sentences (none: clean)."""
    out = [f"{c['what']} cut: {c['text']!r} needs {c['need']} px, has {c['room']} px"
           for c in measured["cut"]]
    tracks = measured["tracks"]
    if tracks:
        widths = [t["width"] for t in tracks]
        lefts = [t["left"] for t in tracks]
        if max(widths) - min(widths) > tolerance_px:
            out.append("slider tracks of different lengths: "
                       + ", ".join(f"{t['label']!r} {t['width']} px" for t in tracks))
        if max(lefts) - min(lefts) > tolerance_px:
            out.append("slider tracks not aligned: "
                       + ", ".join(f"{t['label']!r} at x={t['left']}" for t in tracks))
        short = [t for t in tracks if t["width"] < 100]
        if short:
            out.append("slider tracks too short to use: "
                       + ", ".join(f"{t['label']!r} {t['width']} px" for t in short))
    out += [f"readout header wraps: {t!r}" for t in measured["wrapped"]]
    return out


# A plotly figure (its graph div): the modebar's box and the title's, and whether the modebar
# shows (opacity) while the pointer is elsewhere.
MODEBAR_PROBE_JS = """gd => {
    const box = el => { if (!el) return null; const r = el.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                width: r.width, height: r.height}; };
    const bar = gd.querySelector('.modebar');
    const title = gd.querySelector('.gtitle');
    // plotly's "hover" modebar keeps its box and fades its button groups (opacity 0)
    const visible = el => { const cs = getComputedStyle(el);
        return cs.display !== 'none' && cs.visibility !== 'hidden' && parseFloat(cs.opacity) > 0.05; };
    const shown = !!bar && visible(bar)
        && [...bar.querySelectorAll('.modebar-group')].some(visible);
    return {bar: box(bar), title: box(title), shown,
            titleText: title ? title.textContent : ''};
}"""


def modebar_over_title(measured: dict) -> bool:
    """Whether ``MODEBAR_PROBE_JS``'s modebar is visible and its box meets the title's."""
    bar, title = measured["bar"], measured["title"]
    if not measured["shown"] or not bar or not title or not bar["width"] or not title["width"]:
        return False
    return (bar["left"] < title["right"] and title["left"] < bar["right"]
            and bar["top"] < title["bottom"] and title["top"] < bar["bottom"])
