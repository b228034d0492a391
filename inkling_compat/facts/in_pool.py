"""Per-adapter facts of one check, in two steps (own facts, then the adapter in the pool), each computed once per distinct adapter.

1. `own_facts`: what an adapter alone decides (`inkling_compat.facts.adapter.own_facts`: rank,
   normalized targets and shapes, shared-outer layout, ...), needed by the global facts.
2. `complete`: with the sink and the pool known, the typed `AdapterFacts` of each adapter:
   what set_lora_info does with a pool manifest (`sglang.set_lora_info.simulate`) and what
   load_lora_weight_to_buffer does with a PEFT adapter (`sglang.load_to_buffer.replay_load`).

A fleet trained with one recipe has the same tensor names and shapes in every adapter; the
adapter reader interns tensor tables by content, so alike adapters hold the *same* table
object. Both steps are memoized per (table, adapter_config, ...) within one call and the
others get a copy with their own name, path and id (tests/test_fleet.py checks the memo
gives the plain results).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from inkling_compat.facts import adapter as adapter_mod
from inkling_compat.facts.types import PeftAdapterFacts, PoolAdapterFacts, PoolFacts, SinkFacts, UnreadableAdapterFacts
from inkling_compat.inputs.models import PeftManifest
from inkling_compat.sglang import load_to_buffer
from inkling_compat.sglang import set_lora_info

# Published PEFT facts taken as they are from the adapter's own facts.
_PEFT_OWN = tuple(
    name for name in PeftAdapterFacts.model_fields
    if name not in ("form", "name", "lora_id", "unmatched_weight_names", "target_failure", "pool_fit", "pool_partial", "indexed_shared_without_sink")
)


def _content_key(manifest: Any) -> Any:
    """What an adapter's facts depend on besides its name and path (None: not memoized)."""
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


def own_facts(manifests: Sequence[Any], model: Any, memo: bool = True) -> list[dict[str, Any]]:
    """`adapter.own_facts` for every manifest, once per distinct content: an alike adapter gets a
    shallow copy with its own name, path and lora_id (the other values are shared, read-only)."""
    seen: dict[Any, dict[str, Any]] = {}
    out = []
    memo = memo and len(manifests) > 1  # (one adapter: nothing to share, no key to build)
    for manifest in manifests:
        key = _content_key(manifest) if memo else None
        cached = seen.get(key) if key is not None else None
        if cached is None:
            facts = adapter_mod.own_facts(manifest, model)
            if key is not None:
                seen[key] = facts
        else:
            facts = dict(cached, name=manifest.name)
            if "path" in facts:
                facts["path"] = manifest.path
            if facts.get("lora_id") is not None:
                facts["lora_id"] = adapter_mod.lora_id(manifest.name, manifest.path)
        out.append(facts)
    return out


def _pool_form(own: dict[str, Any], sink: SinkFacts, model: Any) -> PoolAdapterFacts:
    given = own["binding_input"]
    binding = None
    if sink.lora_attached:
        binding = set_lora_info.simulate(sink.sink_class, model.n_shared_experts, given["pool"], given["rebind"], given["updated_slots"])
    return PoolAdapterFacts(form="pool", name=own["name"], pool=own["pool"], rebind=own["rebind"], binding=binding)


def _peft_form(own: dict[str, Any], sink: SinkFacts, pool: PoolFacts | None, targets: list[str], model: Any, config: Any) -> PeftAdapterFacts:
    replay_pool = None if pool is None else {
        "buffers": {k: getattr(pool, k) for k in ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")},
        "shared_outer": pool.shared_outer,
        "rank": pool.rank,
        "allocation": None if pool.allocation is None else pool.allocation.model_dump(),
    }
    globals_ = {"target_modules": targets, "sink": {"lora_attached": sink.lora_attached,
                "intermediate_size_per_partition": sink.intermediate_size_per_partition}}
    fit = load_to_buffer.replay_load(own, globals_, model, config, replay_pool)
    return PeftAdapterFacts(
        form="peft", name=own["name"], lora_id=own["lora_id"], **{k: own[k] for k in _PEFT_OWN},
        unmatched_weight_names=fit["unmatched_weight_names"], target_failure=fit["target_failure"],
        pool_fit=fit["pool_fit"], pool_partial=fit["pool_partial"], indexed_shared_without_sink=fit["indexed_shared_without_sink"],
    )


def complete(
    own: list[dict[str, Any]],
    sink: SinkFacts,
    pool: PoolFacts | None,
    targets: list[str],
    model: Any,
    config: Any,
) -> list[Any]:
    """The typed facts of every adapter; alike PEFT adapters (sharing their own facts' values)
    are completed once and copied with their own name and lora_id."""
    built: dict[int, PeftAdapterFacts] = {}
    out: list[Any] = []
    for facts in own:
        if facts["form"] == "pool":
            out.append(_pool_form(facts, sink, model))
        elif facts["form"] != "peft":
            out.append(UnreadableAdapterFacts(form="unreadable", name=facts["name"]))
        else:
            key = id(facts["normalized_weight_names"])  # one object per distinct content
            typed = built.get(key)
            if typed is None:
                typed = built[key] = _peft_form(facts, sink, pool, targets, model, config)
            elif typed.name != facts["name"] or typed.lora_id != facts["lora_id"]:
                typed = typed.model_copy(update={"name": facts["name"], "lora_id": facts["lora_id"]})
            out.append(typed)
    return out
