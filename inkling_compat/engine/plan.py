"""The evaluation plan of one rule set and sglang version: rules split by scope, each scope's
programs in evaluation order, and the variable paths they read (the CEL context holds only
those: converting values into CEL costs more than evaluating them)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from inkling_compat.engine import cel_tree, coverage
from inkling_compat.engine.rules import CompiledRule

_ADAPTER_VARS = ("adapter", "adapter_facts")


def path_tree(paths: set[tuple[str, ...]]) -> dict[Any, Any]:
    """Paths as a tree of segments; `None` marks where a path ends (keep the whole value)."""
    tree: dict[Any, Any] = {}
    for path in paths:
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
        node[None] = True
    return tree


class Plan:
    def __init__(self, compiled: tuple[CompiledRule, ...], version: str):
        versioned = (c.for_version(version) for c in compiled)
        self.ordered = tuple(c for c in versioned if c is not None)
        self.global_rules = tuple(c for c in self.ordered if c.rule.scope != "adapter")
        self.adapter_rules = tuple(c for c in self.ordered if c.rule.scope == "adapter")
        global_paths = set().union(*(c.cel_paths for c in self.global_rules))
        adapter_paths = set().union(*(c.cel_paths for c in self.adapter_rules))
        self.tree = path_tree({p for p in global_paths | adapter_paths if p[0] not in _ADAPTER_VARS})
        self.adapter_tree = path_tree({p for p in adapter_paths if p[0] in _ADAPTER_VARS})
        # What adapter rules read besides the adapter (their own, smaller context).
        self.adapter_global_tree = path_tree({p for p in adapter_paths if p[0] not in _ADAPTER_VARS})
        # Every `.name` any expression reads: the items of `adapters` / `adapter_facts_list`
        # keep only these keys (a superset of what a macro like `adapters.exists(a, a.name ...)` reads).
        expressions = [e for c in self.ordered for e in (c.rule.when, c.rule.condition, *c.rule.params.values())]
        self.item_keys = frozenset().union(*(cel_tree.analyse(e).fields for e in expressions))
        # Top-level manifest keys any rule may read (None: the whole manifest is read).
        adapter_node = path_tree({p for p in adapter_paths | global_paths if p[0] == "adapter"}).get("adapter", {})
        self.adapter_keys = None if None in adapter_node else set(adapter_node) | set(self.item_keys)
        self.global_ids = tuple(c.rule.id for c in self.global_rules)
        self.adapter_ids = tuple(c.rule.id for c in self.adapter_rules)
        # Per rule of each scope: (inputs it reads, inputs its `when` reads, inputs that gate it).
        self.reads = {
            "global": tuple(coverage.rule_reads(c) for c in self.global_rules),
            "adapter": tuple(coverage.rule_reads(c) for c in self.adapter_rules),
        }
        self._blocks: dict[tuple[Any, ...], Any] = {}
        self._prepared: dict[tuple[Any, ...], Any] = {}

    def blocks(self, scope: str, missing: "coverage.Missing") -> tuple[tuple[str | None, bool, str | None], ...]:
        """Per rule of `scope` ("global" / "adapter"): why it is not checked with these inputs
        missing (None: nothing it reads is), whether a false `when` is untrusted, and why it may
        not fire (None: it may; engine/coverage.block_row). Computed
        once per distinct set of missing inputs (a handful: their reasons are generic)."""
        key = (scope, missing)
        row = self._blocks.get(key)
        if row is None:
            if len(self._blocks) >= 64:
                self._blocks.clear()
            row = self._blocks[key] = coverage.block_row(self.reads[scope], missing)
        return row


    def quiet_codes(self, scope: str, missing: "coverage.Missing") -> tuple[tuple[str, str], ...]:
        """Per rule of `scope`: its coverage code when its `when && condition` is false, if its
        `when` is false / otherwise (what `run_rules` writes for a rule that did not fire),
        from `blocks` (engine/coverage.py: a false `when` is trusted unless it read a
        placeholder). Cached with the blocks."""
        key = ("codes", scope, missing)
        row = self._blocks.get(key)
        if row is None:
            if len(self._blocks) >= 64:
                self._blocks.clear()
            row = self._blocks[key] = tuple(
                (
                    coverage.NOT_APPLICABLE if not untrusted or reason is None else reason,
                    reason if reason is not None else coverage.CHECKED,
                )
                for reason, untrusted, _ in self.blocks(scope, missing)
            )
        return row


    def selection(self, scope: str, missing: "coverage.Missing") -> "Selection":
        """The rules of `scope` ("global" / "adapter") and what to evaluate of each with these
        inputs missing (cached with the blocks)."""
        key = ("selection", scope, missing)
        found = self._blocks.get(key)
        if found is None:
            if len(self._blocks) >= 64:
                self._blocks.clear()
            rules = self.global_rules if scope == "global" else self.adapter_rules
            found = self._blocks[key] = Selection(rules, self.blocks(scope, missing), self.quiet_codes(scope, missing))
        return found

    def prepared(self, evaluator: Any, selections: tuple["Selection", ...], part: str) -> Any:
        """`evaluator.prepare` of the `part` ("run", "when_only" or "all") rules of `selections`, one
        after the other: built once per plan, evaluator and selections."""
        key = (evaluator, part, selections)
        found = self._prepared.get(key)
        if found is None:
            if len(self._prepared) >= 64:
                self._prepared.clear()
            rules = tuple(c for s in selections for c in {"run": s.run_rules, "when_only": s.when_only_rules, "all": s.rules}[part])
            found = self._prepared[key] = evaluator.prepare(rules)
        return found


class Selection:
    """One scope's rules with one set of missing inputs, sorted before anything runs:

    - `run`: the rules that may fire, evaluated whole (`(when) && (condition)`);
    - `when_only`: rules whose condition read a placeholder for a missing input (they are not
      checked), but whose `when` did not: only the `when` runs, to tell *not applicable*;
    - the rest, whose `when` read a placeholder too: never evaluated, *not checked*.

    `blocks` and `quiet` are the plan's (engine/coverage.block_row, Plan.quiet_codes)."""

    __slots__ = ("rules", "blocks", "quiet", "run", "run_rules", "when_only", "when_only_rules", "whole")

    def __init__(self, rules: tuple[CompiledRule, ...], blocks: tuple[Any, ...], quiet: tuple[Any, ...]):
        self.rules, self.blocks, self.quiet = rules, blocks, quiet
        self.run = tuple(i for i, (_, _, gated) in enumerate(blocks) if gated is None)
        self.when_only = tuple(i for i, (_, untrusted, gated) in enumerate(blocks) if gated is not None and not untrusted)
        self.run_rules = tuple(rules[i] for i in self.run)
        self.when_only_rules = tuple(rules[i] for i in self.when_only)
        self.whole = len(self.run) == len(rules)  # (the usual case: nothing is left out)


@lru_cache(maxsize=8)
def plan(compiled: tuple[CompiledRule, ...], version: str) -> Plan:
    return Plan(compiled, version)
