"""The chapters' KV-cache scenarios, computed by allocating blocks in
``companion.sim.kvcache`` (8.3.1-8.3.4, 17 §5): what the ledger, the notebooks' drawings and
the explorers' readouts show.

* ``page_sequences``: sequences paged into blocks, a shared prefix referenced once (8.3.1's 52
  and 44 tokens, Exercise 8-3, 17 §5's waste);
* ``fill_kv_pool``: how many requests a budget holds with a prefix stored once (8.3.2's 35,
  17 §5's 760);
* ``prefix_tree``: the prefix tree of multi-turn inputs (Figure 8-17);
* ``snapshot_pool`` / ``PoolSnapshot``: a manager's tables and counts frozen for a drawing;
* walks, step by step: ``grow_sequences`` (8.3.1's A-D growing token by token in one pool),
  ``copy_on_write_steps`` and ``branch_sharing_steps`` (8.3.2, a snapshot per step),
  ``decode_with_preemption`` (a generated decode run that outgrows its pool and preempts by
  recompute through ``BlockManager.make_room``/``resume``, 8.3.2's 1 GiB vs 2 GiB),
  ``multi_turn_inputs`` and ``replay_prefix_cache`` (a generated multi-turn agent's inputs for
  Figure 8-17 and their replay through a ``PrefixCache``, 8.3.3-8.3.4);
* ``context_organisation``: appending, rewriting the start or summarising an agent's context,
  replayed through a ``PrefixCache`` (8.3.3);
* ``allocator_demo``: the same arrivals in a contiguous and a paged pool (17 §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from companion import validate as val
from companion.chapters import ch08
from companion.formulas.core import held_tokens, kv_bytes, kv_bytes_at_context
from companion.formulas.kv_management import decode_kv_read_bytes, kv_blocks_needed
from companion.serves import serves
from companion.sim.kvcache import BlockManager, OutOfBlocks, PrefixCache
from companion.specs import QWEN3_8B, Model

__all__ = ["PagingReport", "page_sequences", "PoolFill", "fill_kv_pool", "TreeNode",
           "PrefixTree", "prefix_tree", "PoolSnapshot", "snapshot_pool", "SEQUENCE_NAMES",
           "grow_sequences",
           "copy_on_write_steps", "branch_sharing_pool", "branch_sharing_steps",
           "decode_with_preemption", "multi_turn_inputs", "replay_prefix_cache",
           "CONTEXT_OPTIONS", "ContextOption", "context_organisation",
           "ALLOCATOR_DEMO_SEQUENCES", "allocator_demo"]


@serves("8.3.1", "17.5")
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


@serves("8.3.1")
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
    mgr = BlockManager(max(1, sum(-(-n // p) for n in lens)), p)
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


@serves("8.3.2", "17.5")
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


@serves("8.3.2", "17.5")
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


@serves("8.3.3")
def prefix_tree(sequences) -> PrefixTree:
    """Compressed radix tree of token sequences (Figure 8-17, 8.3.3).

    The path from the root to a branch point is shared context, from the branch point to a
    leaf a private suffix; edges carry the number of new tokens, and a leaf's depth is its
    input's full length. A sequence that is a prefix of another ends at an inner node.
    """
    seqs = [val.token_ids(f"sequences[{i}]", s)
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


# --- a BlockManager's state at one moment, for drawings and readouts ---------------------------

@dataclass(frozen=True)
class PoolSnapshot:
    """What a BlockManager holds at one moment, in a form the drawings need.

    ``tables``: (name, physical block ids in logical order, tokens held) per sequence;
    ``refcounts``: reference count of every physical block (0 = free); ``label``: a caption.
    """

    block_tokens: int
    num_blocks: int
    tables: tuple[tuple[str, tuple[int, ...], int], ...]
    refcounts: tuple[int, ...]
    label: str = ""

    @property
    def references(self) -> int:
        """Block-table entries over all sequences (8.3.2's 416)."""
        return sum(len(t) for _, t, _ in self.tables)

    @property
    def used_blocks(self) -> int:
        """Physical blocks in use (8.3.2's 131)."""
        return sum(1 for r in self.refcounts if r > 0)

    @property
    def stored_tokens(self) -> int:
        """Distinct token slots written: per block, the fullest view any table has of it."""
        return sum(self.block_fill().values())

    @property
    def allocated_tokens(self) -> int:
        return self.used_blocks * self.block_tokens

    def block_fill(self) -> dict[int, int]:
        """Physical block -> slots filled (the largest fill any referencing table sees)."""
        p = self.block_tokens
        fill: dict[int, int] = {}
        for _, table, n in self.tables:
            for i, b in enumerate(table):
                fill[b] = max(fill.get(b, 0), min(p, n - i * p))
        return fill

    def owners(self) -> dict[int, list[int]]:
        """Physical block -> indices of the sequences whose tables point at it."""
        out: dict[int, list[int]] = {}
        for k, (_, table, _) in enumerate(self.tables):
            for b in table:
                out.setdefault(b, []).append(k)
        return out


def snapshot_pool(manager, label: str = "", names=None) -> PoolSnapshot:
    """Freeze a ``companion.sim.kvcache.BlockManager``'s tables and counts (for a drawing).

    ``names`` maps sequence ids to display names (default: ``str(seq_id)``).
    """
    m = val.instance("manager", manager, BlockManager)
    names = {} if names is None else dict(names)
    tables = tuple((str(names.get(s, s)), tuple(m.block_table(s)), m.num_tokens(s))
                   for s in m.sequences)
    # counts from the tables; ask the manager only if something else (a cache) holds blocks
    refs = [0] * m.num_blocks
    for _, table, _ in tables:
        for b in table:
            refs[b] += 1
    if sum(1 for r in refs if r) != m.used_blocks:
        refs = [m.refcount(b) for b in range(m.num_blocks)]
    return PoolSnapshot(m.block_tokens, m.num_blocks, tables, tuple(refs), str(label))


SEQUENCE_NAMES = "ABCDEFGH"   # display names of sequences in the walks


# --- 8.3's walks over the block manager, step by step --------------------------------------------

@serves("8.3.1")
def grow_sequences(lengths, block_tokens: int = 4, *, shared_prefix_tokens: int = 0,
                   prefix_group=(0, 1), pool_tokens: int | None = None) -> BlockManager:
    """A BlockManager holding sequences that grew one token at a time, in turn (as decode does),
    so their physical blocks interleave in the pool (8.3.1).

    The first member of ``prefix_group`` writes the ``shared_prefix_tokens`` first; the others
    then reference its full blocks (a partly filled block cannot be shared once the members write
    different tokens) and write the rest themselves. The pool holds exactly the blocks needed,
    or ``pool_tokens`` // p blocks (the rest stay free).
    """
    seq = val.sequence("lengths", lengths)
    lens = [val.tokens(f"lengths[{i}]", x, minimum=1) for i, x in enumerate(seq)]
    p = val.tokens("block_tokens", block_tokens, minimum=1)
    shared = val.tokens("shared_prefix_tokens", shared_prefix_tokens)
    group = [val.integer(f"prefix_group[{i}]", g) for i, g in
             enumerate(val.sequence("prefix_group", prefix_group))]
    if any(g >= len(lens) for g in group) or len(set(group)) != len(group):
        raise ValueError(f"prefix_group: expected distinct indices into lengths, got {group}")
    if shared and shared > min(lens[g] for g in group):
        raise ValueError(f"shared_prefix_tokens: {shared} exceeds the shortest sharing sequence")
    full = shared // p
    need = sum(kv_blocks_needed(n, p) for n in lens)
    if shared:                  # the other members reference the first one's full blocks
        need -= (len(group) - 1) * full
    size = need
    if pool_tokens is not None:
        size = val.tokens("pool_tokens", pool_tokens, minimum=1) // p
        if size < need:
            raise ValueError(f"pool_tokens: {pool_tokens} tokens hold {size} blocks of {p}, "
                             f"fewer than the {need} the sequences need")
    mgr = BlockManager(max(1, size), p)
    common: list[int] = []
    for i in range(len(lens)):
        if shared and i == group[0]:
            common = mgr.allocate(i, shared)[:full]
        elif shared and i in group:
            mgr.allocate(i, full * p, shared_blocks=common)
        else:
            mgr.allocate(i, 0)
    while True:
        grew = False
        for i, n in enumerate(lens):
            if mgr.num_tokens(i) < n:
                mgr.append(i, 1)
                grew = True
        if not grew:
            return mgr


@serves("8.3.2")
def copy_on_write_steps(full_blocks: int = 2,
                        shared_tail_tokens: int = ch08.COW_EXAMPLE_SHARED_TOKENS,
                        block_tokens: int = ch08.COW_EXAMPLE_BLOCK_TOKENS) -> list[PoolSnapshot]:
    """BlockManager states of 8.3.2's copy-on-write example, one per step.

    Two branches share a context of ``full_blocks`` full blocks plus ``shared_tail_tokens`` tokens
    in a partly filled tail block (the chapter: 3 tokens in a 4-token block). When the first
    branch writes, the shared tail is copied (copy-on-write); the second then writes in place;
    full blocks stay shared; when a branch ends, only its private blocks return to the pool.
    """
    full = val.count("full_blocks", full_blocks, minimum=0)
    p = val.tokens("block_tokens", block_tokens, minimum=2)
    tail = val.tokens("shared_tail_tokens", shared_tail_tokens, minimum=1)
    if tail >= p:
        raise ValueError(f"shared_tail_tokens: {tail} must be < block_tokens={p} (a partly "
                         f"filled tail block)")
    ctx = full * p + tail
    mgr = BlockManager(full + 1 + 4, p)
    names = {"A": "A", "B": "B"}
    out = []

    def snap(label):
        out.append(snapshot_pool(mgr, label, names))

    mgr.allocate("A", ctx)
    snap(f"prefill: {ctx} common tokens ({full} full blocks + {tail} in the tail block)")
    mgr.fork("A", "B")
    snap("fork: B's table points at the same blocks (counts 2)")
    mgr.append("A", 1)
    copies = mgr.pop_copies()
    snap(f"A writes: its tail is shared, so it is copied first ({copies[0].tokens} tokens "
         f"into block {copies[0].dst})")
    mgr.append("B", 1)
    snap("B writes in place: the old tail block is now B's alone")
    mgr.append("A", p)
    snap(f"A appends {p} tokens: one more private block")
    mgr.append("B", p)
    snap(f"B appends {p} tokens")
    mgr.free("A")
    snap("A ends: only its private blocks return; the full blocks stay for B")
    return out


@serves("8.3.2")
def branch_sharing_pool(branches: int = ch08.BRANCH_EXPERIMENT_BRANCHES,
                        shared_blocks: int = ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                        private_blocks: int = ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS,
                        block_tokens: int = ch08.BLOCK_TOKENS) -> BlockManager:
    """The end state of 8.3.2's branch experiment, each branch's private blocks written in one
    go (so they lie together in the pool): n forks of an s-block prefix, q private blocks each.
    """
    n = val.count("branches", branches)
    s = val.count("shared_blocks", shared_blocks, minimum=0)
    q = val.count("private_blocks", private_blocks, minimum=0)
    p = val.tokens("block_tokens", block_tokens, minimum=1)
    mgr = BlockManager(max(1, s + n * q), p)
    mgr.allocate(0, s * p)
    for k in range(1, n):
        mgr.fork(0, k)
    for k in range(n):
        mgr.append(k, q * p)
    return mgr


@serves("8.3.2")
def branch_sharing_steps(branches: int = ch08.BRANCH_EXPERIMENT_BRANCHES,
                         shared_blocks: int = ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                         private_blocks: int = ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS,
                         block_tokens: int = ch08.BLOCK_TOKENS, *, blocks_per_step: int = 3,
                         finish_first: bool = True) -> list[PoolSnapshot]:
    """BlockManager states of 8.3.2's branch experiment: prefill the common prefix, fork the
    branches, then the branches take turns writing private blocks, ``blocks_per_step`` each
    per step (4 branches, 95 shared, 9 private: 416 table entries on 131 physical blocks), so
    their blocks interleave in the pool. With ``finish_first`` a last step ends
    the first branch: only its private blocks are released, the prefix stays for the others.
    """
    n = val.count("branches", branches)
    s = val.count("shared_blocks", shared_blocks, minimum=0)
    q = val.count("private_blocks", private_blocks, minimum=0)
    p = val.tokens("block_tokens", block_tokens, minimum=1)
    per = val.count("blocks_per_step", blocks_per_step)
    mgr = BlockManager(max(1, s + n * q), p)
    letters = len(SEQUENCE_NAMES)
    names = {k: SEQUENCE_NAMES[k % letters] + ("" if k < letters else str(k)) for k in range(n)}
    out = []
    mgr.allocate(0, s * p)
    out.append(snapshot_pool(mgr, f"prefill of the common prefix ({s} blocks)", names))
    for k in range(1, n):
        mgr.fork(0, k)
    out.append(snapshot_pool(mgr, f"fork into {n} branches: {n} tables, one copy", names))
    written = 0
    while written < q:
        step = min(per, q - written)
        for _ in range(step):               # one block per branch in turn: they interleave
            for k in range(n):
                mgr.append(k, p)
        written += step
        out.append(snapshot_pool(mgr, f"each branch has written {written} of its {q} private "
                                      f"blocks", names))
    if finish_first and n > 1:
        mgr.free(0)
        out.append(snapshot_pool(mgr, "branch A ends: its private blocks return to the pool",
                                 names))
    return out


@serves("8.3.2")
def decode_with_preemption(kv_budget_bytes: float, prompt_tokens, output_tokens: int,
                           model=QWEN3_8B, *, block_tokens: int = 16) -> dict:
    """Run requests' decode in lockstep rounds over a KV pool, preempting by recompute when the
    pool runs out (vLLM's policy: the most recently admitted request goes first) (8.3.2).

    Every request allocates its prompt's KV, then each round every running request writes one
    more token's KV until it holds prompt + output - 1 tokens and leaves. A preempted request
    drops its KV and, once its blocks fit next to the running requests' remaining growth, is
    re-admitted by recomputing all the tokens it held. Returns per-round used blocks, the rounds
    with preemptions, the events (round, "preempt"/"resume", request, tokens) and the totals.
    """
    mgr = BlockManager.for_budget(kv_budget_bytes, model, block_tokens=block_tokens)
    prompts = [val.tokens(f"prompt_tokens[{i}]", x, minimum=1)
               for i, x in enumerate(val.sequence("prompt_tokens", prompt_tokens))]
    g = val.tokens("output_tokens", output_tokens, minimum=1)
    target = [held_tokens(x, g) for x in prompts]
    waiting = list(range(len(prompts)))   # never started
    running: list[int] = []
    used, preempt_rounds, events = [], [], []
    rnd = 0
    while waiting or running or mgr.preempted:
        # resume preempted requests first (oldest first), then admit new ones. A preempted
        # request comes back only when it fits next to everything the running requests will
        # still grow by; otherwise it would be preempted again at once (thrashing).
        for r in sorted(mgr.preempted):
            growth = sum(mgr.blocks_needed(target[s]) - len(mgr.block_table(s))
                         for s in running)
            if mgr.blocks_needed(mgr.preempted[r]) + growth <= mgr.free_blocks:
                events.append((rnd, "resume", r, mgr.resume(r)))
                running.append(r)
        while waiting and not mgr.preempted and mgr.can_allocate(prompts[waiting[0]]):
            r = waiting.pop(0)
            mgr.allocate(r, prompts[r])
            running.append(r)
        if not running:
            raise OutOfBlocks("kv_budget_bytes: the pool cannot hold even one request")
        for r in list(running):
            if r not in mgr:
                continue  # preempted earlier in this round
            if mgr.num_tokens(r) >= target[r]:
                continue
            try:
                mgr.append(r, 1)
            except OutOfBlocks:
                # lowest priority first, the requester included (it may preempt itself)
                done = mgr.make_room(1, victims=[s for s in reversed(running) if s in mgr])
                for s, toks in done:
                    running.remove(s)
                    events.append((rnd, "preempt", s, toks))
                    preempt_rounds.append(rnd)
                if r in mgr:
                    mgr.append(r, 1)
        for r in list(running):
            if r in mgr and mgr.num_tokens(r) >= target[r]:
                mgr.free(r)
                running.remove(r)
        used.append(mgr.used_blocks)
        rnd += 1
    mgr.check_invariants()
    return {"num_blocks": mgr.num_blocks, "used_blocks": used, "preempt_rounds": preempt_rounds,
            "preemptions": mgr.preemptions, "recomputed_tokens": mgr.recomputed_tokens,
            "rounds": rnd, "events": events}


@serves("8.3.3")
def multi_turn_inputs(*, common_tokens: int = 206, branch_rounds: int = 4,
                      extend_rounds: int = 3, seed: int = 0) -> list[list[int]]:
    """Token ids of a generated multi-turn agent's inputs shaped like Figure 8-17 (8.3.3).

    GENERATED, not the chapter's data (which it prints only in part): ``branch_rounds`` inputs
    share the first ``common_tokens`` tokens (the chapter: 4 rounds, 206 tokens) and then differ;
    ``extend_rounds`` more inputs each append to the last of them (a conversation growing along
    one path). Lengths and ids come from a seeded generator.
    """
    c = val.tokens("common_tokens", common_tokens, minimum=1)
    nb = val.count("branch_rounds", branch_rounds)
    ne = val.count("extend_rounds", extend_rounds, minimum=0)
    rng = np.random.default_rng(val.integer("seed", seed))
    vocab = 151_936

    def fresh(n, avoid=None):
        ids = rng.integers(0, vocab, size=n).tolist()
        while avoid is not None and ids[0] in avoid:   # make the branches differ at once
            ids[0] = int(rng.integers(0, vocab))
        return ids

    common = fresh(c)
    inputs, firsts = [], set()
    for _ in range(nb):
        suffix = fresh(int(rng.integers(40, 160)), firsts)
        firsts.add(suffix[0])
        inputs.append(common + suffix)
    for _ in range(ne):
        inputs.append(inputs[-1] + fresh(int(rng.integers(120, 420))))
    return inputs


@serves("8.3.4")
def replay_prefix_cache(inputs, num_blocks: int, *, block_tokens: int = 16,
                        interfering_tokens: int = 0, seed: int = 0) -> dict:
    """Replay inputs one after another through a PrefixCache over ``num_blocks`` blocks (8.3.4).

    Each input is admitted (reusing its longest cached prefix of full blocks), then finished and
    cached. Between inputs, an unrelated request of ``interfering_tokens`` tokens (GENERATED ids)
    passes through the same cache, competing for space. Returns per-input hit tokens and totals.
    """
    seqs = [list(s) for s in val.sequence("inputs", inputs)]
    mgr = BlockManager(val.count("num_blocks", num_blocks), block_tokens)
    cache = PrefixCache(mgr)
    rng = np.random.default_rng(val.integer("seed", seed))
    noise = val.tokens("interfering_tokens", interfering_tokens)
    hits = []
    for i, s in enumerate(seqs):
        h = cache.admit(("in", i), s)
        cache.finish(("in", i), s)
        hits.append(h)
        if noise:
            other = rng.integers(0, 151_936, size=noise).tolist()
            cache.admit(("noise", i), other)
            cache.finish(("noise", i), other)
    total = sum(len(s) for s in seqs)
    return {"input_tokens": total, "hit_tokens": sum(hits), "hits": hits,
            "reprocessed_tokens": total - sum(hits), "evicted_blocks": cache.evicted_blocks}


# --- 8.3.3: organising an agent's context ------------------------------------------------------

CONTEXT_OPTIONS = ("append", "rewrite", "summarise")


@serves("8.3.3")
@dataclass(frozen=True)
class ContextOption:
    """One way to continue a cached context into the next round (8.3.3).

    ``reusable_tokens`` are served by the prefix cache (whole blocks); ``prefill_tokens`` are
    computed now; ``summary_tokens`` are generated first, one decode step each, to write a
    summary (only when summarising), reading ``summary_kv_read_bytes`` of the old context's KV.
    Later decode steps attend over ``context_tokens``: the first reads
    ``kv_read_per_step_bytes``, the next ``output_tokens`` together read
    ``kv_read_over_output_bytes``.
    """

    name: str
    context_tokens: int
    reusable_tokens: int
    prefill_tokens: int
    summary_tokens: int
    summary_kv_read_bytes: float
    kv_bytes: float
    kv_read_per_step_bytes: float
    kv_read_over_output_bytes: float


@serves("8.3.3")
def context_organisation(model: Model = QWEN3_8B, *,
                         history_tokens: int = ch08.CONTEXT_HISTORY_TOKENS,
                         appended_tokens: int = ch08.CONTEXT_TOOL_RESULT_TOKENS,
                         summary_tokens: int = ch08.CONTEXT_SUMMARY_TOKENS,
                         rewrite_at_tokens: int = 0,
                         output_tokens: int = ch08.OUTPUT_TOKENS,
                         block_tokens: int = ch08.BLOCK_TOKENS,
                         bytes_per_value: float = 2) -> tuple[ContextOption, ...]:
    """Three ways to continue a cached ``history_tokens`` context with ``appended_tokens`` new
    ones (a tool result), each replayed through a ``PrefixCache`` (8.3.3):

    - ``append``: history + new tokens; the whole history is a cached prefix;
    - ``rewrite``: the instructions are edited from position ``rewrite_at_tokens`` on (0: the
      very first token), so only the blocks before that position match, although every later
      token is the same text;
    - ``summarise``: the model first writes a ``summary_tokens`` summary of the history (decode
      steps over the cached history), then the context becomes summary + new tokens, none of
      it cached.

    Token ids are synthetic (distinct integers): only where two sequences differ matters.
    """
    m = val.instance("model", model, Model)
    history = val.count("history_tokens", history_tokens)
    appended = val.tokens("appended_tokens", appended_tokens)
    summary = val.count("summary_tokens", summary_tokens)
    rewrite_at = val.tokens("rewrite_at_tokens", rewrite_at_tokens)
    if rewrite_at >= history:
        raise ValueError(f"rewrite_at_tokens: {rewrite_at} is not inside the "
                         f"{history}-token history (0 to {history - 1})")
    g = val.tokens("output_tokens", output_tokens)
    p = val.count("block_tokens", block_tokens)
    kw = dict(bytes_per_value=bytes_per_value)
    old = list(range(history))
    new_ids = list(range(history, history + appended))
    fresh = history + appended                     # ids no cached sequence contains
    edited = old[:rewrite_at] + [fresh] + old[rewrite_at + 1:]
    summary_ids = list(range(fresh + 1, fresh + 1 + summary))
    contexts = {"append": old + new_ids, "rewrite": edited + new_ids,
                "summarise": summary_ids + new_ids}
    options = []
    for name in CONTEXT_OPTIONS:
        tokens = contexts[name]
        mgr = BlockManager(2 * kv_blocks_needed(max(len(old), len(tokens)), p) + 1, p)
        cache = PrefixCache(mgr)
        cache.admit("previous round", old)
        cache.finish("previous round", old)
        hit = cache.admit("this round", tokens)
        writes = summary if name == "summarise" else 0
        L = len(tokens)
        options.append(ContextOption(
            name=name, context_tokens=L, reusable_tokens=hit, prefill_tokens=L - hit,
            summary_tokens=writes,
            summary_kv_read_bytes=decode_kv_read_bytes(m, history, writes, **kw),
            kv_bytes=kv_bytes(m, L, block_tokens=p, **kw),
            kv_read_per_step_bytes=kv_bytes_at_context(m, L, **kw),
            kv_read_over_output_bytes=decode_kv_read_bytes(m, L, g, **kw)))
    return tuple(options)


# --- 17 §5: the allocator demo, contiguous reservations vs paged blocks ----------------------

# (name, prompt tokens, tokens appended while decoding): A ends holding 40 tokens, the
# chapter's sequence A (blocks 0-15, 16-31 and 32-39)
ALLOCATOR_DEMO_SEQUENCES = (("A", 24, 16), ("B", 100, 20), ("C", 10, 13), ("D", 60, 30),
                            ("E", 50, 20), ("F", 30, 25))


@serves("17.5")
def allocator_demo(block_tokens: int = 16, max_len_tokens: int = 256, pool_tokens: int = 1024,
                   sequences=ALLOCATOR_DEMO_SEQUENCES) -> dict:
    """Run the same arrivals through two ``sim.kvcache.BlockManager`` pools over the same
    ``pool_tokens`` slots (17 §5): contiguous (one ``max_len_tokens`` block per request,
    reserved on arrival) and paged (``block_tokens`` blocks, allocated as tokens arrive).

    Every request arrives at once with its prompt, then each appends one token per decode step,
    in turn, so the paged pool interleaves blocks of different sequences. A request the
    contiguous pool cannot reserve for is turned away. Returns the two managers and the lists
    of admitted and rejected names for each.
    """
    block_tokens = val.tokens("block_tokens", block_tokens, minimum=1)
    max_len_tokens = val.tokens("max_len_tokens", max_len_tokens, minimum=1)
    pool_tokens = val.tokens("pool_tokens", pool_tokens, minimum=1)
    sequences = [(str(name), val.tokens(f"sequences[{i}] prompt", prompt, minimum=1),
                  val.tokens(f"sequences[{i}] growth", grow))
                 for i, (name, prompt, grow) in enumerate(val.sequence("sequences", sequences))]
    if pool_tokens % block_tokens or pool_tokens % max_len_tokens:
        raise ValueError(f"pool_tokens: {pool_tokens} must be a multiple of both block sizes")
    paged = BlockManager(pool_tokens // block_tokens, block_tokens)
    naive = BlockManager(pool_tokens // max_len_tokens, max_len_tokens)
    admitted = {"paged": [], "naive": []}
    rejected = {"paged": [], "naive": []}
    pools = {"paged": paged, "naive": naive}
    for name, prompt, grow in sequences:
        if prompt + grow > max_len_tokens:
            raise ValueError(f"sequences: {name} holds more than max_len_tokens")
        for kind, mgr in pools.items():
            try:
                mgr.allocate(name, prompt)
                admitted[kind].append(name)
            except OutOfBlocks:
                rejected[kind].append(name)
    grows = {name: grow for name, _, grow in sequences}
    for step in range(max(grows.values())):
        for name in grows:
            if step < grows[name]:
                for kind, mgr in pools.items():
                    if name in mgr:
                        mgr.append(name, 1)
    return {"paged": paged, "naive": naive, "admitted": admitted, "rejected": rejected}
