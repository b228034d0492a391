"""The command run inside the test's process: `inkling_compat.cli.main(argv)` with stdout and
stderr captured by pytest's capsys, read back as a finished process is (exit code, stdout,
stderr). A process start costs more than most checks; what only a real process shows (the
exit status the shell sees, the streams at the descriptor level, the console script, what
`--help` imports) keeps its subprocess tests (tests/test_cli.py)."""

from __future__ import annotations

import dataclasses
import io
import sys
from typing import Any

from inkling_compat import cli


@dataclasses.dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_main(capsys: Any, *args: object, stdin: str | None = None) -> Ran:
    """`inkling-compat ARGS` in this process (argparse's own exits, `--help`, included)."""
    capsys.readouterr()  # (what the test printed before is not the command's)
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")  # (with .buffer, as a real one)
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = saved
    out, err = capsys.readouterr()
    return Ran(code, out, err)
