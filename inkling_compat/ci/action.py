"""The GitHub Action's check step (action.yml runs `python -m inkling_compat.ci.action`).

Reads the action's inputs from the environment action.yml sets (INKLING_CONFIG, INKLING_MODEL,
INKLING_PLATFORM, INKLING_ADAPTER and INKLING_ADAPTER_DIR one path per line, INKLING_ARGS shell
words), then runs `inkling-compat check` twice with the same inputs: `--format sarif --output
FILE` for code scanning (INKLING_SARIF, default $RUNNER_TEMP/inkling-compat.sarif) and `--format
github` for the workflow annotations on the pull request's diff. Writes the outputs `sarif` and
`exit-code` to $GITHUB_OUTPUT and exits with the check's status (0, 1 problems, 2 unusable input,
3 a defect of the tool), so the job fails on errors while the SARIF upload step still runs.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Mapping


def check_arguments(env: Mapping[str, str]) -> list[str]:
    """`inkling-compat check`'s arguments from the action's inputs (empty inputs are left out)."""
    args: list[str] = []
    config = env.get("INKLING_CONFIG", "").strip()
    if config:
        args += ["--config", config]
    for name, flag in (("INKLING_MODEL", "--model"), ("INKLING_PLATFORM", "--platform")):
        value = env.get(name, "").strip()
        if value:
            args += [flag, value]
    for name, flag in (("INKLING_ADAPTER", "--adapter"), ("INKLING_ADAPTER_DIR", "--adapter-dir")):
        for line in env.get(name, "").splitlines():
            if line.strip():
                args += [flag, line.strip()]
    return args + shlex.split(env.get("INKLING_ARGS", ""))


def run(env: Mapping[str, str]) -> int:
    from inkling_compat import cli

    try:
        args = check_arguments(env)
    except ValueError as exc:  # shlex: an unclosed quote in `args`
        print(f"::error title=inkling-compat::input 'args' is not valid shell words: {exc}")
        return cli.EXIT_INPUT
    if "--config" not in args:
        print("::error title=inkling-compat::the action needs its 'config' input (the server config to check)")
        return cli.EXIT_INPUT
    sarif = Path(env.get("INKLING_SARIF") or Path(env.get("RUNNER_TEMP") or ".") / "inkling-compat.sarif")
    sarif.parent.mkdir(parents=True, exist_ok=True)
    code = cli.main(["check", *args, "--format", "sarif", "--output", str(sarif)])
    sys.stdout.flush()
    annotated = cli.main(["check", *args, "--format", "github"])
    sys.stdout.flush()
    code = max(code, annotated)  # (the same inputs: the same status, unless a file changed between)
    output = env.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as handle:
            handle.write(f"sarif={sarif if sarif.is_file() else ''}\nexit-code={code}\n")
    return code


def main() -> int:
    return run(os.environ)


if __name__ == "__main__":
    sys.exit(main())
