"""`-` as an input path (`check --config -`, `--adapter -`): the document comes from standard
input. It is read once per process, under the byte cap a file has (loading.limit, passed in), and
parsed as YAML (JSON text is a YAML flow document); reports name it `<stdin>`. The source map
reads the same bytes again (inputs/source_map.py), so problems get their lines."""

from __future__ import annotations

import sys

from inkling_compat.errors import InputError

DASH = "-"
NAME = "<stdin>"
_read: bytes | None = None


def is_stdin(path: object) -> bool:
    return str(path) in (DASH, NAME)


def read_bytes(limit: int) -> bytes:
    """Standard input's bytes (read on first use, then kept: the config is read more than once)."""
    global _read
    if _read is None:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError(NAME, "(file)", "no standard input to read")
        try:
            raw = stream.read(limit + 1)
        except (OSError, ValueError) as exc:
            raise InputError(NAME, "(file)", f"cannot read: {exc}") from None
        if len(raw) > limit:
            raise InputError(NAME, "(file)", f"more than the {limit}-byte limit")
        _read = raw
    return _read


def already_read() -> bytes | None:
    """What was read from standard input, None if nothing was (never reads: no blocking)."""
    return _read


def reset(data: bytes | None = None) -> None:
    """Forget what was read (tests, a caller reusing the process), or set it."""
    global _read
    _read = data
