"""Adapters alike in what most rules read share one evaluation of those rules.

A fleet's adapters differ mostly in who they are (name, path, lora_id, their --lora-paths
entry, their folder) and rarely in what they are (rank, targets, shapes, config). An adapter
rule whose `when` and `condition` read none of the identity (`IDENTITY`) gives the same
result for two adapters whose views agree on every path it reads (its result is a function of
the variables it reads, and every other variable of an adapter's context is the same for all
adapters of a check). So, per check, the second and later adapters' rules split in two:

- the *content* rules run once per distinct content (the adapter's `adapter` and
  `adapter_facts` without the identity values, as marshal writes them: types and order
  included), in the adapter's whole context;
- the *identity* rules run for every adapter, in a context that holds only what they read, so
  the per-adapter conversion into CEL (most of a fleet check's time) is small.

An adapter whose content was not seen before runs everything in its whole context, as without
the split. Each rule's result is its own (`(when) && (condition)` and its `when`): splitting
the list changes no result (tests/test_evaluators.py compares with the reference evaluator,
which never splits). Rendering a rule that fires uses the adapter's whole context.
"""

from __future__ import annotations

import marshal
import re
from typing import Any, Callable

from inkling_compat.engine.context import Contexts, _as_text, cel_context, prune
from inkling_compat.engine.plan import Plan, Selection, path_tree

# What tells one adapter from another alike one: a rule reading any of these (or a whole
# value holding one) is an identity rule.
IDENTITY = (
    ("adapter", "name"),
    ("adapter", "path"),
    ("adapter", "source", "directory"),
    ("adapter_facts", "name"),
    ("adapter_facts", "lora_id"),
    ("facts", "lora_paths"),
)


def reads_identity(paths: "set[tuple[str, ...]] | frozenset[tuple[str, ...]]") -> bool:
    """Whether any path reads an identity value, or a whole value that holds one."""
    return any(p[: len(i)] == i or i[: len(p)] == p for p in paths for i in IDENTITY)


# `adapter.source` read whole, and that read compared with null: it tells only whether the
# adapter has a source (the content key holds that: null, or the source without its folder).
_SOURCE = re.compile(r"\badapter\.source\b(?![\w.])")
_NULL_TEST = re.compile(r"\s*[!=]=\s*null\b")


# How adapter rules ask whether their adapter is a --lora-paths entry (a pinned one): the only
# reads of the entries and of the adapter's name that such a rule may hold to be a content rule
# (the content key then holds the `pinned` of each entry of the adapter's name).
_NAMED_ENTRY = re.compile(r"facts\.lora_paths\.exists\((\w+), \1\.name == adapter\.name(?: && \1\.pinned)?\)")
_LORA_PATHS = re.compile(r"facts\.lora_paths\b")
_NAME = re.compile(r"\badapter\.name\b")


def gate_paths(rule: Any) -> "set[tuple[str, ...]] | frozenset[tuple[str, ...]]":
    """What the rule's `when` and `condition` read (CompiledRule `gate_paths`), less what the
    content key stands for:

    - `adapter.source` whole where each whole read of it is a null test (`adapter.source !=
      null`): the paths below it that the rule reads stay;
    - `adapter.name` and `facts.lora_paths` where each read of them is
      `facts.lora_paths.exists(p, p.name == adapter.name)` (or `... && p.pinned`): its value is
      that of the same macro over the entries of the adapter's name, true where there is one
      (a pinned one), which the key holds."""
    paths = rule.gate_paths
    text = f"{rule.rule.when}\n{rule.rule.condition}"
    if ("adapter", "source") in paths and all(_NULL_TEST.match(text, m.end()) for m in _SOURCE.finditer(text)):
        paths = paths - {("adapter", "source")}
    if ("facts", "lora_paths") in paths and len(_LORA_PATHS.findall(text)) == len(_NAMED_ENTRY.findall(text)) == len(_NAME.findall(text)):
        paths = paths - {("facts", "lora_paths"), ("adapter", "name")}
    return paths


class Split:
    """One adapter selection's rules in two lists (indices into `selection.rules`): identity
    rules and content rules, each for its `run` and `when_only` part, prepared; and the path
    tree of what the identity rules read (what their context holds)."""

    __slots__ = ("ident_run", "ident_when", "content_run", "content_when", "programs", "ident_tree")

    def __init__(self, selection: Selection, prepare: Callable[[tuple[Any, ...]], Any]):
        rules = selection.rules
        paths = [gate_paths(c) for c in rules]
        ident = {i for i, read in enumerate(paths) if reads_identity(read)}
        self.ident_run = tuple(i for i in selection.run if i in ident)
        self.content_run = tuple(i for i in selection.run if i not in ident)
        self.ident_when = tuple(i for i in selection.when_only if i in ident)
        self.content_when = tuple(i for i in selection.when_only if i not in ident)
        self.programs = tuple(prepare(tuple(rules[i] for i in part)) if part else None for part in (self.ident_run, self.content_run, self.ident_when, self.content_when))
        self.ident_tree = path_tree({p for i in (*self.ident_run, *self.ident_when) for p in rules[i].gate_paths})


