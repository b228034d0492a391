"""`python -m inkling_compat ...`: the `inkling-compat` command, for environments without the
console script on PATH (the same parser, exit codes and output)."""

import sys

from inkling_compat.cli import command

if __name__ == "__main__":
    sys.exit(command())
