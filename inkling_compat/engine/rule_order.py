"""The order rules are evaluated in: sglang's stages, then `order` within a stage, and a
rule after every rule its `after` list names."""

from __future__ import annotations

from collections.abc import Iterable

from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.engine.rule_schema import STAGES
from inkling_compat.errors import RuleFileError as InputError


def check_order(rules: Iterable[CompiledRule]) -> tuple[CompiledRule, ...]:
    """The rules in sglang's check order: by stage, then `order`, then id; each after the rules
    of its `after` list."""
    in_stage_order = sorted(rules, key=lambda c: (STAGES.index(c.rule.stage), c.rule.order, c.rule.id))
    return dependency_order(in_stage_order)


def check_after(compiled: list[CompiledRule]) -> None:
    """Every id an `after` list names is a rule of the set."""
    known = {c.rule.id for c in compiled}
    for c in compiled:
        for dep in c.rule.after:
            if dep not in known:
                raise InputError(c.file, "after", f"unknown rule id {dep!r}")


def dependency_order(rules: list[CompiledRule]) -> tuple[CompiledRule, ...]:
    """Stage order, except that a rule comes after every rule in its `after` list, so the
    engine knows whether those fired when it reaches it. Reports are re-sorted by stage."""
    by_id = {c.rule.id: c for c in rules}
    placed: dict[str, CompiledRule] = {}
    visiting: set[str] = set()

    def place(c: CompiledRule) -> None:
        if c.rule.id in placed:
            return
        if c.rule.id in visiting:
            raise InputError(c.file, "after", "rules depend on each other in a cycle")
        visiting.add(c.rule.id)
        for dep in c.rule.after:
            place(by_id[dep])
        visiting.discard(c.rule.id)
        placed[c.rule.id] = c

    for c in rules:
        place(c)
    return tuple(placed.values())
