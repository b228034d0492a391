"""What a rule reads comes from its CEL parse tree (engine/cel_tree.py), checked against the
evaluator's own static analysis: on every expression of every shipped rule, the names the
tree finds (free ones and those a comprehension binds) are exactly `Program.variables()`."""

from __future__ import annotations

import pytest

from inkling_compat.engine import cel, cel_tree
from inkling_compat.engine.compiled_rules import expression_table
from inkling_compat.engine.paths import VARIABLES, referenced_paths
from inkling_compat.engine.rule_load import load_rules

RULES = load_rules()
EXPRESSIONS = sorted(expression_table(RULES))


def _names(node: cel_tree.Node) -> set[str]:
    """Every identifier of the tree (free or bound), as the evaluator's `variables()` lists them."""
    out: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cel_tree.Ident):
            out.add(item.name)
        stack.extend(cel_tree.children(item))
    return out


def test_every_rule_expression_is_parsed():
    assert len(EXPRESSIONS) > 300


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_the_names_are_the_evaluators(text):
    assert _names(cel_tree.parse(text)) == set(cel.compile(text).variables())


@pytest.mark.parametrize(
    "text, paths",
    [
        ('facts.sink.sink_class == "v2"', {("facts", "sink", "sink_class")}),
        ('"facts.sink" == config.x', {("config", "x")}),  # a string is text, not a path
        ("size(facts.startup.targets) > 0", {("facts", "startup", "targets")}),
        ("facts.startup.targets.size() > 0", {("facts", "startup", "targets")}),  # a method reads its operand whole
        ("adapter_facts.reshape_failure.size", {("adapter_facts", "reshape_failure", "size")}),  # a field named like a method
        ('adapter.tensors["w"].shape[0]', {("adapter", "tensors")}),
        ("adapters.exists(a, a.name == adapter.name)", {("adapters",), ("adapter", "name")}),
        ("adapters.exists(adapter, adapter.r > 1)", {("adapters",)}),  # the comprehension's own variable
        ("has(config.lora_paths) ? config.lora_paths : []", {("config", "lora_paths")}),
        ("facts.model.x // a comment naming env.y\n", {("facts", "model", "x")}),
        ("{'k': model.a}[platform.b]", {("model", "a"), ("platform", "b")}),
    ],
)
def test_reads(text, paths):
    assert referenced_paths(text) == paths


def test_fields_and_looseness():
    analysis = cel_tree.analyse("adapters.exists(a, a.name == 'x' && a.r > 1) || facts.y")
    assert {"name", "r", "y"} <= analysis.fields and analysis.loose
    assert not cel_tree.analyse("a && (b || c)").loose
    assert cel_tree.analyse("a ? b : c").loose


def test_the_compiled_artifact_holds_what_the_parser_computes():
    """What the compiled rules hold of each rule and variant (read instead of parsing at every
    start: CompiledRule.stored) is what the parser computes from its texts."""
    assert all(c.reads is not None for c in RULES), "the shipped rules were not read from the artifact"
    for c in RULES:
        for v in {id(v): v for v in c._versions.values() if v is not None}.values():
            rule = v.rule
            assert v.when_paths == referenced_paths(rule.when)
            assert v.gate_paths == v.when_paths | referenced_paths(rule.condition)
            assert v.when_conjuncts == cel_tree.analyse(rule.when.strip()).conjuncts  # (each compiles alone)
            texts = (rule.when, rule.condition, *rule.params.values())
            assert v.fields == frozenset().union(*(cel_tree.analyse(t).fields for t in texts))


def test_variables_read_are_declared():
    assert all(path[0] in VARIABLES for c in RULES for path in c.paths)
