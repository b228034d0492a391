"""The engine: load inputs, derive facts once, evaluate every rule, build the report.

`check(config, adapter=None, *, model=None, platform=None)` is the public entry point.
Rules are evaluated in sglang's start-up order; a rule listed in another's `after` gates
it the way sglang's sequential raises do (a later check is not reachable, or not even
evaluable, once an earlier one fails).
"""

from __future__ import annotations

import dataclasses
import re
import string
from functools import lru_cache
from typing import Any, Iterable

from inkling_compat.engine import cel
from inkling_compat.facts import derive as facts_mod
from inkling_compat.facts import fleet as fastpath
from inkling_compat.errors import RuleEvaluationError
from inkling_compat.inputs.models import SGLANG_DEFAULT_VERSION, SGLANG_VERSIONS
from inkling_compat.inputs.loading import load_adapter, load_model_config, load_platform, load_server_config
from inkling_compat.report.model import Problem, Report
from inkling_compat.engine.rules import STAGES, CompiledRule, load_rules

_FORMATTER = string.Formatter()
SUPPORTED_VERSIONS = SGLANG_VERSIONS


def python_type_name(value: Any) -> str:
    """`str(type(value))` of the Python object sglang would see, for messages quoting it."""
    return str(type(value))


def python_sorted(values: list[Any]) -> list[Any]:
    return sorted(values)


def join_strings(values: list[Any], separator: str) -> str:
    return separator.join(str(v) for v in values)


def _context(variables: dict[str, Any]) -> Any:
    ctx = cel.Context()
    ctx.update(variables)
    ctx.add_function("pytype", python_type_name)
    ctx.add_function("pysorted", python_sorted)
    ctx.add_function("join", join_strings)
    return ctx


def _adapters_list(adapter: Any) -> list[Any]:
    if adapter is None:
        return []
    if isinstance(adapter, (list, tuple)):
        return list(adapter)
    return [adapter]


@dataclasses.dataclass(frozen=True)
class Inputs:
    """The typed inputs of one check, as loaded (what the facts are derived from)."""

    server: Any
    model: Any
    platform: Any
    adapters: tuple[Any, ...]
    unknown_keys: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Checked:
    """One check's inputs, facts and report: callers that need more than the report
    (the runtime) reuse these instead of loading and deriving a second time."""

    inputs: Inputs
    facts: Any
    report: Report


def check(
    config: Any = None,
    adapter: Any = None,
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: str = SGLANG_DEFAULT_VERSION,
    rules: Iterable[CompiledRule] | None = None,
) -> "Report":
    """Check a serving setup against every rule; never raises for problems it finds.

    `config`, `model`, `platform` and each adapter may be a path (YAML/JSON), a dict or
    the typed model. `adapter` may also be a list. Unusable input raises `InputError`.
    """
    return evaluate(config, adapter, model=model, platform=platform, sglang_version=sglang_version, rules=rules).report


