// Run a Python file inside the lite site's Pyodide under Node (tests/test_wasm32.py):
//   node tests/pyodide_run.mjs SITE_PYODIDE_DIR REPO_ROOT SCRIPT.py
// Pyodide and its packages come from the site (loaded by name from its pyodide-lock.json,
// sha256-checked); the companion from the working tree, mounted at /src. Prints the
// script's stdout; exit status 1 when it raises.
import fs from 'node:fs';
const [indexURL, repo, script] = process.argv.slice(2);
const { loadPyodide } = await import(indexURL + '/pyodide.mjs');
const py = await loadPyodide({ indexURL: indexURL + '/' });
await py.loadPackage(['numpy', 'plotly', 'ipywidgets', 'anywidget'], { messageCallback: () => {} });
py.FS.mkdir('/src');
py.FS.mount(py.FS.filesystems.NODEFS, { root: repo }, '/src');
py.runPython("import sys; sys.path.insert(0, '/src')");
try {
  await py.runPythonAsync(fs.readFileSync(script, 'utf8'));
} catch (e) {
  console.error(String(e).slice(-4000));
  process.exit(1);
}
