"""Reading inputs from files, dicts or models into the typed inputs, with clear errors.

Unusable input raises `InputError(file, field, reason)`. Keys our formats do not know are
not errors here: they are collected (with a "did you mean" suggestion) and reported as
problems by the `unknown-config-key` rule, so a typo never passes silently.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from inkling_compat.errors import InputError
from inkling_compat.inputs import stdin
from inkling_compat.inputs.limits import (
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_NUMBER_DIGITS,
    LimitExceeded,
    bad_text,
    check_data,
    json_values,
    long_layer_reason,
    long_number_reason,
    scan_json,
    too_deep_reason,
)
from inkling_compat.inputs.models import (
    PLATFORM_PRESETS,
    LoraRef,
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


# libyaml parses and composes much faster than PyYAML's pure-Python parser, which was most of
# a check() that reads its inputs from files (docs/performance.md). The C composer has no hook per
# alias event, so the caps are enforced on the composed node graph instead: an alias is a
# second reference to a node object already composed, and that graph is linear in the text.
# (libyaml also refuses more than 1,000 nesting levels, and composes without Python
# recursion; the depth and number limits of inputs/limits.py are then applied to the nodes,
# before anything is constructed.)
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_LIBYAML = _BASE_LOADER is not yaml.SafeLoader
_RESOLVED: dict[str, str] = {}  # plain scalar text -> its implicit tag (bounded below)


class _Loader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader, remembering the tag of each plain scalar text: libyaml calls the
    pure-Python resolver (a regex scan) once per scalar, and config keys repeat."""

    # Every node the composer builds is resolved once (aliases are not): counting here stops a
    # long document while it is composed, before its nodes cost time and memory (composed whole,
    # a long block list cost seconds and gigabytes: docs/performance.md).
    nodes = 0

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        self.nodes += 1
        if self.nodes > MAX_EXPANDED_NODES:
            raise TooManyNodes(f"more than {MAX_EXPANDED_NODES} values")
        if kind is yaml.ScalarNode and implicit[0] and not self.yaml_path_resolvers:
            tag = _RESOLVED.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_RESOLVED) < 4096:
                    _RESOLVED[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


_LOADER = _Loader


def compose(text: str) -> yaml.Node | None:
    """The root node of a YAML (or JSON: YAML flow) document, composed by the loader every
    input is read with; the nodes keep their line/column marks. Raises yaml.YAMLError. Only
    for text whose depth is already known to be within the caps (the composer recurses)."""
    loader = _LOADER(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()
_TAG = "tag:yaml.org,2002:"
_MAP, _SEQ, _STR, _NULL, _BOOL = (_TAG + t for t in ("map", "seq", "str", "null", "bool"))
_INT = _TAG + "int"
_SAFE = yaml.constructor.SafeConstructor()  # only its scalar methods (stateless) are used


def _yaml_int(node: yaml.ScalarNode) -> int:
    """SafeConstructor's int: a plain decimal (most ints of a config) without its Python
    parser of signs, `_`, `0x`, `0b`, octal and base 60 (docs/performance.md)."""
    text = node.value
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        return int(text)
    return _SAFE.construct_yaml_int(node)


_SCALAR = {
    _STR: lambda node: node.value,
    _NULL: lambda node: None,
    _BOOL: lambda node: _SAFE.bool_values[node.value.lower()],
    _INT: _yaml_int,
    _TAG + "float": _SAFE.construct_yaml_float,
}


def _long_int(node: yaml.Node) -> int:
    """The digits of an int-tagged scalar whose text is longer than MAX_NUMBER_DIGITS (0 if it
    is short): `int()` would refuse 4,300 digits, and YAML's hex and base-60 forms build
    numbers whose decimal text is longer still."""
    text = node.value
    if len(text) <= MAX_NUMBER_DIGITS:
        return 0
    digits = sum(c.isalnum() for c in text)
    return digits if digits > MAX_NUMBER_DIGITS else 0


def _check_scalar(node: yaml.Node, path: str) -> None:
    if node.tag == _INT and isinstance(node, yaml.ScalarNode):
        digits = _long_int(node)
        if digits:
            raise LimitExceeded(path, long_number_reason(digits), node.start_mark.line + 1)


class ExpandsTooFar(yaml.YAMLError):
    """A YAML document whose aliases expand to more than MAX_EXPANDED_NODES values."""


class TooManyNodes(yaml.YAMLError):
    """A document of more than MAX_EXPANDED_NODES values (keys count), found while composing."""


class DuplicateKey(yaml.YAMLError):
    """A mapping that states one key twice. YAML and JSON readers keep the last value without
    a word, so a config that says `max_lora_rank: 16` and later `max_lora_rank: 64` would be
    checked (and served) with 64: refused, naming both lines."""

    def __init__(self, path: str, key: str, first_line: int, second_line: int):
        super().__init__(f"duplicate key {key!r} at {path}")
        self.path, self.key, self.first_line, self.second_line = path, key, first_line, second_line


def duplicate_key(root: yaml.Node) -> DuplicateKey | None:
    """The first mapping key stated twice in a composed node graph (scalar keys compared by
    tag and text; YAML merge keys `<<` exempt), or None. Iterative; each node visited once."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                child = path
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _TAG + "merge":
                    where = (key_node.tag, key_node.value)
                    line = key_node.start_mark.line + 1
                    if where in lines:
                        return DuplicateKey(f"{path}{key_node.value}", key_node.value, lines[where], line)
                    lines[where] = line
                    child = f"{path}{key_node.value}."
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            base = path[:-1] if path.endswith(".") else path  # a.b.[0] is written a.b[0]
            stack.extend((item, f"{base}[{index}].") for index, item in enumerate(node.value))
    return None


def load_yaml(text: str, max_depth: int | None = None, *, root: yaml.Node | None = None) -> tuple[Any, yaml.Node | None]:
    """(data, root node) of a YAML document; the nodes keep their line/column marks.
    ``root``: the document's nodes, already composed from ``text`` (not composed again).

    Raises yaml.YAMLError for malformed YAML and for alias bombs (more than
    MAX_YAML_ALIASES aliases, or ExpandsTooFar), and `LimitExceeded` for an integer of more
    than MAX_NUMBER_DIGITS digits or (with `max_depth`) a document nested deeper, counted
    with aliases expanded; nothing is built before the caps hold.
    """
    if root is None:
        if max_depth is not None and not _LIBYAML:
            _event_depth(text, max_depth)  # PyYAML's own composer recurses per level
        root = compose(text)
    if root is None:
        return None, None
    duplicate = duplicate_key(root)
    if duplicate is not None:
        raise duplicate
    data = _plain_tree(root, max_depth)
    if data is _NOT_PLAIN:
        aliases, size = graph_counts(root)
        if aliases > MAX_YAML_ALIASES:
            raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} YAML aliases (alias bomb?)")
        if size > MAX_EXPANDED_NODES:
            raise ExpandsTooFar(f"expands to more than {MAX_EXPANDED_NODES} values")
        _graph_limits(root, max_depth)
        data = yaml.constructor.SafeConstructor().construct_document(root)
    return data, root


def _event_depth(text: str, max_depth: int) -> None:
    """The nesting limit on parser events (PyYAML's parser is a state machine; only its
    composer and constructor recurse): used when libyaml is not installed."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                raise LimitExceeded("(root)", too_deep_reason(), event.start_mark.line + 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _graph_limits(root: yaml.Node, max_depth: int | None) -> None:
    """The number limit on every scalar, and the depth limit with aliases expanded (a node
    reached through an alias nests again where it is referenced; a recursive alias counts as
    a leaf, as the constructor builds it without recursing), on a node graph. Iterative; each
    node's height is computed once."""
    heights: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool, str]] = [(root, False, "")]
    while stack:
        node, done, path = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            _check_scalar(node, path)
            heights[key] = 0
            continue
        is_map = isinstance(node, yaml.MappingNode)
        children = [c for pair in node.value for c in pair] if is_map else node.value
        if done:
            heights[key] = height = 1 + max((heights.get(id(c), 0) for c in children), default=0)
            if max_depth is not None and height > max_depth:
                raise LimitExceeded(path, too_deep_reason(), node.start_mark.line + 1)
            continue
        if key in heights:
            continue  # an alias of a node already measured (or being measured: recursive)
        heights[key] = 0
        stack.append((node, True, path))
        if is_map:
            for k, v in reversed(node.value):
                name = k.value if isinstance(k, yaml.ScalarNode) else "?"
                stack.append((k, False, path))
                stack.append((v, False, f"{path}.{name}" if path else str(name)))
        else:
            stack.extend((node.value[i], False, f"{path}[{i}]") for i in range(len(node.value) - 1, -1, -1))


