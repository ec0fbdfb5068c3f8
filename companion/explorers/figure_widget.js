// Front end of companion.explorers.figure_widget.PlotlyFigure (see its docstring).
//
// The anywidget model only says where things are: `state` (a core ipywidgets model holding
// the figure's plotly JSON and its template, as UTF-8 bytes) and `library` (a core model with
// plotly.js from the kernel's plotly package). Updates arrive on `state`, never on the
// anywidget model, so anywidget's model-initialisation timeout cannot make the figure deaf.
// A change is drawn at once when the page has not drawn this figure in the current frame;
// changes that arrive while a frame's draw is still on screen wait for the next animation
// frame and only the newest state is drawn: figures that arrive faster than the page draws
// are skipped, never queued.
//
// Lookahead: each figure from the kernel carries its key (the followed controls' values it
// was computed for), a digest and its readout; after a move the kernel also offers the
// figures one step either side (`ahead`). The view keeps the last KEPT of these. When a
// control the reader moves lands on a kept key, the view shows that figure and readout at
// once, without waiting for the kernel; the kernel's own figure for the step, identical, is
// then not drawn again, and figures for keys the reader has already left are not drawn over
// it while the kernel catches up (STALE_MS at most).
// The offered figures are also drawn ahead of time, when the page is idle, into detached
// graph divs at the shown figure's width (PREPARED per view, the figure last shown among
// them): a step that lands on one swaps that div in, with no plotly.js work at all, and shows
// the same pixels a redraw would.
//
// A drag: a full plotly.js redraw takes 25-70 ms, too long for a figure that
// follows a hand. When the pointer enters or presses one of the panel's sliders (its element
// carries the class companion-control-<i>), the view asks the kernel once for that slider's
// film: the figures of every value it can take, the other controls as they are (a custom
// message; the kernel sends them nearest first, in chunks). While the pointer is up, the
// view draws them ahead of time into one detached graph div at the shown width and keeps a
// copy of the drawn DOM of each (a snapshot: plotly.js's own drawing, so the same pixels).
// While a pointer is held, a figure is shown by swapping its snapshot in (drawn then, if it
// is not ready yet); the live graph div comes back, redrawn if needed, once it is let go.

const CONFIG = { editSelection: false }; // what plotly's FigureWidget passes
const KEPT = 16;        // figures kept per view for the lookahead (a few KB to ~100 KB each)
const STALE_MS = 3000;  // how long the kernel may take to confirm a step shown from lookahead
const PREPARED = 3;     // figures drawn ahead of time per view (detached graph divs)
const FILM = 256;       // most figures of a slider's film kept per view
const SNAPSHOTS = 160;  // most snapshots (copies of drawn figures) kept per view
// A pointer held down on the page (a slider being dragged): the figures the kernel sends
// are drawn in the next animation frame, not in their message's task, so that the page
// first reads the kernel's "idle" (ipywidgets sends the slider's next value only then) and
// the kernel computes the next figure while plotly.js draws this one; nothing is drawn ahead
// of time (the offered neighbours of a value the hand has already left) until it is let go.
// window.companionDrag = false: neither, and no films (make bench's "drag-off" rows: the
// behaviour before either).
const POINTER = (globalThis.__companionPointer = globalThis.__companionPointer || (() => {
  const p = { down: false, listeners: new Set() };
  const set = (down) => {
    if (p.down === down) return;
    p.down = down;
    for (const f of p.listeners) f(down);
  };
  globalThis.addEventListener("pointerdown", () => set(true), true);
  for (const type of ["pointerup", "pointercancel"]) {
    globalThis.addEventListener(type, () => set(false), true);
  }
  globalThis.addEventListener("blur", () => set(false));
  return p;
})());
const dragging = () => POINTER.down && globalThis.companionDrag !== false;
// a pointer over or on a panel's slider: each view hears of it and asks for that slider's film
const GRABS = (globalThis.__companionGrabs = globalThis.__companionGrabs || (() => {
  const views = new Set();
  const heard = (e) => {
    const control = e.target && e.target.closest && e.target.closest(".companion-control");
    if (control) for (const f of views) f(control);
  };
  globalThis.addEventListener("pointerover", heard, true);
  globalThis.addEventListener("pointerdown", heard, true);
  return views;
})());
const controlIndex = (control) => {
  for (const c of control.classList) {
    const m = /^companion-control-(\d+)$/.exec(c);
    if (m) return Number(m[1]);
  }
  return -1;
};
const idle = globalThis.requestIdleCallback
  ? (f) => globalThis.requestIdleCallback(f, { timeout: 300 })
  : (f) => setTimeout(f, 30);
