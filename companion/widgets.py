"""Slider panels: parameters -> calc/sim -> plots, for the notebooks' explorers.

Each panel's ``update(**params)`` is a plain function that a test can call headless across
its slider ranges; ``show()`` builds the ipywidgets UI (sliders, a reset-to-the-chapter's-setting
button, a readout and a live plotly figure, ``companion.explorers.figure_widget``). ipywidgets
is imported only by the topic modules under ``companion.explorers``, never by
``import companion``.

A façade: each panel is imported from the explorer module of its topic; the scenario, table
and formula helpers the notebooks call as ``widgets.X`` are imported from their homes in
``companion.sim``, ``companion.tables`` and ``companion.formulas``.
"""

from __future__ import annotations

from companion.explorers.ch08_batching import (
    DecodeBatchPanel, ChunkedPrefillPanel, TokenBudgetPanel, SchedulePanel, BudgetSweepPanel,
    SWEEP_BUDGETS)
from companion.explorers.ch08_compression import (
    QuantizedFitPanel, CompressedReadPanel, OffloadPanel, CompressTransferPanel,
    RetryCostPanel, PrecisionGridPanel)
from companion.explorers.ch08_kv import (
    PagingPanel, BranchSharingPanel, SharedPrefixCapacityPanel, SnapshotSpacingPanel,
    ContextOrganisationPanel, RetentionPanel)
from companion.explorers.ch08_lifecycle import (
    KVCapacityPanel, RequestTimelinePanel, MemoryBudgetPanel)
from companion.explorers.ch08_serving import (
    AdmissionPanel, SchemePanel, AmdahlPanel, SCHEME_SETS, AMDAHL_FRACTIONS)
from companion.explorers.ch08_speculative import (
    GreedyVerificationPanel, RejectionSamplingPanel, SpeculativeLatencyPanel, DraftLengthPanel,
    RoundStagesPanel)
from companion.explorers.ch17_batching import (
    BatchingTracePanel, ChunkSizePanel)
from companion.explorers.ch17_levers import (
    UtilizationPanel, SpeculativeLeverPanel, BatchSizePanel, KernelTimelinePanel,
    SpeedOfLightPanel)
from companion.explorers.ch17_memory import (
    MemoryHierarchyPanel, KVSizingPanel, PagedKVPanel)
from companion.explorers.ch17_parallelism import (
    TensorParallelPanel, PipelineBubblePanel, PlacementPanel, PoolSizingPanel, KVRoutingPanel,
    DisaggregationDiagramPanel)
from companion.explorers.ch17_roofline import (
    RooflinePanel, RequestBudgetPanel, HeadOfLinePanel, SLOPanel)
from companion.sim.scenarios import (
    timeline_scenario, stalled_interval_positions, chapter_schedules, batching_trace_requests,
    batching_trace, itl_tail_trace, CH17_STATIC_BATCH, CH17_STATIC_SHORTEST,
    CH17_STATIC_LONGEST)
from companion.sim.kv_scenarios import (
    grow_sequences, copy_on_write_steps, branch_sharing_pool, branch_sharing_steps,
    decode_with_preemption, multi_turn_inputs, replay_prefix_cache, allocator_demo,
    ALLOCATOR_DEMO_SEQUENCES)
from companion.sim.speculative import (
    greedy_example, VERIFICATION_WORDS, speculative_check)
from companion.tables import (
    decision_table_text, decision_table_markdown, levers_text, mechanism_map_text, cheat_sheet_text)
from companion.formulas.batching import (
    chapter_batch_sweep, SHORT_REQUEST_S)
from companion.formulas.performance import (
    chunk_trade_sweep)
from companion.formulas.parallelism import (
    tp_layout_rows, placement_model, placement_candidates)
from companion.formulas.serving import (
    chapter_schemes)

__all__ = [
    "DecodeBatchPanel", "ChunkedPrefillPanel", "TokenBudgetPanel", "SchedulePanel",
    "BudgetSweepPanel", "SWEEP_BUDGETS", "QuantizedFitPanel", "CompressedReadPanel",
    "OffloadPanel", "CompressTransferPanel", "RetryCostPanel", "PrecisionGridPanel", "PagingPanel",
    "BranchSharingPanel", "SharedPrefixCapacityPanel", "SnapshotSpacingPanel",
    "ContextOrganisationPanel",
    "RetentionPanel", "KVCapacityPanel", "RequestTimelinePanel", "MemoryBudgetPanel",
    "AdmissionPanel", "SchemePanel", "AmdahlPanel", "SCHEME_SETS", "AMDAHL_FRACTIONS",
    "GreedyVerificationPanel", "RejectionSamplingPanel", "SpeculativeLatencyPanel",
    "DraftLengthPanel", "RoundStagesPanel", "BatchingTracePanel", "ChunkSizePanel",
    "UtilizationPanel",
    "SpeculativeLeverPanel", "BatchSizePanel", "MemoryHierarchyPanel", "KVSizingPanel",
    "PagedKVPanel", "TensorParallelPanel", "PipelineBubblePanel", "PlacementPanel",
    "PoolSizingPanel", "KVRoutingPanel", "DisaggregationDiagramPanel", "KernelTimelinePanel",
    "SpeedOfLightPanel", "RooflinePanel", "RequestBudgetPanel",
    "HeadOfLinePanel", "SLOPanel", "timeline_scenario", "stalled_interval_positions",
    "chapter_schedules",
    "batching_trace_requests", "batching_trace", "itl_tail_trace", "CH17_STATIC_BATCH",
    "CH17_STATIC_SHORTEST", "CH17_STATIC_LONGEST", "grow_sequences", "copy_on_write_steps",
    "branch_sharing_pool", "branch_sharing_steps", "decode_with_preemption",
    "multi_turn_inputs", "replay_prefix_cache", "allocator_demo", "ALLOCATOR_DEMO_SEQUENCES",
    "greedy_example", "VERIFICATION_WORDS", "speculative_check", "decision_table_text", "decision_table_markdown",
    "levers_text", "mechanism_map_text", "cheat_sheet_text", "chapter_batch_sweep",
    "SHORT_REQUEST_S", "chunk_trade_sweep", "tp_layout_rows", "placement_model",
    "placement_candidates", "chapter_schemes", 
]
