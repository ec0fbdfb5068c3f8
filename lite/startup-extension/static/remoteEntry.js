// The lite site's start-up line (tools/lite_build.py adds it to the site as a federated
// extension; written by hand, no build step: it imports nothing from the shared scope).
//
// In the lite site a notebook's Python runs in the page (Pyodide), and starting it takes
// seconds: the interpreter and the packages are downloaded, unpacked and imported before the
// first cell can run. Until then JupyterLab shows only "Python (Pyodide) | Unknown" in the
// toolbar. This plugin puts a line at the top of each notebook that says what is happening
// and for how long, and that it is done, then takes itself away.
var _JUPYTERLAB;
(function () {
  "use strict";
  const NAME = "llm-inference-companion-startup";
  const TICK_MS = 250;       // how often the line re-reads the kernel and its clock
  const DONE_SHOWN_MS = 4000; // how long "ready" stays before the line goes
  const STYLE = `
.companion-kernel-progress { position: sticky; top: 0; z-index: 10; margin: 0 0 8px 0;
  padding: 6px 12px; font-size: var(--jp-ui-font-size1, 13px); line-height: 1.4;
  color: #1a1a1a; background: #fff4d6; border-bottom: 2px solid #8a5a00; }
.companion-kernel-progress.companion-ready { background: #e3f1e6; border-color: #1b6b32; }
.companion-kernel-progress .companion-kernel-bar { display: block; height: 3px; margin-top: 4px;
  background: linear-gradient(90deg, #8a5a00 40%, transparent 40%) 0 0 / 200% 100%;
  animation: companion-kernel-slide 1.6s linear infinite; }
@media (prefers-reduced-motion: reduce) {
  .companion-kernel-progress .companion-kernel-bar { animation: none; background: #8a5a00; } }
@keyframes companion-kernel-slide { from { background-position: 100% 0; } to { background-position: 0 0; } }`;

  // what the status bar shows ("Python (Pyodide) | Idle"), else the kernel's own status
  function kernelStatus(panel) {
    const ctx = panel.sessionContext;
    if (ctx && ctx.kernelDisplayStatus) return ctx.kernelDisplayStatus;
    const kernel = ctx && ctx.session && ctx.session.kernel;
    return kernel ? kernel.status : "unknown";
  }

  function watch(panel) {
    const started = performance.now();
    const line = document.createElement("div");
    line.className = "companion-kernel-progress";
    // a polite status: the phase is announced when it changes, not the clock's every tick
    line.setAttribute("role", "status");
    line.setAttribute("aria-live", "polite");
    const text = document.createElement("span");
    const clock = document.createElement("span");
    clock.setAttribute("aria-hidden", "true");
    const bar = document.createElement("span");
    bar.className = "companion-kernel-bar";
    bar.setAttribute("aria-hidden", "true");
    line.append(text, clock, bar);
    let placed = false, done = false;
    const place = () => {
      const host = panel.content && panel.content.node;
      if (!host) return;
      const scroller = host.querySelector(".jp-WindowedPanel-outer") || host;
      scroller.insertBefore(line, scroller.firstChild);
      placed = true;
    };
    const say = (words) => { if (text.textContent !== words) text.textContent = words; };
    const tick = () => {
      if (done || panel.isDisposed) { clearInterval(timer); return; }
      if (!placed) place();
      const status = kernelStatus(panel);
      const seconds = Math.round((performance.now() - started) / 1000);
      if (status === "idle" || status === "busy") {
        done = true;
        clearInterval(timer);
        line.classList.add("companion-ready");
        bar.remove();
        clock.textContent = "";
        say(`Python is ready (it took ${seconds} s to start): the cells can run.`);
        setTimeout(() => line.remove(), DONE_SHOWN_MS);
        return;
      }
      say(status === "dead"
        ? "Python could not start in this page. Reload the page to try again."
        : "Starting Python in your browser: downloading, unpacking and importing the " +
          "interpreter and the companion's packages (numpy, plotly, the widgets). On a " +
          "first visit this takes 10 to 30 s; cells you run meanwhile wait their turn.");
      clock.textContent = ` ${seconds} s so far.`;
    };
    const timer = setInterval(tick, TICK_MS);
    tick();
  }

  const plugin = {
    id: `${NAME}:progress`,
    description: "A line at the top of each notebook while its Python kernel starts.",
    autoStart: true,
    activate(app) {
      const style = document.createElement("style");
      style.textContent = STYLE;
      document.head.appendChild(style);
      const seen = new WeakSet();
      const scan = () => {
        for (const widget of app.shell.widgets("main")) {
          if (!seen.has(widget) && widget.sessionContext && widget.content) {
            seen.add(widget);
            watch(widget);
          }
        }
      };
      if (app.shell.layoutModified) app.shell.layoutModified.connect(scan);
      if (app.shell.currentChanged) app.shell.currentChanged.connect(scan);
      app.restored.then(scan);
      scan();
    },
  };

  _JUPYTERLAB = typeof _JUPYTERLAB === "undefined" ? {} : _JUPYTERLAB;
  _JUPYTERLAB[NAME] = {
    init() {},
    get(module) {
      if (module !== "./extension") {
        return Promise.reject(new Error(`${NAME} has no module ${module}`));
      }
      return Promise.resolve(() => ({ __esModule: true, default: [plugin] }));
    },
  };
})();
