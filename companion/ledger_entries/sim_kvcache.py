"""Ledger: the paging numbers of 8.3.1-8.3.2 and 17 §5, recomputed by allocating blocks in
``companion.sim.kvcache`` (``companion.sim.kv_scenarios``) (source="sim")."""

from __future__ import annotations

from companion.chapters import ch08, ch17
from companion.formulas.core import held_tokens, kv_bytes_per_token
from companion.ledger import Entry, entry
from companion.sim.kv_scenarios import context_organisation, fill_kv_pool, page_sequences
from companion.sim.kvcache import BlockManager
from companion.specs import LLAMA_8B, QWEN3_8B, RTX_PRO_6000, H100_SXM
from companion.units import GB, GiB, MB, MiB


def _branches():
    """8.3.2's four-branch experiment built with fork + append, and its independent twin."""
    p = ch08.BLOCK_TOKENS
    shared_blocks = ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS
    shared = BlockManager(shared_blocks + ch08.BRANCH_EXPERIMENT_BRANCHES
                          * ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS, p)
    shared.allocate("prefix", ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS * p)
    for b in range(ch08.BRANCH_EXPERIMENT_BRANCHES):
        shared.fork("prefix", b)
        shared.append(b, ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS * p)
    shared.free("prefix")  # the branches keep the prefix alive
    one_branch_tokens = (shared_blocks + ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS) * p
    alone = page_sequences([one_branch_tokens] * ch08.BRANCH_EXPERIMENT_BRANCHES, p)
    private = shared.used_blocks - ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS
    return shared, alone, private


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.3.1", "8.3.2", "8.3.3", "17.5")


