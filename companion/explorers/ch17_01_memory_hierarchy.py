"""17 §1's explorer home (notebook 17_01_memory_hierarchy): the memory hierarchy of a card.

Figures (plotly, deterministic: fixed colours, no timestamps; byte axes in decimal GB/MB, as
Chapter 17 prints them): ``memory_hierarchy_figure`` (``memory_hierarchy_traces``/``_layout``
over ``calc.memory_pyramid``).

Panel: ``MemoryHierarchyPanel`` (a hardware preset, the bytes a step must read and the shares of
peak bandwidth and compute a card reaches -> the card's pyramid, ridge point, full-memory sweep
time and link ratios, beside every other preset; at 100% and 100%, the spec sheet's reading of
17 §1, below it the achieved rates of ``calc.achieved_rates``).
"""

from __future__ import annotations

from companion import calc, specs, theme, units
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import dict_rows
from companion.explorers.common import titled_figure as _fig
from companion.explorers.presets import HARDWARE_PRESETS, hardware_control
from companion.formulas.fuller import achieved_rates
from companion.serves import serves

__all__ = [
    "memory_hierarchy_traces", "memory_hierarchy_layout", "memory_hierarchy_figure",
    "MemoryHierarchyPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.1"


LEVEL_COLORS = (theme.PURPLE, theme.BLUE, theme.FOREST, theme.PINE, theme.OCHRE)
# log10 of the capacity axis (GB): registers (0.00026 GB) to a few TB
CAPACITY_RANGE = (-4.0, 3.5)


# --- §1: the memory pyramid ------------------------------------------------------------------

def memory_hierarchy_layout(level_names, *, xaxes=("x", "x2"), yaxes=("y", "y2")) -> dict:
    """Axes of ``memory_hierarchy_traces``: capacity (GB) and bandwidth (GB/s), both log,
    levels top (fastest) to bottom."""
    names = list(level_names)
    xa, xb = (a.replace("x", "xaxis") for a in xaxes)
    ya, yb = (a.replace("y", "yaxis") for a in yaxes)
    cat = {"type": "category", "categoryorder": "array", "categoryarray": names,
           "autorange": "reversed"}
    return {
        # from 1e-4 GB: a register file or an SM's shared memory (256 KiB = 0.00026 GB) is a
        # visible bar with its label beside it; a tick every other decade keeps them apart
        xa: {"type": "log", "title": {"text": "capacity (GB, log scale)"}, "domain": [0, 0.47],
             "range": list(CAPACITY_RANGE), "anchor": yaxes[0], "tickmode": "array",
             "tickvals": [1e-4, 1e-2, 1.0, 100.0], "ticktext": ["0.0001", "0.01", "1", "100"]},
        xb: {"type": "log", "title": {"text": "bandwidth (GB/s, log scale)"},
             "domain": [0.53, 1.0], "range": [-0.3, 4.5], "anchor": yaxes[1]},
        ya: dict(cat, anchor=xaxes[0]),
        # the same rows at the same heights in both panels
        yb: dict(cat, anchor=xaxes[1], showticklabels=False, matches=yaxes[0]),
        "showlegend": False,
    }


def _capacity_label(b: float) -> str:
    """A capacity as the pyramid's table writes it: GB, MB, or KiB for a per-SM block."""
    return units.fmt_bytes(b, "GB" if b >= units.GB else "MB" if b >= units.MB else "KiB")


def memory_hierarchy_traces(rows, *, xaxes=("x", "x2"), yaxes=("y", "y2")) -> list:
    """Two bar panels over the levels of ``calc.memory_pyramid``: capacity (GB, log) and
    bandwidth (GB/s, log). A level the chapter gives no number for is marked "n/a". Four
    traces (bars and "n/a" marks per panel); axes from ``memory_hierarchy_layout``."""
    levels = dict_rows("rows", rows)
    names = [r["level"] for r in levels]
    traces = []
    for key, unit, xa, ya, name, nax in (
            ("capacity_bytes", "GB", xaxes[0], yaxes[0], "capacity",
             2.0 * 10.0 ** CAPACITY_RANGE[0]),
            ("bandwidth_bytes_per_s", "GB/s", xaxes[1], yaxes[1], "bandwidth", 1.0)):
        have = [r for r in levels if r.get(key) is not None]
        missing = [r for r in levels if r.get(key) is None]
        traces.append({
            "type": "bar", "orientation": "h", "name": name,
            "y": [r["level"] for r in have], "x": [r[key] / units.GB for r in have],
            "marker": {"color": [LEVEL_COLORS[names.index(r["level"]) % len(LEVEL_COLORS)]
                                 for r in have]},
            "text": [_capacity_label(r[key]) if key == "capacity_bytes"
                     else f"{r[key] / units.GB:,.4g} {unit}" for r in have],
            "hovertext": [f"{r['level']} ({r['where']}): {r['text']}" for r in have],
            "xaxis": xa, "yaxis": ya})
        traces.append({
            "type": "scatter", "mode": "text", "name": f"{name} n/a",
            "y": [r["level"] for r in missing], "x": [nax] * len(missing),
            "text": ["n/a"] * len(missing), "textposition": "middle right",
            "hovertext": [f"{r['level']}: {r['text']}" for r in missing],
            "xaxis": xa, "yaxis": ya})
    return traces


@serves("17.1")
def memory_hierarchy_figure(rows, *, title: str = "The memory pyramid (17 §1, re-derived)"):
    """``memory_hierarchy_traces`` as a plotly Figure."""
    data = dict_rows("rows", rows)
    layout = dict(memory_hierarchy_layout([r["level"] for r in data]), height=380)
    return _fig(memory_hierarchy_traces(data), layout, title)


def _opt(x, scale=1.0):
    """None stays None (a level or link the preset does not have), numbers are scaled."""
    return None if x is None else x / scale


# --- §1 the memory hierarchy -----------------------------------------------------------------

@serves("17.1")
class MemoryHierarchyPanel(Panel):
    """17 §1 live: a card's memory pyramid, ridge point and full-memory sweep, vs the others."""

    title = "The memory hierarchy (17 §1): capacity, bandwidth, and the ratio that runs decode"
    controls = (
        hardware_control(),
        # all of the default card's memory (the H100 SXM's 80 GB)
        Control("sweep_gb", "bytes read per step (GB)", "float", ch17.H100_MEM_BYTES / units.GB,
                1.0, 200.0, 1.0),
        # the spec sheet's rates by default (17 §1); 17 §9 measures 70% of the bandwidth on a
        # healthy decode, and 17 §2 assumes 50% of the compute for a prefill
        Control("bandwidth_pct", "HBM bandwidth reached (% of peak)", "float", 100.0,
                50.0, 100.0, 1.0),
        Control("compute_pct", "compute reached (% of peak)", "float", 100.0, 10.0, 100.0, 1.0),
    )
    main_control = "hardware"
    base_layout = memory_hierarchy_layout(
        [r["level"] for r in calc.memory_pyramid(specs.H100_SXM)])
    base_layout["yaxis"]["domain"] = base_layout["yaxis2"]["domain"] = [0.5, 1.0]
    base_layout.update({
        "height": 640, "barmode": "overlay",
        "xaxis3": {"title": {"text": "time to read those bytes once (ms)"}, "domain": [0, 1],
                   "anchor": "y3", "rangemode": "tozero"},
        "yaxis3": {"domain": [0, 0.36], "anchor": "x3", "autorange": "reversed",
                   "type": "category"}})

    def compute(self, *, hardware, sweep_gb, bandwidth_pct, compute_pct) -> View:
        hw = HARDWARE_PRESETS[hardware]
        rates = dict(compute_efficiency=compute_pct / 100, bandwidth_efficiency=bandwidth_pct / 100)
        rows = calc.memory_pyramid(hw)
        sweep_bytes = sweep_gb * units.GB
        ratios = (calc.bandwidth_ratios(hw) if hw.interconnect_bytes_per_s is not None
                  and hw.host_link_bytes_per_s is not None else {})
        full_s = calc.memory_sweep_s(hw)
        sweep_s = calc.memory_sweep_s(hw, sweep_bytes)
        numbers = {
            "memory_GB": hw.mem_bytes / units.GB,
            "bandwidth_GBs": hw.mem_bw_bytes_per_s / units.GB,
            "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
            "ridge_flop_per_byte": calc.ridge_point(hw),
            "full_sweep_ms": full_s / units.ms,
            "full_sweeps_per_s": 1.0 / full_s,
            "sweep_ms": sweep_s / units.ms,
            "steps_per_s": 1.0 / sweep_s,
            "nvlink_GBs": _opt(hw.interconnect_bytes_per_s, units.GB),
            "host_link_GBs": _opt(hw.host_link_bytes_per_s, units.GB),
            "hbm_over_nvlink": ratios.get("hbm_over_nvlink"),
            "nvlink_over_pcie": ratios.get("nvlink_over_pcie"),
            # like for like: NVLink's figure adds both directions, PCIe's counts one
            "nvlink_over_pcie_one_way": (
                None if not ratios else
                calc.nvlink_one_way_bytes_per_s(hw) / hw.host_link_bytes_per_s),
        }
        reached = achieved_rates(hw, sweep_bytes=sweep_bytes, **rates)
        numbers.update({
            "achieved_ridge_flop_per_byte": reached["ridge_flop_per_byte"],
            "achieved_sweep_ms": reached["sweep_s"] / units.ms,
            "achieved_steps_per_s": reached["steps_per_s"],
        })
        traces = memory_hierarchy_traces(rows)
        names = list(HARDWARE_PRESETS)
        # at the shares of peak the controls set (the spec sheet's own at 100%)
        at = [achieved_rates(h, sweep_bytes=sweep_bytes, **rates)
              for h in HARDWARE_PRESETS.values()]
        times = [a["sweep_s"] / units.ms for a in at]
        ridges = [a["ridge_flop_per_byte"] for a in at]
        traces.append({
            "type": "bar", "orientation": "h", "y": names, "x": times, "name": "sweep time",
            "xaxis": "x3", "yaxis": "y3",
            "marker": {"color": [theme.FOREST if n == hardware else theme.PALE_FOREST for n in names]},
            "text": [f"{t:,.3g} ms (ridge {r:,.0f} FLOP/B)" for t, r in zip(times, ridges)]})
        link = ("" if not ratios else
                f"<br>HBM / NVLink = {ratios['hbm_over_nvlink']:.2g}x; NVLink (both "
                f"directions) / PCIe (one) = {ratios['nvlink_over_pcie']:.2g}x, one direction "
                f"each = {numbers['nvlink_over_pcie_one_way']:.2g}x")
        text = (f"<b>{hw.name}</b>: {numbers['memory_GB']:,.0f} GB at "
                f"{numbers['bandwidth_GBs']:,.0f} GB/s, {numbers['peak_TFLOPs']:,.4g} TFLOP/s"
                f"<br>ridge = peak / bandwidth = <b>{numbers['ridge_flop_per_byte']:,.0f} FLOP "
                f"per byte</b><br>reading all of memory once: <b>{numbers['full_sweep_ms']:.3g} "
                f"ms</b> (at most {numbers['full_sweeps_per_s']:,.0f} such steps/s)<br>"
                f"reading {sweep_gb:g} GB per step: {numbers['sweep_ms']:.3g} ms, "
                f"{numbers['steps_per_s']:,.0f} steps/s"
                + (" (more than the card holds)" if sweep_bytes > hw.mem_bytes else "") + link
                + self._reached_line(numbers, bandwidth_pct, compute_pct))
        return View(numbers=numbers, traces=traces, text=text)

    @staticmethod
    def _reached_line(numbers, bandwidth_pct, compute_pct) -> str:
        """The readout's line for the achieved rates (none at the spec sheet's 100% / 100%)."""
        if bandwidth_pct == 100 and compute_pct == 100:
            return ("<br>rates: the spec sheet's peaks (lower the two shares of peak for the "
                    "rates a card reaches; the bars follow)")
        return (f"<br>at {bandwidth_pct:g}% of the bandwidth and {compute_pct:g}% of the "
                f"compute (the bars): ridge <b>{numbers['achieved_ridge_flop_per_byte']:,.0f}"
                f"</b> FLOP/B instead of {numbers['ridge_flop_per_byte']:,.0f}; reading the "
                f"step's bytes takes <b>{numbers['achieved_sweep_ms']:.3g} ms</b> instead of "
                f"{numbers['sweep_ms']:.3g} ms ({numbers['achieved_steps_per_s']:,.0f} steps/s)")
