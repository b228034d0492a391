"""One edit made to a YAML server config in place: only the characters of the key or value the
edit changes are rewritten (libyaml's node marks locate them), so comments, key order, key
spelling, quoting and layout stay as the user wrote them. A new key goes at the end of its
mapping, indented and spelt (dashes or underscores) as that mapping's keys are.

Refused (`CannotEdit`, the diff is shown instead): a file with anchors or aliases (one edit
could change several places), a mapping in flow style that would have to be rewritten, a
key given twice (once with dashes, once with underscores), a block list with comments inside.
"""

from __future__ import annotations

from typing import Any

import yaml

from inkling_compat.fix.node_walk import edit_at_key
from inkling_compat.fix.refusals import CannotEdit
from inkling_compat.inputs.config_keys import spelled, uses_dashes

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def apply_edit(text: str, edit: Any) -> str:
    root = _compose(text)
    if root is None:
        if edit.kind != "set":
            return text
        return text + ("" if not text or text.endswith("\n") else "\n") + _new_entry(edit.key.split("."), edit.value, 0, 2, False, False)
    if not isinstance(root, yaml.MappingNode):
        raise CannotEdit("the file is not a mapping of settings")
    return edit_at_key(
        text,
        root,
        edit,
        "mapping",
        add=lambda parent, parts: _add(text, parent, parts, edit.value, root),
        set_=lambda found: _set(text, found, edit.value),
        remove=lambda parent, found: _remove(text, parent, found, root),
        rename=lambda key_node, new: _rename(text, key_node, new),
    )


def _compose(text: str) -> Any:
    """The document's root node; refused where anchors or aliases make one edit reach several places."""
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise CannotEdit("the file uses YAML anchors/aliases (an edit could change more than one place)")
        from inkling_compat.inputs.yaml_read import compose

        return compose(text)
    except yaml.YAMLError as exc:
        raise CannotEdit(f"the file does not parse as YAML: {str(exc).splitlines()[0]}") from None


def _set(text: str, found: tuple[Any, Any], value: Any) -> str:
    key_node, node = found
    if isinstance(node, yaml.MappingNode):
        raise CannotEdit(f"{key_node.value} holds a mapping; a fix does not replace one")
    if isinstance(node, yaml.SequenceNode) and not node.flow_style:
        return _set_block_list(text, key_node, node, value)
    if isinstance(node, yaml.ScalarNode) and node.value == "" and node.style is None:
        colon = text.index(":", key_node.end_mark.index)  # `key:` with nothing after it
        rendered = _flow(value, None) if not isinstance(value, list) or not _has_block_list(text) else None
        if rendered is None:
            indent = " " * (key_node.start_mark.column + 2)
            return text[: colon + 1] + "".join(f"\n{indent}- {_scalar(v, None)}" for v in value) + text[colon + 1 :]
        return text[: colon + 1] + " " + rendered + text[colon + 1 :]
    end = _scalar_end(text, node)
    old = text[node.start_mark.index : end]
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):  # a block scalar becomes a plain one: written as a new value
        return text[: node.start_mark.index] + _flow(value, None) + text[end:]
    return text[: node.start_mark.index] + _flow(value, node, old) + text[end:]


def _set_block_list(text: str, key_node: Any, node: Any, value: Any) -> str:
    if not node.value or not all(isinstance(item, yaml.ScalarNode) for item in node.value):
        raise CannotEdit(f"{key_node.value} is a block list of more than plain items")
    start, end = node.start_mark.index, node.value[-1].end_mark.index
    if "#" in text[start:end]:
        raise CannotEdit(f"{key_node.value} has comments between its items")
    if not isinstance(value, list):
        raise CannotEdit(f"{key_node.value} is a list; the fix gives one value")
    first = node.value[0]
    prefix = text[text.rindex("\n", 0, start) + 1 if "\n" in text[:start] else 0 : first.start_mark.index]
    if prefix.strip() != "-":
        raise CannotEdit(f"{key_node.value}'s items are not one per line")
    sep = "\n" + prefix
    return text[:start] + text[start : first.start_mark.index] + sep.join(_scalar(v, first) for v in value) + text[end:]


def _remove(text: str, parent: Any, found: tuple[Any, Any], root: Any) -> str:
    if parent.flow_style:
        raise CannotEdit("the key is in a flow-style mapping, which would have to be rewritten")
    key_node, node = found
    line_start = text.rfind("\n", 0, key_node.start_mark.index) + 1
    if text[line_start : key_node.start_mark.index].strip():
        raise CannotEdit(f"{key_node.value} does not start its own line")
    end = _line_end(text, _last_index(node, text))
    out = text[:line_start] + text[end:]
    if len(parent.value) == 1 and parent is not root:
        # An emptied nested mapping would read as null: remove its key too.
        holder = _holder(root, parent)
        if holder is not None:
            return _remove_line_block(out, holder[1][0])
    return out


def _remove_line_block(text: str, key_node: Any) -> str:
    """Remove the line of `key_node` (whose block below was already removed)."""
    line_start = text.rfind("\n", 0, key_node.start_mark.index) + 1
    return text[:line_start] + text[_line_end(text, key_node.end_mark.index) :]


def _holder(root: Any, child: Any) -> tuple[Any, Any] | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if v is child:
                    return node, (k, v)  # type: ignore[return-value]
                stack.append(v)
    return None


