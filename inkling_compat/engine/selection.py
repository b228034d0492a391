"""Which rules count, and how much: --select / --ignore and the project's settings.

One settings place, found upward from the server config's folder (else the working
directory): `.inkling-compat.yaml`, or a `[tool.inkling-compat]` table in `pyproject.toml`
(in one folder the YAML file wins; the nearest folder with either wins):

    [tool.inkling-compat]
    select = ["sink-", "lora-"]                 # only these rules (ids or prefixes)
    ignore = ["adapter-rslora-scaling", {rule = "inkling-dtype-bf16", reason = "fp16 on purpose"}]
    severity = {"adapter-unmatched-weights" = "error"}   # error | warning

A pattern is a rule id or a prefix of whole dash-separated words (`sink` and `sink-` match
`sink-pool-rank-mismatch`, `sin` does not). A pattern that matches no rule is unusable input
(exit 2) naming the file and key, with the closest rule id. `--select` replaces the settings'
select; `--ignore` adds to its ignores. Selection runs after the check, on the report: an
ignored problem is moved to `Report.ignored` with its reason (JSON `ignored`, SARIF
suppressions, JUnit skipped), never dropped silently; rules an ignored rule gates (`after`)
stay unreached, as sglang would still stop at the ignored problem.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from inkling_compat.errors import InputError
from inkling_compat.report.model import Report

SETTINGS_YAML = ".inkling-compat.yaml"
PYPROJECT = "pyproject.toml"
TABLE = "tool.inkling-compat"
COMMAND_LINE = "(command line)"


class IgnoreEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str
    reason: str = ""


class Settings(BaseModel):
    """The settings file's keys (the YAML file's top level, or pyproject's table)."""

    model_config = ConfigDict(extra="forbid")

    select: list[str] | None = None
    ignore: list[str | IgnoreEntry] = []
    severity: dict[str, Literal["error", "warning"]] = {}
    # The pre-commit hook's checks (inkling_compat/ci/targets.py reads and validates them).
    checks: Any = None


@dataclasses.dataclass(frozen=True)
class Ignore:
    pattern: str
    reason: str
    by: str  # where it was said: the settings file, or "(command line)"


@dataclasses.dataclass(frozen=True)
class Selection:
    select: tuple[str, ...] = ()
    ignore: tuple[Ignore, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    settings_file: str | None = None
    select_by: str | None = None  # who gave `select`: the settings file or "(command line)"

    @property
    def empty(self) -> bool:
        return not (self.select or self.ignore or self.severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings_file": self.settings_file,
            "select": list(self.select),
            "ignore": [{"rule": i.pattern, "reason": i.reason, "by": i.by} for i in self.ignore],
            "severity": dict(self.severity),
        }


def matches(pattern: str, rule_id: str) -> bool:
    pattern = pattern.strip()
    return rule_id == pattern or rule_id.startswith(pattern if pattern.endswith("-") else pattern + "-")


def find_settings(start: str | os.PathLike[str] | None) -> Path | None:
    """The nearest settings file at or above `start` (a file's folder, or a folder)."""
    here = Path(start) if start is not None else Path.cwd()
    if not here.is_dir():
        here = here.parent
    here = here.resolve() if here.exists() else Path.cwd().resolve()
    for folder in (here, *here.parents):
        candidate = folder / SETTINGS_YAML
        if candidate.is_file():
            return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _pyproject_table(pyproject) is not None:
            return pyproject
    return None


# `inkling-compat` as a table or key name (`[tool.inkling-compat]`, `[[tool.inkling-compat.checks]]`,
# `tool.inkling-compat.select = ...`, `inkling-compat = {...}` under [tool]), not as a value
# (`name = "inkling-compat"`): a pyproject without it is not parsed (tomllib costs ~10 ms).
_MENTIONS_TABLE = re.compile(rb'inkling-compat"?[ \t]*[.\]=]|\[\[?[ \t]*tool[ \t]*\.[ \t]*"?inkling-compat')


def _pyproject_table(path: Path) -> dict[str, Any] | None:
    """pyproject's [tool.inkling-compat] table, None without one. A pyproject that does not
    parse is someone else's business unless it mentions our table."""
    import tomllib

    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if len(raw) > 16 * 1024 * 1024 or not _MENTIONS_TABLE.search(raw):  # (most pyprojects: not parsed at all)
        return None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError, MemoryError) as exc:  # (tomllib recurses per nesting level)
        if b"[tool.inkling-compat" in raw:
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc) or type(exc).__name__
            raise InputError(str(path), TABLE, f"pyproject.toml does not parse: {why}") from None
        return None
    table = data.get("tool", {}).get("inkling-compat") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InputError(str(path), TABLE, f"expected a table, got {type(table).__name__}")
    return table


