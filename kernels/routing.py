"""Token -> slot routing, built once per forward and shared by every kernel of it.

Tokens are stably sorted by slot (slot -1, "no adapter", first). Every kernel then works on
rows in this sorted order: a tile of ``BLOCK_M`` consecutive sorted rows holds a few
*groups* (runs of one slot), usually one. A kernel loops over the groups present in its tile
(first row's group .. last row's group) and applies each group's adapter to that group's rows
only, so a batch with mixed slots needs no per-slot launches and no padding of segments.

:func:`build_routing` is one Triton launch, a counting sort: each program takes a chunk of
tokens, counts the tokens of each slot (in all chunks, and in the chunks before its own), and
places each of its tokens at its slot's start plus its rank among that slot's earlier tokens. It replaced ~29 small torch launches (argsort, scatter_add, cumsum, ...) that
cost more than the routing itself on an H200 (docs/performance.md). No host sync and no atomics, so it sits inside a
CUDA graph and reruns bit-identically. :func:`build_routing_torch` is the same routing in plain
torch (its reference, identical outputs); :func:`routing_reference` says what the groups mean.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._triton import CachedLaunch, check_device, tl, torch, triton
from .tiles import cdiv, next_power_of_2


@dataclass(frozen=True)
class SlotRouting:
    order: torch.Tensor  # [T] int32: sorted position -> original token index
    row_group: torch.Tensor  # [T] int32: group index of each sorted row (non-decreasing)
    group_slot: torch.Tensor  # [S + 2] int32: slot of each group (-1 none / unused)
    num_tokens: int
    num_slots: int
    # [S + 3] int32: first sorted row of each group, T for unused groups (so that group g has
    # rows [group_start[g], group_start[g + 1])); the fused kernels tile each group on its own.
    group_start: torch.Tensor | None = None
    # [S + 1] int32 each, by sort key (0: no adapter, k: slot k - 1): tokens of the key and the
    # first sorted row of the key; [1] int32: 1 when no token has an adapter (kernels that see it
    # return at once). All in the one buffer :func:`build_routing` allocates.
    slot_counts: torch.Tensor | None = None
    slot_offsets: torch.Tensor | None = None
    no_adapter: torch.Tensor | None = None


@triton.jit
def _keys(slot_ptr, active_ptr, t, T, S, HAS_ACTIVE: tl.constexpr):
    """Sort key of tokens ``t``: 0 no adapter, 1..S slot + 1; -1 for rows past T (match nothing)."""
    valid = t < T
    s = tl.load(slot_ptr + t, mask=valid, other=-1).to(tl.int32)
    ok = (s >= 0) & (s < S)  # out-of-range ids are refused by the runtime; here they get no adapter
    if HAS_ACTIVE:
        act = tl.load(active_ptr + tl.where(ok, s, 0), mask=valid & ok, other=0)
        ok = ok & (act != 0)
    key = tl.where(ok, s + 1, 0)
    return tl.where(valid, key, -1)


@triton.jit(do_not_specialize=["T"])
def _routing_kernel(
    slot_ptr, active_ptr, order_ptr, row_group_ptr, group_slot_ptr, group_start_ptr,
    counts_ptr, offsets_ptr, flag_ptr,
    T, S,
    HAS_ACTIVE: tl.constexpr, CHUNK: tl.constexpr, BLOCK_KEY: tl.constexpr,
):
    # Program p places the tokens of chunk p. It counts every key over all T (cheap, parallel
    # loads) and, separately, over the chunks before its own; no program waits for another.
    pid = tl.program_id(0)
    keys = tl.arange(0, BLOCK_KEY)  # key values (and, below, group indices)
    offs = tl.arange(0, CHUNK)
    counts = tl.zeros((BLOCK_KEY,), dtype=tl.int32)
    before_chunk = tl.zeros((BLOCK_KEY,), dtype=tl.int32)
    for c0 in range(0, T, CHUNK):
        key = _keys(slot_ptr, active_ptr, c0 + offs, T, S, HAS_ACTIVE)
        per_key = tl.sum((key[:, None] == keys[None, :]).to(tl.int32), axis=0)
        counts += per_key
        before_chunk += per_key * (c0 < pid * CHUNK).to(tl.int32)
    present = counts > 0
    group_of_key = tl.cumsum(present.to(tl.int32), 0) - 1
    start = tl.cumsum(counts, 0) - counts + before_chunk  # this chunk's first sorted row per key
    if pid == 0:
        # group_slot[g] = slot of the present key whose group is g, else -1 (key 0 is slot -1 too).
        match = present[None, :] & (group_of_key[None, :] == keys[:, None])  # [group, key]
        gslot = tl.sum(tl.where(match, keys[None, :], 0), axis=1) - 1
        tl.store(group_slot_ptr + keys, gslot, mask=keys < S + 2)
        # group_start[g] = first row of group g (program 0's start is the global one), T if unused.
        has = tl.sum(match.to(tl.int32), axis=1) > 0
        gstart = tl.where(has, tl.sum(tl.where(match, start[None, :], 0), axis=1), T)
        tl.store(group_start_ptr + keys, gstart, mask=keys < S + 3)
        # Per key: its tokens and its first sorted row; the flag: no token has an adapter.
        tl.store(counts_ptr + keys, counts, mask=keys < S + 1)
        tl.store(offsets_ptr + keys, start, mask=keys < S + 1)
        assigned = tl.sum(tl.where((keys > 0) & (keys < S + 1), counts, 0), 0)
        tl.store(flag_ptr, (assigned == 0).to(tl.int32))
    # Each token's sorted row = its key's start + its rank among earlier tokens of that key.
    t = pid * CHUNK + offs
    key = _keys(slot_ptr, active_ptr, t, T, S, HAS_ACTIVE)
    onehot = (key[:, None] == keys[None, :]).to(tl.int32)  # [CHUNK, key]
    before = tl.cumsum(onehot, 0) - onehot
    hit = onehot > 0
    pos = tl.sum(tl.where(hit, before + start[None, :], 0), axis=1)
    grp = tl.sum(tl.where(hit, group_of_key[None, :], 0), axis=1)
    valid = t < T
    tl.store(order_ptr + pos, t, mask=valid)
    tl.store(row_group_ptr + pos, grp, mask=valid)


_launch = CachedLaunch(_routing_kernel)


@triton.jit
def group_tile(group_start_ptr, pid_m, T, N_GROUPS, BLOCK_M: tl.constexpr, BLOCK_G: tl.constexpr):
    """Tile ``pid_m`` of the group-aligned tiling used by the fused kernels: the rows of each
    group (in group order) cut into ``BLOCK_M``-row tiles of their own, so every tile holds one
    slot. Returns (group, first row, end row); an empty range (end <= first) past the last tile.
    There are at most ``cdiv(T, BLOCK_M) + N_GROUPS - 1`` tiles (each group adds one partial)."""
    g = tl.arange(0, BLOCK_G)
    gmask = g < N_GROUPS
    lo = tl.load(group_start_ptr + g, mask=gmask, other=T)
    hi = tl.load(group_start_ptr + g + 1, mask=gmask, other=T)
    tiles = (hi - lo + BLOCK_M - 1) // BLOCK_M
    end = tl.cumsum(tiles, 0)
    sel = ((end - tiles) <= pid_m) & (pid_m < end)
    grp = tl.sum(tl.where(sel, g, 0), 0)
    row0 = tl.sum(tl.where(sel, lo + (pid_m - (end - tiles)) * BLOCK_M, 0), 0)
    row_end = tl.sum(tl.where(sel, hi, 0), 0)
    return grp, row0, row_end


@triton.jit
def one_token_slot(slot_ptr, active_ptr, S):
    """The slot of the single token of a :class:`OneToken` routing: its id if in [0, S) and the
    slot is active, else -1 (the same rule as the sort keys above)."""
    s = tl.load(slot_ptr).to(tl.int32)
    ok = (s >= 0) & (s < S)
    act = tl.load(active_ptr + tl.where(ok, s, 0))
    return tl.where(ok & (act != 0), s, -1)


@dataclass(frozen=True)
class OneToken:
    """The routing of a batch of one token, with no launch: sorted order is token order and
    there is one group, whose slot the fused kernels read and check themselves."""

    slot_ids: torch.Tensor  # [1] the token's slot id (any integer dtype)
    active: torch.Tensor  # [S] uint8: slot holds an adapter
    num_slots: int
    num_tokens: int = 1


def one_token(slot_ids: torch.Tensor, num_slots: int, slot_active: torch.Tensor | None = None) -> OneToken:
    """:class:`OneToken` for ``slot_ids`` of one element (no kernel launch)."""
    ids = slot_ids.reshape(-1)
    if ids.numel() != 1:
        raise ValueError(f"one_token: {ids.numel()} slot ids, not 1")
    if slot_active is None:
        active = torch.ones(num_slots, dtype=torch.uint8, device=ids.device)
    else:
        active = slot_active.to(ids.device)
        active = (active.view(torch.uint8) if active.dtype == torch.bool else (active != 0).view(torch.uint8)).contiguous()
    return OneToken(slot_ids=ids.contiguous(), active=active, num_slots=num_slots)


def extra_tiles(T: int, num_slots: int) -> int:
    """Partial tiles the group-aligned tiling may add: one per group boundary (at most S of them,
    and fewer than T)."""
    return max(0, min(num_slots, T - 1))


def kernel_routing(routing: SlotRouting | OneToken | None, *, fused: bool, tokens: int,
                   filler: torch.Tensor) -> tuple[int, bool, int, tuple[torch.Tensor, ...]]:
    """What a GEMM wrapper passes its kernel for ``routing``: (slots S, one token?, extra tiles
    of the group-aligned grid, the four routing pointers: order, row group, group slot, group
    start). ``filler`` stands in for pointers a kernel never reads (no routing)."""
    S = routing.num_slots if routing is not None else 0
    single = isinstance(routing, OneToken)
    if single and not (fused and tokens == 1):
        raise ValueError("a OneToken routing is for the fused path (A given) of one token")
    extra = extra_tiles(tokens, S) if fused and not single else 0
    if single:  # the kernels read the token's slot id (as group_slot) and the active flags (as group_start)
        pointers = (routing.slot_ids, routing.slot_ids, routing.slot_ids, routing.active)
    elif routing is not None:
        pointers = (routing.order, routing.row_group, routing.group_slot, routing.group_start if fused else routing.order)
    else:
        pointers = (filler,) * 4
    return S, single, extra, pointers


def build_routing(slot_ids: torch.Tensor, num_slots: int, slot_active: torch.Tensor | None = None) -> SlotRouting:
    """Group tokens by slot. ``slot_ids`` [T] holds a slot in [0, S) or -1 (no adapter).

    ``slot_active`` [S] bool marks slots that hold an adapter; tokens of other slots are
    treated as -1 (their pool rows are zero, so this only skips work).
    """
    device = slot_ids.device
    ids = slot_ids.reshape(-1)
    if ids.dtype not in (torch.int32, torch.int64):
        ids = ids.to(torch.int64)
    ids = ids.contiguous()
    check_device(ids)
    T = int(ids.numel())
    S = num_slots
    # One allocation for every output: order, row group, group slot, group start, key counts,
    # key offsets, the no-adapter flag; each part starts 16-byte aligned (as its own allocation
    # would, so the kernels' pointer specializations do not change with T).
    sizes = (T, T, S + 2, S + 3, S + 1, S + 1, 1)
    padded = [-(-k // 4) * 4 for k in sizes]
    buf = torch.empty(sum(padded), dtype=torch.int32, device=device)
    order, row_group, group_slot, group_start, counts, offsets, flag = (
        part[:k] for part, k in zip(torch.split(buf, padded), sizes))
    if slot_active is not None:
        active = slot_active.to(device)
        active = (active.view(torch.uint8) if active.dtype == torch.bool else (active != 0).view(torch.uint8)).contiguous()
    else:
        active = ids
    block_key = next_power_of_2(num_slots + 3)
    # A [CHUNK, BLOCK_KEY] one-hot tile per program (<= 4K elements); one program up to 256 tokens.
    chunk = max(16, min(next_power_of_2(max(T, 1)), 4096 // block_key, 256))
    _launch((max(1, cdiv(T, chunk)),), (ids, active, order, row_group, group_slot, group_start, counts, offsets, flag,
                                                T, num_slots),
            {"HAS_ACTIVE": slot_active is not None, "CHUNK": chunk, "BLOCK_KEY": block_key, "num_warps": 4})
    return SlotRouting(order=order, row_group=row_group, group_slot=group_slot, num_tokens=T, num_slots=num_slots,
                       group_start=group_start, slot_counts=counts, slot_offsets=offsets, no_adapter=flag)


def build_routing_torch(slot_ids: torch.Tensor, num_slots: int, slot_active: torch.Tensor | None = None) -> SlotRouting:
    """The same routing in fixed-size torch ops (stable argsort, scatter_add, cumsum, scatter):
    graph-capturable too, but ~29 launches. The reference of :func:`build_routing`."""
    device = slot_ids.device
    s = slot_ids.reshape(-1).to(torch.int64)
    s = torch.where((s >= 0) & (s < num_slots), s, -1)
    if slot_active is not None:
        s = torch.where((s >= 0) & slot_active.to(device)[s.clamp(min=0, max=num_slots - 1)], s, -1)
    key = s + 1  # 0: no adapter; 1..S: slot + 1
    order = torch.argsort(key, stable=True)
    sorted_key = key[order]
    # scatter_add, not bincount: bincount on CUDA reads the maximum back to the host.
    counts = torch.zeros(num_slots + 1, dtype=torch.int64, device=device).scatter_add_(0, key, torch.ones_like(key))
    present = counts > 0
    rank = torch.cumsum(present.to(torch.int64), 0) - 1  # group index of each key value
    row_group = rank[sorted_key]
    group_slot = torch.full((num_slots + 2,), -1, dtype=torch.int64, device=device)
    # Absent key values write into the spare last entry; present ones into their group.
    index = torch.where(present, rank, torch.full_like(rank, num_slots + 1))
    group_slot.scatter_(0, index, torch.arange(-1, num_slots, device=device))
    group_slot.narrow(0, num_slots + 1, 1).fill_(-1)  # fill_, not item assignment: graph-capturable
    T = int(s.numel())
    group_start = torch.full((num_slots + 3,), T, dtype=torch.int64, device=device)
    group_start.scatter_(0, index, torch.cumsum(counts, 0) - counts)
    group_start.narrow(0, num_slots + 1, 2).fill_(T)  # the spare entry (and the one after it)
    return SlotRouting(
        order=order.to(torch.int32),
        row_group=row_group.to(torch.int32),
        group_slot=group_slot.to(torch.int32),
        num_tokens=T,
        num_slots=num_slots,
        group_start=group_start.to(torch.int32),
    )


def routing_reference(slot_ids: torch.Tensor) -> list[tuple[int, list[int]]]:
    """(slot, token indices) per distinct slot in ascending slot order: what the groups mean."""
    ids = slot_ids.reshape(-1).tolist()
    out: dict[int, list[int]] = {}
    for t, slot in enumerate(ids):
        out.setdefault(int(slot), []).append(t)
    return sorted(out.items())
