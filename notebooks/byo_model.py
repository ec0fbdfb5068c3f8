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
# # Bring your own model
#
# **The question.** Chapter 8 works everything out for Qwen3-8B and Chapter 17 for two Llama
# shapes. What do the same calculations say for the model *you* serve? Paste its Hugging Face
# `config.json` below and this notebook redoes three of them: how many requests' KV fits
# (8.1.2), where decode and prefill sit on the roofline (8.2.1, 17 §2), and the sixteen-request
# configuration comparison of 8.6.3.
#
# The reader (`companion.models.model_from_hf_config`) counts parameters the way the model's
# own `transformers` implementation builds them: mixture-of-experts layers with routed and
# shared experts, DeepSeek's latent attention, sliding-window layers, tied embeddings, biases
# and extra norms. The shelf of real configs it is tested on is `companion.models.shelf()`.
#
# [START_HERE](START_HERE.ipynb) | [8.6 load and configuration](ch08_inference_optimization/08_6_load_and_configuration.ipynb)

# %%
import json

from companion import calc, models, plots, specs, units
from companion.chapters import ch08

card = specs.RTX_PRO_6000

# %% [markdown]
# ## 1. Paste your config.json
#
# Replace the text between the triple quotes with your model's `config.json` (or write
# `models.model_from_hf_config("path/to/config.json")`). The example is Qwen3-30B-A3B, a
# mixture-of-experts model: 128 experts per layer, 8 of them chosen for each token.

# %%
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
model = models.model_from_hf_config(CONFIG_TEXT, name=json.loads(CONFIG_TEXT).get(
    "_name_or_path", "your pasted model"))

print(f"{model.name}: {model.attention_type} attention, {model.n_layers} layers")
print(f"  parameters: {model.n_params:,.0f} ({model.n_params / 1e9:.2f} B); a token passes "
      f"through {model.active_params / 1e9:.2f} B of them")
print(f"  weights in BF16: {units.fmt_bytes(model.weight_bytes, 'GB', 2)}, of which a decode "
      f"step can stream {units.fmt_bytes(model.streamed_weight_bytes, 'GB', 2)}")
print(f"  KV per token: {calc.kv_bytes_per_token(model):,} B")
for note in model.notes:
    print(f"  note: {note}")

# %% [markdown]
# Anything the reader cannot count exactly stops it: an unknown `model_type` or a missing
# field raises an error that names it, and a field that may change sizes but is not understood
# raises a `ConfigFieldWarning`. Defaults a model type applies when a field is absent (Gemma
# ties its embedding table to the output layer, Mistral slides over 4,096 tokens) are listed
# in the notes above.
#
# ## 2. How many requests fit (8.1.2)
#
# The chapter's instance is 32 GiB of the card, of which 12 GiB are left for KV once
# Qwen3-8B's weights and the runtime's workspace are loaded. Your model's weights differ, so
# its KV budget does too; the workspace we keep at the chapter's size. A model whose weights
# do not fit the 32 GiB gets the whole card instead (and one that does not fit the card gets
# no budget at all).

# %%
instance = ch08.INSTANCE_MEM_BYTES
if calc.instance_kv_budget_bytes(model, instance_bytes=instance) <= 0:
    instance = card.mem_bytes
budget = max(0.0, calc.instance_kv_budget_bytes(model, instance_bytes=instance))
print(f"instance {units.fmt_bytes(instance, 'GiB', 2)} - weights "
      f"{units.fmt_bytes(model.weight_bytes, 'GiB', 2)} - workspace -> KV budget "
      f"{units.fmt_bytes(budget, 'GiB', 2)}")

print(f"\n{'request':>18} {'prompt':>7} {'out':>5} {'KV at the end':>14} {'fit':>5}")
for row in calc.kv_capacity_table(model, budget):
    print(f"{row['name']:>18} {row['prompt_tokens']:>7} {row['output_tokens']:>5} "
          f"{units.fmt_bytes(row['final_kv_bytes'], 'MiB', 1):>14} {row['fit']:>5}")

# %% [markdown]
# A sequence's cache grows with its context, except in sliding-window layers, which keep only
# the last window's worth of tokens; a latent-attention model (DeepSeek) keeps one compressed
# vector per layer instead of keys and values per head. Both show up here:

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

