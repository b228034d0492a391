"""The output formats by name: `render(fmt, report, rules)` picks the renderer (text, json,
sarif, junit, github, concise); `render_failure(fmt, ...)` gives the same format's document for
exit 2 and 3, so a CI step that parses the output never finds an empty or foreign file. What
the formats share is report/shared.py.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from inkling_compat.report.model import Report
from inkling_compat.report.shared import failure_text, level, primary, rules_by_id, said, shown_path  # noqa: F401 - for callers of the formats' API

def render(fmt: str, report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2)
    if fmt == "sarif":
        from inkling_compat.report.sarif import render_sarif

        return render_sarif(report, rules)
    from inkling_compat.report.escape import shown

    if fmt == "junit":
        from inkling_compat.report.junit import render_junit

        return shown(render_junit(report, rules))
    if fmt == "github":
        from inkling_compat.report.github import render_github

        return shown(render_github(report))
    if fmt == "concise":
        from inkling_compat.report.concise import render_concise

        return shown(render_concise(report))
    from inkling_compat.report.text import render_by_adapter, render_text

    return shown(render_by_adapter(report, color=color) if fleet else render_text(report, color=color), keep_colors=color)


def render_failure(fmt: str, code: int, **error: dict[str, Any]) -> str | None:
    """The document of a check that could not run: `input_error` {file, field, reason}
    (exit 2) or `internal_error` {type, message} (exit 3); None for text (stderr says it)."""
    if fmt == "json":
        return json.dumps({"ok": False, "exit_code": code, **error}, indent=2)
    if fmt == "sarif":
        from inkling_compat.report.sarif import sarif_failure

        return sarif_failure(code, **error)
    from inkling_compat.report.escape import shown

    if fmt == "junit":
        from inkling_compat.report.junit import junit_failure

        return shown(junit_failure(code, **error))
    if fmt == "github":
        from inkling_compat.report.github import github_failure

        return shown(github_failure(code, **error))
    return None