_NOT_PLAIN = object()


def _plain_tree(root: yaml.Node, max_depth: int | None = None, checked: bool = False) -> Any:
    """The data of a node graph that is a plain tree (no aliases, merge keys or tags beyond
    str/int/float/bool/null/map/seq, scalar keys), the way SafeConstructor builds it, or
    _NOT_PLAIN. Iterative (1,000 nesting levels are more than Python's recursion allows).
    Raises `LimitExceeded` for a long integer, or a container nested deeper than `max_depth`,
    before converting it. `checked`: also _NOT_PLAIN for anything `duplicate_key` or
    `check_data` could object to (two keys of one mapping that construct equal, a float key:
    `.nan` twice is a duplicate that no dict sees; a str with a lone surrogate, an int over the
    digit limit), so that data it returns needs neither walk."""
    seen: set[int] = set()
    scalar = _SCALAR
    limit = max_depth if max_depth is not None else 1 << 30

    def leaf(node: yaml.Node) -> Any:
        make = scalar.get(node.tag)
        if make is None:
            return _NOT_PLAIN
        if node.tag == _INT and len(node.value) > MAX_NUMBER_DIGITS and _long_int(node):
            return _NOT_PLAIN  # refused with its path by _graph_limits
        value = make(node)
        if checked:
            kind = type(value)
            if (kind is str and bad_text(value)) or (kind is int and value.bit_length() > MAX_INT_BITS):
                return _NOT_PLAIN  # (hex or base 60 build long ints from short text)
        return value

    def container(node: yaml.Node) -> Any:
        tag = node.tag
        if tag == _MAP and isinstance(node, yaml.MappingNode):
            return {}
        if tag == _SEQ and isinstance(node, yaml.SequenceNode):
            return []
        return _NOT_PLAIN

    if isinstance(root, yaml.ScalarNode):
        return leaf(root)
    top = container(root)
    if top is _NOT_PLAIN:
        return top
    seen.add(id(root))
    stack = [(root, top, 1)]
    while stack:
        node, out, depth = stack.pop()
        if len(seen) + len(node.value) > MAX_EXPANDED_NODES:
            return _NOT_PLAIN  # too big: counted (and refused) by graph_counts
        if depth > limit:
            return _NOT_PLAIN  # too deep: refused with its path and line by _graph_limits
        if type(out) is dict:
            for key_node, value_node in node.value:
                if id(key_node) in seen or id(value_node) in seen or not isinstance(key_node, yaml.ScalarNode):
                    return _NOT_PLAIN
                seen.add(id(key_node))
                seen.add(id(value_node))
                key = leaf(key_node)
                value = leaf(value_node) if isinstance(value_node, yaml.ScalarNode) else container(value_node)
                if key is _NOT_PLAIN or value is _NOT_PLAIN or (checked and (key in out or type(key) is float)):
                    return _NOT_PLAIN
                out[key] = value
                if not isinstance(value_node, yaml.ScalarNode):
                    stack.append((value_node, value, depth + 1))
        else:
            for child in node.value:
                if id(child) in seen:
                    return _NOT_PLAIN
                seen.add(id(child))
                value = leaf(child) if isinstance(child, yaml.ScalarNode) else container(child)
                if value is _NOT_PLAIN:
                    return _NOT_PLAIN
                out.append(value)
                if not isinstance(child, yaml.ScalarNode):
                    stack.append((child, value, depth + 1))
    return top


