"""The shipped rules compiled ahead of time: read-only data files inside the package.

Two files of `inkling_compat/data/`, for every rule file of the package's `rules/`, after a
load that passed every check (schema, path check, `after` references), in sglang's check order:

- `rules_compiled.py`, a module of constants (tuples, strings, numbers; nothing runs but
  their load): per rule what a check reads of every rule, the few plain fields the plan,
  coverage and the ordering read (engine/rule_record.CHECK_NAMES), and what the rule reads,
  worked out when the file was generated (`CompiledRule.derived()`: the variable paths, the
  `&&` operands of its `when`, the inputs coverage names, its place in the check order; the
  same of each variant), and the default release's plan of the rules (engine/plan.Plan.held:
  read back at every start instead of worked out). pip compiles it to bytecode at install, so a
  start unmarshals it (about 1 ms) instead of parsing JSON and converting it (about 10 ms);
- `rules.compiled.json`: per rule its expanded data (families merged, guards written out:
  what `Rule.model_validate` receives), one JSON line each, read and parsed only for a rule
  whose other fields are read (one that fires: engine/rule_record.PartialRule).

They are written by

    python -m inkling_compat.publish.compiled_rules            # regenerate after editing rules/
    python -m inkling_compat.publish.compiled_rules --check    # exit 1 if missing or stale

and read by `load_rules()` into plain records (engine/rule_record.py), without validating them
again; each CEL program is compiled when a check first evaluates it.
Both record a digest of the rule files and of the code that decides what is valid and what
a rule reads. Run from a source checkout (the tree, an editable install), a start whose digest
differs (rules or that code edited since the files were generated) compiles the rules from their
files instead, so an edit is never hidden by a stale file. An installed copy (a wheel: the rules
inside the package folder) does not read its rule files to hash them, about 4 ms of every start
with hashlib's import: the wheel's build refuses an artifact that is not current (setup.py,
`is_current_for`), and pip's RECORD holds every installed file's hash. Nothing is written at run
time but the module's bytecode where Python writes every module's, and nothing outside the
package is read: no user-writable cache can hold rule logic. Rules from any other folder are
always compiled from their files.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path

FORMAT = 4
ARTIFACT = "rules_compiled.py"  # what a check reads of every rule (a module of constants)
WHOLES = "rules.compiled.json"  # each rule's whole data, beside it
COMMAND = "python -m inkling_compat.publish.compiled_rules"
MAX_ARTIFACT_BYTES = 32 * 1024 * 1024  # the shipped files are well under 1 MB
# The code that decides whether a rule set is valid and what its rules read, relative to the package folder: an edit of
# any of them makes the artifact stale (and `load_rules()` compiles the files instead).
VALIDITY_CODE = (
    "engine/rule_schema.py", "engine/rule_record.py", "engine/rule_compile.py", "engine/rule_order.py", "engine/rule_load.py",
    "engine/definitions.py", "engine/paths.py", "engine/compiled_rules.py", "engine/cel_tree.py",
    "engine/coverage.py", "engine/plan.py", "facts/types.py", "inputs/models.py", "inputs/field_bounds.py", "inputs/input_schema.py", "inputs/versions.py",
)  # fmt: skip


def artifact_path() -> str:
    """The module of what a check reads of every rule (`wholes_path()`: beside it)."""
    return os.path.join(_package_folder(), "data", ARTIFACT)


def wholes_path() -> str:
    return os.path.join(os.path.dirname(artifact_path()), WHOLES)


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
    """The folder of the `inkling_compat` package this module is part of (resolved once: a
    start asks three times, each a walk of the path's links)."""
    global _PACKAGE
    if _PACKAGE is None:
        _PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return _PACKAGE


_PACKAGE: str | None = None


def installed(folder: "Path | str") -> bool:
    """Whether `folder` is an installed copy's rules: inside the package folder, where the wheel
    puts them (a source checkout has them beside it, at the top level)."""
    return os.path.dirname(os.path.realpath(folder)) == _package_folder()


def is_current_for(folder: "Path | str", artifact: bytes, wholes: bytes | None = None) -> bool:
    """Whether `artifact` (the module's bytes) was generated from `folder`'s rules and this
    code, and `wholes` (the data file's bytes, if given) with it."""
    digest = _head(artifact)
    if digest is None or digest != rules_digest(folder):
        return False
    return wholes is None or _wholes_digest(wholes) == digest


def _head(artifact: bytes) -> str | None:
    """The module's digest, read from its text (not run) if its format is this code's."""
    found: dict[bytes, bytes] = {}
    for line in artifact.split(b"\n", 8)[:8]:
        name, sep, value = line.partition(b" = ")
        if sep and name in (b"FORMAT", b"DIGEST"):
            found[name] = value.strip()
    digest = found.get(b"DIGEST", b"")
    if found.get(b"FORMAT") != str(FORMAT).encode() or len(digest) < 2 or digest[:1] != digest[-1:] or digest[:1] not in (b"'", b'"'):
        return None
    return digest[1:-1].decode("ascii", "replace")


def _wholes_digest(wholes: bytes) -> str | None:
    import json

    try:
        head = json.loads(wholes[: wholes.index(b"\n")])
    except ValueError:
        return None
    return head.get("digest") if isinstance(head, dict) and head.get("format") == FORMAT else None


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


def render(digest: str, ordered: Any, data: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """The two files' text (the module, the whole data): deterministic, one rule a line
    (readable diffs). `ordered`: the compiled rules in check order
    (engine/rule_order.check_order); `data`: file name -> the rule's expanded data."""
    import json

    from inkling_compat.engine.plan import Plan
    from inkling_compat.engine.rule_record import Rule, check_values
    from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION

    rows, checks, wholes = [], [], []
    for c in ordered:
        whole = data[c.file]
        # (values as the plain record of the whole data reads them: `sglang_versions` resolved)
        row = (c.file, check_values(Rule(whole)), c.derived())
        rows.append(f"    {row!r},\n")
        checks.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
        # Key order kept (no sort_keys): the rule pages show examples as they are written.
        wholes.append(json.dumps([c.file, whole], ensure_ascii=False, allow_nan=False))
    head = json.dumps({"format": FORMAT, "digest": digest, "rules": len(ordered), "note": _NOTE}, sort_keys=True)
    plan = (SGLANG_DEFAULT_VERSION, Plan(tuple(ordered), SGLANG_DEFAULT_VERSION).held())
    module = (
        f'"""{_NOTE} (engine/compiled_rules.py)"""\n\nFORMAT = {FORMAT}\nDIGEST = {digest!r}\n\n# (file, check values, derived)\nRULES = (\n'
        + "".join(rows)
        + f")\n\n# (the default release, its plan: engine/plan.Plan.held)\nPLAN = {plan!r}\n"
    )
    return module, "\n".join([head, *checks, *wholes]) + "\n"


_NOTE = f"Generated by `{COMMAND}` from rules/; do not edit."


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
    the rule reads); `plans`: version -> what the module holds of the rules' plan for it
    (engine/plan.Plan.held: the default release's); `whole(index)` parses that rule's expanded
    data (its own line of the data file, read when first needed) on demand."""

    __slots__ = ("rules", "digest", "plans", "_path", "_lines")

    def __init__(self, rules: tuple[Any, ...], digest: str, path: str, lines: list[bytes] | None = None, plans: dict[str, Any] | None = None):
        """`lines`: the data file's lines, if read already."""
        self.rules, self.digest, self._path, self._lines = rules, digest, path, lines
        self.plans = plans or {}

    def record(self, index: int, version: str | None = None) -> Any:
        """The whole record of the rule at `index` (engine/rule_record.Rule), or as it reads in
        `version` (its variant for that version merged in)."""
        from inkling_compat.engine.rule_record import Rule

        whole = Rule(self.whole(index))
        return whole if version is None else whole.for_version(version)

    def whole(self, index: int) -> dict[str, Any]:
        import json

        from inkling_compat.errors import RuleFileError

        if self._lines is None:
            raw = _read_regular(self._path, MAX_ARTIFACT_BYTES) or b""
            # (lines of another generation than the module's are not read)
            self._lines = raw.split(b"\n") if _wholes_digest(raw) == self.digest else []
        name = self.rules[index][0]
        try:
            item = json.loads(self._lines[1 + len(self.rules) + index])
        except (ValueError, IndexError):
            item = None
        if not (isinstance(item, list) and len(item) == 2 and item[0] == name and isinstance(item[1], dict)):
            raise RuleFileError(name, "(root)", f"compiled artifact: the data of {name} is missing or damaged ({WHOLES})")  # (only an artifact edited by hand)
        return item[1]


class _NoBytecode(Exception):
    """The module has no current bytecode and none may be written."""


def load(folder: "Path | str") -> Stored | None:
    """The artifact's rules when it is current for `folder` (the package's rules; an installed
    copy's is current by its build: module docstring), else None. Only the module is read
    here, from its bytecode; where it has none that is current and none may be written
    (PYTHONDONTWRITEBYTECODE: compiling its source costs some 70 ms a start), the same rows
    from the data file's JSON lines."""
    import stat

    path = artifact_path()
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_ARTIFACT_BYTES:  # (a FIFO or device is never read)
        return None
    lines, plan = None, None
    try:
        rules, digest, plan = _constants(path)
    except _NoBytecode:  # (the plan is then worked out, as for any rule set)
        lines, rules, digest = _json_rows()
    except Exception:  # noqa: BLE001 - an unusable artifact is not used, never an error
        return None
    if not isinstance(rules, tuple) or not isinstance(digest, str):
        return None
    for row in rules:
        if not (type(row) is tuple and len(row) == 3 and type(row[0]) is str and type(row[1]) is tuple and type(row[2]) is tuple):
            return None
    if not installed(folder) and digest != rules_digest(folder):
        return None
    plans = {plan[0]: plan[1]} if type(plan) is tuple and len(plan) == 2 and type(plan[0]) is str and type(plan[1]) is tuple and len(plan[1]) == 8 else None
    return Stored(rules, digest, wholes_path(), lines, plans)


def _constants(path: str) -> tuple[Any, Any, Any]:
    """(RULES, DIGEST, PLAN) of the module at `path`, run from its bytecode (as an import: written
    first where it is missing or stale and may be written)."""
    import importlib.machinery
    import sys

    class Loader(importlib.machinery.SourceFileLoader):
        def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]
            if sys.dont_write_bytecode:
                raise _NoBytecode
            return super().source_to_code(data, path, _optimize=_optimize)

    name = "inkling_compat.data.rules_compiled"
    code = Loader(name, path).get_code(name)
    # Constants only: a module that names anything else (a call, an import) or holds a
    # function is not run.
    if not set(code.co_names) <= _NAMES or any(hasattr(const, "co_code") for const in code.co_consts):
        return None, None, None
    namespace: dict[str, Any] = {"__builtins__": {}}
    exec(code, namespace)  # noqa: S102 - the package's own module of constants
    if namespace.get("FORMAT") != FORMAT:
        return None, None, None
    return namespace.get("RULES"), namespace.get("DIGEST"), namespace.get("PLAN")


def _json_rows() -> tuple[list[bytes] | None, Any, Any]:
    """(the data file's lines, RULES, DIGEST) from the data file, whose check lines hold the
    module's rows (JSON arrays for its tuples)."""
    import json

    raw = _read_regular(wholes_path(), MAX_ARTIFACT_BYTES)
    if raw is None:
        return None, None, None
    lines = raw.split(b"\n")
    head = json.loads(lines[0])
    if not (isinstance(head, dict) and head.get("format") == FORMAT and type(head.get("rules")) is int and 0 <= head["rules"] < len(lines)):
        return None, None, None
    rows = json.loads(b"[" + b",".join(lines[1 : 1 + head["rules"]]) + b"]")
    return lines, _tuples(rows), head.get("digest")


def _tuples(value: Any) -> Any:
    return tuple([_tuples(v) for v in value]) if type(value) is list else value


_NAMES = frozenset({"__doc__", "FORMAT", "DIGEST", "RULES", "PLAN"})


def _read_regular(path: "Path | str", cap: int) -> bytes | None:
    """The bytes of a regular file of at most `cap` bytes, else None (inputs/limits.read_bounded:
    a FIFO or device is never read)."""
    from inkling_compat.errors import InputError
    from inkling_compat.inputs.limits import read_bounded

    try:
        return read_bounded(path, cap)
    except InputError:
        return None
