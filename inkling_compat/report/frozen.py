"""Frozen records for what a check returns and the engine's small results (`Problem`,
`Checked`, `Selection`, ...): equal, hashed and shown by value, immutable, copied with changes
by `replace(**changes)` (also `copy.replace` from Python 3.13), pickled by their values.

They behave as `dataclasses.dataclass(frozen=True)` classes of the same fields, without importing
`dataclasses`: it imports `inspect` (and with it `ast`, `dis`, `tokenize`), and writes and
compiles each class's methods, about 10 ms of every start for a handful of records
(docs/performance.md, issue 31). A subclass lists its fields as its `__slots__`, in order, and
sets them in its own `__init__` with `object.__setattr__` (`set_fields`).
"""

from __future__ import annotations

from typing import Any


class FrozenRecord:
    """The fields are the class's `__slots__` (a subclass of a subclass: the parent's first)."""

    __slots__ = ()

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        names = cls.__dict__.get("_field_names")
        if names is None:
            names = tuple(n for klass in reversed(cls.__mro__) for n in klass.__dict__.get("__slots__", ()))
            type.__setattr__(cls, "_field_names", names)
        return names

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields()])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields()) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())

    def replace(self, **changes: Any) -> Any:
        """A copy with `changes` (field names) replaced, as `dataclasses.replace` makes it."""
        values = dict(zip(self._fields(), self._values()))
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return type(self)(**values)

    __replace__ = replace  # copy.replace (Python 3.13)


def set_fields(record: Any, **values: Any) -> None:
    """Set a frozen record's fields from its `__init__`."""
    for name, value in values.items():
        object.__setattr__(record, name, value)
