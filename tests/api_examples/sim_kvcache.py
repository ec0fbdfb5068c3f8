import numpy as np

from companion.sim.kvcache import BlockManager
from companion.sim.paged_attention import KVStore
from companion.specs import QWEN3_8B

TARGET = ("companion.sim.kvcache", "companion.sim.paged_attention", "companion.sim.kv_scenarios")

_rng = np.random.default_rng(0)
_manager = BlockManager(8, 16)
_table = _manager.allocate("a", 20)
_store = KVStore.for_manager(_manager, n_kv_heads=2, head_dim=8)
_store.write(_table, 0, _rng.normal(size=(20, 2, 8)), _rng.normal(size=(20, 2, 8)))
_q = _rng.normal(size=(4, 8))          # 4 query heads over 2 KV heads (GQA)
_k = _rng.normal(size=(20, 2, 8))

EXAMPLES = {
    "paged_attention": dict(q=_q, kv_store=_store, block_table=_table, n_tokens=20),
    "dense_attention": dict(q=_q, k=_k, v=_k),
    "page_sequences": dict(lengths=[9, 13, 5, 15], block_tokens=4, max_tokens=16,
                           shared_prefix_tokens=8, prefix_group=[0, 1]),
    "fill_kv_pool": dict(kv_budget_bytes=12 * 2**30, model=QWEN3_8B, request_tokens=8447,
                         shared_prefix_tokens=6144, max_requests=16, block_tokens=16,
                         bytes_per_value=2),
    "prefix_tree": dict(sequences=[[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 5, 6]]),
}

ALLOW = {
    # no shared prefix and admitting no request are meaningful
    "page_sequences": {"shared_prefix_tokens": ["zero"]},
    "fill_kv_pool": {"shared_prefix_tokens": ["zero"], "max_requests": ["zero"]},
}
