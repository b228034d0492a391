"""The output formats by name: `render(fmt, report, rules)` renders a report in the format named
`fmt`, `render_failure(fmt, ...)` gives the same format's document for exit 2 and 3, so a CI
step that parses the output never finds an empty or foreign file. Which formats there are, and
which module renders each, is report/formats.py; what the formats share is report/shared.py.
"""

from __future__ import annotations

from inkling_compat.report.formats import get
from inkling_compat.report.model import Report

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable


def render(fmt: str, report: Report, rules: Iterable[Any] = (), *, fleet: bool = False, color: bool = False) -> str:
    entry = get(fmt)
    return _shown(entry.syntax, entry.renderer()(report, rules, fleet=fleet, color=color), color)


def render_failure(fmt: str, code: int, **error: dict[str, Any]) -> str | None:
    """The document of a check that could not run: `input_error` {file, field, reason}
    (exit 2) or `internal_error` {type, message} (exit 3); None for a format without one
    (text, concise: stderr says it)."""
    entry = get(fmt)
    failure = entry.failure_renderer()
    return None if failure is None else _shown(entry.syntax, failure(code, **error), False)


def _shown(syntax: str, text: str, color: bool) -> str:
    """What a terminal, a CI log or an XML reader would act on, escaped (report/escape.py);
    JSON's own escaping already covers it."""
    if syntax == "json" or (text.isascii() and text.replace("\n", "").replace("\t", "").isprintable()):
        return text  # (ASCII without a control character but tab and newline: escape.shown's own first test)
    from inkling_compat.report.escape import shown

    return shown(text, keep_colors=color and syntax == "text")
