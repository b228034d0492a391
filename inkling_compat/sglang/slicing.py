"""Geometry of the shared sink's TP slice methods, over shapes only (no torch).

sglang 0.5.23 `models/inkling_common/lora.py` (l.138-223): before the memory pool copies an
adapter factor into a shared-sink buffer it calls, on the sink module,

* `slice_moe_lora_a_weights(w, tp_rank, target)` for lora_A factors and
* `slice_moe_lora_b_weights(w, tp_rank, target)` for lora_B factors,

with `target` the canonical pool name `"gate_up_proj_moe"` or `"down_proj_moe"` (also for the
shared namespace) and `tp_rank` the sink's TP rank. Both classes (legacy and V2) share the
methods. What they do to a tensor of a given shape:

* a **2-D** factor is first brought into the per-expert 3-D form:
  - A, gate_up: `[r2, H]` -> `[1, r2, H]` (unsqueeze);
  - A, any other target (treated as down A): `[r, W]` -> `[n, r, W // n]`
    (`ValueError` "Shared-sink down LoRA-A width must be divisible by {n}, got {W}" unless `W % n == 0`);
  - B, down: `[H, r]` -> `[1, H, r]` (unsqueeze);
  - B, any other target (treated as gate/up B): `[Hb, r]` -> `[n, Hb // n, r]`
    (`ValueError` "Shared-sink gate/up LoRA-B height must be divisible by {n}, got {Hb}" unless `Hb % n == 0`);
  any other rank (3-D, 4-D, ...) passes through unchanged;
* then, only when `moe_tp_size > 1` (the sink's `tp_size`):
  - A with target `"down_proj_moe"`: the last axis is cut to `[p*F, p*F + F)`
    (`weights[..., start:end]`);
  - B with target `"gate_up_proj_moe"`: rows `[p*F, p*F+F)` and `[half + p*F, half + p*F + F)`
    of each expert matrix are glued together, `half = rows // 2`. A 3-D factor is cut expert by
    expert along axis 1 and re-stacked; any other rank is cut along axis 0;
  - everything else is returned as it is (gate/up A and down B are replicated across ranks).

`p` is `tp_rank` and `F` is `intermediate_size_per_partition` (= intermediate_size // tp_size).
Out-of-range cuts are **clamped**, as Python/torch slicing is: a cut past the end of an axis
gives a shorter (possibly empty) axis, not an error. The few ways the geometry itself makes
torch/Python raise are reported as failures too (see `slice_failure`).

Public API (plain lists of ints in and out; nothing here raises):

* `slice_lora_a(shape, target, n, tp_size, tp_rank, f_local) -> list[int] | None`
* `slice_lora_b(shape, target, n, tp_size, tp_rank, f_local) -> list[int] | None`
  the per-rank shape sglang's method returns, or None when the method raises;
* `slice_failure(factor, shape, target, n, tp_size, tp_rank, f_local) -> SliceRefusal | None`
  (`factor` is `"a"` or `"b"`): what the method raises (class, exact message, site), if anything;
* `slice_factor(...)`: both at once, as a `SliceResult`;
* `slice_expert(factor, shape, target, tp_size, tp_rank, f_local) -> SliceResult`: one entry
  of a dict of per-expert tensors (`{expert_id: tensor}`), which skips the 2-D step and only
  gets the TP cut, along its first axis for gate/up B (l.165-169, l.200-204);
* `GATE_UP`, `DOWN`: the two canonical target names.

Every `SliceResult` also carries `plan`: the torch steps (`inkling_compat.sglang.plan`, on the
one tensor named `WEIGHT`) that produce that shape; the runtime applies them to the tensor
(`runtime/pool_builder.apply_plan`), so the checker and the runtime share this one geometry.
The cut bounds in a plan are already clamped.
"""

from __future__ import annotations

from inkling_compat.sglang.plain_dataclass import dataclass
from inkling_compat.sglang.plan import Reshape, Step, Take, clamp

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence

