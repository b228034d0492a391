"""The exact content of a check's typed inputs as bytes: a key for what is computed from them
alone (the facts: `derive` reads nothing else), so the fast evaluator derives once per
distinct input (engine/evaluator.py).

An input record is its class, its fields' values, the fields it was given (`model_fields_set`:
the facts read it) and its extra keys;
a record (sglang/plain_dataclass.py, or a standard dataclass) its class and fields; a tensor table its (name, shape, dtype) list; other values
what marshal writes (types kept: 1, 1.0 and True differ). Anything else (an object marshal
cannot write) has no key: nothing is kept for it.
"""

from __future__ import annotations

import marshal

from inkling_compat.sglang.plain_dataclass import field_names

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_PLAIN = frozenset({str, int, bool, float, type(None)})


class _NoKey(Exception):
    pass


def _content(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    plain = _PLAIN
    if kind is list or kind is tuple:
        return (kind.__name__, tuple([v if type(v) in plain else _content(v) for v in value]))
    if kind is dict:
        return ("dict", tuple([(k if type(k) in plain else _content(k), v if type(v) in plain else _content(v)) for k, v in value.items()]))
    if kind is frozenset or kind is set:
        return (kind.__name__, tuple(sorted(map(repr, value))))
    if kind.__name__ == "TensorTable" and kind.__module__ == "inkling_compat.inputs.models":
        return ("TensorTable", value.content)  # (its (name, shape, dtype) list, built once per table)
    fields = getattr(kind, "__fact_fields__", None)
    if fields is not None:  # an input record (inputs/models.py; told without importing it)
        stated = getattr(value, "model_fields_set", None)
        extra = getattr(value, "model_extra", None)
        return (
            kind.__module__,
            kind.__qualname__,
            tuple([(k, v if type(v) in plain else _content(v)) for k, v in _fields_of(value, fields)]),
            None if stated is None else tuple(sorted(stated)),
            None if extra is None else _content(extra),
        )
    names = field_names(kind)
    if names is not None:  # (a plain record: asked first, its `__dataclass_fields__` would import dataclasses)
        return (kind.__module__, kind.__qualname__, tuple([_content(getattr(value, name)) for name in names]))
    if hasattr(kind, "__dataclass_fields__"):  # (dataclasses.is_dataclass: then the module is imported already)
        import dataclasses

        return (kind.__module__, kind.__qualname__, tuple([_content(getattr(value, f.name)) for f in dataclasses.fields(value)]))
    raise _NoKey


def _fields_of(value: Any, fields: Any) -> Any:
    """A record's (field, value) pairs: its __dict__ where the fields live there (input records:
    built in one order per class and set of stated fields), else each field read."""
    own = getattr(value, "__dict__", None)
    return own.items() if own is not None else [(k, getattr(value, k)) for k in fields]


def inputs_key(inputs: Any) -> bytes | None:
    """What `derive(inputs)` reads, as bytes (equal bytes: equal facts), or None."""
    try:
        return marshal.dumps(_content((inputs.server, inputs.model, inputs.platform, tuple(inputs.adapters), frozenset(inputs.given))))
    except (_NoKey, ValueError, RecursionError):
        return None
