"""The batch plan: a batch's routing, computed once on the GPU and read by every layer's forward.

A model runs the same batch through every layer, and every layer's sink routes it the same way:
tokens sorted by slot, the groups of each slot, per-slot counts and offsets (``routing.py``).
:func:`build_plan` computes that once per batch (one launch, one allocation); each layer's
forward (``sink.sink_forward_triton(..., plan=plan)``) only reads it. This is the counterpart of
sglang's ``prepare_lora_batch`` (benchmarks/bench_plan.py times both).

A token whose slot holds no adapter (``slot_active`` False, given by the caller) counts as
unassigned: the routing treats it as -1 and the flag below counts it so. Layers whose
``slot_active`` read the same on the host (``active_key``) share one plan.

The all-unassigned flag (no token has an adapter) lives on the GPU (``routing.no_adapter``),
where the LoRA kernels of a captured forward read it and return at once. Eager, it is also known
on the host (``all_unassigned``): from the ids themselves when they are on the CPU, else read
back once per batch (one device sync, at plan time); the forward then runs the base kernels only.
Inside a CUDA-graph capture nothing is read back (``all_unassigned`` None).

:func:`plan_for` keeps the last few plans in a small table keyed by the slot-id tensor object
they were built from (a weak reference compared by identity; a plan is valid while that
tensor's ``_version`` is unchanged), so layers called one after another with the same tensor
share one plan without any caller holding it: outside a capture, a plan built outside; inside
a capture, a plan built in the same capture (its id read through cuda-python; where that is not
importable no plan is shared inside a capture, each forward builds its own). The table holds
at most ``KEPT`` plans (the oldest goes first): nothing is attached to the caller's tensor, so
no reference cycle runs through it, and a plan lives at most ``KEPT`` batches after its last
use. One token needs no routing launch (``routing`` None: the kernels read the token's slot
themselves).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ._triton import torch
from .routing import SlotRouting, build_routing

KEPT = 4
_kept: list[tuple[weakref.ref, "BatchPlan"]] = []  # most recent first


@dataclass(frozen=True)
class BatchPlan:
    slot_ids: torch.Tensor  # [T] the batch's slot ids (on the device), -1 = no adapter
    num_slots: int
    routing: SlotRouting | None  # None for one token (no launch)
    all_unassigned: bool | None  # host copy of the flag; None when unknown (built in a capture)
    version: int = 0  # slot_ids._version when built
    capture: int | None = None  # id of the CUDA-graph capture it was built in, None outside
    active_key: tuple[bool, ...] | str | None = None  # the slot_active it was built with (None: every slot)

    @property
    def num_tokens(self) -> int:
        return int(self.slot_ids.numel())


def _capture_id(device: torch.device) -> int | None:
    """The id of the capture in progress on the current stream; None outside a capture; -1 when
    capturing but the id cannot be read (then nothing is shared)."""
    if device.type != "cuda" or not torch.cuda.is_current_stream_capturing():
        return None
    try:
        from cuda.bindings import driver  # cuda-python
    except ImportError:
        return -1
    try:
        res = driver.cuStreamGetCaptureInfo(torch.cuda.current_stream(device).cuda_stream)
        if int(res[0]) != 0:
            return -1
        return int(res[2])
    except Exception:  # another cuda-python signature: share nothing rather than guess
        return -1


UNREAD = "unread"  # an active_key for a slot_active applied but not read on the host (inside a capture)


def _mask(slot_active: torch.Tensor | None, active_key, capture: int | None):
    """(the mask the routing applies or None, its host key): no mask when every slot is active;
    the key read from the tensor when not given, except inside a capture (UNREAD)."""
    if slot_active is None:
        return None, None
    if active_key is None:
        if capture is not None:
            return slot_active, UNREAD
        active_key = tuple(bool(v) for v in slot_active.tolist())
    if active_key != UNREAD and all(active_key):
        return None, None
    return slot_active, active_key


def build_plan(slot_ids: torch.Tensor, num_slots: int, *, device: torch.device | None = None,
               host_flag: bool = True, slot_active: torch.Tensor | None = None,
               active_key: tuple[bool, ...] | None = None) -> BatchPlan:
    """The plan of one batch. ``slot_ids`` [T] (any integer dtype, CPU or device; moved to
    ``device``). ``host_flag``: know the all-unassigned flag on the host (a read-back for device
    ids; never inside a capture). ``slot_active`` [S] bool (None: every slot holds an adapter)
    with ``active_key``, its values on the host (read from the tensor when not given)."""
    src = slot_ids
    ids = slot_ids.reshape(-1)
    dev = device if device is not None else ids.device
    capture = _capture_id(dev)
    slot_active, active_key = _mask(slot_active, active_key, capture)
    host_flag = host_flag and active_key != UNREAD

    def assigned(s: int) -> bool:
        return 0 <= s < num_slots and (active_key is None or active_key[s])

    flag: bool | None = None
    if ids.device.type == "cpu" and host_flag:
        flag = not any(assigned(s) for s in ids.tolist())
    ids = ids.to(dev, non_blocking=True)
    if ids.numel() == 1:
        routing = None
        if flag is None and host_flag and capture is None:
            flag = not assigned(int(ids.item()))
    else:
        routing = build_routing(ids, num_slots, slot_active)
        if flag is None and host_flag and capture is None:
            flag = bool(routing.no_adapter.item())
    return BatchPlan(slot_ids=ids, num_slots=num_slots, routing=routing, all_unassigned=flag,
                     version=src._version, capture=capture, active_key=active_key)


def _same_device(have: torch.device, want: torch.device) -> bool:
    """``want`` may leave out the index ("cuda"): the current device's."""
    if have.type != want.type:
        return False
    if want.index is None and want.type == "cuda":
        return have.index == torch.cuda.current_device()
    return want.index is None or have.index == want.index


def plan_for(slot_ids: torch.Tensor, num_slots: int, device: torch.device, *,
             slot_active: torch.Tensor | None = None, active_key: tuple[bool, ...] | None = None) -> BatchPlan:
    """The plan kept for ``slot_ids`` if it still holds (same tensor and version, slots, active
    slots and capture), else a new one, kept (see the module doc)."""
    capture = _capture_id(device)
    slot_active, active_key = _mask(slot_active, active_key, capture)
    for i, (ref, plan) in enumerate(_kept):
        if ref() is slot_ids:
            if (plan.version == slot_ids._version and plan.num_slots == num_slots and plan.capture == capture
                    and capture != -1 and _same_device(plan.slot_ids.device, device) and plan.active_key == active_key):
                if i:
                    _kept.insert(0, _kept.pop(i))
                return plan
    plan = build_plan(slot_ids, num_slots, device=device, slot_active=slot_active, active_key=active_key)
    if capture != -1 and active_key != UNREAD:
        try:
            ref = weakref.ref(slot_ids)
        except TypeError:  # not weakly referable: no sharing
            return plan
        _kept.insert(0, (ref, plan))
        del _kept[KEPT:]
    return plan
