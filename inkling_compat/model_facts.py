"""Facts about the model checkpoint, its quantization and the attention setup.

Mirrors sglang 0.5.23's `inkling_common/quantization/config.py` (is this a TML NVFP4
checkpoint, what it excludes), `arg_groups/model_overrides/inkling.py` (attention backend
defaults) and the geometry the attention and NVFP4 layers derive per TP rank.
"""

from __future__ import annotations

import re
from typing import Any

from inkling_compat.inputs import ModelConfig, Platform, ServerConfig


def attention_backends(config: ServerConfig, platform: Platform) -> dict[str, str]:
    """model_overrides/inkling.py: fa4 on SM100, triton elsewhere, only when no flag is set."""
    explicit = (config.attention_backend, config.prefill_attention_backend, config.decode_attention_backend)
    if all(value is None for value in explicit):
        default = "fa4" if platform.compute_capability[0] == 10 else "triton"
        return {"prefill": default, "decode": default, "explicit": False}
    base = config.attention_backend
    return {
        "prefill": config.prefill_attention_backend or base or "triton",
        "decode": config.decode_attention_backend or base or "triton",
        "explicit": True,
    }


def quantization_facts(model: ModelConfig) -> dict[str, Any]:
    """quantization/config.py: is this a TML NVFP4 checkpoint and what does it exclude."""
    quant = model.quantization_config
    raw = quant.model_dump(exclude_none=True) if quant is not None else {}
    nested = raw.get("quantization") if isinstance(raw.get("quantization"), dict) else {}
    block = raw.get("modelopt_quant_config")
    weight_cfg = None
    if isinstance(block, dict):
        weight_cfg = (block.get("quant_cfg") or {}).get("*weight_quantizer")
    is_nvfp4 = False
    if isinstance(weight_cfg, dict):
        bits = weight_cfg.get("num_bits")
        scale_bits = (weight_cfg.get("block_sizes") or {}).get("scale_bits", [])
        is_nvfp4 = list(bits or []) == [2, 1] and list(scale_bits or []) == [4, 3]
    group_size = nested.get("group_size", raw.get("group_size"))
    excludes = nested.get("exclude_modules", raw.get("exclude_modules")) or []
    shared_excluded = any(
        re.search(r"shared_w13_weight|shared_w2_weight|shared_experts", str(pattern))
        or str(pattern) in ("*", "*mlp*", "*experts*")
        for pattern in excludes
    )
    return {
        "present": quant is not None,
        "method": raw.get("quant_method"),
        "algo": nested.get("quant_algo", raw.get("quant_algo")),
        "group_size": group_size,
        "exclude_modules": list(excludes),
        "has_modelopt_block": isinstance(weight_cfg, dict),
        "is_inkling_nvfp4": is_nvfp4,
        "shared_sink_excluded": shared_excluded,
    }


def model_facts(model: ModelConfig, server_config: ServerConfig, platform: Platform) -> dict[str, Any]:
    """Geometry derived from config.json (sglang's InklingModelConfig defaults)."""
    head_dim = model.head_dim or model.hidden_size // max(model.num_attention_heads, 1)
    return {
        "head_dim": head_dim,
        "swa_num_attention_heads": model.swa_num_attention_heads or model.num_attention_heads,
        "swa_num_key_value_heads": model.swa_num_key_value_heads or model.num_key_value_heads,
        "swa_head_dim": model.swa_head_dim or head_dim,
        "dense_intermediate_size": model.dense_intermediate_size or model.intermediate_size,
    }
