"""A unified diff of a fix's change to one file (what `check --diff` prints)."""

from __future__ import annotations

import difflib


def unified_diff(before: str, after: str, name: str) -> str:
    """`diff -u` of `before` -> `after` for file `name` ("" when they are equal)."""
    if before == after:
        return ""
    old, new = (name, name) if name.startswith("/") else (f"a/{name}", f"b/{name}")
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=old, tofile=new)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
