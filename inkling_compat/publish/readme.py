"""README.md's figures written from the code: the rule count, and the output under each
console block that runs `inkling-compat check` (what the command prints now, run from the
repository root with the environment the block names).

    python -m inkling_compat.publish.readme            # rewrite README.md where it is stale
    python -m inkling_compat.publish.readme --check    # exit 1 if README.md is stale

tests/test_readme.py compares the same figures and outputs, and says to run `make generate`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COUNT = re.compile(r"^\d+(?= rules, one YAML file each)", re.M)
_BLOCK = re.compile(r"```console\n(\$ [^\n]*)\n(.*?)```", re.S)
_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=.*")


def check_command(line: str) -> tuple[dict[str, str], list[str]] | None:
    """A console block's first line (`$ [NAME=value ...] inkling-compat check ...`) as the
    environment it sets and the CLI's arguments; None for any other command."""
    words = shlex.split(line[2:])
    env = {}
    while words and _ASSIGNMENT.fullmatch(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return (env, words[1:]) if words[:2] == ["inkling-compat", "check"] else None


def printed(env: dict[str, str], args: list[str]) -> str:
    """What `inkling-compat <args>` prints, without colour, from the repository root."""
    done = subprocess.run(
        [sys.executable, "-m", "inkling_compat.cli", *args, "--color", "never"],
        cwd=ROOT, env=dict(os.environ, **env), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def render(text: str) -> str:
    """`text` (README.md) with its figures and check outputs as the code gives them now."""
    from inkling_compat.engine.rule_load import rule_files

    text = COUNT.sub(str(len(rule_files())), text)

    def block(found: re.Match[str]) -> str:
        command = check_command(found.group(1))
        if command is None:
            return found.group(0)
        return f"```console\n{found.group(1)}\n{printed(*command).rstrip(chr(10))}\n```"

    return _BLOCK.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    old = README.read_text(encoding="utf-8")
    new = render(old)
    if "--check" in args:
        if new != old:
            print("README.md is stale: run `make generate`", file=sys.stderr)
            return 1
        return 0
    if new != old:
        README.write_text(new, encoding="utf-8")
        print(f"wrote {README}")
    else:
        print(f"{README} already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
