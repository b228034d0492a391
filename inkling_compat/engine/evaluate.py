"""`check` as a pipeline: load -> derive -> plan -> evaluate -> report.

Rules are evaluated in sglang's start-up order; a rule listed in another's `after` gates
it the way sglang's sequential raises do (a later check is not reachable, or not even
evaluable, once an earlier one fails). `evaluate()` returns the loaded inputs and derived
facts with the report, so the runtime reuses them instead of loading a second time.
"""

from __future__ import annotations

import gc

from inkling_compat.engine import coverage
from inkling_compat.engine.coverage import CHECKED, NOT_APPLICABLE
from inkling_compat.engine.context import Contexts
from inkling_compat.engine.evaluator import FAST, Evaluator
from inkling_compat.engine.plan import Plan, Selection
from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.engine.rule_record import STAGES
from inkling_compat.errors import InputError, RuleEvaluationError
from inkling_compat.facts.inputs import Inputs, load_inputs
from inkling_compat.facts.types import Facts
from inkling_compat.inputs import argument_table
from inkling_compat.inputs.models import SGLANG_VERSIONS
from inkling_compat.inputs.release import Release, find_release
from inkling_compat.report.model import Coverage, Problem, Report
from inkling_compat.sglang.plain_dataclass import dataclass, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterator, Iterable

SUPPORTED_VERSIONS = SGLANG_VERSIONS
# (sort key, rule, (message fragment, error class) as rendered, adapter name)
Fired = tuple[tuple[int, int, int], CompiledRule, tuple[str, str, "str | None"], "str | None"]


@dataclass(frozen=True)
class Checked:
    """One check's typed inputs, facts and report."""

    inputs: Inputs
    facts: Facts
    report: Report

    replace = replace  # (checked.replace(**changes), as dataclasses.replace(checked, **changes))


def check(
    config: Any = None,
    adapter: Any = None,
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: "str | Release | None" = None,
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
    sglang_version: "str | Release | None" = None,
    rules: Iterable[CompiledRule] | None = None,
    evaluator: Evaluator = FAST,
) -> Checked:
    """`check()`, returning the loaded inputs and the derived facts with the report.
    `sglang_version`: the release (or revision) to check against; None finds it
    (inputs/release.py: installed, pinned beside the config file, its image tag, else the newest).
    `evaluator`: how the rules run (engine/evaluator.py; REFERENCE gives the same report)."""
    release = sglang_version if isinstance(sglang_version, Release) else find_release(sglang_version, config)
    with collector_paused(), argument_table.using(release.version):
        checked = _evaluate(config, adapter, model, platform, release.version, rules, evaluator)
    checked.report.sglang_version_from = release.reason
    return checked  # (the check's temporaries are freed before the collector runs again)


def _evaluate(config: Any, adapter: Any, model: Any, platform: Any, sglang_version: str, rules: Iterable[CompiledRule] | None, evaluator: Evaluator) -> Checked:
    inputs = load_inputs(config, adapter, model=model, platform=platform)
    facts = evaluator.derive(inputs)
    plan = evaluator.plan(tuple(rules) if rules is not None else load_rules(), sglang_version)
    missing = coverage.global_missing(facts, inputs.unknown_values, any(note.startswith("--model-path ") for note in inputs.not_read))
    per_adapter = [missing + coverage.adapter_missing(m, a.form) for m, a in zip(inputs.adapters, facts.adapters)]
    contexts = evaluator.contexts_of(inputs, facts, plan)
    fired, evaluated, tally = run_rules(plan, contexts, [a.name for a in facts.adapters], [missing, *per_adapter], evaluator)
    report = build_report(inputs, facts, fired, evaluated, sglang_version, tally)
    if report.problems:  # what Report.fixes() plans from (inkling_compat/engine/fixes.py)
        from inkling_compat.engine.fixes import FixSource

        report.fix_source = FixSource(inputs, facts, {c.rule.id: c.rule for c in plan.ordered})
    return Checked(inputs=inputs, facts=facts, report=report)


class collector_paused:
    """`with collector_paused():` the cyclic garbage collector off for one check. A check allocates many small dicts,
    lists and models that all live until its report is built (a 1,000-adapter fleet: ~10^6),
    and the collector's passes walk them again and again without finding garbage (a large
    share of a fleet check: docs/performance.md). Nothing is lost: cycles left
    behind are collected after the check (the first collection then walks what the check
    allocated and still holds, so callers leave the block after the temporaries are freed).
    Re-enabled only if it was enabled on entry, so a
    nested check (check_fleet -> check) or a caller that turned it off itself keeps its state.
    (A class, not `contextlib.contextmanager`: a check imports no contextlib.)"""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.enabled:
            gc.enable()


