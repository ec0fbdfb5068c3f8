"""Figure builders: results in, plotly (interactive) or matplotlib (static) figures out.

Conventions: every axis has a label with its unit; figures are deterministic (no random
colours, no timestamps) so that stored notebook outputs compare under nbval; a builder
returns a figure and never calls ``show()``. plotly/matplotlib are imported inside the
topic modules under ``companion.figures``, never by ``import companion``.
"""

from __future__ import annotations

from companion.figures.ch08_lifecycle import (
    request_timeline_figure, memory_budget_figure, kv_capacity_figure)
from companion.figures.ch08_batching import (
    read_volume_figure, rom_weights_figure, decode_step_figure, lora_capacity_figure,
    schedule_gantt_figure, pair_area_figure, chunk_cost_figure, graph_padding_figure,
    token_budget_figure, budget_sweep_figure)
from companion.figures.ch08_kv import (
    PoolSnapshot, snapshot_pool, block_pool_traces, block_pool_legend_html, block_pool_layout,
    block_pool_figure, block_pool_steps_figure, prefix_tree_figure, pool_usage_figure,
    retention_bars_traces, retention_bars_figure, SEQUENCE_COLORS)
from companion.figures.ch08_compression import (
    byte_layout_traces, byte_layout_figure, bits_per_value_figure, memory_stack_traces,
    memory_stack_layout, memory_stack_figure, interval_fit_figure, LAYOUT_COLORS)
from companion.figures.ch08_speculative import (
    greedy_verification_figure, rejection_sampling_figure, expected_output_figure,
    draft_cost_figure, draft_mode_figure, draft_length_figure)
from companion.figures.ch08_serving import (
    admission_figure, littles_law_figure, goodput_figure, scheme_plane_figure,
    scheme_time_figure, amdahl_figure, energy_per_result_figure)
from companion.figures.ch17_memory import (
    memory_hierarchy_traces, memory_hierarchy_layout, memory_hierarchy_figure,
    kv_by_context_figure, attention_variants_figure, context_step_traces, context_step_figure,
    gpu_memory_traces, allocator_traces, allocator_figure, paged_tradeoff_traces,
    paged_tradeoff_layout, SEQ_COLORS)
from companion.figures.ch17_roofline import (
    roofline_traces, roofline_layout, roofline_figure, request_budget_traces,
    hol_timeline_traces, hol_timeline_layout, hol_timeline_figure, ROOFLINE_X_RANGE,
    ROOFLINE_Y_RANGE)
from companion.figures.ch17_serving import (
    batch_slots, slot_gantt_traces, batching_gantt_figure, chunk_trade_traces,
    chunk_trade_figure, tp_step_traces, tp_step_figure, pipeline_grid, pipeline_traces,
    pipeline_figure, placement_traces, placement_figure, pool_sizing_traces,
    pool_sizing_figure, kv_transfer_figure, routing_traces, routing_figure, sm_share_figure,
    utilization_traces, utilization_figure, quantization_figure, speculative_traces,
    speculative_figure, batch_window_traces, batch_window_figure, SERVING_COLORS)
from companion.explorers.lab import (
    measured_roofline, measured_step_time, measured_utilization, measured_step_vs_bytes)

__all__ = [
    "request_timeline_figure", "memory_budget_figure", "kv_capacity_figure",
    "read_volume_figure", "rom_weights_figure", "decode_step_figure", "lora_capacity_figure",
    "schedule_gantt_figure", "pair_area_figure", "chunk_cost_figure", "graph_padding_figure",
    "token_budget_figure", "budget_sweep_figure", "PoolSnapshot", "snapshot_pool",
    "block_pool_traces", "block_pool_legend_html", "block_pool_layout", "block_pool_figure",
    "block_pool_steps_figure", "prefix_tree_figure", "pool_usage_figure",
    "retention_bars_traces", "retention_bars_figure", "SEQUENCE_COLORS", "byte_layout_traces",
    "byte_layout_figure", "bits_per_value_figure", "memory_stack_traces",
    "memory_stack_layout", "memory_stack_figure", "interval_fit_figure", "LAYOUT_COLORS",
    "greedy_verification_figure", "rejection_sampling_figure", "expected_output_figure",
    "draft_cost_figure", "draft_mode_figure", "draft_length_figure", "admission_figure",
    "littles_law_figure", "goodput_figure", "scheme_plane_figure", "scheme_time_figure",
    "amdahl_figure", "energy_per_result_figure", "memory_hierarchy_traces",
    "memory_hierarchy_layout", "memory_hierarchy_figure", "kv_by_context_figure",
    "attention_variants_figure", "context_step_traces", "context_step_figure",
    "gpu_memory_traces", "allocator_traces", "allocator_figure", "paged_tradeoff_traces",
    "paged_tradeoff_layout", "SEQ_COLORS", "roofline_traces", "roofline_layout",
    "roofline_figure", "request_budget_traces", "hol_timeline_traces", "hol_timeline_layout",
    "hol_timeline_figure", "ROOFLINE_X_RANGE", "ROOFLINE_Y_RANGE", "batch_slots",
    "slot_gantt_traces", "batching_gantt_figure", "chunk_trade_traces", "chunk_trade_figure",
    "tp_step_traces", "tp_step_figure", "pipeline_grid", "pipeline_traces", "pipeline_figure",
    "placement_traces", "placement_figure", "pool_sizing_traces", "pool_sizing_figure",
    "kv_transfer_figure", "routing_traces", "routing_figure", "sm_share_figure",
    "utilization_traces", "utilization_figure", "quantization_figure", "speculative_traces",
    "speculative_figure", "batch_window_traces", "batch_window_figure", "SERVING_COLORS",
    "measured_roofline", "measured_step_time", "measured_utilization", "measured_step_vs_bytes",
]
