"""The compiled rules artifact (inkling_compat/data/rules_compiled.py and rules.compiled.json), generated from rules/.

    python -m inkling_compat.publish.compiled_rules            # (re)write the artifact
    python -m inkling_compat.publish.compiled_rules --check    # exit 1 if missing or stale

Run it after editing a rule file, a guard or family file, the schemas, or the code that decides
what a valid rule is (engine/compiled_rules.py VALIDITY_CODE); until then `load_rules()` compiles
the rules from their files (correct, slower).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from inkling_compat.engine import compiled_rules
from inkling_compat.engine.rule_load import compile_folder, rules_dir
from inkling_compat.engine.rule_order import check_order


def fresh_text() -> tuple[str, str]:
    """The artifact's two files (the module, the whole data) as a fresh compile of the
    package's rules/ writes them."""
    folder = rules_dir()
    compiled, expanded = compile_folder(folder)
    return compiled_rules.render(compiled_rules.rules_digest(folder), check_order(compiled), dict(expanded))


def _paths() -> tuple[Path, Path]:
    return Path(compiled_rules.artifact_path()), Path(compiled_rules.wholes_path())


def is_current() -> bool:
    try:
        return tuple(path.read_text(encoding="utf-8") for path in _paths()) == fresh_text()
    except OSError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=compiled_rules.COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the artifact is missing or out of date")
    args = parser.parse_args(argv)
    paths = _paths()
    if args.check:
        if not is_current():
            print(f"out of date: {paths[0].name} / {paths[1].name}; run `{compiled_rules.COMMAND}`", file=sys.stderr)
            return 1
        print(f"{paths[0].name} and {paths[1].name} are current")
        return 0
    for path, text in zip(paths, fresh_text()):
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
