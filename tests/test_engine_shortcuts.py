"""The fast evaluator's shortcuts (engine/evaluator.py) give exactly what the reference gives:
the guards' shared conjuncts (engine/guards.py), a condition run alone behind a guard that
held (the joined `(when) && (condition)` otherwise), and the built CEL contexts kept by their
variables' content (engine/evaluator.py `_ContextStore`). Each is compared with the plain form on every rule
example (whole reports: tests/test_rule_examples.py)."""

from __future__ import annotations

import pytest

from inkling_compat import check
from inkling_compat.engine import cel
from inkling_compat.engine.evaluator import FAST, REFERENCE, FastEvaluator, _ContextStore
from inkling_compat.engine.context import Contexts
from inkling_compat.engine.cel_tree import analyse
from inkling_compat.engine.guards import Guards
from inkling_compat.engine.plan import Plan, quiet_codes
from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.engine.rule_schema import Rule
from inkling_compat.errors import InputError, RuleEvaluationError
from inkling_compat.facts.derive import derive
from inkling_compat.facts.inputs import load_inputs
from inkling_compat.inputs.models import SGLANG_DEFAULT_VERSION
from inkling_compat.testing.scenarios import example_arguments

RULES = load_rules()
PLAN = Plan(RULES, SGLANG_DEFAULT_VERSION)
EXAMPLES = [ex.input for c in RULES for ex in (*c.rule.examples.fire, *c.rule.examples.pass_)]


def _contexts():
    """The global CEL context of every rule example (with and without adapters)."""
    for given in EXAMPLES:
        args = example_arguments(given)
        try:
            inputs = load_inputs(args["config"], args["adapter"], model=args["model"], platform=args["platform"])
        except InputError:
            continue
        yield Contexts(inputs, derive(inputs), PLAN).shared


CONTEXTS = list(_contexts())


def _truth(value):
    return value if value is True or value is False else None


def _plain(program, ctx):
    try:
        return _truth(program.execute(ctx))
    except Exception:  # noqa: BLE001
        return None


@pytest.mark.parametrize(
    "text, parts",
    [
        ("a && b", ["a", "b"]),
        ("a && (b || c)", ["a", "(b || c)"]),
        ('"&&" && f(\'x && y\')', ['"&&"', "f('x && y')"]),
        ("x\n  && y\n", ["x", "y"]),
        ("(a && b) && c", ["a", "b", "c"]),  # && is associative in CEL, errors included
        ("a || b && c", ["a || b && c"]),  # || binds looser than &&: not a conjunction
        ("a && b ? c : d", ["a && b ? c : d"]),
        ("a && b // note", ["a", "b"]),
        ('a && "\\"&&"', ["a", '"\\"&&"']),
        ("a.b[0].c && size(d) > 1", ["a.b[0].c", "size(d) > 1"]),
    ],
)
def test_conjuncts(text, parts):
    assert list(analyse(text).conjuncts) == parts


@pytest.mark.parametrize("text", ["a.?b && c", "a &&", "(a && b", "a ? b", "{1: 2"])
def test_what_cel_refuses_the_parse_tree_refuses(text):
    from inkling_compat.engine import cel

    with pytest.raises(ValueError):
        cel.compile(text)
    with pytest.raises(ValueError):
        analyse(text)


def test_the_shipped_guards_split():
    """Most guards are conjunctions: the shortcut is used, not only correct."""
    whens = {c.rule.when.strip() for c in PLAN.ordered if c.rule.when.strip() != "true"}
    split = [w for w in whens if len(analyse(w).conjuncts) > 1]
    assert len(split) > len(whens) / 2


def test_guard_values_are_each_guards_own_value():
    programs = list({c.rule.when.strip(): c.when_program for c in PLAN.ordered if c.rule.when.strip() != "true"}.values())
    guards = Guards(programs, cel.compile)
    seen = set()
    for ctx in CONTEXTS:
        values = guards.values(ctx)
        assert values == [_plain(p, ctx) for p in programs]
        seen.update(values)
    assert seen == {True, False, None}  # every kind of guard value was compared


@pytest.mark.parametrize("scope", ["global", "adapter", "both"])
def test_guarded_evaluation_is_the_joined_programs(scope):
    rules = {"global": PLAN.global_rules, "adapter": PLAN.adapter_rules, "both": PLAN.global_rules + PLAN.adapter_rules}[scope]
    guarded = FAST.prepare(rules)
    for ctx in CONTEXTS:
        expected_applies = [True if c.rule.when.strip() == "true" else _plain(c.when_program, ctx) for c in rules]
        expected = REFERENCE.prepare(rules).run(ctx)
        got = guarded.run(ctx)
        assert [h if isinstance(h, bool) else str(h) for h in got[0]] == [h if isinstance(h, bool) else str(h) for h in expected[0]]
        assert got[1] == expected[1] == expected_applies
        assert guarded.applies(ctx) == expected_applies


