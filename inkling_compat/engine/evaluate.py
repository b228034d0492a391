"""`check` as a pipeline: load -> derive -> plan -> evaluate -> report.

Rules are evaluated in sglang's start-up order; a rule listed in another's `after` gates
it the way sglang's sequential raises do (a later check is not reachable, or not even
evaluable, once an earlier one fails). `evaluate()` returns the loaded inputs and derived
facts with the report, so the runtime reuses them instead of loading a second time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import string
import weakref
from typing import Any, Iterator, Iterable

from inkling_compat.engine import coverage
from inkling_compat.engine.coverage import CHECKED, NOT_APPLICABLE
from inkling_compat.engine.context import Contexts
from inkling_compat.engine.guards import Guards
from inkling_compat.engine.plan import Plan, plan as plan_for
from inkling_compat.engine.rules import STAGES, CompiledRule, compile_expression, load_rules
from inkling_compat.errors import InputError, RuleEvaluationError
from inkling_compat.facts.derive import derive
from inkling_compat.facts.inputs import Inputs, load_inputs
from inkling_compat.facts.types import Facts
from inkling_compat.inputs.models import SGLANG_DEFAULT_VERSION, SGLANG_VERSIONS
from inkling_compat.report.model import Coverage, Problem, Report

_FORMATTER = string.Formatter()
SUPPORTED_VERSIONS = SGLANG_VERSIONS
# (sort key, rule, (message fragment, error class) as rendered, adapter name)
Fired = tuple[tuple[int, int, int], CompiledRule, tuple[str, str, "str | None"], "str | None"]


@dataclasses.dataclass(frozen=True)
class Checked:
    """One check's typed inputs, facts and report."""

    inputs: Inputs
    facts: Facts
    report: Report


def check(
    config: Any = None,
    adapter: Any = None,
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: str = SGLANG_DEFAULT_VERSION,
    rules: Iterable[CompiledRule] | None = None,
    select: str | Iterable[str] = (),
    ignore: str | Iterable[str] = (),
    settings: Any = None,
) -> Report:
    """Check a serving setup against every rule; never raises for problems it finds.

    `config`, `model`, `platform` and each adapter may be a path (YAML/JSON), a dict or
    the typed model. `adapter` may also be a list. Unusable input raises `InputError`.
    `select` / `ignore` (rule ids or prefixes, as `check --select/--ignore`) and `settings` (a
    settings file: .inkling-compat.yaml or pyproject.toml; none is looked for by default) move
    problems to `report.ignored`, each with its reason, as the command does.
    """
    _refuse_nul(config, model, platform, *(adapter if isinstance(adapter, (list, tuple)) else [adapter]))
    if rules is not None:
        rules = tuple(rules)
    report = evaluate(config, adapter, model=model, platform=platform, sglang_version=sglang_version, rules=rules).report
    if select or ignore or settings is not None:
        from inkling_compat.engine.selection import apply, build_selection

        ids = (c.rule.id for c in (rules if rules is not None else load_rules()))
        report = apply(report, build_selection(ids, select=_words(select), ignore=_words(ignore), settings_file=settings))
    return report


