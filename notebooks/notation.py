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
# # Notation: one letter, one meaning
#
# The two chapters were written separately, and each borrows letters freely: the same quantity
# can appear under two names, and one letter can stand for two quantities a few pages apart.
# The notebooks of this companion use a single set of symbols instead, listed below. When you
# meet a letter in any notebook's formula, it means what this page says, in every section.
#
# Each row gives the symbol, what it stands for, the unit the companion computes it in, the
# section that first needs it, and the notebook where it is introduced. Inside the `companion`
# package every quantity is kept in base units (bytes, seconds, FLOP, FLOP/s, bytes/s);
# GiB, ms or TFLOP/s appear only when a number is shown to you.
#
# A subscript names a variant rather than a new quantity: $T_v$ is a time (the verification
# pass of a speculative round), $g_\text{prefill}$ is a GPU count (the prefill pool). Where a
# formula needs a symbol that is not here, the notebook defines it in the sentence next to it.

# %% [markdown]
# ## The symbols
#
# Rows are ordered by the section that introduces them, Chapter 8 first.
#
# | symbol | meaning | unit | introduced | notebook |
# |---|---|---|---|---|
# | $n$ | prompt (input) tokens of a request | tokens | 8.1.1 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $G$ | output tokens a request generates | tokens | 8.1.1 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $T$ | end-to-end time of one request | s | 8.1.1, 17 §3 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $N$ | parameters of the model, all of them | parameters | 8.1.2, 17 §2 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $D_w$ | bytes of weights one decode step streams from memory | bytes | 8.1.2 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $k$ | KV bytes one token of context keeps, summed over layers | bytes/token | 8.1.2 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $n_\text{layers}$, $n_\text{kv}$, $d_\text{head}$ | transformer layers; KV heads per layer; size of one head | - | 8.1.2 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $M_w$, $M_{KV}$, $M_a$, $M_u$, $C$ | memory for weights, the KV pool, activations, other buffers; the capacity they must fit | bytes | 8.1.2 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | TTFT, ITL | time to the first token; interval between two output tokens | s | 8.1.3, 17 §3 | [8.1](ch08_inference_optimization/08_1_request_lifecycle.ipynb) |
# | $L$ | context a sequence holds in the cache (its live KV) | tokens | 8.2.1 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $b$ | batch: sequences advanced by one decode step | sequences | 8.2.1 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $b_\text{KV}$ | smallest batch whose KV reads match the weight read, $\lceil D_w/(Lk)\rceil$ | sequences | 8.2.1 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $F$ | FLOPs of one sequence's decode step | FLOP | 8.2.1 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $R$ | rank of a LoRA adapter | - | 8.2.1 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $T_r$, $T_v$, $T_d$, ... | the time of one round, one verification, one draft, ... (the subscript says which) | s | 8.2.2, 8.5 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $c$, $h$ | tokens a round adds; tokens already cached before that round | tokens | 8.2.3 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $\text{pairs}(c, h)$ | causal query-key pairs of a chunk of $c$ tokens on $h$ cached ones | pairs | 8.2.3 | [8.2](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) |
# | $p$ | token slots in one KV block (the page size) | tokens | 8.3.1 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $n_s$ | prompt tokens that several requests share (a common prefix) | tokens | 8.3.2 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $n_\text{br}$, $B_s$, $B_p$ | branches; blocks of their shared prefix; private blocks per branch | -, blocks | 8.3.2 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $n_\text{match}$, $s_i$ | matched prefix length; positions of recurrent-state snapshots | tokens | 8.3.3 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $\rho$, $V$ | probability that a kept prefix is used again; expected net saving of keeping it | -, s | 8.3.4 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $T_\text{rec}$, $T_f$, $T_m$ | time to recompute a prefix; to fetch it back; to keep it (write it out) | s | 8.3.4 | [8.3](ch08_inference_optimization/08_3_kv_cache.ipynb) |
# | $N_a$ | parameters a token activates in a mixture-of-experts model | parameters | 8.4.1 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $E$, $r$ | experts in one MoE layer; experts each token is sent to (top-$r$) | experts | 8.4.1 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $W$ | length of a sliding attention window | tokens | 8.4.2 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $n_\text{grp}$, $w$, $M_\text{meta}$ | values in one quantization group; bits of each value's code; metadata bytes per group (scale, offset) | -, bits, bytes | 8.4.3 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $D_\text{off}$, $D$ | weight or KV bytes kept off the card and copied in every round; bytes sent over a link | bytes | 8.4.5 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $\beta_\text{link}$ | bandwidth of the link between two memories (PCIe, NVLink, network) | bytes/s | 8.4.5, 17 §7-§8 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $f_c$, $R_\text{dec}$ | size after compression as a fraction of the original; decompression rate | -, bytes/s | 8.4.5 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $P_\text{ok}$ | probability that one attempt succeeds (an assumption for exploring retries) | - | 8.4.4 | [8.4](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) |
# | $m$ | draft length: tokens proposed in one round | tokens | 8.5 | [8.5](ch08_inference_optimization/08_5_speculative_decoding.ipynb) |
# | $q(x)$, $p_\theta(x)$ | the draft model's and the target model's next-token distributions | - | 8.5.1 | [8.5](ch08_inference_optimization/08_5_speculative_decoding.ipynb) |
# | $a_i$, $\alpha$ | probability that draft position $i$ is accepted given the earlier ones were; one acceptance rate for all positions | - | 8.5.2 | [8.5](ch08_inference_optimization/08_5_speculative_decoding.ipynb) |
# | $X$, $\mathbb{E}[X]$ | tokens one speculative round emits; their expected number | tokens | 8.5.2 | [8.5](ch08_inference_optimization/08_5_speculative_decoding.ipynb) |
# | $X_r$ | tokens round $r$ actually emitted (one draw of $X$) | tokens | 8.5.2 | [8.5](ch08_inference_optimization/08_5_speculative_decoding.ipynb) |
# | $\lambda$ | rate at which requests arrive | requests/s | 8.6.1 | [8.6](ch08_inference_optimization/08_6_load_and_configuration.ipynb) |
# | $n_\text{new}$ | input tokens of a request that are not already cached | tokens | 8.6.1 | [8.6](ch08_inference_optimization/08_6_load_and_configuration.ipynb) |
# | $T_\text{obs}$, $\bar n_\text{sys}$ | length of an observation window; mean number of requests in the system ($\lambda \bar T$) | s, requests | 8.6.1 | [8.6](ch08_inference_optimization/08_6_load_and_configuration.ipynb) |
# | $\kappa_i$, $\tau_i$ | 1 if request $i$ was answered correctly; 1 if it finished on time | - | 8.6.2 | [8.6](ch08_inference_optimization/08_6_load_and_configuration.ipynb) |
# | $R_\text{good}$, $R_\text{done}$ | requests per second that were correct and on time; completed per second | requests/s | 8.6.2 | [8.6](ch08_inference_optimization/08_6_load_and_configuration.ipynb) |
# | $\pi$ | peak dense compute of one card | FLOP/s | 17 §1-§2 | [17 §2](ch17_performance/17_02_roofline.ipynb) |
# | $\beta$ | memory bandwidth of one card | bytes/s | 17 §1-§2 | [17 §2](ch17_performance/17_02_roofline.ipynb) |
# | $I$, $I^\star$ | arithmetic intensity; the ridge point $I^\star = \pi/\beta$ | FLOP/byte | 17 §2 | [17 §2](ch17_performance/17_02_roofline.ipynb) |
# | $s$ | bytes that store one parameter (2 for BF16, 1 for FP8) | bytes | 17 §4 | [17 §4](ch17_performance/17_04_kv_sizing.ipynb) |
# | $G_i$ | output tokens of request $i$ in a static batch (the longest decides when it is released) | tokens | 17 §6 | [17 §6](ch17_performance/17_06_batching_strategies.ipynb) |
# | $g$ | GPUs in one tensor-parallel group (the TP degree) | GPUs | 17 §7 | [17 §7](ch17_performance/17_07_parallelism.ipynb) |
# | $S$, $M$ | pipeline stages; microbatches in flight | - | 17 §7 | [17 §7](ch17_performance/17_07_parallelism.ipynb) |
# | $d_\text{model}$ | width of the hidden state (the activation vector one token carries between layers) | values | 17 §7 | [17 §7](ch17_performance/17_07_parallelism.ipynb) |
# | $n_\text{coll}$, $T_\text{floor}$ | collectives per step ($2\,n_\text{layers}$ for tensor parallelism); fixed latency of one collective | -, s | 17 §7 | [17 §7](ch17_performance/17_07_parallelism.ipynb) |
# | $\mu_p$, $\mu_d$ | prefill tokens/s and decode tokens/s one GPU group sustains | tokens/s | 17 §8 | [17 §8](ch17_performance/17_08_disaggregation_and_routing.ipynb) |
# | $g_\text{prefill}$, $g_\text{decode}$ | GPU groups in the prefill pool and in the decode pool | groups | 17 §8 | [17 §8](ch17_performance/17_08_disaggregation_and_routing.ipynb) |
# | $T_\text{ship}$ | time to move a request's KV from the prefill pool to the decode pool, $L k / \beta_\text{link}$ | s | 17 §8 | [17 §8](ch17_performance/17_08_disaggregation_and_routing.ipynb) |
# | $n_1$, $\Delta n$, $L_t$ | tokens of a conversation's first turn; tokens each later turn adds; context at turn $t$ | tokens | 17 §8 | [17 §8](ch17_performance/17_08_disaggregation_and_routing.ipynb) |
# | $u$ | utilization, as a fraction: MBU (of bandwidth) or MFU (of compute) | - | 17 §9 | [17 §9](ch17_performance/17_09_measuring.ipynb) |

