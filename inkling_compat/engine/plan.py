"""The evaluation plan of one rule set and sglang version: the rules that apply to the version
(its variant of each; none whose sglang site the release lacks: engine/sites.py), split by
scope, each scope's programs in evaluation order, and the variable paths they read (the CEL
context holds only those: converting values into CEL costs more than evaluating them)."""

from __future__ import annotations

from inkling_compat.engine import coverage
from inkling_compat.engine.rule_compile import CompiledRule, reads_lora_paths_by_name
from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_ADAPTER_VARS = ("adapter", "adapter_facts")


def path_tree(paths: "set[tuple[str, ...]] | tuple[tuple[str, ...], ...]") -> dict[Any, Any]:
    """Paths as a tree of segments; `None` marks where a path ends (keep the whole value)."""
    tree: dict[Any, Any] = {}
    for path in paths:
        node = tree
        for segment in path:  # (a segment's node made where it is first met: no dict made to be dropped)
            child = node.get(segment)
            if child is None:
                child = node[segment] = {}
            node = child
        node[None] = True
    return tree


def _path_sets(global_rules: tuple[CompiledRule, ...], adapter_rules: tuple[CompiledRule, ...]) -> tuple[Any, Any, Any, Any]:
    """The paths of a plan's context trees (all rules' but the adapter's, the adapter's, what
    adapter rules read besides the adapter) and the node of what any rule reads of `adapter`."""
    global_paths = set().union(*(c.cel_paths for c in global_rules))
    adapter_paths = set().union(*(c.cel_paths for c in adapter_rules))
    adapter_node = path_tree({p for p in adapter_paths | global_paths if p[0] == "adapter"}).get("adapter", {})
    return (
        {p for p in global_paths | adapter_paths if p[0] not in _ADAPTER_VARS},
        {p for p in adapter_paths if p[0] in _ADAPTER_VARS},
        {p for p in adapter_paths if p[0] not in _ADAPTER_VARS},
        adapter_node,
    )


class Plan:
    def __init__(self, compiled: tuple[CompiledRule, ...], version: str):
        # The rules' sites are the default release's: only another release's data is read. A
        # rule's variant for the release was written for that release's code: it is kept.
        lacking: frozenset[str] = frozenset()
        if version != SGLANG_DEFAULT_VERSION:  # (the sites' data: read only for another release)
            from inkling_compat.engine import sites

            lacking = sites.absent(version)
        ordered: list[CompiledRule] = []
        global_rules: list[CompiledRule] = []
        adapter_rules: list[CompiledRule] = []
        for c in compiled:  # (one pass over the rule set: the plan is built at every start)
            v = c.for_version(version)
            if v is None or (v is c and lacking and v.rule.id in lacking):
                continue
            ordered.append(v)
            (adapter_rules if v.rule.scope == "adapter" else global_rules).append(v)
        self.ordered, self.global_rules, self.adapter_rules = tuple(ordered), tuple(global_rules), tuple(adapter_rules)
        self.global_ids = tuple([c.rule.id for c in global_rules])
        self.adapter_ids = tuple([c.rule.id for c in adapter_rules])
        # The shipped rules' plan of the default release is worked out when their artifact is
        # generated (engine/compiled_rules.py: `held()`, read back here); any other is worked
        # out here.
        plans = getattr(compiled, "plans", None)  # (engine/rule_load.RuleSet)
        held = plans.get(version) if plans else None
        if held is not None and (len(held[6]), len(held[7])) == (len(global_rules), len(adapter_rules)):
            trees, self.lora_paths_by_name, item_keys, adapter_keys, global_reads, adapter_reads = held[:3], held[3], held[4], held[5], held[6], held[7]
            self.tree, self.adapter_tree, self.adapter_global_tree = (path_tree(paths) for paths in trees)
            self.item_keys = frozenset(item_keys)
            self.adapter_keys = None if adapter_keys is None else set(adapter_keys)
            # (as tuples: engine/coverage.block_row reads them with `in`)
            self.reads = {"global": global_reads, "adapter": adapter_reads}
            return
        tree_paths, adapter_tree_paths, adapter_global_paths, adapter_node = _path_sets(self.global_rules, self.adapter_rules)
        self.tree = path_tree(tree_paths)
        self.adapter_tree = path_tree(adapter_tree_paths)
        # What adapter rules read besides the adapter (their own, smaller context).
        self.adapter_global_tree = path_tree(adapter_global_paths)
        # An adapter's rules read only the --lora-paths entries of its own name: its context holds
        # those (a fleet listed in --lora-paths stays linear in the number of entries).
        self.lora_paths_by_name = "lora_paths" in self.adapter_global_tree.get("facts", {}) and all(
            c.by_name if c.by_name is not None else reads_lora_paths_by_name((c,)) for c in self.adapter_rules
        )
        # Every `.name` any expression reads: the items of `adapters` / `adapter_facts_list`
        # keep only these keys (a superset of what a macro like `adapters.exists(a, a.name ...)` reads).
        self.item_keys = frozenset().union(*(c.fields for c in self.ordered))
        # Top-level manifest keys any rule may read (None: the whole manifest is read).
        self.adapter_keys = None if None in adapter_node else set(adapter_node) | set(self.item_keys)
        # Per rule of each scope: (inputs it reads, inputs its `when` reads, inputs that gate it).
        memo: dict[Any, Any] = {}
        self.reads = {
            "global": tuple(c.reads if c.reads is not None else coverage.rule_reads(c, memo) for c in self.global_rules),
            "adapter": tuple(c.reads if c.reads is not None else coverage.rule_reads(c, memo) for c in self.adapter_rules),
        }

    def held(self) -> tuple[Any, ...]:
        """What the compiled artifact holds of this plan (constants: tuples, strings, bools;
        read back by `Plan` for the same rules and version): the paths of its three trees,
        `lora_paths_by_name`, `item_keys`, `adapter_keys`, and each scope's `reads`."""
        tree_paths, adapter_tree_paths, adapter_global_paths, _ = _path_sets(self.global_rules, self.adapter_rules)

        def reads(scope: str) -> tuple[Any, ...]:
            return tuple(tuple(tuple(sorted(names)) for names in row) for row in self.reads[scope])

        return (
            *(tuple(sorted(paths)) for paths in (tree_paths, adapter_tree_paths, adapter_global_paths)),
            self.lora_paths_by_name,
            tuple(sorted(self.item_keys)),
            None if self.adapter_keys is None else tuple(sorted(self.adapter_keys)),
            reads("global"),
            reads("adapter"),
        )

    def blocks(self, scope: str, missing: "coverage.Missing") -> tuple[tuple[str | None, bool, str | None], ...]:
        """Per rule of `scope` ("global" / "adapter"): why it is not checked with these inputs
        missing (None: nothing it reads is), whether a false `when` is untrusted, and why it may
        not fire (None: it may; engine/coverage.block_row)."""
        return coverage.block_row(self.reads[scope], missing)

    def selection(self, scope: str, missing: "coverage.Missing") -> "Selection":
        """The rules of `scope` ("global" / "adapter") and what to evaluate of each with these
        inputs missing (engine/evaluator.py keeps them: a check has a handful of distinct
        `missing`, their reasons are generic)."""
        rules = self.global_rules if scope == "global" else self.adapter_rules
        blocks = self.blocks(scope, missing)
        return Selection(rules, blocks, quiet_codes(blocks))


