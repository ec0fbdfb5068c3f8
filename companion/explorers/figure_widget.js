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

const CONFIG = { editSelection: false }; // what plotly's FigureWidget passes
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
function withDrawingDefaults(layout) {
  const out = Object.assign({}, layout);
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
  const [state, library] = await Promise.all([
    modelFor(model.get("state"), model, host),
    modelFor(model.get("library"), model, host),
  ]);
  const gd = document.createElement("div");
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

  const draw = () => {
    frame = 0;
    if (removed) return;
    if (!el.isConnected) { frame = requestAnimationFrame(draw); return; } // not attached yet
    const figure = parse(state.get("figure"));
    const layout = withDrawingDefaults(template ? Object.assign({}, figure.layout, { template })
                                                : figure.layout);
    if (drawn) Plotly.react(gd, figure.data, layout, CONFIG);
    else Plotly.newPlot(gd, figure.data, layout, CONFIG);
    drawn = true;
    // until the next frame starts, a further change waits for it (coalescing)
    drewThisFrame = true;
    requestAnimationFrame(() => { drewThisFrame = false; });
  };
  const schedule = () => {
    if (frame || removed) return;
    if (drawn && !drewThisFrame) draw();  // idle: draw now, not a frame later
    else frame = requestAnimationFrame(draw);
  };
  // a message that carries figure and template fires one event per key: both land in one
  // schedule() once the message's handlers are done (a microtask, so no frame is lost)
  let queued = false;
  const changed = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => { queued = false; schedule(); });
  };
  const onTemplate = () => { template = parse(state.get("template")); changed(); };
  state.on("change:figure", changed);
  state.on("change:template", onTemplate);

  // the figure fills the output's width (layout.width is never set): follow its size
  let width = 0;
  const resize = new ResizeObserver((entries) => {
    const w = entries[entries.length - 1].contentRect.width;
    if (drawn && w > 0 && Math.abs(w - width) > 0.5) Plotly.Plots.resize(gd);
    width = w;
  });
  resize.observe(el);
  schedule();

  return () => {
    removed = true;
    if (frame) cancelAnimationFrame(frame);
    state.off("change:figure", changed);
    state.off("change:template", onTemplate);
    resize.disconnect();
    Plotly.purge(gd);
  };
}

export default { render };
