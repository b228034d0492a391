"""The vocabulary of tensor steps the sglang replays emit: what sglang 0.5.23 does to a tensor
(a view/reshape, a cat, a repeat, a rename, a zero fill, a slice), written down as data.

The replays in this package (`adapter_loader`, `slicing`) decide *which* steps sglang takes
from shapes alone and return them as a plan; `apply_shapes` runs a plan on shapes (what the
checker's facts use) and `inkling_compat.runtime.pool_builder.apply_plan` runs the same plan
on torch tensors (what the runtime loads). So each sglang step is written once, and a test
(tests/test_one_truth.py) holds the two applications to the same shapes.

The ops mirror the torch calls sglang makes, one op per call kind:

* `Reshape(name, shape, transpose01)`: `w.reshape(shape)` / `w.view(shape)` / `w.unsqueeze(0)`,
  then `.transpose(0, 1).contiguous()` when `transpose01` (lora/lora.py l.357-366,
  models/inkling_common/lora.py l.146, l.155-162, l.185, l.193);
* `Cat(out, inputs, dim)`: `weights[out] = torch.cat([weights.pop(i) for i in inputs], dim)`;
* `Zeros(name, like)`: `weights[name] = torch.zeros_like(weights[like])` (lora/lora.py l.483);
* `Repeat(name, reps)`: `weights[name] = weights[name].repeat(*reps)`;
* `Rename(old, new)`: `weights[new] = weights.pop(old)` (the new key goes to the end);
* `Take(name, dim, ranges)` (models/inkling_common/lora.py `_slice_down_lora_a` l.172-175,
  `_slice_gate_up_lora_b` l.214-223): `torch.cat([w[..., a:b, ...] for a, b in ranges], dim)` along
  `dim`, the bounds already **clamped** to the axis length (Python/torch slicing clamps a cut
  past the end; `narrow` would raise, so the plan carries the clamped bounds and both sides
  agree).

Shapes are lists of ints. Nothing here imports torch.
"""

from __future__ import annotations

import math
from operator import itemgetter

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence


class NamedFields(tuple):  # type: ignore[type-arg]
    """A step (and a plan's result): a tuple of its fields, as `typing.NamedTuple` makes one (equal, hashed, unpacked,
    indexed and pickled as that tuple, the same repr), without NamedTuple's class creation at
    import (some 0.2 ms a class; tests/test_plan_steps.py holds the two alike)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Each of a subclass's `_fields` read by position, and matched by position in `case`."""
        super().__init_subclass__(**kwargs)
        cls.__match_args__ = cls._fields
        for index, name in enumerate(cls._fields):
            setattr(cls, name, property(itemgetter(index)))

    def __getnewargs__(self) -> tuple[object, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self)) + ")"


class Reshape(NamedFields):
    __slots__ = ()
    _fields = ("name", "shape", "transpose01")

    def __new__(cls, name: str, shape: tuple[int, ...], transpose01: bool = False) -> "Reshape":
        return tuple.__new__(cls, (name, shape, transpose01))


class Cat(NamedFields):
    __slots__ = ()
    _fields = ("out", "inputs", "dim")

    def __new__(cls, out: str, inputs: tuple[str, ...], dim: int) -> "Cat":
        return tuple.__new__(cls, (out, inputs, dim))


class Zeros(NamedFields):
    __slots__ = ()
    _fields = ("name", "like")

    def __new__(cls, name: str, like: str) -> "Zeros":
        return tuple.__new__(cls, (name, like))


class Repeat(NamedFields):
    __slots__ = ()
    _fields = ("name", "reps")

    def __new__(cls, name: str, reps: tuple[int, ...]) -> "Repeat":
        return tuple.__new__(cls, (name, reps))


class Rename(NamedFields):
    __slots__ = ()
    _fields = ("old", "new")

    def __new__(cls, old: str, new: str) -> "Rename":
        return tuple.__new__(cls, (old, new))


class Take(NamedFields):
    __slots__ = ()
    _fields = ("name", "dim", "ranges")

    def __new__(cls, name: str, dim: int, ranges: tuple[tuple[int, int], ...]) -> "Take":
        return tuple.__new__(cls, (name, dim, ranges))


Step = Reshape | Cat | Zeros | Repeat | Rename | Take


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape) if shape else 1


def clamp(length: int, start: int, stop: int) -> tuple[int, int]:
    """`range(length)[start:stop]` as (start, stop) for 0 <= start <= stop: Python's clamping."""
    return min(start, length), max(min(stop, length), min(start, length))


def cat_failure(parts: Sequence[Sequence[int]], dim: int) -> str | None:
    """What torch.cat(parts, dim) raises on CPU tensors of these shapes (sglang loads adapter
    weights on the CPU: `_process_weight` calls `.cpu()`), or None. The meta device words the
    same checks differently; the CPU text is the one in a server's log."""
    first = parts[0]
    for number, part in enumerate(parts[1:], 1):
        if len(part) != len(first):
            return f"Tensors must have same number of dimensions: got {len(first)} and {len(part)}"
        for axis, (want, got) in enumerate(zip(first, part)):
            if axis != dim % len(first) and want != got:
                return f"Sizes of tensors must match except in dimension {dim}. Expected size {want} but got size {got} for tensor number {number} in the list."
    return None


def cat_shape(a: Sequence[int], b: Sequence[int], dim: int) -> list[int]:
    """Shape of torch.cat((a, b), dim); on shapes that torch would refuse (ranks differ, dim
    out of range) the first operand's shape, as the checker's facts have always modelled it
    (the rules that matter read the shapes of well-formed adapters)."""
    out = list(a)
    if len(a) == len(b) and -len(a) <= dim < len(a):
        out[dim] = a[dim] + b[dim]
    return out


def _reshape(step: Reshape, shapes: dict[str, list[int]]) -> None:
    shape = list(step.shape)
    if step.transpose01 and len(shape) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    shapes[step.name] = shape


def _cat(step: Cat, shapes: dict[str, list[int]]) -> None:
    parts = [shapes.pop(name) for name in step.inputs]
    shape = list(parts[0])
    for part in parts[1:]:
        shape = cat_shape(shape, part, step.dim)
    shapes[step.out] = shape


def _zeros(step: Zeros, shapes: dict[str, list[int]]) -> None:
    shapes[step.name] = list(shapes[step.like])


def _repeat(step: Repeat, shapes: dict[str, list[int]]) -> None:
    shape = shapes[step.name]
    shapes[step.name] = [d * k for d, k in zip(shape, step.reps)] + list(shape[len(step.reps):])


def _rename(step: Rename, shapes: dict[str, list[int]]) -> None:
    shapes[step.new] = shapes.pop(step.old)


def _take(step: Take, shapes: dict[str, list[int]]) -> None:
    shape = list(shapes[step.name])
    shape[step.dim] = sum(stop - start for start, stop in step.ranges)
    shapes[step.name] = shape


_ON_SHAPES = {Reshape: _reshape, Cat: _cat, Zeros: _zeros, Repeat: _repeat, Rename: _rename, Take: _take}


def step_shape(step: Step, shapes: dict[str, list[int]]) -> None:
    """Apply one step to a name -> shape dict, in place (dict order as sglang's dict ends up)."""
    _ON_SHAPES[type(step)](step, shapes)


def apply_shapes(plan: Sequence[Step], shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """Run a plan on shapes, in place; returns the dict."""
    for step in plan:
        _ON_SHAPES[type(step)](step, shapes)
    return shapes
