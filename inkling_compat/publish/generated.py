"""The command line every generator of a checked-in module shares: write the files a fresh run
makes (those that differ), or with `--check` exit 1 where one is missing or differs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence


def stale(files: Mapping[Path, str]) -> list[Path]:
    """The paths of `files` (path -> the text a fresh run writes) whose file is missing or differs."""
    found = []
    for path, text in files.items():
        try:
            same = path.read_text(encoding="utf-8") == text
        except OSError:
            same = False
        if not same:
            found.append(path)
    return found


def main(argv: Sequence[str] | None, *, command: str, doc: str, fresh: Callable[[], Mapping[Path, str]]) -> int:
    """`command [--check]` over the files `fresh()` makes; `doc`'s first line is its description."""
    parser = argparse.ArgumentParser(prog=command, description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is missing or out of date")
    args = parser.parse_args(argv)
    files = fresh()
    old = stale(files)
    if args.check:
        if old:
            print(f"out of date: {', '.join(path.name for path in old)}; run `{command}`", file=sys.stderr)
            return 1
        print(f"current: {', '.join(path.name for path in files)}")
        return 0
    for path in old:
        path.write_text(files[path], encoding="utf-8")
    print(f"wrote {len(old)} of {len(files)}: {', '.join(path.name for path in files)}")
    return 0
