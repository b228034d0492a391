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
    from inkling_compat.report.gate import exit_status, gated

    if stdin.is_stdin(args.config) and not args.diff:
        # `--config - --fix`: standard output is the fixed document (a filter, as formatters
        # are); the report goes to --output, or to stderr.
        from inkling_compat.output_stream import write_stdout

        after = result.after or ""
        write_stdout(after[:-1] if after.endswith("\n") else after, "text")
        emit = _to_stderr(emit)

    report = gated(result.report, args.fail_on, args.strict)
    _emit_result(args, result, report, rules, emit, file=None if stdin.is_stdin(args.config) else args.config)
    if args.diff and result.diff and not args.exit_zero:
        return 1  # a change to show fails a gate, as `ruff --diff` does
    return exit_status(report, args.exit_zero)


def _emit_result(args: Any, result: FixResult, report: Any, rules: Any, emit: Callable[[str, str | None, str], None], file: str | None = None, command: bool = False) -> None:
    """The fix command's output in `args.format`: text (diff, `fixed: N`, the report), JSON
    (the report with `fixes`, `diff`, a launch command's `command`), SARIF (the report, each
    result with the `fixes` made or proposed for it; with a config file, the file's change as a
    replacement), JUnit and GitHub (the report; diff and summary on stderr). Every word that
    came from an input is escaped as the format needs (report/escape.py)."""
    from inkling_compat.report.escape import shown
    from inkling_compat.report.gate import use_color
    from inkling_compat.report.outputs import render

    color = args.output is None and use_color(args.color, sys.stdout.isatty())
    fleet = bool(getattr(args, "adapter_dir", None))
    if args.format == "json":
        document = json.loads(render("json", report, rules))
        document["fixes"] = [f.to_dict() for f in result.fixes]
        if command:
            document["command"] = result.after
        if args.diff:
            document["diff"] = result.diff
            if not command:
                document["rewrite_diff"] = result.rewrite_diff
        emit(json.dumps(document, indent=2), args.output, "json")
        return
    parts = [result.diff.rstrip("\n")] if args.diff and result.diff else []
    parts.append(summary(result, would=args.diff))
    if command and not args.diff:
        parts.append("corrected command: " + (result.after or ""))
    if args.format == "text":
        if not args.diff:
            parts.append(render("text", report, rules, fleet=fleet, color=color))
        emit(shown("\n".join(p for p in parts if p), keep_colors=color), args.output, "text")
        return
    # sarif / junit / github: the document is the report; the fixes go to stderr
    print(shown("\n".join(p for p in parts if p)), file=sys.stderr)
    document = render(args.format, report, rules, fleet=fleet, color=False)
    if args.format == "sarif":
        document = json.dumps(_sarif_fixes(json.loads(document), result, file, command), indent=2)
    emit(document, args.output, args.format)


def _sarif_fixes(log: dict[str, Any], result: FixResult, file: str | None, command: bool) -> dict[str, Any]:
    """SARIF `fixes` on each result a fix was made or proposed for; the run's properties keep
    every fix (and a launch command's corrected words)."""
    run = log["runs"][0]
    change = None
    if file is not None and result.before is not None and result.after is not None and result.after != result.before:
        from inkling_compat.report.sarif import _uri

        change = {
            "artifactLocation": {"uri": _uri(file)},
            "replacements": [{"deletedRegion": {"charOffset": 0, "charLength": len(result.before)}, "insertedContent": {"text": result.after}}],
        }
    by_rule: dict[tuple[str, Any], list[Any]] = {}
    for fix in result.fixes:
        by_rule.setdefault((fix.rule_id, fix.adapter), []).append(fix)
    for item in run.get("results", []):
        fixes = by_rule.get((item["ruleId"], item.get("properties", {}).get("adapter")))
        if not fixes:
            continue
        entries = []
        for fix in fixes:
            text = f"{fix.description} ({fix.safety})" + (f": not applied: {fix.reason}" if fix.reason else "")
            entry: dict[str, Any] = {"description": {"text": text}, "artifactChanges": [change] if change is not None else []}
            entries.append(entry)
        if change is not None:
            item["fixes"] = entries
        else:
            item.setdefault("properties", {})["fixes"] = [e["description"]["text"] for e in entries]
    properties = run.setdefault("properties", {})
    properties["fixes"] = [f.to_dict() for f in result.fixes]
    if command:
        properties["command"] = result.after
    properties["diff"] = result.diff
    return log


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


def run_fix_launch(args: Any, words: list[str], selection: Any, rules: Any, emit: Callable[[str, str | None, str], None], unknown_text: dict[str, str] | None = None) -> int:
    """`--fix` / `--diff` on a launch command: the command checked, fixed and checked again as
    words; the corrected command is printed (a launch file is never rewritten: its shell form
    around the command is the user's)."""
    from inkling_compat.engine.evaluate import check
    from inkling_compat.engine.selection import apply
    from inkling_compat.fix.apply import apply_fixes_argv
    from inkling_compat.inputs.launch import parse_launch, unknown_by_text
    from inkling_compat.report.gate import exit_status, gated

    def run(tokens: tuple[str, ...]) -> Any:  # (`unknown_text`: a launch file's words it does not define)
        launch = parse_launch(list(tokens), unknown=unknown_by_text(tokens, unknown_text or {}))
        report = check(launch, args.adapter or None, model=args.model, platform=args.platform, sglang_version=args.sglang_version)
        return apply(report, selection)

    result = apply_fixes_argv(words, run=run, arity=launch_arity(), unsafe=args.unsafe_fixes)
    report = gated(result.report, args.fail_on, args.strict)
    _emit_result(args, result, report, rules, emit, command=True)
    if args.diff and result.diff and not args.exit_zero:
        return 1
    return exit_status(report, args.exit_zero)
