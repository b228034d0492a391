"""Failures the hostile fuzz finds that are known and not fixed yet.

Each entry: an id, the area that owns the fix, a regular expression over a failure's
signature + detail, and one reproducer (seed, index) that tests/test_hostile_inputs.py runs
as xfail(strict=True): when the fix lands the reproducer passes, the test turns red, and the
entry is to be deleted here. Findings, open and fixed, are written up in docs/fuzz.md.
"""

from __future__ import annotations

import re
from typing import Any

def _entry(id: str, area: str, family: str, index: int, pattern: str, what: str, ops: tuple[str, ...] = (), seed: int = 1) -> dict[str, Any]:
    return {"id": id, "area": area, "family": family, "seed": seed, "index": index, "pattern": pattern, "what": what, "ops": ops}


# `ops`: the entry matches only cases whose recipe uses one of these mutations (a hang or a
# memory blow-up says nothing about its cause otherwise).
# (Empty: no finding is open; docs/fuzz.md lists them.)
KNOWN: list[dict[str, Any]] = []


def match(result: dict[str, Any], recipe: dict[str, Any]) -> str | None:
    """The id of the known finding a failing result is an instance of, or None."""
    text = f"{result.get('sig', '')} {result.get('detail', '')}"
    used = {m.get("op") for m in recipe.get("muts", [])}
    for entry in KNOWN:
        if entry["ops"] and not used.intersection(entry["ops"]):
            continue
        if re.search(entry["pattern"], text):
            return entry["id"]
    return None