def run_rules(
    plan: Plan, contexts: Contexts, names: list[str], missing: "list[coverage.Missing] | None" = None, evaluator: Evaluator = FAST
) -> tuple[list[Fired], int, coverage.Tally]:
    """Every rule that fires, global ones first then each adapter's, how many were reached,
    and each rule's coverage code. `missing`: the inputs missing for the global scope, then
    for each adapter (engine/coverage.py; None: nothing is missing).

    Per scope: `select` (the plan's Selection: what may fire, what only tells *not
    applicable*), `_evaluate_selected` only that, `apply_after` (sglang stops at the first raise of a
    rule's `after`), then the codes go to the tally and the fired rules are rendered."""
    missing = missing or [()] * (len(names) + 1)
    scopes = select(plan, missing, evaluator)
    tally = coverage.Tally(plan.global_ids, plan.adapter_ids)
    fired: list[Fired] = []
    evaluated = 0
    global_fired: set[str] = set()
    stopped: str | None = None  # the global rule where sglang exits (a rule's `stops`)
    # The global scope with the first adapter riding along: one evaluation in one context.
    first = _evaluate_selected(plan, evaluator, tuple(scopes[:2]), contexts.shared)
    alike = None
    if len(scopes) > 3 and evaluator.split(plan, scopes[2]) is not None:  # (engine/alike.py: from the second adapter on)
        from inkling_compat.engine.alike import AlikeAdapters

        alike = AlikeAdapters(plan, contexts, lambda s: evaluator.split(plan, s))
    for index, selection in enumerate(scopes):
        ctx: Any = None
        if index < len(first):
            ctx, outcome = contexts.shared, first[index]
        elif alike is not None:
            *outcome, whole = alike.outcome(selection, index - 1)
            ctx = contexts.per_adapter if whole else None
        else:
            ctx = contexts.for_adapter(index - 1)
            outcome = _evaluate_selected(plan, evaluator, (selection,), ctx)[0]
        name = names[index - 1] if index else None
        try:
            codes, firing, reached = apply_after(selection, *outcome, global_fired if index == 0 else set(global_fired), stopped)
        except RuleEvaluationError as exc:
            raise _too_large(exc, name) from None
        if index == 0:
            stopped = next((selection.rules[i].rule.id for i in firing if selection.rules[i].rule.stops), None)
        evaluated += reached
        if firing:
            if ctx is None:  # (the adapter's whole context, for its messages)
                ctx = contexts.for_adapter(index - 1)
            exact = contexts.exact_reader(index - 1)
            fired += [_fired(selection.rules[i], ctx, index - 1, name, exact) for i in firing]
        tally.record(index, codes)
    if not names and plan.adapter_rules:
        if stopped is not None:  # (sglang never reaches the adapters)
            tally.absent_codes = [f"not reached: {stopped} comes first" if c.rule.origin != "inkling-compat" else "no adapter" for c in plan.adapter_rules]
        else:
            tally.absent_codes = _absent_codes(plan, evaluator, contexts.shared, missing[0])
    return fired, evaluated, tally


def select(plan: Plan, missing: "list[coverage.Missing]", evaluator: Evaluator = FAST) -> list[Selection]:
    """Per scope (global, then each adapter), the rules sorted by what their inputs allow."""
    return [evaluator.selection(plan, "global", missing[0])] + [evaluator.selection(plan, "adapter", m) for m in missing[1:]]


def _evaluate_selected(plan: Plan, evaluator: Evaluator, selections: tuple[Selection, ...], ctx: Any) -> list[tuple[list[Any], list[Any]]]:
    """Per selection, each rule's result (True, False, or its error) and its `when` (True,
    False, None: unknown or not evaluated), the selections' rules evaluated together."""
    hits, applies = evaluator.prepared(plan, selections, "run").run(ctx)
    partial = [s for s in selections if s.when_only]
    when_only = evaluator.prepared(plan, tuple(partial), "when_only").applies(ctx) if partial else []
    out = []
    start = start_when = 0
    for s in selections:
        end = start + len(s.run)
        if s.whole:
            out.append((hits[start:end] if len(selections) > 1 else hits, applies[start:end] if len(selections) > 1 else applies))
        else:  # the rules left out cannot fire; their `when` is known where it ran
            scope_hits: list[Any] = [False] * len(s.rules)
            scope_applies: list[Any] = [None] * len(s.rules)
            for i, hit, app in zip(s.run, hits[start:end], applies[start:end]):
                scope_hits[i], scope_applies[i] = hit, app
            if s.when_only:
                for i, app in zip(s.when_only, when_only[start_when:]):
                    scope_applies[i] = app
                start_when += len(s.when_only)
            out.append((scope_hits, scope_applies))
        start = end
    return out