def _rule(**changes):
    data = RULES[0].rule.model_dump(by_alias=True, exclude_none=True)
    data.update(variants=[], sglang_versions=None, after=[], **changes)
    return Rule.model_validate(data)


def test_a_condition_that_is_not_a_bool_is_what_the_joined_program_says():
    """`true && 1` is an error in CEL, while `1` alone is no error; the rule must get the error."""
    rule = CompiledRule(_rule(when="true", condition="1"), "x.yaml")
    results, _ = FAST.prepare((rule,)).run(CONTEXTS[0])
    assert isinstance(results[0], RuleEvaluationError)


def test_a_comment_that_runs_into_the_joined_program_is_refused_at_load():
    with pytest.raises(InputError) as info:
        CompiledRule(_rule(when="facts.lora_enabled // applies with LoRA", condition="true"), "x.yaml").compile_all()  # (what a load from files runs)
    assert info.value.field == "when/condition" and "CEL does not compile" in info.value.reason


def test_built_contexts_are_kept_by_exact_content(monkeypatch):
    monkeypatch.delenv("INKLING_COMPAT_NO_CACHE", raising=False)
    store = _ContextStore()
    shared_context = store.context
    first = shared_context({"x": {"a": 1}})
    assert shared_context({"x": {"a": 1}}) is first
    for other in ({"x": {"a": True}}, {"x": {"a": 1.0}}, {"x": {"a": [1]}}, {"x": {"a": (1,)}}, {"x": {"b": 1}}):
        assert shared_context(other) is not first
    assert shared_context({"x": {"a": 1}}) is first
    for n in range(100):
        shared_context({"n": n})
    assert len(store.built.entries) == _ContextStore.MAX_ENTRIES
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    assert shared_context({"n": 99}) is not shared_context({"n": 99})


def test_the_fast_evaluator_keeps_plans_selections_and_prepared_rules_the_reference_does_not():
    """Every cache of the engine is the fast evaluator's (engine/evaluator.py); the reference
    computes each thing afresh, and both give equal selections."""
    fast = FastEvaluator()
    plan = fast.plan(RULES, SGLANG_DEFAULT_VERSION)
    assert fast.plan(RULES, SGLANG_DEFAULT_VERSION) is plan
    assert REFERENCE.plan(RULES, SGLANG_DEFAULT_VERSION) is not REFERENCE.plan(RULES, SGLANG_DEFAULT_VERSION)
    missing = (("model", "no --model", True),)
    selection = fast.selection(plan, "global", missing)
    assert fast.selection(plan, "global", missing) is selection
    fresh = REFERENCE.selection(plan, "global", missing)
    assert fresh is not REFERENCE.selection(plan, "global", missing)
    assert (fresh.run, fresh.when_only, fresh.blocks, fresh.quiet) == (selection.run, selection.when_only, selection.blocks, selection.quiet)
    assert fast.prepared(plan, (selection,), "run") is fast.prepared(plan, (selection,), "run")
    fast.clear()
    assert fast.plan(RULES, SGLANG_DEFAULT_VERSION) is not plan


def test_results_are_kept_only_with_a_kept_context(monkeypatch):
    """A prepared rule list's results are kept with a kept context (whose variables never change):
    the second run returns equal lists without running a program; in any other context (one
    that is updated, or built with the caches off) every run evaluates again."""
    monkeypatch.delenv("INKLING_COMPAT_NO_CACHE", raising=False)
    fast = FastEvaluator()
    selection = fast.selection(PLAN, "global", ())
    prepared = fast.prepared(PLAN, (selection,), "run")
    args = example_arguments({})
    inputs = load_inputs(args["config"], args["adapter"], model=args["model"], platform=args["platform"])
    built = []
    kept = Contexts(inputs, derive(inputs), PLAN, build=lambda v: built.append(v) or fast.context(v)).shared
    (variables,) = built
    first = prepared.run(kept)
    assert first == REFERENCE.prepare(selection.run_rules).run(kept) and all(hit is True or hit is False for hit in first[0])
    calls = []
    real = prepared.prepared

    class Spy:
        def run(self, ctx):
            calls.append(ctx)
            return real.run(ctx)

    monkeypatch.setattr(prepared, "prepared", Spy())
    again = prepared.run(kept)
    assert again == first and again[0] is not first[0] and calls == []  # (a copy, nothing run)
    plain = cel.Context()
    plain.update(variables)
    prepared.run(plain)
    assert calls == [plain]
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    prepared.run(fast.context(variables))
    assert len(calls) == 2
    fast.clear()
    assert fast.contexts.results(kept) is None


