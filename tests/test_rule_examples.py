"""Every rule's examples run: firing examples raise that rule (with the exact text when
given), passing examples do not, and every produced message matches the rule's pattern."""

from __future__ import annotations

import re

import pytest

from inkling_compat import check
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.testing.scenarios import example_arguments

RULES = load_rules()
# (rule as it reads in that version, version): the rule itself and each of its variants,
# whose examples run with check(..., sglang_version=<the variant's first version>).
VERSIONED = [(c.rule, c.rule.sglang_versions[0]) for c in RULES if c.rule.sglang_versions] + [
    (c.rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for c in RULES for v in c.rule.variants
]
CASES = [
    pytest.param(rule, version, kind, ex, id=f"{rule.id}@{version}:{kind}:{i}")
    for rule, version in VERSIONED
    for kind in ("fire", "pass")
    for i, ex in enumerate(rule.examples.fire if kind == "fire" else rule.examples.pass_)
]


@pytest.mark.parametrize("rule,version,kind,example", CASES)
def test_rule_example(rule, version, kind, example):
    report = check(**example_arguments(example.input), sglang_version=version)
    hits = [p for p in report.problems if p.rule_id == rule.id]
    if kind == "pass":
        assert not hits, f"{example.description}: unexpectedly fired: {hits[0].message}"
        return
    assert hits, f"{example.description}: did not fire; got {[p.rule_id for p in report.problems]}"
    problem = hits[0]
    if example.message is not None:
        assert problem.message == example.message
    assert re.search(rule.message_pattern, problem.message), (rule.message_pattern, problem.message)


@pytest.mark.parametrize("version", sorted({v for _, v in VERSIONED}))
def test_every_problem_message_matches_its_pattern(version):
    by_id = {c.rule.id: c.for_version(version).rule for c in RULES if c.for_version(version) is not None}
    for rule, _ in VERSIONED:
        for ex in rule.examples.fire:
            for problem in check(**example_arguments(ex.input), sglang_version=version).problems:
                assert re.search(by_id[problem.rule_id].message_pattern, problem.message), problem


def test_versions_differ_only_where_a_variant_says_so():
    """A firing example of a rule with a 53ccafdf variant reads differently in each version;
    the seed case (csgmv, 8 slots) is the documented one (inkling_spec.md section 5.2)."""
    from inkling_compat.testing.scenarios import example_arguments as args

    seed = {"config": {"lora_backend": "csgmv", "max_loras_per_batch": 8}}
    old = check(**args(seed)).problems
    new = check(**args(seed), sglang_version="53ccafdf").problems
    assert [p.rule_id for p in old] == [p.rule_id for p in new]
    texts = {p.rule_id: (a.message, p.message) for a, p in zip(old, new)}
    assert texts["sink-lora-multislot-needs-triton"] == (
        "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend",
        "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires a Triton backend",
    )
    assert all(a == b for rid, (a, b) in texts.items() if rid != "sink-lora-multislot-needs-triton")
