"""8.3 explorers and the small simulations behind its drawings.

Drivers (they only call ``companion.sim.kvcache.BlockManager``/``PrefixCache``; no allocator of
their own): ``grow_sequences`` (8.3.1's A-D growing token by token in one pool),
``copy_on_write_steps`` and ``branch_sharing_steps`` (8.3.2, state after each step),
``decode_with_preemption`` (a generated decode run that runs out of blocks),
``multi_turn_inputs`` and ``replay_prefix_cache`` (a generated multi-turn agent's inputs for
Figure 8-17 and their replay through a prefix cache).

Panels: ``PagingPanel`` (block size and lengths -> waste and table entries), ``BranchSharingPanel``
(references vs physical blocks), ``SharedPrefixCapacityPanel`` (864 + 324 b MiB, 35 requests),
``SnapshotSpacingPanel`` (hybrid-state snapshots: recompute vs storage), ``RetentionPanel``
(Figure 8-22: which prefixes a cache should keep).
"""

from __future__ import annotations

import math

import numpy as np

from companion import validate as v
from companion import calc, specs, units
from companion.figures.ch08_kv import (PoolSnapshot, SEQUENCE_COLORS, SHARED_COLOR,
                                       block_pool_layout, block_pool_legend_html,
                                       block_pool_traces, retention_bars_traces, snapshot_pool)
from companion.formulas import kv_management as km
from companion.explorers.base import Control, Panel, View
from companion.sim.kvcache import BlockManager, OutOfBlocks, PrefixCache

__all__ = ["grow_sequences", "copy_on_write_steps", "branch_sharing_pool", "branch_sharing_steps",
           "decode_with_preemption", "multi_turn_inputs", "replay_prefix_cache",
           "PagingPanel", "BranchSharingPanel", "SharedPrefixCapacityPanel",
           "SnapshotSpacingPanel", "RetentionPanel"]

_NAMES = "ABCDEFGH"


# --- drivers over the simulator -----------------------------------------------------------------

def grow_sequences(lengths, block_tokens: int = 4, *, shared_prefix_tokens: int = 0,
                   prefix_group=(0, 1), pool_tokens: int | None = None) -> BlockManager:
    """A BlockManager holding sequences that grew one token at a time, in turn (as decode does),
    so their physical blocks interleave in the pool (8.3.1).

    The first member of ``prefix_group`` writes the ``shared_prefix_tokens`` first; the others
    then reference its full blocks (a partly filled block cannot be shared once the members write
    different tokens) and write the rest themselves. The pool holds exactly the blocks needed,
    or ``pool_tokens`` // p blocks (the rest stay free).
    """
    seq = v.sequence("lengths", lengths)
    lens = [v.tokens(f"lengths[{i}]", x, minimum=1) for i, x in enumerate(seq)]
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    shared = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    group = [v.integer(f"prefix_group[{i}]", g) for i, g in
             enumerate(v.sequence("prefix_group", prefix_group))]
    if any(g >= len(lens) for g in group) or len(set(group)) != len(group):
        raise ValueError(f"prefix_group: expected distinct indices into lengths, got {group}")
    if shared and shared > min(lens[g] for g in group):
        raise ValueError(f"shared_prefix_tokens: {shared} exceeds the shortest sharing sequence")
    full = shared // p
    need = sum(calc.kv_blocks_needed(n, p) for n in lens)
    if shared:                  # the other members reference the first one's full blocks
        need -= (len(group) - 1) * full
    size = need
    if pool_tokens is not None:
        size = v.tokens("pool_tokens", pool_tokens, minimum=1) // p
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


def copy_on_write_steps(full_blocks: int = 2, shared_tail_tokens: int = km.COW_EXAMPLE_SHARED_TOKENS,
                        block_tokens: int = km.COW_EXAMPLE_BLOCK_TOKENS) -> list[PoolSnapshot]:
    """BlockManager states of 8.3.2's copy-on-write example, one per step.

    Two branches share a context of ``full_blocks`` full blocks plus ``shared_tail_tokens`` tokens
    in a partly filled tail block (the chapter: 3 tokens in a 4-token block). When the first
    branch writes, the shared tail is copied (copy-on-write); the second then writes in place;
    full blocks stay shared; when a branch ends, only its private blocks return to the pool.
    """
    full = v.count("full_blocks", full_blocks, minimum=0)
    p = v.tokens("block_tokens", block_tokens, minimum=2)
    tail = v.tokens("shared_tail_tokens", shared_tail_tokens, minimum=1)
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