def apply_after(
    selection: Selection, hits: list[Any], applies: list[Any], scope_fired: set[str], stopped: str | None = None
) -> tuple[list[str], list[int], int]:
    """The coverage code of each rule of the scope, the indices of those that fire, and how
    many were reached: a rule listed after one that fired (`after`) is not reached, as sglang
    stops at the first raise; after a rule that `stops` (or the global one named by `stopped`)
    no rule of sglang's is reached. `scope_fired` (the ids fired so far) gains those that fire."""
    if stopped is None and not any(hits):  # (each hit is True, False or an error, which is true)
        # Nothing fires here (the usual case): each rule's code is its block's (the loop
        # below, written out per rule once per plan), but for a rule whose `after` fired
        # before (in the global scope, for an adapter's rules), which is not reached. (The
        # same `applies` and fired rules give the same codes: a fleet's adapters mostly do.)
        key = (tuple(applies), frozenset(scope_fired))
        found = selection.codes.get(key)
        if found is None:
            codes = [f if app is False else other for app, (f, other) in zip(applies, selection.quiet)]
            reached = len(hits)
            if scope_fired:
                for index in selection.gated:
                    after = selection.rules[index].rule.after
                    if not scope_fired.isdisjoint(after):
                        codes[index] = f"not reached: {next(a for a in after if a in scope_fired)} comes first"
                        reached -= 1
            found = (tuple(codes), reached)
            if len(selection.codes) < 256:
                selection.codes[key] = found
        return list(found[0]), [], found[1]
    codes: list[str] = []
    firing: list[int] = []
    reached = 0
    for index, (c, hit, app, block) in enumerate(zip(selection.rules, hits, applies, selection.blocks)):
        rule = c.rule
        if block[0] == NOT_APPLICABLE:  # not on this model's path at all (an Inkling-only rule on another model)
            reached += 1
            codes.append(NOT_APPLICABLE)
            continue
        if stopped is not None and rule.origin != "inkling-compat":
            codes.append(f"not reached: {stopped} comes first")
            continue
        if scope_fired and rule.after and not scope_fired.isdisjoint(rule.after):
            codes.append(f"not reached: {next(a for a in rule.after if a in scope_fired)} comes first")
            continue
        reached += 1
        reason, untrusted, _ = block
        if hit is False:  # (engine/coverage.py: a false `when` is trusted unless it read a placeholder)
            # (a rule `select` left out, its test reading a placeholder, is here too: its
            # reason, or *not applicable* where its own `when` said so without one)
            if app is False and not untrusted:
                codes.append(NOT_APPLICABLE)
            elif reason is not None:
                codes.append(reason)
            else:
                codes.append(NOT_APPLICABLE if app is False else CHECKED)
            continue
        if isinstance(hit, RuleEvaluationError):
            raise hit
        codes.append(CHECKED)
        scope_fired.add(rule.id)
        firing.append(index)
        if rule.stops:
            stopped = rule.id
    return codes, firing, reached


def _fired(c: CompiledRule, ctx: Any, index: int, name: str | None, exact: Any) -> Fired:
    key = (STAGES.index(c.rule.stage), index, c.rank)
    try:
        rendered = _render(c, ctx, exact)
    except RuleEvaluationError as exc:
        raise _too_large(exc, name) from None
    return (key, c, rendered, name)


def _absent_codes(plan: Plan, evaluator: Evaluator, ctx: Any, missing: "coverage.Missing") -> list[str]:
    """Without any adapter, the adapter rules whose `when` is false without one do not apply."""
    selection = evaluator.selection(plan, "adapter", missing)
    applies: list[Any] = [None] * len(selection.rules)  # (a rule not applicable to the model: its reason says so)
    for i, app in zip(selection.absent, evaluator.prepared(plan, (selection,), "absent").applies(ctx)):
        applies[i] = app
    return [
        (NOT_APPLICABLE if not untrusted else reason or "no adapter") if app is False else reason or "no adapter"
        for app, (reason, untrusted, _) in zip(applies, selection.blocks)
    ]


