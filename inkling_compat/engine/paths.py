"""Load-time check of the paths rules read: every `facts.*`, `adapter_facts.*` and input path
a rule's `when`, `condition` or `params` reads must exist in the schema of that variable
(the facts models in `inkling_compat.facts.types`, the input models in
`inkling_compat.inputs.models`). A misspelt path would otherwise read as null and make the
rule silently false; here it refuses the rule file (`RuleFileError`, exit 3 in the CLI).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterable

from inkling_compat.engine import cel, cel_tree
from inkling_compat.errors import RuleFileError
from inkling_compat.inputs.package_files import package_folder

# Variables an expression may read (see docs/writing-rules.md).
VARIABLES = ("config", "env", "model", "platform", "facts", "input", "adapter", "adapter_facts", "adapters", "adapter_facts_list")


def referenced_paths(expression: str, analyses: "cel_tree.Analyses | None" = None) -> set[tuple[str, ...]]:
    """Dotted variable paths an expression reads, e.g. ("facts", "sink", "sink_class"), from its
    parse tree (engine/cel_tree.py: a method call, index or macro reads its operand whole; a
    comprehension variable is not a global even where it has a global's name).

    Used to hand CEL only the values the rules read (engine/plan.py, engine/context.py) and
    to refuse a path the schemas do not define (below)."""
    return cel_tree.reads(analyses.get(expression) if analyses is not None else cel_tree.analyse(expression), VARIABLES)


def _schema_file(name: str) -> dict[str, Any]:
    return json.loads((package_folder("inkling_compat.schemas") / name).read_text(encoding="utf-8"))


def _with_defs(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    return dict(node, **{"$defs": defs})


@lru_cache(maxsize=1)
def variable_schemas() -> dict[str, dict[str, Any]]:
    """The JSON schema of each CEL variable a rule may read, from the published schema files
    (tests/test_schemas.py keeps them equal to the models; reading them is fast)."""
    facts_file = _schema_file("facts.schema.json")
    defs = facts_file.get("$defs", {})
    facts = dict(facts_file, properties={k: v for k, v in facts_file["properties"].items() if k != "adapters"})
    adapter_facts_list = _with_defs(facts_file["properties"]["adapters"], defs)
    server = _schema_file("server-config.schema.json")
    manifest = _schema_file("adapter-manifest.schema.json")
    manifest_defs = {
        name: dict(d, properties=dict(d.get("properties", {}), form={"type": "string"}))  # `form` is added by the engine
        if name in ("PoolManifest", "PeftManifest") else d
        for name, d in manifest.get("$defs", {}).items()
    }
    adapter = _with_defs(manifest, manifest_defs)
    return {
        "facts": facts,
        "adapter_facts": _with_defs(adapter_facts_list["items"], defs),
        "adapter_facts_list": adapter_facts_list,
        "config": server,
        "env": _with_defs(server["$defs"]["EnvSwitches"], server["$defs"]),
        "model": _schema_file("model-config.schema.json"),
        "platform": _schema_file("platform.schema.json"),
        "adapter": adapter,
        "adapters": {"type": "array", "items": adapter, "$defs": manifest_defs},
        "input": {
            "type": "object",
            "properties": {"unknown_keys": {"type": "array"}, "refusals": {"type": "array"}, "parse_warnings": {"type": "array"}, "choice_stop": {"type": ["string", "null"]}},
            "additionalProperties": False,
        },
    }


def _branches(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """`node` with $ref resolved and anyOf/oneOf/allOf split into alternatives."""
    if "$ref" in node:
        return _branches(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            return [b for sub in node[key] for b in _branches(sub, defs)]
    return [node]


def path_exists(path: tuple[str, ...]) -> bool:
    """Whether the dotted `path` (variable first) names a field of that variable's schema."""
    root = variable_schemas().get(path[0])
    if root is None:
        return True  # not a variable this check knows (rules.VARIABLES decides what is one)
    defs = root.get("$defs", {})
    nodes = [root]
    for segment in path[1:]:
        following = []
        for node in nodes:
            for branch in _branches(node, defs):
                properties = branch.get("properties")
                if properties is not None and segment in properties:
                    following.append(properties[segment])
                elif branch.get("type") == "object" and properties is None or branch.get("additionalProperties") not in (None, False):
                    extra = branch.get("additionalProperties")
                    following.append(extra if isinstance(extra, dict) else {})  # a map: any key
                elif not branch.get("type") and not properties and "enum" not in branch and "const" not in branch:
                    following.append({})  # untyped (Any): anything may follow
        if not following:
            return False
        nodes = following
    return True


def _paths_or_refusal(expression: str, file: str, field: str) -> Iterable[tuple[str, ...]]:
    try:
        return sorted(referenced_paths(expression))
    except ValueError as exc:  # (CEL compiled it: a construct engine/cel_tree.py does not parse)
        raise RuleFileError(file, field, f"cannot tell what it reads: {exc}") from None


def check_rule_paths(compiled: Iterable[Any]) -> None:
    """Raise `RuleFileError` naming the file and the path for the first unknown path."""
    for c in compiled:
        versions = [c] + [v for v in getattr(c, "_versions", {}).values() if v is not None and v is not c]
        for v in versions:
            fields = [("when/condition", v.rule.when), ("when/condition", v.rule.condition)] + [(f"params.{name}", e) for name, e in v.rule.params.items()]
            for field, expression in fields:
                for path in _paths_or_refusal(expression, c.file, field):
                    if not path_exists(path):
                        raise RuleFileError(c.file, field, f"reads {'.'.join(path)}, which the {path[0]} schema does not define")
        check_fix(c.rule.fix, c.file)


def check_fix(fix: Any, file: str) -> None:
    """A rule's `fix` (engine/rule_schema.FixSpec): its expressions compile and read only defined paths,
    and every key it edits (other than an `{item}` hole) is a server-config setting."""
    if fix is None:
        return
    for field, expression in fix.expressions().items():
        try:
            cel.compile(expression)
        except ValueError as exc:
            raise RuleFileError(file, field, f"CEL does not compile: {str(exc).splitlines()[0]}") from None
        for path in _paths_or_refusal(expression, file, field):
            if not path_exists(path):
                raise RuleFileError(file, field, f"reads {'.'.join(path)}, which the {path[0]} schema does not define")
    for index, edit in enumerate(fix.edits):
        for name in ("set", "remove", "rename", "to"):
            key = getattr(edit, name)
            if key is not None and "{" not in key and not path_exists(("config", *key.split("."))):
                raise RuleFileError(file, f"fix.edits.{index}.{name}", f"edits {key}, which the server config schema does not define")
