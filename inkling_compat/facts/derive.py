"""`derive(inputs) -> Facts`: what sglang 0.5.23 would decide from the inputs, in one pass.

Rules read these facts instead of re-deriving them (which sink class is built, whether
the sink is linearized BF16, the pool shapes, ...). Each function here mirrors one decision
in sglang and says where it lives. The facts are computed in dependency order (adapters'
own facts -> global facts -> the pool -> what the pool and the sink do with each adapter ->
fleet aggregates) and each model is built once, complete. A fact the user states
explicitly (`sink:` in the server config) overrides the derived value and is listed in `given`.
"""

from __future__ import annotations

import json

from inkling_compat.facts import in_pool
from inkling_compat.facts import fleet as fleet_mod
from inkling_compat.facts.fleet import INKLING_LORA_MODULES
from inkling_compat.facts.inputs import Inputs, lora_path_entries
from inkling_compat.facts.model import attention_backends, model_facts, quantization_facts
from inkling_compat.facts.adapter import OwnFacts
from inkling_compat.facts.types import Facts, InputsGiven, LoraPath, LoraPathJsonFailure, PinnedIntFailure, PoolAllocation, PoolFacts, SinkFacts
from inkling_compat.inputs.models import LoraRef, ModelConfig, ServerConfig
from inkling_compat.sglang import pool_shapes
from inkling_compat.sglang.pool_shapes import StartupAdapter, StartupPool

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

LORA_BACKENDS = ("triton", "csgmv", "ascend", "torch_native", "triton_v2")
SINK_CLASS_NAMES = {
    "legacy": "InklingBatchDenseMLPWithLoRA",
    "v2": "InklingBatchDenseMLPWithLoRAV2",
}


def lora_enabled(config: ServerConfig) -> bool:
    """lora_hook.check_lora_server_args: --lora-paths turns LoRA on unless it was set False."""
    if config.enable_lora is None:
        return bool(config.lora_paths)
    return bool(config.enable_lora)


def shared_sink_fp4(is_inkling_nvfp4: bool, shared_sink_excluded: bool) -> bool:
    """dense_mlp._resolve_fp4_strategy: FP4 only for a TML NVFP4 checkpoint whose
    shared_w13/shared_w2 weights are not excluded from quantization."""
    return is_inkling_nvfp4 and not shared_sink_excluded


def sink_kind(model: ModelConfig, config: ServerConfig, serves_fp4: bool, lora_on: bool) -> str:
    """moe._build_inkling_shared_experts: which module serves the shared experts."""
    if model.n_shared_experts <= 0:
        return "none"
    if not model.shared_expert_sink:
        return "dense_mlp"
    if not model.inference_moe_w13_interleaved or serves_fp4:
        return "fused"
    if lora_on:
        return "batch_dense"
    fused_env = config.env.SGLANG_OPT_USE_INKLING_SHARED_FUSED_MOE
    return "fused" if fused_env else "batch_dense"


def resolved_target_modules(config: ServerConfig, adapter_targets: list[list[str]]) -> list[str]:
    """The pool's target set: the CLI's (with `all` resolved against Inkling's supported
    modules), else the union of the adapters' normalized targets."""
    if config.lora_target_modules:
        if "all" in config.lora_target_modules:
            return list(INKLING_LORA_MODULES)
        return sorted(set(config.lora_target_modules))
    union: set[str] = set()
    for targets in adapter_targets:
        if "all" in targets:
            return list(INKLING_LORA_MODULES)
        union.update(targets)
    return sorted(union)


