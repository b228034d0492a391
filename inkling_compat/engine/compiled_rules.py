"""The shipped rules compiled ahead of time: a read-only data file inside the package.

`inkling_compat/data/rules.compiled.json` holds, for every rule file of the package's `rules/`,
after a load that passed every check (schema, path check, `after` references), in sglang's check
order, one line each:

- first, what a check reads of every rule: the few plain fields the plan, coverage and the
  ordering read (engine/rule_record.CHECK_FIELDS), and what the rule reads, worked out when the
  file was generated (`CompiledRule.derived()`: the variable paths, the `&&` operands of its
  `when`, the inputs coverage names, its place in the check order);
- then its expanded data (families merged, guards written out: what `Rule.model_validate`
  receives), parsed only for a rule whose other fields are read (one that fires, or has
  variants: engine/rule_record.PartialRule).

It is written by

    python -m inkling_compat.publish.compiled_rules            # regenerate after editing rules/
    python -m inkling_compat.publish.compiled_rules --check    # exit 1 if missing or stale

and read by `load_rules()` into plain records (engine/rule_record.py), without validating them
again; each CEL program is compiled when a check first evaluates it.
The file records a digest of the rule files and of the code that decides what is valid and what
a rule reads. Run from a source checkout (the tree, an editable install), a start whose digest
differs (rules or that code edited since the file was generated) compiles the rules from their
files instead, so an edit is never hidden by a stale file. An installed copy (a wheel: the rules
inside the package folder) does not read its rule files to hash them, about 4 ms of every start
with hashlib's import: the wheel's build refuses an artifact that is not current (setup.py,
`is_current_for`), and pip's RECORD holds every installed file's hash. Nothing is written at run
time and nothing outside the package is read: no user-writable cache can hold rule logic. Rules
from any other folder are always compiled from their files.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

FORMAT = 3
ARTIFACT = "rules.compiled.json"
COMMAND = "python -m inkling_compat.publish.compiled_rules"
MAX_ARTIFACT_BYTES = 32 * 1024 * 1024  # the shipped file is well under 1 MB
# The code that decides whether a rule set is valid and what its rules read, relative to the package folder: an edit of
# any of them makes the artifact stale (and `load_rules()` compiles the files instead).
VALIDITY_CODE = (
    "engine/rule_schema.py", "engine/rule_record.py", "engine/rule_compile.py", "engine/rule_order.py", "engine/rule_load.py",
    "engine/definitions.py", "engine/paths.py", "engine/compiled_rules.py", "engine/cel_tree.py",
    "engine/coverage.py", "engine/plan.py", "facts/types.py", "inputs/models.py", "inputs/field_bounds.py", "inputs/input_schema.py", "inputs/versions.py",
)  # fmt: skip


def artifact_path() -> str:
    return os.path.join(_package_folder(), "data", ARTIFACT)


def rules_digest(folder: "Path | str") -> str:
    """Hash of every `*.yaml` below `folder` (names and bytes) and of the validity code (the
    schemas the path check reads are generated from that code)."""
    try:  # hashlib's own blake2b (tests/test_compiled_rules.py), without OpenSSL's import (3-4 ms)
        from _blake2 import blake2b
    except ImportError:  # (an interpreter without CPython's module)
        from hashlib import blake2b

    package = _package_folder()
    h = blake2b(f"format {FORMAT}".encode(), digest_size=16)
    for relative, path in sorted(_yaml_files(str(folder), "")):
        h.update(b"rules/" + relative.encode() + b"\0" + _bytes(path) + b"\0")
    for name in VALIDITY_CODE:
        path = os.path.join(package, name)
        # Line endings normalised: a checkout with CRLF files is the same code.
        h.update(name.encode() + b"\0" + _bytes(path).replace(b"\r\n", b"\n") + b"\0")
    return h.hexdigest()


def _package_folder() -> str:
    """The folder of the `inkling_compat` package this module is part of."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def installed(folder: "Path | str") -> bool:
    """Whether `folder` is an installed copy's rules: inside the package folder, where the wheel
    puts them (a source checkout has them beside it, at the top level)."""
    return os.path.dirname(os.path.realpath(folder)) == _package_folder()


def is_current_for(folder: "Path | str", artifact: bytes) -> bool:
    """Whether `artifact` (the file's bytes) was generated from `folder`'s rules and this code."""
    try:
        head = json.loads(artifact[: artifact.index(b"\n")])
    except ValueError:
        return False
    return isinstance(head, dict) and head.get("format") == FORMAT and head.get("digest") == rules_digest(folder)


def _bytes(path: str) -> bytes:
    try:
        with open(path, "rb", buffering=0) as handle:  # (unbuffered: one read, sized by the file)
            return handle.readall()
    except OSError:
        return b"(missing)"


