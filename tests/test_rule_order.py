"""Rule order without renumbering: a rule that gives no `order` takes it from the rule before it
(by source line) at the same sglang function and sorts just after that rule; the shipped rules'
check order and report order are those they had while every rule was numbered
(tests/data/rule_order_before.json, recorded at e78a4ed)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from inkling_compat import check
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.engine.rule_order import places
from inkling_compat.engine.rule_schema import STAGES
from inkling_compat.testing.scenarios import example_arguments

BEFORE = json.loads((Path(__file__).parent / "data" / "rule_order_before.json").read_text(encoding="utf-8"))
RULES = load_rules()


def _rule(id, line, order=None, function="f", path="a.py", stage="server_args"):
    return SimpleNamespace(id=id, order=order, stage=stage, source=SimpleNamespace(path=path, function=function, line=line))


def _sorted(*rules):
    place = places(rules)
    return [r.id for r in sorted(rules, key=lambda r: (STAGES.index(r.stage), *place[r.id]))]


def _common(left, right):
    """`left` restricted to what `right` holds too (a rule added or removed since is not compared)."""
    kept = set(right)
    return [x for x in left if x in kept]


def test_a_rule_without_order_follows_the_line_before_it_in_its_function():
    assert _sorted(_rule("c", 30), _rule("a", 10, order=10), _rule("b", 20)) == ["a", "b", "c"]
    # the function's block stays together: another function's rule numbered 15 comes after it
    assert _sorted(_rule("x", 5, order=15, function="g"), _rule("a", 10, order=10), _rule("b", 20)) == ["a", "b", "x"]


def test_order_is_given_where_sglang_does_not_follow_the_lines():
    # one function, a helper called between two checks: the later check numbered after the helper
    rules = (_rule("a", 10, order=10), _rule("h", 3, order=20, function="helper"), _rule("b", 20, order=30), _rule("c", 40))
    assert _sorted(*rules) == ["a", "h", "b", "c"]
    # several refusals at one line: their numbers say the order
    assert _sorted(_rule("z", 7, order=1), _rule("y", 7, order=2)) == ["z", "y"]


def test_a_rule_without_a_site_line_or_an_earlier_number_takes_zero():
    assert places([_rule("a", None)])["a"][0] == 0
    assert places([_rule("a", 10), _rule("b", 20)])["b"][:2] == (0, "a")


def test_the_check_order_is_the_one_every_rule_had_numbered():
    now = [c.rule.id for c in RULES]
    assert _common(now, BEFORE["check_order"]) == _common(BEFORE["check_order"], now)


def test_the_report_order_of_each_rule_example_is_the_one_every_rule_had_numbered():
    examples = {}
    for c in RULES:
        for rule, version in [(c.rule, (c.rule.sglang_versions or [None])[0])] + [
            (c.rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for v in c.rule.variants
        ]:
            for kind in ("fire", "pass"):
                for i, ex in enumerate(rule.examples.fire if kind == "fire" else rule.examples.pass_):
                    examples[f"{rule.id}@{version}:{kind}:{i}"] = (ex, version)
    compared = 0
    for case, before in BEFORE["reports"].items():
        if case not in examples:
            continue  # an example changed or removed since
        ex, version = examples[case]
        report = check(**example_arguments(ex.input), sglang_version=version)
        now = [p.rule_id if p.adapter_index is None else f"{p.rule_id}#{p.adapter_index}" for p in report.problems]
        assert _common(now, before) == _common(before, now), case
        compared += 1
    assert compared >= len(BEFORE["reports"]) // 2, "most recorded examples are still there to compare"


def _site(rule):
    source = rule.source
    return (rule.stage, source.path, source.function, source.line) if source is not None and source.line is not None else None


def test_no_order_number_is_redundant():
    """An `order` the check order does not need is left out (writing-rules.md: when `order` is
    needed); several rules at one site line each keep theirs (their line cannot order them)."""
    rules = {c.rule.id: c.rule for c in RULES}
    sites = [_site(r) for r in rules.values()]
    now = _sorted(*rules.values())
    redundant = [
        f"{r.id} (order {r.order})"
        for r in rules.values()
        if r.order is not None
        and (_site(r) is None or sites.count(_site(r)) == 1)
        and _sorted(*dict(rules, **{r.id: r.model_copy(update={"order": None})}).values()) == now
    ]
    assert not redundant, f"leave out the `order` of: {redundant}"
