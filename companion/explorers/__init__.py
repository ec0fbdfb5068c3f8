"""One module per topic: its figure builders and its slider panels together.

  ch08_lifecycle    8.1: request timeline, memory budget, KV capacity
  ch08_batching     8.2: read volume, decode step, chunked prefill, padding, token budget, schedules
  ch08_kv           8.3: block pools, sharing, copy-on-write, preemption, prefix cache, retention
  ch08_compression  8.4: quantised weights and KV, compressed reads, offload, retries
  ch08_speculative  8.5: greedy verification, acceptance, draft length
  ch08_serving      8.6: Little's law, goodput, schemes A-E, Amdahl
  ch17_memory       17 §1, §4, §5: memory hierarchy, KV sizing, PagedAttention
  ch17_roofline     17 §2, §3: roofline, request budget, head-of-line blocking
  ch17_batching     17 §6: static vs continuous batching, chunked prefill
  ch17_parallelism  17 §7, §8: tensor/pipeline parallelism, placement, pools, routing
  ch17_levers       17 §9, §10 and the interview: MBU/MFU, quantization, speculation, batch size
  lab               the lab notebook's measured-vs-predicted figures

  moe               mixture-of-experts read volume against a dense model

``base`` holds Panel/Control/View, ``common`` the figure helpers and ``presets`` the panel
presets several modules share; ``static`` and ``static_image`` write the static explorer and
the PNG that a stored output carries for readers without a kernel.
Numbers a readout shows come from ``companion.calc``/``companion.sim``; scenarios live in
``companion.sim``, text tables in ``companion.tables``. Notebooks import figures through
``companion.plots`` and panels through ``companion.widgets``.
"""

from companion.explorers.static_image import use_in_notebooks as _use_png_renderer

# only while `make execute` writes outputs for readers without JavaScript (a PNG beside each
# plotly figure); otherwise this does nothing and imports nothing
_use_png_renderer()
