// Front end of companion.explorers.figure_widget.PlotlyFigure (see its docstring).
//
// The anywidget model only says where things are: `state` (a core ipywidgets model holding
// the figure's plotly JSON and its template, as UTF-8 bytes) and `library` (a core model with
// plotly.js from the kernel's plotly package). Updates arrive on `state`, never on the
// anywidget model, so anywidget's model-initialisation timeout cannot make the figure deaf.
// Each change schedules one Plotly.react for the next animation frame, with the newest state:
// figures that arrive faster than the page draws are skipped, never queued.

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

async function render({ model, el, host }) {
  el.classList.add("companion-plotly-figure");
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
  let frame = 0, drawn = false, removed = false;

  const draw = () => {
    frame = 0;
    if (removed) return;
    if (!el.isConnected) { frame = requestAnimationFrame(draw); return; } // not attached yet
    const figure = parse(state.get("figure"));
    const layout = template ? Object.assign({}, figure.layout, { template }) : figure.layout;
    if (drawn) Plotly.react(gd, figure.data, layout, CONFIG);
    else Plotly.newPlot(gd, figure.data, layout, CONFIG);
    drawn = true;
  };
  const schedule = () => { if (!frame && !removed) frame = requestAnimationFrame(draw); };
  const onTemplate = () => { template = parse(state.get("template")); schedule(); };
  state.on("change:figure", schedule);
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
    state.off("change:figure", schedule);
    state.off("change:template", onTemplate);
    resize.disconnect();
    Plotly.purge(gd);
  };
}

export default { render };
