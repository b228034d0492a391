"""Reading inputs from files, dicts or models into the typed inputs, with clear errors.

Unusable input raises `InputError(file, field, reason)`. Keys our formats do not know are
not errors here: they are collected (with a "did you mean" suggestion) and reported as
problems by the `unknown-config-key` rule, so a typo never passes silently.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from inkling_compat.errors import InputError
from inkling_compat.inputs.models import (
    PLATFORM_PRESETS,
    ModelConfig,
    PeftManifest,
    Platform,
    PoolManifest,
    ServerConfig,
)

MAX_INPUT_BYTES = 16 * 1024 * 1024
MAX_YAML_ALIASES = 256
MAX_EXPANDED_NODES = 100_000
M = TypeVar("M", bound=BaseModel)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses alias bombs (billion laughs) by capping alias use."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} YAML aliases (alias bomb?)")
        return super().compose_node(parent, index)


def expanded_size(data: Any) -> int:
    """Number of values `data` has once YAML aliases are expanded, computed without expanding."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if isinstance(node, dict):
            children = list(node.keys()) + list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            return 1
        key = id(node)
        if key not in sizes:
            sizes[key] = 0  # a recursive alias counts as small; YAML cannot build one with SafeLoader anyway
            sizes[key] = 1 + sum(size(child) for child in children)
        return sizes[key]

    return size(data)


def read_document(path: str | Path) -> dict[str, Any]:
    """A YAML or JSON file as a mapping, or an InputError naming the file."""
    path = Path(path)
    name = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(name, "(file)", "no such file") from None
    except OSError as exc:
        raise InputError(name, "(file)", f"cannot read: {exc.strerror}") from None
    if path.is_dir():
        raise InputError(name, "(file)", "is a directory, expected a YAML or JSON file")
    if size > MAX_INPUT_BYTES:
        raise InputError(name, "(file)", f"{size} bytes is more than the {MAX_INPUT_BYTES}-byte limit")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(name, "(file)", "not UTF-8 text") from None
    except OSError as exc:
        raise InputError(name, "(file)", f"cannot read: {exc.strerror}") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - bounded SafeLoader
    except json.JSONDecodeError as exc:
        raise InputError(name, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(name, where, f"malformed YAML: {problem}") from None
    if data is None:
        data = {}
    if expanded_size(data) > MAX_EXPANDED_NODES:
        raise InputError(name, "(yaml)", f"expands to more than {MAX_EXPANDED_NODES} values (YAML alias bomb?)")
    if not isinstance(data, dict):
        raise InputError(name, "(root)", f"expected a mapping, got {type(data).__name__}")
    return data


def unknown_keys(model: type[BaseModel], data: dict[str, Any], prefix: str = "") -> list[dict[str, str]]:
    """Keys of `data` that `model` forbids, with the closest known key as a suggestion."""
    found = []
    if model.model_config.get("extra") != "forbid":
        return found
    fields = model.model_fields
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            found.append({"key": path, "suggestion": f"{prefix}{close[0]}" if close else ""})
            continue
        sub = _nested_model(fields[key].annotation)
        if sub is not None and isinstance(value, dict):
            found += unknown_keys(sub, value, f"{path}.")
    return found


def _strip_unknown(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    if model.model_config.get("extra") != "forbid":
        return data
    kept = {}
    for key, value in data.items():
        if key not in model.model_fields:
            continue
        sub = _nested_model(model.model_fields[key].annotation)
        kept[key] = _strip_unknown(sub, value) if sub is not None and isinstance(value, dict) else value
    return kept


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds directly or as Optional; never the values of a dict or list."""
    origin = typing.get_origin(annotation)
    candidates = typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def validate(model: type[M], data: dict[str, Any], file: str) -> M:
    """Validate `data`, turning the first pydantic error into an InputError for `file`."""
    try:
        return model.model_validate(_strip_unknown(model, data))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise InputError(file, field, err["msg"]) from None


def _as_mapping(source: Any, label: str) -> tuple[dict[str, Any], str]:
    if isinstance(source, (str, Path)):
        return read_document(source), str(source)
    if isinstance(source, dict):
        return source, label
    raise InputError(label, "(root)", f"expected a path, a dict or a model, got {type(source).__name__}")


def load_server_config(source: Any) -> tuple[ServerConfig, list[dict[str, str]]]:
    if isinstance(source, ServerConfig):
        return source, []
    if source is None:
        return ServerConfig(), []
    data, file = _as_mapping(source, "<config>")
    found = [dict(item, file=file) for item in unknown_keys(ServerConfig, data)]
    return validate(ServerConfig, data, file), found


def load_model_config(source: Any) -> ModelConfig:
    if isinstance(source, ModelConfig):
        return source
    if source is None:
        return ModelConfig()
    data, file = _as_mapping(source, "<model>")
    # Multimodal Inkling configs nest the text model; quantization may sit at either level.
    if isinstance(data.get("text_config"), dict):
        merged = dict(data["text_config"])
        for key in ("architectures", "quantization_config"):
            if key in data and key not in merged:
                merged[key] = data[key]
        data = merged
    return validate(ModelConfig, data, file)


def load_platform(source: Any) -> tuple[Platform, list[dict[str, str]]]:
    if isinstance(source, Platform):
        return source, []
    if source is None:
        return Platform(), []
    if isinstance(source, str) and source.lower() in PLATFORM_PRESETS:
        return Platform(**PLATFORM_PRESETS[source.lower()]), []
    data, file = _as_mapping(source, "<platform>")
    found = [dict(item, file=file) for item in unknown_keys(Platform, data)]
    return validate(Platform, data, file), found


def load_adapter(
    source: Any, lora_paths: list[dict[str, Any]] | None = None
) -> tuple[PoolManifest | PeftManifest, list[dict[str, str]]]:
    """A manifest (pool or PEFT form) from a model, a dict, a YAML/JSON file or a PEFT adapter
    directory (read by `adapter_reader`; `lora_paths` names it by its --lora-paths entry)."""
    if isinstance(source, (PoolManifest, PeftManifest)):
        return source, []
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        from inkling_compat.inputs.adapter_dir import read_fleet

        return read_fleet([source], lora_paths=lora_paths)[0], []
    data, file = _as_mapping(source, "<adapter>")
    if "pool" in data:
        model: type[BaseModel] = PoolManifest
    elif "adapter_config" in data:
        model = PeftManifest
    else:
        raise InputError(file, "(root)", "an adapter manifest needs `pool:` (pool form) or `adapter_config:` (PEFT form)")
    found = [dict(item, file=file) for item in unknown_keys(model, data)]
    return validate(model, data, file), found  # type: ignore[return-value]
