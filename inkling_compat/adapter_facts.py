"""Per-adapter facts: rank, normalized targets, shared-outer format and shared-sink sites.

Pool-form manifests describe the buffers directly. PEFT-form manifests are mapped the
way sglang 0.5.23 maps them: target names through `lora/utils.get_normalized_target_modules`,
shared-expert tensors to the four sink sites (`lora/lora.py _normalize_shared_expert_moe`),
and shared-outer detection as in `lora_manager._detect_shared_outer_loras`.
"""

from __future__ import annotations

import re
from typing import Any

from inkling_compat.inputs import ModelConfig, PeftManifest, PoolManifest

# lora/utils.get_normalized_target_modules `params_mapping` (the entries Inkling can reach)
_TARGET_ALIASES = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
    "w1": "gate_up_proj",
    "w3": "gate_up_proj",
    "w2": "down_proj",
    "embed_tokens": "embed_tokens",
    "vocab_emb": "embed_tokens",
    "embeddings": "embed_tokens",
    "word_embeddings": "embed_tokens",
    "lm_head": "lm_head",
    "output": "lm_head",
    "unembed_tokens": "lm_head",
    "wq_du": "qkvr",
    "wk_dv": "qkvr",
    "wv_dv": "qkvr",
    "wr_du": "qkvr",
}
_NUMBERED_SHARED = re.compile(r"shared_experts\.(\d+)\.")
_GATE_UP_KEYS = (".w1.", ".w3.", ".gate_proj.", ".up_proj.", ".gate_up_proj.")
_DOWN_KEYS = (".w2.", ".down_proj.")
_REQUIRED_CONFIG_KEYS = ("target_modules", "r", "lora_alpha")


def normalized_targets(target_modules: Any) -> list[str]:
    """Suffix-normalized module names; `all`/`all-linear` become the `all` sentinel."""
    if isinstance(target_modules, str):
        return ["all"] if target_modules in ("all", "all-linear") else []
    if not isinstance(target_modules, list):
        return []
    names = {str(name).split(".")[-1] for name in target_modules}
    return sorted({_TARGET_ALIASES.get(name, name) for name in names})


def target_kind(target_modules: Any) -> str:
    if target_modules is None:
        return "missing"
    if isinstance(target_modules, list):
        return "list"
    if isinstance(target_modules, str):
        return "shorthand" if target_modules in ("all", "all-linear") else "string"
    return "other"


def sink_site(name: str) -> dict[str, Any] | None:
    """Which shared-sink buffer a PEFT tensor feeds, or None if it is not a sink factor."""
    if "shared_experts." not in name:
        return None
    is_down = any(key in name for key in _DOWN_KEYS)
    is_gate_up = any(key in name for key in _GATE_UP_KEYS)
    if not (is_down or is_gate_up):
        return None
    factor = "a" if "lora_A" in name else "b" if "lora_B" in name else None
    if factor is None:
        return None
    numbered = _NUMBERED_SHARED.search(name)
    return {
        "site": f"{'down' if is_down else 'gate_up'}_{factor}",
        "expert": int(numbered.group(1)) if numbered else None,
    }


def _is_inkling_base(model: ModelConfig) -> bool:
    """lora.py `_normalize_shared_expert_moe` gate on architecture / model_type."""
    return any("Inkling" in arch for arch in model.architectures) or "inkling" in model.model_type.lower()


def padded_dims(shape: list[int]) -> dict[str, Any]:
    """A shape that CEL can index safely: `dim` padded with -1 to four entries, plus ndim/last."""
    return {"ndim": len(shape), "dim": list(shape[:4]) + [-1] * (4 - len(shape[:4])), "last": shape[-1] if shape else -1}


def pool_facts(manifest: PoolManifest) -> dict[str, Any]:
    pool = manifest.pool
    gate_a = pool.gate_up_lora_a.shape
    gate_b = pool.gate_up_lora_b.shape
    buffers = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
    return {
        "pool": {name: padded_dims(getattr(pool, name).shape) for name in buffers},
        "rebind": {name: padded_dims(getattr(manifest.rebind, name).shape) for name in buffers} if manifest.rebind else None,
        "name": manifest.name,
        "form": "pool",
        "rank": gate_b[-1] if gate_b else None,
        "normalized_targets": ["gate_up_proj", "down_proj"],
        "shared_outer": (gate_a[1] == 1) if len(gate_a) >= 2 else None,
        "sites": [],
        "missing_config_keys": [],
    }


def peft_facts(manifest: PeftManifest, model: ModelConfig) -> dict[str, Any]:
    raw = manifest.adapter_config
    r = raw.get("r") if isinstance(raw.get("r"), int) else None
    rank_pattern = raw.get("rank_pattern") or {}
    ranks = [r] if r else []
    ranks += [v for v in rank_pattern.values() if isinstance(v, int)]
    n = model.n_shared_experts
    normalizes = _is_inkling_base(model) and n > 0
    sites = []
    shared_outer = None
    for name, spec in manifest.tensors.items():
        site = sink_site(name)
        if site is None:
            continue
        shape = list(spec.shape)
        site.update({"name": name, "shape": shape, "ndim": len(shape), "dtype": spec.dtype})
        # The loader reshapes unnumbered 2-D factors before the sink's slice methods see them.
        site["normalized_by_loader"] = normalizes and site["expert"] is None and len(shape) == 2
        sites.append(site)
        # lora_manager._detect_shared_outer_loras: first gate_up lora_A decides.
        if shared_outer is None and site["site"] == "gate_up_a":
            if len(shape) == 3 or (len(shape) == 2 and normalizes and site["expert"] is None):
                shared_outer = (shape[0] == 1) if len(shape) == 3 else True
            elif len(shape) == 2 and site["expert"] is not None:
                shared_outer = False
    targets_raw = raw.get("target_modules")
    return {
        "name": manifest.name,
        "form": "peft",
        "rank": max(ranks) if ranks else None,
        "r": r,
        "lora_alpha": raw.get("lora_alpha"),
        "target_kind": target_kind(targets_raw),
        "normalized_targets": normalized_targets(targets_raw),
        "use_dora": bool(raw.get("use_dora", False)),
        "use_rslora": bool(raw.get("use_rslora", False)),
        "peft_type": str(raw.get("peft_type", "LORA")),
        "missing_config_keys": [key for key in _REQUIRED_CONFIG_KEYS if key not in raw],
        "added_token_ids": sorted((manifest.added_tokens or {}).values()),
        "pinned": manifest.pinned,
        "shared_outer": shared_outer,
        "sites": sites,
        "normalizes_shared_sink": normalizes,
        "pool": None,
        "rebind": None,
    }


def derive(manifest: PoolManifest | PeftManifest, model: ModelConfig) -> dict[str, Any]:
    if isinstance(manifest, PoolManifest):
        return pool_facts(manifest)
    return peft_facts(manifest, model)
