"""The fast evaluator (shared guards, conditions run alone, kept contexts) gives exactly the
reference evaluator's report (each rule's own program, rule by rule, a fresh context) on the
hostile corpus (tests/hostile/cases.py), where no rule fires whose test read a placeholder for a
missing input either (both on every rule example: tests/test_rule_examples.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import FAST, REFERENCE, ReferenceEvaluator
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.errors import InputError
from placeholders import assert_nothing_fired_on_a_placeholder

HOSTILE_CASES = 150


def _checked(evaluator, **arguments):
    """One check's inputs, facts and report, or the input error it raised."""
    try:
        return evaluate(**arguments, evaluator=evaluator)
    except InputError as exc:
        return exc


def _outcome(checked):
    if isinstance(checked, InputError):
        return ("input-error", str(checked))
    return ("report", checked.report.to_dict(), checked.report.coverage.adapters)


class _Slow(Exception):
    pass


def _alarm(*_):
    raise _Slow


@pytest.mark.long
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
                    fast = _checked(FAST, **arguments)
                    reference = _checked(REFERENCE, **arguments)
                except _Slow:
                    continue
                finally:
                    signal.alarm(0)
                assert _outcome(fast) == _outcome(reference), recipe
                if not isinstance(fast, InputError):
                    assert_nothing_fired_on_a_placeholder(fast, recipe)
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


def test_a_check_of_the_bundled_examples_builds_no_cel_context(monkeypatch):
    """The fast evaluator runs every expression of a passing check of the bundled examples as
    its Python form (engine/python_first.py): no CEL context is built, and the report is the
    reference's."""
    from inkling_compat.engine import python_first
    from inkling_compat.testing.scenarios import base_scenarios, example_arguments

    assert python_first.forms(), "the generated forms did not load"
    built = []
    real = python_first.Variables.cel
    monkeypatch.setattr(python_first.Variables, "cel", lambda self: built.append(self) or real(self))
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    for name in ("legacy", *sorted(base_scenarios())):
        arguments = example_arguments({"base": name})
        fast = _checked(FAST, **arguments)
        assert built == [], name
        assert _outcome(fast) == _outcome(_checked(REFERENCE, **arguments)), name
