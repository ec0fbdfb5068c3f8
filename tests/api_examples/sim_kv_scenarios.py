"""Good calls of the KV-cache scenarios and walks (companion.sim.kv_scenarios)."""

from companion.specs import QWEN3_8B

TARGET = "companion.sim.kv_scenarios"

EXAMPLES = {
    "grow_sequences": dict(lengths=[9, 13, 5, 15], block_tokens=4, shared_prefix_tokens=8,
                           prefix_group=(0, 1), pool_tokens=64),
    "copy_on_write_steps": dict(full_blocks=2, shared_tail_tokens=3, block_tokens=4),
    "branch_sharing_pool": dict(branches=4, shared_blocks=95, private_blocks=9, block_tokens=16),
    "branch_sharing_steps": dict(branches=3, shared_blocks=10, private_blocks=4, block_tokens=16,
                                 blocks_per_step=2, finish_first=True),
    "decode_with_preemption": dict(kv_budget_bytes=2**27, prompt_tokens=[300, 200, 100],
                                   output_tokens=64, model=QWEN3_8B, block_tokens=16),
    "multi_turn_inputs": dict(common_tokens=206, branch_rounds=4, extend_rounds=3, seed=1),
    "replay_prefix_cache": dict(inputs=[[1, 2, 3, 4] * 8, [1, 2, 3, 4] * 8 + [5, 6]],
                                num_blocks=32, block_tokens=4, interfering_tokens=8, seed=1),
    "context_organisation": dict(model=QWEN3_8B, history_tokens=512, appended_tokens=64,
                                 summary_tokens=128, rewrite_at_tokens=40, output_tokens=16,
                                 block_tokens=16, bytes_per_value=2),
    "allocator_demo": dict(block_tokens=16, max_len_tokens=256, pool_tokens=1024,
                           sequences=[("A", 24, 16), ("B", 100, 20)]),
}

ALLOW = {
    # no shared prefix, no copy-on-write tail, no interference and a seed of 0 are meaningful
    "grow_sequences": {"shared_prefix_tokens": ["zero"]},
    "copy_on_write_steps": {"full_blocks": ["zero"], "shared_tail_tokens": ["zero"]},
    "branch_sharing_pool": {"shared_blocks": ["zero"], "private_blocks": ["zero"]},
    "branch_sharing_steps": {"shared_blocks": ["zero"], "private_blocks": ["zero"]},
    "multi_turn_inputs": {"extend_rounds": ["zero"], "seed": ["zero"]},
    "replay_prefix_cache": {"interfering_tokens": ["zero"], "seed": ["zero"]},
    "context_organisation": {"appended_tokens": ["zero"], "rewrite_at_tokens": ["zero"],
                             "output_tokens": ["zero"]},
}
