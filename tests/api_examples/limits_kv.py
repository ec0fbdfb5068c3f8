from companion.specs import QWEN3_8B, RTX_PRO_6000

EXAMPLES = {
    "tail_waste_distribution": dict(block_tokens=4, sequences=4),
    "prefix_recompute_roofline": dict(model=QWEN3_8B, hardware=RTX_PRO_6000, prefix_tokens=256,
                                      efficiency=0.6216, bandwidth_efficiency=1.0,
                                      history_tokens=0, block_tokens=16, bytes_per_value=2),
    "kv_transfer_pieces": dict(model=QWEN3_8B, prefix_tokens=6144, block_tokens=16,
                               pieces_per_block_layer=2),
    "piece_cost_doubling_fetch_s": dict(model=QWEN3_8B, prefix_tokens=6144,
                                        link_bytes_per_s=64e9, block_tokens=16,
                                        pieces_per_block_layer=2, bytes_per_value=2),
    "prefix_retention_fuller": dict(model=QWEN3_8B, hardware=RTX_PRO_6000, prefix_tokens=6144,
                                    hit_prob=0.5, efficiency=0.6216, link_bytes_per_s=64e9,
                                    piece_cost_s=1e-6, blocking_writeback=False,
                                    roofline_floor=True, block_tokens=16,
                                    pieces_per_block_layer=2, bytes_per_value=2),
}

ALLOW = {
    # no history, no cost per piece and a zero hit probability are meaningful
    "prefix_recompute_roofline": {"history_tokens": ["zero"]},
    "prefix_retention_fuller": {"hit_prob": ["zero"], "piece_cost_s": ["zero"]},
}
