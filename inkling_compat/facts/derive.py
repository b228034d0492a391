"""Derived facts: what sglang 0.5.23 would decide from the inputs, computed once and named.

Rules read these facts instead of re-deriving them (which sink class is built, whether
the sink is linearized BF16, the expected pool shapes, ...). Each function here mirrors
one decision in sglang and says where it lives. A fact the user states explicitly
(`sink:` in the server config) overrides the derived value and is listed in `given`.
"""

from __future__ import annotations

from typing import Any

from inkling_compat.sglang import set_lora_info as binding
from inkling_compat.inputs.models import ModelConfig, Platform, ServerConfig
from inkling_compat.facts.model import apply_stated, attention_backends, model_facts, quantization_facts

# models/inkling.py `supported_lora_modules`
INKLING_LORA_MODULES = ("qkvr", "wo_ud", "gate_up_proj", "down_proj", "embed_tokens", "lm_head")
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


def lora_path_entries(config: ServerConfig) -> list[dict[str, Any]]:
    """--lora-paths as sglang parses it into LoRARef entries (name, path, pinned)."""
    paths = config.lora_paths
    entries: list[dict[str, Any]] = []
    if isinstance(paths, dict):
        return [{"name": str(k), "path": str(v), "pinned": False} for k, v in paths.items()]
    if not isinstance(paths, list):
        return entries
    for item in paths:
        if isinstance(item, str):
            name, sep, path = item.partition("=")
            entries.append({"name": name if sep else item, "path": path if sep else item, "pinned": False})
        elif isinstance(item, dict) and "lora_name" in item and "lora_path" in item:
            entries.append(
                {
                    "name": str(item["lora_name"]),
                    "path": str(item["lora_path"]),
                    "pinned": bool(item.get("pinned", False)),
                }
            )
    return entries


def shared_sink_fp4(model: ModelConfig, quant: dict[str, Any]) -> bool:
    """dense_mlp._resolve_fp4_strategy: FP4 only for a TML NVFP4 checkpoint whose
    shared_w13/shared_w2 weights are not excluded from quantization."""
    return bool(quant["is_inkling_nvfp4"]) and not quant["shared_sink_excluded"]


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


def pool_rank(config: ServerConfig, adapter_ranks: list[int]) -> int | None:
    """R: --max-lora-rank, else the largest startup adapter rank (lora_manager.init_lora_shapes)."""
    if config.max_lora_rank:
        return config.max_lora_rank
    return max(adapter_ranks) if adapter_ranks else None


def expected_pool_shapes(
    slots: int, n: int, rank: int | None, hidden: int, f_local: int, shared_outer: bool
) -> dict[str, list[int]] | None:
    """mem_pool shapes of the four shared-sink buffers on one TP rank (spec section 3)."""
    if rank is None or n <= 0:
        return None
    outer = 1 if shared_outer else n
    return {
        "gate_up_lora_a": [slots, outer, 2 * rank, hidden],
        "gate_up_lora_b": [slots, n, 2 * f_local, rank],
        "down_lora_a": [slots, n, rank, f_local],
        "down_lora_b": [slots, outer, hidden, rank],
    }