const decoder = new TextDecoder("utf-8");
// one plotly.js per page and version, shared by every figure (and every kernel) of the page
const LOADED = (globalThis.__companionPlotly = globalThis.__companionPlotly || new Map());

function parse(value) {
  if (value == null) return null;
  if (typeof value === "string") return JSON.parse(value);
  const bytes = ArrayBuffer.isView(value)
    ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    : new Uint8Array(value);
  return JSON.parse(decoder.decode(bytes));
}

// keys are lists of control values: numbers compare with a relative tolerance, because a
// float slider's value in the page and the kernel's neighbour of it may differ in the last bit
function sameKey(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    if (typeof x === "number" && typeof y === "number") {
      return Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
    }
    return x === y;
  });
}

function plotlyFor(library) {
  const version = library.get("version");
  const present = globalThis.Plotly;
  if (present && present.version === version && typeof present.react === "function") {
    return Promise.resolve(present); // e.g. JupyterLab's plotly renderer, same wheel
  }
  if (!LOADED.has(version)) {
    LOADED.set(version, pageCopy(version).then((lib) => lib || load(library.get("source"))));
  }
  return LOADED.get(version);
}

// A page may load plotly.js itself from its first bytes (the lecture dashboard's template, a
// <script data-companion-plotly>): wait for that script rather than load a second copy; the
// kernel's copy is the fallback if it fails or brings another version.
function pageCopy(version) {
  const tag = document.querySelector("script[data-companion-plotly]");
  const same = () => {
    const lib = globalThis.Plotly;
    return lib && lib.version === version && typeof lib.react === "function" ? lib : null;
  };
  if (!tag || tag.dataset.done) return Promise.resolve(same());
  return new Promise((resolve) => {
    tag.addEventListener("load", () => resolve(same()), { once: true });
    tag.addEventListener("error", () => resolve(null), { once: true });
  });
}

