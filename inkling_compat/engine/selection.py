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

What a settings file did is never hidden: the report names the file used and, for each
severity override, ignore or select it applied, how many problems it changed and the line that
said so (`Report.selection["notes"]`: "1 error reported as warning by ../.inkling-compat.yaml:3").
Settings files are read with the inputs' caps (size, a regular file: never a FIFO or device).
"""

from __future__ import annotations

import functools
import os
import re


from inkling_compat.errors import InputError
from inkling_compat.inputs.command_line import COMMAND_LINE
from inkling_compat.report.model import Report
from inkling_compat.sglang.plain_dataclass import dataclass, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable, Literal
    from pathlib import Path

SETTINGS_YAML = ".inkling-compat.yaml"
PYPROJECT = "pyproject.toml"
TABLE = "tool.inkling-compat"


@functools.lru_cache(maxsize=1)
def _settings_models() -> tuple[Any, Any]:
    """(Settings, IgnoreEntry): the settings file's keys as pydantic models, built only when a
    settings file is read (a check without one imports no pydantic for them)."""
    from typing import Any, Literal  # (pydantic resolves the annotations below in this scope)

    from pydantic import BaseModel, ConfigDict

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
        checks: Any = None

    return Settings, IgnoreEntry


@dataclass(frozen=True)
class Ignore:
    """One ignored pattern, with its reason; `by`: where it was said (the settings file, or
    "(command line)"), `line`: the settings file's line that says it."""

    pattern: str
    reason: str
    by: str
    line: int | None = None

    replace = replace  # (ignore.replace(**changes), as dataclasses.replace(ignore, **changes))


