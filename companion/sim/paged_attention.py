"""Paged attention in numpy: K and V addressed only through block tables (8.3.1, 17 §5).

``KVStore`` holds K and V arrays of shape (num_blocks, block_tokens, kv_heads, head_dim),
written and read through a ``companion.sim.kvcache.BlockManager``'s block tables;
``paged_attention`` walks a block table the way the kernel does ("the kernel walks the block
table", 17 §5), and its output equals ``dense_attention`` over the same tokens.
"""

from __future__ import annotations

import math

import numpy as np

from companion import validate as val
from companion.serves import serves
from companion.sim.kvcache import BlockManager

__all__ = ["KVStore", "paged_attention", "dense_attention"]


@serves("17.5")
class KVStore:
    """K and V arrays of shape (num_blocks, block_tokens, kv_heads, head_dim), addressed only
    through block tables, the way a paged-attention kernel sees memory (17 §5)."""

    def __init__(self, num_blocks: int, block_tokens: int, n_kv_heads: int, head_dim: int,
                 dtype=np.float64):
        self.num_blocks = val.count("num_blocks", num_blocks)
        self.block_tokens = val.tokens("block_tokens", block_tokens, minimum=1)
        self.n_kv_heads = val.count("n_kv_heads", n_kv_heads)
        self.head_dim = val.count("head_dim", head_dim)
        shape = (self.num_blocks, self.block_tokens, self.n_kv_heads, self.head_dim)
        self.k = np.zeros(shape, dtype=dtype)
        self.v = np.zeros(shape, dtype=dtype)

    @classmethod
    def for_manager(cls, manager: BlockManager, n_kv_heads: int, head_dim: int,
                    dtype=np.float64) -> "KVStore":
        m = val.instance("manager", manager, BlockManager)
        return cls(m.num_blocks, m.block_tokens, n_kv_heads, head_dim, dtype)

    def _table(self, block_table) -> list[int]:
        table = [val.integer(f"block_table[{i}]", b, minimum=0)
                 for i, b in enumerate(val.sequence("block_table", block_table))]
        if max(table) >= self.num_blocks:
            raise ValueError(f"block_table: block ids must lie in [0, {self.num_blocks})")
        return table

    def write(self, block_table, start: int, k: np.ndarray, v: np.ndarray) -> None:
        """Store K/V rows (n, kv_heads, head_dim) at logical positions start .. start+n-1."""
        table = self._table(block_table)
        s = val.tokens("start", start)
        k = val.array("k", k, (3,))
        v = val.array("v", v, (3,))
        if k.shape != v.shape or k.shape[1:] != (self.n_kv_heads, self.head_dim):
            raise ValueError(f"k: shape {k.shape} / v {v.shape}; expected "
                             f"(n, {self.n_kv_heads}, {self.head_dim}) for both")
        if s + len(k) > len(table) * self.block_tokens:
            raise ValueError(f"start: positions up to {s + len(k)} overrun the block table's "
                             f"{len(table) * self.block_tokens} slots")
        pos = s + np.arange(len(k))
        blocks = np.asarray(table)[pos // self.block_tokens]
        self.k[blocks, pos % self.block_tokens] = k
        self.v[blocks, pos % self.block_tokens] = v

    def apply_copies(self, copies) -> None:
        """Carry out copy-on-write records: copy the valid slots of src into dst."""
        for c in copies:
            self.k[c.dst, :c.tokens] = self.k[c.src, :c.tokens]
            self.v[c.dst, :c.tokens] = self.v[c.src, :c.tokens]

    def append(self, manager: BlockManager, seq_id, k: np.ndarray, v: np.ndarray) -> list[int]:
        """Grow ``seq_id`` in ``manager`` by len(k) tokens, do any copy-on-write, write K/V."""
        m = val.instance("manager", manager, BlockManager)
        start = m.num_tokens(seq_id)
        new = m.append(seq_id, len(k))
        self.apply_copies(m.pop_copies())
        self.write(m.block_table(seq_id), start, k, v)
        return new

    def gather(self, block_table, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous (n, kv_heads, head_dim) K and V of the first n_tokens positions."""
        table = self._table(block_table)
        n = val.tokens("n_tokens", n_tokens, minimum=1)
        if n > len(table) * self.block_tokens:
            raise ValueError(f"n_tokens: {n} exceeds the table's {len(table) * self.block_tokens}")
        idx = np.asarray(table[:-(-n // self.block_tokens)])
        shape = (-1, self.n_kv_heads, self.head_dim)
        return self.k[idx].reshape(shape)[:n], self.v[idx].reshape(shape)[:n]


def _queries(q: np.ndarray, n_kv_heads: int, head_dim: int) -> tuple[np.ndarray, int]:
    """q as (m, heads, head_dim) and the query heads per KV head (GQA group size)."""
    q = val.array("q", q, (2, 3))
    q3 = q[None] if q.ndim == 2 else q
    heads = q3.shape[1]
    if q3.shape[2] != head_dim:
        raise ValueError(f"q: head_dim {q3.shape[2]} differs from the cache's {head_dim}")
    if heads % n_kv_heads:
        raise ValueError(f"q: {heads} query heads is not a multiple of {n_kv_heads} KV heads")
    return q3, heads // n_kv_heads


def dense_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q K^T / sqrt(d)) V over all n tokens (no causal mask), per head.

    q: (heads, d) or (m, heads, d); k, v: (n, kv_heads, d); query head h reads KV head
    h // (heads / kv_heads) (GQA). The reference that paged attention must reproduce.
    """
    k = val.array("k", k, (3,))
    v = val.array("v", v, (3,))
    if k.shape != v.shape or len(k) == 0:
        raise ValueError(f"k: shape {k.shape} must equal v's {v.shape} and hold a token")
    q3, group = _queries(q, k.shape[1], k.shape[2])
    kk = np.repeat(k, group, axis=1)
    vv = np.repeat(v, group, axis=1)
    scores = np.einsum("mhd,nhd->mhn", q3, kk) / math.sqrt(k.shape[2])
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    out = np.einsum("mhn,nhd->mhd", w, vv)
    return out[0] if q.ndim == 2 else out


@serves("17.5")
def paged_attention(q: np.ndarray, kv_store: KVStore, block_table, n_tokens: int) -> np.ndarray:
    """Attention of q over the first n_tokens tokens, reading K/V block by block through the
    block table with an online softmax (running max and sum), as a paged kernel does (17 §5).

    Same shapes and result as ``dense_attention(q, *kv_store.gather(block_table, n_tokens))``.
    """
    store = val.instance("kv_store", kv_store, KVStore)
    table = store._table(block_table)
    n = val.tokens("n_tokens", n_tokens, minimum=1)
    p = store.block_tokens
    if n > len(table) * p:
        raise ValueError(f"n_tokens: {n} exceeds the block table's {len(table) * p} slots")
    q3, group = _queries(q, store.n_kv_heads, store.head_dim)
    scale = 1.0 / math.sqrt(store.head_dim)
    m_run = np.full(q3.shape[:2], -np.inf)
    s_run = np.zeros(q3.shape[:2])
    acc = np.zeros(q3.shape)
    for logical in range(-(-n // p)):
        valid = min(p, n - logical * p)  # the tail block may be partly filled
        kb = np.repeat(store.k[table[logical], :valid], group, axis=1)
        vb = np.repeat(store.v[table[logical], :valid], group, axis=1)
        scores = np.einsum("mhd,thd->mht", q3, kb) * scale
        m_new = np.maximum(m_run, scores.max(axis=-1))
        rescale = np.exp(m_run - m_new)
        w = np.exp(scores - m_new[..., None])
        s_run = s_run * rescale + w.sum(axis=-1)
        acc = acc * rescale[..., None] + np.einsum("mht,thd->mhd", w, vb)
        m_run = m_new
    out = acc / s_run[..., None]
    return out[0] if q.ndim == 2 else out
