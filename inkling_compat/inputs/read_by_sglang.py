"""What sglang reads, found from its arguments: the model folder and the --lora-paths adapters.

A local `--model-path` folder holding config.json is the model config (unless the caller gave
one); each `--lora-paths` entry (`name=path`, a bare path, a JSON object with lora_name /
lora_path / pinned, as `facts.inputs.lora_path_entries` reads them) whose path is a local folder is an
adapter, checked under the name sglang gives it. A path that is not on this machine (a hub id,
a missing folder) is not read: `unread` names it, and the checks that need it are not checked.
"""

from __future__ import annotations

import os
from typing import Any

from inkling_compat.inputs.models import LoraRef, ServerConfig


def model_path(server: ServerConfig) -> str | None:
    value = server.arguments.get("model_path")
    return value if isinstance(value, str) else None


def unread(server: ServerConfig, model: Any, adapter: Any, entries: list[LoraRef]) -> tuple[str, ...]:
    """The paths sglang would read that are not on this machine (nothing else stood in for them)."""
    out = []
    path = model_path(server)
    if model is None and path is not None and not os.path.isfile(os.path.join(path, "config.json")):
        out.append(f"--model-path {path}: not a local folder with config.json (a hub id?): the model checks are not checked")
    if adapter is None:
        for entry in entries:
            if not os.path.isdir(entry.path):
                out.append(f"--lora-paths {entry.name}={entry.path}: not a local folder: that adapter is not checked")
    return tuple(out)


def found_inputs(server: ServerConfig, model: Any, adapter: Any, entries: list[LoraRef]) -> tuple[Any, Any]:
    """(model, adapter) with what the arguments name filled in where the caller gave none."""
    if model is None:
        path = model_path(server)
        if path is not None and os.path.isfile(os.path.join(path, "config.json")):
            model = path
    if adapter is None and entries:
        folders = [entry.path for entry in entries if os.path.isdir(entry.path)]
        if folders:
            adapter = folders
    return model, adapter
