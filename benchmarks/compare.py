"""Before/after in one run: the same measurement on an earlier revision and on the working tree.

`bench_check.py --before REV` and `bench_fleet.py --before REV` use this. The earlier revision
is checked out with `git worktree add --detach` into a folder of its own under the system
temp directory (the working tree is never checked out or changed), and each side runs in a
fresh interpreter with `PYTHONPATH=<tree>` and `-P`, so neither sees the other's modules.
Sides alternate, so a change in machine load hits both.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
# Folders the installed package maps into itself (pyproject's package-dir); in a bare
# worktree they are linked in so the code under test finds its own rules, not the working tree's.
_MAPPED = ("rules", "schemas", "kernels")


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=cwd).stdout.strip()


def commit_of_working_tree() -> str:
    """HEAD's short hash, with "+dirty" when tracked files differ from it."""
    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def prepare_tree(rev: str) -> tuple[Path, str]:
    """A worktree of `rev` (created once, reused), ready to import; (folder, short hash)."""
    short = git("rev-parse", "--short", f"{rev}^{{commit}}")
    folder = Path(tempfile.gettempdir()) / f"inkling-compat-before-{short}"
    if not (folder / ".git").exists():
        git("worktree", "add", "--detach", str(folder), short)
    elif git("rev-parse", "--short", "HEAD", cwd=folder) != short:
        raise SystemExit(f"{folder} exists but is not at {short}; remove it with `git worktree remove {folder}`")
    for name in _MAPPED:
        link = folder / "inkling_compat" / name
        if (folder / name).is_dir() and not link.exists():
            link.symlink_to(folder / name, target_is_directory=True)
    return folder, short


def side_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONSTARTUP", None)
    return env


def run_side(tree: Path, script: str, args: list[str], timeout: float = 1800) -> dict[str, Any]:
    """Run `benchmarks/<script>` --side ... against the code in `tree`; its last stdout line is JSON."""
    cmd = [sys.executable, "-P", str(HERE / script), "--side", *args]
    proc = subprocess.run(cmd, env=side_env(tree), cwd=str(tree), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"side run failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli_command(*args: str) -> list[str]:
    """What the `inkling-compat` console script runs, for whichever tree PYTHONPATH names."""
    return [sys.executable, "-P", "-c", "import sys; from inkling_compat.cli import main; sys.exit(main())", *args]


def environment() -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "commit": commit_of_working_tree(),
        "load_average_at_start": list(os.getloadavg()),
    }


def ratio(before: float | None, after: float | None) -> str:
    if not before or not after:
        return ""
    return f"{before / after:.2f}x"


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("measure", "before", "after", "before/after")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
