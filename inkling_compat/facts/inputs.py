"""The typed inputs of one check, loaded once: what `derive` reads and the runtime reuses.

Loading is `inkling_compat.inputs.loading`; this module only gathers its results into one
frozen value (server config, model config, platform, adapter manifests, unknown keys).
"""

from __future__ import annotations

from inkling_compat.inputs.loading import load_adapter, load_model_config, load_platform, server_config_or_refusal
from inkling_compat.inputs.models import PLATFORM_PRESETS, LoraRef, ModelConfig, PeftManifest, Platform, PoolManifest, ServerConfig
from inkling_compat.inputs.sources import Sources, model_file, path_of
from inkling_compat.sglang.plain_dataclass import dataclass

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Inputs:
    """Already validated by the loaders (each field is a pydantic input model)."""

    server: ServerConfig
    model: ModelConfig
    platform: Platform
    adapters: tuple[PoolManifest | PeftManifest, ...]
    unknown_keys: tuple[dict[str, Any], ...] = ()
    # Which of config / model / platform the caller gave. The loaders substitute sglang's
    # defaults for one that is missing, so without this a default would pass for a real value.
    given: frozenset[str] = frozenset({"config", "model", "platform"})
    # The files read, as given (where a problem is: inputs/source_map.py).
    sources: Sources = Sources()
    # What the server arguments name that sglang would read but is not here (read_by_sglang.py).
    not_read: tuple[str, ...] = ()
    # Server arguments whose value the launch file does not define: (dest, why), dest "*" for
    # any argument (inputs/launch.Launch.unknown_values); what reads them is not checked.
    unknown_values: tuple[tuple[str, str], ...] = ()
    # What a launch file's reading leaves to say (inputs/launch.Launch.notes).
    launch_notes: tuple[str, ...] = ()
    # What they name that was read from the local Hugging Face cache, and where.
    from_cache: tuple[str, ...] = ()
    # Where sglang stops parsing a launch command, and the warnings its parser logs
    # (inputs/refusals.py; `input.refusals`, `input.parse_warnings` of the rules).
    refusals: tuple[dict[str, Any], ...] = ()
    parse_warnings: tuple[dict[str, Any], ...] = ()
    # The LoRA argument (its dest) whose refused choice sglang's argparse stops at in a server
    # config, its rule's to report (`input.choice_stop`; inputs/server_arguments.py), or None.
    choice_stop: str | None = None

    def input_variable(self) -> dict[str, Any]:
        """The rules' `input`: what the loaders found about the inputs themselves."""
        return {"unknown_keys": list(self.unknown_keys), "refusals": list(self.refusals), "parse_warnings": list(self.parse_warnings), "choice_stop": self.choice_stop}


def lora_path_entries(config: ServerConfig) -> list[LoraRef]:
    """--lora-paths as sglang parses it into LoRARef entries (name, path, pinned)."""
    paths = config.lora_paths
    entries: list[LoraRef] = []
    if isinstance(paths, dict):
        return [LoraRef(name=str(k), path=str(v)) for k, v in paths.items()]
    if not isinstance(paths, list):
        return entries
    for item in paths:
        if isinstance(item, str):
            name, sep, path = item.partition("=")
            entries.append(LoraRef(name=name if sep else item, path=path if sep else item))
        elif isinstance(item, dict) and "lora_name" in item and "lora_path" in item:
            pinned = item.get("pinned", False)
            error = int_error(pinned)
            entries.append(
                LoraRef(
                    name=str(item["lora_name"]),
                    path=str(item["lora_path"]),
                    pinned=bool(pinned),
                    pinned_int_error=error,
                    # What `num_pinned_loras += int(lora_ref.pinned)` adds (l.319): 2 counts
                    # twice, "0" (pinned by truthiness) counts zero; None where int() raises.
                    pinned_count=None if error is not None else pinned_count(pinned),
                )
            )
    return entries


# The value types a server config file (YAML/JSON) holds: only on these is calling int() the
# faithful replay (a caller's dict may hold any object, whose __int__ could do anything).
_DOCUMENT_TYPES = (type(None), bool, int, float, str, list, dict)


def int_error(value: Any) -> str | None:
    """What Python's `int(value)` raises (`lora_manager.py` l.319 `int(lora_ref.pinned)`), as
    its text, or None. Python bounds the work itself: a str of more than 4,300 digits is
    refused before it is converted, a list or dict without being walked."""
    if type(value) not in _DOCUMENT_TYPES:
        return None
    try:
        int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        return str(exc)
    return None


def pinned_count(value: Any) -> int:
    """`int(value)` for a value int() converts (`int_error` is None): a document's value is
    converted as sglang does; a caller's object of another type counts as its truthiness, its
    own __int__ is not run."""
    return int(value) if type(value) in _DOCUMENT_TYPES else int(bool(value))


def _adapter_items(adapter: Any) -> list[Any]:
    if adapter is None:
        return []
    if isinstance(adapter, (list, tuple)):
        return list(adapter)
    return [adapter]


def load_inputs(config: Any = None, adapter: Any = None, *, model: Any = None, platform: Any = None) -> Inputs:
    """Each input from a path (YAML/JSON), a dict or the typed model; `adapter` may be a list.
    Unusable input raises `InputError`; unknown keys are collected, not errors."""
    server, unknown, refused, choice_stop = server_config_or_refusal(config)
    launch = callable(getattr(config, "server_config_data", None))  # a parsed launch command (inputs/launch.py)
    not_read: tuple[str, ...] = ()
    from_cache: tuple[str, ...] = ()
    if (model is None or adapter is None) and (server.arguments or server.lora_paths):  # what sglang itself reads, found from its arguments
        from inkling_compat.inputs.read_by_sglang import resolve

        env = getattr(config, "env", None)  # a launch command's own VAR=value assignments
        found = resolve(server, model, adapter, lora_path_entries(server) if adapter is None else [], env if isinstance(env, dict) else None)
        model, adapter, not_read, from_cache = found.model, found.adapter, found.not_read, found.from_cache
    model_cfg = load_model_config(model)
    platform_cfg, unknown_platform = load_platform(platform)
    unknown += unknown_platform
    from inkling_compat.inputs.lora_index import LoraPathIndex

    lora_paths = LoraPathIndex(lora_path_entries(server))  # names the adapter directories listed there (one index for every adapter)
    manifests = []
    for item in _adapter_items(adapter):
        manifest, unknown_adapter = load_adapter(item, lora_paths)
        manifests.append(manifest)
        unknown += unknown_adapter
    return Inputs(
        server=server,
        model=model_cfg,
        platform=platform_cfg,
        adapters=tuple(manifests),
        unknown_keys=tuple(unknown),
        not_read=not_read,
        unknown_values=tuple(getattr(config, "unknown_values", ())),
        launch_notes=tuple(getattr(config, "notes", ())),
        from_cache=from_cache,
        refusals=tuple(config.refusals) if launch else refused,
        parse_warnings=tuple(config.warnings) if launch else (),
        choice_stop=choice_stop,
        given=frozenset(name for name, value in (("config", config), ("model", model), ("platform", platform)) if value is not None),
        sources=Sources(
            config=path_of(config),
            model=model_file(model),
            platform=None if isinstance(platform, str) and platform.lower() in PLATFORM_PRESETS else path_of(platform),
            adapters=tuple(None if getattr(m, "source", None) is not None else path_of(item) for item, m in zip(_adapter_items(adapter), manifests)),
            arguments=tuple(getattr(config, "places", ())),
        ),
    )
