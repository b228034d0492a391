"""Text rendering of a report for terminals (colour only when asked, i.e. on a TTY)."""

from __future__ import annotations

from inkling_compat.report.model import Report

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_COLORS = {"error": "\033[31m", "runtime": "\033[35m", "warning": "\033[33m", "ok": "\033[32m", "dim": "\033[2m"}
_RESET = "\033[0m"


def _paint(text: str, color: str, enabled: bool) -> str:
    return f"{_COLORS[color]}{text}{_RESET}" if enabled else text


# What a missing input means for the checks that read it (Report.not_given).
_NOT_GIVEN = {
    "config": "no server config given: every sglang flag is at its default",
    "model": "no model config given (--model): the model, shared-sink and pool checks that read it are not checked",
    "platform": "no platform given: the platform checks assume one H200 (sm_90)",
}


def _notes(report: Report, color: bool) -> list[str]:
    lines = [_paint(f"note: fact {given}={value!r} was given, not derived", "dim", color) for given, value in report.given_facts.items()]
    # (a --model-path that was not read is named by its own "not read" note, with why)
    model_named = any(path.startswith("--model-path ") for path in report.not_read)
    lines += [_paint(f"note: {_NOT_GIVEN[name]}", "dim", color) for name in report.not_given if name != "platform" and not (name == "model" and model_named)]
    lines += [_paint(f"note: {entry}", "dim", color) for entry in report.not_read]  # (each entry says "not read" and why)
    lines += [_paint(f"note: {note}", "dim", color) for note in report.coverage.notes]
    lines += [_paint(f"note: {note}", "dim", color) for note in (report.selection or {}).get("notes", ())]  # what the settings changed
    return lines


def _coverage(report: Report) -> str:
    """"; 96 checked, 38 not checked (no --model)" for the summary line ("" without coverage)."""
    said = report.coverage.summary()
    return f"; {said}" if said else f", {report.rules_evaluated} checks"


def _strict(report: Report, color: bool) -> list[str]:
    """Under --strict, whether the gate passes and what fails it besides errors."""
    if not report.strict:
        return []
    failures = report.strict_failures()
    if report.ok and not failures:
        return [_paint("--strict: passes (no warnings; every rule checked or not applicable)", "ok", color)]
    warnings = len(report.warnings)
    parts = [f"{len(report.errors)} error(s)"] if not report.ok else []
    parts += [f"{warnings} warning(s)"] if warnings else []
    parts += [f"{len(ids)} rule(s) not checked ({reason})" for reason, ids in report.coverage.reasons.items()]
    return [_paint(f"--strict: fails: {'; '.join(parts)}", "error", color)]


def _prefix(problem) -> str:
    """What a problem's text line is: nothing for what sglang raises (the common case),
    "sglang accepts this and then: " for a derived prediction, "inkling-compat: " for the
    checker's own findings."""
    return "" if problem.origin in ("sglang", "argparse") else f"{problem.label}: "


def render(report: Report, rules: Any = (), *, fleet: bool = False, color: bool = False) -> str:
    """`--format text`: a fleet's report (--adapter-dir) by adapter, any other as one list."""
    return render_by_adapter(report, color=color) if fleet else render_text(report, color=color)


def render_text(report: Report, color: bool = False) -> str:
    lines = []
    if not report.ok and report.sglang_version_from:  # (an ok summary says it on its own line)
        lines.append(_paint(f"note: checked against sglang {report.sglang_version}{_from(report)}", "dim", color))
    lines.extend(_notes(report, color))
    seen_messages: set[tuple[str | None, str]] = set()
    for number, problem in enumerate(report.problems, 1):
        where = f" [{problem.adapter}]" if problem.adapter else ""
        head = f"{problem.severity}{where} {problem.rule_id} ({problem.origin}, {problem.stage})"
        lines.append(_paint(head, problem.severity, color))
        key = (problem.adapter, problem.message)
        if key in seen_messages and not problem.because:  # (bare asserts all read "": each is its own)
            what = "problem" if _raises_nothing(problem) else problem.error_class
            lines.append(f"  same {what} as above; this part: {problem.fragment}")
        else:
            lines.append(f"  {_prefix(problem)}{_said(problem)}")
            seen_messages.add(key)
        if problem.field_paths:
            lines.append(_paint(f"  fields: {', '.join(problem.field_paths)}", "dim", color))
        lines.extend(_paint(line, "dim", color) for line in _places(problem.locations, "  "))
        for fix in problem.fixes:
            lines.append(f"  fix: {fix}")
        lines.append(_paint(f"  see {problem.url}", "dim", color))
    lines.extend(_ignored(report, color))
    errors, warnings = len(report.errors), len(report.warnings)
    if report.ok:
        summary = f"ok: no errors ({warnings} warning(s)){_coverage(report)}; sglang {report.sglang_version}{_from(report)}"
        lines.append(_paint(summary, "ok", color))
    else:
        lines.append(_paint(f"{errors} error(s), {warnings} warning(s){_coverage(report)}; {report.headline_label()}:", "error", color))
        lines.append(f"  {_said(report.headline)}")
    lines.extend(_first_ignored(report))
    lines.extend(_strict(report, color))
    return "\n".join(lines)


