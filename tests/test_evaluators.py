"""The fast evaluator (shared guards, conditions run alone, kept contexts) gives exactly the
reference evaluator's report (each rule's own program, rule by rule, a fresh context) on every
rule example and on the hostile corpus (tests/hostile/cases.py); on the corpus, no rule fires
whose test read a placeholder for a missing input."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import FAST, REFERENCE, ReferenceEvaluator
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.errors import InputError
from inkling_compat.testing.scenarios import example_arguments

RULES = load_rules()
HOSTILE_CASES = 150


def _outcome(evaluator, **arguments):
    try:
        report = evaluate(**arguments, evaluator=evaluator).report
    except InputError as exc:
        return ("input-error", str(exc))
    data = report.to_dict()
    return ("report", data, report.coverage.adapters)


def _examples():
    for c in RULES:
        for rule, version in [(c.rule, c.rule.sglang_versions[0])] + [(c.rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for v in c.rule.variants]:
            for kind, examples in (("fire", rule.examples.fire), ("pass", rule.examples.pass_)):
                for i, ex in enumerate(examples):
                    yield pytest.param(ex.input, version, id=f"{rule.id}@{version}:{kind}:{i}")


@pytest.mark.parametrize("given, version", list(_examples()))
def test_fast_is_the_reference_on_every_rule_example(given, version):
    arguments = dict(example_arguments(given), sglang_version=version)
    assert _outcome(FAST, **arguments) == _outcome(REFERENCE, **arguments)


def test_the_examples_exercise_what_the_shortcuts_skip():
    """Guards false and true, conditions that fire, rules left out for a missing input."""
    fired = not_checked = 0
    for param in _examples():
        given, version = param.values
        kind, *rest = _outcome(FAST, **dict(example_arguments(given), sglang_version=version))
        if kind == "report":
            fired += bool(rest[0]["problems"])
            not_checked += bool(rest[0]["coverage"]["not_checked"])
    assert fired > 100 and not_checked > 100


def _assert_nothing_fired_on_a_placeholder(arguments, recipe):
    """Coverage is a gate on the hostile corpus too: no problem's rule read (in `when` or
    `condition`) an input replaced by a placeholder (tests/test_coverage.py: rule examples)."""
    from inkling_compat.engine import coverage
    from inkling_compat.facts.derive import derive
    from inkling_compat.facts.inputs import load_inputs
    from inkling_compat.inputs.models import SGLANG_DEFAULT_VERSION

    try:
        inputs = load_inputs(arguments["config"], arguments["adapter"], model=arguments["model"], platform=arguments["platform"])
        report = evaluate(**arguments).report
    except InputError:
        return
    facts = derive(inputs)
    missing = coverage.global_missing(facts)
    per_adapter = [missing + coverage.adapter_missing(m, a.form) for m, a in zip(inputs.adapters, facts.adapters)]
    plan = FAST.plan(RULES, SGLANG_DEFAULT_VERSION)
    for problem in report.problems:
        scope, rules = ("adapter", plan.adapter_rules) if problem.rule_id in plan.adapter_ids else ("global", plan.global_rules)
        miss = per_adapter[problem.adapter_index] if scope == "adapter" and problem.adapter_index is not None else missing
        index = [c.rule.id for c in rules].index(problem.rule_id)
        assert plan.blocks(scope, miss)[index][2] is None, (problem.rule_id, recipe)


class _Slow(Exception):
    pass


def _alarm(*_):
    raise _Slow


def test_fast_is_the_reference_on_the_hostile_corpus(tmp_path):
    from hostile import cases

    compared = 0
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for index in range(HOSTILE_CASES):
            recipe = cases.recipe(1, index)
            directory = Path(tmp_path) / str(index)
            try:
                invocation = cases.materialize(recipe, directory)
            except OSError:
                continue
            try:
                if invocation["folders"]:  # (a fleet is check_fleet's: one evaluate per folder set)
                    continue
                arguments = dict(config=invocation["config"], adapter=invocation["adapters"] or None, model=invocation["model"], platform=invocation["platform"])
                signal.alarm(20)
                try:
                    fast = _outcome(FAST, **arguments)
                    reference = _outcome(REFERENCE, **arguments)
                except _Slow:
                    continue
                finally:
                    signal.alarm(0)
                assert fast == reference, recipe
                _assert_nothing_fired_on_a_placeholder(arguments, recipe)
                compared += 1
            finally:
                cases.undo_permissions(directory)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert compared > HOSTILE_CASES / 2


class _Recording(ReferenceEvaluator):
    """The reference evaluator, noting which rules it ran whole and which only for `when`."""

    def __init__(self):
        self.whole: set[str] = set()
        self.when_only: set[str] = set()

    def prepare(self, rules):
        inner = REFERENCE.prepare(rules)
        recording = self

        class Prepared:
            def run(self, ctx):
                recording.whole.update(c.rule.id for c in rules)
                return inner.run(ctx)

            def applies(self, ctx):
                recording.when_only.update(c.rule.id for c in rules)
                return inner.applies(ctx)

        return Prepared()


def test_a_rule_not_checked_is_never_evaluated(tmp_path):
    """A Llama config.json with a TP size Inkling's heads do not divide: the rules whose test
    reads the model are not checked, the Inkling-only ones not applicable, and none of them
    runs (nor fires)."""
    config = tmp_path / "serve.yaml"
    config.write_text("tp_size: 5\n")
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32}
    recording = _Recording()
    report = evaluate(str(config), model=llama, evaluator=recording).report
    assert not report.errors
    not_checked = {rule_id for reason, ids in report.coverage.reasons.items() if "not Inkling" in reason for rule_id in ids}
    not_applicable = {c.rule.id for c in FAST.plan(load_rules(), "0.5.23").ordered if c.rule.inkling_only}
    assert "lora-pool-too-large" in not_checked and "inkling-attn-heads-divisible-by-tp" in not_applicable
    assert all(report.coverage.status[i] == "not_applicable" for i in not_applicable)
    assert not_checked.isdisjoint(recording.whole) and not_applicable.isdisjoint(recording.whole | recording.when_only)
    assert recording.whole  # the rules whose inputs are present did run
    assert report.to_dict() == evaluate(str(config), model=llama, evaluator=FAST).report.to_dict()
