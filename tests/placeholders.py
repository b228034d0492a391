"""The coverage gate seen from outside a check: no problem's rule read (in `when` or
`condition`) an input that was replaced by a placeholder (no --model, a non-Inkling or empty
config.json, an unreadable adapter, weights not read). Used on every rule example
(tests/test_rule_examples.py) and on the hostile corpus (tests/test_evaluators.py)."""

from __future__ import annotations

from inkling_compat.engine import coverage
from inkling_compat.engine.evaluate import Checked
from inkling_compat.engine.evaluator import FAST
from inkling_compat.engine.rule_load import load_rules


def assert_nothing_fired_on_a_placeholder(checked: Checked, what: object) -> None:
    """`checked`: one check's inputs, facts and report (engine/evaluate.py `evaluate`);
    `what`: named in the failure (the example or the recipe)."""
    inputs, facts, report = checked.inputs, checked.facts, checked.report
    missing = coverage.global_missing(facts)
    per_adapter = [missing + coverage.adapter_missing(m, a.form) for m, a in zip(inputs.adapters, facts.adapters)]
    plan = FAST.plan(load_rules(), report.sglang_version)
    for problem in report.problems:
        scope, rules = ("adapter", plan.adapter_rules) if problem.rule_id in plan.adapter_ids else ("global", plan.global_rules)
        miss = per_adapter[problem.adapter_index] if scope == "adapter" and problem.adapter_index is not None else missing
        index = [c.rule.id for c in rules].index(problem.rule_id)
        assert plan.blocks(scope, miss)[index][2] is None, f"{problem.rule_id} fired on a placeholder ({what})"
