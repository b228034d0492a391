"""The engine: load inputs, derive facts once, evaluate every rule, build the report.

`check(config, adapter=None, *, model=None, platform=None)` is the public entry point.
Rules are evaluated in sglang's start-up order; a rule listed in another's `after` gates
it the way sglang's sequential raises do (a later check is not reachable, or not even
evaluable, once an earlier one fails).
"""

from __future__ import annotations

import string
from typing import Any, Iterable

import cel

from inkling_compat import adapter_facts as adapter_facts_mod
from inkling_compat import facts as facts_mod
from inkling_compat.errors import RuleEvaluationError
from inkling_compat.inputs import SGLANG_DEFAULT_VERSION
from inkling_compat.loading import load_adapter, load_model_config, load_platform, load_server_config
from inkling_compat.report import Problem, Report
from inkling_compat.rulebook import STAGES, CompiledRule, load_rules

_FORMATTER = string.Formatter()
SUPPORTED_VERSIONS = ("0.5.23",)


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
    if sglang_version not in SUPPORTED_VERSIONS:
        from inkling_compat.errors import InputError

        raise InputError("<sglang_version>", "sglang_version", f"unsupported {sglang_version!r}; known: {SUPPORTED_VERSIONS}")
    server, unknown = load_server_config(config)
    model_cfg = load_model_config(model)
    platform_cfg, unknown_platform = load_platform(platform)
    unknown += unknown_platform
    manifests = []
    for item in _adapters_list(adapter):
        manifest, unknown_adapter = load_adapter(item)
        manifests.append(manifest)
        unknown += unknown_adapter
    per_adapter = [adapter_facts_mod.derive(m, model_cfg) for m in manifests]
    facts = facts_mod.derive(server, model_cfg, platform_cfg, per_adapter)
    adapter_docs = [
        dict(m.model_dump(mode="json"), form=f["form"]) for m, f in zip(manifests, per_adapter)
    ]
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
    compiled = tuple(rules) if rules is not None else load_rules()
    compiled = tuple(c for c in compiled if sglang_version in c.rule.sglang_versions)
    global_ctx = _context(base)
    adapter_ctxs = [
        _context(dict(base, adapter=doc, adapter_facts=af)) for doc, af in zip(adapter_docs, per_adapter)
    ]

    fired: list[tuple[tuple[int, int, int], CompiledRule, str, str | None]] = []
    fired_ids: dict[int, set[str]] = {}  # scope index (-1 global) -> rule ids that fired
    evaluated = 0
    for c in compiled:
        rule = c.rule
        targets = [(-1, global_ctx)] if rule.scope != "adapter" else list(enumerate(adapter_ctxs))
        for index, ctx in targets:
            blocked = fired_ids.get(index, set()) | fired_ids.get(-1, set())
            if any(dep in blocked for dep in rule.after):
                continue
            evaluated += 1
            try:
                hit = c.program.execute(ctx)
            except Exception as exc:  # a broken expression is a defect of the rule file
                raise RuleEvaluationError(rule.id, f"{type(exc).__name__}: {exc}") from None
            if hit is not True:
                continue
            fragment = _render(c, ctx)
            fired_ids.setdefault(index, set()).add(rule.id)
            key = (STAGES.index(rule.stage), index, rule.order)
            fired.append((key, c, fragment, per_adapter[index]["name"] if index >= 0 else None))

    fired.sort(key=lambda item: item[0])
    problems = _join(fired)
    given = {name: facts["sink"][name] for name in facts["sink"]["given"]}
    return Report(problems=problems, given_facts=given, sglang_version=sglang_version, rules_evaluated=evaluated)


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