def read_settings(path: str | os.PathLike[str]) -> tuple[Settings, str]:
    """(Settings, the key prefix its fields are named by in errors) from either kind of file."""
    path = Path(path)
    if path.name == PYPROJECT:
        table, prefix = _pyproject_table(path) or {}, f"{TABLE}."
    else:
        from inkling_compat.inputs.loading import read_document

        table, prefix = read_document(path), ""
    if not isinstance(table, dict):
        raise InputError(str(path), prefix.rstrip(".") or "(root)", f"expected a mapping, got {type(table).__name__}")
    try:
        return Settings.model_validate(table), prefix
    except ValidationError as exc:
        err = max(exc.errors(), key=lambda e: len(e["loc"]))  # (a union's deepest branch says most)
        reason = err["msg"]
        if err["type"] == "extra_forbidden" and err["loc"]:
            import difflib

            known = Settings.model_fields if len(err["loc"]) == 1 else IgnoreEntry.model_fields
            close = difflib.get_close_matches(str(err["loc"][-1]), list(known), n=1, cutoff=0.6)
            reason = f"unknown key{f' (did you mean {close[0]!r}?)' if close else ''}; known: {', '.join(known)}"
        raise InputError(str(path), _field(prefix, err["loc"]), reason) from None


def _field(prefix: str, loc: tuple[Any, ...]) -> str:
    """pydantic's error location as the file's key path (`ignore[2].rule`), without the
    union member names pydantic inserts (`str`, `IgnoreEntry`)."""
    out = prefix.rstrip(".")
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("str", "IgnoreEntry"):
            out = f"{out}.{part}" if out else str(part)
    return out or "(root)"


def build_selection(
    rule_ids: Iterable[str],
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    settings_file: str | os.PathLike[str] | None = None,
) -> Selection:
    """The selection of one run: the command line's patterns (comma-separated, repeatable)
    over the settings file's. Every pattern is checked against `rule_ids` (exit 2)."""
    ids = sorted(set(rule_ids))
    chosen: list[str] = []
    ignores: list[Ignore] = []
    severity: dict[str, str] = {}
    shown = None
    if settings_file is not None:
        shown = str(settings_file)
        settings, prefix = read_settings(settings_file)
        for index, pattern in enumerate(settings.select or ()):
            _known(pattern, ids, shown, f"{prefix}select[{index}]")
            chosen.append(pattern.strip())
        for index, entry in enumerate(settings.ignore):
            rule, reason = (entry, "") if isinstance(entry, str) else (entry.rule, entry.reason)
            _known(rule, ids, shown, f"{prefix}ignore[{index}]" + ("" if isinstance(entry, str) else ".rule"))
            ignores.append(Ignore(rule.strip(), reason, shown))
        for pattern, value in settings.severity.items():
            _known(pattern, ids, shown, f"{prefix}severity.{pattern}")
            severity[pattern.strip()] = value
    cli_select = _split(select)
    if cli_select:
        for pattern in cli_select:
            _known(pattern, ids, COMMAND_LINE, "--select")
        chosen = cli_select
    for pattern in _split(ignore):
        _known(pattern, ids, COMMAND_LINE, "--ignore")
        ignores.append(Ignore(pattern, "", COMMAND_LINE))
    return Selection(tuple(chosen), tuple(ignores), tuple(severity.items()), shown, COMMAND_LINE if cli_select else shown)


def _split(values: Iterable[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _known(pattern: Any, ids: list[str], file: str, field: str) -> None:
    if not isinstance(pattern, str) or not pattern.strip():
        raise InputError(file, field, "expected a rule id or prefix")
    if any(matches(pattern, rule_id) for rule_id in ids):
        return
    import difflib

    close = difflib.get_close_matches(pattern.strip(), ids, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else " (`inkling-compat rules` lists them)"
    raise InputError(file, field, f"no rule is {pattern.strip()!r} or starts with it{hint}")


def apply(report: Report, selection: Selection) -> Report:
    """The report with unselected and ignored problems moved to `ignored` (with the reason)
    and severities overridden; the input report is left as it is."""
    if selection.empty:
        return report
    kept = []
    ignored = list(report.ignored)
    for problem in report.problems:
        why = _why_ignored(problem.rule_id, selection)
        if why is not None:
            reason, by = why
            entry = {k: v for k, v in problem.to_dict().items() if k in ("rule_id", "severity", "origin", "error_class", "message", "stage", "field_paths", "adapter", "adapter_index", "locations")}
            ignored.append(dict(entry, reason=reason, by=by))
            continue
        override = next((value for pattern, value in selection.severity if matches(pattern, problem.rule_id)), None)
        kept.append(dataclasses.replace(problem, severity=override) if override and override != problem.severity else problem)
    return dataclasses.replace(report, problems=kept, ignored=ignored, selection=selection.to_dict())


def _why_ignored(rule_id: str, selection: Selection) -> tuple[str, str] | None:
    for entry in selection.ignore:
        if matches(entry.pattern, rule_id):
            return entry.reason or f"ignored ({entry.pattern})", entry.by
    if selection.select and not any(matches(p, rule_id) for p in selection.select):
        return f"not selected ({', '.join(selection.select)})", selection.select_by or COMMAND_LINE
    return None
