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

from companion.explorers.ch08_2_batching_and_scheduling import (
    read_volume_figure, rom_weights_figure, decode_step_figure, lora_capacity_figure,
    schedule_gantt_figure, pair_area_figure, chunk_cost_figure)
from companion.explorers.budget_figures import (
    graph_padding_figure, token_budget_figure, budget_sweep_figure)
from companion.explorers.ch08_4_compression_and_offloading import (
    byte_layout_figure, bits_per_value_figure, memory_stack_figure, interval_fit_figure,
    precision_grid_figure)
from companion.explorers.block_pool import block_pool_figure, block_pool_steps_figure
from companion.explorers.ch08_3_kv_cache import (
    prefix_tree_figure, pool_usage_figure, retention_bars_figure)
from companion.explorers.ch08_1_request_lifecycle import (
    request_timeline_figure, memory_budget_figure, kv_capacity_figure)
from companion.explorers.ch08_6_load_and_configuration import (
    littles_law_figure, goodput_figure, scheme_plane_figure, scheme_time_figure, amdahl_figure,
    energy_per_result_figure, queueing_figure, batch_rounds_figure)
from companion.explorers.ch08_5_speculative_decoding import (
    greedy_verification_figure, expected_output_figure, draft_cost_figure, draft_mode_figure,
    round_stages_figure)
from companion.explorers.ch17_06_batching_strategies import (
    batching_gantt_figure)
from companion.explorers.ch17_09_measuring import (
    sm_share_figure)
from companion.explorers.ch17_10_levers import (
    quantization_figure, lever_speedup_figure)
from companion.explorers.ch17_01_memory_hierarchy import (
    memory_hierarchy_figure)
from companion.explorers.ch17_04_kv_sizing import (
    kv_by_context_figure, attention_variants_figure, context_step_figure)
from companion.explorers.ch17_05_paged_attention import (
    allocator_figure)
from companion.explorers.ch17_07_parallelism import (
    tp_step_figure, pipeline_figure, placement_figure)
from companion.explorers.ch17_08_disaggregation_and_routing import (
    kv_transfer_figure)
from companion.explorers.ch17_02_roofline import (
    roofline_figure)
from companion.explorers.ch17_03_prefill_vs_decode import (
    hol_timeline_figure)
from companion.explorers.lab import (
    measured_roofline, measured_step_time, measured_utilization, measured_step_vs_bytes)
from companion.explorers.moe import (
    moe_read_figure)
from companion.sim.kv_scenarios import (
    snapshot_pool)
from companion.formulas.parallelism import (
    pipeline_grid)

__all__ = [
    "read_volume_figure", "rom_weights_figure", "decode_step_figure", "lora_capacity_figure",
    "schedule_gantt_figure", "pair_area_figure", "chunk_cost_figure", "graph_padding_figure",
    "token_budget_figure", "budget_sweep_figure", "byte_layout_figure", "bits_per_value_figure",
    "memory_stack_figure", "interval_fit_figure", "precision_grid_figure", "block_pool_figure",
    "block_pool_steps_figure", "prefix_tree_figure", "pool_usage_figure", "retention_bars_figure",
    "request_timeline_figure", "memory_budget_figure", "kv_capacity_figure", "littles_law_figure",
    "goodput_figure", "scheme_plane_figure", "scheme_time_figure", "amdahl_figure",
    "energy_per_result_figure", "greedy_verification_figure", "expected_output_figure",
    "draft_cost_figure", "draft_mode_figure", "round_stages_figure", "batching_gantt_figure",
    "sm_share_figure", "quantization_figure", "lever_speedup_figure", "memory_hierarchy_figure", "kv_by_context_figure",
    "attention_variants_figure", "context_step_figure", "allocator_figure", "tp_step_figure",
    "pipeline_figure", "placement_figure", "kv_transfer_figure", "roofline_figure",
    "hol_timeline_figure", "measured_roofline", "measured_step_time", "measured_utilization",
    "measured_step_vs_bytes", "moe_read_figure", "snapshot_pool", "pipeline_grid",
    "queueing_figure", "batch_rounds_figure",
]
