"""inputs/field_types.py (the input records' field kinds a check reads) is what the annotations of
inputs/models.py say: generated from them, current, and giving the loader the same nested records."""

from __future__ import annotations

import types
import typing
from pathlib import Path

from inkling_compat.inputs import models
from inkling_compat.publish import field_types


def test_the_generated_module_is_current():
    shipped = (Path(models.__file__).resolve().parent / "field_types.py").read_text(encoding="utf-8")
    assert shipped == field_types.fresh(), f"run `{field_types.COMMAND}`"


def test_every_input_record_and_field_has_its_kind():
    from inkling_compat.inputs.field_types import FIELD_TYPES

    records = {name for name, cls in models.RECORDS.items() if cls is not models.TensorTable}
    assert set(FIELD_TYPES) == records
    for name in records:
        assert list(FIELD_TYPES[name]) == list(models.RECORDS[name].__fact_fields__), name


def _nested(annotation: typing.Any) -> type | None:
    """The input record a field holds directly or as Optional, read from its annotation."""
    origin = typing.get_origin(annotation)
    candidates = typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    return next((c for c in candidates if isinstance(c, type) and issubclass(c, models._Input)), None)


def test_the_nested_records_are_the_annotations():
    for cls in models.RECORDS.values():
        if cls is models.TensorTable:
            continue
        assert models.field_records(cls) == {name: _nested(spec.annotation) for name, spec in cls.model_fields.items()}, cls


def test_kinds_of_annotations():
    bound = models._bounded(1, 9)
    assert models.field_kind(typing.Annotated[int | None, bound], []) == ("optional", ("int", 1, 9))
    assert models.field_kind(typing.Annotated[bool, models.STRICT], []) == ("bool", True)
    assert models.field_kind(list[typing.Annotated[int, bound]], []) == ("list", ("int", 1, 9))
    assert models.field_kind(int | str | None, []) == ("refused",)
    assert models.field_kind(dict[str, typing.Any], []) == ("dict", ("any",))
    assert models.field_kind(typing.Literal["a", "b"] | None, []) == ("optional", ("literal", ("a", "b")))
    assert models.field_kind(models.TensorTable, []) == ("record", "TensorTable")
    assert models.field_kind(bytes, []) == ("refused",)


def test_a_subclass_of_a_record_is_read_by_its_own_annotations():
    class Wider(models.Platform):
        extra_gpus: int = 0

    record = models.read(Wider, {"name": "X", "extra_gpus": 2})
    assert type(record) is Wider and record.extra_gpus == 2 and record.name == "X"
    assert models.read(Wider, {"extra_gpus": "2"}) is None  # (not as it is: left to validation)
    assert models.field_records(Wider)["extra_gpus"] is None
