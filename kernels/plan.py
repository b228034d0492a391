"""The batch plan: a batch's routing, computed once on the GPU and read by every layer's forward.

A model runs the same batch through every layer, and every layer's sink routes it the same way:
tokens sorted by slot, the groups of each slot, per-slot counts and offsets (``routing.py``).
:func:`build_plan` computes that once per batch (one launch, one allocation); each layer's
forward (``sink.sink_forward_triton(..., plan=plan)``) only reads it. This is the counterpart of
sglang's ``prepare_lora_batch`` (benchmarks/bench_plan.py times both).

The plan routes by slot id alone (it does not read a layer's ``slot_active``): a slot without an
adapter has zero pool rows, so routing its tokens costs work and never changes the output.

The all-unassigned flag (no token has an adapter) lives on the GPU (``routing.no_adapter``),
where the LoRA kernels of a captured forward read it and return at once. Eager, it is also known
on the host (``all_unassigned``): from the ids themselves when they are on the CPU, else read
back once per batch (one device sync, at plan time); the forward then runs the base kernels only.
Inside a CUDA-graph capture nothing is read back (``all_unassigned`` None).

:func:`plan_for` keeps the plan with the slot-id tensor it was built from (an attribute of that
tensor object, valid while its ``_version`` is unchanged), so layers called one after another
with the same tensor share one plan without any caller holding it: outside a capture, a plan
built outside; inside a capture, a plan built in the same capture (its id read through
cuda-python; where that is not importable no plan is shared inside a capture, each forward
builds its own). One token needs no routing launch (``routing`` None: the kernels read the
token's slot themselves).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._triton import torch
from .routing import SlotRouting, build_routing

_ATTR = "_inkling_batch_plan"


@dataclass(frozen=True)
class BatchPlan:
    slot_ids: torch.Tensor  # [T] the batch's slot ids (on the device), -1 = no adapter
    num_slots: int
    routing: SlotRouting | None  # None for one token (no launch)
    all_unassigned: bool | None  # host copy of the flag; None when unknown (built in a capture)
    version: int = 0  # slot_ids._version when built
    capture: int | None = None  # id of the CUDA-graph capture it was built in, None outside

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


def build_plan(slot_ids: torch.Tensor, num_slots: int, *, device: torch.device | None = None,
               host_flag: bool = True) -> BatchPlan:
    """The plan of one batch. ``slot_ids`` [T] (any integer dtype, CPU or device; moved to
    ``device``). ``host_flag``: know the all-unassigned flag on the host (a read-back for device
    ids; never inside a capture)."""
    src = slot_ids
    ids = slot_ids.reshape(-1)
    dev = device if device is not None else ids.device
    flag: bool | None = None
    if ids.device.type == "cpu" and host_flag:
        flag = not bool(((ids >= 0) & (ids < num_slots)).any())
    ids = ids.to(dev, non_blocking=True)
    capture = _capture_id(dev)
    if ids.numel() == 1:
        routing = None
        if flag is None and host_flag and capture is None:
            s = int(ids.item())
            flag = not (0 <= s < num_slots)
    else:
        routing = build_routing(ids, num_slots)
        if flag is None and host_flag and capture is None:
            flag = bool(routing.no_adapter.item())
    return BatchPlan(slot_ids=ids, num_slots=num_slots, routing=routing, all_unassigned=flag,
                     version=src._version, capture=capture)


def plan_for(slot_ids: torch.Tensor, num_slots: int, device: torch.device) -> BatchPlan:
    """The plan kept with ``slot_ids`` if it still holds (same ids, slots and capture), else a
    new one, kept with it (see the module doc)."""
    plan = getattr(slot_ids, _ATTR, None)
    capture = _capture_id(device)
    if (plan is not None and plan.version == slot_ids._version and plan.num_slots == num_slots
            and plan.capture == capture and capture != -1 and plan.slot_ids.device == device):
        return plan
    plan = build_plan(slot_ids, num_slots, device=device)
    if capture != -1:
        try:
            setattr(slot_ids, _ATTR, plan)
        except (AttributeError, TypeError):  # not a plain tensor: no sharing
            pass
    return plan
