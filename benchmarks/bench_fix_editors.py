"""The fix editor against ruamel.yaml's round trip, on the corpus of rule examples.

For every rule with a fix and each of its firing examples that sets a server config, the
config is written as a user would write it, in four layouts (block style with comments, CRLF
line endings, flow lists with a block scalar and a comment after it, a byte-order mark and no
final newline), and the fix's edits are made by each editor: the project's in-place editor
(inkling_compat/fix/target.py) and ruamel.yaml's round trip (load, edit the CommentedMap, dump).
Measured per editor: the lines changed that the edit did not ask for (a line holding no edited
key), files it could not edit, and time per edit.

    python benchmarks/bench_fix_editors.py [--out build/bench-fix-editors.json]
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _flow(value):
    return json.dumps(value) if not isinstance(value, str) else value


def layouts(config: dict) -> dict[str, str]:
    keys = [(k, v) for k, v in config.items() if not isinstance(v, dict)]
    block = "# the server's settings\n" + "".join(
        (f"{k}:  # {k}\n" + "".join(f"  - {i}\n" for i in v)) if isinstance(v, list) and v else f"{k}: {_flow(v)}  # {k}\n" for k, v in keys
    )
    flow = "notes: |\n  kept as written\n# after the block scalar\n" + "".join(f"{k}: {_flow(v)}\n" for k, v in keys)
    return {
        "block+comments": block,
        "crlf": block.replace("\n", "\r\n"),
        "flow+block-scalar": flow,
        "bom+no-final-newline": "\ufeff" + block.rstrip("\n"),
    }


def ruamel_edit(text: str, edits) -> str:
    from ruamel.yaml import YAML

    rt = YAML()
    rt.preserve_quotes = True
    data = rt.load(text)
    for edit in edits:
        parts = edit.key.split(".")
        parent = data
        for part in parts[:-1]:
            parent = parent.setdefault(part, {})
        key = next((k for k in parent if str(k).replace("-", "_") == parts[-1]), parts[-1])
        if edit.kind == "set":
            parent[key] = edit.value
        elif edit.kind == "remove":
            parent.pop(key, None)
        elif key in parent:
            parent[edit.to.split(".")[-1]] = parent.pop(key)
    out = io.StringIO()
    rt.dump(data, out)
    return out.getvalue()


def unasked(before: str, after: str, edits) -> int:
    keys = {e.key.split(".")[-1] for e in edits} | {(e.to or "").split(".")[-1] for e in edits}
    keys |= {k.replace("_", "-") for k in keys}
    changed = 0
    for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0):
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and not any(k and k in line for k in keys):
            changed += 1
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/bench-fix-editors.json")
    args = parser.parse_args()
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.engine.evaluate import check
    from inkling_compat.fix.target import CannotEdit, edit_text
    from inkling_compat.testing.scenarios import example_arguments

    cases = []
    for compiled in load_rules():
        rule = compiled.rule
        if rule.fix is None:
            continue
        for example in rule.examples.fire:
            if "config" not in example.input:
                continue
            a = example_arguments(example.input)
            report = check(a["config"], a["adapter"], model=a["model"], platform=a["platform"])
            for fix in report.fixes():
                if fix.rule_id == rule.id and fix.applicable and fix.edits:
                    cases.append((a["config"], fix.edits))
    totals = {name: {"unasked_lines": 0, "refused": 0, "failed": 0, "seconds": 0.0, "files": 0} for name in ("inkling_compat", "ruamel.yaml")}
    by_layout: dict[str, dict[str, int]] = {}
    for config, edits in cases:
        for layout, text in layouts(config).items():
            for name in totals:
                t0 = time.perf_counter()
                try:
                    after = edit_text(text, edits, False) if name == "inkling_compat" else ruamel_edit(text, edits)
                except CannotEdit:
                    totals[name]["refused"] += 1
                    continue
                except Exception:  # noqa: BLE001 - a failure of the library is counted
                    totals[name]["failed"] += 1
                    continue
                finally:
                    totals[name]["seconds"] += time.perf_counter() - t0
                totals[name]["files"] += 1
                n = unasked(text, after, edits)
                totals[name]["unasked_lines"] += n
                by_layout.setdefault(f"{name} / {layout}", {"unasked_lines": 0})["unasked_lines"] += n
    print(f"{len(cases)} fixes x 4 layouts")
    print(f"{'editor':<16} {'files':>6} {'refused':>8} {'failed':>7} {'unasked lines':>14} {'ms/edit':>8}")
    for name, t in totals.items():
        per = 1000 * t["seconds"] / max(1, t["files"] + t["refused"] + t["failed"])
        print(f"{name:<16} {t['files']:>6} {t['refused']:>8} {t['failed']:>7} {t['unasked_lines']:>14} {per:>8.2f}")
    for key, value in sorted(by_layout.items()):
        print(f"  {key:<50} {value['unasked_lines']:>6}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"cases": len(cases), "totals": totals, "by_layout": by_layout}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
