"""What sglang reads, found from its arguments: the model config and the --lora-paths adapters.

A `--model-path` is found as sglang (transformers) finds it: a local folder holding config.json,
else a hub id in the local Hugging Face cache at `--revision` (default "main"; a commit hash
works too; inputs/hf_cache.py). Each `--lora-paths` entry (`name=path`, a bare path, a JSON
object with lora_name / lora_path / pinned, as `facts.inputs.lora_path_entries` reads them) is a
local folder, else a hub id in the cache at "main" (sglang's `snapshot_download(path)` names no
revision), checked under the name sglang gives it. What the caller gave itself wins. A path
found nowhere is not read: `Resolved.not_read` names it and why, and the checks that need it
are not checked. Nothing is downloaded.

The cache is the one sglang would read in the check's environment with the launch command's
own `VAR=value` assignments over it (`HF_HUB_CACHE`, `HF_HOME`).
"""

from __future__ import annotations

import os

from inkling_compat.inputs.models import LoraRef, ServerConfig
from inkling_compat.sglang.plain_dataclass import dataclass

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Mapping

MODEL_FILE, ADAPTER_FILE = "config.json", "adapter_config.json"


@dataclass(frozen=True)
class Resolved:
    model: Any  # the caller's model, a local config.json folder, a cached snapshot folder, or None
    adapter: Any  # the caller's adapter(s), or the folders / cached snapshots --lora-paths names
    not_read: tuple[str, ...]  # what sglang would read that is not here, and why
    from_cache: tuple[str, ...] = ()  # what was read from the Hugging Face cache, and where


def model_path(server: ServerConfig) -> str | None:
    value = server.arguments.get("model_path")
    return value if isinstance(value, str) else None


def resolve(server: ServerConfig, model: Any, adapter: Any, entries: list[LoraRef], env: Mapping[str, str] | None = None) -> Resolved:
    """(model, adapter) with what the arguments name filled in where the caller gave none, and
    what could not be read."""
    not_read: list[str] = []
    from_cache: list[str] = []
    cache: list[str] = []  # looked up once, only when a hub id needs it

    def hub_cache() -> str:
        if not cache:
            from inkling_compat.inputs.hf_cache import cache_dir

            cache.append(cache_dir({**os.environ, **env} if env else None))
        return cache[0]

    path = model_path(server)
    if model is None and path is not None:
        if _is_file(os.path.join(path, MODEL_FILE)):
            model = path
        else:
            revision = server.arguments.get("revision")
            found, why = _from_hub(path, MODEL_FILE, hub_cache, revision if isinstance(revision, str) else None, "not a local folder with config.json")
            if found is not None:
                model = os.path.join(found.snapshot, MODEL_FILE)
                from_cache.append(f"--model-path {path}: {_where(found)}")
            else:
                not_read.append(f"--model-path {path}: not read ({why}): the model checks are not checked")
    if adapter is None and entries:
        found_adapters: list[Any] = []
        for entry in entries:
            if _is_dir(entry.path):
                found_adapters.append(entry.path)
                continue
            found, why = _from_hub(entry.path, ADAPTER_FILE, hub_cache, None, "not a local folder")
            if found is not None:
                from inkling_compat.inputs.adapter_dir import read_cached_adapter

                found_adapters.append(read_cached_adapter(found.snapshot, found.repo_folder, entry))
                from_cache.append(f"--lora-paths {entry.name}={entry.path}: {_where(found)}")
            else:
                not_read.append(f"--lora-paths {entry.name}={entry.path}: not read ({why}): that adapter is not checked")
        if found_adapters:
            adapter = found_adapters
    return Resolved(model, adapter, tuple(not_read), tuple(from_cache))


def _where(found: Any) -> str:
    return f"read from the local Hugging Face cache at {found.cache} (revision {found.revision}: snapshot {os.path.basename(found.snapshot)[:12]})"


def _from_hub(path: str, filename: str, hub_cache: Any, revision: str | None, local_why: str) -> tuple[Any, str]:
    """(the cache's find, or None; why not): a path that exists here is local (not a hub id)."""
    from inkling_compat.inputs.hf_cache import is_repo_id, lookup

    if os.path.lexists(path) or not is_repo_id(path):
        return None, local_why
    found = lookup(path, filename, hub_cache(), revision)
    return (found, "") if found.found else (None, found.why_not(filename))


def _is_file(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def _is_dir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False
