"""The GitHub Action's job summary ($GITHUB_STEP_SUMMARY, Markdown): the counts, the coverage and
the first problems with their places. GitHub shows at most 10 annotations per step, so the
summary is where a long report can still be read in the run's page."""

from __future__ import annotations

from inkling_compat.report.concise import place
from inkling_compat.report.model import Report
from inkling_compat.report.shared import said

SHOWN = 20  # problems listed in the summary; the SARIF report and annotations hold every one


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def summary_markdown(report: Report, code: int, notes: tuple[str, ...] = ()) -> str:
    verdict = "passed" if code == 0 else "failed"
    lines = [f"### inkling-compat: {verdict}", ""]
    lines.append(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s), {len(report.ignored)} ignored; exit {code}.")
    coverage = report.coverage.summary()
    if coverage:
        lines.append(f"Rules: {coverage}.")
    lines += [f"- {note}" for note in (*report.coverage.notes, *notes)]
    if report.problems:
        lines += ["", "| severity | rule | where | message |", "|---|---|---|---|"]
        for problem in report.problems[:SHOWN]:
            text = f"[{problem.adapter}] {said(problem)}" if problem.adapter else said(problem)
            lines.append(f"| {problem.severity} | [{problem.rule_id}]({problem.url}) | `{_cell(place(problem))}` | {_cell(text)} |")
        if len(report.problems) > SHOWN:
            lines.append(f"\n{len(report.problems) - SHOWN} more in the SARIF report (the `sarif` output).")
    return "\n".join(lines) + "\n"


def failure_markdown(code: int, line: str) -> str:
    return f"### inkling-compat: could not check (exit {code})\n\n{_cell(line)}\n"
