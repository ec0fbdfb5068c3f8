"""One module per notebook, named after it: its figure builders and its slider panels together.

  ch08_1_request_lifecycle            8.1: request timeline, memory budget, KV capacity
  ch08_2_batching_and_scheduling      8.2: read volume, decode step, chunked prefill, padding,
                                      token budget, schedules
  ch08_3_kv_cache                     8.3: block pools, sharing, copy-on-write, preemption,
                                      prefix cache, retention
  ch08_4_compression_and_offloading   8.4: quantised weights and KV, compressed reads, offload,
                                      retries
  ch08_5_speculative_decoding         8.5: greedy verification, acceptance, draft length
  ch08_6_load_and_configuration       8.6: Little's law, goodput, schemes A-E, Amdahl
  ch17_01_memory_hierarchy            17 §1: the memory pyramid of a card
  ch17_02_roofline                    17 §2: the roofline
  ch17_03_prefill_vs_decode           17 §3: request budget, head-of-line blocking, SLO
  ch17_04_kv_sizing                   17 §4: KV sizing, attention designs, step vs context
  ch17_05_paged_attention             17 §5: the allocator, what PagedAttention buys
  ch17_06_batching_strategies         17 §6: static vs continuous batching, chunked prefill
  ch17_07_parallelism                 17 §7: tensor/pipeline parallelism, placement
  ch17_08_disaggregation_and_routing  17 §8: prefill/decode pools, KV transfer, routing
  ch17_09_measuring                   17 §9: SM share, MBU/MFU, kernel timeline, speed of light
  ch17_10_levers                      17 §10: quantization, speculation
  ch17_11_interview_questions         the interview: the batch-size question
  lab                                 the lab notebook's measured-vs-predicted figures
  moe                                 byo_model's mixture-of-experts read volume against dense
  block_pool                          8.3's block tables and physical pool (the BlockManager
                                      drawing its panels share)

Each section module names its section once, as ``SECTION`` ("8.3", "17.9"); its public names
carry ``@serves`` marks within it (``companion.serves``), which ``companion.where()`` reads.
``base`` holds Panel/Control/View, ``common`` the figure helpers and ``presets``
the panel presets several modules share; ``static`` and ``static_image`` write the static
explorer and the PNG that a stored output carries for readers without a kernel (the PNG is
plotly's own static export: plotly.js in headless Chromium, through kaleido). Colours,
palettes and the plotly template are ``companion.theme``'s.
Numbers a readout shows come from ``companion.calc``/``companion.sim``; scenarios live in
``companion.sim``, text tables in ``companion.tables``. Notebooks import figures through
``companion.plots`` and panels through ``companion.widgets``.
"""

from companion.explorers.static_image import use_in_notebooks as _use_png_renderer

# only while `make execute` writes outputs for readers without JavaScript (a PNG beside each
# plotly figure); otherwise this does nothing and imports nothing
_use_png_renderer()
