"""Agreement counts of the differential properties, and the summary table printed from them.

Each property records every case it ran: agreed or not, and (for disagreements) a short
description. pytest prints the table at the end of the session (tests/conftest.py); with
`INKLING_COMPAT_FIDELITY_OUT=<file.json>` the counts are also written out, so that the
`make fuzz` processes running in parallel can be merged into one table
(`python -m oracle.tally merge a.json b.json`, run from tests/).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tally:
    cases: int = 0
    agreements: int = 0
    disagreements: int = 0
    outcomes: Counter = field(default_factory=Counter)  # e.g. "sglang raised", "both accept"
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time
    cpu_seconds: float = 0.0  # process CPU time: what a loaded machine does not inflate


TALLIES: dict[str, Tally] = {}
META: dict[str, Any] = {}


def record(prop: str, agreed: bool, outcome: str, detail: str = "") -> None:
    tally = TALLIES.setdefault(prop, Tally())
    tally.cases += 1
    tally.outcomes[outcome] += 1
    if agreed:
        tally.agreements += 1
    else:
        tally.disagreements += 1
        if len(tally.examples) < 20:
            tally.examples.append(detail)


def add_time(prop: str, seconds: float, cpu_seconds: float = 0.0) -> None:
    tally = TALLIES.setdefault(prop, Tally())
    tally.seconds += seconds
    tally.cpu_seconds += cpu_seconds


def to_json() -> dict[str, Any]:
    return {
        "meta": META,
        "properties": {
            name: {
                "cases": t.cases,
                "agreements": t.agreements,
                "disagreements": t.disagreements,
                "outcomes": dict(t.outcomes),
                "examples": t.examples,
                "seconds": round(t.seconds, 1),
                "cpu_seconds": round(t.cpu_seconds, 1),
            }
            for name, t in TALLIES.items()
        },
    }


def table(data: dict[str, Any]) -> str:
    props = data["properties"]
    if not props:
        return ""
    rows = [("property", "cases", "agreements", "disagreements", "agreement", "wall s", "CPU s", "CPU ms/case")]
    for name in sorted(props):
        p = props[name]
        rate = f"{100.0 * p['agreements'] / p['cases']:.3f}%" if p["cases"] else "-"
        cpu = p.get("cpu_seconds", 0.0)
        per_case = f"{1000.0 * cpu / p['cases']:.2f}" if p["cases"] else "-"
        rows.append(
            (name, str(p["cases"]), str(p["agreements"]), str(p["disagreements"]), rate,
             f"{p.get('seconds', 0.0):.1f}", f"{cpu:.1f}", per_case)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    out = ["sglang fidelity (differential properties against sglang's own code):", *lines]
    meta = data.get("meta") or {}
    if meta:
        out.append("oracle: " + ", ".join(f"{k}={v}" for k, v in sorted(meta.items())))
    for name in sorted(props):
        outcomes = props[name].get("outcomes") or {}
        if outcomes:
            out.append(f"  {name}: " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1])))
        for example in props[name].get("examples", [])[:5]:
            out.append(f"  DISAGREEMENT {name}: {example}")
    return "\n".join(out)


def write(path: str, data: dict[str, Any] | None = None) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(to_json() if data is None else data, handle, indent=1, sort_keys=True)


def merge(paths: list[str]) -> dict[str, Any]:
    documents = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            documents.append(json.load(handle))
    return merge_documents(documents)


def merge_documents(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's counts from several processes' `to_json()` (make fuzz's, pytest-xdist's workers)."""
    merged: dict[str, Any] = {"meta": {}, "properties": {}}
    for data in documents:
        merged["meta"].update(data.get("meta") or {})
        for name, p in data["properties"].items():
            into = merged["properties"].setdefault(
                name,
                {"cases": 0, "agreements": 0, "disagreements": 0, "outcomes": {}, "examples": [], "seconds": 0.0, "cpu_seconds": 0.0},
            )
            for key in ("cases", "agreements", "disagreements", "seconds", "cpu_seconds"):
                into[key] += p.get(key, 0)
            for key, value in (p.get("outcomes") or {}).items():
                into["outcomes"][key] = into["outcomes"].get(key, 0) + value
            into["examples"] += p.get("examples", [])
    return merged


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "merge":
        data = merge(argv[1:])
        print(table(data))
        return 1 if any(p["disagreements"] for p in data["properties"].values()) else 0
    print("usage: python -m oracle.tally merge A.json [B.json ...]", file=sys.stderr)
    return 2


def out_path() -> str | None:
    return os.environ.get("INKLING_COMPAT_FIDELITY_OUT") or None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