def entries() -> list[Entry]:
    out: list[Entry] = []
    S = "sim"

    # --- 8.3.1 ----------------------------------------------------------------------------
    paged = page_sequences(ch08.PAGING_EXAMPLE_LENGTHS, ch08.PAGING_EXAMPLE_BLOCK_TOKENS,
                           max_tokens=ch08.PAGING_EXAMPLE_MAX_TOKENS)
    sharing = page_sequences(ch08.PAGING_EXAMPLE_LENGTHS, ch08.PAGING_EXAMPLE_BLOCK_TOKENS,
                             max_tokens=ch08.PAGING_EXAMPLE_MAX_TOKENS,
                             shared_prefix_tokens=ch08.PAGING_EXAMPLE_SHARED_TOKENS,
                             prefix_group=[0, 1])
    out.append(entry("8.3.1/sim-reserved-slots", "8.3.1",
                     "A-D reserve max length: KV slots", "64", "tokens",
                     paged.reserved_tokens, source=S))
    for name, printed, slots in zip("ABCD", ("12", "16", "8", "16"), paged.slots):
        out.append(entry(f"8.3.1/sim-paged-slots-{name}", "8.3.1",
                         f"{name} paged in 4-token blocks: slots", printed, "tokens", slots,
                         source=S))
    out += [
        entry("8.3.1/sim-paged-slots-total", "8.3.1", "A-D paged (p=4): slots allocated",
              "52", "tokens", paged.allocated_tokens, source=S),
        entry("8.3.1/sim-stored-tokens", "8.3.1", "A-D: tokens actually stored", "42",
              "tokens", paged.stored_tokens, source=S),
        entry("8.3.1/sim-unused-reserved", "8.3.1", "unused slots with full reservation", "22",
              "tokens", paged.reserved_unused, source=S),
        entry("8.3.1/sim-unused-paged", "8.3.1", "unused slots with p=4 paging", "10",
              "tokens", paged.unused_tokens, source=S),
        entry("8.3.1/sim-shared-full-blocks", "8.3.1", "A and B share full blocks", "2",
              "blocks", sharing.shared_blocks, source=S,
              note="printed in words ('two full blocks'): floor(8 / 4) blocks."),
        entry("8.3.1/sim-shared-slots-total", "8.3.1", "A-D paged, A/B share 8 tokens: slots",
              "44", "tokens", sharing.allocated_tokens, source=S),
    ]

    # --- 8.3.2: four branches -------------------------------------------------------------
    shared, alone, private = _branches()
    out += [
        entry("8.3.2/sim-branch-references", "8.3.2", "four branches: block-table references",
              "416", "references", shared.references, source=S),
        entry("8.3.2/sim-branch-physical-blocks", "8.3.2", "four branches: physical blocks",
              "131", "blocks", shared.used_blocks, source=S),
        entry("8.3.2/sim-branch-independent-blocks", "8.3.2",
              "four branches stored independently: blocks", "416", "blocks",
              alone.physical_blocks, source=S),
        entry("8.3.2/sim-branch-saving-pct", "8.3.2", "sharing saves (1 - 131/416)", "69", "%",
              100 * (1 - shared.used_blocks / alone.physical_blocks), source=S),
        entry("8.3.2/sim-branch-private-blocks", "8.3.2", "private tail blocks of 4 branches",
              "36", "blocks", private, source=S),
    ]

    # --- 8.3.2: 16 long requests sharing 6144 tokens in 12 GiB --------------------------------
    held = held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
    share = fill_kv_pool(ch08.KV_BUDGET_BYTES, QWEN3_8B, held,
                         shared_prefix_tokens=ch08.SHARED_PREFIX_TOKENS,
                         block_tokens=ch08.BLOCK_TOKENS)
    indep = fill_kv_pool(ch08.KV_BUDGET_BYTES, QWEN3_8B, held, block_tokens=ch08.BLOCK_TOKENS)
    # the independent 16-request footprint exceeds 12 GiB: allocate it in the card's whole memory
    indep16 = fill_kv_pool(RTX_PRO_6000.mem_bytes, QWEN3_8B, held, max_requests=ch08.LONG_BATCH,
                           block_tokens=ch08.BLOCK_TOKENS)
    out += [
        entry("8.3.2/sim-prefix-MiB", "8.3.2", "6144-token shared prefix KV", "864", "MiB",
              share.prefix_bytes / MiB, source=S),
        entry("8.3.2/sim-private-slots", "8.3.2", "private part (2303 tokens) in 16-token blocks",
              "2304", "tokens", share.private_blocks * share.block_tokens, source=S),
        entry("8.3.2/sim-private-MiB", "8.3.2", "private part per request", "324", "MiB",
              share.private_bytes / MiB, source=S),
        entry("8.3.2/sim-16-shared-MiB", "8.3.2", "16 sharing requests: M_KV", "6048", "MiB",
              share.used_bytes[ch08.LONG_BATCH] / MiB, source=S),
        entry("8.3.2/sim-16-shared-GiB", "8.3.2", "16 sharing requests: M_KV", "5.91", "GiB",
              share.used_bytes[ch08.LONG_BATCH] / GiB, source=S),
        entry("8.3.2/sim-independent-request-MiB", "8.3.2", "one independent long request",
              "1188", "MiB", indep16.private_bytes / MiB, source=S),
        entry("8.3.2/sim-16-independent-MiB", "8.3.2", "16 independent long requests", "19008",
              "MiB", indep16.used_bytes[ch08.LONG_BATCH] / MiB, source=S),
        entry("8.3.2/sim-capacity-independent", "8.3.2", "independent long requests in 12 GiB",
              "10", "requests", indep.admitted, source=S),
        entry("8.3.2/sim-capacity-shared", "8.3.2", "sharing long requests in 12 GiB", "35",
              "requests", share.admitted, source=S),
    ]

    # --- 17 §5 ------------------------------------------------------------------------------
    k17 = kv_bytes_per_token(LLAMA_8B)
    turn = page_sequences([ch17.CHAT_TURN_TOKENS],
                          ch17.MAX_LEN_TOKENS)  # one max_len block = reservation
    seq_a = page_sequences([ch17.SEQUENCE_A_TOKENS], ch08.BLOCK_TOKENS)
    big = page_sequences([ch17.BIG_BLOCK_TOKENS + 1],
                         ch17.BIG_BLOCK_TOKENS)  # worst case: one token over
    kv_free_bytes = H100_SXM.mem_bytes - LLAMA_8B.weight_bytes - ch17.RUNTIME_RESERVE_BYTES
    one_block = BlockManager.for_budget(kv_free_bytes, LLAMA_8B, block_tokens=ch08.BLOCK_TOKENS)
    naive_users = page_sequences([ch17.PREFIX_TOKENS] * ch17.PREFIX_USERS, ch08.BLOCK_TOKENS)
    paged_users = page_sequences([ch17.PREFIX_TOKENS] * ch17.PREFIX_USERS, ch08.BLOCK_TOKENS,
                                 shared_prefix_tokens=ch17.PREFIX_TOKENS)
    naive = fill_kv_pool(kv_free_bytes, LLAMA_8B, ch17.CHAT_LIVE_TOKENS,
                         block_tokens=ch17.LONG_CONTEXT_TOKENS)
    live = fill_kv_pool(kv_free_bytes, LLAMA_8B, ch17.CHAT_LIVE_TOKENS, block_tokens=1)
    out += [
        entry("17.5/sim-reservation-GB", "17.5", "8,192-token reservation (8B)", "1.07", "GB",
              turn.allocated_tokens * k17 / GB, source=S),
        entry("17.5/sim-chat-turn-MB", "17.5", "300-token chat turn KV", "39", "MB",
              turn.stored_tokens * k17 / MB, source=S),
        entry("17.5/sim-internal-fragmentation-pct", "17.5",
              "internal fragmentation of the reservation", "96", "%",
              100 * turn.unused_fraction, source=S),
        entry("17.5/sim-seq-a-tail-tokens", "17.5", "40 live tokens: tokens in the tail block",
              "8", "tokens", ch08.BLOCK_TOKENS - seq_a.tail_unused[0], source=S),
        entry("17.5/sim-worst-waste-MB", "17.5", "worst-case paged waste: one 16-token block",
              "2", "MB", one_block.block_bytes / MB, source=S,
              note="the chapter bounds the waste by one whole block (16 x 131,072 B = 2.10 MB); "
                   "strictly an on-demand block is never empty, so at most 15 slots "
                   "(1.97 MB) are unused: both print as about 2 MB."),
        entry("17.5/sim-1024-block-waste", "17.5", "a 1,024-token block wastes up to", "1,023",
              "tokens", big.tail_unused[0], source=S),
        entry("17.5/sim-naive-prompt-GB", "17.5", "100 users x 2,000-token prompt, unshared",
              "26.2", "GB", naive_users.allocated_tokens * k17 / GB, source=S),
        entry("17.5/sim-paged-prompt-GB", "17.5", "100 users sharing the prompt's blocks",
              "0.26", "GB", paged_users.allocated_tokens * k17 / GB, source=S),
        entry("17.5/sim-live-kv-MB", "17.5", "live KV per sequence (600 tokens)", "78.6", "MB",
              live.private_bytes / MB, source=S),
        entry("17.5/sim-naive-reservation-GB", "17.5", "naive reservation per sequence", "1.05",
              "GB", naive.block_bytes / GB, source=S,
              note="here the reservation is 17 §4's '8K' = 8,000 tokens (1.05 GB), while the "
                   "fragmentation lines of the same section reserve max_len 8,192 (1.07 GB)."),
        entry("17.5/sim-naive-batch", "17.5", "naive batch in 60 GB (8K reservations)", "57",
              "sequences", naive.admitted, source=S,
              note="60 GB / 1.05 GB: 8,000-token reservations (one 8,000-token block each); "
                   "with the 8,192-token max_len of the fragmentation example it would be "
                   "floor(60 / 1.07) = 55."),
        entry("17.5/sim-paged-batch", "17.5", "paged batch in 60 GB at 600 live tokens", "760",
              "sequences", live.admitted, sig=2, source=S,
              note="60 GB / 78.6 MB = 762.9 -> 762 sequences, printed '~760' (2 significant "
                   "figures). Counted without block rounding, like the chapter; with 16-token "
                   "blocks each sequence holds 608 slots and 752 fit."),
        entry("17.5/sim-batch-ratio", "17.5", "paged / naive batch", "13", "x",
              live.admitted / naive.admitted, source=S),
    ]

    # --- 8.3.3: context organisation, replayed through a PrefixCache ------------------------
    organised = {o.name: o for o in context_organisation()}
    out += [
        entry("8.3.3/sim-context-append-reused", "8.3.3",
              "appending a 1K tool result: the 8K prefix is reused", "8192", "tokens",
              organised["append"].reusable_tokens, source=S,
              note="Printed as 8K: at most the original 8K prefix can be reused."),
        entry("8.3.3/sim-context-append-processed", "8.3.3",
              "appending a 1K tool result: only the new part is processed", "1024", "tokens",
              organised["append"].prefill_tokens, source=S, note="Printed as 1K."),
        entry("8.3.3/sim-context-rewrite-reused", "8.3.3",
              "rewriting the leading instructions: nothing after them is reused", "0",
              "tokens", organised["rewrite"].reusable_tokens, source=S,
              note="The chapter says the following content can no longer be reused."),
    ]
    return out
