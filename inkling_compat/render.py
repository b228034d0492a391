"""Text rendering of a report for terminals (colour only when asked, i.e. on a TTY)."""

from __future__ import annotations

from inkling_compat.report import Report

_COLORS = {"error": "\033[31m", "runtime": "\033[35m", "warning": "\033[33m", "ok": "\033[32m", "dim": "\033[2m"}
_RESET = "\033[0m"


def _paint(text: str, color: str, enabled: bool) -> str:
    return f"{_COLORS[color]}{text}{_RESET}" if enabled else text


def render_text(report: Report, color: bool = False) -> str:
    lines = []
    for given, value in report.given_facts.items():
        lines.append(_paint(f"note: fact {given}={value!r} was given, not derived", "dim", color))
    seen_messages: set[tuple[str | None, str]] = set()
    for number, problem in enumerate(report.problems, 1):
        where = f" [{problem.adapter}]" if problem.adapter else ""
        head = f"{problem.severity}{where} {problem.rule_id} ({problem.origin}, {problem.stage})"
        lines.append(_paint(head, problem.severity, color))
        key = (problem.adapter, problem.message)
        if key in seen_messages:
            lines.append(f"  same {problem.error_class} as above; this part: {problem.fragment}")
        else:
            lines.append(f"  {problem.error_class}: {problem.message}")
            seen_messages.add(key)
        if problem.field_paths:
            lines.append(_paint(f"  fields: {', '.join(problem.field_paths)}", "dim", color))
        for fix in problem.fixes:
            lines.append(f"  fix: {fix}")
    errors, warnings = len(report.errors), len(report.warnings)
    if report.ok:
        summary = f"ok: no errors ({warnings} warning(s)), {report.rules_evaluated} checks, sglang {report.sglang_version}"
        lines.append(_paint(summary, "ok", color))
    else:
        summary = f"{errors} error(s), {warnings} warning(s); sglang {report.sglang_version} would first raise:"
        lines.append(_paint(summary, "error", color))
        lines.append(f"  {report.first.error_class}: {report.first.message}")
    return "\n".join(lines)