def _rename(text: str, key_node: Any, new: str) -> str:
    old = text[key_node.start_mark.index : key_node.end_mark.index]
    name = spelled(new, "-" in str(key_node.value))
    if key_node.style in ("'", '"'):
        name = key_node.style + name + key_node.style
    elif old != key_node.value:
        raise CannotEdit(f"the key {key_node.value} is written in a form a rename would have to rewrite")
    return text[: key_node.start_mark.index] + name + text[key_node.end_mark.index :]


def _add(text: str, parent: Any, parts: list[str], value: Any, root: Any) -> str:
    """`parts` (a key, or the missing tail of a nested path) added at the end of `parent`."""
    if parent.flow_style:
        raise CannotEdit("the mapping is in flow style, which would have to be rewritten to add a key")
    if not parent.value:
        raise CannotEdit("the mapping is empty: no layout to follow")
    column = parent.value[0][0].start_mark.column
    dashes = uses_dashes([str(k.value) for k, _ in parent.value if isinstance(k, yaml.ScalarNode)])
    end = _line_end(text, _last_index(parent.value[-1][1], text))
    if parent is root and parts[0] != "env":
        from inkling_compat.fix.keys import new_name

        parts = [new_name(parts[0], dashes), *parts[1:]]  # the argument's flag, not its dest
    entry = _new_entry(parts, value, column, _indent_unit(root), dashes, _has_block_list(text))
    if end == len(text) and not text.endswith("\n"):
        return text + "\n" + entry.rstrip("\n")
    return text[:end] + entry + text[end:]


def _new_entry(parts: list[str], value: Any, column: int, unit: int, dashes: bool, block_lists: bool) -> str:
    lines = []
    for depth, part in enumerate(parts[:-1]):
        lines.append(" " * (column + depth * unit) + spelled(part, dashes and part != "env") + ":")
    indent = " " * (column + (len(parts) - 1) * unit)
    key = parts[-1] if len(parts) > 1 and parts[0] == "env" else spelled(parts[-1], dashes)
    if isinstance(value, list) and value and block_lists:
        lines.append(f"{indent}{key}:")
        lines += [f"{indent}  - {_scalar(v, None)}" for v in value]
    else:
        lines.append(f"{indent}{key}: {_flow(value, None)}")
    return "\n".join(lines) + "\n"


def _indent_unit(root: Any) -> int:
    """The file's indentation step: the column of the first nested mapping's keys, else 2."""
    for key_node, node in root.value:
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            step = node.value[0][0].start_mark.column - key_node.start_mark.column
            if step > 0:
                return step
    return 2


def _has_block_list(text: str) -> bool:
    return any(line.lstrip().startswith("- ") for line in text.splitlines())


def _last_index(node: Any, text: str) -> int:
    """The end of the last character `node` spans (block collections: of their last item)."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        node = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
    return _scalar_end(text, node)


def _scalar_end(text: str, node: Any) -> int:
    """Where `node`'s own text ends. libyaml ends a block scalar (`|`, `>-`) where the next
    token starts, past the blank lines and comments that follow it: those are the user's,
    kept. The scalar's text ends with its last line indented as its content is."""
    end = node.end_mark.index
    if not isinstance(node, yaml.ScalarNode) or node.style not in ("|", ">"):
        return end
    header_end = text.find("\n", node.start_mark.index, end)
    if header_end < 0:
        return end
    last, indent = header_end, None
    position = header_end + 1
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline < 0 else newline
        line = text[position:line_end]
        if line.strip():
            width = len(line) - len(line.lstrip(" "))
            if indent is None:
                indent = width
            if width < indent:
                break
            last = line_end
        position = line_end + 1
    return last


def _line_end(text: str, index: int) -> int:
    """The index just past the newline of the line holding `index` (the text's end if none)."""
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _flow(value: Any, old: Any, old_text: str = "") -> str:
    """`value` as YAML in one line, in the style of the value it replaces where there is one."""
    if isinstance(value, list):
        first = old.value[0] if isinstance(old, yaml.SequenceNode) and old.value else None
        spaced = not isinstance(old, yaml.SequenceNode) or ", " in old_text or len(old.value) < 2
        return "[" + (", " if spaced else ",").join(_scalar(v, first) for v in value) + "]"
    if isinstance(value, dict):
        raise CannotEdit("a fix does not write mappings")
    return _scalar(value, old if isinstance(old, yaml.ScalarNode) else None)


def _scalar(value: Any, old: Any) -> str:
    """A scalar as YAML: quoted as `old` was quoted (plain where YAML reads it back the same)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
        if old is not None and old.style is None and old.value[:1].isupper():
            text = text.capitalize()
        return text
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    style = old.style if old is not None and old.style in ("'", '"') else None
    if style is None and _plain_ok(text):
        return text
    if style == '"':
        import json

        return json.dumps(text)
    return "'" + text.replace("'", "''") + "'"


def _plain_ok(text: str) -> bool:
    if not text or text != text.strip() or "#" in text or ": " in text or text[0] in "!&*[]{}|>'\"%@`,?-:":
        return False
    try:
        return yaml.load(text, Loader=_LOADER) == text
    except yaml.YAMLError:
        return False
