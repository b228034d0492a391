"""The fixes of a report: each problem whose rule states a machine-applicable `fix`
(engine/rule_schema.FixSpec), its edits computed in the context the rule fired in.

A fix's values are CEL over the same variables as the rule (`config`, `facts`, `adapter`,
`adapter_facts`, ...), plus `item` (the current element of the fix's `for_each`) and
`files.config` (the server config's name as the check's `input.unknown_keys` spell it). A
value that cannot be computed, or a fix whose `when` is false, is listed as not applicable,
with the reason: a fix is applied only where the inputs determine it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from inkling_compat.engine.context import adapter_document, cel_context, pick, prune
from inkling_compat.engine.plan import path_tree
from inkling_compat.engine import cel
from inkling_compat.engine.paths import referenced_paths
from inkling_compat.sglang.plain_dataclass import dataclass, replace

_HOLE = re.compile(r"\{(item(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")


@dataclass(frozen=True)
class Edit:
    """One computed change to the server config: `set` key to value, `remove` key, or
    `rename` key to `to`. `key` is the ServerConfig path (`lora_backend`, `env.SGLANG_X`)."""

    kind: str
    key: str
    value: Any = None
    to: str | None = None

    def __str__(self) -> str:
        if self.kind == "set":
            return f"set {self.key} = {self.value!r}"
        if self.kind == "rename":
            return f"rename {self.key} -> {self.to}"
        return f"remove {self.key}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": self.key}
        if self.kind == "set":
            out["value"] = self.value
        if self.kind == "rename":
            out["to"] = self.to
        return out


@dataclass(frozen=True)
class Fix:
    """One problem's machine-applicable fix. `applicable` False: listed, not applied (`reason`
    says why). `file`/`line`: where the first edit lands in the server config (line None: the
    key is added, or the config was not a file). `applied`: set by fix/apply.py."""

    rule_id: str
    safety: str
    description: str
    edits: tuple[Edit, ...]
    adapter: str | None = None
    applicable: bool = True
    reason: str | None = None
    file: str | None = None
    line: int | None = None
    applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "safety": self.safety,
            "description": self.description,
            "adapter": self.adapter,
            "edits": [e.to_dict() for e in self.edits],
            "applicable": self.applicable,
            "reason": self.reason,
            "file": self.file,
            "line": self.line,
            "applied": self.applied,
        }

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file and self.line else self.file or "<config>"
        edits = "; ".join(str(e) for e in self.edits) or "(nothing)"
        who = f" [{self.adapter}]" if self.adapter else ""
        return f"{self.rule_id}{who} ({self.safety}) at {where}: {edits}"


class FixSource(NamedTuple):
    """What a report's fixes are computed from: the check that made it (set by
    engine/evaluate.py; `Report.fixes()` asks it, so the report layer imports nothing above it)."""

    inputs: Any
    facts: Any
    rules: dict[str, Any]

    def fixes(self, report: Any) -> list["Fix"]:
        return fixes_of(report)


def fixes_of(report: Any) -> list[Fix]:
    """Every fix of `report`'s problems, in the report's order (one per problem that has one)."""
    source = getattr(report, "fix_source", None)
    if source is None:
        return []
    inputs, facts, rules = source
    out: list[Fix] = []
    seen: set[tuple[str, int | None]] = set()
    for problem in report.problems:
        rule = rules.get(problem.rule_id)
        if rule is None or rule.fix is None or (problem.rule_id, problem.adapter_index) in seen:
            continue
        seen.add((problem.rule_id, problem.adapter_index))
        out.append(plan_fix(rule, inputs, facts, problem.adapter_index, problem.adapter))
    return out


def plan_fix(rule: Any, inputs: Any, facts: Any, adapter_index: int | None = None, adapter: str | None = None) -> Fix:
    """`rule`'s fix computed for these inputs (for adapter `adapter_index` in an adapter rule)."""
    spec = rule.fix
    base = Fix(rule_id=rule.id, safety=spec.safety, description=spec.description.strip(), edits=(), adapter=adapter)
    texts = list(spec.expressions().values())
    ctx = cel_context(_variables(inputs, facts, texts, adapter_index))
    try:
        if spec.when is not None and _run(spec.when, ctx) is not True:
            return replace(base, applicable=False, reason="its condition does not hold for these inputs: " + " ".join(spec.when.split()))
        items: list[Any] = [None]
        if spec.for_each is not None:
            found = _run(spec.for_each, ctx)
            if not isinstance(found, list):
                return replace(base, applicable=False, reason="for_each is not a list")
            items = found
        edits: list[Edit] = []
        for item in items:
            if spec.for_each is not None:
                ctx.update({"item": item})
            for edit in spec.edits:
                if edit.when is not None and _run(edit.when, ctx) is not True:
                    continue
                key = _fill(edit.key, item)
                if edit.kind == "set":
                    value = _run(edit.value, ctx)
                    if value is None:
                        return replace(base, applicable=False, reason=f"the value of {key} is not determined by these inputs")
                    edits.append(Edit("set", key, _plain(value)))
                elif edit.kind == "rename":
                    edits.append(Edit("rename", key, to=_fill(edit.to or "", item)))
                else:
                    edits.append(Edit("remove", key))
    except Exception as exc:  # noqa: BLE001 - a value CEL cannot compute: listed, not applied
        return replace(base, applicable=False, reason=f"its value could not be computed: {type(exc).__name__}: {exc}")
    if not edits:
        return replace(base, applicable=False, reason="nothing to edit for these inputs")
    file, line = _place(inputs, edits[0].key)
    return replace(base, edits=tuple(edits), file=file, line=line)


