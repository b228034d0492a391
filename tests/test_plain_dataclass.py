"""inkling_compat.sglang.plain_dataclass makes records that behave as `dataclasses.dataclass`
makes them (construction and its refusals, defaults, repr, equality, hash, frozen, replace,
asdict, fields, pickle, copy, subclasses), compared with the standard decorator on the same class
bodies; and a check imports no dataclasses through it."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
import threading
from typing import ClassVar

import pytest

from inkling_compat.sglang import plain_dataclass
from inkling_compat.sglang.plain_dataclass import dataclass, field, replace


def _pair(options: dict, annotations: dict, defaults: dict, extra: dict | None = None) -> tuple[type, type]:
    """The same class body decorated by the standard decorator and by the plain one; `defaults`
    holds (kind, value) pairs: "=" a plain default, "factory", "norepr", "nocompare"."""
    made = []
    for decorate, make_field in ((dataclasses.dataclass, dataclasses.field), (dataclass, field)):
        namespace: dict = {"__annotations__": dict(annotations), "__module__": __name__, **(extra or {})}
        for name, (kind, value) in defaults.items():
            namespace[name] = {
                "=": lambda v: v,
                "factory": lambda v: make_field(default_factory=v),
                "norepr": lambda v: make_field(default=v, repr=False),
                "nocompare": lambda v: make_field(default=v, compare=False),
            }[kind](value)
        made.append(decorate(**options)(type("Record", (), namespace)))
    return made[0], made[1]


SHAPES = [
    ({"frozen": True}, {"a": "int", "b": "str"}, {"b": ("=", "x")}),
    ({"frozen": True}, {"a": "int", "c": "list"}, {"c": ("factory", list)}),
    ({}, {"a": "int"}, {}),
    ({"eq": False}, {"a": "int"}, {}),
    ({"frozen": True}, {"a": "tuple", "b": "int | None"}, {"b": ("=", None)}),
    ({"frozen": True}, {"a": "int", "n": "ClassVar[int]", "b": "int"}, {"n": ("=", 7), "b": ("norepr", 2)}),
    ({"frozen": True}, {"a": "int", "b": "int"}, {"b": ("nocompare", 2)}),
    ({"frozen": True}, {}, {}),
    ({"frozen": True, "repr": False}, {"a": "int"}, {}),
]


def _compiled(cls: type) -> bool:
    """Whether the class's __init__ is its own compiled one (not the shared binding)."""
    return vars(cls)["__init__"].__code__.co_filename.startswith("<plain_dataclass")


def _make_compile(cls: type, *args: object) -> None:
    """Instances made until the class's __init__ is compiled."""
    for _ in range(plain_dataclass.COMPILE_AFTER):
        cls(*args)
    assert _compiled(cls)


def shown(obj: object, cls: type) -> str:
    """The repr, its class's name (and an address, for repr=False) left out."""
    return repr(obj).replace(cls.__qualname__, "R").split(" object at 0x")[0]


def _values(annotations: dict) -> list:
    return [(1,) if annotations.get("a") == "tuple" else 1] if "a" in annotations else []


@pytest.mark.parametrize(("options", "annotations", "defaults"), SHAPES)
def test_the_same_records_as_the_standard_decorator(options, annotations, defaults):
    standard, plain = _pair(options, annotations, defaults)
    assert not _compiled(plain)  # (none compiled until the class has made COMPILE_AFTER instances)
    values = _values(annotations)
    s, z = standard(*values), plain(*values)
    assert dataclasses.is_dataclass(plain) and dataclasses.is_dataclass(z)
    assert [f.name for f in dataclasses.fields(z)] == [f.name for f in dataclasses.fields(s)]
    assert [(f.default, f.default_factory, f.repr, f.compare, f.type) for f in dataclasses.fields(z)] == [(f.default, f.default_factory, f.repr, f.compare, f.type) for f in dataclasses.fields(s)]
    assert shown(z, plain) == shown(s, standard)
    assert dataclasses.asdict(z) == dataclasses.asdict(s)
    assert (z == plain(*values)) == (s == standard(*values)) and (z != plain(*values)) == (s != standard(*values))
    assert (z == s) is False  # different classes
    assert plain.__match_args__ == standard.__match_args__
    for name in ("n", "b", "c"):
        assert (name in vars(plain), vars(plain).get(name)) == (name in vars(standard), vars(standard).get(name)), name
    if options.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError) as refused:
            z.a = 2
        with pytest.raises(dataclasses.FrozenInstanceError) as refused_standard:
            s.a = 2
        assert str(refused.value) == str(refused_standard.value)
        with pytest.raises(dataclasses.FrozenInstanceError):
            del z.a
    else:
        z.a = s.a = 5
        assert shown(z, plain) == shown(s, standard)

    def hashed(obj, other):
        try:
            return hash(obj) == hash(other)
        except TypeError as exc:  # (a list field; or not hashable at all)
            return str(exc).replace(plain.__qualname__, "R").replace(standard.__qualname__, "R")

    assert hashed(z, copy.copy(z)) == hashed(s, copy.copy(s))
    if options.get("frozen") and options.get("eq", True) and hashed(s, s) is True:
        assert hash(z) == hash(s)  # the same tuple hashed
    assert (dataclasses.replace(z) == replace(z)) == (dataclasses.replace(s) == dataclasses.replace(s))
    assert (replace(z) == z) == (dataclasses.replace(s) == s) and replace(z).__dict__ == z.__dict__
    if values:
        assert replace(z, a=values[0]).a == values[0]
        assert (replace(z, a=values[0]) == z) == (dataclasses.replace(s, a=values[0]) == s)
    assert copy.deepcopy(z).__dict__ == z.__dict__ and copy.copy(z).__dict__ == z.__dict__


