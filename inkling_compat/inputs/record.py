"""Plain frozen records, built without validation: the facts (the class bodies of facts/types.py
declared once, with the field metadata (description, sglang lines, `From`) that
publish/facts_schema.py turns into the JSON schema) and the input records of inputs/models.py
(whose fields live in the instance's dict: `_fields_in_dict`).

A check never imports pydantic for its facts: building a pydantic model class costs about a
millisecond at import and validating every fact costs microseconds per check; the values come
from the derive step (typed Python), not from a file. The small part of pydantic's model API
that callers use (`model_fields`, `model_dump`, `model_copy`, `model_validate`) is kept, by
name, with the same results on these values.
"""

from __future__ import annotations

import builtins
import keyword
import math
import sys

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<required>"})()


class FieldSpec:
    """One field: its meaning and default as declared (`fact(...)` or a plain default), and,
    once resolved (`model_fields`), its annotation and the `Annotated` metadata (`From`)."""

    __slots__ = ("description", "json_schema_extra", "default", "default_factory", "annotation", "metadata")

    def __init__(self, description: str | None = None, json_schema_extra: dict[str, Any] | None = None, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None):
        self.description, self.json_schema_extra = description, json_schema_extra
        self.default, self.default_factory = default, default_factory
        self.annotation: Any = None
        self.metadata: list[Any] = []

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def resolved(self, annotation: Any) -> "FieldSpec":
        import typing

        out = FieldSpec(self.description, self.json_schema_extra, self.default, self.default_factory)
        if typing.get_origin(annotation) is typing.Annotated:
            out.annotation, out.metadata = annotation.__origin__, list(annotation.__metadata__)
        else:
            out.annotation = annotation
        return out

    def __repr__(self) -> str:
        return f"FieldSpec(annotation={self.annotation!r}, description={self.description!r})"


_FIELD_OPTIONS = frozenset({"default", "default_factory"})


def field(description: str | None = None, sglang: str | None = None, **kwargs: Any) -> Any:
    """A field with its meaning and (where it models sglang code) the lines it models."""
    if kwargs and not kwargs.keys() <= _FIELD_OPTIONS:
        raise TypeError(f"unknown field options {sorted(set(kwargs) - _FIELD_OPTIONS)}")
    return FieldSpec(description, {"sglang": sglang} if sglang else None, **kwargs)


class _RecordType(type):
    """Collects the annotated names of a class body into `__fact_fields__` (parents' first, in
    declaration order, as pydantic orders them) and makes them the class's slots."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        inherited: dict[str, FieldSpec] = {}
        for base in reversed(bases):
            inherited.update(getattr(base, "__fact_fields__", {}))
        own: dict[str, FieldSpec] = {}
        for fname in namespace.get("__annotations__", {}):
            value = namespace.pop(fname, _MISSING)
            own[fname] = value if isinstance(value, FieldSpec) else FieldSpec(default=value)
        in_dict = namespace.get("_fields_in_dict")
        if in_dict is None:  # (a parent's, where the class does not say)
            in_dict = any(getattr(b, "_fields_in_dict", False) for b in bases)
        if in_dict:
            pass  # the fields live in the instance's __dict__ (a subclass declaring no slots has one)
        else:  # (slots a class declares itself are kept: state beside the fields)
            namespace["__slots__"] = tuple(namespace.get("__slots__", ())) + tuple(f for f in own if f not in inherited)
        namespace["__fact_fields__"] = {**inherited, **own}
        namespace.setdefault("__doc__", None)
        return super().__new__(mcls, name, bases, namespace, **kwargs)

    @property
    def model_fields(cls) -> dict[str, FieldSpec]:
        """Each field with its annotation resolved (`Annotated` metadata in `.metadata`), as
        pydantic's `model_fields` has it; resolved on first use (the check does not use it)."""
        resolved = cls.__dict__.get("_resolved_fields")
        if resolved is None:
            # Each class's own annotation texts evaluated in its module (what
            # typing.get_type_hints does, without its per-name ForwardRef machinery: the plan
            # reads these for every path the rules read); inherited fields from the parent's.
            namespace = vars(sys.modules[cls.__module__])
            resolved = {}
            for base in reversed(cls.__mro__[1:]):
                if isinstance(base, _RecordType) and base.__dict__.get("__annotations__"):
                    resolved.update(base.model_fields)
            for name, text in cls.__dict__.get("__annotations__", {}).items():
                annotation = _evaluated(text, cls.__module__, namespace) if isinstance(text, str) else text
                resolved[name] = cls.__fact_fields__[name].resolved(annotation)  # type: ignore[attr-defined]
            resolved = {name: resolved[name] for name in cls.__fact_fields__}  # type: ignore[attr-defined]
            type.__setattr__(cls, "_resolved_fields", resolved)
        return resolved


