"""What the output formats share: paths as the user's CI sees them, each problem's place for
a one-place format, its severity level, the rules of a check by id, a problem's text, and the
place and line of an exit-2/3 failure."""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

from inkling_compat.report.model import Problem


def shown_path(file: str) -> str:
    """A path as the reports show it: relative to the working directory when it lies below
    it (a CI checkout: SARIF and annotations must name files relative to the repository),
    otherwise as given; `/` separators."""
    if os.path.isabs(file):
        try:
            relative = os.path.relpath(file)
        except ValueError:  # another drive (Windows)
            relative = file
        if not relative.startswith(".."):
            file = relative
    return file.replace(os.sep, "/")


def primary(problem: Problem) -> Any:
    """The one place a one-place format (a GitHub annotation, a JUnit case) shows: the first
    field stated in a file, else the first file involved, else None."""
    stated = next((loc for loc in problem.locations if loc.line is not None), None)
    return stated or (problem.locations[0] if problem.locations else None)


def level(severity: str) -> str:
    """SARIF / GitHub level: a predicted crash (`runtime`) fails a deployment like an error."""
    return "warning" if severity == "warning" else "error"


def rules_by_id(rules: Iterable[Any], version: str) -> dict[str, Any]:
    """Rule id -> the rule as it reads in `version` (compiled rules from `load_rules`)."""
    out = {}
    for compiled in rules:
        versioned = compiled.for_version(version)
        if versioned is not None:
            out[versioned.rule.id] = versioned.rule
    return out


def said(problem: Problem) -> str:
    """A problem's one-line text (as the text output's summary gives it)."""
    from inkling_compat.report.text import _said

    return _said(problem)


def said_where(problem: Problem, place: str = "") -> str:
    """`said`, led by the adapter it is about and by the command's place in a deployment file
    (the one-line formats that carry no field of their own for either)."""
    text = said(problem)
    if problem.adapter:
        text = f"[{problem.adapter}] {text}"
    return f"{place}: {text}" if place else text


def not_checked_failures(report: Any) -> list[tuple[str, list[str]]]:
    """Under --strict, what fails the gate that no problem shows (Report.not_checked); []
    otherwise. Each format shows these (text and JSON through `strict_failures`), so a strict
    failure is never an exit 1 with an empty document."""
    return report.not_checked() if getattr(report, "strict", False) else []


def failure_text(code: int, input_error: dict[str, Any] | None = None, internal_error: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(a Location or None, one-line text) of an exit-2/3 failure, for the formats' documents:
    the file, and the line where the error names one (`line 3`) or names a key the file has
    (a duplicate or invalid key: found with the source map)."""
    from inkling_compat.inputs.source_map import Location, SourceMaps

    if input_error is not None:
        file, field = str(input_error.get("file", "")), str(input_error.get("field", ""))
        text = f"unusable input: {file}: {field}: {input_error.get('reason', '')}"
        if not file or file.startswith(("<", "(")):
            return None, text
        line = re.fullmatch(r"line (\d+)", field) or re.search(r"\(lines \d+ and (\d+)\)", str(input_error.get("reason", "")))
        if line:  # (a duplicate key: the line that states it again)
            return Location(file, field if not field.startswith("line ") else "", int(line.group(1)), 1), text
        if field and not field.startswith(("(", "-")) and os.path.isfile(file):
            return SourceMaps().place(file, field), text
        return Location(file), text
    error = internal_error or {}
    return None, f"internal error (exit {code}): {error.get('type', '')}: {error.get('message', '')}"