def sink_facts(config: ServerConfig, model: ModelConfig, serves_fp4: bool, lora_on: bool, targets: list[str]) -> SinkFacts:
    """The shared-sink module sglang builds and the LoRA state it will be in."""
    kind = sink_kind(model, config, serves_fp4, lora_on)
    lora_class = None
    if kind == "batch_dense" and lora_on:
        lora_class = "v2" if config.lora_backend == "triton_v2" else "legacy"
    # dense_mlp.__init__ / moe.py: linearized = (enable_lora or env) and interleaved and BF16
    linearized = bool(
        (lora_on or config.env.SGLANG_OPT_LINEARIZED_SHARED_SINK) and model.inference_moe_w13_interleaved and not serves_fp4
    )
    derived: dict[str, Any] = {
        "kind": kind,
        "sink_class": lora_class,
        "linearized_bf16_enabled": linearized,
        "backend_name": config.lora_backend,
        "max_loras_per_batch": config.max_loras_per_batch,
    }
    stated = config.sink.model_dump(exclude_none=True) if config.sink else {}
    facts = {**derived, **stated}
    # Facts derived from a stated one follow it unless they are stated too.
    # Only the triton_v2 backend carries the dense engine (`runner`).
    facts.setdefault("backend_has_dense_engine", facts["backend_name"] == "triton_v2")
    facts.setdefault("w13_gate_up_contiguous", facts["linearized_bf16_enabled"] and lora_on and facts["backend_name"] == "triton_v2")
    if "sink_class" in stated:
        facts["kind"] = "batch_dense"
    # lora_manager.init_lora_modules attaches LoRA to the sink only when both MLP targets are on.
    both_targets = "gate_up_proj" in targets and "down_proj" in targets
    return SinkFacts(
        **facts,
        class_name=SINK_CLASS_NAMES.get(facts["sink_class"] or ""),
        intermediate_size_per_partition=model.intermediate_size // max(config.tp_size, 1),
        lora_attached=facts["sink_class"] is not None and (both_targets or "sink_class" in stated),
        given=list(stated),
    )


def startup_adapters(lora_paths: list[LoraRef], own: list[OwnFacts]) -> list[StartupAdapter]:
    """The adapters LoRAManager.init_state sizes the pool from: the --lora-paths PEFT adapters
    and the pool-form manifests (which state a pool)."""
    names = {p.name for p in lora_paths}
    return [StartupAdapter(rank=a.rank, shared_outer=a.shared_outer) for a in own if a.form == "pool" or (a.form == "peft" and a.name in names)]


def startup_pool(sink: SinkFacts, lora_paths: list[LoraRef], own: list[OwnFacts], model: ModelConfig, config: ServerConfig) -> StartupPool | None:
    """The one pool: sglang allocates it from --max-lora-rank / --experts-shared-outer-loras,
    else from the start-up adapters (`inkling_compat.sglang.pool_shapes.startup_pool`)."""
    return pool_shapes.startup_pool(
        slots=sink.max_loras_per_batch,
        n=model.n_shared_experts,
        hidden=model.hidden_size,
        f_local=sink.intermediate_size_per_partition,
        num_layers=model.num_hidden_layers,
        max_lora_rank=config.max_lora_rank,
        experts_shared_outer_loras=config.experts_shared_outer_loras,
        startup=startup_adapters(lora_paths, own),
    )


def pool_facts(pool: StartupPool | None) -> PoolFacts | None:
    if pool is None:
        return None
    allocation = pool.allocation
    return PoolFacts(
        rank=pool.rank,
        shared_outer=pool.shared_outer,
        allocation=None if allocation is None else PoolAllocation(**vars(allocation)),
        **{name: list(shape) for name, shape in pool.buffers.items()},
    )


# The model classes sglang 0.5.23 registers for Inkling (models/inkling.py EntryClass l.1991);
# sglang builds the class a config.json's `architectures` names.
INKLING_ARCHITECTURES = frozenset({"InklingForConditionalGeneration", "InklingForConditionalGenerationMTP"})


def inputs_given(inputs: Inputs) -> InputsGiven:
    """Which inputs were given and whether the model config is an Inkling one the checks can
    read: a config.json that sets none of the fields they read (`{}`, an empty file) names no
    architecture; a Llama config.json names LlamaForCausalLM, whose sglang path has none of
    the Inkling checks."""
    model_given = "model" in inputs.given
    architecture: str | None = None
    inkling = False
    stated = inputs.model.model_fields_set
    if model_given and stated:
        if "architectures" not in stated and "model_type" in stated:
            # No class named: what the file is comes from model_type (sglang registers Inkling's
            # configs as inkling_model, inkling_mm_model, ...; configs/inkling.py l.430).
            model_type = inputs.model.model_type
            architecture = f"a {model_type} model (model_type {model_type!r}, no architectures)"
            inkling = model_type.startswith("inkling")
        else:
            architecture = ", ".join(inputs.model.architectures) if inputs.model.architectures else "no architectures"
            inkling = any(a in INKLING_ARCHITECTURES for a in inputs.model.architectures)
    return InputsGiven(
        **{name: name in inputs.given for name in ("config", "model", "platform")},
        model_architecture=architecture,
        model_is_inkling=inkling,
    )


