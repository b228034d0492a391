"""Which files make up a check: the `checks` list of the project configuration.

A repository names its checks once, for the pre-commit hook (and anyone else):

    # .inkling-compat.yaml                     # or pyproject.toml: [[tool.inkling-compat.checks]]
    checks:
      - config: deploy/serve.yaml              # required: the server config
        model: models/inkling/config.json      # optional, as check's --model
        adapter-dir: [adapters/]               # optional: --adapter-dir, --adapter, --platform,
                                               #   --sglang-version likewise (a string or a list)

Paths are relative to the file that names them. The file is the check's settings file
(`engine.selection`: the nearest `.inkling-compat.yaml`, else pyproject.toml with a
`[tool.inkling-compat]` table, from the starting folder upward), whose other keys (select,
ignore, severity) the check applies. A malformed entry is an `InputError` naming the file and key.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inkling_compat.engine.selection import PYPROJECT, SETTINGS_YAML as PROJECT_FILE, TABLE as SECTION
from inkling_compat.engine.selection import find_settings, read_settings
from inkling_compat.errors import InputError

__all__ = ["PROJECT_FILE", "PYPROJECT", "SECTION", "Target", "find_project_file", "read_targets"]

_SINGLE = ("config", "model", "platform", "sglang-version")
_MANY = ("adapter", "adapter-dir")
_KEYS = _SINGLE + _MANY
MAX_CHECKS = 1000


@dataclass(frozen=True)
class Target:
    """One `inkling-compat check` invocation: its inputs as absolute paths (platform and
    sglang-version as written: a platform may be a preset name)."""

    config: Path
    model: Path | None = None
    platform: str | None = None
    sglang_version: str | None = None
    adapter: tuple[Path, ...] = ()
    adapter_dir: tuple[Path, ...] = ()
    origin: str = field(default="(command line)", compare=False)

    def argv(self) -> list[str]:
        """The arguments of `inkling-compat check` for this target."""
        out = ["--config", str(self.config)]
        if self.model is not None:
            out += ["--model", str(self.model)]
        if self.platform is not None:
            out += ["--platform", self.platform]
        if self.sglang_version is not None:
            out += ["--sglang-version", self.sglang_version]
        for path in self.adapter:
            out += ["--adapter", str(path)]
        for path in self.adapter_dir:
            out += ["--adapter-dir", str(path)]
        return out

    def touched_by(self, changed: list[Path]) -> bool:
        """Whether any changed file is one of this check's inputs: the config, the model's
        config.json (or a file of its folder), the platform file, an adapter manifest, or a
        file inside an adapter directory or fleet folder."""
        files = {self.config} | ({self.model} if self.model else set())
        if self.platform is not None:
            files.add(Path(self.platform).resolve())
        folders = set(self.adapter_dir)
        for path in (*self.adapter, *((self.model,) if self.model else ())):
            (files if path.suffix in (".yaml", ".yml", ".json") else folders).add(path)
        for path in changed:
            if path in files or any(folder == path or folder in path.parents for folder in folders):
                return True
        return False


def find_project_file(start: Path) -> Path | None:
    """The nearest settings file from `start` upward (`engine.selection.find_settings`: the
    same file the check reads its ignores from)."""
    return find_settings(start)


def read_targets(path: Path) -> list[Target]:
    """The checks a settings file names (possibly none). The whole file is validated as the
    check validates it (`engine.selection.read_settings`), so a hook never runs on settings the
    check would refuse; the `checks` entries are validated here."""
    settings, prefix = read_settings(path)
    checks = settings.checks if settings.checks is not None else []
    name = _named(path)
    if not isinstance(checks, list):
        raise InputError(name, prefix + "checks", f"expected a list of checks, got {type(checks).__name__}")
    if len(checks) > MAX_CHECKS:
        raise InputError(name, prefix + "checks", f"{len(checks)} checks is more than the {MAX_CHECKS} allowed")
    return [_target(entry, path, f"{prefix}checks[{i}]") for i, entry in enumerate(checks)]


def _named(path: Path) -> str:
    """A path as a message names it: relative to the working folder when under it."""
    try:
        return str(path.relative_to(Path.cwd())) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def _target(entry: Any, path: Path, where: str) -> Target:
    name = _named(path)
    if not isinstance(entry, dict):
        raise InputError(name, where, f"expected a mapping with a 'config' key, got {type(entry).__name__}")
    for key in entry:
        if key not in _KEYS:
            close = difflib.get_close_matches(str(key).replace("_", "-"), _KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(_KEYS)}"
            raise InputError(name, f"{where}.{key}", f"unknown key{hint}")
    if "config" not in entry:
        raise InputError(name, f"{where}.config", "Field required (the server config of this check)")
    values: dict[str, Any] = {}
    for key in _SINGLE:
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(name, f"{where}.{key}", f"expected a string, got {type(value).__name__}")
        values[key] = value
    for key in _MANY:
        value = entry.get(key, [])
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise InputError(name, f"{where}.{key}", "expected a path or a list of paths")
        values[key] = items
    for key in _KEYS:
        texts = values[key] if key in _MANY else [values[key]]
        if any(text is not None and ("\0" in text or not text.strip()) for text in texts):
            raise InputError(name, f"{where}.{key}", "an empty path or one with a NUL character")
    base = path.parent.resolve()
    platform = values["platform"]
    if platform is not None and ("/" in platform or platform.endswith((".yaml", ".yml", ".json"))):
        platform = str(_under(base, platform))  # a file, not a preset name
    return Target(
        config=_under(base, values["config"]),
        model=_under(base, values["model"]) if values["model"] else None,
        platform=platform,
        sglang_version=values["sglang-version"],
        adapter=tuple(_under(base, p) for p in values["adapter"]),
        adapter_dir=tuple(_under(base, p) for p in values["adapter-dir"]),
        origin=f"{name}: {where}",
    )


def _under(base: Path, text: str) -> Path:
    return (base / text).resolve()
