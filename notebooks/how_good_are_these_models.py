# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Against the world: how good is the chapters' arithmetic?
#
# Both chapters estimate a serving system with a few lines of arithmetic. A decode step takes
# as long as streaming the weights and the KV cache at the card's peak bandwidth (8.2.1,
# 17 §2). A prefill sits on 17 §2's roofline: the larger of reading the weights once and doing
# its FLOPs at the half of peak compute the chapter assumes, so a prompt too short to pass the
# ridge point is priced on the memory roof. Tensor parallelism divides the reads and adds a
# small fixed cost per all-reduce (17 §7); a sequence's KV cache is its length times the bytes
# per token (8.1.2). This page asks how far such numbers land from what engines really
# measured, and so what a student may safely use them for.
#
# The yardstick is a small reference set of published measurements: engine documentation,
# official benchmark result tables and papers, each number stored with its setting (model,
# chips, precision, batch, prompt and output lengths) and the exact table it came from. Where a
# source leaves a setting out, the row says "not stated" and the prediction names what it
# assumed. Aggregator sites are not used.
#
# Three predictions stand beside each measurement:
#
# - **chapter**: the chapters' own formulas, as they stand (17 §2-§7, 8.1.2, 8.2.1);
# - **fuller**: the companion's fuller model, which also counts attention FLOPs, ring
#   all-reduces and the scales that quantised weights carry;
# - **calibrated**: the fuller counts with three constants a practitioner would fit, the way
#   8.6.3 calibrates its own card: the share of peak bandwidth the reads reach once a fixed
#   cost is taken out, the share of peak compute, and that fixed cost per forward pass. The
#   constants are fitted with one publisher's rows held out at a time and judged only on the
#   rows they never saw.
#
# **How a miss is measured.** Rows come in milliseconds, tokens per second and gigabytes, and a
# percentage error means different things for a rate and a time. So every error here is a
# *time ratio*: the predicted time over the measured time (for a rate, measured over predicted;
# for a size, predicted over measured). Below 1 the model was optimistic, promising a faster
# system than was measured; above 1 it was pessimistic. A *miss* is that ratio as a factor
# either way, so promising half the measured time and promising twice it are the same miss,
# and medians and worst cases are taken over misses.
#
# Related: [17.2 Roofline](ch17_performance/17_02_roofline.ipynb) ·
# [17.9 Measuring](ch17_performance/17_09_measuring.ipynb) ·
# [17.4 KV sizing](ch17_performance/17_04_kv_sizing.ipynb)

# %%
import math
import re
import statistics

from companion.explorers.common import plotly_go

from companion import calc, measurements as M, specs, theme
from companion.chapters import ch08, ch17
from companion.display import answer, md

go = plotly_go()   # plotly with the companion's figures: numbers the same on every CPU, a PNG beside

ROWS = M.rows()
BY_ROW = {r.id: r for r in ROWS}
TABLE = M.prediction_table(ROWS)
BY_ID = {t["id"]: t for t in TABLE}
TIMED = [r for r in ROWS if M.modelled(r)]
FOLDS = M.publisher_folds()
CAL = M.calibrate_all()
MISS = {t["regime"]: t for t in M.miss_table(ROWS)}
TIMED_REGIMES = [g for g in M.REGIMES if g in MISS]
f = M.factor        # a ratio or a miss as "1.53x"


def band(x, lo, hi):
    """Where a fraction sits against a band of the chapter's: below, inside or above it."""
    return "below" if x < lo else "above" if x > hi else "inside"

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below: the size of the set, its publishers, what is left out
pubs = M.publishers()
lines = ["| publisher | kind | source ids | rows | rows in the statistics |",
         "|---|---|---|---|---|"]
for pub, ids in sorted(pubs.items()):
    kind = M.SOURCES[ids[0]][1]
    n = sum(1 for r in ROWS if r.source_id in ids)
    n_timed = sum(1 for r in TIMED if r.source_id in ids)
    lines.append(f"| {pub} | {kind} | {', '.join(ids)} | {n} | {n_timed} |")
left_out = [r for r in ROWS if not M.modelled(r)]
moving = sorted({r.source_id for r in ROWS if "/latest/" in r.url})
moving_rows = [r for r in ROWS if r.source_id in moving]
unstated = sum(1 for r in moving_rows if r.precision.startswith(M.NOT_STATED))
trt_h100_7b = sorted(r.where.rsplit("row ", 1)[1] for r in ROWS
                     if r.where.startswith("Peak Throughput, H100") and r.model == "Llama-2-7B")
