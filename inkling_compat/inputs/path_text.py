"""A file path as pathlib reads it, as text: `shown(p) == str(Path(p))`, `name`, `suffix`,
`exists`, `is_file`, without importing pathlib.

The input files are named in messages as `str(Path(p))` names them (`./serve.yaml` is shown as
`serve.yaml`), and sglang's `--config` check reads `Path(p).suffix` and `Path(p).exists()`. A
launch check needs nothing else of pathlib, whose import (with urllib.parse, ipaddress, fnmatch
and ntpath) is about 4 ms of a check's start. These functions are pathlib's POSIX reading of a
`str` path; on Windows, or for a path that is not a `str`, they ask pathlib itself.
tests/test_path_text.py holds them equal to pathlib on generated paths.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

# The errors for which pathlib's `exists()` answers False instead of raising (pathlib._IGNORED_ERRNOS).
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _parts(path: Any) -> tuple[str, list[str]] | None:
    """(root, parts) as PurePosixPath parses a `str` path; None where pathlib must answer."""
    text = os.fspath(path)
    if os.name == "nt" or type(text) is not str:
        return None
    root = ""
    if text.startswith("/"):
        stripped = text.lstrip("/")
        root = "//" if len(text) - len(stripped) == 2 else "/"  # (POSIX leaves exactly two to the system)
        text = stripped
    return root, [part for part in text.split("/") if part and part != "."]


def shown(path: Any) -> str:
    """`str(Path(path))`: empty parts and `.` dropped, the root kept, `.` for nothing."""
    parsed = _parts(path)
    if parsed is None:
        from pathlib import Path

        return str(Path(path))
    root, parts = parsed
    return root + "/".join(parts) or "."


def name(path: Any) -> str:
    """`Path(path).name`: the last part ("" for a root or `.`)."""
    parsed = _parts(path)
    if parsed is None:
        from pathlib import Path

        return Path(path).name
    return parsed[1][-1] if parsed[1] else ""


def suffix(path: Any) -> str:
    """`Path(path).suffix`: the name's last `.` and what follows, unless the name starts or ends there."""
    last = name(path)
    i = last.rfind(".")
    return last[i:] if 0 < i < len(last) - 1 else ""


def exists(path: Any) -> bool:
    """`Path(path).exists()`: False for a missing path, one through a file or a loop, or one with a
    NUL; any other error of `stat` (a folder not searchable) raised, as pathlib raises it."""
    return _mode(path) is not None


def is_file(path: Any) -> bool:
    """`Path(path).is_file()`: a regular file (a link followed); errors as `exists`."""
    mode = _mode(path)
    return mode is not None and stat.S_ISREG(mode)


def _mode(path: Any) -> int | None:
    try:
        return os.stat(shown(path)).st_mode
    except OSError as exc:
        if exc.errno not in _ABSENT:
            raise
        return None
    except ValueError:
        return None
