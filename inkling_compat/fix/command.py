"""`check --fix`, `check --diff` and `--unsafe-fixes` on the command line: the checks of
`check` (with --select/--ignore applied, a fleet with --adapter-dir) run through
`apply_fixes`, and the report says what was fixed and what remains.

Text: a `fixed: N` section (each fix, its safety, its edits and line), the fixes not applied
with the reason, then the report of the config as it now is. JSON: the report with a `fixes`
list (each with `applied` true/false) and, for --diff, the `diff`. `--diff` prints the diff
(and the fixes it would make) and writes nothing; it exits 1 when there is a change to show.
With `--config -`, `--fix` prints the fixed document on standard output and the report on
stderr (or in --output).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from inkling_compat.fix.apply import FixResult, apply_fixes


def run_fix_command(args: Any, selection: Any, rules: Any, emit: Callable[[str, str | None, str], None]) -> int:
    from inkling_compat.engine.selection import apply
    from inkling_compat.report.outputs import render

    def run(source: Any) -> Any:
        if args.adapter_dir:
            from inkling_compat.fleet import check_fleet

            report = check_fleet(source, args.adapter_dir, args.adapter, model=args.model, platform=args.platform, sglang_version=args.sglang_version)
        else:
            from inkling_compat.engine.evaluate import check

            report = check(source, args.adapter or None, model=args.model, platform=args.platform, sglang_version=args.sglang_version)
        return apply(report, selection)

    result = apply_fixes(args.config, run=run, unsafe=args.unsafe_fixes, write=not args.diff)
    from inkling_compat.inputs import stdin
    from inkling_compat.report.gate import exit_status, gated, use_color

    if stdin.is_stdin(args.config) and not args.diff:
        # `--config - --fix`: standard output is the fixed document (a filter, as formatters
        # are); the report goes to --output, or to stderr.
        from inkling_compat.output_stream import write_stdout

        after = result.after or ""
        write_stdout(after[:-1] if after.endswith("\n") else after, "text")
        emit = _to_stderr(emit)

    report = gated(result.report, args.fail_on, args.strict)
    color = args.output is None and use_color(args.color, sys.stdout.isatty())
    if args.format == "json":
        document = json.loads(render("json", report, rules))
        document["fixes"] = [f.to_dict() for f in result.fixes]
        if args.diff:
            document["diff"] = result.diff
            document["rewrite_diff"] = result.rewrite_diff
        emit(json.dumps(document, indent=2), args.output, "json")
    elif args.format == "text":
        parts = [result.diff.rstrip("\n")] if args.diff and result.diff else []
        parts.append(summary(result, would=args.diff))
        if not args.diff:
            parts.append(render("text", report, rules, fleet=bool(args.adapter_dir), color=color))
        emit("\n".join(p for p in parts if p), args.output, "text")
    else:  # sarif / junit / github: the document is the report; the fixes go to stderr
        if args.diff and result.diff:
            print(result.diff, end="", file=sys.stderr)
        print(summary(result, would=args.diff), file=sys.stderr)
        emit(render(args.format, report, rules, fleet=bool(args.adapter_dir), color=False), args.output, args.format)
    if args.diff and result.diff and not args.exit_zero:
        return 1  # a change to show fails a gate, as `ruff --diff` does
    return exit_status(report, args.exit_zero)


def _to_stderr(emit: Callable[[str, str | None, str], None]) -> Callable[[str, str | None, str], None]:
    def to_stderr(text: str, output: str | None, fmt: str = "text") -> None:
        if output is not None:
            emit(text, output, fmt)
        elif text:
            print(text, file=sys.stderr)

    return to_stderr


def summary(result: FixResult, would: bool = False) -> str:
    """The `fixed: N` section (`would fix: N` for --diff) and the fixes not applied, with why."""
    applied, remaining = result.applied, result.remaining
    lines = [f"{'would fix' if would else 'fixed'}: {len(applied)}" + (f" ({applied[0].file})" if applied and applied[0].file else "")]
    for fix in applied:
        where = f" (line {fix.line})" if fix.line else ""
        lines.append(f"  {fix.rule_id}{_who(fix)} ({fix.safety}){where}: " + "; ".join(str(e) for e in fix.edits))
    if remaining:
        lines.append(f"not fixed: {len(remaining)}")
        for fix in remaining:
            edits = "; ".join(str(e) for e in fix.edits)
            lines.append(f"  {fix.rule_id}{_who(fix)} ({fix.safety}){': ' + edits if edits else ''} - {fix.reason or 'not applied'}")
    if result.rewrite_diff:
        lines.append("the change the editor could not make in place (as the file rewritten whole; not applied):")
        lines.append(result.rewrite_diff.rstrip("\n"))
    return "\n".join(lines)


def _who(fix: Any) -> str:
    return f" [{fix.adapter}]" if fix.adapter else ""


def launch_arity() -> dict[str, str]:
    """What each sglang flag takes, by dest, from sglang 0.5.23's argument table (a flag alone,
    one value, or a list), for editing a launch command's words."""
    from inkling_compat.fix.argv_edit import FLAG, MANY, ONE
    from inkling_compat.inputs.argument_table import table

    out: dict[str, str] = {}
    for row in table()["arguments"]:
        if row["action"] in ("store_true", "boolean_optional", "DeprecatedStoreTrueAction"):
            out[row["dest"]] = FLAG
        elif row["nargs"] in ("+", "*") or row["action"] == "LoRAPathAction":
            out[row["dest"]] = MANY
        elif row["action"] != "help":
            out[row["dest"]] = ONE
    return out


def run_fix_launch(args: Any, words: list[str], selection: Any, rules: Any, emit: Callable[[str, str | None, str], None]) -> int:
    """`--fix` / `--diff` on a launch command: the command checked, fixed and checked again as
    words; the corrected command is printed (a launch file is never rewritten: its shell form
    around the command is the user's)."""
    from inkling_compat.engine.evaluate import check
    from inkling_compat.engine.selection import apply
    from inkling_compat.fix.apply import apply_fixes_argv
    from inkling_compat.inputs.launch import parse_launch
    from inkling_compat.report.gate import exit_status, gated, use_color
    from inkling_compat.report.outputs import render

    def run(tokens: tuple[str, ...]) -> Any:
        report = check(parse_launch(list(tokens)), args.adapter or None, model=args.model, platform=args.platform, sglang_version=args.sglang_version)
        return apply(report, selection)

    result = apply_fixes_argv(words, run=run, arity=launch_arity(), unsafe=args.unsafe_fixes)
    report = gated(result.report, args.fail_on, args.strict)
    color = args.output is None and use_color(args.color, sys.stdout.isatty())
    if args.format == "json":
        document = json.loads(render("json", report, rules))
        document["fixes"] = [f.to_dict() for f in result.fixes]
        document["command"] = result.after
        if args.diff:
            document["diff"] = result.diff
        emit(json.dumps(document, indent=2), args.output, "json")
    else:
        parts = [result.diff.rstrip("\n")] if args.diff and result.diff else []
        parts.append(summary(result, would=args.diff))
        if not args.diff:
            parts.append("corrected command: " + result.after)
            if args.format == "text":
                parts.append(render("text", report, rules, color=color))
        emit("\n".join(p for p in parts if p), args.output, "text")
    if args.diff and result.diff and not args.exit_zero:
        return 1
    return exit_status(report, args.exit_zero)
