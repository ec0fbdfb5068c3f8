"""The chapters' KV-cache scenarios, computed by allocating blocks in
``companion.sim.kvcache`` (8.3.1-8.3.4, 17 §5): what the ledger, the notebooks' drawings and
the explorers' readouts show.

* ``page_sequences``: sequences paged into blocks, a shared prefix referenced once (8.3.1's 52
  and 44 tokens, Exercise 8-3, 17 §5's waste);
* ``fill_kv_pool``: how many requests a budget holds with a prefix stored once (8.3.2's 35,
  17 §5's 760);
* ``prefix_tree``: the prefix tree of multi-turn inputs (Figure 8-17).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from companion import validate as val
from companion.sim.kvcache import BlockManager
from companion.specs import Model

__all__ = ["PagingReport", "page_sequences", "PoolFill", "fill_kv_pool", "TreeNode",
           "PrefixTree", "prefix_tree"]


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
