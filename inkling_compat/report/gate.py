"""What `check` exits with and whether it paints: `--fail-on`, `--strict`, `--exit-zero`,
`--color` with NO_COLOR (the words checked before a check starts: inputs/command_line.py).

`--fail-on` is a level: `error` (the default: errors fail, warnings do not), `warning` (any
warning fails too), `not-checked` (also any rule not checked: the same gate as `--strict`).
`--exit-zero` exits 0 whatever the report says (2 and 3 still mean the check could not run).
"""

from __future__ import annotations

import os

from inkling_compat.report.model import Report

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Mapping


def gated(report: Report, fail_on: str, strict: bool) -> Report:
    """The report under the gate asked for (its `passes`, `exit_code` and outputs say it)."""
    if strict or fail_on == "not-checked":
        return report.replace(strict=True)
    if fail_on == "warning":
        return report.replace(fail_on_warning=True)
    return report


def exit_status(report: Report, exit_zero: bool) -> int:
    return 0 if exit_zero or report.passes() else 1


def use_color(choice: str, is_tty: bool, env: Mapping[str, str] = os.environ) -> bool:
    """`always` and `never` as said; `auto`: a terminal, unless NO_COLOR is set to anything
    non-empty (https://no-color.org) or TERM is `dumb`."""
    if choice != "auto":
        return choice == "always"
    return is_tty and not env.get("NO_COLOR") and env.get("TERM") != "dumb"