def pinned_int_failure(lora_paths: list[LoraRef], max_loras_per_batch: int) -> PinnedIntFailure | None:
    """The entry whose `int(pinned)` ends start-up, if start-up gets that far: an entry refused
    as a pinned adapter before it (adapter-pin-all-slots) never reaches l.319."""
    stop = fleet_mod.startup_pin_stop(lora_paths, max_loras_per_batch)
    if stop is None or stop[0] != "int":
        return None
    entry = lora_paths[stop[1]]
    return PinnedIntFailure(name=entry.name, error=entry.pinned_int_error)  # type: ignore[arg-type]  # set where the count is None


def duplicate_name(lora_paths: list[LoraRef]) -> str | None:
    """The first entry's name that another entry lists with a different path (linear)."""
    paths: dict[str, set[str]] = {}
    for p in lora_paths:
        paths.setdefault(p.name, set()).add(p.path)
    return next((p.name for p in lora_paths if len(paths[p.name]) > 1), None)


def lora_paths_json_failure(lora_paths: Any) -> LoraPathJsonFailure | None:
    """argparse_actions.py LoRAPathAction: a --lora-paths string that, stripped, is wrapped in
    braces is parsed with json.loads and must hold lora_name and lora_path (l.13-20)."""
    if not isinstance(lora_paths, list):
        return None
    for item in lora_paths:
        if not isinstance(item, str):
            continue
        text = item.strip()
        if not (text.startswith("{") and text.endswith("}")):
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:  # json.JSONDecodeError; RecursionError is no ValueError
            return LoraPathJsonFailure(kind="invalid_json", text=text, error=str(exc))
        except RecursionError:
            return LoraPathJsonFailure(kind="invalid_json", text=text, error="maximum recursion depth exceeded while decoding a JSON object")
        if not ("lora_path" in obj and "lora_name" in obj):
            return LoraPathJsonFailure(kind="missing_keys", text=text)
    return None


def derive(inputs: Inputs, memo: bool = True) -> Facts:
    """All facts of one check: global ones and, in `adapters`, one per adapter. `memo=False`
    derives every adapter on its own (the memo must not change the result)."""
    config, model = inputs.server, inputs.model
    lora_on = lora_enabled(config)
    lora_paths = lora_path_entries(config)
    own = in_pool.own_facts(inputs.adapters, model, memo)  # alike adapters share one result
    targets = resolved_target_modules(config, [list(a.normalized_targets) for a in own])
    quant, sink_excluded = quantization_facts(model)
    sink = sink_facts(config, model, shared_sink_fp4(quant.is_inkling_nvfp4, sink_excluded), lora_on, targets)
    startup = startup_pool(sink, lora_paths, own, model, config)
    per_adapter = in_pool.complete(own, sink, startup, targets, model, config)
    attention = attention_backends(config, inputs.platform)
    return Facts(
        lora_enabled=lora_on,
        lora_paths=[LoraPath(name=p.name, path=p.path, pinned=p.pinned) for p in lora_paths],
        pinned_int_failure=pinned_int_failure(lora_paths, config.max_loras_per_batch),
        lora_paths_json_failure=lora_paths_json_failure(config.lora_paths),
        lora_paths_duplicate_name=duplicate_name(lora_paths),
        target_modules=targets,
        attention=attention,
        quant=quant,
        sink=sink,
        pool=pool_facts(startup),
        startup=fleet_mod.startup_facts(lora_paths, own),
        model=model_facts(model, server_config=config, platform=inputs.platform, attention=attention, quant=quant),
        fleet=fleet_mod.fleet_facts(lora_paths, inputs.adapters, own, per_adapter, config.max_loras_per_batch),
        inputs_given=inputs_given(inputs),
        adapters=per_adapter,
    )
