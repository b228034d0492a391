"""Where a problem is in the user's files: field path -> (file, line, column).

A check keeps only the paths of the files it read (`Sources`, inputs/sources.py); the positions are found when
a report has problems to place (`locate`), never on the way to "ok": the file is composed
again by libyaml (JSON too: valid JSON is a YAML flow document), which keeps every key's
line and column. A check's problems share one composition per file (`SourceMaps`); a file
that no longer parses, or changed, gets locations without a line, never an error.

What a rule's `field_paths` entry points at:
  config.X, env.X, config.env.X   the server config, key X (env.X under `env:`)
  model.X                          the model's config.json (`text_config.X` first), key X
  platform.X                       the platform file (not a preset), key X
  adapter.X                        the problem's adapter: its manifest file, key X; for a
                                   PEFT directory adapter_config.json (adapter.adapter_config.K),
                                   the safetensors file and tensor (adapter.tensors), the
                                   file named by adapter.source.*
  input.unknown_keys               each unknown key, in its own file
  facts.*, adapters                derived: no place in a file
"""

from __future__ import annotations

import os
import functools
import re
import stat
from typing import Any

from inkling_compat.inputs.sources import Sources, model_file, path_of  # noqa: F401 - re-exported
from inkling_compat.sglang.plain_dataclass import dataclass, field

Position = tuple[int, int]  # (line, column), 1-based

_MAX_TEXT = 16 * 1024 * 1024  # as loading.MAX_INPUT_BYTES: the file was read once already
_MAX_POSITIONS = 100_000  # as loading.MAX_EXPANDED_NODES


@dataclass(frozen=True)
class Location:
    """One place: `file` as the user named it, `field` the key path inside it; `line` and
    `column` are None when the key is not in the file (the value is a default) or the file
    cannot be read as text (a safetensors file: `tensor` names the tensor)."""

    file: str
    field: str = ""
    line: int | None = None
    column: int | None = None
    tensor: str | None = None
    # A word of a launch command ("argument 12: --max-lora-rank"), not a line of a file.
    argument: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}:{self.column}"
        if self.argument:
            return f"{where} ({self.argument})"
        if self.tensor:
            return f"{where} (tensor {self.tensor})"
        if self.field and self.line is None:
            return f"{where} ({self.field}: not in the file)"
        return f"{where} ({self.field})" if self.field else where

    def to_dict(self) -> dict[str, Any]:
        out = {"file": self.file, "field": self.field, "line": self.line, "column": self.column, "tensor": self.tensor}
        return {**out, "argument": self.argument} if self.argument else out