def _without_identity(doc: Any, facts: Any) -> tuple[Any, Any]:
    """The adapter's view (`adapter`, `adapter_facts`) without its identity values: it holds
    every path a content rule reads (and maybe more: a key finer than needed only shares less)."""
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k not in ("name", "path")}
        source = doc.get("source")
        if isinstance(source, dict) and "directory" in source:
            doc["source"] = {k: v for k, v in source.items() if k != "directory"}
    if isinstance(facts, dict):
        facts = {k: v for k, v in facts.items() if k not in ("name", "lora_id")}
    return doc, facts


class AlikeAdapters:
    """The adapter rules' outcomes of one check's second and later adapters (see the module's
    docstring); `split(selection)` gives a selection's `Split` (the fast evaluator keeps them)."""

    def __init__(self, plan: Plan, contexts: Contexts, split: Callable[[Selection], Split]):
        self.plan, self.contexts, self.split = plan, contexts, split
        self.seen: dict[Any, tuple[Any, ...]] = {}  # (selection, content) -> the content rules' results
        self.ident_contexts: dict[int, Any] = {}  # id(split) -> its identity context (the split is held by the evaluator's cache for the check)
        self._splits: list[Split] = []  # (held here too: an id above is never reused during the check)
        self.last: dict[int, dict[str, Any]] = {}  # id(split) -> each variable of its identity context, as marshal wrote it

    def outcome(self, selection: Selection, index: int) -> tuple[list[Any], list[Any], bool]:
        """Adapter `index`'s (hits, applies) for `selection`'s rules, as `_evaluate_selected`
        gives them, and whether its whole context was built (`contexts.for_adapter(index)`)."""
        split = self.split(selection)
        doc, facts = self.contexts.view(index)
        key: Any = None
        name = doc.get("name") if isinstance(doc, dict) else None
        if isinstance(name, str):  # (the entries of its name: what `_NAMED_ENTRY` reads)
            entries = tuple(e.get("pinned") if isinstance(e, dict) else e for e in self.contexts.entries_named(name))
            try:
                key = (selection, marshal.dumps((_without_identity(doc, facts), entries)))
            except ValueError:  # a value marshal cannot write: not shared
                pass
        found = self.seen.get(key) if key is not None else None
        hits: list[Any] = [False] * len(selection.rules)
        applies: list[Any] = [None] * len(selection.rules)
        whole = found is None
        if whole:
            ctx = self.contexts.for_adapter(index)
            results = tuple(None if p is None else (p.run(ctx) if n < 2 else p.applies(ctx)) for n, p in enumerate(split.programs))
            if key is not None:
                self.seen[key] = results[1], results[3]
        else:
            ctx = self._ident_context(split, index)
            run, _, when_only, _ = split.programs
            results = (None if run is None else run.run(ctx), found[0], None if when_only is None else when_only.applies(ctx), found[1])
            self.contexts.drop_view(index)
        for n, part in ((0, split.ident_run), (1, split.content_run)):
            if results[n] is not None:
                for i, hit, app in zip(part, *results[n]):
                    hits[i], applies[i] = hit, app
        for n, part in ((2, split.ident_when), (3, split.content_when)):
            if results[n] is not None:
                for i, app in zip(part, results[n]):
                    applies[i] = app
        return hits, applies, whole

    def _ident_context(self, split: Split, index: int) -> Any:
        """The identity rules' context, updated with adapter `index`'s values they read."""
        tree = split.ident_tree
        ctx = self.ident_contexts.get(id(split))
        if ctx is None:
            base = self.contexts.adapter_base()
            ctx = cel_context({name: prune(value, tree[name]) for name, value in base.items() if name in tree})
            self.ident_contexts[id(split)] = ctx
            self._splits.append(split)
        last = self.last.setdefault(id(split), {})
        update = {}
        for name, value in self.contexts.adapter_update(index).items():
            if name in tree:
                value = prune(value, tree[name])
                try:  # (as marshal writes it: 1, 1.0 and True differ, as in CEL)
                    written = marshal.dumps(value)
                except ValueError:
                    written = None
                if written is None or last.get(name) != written:
                    update[name] = value
                    last[name] = written
        if update:  # (only what differs from the previous adapter's: converting into CEL is the cost)
            try:
                ctx.update(update)
            except ValueError:  # a name that is not UTF-8 (engine/context.py cel_context)
                ctx.update(_as_text(update))
        return ctx