REFUSED = (((), {}), ((1, "y", 3), {}), ((1,), {"c": 2}), ((1,), {"a": 2}), ((), {"b": "y"}), ((), {"a": 1, "self": 2}), ((1, "y"), {"b": "z"}))
ACCEPTED = (((1,), {}), ((1, "y"), {}), ((), {"a": 1}), ((), {"b": "z", "a": 1}), ((1,), {"b": "z"}))


@pytest.mark.parametrize("compiled", [False, True], ids=["bound", "compiled"])
def test_construction_and_its_refusals_are_the_standard_ones(compiled):
    standard, plain = _pair({"frozen": True}, {"a": "int", "b": "str"}, {"b": ("=", "x")})
    if compiled:
        _make_compile(plain, 0)
    for args, kwargs in REFUSED:
        with pytest.raises(TypeError) as s:
            standard(*args, **kwargs)
        with pytest.raises(TypeError) as z:
            plain(*args, **kwargs)
        assert str(z.value) == str(s.value)
    for args, kwargs in ACCEPTED:
        assert plain(*args, **kwargs).__dict__ == standard(*args, **kwargs).__dict__
    assert _compiled(plain) == compiled  # (a refusal compiles nothing for the class)
    assert plain(b="z", a=1).__dict__ == standard(b="z", a=1).__dict__ == {"a": 1, "b": "z"}
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        _pair({}, {"a": "int", "b": "int"}, {"a": ("=", 0)})
    for decorate in (dataclasses.dataclass, dataclass):
        with pytest.raises(ValueError, match="mutable default <class 'list'> for field a is not allowed: use default_factory"):
            decorate(type("Record", (), {"__annotations__": {"a": "list"}, "a": []}))
    with pytest.raises(TypeError):
        plain_dataclass.asdict(plain)  # (a class: as dataclasses.asdict refuses it)


def test_each_instance_gets_its_own_default_factory_value():
    @dataclass(frozen=True)
    class Bag:
        items: list = field(default_factory=list)

    one, two = Bag(), Bag()
    assert one.items == [] and one.items is not two.items and Bag([1]).items == [1]


def test_subclasses_own_methods_and_classvars_as_the_standard_decorator():
    for decorate in (dataclasses.dataclass, dataclass):

        @decorate(frozen=True)
        class Base:
            a: int
            b: int = 0
            kind: ClassVar[str] = "base"

        @decorate(frozen=True)
        class Child(Base):
            c: int = 1
            b: int = 5  # redeclared: keeps its place

        class Undecorated(Child):
            pass

        @decorate
        class OwnInit:
            a: int

            def __init__(self, value: int) -> None:
                self.a = value * 2

        @decorate(frozen=True)
        class OwnEq:
            a: int

            def __eq__(self, other: object) -> bool:
                return True

        @decorate(frozen=True)
        class OwnHash:
            a: int

            def __hash__(self) -> int:
                return 7

        got = (
            [f.name for f in dataclasses.fields(Child)],
            Child(1).__dict__,
            repr(Child(1, 2, 3)).split(".")[-1],
            repr(Undecorated(4)).split(".")[-1],
            Undecorated(4) == Child(4),
            Base.kind,
            OwnInit(2).a,
            OwnEq(1) == OwnEq(2),
            OwnEq.__hash__ is None, hash(OwnEq(1)) == hash((1,)),
            hash(OwnHash(1)),
        )
        if decorate is dataclasses.dataclass:
            expected = got
    assert got == expected


def test_a_standard_base_or_field_gets_the_standard_decorator():
    @dataclasses.dataclass(frozen=True)
    class Standard:
        a: int

    @dataclass(frozen=True)
    class On(Standard):
        b: int = 0

    @dataclass(frozen=True)
    class WithStandardField:
        a: list = dataclasses.field(default_factory=list)

    assert plain_dataclass._SPECS not in vars(On) and On(1).b == 0 and dataclasses.fields(On)[1].name == "b"
    assert plain_dataclass._SPECS not in vars(WithStandardField) and WithStandardField().a == []


def test_threads_compile_the_init_once():
    @dataclass(frozen=True)
    class Shared:
        a: int

    made: list = []
    inits: set = set()

    def make() -> None:
        for _ in range(plain_dataclass.COMPILE_AFTER):
            made.append(Shared(1))
            inits.add(vars(Shared)["__init__"])

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8 * plain_dataclass.COMPILE_AFTER and all(m == Shared(1) for m in made)
    assert _compiled(Shared) and len(inits) <= 2  # (the binding, then one compiled __init__)