def sink_facts(
    config: ServerConfig,
    model: ModelConfig,
    quant: dict[str, Any],
    lora_on: bool,
    targets: list[str],
    shared_outer: bool,
    rank: int | None,
) -> dict[str, Any]:
    """The shared-sink module sglang builds and the LoRA state it will be in."""
    serves_fp4 = shared_sink_fp4(model, quant)
    kind = sink_kind(model, config, serves_fp4, lora_on)
    lora_class = None
    if kind == "batch_dense" and lora_on:
        lora_class = "v2" if config.lora_backend == "triton_v2" else "legacy"
    # dense_mlp.__init__ / moe.py: linearized = (enable_lora or env) and interleaved and BF16
    linearized = (
        (lora_on or config.env.SGLANG_OPT_LINEARIZED_SHARED_SINK)
        and model.inference_moe_w13_interleaved
        and not serves_fp4
    )
    contiguous = linearized and lora_on and config.lora_backend == "triton_v2"
    tp = max(config.tp_size, 1)
    f_local = model.intermediate_size // tp
    facts: dict[str, Any] = {
        "kind": kind,
        "serves_fp4": serves_fp4,
        "sink_class": lora_class,
        "class_name": SINK_CLASS_NAMES.get(lora_class or ""),
        "linearized_bf16_enabled": linearized,
        "w13_gate_up_contiguous": contiguous,
        "backend_name": config.lora_backend,
        # Only the triton_v2 backend carries the dense engine (`runner`).
        "backend_has_dense_engine": config.lora_backend == "triton_v2",
        "max_loras_per_batch": config.max_loras_per_batch,
        "intermediate_size_per_partition": f_local,
        "shared_outer": shared_outer,
        "pool_rank": rank,
        "given": [],
    }
    stated = apply_stated(facts, config.sink.model_dump(exclude_none=True) if config.sink else {})
    # Facts derived from a stated one follow it unless they are stated too.
    if "backend_name" in stated and "backend_has_dense_engine" not in stated:
        facts["backend_has_dense_engine"] = stated["backend_name"] == "triton_v2"
    if "w13_gate_up_contiguous" not in stated:
        facts["w13_gate_up_contiguous"] = (
            facts["linearized_bf16_enabled"] and lora_on and facts["backend_name"] == "triton_v2"
        )
    if "sink_class" in stated:
        facts["class_name"] = SINK_CLASS_NAMES[stated["sink_class"]]
        facts["kind"] = "batch_dense"
    # lora_manager.init_lora_modules attaches LoRA to the sink only when both MLP targets are on.
    both_targets = "gate_up_proj" in targets and "down_proj" in targets
    facts["lora_attached"] = facts["sink_class"] is not None and (both_targets or "sink_class" in stated)
    facts["expected_pool"] = expected_pool_shapes(
        facts["max_loras_per_batch"],
        model.n_shared_experts,
        rank,
        model.hidden_size,
        f_local,
        shared_outer,
    )
    return facts


def derive(
    config: ServerConfig,
    model: ModelConfig,
    platform: Platform,
    adapter_facts: list[dict[str, Any]],
) -> dict[str, Any]:
    """All global facts for one check. `adapter_facts` come from `adapter_facts.derive`."""
    lora_on = lora_enabled(config)
    targets = resolved_target_modules(config, [a["normalized_targets"] for a in adapter_facts])
    rank = pool_rank(config, [a["rank"] for a in adapter_facts if a.get("rank")])
    detected = [a["shared_outer"] for a in adapter_facts if a.get("shared_outer") is not None]
    if config.experts_shared_outer_loras is not None:
        shared_outer = config.experts_shared_outer_loras
    else:
        shared_outer = bool(detected) and detected[0]
    quant = quantization_facts(model)
    tp = max(config.tp_size, 1)
    sink = sink_facts(config, model, quant, lora_on, targets, shared_outer, rank)
    bind_pools(adapter_facts, sink, model)
    return {
        "lora_enabled": lora_on,
        "lora_paths": lora_path_entries(config),
        "target_modules": targets,
        "moe_tp_size": tp // max(config.ep_size, 1),
        "attention": attention_backends(config, platform),
        "quant": quant,
        "sink": sink,
        "model": model_facts(model, server_config=config, platform=platform),
    }


def bind_pools(adapter_facts: list[dict[str, Any]], sink: dict[str, Any], model: ModelConfig) -> None:
    """Completes each pool-form adapter's facts with `binding`: what the LoRA sink class built
    here does with the pool (set_lora_info, re-bind, slot updates; `inkling_compat.sglang.set_lora_info`).
    It needs the sink class, a global fact, so it is added once that is known."""
    for af in adapter_facts:
        given = af.get("binding_input")
        if af.get("form") != "pool" or not given or not sink["lora_attached"]:
            continue
        af["binding"] = binding.simulate(
            sink["sink_class"], model.n_shared_experts, given["pool"], given["rebind"], given["updated_slots"]
        )
