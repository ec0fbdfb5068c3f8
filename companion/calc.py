"""Every closed-form relation of Chapters 8 and 17, as pure validated functions.

This module is the public face; the formulas live in topic modules under
``companion.formulas``, so notebooks and exercises only ever write ``from companion import
calc``. A topic module is imported when one of its names is first read (``companion.lazy``), so
``import companion.calc`` is quick; the same imports stand under ``TYPE_CHECKING`` for editors
and type checkers. Importing it imports no plotting library. The topic modules::

  core           KV sizing, read volume, roofline, FLOP counts, MFU, quantised sizes
  batching       8.1-8.2: lifecycle timeline, memory budget, batching, LoRA, pairs, padding
  kv_management  8.3: paging, sharing, copy-on-write, prefix reuse, hybrid snapshots, retention
  compression    8.4: quantised weights and KV, compressed reads, offload, transfer
  speculative    8.5: expected output, per-token latency, draft cost, draft length
  serving        8.6: Little's law, admission, goodput, GPU-seconds, schemes A-E, energy
  performance    17 §1-§6, §9-§10: hierarchy, roofline, KV sizing, paging, batching, MBU/MFU,
                 quantization
  fuller         17 §1-§5, where the chapter's simplified models stop holding: reached rates,
                 attention FLOPs, the roofline's max for short prefills and large decode
                 batches, a long context in a batch, whole blocks
  parallelism    17 §7-§8: tensor/pipeline parallelism, placement, disaggregated pools,
                 KV-aware routing; the interview's batch-size window
  levers         17 §10's chapter-wide tables: levers, mechanism -> lever map, cheat sheet;
                 MBU/MFU counting KV and attention, the levers on the roofline and together
  communication  17 §7-§8, fuller: ring all-reduce latency, overlap, uneven pipeline stages,
                 the KV hop shipped layer by layer
  queueing       17 §8, fuller: Erlang C, a prefill pool sized by a TTFT percentile, the
                 goodput of a fleet shared with chunked prefill or split into two pools
  moe            mixture-of-experts: experts a batch touches, streamed bytes vs batch, active
                 parameters
  limits_rounds  fuller models beside 8.1, 8.2 and 8.5's simplified ones: a shared pass, KV
                 held mid-answer, whole-cycle throughput, the round fit floored by the roofline,
                 acceptance that varies by span
  limits_kv, limits_compression, limits_serving
                 where 8.3, 8.4 and 8.6 simplify: paging waste as a distribution, recompute on
                 the roofline, paged transfers, read savings on measured rounds, retries on
                 tasks that always fail, M/D/1 queueing, a speculative batch's slowest request

The chapters' stated inputs are in ``companion.chapters``. This façade lists exactly the
names that notebooks, exercises, solutions, dashboards and the README read as ``calc.X``, plus
the public names promised to students and instructors (``kv_bytes_per_token``, ``kv_bytes``,
``max_concurrent``, ``quantized_bytes``, ``static_batch_utilization``,
``cache_retention_value``, ...); a test holds it to that. Everything else stays in its topic
module, where the package imports it from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from companion.lazy import attach

if TYPE_CHECKING:
    from companion.formulas.core import (
        kv_bytes_per_token, kv_tokens_allocated, kv_bytes, kv_bytes_at_context, held_tokens,
        max_concurrent, read_bytes_per_output_token, kv_crossover_batch, ridge_point,
        attention_pairs, bits_per_value, speculative_expected_tokens, pipeline_bubble,
        amdahl_speedup, matrix_flops, attention_flops_per_pair, attention_flops, decode_step_time,
        mbu, mfu, time_at_mfu, measured_prefill_mfu, quantized_bytes, static_batch_utilization,
        cache_retention_value)
    from companion.formulas.batching import (
        lifecycle_request_time_s, ttft_s, inter_token_intervals, request_time_s,
        decode_tokens_per_s, SHORT_REQUEST_S, memory_budget, kv_capacity_table,
        weight_reuse_intensity, lora_adapter_bytes, read_bytes_curve, batch_resident_bytes,
        decode_step_time_curve, compute_catchup_batch, compute_bound_context_tokens,
        prefill_chunks, chunk_pair_series, chunk_flops_series, split_weight_read_bytes,
        padded_rows, padding_rows, mixed_round_time_s, token_budget_for_itl)
    from companion.formulas.kv_management import (
        kv_blocks_needed, kv_tail_waste_tokens, paged_allocation, shared_prefix_blocks_saved,
        branch_block_sharing, prefix_shared_kv_bytes, reusable_prefix_tokens, hybrid_restore_point,
        snapshot_storage_bytes, long_term_cache_fraction, swa_restore_plan,
        stacked_window_reach_tokens, link_transfer_s, prefix_retention, cache_replay_hits)
    from companion.formulas.compression import (
        quant_format_layout, q2k_file_bytes, memory_headroom_bytes, encode_q8_0_group,
        decode_q8_0_group, encode_q4_0_group, decode_q4_0_group, kv_quantized_bytes,
        max_concurrent_kv_format, compressed_read_saving_s, fitted_interval_s,
        interval_crossover_tokens, ffn_weight_bytes_per_layer, ffn_offload, offload_copy_bound,
        min_link_bytes_per_s, compress_then_transfer_s, min_decompress_bytes_per_s,
        time_to_correct_answer_s, expected_time_to_correct_s)
    from companion.formulas.speculative import (
        mean_latency_per_token, unweighted_round_latency, speculative_acceptance_rate,
        speculative_residual_distribution, verification_outcome, speculative_expected_rounds,
        speculative_request_time, verification_extra_flops, speculative_latency_per_token,
        draft_cost_crossover, prep_break_even_tokens, effective_read_bandwidth, draft_forward_time,
        draft_generation_time, speculative_round_stages, draft_length_table, marginal_draft_gain,
        verification_ridge_batch, verification_under_load, draft_kv_budget)
    from companion.formulas.serving import (
        requests_in_system, admit_request, effective_throughput, response_losses,
        fractional_change, prefill_token_rate, gpu_seconds_per_request, round_read_bytes,
        decode_efficiency_table, prefill_efficiency_row, SCHEMES, scheme_result, compare_schemes,
        best_scheme, instance_kv_budget_bytes, schemes_for_model, staged_task_time,
        staged_task_speedup, staged_break_even_s)
    from companion.formulas.performance import (
        memory_pyramid, bandwidth_ratios, memory_sweep_s, decode_intensity, prefill_intensity,
        roofline_point, roofline_points, decode_time_split, prefill_compute_s, request_budget,
        head_of_line_stall, kv_by_context, attention_variants, tp_kv_capacity, decode_vs_context,
        kv_weight_crossover_tokens, reservation_waste, block_fill, paged_worst_waste,
        prefix_sharing_bytes, paged_batch_gain, static_batch_slot_steps, chunked_prefill_trade,
        sm_share, decode_utilization, prefill_utilization, quantization_ceiling,
        fused_ridge_tokens, fused_chunked_prefill, decode_throughput_ceiling,
        decode_batch_for_step)
    from companion.formulas.fuller import (
        achieved_rates, decode_attention_intensity, prefill_readings, head_of_line_readings,
        long_context_in_batch, block_rounded_capacity, decode_roofline_batch,
        decode_step_per_kernel)
    from companion.formulas.parallelism import (
        tp_allreduce_traffic, tp_decode_step, pp_stages, weights_per_gpu_bytes, parallel_layout,
        disaggregated_pools, kv_transfer_s, kv_routing_ttft, routed_mean_ttft_s, itl_batch_ceiling,
        batch_window, routed_ttft_percentile, nvlink_one_way_bytes_per_s)
    from companion.formulas.communication import (
        ring_hop_latency_s, tp_step_fuller, pp_decode_bubble, kv_layered_transfer)
    from companion.formulas.queueing import (
        pool_wait, prefill_pool_for_ttft, pool_time_tail, fleet_goodput, fleet_slo_rate,
        best_split)
    from companion.formulas.levers import (
        levers_table, cheat_sheet, utilization_counted, quantized_decode_speedup,
        speculative_speedup, combined_levers)
    from companion.formulas.moe import (
        moe_read_curve)
    from companion.formulas.limits_rounds import (
        inserted_prefill_stall_s, context_growth_intervals_s, kv_held_over_answer,
        batch_cycle_throughput, floored_round_time, fit_undercut_batch, spread_expected_tokens)
    from companion.formulas.limits_kv import (
        tail_waste_distribution, prefix_recompute_roofline, kv_transfer_pieces,
        piece_cost_doubling_fetch_s, prefix_retention_fuller)
    from companion.formulas.limits_compression import (
        read_saving_from_rounds_s, marginal_read_bandwidth, retry_outcome,
        systematic_success_probs)
    from companion.formulas.limits_serving import (
        md1_mean_wait_s, md1_wait_cdf, queue_on_time, batch_rounds)

# what each topic module gives the façade: imported on first use (companion/lazy.py)
__all__, __getattr__, __dir__ = attach(__name__, {
    "companion.formulas.core": (
        "kv_bytes_per_token", "kv_tokens_allocated", "kv_bytes", "kv_bytes_at_context",
        "held_tokens", "max_concurrent", "read_bytes_per_output_token", "kv_crossover_batch",
        "ridge_point", "attention_pairs", "bits_per_value", "speculative_expected_tokens",
        "pipeline_bubble", "amdahl_speedup", "matrix_flops", "attention_flops_per_pair",
        "attention_flops", "decode_step_time", "mbu", "mfu", "time_at_mfu", "measured_prefill_mfu",
        "quantized_bytes", "static_batch_utilization", "cache_retention_value"),
    "companion.formulas.batching": (
        "lifecycle_request_time_s", "ttft_s", "inter_token_intervals", "request_time_s",
        "decode_tokens_per_s", "SHORT_REQUEST_S", "memory_budget", "kv_capacity_table",
        "weight_reuse_intensity", "lora_adapter_bytes", "read_bytes_curve", "batch_resident_bytes",
        "decode_step_time_curve", "compute_catchup_batch", "compute_bound_context_tokens",
        "prefill_chunks", "chunk_pair_series", "chunk_flops_series", "split_weight_read_bytes",
        "padded_rows", "padding_rows", "mixed_round_time_s", "token_budget_for_itl"),
    "companion.formulas.kv_management": (
        "kv_blocks_needed", "kv_tail_waste_tokens", "paged_allocation",
        "shared_prefix_blocks_saved", "branch_block_sharing", "prefix_shared_kv_bytes",
        "reusable_prefix_tokens", "hybrid_restore_point", "snapshot_storage_bytes",
        "long_term_cache_fraction", "swa_restore_plan", "stacked_window_reach_tokens",
        "link_transfer_s", "prefix_retention", "cache_replay_hits"),
    "companion.formulas.compression": (
        "quant_format_layout", "q2k_file_bytes", "memory_headroom_bytes", "encode_q8_0_group",
        "decode_q8_0_group", "encode_q4_0_group", "decode_q4_0_group", "kv_quantized_bytes",
        "max_concurrent_kv_format", "compressed_read_saving_s", "fitted_interval_s",
        "interval_crossover_tokens", "ffn_weight_bytes_per_layer", "ffn_offload",
        "offload_copy_bound", "min_link_bytes_per_s", "compress_then_transfer_s",
        "min_decompress_bytes_per_s", "time_to_correct_answer_s", "expected_time_to_correct_s"),
    "companion.formulas.speculative": (
        "mean_latency_per_token", "unweighted_round_latency", "speculative_acceptance_rate",
        "speculative_residual_distribution", "verification_outcome", "speculative_expected_rounds",
        "speculative_request_time", "verification_extra_flops", "speculative_latency_per_token",
        "draft_cost_crossover", "prep_break_even_tokens", "effective_read_bandwidth",
        "draft_forward_time", "draft_generation_time", "speculative_round_stages",
        "draft_length_table", "marginal_draft_gain", "verification_ridge_batch",
        "verification_under_load", "draft_kv_budget"),
    "companion.formulas.serving": (
        "requests_in_system", "admit_request", "effective_throughput", "response_losses",
        "fractional_change", "prefill_token_rate", "gpu_seconds_per_request", "round_read_bytes",
        "decode_efficiency_table", "prefill_efficiency_row", "SCHEMES", "scheme_result",
        "compare_schemes", "best_scheme", "instance_kv_budget_bytes", "schemes_for_model",
        "staged_task_time", "staged_task_speedup", "staged_break_even_s"),
    "companion.formulas.performance": (
        "memory_pyramid", "bandwidth_ratios", "memory_sweep_s", "decode_intensity",
        "prefill_intensity", "roofline_point", "roofline_points", "decode_time_split",
        "prefill_compute_s", "request_budget", "head_of_line_stall", "kv_by_context",
        "attention_variants", "tp_kv_capacity", "decode_vs_context", "kv_weight_crossover_tokens",
        "reservation_waste", "block_fill", "paged_worst_waste", "prefix_sharing_bytes",
        "paged_batch_gain", "static_batch_slot_steps", "chunked_prefill_trade", "sm_share",
        "decode_utilization", "prefill_utilization", "quantization_ceiling", "fused_ridge_tokens",
        "fused_chunked_prefill", "decode_throughput_ceiling", "decode_batch_for_step"),
    "companion.formulas.fuller": (
        "achieved_rates", "decode_attention_intensity", "prefill_readings",
        "head_of_line_readings", "long_context_in_batch", "block_rounded_capacity",
        "decode_roofline_batch", "decode_step_per_kernel"),
    "companion.formulas.parallelism": (
        "tp_allreduce_traffic", "tp_decode_step", "pp_stages", "weights_per_gpu_bytes",
        "parallel_layout", "disaggregated_pools", "kv_transfer_s", "kv_routing_ttft",
        "routed_mean_ttft_s", "itl_batch_ceiling", "batch_window", "routed_ttft_percentile",
        "nvlink_one_way_bytes_per_s"),
    "companion.formulas.communication": (
        "ring_hop_latency_s", "tp_step_fuller", "pp_decode_bubble", "kv_layered_transfer"),
    "companion.formulas.queueing": (
        "pool_wait", "prefill_pool_for_ttft", "pool_time_tail", "fleet_goodput",
        "fleet_slo_rate", "best_split"),
    "companion.formulas.levers": (
        "levers_table", "cheat_sheet", "utilization_counted", "quantized_decode_speedup",
        "speculative_speedup", "combined_levers"),
    "companion.formulas.moe": (
        "moe_read_curve",),
    "companion.formulas.limits_rounds": (
        "inserted_prefill_stall_s", "context_growth_intervals_s", "kv_held_over_answer",
        "batch_cycle_throughput", "floored_round_time", "fit_undercut_batch",
        "spread_expected_tokens"),
    "companion.formulas.limits_kv": (
        "tail_waste_distribution", "prefix_recompute_roofline", "kv_transfer_pieces",
        "piece_cost_doubling_fetch_s", "prefix_retention_fuller"),
    "companion.formulas.limits_compression": (
        "read_saving_from_rounds_s", "marginal_read_bandwidth", "retry_outcome",
        "systematic_success_probs"),
    "companion.formulas.limits_serving": (
        "md1_mean_wait_s", "md1_wait_cdf", "queue_on_time", "batch_rounds"),
})
