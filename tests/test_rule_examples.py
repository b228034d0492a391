"""Every rule's examples run: firing examples raise that rule (with the exact text when
given), passing examples do not, and every produced message matches the rule's pattern."""

from __future__ import annotations

import re

import pytest

from inkling_compat import check
from inkling_compat.rulebook import load_rules
from inkling_compat.scenarios import example_arguments

RULES = load_rules()
CASES = [
    pytest.param(c.rule, kind, ex, id=f"{c.rule.id}:{kind}:{i}")
    for c in RULES
    for kind in ("fire", "pass")
    for i, ex in enumerate(c.rule.examples.fire if kind == "fire" else c.rule.examples.pass_)
]


@pytest.mark.parametrize("rule,kind,example", CASES)
def test_rule_example(rule, kind, example):
    report = check(**example_arguments(example.input))
    hits = [p for p in report.problems if p.rule_id == rule.id]
    if kind == "pass":
        assert not hits, f"{example.description}: unexpectedly fired: {hits[0].message}"
        return
    assert hits, f"{example.description}: did not fire; got {[p.rule_id for p in report.problems]}"
    problem = hits[0]
    if example.message is not None:
        assert problem.message == example.message
    assert re.search(rule.message_pattern, problem.message), (rule.message_pattern, problem.message)


def test_every_problem_message_matches_its_pattern():
    by_id = {c.rule.id: c.rule for c in RULES}
    for c in RULES:
        for ex in c.rule.examples.fire:
            for problem in check(**example_arguments(ex.input)).problems:
                assert re.search(by_id[problem.rule_id].message_pattern, problem.message), problem