# %%
points = calc.roofline_points(model, card, batch=16, context_tokens=2048, prompt_tokens=2048)
for p in points:
    print(f"{p['label']:>38}: {p['intensity_flop_per_byte']:8.1f} FLOP/B, "
          f"{100 * p['fraction_of_peak']:5.1f}% of peak ({p['bound']}-bound)")
plots.roofline_figure(card, points, title=f"{model.name} on the {card.name}").show()

# %% [markdown]
# Under uniform routing, a batch of $b$ tokens over $E$ experts with $r$ chosen per token
# touches $E\,(1-(1-r/E)^b)$ distinct experts per layer. At small batch the weight read grows
# with the batch almost as fast as the batch itself, so the read per output token falls more
# slowly than a dense model's $D_w/b$; once every expert is read, it falls like a dense model's
# again. Real routers are skewed, so fewer experts are touched than this and the catch-up comes
# later. A dense model shows a single line.

# %%
rows = calc.moe_read_curve(model, [1, 2, 4, 8, 16, 32, 64, 128, 256])
if model.is_moe:
    for r in rows[::2]:
        print(f"batch {r['batch']:>3}: {r['experts_touched']:6.1f} of {model.n_experts} experts "
              f"per layer, {units.fmt_bytes(r['weight_read_per_token_bytes'], 'GB', 2)} of "
              f"weights per output token (dense: "
              f"{units.fmt_bytes(r['dense_read_per_token_bytes'], 'GB', 2)})")
plots.moe_read_figure(rows, label=model.name).show()

# %% [markdown]
# ## 4. The sixteen-request comparison (8.6.3)
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
# | bytes read per decode round (weights, touched experts, KV) | B's measured 27.35 ms round, moved by what that table predicts for the new read |
# | verification FLOPs of the draft's rows | the draft's memory, prefill share and 3 tokens per round (a Qwen3-8B draft) |
#
# The round-time table includes a large per-round overhead (about two thirds of a batch-1
# round) that the chapter traces to launching kernels one by one; a model with many more layers launches more kernels, which
# this transfer does not see. The draft column is an assumption: your model needs a draft of
# its own, whose size and acceptance decide scheme D.

# %%
schemes = calc.schemes_for_model(model)
results = calc.compare_schemes(list(schemes.values()), model=model, hardware=card,
                               kv_budget_bytes=budget if budget > 0 else 1.0)
print(f"KV budget {units.fmt_bytes(budget, 'GiB', 2)}, deadline {ch08.DEADLINE_S:g} s")
print(f"{'scheme':>6} {'memory':>10} {'prefill':>8} {'round':>9} {'rounds':>6} {'total':>8}  verdict")
for name, r in results.items():
    verdict = ("fits and finishes" if r.feasible else
               "too little memory" if not r.fits_memory else "misses the deadline")
    print(f"{name:>6} {units.fmt_bytes(r.memory_bytes, 'GiB', 2):>10} {r.prefill_s:7.2f}s "
          f"{r.round_ms:7.2f}ms {r.rounds:>6} {r.total_s:7.2f}s  {verdict}")
best = calc.best_scheme(list(schemes.values()), model=model, hardware=card,
                        kv_budget_bytes=budget if budget > 0 else 1.0)
print(f"\nleast GPU time per on-time answer: {best or 'no scheme meets both limits'}")

# %% [markdown]
# ## Try this
#
# - Paste a dense model's config (Llama, Qwen2.5, Mistral) and compare its roofline points with
#   the mixture-of-experts example: which one gains more from batch 1 to batch 16, and why?
# - In section 1, set `model = models.load("gemma-2-2b")` (every second layer keeps 4,096
#   tokens) or `models.load("gemma-3-1b-it")` (five layers in six keep 512) instead of reading
#   the pasted text, and look at the KV at 32K tokens: how much of the cache do the
#   sliding-window layers save?
# - `models.load("deepseek-v3")` keeps one compressed latent vector per layer and token instead
#   of keys and values per head: compare its KV per token with Qwen3-8B's (8.4.2 points to
#   this comparison).
# - In section 4, change the tokens per round of scheme D (`schemes["D"].with_(tokens_per_round=2)`)
#   to see how much the comparison rests on the draft's acceptance.
