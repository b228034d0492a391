"""The compiled rules artifact (inkling_compat/data/rules_compiled.py and rules.compiled.json), generated from rules/.

    python -m inkling_compat.publish.compiled_rules            # (re)write the artifact
    python -m inkling_compat.publish.compiled_rules --check    # exit 1 if missing or stale

Run it after editing a rule file, a guard or family file, the schemas, or the code that decides
what a valid rule is (engine/compiled_rules.py VALIDITY_CODE); until then `load_rules()` compiles
the rules from their files (correct, slower).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from inkling_compat.engine import compiled_rules
from inkling_compat.publish import generated
from inkling_compat.engine.rule_load import compile_folder, rules_dir
from inkling_compat.engine.rule_order import check_order


def fresh_text() -> tuple[str, str]:
    """The artifact's two files (the module, the whole data) as a fresh compile of the
    package's rules/ writes them."""
    folder = rules_dir()
    compiled, expanded = compile_folder(folder)
    return compiled_rules.render(compiled_rules.rules_digest(folder), check_order(compiled), dict(expanded))


def _files() -> dict[Path, str]:
    return dict(zip((Path(compiled_rules.artifact_path()), Path(compiled_rules.wholes_path())), fresh_text()))


def is_current() -> bool:
    return not generated.stale(_files())


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(argv, command=compiled_rules.COMMAND, doc=__doc__, fresh=_files)


if __name__ == "__main__":
    sys.exit(main())
