// The layout check of one plotly figure, run in a page that has loaded plotly.js: draw the
// figure at a width, read the SVG plotly.js drew, and list what a reader would see as broken.
//   companionLayoutCheck(figure, width) -> Promise<[{kind, text, detail}]>
// kinds: "overlap" (two text boxes share ink), "clipped" (text past the figure's edge or its
// subplot's clip), "empty-legend" (a legend entry whose trace draws nothing), "fraction" (a
// fractional tick on an axis that counts whole things), "minor-digit" (a log axis prints a
// bare 2 or 5 for 20 or 500), "power" (a count axis written 10^0, 10^1 ...).
(function () {
  // Text is compared on its glyph ink, not on the line box SVG reports (which holds the
  // font's ascent, descent and side bearings: two stacked legend lines would "overlap"
  // without any glyph touching). Two inks collide when both overlaps exceed 1 px.
  const SLACK_PX = 1;
  // axis titles that count whole things (rows, slots, blocks, requests ...): their ticks
  // must be whole numbers, and their log scales must read 1, 10, 100, not 10^0 ...
  const COUNTING = /\b(requests?|rows?|slots?|blocks?|tasks?|sequences?|GPUs?|replicas?|runs?|rounds?|users?|batch|count|number of|pages?|chunks?|layers?|heads?|nodes?|workers?|tokens? \(count\))\b/i;
  const NOT_COUNTING = /\/|\bper\b|\(ms\)|\(s\)|\bms\b|\bGiB\b|\bGB\b|\bMiB\b|%|rate|time|bytes?|size \(|fraction|share/i;

  // visibility of an element and its ancestors up to the plot's svg, cached per figure
  let shown = new Map();
  function visible(el) {
    if (!el || el.nodeType !== 1) return true;
    if (shown.has(el)) return shown.get(el);
    const s = getComputedStyle(el);
    let ok = !(s.display === "none" || s.visibility === "hidden" || Number(s.opacity) === 0);
    // text drawn in a fully transparent fill (the static explorer's slider step labels, whose
    // current value is printed above them) is not seen by a reader
    // (plotly writes an rgba colour as fill plus fill-opacity)
    if (ok && el.tagName === "text" &&
        (Number(s.fillOpacity) === 0 || /^rgba\(.*,\s*0\)$/.test(s.fill))) ok = false;
    if (ok && !(el.tagName === "svg" && el.classList.contains("main-svg"))) ok = visible(el.parentNode);
    shown.set(el, ok);
    return ok;
  }

  function label(el) {
    return (el.textContent || "").replace(/\s+/g, " ").trim();
  }

  // where the text is: its role, so a report says "legend" or "x tick" rather than a class
  function role(el) {
    const roles = [["gtitle", "title"], ["g-gtitle", "title"], ["xtick", "x tick"],
      ["ytick", "y tick"], ["xtitle", "x title"], ["ytitle", "y title"],
      ["annotation", "annotation"], ["legend", "legend"], ["textpoint", "trace text"],
      ["bartext", "bar text"], ["slider-container", "slider"], ["updatemenu", "menu"],
      ["colorbar", "colour bar"], ["cbtitle", "colour bar"]];
    for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
      const c = e.classList || [];
      for (const [cls, name] of roles) if (c.contains && c.contains(cls)) return name;
      if (e.tagName === "svg") break;
    }
    return "text";
  }

  // The ink of each line of a text element: the line's box in the element's own (unrotated)
  // coordinates, narrowed to the glyphs by a canvas measuring the text in the element's own
  // font (TextMetrics' actual bounding box), then mapped to the page by the element's CTM, so
  // rotated and slanted labels are compared as the quadrilaterals they are.
  const canvas = document.createElement("canvas").getContext("2d");

  function lineInk(el, line, style) {
    const text = (line.textContent || "").replace(/\s+/g, " ");
    if (!text.trim()) return null;
    const b = line.getBBox();
    if (b.width === 0 || b.height === 0) return null;
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const m = canvas.measureText(text);
    const lineH = m.fontBoundingBoxAscent + m.fontBoundingBoxDescent;
    const y0 = b.y + (b.height - lineH) / 2;
    const scale = m.width ? b.width / m.width : 1;  // tspans in a smaller font (superscripts)
    const left = b.x - m.actualBoundingBoxLeft * scale, right = b.x + m.actualBoundingBoxRight * scale;
    const top = y0 + m.fontBoundingBoxAscent - m.actualBoundingBoxAscent;
    const bottom = y0 + m.fontBoundingBoxAscent + m.actualBoundingBoxDescent;
    const ctm = el.getScreenCTM();
    return [[left, top], [right, top], [right, bottom], [left, bottom]]
      .map(([x, y]) => { const p = new DOMPoint(x, y).matrixTransform(ctm); return [p.x, p.y]; });
  }

  function inkQuads(el) {
    const style = getComputedStyle(el);
    const lines = Array.from(el.querySelectorAll("tspan.line"));
    return (lines.length ? lines : [el]).map((line) => lineInk(el, line, style)).filter((q) => q);
  }

  function bounds(quads) {
    const xs = quads.flat().map((p) => p[0]), ys = quads.flat().map((p) => p[1]);
    return {left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys)};
  }

  // how deep two convex quadrilaterals overlap: the smallest overlap of their projections on
  // the normals of their edges (separating axes); <= 0 when they do not meet
  function penetration(p, q) {
    let depth = Infinity;
    for (const poly of [p, q]) {
      for (let i = 0; i < poly.length; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % poly.length];
        let nx = y1 - y2, ny = x2 - x1;
        const len = Math.hypot(nx, ny);
        if (!len) continue;
        nx /= len; ny /= len;
        const a = p.map(([x, y]) => x * nx + y * ny), c = q.map(([x, y]) => x * nx + y * ny);
        depth = Math.min(depth, Math.min(Math.max(...a), Math.max(...c)) -
                                Math.max(Math.min(...a), Math.min(...c)));
      }
    }
    return depth;
  }

  // the clip rectangle in page coordinates of the nearest clipped ancestor, if any
  function clipRect(el) {
    for (let e = el.parentNode; e && e.nodeType === 1 && e.tagName !== "svg"; e = e.parentNode) {
      const ref = e.getAttribute && e.getAttribute("clip-path");
      if (!ref) continue;
      const id = (ref.match(/url\(['"]?#([^'")]+)['"]?\)/) || [])[1];
      const clip = id && document.getElementById(id);
      const rect = clip && clip.querySelector("rect");
      if (!rect) return null;
      const m = e.getScreenCTM();
      const x = Number(rect.getAttribute("x") || 0), y = Number(rect.getAttribute("y") || 0);
      const w = Number(rect.getAttribute("width")), h = Number(rect.getAttribute("height"));
      const p = new DOMPoint(x, y).matrixTransform(m), q = new DOMPoint(x + w, y + h).matrixTransform(m);
      return {left: Math.min(p.x, q.x), right: Math.max(p.x, q.x),
              top: Math.min(p.y, q.y), bottom: Math.max(p.y, q.y)};
    }
    return null;
  }

  function cut(box, frame) {
    const out = Math.max(frame.left - box.left, box.right - frame.right,
                         frame.top - box.top, box.bottom - frame.bottom);
    return out > SLACK_PX ? out : 0;
  }

  function finiteCount(values) {
    if (values == null) return null;
    if (!Array.isArray(values) && !ArrayBuffer.isView(values)) return null;
    let n = 0;
    for (const v of values) {
      if (Array.isArray(v)) { n += finiteCount(v) || 0; continue; }
      if (v !== null && v !== undefined && v !== "" && !(typeof v === "number" && !isFinite(v))) n++;
    }
    return n;
  }

  // A trace with no points may stand in the legend for what shapes or a heatmap's colours
  // draw (a key), but only when it says so: meta {legend_key: true} (theme.legend_key).
  function drawsNothing(trace) {
    if (trace.visible === false || trace.visible === "legendonly") return false;
    if (trace.meta && trace.meta.legend_key) return false;
    for (const key of ["x", "y", "z", "values", "lat", "r"]) {
      const n = finiteCount(trace[key]);
      if (n !== null && n === 0) return true;
    }
    return false;
  }

  // plotly's tick text -> its number ("1.5k", "2M", "10<sup>3</sup>", "1,024", "−3")
  function tickNumber(text) {
    const t = text.replace(/<[^>]+>/g, (m) => (m.startsWith("<sup") ? "^" : ""))
      .replace(/\u2212/g, "-").replace(/,/g, "").replace(/\s+/g, "");
    const power = t.match(/^(-?[\d.]*)[×x]?10\^(-?\d+)$/);
    if (power) return (power[1] ? Number(power[1]) : 1) * Math.pow(10, Number(power[2]));
    const m = t.match(/^(-?[\d.]+(?:e[+-]?\d+)?)([kMGTµμmnp]?)$/);
    if (!m) return null;
    const scale = {"": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, m: 1e-3, "µ": 1e-6, "μ": 1e-6, n: 1e-9, p: 1e-12};
    return Number(m[1]) * scale[m[2]];
  }

  function axisTitle(ax) {
    const t = ax.title && ax.title.text;
    return t ? String(t).replace(/<[^>]+>/g, " ") : "";
  }

  function tickProblems(gd) {
    const problems = [];
    const full = gd._fullLayout;
    for (const key of Object.keys(full)) {
      if (!/^[xy]axis\d*$/.test(key)) continue;
      const ax = full[key];
      if (!ax || ax.visible === false || !ax.showticklabels || !Array.isArray(ax._vals)) continue;
      const title = axisTitle(ax);
      const counting = COUNTING.test(title) && !NOT_COUNTING.test(title);
      for (const tick of ax._vals) {
        if (tick.text === undefined || tick.text === "" || tick.minor) continue;
        const shown = tickNumber(String(tick.text));
        if (ax.type === "log") {
          const value = Math.pow(10, tick.x);
          if (shown !== null && Math.abs(shown - value) > 1e-6 * value)
            problems.push({kind: "minor-digit", text: String(tick.text),
                           detail: `${key} "${title}": ${tick.text} stands for ${+value.toPrecision(6)}`});
          if (counting && /<sup>|\^/.test(String(tick.text)))
            problems.push({kind: "power", text: String(tick.text), detail: `${key} "${title}"`});
        } else if (ax.type === "linear" && counting && shown !== null &&
                   Math.abs(shown - Math.round(shown)) > 1e-9) {
          problems.push({kind: "fraction", text: String(tick.text), detail: `${key} "${title}"`});
        }
      }
    }
    return problems;
  }

  window.companionLayoutCheck = async function (figure, width, keep = false) {
    shown = new Map();
    const host = document.getElementById("figure-host");
    host.innerHTML = "";
    const gd = document.createElement("div");
    host.appendChild(gd);
    const layout = Object.assign({}, figure.layout || {});
    if (!layout.width) layout.width = width;
    layout.height = layout.height || 450;
    await Plotly.newPlot(gd, figure.data || [], layout, {staticPlot: true, displayModeBar: false});
    const problems = [];
    const svgs = Array.from(gd.querySelectorAll("svg.main-svg"));
    const frame = svgs[0].getBoundingClientRect();
    const texts = [];
    for (const svg of svgs) {
      for (const el of svg.querySelectorAll("text")) {
        if (el.closest(".hoverlayer") || !label(el) || !visible(el)) continue;
        const quads = inkQuads(el);
        if (quads.length) texts.push({el, quads, box: bounds(quads), text: label(el), role: role(el)});
      }
    }
    for (let i = 0; i < texts.length; i++) {
      const a = texts[i];
      const out = cut(a.box, frame);
      if (out) problems.push({kind: "clipped", text: a.text, detail: `${a.role} cut by the figure's edge (${out.toFixed(0)} px)`});
      const clip = clipRect(a.el);
      const hidden = clip && cut(a.box, clip);
      if (hidden) problems.push({kind: "clipped", text: a.text, detail: `${a.role} cut by its subplot (${hidden.toFixed(0)} px)`});
      for (let j = i + 1; j < texts.length; j++) {
        const b = texts[j];
        if (a.box.right < b.box.left || b.box.right < a.box.left ||
            a.box.bottom < b.box.top || b.box.bottom < a.box.top) continue;
        let depth = 0;
        for (const p of a.quads) for (const q of b.quads) depth = Math.max(depth, penetration(p, q));
        if (depth > SLACK_PX) problems.push({kind: "overlap", text: `${a.text} | ${b.text}`,
                              detail: `${a.role} over ${b.role} (${depth.toFixed(1)} px deep)`});
      }
    }
    for (const item of gd.querySelectorAll(".legend .traces")) {
      const d = item.__data__ && item.__data__[0];
      // the full trace, whose arrays plotly.js has decoded: a figure's JSON may carry them
      // base64-packed ({dtype, bdata}), which the user's trace in gd.data still holds
      const trace = d && d.trace && gd._fullData[d.trace.index];
      if (trace && drawsNothing(trace))
        problems.push({kind: "empty-legend", text: label(item), detail: "legend entry of a trace with no points"});
    }
    problems.push(...tickProblems(gd));
    if (!keep) Plotly.purge(gd);  // keep: left drawn for a screenshot
    return problems;
  };

  // Many figures in one call (a round trip per figure costs as much as drawing it). Their
  // templates travel once: figure.layout.template may be {ref: key} into templates.
  window.companionLayoutChecks = async function (figures, templates, widths) {
    const results = [];
    for (const figure of figures) {
      const t = figure.layout && figure.layout.template;
      if (t && t.ref !== undefined) figure.layout.template = templates[t.ref];
      const per = [];
      for (const w of widths) per.push(await window.companionLayoutCheck(figure, w));
      results.push(per);
    }
    return results;
  };
})();