_EVALUATED: dict[tuple[str, str], Any] = {}  # (module, annotation text) -> its value


def _evaluated(text: str, module: str, namespace: dict[str, Any]) -> Any:
    """An annotation's text evaluated in its module, as `eval` evaluates it: a name read from the
    module or the builtins (no compile), any other text evaluated once per module (the classes
    of a module share their `str | None`; each `eval` compiles its text). A name the module
    does not define is typing's (`Annotated`, `Literal`, `Any`): the record modules import
    typing for the type checker only (docs/architecture.md), and a check resolves no
    annotation (inputs/field_types.py)."""
    key = (module, text)
    if key in _EVALUATED:
        return _EVALUATED[key]
    if text.isidentifier() and text in namespace:
        value = namespace[text]
    elif text.isidentifier() and hasattr(builtins, text) and not keyword.iskeyword(text):
        value = getattr(builtins, text)
    else:
        value = eval(text, namespace, typing_scope(namespace))  # noqa: S307 - the package's own class bodies
    _EVALUATED[key] = value
    return value


def typing_scope(namespace: dict[str, Any]) -> dict[str, Any]:
    """typing's public names that a module's `namespace` does not define: the locals its
    annotation texts are evaluated with (eval, typing.get_type_hints), as the record modules
    import typing for the type checker only."""
    import typing

    return {name: getattr(typing, name) for name in typing.__all__ if name not in namespace}


class Record(metaclass=_RecordType):
    """A frozen record: keyword construction (every field without a default given, no other
    name), equality and hash by value, pydantic's repr."""

    __slots__ = ()

    def __init__(self, **values: Any):
        setter = object.__setattr__
        for name, spec in self.__fact_fields__.items():
            if name in values:
                setter(self, name, values.pop(name))
            elif spec.default is not _MISSING:
                setter(self, name, spec.default)
            elif spec.default_factory is not None:
                setter(self, name, spec.default_factory())
            else:
                raise TypeError(f"{type(self).__name__}: missing field {name!r}")
        if values:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(values)}")

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError  # (a refusal: the one use of the module here)

        raise FrozenInstanceError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__fact_fields__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__fact_fields__) + ")"

    def __iter__(self) -> Any:
        """(name, value) pairs, as iterating a pydantic model gives them."""
        return ((name, getattr(self, name)) for name in self.__fact_fields__)

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), dict(self)))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        """A copy with `update`'s fields replaced (not validated, as pydantic's)."""
        new = object.__new__(type(self))
        for name in self.__fact_fields__:
            object.__setattr__(new, name, getattr(self, name))
        for name, value in (update or {}).items():
            if name not in self.__fact_fields__:
                raise TypeError(f"{type(self).__name__}: unknown field {name!r}")
            object.__setattr__(new, name, value)
        return new

    def model_dump(self, *, mode: str = "python", include: Any = None, exclude: Any = None, exclude_none: bool = False) -> dict[str, Any]:
        """The fields as a dict, nested records dumped; mode="json" as pydantic's JSON mode
        writes these values (tuples as lists, a NaN or infinity as None)."""
        json = mode == "json"
        out = {}
        for name in self.__fact_fields__:
            if (include is not None and name not in include) or (exclude is not None and name in exclude):
                continue
            value = getattr(self, name)
            if exclude_none and value is None:
                continue
            out[name] = dump(value, json)
        return out

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """`data` (a record of this class, or a dict of its fields, nested records as dicts)
        built into one: nested dicts become the records their fields' annotations name."""
        if isinstance(data, cls):
            return data
        fields = cls.model_fields  # type: ignore[attr-defined]
        return cls(**{name: _build(fields[name].annotation, value) if name in fields else value for name, value in data.items()})


