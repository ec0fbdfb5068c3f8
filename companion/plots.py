"""Figure builders: results in, plotly figures out (a façade over ``companion.explorers``).

Each name is imported from the explorer module of the notebook that draws it
(``companion.explorers.ch08_3_kv_cache`` for ``08_3_kv_cache``), where the panels of
``companion.widgets`` draw with the same ``*_traces`` helpers; a few scenario helpers the
notebooks call as ``plots.X`` come from ``companion.sim``.

Conventions: every axis has a label with its unit; figures are deterministic (no random
colours, no timestamps) so that stored notebook outputs compare under nbval; a builder
returns a figure and never calls ``show()``. plotly is imported on first use inside the
explorer modules, never by ``import companion``.
"""

from __future__ import annotations

from companion.explorers.ch08_1_request_lifecycle import (
    request_timeline_figure, memory_budget_figure, kv_capacity_figure)
from companion.explorers.ch08_2_batching_and_scheduling import (
    read_volume_figure, rom_weights_figure, decode_step_figure, lora_capacity_figure,
    schedule_gantt_figure, pair_area_figure, chunk_cost_figure, graph_padding_figure,
    token_budget_figure, budget_sweep_figure)
from companion.explorers.ch08_3_kv_cache import (
    block_pool_traces, block_pool_legend_html, block_pool_layout, block_pool_figure,
    block_pool_steps_figure, prefix_tree_figure, pool_usage_figure, retention_bars_traces,
    retention_bars_figure, SEQUENCE_COLORS)
from companion.explorers.ch08_4_compression_and_offloading import (
    byte_layout_traces, byte_layout_figure, bits_per_value_figure, memory_stack_traces,
    memory_stack_layout, memory_stack_figure, interval_fit_figure, LAYOUT_COLORS,
    precision_grid_traces, precision_grid_figure)
from companion.explorers.ch08_5_speculative_decoding import (
    greedy_verification_figure, expected_output_figure, draft_cost_figure, draft_mode_figure,
    round_stages_figure)
from companion.explorers.ch08_6_load_and_configuration import (
    littles_law_figure, goodput_figure, scheme_plane_figure, scheme_time_figure, amdahl_figure,
    energy_per_result_figure)
from companion.explorers.ch17_01_memory_hierarchy import (
    memory_hierarchy_traces, memory_hierarchy_layout, memory_hierarchy_figure)
from companion.explorers.ch17_02_roofline import (
    roofline_traces, roofline_layout, roofline_figure, ROOFLINE_X_RANGE, ROOFLINE_Y_RANGE)
from companion.explorers.ch17_03_prefill_vs_decode import (
    request_budget_traces, hol_timeline_traces, hol_timeline_layout, hol_timeline_figure,
    slo_cdf_traces, slo_cdf_layout)
from companion.explorers.ch17_04_kv_sizing import (
    kv_by_context_figure, attention_variants_figure, context_step_traces, context_step_figure,
    gpu_memory_traces)
from companion.explorers.ch17_05_paged_attention import (
    allocator_traces, allocator_figure, paged_tradeoff_traces, paged_tradeoff_layout)
from companion.explorers.ch17_06_batching_strategies import (
    batch_slots, slot_gantt_traces, batching_gantt_figure, chunk_trade_traces)
from companion.explorers.ch17_07_parallelism import (
    tp_step_traces, tp_step_figure, pipeline_traces, pipeline_figure, placement_traces,
    placement_figure)
from companion.explorers.ch17_08_disaggregation_and_routing import (
    pool_sizing_traces, kv_transfer_figure, routing_traces, KV_LINKS,
    disaggregation_diagram_traces)
from companion.explorers.ch17_09_measuring import (
    sm_share_figure, utilization_traces, kernel_timeline_traces, speed_of_light_traces)
from companion.explorers.ch17_10_levers import (
    quantization_figure, speculative_traces)
from companion.explorers.ch17_11_interview_questions import (
    batch_window_traces)
from companion.explorers.lab import (
    measured_roofline, measured_step_time, measured_utilization, measured_step_vs_bytes)
from companion.explorers.moe import (
    moe_read_traces, moe_read_figure)
from companion.sim.kv_scenarios import (
    PoolSnapshot, snapshot_pool)
from companion.formulas.parallelism import (
    pipeline_grid)
from companion.explorers.common import (
    SERVING_COLORS, SEQ_COLORS)

__all__ = [
    "read_volume_figure", "rom_weights_figure", "decode_step_figure", "lora_capacity_figure",
    "schedule_gantt_figure", "pair_area_figure", "chunk_cost_figure", "graph_padding_figure",
    "token_budget_figure", "budget_sweep_figure", "byte_layout_traces", "byte_layout_figure",
    "bits_per_value_figure", "memory_stack_traces", "memory_stack_layout",
    "memory_stack_figure", "interval_fit_figure", "LAYOUT_COLORS", "precision_grid_traces",
    "precision_grid_figure", "block_pool_traces",
    "block_pool_legend_html", "block_pool_layout", "block_pool_figure",
    "block_pool_steps_figure", "prefix_tree_figure", "pool_usage_figure",
    "retention_bars_traces", "retention_bars_figure", "SEQUENCE_COLORS",
    "request_timeline_figure", "memory_budget_figure", "kv_capacity_figure",
    "littles_law_figure", "goodput_figure", "scheme_plane_figure", "scheme_time_figure",
    "amdahl_figure", "energy_per_result_figure", "greedy_verification_figure",
    "expected_output_figure", "draft_cost_figure", "draft_mode_figure", "round_stages_figure",
    "batch_slots",
    "slot_gantt_traces", "batching_gantt_figure", "chunk_trade_traces", "sm_share_figure",
    "utilization_traces", "quantization_figure", "speculative_traces", "batch_window_traces",
    "kernel_timeline_traces", "speed_of_light_traces",
    "memory_hierarchy_traces", "memory_hierarchy_layout", "memory_hierarchy_figure",
    "kv_by_context_figure", "attention_variants_figure", "context_step_traces",
    "context_step_figure", "gpu_memory_traces", "allocator_traces", "allocator_figure",
    "paged_tradeoff_traces", "paged_tradeoff_layout", "SEQ_COLORS", "tp_step_traces",
    "tp_step_figure", "pipeline_traces", "pipeline_figure", "placement_traces",
    "placement_figure", "pool_sizing_traces", "kv_transfer_figure", "routing_traces",
    "KV_LINKS", "disaggregation_diagram_traces",
    "roofline_traces", "roofline_layout", "roofline_figure", "request_budget_traces",
    "hol_timeline_traces", "hol_timeline_layout", "hol_timeline_figure", "ROOFLINE_X_RANGE",
    "ROOFLINE_Y_RANGE", "slo_cdf_traces", "slo_cdf_layout",
    "measured_roofline", "measured_step_time", "measured_utilization",
    "measured_step_vs_bytes", "moe_read_traces", "moe_read_figure", "PoolSnapshot",
    "snapshot_pool", "pipeline_grid", "SERVING_COLORS",
]