def _yaml_files(folder: str, prefix: str) -> list[tuple[str, str]]:
    """(path relative to the rules folder, path) of every `*.yaml` below `folder`."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                found += _yaml_files(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".yaml"):
                found.append((prefix + entry.name, entry.path))
    return found


def render(digest: str, ordered: Any, data: dict[str, dict[str, Any]]) -> str:
    """The artifact's text: deterministic, one rule a line (readable diffs). `ordered`: the
    compiled rules in check order (engine/rule_order.check_order); `data`: file name -> the
    rule's expanded data."""
    from inkling_compat.engine.rule_record import CHECK_FIELDS, Rule

    head = json.dumps({"format": FORMAT, "digest": digest, "rules": len(ordered), "note": f"Generated by `{COMMAND}` from rules/; do not edit."}, sort_keys=True)
    checks, wholes = [], []
    for c in ordered:
        whole = data[c.file]
        check = {key: value for key, value in whole.items() if key in CHECK_FIELDS}
        check["sglang_versions"] = Rule(whole).sglang_versions  # (resolved: every version not taken by a variant)
        # Key order kept (no sort_keys): the rule pages show examples as they are written.
        checks.append(json.dumps([c.file, check, c.derived()], ensure_ascii=False, allow_nan=False))
        wholes.append(json.dumps([c.file, whole], ensure_ascii=False, allow_nan=False))
    return "\n".join([head, *checks, *wholes]) + "\n"


def expression_table(compiled: Any) -> dict[str, Any]:
    """Text -> `Analysis.to_json()` of every expression of `compiled` (each rule and variant:
    `when` as written and as the guards read it, `condition`, `params`, the fix's)."""
    from inkling_compat.engine import cel_tree

    texts: set[str] = set()
    for c in compiled:
        for v in [c, *(v for v in c._versions.values() if v is not None)]:
            rule = v.rule
            texts.update((rule.when, rule.when.strip(), rule.condition, *rule.params.values()))
            if rule.fix is not None:
                texts.update(rule.fix.expressions().values())
    return {text: cel_tree.analyse(text).to_json() for text in texts}


class Stored:
    """The artifact read: per rule in check order, (file name, the fields a check reads, what
    the rule reads); `whole(index)` parses that rule's expanded data (its own line) on demand."""

    __slots__ = ("checks", "_raw", "_start", "_lines")

    def __init__(self, checks: list[Any], raw: bytes, start: int):
        """`raw[start:]`: the lines of the rules' whole data, in the order of `checks`."""
        self.checks, self._raw, self._start = checks, raw, start
        self._lines: list[bytes] | None = None

    def whole(self, index: int) -> dict[str, Any]:
        from inkling_compat.errors import RuleFileError

        if self._lines is None:
            self._lines = self._raw[self._start :].split(b"\n")
        name = self.checks[index][0]
        try:
            item = json.loads(self._lines[index])
        except (ValueError, IndexError):
            item = None
        if not (isinstance(item, list) and len(item) == 2 and item[0] == name and isinstance(item[1], dict)):
            raise RuleFileError(name, "(root)", f"compiled artifact: the line of {name} is damaged")  # (only an artifact edited by hand)
        return item[1]


def load(folder: "Path | str") -> Stored | None:
    """The artifact's rules when it is current for `folder` (the package's rules; an installed
    copy's is current by its build: module docstring), else None. Only the head and the check
    lines are parsed here."""
    raw = _read_regular(artifact_path(), MAX_ARTIFACT_BYTES)
    if raw is None:
        return None
    try:
        first = raw.index(b"\n") + 1
        head = json.loads(raw[:first])
        if not (isinstance(head, dict) and head.get("format") == FORMAT and isinstance(head.get("rules"), int) and head["rules"] >= 0):
            return None
        end = first
        for _ in range(head["rules"]):
            end = raw.index(b"\n", end) + 1
        if not installed(folder) and head.get("digest") != rules_digest(folder):
            return None
        checks = json.loads(b"[" + raw[first : end - 1].replace(b"\n", b",") + b"]") if end > first else []
    except (ValueError, TypeError):
        return None
    for item in checks:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and isinstance(item[1], dict) and isinstance(item[2], dict)):
            return None
    return Stored(checks, raw, end)


def _read_regular(path: "Path | str", cap: int) -> bytes | None:
    """The bytes of a regular file of at most `cap` bytes, else None (inputs/limits.read_bounded:
    a FIFO or device is never read); an unusable artifact is not used, never an error."""
    from inkling_compat.errors import InputError
    from inkling_compat.inputs.limits import read_bounded

    try:
        return read_bounded(path, cap)
    except InputError:
        return None