async function load(source) {
  // plotly.min.js is a UMD bundle: run it as a module with its own `module`, so that it
  // neither asks an AMD loader nor depends on the page's globals, and hand back its export.
  // It assigns window.Plotly itself; a different plotly.js the page had is put back.
  const before = globalThis.Plotly;
  if (!globalThis.PlotlyConfig) globalThis.PlotlyConfig = { MathJaxConfig: "local" };
  const head = "const module = { exports: {} }; const exports = module.exports;\n" +
               "const define = undefined;\n";
  const tail = "\nexport default module.exports;\n";
  const url = URL.createObjectURL(new Blob([head, source, tail], { type: "text/javascript" }));
  try {
    const lib = (await import(/* webpackIgnore: true */ url)).default;
    if (before && before !== lib) globalThis.Plotly = before;
    return lib;
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function modelFor(ref, model, host) {
  if (host && host.getModel) return host.getModel(ref);
  return model.widget_manager.get_model(String(ref).replace(/^anywidget:/, ""));
}

// Tick labels past the figure's edge are left alone ("allow") instead of plotly's default
// "hide past div", which measures every tick label again once per label on each redraw
// (Drawing.bBox in _adjustTickLabelsOverflow): most of an axis's redraw time, for a label
// that the figure's margins keep inside anyway.
function withDrawingDefaults(layout, width) {
  const out = Object.assign({}, layout);
  if (width) out.width = width; // a figure drawn ahead of time, detached, at the shown width
  for (const key of Object.keys(out)) {
    if (/^[xy]axis\d*$/.test(key) && out[key] && out[key].ticklabeloverflow === undefined) {
      out[key] = Object.assign({ ticklabeloverflow: "allow" }, out[key]);
    }
  }
  for (const key of ["xaxis", "yaxis"]) {
    if (!out[key]) out[key] = { ticklabeloverflow: "allow" };
  }
  return out;
}

// --- accessibility -------------------------------------------------------------------------
// The figure is a named figure that Tab reaches (role "figure", not "img": plotly's modebar
// holds buttons, which a role "img" would hide from assistive technology), named after its
// title, which may change from one drawn figure to the next.
const titleText = (layout) => {
  const title = layout && layout.title;
  const raw = typeof title === "string" ? title : (title && title.text) || "";
  const t = document.createElement("template"); // inert: markup in a title is only read
  t.innerHTML = String(raw).replace(/<br\s*\/?>/gi, " ");
  return t.content.textContent.replace(/\s+/g, " ").trim();
};
function nameFigure(el, layout) {
  const name = titleText(layout) || "figure";
  if (el.getAttribute("aria-label") !== name) el.setAttribute("aria-label", name);
}

// The panel's controls, as ipywidgets renders them, lack what a screen reader needs: a
// dropdown or text box is named by its <label for=...>, but a slider's handle (noUiSlider,
// role "slider") has no name at all, and a log-spaced slider's handle reports the index of
// its stop (aria-valuetext "11" for a batch of 64). So the figure, the one part of the panel
// with code in the page, names each handle and the slider's editable value after the
// control's label (aria-labelledby) and gives the handle the value that the slider shows;
// keeps the reset button's icon out of its name; and makes the readout, which scrolls where
// the page is narrow, focusable and named, so a keyboard can scroll it. The controls render
// in their own time, before or after the figure: the panel is watched (its direct children
// only, then the controls' and readout's box, never the figure's own subtree, which every
// redraw rewrites).
const LABEL_IDS = (globalThis.__companionLabelIds = globalThis.__companionLabelIds || { n: 0 });
function labelControls(top) {
  for (const slider of top.querySelectorAll(".widget-slider")) {
    const label = slider.querySelector(":scope > label.widget-label");
    const handle = slider.querySelector(".noUi-handle[role='slider']");
    if (!label || !handle) continue;
    if (!label.id) label.id = `companion-label-${++LABEL_IDS.n}`;
    if (handle.getAttribute("aria-labelledby") !== label.id) {
      handle.setAttribute("aria-labelledby", label.id);
    }
    const shown = slider.querySelector(":scope > .widget-readout");
    if (shown && shown.getAttribute("aria-labelledby") !== label.id) {
      shown.setAttribute("aria-labelledby", label.id);
    }
    const text = shown && shown.textContent.trim();
    if (text && handle.getAttribute("aria-valuetext") !== text) {
      handle.setAttribute("aria-valuetext", text);
    }
  }
  // ipywidgets writes a slider's missing tooltip as title="null", which assistive technology
  // reads out as the label's description
  for (const label of top.querySelectorAll("label.widget-label[title='null']")) {
    label.removeAttribute("title");
  }
  for (const icon of top.querySelectorAll("button > i.fa:not([aria-hidden])")) {
    icon.setAttribute("aria-hidden", "true");
  }
  const readout = top.querySelector(".companion-readout");
  if (readout && !readout.hasAttribute("tabindex")) {
    readout.setAttribute("tabindex", "0");
    readout.setAttribute("role", "region");
    readout.setAttribute("aria-label", "readout");
  }
}
function watchControls(el) {
  let stopped = false, outer = null, inner = null, top = null, frame = 0;
  const update = () => { if (top && !stopped) labelControls(top); };
  const find = () => {
    frame = 0;
    if (stopped) return;
    const panel = el.closest(".companion-panel");
    if (!panel) {  // not attached yet
      if (!el.isConnected) frame = requestAnimationFrame(find);
      return;
    }
    const found = panel.querySelector(":scope > .companion-top");
    if (!outer) {
      outer = new MutationObserver(find);
      outer.observe(panel, { childList: true });
    }
    if (!found || found === top) return;
    top = found;
    if (inner) inner.disconnect();
    inner = new MutationObserver(update);
    inner.observe(top, { childList: true, subtree: true, characterData: true,
                         attributes: true, attributeFilter: ["aria-valuetext"] });
    update();
  };
  find();
  return () => {
    stopped = true;
    if (frame) cancelAnimationFrame(frame);
    if (outer) outer.disconnect();
    if (inner) inner.disconnect();
  };
}

async function render({ model, el, host }) {
  el.classList.add("companion-plotly-figure");
  // a redraw stays inside the figure: the notebook around it is not laid out or painted
  // again (the figure's height comes from plotly's own size, so no size containment)
  el.style.contain = "layout paint style";
  el.setAttribute("role", "figure");
  el.setAttribute("tabindex", "0");
  nameFigure(el, null);
  const unwatch = watchControls(el);
  const refs = model.get("controls") || [];
  const attrs = model.get("control_attrs") || [];
  const [state, library, readout, ...controls] = await Promise.all([
    modelFor(model.get("state"), model, host),
    modelFor(model.get("library"), model, host),
    model.get("readout") ? modelFor(model.get("readout"), model, host) : null,
    ...refs.map((ref) => modelFor(ref, model, host)),
  ]);
  let gd = document.createElement("div"); // the live graph div (shown unless a snapshot is)
  let shown = gd;                         // what el shows: gd or a snapshot
  el.appendChild(gd);
  let Plotly;
  try {
    Plotly = await plotlyFor(library);
  } catch (error) {
    el.textContent = `The figure could not load plotly.js: ${error}`;
    console.error("[companion] plotly.js failed to load", error);
    return unwatch;
  }
  let template = parse(state.get("template"));
  let frame = 0, drawn = false, removed = false, drewThisFrame = false;
  let next = null;          // what the next draw shows: {digest, load()}
  let drawnDigest = null;   // what is on screen
  let liveDigest = null;    // what gd holds
  let shownTarget = null;   // the figure on screen, to redraw live once a drag ends
  const kept = [];          // [{key, digest, readout, load()}], newest last
  let asked = null;         // {key, readout, until}: a step shown from lookahead, unconfirmed
  const prepared = new Map(); // digest -> detached graph div showing that figure, oldest first
  let toPrepare = [];       // offered figures not drawn ahead yet
  let preparing = false;
  const layoutFor = (figure, width) =>
    withDrawingDefaults(template ? Object.assign({}, figure.layout, { template })
                                 : figure.layout, width);
  const shownWidth = () => (drawn && gd._fullLayout ? gd._fullLayout.width : 0);
  const showNode = (node) => {
    if (shown === node) return;
    el.replaceChild(node, shown);
    shown = node;
  };

  // the film of one slider (figures of all its values, the other controls as they are) and
  // snapshots of drawn figures: copies of the DOM plotly.js drew in a detached graph div
  let film = { index: -1, base: null, entries: [] };
  let filmAsked = null;             // JSON of [index, base] last asked for
  const snapshots = new Map();      // digest -> {node, width}, oldest first
  let renderer = null;              // the detached graph div snapshots are drawn in
  // the other controls' values (the film's own control left out), compared as keys are: the
  // page's float slider holds 31.999999999999996 for 32 on an [8, 89] track (noUiSlider maps
  // values through percentages), which the kernel reads as 32 (Control.snap)
  const baseOf = (key, index) => key.map((x, i) => (i === index ? null : x));
  const snapshot = (target, width) => {
    const figure = target.load();
    const layout = layoutFor(figure, width);
    if (!renderer) {
      renderer = document.createElement("div");
      Plotly.newPlot(renderer, figure.data, layout, CONFIG);
    } else Plotly.react(renderer, figure.data, layout, CONFIG);
    const node = renderer.cloneNode(true);
    // what a reader's tools (and the tests' probes) read off a graph div: the figure it shows
    node.data = renderer.data;
    node.layout = renderer.layout;
    node._fullData = renderer._fullData;
    snapshots.delete(target.digest);
    snapshots.set(target.digest, { node, width });
    while (snapshots.size > SNAPSHOTS) {
      const [oldest, old] = snapshots.entries().next().value;
      if (old.node === shown) break;
      snapshots.delete(oldest);
    }
    return node;
  };
  const showSnapshot = (target) => {
    const width = shownWidth();
    const have = snapshots.get(target.digest);
    showNode(have && have.width === width ? have.node : snapshot(target, width));
    drawnDigest = target.digest;
  };
  const drawLive = (target) => {
    showNode(gd); // attached first: plotly.js sizes the figure from its container
    if (!(drawn && target.digest && target.digest === liveDigest)) {
      const figure = target.load();
      if (drawn) Plotly.react(gd, figure.data, layoutFor(figure), CONFIG);
      else Plotly.newPlot(gd, figure.data, layoutFor(figure), CONFIG);
      drawn = true;
      liveDigest = target.digest || null;
    }
    drawnDigest = liveDigest;
  };

  const draw = () => {
    frame = 0;
    if (removed || !next) return;
    if (!el.isConnected) { frame = requestAnimationFrame(draw); return; } // not attached yet
    const target = next;
    next = null;
    if (drawn && target.digest && target.digest === drawnDigest) return; // already on screen
    shownTarget = target;
    const ready = target.digest && prepared.get(target.digest);
    if (drawn && target.digest && dragging()) {
      showSnapshot(target);
    } else if (drawn && ready && ready.__companionWidth === shownWidth()) {
      swapIn(ready, target.digest);
    } else {
      drawLive(target);
    }
    nameFigure(el, shown.layout);
    // until the next frame starts, a further change waits for it (coalescing)
    drewThisFrame = true;
    requestAnimationFrame(() => { drewThisFrame = false; });
  };
  const snapshotReady = (target) => {
    const have = target && target.digest && snapshots.get(target.digest);
    return Boolean(have && have.width === shownWidth());
  };
  const schedule = () => {
    if (removed) return;
    // a drag onto a value whose snapshot is ready: swapped in now, in the move's own task
    if (drawn && dragging() && snapshotReady(next)) {
      if (frame) { cancelAnimationFrame(frame); frame = 0; }
      draw();
      return;
    }
    if (frame) return;
    if (drawn && !drewThisFrame && !dragging()) draw();  // idle: draw now, not a frame later
    else frame = requestAnimationFrame(draw);
  };
  const show = (target) => { next = target; schedule(); };
  // a drag has ended on a snapshot: the live graph div comes back (hover, zoom), redrawn
  const restoreLive = () => {
    if (removed || shown === gd || dragging() || next || frame) return;
    if (shownTarget) drawLive(shownTarget);
  };

  // drawing ahead of time
  const remember = (digest, div) => {
    prepared.delete(digest);
    prepared.set(digest, div);
    while (prepared.size > PREPARED) {
      const [oldest, old] = prepared.entries().next().value;
      prepared.delete(oldest);
      Plotly.purge(old);
    }
  };
  const swapIn = (div, digest) => {
    prepared.delete(digest);
    const old = gd;
    showNode(div);
    gd = div;
    if (liveDigest) { // the figure just replaced: a likely step back
      old.__companionWidth = old._fullLayout.width;
      remember(liveDigest, old);
    } else Plotly.purge(old);
    liveDigest = drawnDigest = digest;
  };
  // the film's next figure to draw ahead: the nearest to the slider's value without a snapshot
  const nextForFilm = (width) => {
    if (film.index < 0 || !film.entries.length) return null;
    const key = currentKey();
    if (!sameKey(baseOf(key, film.index), film.base)) return null;
    const at = key[film.index];
    let best = null, distance = Infinity;
    for (const entry of film.entries) {
      const have = snapshots.get(entry.digest);
      if (have && have.width === width) continue;
      const d = Math.abs(entry.key[film.index] - at);
      if (d < distance) { best = entry; distance = d; }
    }
    return best;
  };
  const prepareNext = () => {
    preparing = false;
    if (removed) return;
    if (dragging()) { held = true; return; } // drawn ahead once the pointer is let go
    if (!drawn || next || frame) { prepareSoon(); return; } // the shown figure comes first
    const width = shownWidth();
    const entry = toPrepare.shift();
    if (entry) {
      const have = prepared.get(entry.digest);
      if (width && entry.digest !== liveDigest && !(have && have.__companionWidth === width)) {
        const div = have || document.createElement("div");
        const figure = entry.load();
        if (have) Plotly.react(div, figure.data, layoutFor(figure, width), CONFIG);
        else Plotly.newPlot(div, figure.data, layoutFor(figure, width), CONFIG);
        div.__companionWidth = width;
        remember(entry.digest, div);
      }
    } else {
      const frameEntry = width && nextForFilm(width);
      if (!frameEntry) return;
      snapshot(frameEntry, width);
      el.dataset.companionSnapshots = String(snapshots.size);
    }
    prepareSoon();
  };
  let held = false; // drawing ahead waits for the pointer to be let go
  const onPointer = (down) => {
    if (down) return;
    if (shown !== gd) idle(restoreLive);
    if (held) { held = false; prepareSoon(); }
  };
  POINTER.listeners.add(onPointer);
  const prepareSoon = () => {
    if (preparing || removed) return;
    preparing = true;
    idle(prepareNext);
  };

  const keep = (entry) => {
    if (!Array.isArray(entry.key)) return;
    const i = kept.findIndex((e) => sameKey(e.key, entry.key));
    if (i >= 0) kept.splice(i, 1);
    kept.push(entry);
    if (kept.length > KEPT) kept.shift();
  };
  const currentKey = () => controls.map((m, i) => m.get(attrs[i]));
  const stillAsked = () => asked && performance.now() < asked.until;

  // what a test or a benchmark can wait for instead of guessing a time: how many figures the
  // kernel has sent this view, how many offers of figures ahead, how many film figures and
  // snapshots it holds (data attributes of el)
  let kernelFigures = 0, aheadOffers = 0;

  // the kernel's figure (one message may carry figure, template, key...: one event per key,
  // gathered in a microtask so that they make one draw)
  let queued = false;
  const fromKernel = () => {
    queued = false;
    el.dataset.companionKernelFigures = String(++kernelFigures);
    const key = JSON.parse(state.get("key"));
    const bytes = state.get("figure");
    const target = { key, digest: state.get("digest"), readout: state.get("readout"),
                     load: () => parse(bytes) };
    keep(target);
    if (stillAsked()) {
      if (!sameKey(key, asked.key)) return; // for a step the reader has already left
      asked = null;
    }
    show(target);
  };
  const changed = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(fromKernel);
  };
  const onTemplate = () => { template = parse(state.get("template")); changed(); };
  const offered = (entries) => entries.map((entry) => {
    const figure = entry.figure;
    return { key: entry.key, digest: entry.digest, readout: entry.readout, load: () => figure };
  });
  const onAhead = () => {
    el.dataset.companionAheadOffers = String(++aheadOffers);
    const entries = offered(parse(state.get("ahead")) || []);
    entries.forEach(keep);
    toPrepare = entries;
    if (entries.length) prepareSoon();
  };
  // a chunk of a slider's film from the kernel (a custom message: the figures in a buffer)
  const onCustom = (content, buffers) => {
    if (!content || content.film === undefined || !buffers || !buffers.length) return;
    const entries = offered(parse(buffers[0]) || []);
    if (!entries.length) return;
    const index = content.film;
    const base = baseOf(entries[0].key, index);
    if (film.index !== index || !sameKey(film.base, base)) film = { index, base, entries: [] };
    film.entries.push(...entries);
    if (film.entries.length > FILM) film.entries.splice(0, film.entries.length - FILM);
    el.dataset.companionFilm = String(film.entries.length);
    prepareSoon();
  };
  // the pointer is over or on one of this panel's sliders: ask for its film once per setting
  // of the other controls
  const onGrab = (control) => {
    if (removed || !drawn || globalThis.companionDrag === false) return;
    const panel = el.closest(".companion-panel");
    if (!panel || !panel.contains(control)) return;
    const index = controlIndex(control);
    if (index < 0 || index >= controls.length) return;
    const ask = JSON.stringify([index, baseOf(currentKey(), index)]);
    if (ask === filmAsked) return;
    filmAsked = ask;
    state.send({ film: index });
  };
  GRABS.add(onGrab);

  // the reader moved a control: show a kept figure for the new values, if there is one
  let looking = false;
  const lookup = () => {
    looking = false;
    if (removed) return;
    const key = currentKey();
    // window.companionLookahead = false: every step waits for the kernel (make bench's
    // "kernel" rows)
    const hit = globalThis.companionLookahead === false ? null
      : kept.find((e) => sameKey(e.key, key)) || film.entries.find((e) => sameKey(e.key, key));
    if (!hit) { asked = null; return; }
    asked = { key, readout: hit.readout, until: performance.now() + STALE_MS };
    if (readout && readout.get("value") !== hit.readout) readout.set("value", hit.readout);
    show(hit);
  };
  const onControl = (raw) => {
    // a change the kernel made (ipywidgets applies kernel state under _state_lock) is
    // followed by the kernel's own figure; only the reader's moves look ahead
    if ((raw && raw._state_lock) || looking) return;
    looking = true;
    queueMicrotask(lookup); // after the slider has sent its message to the kernel
  };
  // while a step shown from lookahead waits for the kernel, a readout the kernel sends for
  // an earlier step is put back to the shown step's
  const onReadout = (raw) => {
    if (!stillAsked() || !(raw && raw._state_lock)) return;
    queueMicrotask(() => {
      if (stillAsked() && readout.get("value") !== asked.readout) readout.set("value", asked.readout);
    });
  };

  state.on("change:figure", changed);
  state.on("change:digest", changed);
  state.on("change:template", onTemplate);
  state.on("change:ahead", onAhead);
  state.on("msg:custom", onCustom);
  controls.forEach((m, i) => m.on(`change:${attrs[i]}`, onControl));
  if (readout) readout.on("change:value", onReadout);

  // the figure fills the output's width (layout.width is set only while a figure drawn
  // ahead of time is shown): follow its size
  let width = 0;
  const resize = new ResizeObserver((entries) => {
    const w = entries[entries.length - 1].contentRect.width;
    if (drawn && w > 0 && Math.abs(w - width) > 0.5) {
      snapshots.clear(); // drawn at the old width: the film is drawn again at the new one
      el.dataset.companionSnapshots = "0";
      prepareSoon();
      if (shown !== gd && shownTarget) drawLive(shownTarget);
      delete gd.layout.width; // a figure drawn ahead of time was given the width it had then
      Plotly.Plots.resize(gd);
    }
    width = w;
  });
  resize.observe(el);
  onAhead();
  fromKernel();

  return () => {
    removed = true;
    unwatch();
    POINTER.listeners.delete(onPointer);
    GRABS.delete(onGrab);
    if (frame) cancelAnimationFrame(frame);
    state.off("change:figure", changed);
    state.off("change:digest", changed);
    state.off("change:template", onTemplate);
    state.off("change:ahead", onAhead);
    state.off("msg:custom", onCustom);
    controls.forEach((m, i) => m.off(`change:${attrs[i]}`, onControl));
    if (readout) readout.off("change:value", onReadout);
    resize.disconnect();
    Plotly.purge(gd);
    if (renderer) Plotly.purge(renderer);
    for (const div of prepared.values()) Plotly.purge(div);
    prepared.clear();
    snapshots.clear();
  };
}

// A figure's model reaches the page before its view, while the kernel is still computing the
// figure and building the panel around it: plotly.js starts loading then (on a page's first
// figure, about half a second of the page's time), not once the view is drawn. anywidget
// waits on initialize, so it only starts the load.
function initialize({ model }) {
  modelFor(model.get("library"), model, null).then(plotlyFor).catch(() => {});
}

export default { initialize, render };