# %% [markdown]
# ## Habits that keep the letters apart
#
# - **Tokens are never $T$.** $T$ is always a time; a count of tokens gets $n$, $G$, $L$, $c$,
#   $h$, $m$ or $W$, so a formula such as $T = \mathrm{TTFT} + (G-1)\,\mathrm{ITL}$ reads
#   without a second look.
# - **One batch letter.** A batch is $b$ everywhere, including Chapter 17's formulas; $b_\text{KV}$
#   is a particular batch, not another quantity.
# - **Per-sequence cache bytes are a product.** The KV a sequence holds is written $L\,k$
#   (context times bytes per token), never as a new letter.
# - **Compute is $\pi$, parameters are $N$.** Peak FLOP/s and the parameter count both begin
#   with P in English; here they get different letters so that $2N/\pi$ (the compute time of one
#   token at batch 1) cannot be misread.
# - **GPUs are $g$.** A tensor-parallel degree, a pool of prefill cards or a pool of decode
#   cards is $g$ with a subscript ($g_\text{prefill}$), or said in words.
# - **Mean values get a bar.** The mean prompt of a workload is $\bar n$, the mean output
#   $\bar G$.
#
# Back to [Start here](START_HERE.ipynb), or to the overviews of
# [Chapter 8](ch08_inference_optimization/08_0_overview.ipynb) and
# [Chapter 17](ch17_performance/17_00_overview.ipynb).
