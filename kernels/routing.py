"""Token -> slot routing, built once per forward and shared by every kernel of it.

Tokens are stably sorted by slot (slot -1, "no adapter", first). Every kernel then works on
rows in this sorted order: a tile of ``BLOCK_M`` consecutive sorted rows holds a few
*groups* (runs of one slot), usually one. A kernel loops over the groups present in its tile
(first row's group .. last row's group) and applies each group's adapter to that group's rows
only, so a batch with mixed slots needs no per-slot launches and no padding of segments.

Built with fixed-size torch ops only (argsort, scatter_add, cumsum, scatter): no host sync, so the
routing can sit inside a CUDA graph. Pure torch; the reference is :func:`routing_reference`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SlotRouting:
    order: torch.Tensor  # [T] int32: sorted position -> original token index
    row_group: torch.Tensor  # [T] int32: group index of each sorted row (non-decreasing)
    group_slot: torch.Tensor  # [S + 2] int32: slot of each group (-1 none / unused)
    num_tokens: int
    num_slots: int


def build_routing(slot_ids: torch.Tensor, num_slots: int, slot_active: torch.Tensor | None = None) -> SlotRouting:
    """Group tokens by slot. ``slot_ids`` [T] holds a slot in [0, S) or -1 (no adapter).

    ``slot_active`` [S] bool marks slots that hold an adapter; tokens of other slots are
    treated as -1 (their pool rows are zero, so this only skips work).
    """
    device = slot_ids.device
    s = slot_ids.reshape(-1).to(torch.int64)
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
    return SlotRouting(
        order=order.to(torch.int32),
        row_group=row_group.to(torch.int32),
        group_slot=group_slot.to(torch.int32),
        num_tokens=int(s.numel()),
        num_slots=num_slots,
    )


def routing_reference(slot_ids: torch.Tensor) -> list[tuple[int, list[int]]]:
    """(slot, token indices) per distinct slot in ascending slot order: what the groups mean."""
    ids = slot_ids.reshape(-1).tolist()
    out: dict[int, list[int]] = {}
    for t, slot in enumerate(ids):
        out.setdefault(int(slot), []).append(t)
    return sorted(out.items())