def branch_sharing_pool(branches: int = km.BRANCH_EXPERIMENT_BRANCHES,
                        shared_blocks: int = km.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                        private_blocks: int = km.BRANCH_EXPERIMENT_PRIVATE_BLOCKS,
                        block_tokens: int = km.BLOCK_TOKENS) -> BlockManager:
    """The end state of 8.3.2's branch experiment, each branch's private blocks written in one
    go (so they lie together in the pool): n forks of an s-block prefix, q private blocks each.
    """
    n = v.count("branches", branches)
    s = v.count("shared_blocks", shared_blocks, minimum=0)
    q = v.count("private_blocks", private_blocks, minimum=0)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    mgr = BlockManager(max(1, s + n * q), p)
    mgr.allocate(0, s * p)
    for k in range(1, n):
        mgr.fork(0, k)
    for k in range(n):
        mgr.append(k, q * p)
    return mgr


def branch_sharing_steps(branches: int = km.BRANCH_EXPERIMENT_BRANCHES,
                         shared_blocks: int = km.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                         private_blocks: int = km.BRANCH_EXPERIMENT_PRIVATE_BLOCKS,
                         block_tokens: int = km.BLOCK_TOKENS, *, blocks_per_step: int = 3,
                         finish_first: bool = True) -> list[PoolSnapshot]:
    """BlockManager states of 8.3.2's branch experiment: prefill the common prefix, fork the
    branches, then the branches take turns writing private blocks, ``blocks_per_step`` each
    per step (4 branches, 95 shared, 9 private: 416 table entries on 131 physical blocks), so
    their blocks interleave in the pool. With ``finish_first`` a last step ends
    the first branch: only its private blocks are released, the prefix stays for the others.
    """
    n = v.count("branches", branches)
    s = v.count("shared_blocks", shared_blocks, minimum=0)
    q = v.count("private_blocks", private_blocks, minimum=0)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    per = v.count("blocks_per_step", blocks_per_step)
    mgr = BlockManager(max(1, s + n * q), p)
    names = {k: _NAMES[k % len(_NAMES)] + ("" if k < len(_NAMES) else str(k)) for k in range(n)}
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


def decode_with_preemption(kv_budget_bytes: float, prompt_tokens, output_tokens: int,
                           model=specs.QWEN3_8B, *, block_tokens: int = 16) -> dict:
    """Run requests' decode in lockstep rounds over a KV pool, preempting by recompute when the
    pool runs out (vLLM's policy: the most recently admitted request goes first) (8.3.2).

    Every request allocates its prompt's KV, then each round every running request writes one
    more token's KV until it holds prompt + output - 1 tokens and leaves. A preempted request
    drops its KV and, once its blocks fit next to the running requests' remaining growth, is
    re-admitted by recomputing all the tokens it held. Returns per-round used blocks, the rounds
    with preemptions, the events (round, "preempt"/"resume", request, tokens) and the totals.
    """
    mgr = BlockManager.for_budget(kv_budget_bytes, model, block_tokens=block_tokens)
    prompts = [v.tokens(f"prompt_tokens[{i}]", x, minimum=1)
               for i, x in enumerate(v.sequence("prompt_tokens", prompt_tokens))]
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    target = [calc.held_tokens(x, g) for x in prompts]
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


def multi_turn_inputs(*, common_tokens: int = 206, branch_rounds: int = 4,
                      extend_rounds: int = 3, seed: int = 0) -> list[list[int]]:
    """Token ids of a generated multi-turn agent's inputs shaped like Figure 8-17 (8.3.3).

    GENERATED, not the chapter's data (which it prints only in part): ``branch_rounds`` inputs
    share the first ``common_tokens`` tokens (the chapter: 4 rounds, 206 tokens) and then differ;
    ``extend_rounds`` more inputs each append to the last of them (a conversation growing along
    one path). Lengths and ids come from a seeded generator.
    """
    c = v.tokens("common_tokens", common_tokens, minimum=1)
    nb = v.count("branch_rounds", branch_rounds)
    ne = v.count("extend_rounds", extend_rounds, minimum=0)
    rng = np.random.default_rng(v.integer("seed", seed))
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


