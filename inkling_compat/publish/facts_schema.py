"""The facts records (facts/types.py) as pydantic models, built from the same class bodies, for
publishing their JSON schema (schemas/facts.schema.json); a check never builds them."""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from inkling_compat.facts import types as ft
from inkling_compat.inputs.record import Record, typing_scope


class _Published(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _field_info(spec: Any) -> Any:
    kwargs: dict[str, Any] = {}
    if spec.default_factory is not None:
        kwargs["default_factory"] = spec.default_factory
    elif not spec.is_required():
        kwargs["default"] = spec.default
    if spec.description is None and spec.json_schema_extra is None:
        return Field(**kwargs) if kwargs else ...
    return Field(description=spec.description, json_schema_extra=spec.json_schema_extra, **kwargs)


@lru_cache(maxsize=1)
def models() -> dict[str, type[BaseModel]]:
    """Every record class of facts/types.py as a pydantic model of the same name, fields,
    annotations (`From` metadata included), defaults and docstring."""
    records = [c for c in vars(ft).values() if isinstance(c, type) and issubclass(c, Record) and c.__module__ == ft.__name__ and c is not ft._Facts]
    namespace: dict[str, Any] = {k: v for k, v in vars(ft).items() if v not in records and k != "AdapterFacts"}
    namespace.update(typing_scope(namespace))  # (facts/types.py imports typing for the type checker only)
    out: dict[str, type[BaseModel]] = {}
    pending = list(records)
    while pending:
        progress = []
        for cls in pending:
            bases = [b for b in cls.__bases__ if b is not ft._Facts]
            if any(b.__name__ not in out for b in bases):
                continue
            try:
                fields = {name: (eval(annotation, namespace), _field_info(cls.__fact_fields__[name])) for name, annotation in cls.__dict__.get("__annotations__", {}).items()}
            except NameError:
                continue  # names a record not built yet
            base = out[bases[0].__name__] if bases else _Published
            model = create_model(cls.__name__, __base__=base, __doc__=cls.__dict__.get("__doc__"), __module__=ft.__name__, **fields)
            out[cls.__name__] = namespace[cls.__name__] = model
            forms = tuple(out.get(form.__name__) for form in ft.ADAPTER_FORMS)
            if all(forms):
                namespace["AdapterFacts"] = typing.Annotated[typing.Union[forms], Field(discriminator="form")]
            progress.append(cls)
        if not progress:
            raise RuntimeError(f"facts records whose annotations do not resolve: {[c.__name__ for c in pending]}")
        pending = [c for c in pending if c not in progress]
    return out


def facts_json_schema() -> dict[str, Any]:
    """`Facts`' JSON schema in serialization mode, as schemas/facts.schema.json publishes it."""
    return models()["Facts"].model_json_schema(mode="serialization")