def evaluate(
    config: Any = None,
    adapter: Any = None,
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: str = SGLANG_DEFAULT_VERSION,
    rules: Iterable[CompiledRule] | None = None,
) -> Checked:
    """`check()`, returning the loaded inputs and the derived facts with the report."""
    if sglang_version not in SUPPORTED_VERSIONS:
        from inkling_compat.errors import InputError

        raise InputError("<sglang_version>", "sglang_version", f"unsupported {sglang_version!r}; known: {SUPPORTED_VERSIONS}")
    server, unknown = load_server_config(config)
    model_cfg = load_model_config(model)
    platform_cfg, unknown_platform = load_platform(platform)
    unknown += unknown_platform
    manifests = []
    lora_paths = facts_mod.lora_path_entries(server)  # names adapter directories listed there
    for item in _adapters_list(adapter):
        manifest, unknown_adapter = load_adapter(item, lora_paths)
        manifests.append(manifest)
        unknown += unknown_adapter
    # Alike adapters (one training recipe: same tensor table) share their derived facts.
    per_adapter = fastpath.derive_adapter_facts(manifests, model_cfg)
    facts = facts_mod.derive(server, model_cfg, platform_cfg, per_adapter)
    fastpath.add_pool_fit(per_adapter, facts, model_cfg, server)  # the pool is known now
    compiled = tuple(rules) if rules is not None else load_rules()
    plan = _plan(compiled, sglang_version)
    adapter_docs = [fastpath.adapter_document(m, f["form"], plan.adapter_keys) for m, f in zip(manifests, per_adapter)]
    facts["fleet"] = fastpath.fleet_facts(facts, manifests, per_adapter)
    base = {
        "config": server.model_dump(mode="json"),
        "env": server.env.model_dump(mode="json"),
        "model": model_cfg.model_dump(mode="json"),
        "platform": platform_cfg.model_dump(mode="json"),
        "facts": facts,
        "input": {"unknown_keys": unknown},
        "adapters": adapter_docs,
        "adapter_facts_list": per_adapter,
        "adapter": None,
        "adapter_facts": None,
    }
    # One CEL context: converting values into CEL dominates the cost of a check, so the
    # shared part is converted once and only the adapter variables change per adapter.
    shared = _prune(base, plan.tree)
    for key in ("adapters", "adapter_facts_list"):  # cross-adapter rules: only the keys they read
        if isinstance(shared.get(key), list):
            shared[key] = [_keep_keys(item, plan.item_keys) for item in shared[key]]
    adapter_views = [
        (_prune(doc, plan.adapter_tree.get("adapter", {None: True})), _prune(af, plan.adapter_tree.get("adapter_facts", {None: True})))
        for doc, af in zip(adapter_docs, per_adapter)
    ]
    if adapter_views:  # the first adapter rides along with the global variables
        shared["adapter"], shared["adapter_facts"] = adapter_views[0]
    ctx = _context(shared)
    # The CEL context re-converts *every* variable on the first evaluation after an update, so
    # the second and later adapters get a context of their own holding only what adapter rules
    # read: without the whole-fleet lists (unless an adapter rule reads them) a fleet check
    # stays linear in the number of adapters.
    actx = ctx
    if len(adapter_views) > 1:
        adapter_shared = _prune(base, plan.adapter_global_tree)
        for key in ("adapters", "adapter_facts_list"):
            if isinstance(adapter_shared.get(key), list):
                adapter_shared[key] = shared[key]
        actx = _context(adapter_shared)

    fired: list[tuple[tuple[int, int, int], CompiledRule, str, str | None]] = []
    evaluated = 0
    global_fired: set[str] = set()
    if adapter_views:
        all_hits = _evaluate_all(plan.global_rules + plan.adapter_rules, plan.both_program, ctx)
    else:
        all_hits = _evaluate_all(plan.global_rules, plan.global_program, ctx)
    for index in range(-1, len(adapter_views)):
        rctx = actx if index > 0 else ctx
        if index > 0:
            actx.update({"adapter": adapter_views[index][0], "adapter_facts": adapter_views[index][1]})
            all_hits = _evaluate_all(plan.adapter_rules, plan.adapter_program, actx)
        rules = plan.global_rules if index < 0 else plan.adapter_rules
        hits = all_hits
        scope_fired = global_fired if index < 0 else set(global_fired)
        for c in rules:
            rule = c.rule
            if rule.after and not scope_fired.isdisjoint(rule.after):
                continue
            evaluated += 1
            hit = hits[rule.id]
            if isinstance(hit, RuleEvaluationError):
                raise hit
            if not hit:
                continue
            scope_fired.add(rule.id)
            key = (STAGES.index(rule.stage), index, rule.order)
            fired.append((key, c, _render(c, rctx), per_adapter[index]["name"] if index >= 0 else None))

    fired.sort(key=lambda item: item[0])
    problems = [
        dataclasses.replace(p, adapter_index=item[0][1]) if item[0][1] >= 0 else p for p, item in zip(_join(fired), fired)
    ]
    given = {name: facts["sink"][name] for name in facts["sink"]["given"]}
    summary = [{"name": m.name, "path": getattr(m, "path", None), "form": f["form"]} for m, f in zip(manifests, per_adapter)]
    report = Report(problems=problems, given_facts=given, sglang_version=sglang_version, rules_evaluated=evaluated, adapters=summary)
    inputs = Inputs(server=server, model=model_cfg, platform=platform_cfg, adapters=tuple(manifests), unknown_keys=tuple(unknown))
    return Checked(inputs=inputs, facts=facts, report=report)


