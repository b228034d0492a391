"""Per-adapter work of a check, shared between adapters that are alike.

A fleet of adapters trained with one recipe has the same tensor names and shapes in every
adapter: only the name, the path and the weights' values differ, and the checker never reads
values. The adapter reader interns tensor tables by content (`adapter_reader`), so alike
adapters hold the *same* table object; here the facts derived from a table (normalization,
shared-sink sites, pool fit) are computed once per distinct (table, adapter_config, ...) and
copied for the others with their own name, path and id. Results are exactly those of
`adapter_facts.derive` / `pool_fit.derive` on each adapter (tests/test_fleet.py checks it).
"""

from __future__ import annotations

import json
from typing import Any

from inkling_compat.facts import adapter as adapter_facts_mod
from inkling_compat.sglang import load_to_buffer as pool_fit
from inkling_compat.inputs.models import PeftManifest

# Facts that depend on the adapter's name/path only; everything else depends on the content.
_IDENTITY = ("name", "path", "lora_id")


def _content_key(manifest: Any) -> Any:
    if not isinstance(manifest, PeftManifest):
        return None
    source = manifest.source
    try:
        config = json.dumps(manifest.adapter_config, sort_keys=True, default=repr)
        tokens = json.dumps(manifest.added_tokens, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return None
    return (
        id(manifest.tensors.root),
        config,
        tokens,
        manifest.pinned,
        None if source is None else (source.weights_format, source.added_tokens_error, source.unreadable, source.unreadable_file),
    )


def derive_adapter_facts(manifests: list[Any], model: Any) -> list[dict[str, Any]]:
    """`adapter_facts.derive` for every manifest, once per distinct content."""
    memo: dict[Any, dict[str, Any]] = {}
    out = []
    for manifest in manifests:
        key = _content_key(manifest)
        cached = memo.get(key) if key is not None else None
        if cached is None:
            facts = adapter_facts_mod.derive(manifest, model)
            if key is not None:
                memo[key] = facts
            out.append(facts)
            continue
        facts = dict(cached)
        facts["name"] = manifest.name
        if "path" in facts:
            facts["path"] = manifest.path
        if facts.get("lora_id") is not None:
            facts["lora_id"] = adapter_facts_mod.lora_id(manifest.name, manifest.path)
        out.append(facts)
    return out


def add_pool_fit(per_adapter: list[dict[str, Any]], facts: dict[str, Any], model: Any, config: Any) -> None:
    """`pool_fit.derive` into each PEFT adapter's facts (in place), once per distinct content."""
    pool = pool_fit.startup_pool(facts, per_adapter, model, config)
    facts["startup"] = startup_facts(facts, per_adapter, pool)
    memo: dict[Any, dict[str, Any]] = {}
    for af in per_adapter:
        if af.get("form") != "peft":
            continue
        key = (
            id(af.get("normalized_shapes")),
            id(af.get("normalized_weight_names")),
            af.get("r"),
            id(af.get("reshape_failure")),
            id(af.get("layer_out_of_range")),
        )
        result = memo.get(key)
        if result is None:
            result = memo[key] = pool_fit.derive(af, facts, model, config, pool)
        af.update(result)


def adapter_document(manifest: Any, form: str, keys: set[str] | None) -> dict[str, Any]:
    """The manifest as the rules see it (`adapter`), with only the top-level `keys` they read
    (all when None): dumping 200+ tensor specs per adapter that no rule reads is most of the
    cost of a large fleet."""
    if keys is None:
        doc = manifest.model_dump(mode="json")
    else:
        doc = manifest.model_dump(mode="json", include=set(keys) & set(type(manifest).model_fields))
    doc["form"] = form
    return doc


def startup_facts(facts: dict[str, Any], per_adapter: list[dict[str, Any]], pool: dict[str, Any] | None) -> dict[str, Any]:
    """`facts.startup`: what the --lora-paths (start-up) PEFT adapters decide for the pool, for
    rules about adapters loaded later (so they need not iterate `adapter_facts_list` per
    adapter, which costs O(adapters) each): their largest r, the union of their normalized
    targets (`all` expanded to Inkling's modules) and the pool `pool_fit` replays."""
    from inkling_compat.facts.derive import INKLING_LORA_MODULES

    names = {p["name"] for p in facts.get("lora_paths") or []}
    startup = [a for a in per_adapter if a.get("form") == "peft" and a.get("name") in names]
    ranks = [a["r"] for a in startup if a.get("r") is not None]
    targets: set[str] = set()
    for a in startup:
        targets.update(a.get("normalized_targets") or [])
        if "all" in (a.get("normalized_targets") or []):
            targets.update(INKLING_LORA_MODULES)
    return {
        "max_r": max(ranks) if ranks else None,
        "targets": sorted(targets),
        "pool": None if pool is None else pool["buffers"],
        "shared_outer": None if pool is None else pool["shared_outer"],
        "pool_rank": None if pool is None else pool["rank"],
    }


def fleet_facts(facts: dict[str, Any], manifests: list[Any], per_adapter: list[dict[str, Any]]) -> dict[str, Any]:
    """`facts.fleet`: the cross-adapter aggregates fleet rules read, computed in one pass.

    The CEL library's `filter` and `map` macros take time quadratic in the list length
    (measured: 0.84 s for `size(adapters.filter(...))` over 1,000 adapters), so fleet rules read
    these lists instead of filtering `adapters` / `adapter_facts_list` themselves. Each entry
    says which expression it replaces (tests/test_fleet.py compares both on random fleets).
    """
    lora_paths = facts.get("lora_paths") or []
    startup = {p["name"] for p in lora_paths}
    docs = [{"name": m.name, "pinned": bool(getattr(m, "pinned", False)), "form": f.get("form")} for m, f in zip(manifests, per_adapter)]
    runtime = [d for d in docs if d["form"] == "peft" and d["name"] not in startup]
    counts: dict[str, int] = {}
    for d in docs:
        counts[d["name"]] = counts.get(d["name"], 0) + 1
    peft = [a for a in per_adapter if a.get("form") == "peft"]
    first_by_name: dict[str, dict[str, Any]] = {}
    for a in peft:
        first_by_name.setdefault(a.get("name"), a)
    with_outer = {a.get("name") for a in peft if a.get("outer_layouts")}
    reference = None  # outer layout of the first --lora-paths adapter that has one
    first = next((p for p in lora_paths if p["name"] in with_outer), None)
    if first is not None:
        layouts = first_by_name[first["name"]].get("outer_layouts") or next(
            a["outer_layouts"] for a in peft if a.get("name") == first["name"] and a.get("outer_layouts")
        )
        reference = layouts[0]
    conflict_id = None
    if reference is not None:
        conflicting = {a.get("name") for a in peft if any(v != reference for v in a.get("outer_layouts") or [])}
        hit = next((p for p in lora_paths if p["name"] in conflicting), None)
        if hit is not None:
            conflict_id = first_by_name[hit["name"]].get("lora_id")
    return {
        # adapters.filter(a, a.form == "peft" && !facts.lora_paths.exists(p, p.name == a.name)).map(a, a.name)
        "runtime_names": [d.get("name") for d in runtime],
        # ... && !a.pinned
        "runtime_unpinned_names": [d.get("name") for d in runtime if not d.get("pinned")],
        # ... && a.pinned
        "runtime_pinned_names": [d.get("name") for d in runtime if d.get("pinned")],
        # adapters.filter(a, !facts.lora_paths.exists(p, p.name == a.name)
        #   && adapters.filter(b, b.name == a.name).size() > 1).map(a, a.name)
        "duplicate_runtime_names": [d["name"] for d in docs if d["name"] not in startup and counts[d["name"]] > 1],
        # adapter-mixed-shared-outer: the reference layout (first --lora-paths adapter with a
        # detected layout) and the id of the first --lora-paths adapter disagreeing with it.
        "startup_outer_reference": reference,
        "outer_conflict_id": conflict_id,
    }
