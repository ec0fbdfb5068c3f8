"""A PNG of a plotly figure, drawn by plotly.js itself, for readers whose viewer runs no JavaScript.

GitHub's notebook view and a printed page cannot run plotly.js, and JupyterLab ignores a PNG
when the plotly mimetype sits beside it. So the stored outputs carry both: plotly JSON for
JupyterLab and the book, and this picture as ``image/png`` for everything else.

The picture is plotly's own static export (kaleido 1.x): plotly.js draws the figure in headless
Chromium, so the PNG is what JupyterLab shows, at ``WIDTH_PX`` wide and the figure's own layout
height (450 px when it sets none). Chromium is ``find_chromium()``'s: $CHROMIUM_PATH, else
Debian's /usr/bin/chromium, else chromium, chromium-browser or google-chrome on PATH; without
one ``figure_png`` raises a RuntimeError that names CHROMIUM_PATH.

Nothing leaves the machine. The page kaleido draws in loads plotly.py's own bundled
plotly.min.js (the plotly.js of the JSON beside the PNG; kaleido would otherwise take a CDN's
when plotly.py is missing) and no MathJax (kaleido's default is a CDN's; the figures have no
LaTeX). Chromium's own background calls (Google's clock, updater and accounts, the search
engine's start page) go to a proxy on 127.0.0.1 that refuses every connection.

One Chromium per process, started at the first PNG (a few seconds) and stopped at exit; each
figure then takes about 0.3 s. Every call waits at most ``TIMEOUT_S`` (kaleido's own sync server
would wait forever for a Chromium that failed to start). Small on purpose: a ``COLOURS``-colour
palette (PIL, median cut, no dithering), typically 15-50 KB a figure.

``renderer_name`` is a plotly renderer that adds this PNG to ``plotly_mimetype``'s output;
``use_in_notebooks()`` makes it the default where plotly's default is ``plotly_mimetype``
(what a Jupyter kernel gets), only while ``COMPANION_STATIC_OUTPUTS=1`` (``make execute``).
"""

from __future__ import annotations

import atexit
import base64
import io
import os
import shutil
import threading

__all__ = ["figure_png", "png_bundle", "use_in_notebooks", "static_outputs_enabled",
           "STATIC_OUTPUTS_ENV", "decoded", "find_chromium", "chromium_missing",
           "CHROMIUM_CANDIDATES"]

STATIC_OUTPUTS_ENV = "COMPANION_STATIC_OUTPUTS"
RENDERER_NAME = "companion_png"
WIDTH_PX = 760
DEFAULT_HEIGHT_PX = 450   # plotly.js's own default height
COLOURS = 64
TIMEOUT_S = 120           # starting Chromium, or drawing one figure
# Debian's chromium first; never a browser that kaleido or Playwright would download
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome",
                       "google-chrome-stable")


def static_outputs_enabled() -> bool:
    """Whether outputs for readers without a kernel are being written (``make execute``)."""
    return os.environ.get(STATIC_OUTPUTS_ENV) == "1"


def find_chromium() -> str | None:
    """Path of a Chromium binary: $CHROMIUM_PATH (None when that is no executable), else
    Debian's /usr/bin/chromium, else the first of the other names found on PATH."""
    explicit = os.environ.get("CHROMIUM_PATH")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name) if not name.startswith("/") else (
            name if os.access(name, os.X_OK) else None)
        if found:
            return found
    return None


def chromium_missing() -> str | None:
    """None when ``find_chromium()`` finds one, else why not (what a skipped test says)."""
    if find_chromium() is not None:
        return None
    explicit = os.environ.get("CHROMIUM_PATH")
    if explicit:
        return f"CHROMIUM_PATH={explicit} is not an executable"
    return ("no Chromium found (looked for $CHROMIUM_PATH, " + ", ".join(CHROMIUM_CANDIDATES)
            + " on PATH)")


def decoded(values):
    """Plotly's typed-array JSON (``{"dtype": "f8", "bdata": base64, "shape": "r, c"}``, what
    it writes for numpy arrays) -> nested lists; anything else unchanged."""
    if isinstance(values, dict) and "bdata" in values and "dtype" in values:
        import numpy as np

        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        if values.get("shape"):
            array = array.reshape([int(n) for n in str(values["shape"]).split(",")])
        return array.tolist()
    return values


