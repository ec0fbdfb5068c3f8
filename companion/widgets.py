"""Slider panels: parameters -> calc/sim -> plots, for the notebooks' explorers.

Each panel's ``update(**params)`` is a plain function that a test can call headless across
its slider ranges; ``show()`` builds the ipywidgets UI (sliders, a reset-to-the-chapter's-setting
button, a readout and a live plotly figure, ``companion.explorers.figure_widget``). ipywidgets
is imported only by ``companion.explorers.base`` and ``figure_widget``, when a panel is shown,
never by
``import companion``.

A façade: each panel is imported from the explorer module of its notebook
(``companion.explorers.ch17_09_measuring`` for ``17_09_measuring``); the scenario, table
and formula helpers the notebooks call as ``widgets.X`` are imported from their homes in
``companion.sim``, ``companion.tables`` and ``companion.formulas``.

The façade is lazy (``companion.lazy``): reading ``widgets.KVCapacityPanel`` imports only
``companion.explorers.ch08_1_request_lifecycle``, once, so a notebook's first explorer does not
wait for every other notebook's explorers to be imported. ``dir(widgets)`` and ``__all__`` list
every name; the same imports stand under ``TYPE_CHECKING`` for editors and type checkers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from companion.lazy import attach

if TYPE_CHECKING:
    from companion.explorers.ch08_2_batching_and_scheduling import (
        DecodeBatchPanel, ChunkedPrefillPanel, TokenBudgetPanel, SchedulePanel, BudgetSweepPanel,
        SWEEP_BUDGETS)
    from companion.explorers.ch08_4_compression_and_offloading import (
        QuantizedFitPanel, CompressedReadPanel, OffloadPanel, CompressTransferPanel, RetryCostPanel,
        PrecisionGridPanel)
    from companion.explorers.ch08_3_kv_cache import (
        PagingPanel, BranchSharingPanel, SharedPrefixCapacityPanel, SnapshotSpacingPanel,
        ContextOrganisationPanel, RetentionPanel)
    from companion.explorers.ch08_1_request_lifecycle import (
        KVCapacityPanel, RequestTimelinePanel, MemoryBudgetPanel)
    from companion.explorers.ch08_6_load_and_configuration import (
        AdmissionPanel, SchemePanel, AmdahlPanel, AMDAHL_FRACTIONS)
    from companion.explorers.ch08_5_speculative_decoding import (
        GreedyVerificationPanel, RejectionSamplingPanel, SpeculativeLatencyPanel, DraftLengthPanel,
        RoundStagesPanel, VerificationLoadPanel)
    from companion.explorers.ch17_06_batching_strategies import (
        BatchingTracePanel, ChunkSizePanel)
    from companion.explorers.ch17_09_measuring import (
        UtilizationPanel, KernelTimelinePanel, SpeedOfLightPanel)
    from companion.explorers.ch17_10_levers import (
        SpeculativeLeverPanel)
    from companion.explorers.ch17_11_interview_questions import (
        BatchSizePanel)
    from companion.explorers.ch17_01_memory_hierarchy import (
        MemoryHierarchyPanel)
    from companion.explorers.ch17_04_kv_sizing import (
        KVSizingPanel)
    from companion.explorers.ch17_05_paged_attention import (
        PagedKVPanel)
    from companion.explorers.ch17_07_parallelism import (
        TensorParallelPanel, PipelineBubblePanel, PlacementPanel)
    from companion.explorers.ch17_08_disaggregation_and_routing import (
        PoolSizingPanel, KVRoutingPanel, DisaggregationDiagramPanel)
    from companion.explorers.ch17_02_roofline import (
        RooflinePanel)
    from companion.explorers.ch17_03_prefill_vs_decode import (
        RequestBudgetPanel, HeadOfLinePanel, SLOPanel)
    from companion.sim.scenarios import (
        timeline_scenario, stalled_interval_positions, chapter_schedules, batching_trace_requests,
        batching_trace, itl_tail_trace)
    from companion.sim.kv_scenarios import (
        allocator_demo, ALLOCATOR_DEMO_SEQUENCES)
    from companion.sim.speculative import (
        greedy_example, VERIFICATION_WORDS, speculative_check)
    from companion.tables import (
        decision_table_markdown, levers_text, mechanism_map_text, cheat_sheet_text,
        kv_capacity_text, kv_format_text, verification_load_text, decode_efficiency_text,
        scheme_definition_markdown, scheme_text, reservation_readings_markdown, model_shapes_text)
    from companion.formulas.batching import (
        chapter_batch_sweep)
    from companion.formulas.parallelism import (
        tp_layout_rows, placement_candidates)

# what each module gives the façade: imported on first use (companion/lazy.py)
__all__, __getattr__, __dir__ = attach(__name__, {
    "companion.explorers.ch08_2_batching_and_scheduling": ("DecodeBatchPanel",
        "ChunkedPrefillPanel", "TokenBudgetPanel", "SchedulePanel", "BudgetSweepPanel",
        "SWEEP_BUDGETS"),
    "companion.explorers.ch08_4_compression_and_offloading": ("QuantizedFitPanel",
        "CompressedReadPanel", "OffloadPanel", "CompressTransferPanel", "RetryCostPanel",
        "PrecisionGridPanel"),
    "companion.explorers.ch08_3_kv_cache": ("PagingPanel", "BranchSharingPanel",
        "SharedPrefixCapacityPanel", "SnapshotSpacingPanel", "ContextOrganisationPanel",
        "RetentionPanel"),
    "companion.explorers.ch08_1_request_lifecycle": ("KVCapacityPanel", "RequestTimelinePanel",
        "MemoryBudgetPanel"),
    "companion.explorers.ch08_6_load_and_configuration": ("AdmissionPanel", "SchemePanel",
        "AmdahlPanel", "AMDAHL_FRACTIONS"),
    "companion.explorers.ch08_5_speculative_decoding": ("GreedyVerificationPanel",
        "RejectionSamplingPanel", "SpeculativeLatencyPanel", "DraftLengthPanel",
        "RoundStagesPanel", "VerificationLoadPanel"),
    "companion.explorers.ch17_06_batching_strategies": ("BatchingTracePanel", "ChunkSizePanel"),
    "companion.explorers.ch17_09_measuring": ("UtilizationPanel", "KernelTimelinePanel",
        "SpeedOfLightPanel"),
    "companion.explorers.ch17_10_levers": ("SpeculativeLeverPanel",),
    "companion.explorers.ch17_11_interview_questions": ("BatchSizePanel",),
    "companion.explorers.ch17_01_memory_hierarchy": ("MemoryHierarchyPanel",),
    "companion.explorers.ch17_04_kv_sizing": ("KVSizingPanel",),
    "companion.explorers.ch17_05_paged_attention": ("PagedKVPanel",),
    "companion.explorers.ch17_07_parallelism": ("TensorParallelPanel", "PipelineBubblePanel",
        "PlacementPanel"),
    "companion.explorers.ch17_08_disaggregation_and_routing": ("PoolSizingPanel",
        "KVRoutingPanel", "DisaggregationDiagramPanel"),
    "companion.explorers.ch17_02_roofline": ("RooflinePanel",),
    "companion.explorers.ch17_03_prefill_vs_decode": ("RequestBudgetPanel", "HeadOfLinePanel",
        "SLOPanel"),
    "companion.sim.scenarios": ("timeline_scenario", "stalled_interval_positions",
        "chapter_schedules", "batching_trace_requests", "batching_trace", "itl_tail_trace"),
    "companion.sim.kv_scenarios": ("allocator_demo", "ALLOCATOR_DEMO_SEQUENCES"),
    "companion.sim.speculative": ("greedy_example", "VERIFICATION_WORDS", "speculative_check"),
    "companion.tables": ("decision_table_markdown", "levers_text", "mechanism_map_text",
        "cheat_sheet_text", "kv_capacity_text", "kv_format_text", "verification_load_text",
        "decode_efficiency_text", "scheme_definition_markdown", "scheme_text",
        "reservation_readings_markdown", "model_shapes_text"),
    "companion.formulas.batching": ("chapter_batch_sweep",),
    "companion.formulas.parallelism": ("tp_layout_rows", "placement_candidates"),
})
