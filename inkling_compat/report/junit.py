"""`--format junit`: the check as a JUnit XML test report, one test case per rule and input.

Test suites: `setup` (the server config with model and platform: global and fleet rules) and
one per adapter (the adapter rules). A case is a failure when its rule fired as an error
(or a predicted crash), passes with the text in <system-out> when it fired as a warning (a
failure of type "warning" with --strict, where warnings fail the gate), and
is skipped when the rule was not checked (a failure of type "not-checked" with --strict, which
fails on it, where the coverage says so): ignored (--ignore, project settings), not
applicable (its `when` is false for these inputs: nothing was tested), or not checked as the
report's coverage says (engine/coverage.py: an input it reads was not given
or not readable, or sglang stops at an earlier rule first), or, in a report without
coverage, not reached (a rule in its `after` fired first) or reading an input not given.
Adapter rules without any adapter are one skipped suite.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from xml.etree import ElementTree as ET

from inkling_compat.report.urls import rule_url
from inkling_compat.report.model import Report
from inkling_compat.report.shared import primary, rules_by_id, said, shown_path

_NOT_GIVEN = {"model": "model.", "platform": "platform."}


NOT_APPLICABLE = "not applicable: its condition does not hold for these inputs"


def _status(rule: Any, fired: dict[str, Any], ignored: dict[str, dict[str, Any]], not_given: list[str], why_not: dict[str, str] | None = None, not_applicable: frozenset[str] = frozenset()) -> tuple[str, Any]:
    """(status, detail): failure / warning (detail: the Problem), skipped (detail: why), passed.
    `why_not`: the report's coverage (rule id -> why it was not checked) when it has one."""
    if rule.id in ignored:
        return "skipped", f"ignored: {ignored[rule.id].get('reason') or 'ignored'}"
    if rule.id in fired:
        problem = fired[rule.id]
        return ("warning" if problem.severity == "warning" else "failure"), problem
    if rule.id in not_applicable:
        return "skipped", NOT_APPLICABLE
    if why_not is not None:  # engine/coverage.py said which rules were not checked, and why
        if rule.id not in why_not:
            return "passed", None
        reason = why_not[rule.id]
        return "not_checked", reason if reason.startswith("not ") else f"not checked: {reason}"
    stopped = [other for other in rule.after if other in fired or other in ignored]
    if stopped:
        return "skipped", f"not reached: sglang raises {stopped[0]} first"
    missing = [name for name, prefix in _NOT_GIVEN.items() if name in not_given and any(p.startswith(prefix) for p in rule.field_paths)]
    if missing:
        return "skipped", f"not checked: no {missing[0]} given (the check ran on placeholder values)"
    return "passed", None


def _case(suite: ET.Element, classname: str, rule: Any, status: str, detail: Any, strict: bool = False) -> None:
    if status == "warning" and strict:  # (--strict: a warning fails the gate, so it fails its case)
        status = "failure"
    case = ET.SubElement(suite, "testcase", {"classname": classname, "name": rule.id, "time": "0"})
    if status == "not_checked" and strict:  # (--strict fails on a rule not checked: so does its case)
        failure = ET.SubElement(case, "failure", {"message": f"--strict: {detail}", "type": "not-checked"})
        failure.text = detail
        return
    if status in ("skipped", "not_checked"):
        ET.SubElement(case, "skipped", {"message": detail})
        return
    if status == "passed":
        return
    problem = detail
    where = primary(problem)
    if where is not None:
        case.set("file", shown_path(where.file))
        if where.line is not None:
            case.set("line", str(where.line))
    lines = [said(problem)]
    lines += [f"at {loc}" for loc in problem.locations]
    lines += [f"fix: {fix}" for fix in problem.fixes]
    lines.append(f"see {rule_url(rule.id)}")
    body = "\n".join(lines)
    if status == "failure":
        failure = ET.SubElement(case, "failure", {"message": said(problem), "type": problem.error_class if problem.severity != "warning" else "warning"})
        failure.text = body
    else:
        out = ET.SubElement(case, "system-out")
        out.text = f"warning: {body}"


