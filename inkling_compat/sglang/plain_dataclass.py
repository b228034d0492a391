"""`dataclass`, `field`, `replace`, `asdict` for the checker's records, without dataclasses.

A launch check builds about a dozen records (the release, the command found, the launch, the
inputs, ...). `dataclasses.dataclass` would cost it the import of dataclasses (with inspect, ast,
dis and tokenize: some 15 ms) and, per class, the source of six methods compiled (0.5 to 1 ms
each). Here a class gets the same behaviour from shared methods (repr, equality, hash, the
frozen refusal: each reads the class's field names). Its `__init__` binds the arguments by
the field names until the class has made `COMPILE_AFTER` instances; then the class's own
`__init__` (its signature, its defaults) is compiled, once, and used from there on: a check
that makes a few records of some twenty classes compiles none (compiling one costs 0.1 to
0.2 ms), a fleet's thousands of records get the compiled one. Arguments the binding refuses
are handed to the compiled `__init__`, whose TypeError is Python's own.

The records stay dataclasses to everyone who asks with the dataclasses module:
`__dataclass_fields__` is computed on first access (the asker has imported dataclasses, so it
costs nothing more), so `dataclasses.fields`, `is_dataclass`, `replace` and `asdict` give what
they give for the standard decorator (tests/test_plain_dataclass.py compares the two on the same
class bodies); this module's `replace`, `asdict` and `field_names` answer without importing it
(and ask it of a standard dataclass). The options the package's records use are implemented
(`frozen`, `eq`, `repr`; `field`'s `default`, `default_factory`, `repr`, `compare`; `__replace__`
for `copy.replace` where the standard decorator sets it, Python 3.13); any other option, a
`dataclasses.field`, or a base made by the standard decorator gets the standard decorator. A
record that offers `record.replace(**changes)` says `replace = replace` in its class body.

It is the one decorator of the dataclass-style records a check may build: the inputs', the
facts', the replays', the engine's (`Checked`, `Selection`, `Fix`, ...) and the report's
(`Problem`, `Format`).
"""

from __future__ import annotations

import _thread
import sys
from operator import attrgetter

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

_LOCK = _thread.allocate_lock()
_SPECS = "__plain_dataclass_fields__"
_FROZEN = "__plain_dataclass_frozen__"
_OWN = frozenset({"frozen", "eq", "repr", "init"})
_WITH_REPLACE = sys.version_info >= (3, 13)  # (where dataclasses sets `__replace__`)
# Instances a class makes through the shared binding before its own __init__ is compiled: about
# where the binding's extra cost per instance (~1 us) has added up to one compile.
COMPILE_AFTER = 100


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


class Field:
    """One field as declared: `field(...)`, a plain default, or none."""

    __slots__ = ("name", "annotation", "default", "default_factory", "repr", "compare")

    def __init__(self, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, repr: bool = True, compare: bool = True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name: str = ""
        self.annotation: Any = None
        self.default, self.default_factory, self.repr, self.compare = default, default_factory, repr, compare

    def standard(self) -> Any:
        """This field as `dataclasses.field` makes it (named, typed: what `fields()` returns)."""
        import dataclasses

        made = dataclasses.field(default=self.default if self.default is not MISSING else dataclasses.MISSING, default_factory=self.default_factory if self.default_factory is not MISSING else dataclasses.MISSING, repr=self.repr, compare=self.compare)
        made.name, made.type = self.name, self.annotation
        made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # (what `fields()` selects)
        return made


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True, compare: bool = True) -> Any:
    """As `dataclasses.field`, for the options the package uses."""
    return Field(default, default_factory, repr, compare)


def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """As `dataclasses.dataclass(**options)` (module docstring)."""

    def wrap(cls: type) -> type:
        if set(options) - _OWN or not options.get("init", True) or _has_standard_parts(cls):
            import dataclasses

            return dataclasses.dataclass(cls, **options)
        return _make(cls, frozen=bool(options.get("frozen", False)), eq=bool(options.get("eq", True)), with_repr=bool(options.get("repr", True)))

    return wrap if cls is None else wrap(cls)


def replace(obj: Any, /, **changes: Any) -> Any:
    """As `dataclasses.replace`: a new instance, `changes` over `obj`'s fields."""
    specs = getattr(type(obj), _SPECS, None)
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for spec in specs:
        if spec.name not in changes:
            changes[spec.name] = getattr(obj, spec.name)
    return type(obj)(**changes)


def field_names(obj: Any) -> tuple[str, ...] | None:
    """The field names of a plain record (an instance or its class), in order; None for
    anything else (a standard dataclass is asked of `dataclasses.fields`)."""
    specs = getattr(obj if isinstance(obj, type) else type(obj), _SPECS, None)
    return None if specs is None else tuple(spec.name for spec in specs)


