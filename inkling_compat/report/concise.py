"""`--format concise`: one line per problem, `path:line:col: rule-id message`, as compilers and
linters print them (editors and `grep` read it). The place is the problem's primary one
(report/shared.primary); a problem placed in no file reads `-: rule-id message`, one whose
field is not in the file `path: rule-id message`. Warnings say so before the message; under
--strict, each reason rules were not checked is a line `-: --strict N rule(s) not checked (...)`."""

from __future__ import annotations

from typing import Any, Iterable

from inkling_compat.report.model import Problem, Report
from inkling_compat.report.shared import not_checked_failures, primary, said, shown_path


def place(problem: Problem) -> str:
    where: Any = primary(problem)
    if where is None:
        return "-"
    out = shown_path(where.file)
    if where.line is not None:
        out += f":{where.line}:{where.column or 1}"
    return out


def line(problem: Problem) -> str:
    text = " ".join(said(problem).split())  # one line, whatever the message holds
    if problem.adapter:
        text = f"[{problem.adapter}] {text}"
    kind = "warning: " if problem.severity == "warning" else ""
    return f"{place(problem)}: {problem.rule_id} {kind}{text}"


def render_concise(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    lines = [line(p) for p in report.problems]
    lines += [f"-: --strict {text}" for text, _ in not_checked_failures(report)]  # (exit 1 says why)
    return "\n".join(lines)
