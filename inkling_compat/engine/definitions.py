"""Shared rule data: named guards and rule families, expanded into plain rule data at load time.

A guard (`rules/_guards.yaml`) names an applicability expression that several rules share, the way
Spectral names a selector once and rules reference it. A family (`rules/<component>/_family-<name>.yaml`)
holds what the rules of one sglang helper share (source, stage, scope, guards, ...); each member
stays its own file, `<rule id>.yaml`, with `family: <name>` and what is its own (id, message,
condition, explanation, fixes, examples). Both are expanded before the rule is validated, into the
same data the rule had when it was written out in full: the compiled expression, the evaluation
and the reports do not know guards or families exist. See docs/writing-rules.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from inkling_compat.engine import cel
from inkling_compat.errors import RuleFileError

GUARDS_FILE = "_guards.yaml"
FAMILY_PREFIX = "_family-"
ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# What makes a rule that rule: never shared, always in the member's own file.
MEMBER_OWN = ("id", "title", "message", "message_pattern", "condition", "explanation", "fixes", "examples", "variants", "order")
# What a family may hold for its members.
SHAREABLE = (
    "severity", "origin", "error_class", "params", "join", "source", "sglang_versions",
    "stage", "scope", "after", "guards", "when", "field_paths", "references", "inkling_only",
)  # fmt: skip


class Guard(BaseModel):
    """One named applicability expression."""

    model_config = ConfigDict(extra="forbid")

    expression: str = Field(description="CEL, ANDed into the `when` of every rule that names the guard")
    description: str = Field(description="What the guard means in sglang's terms")


class GuardsFile(BaseModel):
    """rules/_guards.yaml."""

    model_config = ConfigDict(extra="forbid")

    guards: dict[str, Guard]

    @field_validator("guards")
    @classmethod
    def _names(cls, value: dict[str, Guard]) -> dict[str, Guard]:
        bad = [name for name in value if not ID.match(name)]
        if bad:
            raise ValueError(f"guard names must be kebab-case: {bad}")
        return value


class FamilyFile(BaseModel):
    """rules/<component>/_family-<name>.yaml: what the rules of one sglang helper share."""

    model_config = ConfigDict(extra="forbid")

    family: str = Field(description="The family's name (= the file name after `_family-`)")
    description: str = Field(description="The sglang helper and how its members differ")
    shared: dict[str, Any] = Field(description="Rule fields every member gets (see SHAREABLE)")
    order: list[str] = Field(
        default_factory=list,
        description="Members in the order sglang's helper raises them: each listed member is `after` those listed before it",
    )
    follows: list[str] = Field(
        default_factory=list,
        description="Rule ids or family names that sglang reaches before the members listed in `order`: each of "
        "them is after these and after everything these are after (a family: all of its members)",
    )

    @field_validator("family")
    @classmethod
    def _kebab(cls, value: str) -> str:
        if not ID.match(value):
            raise ValueError("must be kebab-case (a-z, 0-9, '-')")
        return value

    @field_validator("shared")
    @classmethod
    def _shareable(cls, value: dict[str, Any]) -> dict[str, Any]:
        own = sorted(set(value) & set(MEMBER_OWN))
        if own:
            raise ValueError(f"{own} belong to each member, not to the family")
        unknown = sorted(set(value) - set(SHAREABLE))
        if unknown:
            raise ValueError(f"unknown rule field(s) {unknown}; a family may share {list(SHAREABLE)}")
        return value


@dataclass(frozen=True)
class Family:
    name: str
    file: str
    shared: dict[str, Any]
    order: tuple[str, ...] = ()
    follows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Definitions:
    """The guards and families of one rules folder."""

    guards: dict[str, Guard] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)


def _read(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise RuleFileError(path.name, "(yaml)", f"malformed YAML: {exc}".splitlines()[0]) from None


def _validate(model: type[BaseModel], data: Any, file: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RuleFileError(file, ".".join(str(p) for p in err["loc"]) or "(root)", err["msg"]) from None


def load_definitions(folder: Path) -> Definitions:
    """`_guards.yaml` at the top of `folder` and every `_family-*.yaml` below it."""
    guards: dict[str, Guard] = {}
    path = folder / GUARDS_FILE
    if path.is_file():
        guards = _validate(GuardsFile, _read(path), path.name).guards
        for name, guard in guards.items():
            try:
                cel.compile(guard.expression)
            except ValueError as exc:
                raise RuleFileError(path.name, f"guards.{name}.expression", f"CEL does not compile: {str(exc).splitlines()[0]}") from None
    families: dict[str, Family] = {}
    for path in sorted(folder.rglob(FAMILY_PREFIX + "*.yaml")):
        parsed = _validate(FamilyFile, _read(path), path.name)
        if path.stem != FAMILY_PREFIX + parsed.family:
            raise RuleFileError(path.name, "family", f"file name must be the family name ({FAMILY_PREFIX}{parsed.family}.yaml)")
        if parsed.family in families:
            raise RuleFileError(path.name, "family", f"family {parsed.family!r} is also defined in {families[parsed.family].file}")
        families[parsed.family] = Family(parsed.family, path.name, parsed.shared, tuple(parsed.order), tuple(parsed.follows))
    return Definitions(guards, families)


def expand(data: dict[str, Any], file: str, definitions: Definitions) -> tuple[dict[str, Any], dict[str, str]]:
    """A rule file's data with its family merged in and its guards written out as `when`.

    Returns the plain rule data and, for each top-level field that came from a family, the family's
    file (so that a bad shared value is reported where it is written).
    """
    own = dict(data)
    origins: dict[str, str] = {}
    shared: dict[str, Any] = {}
    name = own.pop("family", None)
    if name is not None:
        family = definitions.families.get(name) if isinstance(name, str) else None
        if family is None:
            known = ", ".join(sorted(definitions.families)) or "none"
            raise RuleFileError(file, "family", f"unknown family {name!r}; known: {known}")
        shared = family.shared
        origins = {key: family.file for key in shared if key not in own}
    guards = _names(shared.get("guards"), origins.get("guards", file)) + _names(own.pop("guards", None), file)
    whens = [w for w in (shared.get("when"), own.pop("when", None)) if w is not None]
    merged = _merge({k: v for k, v in shared.items() if k not in ("guards", "when")}, own, file, name)
    if name is not None:
        merged = _ordered(merged, family, file)
        merged[FAMILY_OF] = name
    conjuncts = []
    for guard in guards:
        if guard not in definitions.guards:
            known = ", ".join(sorted(definitions.guards)) or "none"
            raise RuleFileError(file, "guards", f"unknown guard {guard!r}; known: {known}")
        conjuncts.append(definitions.guards[guard].expression)
    conjuncts += whens
    if len(conjuncts) == 1:
        merged["when"] = conjuncts[0]
    elif conjuncts:
        if not all(isinstance(c, str) for c in conjuncts):
            raise RuleFileError(file, "when", "must be a string (a CEL expression)")
        merged["when"] = " && ".join(_conjunct(c) for c in conjuncts)
    return merged, origins


# Where a member's family `follows` other rules: resolved once every rule of the folder is
# expanded (`resolve_follows`), since what they are after may itself be derived.
FOLLOWS = "_follows"
FAMILY_OF = "_family"  # (the family a member belongs to, for a `follows` that names it)
PRIVATE = (FOLLOWS, FAMILY_OF)  # removed before a rule is validated


def _ordered(merged: dict[str, Any], family: Any, file: str) -> dict[str, Any]:
    """`after` derived from the family's `order` (the members listed before this one) and
    marked for its `follows`; a member not in `order` keeps its `after` as written."""
    rule_id = merged.get("id")
    if rule_id not in family.order:
        return merged
    before = list(family.order[: family.order.index(rule_id)])
    after = merged.get("after", [])
    if not isinstance(after, list):
        raise RuleFileError(file, "after", "must be a list of rule ids")
    merged = dict(merged, after=[*after, *(r for r in before if r not in after)])
    if family.follows:
        merged[FOLLOWS] = list(family.follows)
    return merged


def resolve_follows(datas: dict[str, dict[str, Any]], definitions: Definitions, files: dict[str, str]) -> None:
    """Write out each `follows` of the rules' expanded data (rule id -> data, in place): the
    rule is after each followed rule and everything that rule is after, in that rule's order
    (a family name stands for its members: its `order`, then the others by id)."""
    done: dict[str, list[str]] = {}

    def final_after(rule_id: str, chain: tuple[str, ...]) -> list[str]:
        if rule_id in done:
            return done[rule_id]
        if rule_id in chain:
            raise RuleFileError(files.get(rule_id, rule_id), "after", f"`follows` runs in a circle: {' -> '.join((*chain, rule_id))}")
        data = datas[rule_id]
        after: list[str] = []  # what it follows first (sglang reaches the helper after those), then its own
        for name in data.pop(FOLLOWS, []):
            for followed in _followed(name, datas, definitions, files.get(rule_id, rule_id)):
                for item in (*final_after(followed, (*chain, rule_id)), followed):
                    if item not in after and item != rule_id:
                        after.append(item)
        after += [item for item in data.get("after") or [] if item not in after]
        if after or "after" in data:
            data["after"] = after
        done[rule_id] = after
        return after

    for family in definitions.families.values():  # an `order` lists members, in their own `order`
        for rule_id in family.order:
            if datas.get(rule_id, {}).get(FAMILY_OF) != family.name:
                raise RuleFileError(family.file, "order", f"{rule_id!r} is not a member of family {family.name!r}")
        # (a member that gives no `order` takes it from the member before it: engine/rule_order.py)
        numbers = [datas[rule_id]["order"] for rule_id in family.order if datas[rule_id].get("order") is not None]
        if numbers != sorted(numbers):
            raise RuleFileError(family.file, "order", f"the members' own `order` numbers {numbers} do not rise along the family's order")
    for rule_id in list(datas):
        final_after(rule_id, ())
    for data in datas.values():
        data.pop(FAMILY_OF, None)


def _followed(name: str, datas: dict[str, dict[str, Any]], definitions: Definitions, file: str) -> list[str]:
    if name in definitions.families:
        family = definitions.families[name]
        members = sorted(r for r, d in datas.items() if d.get(FAMILY_OF) == name)
        return [*family.order, *(r for r in members if r not in family.order)]
    if name in datas:
        return [name]
    raise RuleFileError(file, "follows", f"unknown rule or family {name!r}")


def _names(value: Any, file: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RuleFileError(file, "guards", "must be a list of guard names")
    return value


def _merge(shared: dict[str, Any], own: dict[str, Any], file: str, family: str | None, at: str = "") -> dict[str, Any]:
    """Mappings merge key by key, lists are the family's items then the member's; any other
    value is either the family's or the member's, never both (one place states it)."""
    merged = dict(shared)
    for key, value in own.items():
        if key not in shared:
            merged[key] = value
        elif isinstance(value, dict) and isinstance(shared[key], dict):
            merged[key] = _merge(shared[key], value, file, family, f"{at}{key}.")
        elif isinstance(value, list) and isinstance(shared[key], list):
            merged[key] = shared[key] + value
        elif at == "source." and key == "function" and isinstance(value, str) and value.startswith(f"{shared[key]} ("):
            merged[key] = value  # a member refines where in the helper it is raised: "f (its branch)"
        else:
            raise RuleFileError(file, at + key, f"already set by family {family!r}; state it in one place")
    return merged




def _conjunct(expression: str) -> str:
    """`expression` as an operand of `&&`: parenthesized only if a top-level `||` or `?:` would
    otherwise bind differently (so guards expand to the text the rules had before)."""
    from inkling_compat.engine import cel_tree

    try:
        loose = cel_tree.analyse(expression).loose
    except ValueError:  # (CEL refuses it when the rule compiles; parenthesized meanwhile)
        loose = True
    return f"({expression})" if loose else expression


def file_form_schema(rule_schema: dict[str, Any], id_pattern: str) -> dict[str, Any]:
    """The JSON Schema of a rule *file*, from the schema of the expanded rule: `guards` and `family`
    added, the required fields required only without a family, and the schemas of the guards file
    and of a family file under `$defs` (`rule.schema.json#/$defs/GuardsFile`, `.../FamilyFile`)."""
    schema = dict(rule_schema)
    props = dict(schema["properties"])
    name = {"type": "string", "pattern": id_pattern}
    props["family"] = dict(name, description="Name of the family (rules/**/_family-<name>.yaml) whose shared fields this rule gets")
    props["guards"] = {
        "type": "array",
        "items": dict(name),
        "description": "Names of guards in rules/_guards.yaml, ANDed (in this order) before `when`",
    }
    props["when"] = dict(props["when"], description="CEL: when the check applies (after the guards, ANDed)")
    # A member states only its part of `source` (say its `line`); the family states the rest.
    full_source = props["source"]
    props["source"] = {"anyOf": [{"$ref": "#/$defs/PartialSource"}, {"type": "null"}], "default": None}
    schema["properties"] = props
    required = schema.pop("required", [])
    schema["required"] = ["id"]
    schema["anyOf"] = [{"required": ["family"]}, {"required": required, "properties": {"source": full_source}}]
    defs = dict(schema.get("$defs", {}))
    partial = {k: v for k, v in defs["Source"].items() if k != "required"}
    defs["PartialSource"] = dict(partial, title="PartialSource", description="`source` in a family or a member: the parts it states")
    guards = GuardsFile.model_json_schema()
    defs.update(guards.pop("$defs", {}))
    guards["properties"]["guards"]["propertyNames"] = {"pattern": id_pattern}
    defs["GuardsFile"] = guards
    family = FamilyFile.model_json_schema()
    family["properties"]["family"]["pattern"] = id_pattern
    family["properties"]["shared"] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {key: props[key] for key in SHAREABLE},
        "description": family["properties"]["shared"].get("description", ""),
    }
    defs["FamilyFile"] = family
    schema["$defs"] = defs
    return schema