def _rebuild(cls: type, values: dict[str, Any]) -> Any:
    return cls(**values)


def dump(value: Any, json: bool = True) -> Any:
    """`value` as model_dump writes a field's value."""
    if value is None or type(value) in (str, int, bool):
        return value
    if type(value) is float:
        return None if json and not math.isfinite(value) else value
    if isinstance(value, Record):
        return value.model_dump(mode="json" if json else "python")
    if isinstance(value, (list, tuple)):
        items = [dump(v, json) for v in value]
        return items if json or isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        if json and not all(type(k) is str for k in value):  # (keys as JSON writes them: rare, hostile input)
            from pydantic_core import to_jsonable_python

            return to_jsonable_python(value, inf_nan_mode="null")
        return {k: dump(v, json) for k, v in value.items()}
    if type(value).__name__ == "TensorTable":  # (inputs/models.py: a table of tensor specs)
        return value.model_dump(mode="json" if json else "python")
    return value


def _build(annotation: Any, value: Any) -> Any:
    import typing

    if isinstance(value, dict):
        for option in _options(annotation):
            if isinstance(option, type) and issubclass(option, Record):
                return option.model_validate(value)
    if isinstance(value, list):
        for option in _options(annotation):
            if typing.get_origin(option) is list:
                (item,) = typing.get_args(option)
                return [_build(item, v) for v in value]
    return value


def _options(annotation: Any) -> tuple[Any, ...]:
    import types
    import typing

    if typing.get_origin(annotation) is typing.Annotated:
        annotation = annotation.__origin__
    args = typing.get_args(annotation)
    return args if args and typing.get_origin(annotation) in (typing.Union, types.UnionType) else (annotation,)


def mismatches(record: Record, path: str = "") -> list[str]:
    """Where `record`'s values (nested records included) are not of their fields' annotated
    types: what validation would have refused or converted. Empty for facts built right
    (tests/test_facts_record.py runs it over every rule example's facts)."""
    out: list[str] = []
    for name, spec in type(record).model_fields.items():  # type: ignore[attr-defined]
        _conform(getattr(record, name), spec.annotation, f"{path or type(record).__name__}.{name}", out)
    return out


def _conform(value: Any, annotation: Any, path: str, out: list[str]) -> None:
    import types
    import typing

    if typing.get_origin(annotation) is typing.Annotated:
        annotation = annotation.__origin__
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, Record) and type(value) in typing.get_args(annotation):
            return _conform(value, type(value), path, out)
        for option in typing.get_args(annotation):
            trial: list[str] = []
            _conform(value, option, path, trial)
            if not trial:
                return
        out.append(f"{path}: {type(value).__name__} {value!r:.60} is none of {annotation}")
    elif origin is typing.Literal:
        if value not in typing.get_args(annotation) or type(value) not in {type(a) for a in typing.get_args(annotation)}:
            out.append(f"{path}: {value!r:.60} is not {annotation}")
    elif origin is list:
        if type(value) is not list:
            out.append(f"{path}: {type(value).__name__}, not a list")
            return
        (item,) = typing.get_args(annotation)
        for i, v in enumerate(value):
            _conform(v, item, f"{path}[{i}]", out)
    elif origin is dict:
        if type(value) is not dict:
            out.append(f"{path}: {type(value).__name__}, not a dict")
    elif annotation is typing.Any:
        return
    elif annotation is type(None):
        if value is not None:
            out.append(f"{path}: {value!r:.60} is not None")
    elif isinstance(annotation, type) and issubclass(annotation, Record):
        if type(value) is not annotation:
            out.append(f"{path}: {type(value).__name__}, not {annotation.__name__}")
        else:
            out.extend(mismatches(value, path))
    elif annotation in (str, int, bool, float):
        if type(value) is not annotation:
            out.append(f"{path}: {type(value).__name__} {value!r:.60}, not {annotation.__name__}")
    else:
        out.append(f"{path}: annotation {annotation} not checked")
