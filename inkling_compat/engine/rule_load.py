"""Reading the rule files: every file of `rules/` (or the compiled artifact of the shipped
rules) expanded, validated and compiled, in sglang's check order. A broken rule file is
reported with its file name and the offending field. The shipped rules are read from the
compiled artifact into plain classes (engine/rule_record.py), neither validated again nor
compiled until a check evaluates them: pydantic is imported only to compile rule files."""

from __future__ import annotations

import gc
import os
from functools import lru_cache, partial

from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.engine.rule_record import PartialRule
from inkling_compat.errors import RuleFileError as InputError

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path

    from inkling_compat.engine import cel_tree, compiled_rules, definitions  # imported where used: a start from the compiled artifact needs none of it


def rules_dir() -> Path:
    """The package's rules folder (`rules_folder()` as a Path)."""
    from pathlib import Path

    return Path(rules_folder())


def rules_folder() -> str:
    """The package's rules folder, as a string (a start from the compiled artifact imports no
    pathlib): found by the import system, as `inputs/package_files.package_folder` finds it."""
    from inkling_compat.inputs.package_files import package_dir

    return os.path.normpath(package_dir("inkling_compat.rules"))


def rule_files(folder: Path | None = None) -> list[Path]:
    """Every rule file: `rules/<sglang component>/<rule id>.yaml` (files starting with `_` hold
    shared definitions, not rules)."""
    folder = folder or rules_dir()
    return sorted((p for p in folder.rglob("*.yaml") if not p.name.startswith("_")), key=lambda p: p.name)


def load_rule_file(path: Path, defs: "definitions.Definitions | None" = None) -> CompiledRule:
    """One rule file, its family and guards expanded (`defs`: those of the folder it is in)."""
    from inkling_compat.engine import definitions

    data, origins = _expanded(path, defs)
    if definitions.FOLLOWS in data:  # what it follows is in other files: the folder's expansion
        folder = _rules_root(path)
        data, origins = {p.name: d for p, d in _expanded_folder(folder, defs or _definitions(str(folder)))}[path.name]
    for key in definitions.PRIVATE:
        data.pop(key, None)
    compiled = _validated(data, origins, path.name, path.stem)
    compiled.compile_all()  # (a file loaded alone fails at load, as a folder does)
    return compiled


def _expanded_folder(folder: Path, defs: "definitions.Definitions") -> list[tuple[Path, tuple[dict[str, Any], dict[str, str]]]]:
    """Every rule file of `folder` expanded, each family's `follows` written out."""
    from inkling_compat.engine import definitions

    expanded = [(path, _expanded(path, defs)) for path in rule_files(folder)]
    definitions.resolve_follows({path.stem: data for path, (data, _) in expanded}, defs, {path.stem: path.name for path, _ in expanded})
    return expanded


def _expanded(path: Path, defs: "definitions.Definitions | None") -> tuple[dict[str, Any], dict[str, str]]:
    """A rule file's data as `Rule` reads it (family merged, guards written out) and, per field
    that came from a family, the family's file."""
    import yaml  # (only rule files are YAML: a start from the compiled artifact reads none)

    from inkling_compat.engine import definitions

    # libyaml's safe loader: the pure-Python one is many times slower on the rule files.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise InputError(path.name, "(yaml)", f"malformed YAML: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise InputError(path.name, "(root)", "a rule file must be a mapping")
    if defs is None:
        defs = _definitions(str(_rules_root(path)))
    return definitions.expand(data, path.name, defs)


def _validated(
    data: dict[str, Any], origins: dict[str, str], name: str, stem: str, programs: "dict[str, Any] | None" = None, analyses: "cel_tree.Analyses | None" = None
) -> CompiledRule:
    """The expanded data of one rule file validated (engine/rule_schema.py's pydantic models)."""
    from pydantic import ValidationError

    from inkling_compat.engine.rule_schema import Rule

    try:
        rule = Rule.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        file = origins.get(str(err["loc"][0]), name) if err["loc"] else name  # a family's value
        raise InputError(file, field, err["msg"]) from None
    if stem != rule.id:
        raise InputError(name, "id", f"file name must be the rule id ({rule.id}.yaml)")
    return CompiledRule(rule, name, programs, analyses)


