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

# %%

# %% [markdown]
# # Bring your own model
#
# **The question.** Chapter 8 works everything out for Qwen3-8B and Chapter 17 for two Llama
# shapes. What do the same calculations say for the model *you* serve? Paste its Hugging Face
# `config.json` below and this notebook redoes four of them: how many requests' KV fits
# (8.1.2), where decode and prefill sit on the roofline (8.2.1, 17 §2), what a decode step reads
# per output token (8.2.1, 17 §4), and the sixteen-request configuration comparison of 8.6.3.
#
# The reader (`companion.models.model_from_hf_config`) counts parameters the way the model's
# own `transformers` implementation builds them: mixture-of-experts layers with routed and
# shared experts, DeepSeek's latent attention, sliding-window layers, tied embeddings, biases
# and extra norms. The shelf of real configs it is tested on is `companion.models.shelf()`
# (keyed by display name); `models.load(...)` takes either that name or a key of
# `models.shelf_keys()`, for example `models.load("llama-3.1-8b")`.
#
# [START_HERE](START_HERE.ipynb) | [8.6 load and configuration](ch08_inference_optimization/08_6_load_and_configuration.ipynb)

# %%
import math

from companion import calc, models, plots, specs, theme, units
from companion.chapters import ch08
from companion.display import answer, md

card = specs.RTX_PRO_6000

# %% [markdown]
# ## 1. Paste your config.json
#
# Replace the text between the triple quotes with your model's `config.json` and its name in
# `MODEL_NAME` (or write `model = models.load("llama-3.1-8b")` for a model on the shelf, or
# `models.model_from_hf_config("path/to/config.json")`). The example is Qwen3-30B-A3B, a
# mixture-of-experts model: 128 experts per layer, 8 of them chosen for each token.

# %%
MODEL_NAME = "Qwen3-30B-A3B"   # what the tables and figures call the model
CONFIG_TEXT = """
{
  "architectures": [
    "Qwen3MoeForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 6144,
  "max_position_embeddings": 40960,
  "max_window_layers": 48,
  "mlp_only_layers": [],
  "model_type": "qwen3_moe",
  "moe_intermediate_size": 768,
  "norm_topk_prob": true,
  "num_attention_heads": 32,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 48,
  "num_key_value_heads": 4,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
"""
model = models.model_from_hf_config(CONFIG_TEXT, name=MODEL_NAME)

# D_w(b): the weights a decode step of b sequences reads (all of them for a dense model)
read_b1 = calc.moe_read_curve(model, [1])[0]["weight_read_bytes"]
kind = (f"mixture of experts ({model.n_experts} experts per layer, {model.experts_per_token} "
        f"per token)" if model.is_moe else "dense")
print(f"{model.name}: {model.attention_type} attention, {model.n_layers} layers, {kind}")
print(f"  parameters: {model.n_params:,.0f} ({model.n_params / 1e9:.2f} B); a token passes "
      f"through {model.active_params / 1e9:.2f} B of them")
print(f"  weights in BF16: {units.fmt_bytes(model.weight_bytes, 'GB', 2)} = "
      f"{units.fmt_bytes(model.weight_bytes, 'GiB', 2)} (bytes read are counted in decimal GB, "
      f"memory budgets in binary GiB)")
if model.is_moe:
    print(f"  a decode step reads {units.fmt_bytes(read_b1, 'GB', 2)} of weights at batch 1 "
          f"(one token's experts), up to {units.fmt_bytes(model.streamed_weight_bytes, 'GB', 2)} "
          f"once its batch touches every expert")
else:
    print(f"  a decode step reads {units.fmt_bytes(model.streamed_weight_bytes, 'GB', 2)} of "
          f"weights whatever its batch")
print(f"  KV per token: {calc.kv_bytes_per_token(model):,} B")
for note in model.notes:
    print(f"  note: {note}")

