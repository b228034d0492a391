"""The command-line words checked before a check starts, each refused in one line naming the
option: an unknown platform preset, a fleet folder given to `--adapter`, two inputs from
standard input."""

from __future__ import annotations

import os

from inkling_compat.errors import InputError

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence

COMMAND_LINE = "(command line)"  # the "file" of what the command line said


def check_words(platform: str | None, adapters: Sequence[str], config: str) -> None:
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
