"""The walk both in-place editors share (fix/yaml_edit.py, fix/json_edit.py): a fix's dotted key
found in the file's node tree (libyaml's nodes: a JSON file is YAML flow), and the edit made by
the editor's own `add`, `set`, `remove` or `rename` at the node it names.

The top-level key is the same sglang argument in any spelling (fix/keys.py); a nested key is
compared with '-' read as '_'. A key given twice is refused, as is a rename that moves the key
to another mapping or onto a key that is set too (which of the two values is meant is the
user's choice).
"""

from __future__ import annotations

from typing import Any, Callable

import yaml

from inkling_compat.fix.refusals import CannotEdit, Conflict
from inkling_compat.inputs.config_keys import normal

Found = tuple[Any, Any]  # (key node, value node)


def find(mapping: Any, key: str, top: bool = False) -> Found | None:
    """The key of `mapping` that is `key`: at the top, the same sglang argument in any spelling."""
    from inkling_compat.fix.keys import same

    hits = [(k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and (same(str(k.value), key) if top else normal(str(k.value)) == normal(key))]
    if len(hits) > 1:
        raise CannotEdit(f"{key} is given twice ({', '.join(str(k.value) for k, _ in hits)})")
    return hits[0] if hits else None


def edit_at_key(
    text: str,
    root: Any,
    edit: Any,
    noun: str,
    add: Callable[[Any, list[str]], str],
    set_: Callable[[Found], str],
    remove: Callable[[Any, Found], str],
    rename: Callable[[Any, str], str],
) -> str:
    """`text` with `edit` made at its key below `root` (a mapping node): `add(parent, parts)`
    where the key (or the tail `parts` of its path) is missing and the edit sets it,
    `set_(found)`, `remove(parent, found)`, `rename(key_node, new_name)`; `text` as it is
    where a remove or rename finds nothing. `noun`: what the file calls a mapping."""
    article = "an" if noun[:1] in "aeiou" else "a"
    parts = edit.key.split(".")
    parent = root
    for depth, part in enumerate(parts[:-1]):
        found = find(parent, part, parent is root)
        if found is None:
            return add(parent, parts[depth:]) if edit.kind == "set" else text
        parent = found[1]
        if not isinstance(parent, yaml.MappingNode):
            raise CannotEdit(f"{part} is not {article} {noun}")
    found = find(parent, parts[-1], parent is root)
    if edit.kind == "set":
        return add(parent, parts[-1:]) if found is None else set_(found)
    if found is None:
        return text
    if edit.kind == "remove":
        return remove(parent, found)
    new = (edit.to or "").split(".")
    if [normal(p) for p in new] == [normal(p) for p in parts]:
        return text  # the same key in another spelling (dashes or underscores)
    if new[:-1] != parts[:-1]:
        raise Conflict(f"{edit.key} -> {edit.to} moves the key to another {noun}")
    if find(parent, new[-1], parent is root) is not None:
        raise Conflict(f"{edit.to} is set too: keep one of {found[0].value} and {new[-1]} by hand")
    return rename(found[0], new[-1])