def positions(text: str) -> dict[str, Position]:
    """Every key path of a YAML/JSON document (`a.b`, `a.list[0]`, `a.list[0].c`) -> the
    position of its key (of the item, in a sequence). Iterative, each node once (aliases
    are not followed again); at most _MAX_POSITIONS entries. {} if the text does not compose."""
    import yaml

    from inkling_compat.inputs.yaml_read import (
        compose,  # the loader the input was read with
    )

    try:
        root = compose(text)
    except yaml.YAMLError:
        return {}
    out: dict[str, Position] = {}
    if root is None:
        return out
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack and len(out) < _MAX_POSITIONS:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                child = f"{path}.{key_node.value}" if path else str(key_node.value)
                out.setdefault(child, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{path}[{index}]"
                out.setdefault(child, (item.start_mark.line + 1, item.start_mark.column + 1))
                stack.append((item, child))
    return out


@dataclass
class SourceMaps:
    """The positions of each file, composed once per report (see the module doc)."""

    _maps: dict[str, dict[str, Position]] = field(default_factory=dict)

    def of(self, file: str) -> dict[str, Position]:
        if file not in self._maps:
            self._maps[file] = _read_positions(file)
        return self._maps[file]

    def place(self, file: str, key: str) -> Location:
        """`key` in `file`; its nearest stated parent when the key itself is not there
        (`shape[1]` of a stated `shape`), without a line when neither is."""
        found = self.of(file)
        probe = key
        while probe:
            if probe in found:
                line, column = found[probe]
                return Location(file, key, line, column)
            probe = _parent(probe)
        return Location(file, key)


def _parent(key: str) -> str:
    if key.endswith("]") and "[" in key:
        return key[: key.rindex("[")]
    return key.rpartition(".")[0]


# Positions by file content: a caller that checks the same failing files again (an API user,
# a server, a test suite) composes each once; the file is still read every time, so an edited
# file is composed again whatever its mtime. Bounded in count and size (as loading._PARSED);
# INKLING_COMPAT_NO_CACHE=1 turns it off.
_CACHE: dict[bytes, dict[str, Position]] = {}
_CACHE_MAX = 256
_CACHE_MAX_TEXT = 64 * 1024


def _read_positions(file: str) -> dict[str, Position]:
    from inkling_compat.inputs import stdin

    if stdin.is_stdin(file):  # `--config -`: the bytes the check read
        raw = stdin.already_read()
        return {} if raw is None else _positions_of(raw)
    try:  # never blocks: only a regular file is read (a FIFO is opened non-blocking, then left)
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_TEXT:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(_MAX_TEXT + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    return _positions_of(raw)


def _positions_of(raw: bytes) -> dict[str, Position]:
    if len(raw) > _MAX_TEXT:
        return {}
    cacheable = len(raw) <= _CACHE_MAX_TEXT and os.environ.get("INKLING_COMPAT_NO_CACHE", "") in ("", "0")
    found = _CACHE.get(raw) if cacheable else None
    if found is None:
        try:
            text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            return {}
        found = positions(text)
        if cacheable:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.clear()
            _CACHE[raw] = found
    return found


def locate(
    field_paths: tuple[str, ...],
    sources: Sources,
    maps: SourceMaps,
    *,
    adapter: Any = None,
    adapter_file: str | None = None,
    message: str = "",
    unknown_keys: tuple[dict[str, Any], ...] = (),
    parse_items: dict[str, tuple[dict[str, Any], ...]] | None = None,
) -> tuple[Location, ...]:
    """The places of one problem's fields (see the module doc), in field order, each once.
    `adapter` is the problem's adapter manifest (None for a setup problem) and
    `adapter_file` the manifest file it was read from."""
    found: list[Location] = []
    for path in field_paths:
        head, _, rest = path.partition(".")
        if head == "config" and rest.startswith("env."):
            head, rest = "env", rest[4:]
        if head in ("config", "env") and sources.config and rest:
            found.append(maps.place(sources.config, rest if head == "config" else f"env.{rest}"))
        elif head == "config" and sources.arguments and rest:
            found.extend(_argument_place(maps, sources.arguments, rest))
        elif head == "model" and sources.model and rest:
            found.append(_model_place(maps, sources.model, rest))
        elif head == "platform" and sources.platform and rest:
            found.append(maps.place(sources.platform, rest))
        elif head == "adapter" and adapter is not None:
            found.extend(_adapter_places(rest, adapter, adapter_file, maps, message))
        elif path == "input.unknown_keys":
            for item in unknown_keys:
                file = item.get("file")
                if file and not str(file).startswith("<"):
                    found.append(maps.place(str(file), str(item.get("key", ""))))
        elif path in ("input.refusals", "input.parse_warnings"):  # (inputs/refusals.py: the command's argument or the --config file's key)
            for item in (parse_items or {}).get(path.split(".")[1], ()):
                file, key = str(item.get("file", "")), str(item.get("key", ""))
                if key.startswith("argument ") or not key:
                    found.append(Location(file, argument=key or None))
                else:  # (a check --config field is named as sglang names it; the file may dash it)
                    at = maps.place(file, key)
                    found.append(at if at.line is not None or "_" not in key else maps.place(file, key.replace("_", "-")))
    unique: dict[tuple[Any, ...], Location] = {}
    for loc in found:
        unique.setdefault((loc.file, loc.line, loc.column, loc.tensor, loc.field if loc.line is None else ""), loc)
    return tuple(unique.values())


def _argument_place(maps: SourceMaps, arguments: tuple[tuple[str, str, str], ...], rest: str) -> list[Location]:
    """A server argument of a launch command: the word that set it, or its key in the command's
    --config file; nothing for a dest the command leaves at its default."""
    dest = rest.split(".", 1)[0]
    for name, file, where in arguments:
        if name == dest:
            return [Location(file, rest, argument=where)] if where.startswith("argument ") else [maps.place(file, where)]
    return []


def _model_place(maps: SourceMaps, file: str, rest: str) -> Location:
    """A model field: under `text_config` where the file nests it there (multimodal configs;
    `load_model_config` reads the text model's fields first), else at the top."""
    top = rest.split(".", 1)[0].split("[", 1)[0]
    return maps.place(file, f"text_config.{rest}" if f"text_config.{top}" in maps.of(file) else rest)


def _adapter_places(rest: str, adapter: Any, adapter_file: str | None, maps: SourceMaps, message: str) -> list[Location]:
    source = getattr(adapter, "source", None)
    if source is None:  # a manifest (YAML/JSON) or a dict
        return [maps.place(adapter_file, rest)] if adapter_file and rest else []
    directory = source.directory
    first, _, inner = rest.partition(".")
    if first == "adapter_config":
        return [maps.place(os.path.join(directory, "adapter_config.json"), inner)]
    if first == "tensors":
        return [_tensor_place(adapter, source, directory, message)]
    if first == "source":
        if inner.startswith("unreadable") and source.unreadable_file:
            name = source.unreadable_file
            return [Location(directory if name == "." else os.path.join(directory, name))]
        if inner == "added_tokens_error":
            return [Location(os.path.join(directory, "added_tokens.json"))]
        return [Location(directory)]
    return [Location(directory, rest)]


def _tensor_place(adapter: Any, source: Any, directory: str, message: str) -> Location:
    """The safetensors file and, where the message names one of its tensors, that tensor
    (the longest name found in the message: `...q_proj.lora_A.weight`, not `q_proj`)."""
    files = list(source.weights_files)
    file = os.path.join(directory, files[0]) if len(files) == 1 else directory
    tensors = getattr(adapter, "tensors", {})
    if not message or not tensors:
        return Location(file)
    if len(tensors) * len(message) <= _MAX_SCAN:
        named = [name for name in tensors if name and name in message]
    else:
        # Each name searched in the message is quadratic in the two sizes (docs/performance.md):
        # the message's words looked up among the names instead (a name quoted or between spaces).
        words = set(_words().split(message))
        named = [name for name in tensors if name in words]  # (in the tensors' order, as above)
    return Location(file, tensor=max(named, key=len) if named else None)


_MAX_SCAN = 50_000_000  # names x message characters searched the plain way (a bounded cost)


@functools.cache
def _words() -> re.Pattern[str]:
    return re.compile(r"[\s'\",()\[\]{}]+")

