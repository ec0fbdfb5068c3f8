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

K and V themselves, read through block tables, are in ``companion.sim.paged_attention``; the
chapters' worked examples computed by allocating blocks (8.3.1's 52 and 44 tokens, 8.3.2's 131
blocks and 35 requests, 17 §5's 96% and 760, Figure 8-17's tree, the copy-on-write and branch
steps, preemption under a full pool, prefix-cache replays) in ``companion.sim.kv_scenarios``.

Everything counts tokens and blocks; bytes appear only where a block's size in bytes is known
(``BlockManager.for_budget``).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Hashable, NamedTuple

import numpy as np

from companion import validate as val
from companion.formulas.core import kv_bytes_per_token
from companion.serves import serves
from companion.specs import Model

__all__ = ["OutOfBlocks", "BlockCopy", "BlockManager", "PrefixCache"]


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


@serves("8.3.1", "8.3.2")
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
            counts = ref[blocks]     # (not ref.take: its indices must be intp, int32 on wasm32)
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


@serves("8.3.3", "8.3.4")
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
        return self._match(val.token_ids("tokens", tokens))

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
        t = val.token_ids("tokens", tokens)
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
        return self._insert(val.token_ids("tokens", tokens),
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
        t = val.token_ids("tokens", tokens)
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