@dataclass(frozen=True)
class Selection:
    """What counts of a check's problems. `select_by`: who gave `select` (the settings file or
    "(command line)"); `select_line`, `severity_lines`: the settings file's line of `select` and
    of each severity override (same order)."""

    select: tuple[str, ...] = ()
    ignore: tuple[Ignore, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    settings_file: str | None = None
    select_by: str | None = None
    select_line: int | None = None
    severity_lines: tuple[int | None, ...] = ()

    replace = replace  # (selection.replace(**changes), as dataclasses.replace(selection, **changes))

    @property
    def empty(self) -> bool:
        return not (self.select or self.ignore or self.severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings_file": self.settings_file,
            "select": list(self.select),
            "ignore": [dict({"rule": i.pattern, "reason": i.reason, "by": i.by}, **({} if i.line is None else {"line": i.line})) for i in self.ignore],
            "severity": dict(self.severity),
        }

    def said_by(self, by: str, line: int | None) -> str:
        """Where a setting was said: "../.inkling-compat.yaml:3", or "the command line"."""
        if by == COMMAND_LINE:
            return "the command line"
        shown = _relative(by)
        return f"{shown}:{line}" if line is not None else shown


def matches(pattern: str, rule_id: str) -> bool:
    pattern = pattern.strip()
    return rule_id == pattern or rule_id.startswith(pattern if pattern.endswith("-") else pattern + "-")


def find_settings(start: str | os.PathLike[str] | None) -> Path | None:
    """The nearest settings file at or above `start` (a file's folder, or a folder). (Searched
    with os.path: pathlib is imported only for a file found.)"""
    here = os.fspath(start) if start is not None else os.getcwd()
    if not os.path.isdir(here):
        here = os.path.dirname(here) or os.curdir
    folder = os.path.realpath(here if os.path.exists(here) else os.getcwd())
    while True:
        # Anything there but a folder counts (a FIFO or device is then refused by name when
        # read, never skipped silently nor read).
        candidate = os.path.join(folder, SETTINGS_YAML)
        if os.path.exists(candidate) and not os.path.isdir(candidate):
            return _path(candidate)
        pyproject = os.path.join(folder, PYPROJECT)
        if os.path.exists(pyproject) and not os.path.isdir(pyproject) and _pyproject_table(pyproject) is not None:
            return _path(pyproject)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _path(text: str) -> Path:
    from pathlib import Path

    return Path(text)


@functools.lru_cache(maxsize=1)
def _table_forms() -> tuple["re.Pattern[bytes]", "re.Pattern[bytes]", "re.Pattern[bytes]"]:
    """What `_names_table` looks for, as regexes (its definition; tests/test_selection.py holds
    the scanner to them): a mention of `inkling-compat` as a table or key name
    (`[tool.inkling-compat]`, `[[tool.inkling-compat.checks]]`, `tool.inkling-compat.select = ...`,
    `inkling-compat = {...}` under [tool]), not as a value (`name = "inkling-compat"`): a pyproject
    without it is not parsed (tomllib is not free at start-up); a mention that is a key with a string
    value (`inkling-compat = "inkling_compat.cli:main"` under [project.scripts]), ours only under
    [tool]; a table header (the one above a mention says whose it is)."""
    return (
        re.compile(rb'inkling-compat"?[ \t]*[.\]=]|\[\[?[ \t]*tool[ \t]*\.[ \t]*"?inkling-compat'),
        re.compile(rb'[ \t]*"?inkling-compat"?[ \t]*=[ \t]*["\']'),
        re.compile(rb'^[ \t]*\[\[?([ \t\w."\'-]*)\]\]?[ \t]*(?:#.*)?$', re.M),
    )


_NAME = b"inkling-compat"
_BLANKS = b" \t"
# The bytes a table header's name may hold (`[ \t\w."'-]`, `\w` of a bytes pattern: ASCII).
_HEADER_NAME = frozenset(b" \t._\"'-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _names_table(raw: bytes) -> bool:
    """Whether a pyproject's text may hold our table (then it is parsed): `_table_forms`'s
    reading, by one scan of each `inkling-compat` in it and of the lines before the last (no
    regex compiled at a check's start, about half a millisecond where a pyproject names the
    package; linear in the text, however many mentions share a line or follow a header)."""
    at = raw.find(_NAME)
    before = line = 0  # the last occurrence's offset and the start of its line
    read = 0  # the lines before this offset are read for table headers
    header: bytes | None = None  # the name of the last of them
    while at >= 0:  # (each mention holds one `inkling-compat`, and no two mentions share one)
        newline = raw.rfind(b"\n", before, at)
        if newline >= 0:
            line = newline + 1
        before = at
        if _mention(raw, at):
            if not _string_key(raw, line):
                return True
            while read < line:
                end = raw.index(b"\n", read)
                name = _header(raw[read:end])
                if name is not None:
                    header = name
                read = end + 1
            if header is not None and header.replace(b" ", b"").replace(b"\t", b"").strip(b"\"'") == b"tool":
                return True
        at = raw.find(_NAME, at + 1)
    return False


def _mention(raw: bytes, at: int) -> bool:
    """Whether the `inkling-compat` at `at` is in a match of `_table_forms()[0]`: a key or table
    name (`"?[ \t]*` then `.`, `]` or `=` after it), or the table of `[tool.` before it."""
    end = at + len(_NAME)
    if raw[end : end + 1] == b'"':
        end += 1
    while raw[end : end + 1] in (b" ", b"\t"):
        end += 1
    if raw[end : end + 1] in (b".", b"]", b"="):
        return True
    start = at - 1 if raw[at - 1 : at] == b'"' and at > 0 else at
    start = _blanks_before(raw, start)
    if raw[start - 1 : start] != b"." or start < 1:
        return False
    start = _blanks_before(raw, start - 1)
    if start < 4 or raw[start - 4 : start] != b"tool":
        return False
    start = _blanks_before(raw, start - 4)
    return start >= 1 and raw[start - 1 : start] == b"["


def _blanks_before(raw: bytes, end: int) -> int:
    while end > 0 and raw[end - 1 : end] in (b" ", b"\t"):
        end -= 1
    return end


def _string_key(raw: bytes, line: int) -> bool:
    """Whether `_table_forms()[1]` matches at `line`: `inkling-compat` a key with a string value."""
    at = line
    while raw[at : at + 1] in (b" ", b"\t"):
        at += 1
    if raw[at : at + 1] == b'"':
        at += 1
    if raw[at : at + len(_NAME)] != _NAME:
        return False
    at += len(_NAME)
    if raw[at : at + 1] == b'"':
        at += 1
    while raw[at : at + 1] in (b" ", b"\t"):
        at += 1
    if raw[at : at + 1] != b"=":
        return False
    at += 1
    while raw[at : at + 1] in (b" ", b"\t"):
        at += 1
    return raw[at : at + 1] in (b'"', b"'")


def _header(text: bytes) -> bytes | None:
    """The name of a table header line (`[name]`, `[[name]]`, blanks and a comment after), else None."""
    at, size = 0, len(text)
    while at < size and text[at] in _BLANKS:
        at += 1
    if text[at : at + 1] != b"[":
        return None
    at += 1
    if text[at : at + 1] == b"[":
        at += 1
    start = at
    while at < size and text[at] in _HEADER_NAME:
        at += 1
    name = text[start:at]
    if text[at : at + 1] != b"]":
        return None
    at += 1
    if text[at : at + 1] == b"]":
        at += 1
    while at < size and text[at] in _BLANKS:
        at += 1
    return name if at == size or text[at : at + 1] == b"#" else None


def _pyproject_table(path: Path) -> dict[str, Any] | None:
    """pyproject's [tool.inkling-compat] table, None without one. A pyproject that does not
    parse is someone else's business unless it mentions our table."""
    raw = _settings_bytes(path)
    if not _names_table(raw):  # (most pyprojects: not parsed at all)
        return None
    import tomllib

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


def _settings_bytes(path: Path) -> bytes:
    """A settings file's bytes, with the caps of an input document (inputs/loading)."""
    from inkling_compat.inputs.limits import read_bounded
    from inkling_compat.inputs.loading import MAX_INPUT_BYTES

    return read_bounded(path, MAX_INPUT_BYTES, "(settings)")


def _relative(file: str) -> str:
    try:
        return os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        return file


def _lines(path: Path, prefix: str) -> Any:
    """key path -> line of a settings file ("select", "ignore[1]", "severity.X"), or None."""
    try:
        text = _settings_bytes(path).decode("utf-8")
    except (InputError, UnicodeDecodeError):
        return lambda key, pattern=None: None
    if not prefix:  # YAML: every key's position from the composed document
        from inkling_compat.inputs.source_map import positions

        found = positions(text)
        return lambda key, pattern=None: found.get(key, (None,))[0]
    # pyproject.toml: the first line after our table's header that names the pattern (or key)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "inkling-compat" in line), 0)

    def line_of(key: str, pattern: str | None = None) -> int | None:
        base = key.split("[")[0].split(".")[0]
        needles = [f'"{pattern}"', f"'{pattern}'"] if pattern else []
        for i in range(start, len(lines)):
            if any(n in lines[i] for n in needles) or (not needles and re.match(rf"\s*{re.escape(base)}\s*=", lines[i])):
                return i + 1
        return None

    return line_of


def read_settings(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """(Settings, the key prefix its fields are named by in errors) from either kind of file."""
    path = _path(os.fspath(path))
    if path.name == PYPROJECT:
        table, prefix = _pyproject_table(path) or {}, f"{TABLE}."
    else:
        from inkling_compat.inputs.loading import read_document

        table, prefix = read_document(path), ""
    if not isinstance(table, dict):
        raise InputError(str(path), prefix.rstrip(".") or "(root)", f"expected a mapping, got {type(table).__name__}")
    from pydantic import ValidationError

    Settings, IgnoreEntry = _settings_models()
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
    severity_lines: list[int | None] = []
    select_line = None
    shown = None
    if settings_file is not None:
        shown = str(settings_file)
        settings, prefix = read_settings(settings_file)
        line_of = _lines(_path(os.fspath(settings_file)), prefix) if (settings.select or settings.ignore or settings.severity) else None
        for index, pattern in enumerate(settings.select or ()):
            _known(pattern, ids, shown, f"{prefix}select[{index}]")
            chosen.append(pattern.strip())
        if chosen and line_of is not None:
            select_line = line_of("select")
        for index, entry in enumerate(settings.ignore):
            rule, reason = (entry, "") if isinstance(entry, str) else (entry.rule, entry.reason)
            _known(rule, ids, shown, f"{prefix}ignore[{index}]" + ("" if isinstance(entry, str) else ".rule"))
            ignores.append(Ignore(rule.strip(), reason, shown, line_of(f"ignore[{index}]", rule) if line_of else None))
        for pattern, value in settings.severity.items():
            _known(pattern, ids, shown, f"{prefix}severity.{pattern}")
            severity[pattern.strip()] = value
            severity_lines.append(line_of(f"severity.{pattern}", pattern) if line_of else None)
    cli_select = _split(select)
    if cli_select:
        for pattern in cli_select:
            _known(pattern, ids, COMMAND_LINE, "--select")
        chosen = cli_select
    for pattern in _split(ignore):
        _known(pattern, ids, COMMAND_LINE, "--ignore")
        ignores.append(Ignore(pattern, "", COMMAND_LINE))
    return Selection(
        tuple(chosen), tuple(ignores), tuple(severity.items()), shown, COMMAND_LINE if cli_select else shown,
        None if cli_select else select_line, tuple(severity_lines),
    )


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


def ignored_entry(problem: Any) -> dict[str, Any]:
    """What `Report.ignored` keeps of a problem left out (its reason and `by` are added);
    `because` only for a bare assert, whose message says nothing."""
    keys = ("rule_id", "severity", "origin", "error_class", "message", "stage", "field_paths", "adapter", "adapter_index", "locations", "because")
    return {k: v for k, v in problem.to_dict().items() if k in keys and (k != "because" or v is not None)}


def apply(report: Report, selection: Selection) -> Report:
    """The report with unselected and ignored problems moved to `ignored` (with the reason)
    and severities overridden; the input report is left as it is."""
    if selection.empty:  # (a settings file with none of select, ignore, severity changes nothing)
        return report
    first = report.first
    kept = []
    ignored = list(report.ignored)
    said: dict[str, int] = {}  # note -> problems it applies to, in the order first met
    for problem in report.problems:
        why = _why_ignored(problem.rule_id, selection)
        if why is not None:
            reason, by = why
            entry = ignored_entry(problem)
            ignored.append(dict(entry, reason=reason, by=by))
            note = _ignore_note(problem.rule_id, selection)
            said[note] = said.get(note, 0) + 1
            continue
        index = next((i for i, (pattern, _) in enumerate(selection.severity) if matches(pattern, problem.rule_id)), None)
        override = selection.severity[index][1] if index is not None else None
        if override and override != problem.severity:
            line = selection.severity_lines[index] if index < len(selection.severity_lines) else None
            note = f"{problem.severity}(s) reported as {override} by {selection.said_by(selection.settings_file or COMMAND_LINE, line)} ({selection.severity[index][0]})"
            said[note] = said.get(note, 0) + 1
            problem = problem.replace(severity=override)
        kept.append(problem)
    chosen = selection.to_dict()
    notes = [f"settings: {_relative(selection.settings_file)}"] if selection.settings_file else []
    notes += [f"{count} {note.replace('(s)', '', 1) if count == 1 else note}" for note, count in said.items()]
    chosen["notes"] = notes
    first_ignored = report.first_ignored
    if first is not None and first_ignored is None and not any(p.rule_id == first.rule_id and p.adapter_index == first.adapter_index for p in kept):
        why = _why_ignored(first.rule_id, selection)
        first_ignored = {"rule_id": first.rule_id, "error_class": first.error_class, "message": first.message, "reason": why[0] if why else None}
        if first.because:
            first_ignored["because"] = first.because
    return report.replace(problems=kept, ignored=ignored, selection=chosen, first_ignored=first_ignored)


def _ignore_note(rule_id: str, selection: Selection) -> str:
    """What left `rule_id` out, and where that was said (without the count)."""
    for entry in selection.ignore:
        if matches(entry.pattern, rule_id):
            return f"problem(s) ignored by {selection.said_by(entry.by, entry.line)} ({entry.pattern})"
    return f"problem(s) not selected by {selection.said_by(selection.select_by or COMMAND_LINE, selection.select_line)} (select: {', '.join(selection.select)})"


def _why_ignored(rule_id: str, selection: Selection) -> tuple[str, str] | None:
    for entry in selection.ignore:
        if matches(entry.pattern, rule_id):
            return entry.reason or f"ignored ({entry.pattern})", entry.by
    if selection.select and not any(matches(p, rule_id) for p in selection.select):
        return f"not selected ({', '.join(selection.select)})", selection.select_by or COMMAND_LINE
    return None
