"""Slider panels: parameters -> calc/sim -> plots, for the notebooks' explorers.

Each panel's ``update(**params)`` is a plain function that a test can call headless across
its slider ranges; ``show()`` builds the ipywidgets UI (sliders, a reset-to-the-chapter's-setting
button, a readout and a plotly FigureWidget). ipywidgets is imported only by the topic modules
under ``companion.explorers``, never by ``import companion``.
"""

from __future__ import annotations

from companion.explorers.capacity import (
    KVCapacityPanel, PRECISIONS)
from companion.explorers.ch08_lifecycle import (
    RequestTimelinePanel, MemoryBudgetPanel, timeline_scenario, stalled_interval_positions)
from companion.explorers.ch08_batching import (
    DecodeBatchPanel, ChunkedPrefillPanel, TokenBudgetPanel, SchedulePanel, BudgetSweepPanel,
    BATCH_SWEEP_MEASURED, chapter_batch_sweep, chapter_schedules, SWEEP_BUDGETS)
from companion.explorers.ch08_kv import (
    grow_sequences, copy_on_write_steps, branch_sharing_pool, branch_sharing_steps,
    decode_with_preemption, multi_turn_inputs, replay_prefix_cache, PagingPanel,
    BranchSharingPanel, SharedPrefixCapacityPanel, SnapshotSpacingPanel, RetentionPanel)
from companion.explorers.ch08_compression import (
    SHORT_REQUEST_S, QuantizedFitPanel, CompressedReadPanel, OffloadPanel,
    CompressTransferPanel, RetryCostPanel)
from companion.explorers.ch08_speculative import (
    GreedyVerificationPanel, RejectionSamplingPanel, SpeculativeLatencyPanel, DraftLengthPanel,
    greedy_example, VERIFICATION_WORDS)
from companion.explorers.ch08_serving import (
    AdmissionPanel, SchemePanel, AmdahlPanel, chapter_schemes, SCHEME_SETS, AMDAHL_FRACTIONS)
from companion.explorers.ch17_memory import (
    MemoryHierarchyPanel, KVSizingPanel, PagedKVPanel, allocator_demo,
    ALLOCATOR_DEMO_SEQUENCES)
from companion.explorers.ch17_roofline import (
    RooflinePanel, RequestBudgetPanel, HeadOfLinePanel)
from companion.explorers.ch17_parallelism import (
    BatchingTracePanel, ChunkSizePanel, TensorParallelPanel, PipelineBubblePanel,
    PlacementPanel, PoolSizingPanel, KVRoutingPanel, UtilizationPanel, SpeculativeLeverPanel,
    BatchSizePanel, batching_trace_requests, batching_trace, chunk_trade_sweep, tp_layout_rows,
    placement_model, placement_candidates, speculative_check, itl_tail_trace,
    decision_table_text, levers_text, mechanism_map_text, cheat_sheet_text, CH17_STATIC_BATCH,
    CH17_STATIC_SHORTEST, CH17_STATIC_LONGEST, CH17_HEALTHY_DECODE_MBU,
    CH17_STRONG_PREFILL_MFU)

__all__ = [
    "KVCapacityPanel", "PRECISIONS", "RequestTimelinePanel", "MemoryBudgetPanel",
    "timeline_scenario", "stalled_interval_positions", "DecodeBatchPanel",
    "ChunkedPrefillPanel", "TokenBudgetPanel", "SchedulePanel", "BudgetSweepPanel",
    "BATCH_SWEEP_MEASURED", "chapter_batch_sweep", "chapter_schedules", "SWEEP_BUDGETS",
    "grow_sequences", "copy_on_write_steps", "branch_sharing_pool", "branch_sharing_steps",
    "decode_with_preemption", "multi_turn_inputs", "replay_prefix_cache", "PagingPanel",
    "BranchSharingPanel", "SharedPrefixCapacityPanel", "SnapshotSpacingPanel",
    "RetentionPanel", "SHORT_REQUEST_S", "QuantizedFitPanel", "CompressedReadPanel",
    "OffloadPanel", "CompressTransferPanel", "RetryCostPanel", "GreedyVerificationPanel",
    "RejectionSamplingPanel", "SpeculativeLatencyPanel", "DraftLengthPanel", "greedy_example",
    "VERIFICATION_WORDS", "AdmissionPanel", "SchemePanel", "AmdahlPanel", "chapter_schemes",
    "SCHEME_SETS", "AMDAHL_FRACTIONS", "MemoryHierarchyPanel", "KVSizingPanel", "PagedKVPanel",
    "allocator_demo", "ALLOCATOR_DEMO_SEQUENCES", "RooflinePanel", "RequestBudgetPanel",
    "HeadOfLinePanel", "BatchingTracePanel", "ChunkSizePanel", "TensorParallelPanel",
    "PipelineBubblePanel", "PlacementPanel", "PoolSizingPanel", "KVRoutingPanel",
    "UtilizationPanel", "SpeculativeLeverPanel", "BatchSizePanel", "batching_trace_requests",
    "batching_trace", "chunk_trade_sweep", "tp_layout_rows", "placement_model",
    "placement_candidates", "speculative_check", "itl_tail_trace", "decision_table_text",
    "levers_text", "mechanism_map_text", "cheat_sheet_text", "CH17_STATIC_BATCH",
    "CH17_STATIC_SHORTEST", "CH17_STATIC_LONGEST", "CH17_HEALTHY_DECODE_MBU",
    "CH17_STRONG_PREFILL_MFU",
]
