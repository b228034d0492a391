"""Per-adapter facts of one check, in two steps (own facts, then the adapter in the pool), each computed once per distinct adapter.

1. `own_facts`: what an adapter alone decides (`inkling_compat.facts.adapter.own_facts`: rank,
   normalized targets and shapes, shared-outer layout, ...), needed by the global facts.
2. `complete`: with the sink and the pool known, the typed `AdapterFacts` of each adapter:
   what set_lora_info does with a pool manifest (`sglang.set_lora_info.simulate`) and what
   load_lora_weight_to_buffer does with a PEFT adapter (`sglang.load_to_buffer.replay_load`).

A fleet trained with one recipe has the same tensor names and shapes in every adapter. Both
steps are memoized by content within one call: the tensor table's content (`TensorTable.content`;
the adapter reader interns alike tables, so it is built once per distinct table), the
adapter_config, the added tokens, the pin and how the adapter was read. The others get the same
facts with their own name, path and id (tests/test_fleet.py checks the memo gives the plain
results).
"""

from __future__ import annotations

import json

from inkling_compat.sglang.plain_dataclass import replace
from inkling_compat.facts import adapter as adapter_mod
from inkling_compat.facts.adapter import OwnFacts, PeftOwn, PoolOwn
from inkling_compat.facts.types import (
    IndexedSharedFailure,
    PeftAdapterFacts,
    PoolAdapterFacts,
    PoolFit,
    PoolPartial,
    SinkFacts,
    TargetFailure,
    UnreadableAdapterFacts,
)
from inkling_compat.inputs.models import PeftManifest
from inkling_compat.sglang import load_to_buffer
from inkling_compat.sglang.pool_shapes import StartupPool

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Hashable, Sequence


def content_key(manifest: Any) -> Hashable | None:
    """What an adapter's facts depend on besides its name and path (None: not memoized)."""
    if not isinstance(manifest, PeftManifest):
        return None
    source = manifest.source
    try:
        config = json.dumps(manifest.adapter_config, sort_keys=True, default=repr)
        tokens = json.dumps(manifest.added_tokens, sort_keys=True, default=repr)
        table = manifest.tensors.content
        hash(table)
    except (TypeError, ValueError):
        return None
    return (
        table,
        config,
        tokens,
        manifest.pinned,
        None if source is None else (source.weights_format, source.added_tokens_error, source.unreadable, source.unreadable_file),
    )


def own_facts(manifests: Sequence[Any], model: Any, memo: bool = True) -> list[OwnFacts]:
    """`adapter.own_facts` for every manifest, once per distinct content: an alike adapter gets
    the same facts with its own name, path and lora_id."""
    seen: dict[Hashable, OwnFacts] = {}
    out: list[OwnFacts] = []
    memo = memo and len(manifests) > 1  # (one adapter: nothing to share, no key to build)
    for manifest in manifests:
        key = content_key(manifest) if memo else None
        cached = seen.get(key) if key is not None else None
        if cached is None:
            facts = adapter_mod.own_facts(manifest, model)
            if key is not None:
                if isinstance(facts, PeftOwn):
                    facts = replace(facts, content=key)
                seen[key] = facts
        elif isinstance(cached, PeftOwn):
            facts = cached.named(manifest.name, manifest.path)
        else:
            facts = adapter_mod.own_facts(manifest, model)
        out.append(facts)
    return out


def _pool_form(own: PoolOwn, sink: SinkFacts, model: Any) -> PoolAdapterFacts:
    binding = None
    if sink.lora_attached:
        from inkling_compat.sglang import set_lora_info  # (pool manifests only: a launch's PEFT adapters never bind here)

        result = set_lora_info.simulate(sink.sink_class or "", model.n_shared_experts, own.pool_shapes, own.rebind_shapes, own.updated_slots)
        binding = {"first": None if result.first is None else vars(result.first), "completed": vars(result.completed)}
    return PoolAdapterFacts.model_validate({
        "form": "pool",
        "name": own.name,
        "pool": adapter_mod.buffer_dims(own.pool_shapes),
        "rebind": None if own.rebind_shapes is None else adapter_mod.buffer_dims(own.rebind_shapes),
        "binding": binding,
    })


def _pool_fit(failure: load_to_buffer.CopyFailure | None) -> PoolFit | None:
    if failure is None:
        return None
    return PoolFit(**{k: list(v) if isinstance(v, tuple) else v for k, v in vars(failure).items()})


def _peft_form(own: PeftOwn, setup: load_to_buffer.LoadSetup, pool: StartupPool | None) -> PeftAdapterFacts:
    fit = load_to_buffer.replay_load(own.weights, setup, pool)
    return PeftAdapterFacts(
        **dict(own.facts),  # the own facts' field values
        unmatched_weight_names=list(fit.unmatched_weight_names),
        target_failure=None if fit.target_failure is None else TargetFailure(**{k: list(v) if isinstance(v, tuple) else v for k, v in vars(fit.target_failure).items()}),
        pool_fit=_pool_fit(fit.pool_fit),
        pool_partial=None if fit.pool_partial is None else PoolPartial(**vars(fit.pool_partial)),
        indexed_shared_without_sink=None if fit.indexed_shared_without_sink is None else IndexedSharedFailure(**vars(fit.indexed_shared_without_sink)),
    )


def complete(
    own: list[OwnFacts],
    sink: SinkFacts,
    pool: StartupPool | None,
    targets: list[str],
    model: Any,
    config: Any,
) -> list[Any]:
    """The typed facts of every adapter; alike PEFT adapters (sharing their weights) are
    completed once and copied with their own name and lora_id."""
    setup = None  # the same for every PEFT adapter: built with the first
    built: dict[Any, PeftAdapterFacts] = {}
    out: list[Any] = []
    for facts in own:
        if isinstance(facts, PoolOwn):
            out.append(_pool_form(facts, sink, model))
        elif not isinstance(facts, PeftOwn):
            out.append(UnreadableAdapterFacts(form="unreadable", name=facts.name))
        else:
            key = facts.content
            typed = built.get(key) if key is not None else None
            if typed is None:
                if setup is None:
                    setup = load_to_buffer.load_setup(targets, sink.lora_attached, sink.intermediate_size_per_partition, model, config.tp_size)
                typed = _peft_form(facts, setup, pool)
                if key is not None:
                    built[key] = typed
            elif typed.name != facts.name or typed.lora_id != facts.lora_id:
                typed = typed.model_copy(update={"name": facts.name, "lora_id": facts.lora_id})
            out.append(typed)
    return out