md(f"""The set holds **{len(ROWS)} measurements** from **{len(M.sources())} sources** put out by
**{len(pubs)} independent publishers** (two NVIDIA documents count as one publisher).
{len(TIMED)} of them have a time the models can predict and make up every statistic and fit
below.

""" + "\n".join(lines) + f"""

**How the rows were chosen.** A number was kept when the companion holds the model's layer
shapes (a published `config.json`, or the paper's own table for PaLM) and the chip's datasheet
peaks; within a source, a sample of its tables' rows spanning batch sizes, prompt lengths and
GPU counts was transcribed, not every row (each row's "where" names the table and position it
came from; from TensorRT-LLM's H100 throughput table for the 7B model, for instance, rows
{' and '.join(trt_h100_7b)}). Two rows are shown in the table at the end but left out of every
statistic and fit: {'; '.join(f'`{r.id}`' for r in left_out)}. The KV row is a size, not a
time, and is discussed below as a derivation; the offline MLPerf result gives neither its
batch nor its prompt lengths, so no time for it can be modelled.

**A caveat on {', '.join(moving)}.** Its {len(moving_rows)} rows cite a documentation page
whose address points at the latest version rather than a fixed revision, so the numbers may
have moved since they were read, and {unstated} of them do not state the precision (16-bit
weights and KV are assumed).""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table of chips below: each preset's peaks and the vendor document they come from
used = sorted({r.hardware.name for r in ROWS if not r.gpus.startswith(M.NOT_STATED)})
lines = ["| chip | bandwidth (GB/s) | dense 16-bit peak (TFLOP/s) | FP8 peak used (TFLOP/s) "
         "| vendor's document |", "|---|---|---|---|---|"]
for name in used:
    hw = next(r.hardware for r in ROWS
              if not r.gpus.startswith(M.NOT_STATED) and r.hardware.name == name)
    vendor, doc = M.HARDWARE_SOURCES[name]
    fp8 = M.FP8_SPEEDUP.get(name)
    lines.append(f"| {name} | {hw.mem_bw_bytes_per_s / 1e9:,.0f} | "
                 f"{hw.peak_flops_per_s / 1e12:,.0f} | "
                 f"{'no FP8' if fp8 is None else f'{fp8 * hw.peak_flops_per_s / 1e12:,.0f}'} | "
                 f"{vendor}: {doc} |")
lmd_ff = sum(1 for r in ROWS if "form factor not stated" in r.notes)
tpu_rows = sum(1 for r in ROWS if r.gpus.endswith("TPU-v4"))
md("Every prediction divides by a chip's datasheet peaks, so these come from the chip "
   "vendor's own documents. Rows in FP8 use an FP8 peak of twice the 16-bit one (the "
   "datasheet's dense FP8 figure, rounded the same way); 8-bit and 4-bit weight-only rows "
   "compute in 16 bits and use the 16-bit peak.\n\n" + "\n".join(lines) + f"""

Two settings are less certain than the table suggests. LMDeploy's page names its cards
A100-80G without the form factor; its {lmd_ff} rows are priced at the SXM card's bandwidth,
the only A100 the companion holds, and the PCIe card streams less, so on a PCIe card those
predictions are a little optimistic. And the TPU v4's chips talk over Google's own
interconnect, whose latency the vendor's table does not give; its {tpu_rows} rows borrow the
chapter's NVLink floor of {ch17.COLLECTIVE_LATENCY_NVLINK_S * 1e6:.0f} µs per all-reduce
(17 §7), an assumption rather than a measured property of that link.""")

# %% [markdown]
# ## Predicted against measured, as time ratios
#
# One column per modelled row, grouped by the **regime** of the chapter's own prediction, in
# the chapters' words (17 §2): *memory-bound* means streaming bytes dominates (most decode,
# and prompts too short to pass the ridge point); *compute-bound* means FLOPs dominate (long
# prompts, very large batches); *communication-bound* means all-reduces make up at least a
# fifth of the time. The circle is the chapter's arithmetic, the diamond the calibrated model
# fitted without that row's publisher; both are predicted time over measured time, so the
# dashed line at 1 is exact, below it the model promised too little time, above it too much.

# %%
ORDER = {g: i for i, g in enumerate(TIMED_REGIMES)}
timed_rows = sorted((BY_ID[r.id] for r in TIMED),
                    key=lambda t: (ORDER[t["regime"]], t["chapter_ratio"]))


def ratio_figure(rows_):
    fig = go.Figure()
    x, gap, centres, edges = [], 0, {}, []
    for i, t in enumerate(rows_):
        if i and t["regime"] != rows_[i - 1]["regime"]:
            gap += 2
            edges.append(i + gap - 1.5)
        x.append(i + gap)
        centres.setdefault(t["regime"], []).append(i + gap)
    lo = min(min(t["chapter_ratio"], t["held_out_ratio"]) for t in rows_) / 1.3
    hi = max(max(t["chapter_ratio"], t["held_out_ratio"]) for t in rows_) * 1.3
    links_x, links_y = [], []
    for xi, t in zip(x, rows_):
        links_x += [xi, xi, None]
        links_y += [t["chapter_ratio"], t["held_out_ratio"], None]
    fig.add_trace(go.Scatter(x=links_x, y=links_y, mode="lines", showlegend=False,
                             name="one row's two predictions",
                             hoverinfo="skip", line=dict(color=theme.PALE_GREY, width=1)))
    fig.add_trace(go.Scatter(x=[x[0] - 1, x[-1] + 1], y=[1, 1], mode="lines",
                             name="exact (ratio 1)", line=dict(color=theme.GREY, dash="dash")))
    for key, name, colour, symbol in (
            ("chapter_ratio", "chapter's arithmetic", theme.VERMILLION, "circle"),
            ("held_out_ratio", "calibrated, publisher held out", theme.BLUE, "diamond")):
        fig.add_trace(go.Scatter(
            x=x, y=[t[key] for t in rows_], mode="markers", name=name,
            marker=dict(color=colour, symbol=symbol, size=9,
                        line=dict(width=1, color=theme.WHITE)),
            text=[f"{t['id']} ({t['regime']})" for t in rows_],
            hovertemplate="%{text}<br>predicted / measured time %{y:.3g}<extra></extra>"))
    for e in edges:
        fig.add_vline(x=e, line=dict(color=theme.LIGHT_GREY, width=1, dash="dot"))
    fig.update_xaxes(tickvals=[sum(v) / len(v) for v in centres.values()],
                     ticktext=[f"{g.replace('-', '-<br>')}<br>({len(v)} rows)"
                               for g, v in centres.items()],
                     tickangle=0,
                     title="modelled rows, grouped by the regime of the chapter's prediction")
    fig.update_yaxes(type="log", range=[math.log10(lo), math.log10(hi)],
                     title="predicted time / measured time (1 = exact)")
    fig.update_layout(template=theme.TEMPLATE, height=480, legend_title_text="model",
                      title="How far each prediction lands: below 1 too optimistic, above 1 too "
                            "pessimistic")
    return fig


ratio_figure(timed_rows).show()

# %% [markdown]
# ## What the calibration finds, and how it lines up with 8.6.3
#
# 8.6.3 splits a measured decode round into two parts: the time the round's bytes need at peak
# bandwidth, and a gap that barely moves as the bytes grow. Its MBU, the read time over the whole
# round (17 §9's definition), is *gross*: the fixed gap sits in its denominator. The calibrated
# model splits a step the same way but fits the two parts separately, so its bandwidth share
# is a *net* MBU, with the fixed cost already taken out. The two can only be compared once they
# count the same thing.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the fitted constants, 8.6.3's decomposition and the gross MBU the fit implies
exp81 = calc.decode_efficiency_table()
b1, b64 = exp81[0], exp81[-1]
lo_band, hi_band = ch17.HEALTHY_DECODE_MBU
ref = BY_ROW["gf-7b-bf16-tp1"]
ref_bytes = M.decode_step_bytes(ref)
ref_peak_s = ref_bytes / ref.hardware.mem_bw_bytes_per_s
ref_cal_s = ref_bytes / (ref.hardware.mem_bw_bytes_per_s * CAL.bandwidth_eff) + CAL.overhead_s
md(f"""**The fit.** On all {len(TIMED)} modelled rows the best constants are a net MBU of
{CAL.bandwidth_eff:.0%}, {CAL.compute_eff:.0%} of peak compute (MFU) and
{CAL.overhead_s * 1e3:.2f} ms of fixed cost per forward pass.

**The chapters name that fixed cost.** 8.6.3's batch-1 round on its card takes
{b1['round_s'] * 1e3:.2f} ms, of which {b1['read_s'] * 1e3:.2f} ms is the read at peak
bandwidth and about {b1['gap_s'] * 1e3:.1f} ms is the gap, which it traces to submitting
kernels one at a time with CUDA Graphs off, plus host-side scheduling and synchronisation.
8.2.2's round model carries the same thing as its fixed {ch08.ROUND_FIXED_S * 1e3:.2f} ms per
round (read included), and 17 §9 shows it on a timeline as launch gaps that CUDA Graphs close.
The fitted {CAL.overhead_s * 1e3:.2f} ms is that gap for the engines in this set, which ran tuned
benchmarks; it is {b1['gap_s'] / CAL.overhead_s:.1f} times smaller than 8.6.3's.

**Gross against gross.** 8.6.3's gross MBU runs from {b1['mbu']:.0%} at batch {b1['batch']} to
{b64['mbu']:.0%} at batch {b64['batch']}. Put the fitted constants back together for
{ref.model} in 16-bit on one {ref.hardware.name} at batch 1: {ref_bytes / 1e9:.2f} GB take
{ref_peak_s * 1e3:.2f} ms at peak and {ref_cal_s * 1e3:.2f} ms in the calibrated step, a gross
MBU of {ref_peak_s / ref_cal_s:.0%}. That is the figure to set beside 8.6.3's and beside 17 §9's
healthy band of {lo_band:.0%}-{hi_band:.0%}; the net {CAL.bandwidth_eff:.0%} is not.""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Held out by publisher: how much does a calibration carry?
#
# <!-- fold: each publisher left out of the fit in turn, how far the constants move, and the held-out misses -->

# %% [markdown]
# Rows from one publisher share an engine, a benchmark harness and often a table, so a fit
# that has seen a sibling row has half seen the row it is judged on. Here each publisher in
# turn is left out, the three constants are fitted on everyone else, and the left-out rows are
# predicted. The chapter's column needs no fit and is shown on the same rows.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the publisher folds: constants fitted without each publisher, and their misses
lines = ["| held out | rows | net MBU | MFU | fixed cost per pass (ms) | chapter: median miss "
         "| calibrated: median miss | calibrated: optimistic on |", "|---|---|---|---|---|---|---|---|"]
fold_rows = {}
for fold in FOLDS:
    t = M.miss_table([BY_ROW[i] for i in fold.held], by=())[-1]
    fold_rows[fold.publisher] = t
    c = fold.calibration
    lines.append(f"| {fold.publisher} | {t['n']} | {c.bandwidth_eff:.0%} | {c.compute_eff:.0%} | "
                 f"{c.overhead_s * 1e3:.2f} | {f(t['chapter_median'])} | "
                 f"{f(t['calibrated_median'])} | {t['calibrated_optimistic']} of {t['n']} |")
lines.append(f"| none (all rows) | {len(TIMED)} | {CAL.bandwidth_eff:.0%} | {CAL.compute_eff:.0%} | "
             f"{CAL.overhead_s * 1e3:.2f} | | | |")
bw = [fo.calibration.bandwidth_eff for fo in FOLDS]
cp = [fo.calibration.compute_eff for fo in FOLDS]
oh = [fo.calibration.overhead_s * 1e3 for fo in FOLDS]
allm = MISS["all"]
half_fit, half_held = M.split()
half_cal = M.calibrate(half_fit)
half_rows = [r for r in half_held if M.modelled(r)]
half_by_row = statistics.median(M.miss(M.time_ratio(r, half_cal.predict(r))) for r in half_rows)
half_by_pub = statistics.median(M.miss(M.time_ratio(r, M.held_out_prediction(r)))
                                for r in half_rows)
md("\n".join(lines) + f"""

Leaving one publisher out moves the net MBU between {min(bw):.0%} and {max(bw):.0%}, the MFU
between {min(cp):.0%} and {max(cp):.0%} and the fixed cost between {min(oh):.2f} and
{max(oh):.2f} ms: the constants are a property of the engines they were fitted on, not of the
chips. Over all {allm['n']} modelled rows, each predicted by the fold that never saw its
publisher, the calibrated model's median miss is {f(allm['calibrated_median'])} against the
chapter's {f(allm['chapter_median'])}, with a worst case of {f(allm['calibrated_worst'])}
against {f(allm['chapter_worst'])}. That is the honest size of the gain. Splitting by row
instead flatters it: fitted on a fixed half of the rows (picked by a hash of each id), which
shares publishers with the other half, the constants miss the other half's {len(half_rows)}
modelled rows by a median {f(half_by_row)}; the publisher-held-out fits miss the same rows by
{f(half_by_pub)}. A calibration helps on an engine it has not seen, but by less than a fit that
has seen its siblings suggests.""")

# %% [markdown]
# ## How far off, regime by regime
#
# Every modelled row, with the calibrated model held out by publisher as above. Each cell is a
# miss, a factor either way: the median over the regime's rows and the worst one, and how many
# of the rows the model was optimistic on.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the miss table: median and worst miss per regime, per model, and how many were optimistic
def fmt(x, spec=".0f"):
    return "-" if x is None else format(x, spec)


def cell(t, model):
    if t[f"{model}_median"] is None:
        return "- | -"
    return (f"{f(t[f'{model}_median'])} | {f(t[f'{model}_worst'])} "
            f"({t[f'{model}_optimistic']} of {t['n']} optimistic)")


head = ("| regime | rows | chapter median | chapter worst | fuller median | fuller worst | "
        "calibrated median | calibrated worst |\n|---|---|---|---|---|---|---|---|")
body = [f"| {t['regime']} | {t['n']} | {cell(t, 'chapter')} | {cell(t, 'fuller')} | "
        f"{cell(t, 'calibrated')} |" for t in M.miss_table(ROWS)]
md("\n".join([head] + body))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the reading of the miss table below
mem, cmp_, com = MISS["memory-bound"], MISS["compute-bound"], MISS["communication-bound"]
md(f"""Three things stand out. Where bytes set the time, the chapter is optimistic on
{mem['chapter_optimistic']} of {mem['n']} rows, with a median miss of
{f(mem['chapter_median'])}: peak bandwidth is a floor on a step's time, never its value. The
calibration brings the median miss to {f(mem['calibrated_median'])} and leaves the errors on
both sides ({mem['calibrated_optimistic']} optimistic). Where FLOPs set the time, the chapter's
flat half of peak is already about right, a median miss of {f(cmp_['chapter_median'])} that
errs both ways ({cmp_['chapter_optimistic']} of {cmp_['n']} optimistic), and one pooled compute
share does not improve it ({f(cmp_['calibrated_median'])}): short prompts, long prompts and
huge batches miss for different reasons. Where all-reduces take a large share, the chapter
misses by a median {f(com['chapter_median'])}, always optimistic, and even the calibrated model
is {f(com['calibrated_median'])} off; with {com['n']} rows, that is a warning, not a
measurement of accuracy.""")

# %% [markdown]
# ## Where each model fails, and why
#
# The misses are not random: each has a cause a student can name.
#
# ### 1. Kernel efficiency: the bandwidth is never all there
#
# Bytes over peak bandwidth is a floor on a decode step's time, so every measured step is
# slower. 17 §9 turns the distance into a number: MBU, the bytes a step must stream times the
# steps per second, over peak bandwidth. The figure gives it for every row that reports a
# per-token decode time.

# %%
mbu_rows = [r for r in ROWS if M.measured_mbu(r) is not None]
mbu_rows.sort(key=M.measured_mbu)
fig = go.Figure()
fig.add_vrect(x0=lo_band, x1=hi_band, fillcolor=theme.TINT_GREEN, line_width=0, layer="below",
              annotation_text="17 §9's healthy band", annotation_position="outside top")
fig.add_trace(go.Bar(
    y=[r.id for r in mbu_rows], x=[M.measured_mbu(r) for r in mbu_rows], orientation="h",
    name="MBU from our byte count", marker_color=theme.BLUE,
    hovertemplate="%{y}<br>MBU %{x:.0%}<extra></extra>"))
rep = [r for r in mbu_rows if M.reported_bandwidth(r) is not None]
fig.add_trace(go.Scatter(
    y=[r.id for r in rep], x=[M.reported_bandwidth(r) / r.hardware.mem_bw_bytes_per_s
                              for r in rep],
    mode="markers", name="the source's own GB/s over the datasheet",
    marker=dict(color=theme.ORANGE, symbol="diamond", size=10,
                line=dict(width=1, color=theme.WHITE)),
    hovertemplate="%{y}<br>reported: MBU %{x:.0%}<extra></extra>"))
fig.add_vline(x=b1["mbu"], line=dict(color=theme.GREY, dash="dot"),
              annotation_text="8.6.3, batch 1, CUDA Graphs off", annotation_position="bottom right")
fig.update_xaxes(title="MBU: bytes streamed per second / datasheet bandwidth", tickformat=".0%",
                 range=[0, 1])
fig.update_yaxes(title="per-token decode row", automargin=True)
fig.update_layout(template=theme.TEMPLATE, height=560, legend=dict(orientation="h", y=-0.15),
                  title="Gross MBU of every measured decode step")
fig.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers of failure mode 1 below
gf7, gf4, gf8 = BY_ROW["gf-7b-bf16-tp1"], BY_ROW["gf-7b-int4-tp1"], BY_ROW["gf-7b-int8-tp1"]
lmd13 = BY_ROW["lmd-13b-b1-tok-i128-o2048"]
rep_pct = {r.id: M.reported_bandwidth(r) / r.hardware.mem_bw_bytes_per_s for r in rep}
watts = sorted({m.group(0) for r in rep for m in [re.search(r"\d+ W", r.notes)] if m})
lmd13_peak_s = M.decode_step_bytes(lmd13) / lmd13.hardware.mem_bw_bytes_per_s
gap_pts = max(abs(rep_pct[r.id] - M.measured_mbu(r)) for r in rep) * 100
md(f"""gpt-fast reports its own achieved bandwidth for {len(rep)} single-GPU rows; over the
{gf7.hardware.name}'s datasheet {gf7.hardware.mem_bw_bytes_per_s / 1e9:,.0f} GB/s that is
{min(rep_pct.values()):.0%} to {max(rep_pct.values()):.0%}, within {math.ceil(gap_pts):.0f}
percentage points of what our own byte count gives for the same rows. Its 16-bit {gf7.model}
step reaches an MBU of {M.measured_mbu(gf7):.0%}, {band(M.measured_mbu(gf7), lo_band, hi_band)}
17 §9's band. The quantised kernels fall further short: the
8-bit step reaches {M.measured_mbu(gf8):.0%} and the 4-bit one {M.measured_mbu(gf4):.0%} (the
source's own figure: {rep_pct[gf4.id]:.0%}). Unpacking low-bit weights costs work that a byte
count cannot see (our reading; the source gives the bandwidth, not its breakdown).

What is the fair denominator? The source ran its cards power-limited to {', '.join(watts)}, so
they could not reach the datasheet bandwidth, which assumes the card's full power. The
repository holds no figure for what such a card can stream at that limit, so these MBUs are
against the datasheet and understate how close gpt-fast's kernels came to what its cards could
do.

LMDeploy's median token for {lmd13.model} takes {lmd13.value:.0f} ms where the bytes need
{lmd13_peak_s * 1e3:.1f} ms at peak: an MBU of {M.measured_mbu(lmd13):.0%},
{band(M.measured_mbu(lmd13), lo_band, hi_band)} 17 §9's band. That is kernel efficiency, not a
fixed cost; the chapter misses it by
{f(M.miss(BY_ID[lmd13.id]['chapter_ratio']))} only because it assumes all of the bandwidth.""")

# %% [markdown]
# ### 2. Fixed costs per pass belong to the engine
#
# A fixed cost per forward pass (kernel launches, host-side scheduling, synchronisation) is
# set by how an engine drives the GPU, as 8.6.3's CUDA Graphs remark shows, so one pooled
# constant fits no engine exactly.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers of failure mode 2 below
pt_fold = next(fo for fo in FOLDS if fo.publisher == M.SOURCES["gpt-fast"][0])
gf7_rows = [BY_ID[r.id] for r in ROWS if r.id.startswith("gf-7b")]
gf7_ratios = [t["held_out_ratio"] for t in gf7_rows]
assert all(x > 1 for x in gf7_ratios)
gf7_meas_s = 1 / gf7.value
gf7_share_s = M.decode_step_bytes(gf7) / (gf7.hardware.mem_bw_bytes_per_s
                                          * pt_fold.calibration.bandwidth_eff)
tp8, nemo8 = BY_ID["gf-7b-bf16-tp8"], BY_ID["nemo-7b-a100-tp8-b1"]
short = BY_ID["trt-h100-7b-ttft-i128"]
md(f"""Fitted without any gpt-fast row, the pooled constants ({pt_fold.calibration.bandwidth_eff:.0%}
net MBU, {pt_fold.calibration.overhead_s * 1e3:.2f} ms a pass) predict every one of gpt-fast's
{len(gf7_rows)} {gf7.model} rows too slow, by {f(min(gf7_ratios))} to {f(max(gf7_ratios))}.
gpt-fast leaves no room for such a fixed cost: its 16-bit batch-1 step takes
{gf7_meas_s * 1e3:.2f} ms, and at the pooled bandwidth share the bytes alone would already
take {gf7_share_s * 1e3:.2f} ms. Other engines pay more than the pool. Split a 7B model over
eight GPUs and each GPU reads very little, so the fixed costs of every step take over. gpt-fast
and NeMo both ran {gf7.model} on {tp8['gpus']} at batch 1, and the chapter is optimistic on
both (time ratios {f(tp8['chapter_ratio'])} and {f(nemo8['chapter_ratio'])}). After
calibration they part ways: gpt-fast's row is predicted too slow ({f(tp8['held_out_ratio'])}),
NeMo's still too fast ({f(nemo8['held_out_ratio'])}). Same model, same chips, fixed costs of
different sizes: a calibrated fixed cost is only as good as its match to the engine that will
run, so fit it on that engine's own batch-1 step.

The same cost shows at the front of a request. TensorRT-LLM's {short['input_tokens']}-token
prompt on one H100 in FP8 took {short['measured']:.0f} ms to its first token; the chapter's
roofline says {short['chapter']:.2f} ms (next section), a time ratio of
{f(short['chapter_ratio'])}. The weight read is already in that prediction, so what is missing
is the engine's own fixed work per request.""")

# %% [markdown]
# ### 3. Prefill: the roofline decides, and the chapter's half of peak is about right
#
# 17 §2 puts a prompt of n tokens at an arithmetic intensity of about n FLOP per byte with
# 16-bit weights (2n with 8-bit ones), so a prompt shorter than the ridge point is still on the
# memory roof: its time is the weight read, whatever its FLOPs. The chapter's prediction here
# takes the larger of the two roofs, with compute at the half of peak it assumes.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the ridge points and the prefill rows' numbers below
r_a100 = calc.ridge_point(specs.A100_80GB)
r_h100 = calc.ridge_point(specs.H100_SXM)
r_fp8 = r_h100 * M.FP8_SPEEDUP[specs.H100_SXM.name]
eff = ch17.PREFILL_EFFICIENCY
shorts = [BY_ID[i] for i in ("trt-a100-7b-ttft-i128", "trt-a100-70b-tp4-ttft-i128",
                             "trt-h100-7b-ttft-i128")]
longs = [BY_ID[r.id] for r in TIMED if r.metric == "ttft_ms" and r.input_len == 2048]
long_ratios = [t["chapter_ratio"] for t in longs]
mfu_lo, mfu_hi = ch17.STRONG_PREFILL_MFU
a100_long = BY_ID["trt-a100-7b-ttft-i2048"]
a100_mfu = eff * a100_long["chapter"] / a100_long["measured"]


def ridge_of(t):
    """The ridge point (FLOP/B) of a row's chip at its precision, and its prompt's intensity:
    about n FLOP per byte with 2-byte weights, 2n with 1-byte ones (17 §2)."""
    s_ = M.setting(BY_ROW[t["id"]])
    return calc.ridge_point(s_.hw), t["input_tokens"] and int(t["input_tokens"]) * 2 / s_.model.bytes_per_param


assert all(i < r for r, i in map(ridge_of, shorts))
on_mem = [t for t in shorts if t["regime"] == "memory-bound"]
on_cmp = [t for t in shorts if t["regime"] == "compute-bound"]
a100_longs = [t for t in longs if "A100" in t["gpus"]]
assert all(t["chapter_ratio"] > 1 for t in a100_longs)


def named(ts):
    return " and ".join(f"{t['model']} on {t['gpus']} in {t['precision'].split(' (')[0]}, "
                        f"predicted {t['chapter']:.2f} ms," for t in ts)
md(f"""The ridge points are about {r_a100:.0f} FLOP/B on the A100 and {r_h100:.0f} on the H100
in 16-bit, and {r_fp8:.0f} on the H100 in FP8. Each of the {len(shorts)} time-to-first-token
rows with a {shorts[0]['input_tokens']}-token prompt is below its ridge, so at full peak all of
them sit on the memory roof. With compute at {eff:.0%} of peak the crossing halves:
{named(on_mem)} {'stays' if len(on_mem) == 1 else 'stay'} on the memory roof, priced as the
weight read, while {named(on_cmp)} {'crosses' if len(on_cmp) == 1 else 'cross'} onto the compute
side. Either way the measured times are longer ({', '.join(f"{t['measured']:.0f}" for t in shorts)}
ms): the fixed costs of section 2, not a read the chapter forgot.

Long prompts are where the prefill rule works. The {len(longs)} prompts of
{longs[0]['input_tokens']} tokens land between time ratios {f(min(long_ratios))} and
{f(max(long_ratios))}, and on the A100 the chapter is pessimistic on all {len(a100_longs)}:
TensorRT-LLM's
{a100_long['measured']:.0f} ms against a predicted {a100_long['chapter']:.0f} ms means an MFU of
about {a100_mfu:.0%}, {'above' if a100_mfu > eff else 'below'} the half of peak the chapter
assumes and {band(a100_mfu, mfu_lo, mfu_hi)} 17 §9's strong band ({mfu_lo:.0%}-{mfu_hi:.0%}).""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### 4. What the set cannot judge
#
# <!-- fold: throughput under a scheduler, tails, memory beyond bytes: what these rows cannot test -->

# %% [markdown]
# **Throughput under a scheduler.** The chapter treats a static batch as one prefill and then
# identical decode steps. A real engine admits, pads, splits and reorders work, which the
# static-batch rows here only brush against.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the MLPerf row's numbers and the KV row's below
mlperf_row = BY_ROW["mlperf41-hpe-h100x8-llama2-70b-offline"]
mlperf = BY_ID[mlperf_row.id]
mean_out = re.search(r"TOKENS_PER_SAMPLE ([0-9.]+)", mlperf_row.notes).group(1)
kv = BY_ID["vllm-blog-kv-llama13b-seq"]
llama13 = M.models()["LLaMA-13B"]
md(f"""MLPerf's offline result ({mlperf['measured']:,.0f} output tokens/s on
{mlperf['gpus']}) is left out. The chapter's offline figure, {eff:.0%} of the FP8 peak (FP8 is
assumed: the page does not state the precision) over one output token's FLOPs ({mlperf['chapter']:,.0f} tokens/s), is not a ceiling: the peak
itself is twice that. Nor is it the work: every output token also pays for the prompt it
answers, and the results page gives neither the prompt lengths nor the batch (its notes carry
only an accuracy bound on the mean output length, {mean_out} tokens). Without the dataset's
input lengths no time for this row can be modelled, and none is claimed.

