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
# # 8.6 Under load: admission, effective throughput and choosing a configuration
#
# **The question.** Requests keep arriving, some answers are wrong and some come too late.
# How do we count the work that actually served a user, and which configuration of the
# techniques from 8.2-8.5 gets sixteen long requests answered, correctly and within 7 s,
# on one RTX PRO 6000?
#
# The earlier sections each changed one thing (batching, paging, sharing, compression,
# speculation). This one puts them under a stream of arrivals and then adds them up for the
# chapter's closing design problem ([overview](08_0_overview.ipynb)).

# %%
import numpy as np

from companion import calc, ledger, plots, specs, tables, units, widgets
from companion.chapters import ch08
from companion.display import answer, md
from companion.formulas import serving as sv
from companion.sim import load, queueing

model, card = specs.QWEN3_8B, specs.RTX_PRO_6000

# %% [markdown]
# ## 8.6.1 How many requests are in the system: Little's law
#
# In a steady state, count the requests present at each moment and average over time. Each
# request contributes its own time in the system, so over a long window of length
# $T_\text{obs}$ with $\lambda T_\text{obs}$ arrivals,
#
# $$\bar n_\text{sys} = \frac{\sum_i T_i}{T_\text{obs}} = \lambda\,\bar T .$$
#
# No assumption about the arrival pattern or the service order is needed. Requests computing
# or paused on a tool call keep their KV; one awaiting admission holds none. And it gives a
# *mean*: sizing the KV pool needs a high percentile. The
# chapter's example is 4 requests per second, each holding 8.1's short request's full KV:

# %%
rate = ch08.LITTLE_ARRIVAL_RATE_PER_S
short_kv = calc.kv_bytes(model, calc.held_tokens(load.SHORT_REQUEST.prompt_tokens,
                                                 load.SHORT_REQUEST.output_tokens))
for residence in ch08.LITTLE_RESIDENCE_S:
    held = calc.requests_in_system(rate, residence)
    print(f"{rate:g} req/s x {residence:g} s in the system = {held:g} requests on average; "
          f"x {short_kv / units.MiB:.0f} MiB of KV each = {held * short_kv / units.GiB:.2f} GiB")
rates = np.linspace(0, 8, 33).tolist()
plots.littles_law_figure(
    rates, {f"T = {t:g} s": [calc.requests_in_system(r, t) for r in rates]
            for t in ch08.LITTLE_RESIDENCE_S},
    points=[(rate, calc.requests_in_system(rate, t), f"{calc.requests_in_system(rate, t):g}")
            for t in ch08.LITTLE_RESIDENCE_S]).show()

# %% [markdown]
# On a service that really queues (the companion's load simulator, `companion.sim.load`, with
# roofline rounds, not the chapter's measurements): 300 short requests (2048 in, 256 out),
# Poisson arrivals at 4 req/s, continuous batching. The window runs until the last request
# leaves, so its arrival rate is below the nominal 4 req/s; and a window that starts and ends
# empty makes the two sides agree by construction (both are the requests' summed time over
# the window). The run shows how much state the law asks for, not a test of it.

# %%
arrivals = load.poisson_arrivals(rate, 300, seed=0)
run = load.run_service(load.workload(arrivals, load.SHORT_REQUEST, deadline_s=ch08.DEADLINE_S),
                       policy="continuous")
print(f"simulated: arrival rate {run.arrival_rate_per_s:.2f} req/s x mean residence "
      f"{run.mean_residence_s:.3f} s = {run.arrival_rate_per_s * run.mean_residence_s:.2f}; "
      f"time-average in the system {run.mean_in_system():.2f}")

# %% [markdown]
# ### Admission by deadline, and cancellation
#
# Before admitting a request, the scheduler can ask two questions: is there KV space for
# everything it will hold at the end of its answer (8.1.2), and can it still finish in time?
# The finish time is what has already been spent queueing plus the prefill plus $G - 1$
# output intervals. The short request of 8.1.1 (its queue, prefill, output interval and 256
# tokens) just fits the 7 s deadline; a further 0.1 s in the queue would push it past:

# %%
for queue_s in (ch08.QUEUE_S, 2 * ch08.QUEUE_S):
    finish = calc.lifecycle_request_time_s(queue_s, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                           ch08.OUTPUT_TOKENS)
    ok = calc.admit_request(queue_s, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                            ch08.OUTPUT_TOKENS, ch08.DEADLINE_S)
    print(f"queued {queue_s:.1f} s: first token at {queue_s + ch08.PREFILL_S:.3f} s, "
          f"finish at {finish:.2f} s -> {'admit' if ok else 'reject (late)'}")

# %% [markdown]
# A request that cannot make it is better rejected, sent to another instance or given a
# faster configuration *before* it occupies memory and compute. Cancellation is the other
# end: once a request is no longer wanted (the user left, a parallel branch already answered)
# the scheduler stops giving it rounds and frees its blocks after the work already on the
# accelerator completes.
#
# ### Explorer: will this request make its deadline?
#
# The top plot is the finish time against the time already spent queueing; the bar below
# splits this request's time into queue, prefill and generation. The readout also applies
# Little's law at the chosen arrival rate, taking this request's time as everyone's. The last
# menu queues others like it, one at a time, at the hourly rate its own slider sets.

# %% tags=["nbval-ignore-output"]
admission = widgets.AdmissionPanel()
admission.show()

# %%
n = admission.at().numbers
print(f"finish {n['finish_s']:.2f} s, admitted: {n['admitted']}, may wait at most "
      f"{n['longest_admissible_queue_s']:.3f} s in the queue")

