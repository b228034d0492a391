"""`--format github`: GitHub Actions workflow commands, one annotation per problem.

`::error file=serve.yaml,line=5,col=1,title=<rule id>::<message>` (`::warning` for
warnings) at the problem's first stated field (report/shared.primary); a field that is not
in the file is annotated on the file itself. The message ends with the rule's page. Values
are escaped as the runner's toolkit escapes them (`%`, CR, LF; in properties also `:` `,`).
Under --strict, each reason rules were not checked is an `::error` titled
`inkling-compat --strict` (a problem left out by --ignore is not annotated: SARIF and JUnit
list it with its reason).
"""

from __future__ import annotations

from typing import Any, Iterable

from inkling_compat.report.urls import rule_url
from inkling_compat.report.model import Report
from inkling_compat.report.shared import level, not_checked_failures, primary, said, shown_path


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, *, file: str | None = None, line: int | None = None, col: int | None = None, title: str | None = None) -> str:
    props = []
    if file:
        props.append(f"file={escape_property(shown_path(file))}")
        if line is not None:
            props.append(f"line={line}")
            if col is not None:
                props.append(f"col={col}")
    if title:
        props.append(f"title={escape_property(title)}")
    return f"::{kind} {','.join(props)}::{escape_data(message)}" if props else f"::{kind}::{escape_data(message)}"


def render_github(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    lines = []
    for problem in report.problems:
        where: Any = primary(problem)
        text = said(problem)
        if problem.adapter:
            text = f"[{problem.adapter}] {text}"
        if where is not None and where.line is None and where.field:
            text += f"\n({where.field} is not in the file: its default applies)"
        elif where is not None and where.tensor:
            text += f"\n(tensor {where.tensor})"
        text += f"\nSee {rule_url(problem.rule_id)}"
        lines.append(
            command(
                level(problem.severity),
                text,
                file=where.file if where is not None else None,
                line=where.line if where is not None else None,
                col=where.column if where is not None else None,
                title=problem.rule_id,
            )
        )
    for text, _ in not_checked_failures(report):  # --strict fails on these: exit 1 says why
        lines.append(command("error", text, title="inkling-compat --strict"))
    return "\n".join(lines)


def github_failure(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> str:
    from inkling_compat.report.shared import failure_text

    where, text = failure_text(code, input_error, internal_error)
    file, line, col = (where.file, where.line, where.column) if where is not None else (None, None, None)
    return command("error", text, file=file, line=line, col=col, title="inkling-compat input error" if code == 2 else "inkling-compat internal error")
