"""`dataclass`, with the class's methods generated when it is first used, not at import.

`dataclasses.dataclass` writes and compiles the source of `__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__` and `__delattr__` for every class it decorates, about half a
millisecond each: the checker's modules declare some fifty records, most of which a check never
builds (failure records, other input forms). This decorator takes the same arguments and makes
the same class: `dataclasses.dataclass(**options)` is applied to it, in place, when its first
instance is initialised (a call; an unpickled instance's state set) or when it is first
subclassed; from then on the class is exactly the dataclass (the stubs that waited for it are
gone). `copy` needs an instance, hence a dataclass already. Until then, `dataclasses.fields()` and
`is_dataclass()` of the class itself do not know it (nothing in the package asks them of a class
before making one of its instances). `slots=True` makes a new class, so it is applied at once.
"""

from __future__ import annotations

import _thread
import dataclasses
from typing import TYPE_CHECKING, Any

_LOCK = _thread.allocate_lock()
_PENDING = "__lazy_dataclass_options__"

if TYPE_CHECKING:
    from dataclasses import dataclass
else:

    def dataclass(cls: Any = None, /, **options: Any) -> Any:
        """As `dataclasses.dataclass`; the class is processed on first use (module docstring)."""

        def wrap(cls: type) -> type:
            if options.get("slots") or any(name in cls.__dict__ for name in _STUBS):
                return dataclasses.dataclass(cls, **options)
            setattr(cls, _PENDING, options)
            cls.__init__ = _first_init  # type: ignore[misc]
            cls.__setstate__ = _first_setstate  # type: ignore[attr-defined]
            cls.__init_subclass__ = classmethod(_first_subclass)  # type: ignore[assignment]
            return cls

        return wrap if cls is None else wrap(cls)


_STUBS = ("__init__", "__setstate__", "__init_subclass__")


def materialize(cls: type) -> None:
    """Apply the pending `dataclasses.dataclass` to `cls` and its bases (a no-op once done)."""
    for klass in reversed(cls.__mro__):
        if _PENDING in klass.__dict__:
            with _LOCK:
                options = klass.__dict__.get(_PENDING)
                if options is None:
                    continue  # (another thread finished it)
                for name in _STUBS:
                    delattr(klass, name)
                dataclasses.dataclass(klass, **options)
                delattr(klass, _PENDING)


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    materialize(type(self))
    type(self).__init__(self, *args, **kwargs)


def _first_setstate(self: Any, state: Any) -> None:
    materialize(type(self))
    setter = getattr(self, "__setstate__", None)
    if setter is not None:
        setter(state)
    else:  # what pickle does for a class without __setstate__
        self.__dict__.update(state)


def _first_subclass(cls: type, **kwargs: Any) -> None:
    # `cls` is the new subclass; its pending bases are made dataclasses first (a dataclass
    # subclass reads their fields), then the next __init_subclass__ runs (this stub is gone).
    materialize(cls)
    super(cls, cls).__init_subclass__(**kwargs)  # type: ignore[misc]