def _first_ignored(report: Report) -> list[str]:
    """What sglang raises first when --select, --ignore or the settings left it out."""
    first = report.first_ignored
    if first is None:
        return []
    text = f"{first['error_class']}: {first['message']}" if first.get("message") else first["error_class"]
    if first.get("because"):
        text += f" (bare assert: {first['because']})"
    return [f"sglang {report.sglang_version} would first raise {first['rule_id']} (ignored: {first.get('reason') or 'not selected'}): {text}"]


def _ignored(report: Report, color: bool) -> list[str]:
    """"2 ignored:", then one line per problem left out by a suppression comment, --ignore or
    the settings, with its reason and who said it (never dropped silently)."""
    if not report.ignored:
        return []
    lines = [_paint(f"{len(report.ignored)} ignored:", "dim", color)]
    for item in report.ignored:
        where = f" [{item['adapter']}]" if item.get("adapter") else ""
        lines.append(_paint(f"  ignored{where} {item['rule_id']}: {item.get('reason') or 'ignored'} (by {item.get('by')})", "dim", color))
    return lines


def _places(locations, indent: str) -> list[str]:
    """`at serve.yaml:3:1 (key)` per stated field; the fields a file does not state (their
    defaults are what fired) on one line per file."""
    lines, defaults = [], {}
    for loc in locations:
        if loc.line is None and loc.field and not loc.tensor and not loc.argument:
            defaults.setdefault(loc.file, []).append(loc.field)
        else:
            lines.append(f"{indent}at {loc}")
    lines += [f"{indent}not in {file} (defaults): {', '.join(fields)}" for file, fields in defaults.items()]
    return lines


def _said(problem) -> str:
    """A problem's text as the summary gives it: with the class sglang or torch raises; an
    inkling-compat finding, which nothing in sglang raises, without one."""
    if problem.origin == "inkling-compat" or _raises_nothing(problem):
        return problem.message
    if problem.because and not problem.message:  # a bare assert: sglang's empty text, then why
        return f"{problem.error_class}: (bare assert: {problem.because})"
    return f"{problem.error_class}: {problem.message}"


def _raises_nothing(problem) -> bool:
    """A derived prediction of silent misbehaviour (error_class "none": nothing is raised, the
    results are wrong): no class to name before its text."""
    return problem.error_class in (None, "none")


def render_by_adapter(report: Report, color: bool = False) -> str:
    """A fleet report: problems not tied to an adapter first, then one block per adapter
    (in input order) with its own problems; fixes are printed once per rule."""
    lines = []
    lines.extend(_notes(report, color))
    fixes_shown: set[str] = set()

    def block(problems: list, indent: str) -> None:
        seen: set[str] = set()
        for problem in problems:
            head = f"{indent}{problem.severity} {problem.rule_id} ({problem.origin}, {problem.stage})"
            lines.append(_paint(head, problem.severity, color))
            if problem.message in seen and not problem.because:  # (bare asserts all read "": each is its own)
                lines.append(f"{indent}  same {'problem' if _raises_nothing(problem) else problem.error_class} as above; this part: {problem.fragment}")
            else:
                lines.append(f"{indent}  {_prefix(problem)}{_said(problem)}")
                seen.add(problem.message)
            lines.extend(_paint(line, "dim", color) for line in _places(problem.locations, f"{indent}  "))
            if problem.rule_id in fixes_shown:
                continue
            fixes_shown.add(problem.rule_id)
            for fix in problem.fixes:
                lines.append(f"{indent}  fix: {fix}")
            lines.append(_paint(f"{indent}  see {problem.url}", "dim", color))

    shared = [p for p in report.problems if p.adapter_index is None]
    if shared:
        lines.append(_paint("setup (every adapter)", "dim", color))
        block(shared, "  ")
    groups = report.by_adapter()
    own: dict[int, list] = {}
    for p in report.problems:
        if p.adapter_index is not None:
            own.setdefault(p.adapter_index, []).append(p)
    counts = {"ok": 0, "errors": 0, "warnings": 0}
    for index, group in enumerate(groups):
        where = f"adapter {group['name']}" + (f" ({group['path']})" if group.get("path") else "")
        unchecked = group.get("coverage", {}).get("not_checked", 0)
        if not group["problems"]:
            counts["ok"] += 1
            why = ", ".join(group["coverage"]["not_checked_reasons"]) if unchecked else ""
            lines.append(f"{where}: " + _paint("ok", "ok", color) + (f" ({unchecked} not checked: {why})" if unchecked else ""))
            continue
        counts["errors" if group["errors"] else "warnings"] += 1
        lines.append(f"{where}: {group['errors']} error(s), {group['warnings']} warning(s)")
        block(own.get(index, []), "  ")
    shared_errors = sum(1 for p in shared if p.severity != "warning")
    summary = (
        f"{len(groups)} adapter(s): {counts['ok']} ok, {counts['errors']} with errors, "
        f"{counts['warnings']} with warnings only; {shared_errors} setup error(s); "
        f"{report.coverage.summary() or f'{report.rules_evaluated} checks'}; sglang {report.sglang_version}"
    )
    lines.append(_paint(summary, "ok" if report.ok else "error", color))
    if not report.ok:
        top = report.headline
        who = f" [{top.adapter}]" if top.adapter else ""
        lines.append(f"{report.headline_label()}{who}: {_said(top)}")
    lines.extend(_ignored(report, color))
    lines.extend(_first_ignored(report))
    lines.extend(_strict(report, color))
    return "\n".join(lines)


def _from(report: Report) -> str:
    """Why this release (inputs/release.py), as the summary says it."""
    return f" ({report.sglang_version_from})" if report.sglang_version_from else ""