def replay_prefix_cache(inputs, num_blocks: int, *, block_tokens: int = 16,
                        interfering_tokens: int = 0, seed: int = 0) -> dict:
    """Replay inputs one after another through a PrefixCache over ``num_blocks`` blocks (8.3.4).

    Each input is admitted (reusing its longest cached prefix of full blocks), then finished and
    cached. Between inputs, an unrelated request of ``interfering_tokens`` tokens (GENERATED ids)
    passes through the same cache, competing for space. Returns per-input hit tokens and totals.
    """
    seqs = [list(s) for s in v.sequence("inputs", inputs)]
    mgr = BlockManager(v.count("num_blocks", num_blocks), block_tokens)
    cache = PrefixCache(mgr)
    rng = np.random.default_rng(v.integer("seed", seed))
    noise = v.tokens("interfering_tokens", interfering_tokens)
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


# --- 8.3.1 paging explorer ----------------------------------------------------------------------

_SWEEP_BLOCKS = np.arange(1, 33)


def _pool_and_sweep_layout(sweep_x: str, sweep_y: str) -> dict:
    """Block tables and pool on top, a sweep plot below; nothing here changes with the state."""
    layout = block_pool_layout()
    layout["yaxis"]["domain"] = layout["yaxis2"]["domain"] = [0.5, 1.0]
    layout.update({
        "height": 640, "margin": {"t": 60, "r": 20, "b": 60},
        "xaxis3": {"title": {"text": sweep_x}, "domain": [0, 1], "anchor": "y3"},
        "yaxis3": {"title": {"text": sweep_y}, "domain": [0, 0.33], "anchor": "x3",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.12},
    })
    return layout