def asdict(obj: Any) -> dict[str, Any]:
    """As `dataclasses.asdict`: the fields as a dict, records inside (plain or standard), lists,
    tuples and dicts made again all the way down, anything else deep-copied."""
    if isinstance(obj, type) or field_names(obj) is None:
        import dataclasses

        return dataclasses.asdict(obj)
    return _asdict(obj)  # type: ignore[no-any-return]


def _asdict(value: Any) -> Any:
    names = field_names(value) if not isinstance(value, type) else None
    if names is not None:
        return {name: _asdict(getattr(value, name)) for name in names}
    if hasattr(type(value), "__dataclass_fields__"):  # (a standard dataclass: what dataclasses asks)
        import dataclasses

        return {f.name: _asdict(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_asdict(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_asdict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_asdict(k), _asdict(v)) for k, v in value.items())
    if type(value) in _ATOMS:
        return value
    import copy

    return copy.deepcopy(value)


_ATOMS = frozenset({type(None), bool, int, float, str, complex, bytes})


def _has_standard_parts(cls: type) -> bool:
    """Whether a base was made by the standard decorator or a field is a `dataclasses.field`:
    neither can be unless the dataclasses module is imported (a check's start: it is not)."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is None:
        return False
    if any(_is_standard_dataclass(base) for base in cls.__mro__[1:]):
        return True
    standard_field = dataclasses.Field
    return any(type(value) is standard_field for value in vars(cls).values())


def _is_standard_dataclass(cls: type) -> bool:
    return "__dataclass_fields__" in cls.__dict__ and _SPECS not in cls.__dict__


def _is_classvar(annotation: Any) -> bool:
    # (what dataclasses tells from an annotation's text under `from __future__ import annotations`)
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    typing = sys.modules.get("typing")
    return typing is not None and (annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar)


def _make(cls: type, *, frozen: bool, eq: bool, with_repr: bool) -> type:
    # (run for each record class at import, some forty in a check: written for that)
    own = cls.__dict__
    specs: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get(_SPECS)
        if inherited:
            for spec in inherited:
                specs[spec.name] = spec
    new_field = object.__new__
    for name, annotation in own.get("__annotations__", {}).items():
        if annotation.startswith(("ClassVar", "typing.ClassVar")) if type(annotation) is str else _is_classvar(annotation):
            continue
        value = own.get(name, MISSING)
        if type(value) is Field:
            spec = value
            default = spec.default
            if default is MISSING:
                delattr(cls, name)  # (a default_factory: no class attribute, as dataclasses leaves it)
            else:
                _check_default(default, name)
                setattr(cls, name, default)
        else:  # (a plain default, or none: Field's own defaults, without its __init__)
            spec = new_field(Field)
            spec.default, spec.default_factory, spec.repr, spec.compare = value, MISSING, True, True
            if value is not MISSING:
                _check_default(value, name)
        spec.name, spec.annotation = name, annotation
        specs[name] = spec  # (a redeclared field keeps its base's place, as in dataclasses)
    ordered = tuple(specs.values())
    seen_default = False
    shown = compared = True
    for spec in ordered:
        if spec.default is not MISSING or spec.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        shown = shown and spec.repr
        compared = compared and spec.compare
    names = tuple(specs)
    setattr(cls, _SPECS, ordered)
    setattr(cls, _FROZEN, frozen)
    cls.__dataclass_fields__ = _STANDARD_FIELDS  # type: ignore[attr-defined]
    cls.__match_args__ = names  # type: ignore[attr-defined]
    if "__init__" not in own:
        cls.__init__ = _bound_init(cls)  # type: ignore[misc]
    if with_repr and "__repr__" not in own:
        cls.__repr__ = _repr_of(names if shown else tuple(spec.name for spec in ordered if spec.repr))  # type: ignore[method-assign]
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and ("__eq__" not in own or not explicit_hash):
        values = _values_of(names if compared else tuple(spec.name for spec in ordered if spec.compare))
        if "__eq__" not in own:
            cls.__eq__ = _eq_of(values)  # type: ignore[method-assign]
        if not explicit_hash:
            cls.__hash__ = _hash_of(values) if frozen else None  # type: ignore[method-assign,assignment]
    if _WITH_REPLACE and "__replace__" not in own:
        cls.__replace__ = replace  # type: ignore[attr-defined]  # (copy.replace, as the standard decorator sets it)
    if frozen:
        if "__setattr__" in own or "__delattr__" in own:
            name = "__setattr__" if "__setattr__" in own else "__delattr__"
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        field_set = frozenset(names)
        cls.__setattr__ = _frozen_setattr(cls, field_set)  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr(cls, field_set)  # type: ignore[method-assign]
    return cls


def _check_default(default: Any, name: str) -> None:
    if type(default).__hash__ is None:  # (dataclasses' guard)
        raise ValueError(f"mutable default {type(default)} for field {name} is not allowed: use default_factory")


class _StandardFields:
    """`__dataclass_fields__`: the fields as `dataclasses.Field`s, made when first asked for."""

    def __get__(self, obj: Any, owner: type) -> dict[str, Any]:
        made = owner.__dict__.get("_standard_fields")
        if made is None:
            made = {spec.name: spec.standard() for spec in owner.__dict__[_SPECS]} if _SPECS in owner.__dict__ else _inherited(owner)
            type.__setattr__(owner, "_standard_fields", made)
        return made


_STANDARD_FIELDS = _StandardFields()


def _inherited(owner: type) -> dict[str, Any]:
    for base in owner.__mro__:
        if _SPECS in base.__dict__:
            return base.__dataclass_fields__  # type: ignore[attr-defined, no-any-return]
    return {}


def _bound_init(owner: type) -> Callable[..., None]:
    """The `__init__` of a class (and of its subclasses that declare no fields) until it has
    made COMPILE_AFTER instances: the arguments bound to the field names as Python binds them
    to the compiled signature, the defaults and factories filled in. On the last of those
    instances the compiled `__init__` replaces it; arguments it cannot bind go to the compiled
    one, which raises Python's own TypeError."""
    binding: list[Any] = []  # (names, defaults, factories, setter, post_init), on the first call
    made = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        if not binding:
            specs = owner.__dict__[_SPECS]
            binding.append((
                tuple(spec.name for spec in specs),
                {spec.name: spec.default for spec in specs if spec.default is not MISSING},
                {spec.name: spec.default_factory for spec in specs if spec.default_factory is not MISSING},
                object.__setattr__ if owner.__dict__[_FROZEN] else setattr,
                hasattr(owner, "__post_init__"),  # (what dataclasses asks)
            ))
        names, defaults, factories, setter, post_init = binding[0]
        made += 1
        if made >= COMPILE_AFTER:
            return _compiled(owner, __init__)(self, *args, **kwargs)  # type: ignore[no-any-return]
        given = len(args)
        if given > len(names):
            return _compiled(owner, None)(self, *args, **kwargs)  # type: ignore[no-any-return]  # (too many)
        used = 0
        for index, name in enumerate(names):
            if index < given:
                value = args[index]
                if name in kwargs:
                    return _compiled(owner, None)(self, *args, **kwargs)  # type: ignore[no-any-return]  # (given twice)
            elif name in kwargs:
                value = kwargs[name]
                used += 1
            elif name in defaults:
                value = defaults[name]
            elif name in factories:
                value = factories[name]()
            else:
                return _compiled(owner, None)(self, *args, **kwargs)  # type: ignore[no-any-return]  # (missing)
            setter(self, name, value)
        if used != len(kwargs):
            return _compiled(owner, None)(self, *args, **kwargs)  # type: ignore[no-any-return]  # (a name that is no field)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{owner.__qualname__}.__init__"
    return __init__


def _compiled(owner: type, replacing: Any) -> Callable[..., None]:
    """The class's compiled `__init__`; set on the class in place of `replacing` (the shared
    binding, once it has made its instances; None: only to raise a refusal)."""
    if replacing is None:
        return _compiled_init(owner)
    with _LOCK:
        if owner.__dict__.get("__init__") is replacing:
            owner.__init__ = _compiled_init(owner)  # type: ignore[misc]
    return owner.__dict__["__init__"]  # type: ignore[no-any-return]


def _compiled_init(owner: type) -> Callable[..., None]:
    specs = owner.__dict__[_SPECS]
    frozen = owner.__dict__[_FROZEN]
    scope: dict[str, Any] = {"__set": object.__setattr__, "__FACTORY": MISSING}
    parameters, body = [], []
    for i, spec in enumerate(specs):
        name = spec.name
        if spec.default_factory is not MISSING:
            scope[f"__factory_{i}"] = spec.default_factory
            parameters.append(f"{name}=__FACTORY")
            value = f"__factory_{i}() if {name} is __FACTORY else {name}"
        else:
            if spec.default is not MISSING:
                scope[f"__default_{i}"] = spec.default
                parameters.append(f"{name}=__default_{i}")
            else:
                parameters.append(name)
            value = name
        body.append(f"  __set(self, {name!r}, {value})" if frozen else f"  self.{name} = {value}")
    if hasattr(owner, "__post_init__"):  # (what dataclasses asks)
        body.append("  self.__post_init__()")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + ("\n".join(body) or "  pass") + "\n"
    made: dict[str, Any] = {}
    exec(compile(source, f"<plain_dataclass {owner.__qualname__}>", "exec"), scope, made)  # noqa: S102 - the class's own field names
    init = made["__init__"]
    init.__qualname__ = f"{owner.__qualname__}.__init__"
    return init  # type: ignore[no-any-return]


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)  # type: ignore[return-value]
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}(" + ", ".join([f"{name}={getattr(self, name)!r}" for name in names]) + ")"

    return __repr__


def _eq_of(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_of(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError  # (a refusal: the one place that needs the module)

    return FrozenInstanceError(message)


def _frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__