class _Plan:
    """Rules of one sglang version split by scope, each scope's conditions compiled into one
    CEL list so a check costs one evaluation per scope, and the variable paths they read."""

    def __init__(self, compiled: tuple[CompiledRule, ...], version: str):
        versioned = (c.for_version(version) for c in compiled)
        self.ordered = tuple(c for c in versioned if c is not None)
        self.global_rules = tuple(c for c in self.ordered if c.rule.scope != "adapter")
        self.adapter_rules = tuple(c for c in self.ordered if c.rule.scope == "adapter")
        self.global_paths = set().union(*(c.paths for c in self.global_rules))
        self.adapter_paths = set().union(*(c.paths for c in self.adapter_rules))
        shared = {p for p in self.global_paths | self.adapter_paths if p[0] not in ("adapter", "adapter_facts")}
        self.tree = _path_tree(shared)
        self.adapter_tree = _path_tree({p for p in self.adapter_paths if p[0] in ("adapter", "adapter_facts")})
        # What adapter rules read besides the adapter (their own, smaller context).
        self.adapter_global_tree = _path_tree({p for p in self.adapter_paths if p[0] not in ("adapter", "adapter_facts")})
        # Every `.name` any expression reads: the items of `adapters` / `adapter_facts_list`
        # keep only these keys (a superset of what a macro like `adapters.exists(a, a.name ...)` reads).
        expressions = [c.expression for c in self.ordered] + [e for c in self.ordered for e in c.rule.params.values()]
        self.item_keys = frozenset(m.group(1) for e in expressions for m in _ATTRIBUTE.finditer(e))
        # Top-level manifest keys any rule may read (None: the whole manifest is read).
        adapter_node = _path_tree({p for p in self.adapter_paths | self.global_paths if p[0] == "adapter"}).get("adapter", {})
        self.adapter_keys = None if None in adapter_node else set(adapter_node) | set(self.item_keys)
        self.global_program = _combined(self.global_rules)
        self.adapter_program = _combined(self.adapter_rules)
        self.both_program = _combined(self.global_rules + self.adapter_rules)


@lru_cache(maxsize=8)
def _plan(compiled: tuple[CompiledRule, ...], version: str) -> _Plan:
    return _Plan(compiled, version)


def _combined(rules: tuple[CompiledRule, ...]) -> Any:
    return cel.compile("[" + ", ".join(c.expression for c in rules) + "]") if rules else None


def _evaluate_all(rules: tuple[CompiledRule, ...], program: Any, ctx: Any) -> dict[str, Any]:
    """Every rule's `when && condition` in one evaluation. If that fails, rule by rule: a
    rule whose expression fails gets the exception, raised only if the rule is reached."""
    if program is not None:
        try:
            return {c.rule.id: value is True for c, value in zip(rules, program.execute(ctx))}
        except Exception:  # noqa: BLE001 - located rule by rule below
            pass
    results: dict[str, Any] = {}
    for c in rules:
        try:
            results[c.rule.id] = c.program.execute(ctx) is True
        except Exception as exc:  # noqa: BLE001
            results[c.rule.id] = RuleEvaluationError(c.rule.id, f"{type(exc).__name__}: {exc}")
    return results


_ATTRIBUTE = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")


def _keep_keys(item: Any, keys: frozenset[str]) -> Any:
    return {k: v for k, v in item.items() if k in keys} if isinstance(item, dict) else item


def _path_tree(paths: set[tuple[str, ...]]) -> dict[Any, Any]:
    tree: dict[Any, Any] = {}
    for path in paths:
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
        node[None] = True  # the path ends here: keep the whole value
    return tree


_CEL_METHODS = frozenset(
    {"size", "exists", "all", "exists_one", "map", "filter", "contains", "startsWith", "endsWith", "matches", "keys", "values"}
)


def _prune(value: Any, tree: dict[Any, Any]) -> Any:
    """Only the parts of `value` that the rules read (whole sub-values at path ends)."""

    def walk(val: Any, node: dict[Any, Any]) -> Any:
        if None in node or not isinstance(val, dict):
            return val
        out = {}
        for key, child in node.items():
            if key not in val:
                if key in _CEL_METHODS:
                    return val  # a method call on the map: keep the whole map
                continue  # absent here too (e.g. a pool-form key on a PEFT adapter)
            out[key] = walk(val[key], child)
        return out

    return walk(value, tree)


def _render(c: CompiledRule, ctx: Any) -> str:
    values = {}
    for name, program in c.param_programs.items():
        try:
            values[name] = program.execute(ctx)
        except Exception as exc:
            raise RuleEvaluationError(c.rule.id, f"params.{name}: {type(exc).__name__}: {exc}") from None
    return _FORMATTER.vformat(c.rule.message, (), values)


def _join(fired: list[tuple[Any, CompiledRule, str, str | None]]) -> list[Problem]:
    """One Problem per fired rule; rules of a join group share sglang's joined text."""
    joined: dict[tuple[str, str | None], list[str]] = {}
    for _, c, fragment, adapter in fired:
        if c.rule.join:
            joined.setdefault((c.rule.join.group, adapter), []).append(fragment)
    problems = []
    for _, c, fragment, adapter in fired:
        rule = c.rule
        message = fragment
        if rule.join:
            parts = joined[(rule.join.group, adapter)]
            message = rule.join.prefix + rule.join.separator.join(parts)
        problems.append(
            Problem(
                rule_id=rule.id,
                severity=rule.severity,
                origin=rule.origin,
                error_class=rule.error_class,
                message=message,
                fragment=fragment,
                stage=rule.stage,
                field_paths=tuple(rule.field_paths),
                fixes=tuple(rule.fixes),
                adapter=adapter,
            )
        )
    return problems
