"""docs/architecture.md's module tables name every module of the package, so the one-page map
stays whole: a row per module (`inputs/shell.py`), a package row naming its modules in its text
(**`ci/`** ... `hook.py`), or a row of several (`fix/diff.py`, `command.py`); an output format's
module is named by its line in report/formats.py, which the row `report/<format>.py` points to."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inkling_compat"
# Mapped in from the top-level folders (pyproject package-dir): kernels/ has its own table.
MAPPED = ("kernels", "rules", "schemas", "data")


def documented() -> set[str]:
    out: set[str] = set()
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| "):
            continue
        cells = line.split(" | ")
        head = re.fullmatch(r"\| (?:\*\*)?`([\w/]+/)`(?:\*\*)?", cells[0].strip())
        folder = head.group(1) if head else ""
        # a package's row names its modules in its text; any other row, in its first cell
        for name in re.findall(r"`([\w/.]+\.py)`", line if head else cells[0]):
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                out.add(name)
            else:
                out.add(folder + name)
    return out


def modules() -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "__init__.py" and p.relative_to(PACKAGE).parts[0] not in MAPPED and not p.is_symlink()
    ]


def output_formats() -> set[str]:
    """The modules of the output formats: report/formats.py's table names and describes each
    (docs/ci.md's table is written from it), and architecture.md's row `report/<format>.py`
    points there, so a new format is one module and one line of that table."""
    from inkling_compat.report.formats import FORMATS

    return {entry.render.partition(":")[0].removeprefix("inkling_compat.").replace(".", "/") + ".py" for entry in FORMATS}


def test_every_module_is_in_the_architecture_table() -> None:
    missing = [p.relative_to(PACKAGE).as_posix() for p in modules() if p.relative_to(PACKAGE).as_posix() not in documented() | output_formats()]
    assert not missing, f"add a row to docs/architecture.md's module table (with the module's first docstring line) for: {missing}"


def test_every_module_says_what_it_is_for() -> None:
    bare = [p.relative_to(PACKAGE).as_posix() for p in modules() if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert not bare, f"a module's first lines say what it is for: {bare}"
