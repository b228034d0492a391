"""Regenerate every generated file in one command: `python -m inkling_compat.publish all`.

Order matters: schemas first (a rule reading a new fact loads only once the schema has it), then
the compiled rules artifact, the pages and docs drawn from the rules (README.md's figures and
check outputs among them), and last the snapshots the
tests compare (expanded rules, output formats), which are written by their own tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STEPS = (
    ("schemas", ["-m", "inkling_compat.publish.schemas"]),
    ("compiled rules", ["-m", "inkling_compat.publish.compiled_rules"]),
    ("rule pages", ["-m", "inkling_compat.publish.pages"]),
    ("facts doc", ["-m", "inkling_compat.publish.facts_doc"]),
    ("fixes doc", ["-m", "inkling_compat.publish.fixes_doc"]),
    ("formats table in docs/ci.md", ["-m", "inkling_compat.publish.formats_doc"]),
    ("README figures and check outputs", ["-m", "inkling_compat.publish.readme"]),
)
# Needs sglang 0.5.23's wheel (tests/oracle/wheel.py finds it in the cache): skipped, and said, without it.
AUDIT_TABLE = ("audit table in docs/fidelity.md", ["tests/oracle/audit.py", "--write-docs"])
SNAPSHOTS = (
    ("expanded rule snapshots", ["tests/test_guards_families.py", "-k", "expanded"]),
    ("format snapshots", ["tests/test_formats.py", "-k", "snapshot"]),
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["all"]:
        print("usage: python -m inkling_compat.publish all", file=sys.stderr)
        return 2
    for name, step in STEPS:
        print(f"+ {name}", flush=True)
        if subprocess.call([sys.executable, *step], cwd=ROOT) != 0:
            print(f"generate: {name} failed", file=sys.stderr)
            return 1
    if not (ROOT / "tests").is_dir():
        print("no tests/ beside the package (an installed wheel): snapshots left alone")
        return 0
    name, step = AUDIT_TABLE
    print(f"+ {name}", flush=True)
    if subprocess.call([sys.executable, *step], cwd=ROOT) != 0:
        print(f"generate: {name} not written (is the sglang 0.5.23 wheel cached? see docs/fidelity.md)", file=sys.stderr)
    env = dict(os.environ, INKLING_COMPAT_UPDATE_SNAPSHOTS="1")
    for name, step in SNAPSHOTS:
        print(f"+ {name}", flush=True)
        if subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *step], cwd=ROOT, env=env) != 0:
            print(f"generate: {name} failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
