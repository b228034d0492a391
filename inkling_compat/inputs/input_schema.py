"""The input file formats as pydantic models, built from the plain records of inputs/models.py
(their one declaration: names, annotations, bounds, defaults, docstrings, extra-key policy): what
an input the plain reader cannot take as it is (inputs/models.py `read`) is validated against,
for pydantic's conversions and its error messages, and the source of schemas/*.schema.json.
Imported only then, and by publish. What pydantic alone does is here: the argparse and
capability conversions (validators) and the tensor table as a root model.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model, field_validator
from pydantic_core import PydanticCustomError

from inkling_compat.inputs.field_bounds import _ARGPARSE_FLOATS, _ARGPARSE_INTS, _int_text
from inkling_compat.inputs.record import typing_scope


def _argparse_text(value: Any) -> str:
    """The flag's text a YAML value stands for (what `--flag VALUE` would pass)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, (str, float)):
        return str(value)
    return type(value).__name__


def _argparse_converts(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False  # `--max-lora-rank True`: int("True") fails
    if kind is int:
        if isinstance(value, int):
            return True
        if isinstance(value, str) and len(value) <= 40:
            try:
                int(value)
            except ValueError:
                return False
            return True
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str) and len(value) <= 40:
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def _argparse_check(name: str, kind: type, value: Any) -> Any:
    if value is None or _argparse_converts(value, kind):
        return value
    flag = "--" + name.replace("_", "-")
    if not isinstance(value, (bool, int, float, str)):
        raise PydanticCustomError(
            "argparse", "a {type} is not a value of {flag}, which takes one {kind} (sglang's argparse `type`)", {"type": type(value).__name__, "flag": flag, "kind": kind.__name__}
        )
    text = _argparse_text(value)
    raise PydanticCustomError(
        "argparse",
        "sglang's argparse refuses it: argument {flag}: invalid {kind} value: {text}",
        {"flag": flag, "kind": kind.__name__, "text": repr(text[:60])},
    )


# The conversions pydantic makes before a field's type is checked (the plain reader takes only
# values already of their type: these are pydantic's alone), by model.


def _targets_as_list(cls: type, value: Any) -> Any:
    # sglang accepts `--lora-target-modules all` as a single token.
    return [value] if isinstance(value, str) else value


def _argparse_int(cls: type, value: Any, info: Any) -> Any:
    return _argparse_check(info.field_name, int, value)


def _argparse_float(cls: type, value: Any, info: Any) -> Any:
    return _argparse_check(info.field_name, float, value)


def _parse_capability(cls: type, value: Any) -> Any:
    if isinstance(value, (int, float)) or (isinstance(value, str) and "." in value):
        major, _, minor = str(value).partition(".")
        return (int(major), int(minor or 0))
    if isinstance(value, str) and value.startswith("sm_") and value[3:].isdigit():
        digits = value[3:]
        return (int(digits[:-1]), int(digits[-1]))
    return value


def _parse_cuda_version(cls: type, value: Any) -> Any:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        major, _, minor = str(value).partition(".")
        return (int(major), int(minor or 0))
    return value


_VALIDATORS: dict[str, dict[str, Any]] = {
    "ServerConfig": {
        "_targets_as_list": field_validator("lora_target_modules", mode="before")(_targets_as_list),
        "_argparse_int": field_validator(*_ARGPARSE_INTS, mode="before")(_argparse_int),
        "_argparse_float": field_validator(*_ARGPARSE_FLOATS, mode="before")(_argparse_float),
    },
    "Platform": {
        "_parse_capability": field_validator("compute_capability", mode="before")(_parse_capability),
        "_parse_cuda_version": field_validator("cuda_version", mode="before")(_parse_cuda_version),
    },
}

# The records, in the order of inputs/models.py: a model is built after those its fields name.
_ORDER = (
    "EnvSwitches", "StatedSink", "DraftFacts", "ServerConfig", "QuantizationConfig", "QuantMethodWiring",
    "StatedAttnPrologue", "AudioConfig", "VisionConfig", "MtpConfig", "ModelConfig", "Platform", "TensorSpec",
    "TensorTable", "PoolBuffers", "PoolManifest", "AdapterSource", "PeftManifest",
)


def pydantic_models(records: types.ModuleType) -> dict[str, type[BaseModel]]:
    """The pydantic model of each input record of `records` (inputs/models.py, which imports this
    module where the plain reader declines an input, so it is given, not imported), by name."""
    built = _BUILT.get(records.__name__)
    if built is None:
        built = _BUILT[records.__name__] = _build(records)
    return built


_BUILT: dict[str, dict[str, type[BaseModel]]] = {}


def _build(records: types.ModuleType) -> dict[str, type[BaseModel]]:
    built: dict[str, type[BaseModel]] = {}
    for name in _ORDER:
        built[name] = _tensor_table(built["TensorSpec"]) if name == "TensorTable" else _model(getattr(records, name), records, built)
    return built


def _model(record: type, records: types.ModuleType, built: dict[str, type[BaseModel]]) -> Any:
    """The pydantic model of an input record: the same name, docstring, extra-key policy and
    fields in the same order, each with the record's annotation (its bounds included; a record
    it names is the model of that name, built before it) and default."""
    hints = typing.get_type_hints(record, globalns=vars(records), localns={**typing_scope(vars(records)), **built}, include_extras=True)
    fields = {name: (hints[name], _field(spec, records, built)) for name, spec in record.__fact_fields__.items()}  # type: ignore[attr-defined]
    return create_model(  # type: ignore[call-overload]
        record.__name__,
        __config__=ConfigDict(extra=record._extra, defer_build=True),  # type: ignore[attr-defined]
        __doc__=record.__doc__,
        __module__=__name__,
        __validators__=_VALIDATORS.get(record.__name__),
        **fields,
    )


def _field(spec: Any, records: types.ModuleType, built: dict[str, type[BaseModel]]) -> Any:
    if spec.default_factory is not None:
        factory: Callable[[], Any] = spec.default_factory
        return Field(default_factory=lambda: _as_model(factory(), records, built))
    return Field() if spec.is_required() else Field(default=spec.default)


def _as_model(value: Any, records: types.ModuleType, built: dict[str, type[BaseModel]]) -> Any:
    """What a record's default factory made, as the model's default: a record (or a tensor
    table) as the model of its name, with the same fields stated; any other value as it is."""
    if isinstance(value, records.TensorTable):
        return built["TensorTable"].model_validate(records._as_data(value))
    if isinstance(value, records._Input):
        data = records._as_data(value)
        return built[type(value).__name__].model_validate({name: data[name] for name in value.model_fields_set})
    return value


def _tensor_table(tensor_spec: type[BaseModel]) -> type[BaseModel]:
    class TensorTable(RootModel):  # type: ignore[type-arg]
        """Tensor name -> TensorSpec. A root model so that tensor names are never mistaken
        for misspelt keys of TensorSpec by the unknown-key scan (they are free-form)."""

        model_config = ConfigDict(defer_build=True)

        root: dict[str, TensorSpec]  # type: ignore[name-defined]  # noqa: F821  (resolved below)

    TensorTable.__qualname__ = "TensorTable"
    TensorTable.model_rebuild(force=True, _types_namespace={"TensorSpec": tensor_spec})
    return TensorTable
