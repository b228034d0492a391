"""The pre-commit hook: check what the commit changes (.pre-commit-hooks.yaml runs this).

    python -m inkling_compat.ci.hook [--config serve.yaml --model ... --adapter-dir ...] FILE...

pre-commit passes the changed files that match the hook's pattern. The checks are the hook's
own arguments (one check, named like `inkling-compat check`'s options: the hook's `args:` in
.pre-commit-config.yaml) or, without `--config`, the `checks` of the project configuration
(`targets.py`). A check runs when a changed file is one of its inputs (or inside one of its
adapter folders); a change to the project configuration itself runs them all. Exit status: the
worst of the checks' (0 none failed, 1 problems, 2 unusable input, 3 a defect of the tool).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from inkling_compat.errors import InputError


class _Usage(Exception):
    """The hook's arguments are unusable: one line, exit 2."""


class _HookParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
    parser = _HookParser(prog="inkling-compat pre-commit hook", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="the server config of the one check (else: the project's `checks`)")
    parser.add_argument("--model")
    parser.add_argument("--platform")
    parser.add_argument("--sglang-version")
    parser.add_argument("--adapter", action="append", default=[])
    parser.add_argument("--adapter-dir", action="append", default=[])
    parser.add_argument("--format", choices=("text", "github"), default="text", help="text (default) or github annotations")
    parser.add_argument("--all", action="store_true", help="run every check, changed or not")
    parser.add_argument("files", nargs="*", type=Path, help="the changed files (pre-commit passes them)")
    return parser


def _targets(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(targets, the project file they came from or None)."""
    from inkling_compat.ci import targets as t

    if args.config:
        # (argv cannot hold a NUL; run() called from Python can)
        if any("\0" in str(p) for p in (args.config, args.model, args.platform, *args.adapter, *args.adapter_dir) if p):
            raise InputError("(hook arguments)", "--config", "a path with a NUL character")
        resolve = lambda p: Path(p).resolve()  # noqa: E731
        target = t.Target(
            config=resolve(args.config),
            model=resolve(args.model) if args.model else None,
            platform=args.platform,
            sglang_version=args.sglang_version,
            adapter=tuple(map(resolve, args.adapter)),
            adapter_dir=tuple(map(resolve, args.adapter_dir)),
        )
        return [target], None
    found = t.find_project_file(Path.cwd())
    if found is None:
        raise InputError(
            "(hook arguments)", "--config",
            f"no check to run: pass --config/--model/--adapter... as the hook's args, or list them under "
            f"`checks:` in {t.PROJECT_FILE} (or [[{t.SECTION}.checks]] in {t.PYPROJECT})",
        )
    if found.is_relative_to(Path.cwd()):  # named as the user would: .inkling-compat.yaml: checks[0]
        found = found.relative_to(Path.cwd())
    return t.read_targets(found), found


def run(argv: Sequence[str]) -> int:
    from inkling_compat import cli

    try:
        args = _parser().parse_args(list(argv))
    except _Usage as exc:
        print(f"inkling-compat hook: error: {exc}", file=sys.stderr)
        return cli.EXIT_INPUT
    try:
        targets, project_file = _targets(args)
    except InputError as exc:
        print(f"inkling-compat hook: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return cli.EXIT_INPUT
    except Exception as exc:  # never a traceback for the user (cli.main guards each check likewise)
        print(f"inkling-compat hook: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return cli.EXIT_INTERNAL
    changed = [p.resolve() for p in args.files]
    everything = args.all or (project_file is not None and project_file.resolve() in changed)
    chosen = [x for x in targets if everything or x.touched_by(changed)]
    worst = cli.EXIT_OK
    for target in chosen:
        command = _shown(["check", *target.argv(), "--format", args.format])
        if len(chosen) > 1 or target.origin != "(command line)":
            from inkling_compat.inputs import secrets

            print(secrets.mask(f"== {target.origin}: inkling-compat {' '.join(command)}", secrets.in_words(command)), flush=True)
        code = cli.main(command)
        sys.stdout.flush()
        worst = max(worst, code)
    return worst


def _shown(command: list[str]) -> list[str]:
    """Paths under the working folder as relative ones: what a user would type."""
    cwd = Path.cwd()
    out = []
    for item in command:
        path = Path(item)
        out.append(str(path.relative_to(cwd)) if path.is_absolute() and path.is_relative_to(cwd) else item)
    return out


def main() -> int:
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
