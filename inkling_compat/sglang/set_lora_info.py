"""What the shared sink does with a pool's shapes: set_lora_info, a re-bind, slot updates.

sglang 0.5.23 `models/inkling_common/lora.py`, over shapes only (no torch). For one sink class
and one pool manifest (`pool`, optional `rebind`, optional `updated_slots`) `simulate` walks
the calls the memory pool makes:

1. `set_lora_info(*pool)` (legacy l.41-136: checks, `_allocate_lora_operands`,
   `_refresh_lora_operands`; V2 l.276-367: shape unpacking, the combined check, the engine
   sites and the `_down_cat` refresh);
2. `set_lora_info(*rebind)` (a second binding; legacy raises after replacing the buffer
   references, V2 before any change);
3. `on_lora_slots_updated(set(updated_slots))`;

and returns the first failure with its step, its kind and the text it raises:

* `sglang`: one of lora.py's own raise statements (the rules reproduce these in CEL);
* `python`: Python's own error at a line that reads a shape (tuple unpacking/indexing);
* `torch`: sglang's checks passed, then torch (or `range`) fails on the geometry: a view
  whose size does not match, an index past a slot axis, a permute of a non-4-D buffer.

Nothing here raises. `derive` gives the facts the rules read (`adapter_facts.binding`):
`first` (the first failure or null), and for each step whether it completed.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal, Sequence

from inkling_compat.sglang.plain_dataclass import dataclass

Shape = Sequence[int]
Step = Literal["set_lora_info", "rebind", "slots"]


@dataclass(frozen=True)
class BindFailure:
    """The first failure of the sequence: the step, who raises (sglang itself, torch inside
    sglang's code, or python, e.g. unpacking), the exception class and its text."""

    step: Step
    kind: Literal["sglang", "torch", "python"]
    error_class: str
    message: str


@dataclass(frozen=True)
class BindSteps:
    """Which steps completed (a step not asked for counts as completed)."""

    set_lora_info: bool
    rebind: bool
    slots: bool


@dataclass(frozen=True)
class BindReplay:
    """set_lora_info, the re-bind and the slot update replayed: the first failure (None:
    every step completes) and which steps completed."""

    first: BindFailure | None
    completed: BindSteps


def _shape_text(dims: Iterable[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _view_error(target: Sequence[int], size: int) -> tuple[str, str]:
    return "RuntimeError", f"shape '{_shape_text(target)}' is invalid for input of size {size}"


def _numel(shape: Shape) -> int:
    return math.prod(shape)


# --- sglang's explicit checks ----------------------------------------------------------------


def legacy_check(shapes: Sequence[Shape], n: int) -> tuple[str, str] | None:
    """InklingBatchDenseMLPWithLoRA.set_lora_info's checks (l.54-81): (class, message) or None."""
    ga, gb, da, db = shapes
    if any(len(s) != 4 for s in shapes):
        return "ValueError", "Inkling shared-sink LoRA requires four 4D MoE buffers"
    if ga[1] not in (1, n) or db[1] not in (1, n):
        return "ValueError", f"Inkling shared-sink LoRA outer factors must have expert dimension 1 or {n}"
    if ga[1] != db[1]:
        return "ValueError", "Inkling shared-sink gate-up A and down B must use the same expert layout"
    if gb[1] != n or da[1] != n:
        return "ValueError", "Inkling shared-sink LoRA expert count does not match"
    rank = gb[-1]
    if ga[2] != 2 * rank or da[2] != rank or db[-1] != rank:
        return "ValueError", "Inkling shared-sink LoRA rank dimensions do not match"
    return None


def _unpack4(shape: Shape) -> tuple[str, str] | None:
    if len(shape) < 4:
        return "ValueError", f"not enough values to unpack (expected 4, got {len(shape)})"
    if len(shape) > 4:
        return "ValueError", "too many values to unpack (expected 4)"
    return None


def v2_check(shapes: Sequence[Shape], n: int) -> tuple[str, str, str] | None:
    """InklingBatchDenseMLPWithLoRAV2.set_lora_info up to its combined check (l.283-300):
    (kind, class, message) or None. Python evaluates the `or` chain left to right, so an
    index past down A's axes only raises when every earlier comparison held."""
    ga, gb, da, db = shapes
    for shape in (ga, gb):
        failed = _unpack4(shape)
        if failed:
            return ("python", *failed)
    if len(db) < 3:
        return "python", "IndexError", "tuple index out of range"
    outer, two_rank, rank = ga[1], ga[2], gb[3]
    disagree = (
        "ValueError",
        "Inkling shared-sink LoRA pool buffers do not agree: expected gate-up A "
        f"[slots, 1 or {n}, 2R, H], gate-up B [slots, {n}, 2F, R], down A "
        f"[slots, {n}, R, F], down B [slots, 1 or {n}, H, R] with one layout",
    )
    index_error = ("python", "IndexError", "tuple index out of range")
    if outer not in (1, n) or db[1] != outer or gb[1] != n:
        return ("sglang", *disagree)
    if len(da) < 2:
        return index_error
    if da[1] != n or two_rank != 2 * rank:
        return ("sglang", *disagree)
    if len(da) < 3:
        return index_error
    if da[2] != rank or db[-1] != rank:
        return ("sglang", *disagree)
    return None


# --- what happens after the checks ---------------------------------------------------------


def legacy_operands(shapes: Sequence[Shape], n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`_w1_delta` and `_a_cat` shapes for a shared-outer binding (l.97-100)."""
    _, gb, da, _ = shapes
    slots, experts, two_f, rank = gb
    return (slots, experts * two_f, 2 * rank), (slots, rank, experts * da[3])


def legacy_refresh_crash(shapes: Sequence[Shape], n: int, slot_ids: Iterable[int] | None = None) -> tuple[str, str] | None:
    """`_refresh_lora_operands` on a shared-outer binding whose checks passed (l.118-136)."""
    _, gb, da, _ = shapes
    slots, experts, two_f, rank = gb
    f = two_f // 2
    w1_delta = (slots, experts * two_f, 2 * rank)
    view = (slots, experts, f, 2, 2 * rank)
    if _numel(w1_delta) != _numel(view):
        return _view_error(view, _numel(w1_delta))
    ids = range(slots) if slot_ids is None else slot_ids
    for slot in ids:
        if not -da[0] <= slot < da[0]:
            return "IndexError", f"index {slot} is out of bounds for dimension 0 with size {da[0]}"
    return None


def v2_down_cat(shapes: Sequence[Shape], n: int) -> tuple[int, ...]:
    """The `_down_cat` shape set_lora_info needs (l.302)."""
    ga, gb, _, db = shapes
    slots, outer, _, _ = ga
    two_f, rank = gb[2], gb[3]
    return (slots, rank, n * (two_f // 2)) if outer == 1 else (slots, db[2], n * rank)


def v2_sites_crash(shapes: Sequence[Shape], n: int) -> tuple[str, str] | None:
    """V2 set_lora_info after its checks (l.301-358), with `_down_cat` of the needed shape."""
    ga, gb, da, db = shapes
    slots, outer, _, _ = ga
    two_f, rank = gb[2], gb[3]
    shared = outer == 1
    down_cat = v2_down_cat(shapes, n)
    if not shared and slots * n * 2 * rank == 0:
        return "RuntimeError", (
            f"cannot reshape tensor of 0 elements into shape {_shape_text([slots, n * 2 * rank, -1])} because the "
            "unspecified dimension size -1 can be any value and is ambiguous"
        )
    gate_up_b = (slots, n * two_f, rank)
    if _numel(gb) != _numel(gate_up_b):
        return _view_error(gate_up_b, _numel(gb))
    if two_f // 2 == 0:
        return "ValueError", "range() arg 3 must not be zero"
    if not shared:
        block = slots * n * rank  # non-zero here (the reshape above needs it)
        if _numel(da) % block != 0:
            return _view_error([slots, n * rank, -1], _numel(da))
    source = da if shared else db
    if len(source) != 4:
        return "RuntimeError", (
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {len(source)} is not equal to len(dims) = 4"
        )
    permuted = (source[0], source[2], source[1], source[3])
    if _numel(down_cat) != _numel(permuted):
        return _view_error(permuted, _numel(down_cat))
    return None


def _v2_source_slots(shapes: Sequence[Shape]) -> int:
    ga, _, da, db = shapes
    return (da if ga[1] == 1 else db)[0]


# --- the sequence ------------------------------------------------------------------------


def simulate(
    sink_class: str,
    n: int,
    pool: Sequence[Shape],
    rebind: Sequence[Shape] | None = None,
    updated_slots: Iterable[int] | None = None,
) -> BindReplay:
    """The first failure of set_lora_info(pool) -> set_lora_info(rebind) ->
    on_lora_slots_updated(set(updated_slots)), and which steps completed."""
    done = {"set_lora_info": False, "rebind": rebind is None, "slots": updated_slots is None}

    def fail(step: Step, kind: str, error_class: str, message: str) -> BindReplay:
        return BindReplay(first=BindFailure(step, kind, error_class, message), completed=BindSteps(**done))  # type: ignore[arg-type]

    def completed() -> BindReplay:
        return BindReplay(first=None, completed=BindSteps(**done))

    pool = [list(s) for s in pool]
    if sink_class == "legacy":
        checked = legacy_check(pool, n)
        if checked:
            return fail("set_lora_info", "sglang", *checked)
        operands = legacy_operands(pool, n) if pool[0][1] == 1 else None
        if operands is not None:
            crash = legacy_refresh_crash(pool, n)
            if crash:
                return fail("set_lora_info", "torch", *crash)
        done["set_lora_info"] = True
        current = pool
        if rebind is not None:
            rebind = [list(s) for s in rebind]
            checked = legacy_check(rebind, n)
            if checked:
                return fail("rebind", "sglang", *checked)
            if rebind[0][1] == 1:
                wanted = legacy_operands(rebind, n)
                if operands is not None and operands != wanted:
                    message = (
                        "Shared-sink LoRA pool shape changed after initialization: "
                        f"gate-up {operands[0]} -> {wanted[0]}, down-A {operands[1]} -> {wanted[1]}"
                    )
                    return fail("rebind", "sglang", "RuntimeError", message)
                operands = wanted
                crash = legacy_refresh_crash(rebind, n)
                if crash:
                    return fail("rebind", "torch", *crash)
            else:
                operands = None
            done["rebind"] = True
            current = rebind
        if updated_slots is not None:
            ids = set(updated_slots)
            if operands is not None:
                slots = current[1][0]
                if any(slot < 0 or slot >= slots for slot in ids):
                    return fail("slots", "sglang", "IndexError", f"Shared-sink LoRA slot out of range: {sorted(ids)}")
                crash = legacy_refresh_crash(current, n, ids)
                if crash:
                    return fail("slots", "torch", *crash)
            done["slots"] = True
        return completed()

    checked3 = v2_check(pool, n)
    if checked3:
        return fail("set_lora_info", *checked3)
    down_cat = v2_down_cat(pool, n)
    crash = v2_sites_crash(pool, n)
    if crash:
        return fail("set_lora_info", "torch", *crash)
    done["set_lora_info"] = True
    current = pool
    if rebind is not None:
        rebind = [list(s) for s in rebind]
        checked3 = v2_check(rebind, n)
        if checked3:
            return fail("rebind", *checked3)
        wanted = v2_down_cat(rebind, n)
        if wanted != down_cat:
            message = f"Shared-sink LoRA pool shape changed after initialization: {down_cat} -> {wanted}"
            return fail("rebind", "sglang", "RuntimeError", message)
        crash = v2_sites_crash(rebind, n)
        if crash:
            return fail("rebind", "torch", *crash)
        done["rebind"] = True
        current = rebind
    if updated_slots is not None:
        size = _v2_source_slots(current)
        for slot in set(updated_slots):  # sglang iterates the set it is given
            if not -size <= slot < size:
                return fail("slots", "torch", "IndexError", f"index {slot} is out of bounds for dimension 0 with size {size}")
        done["slots"] = True
    return completed()
