"""Inline suppression: `# inkling-compat: ignore[rule-id] reason` on a line of a YAML input
(the server config, an adapter manifest, a platform file) silences that rule's problems placed
on that line (inputs/source_map.py), as `# noqa` does for Ruff.

Rule ids are comma-separated and may be prefixes (`ignore[sink-pool]`), as `--ignore` takes
them. A silenced problem moves to `report.ignored` with the comment's reason and `by` naming
the file and line; nothing is dropped. A suppression that silences nothing (a typo in the id,
a problem since fixed, a comment on a line the problem is not placed on) is reported as a
note of the report's coverage ("unused suppression ..."), shown by every format that shows notes.
"""

from __future__ import annotations

import os
import functools
import re

from inkling_compat.engine.selection import ignored_entry, matches
from inkling_compat.report.model import Coverage, Report
from inkling_compat.sglang.plain_dataclass import dataclass, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable


@functools.cache
def _comment() -> re.Pattern[str]:
    return re.compile(r"#\s*inkling-compat:\s*ignore\[([^\]]*)\][ \t]*(.*)$")


_MAX_BYTES = 16 * 1024 * 1024  # as loading.MAX_INPUT_BYTES: the file was read under it already


@dataclass(frozen=True)
class Suppression:
    """One suppression comment: its file and line, the rule ids or prefixes, the reason."""

    file: str
    line: int
    rules: tuple[str, ...]
    reason: str

    replace = replace  # (suppression.replace(**changes), as dataclasses.replace(suppression, **changes))


def parse(text: str, file: str) -> list[Suppression]:
    """The suppression comments of a document's text, one per line that holds one."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "inkling-compat" not in line:
            continue
        found = _comment().search(line)
        if found:
            rules = tuple(r.strip() for r in found.group(1).split(",") if r.strip())
            out.append(Suppression(file, number, rules, found.group(2).strip()))
    return out


def _text(file: str) -> str | None:
    from inkling_compat.inputs import stdin

    if stdin.is_stdin(file):
        raw = stdin.already_read()
    else:
        if os.path.splitext(file)[1].lower() == ".json" or not os.path.isfile(file):
            return None  # (JSON has no comments; a folder or preset is no text)
        try:
            with open(file, "rb") as handle:
                raw = handle.read(_MAX_BYTES + 1)
        except OSError:
            return None
    if raw is None or len(raw) > _MAX_BYTES:
        return None
    return raw.decode("utf-8", errors="replace")


def _same(a: str, b: str) -> bool:
    from inkling_compat.inputs import stdin

    if stdin.is_stdin(a) or stdin.is_stdin(b):
        return stdin.is_stdin(a) and stdin.is_stdin(b)
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def apply_inline(report: Report, files: Iterable[Any]) -> Report:
    """The report with the problems that `files`' suppression comments silence moved to
    `ignored`, and a coverage note per suppression that silenced nothing."""
    found: list[Suppression] = []
    for file in dict.fromkeys(str(f) for f in files if isinstance(f, (str, os.PathLike))):
        text = _text(file)
        if text is not None and "inkling-compat" in text:
            found += parse(text, file)
    if not found:
        return report
    used: set[Suppression] = set()
    kept, ignored = [], list(report.ignored)
    for problem in report.problems:
        hit = next((s for s in found for loc in problem.locations if loc.line == s.line and _same(loc.file, s.file) and any(matches(r, problem.rule_id) for r in s.rules)), None)
        if hit is None:
            kept.append(problem)
            continue
        used.add(hit)
        entry = ignored_entry(problem)
        ignored.append(dict(entry, reason=hit.reason or f"inline suppression ({', '.join(hit.rules)})", by=f"{hit.file}:{hit.line}", inline=True))
    unused = [s for s in found if s not in used]
    coverage = report.coverage
    if unused:
        notes = tuple(coverage.notes) + tuple(
            f"unused suppression at {s.file}:{s.line}: ignore[{', '.join(s.rules)}] silences no problem placed on that line" for s in unused
        )
        coverage = Coverage(coverage.status, coverage.reasons, notes, coverage.adapters)
    return report.replace(problems=kept, ignored=ignored, coverage=coverage)
