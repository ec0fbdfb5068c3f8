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

const CONFIG = { editSelection: false }; // what plotly's FigureWidget passes
const KEPT = 16;        // figures kept per view for the lookahead (a few KB to ~100 KB each)
const STALE_MS = 3000;  // how long the kernel may take to confirm a step shown from lookahead
const PREPARED = 3;     // figures drawn ahead of time per view (detached graph divs)
// A pointer held down on the page (a slider being dragged): the figures the kernel sends
// are drawn in the next animation frame, not in their message's task, so that the page
// first reads the kernel's "idle" (ipywidgets sends the slider's next value only then) and
// the kernel computes the next figure while plotly.js draws this one; nothing is drawn ahead
// of time (the offered neighbours of a value the hand has already left) until it is let go.
// window.companionDrag = false: neither (make bench's "drag, before" rows).
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
  if (!LOADED.has(version)) LOADED.set(version, load(library.get("source")));
  return LOADED.get(version);
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

async function render({ model, el, host }) {
  el.classList.add("companion-plotly-figure");
  // a redraw stays inside the figure: the notebook around it is not laid out or painted
  // again (the figure's height comes from plotly's own size, so no size containment)
  el.style.contain = "layout paint style";
  const refs = model.get("controls") || [];
  const attrs = model.get("control_attrs") || [];
  const [state, library, readout, ...controls] = await Promise.all([
    modelFor(model.get("state"), model, host),
    modelFor(model.get("library"), model, host),
    model.get("readout") ? modelFor(model.get("readout"), model, host) : null,
    ...refs.map((ref) => modelFor(ref, model, host)),
  ]);
  let gd = document.createElement("div"); // the shown graph div
  el.appendChild(gd);
  let Plotly;
  try {
    Plotly = await plotlyFor(library);
  } catch (error) {
    el.textContent = `The figure could not load plotly.js: ${error}`;
    console.error("[companion] plotly.js failed to load", error);
    return () => {};
  }
  let template = parse(state.get("template"));
  let frame = 0, drawn = false, removed = false, drewThisFrame = false;
  let next = null;          // what the next draw shows: {digest, load()}
  let drawnDigest = null;   // what is on screen
  const kept = [];          // [{key, digest, readout, load()}], newest last
  let asked = null;         // {key, readout, until}: a step shown from lookahead, unconfirmed
  const prepared = new Map(); // digest -> detached graph div showing that figure, oldest first
  let toPrepare = [];       // offered figures not drawn ahead yet
  let preparing = false;
  const layoutFor = (figure, width) =>
    withDrawingDefaults(template ? Object.assign({}, figure.layout, { template })
                                 : figure.layout, width);

  const draw = () => {
    frame = 0;
    if (removed || !next) return;
    if (!el.isConnected) { frame = requestAnimationFrame(draw); return; } // not attached yet
    const target = next;
    next = null;
    if (drawn && target.digest && target.digest === drawnDigest) return; // already on screen
    const ready = target.digest && prepared.get(target.digest);
    if (drawn && ready && ready.__companionWidth === gd._fullLayout.width) {
      swapIn(ready, target.digest);
    } else {
      const figure = target.load();
      if (drawn) Plotly.react(gd, figure.data, layoutFor(figure), CONFIG);
      else Plotly.newPlot(gd, figure.data, layoutFor(figure), CONFIG);
      drawn = true;
      drawnDigest = target.digest || null;
    }
    // until the next frame starts, a further change waits for it (coalescing)
    drewThisFrame = true;
    requestAnimationFrame(() => { drewThisFrame = false; });
  };
  const schedule = () => {
    if (frame || removed) return;
    if (drawn && !drewThisFrame && !dragging()) draw();  // idle: draw now, not a frame later
    else frame = requestAnimationFrame(draw);
  };
  const show = (target) => { next = target; schedule(); };

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
    const shown = gd;
    el.replaceChild(div, shown);
    gd = div;
    if (drawnDigest) { // the figure just replaced: a likely step back
      shown.__companionWidth = shown._fullLayout.width;
      remember(drawnDigest, shown);
    } else Plotly.purge(shown);
    drawnDigest = digest;
  };
  const prepareNext = () => {
    preparing = false;
    if (removed) return;
    if (dragging()) { held = true; return; } // drawn ahead once the pointer is let go
    if (!drawn || next || frame) { prepareSoon(); return; } // the shown figure comes first
    const entry = toPrepare.shift();
    if (!entry) return;
    const width = gd._fullLayout && gd._fullLayout.width;
    const have = prepared.get(entry.digest);
    if (width && entry.digest !== drawnDigest && !(have && have.__companionWidth === width)) {
      const div = have || document.createElement("div");
      const figure = entry.load();
      if (have) Plotly.react(div, figure.data, layoutFor(figure, width), CONFIG);
      else Plotly.newPlot(div, figure.data, layoutFor(figure, width), CONFIG);
      div.__companionWidth = width;
      remember(entry.digest, div);
    }
    if (toPrepare.length) prepareSoon();
  };
  let held = false; // drawing ahead waits for the pointer to be let go
  const onPointer = (down) => { if (!down && held) { held = false; prepareSoon(); } };
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
  // kernel has sent this view, and how many offers of figures ahead (data attributes of el)
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
  const onAhead = () => {
    el.dataset.companionAheadOffers = String(++aheadOffers);
    const offered = [];
    for (const entry of parse(state.get("ahead")) || []) {
      const figure = entry.figure;
      offered.push({ key: entry.key, digest: entry.digest, readout: entry.readout,
                     load: () => figure });
    }
    offered.forEach(keep);
    toPrepare = offered;
    if (offered.length) prepareSoon();
  };

  // the reader moved a control: show a kept figure for the new values, if there is one
  let looking = false;
  const lookup = () => {
    looking = false;
    if (removed) return;
    const key = currentKey();
    // window.companionLookahead = false: every step waits for the kernel (make bench's
    // "kernel" rows)
    const hit = globalThis.companionLookahead === false ? null
      : kept.find((e) => sameKey(e.key, key));
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
  controls.forEach((m, i) => m.on(`change:${attrs[i]}`, onControl));
  if (readout) readout.on("change:value", onReadout);

  // the figure fills the output's width (layout.width is set only while a figure drawn
  // ahead of time is shown): follow its size
  let width = 0;
  const resize = new ResizeObserver((entries) => {
    const w = entries[entries.length - 1].contentRect.width;
    if (drawn && w > 0 && Math.abs(w - width) > 0.5) {
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
    POINTER.listeners.delete(onPointer);
    if (frame) cancelAnimationFrame(frame);
    state.off("change:figure", changed);
    state.off("change:digest", changed);
    state.off("change:template", onTemplate);
    state.off("change:ahead", onAhead);
    controls.forEach((m, i) => m.off(`change:${attrs[i]}`, onControl));
    if (readout) readout.off("change:value", onReadout);
    resize.disconnect();
    Plotly.purge(gd);
    for (const div of prepared.values()) Plotly.purge(div);
    prepared.clear();
  };
}

export default { render };