def test_the_compiled_init_takes_over_with_the_same_results():
    """Defaults, factories (a new value each time), __post_init__ and a subclass without fields
    alike through the shared binding, on the instance that compiles, and after."""
    seen: list = []

    @dataclass(frozen=True)
    class Base:
        a: int
        b: str = "x"
        c: list = field(default_factory=list)

        def __post_init__(self) -> None:
            seen.append(self.a)

    class Sub(Base):
        pass

    results = []
    for i in range(plain_dataclass.COMPILE_AFTER + 2):
        cls = Sub if i % 2 else Base
        one = cls(i) if i % 3 else cls(a=i, b="y")
        results.append((type(one), one.a, one.b, one.c))
        assert one.c is not cls(i).c
    assert _compiled(Base) and "__init__" not in vars(Sub)
    assert results == [(Sub if i % 2 else Base, i, "x" if i % 3 else "y", []) for i in range(plain_dataclass.COMPILE_AFTER + 2)]
    assert seen[::2] == list(range(plain_dataclass.COMPILE_AFTER + 2))


def test_pickled_where_the_class_was_never_used(tmp_path):
    module = tmp_path / "plain_pickled.py"
    module.write_text("from inkling_compat.sglang.plain_dataclass import dataclass\n\n@dataclass(frozen=True)\nclass P:\n    a: int\n    b: str = 'x'\n")
    dump = "import pickle, sys; import plain_pickled; sys.stdout.buffer.write(pickle.dumps(plain_pickled.P(1)))"
    data = subprocess.run([sys.executable, "-c", dump], capture_output=True, check=True, cwd=tmp_path).stdout
    load = (
        "import pickle, sys; import plain_pickled\n"
        "p = pickle.loads(sys.stdin.buffer.read())\n"
        "assert p == plain_pickled.P(1) and repr(p) == \"P(a=1, b='x')\", p\n"
        "assert 'dataclasses' not in sys.modules\n"
        "import dataclasses\n"
        "try:\n    p.a = 2\nexcept dataclasses.FrozenInstanceError:\n    print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", load], input=data, capture_output=True, cwd=tmp_path)
    assert result.stdout.strip() == b"ok", result.stderr


def test_records_are_made_used_and_compared_without_the_dataclasses_module():
    probe = (
        "import sys\n"
        "from inkling_compat.sglang.plain_dataclass import dataclass, field, replace\n"
        "@dataclass(frozen=True)\n"
        "class R:\n    a: int\n    b: list = field(default_factory=list)\n"
        "r = replace(R(1), a=2)\n"
        "assert r == R(2) and hash(R(1, ())) == hash(R(1, ())) and repr(r) == 'R(a=2, b=[])'\n"
        "print(sorted(m for m in ('dataclasses', 'inspect', 'ast', 'dis') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_asdict_and_field_names_as_the_standard_functions():
    from collections import namedtuple

    from inkling_compat.sglang.plain_dataclass import asdict, field_names

    Pair = namedtuple("Pair", "x y")

    @dataclasses.dataclass(frozen=True)
    class Standard:
        a: int
        inner: object = None

    @dataclass(frozen=True)
    class Inner:
        b: str
        items: list = field(default_factory=list)

    @dataclass(frozen=True)
    class Outer:
        inner: Inner
        standard: Standard
        mapping: dict
        pair: Pair
        kind: type = int
        values: tuple = ()

    record = Outer(Inner("x", [Inner("y"), {"k": Inner("z")}]), Standard(1, Inner("w")), {"m": [Standard(2)], 3: (Inner("v"),)}, Pair(Inner("p"), 1.5), values=(1, "s", None, b"b"))
    assert asdict(record) == dataclasses.asdict(record)
    assert asdict(Standard(1, Inner("w"))) == dataclasses.asdict(Standard(1, Inner("w")))
    copied = asdict(record)["inner"]["items"]
    assert copied is not record.inner.items and copied[1]["k"] == {"b": "z", "items": []}
    assert field_names(record) == field_names(Outer) == tuple(f.name for f in dataclasses.fields(Outer))
    assert field_names(Standard(1)) is None and field_names(3) is None


def test_copy_replace_and_a_replace_method_as_the_standard_decorator():
    for decorate in (dataclasses.dataclass, dataclass):

        @decorate(frozen=True)
        class Record:
            a: int
            b: str = "x"

            replace = replace  # (a method: `record.replace(**changes)`; not a field)

        record = Record(1)
        got = (
            [f.name for f in dataclasses.fields(Record)],
            record.replace(b="y").__dict__,
            record.replace() == record,
            "__replace__" in vars(Record),
        )
        if decorate is dataclasses.dataclass:
            expected = got
        with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
            record.replace(c=2)
    assert got == expected
    if sys.version_info >= (3, 13):  # (copy.replace asks `__replace__`, which the decorators set there)
        assert copy.replace(record, a=2) == Record(2, "x")  # type: ignore[attr-defined]
