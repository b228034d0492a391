"""`--format gitlab`: a GitLab Code Quality report (`artifacts:reports:codequality`), the JSON
array of issues GitLab shows in a merge request's widget and diff: per problem its `description`
(the problem's one-line text), `check_name` (the rule id), `severity` (`critical` for an error or
a predicted crash, `minor` for a warning), `location` (`path` relative to the checkout, the first
stated line in `lines.begin`, line 1 where the field is not in the file, `.` where no file holds
it) and a `fingerprint` GitLab compares between the base and head pipelines: a hash of the rule,
the adapter, the file and the field, not the line, so an unchanged finding on a moved line is not
"new". The format is GitLab's subset of the Code Climate issue spec
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format).
Under --strict each reason rules were not checked is an issue `inkling-compat --strict`; at
exit 2 and 3 the array holds one `blocker` naming the input that could not be used. A problem
left out by --ignore is no issue (SARIF and JUnit list it with its reason).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Sequence

from inkling_compat.report.model import Problem, Report
from inkling_compat.report.shared import failure_text, not_checked_failures, primary, said_where, shown_path

SEVERITY = {"error": "critical", "runtime": "critical", "warning": "minor"}
NO_FILE = "."


def _issue(check_name: str, description: str, severity: str, file: str | None, line: int | None, *identity: Any) -> dict[str, Any]:
    path = shown_path(file) if file else NO_FILE
    key = json.dumps([check_name, path, *identity], default=str)
    return {
        "description": " ".join(description.split()),  # one line, whatever the message holds
        "check_name": check_name,
        "fingerprint": hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest(),
        "severity": severity,
        "location": {"path": path, "lines": {"begin": line if line is not None and line >= 1 else 1}},
    }


def _problem_issue(problem: Problem, place: str = "") -> dict[str, Any]:
    where: Any = primary(problem)
    text = said_where(problem, place)
    file, line, field = (where.file, where.line, where.field) if where is not None else (None, None, None)
    return _issue(problem.rule_id, text, SEVERITY.get(problem.severity, "critical"), file, line, problem.adapter_index, field, place)


def issues(report: Report, place: str = "") -> list[dict[str, Any]]:
    out = [_problem_issue(problem, place) for problem in report.problems]
    for text, ids in not_checked_failures(report):  # --strict fails on these: exit 1 says why
        out.append(_issue("inkling-compat --strict", f"{place}: {text}" if place else text, "major", None, None, sorted(ids), place))
    return _unique(out)


def _unique(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GitLab shows only the first issue of a fingerprint: a second one (the same rule on the
    same field, reported twice) gets its ordinal in the hash."""
    seen: dict[str, int] = {}
    for issue in found:
        fingerprint = issue["fingerprint"]
        if fingerprint in seen:
            seen[fingerprint] += 1
            issue["fingerprint"] = hashlib.sha256(f"{fingerprint}/{seen[fingerprint]}".encode()).hexdigest()
        else:
            seen[fingerprint] = 0
    return found


def render_gitlab(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    return json.dumps(issues(report), indent=2)


def gitlab_deployment(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    """One array for every command of a deployment file, each issue's text headed by its place."""
    return json.dumps(_unique([issue for command, report in checked for issue in issues(report, command.place)]), indent=2)


def gitlab_failure(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> str:
    where, text = failure_text(code, input_error, internal_error)
    name = "inkling-compat input error" if code == 2 else "inkling-compat internal error"
    file, line = (where.file, where.line) if where is not None else (None, None)
    return json.dumps([_issue(name, text, "blocker", file, line)], indent=2)
