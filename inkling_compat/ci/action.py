"""The GitHub Action's check step (action.yml runs `python -m inkling_compat.ci.action` in the
action's own virtual environment).

Reads the action's inputs from the environment action.yml sets (INKLING_CONFIG, INKLING_MODEL,
INKLING_PLATFORM, INKLING_ADAPTER and INKLING_ADAPTER_DIR one path per line, INKLING_ARGS shell
words), runs `inkling-compat check` once and renders that one report three ways: SARIF for code
scanning (INKLING_SARIF, default $RUNNER_TEMP/inkling-compat.sarif), workflow annotations on
the pull request's diff (stdout), and a job summary ($GITHUB_STEP_SUMMARY: the counts and the
first problems, since GitHub shows at most 10 annotations per step).

Writes the outputs `sarif`, `exit-code` and `upload` to $GITHUB_OUTPUT. `upload` is "true" when
the SARIF upload step should run: the input upload-sarif is "true" and the token can write
security events, which a pull request from a fork's token cannot (INKLING_FORK, from
github.event.pull_request.head.repo.fork): then the upload is skipped with a notice, and the
annotations and the summary still say everything. Exits with the check's status (0, 1
problems, 2 unusable input, 3 a defect of the tool), so the job fails on errors.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, Mapping


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


def _check_once(args: list[str], sarif: Path) -> tuple[int, Any, str]:
    """(exit status, the report or None, the one-line error): the check run once, its SARIF
    written and its annotations printed; on exit 2/3 the formats' failure documents instead."""
    from inkling_compat import cli
    from inkling_compat.errors import InputError
    from inkling_compat.output_stream import masked
    from inkling_compat.report.outputs import render, render_failure

    try:
        parsed = cli._parser().parse_args(["check", *args])
        report, rules = cli.check_report(parsed)
    except (cli.UsageError, InputError) as exc:
        error = {"input_error": {"file": getattr(exc, "file", "(command line)"), "field": getattr(exc, "field", "(arguments)"), "reason": getattr(exc, "reason", str(exc))}}
        code, line = cli.EXIT_INPUT, f"inkling-compat: error: {exc}"
    except Exception as exc:  # noqa: BLE001 - a broken rule file or a defect: exit 3, never a traceback
        error = {"internal_error": {"type": type(exc).__name__, "message": str(exc)}}
        code, line = cli.EXIT_INTERNAL, f"inkling-compat: internal error: {type(exc).__name__}: {exc}"
    else:
        from inkling_compat.report.gate import exit_status

        if isinstance(report, cli.DeploymentChecked):  # a deployment file: each command under its place
            from inkling_compat.report.deployment import render_deployment

            sarif.write_text(masked(render_deployment("sarif", report.deployment, report.reports, rules)) + "\n", encoding="utf-8")
            print(masked(render_deployment("github", report.deployment, report.reports, rules)), end="")
            worst = max((exit_status(r, parsed.exit_zero) for _, r in report.reports), default=0)
            return worst, report.reports[-1][1] if worst == 0 else next(r for _, r in report.reports if exit_status(r, parsed.exit_zero)), ""
        sarif.write_text(masked(render("sarif", report, rules)) + "\n", encoding="utf-8")
        annotations = masked(render("github", report, rules))
        if annotations:
            print(annotations)
        return exit_status(report, parsed.exit_zero), report, ""
    line = masked(" ".join(line.split()))
    print(line, file=sys.stderr)
    sarif.write_text(masked(render_failure("sarif", code, **error) or "") + "\n", encoding="utf-8")
    print(masked(render_failure("github", code, **error)))
    return code, None, line


def run(env: Mapping[str, str]) -> int:
    from inkling_compat import cli
    from inkling_compat.ci.summary import failure_markdown, summary_markdown
    from inkling_compat.output_stream import masked

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
    code, report, error_line = _check_once(args, sarif)
    sys.stdout.flush()
    upload = env.get("INKLING_UPLOAD_SARIF", "true").strip().lower() == "true" and sarif.is_file()
    notes: tuple[str, ...] = ()
    if upload and env.get("INKLING_FORK", "").strip().lower() == "true":
        upload = False
        note = "SARIF upload skipped: a pull request from a fork gets a token that cannot write security events; the annotations and this summary hold the report"
        print(f"::notice title=inkling-compat::{note}")
        notes = (note,)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(masked(summary_markdown(report, code, notes) if report is not None else failure_markdown(code, error_line)))
    output = env.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as handle:
            handle.write(f"sarif={sarif if sarif.is_file() else ''}\nexit-code={code}\nupload={'true' if upload else 'false'}\n")
    return code


def main() -> int:
    return run(os.environ)


if __name__ == "__main__":
    sys.exit(main())
