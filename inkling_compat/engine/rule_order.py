"""The order rules are evaluated in: sglang's stages, then `order` and the site's source line
within a stage, and a rule after every rule its `after` list names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.engine.rule_record import STAGES
from inkling_compat.errors import RuleFileError as InputError

if TYPE_CHECKING:
    from inkling_compat.engine.rule_record import Rule


def check_order(rules: Iterable[CompiledRule]) -> tuple[CompiledRule, ...]:
    """The rules in sglang's check order: by stage, then `order`, a rule that gives none just
    after the rule whose `order` it takes (`places`); each after the rules of its `after` list.
    Each rule's `rank` is set to its place in the stage order (what reports sort by)."""
    rules = list(rules)
    place = places([c.rule for c in rules])
    in_stage_order = sorted(rules, key=lambda c: (STAGES.index(c.rule.stage), *place[c.rule.id]))
    for rank, c in enumerate(in_stage_order):
        for compiled in (c, *(c.for_version(v) for v in _versions(c.rule))):
            if compiled is not None:
                compiled.rank = rank
    return dependency_order(in_stage_order)


def places(rules: Iterable[Rule]) -> dict[str, tuple[int, str, int, bool, str]]:
    """Rule id -> where it sorts within its stage: (order, the id of the rule that gave it,
    source line, whether it was taken, id).

    A rule's `order` is its own; where it gives none, that of the rule before it (by source
    line) with the same stage and sglang function (`source.path` and `source.function`), and it
    sorts just after that rule, with the others that take it, by line. sglang raises the checks
    of one function in the order of their lines, so `order` is written only where that is not
    sglang's order (several refusals at one line, a helper called between two checks). A rule
    that gives none and has no such rule before it takes 0."""
    out: dict[str, tuple[int, str, int, bool, str]] = {}
    sites: dict[tuple[str, str, str], list[Rule]] = {}
    for rule in rules:
        source = rule.source
        if source is not None and source.line is not None and source.function:
            sites.setdefault((rule.stage, source.path, source.function), []).append(rule)
        else:
            out[rule.id] = (rule.order or 0, rule.id, 0, False, rule.id)
    for members in sites.values():
        order, anchor = 0, ""
        # at one line, a rule that gives its `order` before those that take one
        for rule in sorted(members, key=lambda r: (_line(r), r.order is None, r.order or 0, r.id)):
            if rule.order is not None or not anchor:
                order, anchor = rule.order or 0, rule.id
            out[rule.id] = (order, anchor, _line(rule), rule.order is None, rule.id)
    return out


def _line(rule: Rule) -> int:
    return rule.source.line if rule.source is not None and rule.source.line is not None else 0


def _versions(rule: Rule) -> list[str]:
    return [*(rule.sglang_versions or ()), *(v for variant in rule.variants for v in variant.sglang_versions)]


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
