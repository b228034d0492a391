"""inkling_compat.sglang.lazy_dataclass makes the class `dataclasses.dataclass` makes, once first used:
the same methods and behaviour (construction, defaults, equality, hash, repr, order, frozen,
replace, asdict, pickle, copy, subclasses), compared with the standard decorator on the same
class bodies."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
import threading
from dataclasses import FrozenInstanceError, field

import pytest

from inkling_compat.sglang import lazy_dataclass
from inkling_compat.sglang.lazy_dataclass import dataclass


def _pair(options: dict, body: dict) -> tuple[type, type]:
    """The same class body decorated by the standard decorator and by the lazy one."""
    made = []
    for decorate in (dataclasses.dataclass, dataclass):
        namespace = {"__annotations__": dict(body["__annotations__"]), **{k: v for k, v in body.items() if k != "__annotations__"}}
        made.append(decorate(**options)(type("Record", (), namespace)))
    return made[0], made[1]


SHAPES = [
    ({"frozen": True}, {"__annotations__": {"a": "int", "b": "str"}, "b": "x"}),
    ({"frozen": True}, {"__annotations__": {"a": "int", "c": "list"}, "c": field(default_factory=list)}),
    ({}, {"__annotations__": {"a": "int"}}),
    ({"frozen": True, "order": True}, {"__annotations__": {"a": "int", "b": "int"}, "b": 0}),
    ({"eq": False}, {"__annotations__": {"a": "int"}}),
    ({"frozen": True}, {"__annotations__": {"a": "tuple", "b": "int | None"}, "b": None}),
]


@pytest.mark.parametrize(("options", "body"), SHAPES)
def test_the_same_class_as_the_standard_decorator(options, body):
    standard, lazy = _pair(options, body)
    assert not dataclasses.is_dataclass(lazy)  # nothing generated yet
    values = [((1,) if "a" in body["__annotations__"] and body["__annotations__"]["a"] == "tuple" else 1)]
    s, z = standard(*values), lazy(*values)
    assert dataclasses.is_dataclass(lazy)
    assert [f.name for f in dataclasses.fields(z)] == [f.name for f in dataclasses.fields(s)]
    assert [(f.default, f.default_factory) for f in dataclasses.fields(z)] == [(f.default, f.default_factory) for f in dataclasses.fields(s)]
    assert repr(z) == repr(s) and dataclasses.asdict(z) == dataclasses.asdict(s)
    assert (z == lazy(*values)) == (s == standard(*values))
    assert lazy.__dataclass_params__.__repr__() == standard.__dataclass_params__.__repr__()
    assert lazy.__match_args__ == standard.__match_args__
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__"):
        assert (name in vars(lazy)) == (name in vars(standard)), name
    assert not any(name in vars(lazy) for name in ("__setstate__", "__init_subclass__", "__lazy_dataclass_options__"))
    if options.get("frozen"):
        with pytest.raises(FrozenInstanceError):
            z.a = 2

    def hashed(obj):
        try:
            return hash(obj) == hash(copy.copy(obj))
        except TypeError as exc:  # (a list field)
            return str(exc)

    assert hashed(z) == hashed(s)
    if options.get("order"):
        assert lazy(0) < lazy(1)
    assert (dataclasses.replace(z, a=values[0]) == z) == (dataclasses.replace(s, a=values[0]) == s)


def test_a_missing_argument_is_refused_as_the_standard_one_refuses_it():
    standard, lazy = _pair({"frozen": True}, {"__annotations__": {"a": "int"}})
    with pytest.raises(TypeError) as s:
        standard()
    with pytest.raises(TypeError) as z:
        lazy()
    assert str(z.value) == str(s.value)


def test_subclasses_read_the_fields_of_a_base_not_yet_used():
    @dataclass(frozen=True)
    class Base:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Standard(Base):
        b: int = 0

    @dataclass(frozen=True)
    class Lazy(Base):
        c: int = 1

    class Plain(Base):
        pass

    assert Standard(1, 2) == Standard(1, 2) and Standard(1).a == 1
    assert repr(Lazy(3)) == "test_subclasses_read_the_fields_of_a_base_not_yet_used.<locals>.Lazy(a=3, c=1)"
    assert Plain(4).a == 4


def test_copy_and_pickle(tmp_path):
    @dataclass(frozen=True)
    class Local:
        a: int

    assert copy.copy(Local(1)) == Local(1) and copy.deepcopy(Local(2)) == Local(2)
    # An instance unpickled where its class was never used: the class is made then.
    module = tmp_path / "lazy_pickled.py"
    module.write_text("from inkling_compat.sglang.lazy_dataclass import dataclass\n\n@dataclass(frozen=True)\nclass P:\n    a: int\n    b: str = 'x'\n")
    dump = "import pickle, sys; import lazy_pickled; sys.stdout.buffer.write(pickle.dumps(lazy_pickled.P(1)))"
    data = subprocess.run([sys.executable, "-c", dump], capture_output=True, check=True, cwd=tmp_path).stdout
    load = (
        "import dataclasses, pickle, sys; import lazy_pickled\n"
        "assert not dataclasses.is_dataclass(lazy_pickled.P)\n"
        "p = pickle.loads(sys.stdin.buffer.read())\n"
        "assert p == lazy_pickled.P(1) and repr(p) == \"P(a=1, b='x')\", p\n"
        "try:\n    p.a = 2\nexcept dataclasses.FrozenInstanceError:\n    print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", load], input=data, capture_output=True, cwd=tmp_path)
    assert result.stdout.strip() == b"ok", result.stderr


def test_slots_and_own_init_are_made_at_once():
    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    assert Slotted.__slots__ == ("a",) and dataclasses.is_dataclass(Slotted)

    @dataclass
    class OwnInit:
        a: int

        def __init__(self, value: int) -> None:
            self.a = value * 2

    assert dataclasses.is_dataclass(OwnInit) and OwnInit(2).a == 4


def test_threads_make_the_class_once():
    @dataclass(frozen=True)
    class Shared:
        a: int

    made = []
    calls = []
    real = dataclasses.dataclass

    def counting(cls=None, /, **options):
        calls.append(cls)
        return real(cls, **options)

    lazy_dataclass.dataclasses.dataclass = counting
    try:
        threads = [threading.Thread(target=lambda: made.append(Shared(1))) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        lazy_dataclass.dataclasses.dataclass = real
    assert len(calls) == 1 and len(made) == 8 and all(m == Shared(1) for m in made)
