"""Regenerate every generated file in one command: `python -m inkling_compat.publish all`.

Order matters: schemas first (a rule reading a new fact loads only once the schema has it), then
the compiled rules artifact, the site data (which releases lack a rule's sglang site: read from
the wheels, by the rules as compiled), the pages and docs drawn from the rules (a rule's page
names the releases that lack its site; README.md's figures and check outputs among them), and
last the snapshots the tests compare (expanded rules, output formats), which are written by
their own tests.

The steps that read sglang's wheels (tests/oracle/: the site data, the audit table) are skipped,
and said, where the wheels are not cached or there is no tests/ beside the package; the site
data is rebuilt only where what it is made of changed (its `inputs` digest), as reading the eight
wheels takes a minute and a half of CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (what, the arguments of `python`, None or what is said when a step that needs the wheels fails)
STEPS: tuple[tuple[str, list[str], str | None], ...] = (
    ("schemas", ["-m", "inkling_compat.publish.schemas"], None),
    ("input records' field kinds", ["-m", "inkling_compat.publish.field_types"], None),
    ("compiled rules", ["-m", "inkling_compat.publish.compiled_rules"], None),
    ("rules' Python forms", ["-m", "inkling_compat.publish.rules_python"], None),
    ("sglang site data", ["tests/oracle/audit.py", "--write-data", "--if-stale"],
     "inkling_compat/data/sglang-sites.json left as it is (are the wheels of every supported release cached? see docs/fidelity.md)"),
    ("rule pages", ["-m", "inkling_compat.publish.pages"], None),
    ("facts doc", ["-m", "inkling_compat.publish.facts_doc"], None),
    ("fixes doc", ["-m", "inkling_compat.publish.fixes_doc"], None),
    ("formats table in docs/ci.md", ["-m", "inkling_compat.publish.formats_doc"], None),
    ("README figures and check outputs", ["-m", "inkling_compat.publish.readme"], None),
    ("audit table in docs/fidelity.md", ["tests/oracle/audit.py", "--write-docs"],
     "not written (is the sglang 0.5.23 wheel cached? see docs/fidelity.md)"),
)
SNAPSHOTS = (
    ("expanded rule snapshots", ["tests/test_guards_families.py", "-k", "expanded"]),
    ("format snapshots", ["tests/test_formats.py", "-k", "snapshot"]),
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["all"]:
        print("usage: python -m inkling_compat.publish all", file=sys.stderr)
        return 2
    tests = (ROOT / "tests").is_dir()
    for name, step, without_wheels in STEPS:
        if step[0].startswith("tests/") and not tests:
            print(f"+ {name}: no tests/ beside the package (an installed wheel): left alone")
            continue
        print(f"+ {name}", flush=True)
        if subprocess.call([sys.executable, *step], cwd=ROOT) != 0:
            if without_wheels is None:
                print(f"generate: {name} failed", file=sys.stderr)
                return 1
            print(f"generate: {name}: {without_wheels}", file=sys.stderr)
    if not tests:
        print("no tests/ beside the package (an installed wheel): snapshots left alone")
        return 0
    env = dict(os.environ, INKLING_COMPAT_UPDATE_SNAPSHOTS="1")
    for name, step in SNAPSHOTS:
        print(f"+ {name}", flush=True)
        if subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *step], cwd=ROOT, env=env) != 0:
            print(f"generate: {name} failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