# %% [markdown]
# Anything the reader cannot count exactly stops it: an unknown `model_type` or a missing
# field raises an error that names it, and a field that may change sizes but is not understood
# raises a `ConfigFieldWarning`. Defaults a model type applies when a field is absent (Gemma
# ties its embedding table to the output layer, Mistral slides over 4,096 tokens) are listed
# in the notes above. The weights a step reads ($D_w$, 8.1.2) leave out the input embedding
# table, of which a step needs only a few rows (a model that ties it to its output layer still
# reads it whole there).
#
# ## 2. How many requests fit (8.1.2)
#
# The chapter's instance is 32 GiB of the card, of which 12 GiB are left for KV once
# Qwen3-8B's weights and the runtime's workspace are loaded. Your model's weights differ, so
# its KV budget does too; the workspace we keep at the chapter's size. A model whose weights
# do not fit the 32 GiB gets the whole card instead, and one that does not fit the card stops
# here.

# %%
instance = ch08.INSTANCE_MEM_BYTES
budget_32 = calc.instance_kv_budget_bytes(model, instance_bytes=instance)
workspace = instance - model.weight_bytes - budget_32        # the chapter's, kept
if budget_32 <= 0:
    instance = card.mem_bytes
budget = calc.instance_kv_budget_bytes(model, instance_bytes=instance)
fits_card = budget > 0
print(f"instance {units.fmt_bytes(instance, 'GiB', 2)} - weights "
      f"{units.fmt_bytes(model.weight_bytes, 'GiB', 2)} - workspace "
      f"{units.fmt_bytes(workspace, 'GiB', 2)} -> "
      + (f"KV budget {units.fmt_bytes(budget, 'GiB', 2)}" if fits_card
         else f"{units.fmt_bytes(-budget, 'GiB', 2)} short, before any KV"))
if fits_card:
    print(f"\n{'request':>18} {'prompt':>7} {'out':>5} {'KV at the end':>14} {'fit':>5}")
    for row in calc.kv_capacity_table(model, budget):
        print(f"{row['name']:>18} {row['prompt_tokens']:>7} {row['output_tokens']:>5} "
              f"{units.fmt_bytes(row['final_kv_bytes'], 'MiB', 1):>14} {row['fit']:>5}")
else:
    print(f"\nThe weights and the workspace need "
          f"{units.fmt_bytes(model.weight_bytes + workspace, 'GiB', 1)}, more than the card's "
          f"{units.fmt_bytes(card.mem_bytes, 'GiB', 1)}: one card cannot serve this model.\n"
          f"Split it over several cards with tensor parallelism (17 §4, §7) or shrink its "
          f"weights by quantization (8.4.1). The capacity table and section 5 are skipped.")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
edge = ch08.INSTANCE_MEM_BYTES - workspace        # largest weights the 32 GiB hold
above = card.mem_bytes - edge - workspace         # KV just past that edge
where = ("the chapter's 32-GiB instance" if instance == ch08.INSTANCE_MEM_BYTES
         else "the whole card" if fits_card else "no single card")
