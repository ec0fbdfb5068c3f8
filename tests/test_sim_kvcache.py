"""companion.sim.kvcache: paged blocks, sharing, copy-on-write, prefix cache, preemption and
paged attention, checked against the chapters' printed numbers (8.3.1-8.3.2, Exercise 8-3,
17 §5) and against invariants (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.sim.kv_scenarios import fill_kv_pool, page_sequences, prefix_tree
from companion.sim.kvcache import BlockManager, OutOfBlocks, PrefixCache
from companion.sim.paged_attention import KVStore, dense_attention, paged_attention
from companion.specs import LLAMA_8B, QWEN3_8B
from companion.units import GB, GiB, MB, MiB

ABCD = [9, 13, 5, 15]  # 8.3.1's A, B, C, D


# --- 8.3.1 and Exercise 8-3 ---------------------------------------------------------------------

def test_8_3_1_reservation_paging_and_sharing():
    r = page_sequences(ABCD, 4, max_tokens=16)
    assert r.reserved_tokens == 64
    assert r.slots == (12, 16, 8, 16)
    assert r.allocated_tokens == 52
    assert r.stored_tokens == 42
    assert r.reserved_unused == 22 and r.unused_tokens == 10
    s = page_sequences(ABCD, 4, max_tokens=16, shared_prefix_tokens=8, prefix_group=[0, 1])
    assert s.shared_blocks == 2
    assert s.allocated_tokens == 44
    assert s.references == r.references == 13  # sharing changes blocks, not table entries


@pytest.mark.parametrize("p,tails,entries", [
    (2, (1, 1, 1, 1), 5 + 7 + 3 + 8),
    (4, (3, 3, 3, 1), 3 + 4 + 2 + 4),
    (8, (7, 3, 3, 1), 2 + 2 + 1 + 2),
])
def test_exercise_8_3_block_size_table(p, tails, entries):
    r = page_sequences(ABCD, p)
    assert r.tail_unused == tails
    assert r.unused_tokens == sum(tails)
    assert r.references == entries


def test_exercise_8_3_capacity_for_8_16_32_requests():
    held = 8192 + 256 - 1
    big = 64 * GiB
    for b in (8, 16, 32):
        indep = fill_kv_pool(big, QWEN3_8B, held, max_requests=b)
        shared = fill_kv_pool(big, QWEN3_8B, held, shared_prefix_tokens=6144, max_requests=b)
        assert indep.used_bytes[b] / MiB == 1188 * b
        assert shared.used_bytes[b] / MiB == 864 + 324 * b


def test_exercise_8_3_one_more_block_in_the_prefix_saves_b_minus_1():
    held = 8192 + 256 - 1
    for b in (1, 8, 16, 32):
        before = fill_kv_pool(64 * GiB, QWEN3_8B, held, shared_prefix_tokens=6144,
                              max_requests=b)
        after = fill_kv_pool(64 * GiB, QWEN3_8B, held, shared_prefix_tokens=6144 + 16,
                             max_requests=b)
        saved_blocks = (before.used_bytes[b] - after.used_bytes[b]) / before.block_bytes
        assert saved_blocks == b - 1


# --- 8.3.2 --------------------------------------------------------------------------------------

def test_8_3_2_four_branches_share_the_prefix():
    m = BlockManager(200, 16)
    m.allocate("prefix", 95 * 16)
    for b in range(4):
        m.fork("prefix", b)
        assert len(m.append(b, 9 * 16)) == 9
    m.free("prefix")
    assert m.references == 416
    assert m.used_blocks == 131
    assert m.used_blocks - 95 == 36
    assert round(100 * (1 - 131 / 416)) == 69
    # the prefix survives until the last branch lets go
    for b in range(3):
        m.free(b)
        assert m.used_blocks == 95 + 9 * (3 - b)
    m.free(3)
    assert m.used_blocks == 0


def test_8_3_2_copy_on_write_of_a_three_token_tail():
    """A 4-token block holds 3 shared tokens; two branches write different 4th tokens."""
    m = BlockManager(8, 4)
    full, tail = m.allocate("a", 7)  # one full read-only block + 3 tokens in the tail block
    m.fork("a", "b")
    assert m.refcount(tail) == 2
    new = m.append("b", 1)
    assert len(new) == 1 and new[0] not in (full, tail)
    copies = m.pop_copies()
    assert [(c.src, c.dst, c.tokens) for c in copies] == [(tail, new[0], 3)]
    assert m.append("a", 1) == []  # a's tail is private again: written in place, no copy
    assert m.pop_copies() == []
    assert m.block_table("a") == [full, tail] and m.block_table("b") == [full, new[0]]
    assert m.refcount(full) == 2 and m.refcount(tail) == 1
    assert m.used_blocks == 3
    m.check_invariants()


def test_full_shared_tail_needs_no_copy():
    m = BlockManager(8, 4)
    m.allocate("a", 8)
    m.fork("a", "b")
    assert len(m.append("b", 1)) == 1
    assert m.pop_copies() == []


def test_8_3_2_shared_prefix_capacity_in_12_gib():
    held = 8192 + 256 - 1  # 8447 tokens
    shared = fill_kv_pool(12 * GiB, QWEN3_8B, held, shared_prefix_tokens=6144)
    alone = fill_kv_pool(12 * GiB, QWEN3_8B, held)
    assert shared.num_blocks == 5461
    assert shared.prefix_bytes / MiB == 864
    assert shared.private_bytes / MiB == 324
    assert shared.used_bytes[16] / MiB == 6048
    assert round(shared.used_bytes[16] / GiB, 2) == 5.91
    assert shared.admitted == 35 and alone.admitted == 10
    assert alone.private_bytes / MiB == 1188


def test_block_manager_for_budget_matches_kv_size():
    m = BlockManager.for_budget(12 * GiB, QWEN3_8B)
    assert m.block_bytes == 16 * 147456
    assert m.num_blocks == 5461
    with pytest.raises(ValueError, match="kv_budget_bytes"):
        BlockManager.for_budget(1000, QWEN3_8B)


# --- 17 §5 ----------------------------------------------------------------------------------------

def test_17_5_fragmentation_and_batch():
    k = 131072
    reserve = page_sequences([300], 8192)
    assert round(reserve.allocated_tokens * k / GB, 2) == 1.07
    assert round(reserve.stored_tokens * k / MB) == 39
    assert round(100 * reserve.unused_fraction) == 96
    seq_a = page_sequences([40], 16)
    assert len(seq_a.slots) == 1 and seq_a.slots[0] // 16 == 3 and 16 - seq_a.tail_unused[0] == 8
    assert page_sequences([1025], 1024).tail_unused[0] == 1023
    assert round(BlockManager.for_budget(60 * GB, LLAMA_8B).block_bytes / MB) == 2
    naive = page_sequences([2000] * 100, 16)
    paged = page_sequences([2000] * 100, 16, shared_prefix_tokens=2000)
    assert round(naive.allocated_tokens * k / GB, 1) == 26.2
    assert round(paged.allocated_tokens * k / GB, 2) == 0.26
    kv_space = 60 * GB
    assert fill_kv_pool(kv_space, LLAMA_8B, 600, block_tokens=8000).admitted == 57
    live = fill_kv_pool(kv_space, LLAMA_8B, 600, block_tokens=1)
    assert round(live.private_bytes / MB, 1) == 78.6
    assert round(live.admitted, -1) == 760


def test_paged_waste_bounded_by_one_block():
    for n in range(1, 100):
        r = page_sequences([n], 16)
        assert 0 <= r.tail_unused[0] < 16


# --- errors and edge cases -------------------------------------------------------------------------

def test_pool_exhaustion_is_clear_and_changes_nothing():
    m = BlockManager(4, 4)
    m.allocate("a", 13)  # 4 blocks
    assert m.free_blocks == 0 and not m.can_allocate(1) and m.can_allocate(0)
    with pytest.raises(OutOfBlocks, match="append"):
        m.append("a", 4)
    assert m.num_tokens("a") == 13 and m.used_blocks == 4
    with pytest.raises(OutOfBlocks, match="allocate"):
        m.allocate("b", 1)
    assert "b" not in m
    m.check_invariants()


def test_copy_on_write_needs_a_free_block():
    m = BlockManager(2, 4)
    m.allocate("a", 3)
    m.fork("a", "b")
    m.allocate("c", 1)
    with pytest.raises(OutOfBlocks):
        m.append("b", 1)
    assert m.block_table("a") == m.block_table("b") and m.pending_copies == []
    m.check_invariants()


def test_bad_operations_name_the_problem():
    m = BlockManager(4, 4)
    m.allocate("a", 5)
    with pytest.raises(ValueError, match="seq_id"):
        m.allocate("a", 1)
    with pytest.raises(KeyError, match="seq_id"):
        m.free("nope")
    with pytest.raises(ValueError, match="child_id"):
        m.fork("a", "a")
    with pytest.raises(ValueError, match="n_tokens"):
        m.append("a", -1)
    with pytest.raises(ValueError, match="shared_blocks"):
        m.allocate("b", 3, shared_blocks=m.block_table("a")[:1])  # 4 tokens > 3
    with pytest.raises(ValueError, match="shared_blocks"):
        m.allocate("b", 8, shared_blocks=[3])  # a free block cannot be shared
    with pytest.raises(ValueError, match="num_blocks"):
        BlockManager(0)
    with pytest.raises(ValueError, match="block_tokens"):
        BlockManager(4, 0)
    with pytest.raises(ValueError, match="max_tokens"):
        page_sequences([9, 20], 4, max_tokens=16)
    with pytest.raises(ValueError, match="shared_prefix_tokens"):
        page_sequences([9, 5], 4, shared_prefix_tokens=8)
    with pytest.raises(ValueError, match="prefix_group"):
        page_sequences([9, 5], 4, shared_prefix_tokens=4, prefix_group=[0, 7])
    with pytest.raises(ValueError, match="shared_prefix_tokens"):
        fill_kv_pool(GiB, QWEN3_8B, 100, shared_prefix_tokens=200)


def test_truncate_rolls_back_draft_tokens():
    m = BlockManager(8, 4)
    m.allocate("a", 6)
    m.append("a", 5)  # 11 tokens, 3 blocks
    table = m.block_table("a")
    assert m.truncate("a", 7) == [table[2]]
    assert m.num_tokens("a") == 7 and m.block_table("a") == table[:2]
    m.check_invariants()


def test_empty_sequences_and_zero_appends():
    m = BlockManager(2, 4)
    assert m.allocate("a", 0) == []
    assert m.append("a", 0) == []
    m.fork("a", "b")
    assert len(m.append("b", 1)) == 1
    m.check_invariants()


# --- preemption by recompute -------------------------------------------------------------------------

def test_preemption_evicts_latest_and_records_recompute():
    m = BlockManager(10, 4)
    m.allocate("old", 16)  # 4 blocks
    m.allocate("mid", 8)   # 2
    m.allocate("new", 12)  # 3 -> 1 free
    done = m.make_room(3, protect=["old"])
    assert done == [("new", 12)]
    assert m.free_blocks == 4 and m.preempted == {"new": 12}
    assert m.preemptions == 1
    with pytest.raises(OutOfBlocks):
        m.make_room(11)
    assert m.preempted == {"new": 12}  # the impossible request preempted nothing
    m.free("mid")
    assert m.resume("new") == 12 and m.recomputed_tokens == 12 and m.num_tokens("new") == 12
    m.check_invariants()


def test_preempting_a_forked_sibling_frees_only_private_blocks():
    m = BlockManager(6, 4)
    m.allocate("a", 8)
    m.fork("a", "b")
    m.append("b", 4)
    before = m.free_blocks
    assert m.preempt("b") == 12
    assert m.free_blocks == before + 1
    m.check_invariants()


# --- prefix cache --------------------------------------------------------------------------------------

def test_prefix_cache_hits_and_lru_eviction():
    m = BlockManager(6, 4)
    cache = PrefixCache(m)
    sys_prompt = list(range(8))
    a = sys_prompt + [100, 101, 102]
    assert cache.admit("a", a) == 0
    cache.finish("a", a)
    assert cache.cached_blocks == 2 and m.used_blocks == 2  # tail block freed, full ones kept
    b = sys_prompt + [200, 201, 202, 203, 204]
    assert cache.admit("b", b) == 8
    assert cache.hit_tokens == 8 and cache.miss_tokens == 11 + 5
    cache.finish("b", b)
    assert cache.cached_blocks == 3  # b's second-to-last full block [200..203]
    # an unrelated request too big for the free pool evicts least-recently-used leaves
    c = list(range(500, 516))  # 4 blocks; 6 - 3 cached = 3 free
    assert cache.admit("c", c) == 0
    assert cache.evicted_blocks == 1
    assert cache.match(sys_prompt) != []  # the shared prefix outlived its leaf
    m.check_invariants()


def test_prefix_cache_never_evicts_blocks_in_use():
    m = BlockManager(3, 4)
    cache = PrefixCache(m)
    a = list(range(8))
    cache.admit("a", a)
    cache.finish("a", a)
    cache.admit("b", a + [9])  # uses both cached blocks + 1 new
    with pytest.raises(OutOfBlocks):
        cache.admit("c", list(range(50, 54)))
    assert cache.cached_blocks == 2
    m.check_invariants()


def test_prefix_cache_admission_can_be_refused():
    m = BlockManager(4, 4)
    cache = PrefixCache(m)
    cache.admit("a", list(range(8)))
    assert cache.finish("a", list(range(8)), admit=False) == 0
    assert m.used_blocks == 0


# --- Figure 8-17's prefix tree ------------------------------------------------------------------------

def test_prefix_tree_figure_8_17_shape():
    rng = np.random.default_rng(0)
    shared = list(rng.integers(0, 1000, 206))
    rounds = [shared + [1000 + i] + list(rng.integers(0, 1000, 30 + i)) for i in range(4)]
    for _ in range(3):  # the next three rounds extend the fourth round's path
        rounds.append(rounds[-1] + list(rng.integers(0, 1000, 50)))
    tree = prefix_tree(rounds)
    root_edges = [e for e in tree.edges if e[0] == 0]
    assert [e[2] for e in root_edges] == [206]
    by_id = {n.id: n for n in tree.nodes}
    assert by_id[root_edges[0][1]].passes == 7
    # every input ends at a node whose depth is its full length
    for node in tree.nodes:
        for i in node.ends:
            assert node.depth == len(rounds[i])
    leaves = sorted(n.depth for n in tree.leaves)
    assert leaves == sorted(len(r) for r in rounds[:3]) + [len(rounds[6])]
    assert sum(e[2] for e in tree.edges) == len({tuple(r[:k]) for r in rounds
                                                 for k in range(1, len(r) + 1)})


def test_prefix_tree_edge_cases():
    t = prefix_tree([[1, 2], [1, 2], []])
    assert t.nodes[0].ends == [2] and t.nodes[1].ends == [0, 1] and t.nodes[1].passes == 2
    with pytest.raises(ValueError, match=r"sequences\[0\]"):
        prefix_tree([[1.5]])
    with pytest.raises(TypeError, match=r"sequences\[0\]"):
        prefix_tree([["a"]])


# --- paged attention -------------------------------------------------------------------------------------

def _random_kv(rng, n, heads, d):
    return rng.normal(size=(n, heads, d)), rng.normal(size=(n, heads, d))


@pytest.mark.parametrize("q_heads", [2, 4])
@pytest.mark.parametrize("n", [1, 5, 16, 37])
def test_paged_attention_equals_dense(q_heads, n):
    rng = np.random.default_rng(n)
    m = BlockManager(16, 8)
    m.allocate("x", 3)  # a neighbour, so the sequence's blocks are not 0, 1, 2 ...
    table = m.allocate("s", n)
    store = KVStore.for_manager(m, n_kv_heads=2, head_dim=8)
    k, vals = _random_kv(rng, n, 2, 8)
    store.write(table, 0, k, vals)
    q = rng.normal(size=(3, q_heads, 8))
    assert np.allclose(paged_attention(q, store, table, n), dense_attention(q, k, vals))
    assert np.allclose(paged_attention(q[0], store, table, n), dense_attention(q[0], k, vals))
    gk, gv = store.gather(table, n)
    assert np.array_equal(gk, k) and np.array_equal(gv, vals)


def test_paged_attention_after_fork_and_copy_on_write():
    rng = np.random.default_rng(1)
    m = BlockManager(12, 4)
    store = KVStore.for_manager(m, n_kv_heads=2, head_dim=4)
    k0, v0 = _random_kv(rng, 7, 2, 4)  # a full block + 3 tokens in a shared tail
    m.allocate("a", 0)
    store.append(m, "a", k0, v0)
    m.fork("a", "b")
    ka, va = _random_kv(rng, 6, 2, 4)
    kb, vb = _random_kv(rng, 2, 2, 4)
    store.append(m, "a", ka, va)  # copy-on-write: a gets its own tail
    store.append(m, "b", kb, vb)
    assert m.copies_made == 1
    assert m.block_table("a")[0] == m.block_table("b")[0]  # the full block stays shared
    q = rng.normal(size=(2, 2, 4))
    for sid, (kk, vv) in {"a": (ka, va), "b": (kb, vb)}.items():
        k_all, v_all = np.concatenate([k0, kk]), np.concatenate([v0, vv])
        out = paged_attention(q, store, m.block_table(sid), m.num_tokens(sid))
        assert np.allclose(out, dense_attention(q, k_all, v_all))


def test_paged_attention_rejects_bad_input():
    m = BlockManager(4, 4)
    table = m.allocate("s", 5)
    store = KVStore.for_manager(m, 2, 4)
    q = np.zeros((2, 4))
    with pytest.raises(ValueError, match="n_tokens"):
        paged_attention(q, store, table, 9)
    with pytest.raises(ValueError, match="q"):
        paged_attention(np.zeros((3, 4)), store, table, 5)  # 3 heads over 2 KV heads
    with pytest.raises(ValueError, match="q"):
        paged_attention(np.full((2, 4), np.nan), store, table, 5)
    with pytest.raises(TypeError, match="kv_store"):
        paged_attention(q, "store", table, 5)
    with pytest.raises(ValueError, match="block_table"):
        paged_attention(q, store, [0, 99], 5)


# --- invariants (hypothesis) ----------------------------------------------------------------------------

_ops = st.lists(st.tuples(st.sampled_from(["alloc", "append", "fork", "free", "preempt",
                                           "truncate", "share", "alloc_count", "free_count"]),
                          st.integers(0, 7), st.integers(0, 7), st.integers(0, 40)),
                max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops, num_blocks=st.integers(1, 24), p=st.integers(1, 6))
def test_random_operations_never_leak_or_double_free(ops, num_blocks, p):
    m = BlockManager(num_blocks, p)
    model: dict[int, int] = {}  # seq -> tokens, the reference model
    for op, a, b, n in ops:
        try:
            if op == "alloc" and a not in model:
                m.allocate(a, n)
                model[a] = n
            elif op == "append" and a in model:
                m.append(a, n % 9)
                model[a] += n % 9
            elif op == "fork" and a in model and b not in model:
                m.fork(a, b)
                model[b] = model[a]
            elif op == "free" and a in model:
                m.free(a)
                del model[a]
            elif op == "preempt" and a in model:
                assert m.preempt(a) == model.pop(a)
            elif op == "truncate" and a in model:
                m.truncate(a, min(n, model[a]))
                model[a] = min(n, model[a])
            elif op == "share" and a in model and b not in model:
                # b starts on a's full blocks (a prefix held as a sequence), then n more tokens
                full = model[a] // p * p
                before = m.free_blocks
                table = m.allocate(b, full + n, share_from=a)
                assert table[:full // p] == m.block_table(a)[:full // p]
                assert before - m.free_blocks == -(-(full + n) // p) - full // p
                model[b] = full + n
            elif op == "alloc_count" and a not in model:
                before = m.free_blocks
                assert m.allocate_count(a, n) == before - m.free_blocks == -(-n // p)
                model[a] = n
            elif op == "free_count" and a in model:
                before = m.free_blocks
                assert m.free_count(a) == m.free_blocks - before
                del model[a]
        except OutOfBlocks:
            pass
        m.check_invariants()
        for s, t in model.items():
            assert m.num_tokens(s) == t
            assert 0 <= m.tail_unused(s) < p or t == 0
    # shared blocks never exceed what independent storage would use
    assert m.used_blocks <= sum(-(-t // p) for t in model.values())
    for s in list(model):
        m.free(s)
    m.check_invariants()
    assert m.free_blocks == num_blocks and m.used_blocks == 0
    assert not m._ref.any()


def test_count_variants_match_allocate_and_free():
    # the whole-sequence fast paths change the pool exactly as allocate/free do (same blocks,
    # same reuse order), with and without shared blocks in the pool
    a, b = BlockManager(64, 4), BlockManager(64, 4)
    for m in (a, b):
        m.allocate("prefix", 16)
    for i in range(12):
        share = "prefix" if i % 3 == 0 else None
        table = a.allocate(i, 17 + i, share_from=share)
        assert b.allocate_count(i, 17 + i, share_from=share) == len(table) - (4 if share else 0)
        if i >= 4:
            freed = a.free(i - 4)
            assert b.free_count(i - 4) == len(freed)
        for s in a.sequences:
            assert a.block_table(s) == b.block_table(s)
        assert a.free_blocks == b.free_blocks
    a.free("prefix")
    b.free("prefix")
    for m in (a, b):
        m.check_invariants()
    assert [a.allocate_count(99, 40)] == [b.allocate_count(99, 40)]
    assert a.block_table(99) == b.block_table(99)


def test_share_from_checks():
    m = BlockManager(16, 4)
    m.allocate("p", 10)                        # 2 full blocks and a partial one
    assert m.allocate("x", 9, share_from="p")[:2] == m.block_table("p")[:2]
    assert m.refcount(m.block_table("p")[0]) == 2 and m.refcount(m.block_table("p")[2]) == 1
    with pytest.raises(ValueError, match="share_from"):
        m.allocate("y", 4, share_from="p")      # 2 full blocks hold 8 tokens > 4
    with pytest.raises(ValueError, match="share_from"):
        m.allocate("y", 20, share_from="nobody")
    with pytest.raises(ValueError, match="share_from"):
        m.allocate("y", 20, shared_blocks=[0], share_from="p")
    with pytest.raises(ValueError, match="n_tokens"):
        m.allocate_count("y", -1)
    with pytest.raises(KeyError, match="seq_id"):
        m.free_count("nobody")
    m.check_invariants()


@settings(max_examples=100, deadline=None)
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=8),
       p=st.integers(1, 32), shared=st.integers(0, 200))
def test_sharing_never_costs_more_and_waste_under_a_block(lengths, p, shared):
    shared = min(shared, min(lengths))
    alone = page_sequences(lengths, p)
    both = page_sequences(lengths, p, shared_prefix_tokens=shared)
    assert both.physical_blocks <= alone.physical_blocks
    assert all(0 <= w < p for w in alone.tail_unused)
    assert alone.unused_tokens == sum(alone.tail_unused)
    assert both.allocated_tokens - both.stored_tokens == alone.unused_tokens


@settings(max_examples=100, deadline=None)
@given(a=st.lists(st.integers(0, 3), max_size=40), b=st.lists(st.integers(0, 3), max_size=40),
       p=st.integers(1, 5))
def test_prefix_cache_hits_never_exceed_the_common_prefix(a, b, p):
    m = BlockManager(40, p)
    cache = PrefixCache(m)
    cache.admit("a", a)
    cache.finish("a", a)
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    hit = cache.admit("b", b)
    assert hit <= common and hit % p == 0
    assert hit == (common // p) * p  # the whole cached full-block prefix is found
    assert cache.hit_tokens + cache.miss_tokens == len(a) + len(b)
    cache.finish("b", b)
    m.check_invariants()


@settings(max_examples=60, deadline=None)
@given(reqs=st.lists(st.lists(st.integers(0, 2), max_size=24), min_size=1, max_size=12),
       finish_mask=st.lists(st.booleans(), min_size=12, max_size=12),
       num_blocks=st.integers(2, 12), p=st.integers(1, 4))
def test_prefix_cache_random_traffic_keeps_the_pool_consistent(reqs, finish_mask, num_blocks,
                                                               p):
    m = BlockManager(num_blocks, p)
    cache = PrefixCache(m)
    running = {}
    for i, toks in enumerate(reqs):
        try:
            hit = cache.admit(i, toks)
            assert hit <= len(toks)
            running[i] = toks
        except OutOfBlocks:
            pass
        m.check_invariants()
        if finish_mask[i] and running:
            j = min(running)
            cache.finish(j, running.pop(j))
            m.check_invariants()
        assert cache.cached_blocks <= m.used_blocks
    for j in list(running):
        cache.finish(j, running.pop(j))
    cache.evict(num_blocks)
    m.check_invariants()
    assert cache.cached_blocks == 0 and m.free_blocks == num_blocks