def graph_counts(root: yaml.Node) -> tuple[int, int]:
    """(alias references, values once aliases are expanded) of a composed YAML node graph.

    A node reached again is an alias (`*name`); its expanded size counts once per reference,
    computed without expanding. Iterative, like _plain_tree.
    """
    sizes: dict[int, int] = {}
    aliases = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            if isinstance(node, yaml.MappingNode):
                sizes[key] = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in node.value)
            else:
                sizes[key] = 1 + sum(sizes[id(child)] for child in node.value)
            continue
        if key in sizes:
            aliases += 1  # seen before: an alias (a recursive one counts as small)
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        sizes[key] = 0  # being expanded: a recursive alias to it counts as 0
        stack.append((node, True))
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        stack.extend((child, False) for child in reversed(children))
    return aliases, sizes[id(root)]


# Parsed YAML and JSON inputs by text, kept only once their limits held. The file is read every
# time and looked up by its whole content, so an edited file is parsed again whatever its mtime;
# the cache only spares a process that checks the same files again (an API user, a server) the
# parse and the limits walk. Entries
# are the data as JSON text (each hit returns fresh objects), only for data JSON holds
# exactly; bounded in count and size. INKLING_COMPAT_NO_CACHE=1 turns it off.
_PARSED: dict[tuple[bool, str], str] = {}
_PARSED_MAX_ENTRIES = 256
_PARSED_MAX_TEXT = 64 * 1024