def _stored(stored: "compiled_rules.Stored") -> "RuleSet":
    """The rules of the compiled artifact as plain records (engine/rule_record.py) holding the
    fields a check reads, the rest parsed from a rule's line when first read."""
    programs: dict[str, Any] = {}
    record_of, make = stored.record, CompiledRule.stored
    out = []
    for index, (name, values, derived) in enumerate(stored.rules):  # (some two hundred, at every start)
        try:
            record = partial(record_of, index)
            rule = PartialRule(values, record)
            compiled = make(rule, name, programs, derived, record)
        except (ValueError, TypeError, KeyError, IndexError) as exc:  # (only an artifact edited by hand)
            raise InputError(name, "(root)", f"compiled artifact: {exc}") from None
        if (name[: -len(".yaml")] if name.endswith(".yaml") else name) != rule.id:
            raise InputError(name, "id", f"file name must be the rule id ({rule.id}.yaml)")
        out.append(compiled)
    return RuleSet(out, stored.plans)


class RuleSet(tuple):  # type: ignore[type-arg]
    """The shipped rules as read from the compiled artifact (a tuple of `CompiledRule`s, in check
    order), with `plans`: version -> what the artifact holds of their plan (engine/plan.Plan
    reads it back instead of working it out: the default release's, at every start)."""

    plans: dict[str, Any]

    def __new__(cls, rules: "list[CompiledRule]", plans: "dict[str, Any] | None" = None) -> "RuleSet":
        self = super().__new__(cls, rules)
        self.plans = plans or {}
        return self


@lru_cache(maxsize=4)
def load_rules(directory: str | None = None) -> tuple[CompiledRule, ...]:
    """Every rule in `rules/` (or `directory`), validated and compiled, in sglang's check order.

    The package's own rules come from the compiled artifact (engine/compiled_rules.py) when it is
    current: plain records validated, ordered and analysed when the artifact was generated, each
    CEL program compiled when first evaluated; any other folder, or a stale artifact, is
    compiled from its files with every check."""
    from inkling_compat.engine import compiled_rules

    shipped = rules_folder()
    # (compared as paths: "rules/" names the same folder as "rules", and is the shipped rules too)
    if not directory or os.path.normpath(directory) == shipped:
        # The collector paused while the records are made: they live as long as the process
        # (this cache), and its passes over the process's objects, prompted by their thousands
        # of allocations, find no garbage (about 3 ms of a check's start).
        enabled = gc.isenabled()
        gc.disable()
        try:
            stored = compiled_rules.load(shipped)
            if stored is not None:
                return _stored(stored)
        finally:
            if enabled:
                gc.enable()
    from pathlib import Path

    from inkling_compat.engine.rule_order import check_order

    compiled, _ = compile_folder(Path(directory) if directory else rules_dir())
    return check_order(compiled)


def compile_folder(folder: Path) -> tuple[list[CompiledRule], list[tuple[str, dict[str, Any]]]]:
    """The rules of `folder` compiled from their files with every load-time check, and the
    expanded data of each (file name, data): what the compiled artifact holds."""
    # Imported here: a start from the compiled artifact needs none of these modules.
    from inkling_compat.engine import cel_tree, definitions
    from inkling_compat.engine.paths import check_rule_paths
    from inkling_compat.engine.rule_order import check_after, dependency_order

    defs = definitions.load_definitions(folder)
    expanded = _expanded_folder(folder, defs)
    programs: dict[str, Any] = {}
    analyses = cel_tree.Analyses()
    compiled = [_validated(data, origins, path.name, path.stem, programs, analyses) for path, (data, origins) in expanded]
    for c in compiled:
        c.compile_all()
    check_after(compiled)
    check_rule_paths(compiled)  # a misspelt fact or input path is refused here, not read as null
    dependency_order(compiled)  # a cycle is refused here too
    return compiled, [(path.name, data) for path, (data, _) in expanded]


@lru_cache(maxsize=4)
def _definitions(folder: str) -> "definitions.Definitions":
    from pathlib import Path

    from inkling_compat.engine import definitions

    return definitions.load_definitions(Path(folder))


def _rules_root(path: Path) -> Path:
    """The rules folder a rule file belongs to: the nearest folder above it with a guards
    file, else the folder above its component folder (rules/<component>/<id>.yaml)."""
    for folder in path.resolve().parents:
        if (folder / "_guards.yaml").is_file():  # definitions.GUARDS_FILE (not imported for this)
            return folder
    return path.resolve().parent.parent
