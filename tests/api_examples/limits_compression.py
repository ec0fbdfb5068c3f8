EXAMPLES = {
    "read_saving_from_rounds_s": dict(saved_bytes=540 * 2**20, read_bytes=16.34e9),
    "marginal_read_bandwidth": dict(read_bytes=16.0e9),
    "retry_outcome": dict(attempt_s=6.95, success_probs=[1.0, 0.0], weights=[7.0, 1.0],
                          max_attempts=3, check_s=0.5),
    "systematic_success_probs": dict(mean_success=0.875, systematic_share=0.5),
    "compress_transfer_pipelined_s": dict(size_bytes=96 * 2**20, compressed_fraction=0.25,
                                          link_bytes_per_s=64e9, decompress_bytes_per_s=100e9,
                                          chunks=16),
    "min_decompress_pipelined_bytes_per_s": dict(link_bytes_per_s=64e9,
                                                 compressed_fraction=0.25),
}

ALLOW = {
    # saving nothing, an instant check, a task that never passes and no systematic failures
    # are meaningful
    "read_saving_from_rounds_s": {"saved_bytes": ["zero"]},
    "retry_outcome": {"check_s": ["zero"]},
    "systematic_success_probs": {"systematic_share": ["zero"]},
    "compress_transfer_pipelined_s": {"size_bytes": ["zero"]},
}
