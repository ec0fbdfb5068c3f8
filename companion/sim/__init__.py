"""Iteration-level simulators: who runs in which round, where each token's KV lives, which
draft token survives, which request misses its deadline.

- ``scheduler``: static / continuous batching and chunked prefill with a token budget and
  CUDA-graph padding (8.2.2-8.2.4, 17 §3, §6): the reference engine ``Scheduler`` and
  ``simulate``; ``fast_scheduler``: the same schedule, fast (``FastScheduler``); ``requests``:
  what both share (``Request``, the driving interface); ``round_time``: the round-time models;
  ``result``: the ``Result`` both return; ``scenarios``: the chapters' scheduling examples;
- ``kvcache``: paged KV blocks, block tables, refcounts, copy-on-write, a prefix cache with LRU
  eviction, preemption by recompute (8.3, 17 §5); ``paged_attention``: K and V read through
  block tables; ``kv_scenarios``: the chapters' paging examples by allocation;
- ``speculative``: greedy draft verification and speculative (rejection) sampling (8.5);
- ``kernel_timeline``: one decode round as CPU launches and GPU kernels, with and without CUDA
  Graphs, and the Speed of Light each kernel would read (17 §9);
- ``workload`` and ``load``: arrivals and request columns; a service under load with admission
  by KV space and deadline, cancellation, goodput and energy (8.6); ``slo``: 17 §3's TTFT and
  ITL targets under load.

Every public name of these modules is imported here by name (``from companion.sim import
simulate, Request, RoundTimeModel``); a test checks that none is missing.
"""

from __future__ import annotations

from companion.sim.requests import (
    Request, POLICIES, SchedulerConfig, SchedulerBase, check_requests, admission_decision,
    padder)
from companion.sim.round_time import (
    RoundWork, round_work, RoundTime, LinearRoundTime, RoundTimeModel, RooflineRoundTime,
    StepPlusPrefillRoundTime, chapter17_round_time, as_round_time, round_duration)
from companion.sim.result import (
    Segment, Round, Result, ROUND_COLUMNS)
from companion.sim.scheduler import Scheduler, FastScheduler, simulate, ENGINES
from companion.sim.fast_scheduler import (
    TRUSTED_MODELS)
from companion.sim.scenarios import (
    chapter_8_2_2_requests, chapter_schedule, chapter_schedules, token_budget_sweep,
    TOKEN_BUDGETS, long_prompt_interference, hol_scenario, batching_trace_requests,
    batching_trace, itl_tail_trace, stalled_interval_positions, timeline_scenario,
    TRACE_REQUESTS, TRACE_PROMPT_TOKENS, CH17_STATIC_BATCH, CH17_STATIC_SHORTEST,
    CH17_STATIC_LONGEST)
from companion.sim.kvcache import (
    OutOfBlocks, BlockCopy, BlockManager, PrefixCache)
from companion.sim.paged_attention import (
    KVStore, paged_attention, dense_attention)
from companion.sim.kv_scenarios import (
    PagingReport, page_sequences, PoolFill, fill_kv_pool, TreeNode, PrefixTree, prefix_tree,
    PoolSnapshot, snapshot_pool, SEQUENCE_NAMES, grow_sequences, copy_on_write_steps,
    branch_sharing_pool, branch_sharing_steps, decode_with_preemption, multi_turn_inputs,
    replay_prefix_cache, CONTEXT_OPTIONS, ContextOption, context_organisation,
    ALLOCATOR_DEMO_SEQUENCES, allocator_demo)
from companion.sim.speculative import (
    GreedyVerification, verify_greedy, acceptance_probabilities, acceptance_rate,
    residual_distribution, output_distribution, expected_tokens_per_round,
    tokens_per_round_distribution, SpeculativeRound, speculative_round, SpeculativeRuns,
    simulate_rounds, greedy_example, VERIFICATION_WORDS, MAX_DRAFT, speculative_check)
from companion.sim.kernel_timeline import (
    LAUNCH_OVERHEAD_S, GRAPH_LAUNCH_S, MIN_KERNEL_S, KERNELS_PER_LAYER, BIG_KERNELS, Kernel,
    TimelineEvent, StepTimeline, layer_kernels, decode_step_timeline, round_timeline,
    speed_of_light, timeline_unsupported)
from companion.sim.workload import (
    RequestShape, SHORT_REQUEST, LONG_REQUEST, Workload, poisson_arrivals, trace_arrivals,
    workload, seed_rng)
from companion.sim.load import (
    KV_POLICIES, ServiceResult, run_service, goodput_sweep, nearest_rank_percentile)
from companion.sim.slo import SLO_POLICIES, SLO_PERCENTILES, SLO_CHUNK_TOKENS, slo_run

__all__ = [
    "Request", "POLICIES", "SchedulerConfig", "SchedulerBase", "check_requests",
    "admission_decision", "padder", "RoundWork", "round_work", "RoundTime", "LinearRoundTime",
    "RoundTimeModel", "RooflineRoundTime", "StepPlusPrefillRoundTime", "chapter17_round_time",
    "as_round_time", "round_duration", 
    "Segment", "Round", "Result",
    "ROUND_COLUMNS", "Scheduler", "FastScheduler", "simulate", "ENGINES",
    "TRUSTED_MODELS", "chapter_8_2_2_requests", "chapter_schedule",
    "chapter_schedules", "token_budget_sweep", "TOKEN_BUDGETS", "long_prompt_interference",
    "hol_scenario", "batching_trace_requests", "batching_trace", "itl_tail_trace",
    "stalled_interval_positions", "timeline_scenario", "TRACE_REQUESTS", "TRACE_PROMPT_TOKENS",
    "CH17_STATIC_BATCH", "CH17_STATIC_SHORTEST", "CH17_STATIC_LONGEST", "OutOfBlocks",
    "BlockCopy", "BlockManager", "PrefixCache", "KVStore", "paged_attention",
    "dense_attention", "PagingReport", "page_sequences", "PoolFill", "fill_kv_pool",
    "TreeNode", "PrefixTree", "prefix_tree", "PoolSnapshot", "snapshot_pool", "SEQUENCE_NAMES",
    "grow_sequences", "copy_on_write_steps", "branch_sharing_pool", "branch_sharing_steps",
    "decode_with_preemption", "multi_turn_inputs", "replay_prefix_cache",
    "CONTEXT_OPTIONS", "ContextOption", "context_organisation", "ALLOCATOR_DEMO_SEQUENCES", "allocator_demo", "GreedyVerification", "verify_greedy",
    "acceptance_probabilities", "acceptance_rate", "residual_distribution",
    "output_distribution", "expected_tokens_per_round", "tokens_per_round_distribution",
    "SpeculativeRound", "speculative_round", "SpeculativeRuns", "simulate_rounds",
    "greedy_example", "VERIFICATION_WORDS", "MAX_DRAFT", "speculative_check", "RequestShape",
    "SHORT_REQUEST", "LONG_REQUEST", "Workload", "poisson_arrivals", "trace_arrivals",
    "workload", "seed_rng", "KV_POLICIES", "ServiceResult",
    "run_service", "goodput_sweep", "nearest_rank_percentile", "SLO_POLICIES",
    "SLO_PERCENTILES", "SLO_CHUNK_TOKENS", "slo_run", 
    "LAUNCH_OVERHEAD_S",
    "GRAPH_LAUNCH_S", "MIN_KERNEL_S", "KERNELS_PER_LAYER", "BIG_KERNELS", "Kernel",
    "TimelineEvent", "StepTimeline", "layer_kernels", "decode_step_timeline", "round_timeline",
    "speed_of_light", "timeline_unsupported",
]