**The tail.** Every row in the set is a median, a mean or a throughput from a tuned benchmark
run; none is a 99th percentile under mixed traffic, so nothing here says how far a
back-of-envelope number is from a tail. 17 §3 explains why the tail is a different quantity: a
long prompt arriving among running decodes stalls them all for its prefill (head-of-line
blocking), which moves the 99th-percentile inter-token latency while the median barely
changes.

**Memory sizes: a derivation, not a test.** The vLLM team gives up to {kv['measured']:.3g} GB
of KV cache for one LLaMA-13B sequence. K and V, {llama13.n_layers} layers,
{llama13.n_kv_heads * llama13.head_dim:,} values each, 2 bytes per value, over the model's
{M.MAX_CONTEXT['LLaMA-13B']:,}-token maximum give {kv['chapter']:.3g} GB (a time-free ratio of
{kv['chapter_ratio']:.2f}). The agreement is expected: the blog's figure is the same
multiplication done by its authors, so it confirms the arithmetic is done the usual way, not
that a running engine uses that much memory.""")

# %% [markdown]
# ## What to trust a back-of-envelope number for
#
# - **Memory and capacity: trust it, because it is counting.** Bytes per token, per sequence,
#   sequences per budget are products of the model's shapes (8.1.2, 17 §4), exact by
#   construction; what a real engine adds on top (block rounding, workspace, fragmentation)
#   8.1 and 8.3 count separately.
# - **Bounds and rankings: trust it.** Bytes over bandwidth is a real floor on a decode step;
#   more bytes per token is slower, more GPUs per read is faster, larger batches raise
#   throughput. The measured rows move the way the arithmetic says, only by less.
# - **Absolute decode latency: trust it after calibrating on your own engine.** Scale the
#   bandwidth by the net MBU your engine reaches and add its fixed cost per step; constants
#   carried from another engine can be off in either direction.
# - **Long prompts: the chapter's half of peak is a fair guess.** It missed these in both
#   directions by modest factors.
# - **Short prompts, many GPUs, MoE routing, low-bit kernels: distrust it.** Here fixed costs
#   and kernel efficiency, not bytes or FLOPs, set the time, and the arithmetic can be off by
#   a factor of several.
# - **Throughput under a scheduler, and any tail latency: do not use it.** Measure.

# %% [markdown]
# ## The accuracy an explorer can state
#
# The companion turns the miss table into one sentence per regime, which a panel prints under
# its prediction (`measurements.accuracy_sentence(regime)`, the median alone from
# `measurements.median_miss(regime)`). Each states a median and a worst case, not a bound:

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes one accuracy sentence per regime from the miss table
md("\n".join(f"- {M.accuracy_sentence(r)}" for r in TIMED_REGIMES))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## The reference set, row by row
#
# <!-- fold: every row with its setting, the three predictions and their time ratios -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the row-by-row table: setting, measured value, the three predictions, their ratios
lines = ["| row | setting | metric | measured | chapter | fuller | calibrated (publisher held "
         "out) | time ratio, chapter | time ratio, calibrated | regime |",
         "|---|---|---|---|---|---|---|---|---|---|"]
for t in TABLE:
    setting = (f"{t['model']}, {t['gpus']}, {t['precision']}, batch {t['batch']}, "
               f"in {t['input_tokens']}, out {t['output_tokens']}")
    held = "-" if t["held_out"] is None else format(t["held_out"], ".4g")
    held_ratio = "-" if t["held_out_ratio"] is None else f(t["held_out_ratio"])
    regime = t["regime"] if t["modelled"] else f"{t['regime']}; not in the statistics"
    lines.append(
        f"| {t['id']} | {setting} | {t['metric']} ({t['unit']}) | {fmt(t['measured'], '.4g')} | "
        f"{fmt(t['chapter'], '.4g')} | {fmt(t['fuller'], '.4g')} | {held} | "
        f"{f(t['chapter_ratio'])} | {held_ratio} | {regime} |")
md("\n".join(lines))

# %% [markdown]
# ## Try this

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the prompt's data: the gpt-fast row, its bytes per step and the fold that never saw it
row = gf7
t = BY_ID[row.id]
c = pt_fold.calibration
step_bytes = M.decode_step_bytes(row)
md(f"""gpt-fast measured {row.model} in 16-bit on one {row.hardware.name} at batch 1:
{row.value:g} tokens/s. One decode step streams {step_bytes / 1e9:.2f} GB (decimal): every
weight except the input embedding table, whose rows are looked up rather than streamed, plus
the KV of the {row.input_len}-token prompt. The datasheet bandwidth is
{row.hardware.mem_bw_bytes_per_s / 1e9:,.0f} GB/s. The calibration fitted without any gpt-fast
row gives a net MBU of {c.bandwidth_eff:.0%} and a fixed cost of {c.overhead_s * 1e3:.2f} ms per
pass.

