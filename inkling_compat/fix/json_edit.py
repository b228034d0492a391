"""One edit made to a JSON server config in place: the key or value the edit changes is
rewritten where it stands (the node marks libyaml gives a JSON document, which is YAML flow),
the rest of the text (key order, spelling, spacing, line breaks) is left as it is. A new key
goes after the last key of its object, on its own line with that key's indentation when the
object has one key per line, else after a ", ".
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from inkling_compat.fix.node_walk import edit_at_key
from inkling_compat.fix.refusals import CannotEdit
from inkling_compat.inputs.config_keys import spelled, uses_dashes


def apply_edit(text: str, edit: Any) -> str:
    try:
        from inkling_compat.inputs.yaml_read import compose

        root = compose(text)
    except yaml.YAMLError as exc:
        raise CannotEdit(f"the file does not parse as JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(root, yaml.MappingNode):
        raise CannotEdit("the file is not a JSON object of settings")
    return edit_at_key(
        text,
        root,
        edit,
        "object",
        add=lambda parent, parts: _add(text, parent, parts, edit.value, parent is root),
        set_=lambda found: _set(text, found[1], edit.value),
        remove=lambda parent, found: _remove(text, parent, found),
        rename=lambda key_node, new: _rename(text, key_node, new),
    )


def _set(text: str, node: Any, value: Any) -> str:
    return text[: node.start_mark.index] + _dumps(value=value, old=text[node.start_mark.index : node.end_mark.index]) + text[node.end_mark.index :]


def _rename(text: str, key_node: Any, new: str) -> str:
    name = json.dumps(spelled(new, "-" in str(key_node.value)))
    return text[: key_node.start_mark.index] + name + text[key_node.end_mark.index :]


def _dumps(value: Any, old: str = "") -> str:
    """`value` as JSON, lists spaced as the value it replaces was (`[a, b]` or `[a,b]`)."""
    if isinstance(value, list) and old.startswith("[") and "," in old and ", " not in old:
        return json.dumps(value, separators=(",", ":"))
    return json.dumps(value)


def _remove(text: str, parent: Any, found: tuple[Any, Any]) -> str:
    pairs = parent.value
    index = next(i for i, pair in enumerate(pairs) if pair[0] is found[0])
    if len(pairs) == 1:  # the only key: the object becomes {}
        return text[: found[0].start_mark.index] + text[found[1].end_mark.index :].lstrip(" \t")
    if index + 1 < len(pairs):  # up to the next key (its comma and the whitespace before it)
        return text[: found[0].start_mark.index] + text[pairs[index + 1][0].start_mark.index :]
    previous_end = pairs[index - 1][1].end_mark.index  # the last key: from the previous value's end
    return text[:previous_end] + text[found[1].end_mark.index :]


def _add(text: str, parent: Any, parts: list[str], value: Any, top: bool = False) -> str:
    from inkling_compat.fix.keys import new_name

    dashes = uses_dashes([str(k.value) for k, _ in parent.value if isinstance(k, yaml.ScalarNode)])
    names = [p if i > 0 and parts[0] == "env" or p == "env" else new_name(p, dashes) if i == 0 and top else spelled(p, dashes) for i, p in enumerate(parts)]
    entry: Any = value
    for name in reversed(names[1:]):
        entry = {name: entry}
    if not parent.value:  # `{}`: written inside the braces
        inside = parent.start_mark.index + 1
        return text[:inside] + json.dumps(names[0]) + ": " + json.dumps(entry) + text[inside:]
    last_key, last_value = parent.value[-1]
    lines = len({k.start_mark.line for k, _ in parent.value}) == len(parent.value) and len(parent.value) > 1 or last_key.start_mark.line != parent.start_mark.line
    if lines:
        indent = _line_prefix(text, last_key.start_mark.index)  # spaces or tabs, as written
        outer = _line_prefix(text, parent.start_mark.index)
        sep = ",\n" + indent
        step = indent[len(outer) :] if indent.startswith(outer) and len(indent) > len(outer) else None
        rendered = json.dumps(entry, indent=step)
        if step:
            rendered = rendered.replace("\n", "\n" + indent)
    else:
        sep, rendered = ", ", json.dumps(entry)
    end = last_value.end_mark.index
    return text[:end] + sep + json.dumps(names[0]) + ": " + rendered + text[end:]


def _line_prefix(text: str, index: int) -> str:
    """The whitespace (spaces and tabs) that starts the line holding `index`."""
    start = text.rfind("\n", 0, index) + 1
    line = text[start:index]
    return line[: len(line) - len(line.lstrip(" \t"))]