def _yaml_data(text: str) -> Any:
    """A YAML document's data, its limits checked (the parsed-text cache: checked once)."""
    return _cached(text, False, _parse_yaml)


def _json_data(raw: bytes, text: str) -> Any:
    """A JSON document's data, its limits checked (the parsed-text cache: checked once)."""
    return _cached(text, True, lambda text: _parse_json(raw, text))


def _parse_yaml(text: str) -> Any:
    if _LIBYAML:
        # The usual document (a plain tree, no duplicate key, nothing over a limit) in one
        # walk of its nodes instead of three (duplicate keys, the data, the limits on the data);
        # anything else takes the path below, which finds
        # and words the problem.
        root = compose(text)
        if root is None:
            return None
        data = _plain_tree(root, MAX_DEPTH, checked=True)
        if data is not _NOT_PLAIN:
            return data
        # The full path on the same nodes: composing a large document twice costs more time and
        # memory than composing it once (docs/performance.md).
        data, _ = load_yaml(text, MAX_DEPTH, root=root)
    else:
        data, _ = load_yaml(text, MAX_DEPTH)
    # Lone surrogates and the value cap on the data (YAML's count is applied to its nodes,
    # aliases expanded; here twice the cap, so that only a recursive alias, endless once
    # walked, meets it).
    check_data(data, count_limit=2 * MAX_EXPANDED_NODES)
    return data


def _parse_json(raw: bytes, text: str) -> Any:
    # The value count first (before json builds them, and before scan_json's exact walk,
    # which a long list of digits takes; docs/performance.md has the cost without it).
    if json_values(raw) > MAX_EXPANDED_NODES:
        raise LimitExceeded("(root)", f"more than {MAX_EXPANDED_NODES} values")
    scan_json(raw)  # depth and number limits before json recurses or converts
    data = json.loads(text, object_pairs_hook=_unique_pairs)
    check_data(data, count_limit=MAX_EXPANDED_NODES)  # lone surrogates ("\ud800") and the value cap
    return data


def _cached(text: str, is_json: bool, parse: Any) -> Any:
    # Keyed by the parser too: one text can read differently as YAML and as JSON ("1e999").
    cacheable = len(text) <= _PARSED_MAX_TEXT and os.environ.get("INKLING_COMPAT_NO_CACHE", "") in ("", "0")
    hit = _PARSED.get((is_json, text)) if cacheable else None
    if hit is not None:
        return json.loads(hit)
    data = parse(text)
    if cacheable:
        try:
            dumped = json.dumps(data, allow_nan=False)
            if json.loads(dumped) == data:  # e.g. integer keys or dates would not come back
                if len(_PARSED) >= _PARSED_MAX_ENTRIES:
                    _PARSED.clear()
                _PARSED[(is_json, text)] = dumped
        except (TypeError, ValueError, RecursionError):
            pass
    return data


def read_document(path: str | Path) -> dict[str, Any]:
    """A YAML or JSON file as a mapping, or an InputError naming the file."""
    if stdin.is_stdin(path):  # `--config -`: the same parsing and limits, YAML (JSON is YAML)
        return parse_document(stdin.read_bytes(MAX_INPUT_BYTES), stdin.NAME, is_json=False)
    path = Path(path)
    return parse_document(read_capped(path), str(path), is_json=path.suffix == ".json")