def quiet_codes(blocks: tuple[tuple[str | None, bool, str | None], ...]) -> tuple[tuple[str, str], ...]:
    """Per rule: its coverage code when its `when && condition` is false, if its `when` is
    false / otherwise (what `run_rules` writes for a rule that did not fire), from its block
    (engine/coverage.py: a false `when` is trusted unless it read a placeholder)."""
    na, checked = coverage.NOT_APPLICABLE, coverage.CHECKED
    return tuple([(na if not untrusted or reason is None else reason, reason if reason is not None else checked) for reason, untrusted, _ in blocks])


class Selection:
    """One scope's rules with one set of missing inputs, sorted before anything runs:

    - `run`: the rules that may fire, evaluated whole (`(when) && (condition)`);
    - `when_only`: rules whose condition read a placeholder for a missing input (they are not
      checked), but whose `when` did not: only the `when` runs, to tell *not applicable*;
    - the rest, whose `when` read a placeholder too: never evaluated, *not checked*;
    - `absent`: in a check without adapters, the rules whose `when` runs to tell *not
      applicable* (every rule but those not applicable to the model: never evaluated).

    `blocks` and `quiet` are the plan's (engine/coverage.block_row, `quiet_codes`); `gated`: the
    rules an earlier raise (their `after`) may keep sglang from reaching; `codes`: the codes
    `apply_after` gave when none of the rules fired, by their `when`s and the rules fired before."""

    __slots__ = ("rules", "blocks", "quiet", "run", "run_rules", "when_only", "when_only_rules", "whole", "absent", "absent_rules", "gated", "codes")

    def __init__(self, rules: tuple[CompiledRule, ...], blocks: tuple[Any, ...], quiet: tuple[Any, ...]):
        self.rules, self.blocks, self.quiet = rules, blocks, quiet
        run: list[int] = []
        when_only: list[int] = []
        absent: list[int] = []
        gated: list[int] = []
        na = coverage.NOT_APPLICABLE
        for i, (reason, untrusted, gate) in enumerate(blocks):  # (one pass: a row per rule, some two hundred)
            if gate is None:
                run.append(i)
            elif not untrusted:
                when_only.append(i)
            if reason != na:
                absent.append(i)
                if rules[i].rule.after:
                    gated.append(i)
        self.run, self.when_only, self.absent, self.gated = tuple(run), tuple(when_only), tuple(absent), tuple(gated)
        self.run_rules = tuple([rules[i] for i in run])
        self.when_only_rules = tuple([rules[i] for i in when_only])
        self.whole = len(run) == len(rules)  # (the usual case: nothing is left out)
        self.absent_rules = tuple([rules[i] for i in absent])
        self.codes: dict[Any, tuple[tuple[str, ...], int]] = {}