def build_report(inputs: Inputs, facts: Facts, fired: list[Fired], evaluated: int, sglang_version: str, tally: "coverage.Tally | None" = None) -> Report:
    fired = sorted(fired, key=lambda item: item[0])
    problems = [
        p.replace(adapter_index=item[0][1]) if item[0][1] >= 0 else p for p, item in zip(_join(fired), fired)
    ]
    if problems:  # where they are in the user's files (only now: the ok path reads nothing again)
        problems = _placed(problems, inputs)
    sink = facts.sink
    given = {name: getattr(sink, name) for name in sink.given}
    summary = [{"name": a.name, "path": getattr(m, "path", None), "form": a.form} for m, a in zip(inputs.adapters, facts.adapters)]
    given_inputs = facts.inputs_given
    refused = bool(inputs.refusals)  # sglang stops parsing there: it reads no model, given or not
    not_given = [name for name in ("config", "model", "platform") if not getattr(given_inputs, name) and not (refused and name == "model")]
    return Report(
        problems=problems,
        given_facts=given,
        not_given=not_given,
        not_read=list(inputs.not_read),
        sglang_version=sglang_version,
        rules_evaluated=evaluated,
        adapters=summary,
        coverage=tally.coverage((coverage.notes(facts, inputs.unknown_values, inputs.launch_notes) + inputs.from_cache) if not refused else coverage.refused_notes(facts)) if tally is not None else Coverage(),
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
            parse_items={"refusals": inputs.refusals, "parse_warnings": inputs.parse_warnings},
        )
        placed.append(p.replace(locations=where) if where else p)
    return placed


def _too_large(error: RuleEvaluationError, adapter: str | None) -> Exception:
    """An int64 overflow in a rule's arithmetic is input beyond any real size (a pool axis of
    2**62: no tensor of that shape exists), so unusable input, not a defect of the rule."""
    if "OverflowError" not in str(error):
        return error
    where = f"adapter {adapter}" if adapter is not None else "<inputs>"
    return InputError(where, "(sizes)", f"values too large to compute with (64-bit integer overflow in {error})")


def _render(c: CompiledRule, ctx: Any, exact: Any) -> tuple[str, str, str | None, str]:
    """The rule's message, error class and `because` with its params filled in. The class is a
    template too: a derived crash is reported with the class torch raises (`{cls}`), not a fixed one.
    A param that names a path (or `first(...)` of paths) is read from the typed value
    (`exact(path)`: every digit of an int); the others are CEL expressions run in the rule's context (report/values.py writes
    them into the text)."""
    from inkling_compat.engine.python_first import UNANSWERED, answer, cel_of
    from inkling_compat.report.values import FORMATTER  # (string's Formatter: imported when a rule fires)

    values = {}
    for name, paths in c.exact_params.items():
        value = None
        for path in paths:  # (`first(a, b)`: the first that is not null)
            try:
                value = exact(path)
            except LookupError:
                raise RuleEvaluationError(c.rule.id, f"params.{name}: no such key: {'.'.join(path)}") from None
            if value is not None:
                break
        values[name] = value
    exact_names = c.exact_params
    for name, expression in c.rule.params.items():
        if name in exact_names:
            continue
        value = answer(expression, ctx)  # (its Python form: engine/python_first.py)
        if value is UNANSWERED:
            program = c.param_programs[name]
            try:
                value = program.execute(cel_of(ctx))
            except Exception as exc:
                raise RuleEvaluationError(c.rule.id, f"params.{name}: {type(exc).__name__}: {exc}") from None
        values[name] = value
    error_class = c.rule.error_class
    if "{" in error_class:
        error_class = FORMATTER.vformat(error_class, (), values)
    because = FORMATTER.vformat(c.rule.because, (), values) if c.rule.because else None
    hint = FORMATTER.vformat(c.rule.fix_hint, (), values) if c.rule.fix_hint else ""
    return FORMATTER.vformat(c.rule.message, (), values), error_class, because, hint


def _join(fired: list[Fired]) -> list[Problem]:
    """One Problem per fired rule; rules of a join group share sglang's joined text."""
    joined: dict[tuple[str, str | None], list[str]] = {}
    for _, c, (fragment, _cls, _because, _hint), adapter in fired:
        if c.rule.join:
            joined.setdefault((c.rule.join.group, adapter), []).append(fragment)
    problems = []
    for _, c, (fragment, error_class, because, hint), adapter in fired:
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
                fixes=(hint, *rule.fixes) if hint else tuple(rule.fixes),
                adapter=adapter,
                because=because,
            )
        )
    return problems
