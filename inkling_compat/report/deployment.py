"""The reports of a deployment file with several sglang commands (a prefill/decode pair, a
Kubernetes stream, a compose file), each headed by its place, in every output format; the
format's entry (report/formats.py) names which function here (or in its own module) does it.

text: a `== place` heading before each report; json: one document, `{"ok", "exit_code",
"deployment": {"file", "kind"}, "reports": [{"place", "file", "line", "where", ...the report}]}`;
github: each report in a `::group::place` ... `::endgroup::` block; concise: each problem line
followed by nothing new, a `# place` line before each report's lines; sarif: one run per command
(its `properties.place`); junit: the test suites of every command, each suite named with its place.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Sequence
from xml.etree import ElementTree as ET

from inkling_compat.report.model import Report


def render_deployment(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: Iterable[Any] = (), *, color: bool = False) -> str:
    from inkling_compat.report.formats import get

    return get(fmt).deployment_renderer()(fmt, deployment, checked, list(rules), color=color)


def json_document(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    ok = all(report.passes() for _, report in checked)
    return json.dumps(
        {
            "ok": ok,
            "exit_code": 0 if ok else 1,
            "deployment": {"file": deployment.file, "kind": deployment.kind},
            "reports": [{"place": c.place, "file": c.file, "line": c.line, "where": c.where, **report.to_dict()} for c, report in checked],
        },
        indent=2,
    )


def sarif_runs(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    from inkling_compat.report.outputs import render

    runs = []
    log: dict[str, Any] = {}
    for command, report in checked:
        log = json.loads(render(fmt, report, rules))
        for run in log["runs"]:
            run.setdefault("properties", {})["place"] = command.place
            runs.append(run)
    log["runs"] = runs
    return json.dumps(log, indent=2)


def junit_suites(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    from inkling_compat.report.outputs import render

    root = ET.Element("testsuites", {"name": f"inkling-compat {deployment.file}"})
    for command, report in checked:
        doc = ET.fromstring(render(fmt, report, rules))
        suites = [doc] if doc.tag == "testsuite" else list(doc)
        for suite in suites:
            suite.set("name", f"{command.place}: {suite.get('name', '')}")
            root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def sections(fmt: str, deployment: Any, checked: Sequence[tuple[Any, Report]], rules: list[Any], *, color: bool = False) -> str:
    """Each report's document under a heading naming its place: `== place` (text), a
    `::group::` block (github), a `# place` line (concise and any other line format)."""
    from inkling_compat.report.outputs import render

    parts = []
    for command, report in checked:
        body = render(fmt, report, rules, color=color).rstrip("\n")
        if fmt == "github":
            parts.append(f"::group::{command.place}\n{body}\n::endgroup::" if body else f"::group::{command.place}\n::endgroup::")
        elif fmt == "text":
            parts.append(f"== {command.place}\n{body}")
        else:
            parts.append(f"# {command.place}" + (f"\n{body}" if body else ""))
    head = f"{deployment.file}: {deployment.kind}, {len(checked)} sglang command{'s' if len(checked) != 1 else ''}"
    if fmt == "text":
        return "\n\n".join([head, *parts]) + "\n"
    return "\n".join(parts) + "\n"