def _run(expression: str, ctx: Any) -> Any:
    return cel.compile(expression).execute(ctx)


def _fill(key: str, item: Any) -> str:
    """`{item.a.b}` holes of a key replaced by the item's values."""

    def value(match: re.Match[str]) -> str:
        found = item
        for part in match.group(1).split(".")[1:]:
            found = found[part] if isinstance(found, dict) else getattr(found, part)
        return str(found)

    return _HOLE.sub(value, key)


def _plain(value: Any) -> Any:
    """A CEL result as plain Python (lists and maps of str, int, float, bool, None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def config_label(inputs: Any) -> str:
    """The server config's name as `input.unknown_keys` gives it (the path, else `<config>`)."""
    return inputs.sources.config or "<config>"


def _variables(inputs: Any, facts: Any, texts: list[str], adapter_index: int | None) -> dict[str, Any]:
    """The CEL variables the fix's expressions read, built as engine/context.py builds them."""
    paths = set().union(*(referenced_paths(t) for t in texts)) if texts else set()
    tree = path_tree(paths)
    server = inputs.server
    sources = {"config": server, "env": server.env, "model": inputs.model, "platform": inputs.platform}
    out: dict[str, Any] = {"files": {"config": config_label(inputs)}}
    for name, child in tree.items():
        if name in sources:
            out[name] = pick(sources[name], child)
        elif name == "facts":  # without the per-adapter list (that is `adapter_facts`)
            if None in child:
                out[name] = facts.model_dump(mode="json", exclude={"adapters"})
            else:
                out[name] = pick(facts, {k: v for k, v in child.items() if k != "adapters"})
        elif name == "input":
            out[name] = prune(inputs.input_variable(), child)
        elif name == "adapters":
            out[name] = [dict(adapter_document(m, None), form=a.form) for m, a in zip(inputs.adapters, facts.adapters)]
        elif name == "adapter_facts_list":
            out[name] = [a.model_dump(mode="json") for a in facts.adapters]
        elif name in ("adapter", "adapter_facts") and adapter_index is not None:
            manifest, af = inputs.adapters[adapter_index], facts.adapters[adapter_index]
            if name == "adapter":
                out[name] = prune(dict(adapter_document(manifest, None), form=af.form), child)
            else:
                out[name] = pick(af, child)
    return out


def _place(inputs: Any, key: str) -> tuple[str | None, int | None]:
    """Where `key` is in the server config file: (file, line), line None where it is not."""
    file = inputs.sources.config
    if file is None:
        return None, None
    from inkling_compat.inputs.config_keys import find_position

    return file, find_position(file, key)


__all__ = ["Edit", "Fix", "fixes_of", "plan_fix", "config_label"]