class PagingPanel(Panel):
    """8.3.1: four sequences paged into blocks of p tokens: slots allocated, tail waste, table
    entries, against reserving the maximum length up front; A and B may share a prefix."""

    title = "Paged allocation: block tables, tail waste and table entries (8.3.1)"
    controls = (
        Control("block_tokens", "block size p (tokens)", "int", km.PAGING_EXAMPLE_BLOCK_TOKENS,
                1, 16, 1),
        Control("len_a", "length of A (tokens)", "int", km.PAGING_EXAMPLE_LENGTHS[0], 1, 48, 1),
        Control("len_b", "length of B (tokens)", "int", km.PAGING_EXAMPLE_LENGTHS[1], 1, 48, 1),
        Control("len_c", "length of C (tokens)", "int", km.PAGING_EXAMPLE_LENGTHS[2], 1, 48, 1),
        Control("len_d", "length of D (tokens)", "int", km.PAGING_EXAMPLE_LENGTHS[3], 1, 48, 1),
        Control("max_tokens", "reserved maximum per sequence (tokens)", "int",
                km.PAGING_EXAMPLE_MAX_TOKENS, 1, 64, 1),
        Control("shared_ab_tokens", "tokens A and B have in common", "int",
                km.PAGING_EXAMPLE_SHARED_TOKENS, 0, 48, 1),
    )
    base_layout = _pool_and_sweep_layout("block size p (tokens)", "slots / entries (4 sequences)")

    def compute(self, *, block_tokens, len_a, len_b, len_c, len_d, max_tokens,
                shared_ab_tokens) -> View:
        p = block_tokens
        lens = [len_a, len_b, len_c, len_d]
        cap = max(max_tokens, max(lens))           # a reservation below the longest cannot hold it
        shared = min(shared_ab_tokens, len_a, len_b)
        alloc = calc.paged_allocation(lens, p, max_tokens=cap)
        saved_blocks = calc.shared_prefix_blocks_saved(shared, 2, p)
        mgr = grow_sequences(lens, p, shared_prefix_tokens=shared)
        snap = snapshot_pool(mgr, names=dict(enumerate("ABCD")))
        traces, _ = block_pool_traces(snap, slot_level=True, columns=8, legend=False)
        sweep = [calc.paged_allocation(lens, int(q)) for q in _SWEEP_BLOCKS]
        xs = _SWEEP_BLOCKS.tolist()
        traces += [
            {"type": "scatter", "x": xs, "y": [a.unused_tokens for a in sweep],
             "mode": "lines+markers", "name": "unused slots (tail waste)", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": "#c00000"}},
            {"type": "scatter", "x": xs, "y": [a.table_entries for a in sweep],
             "mode": "lines+markers", "name": "block-table entries", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": SEQUENCE_COLORS[0], "dash": "dash"}},
            {"type": "scatter", "x": [p, p], "y": [alloc.unused_tokens, alloc.table_entries],
             "mode": "markers", "name": "this block size", "xaxis": "x3", "yaxis": "y3",
             "marker": {"size": 11, "color": "#333333"}},
        ]
        numbers = {
            "reserved_tokens": alloc.reserved_tokens,
            "reserved_unused_tokens": alloc.reserved_unused_tokens,
            "allocated_tokens": alloc.allocated_tokens,
            "stored_tokens": alloc.stored_tokens,
            "unused_tokens": alloc.unused_tokens,
            "table_entries": alloc.table_entries,
            "tail_waste": list(alloc.tail_waste_per_sequence),
            "shared_blocks": saved_blocks,
            "allocated_with_sharing_tokens": alloc.allocated_tokens - saved_blocks * p,
            "sim_allocated_with_sharing_tokens": mgr.used_blocks * p,
        }
        text = (f"reserve {cap} each: <b>{alloc.reserved_tokens}</b> slots, "
                f"{alloc.reserved_unused_tokens} unused<br>"
                f"paged (p = {p}): <b>{alloc.allocated_tokens}</b> slots for "
                f"{alloc.stored_tokens} tokens, {alloc.unused_tokens} unused<br>"
                f"tail waste A-D: {', '.join(map(str, alloc.tail_waste_per_sequence))} "
                f"(each < p)<br>block-table entries: {alloc.table_entries}<br>"
                f"A and B share {shared} tokens = {saved_blocks} full block(s): "
                f"<b>{numbers['allocated_with_sharing_tokens']}</b> slots "
                f"(simulator: {numbers['sim_allocated_with_sharing_tokens']})<br>"
                f"{block_pool_legend_html()}")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.2 branch sharing explorer -------------------------------------------------------------

_SWEEP_BRANCHES = np.arange(1, 17)


class BranchSharingPanel(Panel):
    """8.3.2: n branches over a common prefix of s blocks with q private blocks each:
    n (s + q) table entries on s + n q physical blocks, drawn from the simulator."""

    title = "Branch sharing: table entries vs physical blocks (8.3.2)"
    controls = (
        Control("branches", "branches n", "int", km.BRANCH_EXPERIMENT_BRANCHES, 1, 8, 1),
        Control("shared_blocks", "common-prefix blocks s", "int",
                km.BRANCH_EXPERIMENT_SHARED_BLOCKS, 0, 200, 1),
        Control("private_blocks", "private blocks per branch q", "int",
                km.BRANCH_EXPERIMENT_PRIVATE_BLOCKS, 0, 40, 1),
    )
    base_layout = _pool_and_sweep_layout("branches n", "blocks")

    def compute(self, *, branches, shared_blocks, private_blocks) -> View:
        share = calc.branch_block_sharing(branches, shared_blocks, private_blocks)
        final = snapshot_pool(branch_sharing_pool(branches, shared_blocks, private_blocks),
                              names={k: _NAMES[k] for k in range(branches)})
        traces, _ = block_pool_traces(final, slot_level=False, columns=20, merge_runs=True,
                                      legend=False)
        sweep = [calc.branch_block_sharing(int(n), shared_blocks, private_blocks)
                 for n in _SWEEP_BRANCHES]
        xs = _SWEEP_BRANCHES.tolist()
        traces += [
            {"type": "scatter", "x": xs, "y": [s.references for s in sweep], "mode": "lines",
             "name": "stored independently = table entries n(s+q)", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": "#8c8c8c", "dash": "dash"}},
            {"type": "scatter", "x": xs, "y": [s.physical_blocks for s in sweep],
             "mode": "lines", "name": "shared: physical blocks s + nq", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": SHARED_COLOR}},
            {"type": "scatter", "x": [branches, branches],
             "y": [share.references, share.physical_blocks], "mode": "markers",
             "name": "this setting", "xaxis": "x3", "yaxis": "y3",
             "marker": {"size": 11, "color": "#333333"}},
        ]
        numbers = {
            "references": share.references,
            "physical_blocks": share.physical_blocks,
            "sim_references": final.references,
            "sim_physical_blocks": final.used_blocks,
            "private_blocks": share.private_blocks,
            "saved_blocks": share.saved_blocks,
            "saved_pct": 100 * share.saved_fraction,
        }
        text = (f"table entries: <b>{share.references}</b> = {branches} x ({shared_blocks} + "
                f"{private_blocks})<br>physical blocks: <b>{share.physical_blocks}</b> = "
                f"{shared_blocks} + {branches} x {private_blocks}<br>"
                f"saved by sharing: {share.saved_blocks} blocks ({numbers['saved_pct']:.1f}%)<br>"
                f"private blocks still growing with n: {share.private_blocks}<br>"
                f"simulator: {final.references} entries on {final.used_blocks} blocks<br>"
                f"{block_pool_legend_html()}")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.2 shared-prefix capacity --------------------------------------------------------------

_SWEEP_BATCH = np.arange(0, 65, 4)     # M_KV is a straight line in b; 17 points draw it


class SharedPrefixCapacityPanel(Panel):
    """8.3.2: KV of b long requests once generation ends, independent (b x 1188 MiB) vs with the
    common prefix stored once (864 + 324 b MiB), against the 12 GiB budget."""

    title = "Shared-prefix capacity: M_KV = prefix + b x private (8.3.2)"
    controls = (
        Control("batch", "requests b", "int", km.LONG_BATCH, 1, 64, 1),
        Control("prompt_tokens", "prompt (tokens)", "int", km.LONG_PROMPT_TOKENS, 512, 32768,
                256),
        Control("output_tokens", "output (tokens)", "int", km.OUTPUT_TOKENS, 1, 4096, 1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                km.SHARED_PREFIX_TOKENS, 0, 32768, 256),
        Control("block_tokens", "block size (tokens)", "int", km.BLOCK_TOKENS, 1, 256, 1),
        Control("kv_budget_gib", "KV budget (GiB)", "float", km.KV_BUDGET_BYTES / units.GiB,
                1.0, 80.0, 0.5),
    )
    base_layout = {
        "xaxis": {"title": {"text": "requests b"}},
        "yaxis": {"title": {"text": "KV once generation ends (GiB)"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, batch, prompt_tokens, output_tokens, shared_prefix_tokens,
                block_tokens, kv_budget_gib) -> View:
        m = specs.QWEN3_8B
        prefix = min(shared_prefix_tokens, prompt_tokens - 1)   # keep one private token
        budget = kv_budget_gib * units.GiB
        kw = dict(block_tokens=block_tokens)
        ind = [calc.prefix_shared_kv_bytes(m, int(b), prompt_tokens, output_tokens, **kw) / units.GiB
               for b in _SWEEP_BATCH]
        shr = [calc.prefix_shared_kv_bytes(m, int(b), prompt_tokens, output_tokens,
                                           shared_prefix_tokens=prefix, **kw) / units.GiB
               for b in _SWEEP_BATCH]
        fit_ind = calc.max_concurrent(budget, m, prompt_tokens, output_tokens, **kw)
        fit_shr = calc.max_concurrent(budget, m, prompt_tokens, output_tokens,
                                      shared_prefix_tokens=prefix, **kw)
        held = calc.held_tokens(prompt_tokens, output_tokens)
        at_b_ind = calc.prefix_shared_kv_bytes(m, batch, prompt_tokens, output_tokens, **kw)
        at_b_shr = calc.prefix_shared_kv_bytes(m, batch, prompt_tokens, output_tokens,
                                               shared_prefix_tokens=prefix, **kw)
        numbers = {
            "prefix_MiB": (calc.kv_bytes(m, prefix, **kw) if prefix else 0) / units.MiB,
            "private_tokens": held - prefix,
            "private_MiB": calc.kv_bytes(m, held - prefix, **kw) / units.MiB,
            "request_MiB": calc.kv_bytes(m, held, **kw) / units.MiB,
            "independent_MiB": at_b_ind / units.MiB,
            "shared_MiB": at_b_shr / units.MiB,
            "shared_GiB": at_b_shr / units.GiB,
            "fit_independent": fit_ind,
            "fit_shared": fit_shr,
        }
        xs = _SWEEP_BATCH.tolist()
        traces = [
            {"type": "scatter", "x": xs, "y": ind, "mode": "lines",
             "name": "independent: b x request", "line": {"color": "#8c8c8c", "dash": "dash"}},
            {"type": "scatter", "x": xs, "y": shr, "mode": "lines",
             "name": f"prefix ({prefix:,} tokens) stored once", "line": {"color": SHARED_COLOR}},
            {"type": "scatter", "x": [0, xs[-1]], "y": [kv_budget_gib] * 2, "mode": "lines",
             "name": f"KV budget ({kv_budget_gib:g} GiB)", "line": {"color": "#c00000"}},
            {"type": "scatter", "x": [fit_ind, fit_shr],
             "y": [calc.prefix_shared_kv_bytes(m, fit_ind, prompt_tokens, output_tokens, **kw)
                   / units.GiB,
                   calc.prefix_shared_kv_bytes(m, fit_shr, prompt_tokens, output_tokens,
                                               shared_prefix_tokens=prefix, **kw) / units.GiB],
             "mode": "markers",
             "name": "most requests that fit", "marker": {"size": 11, "symbol": "diamond",
                                                          "color": "#333333"}},
            {"type": "scatter", "x": [batch, batch], "y": [at_b_ind / units.GiB,
                                                            at_b_shr / units.GiB],
             "mode": "markers", "name": f"b = {batch}", "marker": {"size": 10,
                                                                   "color": "#e69f00"}},
        ]
        text = (f"one request holds {held:,} tokens: {numbers['request_MiB']:,.0f} MiB "
                f"independent<br>prefix {numbers['prefix_MiB']:,.0f} MiB once + private "
                f"{numbers['private_tokens']:,} tokens = {numbers['private_MiB']:,.0f} MiB each<br>"
                f"b = {batch}: <b>{numbers['shared_MiB']:,.0f} MiB</b> shared vs "
                f"{numbers['independent_MiB']:,.0f} MiB independent<br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{fit_ind}</b> independent, "
                f"<b>{fit_shr}</b> sharing")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.3 hybrid-state snapshots --------------------------------------------------------------

_SWEEP_SPACING = np.unique(np.round(np.geomspace(256, 32768, 43) / 256).astype(int) * 256)


class SnapshotSpacingPanel(Panel):
    """8.3.3: a hybrid model resumes a matched prefix from its latest recurrent-state snapshot;
    denser snapshots recompute less but store more (53.6 MiB each per card at TP = 8)."""

    title = "Hybrid-state snapshots: recompute vs storage (8.3.3)"
    controls = (
        Control("spacing_tokens", "snapshot every (tokens)", "int", km.HYBRID_SNAPSHOT_POSITIONS[0],
                256, 32768, 256),
        Control("matched_tokens", "matched prefix (tokens)", "int", km.HYBRID_MATCHED_TOKENS,
                0, 131072, 128),
        Control("context_tokens", "context kept in snapshots (tokens)", "int",
                km.HYBRID_MATCHED_TOKENS, 256, 262144, 256),
        Control("snapshot_mib", "one snapshot per card (MiB)", "float",
                km.HYBRID_SNAPSHOT_MIB_PER_CARD, 1.0, 200.0, 0.1),
    )
    base_layout = {
        "xaxis": {"title": {"text": "snapshot spacing (tokens)"}, "type": "log"},
        "yaxis": {"title": {"text": "tokens recomputed on restore"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "snapshot storage per card (MiB)"}, "overlaying": "y",
                   "side": "right", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    @staticmethod
    def _plan(spacing, matched, context, size_bytes):
        count = context // spacing
        positions = [spacing * (i + 1) for i in range(count)]
        point = calc.hybrid_restore_point(matched, positions)
        return count, point, calc.snapshot_storage_bytes(size_bytes, count)

    def compute(self, *, spacing_tokens, matched_tokens, context_tokens, snapshot_mib) -> View:
        size = snapshot_mib * units.MiB
        matched = min(matched_tokens, context_tokens)
        count, point, storage = self._plan(spacing_tokens, matched, context_tokens, size)
        sweep = [self._plan(int(s), matched, context_tokens, size) for s in _SWEEP_SPACING]
        xs = _SWEEP_SPACING.tolist()
        numbers = {
            "snapshots": count,
            "restore_from": point.restore_from,
            "recompute_tokens": point.recompute_tokens,
            "storage_MiB": storage / units.MiB,
            "worst_recompute_tokens": min(spacing_tokens - 1, context_tokens),
        }
        traces = [
            {"type": "scatter", "x": xs, "y": [pt.recompute_tokens for _, pt, _ in sweep],
             "mode": "lines", "name": f"recomputed for a {matched:,}-token match",
             "line": {"shape": "hv", "color": SEQUENCE_COLORS[1]}},
            {"type": "scatter", "x": xs, "y": [min(s - 1, context_tokens) for s in xs],
             "mode": "lines", "name": "worst case (match just before a snapshot)",
             "line": {"color": SEQUENCE_COLORS[1], "dash": "dot"}},
            {"type": "scatter", "x": xs, "y": [st / units.MiB for _, _, st in sweep],
             "mode": "lines", "name": f"storage for {context_tokens:,} tokens of snapshots",
             "yaxis": "y2", "line": {"shape": "hv", "color": SHARED_COLOR}},
            {"type": "scatter", "x": [spacing_tokens], "y": [point.recompute_tokens],
             "mode": "markers", "name": "this spacing", "marker": {"size": 11,
                                                                  "color": "#333333"}},
        ]
        text = (f"{count} snapshot(s) at every {spacing_tokens:,} tokens up to "
                f"{context_tokens:,}<br>a {matched:,}-token match restores from "
                f"<b>{point.restore_from:,}</b> and recomputes <b>{point.recompute_tokens:,}</b> "
                f"tokens<br>storage: <b>{numbers['storage_MiB']:,.1f} MiB</b> per card "
                f"({snapshot_mib:g} MiB each)")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.4 retention economics (Figure 8-22) ---------------------------------------------------

_SWEEP_HIT = np.linspace(0.0, 1.0, 51)


class RetentionPanel(Panel):
    """8.3.4 / Figure 8-22: keep one large prefix A or several small prefixes B in the same cache
    space? V_h = p_h (T_r - T_f) - T_m for each, on the RTX PRO 6000 with Qwen3-8B."""

    title = "Which prefixes should the cache keep? (8.3.4, Figure 8-22)"
    controls = (
        Control("hit_prob_a", "hit probability of A", "float", km.RETENTION_HIT_PROB, 0.0, 1.0,
                0.01),
        Control("hit_prob_b", "hit probability of each B", "float", km.RETENTION_HIT_PROB,
                0.0, 1.0, 0.01),
        Control("link_gb_per_s", "host link (GB/s per direction)", "float",
                specs.PCIE_GEN5_X16_BYTES_PER_S / units.GB, 4.0, 450.0, 1.0),
        Control("prefix_a_tokens", "prefix A (tokens)", "int", km.SHARED_PREFIX_TOKENS, 256,
                32768, 256),
        Control("prefix_b_tokens", "prefix B (tokens)", "int", km.PREFIX_B_TOKENS, 256, 32768,
                256),
        Control("cache_mib", "cache space (MiB)", "float", 864.0, 36.0, 8192.0, 36.0),
        Control("efficiency_pct", "recompute at % of BF16 peak", "float",
                100 * km.RECOMPUTE_EFFICIENCY, 5.0, 100.0, 0.1),
    )
    base_layout = {
        "barmode": "overlay", "height": 440,
        "xaxis": {"domain": [0, 0.36], "title": {"text": "what the cache space keeps"}},
        "yaxis": {"title": {"text": "expected net saving (ms)"}, "rangemode": "tozero"},
        "xaxis2": {"domain": [0.48, 1], "title": {"text": "hit probability of A"},
                   "range": [0, 1], "anchor": "y2"},
        "yaxis2": {"title": {"text": "expected net saving (ms)"}, "anchor": "x2",
                   "zeroline": True, "zerolinecolor": "#8c8c8c"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    def compute(self, *, hit_prob_a, hit_prob_b, link_gb_per_s, prefix_a_tokens,
                prefix_b_tokens, cache_mib, efficiency_pct) -> View:
        m, hw = specs.QWEN3_8B, specs.RTX_PRO_6000
        kw = dict(efficiency=efficiency_pct / 100, link_bytes_per_s=link_gb_per_s * units.GB)
        a = calc.prefix_retention(m, hw, prefix_a_tokens, hit_prob=hit_prob_a, **kw)
        b = calc.prefix_retention(m, hw, prefix_b_tokens, hit_prob=hit_prob_b, **kw)
        cache = cache_mib * units.MiB
        n_a, n_b = int(cache // a.kv_bytes), int(cache // b.kv_bytes)
        keep_a, keep_b = n_a * a.value_s, n_b * b.value_s
        # the hit probability of A at which n_a A's are worth what n_b B's are
        threshold = (calc.retention_break_even_hit_prob(a.recompute_s, a.fetch_s, a.maintain_s,
                                                        target_value_s=keep_b / n_a)
                     if n_a else math.inf)
        numbers = {
            "kv_a_MiB": a.kv_bytes / units.MiB, "kv_b_MiB": b.kv_bytes / units.MiB,
            "recompute_a_ms": a.recompute_s / units.ms, "recompute_b_ms": b.recompute_s / units.ms,
            "fetch_a_ms": a.fetch_s / units.ms, "fetch_b_ms": b.fetch_s / units.ms,
            "value_a_ms": a.value_s / units.ms, "value_b_ms": b.value_s / units.ms,
            "a_fit": n_a, "b_fit": n_b,
            "keep_a_ms": keep_a / units.ms, "keep_b_ms": keep_b / units.ms,
            "break_even_a_pct": 100 * a.break_even_hit_prob,
            "break_even_b_pct": 100 * b.break_even_hit_prob,
            "a_per_MiB_ms": a.value_s_per_byte * units.MiB / units.ms,
            "b_per_MiB_ms": b.value_s_per_byte * units.MiB / units.ms,
            "a_beats_b_above_pct": 100 * threshold,
        }
        bars = retention_bars_traces(
            [(f"{n_a} x A ({prefix_a_tokens:,} tok)", n_a, "A", a.value_s / units.ms),
             (f"{n_b} x B ({prefix_b_tokens:,} tok)", n_b, "B", b.value_s / units.ms)])
        a_line = [n_a * calc.cache_retention_value(float(ph), a.recompute_s, a.fetch_s,
                                                   a.maintain_s) / units.ms for ph in _SWEEP_HIT]
        xs = _SWEEP_HIT.tolist()
        traces = bars + [
            {"type": "scatter", "x": xs, "y": a_line, "mode": "lines",
             "name": f"keep {n_a} x A", "xaxis": "x2", "yaxis": "y2",
             "line": {"color": SEQUENCE_COLORS[0]}},
            {"type": "scatter", "x": [0, 1], "y": [keep_b / units.ms] * 2, "mode": "lines",
             "name": f"keep {n_b} x B (at their hit probability)", "xaxis": "x2", "yaxis": "y2",
             "line": {"color": SEQUENCE_COLORS[1], "dash": "dash"}},
            {"type": "scatter", "x": [hit_prob_a], "y": [keep_a / units.ms], "mode": "markers",
             "name": "this setting", "xaxis": "x2", "yaxis": "y2",
             "marker": {"size": 11, "color": "#333333"}},
        ]
        text = (f"A: {numbers['kv_a_MiB']:,.0f} MiB, recompute {numbers['recompute_a_ms']:.1f} ms,"
                f" fetch {numbers['fetch_a_ms']:.1f} ms, V = <b>{numbers['value_a_ms']:.1f} ms"
                f"</b> (worth keeping above {numbers['break_even_a_pct']:.1f}% hits)<br>"
                f"B: {numbers['kv_b_MiB']:,.0f} MiB, recompute {numbers['recompute_b_ms']:.1f} ms,"
                f" fetch {numbers['fetch_b_ms']:.1f} ms, V = <b>{numbers['value_b_ms']:.1f} ms"
                f"</b><br>{cache_mib:g} MiB keeps {n_a} A ({numbers['keep_a_ms']:.1f} ms) or "
                f"{n_b} B ({numbers['keep_b_ms']:.1f} ms)<br>per MiB: A "
                f"{numbers['a_per_MiB_ms']:.3f} ms, B {numbers['b_per_MiB_ms']:.3f} ms")
        return View(numbers=numbers, traces=traces, text=text)