def test_a_result_holding_an_error_is_not_kept(monkeypatch):
    monkeypatch.delenv("INKLING_COMPAT_NO_CACHE", raising=False)
    fast = FastEvaluator()
    rule = CompiledRule(_rule(when="true", condition="1"), "x.yaml")  # an error in CEL (`true && 1`)
    store = fast.contexts
    from inkling_compat.engine.evaluator import _Remembered

    prepared = _Remembered(fast.prepare((rule,)), store)
    ctx = fast.context({"x": 1})
    assert isinstance(prepared.run(ctx)[0][0], RuleEvaluationError)
    assert store.results(ctx) == {}


def test_a_check_after_another_of_other_inputs_gets_its_own_result():
    """The context kept for one input is never the context of another."""
    slots = {"config": {"lora_backend": "csgmv", "max_loras_per_batch": 4}}
    args = example_arguments(slots)
    ok = example_arguments({})
    first = [p.rule_id for p in check(**args).problems]
    assert first and not check(**ok).problems
    assert [p.rule_id for p in check(**args).problems] == first
    assert not check(**ok).problems


def _code(app, block):
    """run_rules' code for a rule that did not fire, written out rule by rule."""
    reason, untrusted, _ = block
    if app is False and not untrusted:
        return "not_applicable"
    if reason is not None:
        return reason
    return "not_applicable" if app is False else "checked"


def test_the_quiet_codes_are_the_rule_by_rule_codes():
    """When nothing fires, run_rules takes each rule's code from `engine/plan.quiet_codes`."""
    from inkling_compat.engine import coverage

    kinds = set()
    for given in EXAMPLES:
        args = example_arguments(given)
        try:
            inputs = load_inputs(args["config"], args["adapter"], model=args["model"], platform=args["platform"])
        except InputError:
            continue
        facts = derive(inputs)
        missing = coverage.global_missing(facts)
        scopes = [("global", missing), ("adapter", missing)] + [("adapter", missing + coverage.adapter_missing(m, a.form)) for m, a in zip(inputs.adapters, facts.adapters)]
        for scope, miss in scopes:
            blocks = PLAN.blocks(scope, miss)
            quiet = quiet_codes(blocks)
            for app in (True, False, None):
                assert [f if app is False else other for f, other in quiet] == [_code(app, b) for b in blocks]
            kinds.update((reason is not None, untrusted) for reason, untrusted, _ in blocks)
    assert {(False, False), (True, False), (True, True)} <= kinds  # checked, not checked, and an untrusted false `when`


def test_rules_after_one_that_fired_are_not_reached_when_nothing_else_fires():
    """apply_after's short way (no rule of the scope fires) against the rule-by-rule codes, with
    every rule that names another in `after` behind a rule that fired (an adapter's rules after
    a global one, the rules after an adapter rule)."""
    from inkling_compat.engine import coverage
    from inkling_compat.engine.evaluate import apply_after

    gated = 0
    for scope in ("global", "adapter"):
        selection = FAST.selection(PLAN, scope, ())
        fired = {a for c in selection.rules for a in c.rule.after}
        for app in (True, False, None):
            applies = [app] * len(selection.rules)
            codes, firing, reached = apply_after(selection, [False] * len(selection.rules), applies, set(fired))
            expected = []
            for c, block in zip(selection.rules, selection.blocks):
                if block[0] == coverage.NOT_APPLICABLE or not (set(c.rule.after) & fired):
                    expected.append(_code(app, block))
                else:
                    expected.append(f"not reached: {next(a for a in c.rule.after if a in fired)} comes first")
                    gated += 1
            assert (codes, firing) == (expected, []) and reached == len(selection.rules) - sum(x.startswith("not reached") for x in expected)
    assert gated


def test_a_guard_with_an_operand_that_errors_is_read_on_without_its_own_program():
    """CEL's `&&` absorbs an error when another operand is false, and is an error (None) when
    every other operand is true: the guard's operands say so, its own program is not compiled."""
    texts = ["a.missing == 1 && a.x == 2", "a.missing == 1 && a.x == 1", "a.x && true", "a.x == 1 && a.missing.y == 3 && false"]
    compiled: list[str] = []

    def compile_(text):
        compiled.append(text)
        return cel.compile(text)

    guards = Guards([lambda t=t: compile_(t) for t in texts], compile_, [tuple(analyse(t).conjuncts) for t in texts])
    ctx = cel.Context({"a": {"x": 1}})
    assert guards.values(ctx) == [False, None, None, False] == [_plain(cel.compile(t), ctx) for t in texts]
    assert not set(texts) & set(compiled), compiled  # (only operands were compiled)
