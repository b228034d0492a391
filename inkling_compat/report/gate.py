"""What `check` exits with and whether it paints: `--fail-on`, `--strict`, `--exit-zero`,
`--color` with NO_COLOR; and the command-line words checked before a check starts (an unknown
platform preset, a fleet folder given to `--adapter`, two inputs from standard input).

`--fail-on` is a level: `error` (the default: errors fail, warnings do not), `warning` (any
warning fails too), `not-checked` (also any rule not checked: the same gate as `--strict`).
`--exit-zero` exits 0 whatever the report says (2 and 3 still mean the check could not run).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Mapping, Sequence

from inkling_compat.errors import InputError
from inkling_compat.report.model import Report

COMMAND_LINE = "(command line)"


def gated(report: Report, fail_on: str, strict: bool) -> Report:
    """The report under the gate asked for (its `passes`, `exit_code` and outputs say it)."""
    if strict or fail_on == "not-checked":
        return dataclasses.replace(report, strict=True)
    if fail_on == "warning":
        return dataclasses.replace(report, fail_on_warning=True)
    return report


def exit_status(report: Report, exit_zero: bool) -> int:
    return 0 if exit_zero or report.passes() else 1


def use_color(choice: str, is_tty: bool, env: Mapping[str, str] = os.environ) -> bool:
    """`always` and `never` as said; `auto`: a terminal, unless NO_COLOR is set to anything
    non-empty (https://no-color.org) or TERM is `dumb`."""
    if choice != "auto":
        return choice == "always"
    return is_tty and not env.get("NO_COLOR") and env.get("TERM") != "dumb"


def check_words(platform: str | None, adapters: Sequence[str], config: str, adapter_dirs: Sequence[str] = ()) -> None:
    """Refuse, in one line naming the option, what would otherwise fail less clearly later."""
    from inkling_compat.inputs import stdin

    if platform is not None and not os.path.exists(platform):
        from inkling_compat.inputs.models import PLATFORM_PRESETS

        if platform.lower() not in PLATFORM_PRESETS:
            import difflib

            close = difflib.get_close_matches(platform.lower(), list(PLATFORM_PRESETS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(platform, "(file)", f"no such file, and not a platform preset (--platform takes a file or one of: {', '.join(PLATFORM_PRESETS)}){hint}")
    for adapter in adapters:
        if _is_fleet(adapter):
            raise InputError(adapter, "--adapter", "is a folder of adapter directories (a fleet), not one adapter: use --adapter-dir for a fleet")
    from_stdin = [name for name, value in (("--config", config), *(("--adapter", a) for a in adapters)) if stdin.is_stdin(value)]
    if len(from_stdin) > 1:
        raise InputError(COMMAND_LINE, from_stdin[1], f"standard input can be read once: {' and '.join(from_stdin)} both say '-'")


def _is_fleet(path: str) -> bool:
    """A folder without adapter_config.json whose subfolders hold one."""
    try:
        if not os.path.isdir(path) or os.path.exists(os.path.join(path, "adapter_config.json")):
            return False
        with os.scandir(path) as entries:
            return any(e.is_dir() and os.path.isfile(os.path.join(e.path, "adapter_config.json")) for e in entries)
    except OSError:
        return False
