"""Every rule example, evaluated once at the version it was written for, and everything that
one evaluation shows asserted on it:

- a firing example raises that rule (with the exact text when given), a passing one does not;
- every problem's message matches its rule's pattern (that version's);
- a rule that fires is *checked* (engine/coverage.py), and every status is one of three;
- no problem's rule read an input replaced by a placeholder (tests/placeholders.py);
- the fast evaluator (shared guards, conditions run alone, kept contexts) gives exactly the
  reference evaluator's report (each rule's own program, rule by rule, a fresh context).

The same examples' messages under every other release: `test_every_problem_message_matches_its_pattern`."""

from __future__ import annotations

import re

import pytest

from inkling_compat import check
from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import FAST, REFERENCE
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.testing.scenarios import example_arguments
from placeholders import assert_nothing_fired_on_a_placeholder

RULES = load_rules()
STATUSES = {"checked", "not_applicable", "not_checked"}
# (rule as it reads in that version, version): the rule itself and each of its variants,
# whose examples run with sglang_version=<the variant's first version>.
VERSIONED = [(c.rule, c.rule.sglang_versions[0]) for c in RULES if c.rule.sglang_versions] + [
    (c.rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for c in RULES for v in c.rule.variants
]
CASES = [
    pytest.param(rule, version, kind, ex, id=f"{rule.id}@{version}:{kind}:{i}")
    for rule, version in VERSIONED
    for kind in ("fire", "pass")
    for i, ex in enumerate(rule.examples.fire if kind == "fire" else rule.examples.pass_)
]


def _patterns(version: str) -> dict[str, str]:
    return {c.rule.id: c.rule.message_pattern for c in FAST.plan(RULES, version).ordered}


def _seen(report) -> tuple:
    """All a report shows (the document and each adapter's coverage)."""
    return report.to_dict(), report.coverage.adapters


@pytest.mark.parametrize("rule,version,kind,example", CASES)
def test_rule_example(rule, version, kind, example):
    arguments = dict(example_arguments(example.input), sglang_version=version)
    checked = evaluate(**arguments)
    report = checked.report
    assert _seen(report) == _seen(evaluate(**arguments, evaluator=REFERENCE).report), "the fast evaluator differs from the reference"
    hits = [p for p in report.problems if p.rule_id == rule.id]
    if kind == "pass":
        assert not hits, f"{example.description}: unexpectedly fired: {hits[0].message}"
    else:
        assert hits, f"{example.description}: did not fire; got {[p.rule_id for p in report.problems]}"
        if example.message is not None:
            assert hits[0].message == example.message
        assert report.coverage.status[rule.id] == "checked", example.description
    patterns = _patterns(version)
    for problem in report.problems:
        assert re.search(patterns[problem.rule_id], problem.message), (patterns[problem.rule_id], problem.message)
    assert set(report.coverage.status.values()) <= STATUSES
    assert_nothing_fired_on_a_placeholder(checked, example.description)


@pytest.mark.parametrize("version", sorted({v for _, v in VERSIONED}))
def test_every_problem_message_matches_its_pattern(version):
    """Every firing example under every other release (its own: test_rule_example): each
    problem's message matches its rule's pattern in that release."""
    patterns = _patterns(version)
    for rule, written_for in VERSIONED:
        if written_for == version:
            continue
        for ex in rule.examples.fire:
            for problem in check(**example_arguments(ex.input), sglang_version=version).problems:
                assert re.search(patterns[problem.rule_id], problem.message), problem


def test_the_examples_exercise_what_the_shortcuts_skip():
    """The examples test_rule_example compares the evaluators on take the paths the fast one
    shortcuts: more than 100 fire a rule, more than 100 leave a rule not checked (a rule left
    out for a missing input). (Counted until both are reached.)"""
    fired = not_checked = 0
    for param in CASES:
        _, version, _, example = param.values
        report = evaluate(**example_arguments(example.input), sglang_version=version).report
        fired += bool(report.problems)
        not_checked += bool(report.coverage.not_checked)
        if fired > 100 and not_checked > 100:
            break
    assert fired > 100 and not_checked > 100, (fired, not_checked)


def test_versions_differ_only_where_a_variant_says_so():
    """A firing example of a rule with a 53ccafdf variant reads differently in each version;
    the seed case (csgmv, 8 slots) is the documented one (inkling_spec.md section 5.2)."""
    seed = {"config": {"lora_backend": "csgmv", "max_loras_per_batch": 8}}
    old = check(**example_arguments(seed)).problems
    new = check(**example_arguments(seed), sglang_version="53ccafdf").problems
    assert [p.rule_id for p in old] == [p.rule_id for p in new]
    texts = {p.rule_id: (a.message, p.message) for a, p in zip(old, new)}
    assert texts["sink-lora-multislot-needs-triton"] == (
        "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend",
        "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires a Triton backend",
    )
    assert all(a == b for rid, (a, b) in texts.items() if rid != "sink-lora-multislot-needs-triton")
