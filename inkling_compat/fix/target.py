"""What a fix is written into, and the contract every editor keeps: `set` replaces a key's
value or adds the key, `remove` deletes it (nothing when it is not there), `rename` renames
it (nothing when it is not there; refused when the new name is already set: which of the two
values is meant is the user's choice). An edit an editor cannot make without rewriting more
of the user's file than the edit itself raises `CannotEdit` with the reason.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from inkling_compat.fix.refusals import CannotEdit, Conflict  # noqa: F401 - raised by the editors, caught by callers
from inkling_compat.inputs.config_keys import find_in_dict, normal


def edit_text(text: str, edits: Iterable[Any], is_json: bool) -> str:
    """`text` (a YAML or JSON server config) with `edits` made in place, one after another."""
    if is_json:
        from inkling_compat.fix.json_edit import apply_edit
    else:
        from inkling_compat.fix.yaml_edit import apply_edit
    # The editors work on LF text without a byte-order mark (libyaml's marks count neither):
    # both are taken off and put back, so a CRLF file stays CRLF and a BOM stays.
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    crlf = "\r\n" in body and "\n" not in body.replace("\r\n", "")
    if crlf:
        body = body.replace("\r\n", "\n")
    for edit in edits:
        body = apply_edit(body, edit)
    if crlf:
        body = body.replace("\n", "\r\n")
    return bom + body


def _find_key(data: dict[str, Any], key: str, top: bool) -> str | None:
    if not top:
        return find_in_dict(data, key)
    from inkling_compat.fix.keys import same

    return next((k for k in data if isinstance(k, str) and same(k, key)), None)


def edit_dict(data: dict[str, Any], edits: Iterable[Any]) -> dict[str, Any]:
    """A copy of a config given as a dict, with `edits` made (keys found as they are spelt)."""
    out = copy.deepcopy(data)
    for edit in edits:
        parts = edit.key.split(".")
        parent: Any = out
        for part in parts[:-1]:
            found = _find_key(parent, part, parent is out)
            if found is None:
                if edit.kind != "set":
                    parent = None
                    break
                parent[part] = {}
                found = part
            if not isinstance(parent[found], dict):
                raise CannotEdit(f"{part} is not a mapping")
            parent = parent[found]
        if parent is None:
            continue
        found = _find_key(parent, parts[-1], parent is out)
        if edit.kind == "set":
            parent[found if found is not None else parts[-1]] = copy.deepcopy(edit.value)
        elif edit.kind == "remove":
            if found is not None:
                del parent[found]
        elif found is not None:
            new = edit.to.split(".")
            if [normal(p) for p in new] == [normal(p) for p in parts]:
                continue  # the same key in another spelling
            if new[:-1] != parts[:-1]:
                raise Conflict(f"{edit.key} -> {edit.to} moves the key to another mapping")
            if find_in_dict(parent, new[-1]) is not None:
                raise Conflict(f"{edit.to} is set too: keep one of {found} and {new[-1]} by hand")
            dashes = "-" in found
            target = new[-1].replace("_", "-") if dashes else new[-1]
            rebuilt = {(target if k == found else k): v for k, v in parent.items()}
            parent.clear()
            parent.update(rebuilt)
    return out


def is_json_file(name: str, text: str) -> bool:
    """A `.json` file, or one whose text is a JSON object."""
    return name.lower().endswith(".json") or text.lstrip().startswith("{")


__all__ = ["CannotEdit", "Conflict", "edit_text", "edit_dict", "is_json_file", "normal"]