def _words(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _refuse_nul(*sources: Any) -> None:
    """A path with a NUL byte names no file (every OS call raises ValueError): unusable input."""
    import os

    from inkling_compat.errors import InputError

    for source in sources:
        if isinstance(source, (str, os.PathLike)):
            text = os.fspath(source)
            if (b"\0" if isinstance(text, bytes) else "\0") in text:
                raise InputError(repr(text), "(path)", "the path holds a NUL character: no such file")


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
        raise InputError("<sglang_version>", "sglang_version", f"unsupported {sglang_version!r}; known: {SUPPORTED_VERSIONS}")
    with collector_paused():
        checked = _evaluate(config, adapter, model, platform, sglang_version, rules)
    return checked  # (the check's temporaries are freed before the collector runs again)


def _evaluate(config: Any, adapter: Any, model: Any, platform: Any, sglang_version: str, rules: Iterable[CompiledRule] | None) -> Checked:
    inputs = load_inputs(config, adapter, model=model, platform=platform)
    facts = derive(inputs)
    plan = plan_for(tuple(rules) if rules is not None else load_rules(), sglang_version)
    missing = coverage.global_missing(facts)
    per_adapter = [missing + coverage.adapter_missing(m, a.form) for m, a in zip(inputs.adapters, facts.adapters)]
    fired, evaluated, tally = run_rules(plan, Contexts(inputs, facts, plan), [a.name for a in facts.adapters], [missing, *per_adapter])
    report = build_report(inputs, facts, fired, evaluated, sglang_version, tally)
    if report.problems:  # what Report.fixes() plans from (inkling_compat/engine/fixes.py)
        from inkling_compat.engine.fixes import FixSource

        report.fix_source = FixSource(inputs, facts, {c.rule.id: c.rule for c in plan.ordered})
    return Checked(inputs=inputs, facts=facts, report=report)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for one check. A check allocates many small dicts,
    lists and models that all live until its report is built (a 1,000-adapter fleet: ~10^6),
    and the collector's passes walk them again and again without finding garbage: about a
    fifth of a fleet check (9 full collections measured). Nothing is lost: cycles left
    behind are collected after the check (the first collection then walks what the check
    allocated and still holds, so callers leave the block after the temporaries are freed).
    Re-enabled only if it was enabled on entry, so a
    nested check (check_fleet -> check) or a caller that turned it off itself keeps its state."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_rules(plan: Plan, contexts: Contexts, names: list[str], missing: "list[coverage.Missing] | None" = None) -> tuple[list[Fired], int, coverage.Tally]:
    """Every rule that fires, global ones first then each adapter's, how many were reached,
    and each rule's coverage status. `missing`: the inputs missing for the global scope, then
    for each adapter (engine/coverage.py; None: nothing is missing)."""
    fired: list[Fired] = []
    evaluated = 0
    global_fired: set[str] = set()
    split = len(plan.global_rules)
    missing = missing or [()] * (len(names) + 1)
    tally = coverage.Tally(plan.global_ids, plan.adapter_ids)
    if names:
        hits, applies = _evaluate_all(plan.global_rules + plan.adapter_rules, _scope(plan, "both"), contexts.shared)
    else:
        hits, applies = _evaluate_all(plan.global_rules, _scope(plan, "global"), contexts.shared)
    for index in range(-1, len(names)):
        ctx = contexts.for_adapter(index)
        if index < 0:
            rules, scope_hits, scope_applies = plan.global_rules, hits[:split], applies[:split]
        elif index == 0:  # the first adapter rode along in the global evaluation
            rules, scope_hits, scope_applies = plan.adapter_rules, hits[split:], applies[split:]
        else:
            rules = plan.adapter_rules
            scope_hits, scope_applies = _evaluate_all(plan.adapter_rules, _scope(plan, "adapter"), ctx)
        scope_name = "global" if index < 0 else "adapter"
        if not global_fired and all(hit is False for hit in scope_hits):
            # Nothing fired (the usual case): no rule is gated by `after`, each one's code is
            # its block's (the loop below, written out per rule once per plan).
            evaluated += len(rules)
            codes = [f if app is False else other for app, (f, other) in zip(scope_applies, plan.quiet_codes(scope_name, missing[index + 1]))]
            if index < 0:
                tally.global_codes = codes
            else:
                tally.adapter_codes.append(codes)
            continue
        blocks = plan.blocks(scope_name, missing[index + 1])
        codes = []
        scope_fired = global_fired if index < 0 else set(global_fired)
        for c, hit, app, block in zip(rules, scope_hits, scope_applies, blocks):
            rule = c.rule
            if scope_fired and rule.after and not scope_fired.isdisjoint(rule.after):  # (none fired: the usual case)
                codes.append(f"not reached: {next(a for a in rule.after if a in scope_fired)} comes first")
                continue
            evaluated += 1
            reason, untrusted, gated = block
            if hit is False:  # (engine/coverage.py: a false `when` is trusted unless it read a placeholder)
                if app is False and not untrusted:
                    codes.append(NOT_APPLICABLE)
                elif reason is not None:
                    codes.append(reason)
                else:
                    codes.append(NOT_APPLICABLE if app is False else CHECKED)
                continue
            if gated is not None:  # it tested a placeholder for a missing input: it decided nothing
                codes.append(gated)
                continue
            if isinstance(hit, RuleEvaluationError):
                raise _too_large(hit, names[index] if index >= 0 else None)
            codes.append(CHECKED)
            scope_fired.add(rule.id)
            key = (STAGES.index(rule.stage), index, rule.order)
            try:
                rendered = _render(c, ctx)
            except RuleEvaluationError as exc:
                raise _too_large(exc, names[index] if index >= 0 else None) from None
            fired.append((key, c, rendered, names[index] if index >= 0 else None))
        if index < 0:
            tally.global_codes = codes
        else:
            tally.adapter_codes.append(codes)
    if not names and plan.adapter_rules:  # no adapter: adapter rules whose `when` is false without one do not apply
        absent = plan.blocks("adapter", missing[0])
        applies = _scope(plan, "adapter").applies(contexts.shared)  # type: ignore[union-attr]
        tally.absent_codes = [
            (NOT_APPLICABLE if not untrusted else reason or "no adapter") if app is False else reason or "no adapter"
            for app, (reason, untrusted, _) in zip(applies, absent)
        ]
    return fired, evaluated, tally


def build_report(inputs: Inputs, facts: Facts, fired: list[Fired], evaluated: int, sglang_version: str, tally: "coverage.Tally | None" = None) -> Report:
    fired = sorted(fired, key=lambda item: item[0])
    problems = [
        dataclasses.replace(p, adapter_index=item[0][1]) if item[0][1] >= 0 else p for p, item in zip(_join(fired), fired)
    ]
    if problems:  # where they are in the user's files (only now: the ok path reads nothing again)
        problems = _placed(problems, inputs)
    sink = facts.sink
    given = {name: getattr(sink, name) for name in sink.given}
    summary = [{"name": a.name, "path": getattr(m, "path", None), "form": a.form} for m, a in zip(inputs.adapters, facts.adapters)]
    given_inputs = facts.inputs_given
    not_given = [name for name in ("config", "model", "platform") if not getattr(given_inputs, name)]
    return Report(
        problems=problems,
        given_facts=given,
        not_given=not_given,
        not_read=list(inputs.not_read),
        sglang_version=sglang_version,
        rules_evaluated=evaluated,
        adapters=summary,
        coverage=tally.coverage(coverage.notes(facts)) if tally is not None else Coverage(),
    )


def _placed(problems: list[Problem], inputs: Inputs) -> list[Problem]:
    from inkling_compat.inputs.source_map import SourceMaps, locate

    maps, sources, adapters = SourceMaps(), inputs.sources, inputs.adapters
    placed = []
    for p in problems:
        index = p.adapter_index if p.adapter_index is not None else (0 if len(adapters) == 1 else None)
        where = locate(
            p.field_paths,
            sources,
            maps,
            adapter=adapters[index] if index is not None else None,
            adapter_file=sources.adapters[index] if index is not None and index < len(sources.adapters) else None,
            message=p.message,
            unknown_keys=inputs.unknown_keys,
        )
        placed.append(dataclasses.replace(p, locations=where) if where else p)
    return placed


class _Guarded:
    """A scope's `when && condition` results, the rules that share a `when` guard (the named
    guards of rules/_guards.yaml) evaluated behind one evaluation of that guard: when it is
    false, so is every `(when) && (condition)` of the group (CEL's `false && x` is false even
    if `x` is an error), and their programs are not run. Typically two thirds of the rules
    sit behind a false guard (a pool adapter skips the PEFT rules, legacy sinks the V2 ones).
    Where it is true, each rule's condition runs alone: `true && x` is `x` for a bool `x`;
    anything else (an error, a value that is not a bool, a guard that is neither true nor
    false) is what the rule's joined program says, run as before. An error propagates (the
    caller then evaluates rule by rule). A rule alone behind its `when` gets a guard too:
    coverage needs to know whether its `when` held (not applicable) or its condition was
    false (checked)."""

    __slots__ = ("size", "groups", "guards")

    def __init__(self, rules: tuple[CompiledRule, ...]):
        by_when: dict[str, list[int]] = {}
        for index, c in enumerate(rules):
            by_when.setdefault(c.rule.when.strip(), []).append(index)
        self.size = len(rules)
        # Per group: its slot in `guards` (None for `true`); per member: index, condition, rule.
        self.groups: list[tuple[int | None, list[tuple[int, Any, CompiledRule]]]] = []
        programs = []
        for when, members in by_when.items():
            slot = None
            if when != "true":
                slot = len(programs)
                programs.append(rules[members[0]].when_program)
            self.groups.append((slot, [(i, rules[i].condition_program, rules[i]) for i in members]))
        # The guards' values, computed together (engine/guards.py: shared conjuncts run once).
        self.guards = Guards(programs, compile_expression)

    def execute(self, ctx: Any) -> tuple[list[bool], list[Any]]:
        """Each rule's `when && condition`, and its `when` (True, False, or None: unknown)."""
        out = [False] * self.size
        applies: list[Any] = [True] * self.size
        values = self.guards.values(ctx)
        for slot, members in self.groups:
            held: Any = True
            if slot is not None:
                held = values[slot]
                if held is False:
                    for member in members:
                        applies[member[0]] = False
                    continue
                if held is None:
                    for member in members:
                        applies[member[0]] = None
            for index, condition, c in members:
                if held is True:
                    try:
                        value = condition.execute(ctx)
                    except Exception:  # noqa: BLE001 - the joined program below raises it
                        value = None
                    if value is True or value is False:
                        out[index] = value
                        continue
                out[index] = c.program.execute(ctx) is True
        return out, applies

    def applies(self, ctx: Any) -> list[Any]:
        """Each rule's `when` alone: True, False, or None when it cannot be evaluated here."""
        applies: list[Any] = [True] * self.size
        values = self.guards.values(ctx)  # (None where it fails, e.g. `adapter` undefined: unknown)
        for slot, members in self.groups:
            held = values[slot] if slot is not None else True
            for member in members:
                applies[member[0]] = held
        return applies


# Per plan (a plan lives as long as the rule set it was built for): each scope's guarded
# programs, built when a check first needs that scope.
_GUARDED: "weakref.WeakKeyDictionary[Plan, dict[str, Any]]" = weakref.WeakKeyDictionary()


def _scope(plan: Plan, name: str) -> "_Guarded | None":
    scopes = _GUARDED.get(plan)
    if scopes is None:
        scopes = _GUARDED[plan] = {}
    if name not in scopes:
        rules = {"global": plan.global_rules, "adapter": plan.adapter_rules, "both": plan.global_rules + plan.adapter_rules}[name]
        scopes[name] = _Guarded(rules) if rules else None
    return scopes[name]


def _evaluate_all(rules: tuple[CompiledRule, ...], program: Any, ctx: Any) -> tuple[list[Any], list[Any]]:
    """Every rule's `when && condition` in one evaluation, in the order of `rules` (True or
    False), and its `when` (True, False, None: unknown). If that fails, rule by rule: a rule
    whose expression fails gets the exception, raised only if the rule is reached."""
    if program is not None:
        try:
            return program.execute(ctx)
        except Exception:  # noqa: BLE001 - located rule by rule below
            pass
    results: list[Any] = []
    for c in rules:
        try:
            results.append(c.program.execute(ctx) is True)
        except Exception as exc:  # noqa: BLE001
            results.append(RuleEvaluationError(c.rule.id, f"{type(exc).__name__}: {exc}"))
    return results, program.applies(ctx) if program is not None else [None] * len(rules)


def _too_large(error: RuleEvaluationError, adapter: str | None) -> Exception:
    """An int64 overflow in a rule's arithmetic is input beyond any real size (a pool axis of
    2**62: no tensor of that shape exists), so unusable input, not a defect of the rule."""
    if "OverflowError" not in str(error):
        return error
    where = f"adapter {adapter}" if adapter is not None else "<inputs>"
    return InputError(where, "(sizes)", f"values too large to compute with (64-bit integer overflow in {error})")


def _render(c: CompiledRule, ctx: Any) -> tuple[str, str, str | None]:
    """The rule's message, error class and `because` with its params filled in. The class is a
    template too: a derived crash is reported with the class torch raises (`{cls}`), not a fixed one."""
    values = {}
    for name, program in c.param_programs.items():
        try:
            values[name] = program.execute(ctx)
        except Exception as exc:
            raise RuleEvaluationError(c.rule.id, f"params.{name}: {type(exc).__name__}: {exc}") from None
    error_class = c.rule.error_class
    if "{" in error_class:
        error_class = _FORMATTER.vformat(error_class, (), values)
    because = _FORMATTER.vformat(c.rule.because, (), values) if c.rule.because else None
    return _FORMATTER.vformat(c.rule.message, (), values), error_class, because


def _join(fired: list[Fired]) -> list[Problem]:
    """One Problem per fired rule; rules of a join group share sglang's joined text."""
    joined: dict[tuple[str, str | None], list[str]] = {}
    for _, c, (fragment, _cls, _because), adapter in fired:
        if c.rule.join:
            joined.setdefault((c.rule.join.group, adapter), []).append(fragment)
    problems = []
    for _, c, (fragment, error_class, because), adapter in fired:
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
                error_class=error_class,
                message=message,
                fragment=fragment,
                stage=rule.stage,
                field_paths=tuple(rule.field_paths),
                fixes=tuple(rule.fixes),
                adapter=adapter,
                because=because,
            )
        )
    return problems
