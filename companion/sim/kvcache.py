"""Paged KV cache: physical blocks, block tables, reference counts, copy-on-write, prefix cache,
preemption by recompute, and paged attention over a numpy KV store (8.3.1-8.3.4, 17 §5).

The pieces, smallest first:

* ``BlockManager``: a pool of ``num_blocks`` fixed-size physical blocks of ``block_tokens``
  token slots, one block table (logical block -> physical block) per sequence, and a reference
  count per physical block. A block returns to the free pool only when its last reference is
  released (8.3.2). Appending to a sequence whose partially filled tail block is shared copies
  that block first (copy-on-write) and records the copy so the K/V data can be copied too.
* ``PrefixCache``: an SGLang-style radix tree keyed by full token blocks; it keeps the blocks of
  finished requests (admission), finds the longest cached prefix of a new request, and evicts
  least-recently-used unreferenced leaves when the pool is short (8.3.3-8.3.4).
* ``KVStore`` + ``paged_attention``: K and V arrays of shape (num_blocks, block_tokens, heads,
  head_dim) written and read through block tables; the output equals ``dense_attention`` over
  the same tokens (17 §5's "the kernel walks the block table").
* ``page_sequences``, ``fill_kv_pool``, ``prefix_tree``: the chapters' worked examples computed
  by actually allocating blocks (8.3.1's 52 and 44 tokens, 8.3.2's 131 blocks and 35 requests,
  17 §5's 96% and 760, Figure 8-17's tree).

Everything counts tokens and blocks; bytes appear only where a block's size in bytes is known
(``BlockManager.for_budget``).
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Hashable, NamedTuple

import numpy as np

from companion import validate as val
from companion.formulas.core import kv_bytes_per_token
from companion.specs import Model

__all__ = [
    "OutOfBlocks", "BlockCopy", "BlockManager", "PrefixCache", "KVStore", "paged_attention",
    "dense_attention", "PagingReport", "page_sequences", "PoolFill", "fill_kv_pool",
    "TreeNode", "PrefixTree", "prefix_tree",
]


class OutOfBlocks(RuntimeError):
    """The free pool holds fewer blocks than an allocation needs."""


class BlockCopy(NamedTuple):
    """One copy-on-write: ``tokens`` valid slots of physical block ``src`` copied into ``dst``."""

    seq_id: Hashable
    src: int
    dst: int
    tokens: int


_NO_BLOCKS = np.zeros(0, dtype=np.int64)
_NO_BLOCKS.setflags(write=False)


def _blocks_for(n_tokens: int, block_tokens: int) -> int:
    """ceil(L / p): blocks a sequence of L tokens occupies (8.3.1)."""
    return -(-n_tokens // block_tokens)


class BlockManager:
    """A paged KV pool: free list, per-sequence block tables, reference counts (8.3.1-8.3.2).

    ``allocate``/``append``/``fork``/``free`` keep the invariant: a block's reference count is
    the number of block tables (plus external holders such as a prefix cache) that point at it,
    and a block is in the free pool exactly when its count is zero. Physical ids handed out are
    the lowest free ones first on a fresh pool; freed blocks are reused most-recent first.

    Block tables are kept as numpy arrays and the free pool as a numpy stack, so allocating or
    freeing a whole sequence costs a few array operations, not a Python loop over its blocks
    (a 10,000-request service run allocates and frees about 1.4 million blocks).
    """

    def __init__(self, num_blocks: int, block_tokens: int = 16, *,
                 block_bytes: float | None = None):
        self.num_blocks = val.count("num_blocks", num_blocks)
        self.block_tokens = val.tokens("block_tokens", block_tokens, minimum=1)
        self.block_bytes = None if block_bytes is None else val.positive("block_bytes", block_bytes)
        # free pool as a stack: the top is _free[_n_free - 1]; slicing hands out many at once
        self._free = np.arange(self.num_blocks - 1, -1, -1, dtype=np.int64)
        self._n_free = self.num_blocks
        self._ref = np.zeros(self.num_blocks, dtype=np.int64)
        # sum of all counts: it equals the blocks in use exactly when no block is shared, and
        # then a sequence's blocks all go back to the pool when it is freed (a fast path)
        self._total_refs = 0
        self._held = np.zeros(self.num_blocks, dtype=np.int64)  # references held outside tables
        self._tables: dict[Hashable, np.ndarray] = {}   # int64 arrays, never changed in place
        self._tokens: dict[Hashable, int] = {}
        self._preempted: dict[Hashable, int] = {}
        self.pending_copies: list[BlockCopy] = []
        self.copies_made = 0
        self.preemptions = 0
        self.recomputed_tokens = 0

    @classmethod
    def for_budget(cls, kv_budget_bytes: float, model: Model, *, block_tokens: int = 16,
                   bytes_per_value: float = 2) -> "BlockManager":
        """A pool holding floor(budget / (p x KV bytes per token)) blocks of ``model``'s KV.

        12 GiB of Qwen3-8B KV in 16-token blocks of 2,359,296 B: 5461 blocks (8.1.2, 8.3.2).
        """
        budget = val.positive("kv_budget_bytes", kv_budget_bytes)
        p = val.tokens("block_tokens", block_tokens, minimum=1)
        block_bytes = p * kv_bytes_per_token(model, bytes_per_value)
        n = int(budget // block_bytes)
        if n < 1:
            raise ValueError(f"kv_budget_bytes: {budget:g} B is smaller than one block "
                             f"({block_bytes:g} B)")
        return cls(n, p, block_bytes=block_bytes)

    # --- sizes ---------------------------------------------------------------------------
    @property
    def free_blocks(self) -> int:
        return self._n_free

    @property
    def used_blocks(self) -> int:
        return self.num_blocks - self._n_free

    @property
    def used_bytes(self) -> float:
        """Bytes held by used blocks (needs ``block_bytes``)."""
        if self.block_bytes is None:
            raise ValueError("block_bytes: unknown; build the pool with BlockManager.for_budget "
                             "or pass block_bytes")
        return self.used_blocks * self.block_bytes

    def blocks_needed(self, n_tokens: int) -> int:
        """ceil(n_tokens / block_tokens)."""
        return _blocks_for(val.tokens("n_tokens", n_tokens), self.block_tokens)

    def can_allocate(self, n_tokens: int) -> bool:
        """Whether a new sequence of ``n_tokens`` tokens fits in the free pool now."""
        return self.blocks_needed(n_tokens) <= self._n_free

    # --- queries -------------------------------------------------------------------------
    def __contains__(self, seq_id) -> bool:
        return seq_id in self._tables

    @property
    def sequences(self) -> list:
        """Sequence ids holding blocks, oldest allocation first."""
        return list(self._tables)

    def block_table(self, seq_id) -> list[int]:
        """The sequence's physical block ids, in logical order (a copy)."""
        return self._table(seq_id).tolist()

    def num_tokens(self, seq_id) -> int:
        self._table(seq_id)
        return self._tokens[seq_id]

    def refcount(self, block: int) -> int:
        return int(self._ref[self._block_id("block", block)])

    def tail_unused(self, seq_id) -> int:
        """Unused slots in the sequence's tail block: p ceil(L/p) - L (8.3.1)."""
        return len(self._table(seq_id)) * self.block_tokens - self._tokens[seq_id]

    @property
    def references(self) -> int:
        """Block-table entries over all sequences (8.3.2's 416)."""
        return sum(len(t) for t in self._tables.values())

    @property
    def preempted(self) -> dict:
        """Preempted sequence id -> tokens to recompute when it resumes."""
        return dict(self._preempted)

    def _table(self, seq_id) -> np.ndarray:
        try:
            return self._tables[seq_id]
        except (KeyError, TypeError):
            raise KeyError(f"seq_id: no sequence {seq_id!r} holds blocks") from None

    def _block_id(self, name: str, block) -> int:
        b = val.integer(name, block, minimum=0)
        if b >= self.num_blocks:
            raise ValueError(f"{name}: block {b} is outside the pool of {self.num_blocks}")
        return b

    def _block_ids(self, name: str, blocks) -> np.ndarray:
        arr = np.asarray(val.sequence(name, blocks, min_len=0))
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            arr = np.array([self._block_id(f"{name}[{i}]", b) for i, b in enumerate(blocks)],
                           dtype=np.int64)
        arr = arr.astype(np.int64, copy=False)
        if arr.min() < 0 or arr.max() >= self.num_blocks:
            raise ValueError(f"{name}: block ids must lie in [0, {self.num_blocks})")
        if arr.size > 1 and np.unique(arr).size != arr.size:
            raise ValueError(f"{name}: a block appears twice")
        idle = self._ref[arr] == 0
        if idle.any():
            raise ValueError(f"{name}: block(s) {arr[idle].tolist()} are free; "
                             f"only blocks in use can be shared or held")
        return arr

    # --- the free pool -------------------------------------------------------------------
    def _take(self, k: int, op: str, seq_id, n: int) -> np.ndarray:
        """k blocks from the top of the free stack (count 1 each), as an int64 array."""
        if k > self._n_free:
            raise OutOfBlocks(f"{op}({seq_id!r}, {n}): needs {k} block(s) but only "
                              f"{self._n_free} of {self.num_blocks} are free")
        if k == 0:
            return _NO_BLOCKS
        top = self._n_free
        ids = self._free[top - k:top][::-1].copy()
        self._n_free = top - k
        self._ref[ids] = 1
        self._total_refs += k
        return ids

    def _drop(self, blocks: np.ndarray) -> np.ndarray:
        """Release one reference on each (distinct) block of an int64 array; return the ones
        that went back to the pool, pushed onto the free stack in order."""
        if blocks.size == 0:
            return _NO_BLOCKS
        ref = self._ref
        if self._total_refs == self.num_blocks - self._n_free:
            ref[blocks] = 0          # no block is shared: every count is 1, all go back
            released = blocks
        else:
            counts = ref.take(blocks)
            counts -= 1
            ref[blocks] = counts
            released = blocks[counts == 0]
        self._total_refs -= blocks.size
        k = released.size
        self._free[self._n_free:self._n_free + k] = released
        self._n_free += k
        return released

    # --- sequence operations -------------------------------------------------------------
    def allocate(self, seq_id, n_tokens: int, *, shared_blocks=(), share_from=None) -> list[int]:
        """Give a new sequence room for ``n_tokens`` tokens; return its block table.

        ``shared_blocks`` are full physical blocks already in use (a cached or common prefix)
        that become the sequence's first logical blocks with their count raised by one; only
        the remaining ceil(n/p) - len(shared) blocks come from the pool (8.3.1's A and B).
        ``share_from`` names a sequence instead, whose full blocks (floor(its tokens / p)) are
        shared that way: a prefix held as a sequence of its own needs no checking per block.
        """
        self._allocate(seq_id, n_tokens, shared_blocks, share_from)
        return self._tables[seq_id].tolist()

    def allocate_count(self, seq_id, n_tokens: int, *, shared_blocks=(),
                       share_from=None) -> int:
        """``allocate``, returning how many blocks came from the free pool instead of the block
        table: the whole-sequence fast path for a driver that only counts blocks (a service
        simulation allocating thousands of sequences builds no per-block Python objects)."""
        return self._allocate(seq_id, n_tokens, shared_blocks, share_from)

    def _allocate(self, seq_id, n_tokens, shared_blocks, share_from) -> int:
        """allocate(); returns the number of fresh blocks."""
        n = (n_tokens if type(n_tokens) is int and n_tokens >= 0
             else val.tokens("n_tokens", n_tokens))
        if seq_id in self._tables:
            raise ValueError(f"seq_id: sequence {seq_id!r} already holds blocks")
        if share_from is not None:
            if not (isinstance(shared_blocks, (tuple, list)) and not shared_blocks):
                raise ValueError("share_from: give shared_blocks or share_from, not both")
            try:
                source = self._tables[share_from]
            except (KeyError, TypeError):
                raise ValueError(f"share_from: no sequence {share_from!r} holds blocks") from None
            shared = source[:self._tokens[share_from] // self.block_tokens]
            name = "share_from"
        elif isinstance(shared_blocks, (tuple, list)) and not shared_blocks:
            shared, name = _NO_BLOCKS, "shared_blocks"
        else:
            shared, name = self._block_ids("shared_blocks", shared_blocks), "shared_blocks"
        if shared.size and shared.size * self.block_tokens > n:
            raise ValueError(f"{name}: {shared.size} full blocks hold "
                             f"{shared.size * self.block_tokens} tokens, more than n_tokens={n}")
        fresh = self._take(-(-n // self.block_tokens) - shared.size, "allocate", seq_id, n)
        if shared.size:
            self._ref[shared] += 1
            self._total_refs += shared.size
            table = np.concatenate((shared, fresh))
        else:
            table = fresh
        self._tables[seq_id] = table
        self._tokens[seq_id] = n
        return fresh.size

    def append(self, seq_id, n_tokens: int = 1) -> list[int]:
        """Grow a sequence by ``n_tokens`` tokens; return the newly allocated physical blocks.

        If the tail block is partly filled and shared (after a fork), it is copied first
        (copy-on-write, 8.3.2): the copy is the first returned block and is recorded in
        ``pending_copies``. Raises OutOfBlocks, changing nothing, when the pool is short.
        """
        table = self._table(seq_id)
        n = (n_tokens if type(n_tokens) is int and n_tokens >= 0
             else val.tokens("n_tokens", n_tokens))
        p = self.block_tokens
        cur = self._tokens[seq_id]
        filled = cur % p
        cow = int(n > 0 and filled != 0 and self._ref[table[-1]] > 1)
        grow = _blocks_for(cur + n, p) - len(table)
        if grow + cow == 0:          # the tail block has room (most decode steps)
            self._tokens[seq_id] = cur + n
            return []
        new = self._take(grow + cow, "append", seq_id, n)
        if cow:
            src, dst = int(table[-1]), int(new[0])
            self._ref[src] -= 1  # still > 0: the other branch keeps it
            self._total_refs -= 1
            self.pending_copies.append(BlockCopy(seq_id, src, dst, filled))
            self.copies_made += 1
            table = table[:-1]   # the copy (new[0]) replaces the shared tail block
        self._tables[seq_id] = np.concatenate((table, new))
        self._tokens[seq_id] = cur + n
        return new.tolist()

    def fork(self, parent_id, child_id) -> list[int]:
        """Start ``child_id`` as a copy of ``parent_id`` sharing every block (counts +1)."""
        table = self._table(parent_id)
        if child_id in self._tables:
            raise ValueError(f"child_id: sequence {child_id!r} already holds blocks")
        if table.size:
            self._ref[table] += 1
            self._total_refs += table.size
        self._tables[child_id] = table   # arrays are never changed in place: safe to share
        self._tokens[child_id] = self._tokens[parent_id]
        return table.tolist()

    def free(self, seq_id) -> list[int]:
        """Drop the sequence's references; return the blocks that went back to the pool."""
        return self._free_sequence(seq_id).tolist()

    def free_count(self, seq_id) -> int:
        """``free``, returning how many blocks went back to the pool instead of their ids (the
        whole-sequence fast path, as ``allocate_count``)."""
        return self._free_sequence(seq_id).size

    def _free_sequence(self, seq_id) -> np.ndarray:
        table = self._table(seq_id)
        del self._tables[seq_id], self._tokens[seq_id]
        return self._drop(table)

    def truncate(self, seq_id, n_tokens: int) -> list[int]:
        """Shrink a sequence to ``n_tokens`` tokens (rollback of rejected draft tokens, 8.5.1);
        return the blocks that went back to the pool."""
        table = self._table(seq_id)
        n = val.tokens("n_tokens", n_tokens)
        if n > self._tokens[seq_id]:
            raise ValueError(f"n_tokens: {n} exceeds the sequence's {self._tokens[seq_id]} tokens")
        keep = _blocks_for(n, self.block_tokens)
        self._tables[seq_id] = table[:keep]
        self._tokens[seq_id] = n
        return self._drop(table[keep:]).tolist()

    # --- references held outside block tables (a prefix cache) ----------------------------
    def hold(self, blocks) -> None:
        """Add one outside reference to each (in-use) block, e.g. a prefix cache keeping it."""
        arr = self._block_ids("blocks", blocks)
        self._ref[arr] += 1
        self._total_refs += arr.size
        self._held[arr] += 1

    def release(self, blocks) -> list[int]:
        """Drop one outside reference per block; return the blocks that went back to the pool."""
        arr = self._block_ids("blocks", blocks)
        if (self._held[arr] == 0).any():
            raise ValueError(f"blocks: {arr[self._held[arr] == 0].tolist()} hold no outside "
                             f"reference to release")
        self._held[arr] -= 1
        return self._drop(arr).tolist()

    # --- preemption by recompute (8.3.2, 17 §5) ---------------------------------------------
    def preempt(self, seq_id) -> int:
        """Evict a sequence's blocks; return the tokens it must recompute when it resumes.

        Recompute (not swap) policy: the KV is dropped and rebuilt from the saved input and
        output, so all ``num_tokens`` tokens run through prefill again (8.3.2's 1805 extra
        tokens with a 1 GiB pool). Blocks shared with other sequences stay in use.
        """
        tokens = self.num_tokens(seq_id)
        self.free(seq_id)
        self._preempted[seq_id] = tokens
        self.preemptions += 1
        return tokens

    def resume(self, seq_id) -> int:
        """Re-allocate a preempted sequence; return the tokens to recompute (and count them)."""
        if seq_id not in self._preempted:
            raise KeyError(f"seq_id: sequence {seq_id!r} is not preempted")
        tokens = self._preempted[seq_id]
        self.allocate(seq_id, tokens)
        del self._preempted[seq_id]
        self.recomputed_tokens += tokens
        return tokens

    def make_room(self, n_blocks: int, *, protect=(), victims=None) -> list[tuple]:
        """Preempt sequences until ``n_blocks`` blocks are free; return [(seq_id, tokens), ...].

        Victims default to the most recently allocated sequence first (vLLM's recompute
        preemption under first-come-first-served); ``protect`` ids are never chosen. Raises
        OutOfBlocks, preempting nothing, when even preempting every candidate would not do.
        """
        need = val.tokens("n_blocks", n_blocks)
        kept = set(protect)
        order = list(reversed(self._tables)) if victims is None else list(victims)
        order = [s for s in order if s not in kept]
        for s in order:
            self._table(s)
        if self._n_free >= need:
            return []
        trial = self._ref.copy()
        for s in order:
            trial[self._tables[s]] -= 1
        if self._n_free + int((trial[self._ref > 0] == 0).sum()) < need:
            raise OutOfBlocks(f"make_room: {need} blocks cannot be freed even by preempting "
                              f"all {len(order)} candidate sequences")
        done = []
        for s in order:
            if self._n_free >= need:
                break
            done.append((s, self.preempt(s)))
        return done

    # --- copy-on-write log ---------------------------------------------------------------
    def pop_copies(self) -> list[BlockCopy]:
        """Return and clear the copy-on-write records not yet applied to the K/V data."""
        out, self.pending_copies = self.pending_copies, []
        return out

    # --- consistency ---------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise AssertionError unless counts, tables and the free pool agree (no leak, no
        double free): count[b] = table entries + outside holds, free <=> count 0, no duplicates."""
        expect = self._held.copy()
        for seq_id, table in self._tables.items():
            assert table.dtype == np.int64 and table.ndim == 1, f"sequence {seq_id!r}: bad table"
            assert np.unique(table).size == table.size, f"sequence {seq_id!r} maps a block twice"
            assert len(table) == _blocks_for(self._tokens[seq_id], self.block_tokens), \
                f"sequence {seq_id!r}: {len(table)} blocks for {self._tokens[seq_id]} tokens"
            np.add.at(expect, table, 1)
        assert (expect == self._ref).all(), "reference counts disagree with the block tables"
        assert self._total_refs == int(self._ref.sum()), "the count total is off"
        free = self._free[:self._n_free]
        assert np.unique(free).size == free.size, "a block is in the free pool twice"
        assert (self._ref[free] == 0).all(), "a referenced block is in the free pool"
        assert free.size + int((self._ref > 0).sum()) == self.num_blocks, "a block leaked"


# --- prefix cache (8.3.3-8.3.4) ---------------------------------------------------------------

class _Node:
    __slots__ = ("key", "block", "parent", "children", "last_used")

    def __init__(self, key, block, parent):
        self.key, self.block, self.parent = key, block, parent
        self.children: dict = {}
        self.last_used = 0


def _token_ids(name: str, tokens) -> tuple:
    """A 1-D sequence of whole, non-negative token ids, as a tuple of ints."""
    seq = val.sequence(name, tokens, min_len=0)
    arr = np.asarray(seq)
    if arr.size == 0:
        return ()
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence of token ids, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name}[{i}]: expected a whole token id, got {seq[i]!r}")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected token ids (whole numbers), got {arr.dtype} items")
    if arr.min() < 0:
        raise ValueError(f"{name}: token ids must be >= 0")
    return tuple(arr.tolist())


class PrefixCache:
    """A radix tree of full token blocks over a BlockManager, as in SGLang (8.3.3-8.3.4).

    Each tree node is one full block: its key is the block's token ids, its value the physical
    block holding their KV. The cache holds one reference on every cached block, so a block
    outlives the request that wrote it (admission) and is evictable only when no running
    sequence uses it (count 1). ``admit`` finds the longest cached prefix of a new request and
    allocates the request on top of it; ``finish`` inserts a finished request's full blocks
    and frees the request; ``evict`` removes least-recently-used unreferenced leaves.
    """

    def __init__(self, manager: BlockManager):
        self.manager = val.instance("manager", manager, BlockManager)
        self.root = _Node((), -1, None)
        self._leaves: set[_Node] = set()  # nodes without children: the eviction candidates
        self._clock = itertools.count(1)
        self.hit_tokens = 0
        self.miss_tokens = 0
        self.evicted_blocks = 0
        self.cached_blocks = 0

    @property
    def hit_ratio(self) -> float:
        total = self.hit_tokens + self.miss_tokens
        return self.hit_tokens / total if total else 0.0

    def _keys(self, tokens: tuple):
        p = self.manager.block_tokens
        return [tokens[i:i + p] for i in range(0, len(tokens) - p + 1, p)]

    def match(self, tokens) -> list[int]:
        """Physical blocks of the longest cached full-block prefix of ``tokens`` (marks them
        used)."""
        return self._match(_token_ids("tokens", tokens))

    def _match(self, t: tuple) -> list[int]:
        node, blocks, now = self.root, [], next(self._clock)
        for key in self._keys(t):
            node = node.children.get(key)
            if node is None:
                break
            node.last_used = now
            blocks.append(node.block)
        return blocks

    def admit(self, seq_id, tokens) -> int:
        """Allocate a new request on top of its cached prefix; return the cached (hit) tokens.

        Hits and misses are counted in tokens; when the pool is short, unreferenced cached
        leaves are evicted (LRU) first. Raises OutOfBlocks when even that is not enough.
        """
        t = _token_ids("tokens", tokens)
        m = self.manager
        if seq_id in m:
            raise ValueError(f"seq_id: sequence {seq_id!r} already holds blocks")
        cached = self._match(t)
        need = _blocks_for(len(t), m.block_tokens) - len(cached)
        if need > m.free_blocks:
            # pin the matched path so eviction cannot take it while we make room
            if cached:
                m.hold(cached)
            try:
                self.evict(need - m.free_blocks)
            finally:
                if cached:
                    m.release(cached)
        m.allocate(seq_id, len(t), shared_blocks=cached)
        hit = len(cached) * m.block_tokens
        self.hit_tokens += hit
        self.miss_tokens += len(t) - hit
        return hit

    def insert(self, tokens, blocks) -> int:
        """Cache the full blocks of ``tokens`` stored in physical ``blocks``; return new nodes.

        Blocks already cached under the same content are only marked used (the caller's
        duplicate block is not kept); new nodes take one reference each.
        """
        return self._insert(_token_ids("tokens", tokens),
                            list(val.sequence("blocks", blocks, min_len=0)))

    def _insert(self, t: tuple, blocks: list) -> int:
        keys = self._keys(t)
        if len(blocks) < len(keys):
            raise ValueError(f"blocks: {len(blocks)} blocks for {len(keys)} full token blocks")
        node, now, new_blocks = self.root, next(self._clock), []
        for key, block in zip(keys, blocks):
            child = node.children.get(key)
            if child is None:
                if len(new_blocks) == 0:
                    # validate before the tree changes: one hold call below covers every block
                    self.manager._block_ids("blocks", blocks[:len(keys)])
                self._leaves.discard(node)
                child = node.children[key] = _Node(key, int(block), node)
                self._leaves.add(child)
                new_blocks.append(int(block))
            child.last_used = now
            node = child
        if new_blocks:
            self.manager.hold(new_blocks)
        self.cached_blocks += len(new_blocks)
        return len(new_blocks)

    def finish(self, seq_id, tokens, *, admit: bool = True) -> int:
        """A request ended: cache its full blocks (if ``admit``) and free it; return new nodes.

        ``tokens`` are the ids whose KV the sequence holds (its first num_tokens tokens).
        """
        m = self.manager
        t = _token_ids("tokens", tokens)
        n = m.num_tokens(seq_id)
        if len(t) < n:
            raise ValueError(f"tokens: {len(t)} ids for a sequence holding {n} tokens")
        added = self._insert(t[:n], m.block_table(seq_id)) if admit else 0
        m.free(seq_id)
        return added

    def evict(self, n_blocks: int) -> int:
        """Free up to ``n_blocks`` blocks by dropping LRU leaves no sequence uses; return freed."""
        want = val.tokens("n_blocks", n_blocks)
        ref = self.manager._ref
        # a leaf whose only reference is the cache's own is unused by every running sequence
        heap = [(n.last_used, id(n), n) for n in self._leaves if ref[n.block] == 1]
        heapq.heapify(heap)
        victims: list[int] = []
        while heap and len(victims) < want:
            _, _, node = heapq.heappop(heap)
            parent = node.parent
            del parent.children[node.key]
            self._leaves.discard(node)
            victims.append(node.block)
            if parent is not self.root and not parent.children:
                self._leaves.add(parent)
                if ref[parent.block] == 1:
                    heapq.heappush(heap, (parent.last_used, id(parent), parent))
        if victims:
            self.manager.release(victims)
        self.cached_blocks -= len(victims)
        self.evicted_blocks += len(victims)
        return len(victims)


# --- paged attention in numpy (8.3.1, 17 §5) ---------------------------------------------------

def _array(name: str, value, ndim: tuple[int, ...]) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(value).__name__}")
    if value.ndim not in ndim:
        raise ValueError(f"{name}: expected {' or '.join(map(str, ndim))} dimensions, "
                         f"got shape {value.shape}")
    if value.dtype.kind not in "fiu" or not np.isfinite(value).all():
        raise ValueError(f"{name}: expected finite real numbers")
    return value


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
        k = _array("k", k, (3,))
        v = _array("v", v, (3,))
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
        idx = np.asarray(table[:_blocks_for(n, self.block_tokens)])
        shape = (-1, self.n_kv_heads, self.head_dim)
        return self.k[idx].reshape(shape)[:n], self.v[idx].reshape(shape)[:n]


def _queries(q: np.ndarray, n_kv_heads: int, head_dim: int) -> tuple[np.ndarray, int]:
    """q as (m, heads, head_dim) and the query heads per KV head (GQA group size)."""
    q = _array("q", q, (2, 3))
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
    k = _array("k", k, (3,))
    v = _array("v", v, (3,))
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
    for logical in range(_blocks_for(n, p)):
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


# --- the chapters' worked examples, by allocation ------------------------------------------------

@dataclass(frozen=True)
class PagingReport:
    """What paging a set of sequences allocates (8.3.1, Exercise 8-3, 17 §5).

    ``slots`` per sequence = its block-table length x p; ``allocated_tokens`` = physical blocks
    x p (shared blocks counted once); ``stored_tokens`` = distinct tokens held (a shared prefix
    once); ``unused_tokens`` = allocated - stored; ``reserved_tokens`` = max_tokens per sequence
    reserved up front (the contiguous worst case), with ``reserved_unused`` = reserved - sum(L).
    """

    block_tokens: int
    lengths: tuple[int, ...]
    slots: tuple[int, ...]
    tail_unused: tuple[int, ...]
    references: int
    physical_blocks: int
    allocated_tokens: int
    stored_tokens: int
    unused_tokens: int
    shared_blocks: int
    reserved_tokens: int | None
    reserved_unused: int | None

    @property
    def unused_fraction(self) -> float:
        """unused / allocated slots."""
        return self.unused_tokens / self.allocated_tokens if self.allocated_tokens else 0.0

    @property
    def sharing_saving(self) -> float:
        """1 - physical blocks / block-table references: 1 - 131/416 = 69% (8.3.2)."""
        return 1.0 - self.physical_blocks / self.references if self.references else 0.0


def page_sequences(lengths, block_tokens: int = 16, *, max_tokens: int | None = None,
                   shared_prefix_tokens: int = 0, prefix_group=None) -> PagingReport:
    """Allocate sequences of the given lengths in a BlockManager and report slots and waste.

    Each sequence gets ceil(L/p) blocks and wastes p ceil(L/p) - L slots (8.3.1). Sequences in
    ``prefix_group`` (default: all) share their first ``shared_prefix_tokens`` tokens: the
    floor(shared/p) full blocks are stored once and referenced by every member (a partial block
    cannot be shared once the members write different tokens). ``max_tokens`` adds the
    contiguous reservation for comparison: 4 x 16 = 64 slots for 8.3.1's A-D, against 52 paged
    (p = 4) and 44 when A and B share 8 tokens.
    """
    seq = val.sequence("lengths", lengths)
    lens = tuple(val.tokens(f"lengths[{i}]", x) for i, x in enumerate(seq))
    p = val.tokens("block_tokens", block_tokens, minimum=1)
    shared = val.tokens("shared_prefix_tokens", shared_prefix_tokens)
    cap = None
    if max_tokens is not None:
        cap = val.tokens("max_tokens", max_tokens, minimum=1)
        if cap < max(lens):
            raise ValueError(f"max_tokens: {cap} is shorter than the longest sequence "
                             f"({max(lens)} tokens)")
    if prefix_group is None:
        group = list(range(len(lens)))
    else:
        gseq = val.sequence("prefix_group", prefix_group, min_len=2)
        group = [val.integer(f"prefix_group[{i}]", g, minimum=0) for i, g in enumerate(gseq)]
        if max(group) >= len(lens) or len(set(group)) != len(group):
            raise ValueError(f"prefix_group: expected distinct indices into lengths "
                             f"(0..{len(lens) - 1}), got {list(prefix_group)}")
    if shared and shared > min(lens[i] for i in group):
        raise ValueError(f"shared_prefix_tokens: {shared} exceeds the shortest sharing "
                         f"sequence ({min(lens[i] for i in group)} tokens)")
    mgr = BlockManager(max(1, sum(_blocks_for(n, p) for n in lens)), p)
    share_blocks = shared // p
    common: list[int] = []
    for i, n in enumerate(lens):
        if share_blocks and i in group and common:
            mgr.allocate(i, n, shared_blocks=common)
        else:
            table = mgr.allocate(i, n)
            if share_blocks and i in group:
                common = table[:share_blocks]
    dup_tokens = share_blocks * p * (len(group) - 1) if share_blocks else 0
    reserved = reserved_unused = None
    if cap is not None:
        # the contiguous worst case is paging with one max-length block per sequence
        res = BlockManager(len(lens), cap)
        for i, n in enumerate(lens):
            res.allocate(i, n)
        reserved = res.used_blocks * cap
        reserved_unused = reserved - sum(lens)
    stored = sum(lens) - dup_tokens
    return PagingReport(
        block_tokens=p, lengths=lens,
        slots=tuple(len(mgr.block_table(i)) * p for i in range(len(lens))),
        tail_unused=tuple(mgr.tail_unused(i) for i in range(len(lens))),
        references=mgr.references, physical_blocks=mgr.used_blocks,
        allocated_tokens=mgr.used_blocks * p, stored_tokens=stored,
        unused_tokens=mgr.used_blocks * p - stored,
        shared_blocks=share_blocks if len(group) > 1 else 0,
        reserved_tokens=reserved, reserved_unused=reserved_unused)


@dataclass(frozen=True)
class PoolFill:
    """Requests admitted into a KV pool until it is full (8.3.2, 17 §5).

    ``used_bytes[b]`` is the pool's used bytes with b requests admitted (the shared prefix,
    if any, is in every entry including b = 0).
    """

    num_blocks: int
    block_tokens: int
    block_bytes: float
    admitted: int
    used_bytes: tuple[float, ...]
    prefix_blocks: int
    private_blocks: int

    @property
    def prefix_bytes(self) -> float:
        return self.prefix_blocks * self.block_bytes

    @property
    def private_bytes(self) -> float:
        """Bytes each admitted request adds beyond the shared prefix."""
        return self.private_blocks * self.block_bytes

    @property
    def pool_bytes(self) -> float:
        return self.num_blocks * self.block_bytes


def fill_kv_pool(kv_budget_bytes: float, model: Model, request_tokens: int, *,
                 shared_prefix_tokens: int = 0, max_requests: int | None = None,
                 block_tokens: int = 16, bytes_per_value: float = 2) -> PoolFill:
    """Admit identical requests of ``request_tokens`` held tokens into a pool of
    floor(budget / block bytes) blocks until the next one no longer fits.

    With a shared prefix its floor(prefix/p) full blocks are allocated once and every request
    references them (8.3.2: 12 GiB of Qwen3-8B, 8448-token requests: 10 independent, 35
    sharing 6144 tokens; 16 sharing requests use 864 + 16 x 324 = 6048 MiB). A block of
    max-length tokens models the contiguous reservation (17 §5: 57 x 8000-token reservations
    in 60 GB). ``max_requests`` stops earlier.
    """
    mgr = BlockManager.for_budget(kv_budget_bytes, model, block_tokens=block_tokens,
                                  bytes_per_value=bytes_per_value)
    n = val.tokens("request_tokens", request_tokens, minimum=1)
    prefix = val.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if prefix > n:
        raise ValueError(f"shared_prefix_tokens: {prefix} exceeds request_tokens={n}")
    limit = None if max_requests is None else val.integer("max_requests", max_requests, minimum=0)
    p = mgr.block_tokens
    prefix_blocks = prefix // p
    common: list[int] = []
    if prefix_blocks:
        if not mgr.can_allocate(prefix_blocks * p):
            return PoolFill(mgr.num_blocks, p, mgr.block_bytes, 0, (0.0,), prefix_blocks,
                            mgr.blocks_needed(n) - prefix_blocks)
        common = mgr.allocate("prefix", prefix_blocks * p)
    used = [mgr.used_bytes]
    private = mgr.blocks_needed(n) - prefix_blocks
    while (limit is None or len(used) - 1 < limit) and private <= mgr.free_blocks:
        mgr.allocate(len(used) - 1, n, shared_blocks=common)
        used.append(mgr.used_bytes)
    return PoolFill(mgr.num_blocks, p, mgr.block_bytes, len(used) - 1, tuple(used),
                    prefix_blocks, private)


# --- Figure 8-17: prefix tree of token sequences -------------------------------------------------

@dataclass
class TreeNode:
    """A node of a compressed prefix tree: ``new_tokens`` on the edge from its parent,
    ``depth`` tokens from the root, ``ends`` the input indices whose sequence ends here,
    ``passes`` how many inputs run through it."""

    id: int
    parent: int | None
    depth: int
    new_tokens: int
    ends: list[int] = field(default_factory=list)
    passes: int = 0


@dataclass(frozen=True)
class PrefixTree:
    """Nodes (root first) and edges (parent, child, new tokens) for drawing Figure 8-17."""

    nodes: tuple[TreeNode, ...]
    edges: tuple[tuple[int, int, int], ...]

    @property
    def leaves(self) -> list[TreeNode]:
        ids = {e[0] for e in self.edges}
        return [n for n in self.nodes if n.id not in ids and n.parent is not None]


def prefix_tree(sequences) -> PrefixTree:
    """Compressed radix tree of token sequences (Figure 8-17, 8.3.3).

    The path from the root to a branch point is shared context, from the branch point to a
    leaf a private suffix; edges carry the number of new tokens, and a leaf's depth is its
    input's full length. A sequence that is a prefix of another ends at an inner node.
    """
    seqs = [_token_ids(f"sequences[{i}]", s)
            for i, s in enumerate(val.sequence("sequences", sequences))]
    # node: [label tuple, children dict first-token -> node, ends list, passes]
    root = [(), {}, [], 0]
    for idx, s in enumerate(seqs):
        node, i = root, 0
        node[3] += 1
        while i < len(s):
            child = node[1].get(s[i])
            if child is None:
                child = node[1][s[i]] = [s[i:], {}, [], 0]
                node, i = child, len(s)
                node[3] += 1
                break
            label = child[0]
            j = 1
            limit = min(len(label), len(s) - i)
            while j < limit and label[j] == s[i + j]:
                j += 1
            if j < len(label):  # split the edge at the first difference
                tail = [label[j:], child[1], child[2], child[3]]
                child[0], child[1], child[2] = label[:j], {label[j]: tail}, []
            child[3] += 1
            node, i = child, i + j
        node[2].append(idx)
    nodes: list[TreeNode] = []
    edges: list[tuple[int, int, int]] = []
    stack = [(root, None, 0)]
    while stack:
        raw, parent, depth = stack.pop()
        nid = len(nodes)
        d = depth + len(raw[0])
        nodes.append(TreeNode(nid, parent, d, len(raw[0]), list(raw[2]), raw[3]))
        if parent is not None:
            edges.append((parent, nid, len(raw[0])))
        for key in sorted(raw[1], reverse=True):
            stack.append((raw[1][key], nid, d))
    return PrefixTree(tuple(nodes), tuple(edges))
