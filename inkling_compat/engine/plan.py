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
        global_paths = set().union(*(c.paths for c in self.global_rules))
        adapter_paths = set().union(*(c.paths for c in self.adapter_rules))
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


@lru_cache(maxsize=8)
def plan(compiled: tuple[CompiledRule, ...], version: str) -> Plan:
    return Plan(compiled, version)
