"""Machine-applicable fixes (`check --fix`, `--diff`, `--unsafe-fixes`): `Report.fixes()` plans
them (engine/fixes.py), `apply_fixes` applies them to the server config and re-checks (fix/apply.py);
fix/yaml_edit.py, json_edit.py and argv_edit.py edit the user's text in place, finding each
argument in any spelling (fix/keys.py); inkling_compat/write_file.py writes the file."""

from __future__ import annotations

from typing import Any

__all__ = ["apply_fixes", "apply_fixes_argv", "Fix", "Edit", "FixResult"]


def __getattr__(name: str) -> Any:  # imported on use: the checker itself never needs this package
    if name in ("apply_fixes", "apply_fixes_argv", "FixResult"):
        from inkling_compat.fix import apply

        return getattr(apply, name)
    if name in ("Fix", "Edit"):
        from inkling_compat.engine import fixes

        return getattr(fixes, name)
    raise AttributeError(name)