md(f"""
This model {'runs on ' + where if fits_card else 'does not fit one card'}. The rule has a
cliff: weights up to {units.fmt_bytes(edge, 'GiB', 2)} stay in the 32-GiB instance and keep what is left of it for KV,
which shrinks to nothing as the weights approach that size; weights just above it get the whole
card and with it about {units.fmt_bytes(above, 'GiB', 1)} of KV. Section 5 compares schemes on
whatever instance this gives, so check which side of the cliff your model is on before reading
its verdicts against the chapter's.
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the text below
windows = model.sliding_window is not None
if model.is_mla:
    kv_text = ("This model uses latent attention: each layer keeps one compressed vector per "
               "token instead of keys and values per head, so its cache grows with the context "
               "but slowly.")
elif windows:
    kv_text = ("Some of this model's layers attend over a sliding window and keep only the "
               "last window's worth of tokens, so past the window its cache grows only through "
               "the other layers.")
else:
    kv_text = ("This model has neither sliding-window layers (which keep only the last "
               "window's tokens) nor latent attention (one compressed vector per layer and "
               "token, DeepSeek's): every layer keeps keys and values for every token, and the "
               "cache grows in proportion to the context. The Try-this prompts load models "
               "that have them.")
md(f"A sequence's cache grows with its context. {kv_text}")

# %%
for L in (1_024, 8_192, 32_768):
    print(f"{L:>6} tokens of context: {units.fmt_bytes(calc.kv_bytes_at_context(model, L), 'MiB', 1)}"
          f" of KV per sequence")

# %% [markdown]
# ## 3. Roofline points (8.2.1, 17 §2)
#
# Decode reads the weights once per step for the whole batch; prefill reads them once for the
# whole prompt. Their arithmetic intensity (FLOPs per byte read) decides which roof they hit.
# For a mixture-of-experts model two things change: a token computes only through its chosen
# experts (the *active* parameters), and a step reads only the experts its batch has chosen.
# The last point is section 5's prefill: sixteen prompts' uncached tokens in one pass.

# %%
batched_prefill_tokens = ch08.LONG_BATCH * (ch08.LONG_PROMPT_TOKENS - ch08.SHARED_PREFIX_TOKENS)
points = calc.roofline_points(model, card, batch=16, context_tokens=2048, prompt_tokens=2048)
points.append(dict(label=f"prefill, 16 prompts x 2048 new tokens in one pass",
                   **calc.roofline_point(calc.prefill_intensity(model, batched_prefill_tokens),
                                         card)))
for p in points:
    print(f"{p['label']:>50}: {p['intensity_flop_per_byte']:8.1f} FLOP/B, "
          f"{100 * p['fraction_of_peak']:5.1f}% of peak ({p['bound']}-bound)")
ridge = calc.ridge_point(card)
print(f"{'ridge of the ' + card.name:>50}: {ridge:8.1f} FLOP/B")

fig = plots.roofline_figure(card, points, title=f"{model.name} on the {card.name}")
fig.data = [t for t in fig.data if "(reference)" not in (t.name or "")]   # no second card
shown = [p["intensity_flop_per_byte"] for p in points] + [ridge]
fig.update_xaxes(range=[math.log10(min(shown)) - 0.4, math.log10(max(shown)) + 0.4])
fig.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
def prefill_tokens_to_ridge(m):
    """Fewest prompt tokens whose prefill intensity reaches the card's ridge (bisection)."""
    lo, hi = 1, 1
    while calc.prefill_intensity(m, hi) < ridge:
        lo, hi = hi, 2 * hi
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if calc.prefill_intensity(m, mid) < ridge else (lo, mid)
    return lo


active_share = model.active_streamed_params * model.bytes_per_param / model.streamed_weight_bytes
n_ridge = prefill_tokens_to_ridge(model)
single, batched = points[2], points[3]
if model.is_moe:
    at_prompt = calc.moe_read_curve(model, [2048])[0]["experts_touched"]
    prefill_text = f"""
A {2048:,}-token prompt lands at {single['intensity_flop_per_byte']:.0f} FLOP/B,
{'below' if single['bound'] == 'memory' else 'above'} the ridge of {ridge:.0f}: 17 §2's rule
that prefill is compute-bound assumes every parameter read is also used, which an MoE breaks.
Its prompt computes through the active parameters ({100 * active_share:.2f}% of the weights a
step reads), while its {2048:,} tokens touch {at_prompt:.1f} of the {model.n_experts} experts
per layer and so read nearly all of them. Its intensity is then about the prompt length times
that share, $I \\approx n \\times$ {units.fmt_bytes(read_b1, 'GB', 2)} /
{units.fmt_bytes(model.streamed_weight_bytes, 'GB', 2)}, and a prompt needs {n_ridge:,} tokens
to reach the ridge, not the {math.ceil(ridge):,} of a dense model. Section 5's
prefill runs sixteen prompts' {batched_prefill_tokens:,} new tokens in one pass, at
{batched['intensity_flop_per_byte']:,.0f} FLOP/B, well into compute-bound ground: that is what
lets it borrow the chapter's measured prefill efficiency, a compute-bound figure.
"""
else:
    prefill_text = f"""
A dense model uses every weight it reads, so its prefill intensity is about the prompt length
(17 §2): a prompt of {n_ridge:,} tokens reaches the ridge of {ridge:.0f}, and a 2,048-token one
is {single['bound']}-bound, as is section 5's prefill of {batched_prefill_tokens:,} new tokens in
one pass ({batched['intensity_flop_per_byte']:,.0f} FLOP/B), which lets it borrow the chapter's
measured, compute-bound prefill efficiency.
"""
with_attention = calc.decode_attention_intensity(model, 16, 2048)["intensity"]
md(prefill_text + f"""
These points follow 17 §2's count of FLOPs: 2 per active parameter per token, the matrices
only. The batched-decode point's live tokens enter as bytes (each sequence's cache is read) but
not as FLOPs; counting attention over them too would move it from
{points[1]['intensity_flop_per_byte']:.2f} to {with_attention:.2f} FLOP/B, still far from the
ridge. Section 5's prefill and verification times do count attention, as 8.6.3 does.
""")

# %% [markdown]
# ## 4. What a decode step reads per output token (8.2.1, 17 §2, §4)
#
# Under uniform routing, a batch of $b$ tokens over $E$ experts with $r$ chosen per token
# touches $E\,(1-(1-r/E)^b)$ distinct experts per layer. At small batch the weight read grows
# with the batch almost as fast as the batch itself, so the read per output token falls more
# slowly than a dense model's $D_w/b$; once every expert is read, it falls like a dense model's
# again. Real routers are skewed, so fewer experts are touched than this and the catch-up comes
# later. Two dense models frame the curve: one as large as the MoE in total, and one holding
# only its active weights, which reads them all at every step. A dense model shows one line.

# %%
batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
rows = calc.moe_read_curve(model, batches)
if model.is_moe:
    for r in rows[::2]:
        print(f"batch {r['batch']:>3}: {r['experts_touched']:6.1f} of {model.n_experts} experts "
              f"per layer, {units.fmt_bytes(r['weight_read_per_token_bytes'], 'GB', 2)} of "
              f"weights per output token (dense, same total: "
              f"{units.fmt_bytes(r['dense_read_per_token_bytes'], 'GB', 2)}; dense, same active: "
              f"{units.fmt_bytes(read_b1 / r['batch'], 'GB', 2)})")
fig = plots.moe_read_figure(rows, label=model.name)
if model.is_moe:
    fig.add_scatter(x=batches, y=[read_b1 / b / units.GB for b in batches], mode="lines",
                    name="dense model of the active size (D_w(1) / b)",
                    line={"color": theme.GREEN, "dash": "dot", "width": 2})
fig.show()

# %% [markdown]
# A step also reads each sequence's cache: $d = D_w/b + Lk$ bytes per output token (8.2.1),
# with $D_w$ the weights the batch touches. Once $b$ sequences' caches outweigh the shared
# weight read, batching stops paying much; $b_\text{KV}$ is the smallest such batch. At batch 1
# the weight read alone caps decode at bandwidth over bytes per token (17 §2), and a single
# long context can cost as much to read as the weights (17 §4).

# %%
k = calc.kv_bytes_per_token(model)
ceiling = card.mem_bw_bytes_per_s / read_b1
mbu_b1 = calc.decode_efficiency_table()[0]["mbu"]           # Experiment 8-1, batch 1
print(f"batch 1: {units.fmt_bytes(read_b1, 'GB', 2)} of weights per token -> at most "
      f"{ceiling:.0f} tokens/s on the roofline, {ceiling * mbu_b1:.0f} at Experiment 8-1's "
      f"batch-1 MBU ({100 * mbu_b1:.0f}%), weights only")


def kv_batch(m, L):
    """b_KV: the smallest batch whose caches read at least the weights it touches."""
    kv = calc.kv_bytes_at_context(m, L)
    bound = max(1, math.ceil(m.streamed_weight_bytes / kv))   # enough for every expert read
    reads = [r["weight_read_bytes"] for r in calc.moe_read_curve(m, range(1, bound + 1))]
    return next(b for b, w in enumerate(reads, start=1) if b * kv >= w)


for L in (2048, 8192):
    per_token = {b: r["weight_read_per_token_bytes"] + calc.kv_bytes_at_context(model, L)
                 for b, r in zip(batches, rows)}
    print(f"context {L:>5}: read per output token {units.fmt_bytes(per_token[1], 'GB', 2)} at "
          f"b=1, {units.fmt_bytes(per_token[16], 'GB', 2)} at b=16, "
          f"{units.fmt_bytes(per_token[64], 'GB', 3)} at b=64; b_KV = {kv_batch(model, L)}")

# the context whose cache, read by one sequence, equals the batch-1 weight read
L_eq, top = None, 1 << 24
if calc.kv_bytes_at_context(model, top) >= read_b1:
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if calc.kv_bytes_at_context(model, mid) < read_b1 else (lo, mid)
    L_eq = lo
print(f"one sequence's KV equals the batch-1 weight read at "
      + (f"{L_eq:,} tokens of context" if L_eq else f"no context up to {top:,} tokens"))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
r16 = rows[batches.index(16)]
if model.is_moe:
    md(f"""
At batch 16 this MoE reads {units.fmt_bytes(r16['weight_read_per_token_bytes'], 'GB', 2)} of
weights per output token; a dense model of its active size would read
{units.fmt_bytes(read_b1 / 16, 'GB', 2)}, {r16['weight_read_per_token_bytes'] * 16 / read_b1:.1f}
times less, and one of its total size
{units.fmt_bytes(r16['dense_read_per_token_bytes'], 'GB', 2)}. The MoE computes like the small
model but, batched, reads like a large one: its sixteen tokens touch
{r16['experts_touched']:.1f} experts per layer where one token touches {model.experts_per_token}.
Only at batch 1 does it read as little as its active size suggests, which is why its batch-1
ceiling above is that of the small model.
""")
else:
    md(f"""
A dense model reads all {units.fmt_bytes(read_b1, 'GB', 2)} of its weights at every step, so its
read per output token falls as $1/b$ until the caches take over at $b_\\text{{KV}}$.
""")

# %% [markdown]
# ## 5. The sixteen-request comparison (8.6.3)
#
# Sixteen requests of 8,192 prompt tokens (the first 6,144 shared) and 256 outputs each must
# all finish within 7 seconds. Which of the chapter's schemes A-E would work for this model?
# Some inputs belong to the model and are recomputed; others are the chapter's measurements
# on its card and serving engine, carried over as they are:
#
# | recomputed for your model | kept from the chapter's measurements |
# |---|---|
# | KV held per scheme (prefix shared or not, BF16 or q8_0) | the 57.77% of peak that batched prefill reached |
# | prefill FLOPs of the uncached tokens (active parameters) | the card's bytes-read-to-round-time table (Experiment 8-1) |
# | bytes read per decode round (weights, the experts every routed token touches, KV) | B's measured 27.35 ms round, moved by the extra bytes the new model reads |
# | verification FLOPs of the draft's rows | the draft's memory, prefill share and 3 tokens per round (a Qwen3-8B draft) |
#
# A speculative round routes every position it verifies: D checks eight per request, so an MoE
# round sends 128 tokens through its routers, not 16, and reads the experts they touch.
#
# How much time do the extra bytes cost? The chapter measured rounds only for Qwen3-8B, so we
# move them two ways and report both. The *table* way reads the extra time off Experiment 8-1's
# bytes-to-round table, and outside its columns extends its nearest segment; the last one
# rises far more slowly than the card's bandwidth would make it (part of the growing read hid
# behind the per-round overhead). The *bandwidth* way charges every extra byte at the card's
# peak bandwidth on top of the measured round, as if none of it could hide. For a model that
# reads more than Qwen3-8B the table is the optimistic end and the bandwidth the pessimistic
# one; for a model that reads less, the bandwidth way removes more time and the roles swap.
#
# The round-time table includes a large per-round overhead (about two thirds of a batch-1
# round) that the chapter traces to launching kernels one by one; a model with many more
# layers launches more kernels, which neither way sees. The draft column is an assumption:
# your model needs a draft of its own, whose size and acceptance decide scheme D.

# %%
base_schemes = dict(calc.SCHEMES)          # the chapter's A-E; change one here to try it:
# base_schemes["D"] = base_schemes["D"].with_(tokens_per_round=2)   # with_ returns a copy

# the chapter's own model: scheme E is Exercise 8-9's to work out, so it is not shown for it
ref = specs.QWEN3_8B
chapter_model = ((model.weight_bytes, model.streamed_weight_bytes, model.active_params, k)
                 == (ref.weight_bytes, ref.streamed_weight_bytes, ref.active_params,
                     calc.kv_bytes_per_token(ref)))
names = "ABCD" if chapter_model else "ABCDE"
table_reads = [r["read_bytes"] for r in calc.decode_efficiency_table()]


def outside(r):
    """Whether a round's read lies outside Experiment 8-1's measured columns."""
    return not table_reads[0] <= r.read_bytes <= table_reads[-1]


def moved(transfer):
    """The chosen schemes with their rounds moved to this model one way: [Scheme]."""
    out = calc.schemes_for_model(model, [base_schemes[n] for n in names], transfer=transfer)
    return list(out.values())


def verdict(r):
    return "meets" if r.feasible else "no room" if not r.fits_memory else "misses"


def both(a, b, spec):
    """One value, or the table end and the bandwidth end when they differ."""
    return format(a, spec) if math.isclose(a, b, rel_tol=1e-9) else f"{a:{spec}} / {b:{spec}}"


if fits_card:
    kw = dict(model=model, hardware=card, kv_budget_bytes=budget)
    low = calc.compare_schemes(moved("table"), **kw)
    high = calc.compare_schemes(moved("bandwidth"), **kw)
    best = {t: calc.best_scheme(moved(t), **kw) or "none" for t in ("table", "bandwidth")}
    print(f"KV budget {units.fmt_bytes(budget, 'GiB', 2)} ({where}), deadline "
          f"{ch08.DEADLINE_S:g} s. Where two values show, the first moves the round by "
          f"Experiment 8-1's table,\nthe second charges the extra bytes at "
          f"{card.mem_bw_bytes_per_s / units.TB:.3f} TB/s; verdicts likewise.")
    print(f"{'scheme':>6} {'KV+draft':>10} {'in 12 GiB':>9} {'prefill':>8} {'read GB':>8} "
          f"{'round ms':>15} {'rounds':>6} {'total s':>13}  verdict")
    for name in names:
        a, b = low[name], high[name]
        beyond = "*" if outside(a) else " "
        print(f"{name:>6} {units.fmt_bytes(a.memory_bytes, 'GiB', 2):>10} "
              f"{'yes' if a.memory_bytes <= ch08.KV_BUDGET_BYTES else 'no':>9} "
              f"{a.prefill_s:7.2f}s {a.read_bytes / units.GB:7.2f}{beyond} "
              f"{both(a.round_ms, b.round_ms, '.2f'):>15} {a.rounds:>6} "
              f"{both(a.total_s, b.total_s, '.2f'):>13}  "
              + (verdict(a) if verdict(a) == verdict(b) else f"{verdict(a)} / {verdict(b)}"))
    if chapter_model:
        print(f"{'E':>6}  left out: Exercise 8-9 asks you to work it out for this model")
    if any(outside(r) for r in low.values()):
        print(f"* outside Experiment 8-1's columns ({table_reads[0] / units.GB:.2f}-"
              f"{units.fmt_bytes(table_reads[-1], 'GB', 2)}): the table is extrapolated there")
    print("\nleast GPU time per on-time answer: "
          + (best["table"] if best["table"] == best["bandwidth"]
             else f"{best['table']} (table) / {best['bandwidth']} (bandwidth)"))
else:
    print("no comparison: the weights do not fit the card (section 2)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
if fits_card:
    flips = [n for n in names if verdict(low[n]) != verdict(high[n])]
    past = [n for n in names if outside(low[n])]
    text = []
    if model.is_moe:
        spec_names = [n for n in names if base_schemes[n].verify_positions > 1]
        touched = {n: calc.moe_read_curve(model, [16 * base_schemes[n].verify_positions])[0]
                   for n in spec_names}
        plain = calc.moe_read_curve(model, [16])[0]
        text.append(
            "A plain round routes its 16 new tokens, which touch "
            f"{plain['experts_touched']:.1f} of {model.n_experts} experts per layer "
            f"({units.fmt_bytes(plain['weight_read_bytes'], 'GB', 2)} of weights). "
            + " ".join(f"{n} verifies {base_schemes[n].verify_positions} positions per request, "
                       f"{touched[n]['batch']} tokens a round, which touch "
                       f"{touched[n]['experts_touched']:.2f} "
                       f"({units.fmt_bytes(touched[n]['weight_read_bytes'], 'GB', 2)})."
                       for n in spec_names)
            + " A speculative round of an MoE reads more weights than a plain one, which a "
              "dense model's never does; section 5's rounds and verdicts count it.")
    above = any(low[n].read_bytes > table_reads[-1] for n in names)
    lo_col, hi_col = (-2, -1) if above else (0, 1)        # the segment the table extends
    rows81 = calc.decode_efficiency_table()
    d_read = rows81[hi_col]["read_bytes"] - rows81[lo_col]["read_bytes"]
    d_round = rows81[hi_col]["round_s"] - rows81[lo_col]["round_s"]
    text.append(
        (f"Here {', '.join(past)} read outside Experiment 8-1's columns, where the table end "
         f"extends its {'last' if above else 'first'} segment: "
         f"{units.fmt_bytes(d_read, 'GB', 2)} more for {d_round / units.ms:.2f} ms more, "
         f"bytes at {d_read / d_round / units.TB:.1f} TB/s, "
         f"{d_read / d_round / card.mem_bw_bytes_per_s:.1f} times the card's "
         f"{card.mem_bw_bytes_per_s / units.TB:.3f} TB/s. That is an extrapolation. "
         if past else "Every read here lies within Experiment 8-1's columns. ")
        + (f"The verdict of {', '.join(flips)} depends on which end holds: only a measurement "
           "of this model's round settles it." if flips else
           "No verdict changes between the two ends."))
    if instance == ch08.INSTANCE_MEM_BYTES:
        text.append(f"The comparison runs on the chapter's 32-GiB instance, with "
                    f"{units.fmt_bytes(budget, 'GiB', 2)} for KV against the chapter's 12.")
    else:
        fit12 = [n for n in names if low[n].memory_bytes <= ch08.KV_BUDGET_BYTES]
        text.append(
            f"The comparison runs on {where}, not the chapter's instance: "
            f"{units.fmt_bytes(budget, 'GiB', 2)} for KV, "
            f"{budget / ch08.KV_BUDGET_BYTES:.1f} times the chapter's 12 GiB, so the memory "
            f"verdicts are easier to pass than the chapter's. "
            + ("Every scheme would fit within 12 GiB as well." if len(fit12) == len(names)
               else f"Within 12 GiB only {', '.join(fit12) or 'no scheme'} would fit (the "
                    f"column 'in 12 GiB')."))
    md("\n\n".join(text))

# %% [markdown]
# ## Try this
#
# Prompts 1-3 change the model: in section 1, replace the line
# `model = models.model_from_hf_config(CONFIG_TEXT, name=MODEL_NAME)` with the `models.load(...)`
# call they name (or paste that model's config), then run the notebook again from there.
#
# 1. **Predict, then move.** Load `models.load("llama-3.1-8b")`, a dense model, and compare its
#    roofline points with the mixture-of-experts example's. Which one gains more intensity from
#    batch 1 to batch 16, and why?
# 2. Load `models.load("gemma-2-2b")` (every second layer keeps 4,096 tokens) or
#    `models.load("gemma-3-1b-it")` (five layers in six keep 512), and look at the KV at 32K
#    tokens: how much of the cache do the sliding-window layers save?
# 3. Load `models.load("deepseek-v3")`, which keeps one compressed latent vector per layer and
#    token instead of keys and values per head: compare its KV per token with Qwen3-8B's (8.4.2
#    points to this comparison). What does section 2 then say about serving it on this card?
# 4. In section 5, uncomment the line that gives scheme D 2 tokens per round (`with_` returns a
#    changed copy, so the line assigns it back into `base_schemes`) and rerun that cell. How
#    much does D's verdict for the example model rest on the draft's acceptance?

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
llama, moe = models.load("llama-3.1-8b"), models.load("qwen3-30b-a3b")
grow = {m.name: (calc.decode_intensity(m, 1), calc.decode_intensity(m, 16),
                 calc.decode_intensity(m, 16, 2048)) for m in (llama, moe)}
moe1, moe16 = calc.moe_read_curve(moe, [1, 16])
answer(f"""
{llama.name} goes from {grow[llama.name][0]:.1f} FLOP/B at batch 1 to
{grow[llama.name][2]:.1f} at batch 16 with 2,048 live tokens each
({grow[llama.name][1]:.1f} counting the weights alone); the MoE example goes from
{grow[moe.name][0]:.1f} to only {grow[moe.name][2]:.2f} ({grow[moe.name][1]:.2f} without the
caches). The dense model's sixteen tokens share one read of all its weights, so its FLOPs grow
sixteenfold while its weight read stays put. The MoE's sixteen tokens touch
{moe16['experts_touched']:.1f} experts per layer instead of {moe1['experts_touched']:.0f}, so its
weight read grows {moe16['weight_read_bytes'] / moe1['weight_read_bytes']:.1f} times along with
the FLOPs. Batching pays an MoE back only once its batch already touches every expert; until
then each new sequence brings experts of its own to read.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
saving = {}
for key in ("gemma-2-2b", "gemma-3-1b-it"):
    g = models.load(key)
    full = calc.kv_bytes_per_token(g) * 32_768                 # every layer keeping every token
    kept = calc.kv_bytes_at_context(g, 32_768)
    share = sum(w is not None for w in g.layer_windows) / g.n_layers
    saving[g.name] = (full, kept, share, g.sliding_window)
answer("""
At 32,768 tokens of context:

""" + "\n".join(
    f"- {name}: {units.fmt_bytes(kept, 'MiB', 0)} of KV instead of "
    f"{units.fmt_bytes(full, 'MiB', 0)} if every layer kept every token, "
    f"{100 * (1 - kept / full):.0f}% saved; {100 * share:.0f}% of its layers keep at most "
    f"{window:,} tokens."
    for name, (full, kept, share, window) in saving.items()) + """

A windowed layer stops growing at its window, while the full-attention layers keep growing, so
the saving approaches the share of windowed layers as the context grows past the window (and
is nothing below it). The layers that still see the whole context set how a long context's
cache grows.
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
v3, q8 = models.load("deepseek-v3"), models.load("qwen3-8b")
kv_v3, kv_q8 = calc.kv_bytes_per_token(v3), calc.kv_bytes_per_token(q8)
answer(f"""
{v3.name} keeps {kv_v3:,} B per token over its {v3.n_layers} layers,
{kv_v3 / v3.n_layers:,.0f} B per layer; Qwen3-8B keeps {kv_q8:,} B over {q8.n_layers} layers,
{kv_q8 / q8.n_layers:,.0f} B per layer. With more layers and many more query heads,
{v3.name} needs {kv_v3 / kv_q8:.2f} times Qwen3-8B's cache per token, because each layer stores
one compressed vector in place of keys and values for every KV head. Section 2 then stops: its
{units.fmt_bytes(v3.weight_bytes, 'GiB', 0)} of weights are
{v3.weight_bytes / card.mem_bytes:.0f} times the card's {units.fmt_bytes(card.mem_bytes, 'GiB', 1)}
before any KV. A small cache per token makes long
contexts cheap once the model is served; getting it onto cards at all is a question of
tensor parallelism (17 §7) and quantization (8.4.1).
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
moe_kw = dict(model=moe, hardware=card,
              kv_budget_bytes=calc.instance_kv_budget_bytes(moe, instance_bytes=card.mem_bytes))


def d_result(tokens, transfer):
    d = calc.SCHEMES["D"].with_(tokens_per_round=tokens)
    return calc.scheme_result(calc.schemes_for_model(moe, [d], transfer=transfer)["D"],
                              **moe_kw)


d_now = {t: d_result(ch08.DFLASH_TOKENS_PER_ROUND, t) for t in ("table", "bandwidth")}
d_two = {t: d_result(2, t) for t in ("table", "bandwidth")}
steps = [round(1 + 0.1 * i, 1) for i in range(71)]
need = {t: next((x for x in steps if d_result(x, t).feasible), None)
        for t in ("table", "bandwidth")}
answer(f"""
For the example model at the chapter's {ch08.DFLASH_TOKENS_PER_ROUND:g} tokens per round, D
needs {d_now['table'].rounds} rounds and finishes in {d_now['table'].total_s:.2f} s (table) to
{d_now['bandwidth'].total_s:.2f} s (bandwidth): on time either way. At 2 tokens per round it
needs {d_two['table'].rounds} rounds: {d_two['table'].total_s:.2f} s by the table, which
{'meets' if d_two['table'].meets_deadline else 'misses'} the {ch08.DEADLINE_S:g} s, and
{d_two['bandwidth'].total_s:.2f} s at the card's bandwidth, which
{'meets' if d_two['bandwidth'].meets_deadline else 'misses'} it. Scanning in steps of 0.1, D
first qualifies at {need['table']:.1f} tokens per round by the table and at
{need['bandwidth']:.1f} at the bandwidth end. The memory check does not move (the draft's
memory does not depend on its acceptance). So D's verdict for this MoE rests on two unmeasured
things at once: how well a draft of its own is accepted, and how long its rounds really take.
""", title="Worked answer 4")