def junit_tree(report: Report, rules: Iterable[Any] = ()) -> ET.Element:
    known = list(rules_by_id(rules, report.sglang_version).values())
    ignored_by: dict[Any, dict[str, dict[str, Any]]] = {}
    for item in report.ignored:
        ignored_by.setdefault(item.get("adapter_index"), {}).setdefault(item["rule_id"], item)
    fired_by: dict[Any, dict[str, Any]] = {}
    for problem in report.problems:
        fired_by.setdefault(problem.adapter_index, {}).setdefault(problem.rule_id, problem)
    suites = ET.Element("testsuites", {"name": "inkling-compat"})
    setup = ET.SubElement(suites, "testsuite", {"name": "setup"})
    global_fired, global_ignored = fired_by.get(None, {}), ignored_by.get(None, {})
    # A setup case (global and fleet rules) counts its rule's problems whichever adapter a
    # fleet rule names.
    any_fired = {rule_id: p for by in fired_by.values() for rule_id, p in by.items()}
    any_ignored = {rule_id: item for by in ignored_by.values() for rule_id, item in by.items()}
    coverage = getattr(report, "coverage", None)
    strict = bool(getattr(report, "strict", False))
    why_not = {rule_id: reason for reason, ids in coverage.reasons.items() for rule_id in ids} if coverage is not None and coverage.status else None
    inapplicable = frozenset(rule_id for rule_id, status in coverage.status.items() if status == "not_applicable") if why_not is not None else frozenset()
    for rule in known:
        if rule.scope != "adapter":
            _case(setup, "setup", rule, *_status(rule, {**any_fired, **global_fired}, {**any_ignored, **global_ignored}, report.not_given, why_not, inapplicable), strict=strict)
    adapter_rules = [rule for rule in known if rule.scope == "adapter"]
    for index, adapter in enumerate(report.adapters):
        name = f"adapter {adapter.get('name')}" + (f" ({shown_path(adapter['path'])})" if adapter.get("path") else "")
        suite = ET.SubElement(suites, "testsuite", {"name": name})
        fired = {**global_fired, **fired_by.get(index, {})}
        ignored = {**global_ignored, **ignored_by.get(index, {})}
        # The coverage's reasons are per rule id over the whole check; an adapter's own counts
        # name the reasons that hold for it (an unreadable or gated adapter, not its neighbours).
        covered = list(getattr(coverage, "adapters", None) or ()) if why_not is not None else []
        here = covered[index].get("not_checked_reasons") if index < len(covered) else None
        why_not_here = why_not if why_not is None or here is None else {k: r for k, r in why_not.items() if r in here}
        for rule in adapter_rules:
            own = fired_by.get(index, {})
            status, detail = _status(rule, fired, ignored, report.not_given, why_not_here, inapplicable)
            if status in ("failure", "warning") and rule.id not in own:
                status, detail = "passed", None  # (an id fired for the setup is not this adapter's)
            _case(suite, name, rule, status, detail, strict=strict)
    if not report.adapters and adapter_rules:
        suite = ET.SubElement(suites, "testsuite", {"name": "adapters"})
        for rule in adapter_rules:
            status = "not_checked" if why_not is not None and rule.id in why_not else "skipped"  # (coverage: not applicable without one)
            _case(suite, "adapters", rule, status, "not checked: no adapter given", strict=strict)
    _count(suites)
    return suites


def _count(suites: ET.Element) -> None:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        counts = {
            "tests": len(suite),
            "failures": sum(1 for case in suite if case.find("failure") is not None),
            "errors": sum(1 for case in suite if case.find("error") is not None),
            "skipped": sum(1 for case in suite if case.find("skipped") is not None),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", "0")
    for key, value in totals.items():
        suites.set(key, str(value))


_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(root: ET.Element) -> None:
    """Characters XML 1.0 cannot hold (a hostile key or adapter name) become U+FFFD."""
    for element in root.iter():
        for key, value in element.attrib.items():
            element.set(key, _INVALID.sub("\ufffd", value))
        if element.text:
            element.text = _INVALID.sub("\ufffd", element.text)


def _xml(root: ET.Element) -> str:
    _clean(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_junit(report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    return _xml(junit_tree(report, rules))


def junit_failure(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> str:
    """One suite with one errored case saying why the check could not run (exit 2 / 3)."""
    from inkling_compat.report.shared import failure_text

    where, text = failure_text(code, input_error, internal_error)
    suites = ET.Element("testsuites", {"name": "inkling-compat"})
    suite = ET.SubElement(suites, "testsuite", {"name": "inkling-compat"})
    case = ET.SubElement(suite, "testcase", {"classname": "inkling-compat", "name": "input" if code == 2 else "internal", "time": "0"})
    if where is not None:
        case.set("file", shown_path(where.file))
        if where.line is not None:
            case.set("line", str(where.line))
    error = ET.SubElement(case, "error", {"message": text, "type": "InputError" if code == 2 else "InternalError"})
    error.text = text
    _count(suites)
    return _xml(suites)