def plotly_js_path():
    """plotly.py's bundled plotly.min.js (what the page that draws the PNGs loads)."""
    from pathlib import Path

    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def page_generator():
    """kaleido's page, with plotly.py's plotly.js (a file: URL) and no MathJax."""
    import kaleido

    return kaleido.PageGenerator(plotly=plotly_js_path().as_uri(), mathjax=False)


class _Server:
    """One kaleido (one headless Chromium, one tab) on an asyncio loop in a daemon thread;
    ``png`` hands it a figure and waits at most ``TIMEOUT_S`` for the bytes."""

    def __init__(self, chromium: str):
        import asyncio
        import socket

        # a port that refuses every connection: bound here, never listened on, held till close
        self._refuser = socket.socket()
        self._refuser.bind(("127.0.0.1", 0))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="companion-kaleido")
        self._thread.start()
        try:
            self._kaleido = self._wait(self._open(chromium, self._refuser.getsockname()[1]))
        except BaseException:
            self._stop_loop()
            raise

    async def _open(self, chromium: str, port: int):
        import kaleido

        k = kaleido.Kaleido(n=1, timeout=TIMEOUT_S, path=chromium, page_generator=page_generator(),
                            proxy_server=f"http://127.0.0.1:{port}")
        await k.open()
        return k

    def _wait(self, coroutine):
        import asyncio

        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise RuntimeError(f"Chromium did not answer within {TIMEOUT_S} s") from None

    def png(self, spec: dict, width: int, height: int) -> bytes:
        return self._wait(self._kaleido.calc_fig(
            spec, opts={"format": "png", "width": width, "height": height, "scale": 1}))

    def close(self) -> None:
        try:
            self._wait(self._kaleido.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._refuser.close()


_server: _Server | None = None
_lock = threading.Lock()


def _the_server() -> _Server:
    global _server
    with _lock:
        if _server is None:
            missing = chromium_missing()
            if missing:
                raise RuntimeError(
                    f"{missing}: plotly's static export (kaleido) draws the PNG in Chromium; "
                    "install Debian's (apt-get install chromium) or set CHROMIUM_PATH to one")
            _server = _Server(find_chromium())
            atexit.register(_stop_server)
        return _server


def _stop_server() -> None:
    """Stop this process's Chromium (at exit; a later PNG starts a new one)."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        server.close()


def figure_png(fig) -> bytes:
    """PNG bytes of a plotly figure (a ``go.Figure`` or its dict) as plotly.js draws it, at
    ``WIDTH_PX`` by the layout's height, in a ``COLOURS``-colour palette."""
    from PIL import Image

    spec = fig if isinstance(fig, dict) else fig.to_dict()
    height = (spec.get("layout") or {}).get("height") or DEFAULT_HEIGHT_PX
    raw = _the_server().png(spec, WIDTH_PX, height)
    image = Image.open(io.BytesIO(raw)).convert("RGB").quantize(
        colors=COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="png", optimize=True)
    return out.getvalue()


def png_bundle(fig) -> dict:
    """``{"image/png": base64 text}`` of ``figure_png(fig)``, for a display bundle."""
    return {"image/png": base64.b64encode(figure_png(fig)).decode("ascii")}


def use_in_notebooks() -> None:
    """While static outputs are written, make plotly's notebook output carry the PNG too:
    registers the ``companion_png`` renderer and, where the default renderer is
    ``plotly_mimetype`` (a Jupyter kernel), makes the default ``plotly_mimetype+companion_png``
    (plotly merges the bundles of "+"-joined renderers). Elsewhere nothing changes."""
    if not static_outputs_enabled():
        return
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    if RENDERER_NAME not in pio.renderers:
        class _PngRenderer(MimetypeRenderer):
            def to_mimebundle(self, fig_dict):
                return png_bundle(fig_dict)

        pio.renderers[RENDERER_NAME] = _PngRenderer()
    names = pio.renderers.default.split("+")
    if "plotly_mimetype" in names and RENDERER_NAME not in names:
        pio.renderers.default = "+".join(names + [RENDERER_NAME])
