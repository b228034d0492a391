"""YAML documents read under the caps every input has: libyaml's composer, the node-graph
checks (duplicate keys, alias bombs, depth and number limits) and the one-walk reading of the
usual plain document. Imported only where a YAML document is read: a check of JSON files and
a launch script imports no yaml.
"""

from __future__ import annotations

from typing import Any

import yaml

from inkling_compat.inputs.limits import (
    MAX_DEPTH,
    MAX_EXPANDED_NODES,
    MAX_INT_BITS,
    MAX_NUMBER_DIGITS,
    MAX_YAML_ALIASES,
    LimitExceeded,
    bad_text,
    check_data,
    long_number_reason,
    too_deep_reason,
)

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


def parse_yaml(text: str) -> Any:
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
