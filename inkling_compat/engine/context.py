"""The CEL variables of a check, built from the typed inputs and facts, pruned to what the
rules read (the `Plan`'s path trees): converting values into CEL costs microseconds per
element, far more than evaluating the expressions."""

from __future__ import annotations

from typing import Any

from inkling_compat.engine import cel
from inkling_compat.engine.paths import CEL_CALLS
from inkling_compat.engine.plan import Plan

_LISTS = ("adapters", "adapter_facts_list")


def python_type_name(value: Any) -> str:
    """`str(type(value))` of the Python object sglang would see, for messages quoting it."""
    return str(type(value))


def python_sorted(values: list[Any]) -> list[Any]:
    return sorted(values)


def join_strings(values: list[Any], separator: str) -> str:
    return separator.join(str(v) for v in values)


def cel_context(variables: dict[str, Any]) -> Any:
    ctx = cel.Context()
    ctx.update(variables)
    ctx.add_function("pytype", python_type_name)
    ctx.add_function("pysorted", python_sorted)
    ctx.add_function("join", join_strings)
    return ctx


def prune(value: Any, tree: dict[Any, Any]) -> Any:
    """Only the parts of `value` that the rules read (whole sub-values at path ends)."""
    if None in tree or not isinstance(value, dict):
        return value
    out = {}
    for key, child in tree.items():
        if key not in value:
            if key in CEL_CALLS:
                return value  # a method call on the map: keep the whole map
            continue  # absent here (e.g. a pool-form key on a PEFT adapter)
        out[key] = prune(value[key], child)
    return out


def adapter_document(manifest: Any, keys: set[str] | None) -> dict[str, Any]:
    """The manifest as the rules see it (`adapter`), with only the top-level `keys` they read
    (all when None): dumping 200+ tensor specs per adapter that no rule reads is most of the
    cost of a large fleet."""
    if keys is None:
        return manifest.model_dump(mode="json")
    return manifest.model_dump(mode="json", include=set(keys) & set(type(manifest).model_fields))


def _keep_keys(item: Any, keys: frozenset[str]) -> Any:
    return {k: v for k, v in item.items() if k in keys} if isinstance(item, dict) else item


class Contexts:
    """The global CEL context (with the first adapter riding along) and, for the second and
    later adapters, one that holds only what adapter rules read."""

    def __init__(self, inputs: Any, facts: Any, plan: Plan):
        server = inputs.server
        adapter_facts = [a.model_dump(mode="json") for a in facts.adapters]
        docs = [dict(adapter_document(m, plan.adapter_keys), form=a.form) for m, a in zip(inputs.adapters, facts.adapters)]
        base = {
            "config": server.model_dump(mode="json"),
            "env": server.env.model_dump(mode="json"),
            "model": inputs.model.model_dump(mode="json"),
            "platform": inputs.platform.model_dump(mode="json"),
            "facts": facts.model_dump(mode="json", exclude={"adapters"}),
            "input": {"unknown_keys": list(inputs.unknown_keys)},
            "adapters": docs,
            "adapter_facts_list": adapter_facts,
            "adapter": None,
            "adapter_facts": None,
        }
        shared = prune(base, plan.tree)
        for key in _LISTS:  # cross-adapter rules: only the keys they read
            if isinstance(shared.get(key), list):
                shared[key] = [_keep_keys(item, plan.item_keys) for item in shared[key]]
        self.adapter_views = [
            (prune(doc, plan.adapter_tree.get("adapter", {None: True})), prune(af, plan.adapter_tree.get("adapter_facts", {None: True})))
            for doc, af in zip(docs, adapter_facts)
        ]
        if self.adapter_views:
            shared["adapter"], shared["adapter_facts"] = self.adapter_views[0]
        self.shared = cel_context(shared)
        # The CEL context re-converts *every* variable on the first evaluation after an update, so
        # the second and later adapters get a context of their own without the whole-fleet lists
        # (unless an adapter rule reads them): a fleet check stays linear in the number of adapters.
        self.per_adapter = self.shared
        if len(self.adapter_views) > 1:
            adapter_shared = prune(base, plan.adapter_global_tree)
            for key in _LISTS:
                if isinstance(adapter_shared.get(key), list):
                    adapter_shared[key] = shared[key]
            self.per_adapter = cel_context(adapter_shared)

    def for_adapter(self, index: int) -> Any:
        """The context in which adapter `index`'s rules run (after `index - 1`'s)."""
        if index <= 0:
            return self.shared
        doc, af = self.adapter_views[index]
        self.per_adapter.update({"adapter": doc, "adapter_facts": af})
        return self.per_adapter