GATE_UP = "gate_up_proj_moe"
DOWN = "down_proj_moe"

if TYPE_CHECKING:  # (annotations only: a Literal alias costs 10-20 us to build at import)
    from typing import Literal

    Factor = Literal["a", "b"]
WEIGHT = "w"  # the name the steps of a slice plan give the one tensor they act on


@dataclass(frozen=True)
class SliceRefusal:
    """What a slice method raises: the exception class name, its exact text, and which check.

    `site` is `"down_a"` / `"gate_up_b"` for sglang's two divisibility checks (`n` and `value`
    are then the expert count and the rejected width/height), otherwise the name of the
    Python/torch failure (`"zero_experts"`, `"scalar"`, `"empty_stack"`).
    """

    error_class: str
    message: str
    site: str
    n: int
    value: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"error_class": self.error_class, "message": self.message, "site": self.site, "n": self.n, "value": self.value}


@dataclass(frozen=True)
class SliceResult:
    """The per-rank shape sglang's slice method returns, or the failure it raises, and the
    steps that turn the factor into that shape (empty when it is returned as it is)."""

    shape: list[int] | None
    failure: SliceRefusal | None
    plan: tuple[Step, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failure is None


def _to_3d(factor: Factor, shape: list[int], target: str, n: int) -> SliceResult:
    """The 2-D -> 3-D step of both methods (other ranks pass through)."""
    if len(shape) != 2:
        return SliceResult(list(shape), None)
    if factor == "a":
        if target == GATE_UP:
            return SliceResult([1, *shape], None, (Reshape(WEIGHT, (1, *shape)),))
        rank, width = shape
        if n == 0:
            return SliceResult(None, SliceRefusal("ZeroDivisionError", "integer modulo by zero", "zero_experts", n, width))
        if width % n != 0:
            message = f"Shared-sink down LoRA-A width must be divisible by {n}, got {width}"
            return SliceResult(None, SliceRefusal("ValueError", message, "down_a", n, width))
        # weights.view(rank, n, width // n).transpose(0, 1).contiguous()
        return SliceResult([n, rank, width // n], None, (Reshape(WEIGHT, (rank, n, width // n), True),))
    if target == DOWN:
        return SliceResult([1, *shape], None, (Reshape(WEIGHT, (1, *shape)),))
    height, rank = shape
    if n == 0:
        return SliceResult(None, SliceRefusal("ZeroDivisionError", "integer modulo by zero", "zero_experts", n, height))
    if height % n != 0:
        message = f"Shared-sink gate/up LoRA-B height must be divisible by {n}, got {height}"
        return SliceResult(None, SliceRefusal("ValueError", message, "gate_up_b", n, height))
    return SliceResult([n, height // n, rank], None, (Reshape(WEIGHT, (n, height // n, rank)),))


def _down_a_cut(shape: list[int], tp_rank: int, f_local: int) -> Take:
    """_slice_down_lora_a: `weights[..., start:end]`."""
    start = tp_rank * f_local
    return Take(WEIGHT, len(shape) - 1, (clamp(shape[-1], start, start + f_local),))


def _gate_up_b_cut(shape: list[int], dim: int, tp_rank: int, f_local: int) -> Take:
    """_slice_gate_up_lora_b on axis `dim` (of `rows`): gate rows ++ up rows, `half = rows // 2`."""
    rows = shape[dim]
    start = tp_rank * f_local
    end = start + f_local
    half = rows // 2
    return Take(WEIGHT, dim, (clamp(rows, start, end), clamp(rows, half + start, half + end)))


def _take(shape: list[int], step: Take) -> list[int]:
    out = list(shape)
    out[step.dim] = sum(stop - start for start, stop in step.ranges)
    return out


def slice_factor(
    factor: Factor,
    shape: Sequence[int],
    target: str,
    n: int,
    tp_size: int,
    tp_rank: int,
    f_local: int,
) -> SliceResult:
    """sglang's `slice_moe_lora_{a,b}_weights` on a tensor of `shape` (see the module doc).

    `n` = n_shared_experts, `tp_size` = the sink's moe_tp_size, `tp_rank` in [0, tp_size),
    `f_local` = intermediate_size_per_partition.
    """
    result = _to_3d(factor, list(shape), target, n)
    if result.failure is not None or tp_size <= 1:
        return result
    out = list(result.shape or [])
    if factor == "a":
        if target != DOWN:
            return result
        if not out:
            message = "too many indices for tensor of dimension 0"
            return SliceResult(None, SliceRefusal("IndexError", message, "scalar", n))
        cut = _down_a_cut(out, tp_rank, f_local)
        return SliceResult(_take(out, cut), None, result.plan + (cut,))
    if target != GATE_UP:
        return result
    if len(out) == 3:
        if out[0] == 0:
            message = "stack expects a non-empty TensorList"
            return SliceResult(None, SliceRefusal("RuntimeError", message, "empty_stack", n))
        # torch.stack of the per-expert cuts of axis 0 == one cut of axis 1
        cut = _gate_up_b_cut(out, 1, tp_rank, f_local)
        return SliceResult(_take(out, cut), None, result.plan + (cut,))
    if not out:
        return SliceResult(None, SliceRefusal("IndexError", "tuple index out of range", "scalar", n))
    cut = _gate_up_b_cut(out, 0, tp_rank, f_local)
    return SliceResult(_take(out, cut), None, result.plan + (cut,))


def slice_expert(
    factor: Factor, shape: Sequence[int], target: str, tp_size: int, tp_rank: int, f_local: int
) -> SliceResult:
    """One entry of a per-expert dict through `slice_moe_lora_{a,b}_weights`: no 2-D step,
    only the TP cut (down A: last axis; gate/up B: first axis). A 0-D entry fails as torch does."""
    out = list(shape)
    cuts = (factor == "a" and target == DOWN) or (factor == "b" and target == GATE_UP)
    if tp_size <= 1 or not cuts:
        return SliceResult(out, None)
    if not out:
        error = ("IndexError", "too many indices for tensor of dimension 0") if factor == "a" else ("IndexError", "tuple index out of range")
        return SliceResult(None, SliceRefusal(*error, "scalar", 0))
    cut = _down_a_cut(out, tp_rank, f_local) if factor == "a" else _gate_up_b_cut(out, 0, tp_rank, f_local)
    return SliceResult(_take(out, cut), None, (cut,))


def slice_lora_a(
    shape: Sequence[int], target: str, n: int, tp_size: int, tp_rank: int, f_local: int
) -> list[int] | None:
    """Per-rank shape of a lora_A factor after `slice_moe_lora_a_weights`; None if it raises."""
    return slice_factor("a", shape, target, n, tp_size, tp_rank, f_local).shape


def slice_lora_b(
    shape: Sequence[int], target: str, n: int, tp_size: int, tp_rank: int, f_local: int
) -> list[int] | None:
    """Per-rank shape of a lora_B factor after `slice_moe_lora_b_weights`; None if it raises."""
    return slice_factor("b", shape, target, n, tp_size, tp_rank, f_local).shape


def slice_failure(
    factor: Factor,
    shape: Sequence[int],
    target: str,
    n: int,
    tp_size: int = 1,
    tp_rank: int = 0,
    f_local: int = 0,
) -> SliceRefusal | None:
    """What `slice_moe_lora_{factor}_weights` raises for a tensor of `shape`, or None.

    sglang's own checks are the two divisibility ValueErrors on 2-D factors (TP-independent);
    the TP arguments only matter for the torch failures of degenerate shapes.
    """
    return slice_factor(factor, shape, target, n, tp_size, tp_rank, f_local).failure