# %% [markdown]
# ## Where this model breaks: queueing from averages
#
# Random arrivals bunch, and a bunch queues even while the server is idle much of the time, so
# requests wait, and miss a tight deadline, well below capacity (the admission explorer's last
# menu switches on the queue). The queue here serves one request at a time, like 8.6.2's
# individual admission, each taking the measured engine's time; continuous batching serves
# the bunch together, which is why it keeps far more answers on time at the same arrival rate
# (the simulated sweep below, whose faster roofline engine saturates one at a time later).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
q_service = calc.lifecycle_request_time_s(0.0, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                          ch08.OUTPUT_TOKENS)
q_slack = ch08.DEADLINE_S - q_service
q_rows = []
for q_load in (0.5, 0.9):
    q_even = calc.queue_on_time(q_load / q_service, q_service, q_slack, arrivals="even")
    q_rand = calc.queue_on_time(q_load / q_service, q_service, q_slack)
    q_rows.append((f"load {q_load:g}", f"{q_even.on_time_share:.1%}",
                   f"{q_rand.on_time_share:.1%}",
                   f"{q_rand.on_time_share / q_even.on_time_share:.2f}"))
md(tables.markdown_table(("on time, one at a time", "averages only (evenly spaced)",
                          "fuller model (Poisson)", "fuller / averages"), q_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The queue's formulas and a simulation.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 8.6.1 describes queueing in averages: requests accumulate once the arrival rate outruns what
# the instance can process. It gives no share of requests on time.
#
# Taken as the whole story, nobody waits below that point. That holds for
# requests that arrive evenly spaced (a D/D/1 queue), not for requests that arrive at random
# moments: a Poisson stream bunches, and a bunch queues even when the server is idle much of
# the time. For a server that takes requests one at a time (8.6.2's individual admission),
# each needing the same service time $T$ (its end-to-end time when alone), at load
# $\lambda T$, the mean wait in the queue and the chance to wait no longer than $t_\text{slack}$
# are
#
# $$\bar t_\text{queue} = \frac{\lambda T^2}{2\,(1 - \lambda T)}
# \quad\text{(Pollaczek-Khinchine)}, \qquad
# P(t_\text{queue} \le t_\text{slack}) = (1 - \lambda T)\,\mathrm{e}^{\lambda t_\text{slack}}
# \ \text{ for } t_\text{slack} < T \quad\text{(Erlang)}.$$
#
# Take the short request of 8.1 as the service: alone it finishes at $T$ = prefill $+ (G - 1)$
# intervals, and the 7 s deadline leaves a little slack for queueing, $t_\text{slack}$. Below, the share of
# requests that wait no longer than that slack, by formula (`calc.queue_on_time`) and by a
# seeded simulation of the queue (`companion.sim.queueing`, Lindley's recursion), for evenly
# spaced and Poisson arrivals. The admission explorer's last menu switches on the same queue
# for the request you set.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# computes the table below
service = calc.lifecycle_request_time_s(0.0, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                        ch08.OUTPUT_TOKENS)
slack = ch08.DEADLINE_S - service
loads = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9]
rows, sim_share = [], []
for offered in loads:
    lam = offered / service
    even = calc.queue_on_time(lam, service, slack, arrivals="even")
    waits = queueing.md1_waits(lam, service, 200_000, seed=0)
    sim_share.append(100 * float((waits <= slack).mean()))
    rows.append((f"{offered:g}", f"{lam * 3600:.1f}",
                 f"{even.mean_wait_s:.2f} / {even.on_time_share:.0%}",
                 f"{calc.md1_mean_wait_s(lam, service):.2f}", f"{float(waits.mean()):.2f}",
                 f"{100 * calc.md1_wait_cdf(slack, lam, service):.1f}% / {sim_share[-1]:.1f}%"))
print(f"service T = {service:.4f} s alone, slack for queueing t_slack = {slack:.4f} s")
md(tables.markdown_table(("load λT", "requests per hour", "even: wait (s) / on time",
                          "Poisson: mean wait, P-K (s)", "simulated (s)",
                          "Poisson: on time, Erlang / simulated"), rows))
grid = np.linspace(0.0, 0.99, 100)
plots.queueing_figure(
    grid, {"evenly spaced arrivals (D/D/1)": [100.0] * len(grid),
           "Poisson arrivals (M/D/1), Erlang": [100 * calc.queue_on_time(
               r / service, service, slack).on_time_share for r in grid]},
    points={"Poisson arrivals, seeded simulation": (loads, sim_share)}).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
half = calc.queue_on_time(0.5 / service, service, slack)
ninety = calc.queue_on_time(0.9 / service, service, slack)
generous = calc.queue_on_time(0.5 / service, service, ch08.DEADLINE_S)
md(f"""> **Where this model breaks: waiting below capacity.** Evenly spaced, these requests never
> wait until the server is full, so every one is on time up to one request per
> {service:.2f} s. Arriving at random, at half that rate the mean wait is already
> {half.mean_wait_s:.2f} s, many times the {slack:.3f} s of slack, and only
> {100 * half.on_time_share:.1f}% are on time; at a load of 0.9,
> {100 * ninety.on_time_share:.1f}%. With this little slack the on-time share is close to the
> chance of finding the server idle, $1 - \\lambda T$: whoever has to queue at all is late. Even a
> slack of a whole {ch08.DEADLINE_S:g} s, more than one service time, leaves
> {100 * (1 - generous.on_time_share):.1f}% late at half load. The average picture is safe only
> with slack of several service times or arrivals that are truly paced; otherwise admission
> must look at the queue it will join, not at the average rate.""")

# %% [markdown]
# ## 8.6.2 Effective throughput: count only answers that served someone
#
# A service loses work in two ways: answers that are wrong, and answers that are right but
# late. Over an observation window $T_\text{obs}$, with $\kappa_i = 1$ for a correct answer and
# $\tau_i = 1$ for one completed on time (8.6.2 writes <i>Q<sub>i</sub></i> and
# <i>D<sub>i</sub></i>; here $D$ already names the bytes a round reads, and scheme D),
#
# $$R_\text{good} = \frac{\sum_i \kappa_i \tau_i}{T_\text{obs}}, \qquad
# R_\text{done} = \frac{\#\text{completed}}{T_\text{obs}}.$$
#
# The gap between completion throughput $R_\text{done}$ and effective throughput
# $R_\text{good}$ is capacity spent on answers nobody could use. The chapter's retrieval
# experiment (Qwen3-8B, 3 s deadline, footnote 24) gives the sizes:

# %%
losses = calc.response_losses(ch08.QUALITY_RESPONSES, ch08.QUALITY_CORRECT, ch08.QUALITY_GOOD)
print(f"{losses['responses']} responses: {losses['wrong']} wrong, {losses['late_correct']} "
      f"correct but late, {losses['good']} correct and on time")

# %% [markdown]
# **Measured** (the chapter's Experiment 8-9, quoted, not recomputed): at 1 req/s both online
# strategies reach about the same effective throughput. At 4 req/s, admitting requests one
# at a time leaves only a fraction of its completions correct and on time, while continuous
# batching keeps most of them. At 16 req/s continuous batching completes barely more, and its
# effective throughput *falls* (printed below):

# %%
measured = ch08.GOODPUT_CB_REQ_PER_S
for r, good in measured.items():
    print(f"measured, continuous batching at {r:>2} req/s: {good:.2f} req/s effective")
print(f"4 -> 16 req/s: {calc.fractional_change(measured[4], measured[16]):+.0%}")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### The shape, simulated
#
# The companion cannot replay that experiment (its requests, answers and timings are
# measurement records), but its load simulator shows the same *shape* on the chapter's short
# requests: Poisson arrivals at each rate, 300 requests, each correct with the retrieval
# experiment's probability 294/336, on time if done within 7 s.
#
# <!-- fold: the effective-throughput curve, simulated request by request -->

# %% [markdown]
# Two policies: continuous
# batching (up to 64 requests per round) and admitting one request at a time. **Everything in
# this figure is generated by the companion's simulator**; the round times come from its
# roofline model of the card, so the absolute rates differ from the measurements above.

# %%
sweep_rates = [0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32]
sweeps = {
    "continuous batching": load.goodput_sweep(sweep_rates, policy="continuous",
                                              max_running=64),
    "one request at a time": load.goodput_sweep(sweep_rates, policy="continuous",
                                                max_running=1),
}
series = {label: ([row["completion_throughput"] for row in rows],
                  [row["effective_throughput"] for row in rows])
          for label, rows in sweeps.items()}
print(f"{'simulated':22} {'rate':>5} {'completed/s':>12} {'effective/s':>12} {'late':>5}")
for label, rows in sweeps.items():
    for row in rows:
        print(f"{label:22} {row['rate_per_s']:5g} {row['completion_throughput']:12.2f} "
              f"{row['effective_throughput']:12.2f} {row['late']:5d}")
plots.goodput_figure(sweep_rates, series).show()

# %% [markdown]
# The same runs count energy per qualifying result (**simulated**, the card at its 600 W cap
# whenever busy, idle power taken as zero): lowest near the effective-throughput peak, climbing
# once late answers pile up; wrong or late answers still cost their joules (8.6.3). Low load
# draws well under the cap, so its joules are overstated, and a figure over a handful of
# qualifying results (shown beside it) says little.

# %%
for label, rows in sweeps.items():
    cells = ", ".join(f"{row['rate_per_s']:g}/s: "
                      + (f"{row['energy_j_per_good']:,.0f} J ({row['good']} of "
                         f"{row['requests']} qualify)" if np.isfinite(
                          row["energy_j_per_good"]) else "none qualify")
                      for row in rows)
    print(f"simulated, {label}: {cells}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
alone = load.run_service(load.workload(load.trace_arrivals([0.0]), load.SHORT_REQUEST,
                                       deadline_s=ch08.DEADLINE_S),
                         policy="continuous", max_running=1)
measured_alone = calc.lifecycle_request_time_s(0.0, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                               ch08.OUTPUT_TOKENS)
launch_gap = calc.decode_efficiency_table(model, card)[0]["gap_s"]
md(f"""
The simulator's rounds are the roofline alone, without the {launch_gap / units.ms:.1f} ms per
batch-1 round that Experiment 8-1 spent launching kernels from the host. A lone short request
therefore takes {alone.mean_residence_s:.2f} s there against the {measured_alone:.2f} s the
queueing section above uses ({measured_alone / alone.mean_residence_s:.2f} times longer), so
one request at a time saturates near {1 / alone.mean_residence_s:.2f} req/s here, where the
measured engine would manage {1 / measured_alone:.2f} req/s. Read the simulated rates as
those of a faster engine, with more slack before the {ch08.DEADLINE_S:g} s deadline.
""")

# %% [markdown]
# Completion throughput climbs with the arrival rate until the instance is saturated and then
# stays flat; effective throughput follows it, peaks, and drops once queueing pushes answers
# past the deadline. The useful operating point is just before that drop: admit no more than
# the instance can finish on time and reject, redirect or queue the rest outside. Admitting one
# request at a time saturates far earlier. Note also that time is counted from each request's
# *scheduled* arrival, including any wait in an application queue outside the engine.
#
# ## 8.6.3 Speeds, GPU-seconds and the configuration choice
#
# ### Processing speeds and GPU-seconds per request
#
# Measured rounds turn into speeds: prefill speed $\mu_p$ in new input tokens per second,
# decode speed $\mu_d$ in completed decode calls per second (a round advancing $b$ requests
# completes $b$ calls); 8.6.3 writes them $r_P$ and $r_D$, and 17 §8 sizes its pools with the
# same two rates. A request with $n_\text{new}$ new (uncached) input tokens and $G$ outputs
# then occupies the card for
#
# $$t_\text{GPU} = \frac{n_\text{new}}{\mu_p} + \frac{G - 1}{\mu_d}\ \text{GPU-seconds}.$$
#
# The sharing configuration of the example (8K prompts, the first 6K cached, batch 16) is
# exactly one of Experiment 8-1's measurements: 32,768 new tokens prefilled in 2.04 s, then
# 27.35 ms per decode round.

# %%
new_tokens = ch08.LONG_PROMPT_TOKENS - ch08.SHARED_PREFIX_TOKENS
mu_p = calc.prefill_token_rate(ch08.LONG_BATCH * new_tokens, ch08.SHARED_PREFILL_S)
mu_d = calc.decode_tokens_per_s(ch08.LONG_BATCH, ch08.SHARED_ROUND_S)
t_gpu = calc.gpu_seconds_per_request(new_tokens, ch08.OUTPUT_TOKENS, mu_p, mu_d)
mfu = calc.measured_prefill_mfu(model, card, ch08.LONG_BATCH, new_tokens,
                                ch08.SHARED_PREFIX_TOKENS, ch08.SHARED_PREFILL_S)
printed_mu_p = next(e for e in ledger.by_section("8.6.3") if e.id == "8.6.3/r_P").printed_value
print(f"mu_p = {ch08.LONG_BATCH * new_tokens:,} / {ch08.SHARED_PREFILL_S} s = {mu_p:,.0f} new "
      f"tokens/s ({mfu:.1%} of peak); the chapter prints {printed_mu_p:,.0f}, which a measured "
      f"{ch08.LONG_BATCH * new_tokens / printed_mu_p:.4f} s gives (rounded to "
      f"{ch08.SHARED_PREFILL_S} s; the ledger notes it)")
print(f"mu_d = {ch08.LONG_BATCH} / {ch08.SHARED_ROUND_S / units.ms:.2f} ms = {mu_d:.0f} calls/s")
print(f"t_GPU = {new_tokens} / mu_p + {ch08.OUTPUT_TOKENS - 1} / mu_d = {t_gpu:.3f} "
      f"GPU-s per request, {ch08.LONG_BATCH * t_gpu:.2f} for all {ch08.LONG_BATCH}")

# %% [markdown]
# Without a measurement, estimate a stage from the spec sheet and an efficiency: prefill from
# its FLOPs over peak compute times MFU, a decode round from the bytes it reads over peak
# bandwidth times MBU. Experiment 8-1's table gives both efficiencies. The companion re-derives
# the decode rows (bytes read per round, $D_w + b L k$ at $L = 2048$, their read time at
# 1792 GB/s, and that time over the measured round) and the prefill row: the FLOPs of $b$
# prompts of 2048 tokens, and their share of peak where the chapter gives a prefill time (batch
# 1, from the 94.8 ms of footnote 5). For the other batches the chapter gives only the measured
# efficiency; the companion shows it and the prefill time it implies.

# %%
table = calc.decode_efficiency_table(model, card)
print(widgets.decode_efficiency_text(model, card))
prefill_row = calc.prefill_efficiency_row()
print(f"\n{'batch':>5} {'prefill work':>13} {'MFU':>5} {'prefill time':>13}  source")
for row in prefill_row:
    how = ("computed from the measured time" if row["source"] == "computed"
           else "measured MFU (8.6.3); the time it implies")
    print(f"{row['batch']:>5} {row['flops'] / units.TFLOP:8.1f} TFLOP {row['mfu']:5.0%} "
          f"{row['prefill_s']:11.3f} s  {how}")
first, last = table[0], table[-1]
print(f"\nbatch {first['batch']} -> {last['batch']}: "
      f"{last['read_bytes'] / first['read_bytes']:.2f}x the bytes, "
      f"{last['round_s'] / first['round_s']:.2f}x the round time")

# %% [markdown]
# More than twice the bytes, barely more time: most of a batch-1 round is the gap in the last
# column, the cost of launching kernels one by one from the host (this experiment ran without
# CUDA Graphs). It shrinks once kernels run long enough to hide the host's launches. Decode "efficiency" rises with batch because that
# overhead is amortised over more bytes, not because memory got faster. Prefill is the
# opposite case: its work is large matrix products from the start, so its efficiency hardly
# moves with batch, and even drifts down a little as longer batched prefills run.
#
# ### The design problem: sixteen long requests, 12 GiB, 7 s
#
# Sixteen 8192-token requests arrive together; their first 6144 tokens are the same, each
# writes 256 tokens, and all must be answered within 7 s. KV plus auxiliary buffers may use
# 12 GiB. Four configurations, all assumed to answer correctly (D's draft network is DFlash;
# the table reads each scheme's settings off `calc.SCHEMES`):

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(widgets.scheme_definition_markdown([calc.SCHEMES[k] for k in "ABCD"]))

# %% [markdown]
# The companion computes each one from the chapter's rules (`calc.scheme_result`):
# memory is the KV held at the end of generation in whole 16-token blocks (the prefix once
# where shared) plus the draft; prefill time is the uncached FLOPs at B's measured share of
# peak (printed above); a decode round is B's measured 27.35 ms where the prefix is shared, or Experiment
# 8-1's table interpolated on the bytes a round reads (A and C); rounds are
# $\lceil (G - 1) / \text{tokens per round} \rceil$.

# %%
results = calc.compare_schemes([calc.SCHEMES[k] for k in "ABCD"])
print(widgets.scheme_text([calc.SCHEMES[k] for k in "ABCD"]))
print(f"\nA would need {results['A'].memory_mib:,.0f} MiB; B {results['B'].memory_mib:,.0f} MiB; "
      f"D {results['D'].memory_mib:,.0f} MiB")
print(f"feasible, least GPU time per qualifying result: "
      f"{calc.best_scheme([calc.SCHEMES[k] for k in 'ABCD'])}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
A, B, C, D = (results[k] for k in "ABCD")
md(f"""
A runs out of memory; B and C fit but are late (B spends {B.decode_s:.2f} s on its {B.rounds}
decode rounds alone, C loses the shared prefill); D fits and finishes in {D.total_s:.2f} s
because it needs only {D.rounds} rounds. Those rounds cost what B's do: verifying
{sv.DFLASH_VERIFY_POSITIONS} positions for each of {ch08.LONG_BATCH} requests is
{D.verify_flops / units.TFLOP:.2f} TFLOP, {D.verify_s / units.ms:.1f} ms at B's prefill
efficiency, well under B's {B.round_s / units.ms:.2f} ms round, so D's round is B's (the
larger of the two, 8.2.1). On this card a decode round barely depends on batch or
context, so the one big lever on the generation time is the *number of rounds*. Figure 8-35
puts both checks on one plane:
""")

# %%
plots.scheme_plane_figure(results, ch08.KV_BUDGET_BYTES, ch08.DEADLINE_S).show()

# %%
plots.scheme_time_figure(results, ch08.DEADLINE_S).show()

# %% [markdown]
# ### Cost per qualifying result
#
# The card's time per *qualifying* result is the batch's time from arrival to the last
# answer over the number of answers that were correct and on time; at the 600 W power cap
# that bounds the energy per result as well. A configuration with no qualifying result wastes
# everything it spent.

# %%
for name in "BD":
    r = results[name]
    gpu = "no qualifying result" if not np.isfinite(r.gpu_s_per_result) else (
        f"{r.gpu_s_per_result:.3f} GPU-s and at most {r.energy_j_per_result:.0f} J per result")
    print(f"{name}: {r.total_s:.2f} s for {r.qualifying_results} qualifying results -> {gpu}")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### When memory shrinks or the answers get shorter
#
# Two variants of the design problem: half the memory budget, or much shorter answers.
#
# <!-- fold: the configuration choice with less memory or shorter answers -->

# %%
small = calc.compare_schemes([calc.SCHEMES[k] for k in "ABCD"],
                             kv_budget_bytes=ch08.SMALL_KV_BUDGET_BYTES)
print(f"6 GiB: feasible schemes {[k for k, r in small.items() if r.feasible]}")
short = calc.compare_schemes([calc.SCHEMES[k] for k in "BD"],
                             output_tokens=ch08.SHORT_OUTPUT_VARIANT_TOKENS)
b, d = short["B"], short["D"]
print(f"16 tokens: B {b.prefill_s:.2f} + {b.rounds} x {b.round_ms:.2f} ms = {b.total_s:.2f} s; "
      f"D {d.prefill_s:.2f} + {d.rounds} x {d.round_ms:.2f} ms = {d.total_s:.2f} s; "
      f"D faster by {b.total_s - d.total_s:.2f} s, its prefill longer by "
      f"{d.prefill_s - b.prefill_s:.2f} s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
At 6 GiB, D ({small['D'].memory_gib:.2f} GiB) no longer fits and B
({small['B'].memory_gib:.2f} GiB) fits but is still late, so no scheme qualifies. At 12 GiB with
16-token answers both B and D finish in time, and D's draft barely helps: its longer prefill
eats most of the {b.rounds - d.rounds} rounds it saves.
""")

# %% [markdown]
# ### Explorer: the configuration plane (Figure 8-35 live)
#
# Sliders for the KV budget, output length, deadline, D's tokens per round (how well its
# drafts are accepted), and the shared prefix. Reach the chapter's variants by moving the
# budget to 6 GiB or the output to 16 tokens. Scheme E, a context-lookup draft, is left out:
# working it out is Exercise 8-9.
# For a prefix other than 6144 tokens, B and D's measured 27.35 ms round is shifted by
# what Experiment 8-1's table predicts for the extra bytes read (an extrapolation).

# %% tags=["nbval-ignore-output"]
schemes = widgets.SchemePanel()
schemes.show()

# %%
for label, change in (("chapter's setting", {}), ("6 GiB budget", {"kv_budget_gib": 6.0}),
                      ("16-token outputs", {"output_tokens": 16})):
    n = schemes.at(**{**schemes.defaults(), **change}).numbers
    summary = ", ".join(f"{k} {n[f'{k}_total_s']:.2f} s/{n[f'{k}_memory_GiB']:.2f} GiB"
                        for k in "ABCD")
    print(f"{label:18} best: {n['best']}; {summary}")
# %% [markdown]
# ## Where this model breaks: three tokens every round
#
# Accepted drafts vary from round to round, so requests need different numbers of rounds and
# the batch ends with its slowest one (the configuration explorer's *D's rounds* menu).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
b_tpr = next(c for c in schemes.controls if c.name == "d_tokens_per_round")
b_tot = {b_x: tuple(schemes.at(d_tokens_per_round=b_x, d_rounds=how).numbers["D_total_s"]
                    for how in ("mean", "slowest"))
         for b_x in np.arange(b_tpr.min, b_tpr.max + 0.25, 0.5)}
b_most = max(b_tot, key=lambda x: b_tot[x][1] / b_tot[x][0])     # the widest gap on the slider
b_rows = []
for b_x in dict.fromkeys((b_tpr.default, b_most)):
    b_c, b_f = b_tot[b_x]
    b_rows.append((f"{b_x:g} tokens per round" + (" (8.6.3)" if b_x == b_tpr.default else ""),
                   f"{b_c:.2f} s", f"{b_f:.2f} s", f"{b_f / b_c:.2f}"))
md(tables.markdown_table(("D's total", "chapter's model (average)",
                          "fuller model (slowest request)", "fuller / chapter"), b_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The distribution of the batch's rounds.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# D's rounds in 8.6.3 assume each request emits exactly its average tokens per round, every
# round.
#
# Accepted drafts vary from round to round: with each of DFlash's drafted positions accepted
# independently (8.5's model) at the rate that gives that average, a request needs a spread of
# round counts, and the batch of 16 is done only when its slowest request is. The companion
# computes the distribution exactly (`calc.batch_rounds`: the running total of tokens carried
# round by round, then the maximum over the batch). The configuration explorer's *D's rounds*
# menu uses its median.

# %%
g_left = ch08.OUTPUT_TOKENS - 1
spread = calc.batch_rounds(g_left, ch08.DFLASH_TOKENS_PER_ROUND, sv.DFLASH_VERIFY_POSITIONS - 1,
                           ch08.LONG_BATCH)
one = calc.batch_rounds(g_left, ch08.DFLASH_TOKENS_PER_ROUND, sv.DFLASH_VERIFY_POSITIONS - 1, 1)
print(f"acceptance per drafted position {spread.acceptance:.3f}; the chapter's count "
      f"{spread.average_rounds} rounds; one request: mean {one.one_request_mean:.1f}, median "
      f"{one.batch_median}; the slowest of {ch08.LONG_BATCH}: mean {spread.batch_mean:.1f}, "
      f"median {spread.batch_median}, 99th percentile {spread.batch_p99}")
# from just before the first request can finish to just after the batch surely has
lo = max(0, next(r for r, c in enumerate(one.cdf) if c > 1e-4) - 5)
hi = next(r for r, c in enumerate(spread.cdf) if c > 1 - 1e-4) + 5
r_axis = list(range(lo, min(hi, len(spread.cdf))))
plots.batch_rounds_figure(
    {"one request": (r_axis, [one.within(r) for r in r_axis]),
     f"the slowest of {ch08.LONG_BATCH} (the batch)": (r_axis, [spread.cdf[r] for r in r_axis])},
    marks=[(f"the chapter's {spread.average_rounds} rounds", spread.average_rounds)]).show()

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# computes the table below
rows = []
for tpr in (ch08.DFLASH_TOKENS_PER_ROUND, 2.5, 2.0, 1.5):
    chap = schemes.at(d_tokens_per_round=tpr).numbers
    slow = schemes.at(d_tokens_per_round=tpr, d_rounds="slowest").numbers
    rows.append((f"{tpr:g}", chap["D_mean_rounds"],
                 f"{slow['D_slowest_median_rounds']} / {slow['D_slowest_p99_rounds']}",
                 f"{chap['D_total_s']:.2f} / {slow['D_total_s']:.2f}",
                 f"{'yes' if chap['D_feasible'] else 'no'} / "
                 f"{'yes' if slow['D_feasible'] else 'no'}"))
md(tables.markdown_table(("D's tokens per round", "rounds, 8.6.3",
                          "rounds, slowest request (median / 99th pct.)",
                          "D's total, s (8.6.3 / slowest)", "qualifies (8.6.3 / slowest)"),
                         rows))


def d_threshold(how):
    """The fewest tokens per round (in steps of 0.1) at which D qualifies."""
    steps = round((sv.DFLASH_VERIFY_POSITIONS - 1) / 0.1)
    for i in range(steps + 1):
        x = round(1.0 + 0.1 * i, 1)
        if schemes.at(d_tokens_per_round=x, d_rounds=how).numbers["D_feasible"]:
            return x
    return None


thresholds = {how: d_threshold(how) for how in ("mean", "slowest")}
print(f"D first qualifies at {thresholds['mean']:.1f} tokens per round counting the mean, "
      f"{thresholds['slowest']:.1f} counting the slowest request")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
chapter_d, slowest_d = schemes.at().numbers, schemes.at(d_rounds="slowest").numbers
md(f"""> **Where this model breaks: the batch waits for its slowest request.** At the chapter's
> setting the batch needs {spread.batch_median} rounds at the median and {spread.batch_p99} at
> the 99th percentile, not {spread.average_rounds}: D takes {slowest_d['D_total_s']:.2f} s
> instead of {chapter_d['D_total_s']:.2f} s
> (+{100 * (slowest_d['D_total_s'] / chapter_d['D_total_s'] - 1):.0f}%), and its GPU time per
> qualifying result rises from {chapter_d['D_gpu_s_per_result']:.3f} to
> {slowest_d['D_gpu_s_per_result']:.3f} GPU-s. It still qualifies with room to spare, so the
> chapter's choice stands. The gap matters near the edge: counting the mean, D qualifies from
> {thresholds['mean']:.1f} tokens per round; counting the slowest request, from
> {thresholds['slowest']:.1f}. The spread grows with the batch (the maximum of more draws) and,
> relative to the mean, shrinks as outputs get longer; the acceptance model itself
> (independent positions at one rate) is 8.5's, and real drafts, easier on some requests than
> others, would widen it further.""")

# %% [markdown]
# ## Beyond the instance: Amdahl over a whole task (Figure 8-36)
#
# An agent task is more than decode: prefill, tool calls and waiting stay as they were. If
# decode is a fraction $f$ of the task and becomes $\sigma$ times faster,
#
# $$\text{speedup}_\text{task} = \frac{1}{(1 - f) + f/\sigma}
# \;\xrightarrow{\sigma \to \infty}\; \frac{1}{1 - f}.$$
#
# A one-off cost added to make decode faster (say, building a draft index) adds to the
# denominator and can cancel the gain.

# %%
for decode_s in ch08.AMDAHL_DECODE_S:
    stages = [ch08.AMDAHL_TASK_S - decode_s, decode_s]
    total = calc.staged_task_time(stages, [1.0, ch08.AMDAHL_FACTOR])
    print(f"decode {decode_s:g} of {ch08.AMDAHL_TASK_S:g} s at {ch08.AMDAHL_FACTOR:g}x: "
          f"{total:g} s, speedup "
          f"{calc.amdahl_speedup(decode_s / ch08.AMDAHL_TASK_S, ch08.AMDAHL_FACTOR):.2f}x")
factors = np.geomspace(1, 64, 37).tolist()
plots.amdahl_figure(factors, {f"f = {f:g}": [calc.amdahl_speedup(f, s) for s in factors]
                              for f in widgets.AMDAHL_FRACTIONS}).show()

# %% [markdown]
# ### Explorer: stage speedup, decode fraction and an added preparation

# %% tags=["nbval-ignore-output"]
amdahl = widgets.AmdahlPanel()
amdahl.show()

# %%
for fraction in (0.5, 0.2):                  # the chapter's two cases, decode at 50 and 20 s
    n = amdahl.at(decode_fraction=fraction).numbers
    print(f"decode {fraction:.0%} of the task, {ch08.AMDAHL_FACTOR:g}x faster: "
          f"{n['task_time_s']:g} s, speedup {n['speedup']:.2f}x")

# %% [markdown]
# ## Energy per qualifying result
#
# Energy follows the same accounting as GPU time: the energy spent over the window divided by
# the number of qualifying results, $\text{energy}_\text{obs} / n_\text{good}$, and wrong or
# late answers still cost their joules. For scheme D the card's power cap bounds it (computed above). The
# chapter's Experiment 8-9 **measured** GPU plus CPU-package energy on a real service; those
# numbers are quoted here, not recomputed:

# %%
energy = ch08.ENERGY_PER_GOOD_J
for label, joules in energy.items():
    policy, at = label.split("@")
    name = "continuous batching" if policy == "cb" else "one at a time"
    print(f"measured, {name} at {at} req/s: {joules:,.1f} J per qualifying result")
spelled = {k: ("continuous batching" if k.split("@")[0] == "cb" else "one at a time")
              + f", {k.split('@')[1]} req/s" for k in ch08.ENERGY_PER_GOOD_J}
print(f"4 -> 16 req/s with continuous batching: "
      f"{calc.fractional_change(energy['cb@4'], energy['cb@16']):+.0%}")
plots.energy_per_result_figure(
    {spelled[k]: j for k, j in ch08.ENERGY_PER_GOOD_J.items()},
    title="Energy per qualifying result, Experiment 8-9 (measured, 8.6.3)").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
Scheme D's at most {results['D'].energy_j_per_result:.0f} J is a different quantity: a
GPU-only bound ({card.power_w:g} W times {results['D'].gpu_s_per_result:.3f} GPU-s) for one
answer of the design problem, {ch08.LONG_PROMPT_TOKENS:,} tokens in and
{ch08.OUTPUT_TOKENS} out. The bars are measured GPU plus CPU-package joules per short retrieval
answer under a {ch08.RETRIEVAL_DEADLINE_S:g} s deadline. Different requests, different meters: do not
compare them.
""")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of 8.6 that follows from stated inputs, recomputed (`ok` compares at the
# chapter's printed rounding; `*` marks an entry with a note in the
# [ledger](../ledger.ipynb)). Measured throughputs and energies are inputs, not entries.

# %%
ledger.show("8.6")

# %% [markdown]
# ## Try this
#
# 1. In the admission explorer, raise the output to 300 tokens. How short must the output
#    interval become for the request to be admitted again?
#    <!-- states: admission(output_tokens=300); admission(output_tokens=300, interval_ms=...) -->
# 2. **Predict, then move.** In the configuration explorer, lower D's tokens per round until
#    it misses the deadline. Guess the threshold first: how good must the drafts be for D to
#    qualify?
#    <!-- states: schemes(d_tokens_per_round=...) -->
# 3. Shrink the shared prefix. At what prefix length does B stop fitting in 12 GiB, and what
#    happens to D?
#    <!-- states: schemes(shared_prefix_tokens=...) -->
# 4. **Predict, then move.** Set the deadline to 10 s. Before moving it, guess which schemes
#    qualify now; then check which costs the least GPU time per qualifying result.
#    <!-- states: schemes(deadline_s=10.0) -->
# 5. In the Amdahl explorer, with decode at 20% of the task and a 4x speedup, how much added
#    preparation makes the change pointless? Compare with the break-even the readout prints.
#    <!-- states: amdahl(decode_fraction=0.2); amdahl(decode_fraction=0.2, prep_s=...) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_output = 300
refused = admission.at(output_tokens=300).numbers
need_ms = None
for interval in np.arange(ch08.CLIENT_ITL_S / units.ms, 0.9, -0.1):
    if admission.at(output_tokens=300, interval_ms=float(interval)).numbers[
            "admitted"]:
        need_ms = float(interval)
        break
budget_s = ch08.DEADLINE_S - ch08.QUEUE_S - ch08.PREFILL_S
gap = calc.decode_efficiency_table(model, card)[0]        # Experiment 8-1's batch-1 round
spec_rounds = -(-(long_output - 1) // int(ch08.DFLASH_TOKENS_PER_ROUND))
longest = 1 + int(budget_s / ch08.CLIENT_ITL_S)
answer(f"""
With 300 tokens at the measured interval the request is
{'admitted' if refused['admitted'] else 'refused'}. It has {budget_s:.3f} s for its
{long_output - 1} output intervals after the queue and the prefill, so each may last at most
{budget_s / (long_output - 1) * 1e3:.2f} ms; the explorer (scanning the interval down in steps
of 0.1 ms) first admits it at {need_ms:.1f} ms, against the measured
{ch08.CLIENT_ITL_S / units.ms:.1f} ms. That interval is already a batch-1 round, so a smaller
batch cannot help. What can: removing the {gap['gap_s'] / units.ms:.1f} ms of each
{gap['round_s'] / units.ms:.2f} ms round that went to launching kernels from the host (CUDA
Graphs; the reads alone take {gap['read_s'] / units.ms:.2f} ms), fewer rounds (speculation at
D's {ch08.DFLASH_TOKENS_PER_ROUND:g} tokens per round needs {spec_rounds} rounds instead of
{long_output - 1}, the chapter's own conclusion in 8.6.3), or a shorter answer (at the
measured interval at most {longest} tokens fit). The deadline is met by fewer or cheaper rounds.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
steps = round((sv.DFLASH_VERIFY_POSITIONS - 1) / 0.1)
qualifies = [x for x in (round(1.0 + 0.1 * i, 1) for i in range(steps + 1))
             if schemes.at(d_tokens_per_round=x).numbers["D_feasible"]]
threshold = min(qualifies) if qualifies else None
at_threshold = schemes.at(d_tokens_per_round=float(threshold)).numbers
accept = calc.batch_rounds(ch08.OUTPUT_TOKENS - 1, float(threshold),
                           sv.DFLASH_VERIFY_POSITIONS - 1, 1).acceptance
answer(f"""
D must finish {ch08.OUTPUT_TOKENS - 1} outputs after the first within the deadline,
after a prefill of {results['D'].prefill_s:.2f} s. Scanning the tokens per round in steps of
0.1, D first qualifies at {threshold:.1f} tokens per round, finishing in
{at_threshold['D_total_s']:.2f} s. In 8.5's model of independent positions that takes each of
its {sv.DFLASH_VERIFY_POSITIONS - 1} drafted positions accepted with probability about
{accept:.2f}. Below that, its rounds are too many; the memory check does
not move, because the draft's memory does not depend on how well its drafts are accepted.
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
prefixes = list(range(ch08.SHARED_PREFIX_TOKENS, -1, -128))
at_prefix = {pfx: schemes.at(shared_prefix_tokens=pfx).numbers for pfx in prefixes}
budget_gib = ch08.KV_BUDGET_BYTES / units.GiB
b_stops = next(p for p in prefixes if at_prefix[p]["B_memory_GiB"] > budget_gib)
d_mem = next(p for p in prefixes if at_prefix[p]["D_memory_GiB"] > budget_gib)
d_late = next(p for p in prefixes if at_prefix[p]["D_total_s"] > ch08.DEADLINE_S)
d_stops = next(p for p in prefixes if not at_prefix[p]["D_feasible"])
answer(f"""
Each request's private part grows as the shared prefix shrinks, so every scheme that shares
needs more memory, and its prefill more work. Scanning down from {ch08.SHARED_PREFIX_TOKENS}
tokens in steps of 128, D stops qualifying at a prefix of {d_stops:,} tokens, and memory is what
stops it: it needs {at_prefix[d_mem]['D_memory_GiB']:.2f} GiB of the {budget_gib:g} (the draft's
memory on top of B's) while it would still finish in {at_prefix[d_mem]['D_total_s']:.2f} s. Its
time crosses {ch08.DEADLINE_S:g} s only at {d_late:,} tokens
({at_prefix[d_late]['D_total_s']:.2f} s). B stops fitting at {b_stops:,} tokens
({at_prefix[b_stops]['B_memory_GiB']:.2f} GiB), but never qualified anyway: its
{results['B'].rounds} rounds alone overrun the deadline, whatever the prefix. Check both limits:
the one that binds first is not always time.
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
ten = schemes.at(deadline_s=10.0).numbers
ok = [k for k in "ABCD" if ten[f"{k}_feasible"]]
answer(f"""
With 10 s, the schemes that fit and finish are {', '.join(ok)}: B's
{ten['B_total_s']:.2f} s now makes it, C's {ten['C_total_s']:.2f} s still does not, and A
still lacks memory. The least GPU time per qualifying result is **{ten['best']}**'s,
{ten[f"{ten['best']}_gpu_s_per_result"]:.3f} GPU-s
(B: {ten['B_gpu_s_per_result']:.3f} GPU-s): fewer rounds beat the draft's longer prefill.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
fifth = amdahl.at(decode_fraction=0.2).numbers      # decode 20 s of the 100 s task, 4x
pointless = next(x / 2 for x in range(0, 121)
                 if amdahl.at(decode_fraction=0.2, prep_s=x / 2).numbers["speedup"] <= 1)
decode_s, factor = 0.2 * ch08.AMDAHL_TASK_S, ch08.AMDAHL_FACTOR
saved = decode_s - decode_s / factor
opening = amdahl.at().numbers                        # the explorer as it opens, f = 0.5
answer(f"""
A {factor:g}x faster decode turns the {decode_s:g} s of decode into {decode_s / factor:g} s,
saving {saved:g} s of the {ch08.AMDAHL_TASK_S:g} s task. Any preparation longer than that
saving makes the change pointless. With the decode fraction moved to 0.2, the readout's
break-even says the same, {fifth['break_even_prep_s']:.4g} s (as the explorer opens, at
f = 0.5, it reads {opening['break_even_prep_s']:.4g} s: the break-even follows the decode
time), and the preparation slider first erases the gain at
{pointless:g} s. Without preparation the task speeds up only {fifth['speedup']:.2f}x, and
even an infinitely fast decode would give {1 / (1 - 0.2):.2f}x: the smaller decode's share of
the task, the less a faster decode can buy, and the less preparation it can afford.
""", title="Worked answer 5")

# %% [markdown]
# > **What you can now compute**
# >
# > - The requests an instance holds from the arrival rate and the time each spends, and whether a queued request can still make its deadline ([Exercise 8-9](../../exercises/ex8_9.ipynb)).
# > - Effective throughput, counting only answers that are correct and on time ([Exercise 8-9](../../exercises/ex8_9.ipynb)).
# > - GPU-seconds per request from measured prefill and decode speeds, and a configuration's memory, time and GPU time per qualifying result ([Exercise 8-9](../../exercises/ex8_9.ipynb)).
# > - The speedup of a whole task when one stage gets faster, and the preparation time that cancels it ([Exercise 8-8](../../exercises/ex8_8.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Little's law needs only a steady state; the admission
# > check prices a request at its own queue, prefill and a constant output interval, as if no
# > one else arrived (the M/D/1 queue beside it lets others arrive at random, one served at a
# > time, each with the same service time). The load simulator's rounds come from a roofline
# > model of the card, not the chapter's measurements, with correctness drawn at the retrieval
# > experiment's average rate and idle power taken as zero. The design problem prices prefill
# > at scheme B's measured efficiency, takes decode rounds from Experiment 8-1 (measured, or
# > interpolated on bytes read), assumes every answer is correct, gives D exactly its mean
# > output every round (the slowest-request count is shown beside it) and bounds energy by the
# > 600 W cap. Amdahl's law holds the other stages of a task fixed while one gets faster.
# >
# > </details>