def read_capped(path: str | Path, expected: str = "a YAML or JSON file") -> bytes:
    """A file's bytes, at most MAX_INPUT_BYTES: a FIFO or socket is refused unopened for
    reading, a device or a growing file is read to one byte past the cap and refused; every
    failure an InputError naming the file."""
    path = Path(path)
    name = str(path)
    try:  # one open and one fstat: a check reads three of these
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever (it is
        # refused below, once fstat says what it is); regular files ignore the flag. The
        # descriptor is read as it is (a file object around it costs more per file).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
                raise InputError(name, "(file)", "is a FIFO or socket, not a file: never read (it could block or never end)")
            if info.st_size > MAX_INPUT_BYTES:
                raise InputError(name, "(file)", f"{info.st_size} bytes is more than the {MAX_INPUT_BYTES}-byte limit")
            # A device reports size 0 (/dev/null reads as empty; /dev/zero would never end):
            # at most one byte past the limit is read from anything.
            # A regular file: its size and one byte more (read(n) allocates n bytes first:
            # asking for the whole cap is slower), then the rest up to the cap only
            # if it grew meanwhile.
            raw = _read_up_to(fd, info.st_size + 1 if 0 < info.st_size else MAX_INPUT_BYTES + 1)
            if 0 < info.st_size < len(raw):
                raw += _read_up_to(fd, MAX_INPUT_BYTES + 1 - len(raw))
            if len(raw) > MAX_INPUT_BYTES:
                raise InputError(name, "(file)", f"more than the {MAX_INPUT_BYTES}-byte limit (a device or a growing file?)")
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise InputError(name, "(file)", "no such file") from None
    except IsADirectoryError:
        raise InputError(name, "(file)", f"is a directory, expected {expected}") from None
    except OSError as exc:
        raise InputError(name, "(file)", f"cannot read: {exc.strerror}") from None
    except ValueError:  # os.open of a path holding a NUL (no file can have one)
        raise InputError(name, "(file)", "the path holds a NUL character: no such file") from None
    return raw


def parse_document(raw: bytes, name: str, is_json: bool) -> dict[str, Any]:
    """A document's bytes (read under the byte cap) as a mapping, or an InputError naming `name`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(name, "(file)", "not UTF-8 text") from None
    if "\r" in text:  # as read_text's universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        kind = "json" if is_json else "yaml"
        data = _json_data(raw, text) if kind == "json" else _yaml_data(text)
    except LimitExceeded as exc:
        if exc.reason.startswith("more than"):
            if kind == "json":
                raise InputError(name, "(json)", _too_many(kind)) from None
            # YAML's nodes were counted while composing: only aliases reach this cap
            raise InputError(name, "(yaml)", f"expands to more than {MAX_EXPANDED_NODES} values (YAML alias bomb?)") from None
        raise InputError(name, exc.path, exc.reason) from None
    except TooManyNodes:
        raise InputError(name, "(yaml)", _too_many("yaml")) from None
    except _JsonDuplicate as exc:
        raise _json_duplicate(name, text, exc.key) from None
    except DuplicateKey as exc:
        raise InputError(name, exc.path, f"duplicate key {exc.key!r} (lines {exc.first_line} and {exc.second_line}): say it once") from None
    except json.JSONDecodeError as exc:
        raise InputError(name, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except ExpandsTooFar:
        raise InputError(name, "(yaml)", f"expands to more than {MAX_EXPANDED_NODES} values (YAML alias bomb?)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(name, where, f"malformed YAML: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(name, "(root)", f"expected a mapping, got {type(data).__name__}")
    return data


def _too_many(kind: str) -> str:
    return f"more than {MAX_EXPANDED_NODES} values (keys count) in this {kind.upper()} document: a config holds far fewer"


def _read_up_to(fd: int, size: int) -> bytes:
    """`size` bytes of `fd`, fewer only at its end (a read may return less than it was asked)."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class _JsonDuplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a dict, unless a key repeats (json keeps the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _JsonDuplicate(key)
            seen.add(key)
    return out


def _json_duplicate(name: str, text: str, key: str) -> InputError:
    """The InputError for a JSON object stating `key` twice, with both lines: the json module
    keeps no positions, so the (valid JSON, hence YAML flow) text is composed by libyaml to
    find them; where that fails, the key alone is named."""
    try:
        root = compose(text)
        found = duplicate_key(root) if root is not None else None
    except yaml.YAMLError:
        found = None
    if found is None:
        return InputError(name, key, f"duplicate key {key!r}: say it once")
    return InputError(name, found.path, f"duplicate key {found.key!r} (lines {found.first_line} and {found.second_line}): say it once")


# A "did you mean" is difflib against every known key, per unknown key: only the
# first MAX_SUGGESTED unknown keys of a document get one, so 20,000 of them stay linear and fast.
MAX_SUGGESTED = 100


def unknown_keys(model: type[BaseModel], data: dict[str, Any], prefix: str = "", _found: list[dict[str, str]] | None = None) -> list[dict[str, str]]:
    """Keys of `data` that `model` forbids, with the closest known key as a suggestion."""
    found: list[dict[str, str]] = [] if _found is None else _found
    fields = _field_models(model)
    if fields is None:
        return found
    known = None
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in fields:
            close: list[str] = []
            if len(found) < MAX_SUGGESTED:
                import difflib  # only for an unknown key: most checks have none (and it costs at start-up)

                known = known if known is not None else list(fields)
                close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            found.append({"key": path, "suggestion": f"{prefix}{close[0]}" if close else ""})
            continue
        sub = fields[key]
        if sub is not None and isinstance(value, dict):
            unknown_keys(sub, value, f"{path}.", found)
    return found


def _strip_unknown(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    fields = _field_models(model)
    if fields is None:
        return data
    kept = {}
    for key, value in data.items():
        if key not in fields:
            continue
        sub = fields[key]
        kept[key] = _strip_unknown(sub, value) if sub is not None and isinstance(value, dict) else value
    return kept


@functools.lru_cache(maxsize=64)
def _field_models(model: type[BaseModel]) -> dict[str, type[BaseModel] | None] | None:
    """Field name -> the model it nests (or None), for a model that forbids unknown keys;
    None for one that allows them. Read once per model class, not per check."""
    if model.model_config.get("extra") != "forbid":
        return None
    return {name: _nested_model(field.annotation) for name, field in model.model_fields.items()}


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
        reason = err["msg"]
        if err["type"] == "missing":  # most often a misspelt key: name it ("did you mean")
            typo = next((u["key"] for u in unknown_keys(model, data) if u["suggestion"] == field), None)
            if typo is not None:
                reason += f" ({typo.rsplit('.', 1)[-1]!r} is there: did you mean {field.rsplit('.', 1)[-1]!r}?)"
        raise InputError(file, field, reason) from None


def _as_mapping(source: Any, label: str) -> tuple[dict[str, Any], str]:
    if isinstance(source, (str, Path)):
        return read_document(source), str(source)
    if isinstance(source, dict):
        try:  # a caller's dict gets the limits a file gets (inputs/limits.py); the count cap
            # is for shared sub-objects (a DAG walked as a tree doubles per level)
            check_data(source, count_limit=5 * MAX_EXPANDED_NODES)
        except LimitExceeded as exc:
            raise InputError(label, exc.path, exc.reason) from None
        return source, label
    raise InputError(label, "(root)", f"expected a path, a dict or a model, got {type(source).__name__}")


def load_server_config(source: Any) -> tuple[ServerConfig, list[dict[str, str]]]:
    if isinstance(source, ServerConfig):
        return source, []
    if source is None:
        return ServerConfig(), []
    as_data = getattr(source, "server_config_data", None)
    if callable(as_data):  # a launch command (inputs/launch.Launch), already parsed as sglang parses it (its refusals: Inputs.refusals)
        return validate(ServerConfig, as_data(), source.label), []
    try:
        data, file = _as_mapping(source, "<config>")
    except InputError as exc:
        _refuse_deployment_stream(source, exc)
        raise
    if isinstance(source, (str, Path)):
        from inkling_compat.inputs.deployment_kind import foreign_kind

        kind = foreign_kind(data)
        if kind is not None:  # named, never dumped as unknown keys (its environment holds secrets)
            raise InputError(file, "(root)", f"{kind}, not a server config: give it with --launch")
    fields = ServerConfig.model_fields
    if all(key in fields for key in data):  # today's files: only the typed fields
        found = [dict(item, file=file) for item in unknown_keys(ServerConfig, data)]
        return validate(ServerConfig, data, file), found
    from inkling_compat.inputs.server_arguments import sort_arguments

    data, found = sort_arguments(data, file)
    found += [dict(item, file=file) for item in unknown_keys(ServerConfig, data)]
    return validate(ServerConfig, data, file), found


def yaml_documents(text: str, name: str) -> list[tuple[Any, Any]] | None:
    """[(data, root node)] of each document, under the caps every YAML input has; None when the
    text is not YAML at all (a shell script)."""
    import yaml

    from inkling_compat.inputs.limits import LimitExceeded, check_data

    loader = _LOADER(text)
    roots = []
    try:
        while loader.check_node():
            roots.append(loader.get_node())
    except TooManyNodes:
        raise InputError(name, "(yaml)", f"more than {MAX_EXPANDED_NODES} values") from None
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    out = []
    for root in roots:
        try:
            # The usual document in one walk (no alias, no duplicate key, within every limit), as
            # loading._parse_yaml reads one; anything else through the checks that word it.
            data = _plain_tree(root, MAX_DEPTH, checked=True) if _LIBYAML else _NOT_PLAIN
            if data is _NOT_PLAIN:
                data, _ = load_yaml(text, MAX_DEPTH, root=root)
                check_data(data, count_limit=2 * MAX_EXPANDED_NODES)
        except LimitExceeded as exc:
            raise InputError(name, exc.path, exc.reason) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(root, "start_mark", None)
            raise InputError(name, f"line {mark.line + 1}" if mark else "(yaml)", f"malformed YAML: {getattr(exc, 'problem', None) or exc}") from None
        if data is not None:
            out.append((data, root))
    if not out or all(isinstance(d, (str, int, float, bool)) for d, _ in out):
        return None  # plain text that YAML reads as one scalar: a script
    return out


def _refuse_deployment_stream(source: Any, exc: InputError) -> None:
    """A multi-document Kubernetes stream given as a server config: named (as `--launch` input)."""
    if not isinstance(source, (str, Path)) or "another document" not in exc.reason:
        return
    from inkling_compat.inputs.deployment_kind import KUBERNETES, kubernetes_object
    from inkling_compat.inputs.limits import read_bounded

    try:
        raw = (stdin.already_read() or b"") if stdin.is_stdin(source) else read_bounded(source, MAX_INPUT_BYTES)
        documents = yaml_documents(raw.decode("utf-8"), str(source)) or []
    except (InputError, UnicodeDecodeError):
        return  # not a stream we can name: the original error stands
    if any(kubernetes_object(d) for d, _ in documents):
        raise InputError(exc.file, "(root)", f"{KUBERNETES} (a stream of {len(documents)} documents), not a server config: give it with --launch") from None


def load_model_config(source: Any) -> ModelConfig:
    if isinstance(source, ModelConfig):
        return source
    if source is None:
        return ModelConfig()
    if isinstance(source, (str, Path)) and os.path.isdir(source):  # a Hugging Face model folder (os.path: no Path object per check)
        if not (Path(source) / "config.json").is_file():
            raise InputError(str(source), "(file)", "is a directory without config.json (expected the model's config.json or its folder)")
        source = Path(source) / "config.json"
    data, file = _as_mapping(source, "<model>")
    # Multimodal Inkling configs nest the text model; quantization may sit at either level, and
    # the MTP block and the audio/vision towers sit at the top.
    if isinstance(data.get("text_config"), dict):
        merged = dict(data["text_config"])
        for key in ("architectures", "quantization_config", "mtp_config", "audio_config", "vision_config"):
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
    source: Any, lora_paths: Any = None
) -> tuple[PoolManifest | PeftManifest, list[dict[str, str]]]:
    """A manifest (pool or PEFT form) from a model, a dict, a YAML/JSON file or a PEFT adapter
    directory (read by `adapter_reader`; `lora_paths`, a list of entries or an
    adapter_dir.LoraPathIndex, names it by its --lora-paths entry)."""
    if isinstance(source, (PoolManifest, PeftManifest)):
        return source, []
    if isinstance(source, (str, Path)) and os.path.isdir(source):
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
    manifest = validate(model, data, file)
    if isinstance(manifest, PeftManifest):
        for name in manifest.tensors.root:  # names sglang's get_layer_id cannot convert
            reason = long_layer_reason(name)
            if reason is not None:
                raise InputError(file, f"tensors.{name[:60]}...", reason)
    return manifest, found  # type: ignore[return-value]
