"""Finding a server-config key in the user's file as they spelt it: sglang's arguments are
`max-lora-rank` on its command line and `max_lora_rank` in its Python names, and a config may
use either, so keys are compared with '-' read as '_'."""

from __future__ import annotations

from typing import Any


def normal(key: str) -> str:
    """A key as compared: dashes read as underscores (environment switches included)."""
    return key.replace("-", "_")


def spelled(key: str, dashes: bool) -> str:
    """`key` (a ServerConfig name) written in a file's style: dashes or underscores."""
    return key.replace("_", "-") if dashes else key


def uses_dashes(keys: list[str]) -> bool:
    """Whether a mapping's own multi-word keys are mostly dash-spelt (ties: underscores)."""
    dashed = sum(1 for k in keys if "-" in k)
    underscored = sum(1 for k in keys if "_" in k)
    return dashed > underscored


def find_in_mapping(node: Any, key: str) -> tuple[Any, Any] | None:
    """(key node, value node) of `key` in a composed mapping node, comparing normalised keys."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    wanted = normal(key)
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and normal(str(key_node.value)) == wanted:
            return key_node, value_node
    return None


def find_node(root: Any, path: str) -> tuple[Any, Any] | None:
    """(key node, value node) of a dotted config path (`env.SGLANG_X`) in a composed document."""
    node: Any = root
    found = None
    for part in path.split("."):
        found = find_in_mapping(node, part)
        if found is None:
            return None
        node = found[1]
    return found


def find_position(file: str, path: str) -> int | None:
    """The 1-based line of `path`'s key in the YAML/JSON file, None where it is not there (or
    the file does not compose)."""
    import yaml

    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
        from inkling_compat.inputs.yaml_read import compose

        root = compose(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    found = find_node(root, path)
    return None if found is None else found[0].start_mark.line + 1


def find_in_dict(data: dict[str, Any], key: str) -> str | None:
    """The key of `data` that spells `key` (normalised), or None."""
    wanted = normal(key)
    return next((k for k in data if isinstance(k, str) and normal(k) == wanted), None)