Using only those two constants, predict the decode speed in tokens/s, and give the time ratio,
predicted step time over measured step time (below 1: the model promised a faster step than
gpt-fast measured). What does the answer say about carrying a fixed cost from one engine to
another? Work it out, then open the answer.""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer: the fold's prediction for the gpt-fast row, and its lesson
read_s = step_bytes / (row.hardware.mem_bw_bytes_per_s * c.bandwidth_eff)
pred_s = read_s + c.overhead_s
meas_s = 1 / row.value
answer(f"""At {c.bandwidth_eff:.0%} of {row.hardware.mem_bw_bytes_per_s / 1e9:,.0f} GB/s the
{step_bytes / 1e9:.2f} GB take {read_s * 1e3:.2f} ms; adding {c.overhead_s * 1e3:.2f} ms makes
the step {pred_s * 1e3:.2f} ms, or {1 / pred_s:.1f} tokens/s (the calibrated column of the row
table gives {t['held_out']:.4g}). gpt-fast measured {row.value:g} tokens/s, a step of
{meas_s * 1e3:.2f} ms, so the time ratio is {pred_s / meas_s:.2f}: the prediction is
{pred_s / meas_s:.2f} times too slow. The bare chapter went the other way, a ratio of
{t['chapter_ratio']:.2f}.

The read alone, {read_s * 1e3:.2f} ms, is already longer than the whole measured step: gpt-fast
reaches a gross MBU of {M.measured_mbu(row):.0%} on this row and leaves no room for the
pooled fixed cost. That cost was learned from engines that pay more per pass, and it does not
carry. **The fixed cost per pass is a property of the engine** (how it launches kernels and
schedules the host side, 8.6.3 and 17 §9), not of the model or the chip: calibrate it on the
engine you will run.""")
