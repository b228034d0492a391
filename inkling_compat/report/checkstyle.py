"""`--format checkstyle`: Checkstyle's XML report (checkstyle-report-1.0.0.xsd), which Jenkins
(Warnings Next Generation), reviewdog (`-f=checkstyle`), TeamCity, SonarQube's importers and many
editors read: a `<file name="...">` per file with an `<error line column severity message
source>` per problem at its first stated field (report/shared.primary; a field that is not in
the file: no line), `source` the rule id, `severity` `error` (an error or a predicted crash) or
`warning`. A problem no file holds is under `<file name=".">`, as are, under --strict, the reasons
rules were not checked (source `inkling-compat.strict`). At exit 2 and 3 the document holds one
error naming the input that could not be used. A problem left out by --ignore is no error (SARIF
and JUnit list it with its reason).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence
from xml.etree import ElementTree as ET

from inkling_compat.report.model import Report
from inkling_compat.report.shared import failure_text, level, not_checked_failures, primary, said_where, shown_path

NO_FILE = "."


def _error(files: dict[str, ET.Element], root: ET.Element, file: str | None, line: int | None, column: int | None, severity: str, message: str, source: str) -> None:
    name = shown_path(file) if file else NO_FILE
    if name not in files:
        files[name] = ET.SubElement(root, "file", {"name": name})
    attributes = {"severity": severity, "message": " ".join(message.split()), "source": source}
    if line is not None and line >= 1:
        attributes = {"line": str(line), **({"column": str(column)} if column else {}), **attributes}
    ET.SubElement(files[name], "error", attributes)


def _add(root: ET.Element, files: dict[str, ET.Element], report: Report, place: str = "") -> None:
    for problem in report.problems:
        where: Any = primary(problem)
        text = said_where(problem, place)
        file, line, column = (where.file, where.line, where.column) if where is not None else (None, None, None)
        _error(files, root, file, line, column, level(problem.severity), text, problem.rule_id)
    for text, _ in not_checked_failures(report):  # --strict fails on these: exit 1 says why
        _error(files, root, None, None, None, "error", f"{place}: {text}" if place else text, "inkling-compat.strict")


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_checkstyle(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    root = ET.Element("checkstyle")
    _add(root, {}, report)
    return _xml(root)


def checkstyle_deployment(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    """One document for every command of a deployment file, each problem's text headed by its place."""
    root = ET.Element("checkstyle")
    files: dict[str, ET.Element] = {}
    for command, report in checked:
        _add(root, files, report, command.place)
    return _xml(root)


def checkstyle_failure(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> str:
    where, text = failure_text(code, input_error, internal_error)
    root = ET.Element("checkstyle")
    file, line, column = (where.file, where.line, where.column) if where is not None else (None, None, None)
    _error({}, root, file, line, column, "error", text, "inkling-compat.input-error" if code == 2 else "inkling-compat.internal-error")
    return _xml(root)
