"""axe-core in the browser tests: the WCAG 2.0 and 2.1 level A and AA rules, run in a page.

axe-core's own script comes from the axe-playwright-python wheel that requirements.lock pins
(0.1.8 ships axe-core 4.12.1 as a file in the package, ``AXE_VERSION`` reads it from the file's
banner): the rules are fixed by the lock and load with no network. Only that file is used: the
package's runner passes ``context`` to the page as a Python repr, so this module calls
``axe.run`` itself with proper JSON arguments.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from axe_playwright_python.base import AXE_SCRIPT

AXE_VERSION = re.match(r"/\*! axe v(\S+)", AXE_SCRIPT).group(1)
# WCAG 2.1 AA is the sum of these four tags (axe tags each rule with the level it belongs to)
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")

# axe-core (4.12.1 at least) fetches each stylesheet's @import itself, by the URL as written,
# which XMLHttpRequest resolves against the page instead of the stylesheet (an open axe-core
# bug): "../basic.css" in _static/styles/theme.css becomes a 404 next to the page, and the
# rules that read the CSS see the error page instead. While axe runs, each such URL is
# rewritten to the one the browser itself resolved for that import.
RUN_JS = """async ([context, options]) => {
    const resolved = new Map();
    const walk = sheet => {
        let rules;
        try { rules = sheet.cssRules; } catch (e) { return; }   // another origin's
        for (const r of rules) {
            if (r instanceof CSSImportRule && r.styleSheet) {
                if (r.styleSheet.href) resolved.set(r.href, r.styleSheet.href);
                walk(r.styleSheet);
            }
        }
    };
    for (const sheet of document.styleSheets) walk(sheet);
    const open = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function (method, url, ...rest) {
        return open.call(this, method, resolved.get(url) || url, ...rest);
    };
    let results;
    try {
        results = await window.axe.run(context || document, options);
    } finally {
        XMLHttpRequest.prototype.open = open;
    }
    return results.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({target: n.target.map(t => Array.isArray(t) ? t.join(' >>> ') : t),
                                  html: n.html, summary: n.failureSummary || ''}))}));
}"""


@dataclass
class Violation:
    """One rule broken on the page: axe's rule id, its impact, and the elements that break it
    (CSS selectors, their markup, axe's summary of what to fix)."""

    id: str
    impact: str | None
    help: str
    nodes: list[dict]

    @property
    def targets(self) -> list[str]:
        return [", ".join(n["target"]) for n in self.nodes]

    def summary(self, max_nodes: int = 3) -> str:
        lines = [f"{self.id} ({self.impact}, {len(self.nodes)} node(s)): {self.help}"]
        for n in self.nodes[:max_nodes]:
            fix = " ".join(n["summary"].split())
            lines.append(f"    {', '.join(n['target'])}\n      {n['html'][:200]}\n"
                         f"      {fix[:300]}")
        if len(self.nodes) > max_nodes:
            lines.append(f"    ... and {len(self.nodes) - max_nodes} more")
        return "\n".join(lines)


def inject(page) -> None:
    """Put axe-core into the page (once per document: a second copy would replace the first)."""
    if not page.evaluate("() => typeof window.axe === 'object' && !!window.axe.run"):
        page.evaluate(AXE_SCRIPT)
    if not page.evaluate("() => typeof window.axe === 'object' && !!window.axe.run"):
        raise RuntimeError("axe-core did not load into the page")


def run_axe(page, include=None, exclude=None, tags=WCAG_TAGS) -> list[Violation]:
    """The WCAG 2.1 A/AA violations on ``page``, or only inside the elements that the CSS
    selector(s) ``include`` match (and outside ``exclude``'s)."""
    inject(page)
    context = None
    if include is not None or exclude is not None:
        as_list = lambda s: [s] if isinstance(s, str) else list(s)  # noqa: E731
        context = {}
        if include is not None:
            context["include"] = [[s] for s in as_list(include)]
        if exclude is not None:
            context["exclude"] = [[s] for s in as_list(exclude)]
    options = {"runOnly": {"type": "tag", "values": list(tags)},
               "resultTypes": ["violations"]}
    return [Violation(**v) for v in page.evaluate(RUN_JS, [context, options])]


def counts(violations: list[Violation]) -> dict[str, int]:
    """{rule id: number of elements that break it}, most first."""
    c = Counter()
    for v in violations:
        c[v.id] += len(v.nodes)
    return dict(c.most_common())


def report(violations: list[Violation], max_nodes: int = 3) -> str:
    """Every violation's summary, for an assertion message."""
    return "\n".join(v.summary(max_nodes) for v in violations) or "no violations"
