"""`--format sarif`: the report as a SARIF 2.1.0 log (OASIS), for GitHub code scanning and
other SARIF readers.

One run; `tool.driver.rules` holds the rules the results refer to (id, title, explanation,
fixes, page URL, default level); each result has its rule, level, sglang's text and one
physical location per place (inputs/source_map.py): the key's line and column, or line 1
with a message where the field is not in the file (its default is what fires) or the file
is binary (a safetensors file: the tensor is named). Problems left out by --ignore or the
project settings are results with an external suppression carrying the reason, so they stay
visible. tests/test_formats.py validates the output against the official schema.
"""

from __future__ import annotations

import json
from typing import Any, Iterable
from urllib.parse import quote

from inkling_compat.report.urls import REPOSITORY, rule_url
from inkling_compat.report.model import Report
from inkling_compat.report.shared import level, not_checked_failures, rules_by_id, shown_path

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _version() -> str:
    from inkling_compat.inputs.versions import PACKAGE_VERSION

    return PACKAGE_VERSION


def _uri(file: str) -> str:
    """A file as a SARIF URI reference, percent-encoded; a name that is not UTF-8 (read with
    surrogateescape) is encoded as the bytes it has on disk."""
    return quote(shown_path(file), safe="/:@-._~!$&'()*+,;=", errors="surrogateescape")


def _location(loc: dict[str, Any]) -> dict[str, Any]:
    line, column = loc.get("line"), loc.get("column")
    physical: dict[str, Any] = {
        "artifactLocation": {"uri": _uri(loc["file"])},
        "region": {"startLine": line or 1, "startColumn": column or 1},
    }
    out: dict[str, Any] = {"physicalLocation": physical}
    if loc.get("tensor"):
        out["message"] = {"text": f"tensor {loc['tensor']}"}
    elif line is None and loc.get("field"):
        out["message"] = {"text": f"{loc['field']}: not in the file (its default applies)"}
    elif loc.get("field"):
        out["message"] = {"text": loc["field"]}
    return out


def _descriptor(rule_id: str, rule: Any) -> dict[str, Any]:
    if rule is None:  # (a problem of a rule set other than the one loaded: still a valid log)
        return {"id": rule_id, "helpUri": rule_url(rule_id)}
    fixes = "\n".join(f"- {fix}" for fix in rule.fixes)
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": " ".join(rule.explanation.split())},
        "helpUri": rule_url(rule.id),
        "help": {"text": f"Fixes:\n{fixes}\nSee {rule_url(rule.id)}"},
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {"origin": rule.origin, "stage": rule.stage, "scope": rule.scope},
    }


def sarif_log(report: Report, rules: Iterable[Any] = ()) -> dict[str, Any]:
    known = rules_by_id(rules, report.sglang_version)
    entries = [(p.to_dict(), None) for p in report.problems] + [(dict(item), item.get("reason", "")) for item in report.ignored]
    order: dict[str, int] = {}
    for data, _ in entries:
        order.setdefault(data["rule_id"], len(order))
    results = []
    for data, reason in entries:
        result: dict[str, Any] = {
            "ruleId": data["rule_id"],
            "ruleIndex": order[data["rule_id"]],
            "level": level(data["severity"]),
            "message": {"text": _message(data)},
            "locations": [_location(loc) for loc in data.get("locations") or ()],
            "properties": {k: data[k] for k in ("severity", "origin", "stage", "adapter", "field_paths") if data.get(k) is not None},
        }
        if not result["locations"]:
            del result["locations"]
        if reason is not None:
            kind = "inSource" if data.get("inline") else "external"  # (a comment in the file, or --ignore/settings)
            result["suppressions"] = [{"kind": kind, "status": "accepted", "justification": reason or "ignored"}]
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "inkling-compat",
                "version": _version(),
                "informationUri": REPOSITORY,
                "rules": [_descriptor(rule_id, known.get(rule_id)) for rule_id in order],
            }
        },
        "invocations": [_invocation(report)],
        "results": results,
        "properties": {"sglang_version": report.sglang_version, "rules_evaluated": report.rules_evaluated, "not_given": list(report.not_given)},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _invocation(report: Report) -> dict[str, Any]:
    """The run's invocation; what the settings file changed as configuration notifications."""
    invocation: dict[str, Any] = {"executionSuccessful": True, "exitCode": _exit_code(report)}
    notes = (report.selection or {}).get("notes") or []
    if notes:
        invocation["toolConfigurationNotifications"] = [{"level": "note", "message": {"text": note}} for note in notes]
    failures = not_checked_failures(report)
    if failures:  # --strict fails on rules not checked, which have no result of their own
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": f"--strict: {text}"}, "properties": {"rule_ids": ids}} for text, ids in failures
        ]
    return invocation


def _exit_code(report: Report) -> int:
    """What the command exits with (0 or 1; with --strict, warnings fail too)."""
    code = getattr(report, "exit_code", None)
    return code if isinstance(code, int) else (0 if report.ok else 1)


def _message(data: dict[str, Any]) -> str:
    text = data.get("message", "")
    if data.get("because") and not text:  # a bare assert: sglang's empty text, then the failed condition
        text = f"(bare assert: {data['because']})"
    if data.get("origin") != "inkling-compat" and data.get("error_class") not in (None, "", "none"):
        text = f"{data['error_class']}: {text}"
    if data.get("adapter"):
        text = f"[{data['adapter']}] {text}"
    return text


def render_sarif(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    return json.dumps(sarif_log(report, rules), indent=2)


def sarif_failure(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> str:
    """A log with no results and one tool execution notification saying why (exit 2 / 3)."""
    from inkling_compat.report.shared import failure_text

    where, text = failure_text(code, input_error, internal_error)
    notification: dict[str, Any] = {"level": "error", "message": {"text": text}}
    if where is not None:
        physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(where.file)}}
        if where.line is not None:
            physical["region"] = {"startLine": where.line, "startColumn": where.column or 1}
        notification["locations"] = [{"physicalLocation": physical}]
    run = {
        "tool": {"driver": {"name": "inkling-compat", "version": _version(), "informationUri": REPOSITORY, "rules": []}},
        "invocations": [{"executionSuccessful": False, "exitCode": code, "toolExecutionNotifications": [notification]}],
        "results": [],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
