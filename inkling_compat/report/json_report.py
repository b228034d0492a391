"""`--format json`: the report as one JSON document (Report.to_dict), and at exit 2/3
{"ok": false, "exit_code", "input_error": {file, field, reason}} or {..., "internal_error":
{type, message}}."""

from __future__ import annotations

import json
from typing import Any, Iterable

from inkling_compat.report.model import Report


def render_json(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2)


def json_failure(code: int, **error: Any) -> str:
    return json.dumps({"ok": False, "exit_code": code, **error}, indent=2)
