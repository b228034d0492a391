"""The steps of sglang/plan.py (and adapter_loader's LayerPlan) behave as the `typing.NamedTuple`s of the same fields would:
construction (defaults, keywords), field access, equality and hash with tuples, unpacking,
repr, pickling and copying."""

from __future__ import annotations

import copy
import pickle
from typing import NamedTuple

import pytest

from inkling_compat.sglang import adapter_loader, plan


class Reshape(NamedTuple):
    name: str
    shape: tuple
    transpose01: bool = False


class Cat(NamedTuple):
    out: str
    inputs: tuple
    dim: int


class Zeros(NamedTuple):
    name: str
    like: str


class Repeat(NamedTuple):
    name: str
    reps: tuple


class Rename(NamedTuple):
    old: str
    new: str


class Take(NamedTuple):
    name: str
    dim: int
    ranges: tuple


class LayerPlan(NamedTuple):
    steps: tuple
    shapes: dict
    failure: object


PAIRS = [
    (plan.Reshape, Reshape, ("w", (2, 3)), {}),
    (plan.Reshape, Reshape, ("w", (2, 3), True), {}),
    (plan.Reshape, Reshape, (), {"name": "w", "shape": (1,), "transpose01": True}),
    (plan.Cat, Cat, ("o", ("a", "b"), 0), {}),
    (plan.Cat, Cat, ("o",), {"dim": 1, "inputs": ("a",)}),
    (plan.Zeros, Zeros, ("z", "w"), {}),
    (plan.Repeat, Repeat, ("w", (1, 2)), {}),
    (plan.Rename, Rename, ("a", "b"), {}),
    (plan.Take, Take, ("w", 2, ((0, 4), (8, 12))), {}),
    (adapter_loader.LayerPlan, LayerPlan, ((plan.Rename("a", "b"),), {"b": [1, 2]}, None), {}),
]


@pytest.mark.parametrize(("ours", "named", "args", "kwargs"), PAIRS)
def test_a_step_is_the_named_tuple_of_its_fields(ours, named, args, kwargs):
    step, reference = ours(*args, **kwargs), named(*args, **kwargs)
    assert type(step).__name__ == named.__name__ and ours._fields == named._fields and ours.__match_args__ == named.__match_args__
    assert repr(step) == repr(reference)
    assert step == reference and tuple(step) == tuple(reference)
    if named is not LayerPlan:  # (a dict inside: unhashable, as the NamedTuple)
        assert hash(step) == hash(reference)
    assert [getattr(step, f) for f in named._fields] == [getattr(reference, f) for f in named._fields]
    assert list(step) == list(reference) and step[0] == reference[0] and len(step) == len(reference)
    for again in (pickle.loads(pickle.dumps(step)), copy.copy(step), copy.deepcopy(step)):
        assert type(again) is ours and again == step and repr(again) == repr(step)
    with pytest.raises(AttributeError):
        step.extra = 1  # (no instance dict, as a NamedTuple)
    with pytest.raises(AttributeError):
        setattr(step, named._fields[0], "other")


@pytest.mark.parametrize(("ours", "named"), [(plan.Cat, Cat), (plan.Zeros, Zeros), (plan.Reshape, Reshape)])
def test_refused_construction_is_refused_alike(ours, named):
    for args, kwargs in (((), {}), (("a", "b", "c", "d"), {}), (("a",), {"nope": 1})):
        with pytest.raises(TypeError):
            named(*args, **kwargs)
        with pytest.raises(TypeError):
            ours(*args, **kwargs)
