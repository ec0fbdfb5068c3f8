// In-page timing probe for the explorer latency benchmark and the coalescing test.
// Installed with Playwright's add_init_script, so it runs before JupyterLab or Voila create
// their kernel websockets. It only records; it changes nothing the page does.
//
//   window.__probe.ws       every kernel websocket message, both ways:
//                           {t, dir: "out"|"in", type, id, parent, comm, method, keys, state}
//   window.__probe.plotly   every call of a Plotly API function: {t, name}
//   window.__probe.inputs   keydown / pointerdown / input events (capture phase): {t, type}
//   window.__probe.watch(root) / .frames(): per animation frame, when something under root
//                           changed, the time and a signature of what is shown (readout text,
//                           figure data and the layout keys a panel changes); watch(root, ms,
//                           true) takes the signature every frame (a drag: the shown graph
//                           div may be replaced or redrawn many times while it is watched)
(() => {
  if (window.__probe) return;
  const P = (window.__probe = { ws: [], plotly: [], inputs: [], _frames: [] });
  const now = () => performance.now();
  const decoder = new TextDecoder("utf8");

  // --- kernel websocket messages (JupyterLab's v1 binary protocol, or plain JSON) ----------
  function describe(data) {
    try {
      let header, parent, content;
      if (typeof data === "string") {
        const msg = JSON.parse(data);
        ({ header, parent_header: parent, content } = msg);
      } else {
        const buf = data instanceof ArrayBuffer ? data : data.buffer;
        const view = new DataView(buf);
        const n = Number(view.getBigUint64(0, true));
        const offsets = [];
        for (let i = 0; i < n; i++) offsets.push(Number(view.getBigUint64(8 * (i + 1), true)));
        const part = (i) => decoder.decode(new Uint8Array(buf, offsets[i], offsets[i + 1] - offsets[i]));
        header = JSON.parse(part(1));
        parent = JSON.parse(part(2));
        content = header.msg_type.startsWith("comm") || header.msg_type === "status"
          ? JSON.parse(part(4)) : {};
      }
      const rec = { type: header.msg_type, id: header.msg_id, parent: parent && parent.msg_id };
      if (header.msg_type === "status") rec.state = content.execution_state;
      if (content && content.comm_id) {
        rec.comm = content.comm_id;
        const d = content.data || {};
        rec.method = d.method;
        // binary values travel as buffers: their keys are in buffer_paths, not in state
        if (d.state) {
          rec.keys = Object.keys(d.state).concat((d.buffer_paths || []).map((p) => p[0]))
            .sort();
        }
      }
      return rec;
    } catch (e) {
      return { type: "?" };
    }
  }
  const NativeWebSocket = window.WebSocket;
  class ProbedWebSocket extends NativeWebSocket {
    constructor(url, protocols) {
      super(url, protocols);
      this.__kernel = /\/channels/.test(String(url));
      if (this.__kernel) {
        this.addEventListener("message", (e) => {
          const t = now();
          P.ws.push(Object.assign({ t, dir: "in" }, describe(e.data)));
        });
      }
    }
    send(data) {
      if (this.__kernel) P.ws.push(Object.assign({ t: now(), dir: "out" }, describe(data)));
      return super.send(data);
    }
  }
  window.WebSocket = ProbedWebSocket;

  // --- Plotly API calls (any copy of plotly.js that publishes itself as window.Plotly) -----
  const API = ["newPlot", "react", "restyle", "relayout", "update", "redraw", "addTraces",
               "deleteTraces", "purge"];
  function wrap(lib) {
    if (!lib || typeof lib !== "object" && typeof lib !== "function" || lib.__probed) return;
    try {
      Object.defineProperty(lib, "__probed", { value: true });
      for (const name of API) {
        const f = lib[name];
        if (typeof f !== "function") continue;
        lib[name] = function (...args) {
          P.plotly.push({ t: now(), name });
          return f.apply(this, args);
        };
      }
    } catch (e) { /* a frozen object: leave it */ }
  }
  let plotlyGlobal;
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: () => plotlyGlobal,
    set: (v) => { plotlyGlobal = v; wrap(v); },
  });

  for (const type of ["keydown", "pointerdown", "input"]) {
    document.addEventListener(type, () => P.inputs.push({ t: now(), type }), true);
  }

  // --- what the explorer under `root` shows, frame by frame --------------------------------
  function signature(root) {
    const gd = root.querySelector(".js-plotly-plot");
    const readout = root.querySelector(".widget-html-content");
    const conv = (v) => (v && ArrayBuffer.isView(v) ? Array.from(v) : v);
    const data = gd && gd.data ? gd.data.map((t) => [t.type, conv(t.x), conv(t.y), conv(t.text),
      conv(t.base), conv(t.width), t.name]) : null;
    const lay = gd && gd.layout ? [gd.layout.title, gd.layout.annotations, gd.layout.shapes]
      : null;
    return JSON.stringify([readout ? readout.textContent : null, data, lay]);
  }
  P.watch = (root, ms = 30000, everyFrame = false) => {
    P._frames = [];
    let dirty = true, last = null;
    const until = now() + ms;
    const mark = () => { dirty = true; };
    // light on purpose: the readout's text, and plotly's own "drawn" event (observing the
    // figure's SVG would queue a record for each of the thousands of attributes a redraw sets)
    const observer = new MutationObserver(mark);
    const readout = root.querySelector(".widget-html-content");
    if (readout) observer.observe(readout, { subtree: true, childList: true, characterData: true });
    const gd = root.querySelector(".js-plotly-plot");
    if (gd && gd.on) gd.on("plotly_afterplot", mark);
    // a figure drawn ahead of time is swapped in whole (companion's figure_widget.js)
    if (gd && gd.parentNode) observer.observe(gd.parentNode, { childList: true });
    const done = () => {
      observer.disconnect();
      if (gd && gd.removeListener) gd.removeListener("plotly_afterplot", mark);
    };
    // every frame, cheaply: which graph div is shown, plotly's last processed data (a new
    // array after every plotly.js call that changes the figure) and the readout's text
    let token = [];
    const changedSince = () => {
      const g = root.querySelector(".js-plotly-plot");
      const r = root.querySelector(".widget-html-content");
      const now = [g, g && g._fullData, r && r.textContent];
      const changed = now.some((x, i) => x !== token[i]);
      token = now;
      return changed;
    };
    const frame = (ts) => {
      if (dirty || (everyFrame && changedSince())) {
        dirty = false;
        const sig = signature(root);
        if (sig !== last) { P._frames.push({ t: now(), sig }); last = sig; }
      }
      if (now() < until && !P._stop) requestAnimationFrame(frame);
      else done();
    };
    P._stop = false;
    requestAnimationFrame(frame);
    return signature(root);
  };
  P.unwatch = () => { P._stop = true; };
  P.frames = () => P._frames;
  P.signature = signature;
})();
