"""Per-adapter facts: rank, normalized targets, shared-outer format and shared-sink sites.

Pool-form manifests describe the buffers directly. PEFT-form manifests are mapped the
way sglang 0.5.23 maps them (wheel line numbers):

* `lora/lora_config.py` `LoRAConfig.__init__` (l.42-60): the keys read, the added tokens kept;
* `lora/utils.py` `get_normalized_target_modules` (l.277-327): target names;
* `lora/lora.py` `LoRAAdapter` (l.67 peft_type assert, l.71 scaling, `_process_weight`
  l.164-200, `_normalize_weights` l.202-216): which tensors are kept and the names/shapes
  they have once normalized, including the Inkling shared-sink reshape
  `_normalize_shared_expert_moe` (l.317-370);
* `lora/lora_manager.py` `_detect_shared_outer_loras` (l.764-798): shared-outer layout;
* `lora/mem_pool.py` `load_lora_weight_to_buffer` (l.920-1111) and
  `models/inkling_common/lora.py` `slice_moe_lora_{a,b}_weights` (l.138-212): what the
  shared sink's slice methods receive when the loader did not reshape the factors.

Nothing here raises: the facts only say what sglang would see, rules decide.
"""

from __future__ import annotations

import math
import re
import uuid
from functools import lru_cache
from typing import Any

from inkling_compat.sglang import slicing
from inkling_compat.inputs.models import ModelConfig, PeftManifest, PoolManifest

# lora/utils.get_normalized_target_modules `params_mapping`, exactly as in 0.5.23. Inkling's
# split attention names (wq_du, wk_dv, wv_dv, wr_du) and w1/w2/w3 are *not* in it: they
# stay as written (and are not valid pool targets; their weights are renamed later).
_TARGET_ALIASES = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
    "out_proj": "out_proj",
    "embed_tokens": "embed_tokens",
    "vocab_emb": "embed_tokens",
    "embeddings": "embed_tokens",
    "word_embeddings": "embed_tokens",
    "lm_head": "lm_head",
    "output": "lm_head",
    "unembed_tokens": "lm_head",
    "q_a_proj": "fused_qkv_a_proj_with_mqa",
    "kv_a_proj_with_mqa": "fused_qkv_a_proj_with_mqa",
    "wq_b": "indexer.wq_b",
    "wk": "indexer.wk",
    "weights_proj": "indexer.weights_proj",
}
_SHORTHANDS = ("all", "all-linear")
_NUMBERED_SHARED = re.compile(r"shared_experts\.(\d+)\.")
_NUMBERED_ANY_EXPERT = re.compile(r"(?:shared_)?experts\.\d+\.")  # _detect_shared_outer_loras
_LAYER = re.compile(r"layers\.(\d+)\.")  # layers/utils/common.get_layer_id
_GATE_UP_KEYS = (".w1.", ".w3.", ".gate_proj.", ".up_proj.", ".gate_up_proj.")
_DOWN_KEYS = (".w2.", ".down_proj.")
# LoRAConfig.__init__ reads these three unconditionally, in this order (KeyError otherwise).
_REQUIRED_CONFIG_KEYS = ("target_modules", "r", "lora_alpha")


def normalized_targets(target_modules: Any) -> list[str]:
    """get_normalized_target_modules: suffixes mapped through `params_mapping`; the PEFT
    shorthands `all`/`all-linear` become the `all` sentinel. A dict iterates its keys as
    sglang does; anything else (a regex string, null, a number) gives no targets."""
    if isinstance(target_modules, str):
        return ["all"] if target_modules in _SHORTHANDS else []
    if not isinstance(target_modules, (list, dict)):
        return []
    names = {str(name).split(".")[-1] for name in target_modules}
    return sorted({_TARGET_ALIASES.get(name, name) for name in names})


def target_kind(raw: dict[str, Any]) -> str:
    """missing | list | shorthand | string | dict | none | other (a number or bool)."""
    if "target_modules" not in raw:
        return "missing"
    value = raw["target_modules"]
    if value is None:
        return "none"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "shorthand" if value in _SHORTHANDS else "string"
    if isinstance(value, dict):
        return "dict"
    return "other"


def _python_type_name(value: Any) -> str:
    return type(value).__name__


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


@lru_cache(maxsize=65536)
def layer_id(name: str) -> int | None:
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None


def lora_id(name: str, path: str | None) -> str:
    """LoRARef.deterministic_id: the id sglang gives a --lora-paths adapter (uuid5 of
    "name\\0path"); messages that quote an adapter id use it."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"{name}\0{path if path is not None else name}").hex


def padded_dims(shape: list[int]) -> dict[str, Any]:
    """A shape that CEL can index safely: `dim` padded with -1 to four entries, plus ndim/last."""
    return {"ndim": len(shape), "dim": list(shape[:4]) + [-1] * (4 - len(shape[:4])), "last": shape[-1] if shape else -1}


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _cat(a: list[int], b: list[int], dim: int) -> list[int]:
    out = list(a)
    if len(a) == len(b) and -len(a) <= dim < len(a):
        out[dim] = a[dim] + b[dim]
    return out


_LAYER_MEMO: dict[Any, Any] = {}


def _normalize_layer_shared(
    lid: int, weights: dict[str, list[int]], r: int | None, n: int, inkling: bool
) -> dict[str, Any] | None:
    """_normalize_layer, computed once per layer *shape* (names with the layer number taken
    out, shapes, r, n): every layer of an adapter, and the layers of alike adapters, share it."""
    tag = f"layers.{lid}."
    try:
        key = (tuple((name.replace(tag, "layers.#."), tuple(shape)) for name, shape in weights.items()), r, n, inkling)
        hash(key)
    except TypeError:
        return _normalize_layer(weights, r, n, inkling)
    memo = _LAYER_MEMO.get(key)
    if memo is None:
        template = {name: list(shape) for name, shape in key[0]}
        failure = _normalize_layer(template, r, n, inkling)
        memo = (tuple((name, tuple(shape)) for name, shape in template.items()), failure)
        if len(_LAYER_MEMO) >= 8192:
            _LAYER_MEMO.clear()
        _LAYER_MEMO[key] = memo
    items, failure = memo
    weights.clear()
    weights.update((name.replace("layers.#.", tag), list(shape)) for name, shape in items)
    if failure is not None:
        failure = dict(failure, name=failure["name"].replace("layers.#.", tag))
    return failure


def _normalize_layer(
    weights: dict[str, list[int]], r: int | None, n_shared: int, inkling: bool
) -> dict[str, Any] | None:
    """LoRAAdapter._normalize_weights on one layer (names -> shapes), in place.

    Returns the first torch reshape failure of `_normalize_shared_expert_moe`, if any.
    """
    # normalize_qkv_proj (l.264): q/k/v -> qkv_proj (stacked on dim 0).
    names = list(weights)
    if any(k in n for n in names for k in ("q_proj", "k_proj", "v_proj", "qkv_proj")):
        for name in names:
            if "q_proj" in name and name in weights:
                k_name, v_name = name.replace("q_proj", "k_proj"), name.replace("q_proj", "v_proj")
                shape = list(weights.pop(name))
                for other in (k_name, v_name):
                    if other in weights:
                        shape = _cat(shape, weights.pop(other), 0)
                weights[name.replace("q_proj", "qkv_proj")] = shape
    # normalize_inkling_qkvr_proj (l.218): wq_du/wk_dv/wv_dv/wr_du -> qkvr when all four exist.
    for name in list(weights):
        if "wq_du" not in name or name not in weights:
            continue
        others = [name.replace("wq_du", x) for x in ("wk_dv", "wv_dv", "wr_du")]
        if any(o not in weights for o in others):
            continue
        shape = list(weights.pop(name))
        dim = len(shape) - 2
        for o in others:
            shape = _cat(shape, weights.pop(o), dim)
        weights[name.replace("wq_du", "qkvr")] = shape
    for name in list(weights):
        shape = weights[name]
        if "qkvr" in name and "lora_A" in name and len(shape) >= 2 and shape[-2] == r:
            weights[name] = shape[:-2] + [shape[-2] * 4] + shape[-1:]
    # _normalize_shared_expert_moe (l.317): flat Inkling shared-sink factors -> 3-D.
    failure = None
    if inkling and n_shared > 0:
        for name in list(weights):
            if failure is not None:
                break
            if "shared_experts." not in name or _NUMBERED_SHARED.search(name):
                continue
            is_down = any(k in name for k in _DOWN_KEYS)
            is_gate_up = any(k in name for k in _GATE_UP_KEYS)
            shape = weights[name]
            if not (is_down or is_gate_up) or len(shape) != 2:
                continue
            if "lora_A" in name and is_down:
                rank, flat = shape
                target = [rank, n_shared, flat // n_shared]
                if _numel(target) != rank * flat:
                    failure = {"name": name, "shape": target, "size": rank * flat, "site": "down_a"}
                    break
                weights[name] = [n_shared, rank, flat // n_shared]
            elif "lora_A" in name or is_down:
                weights[name] = [1] + shape
            else:
                flat, rank = shape
                target = [n_shared, flat // n_shared, rank]
                if _numel(target) != rank * flat:
                    failure = {"name": name, "shape": target, "size": rank * flat, "site": "gate_up_b"}
                    break
                weights[name] = target
    if failure is not None:
        return failure
    # _rename_expert_w_to_proj (l.372): w1/w3/w2 -> gate_proj/up_proj/down_proj (moved to the end).
    renames = {}
    for name in weights:
        for old, new in ((".w1.", ".gate_proj."), (".w3.", ".up_proj."), (".w2.", ".down_proj.")):
            if old in name:
                renames[name] = name.replace(old, new)
                break
    for old, new in renames.items():
        weights[new] = weights.pop(old)
    # normalize_gate_up_proj (l.462): gate_proj (+ up_proj, zero-filled if absent) -> gate_up_proj;
    # a packed gate_up_proj lora_A is repeated twice along the rank axis.
    for name in list(weights):
        if name not in weights:
            continue
        if "gate_proj" in name:
            up_name = name.replace("gate_proj", "up_proj")
            gate = weights.pop(name)
            up = weights.pop(up_name, None)
            if up is None or _numel(up) == 0:
                up = list(gate)
            weights[name.replace("gate_proj", "gate_up_proj")] = _cat(gate, up, len(gate) - 2)
        elif "gate_up_proj" in name and "lora_A" in name:
            shape = weights[name]
            if len(shape) >= 2:
                weights[name] = shape[:-2] + [shape[-2] * 2] + shape[-1:]
    return None


def _slice_failure(
    layers: list[tuple[int, dict[str, list[int]]]],
    n: int,
    tp_size: int = 1,
    tp_rank: int = 0,
    f_local: int = 0,
) -> dict[str, Any] | None:
    """First unnumbered shared-sink factor the sink's slice methods reject (non-normalized
    path), in mem_pool's order: per layer, canonical gate_up then down, lora_A then lora_B
    (mem_pool.load_lora_weight_to_buffer l.1077-1101). The geometry is `inkling_compat.sglang.slicing`."""
    if n <= 0:
        return None
    for _, weights in layers:
        packed = {
            name: shape
            for name, shape in weights.items()
            if "shared_experts." in name and not re.search(r"experts\.(\d+)\.", name)
        }
        for module, target in (("gate_up_proj", slicing.GATE_UP), ("down_proj", slicing.DOWN)):
            for factor in ("a", "b"):
                for name, shape in packed.items():
                    if module not in name or ("lora_A" in name) != (factor == "a"):
                        continue
                    failure = slicing.slice_failure(factor, shape, target, n, tp_size, tp_rank, f_local)
                    if failure is not None:
                        return {**failure.as_dict(), "name": name}
    return None


_NEUTRAL_PEFT_KEYS: dict[str, Any] = {
    "path": None,
    "lora_id": None,
    "r": None,
    "lora_alpha": None,
    "peft_type_state": "lora",
    "target_kind": "list",
    "target_type": "list",
    "use_dora": False,
    "use_rslora": False,
    "missing_config_keys": [],
    "added_token_ids": [],
    "added_tokens_beyond_vocab": 0,
    "pinned": False,
    "tensor_count": 0,
    "max_module_rank": None,
    "rank_pattern_mismatch": [],
    "alpha_pattern_set": False,
    "scaling_sglang": None,
    "scaling_peft": None,
    "layer_out_of_range": None,
    "embedding_weight_names": [],
    "embedding_weight_names_text": "",
    "normalized_weight_names": [],
    "reshape_failure": None,
    "slice_failure": None,
    "outer_layouts": [],
    "normalizes_shared_sink": False,
    # Filled per adapter by pool_fit after the global facts (mem_pool.load_lora_weight_to_buffer).
    "normalized_shapes": {},
    "target_failure": None,
    "pool_fit": None,
    "pool_partial": None,
    "unmatched_weight_names": [],
}


def pool_facts(manifest: PoolManifest) -> dict[str, Any]:
    pool = manifest.pool
    gate_a = pool.gate_up_lora_a.shape
    gate_b = pool.gate_up_lora_b.shape
    buffers = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
    facts = dict(_NEUTRAL_PEFT_KEYS)
    facts.update(
        {
            "pool": {name: padded_dims(getattr(pool, name).shape) for name in buffers},
            "rebind": {name: padded_dims(getattr(manifest.rebind, name).shape) for name in buffers} if manifest.rebind else None,
            "name": manifest.name,
            "form": "pool",
            "rank": gate_b[-1] if gate_b else None,
            "normalized_targets": ["gate_up_proj", "down_proj"],
            "shared_outer": (gate_a[1] == 1) if len(gate_a) >= 2 else None,
            "sites": [],
            # Full shapes for facts.derive's `binding` (inkling_compat/binding.py), which needs
            # the sink class and n: what set_lora_info / re-bind / slot updates do with them.
            "binding_input": {
                "pool": [list(getattr(pool, name).shape) for name in buffers],
                "rebind": [list(getattr(manifest.rebind, name).shape) for name in buffers] if manifest.rebind else None,
                "updated_slots": manifest.updated_slots,
            },
            "binding": None,
        }
    )
    return facts


def peft_facts(manifest: PeftManifest, model: ModelConfig) -> dict[str, Any]:
    raw = manifest.adapter_config
    r_raw = raw.get("r")
    r = r_raw if isinstance(r_raw, int) and not isinstance(r_raw, bool) else None
    alpha = raw.get("lora_alpha")
    alpha = alpha if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None
    rank_pattern = raw.get("rank_pattern") or {}
    rank_pattern = rank_pattern if isinstance(rank_pattern, dict) else {}
    pattern_ranks = {k: v for k, v in rank_pattern.items() if isinstance(v, int)}
    ranks = ([r] if r else []) + list(pattern_ranks.values())
    n = model.n_shared_experts
    inkling = _is_inkling_base(model)
    normalizes = inkling and n > 0
    targets_raw = raw.get("target_modules")
    targets = normalized_targets(targets_raw)
    use_rslora = bool(raw.get("use_rslora", False))

    # peft_type: LoRAAdapter asserts hf_config["peft_type"].lower() == "lora" (KeyError if absent).
    if "peft_type" not in raw:
        peft_state = "missing"
    elif not isinstance(raw["peft_type"], str):
        peft_state = "not_string"
    else:
        peft_state = "lora" if raw["peft_type"].lower() == "lora" else "other"

    sites = []
    for name, spec in manifest.tensors.items():
        site = sink_site(name)
        if site is None:
            continue
        shape = list(spec.shape)
        site.update({"name": name, "shape": shape, "ndim": len(shape), "dtype": spec.dtype})
        # The loader reshapes unnumbered 2-D factors before the sink's slice methods see them.
        site["normalized_by_loader"] = normalizes and site["expert"] is None and len(shape) == 2
        sites.append(site)

    # _process_weight: tensors with a layer id go to that layer (IndexError past the last
    # layer); embed_tokens / lm_head tensors are kept only when the adapter targets them.
    by_layer: dict[int, dict[str, list[int]]] = {}
    embedding_names: list[str] = []
    out_of_range = None
    for name in sorted(manifest.tensors):
        shape = list(manifest.tensors[name].shape)
        if "unembed_tokens" in name:
            name = name.replace("unembed_tokens", "lm_head")
        lid = layer_id(name)
        if lid is not None:
            if lid >= model.num_hidden_layers and out_of_range is None:
                out_of_range = {"name": name, "layer": lid, "num_layers": model.num_hidden_layers}
            by_layer.setdefault(lid, {})[name] = shape
        elif "embed_tokens" in name or "lm_head" in name:
            module = "embed_tokens" if "embed_tokens" in name else "lm_head"
            if "all" in targets or module in targets:
                embedding_names.append(name)

    layers = sorted(by_layer.items())
    reshape_failure = None
    for lid, weights in layers:
        reshape_failure = _normalize_layer_shared(lid, weights, r, n, inkling)
        if reshape_failure is not None:
            break

    # _detect_shared_outer_loras: gate_up lora_A after normalization; 3-D -> dim0 == 1,
    # numbered 2-D -> per expert; everything else is ignored.
    outer_layouts: list[bool] = []
    if reshape_failure is None:
        for _, weights in layers:
            for name, shape in weights.items():
                if "gate_up_proj" not in name or "lora_A" not in name:
                    continue
                if len(shape) == 3:
                    value = shape[0] == 1
                elif _NUMBERED_ANY_EXPERT.search(name):
                    value = False
                else:
                    continue
                if value not in outer_layouts:
                    outer_layouts.append(value)

    scaling_sglang = (alpha / r) if alpha is not None and r else None
    scaling_peft = (alpha / math.sqrt(r) if use_rslora else alpha / r) if alpha is not None and r else None
    return {
        "name": manifest.name,
        "form": "peft",
        "path": manifest.path,
        "lora_id": lora_id(manifest.name, manifest.path),
        # sglang sizes and admits by `r` alone (rank_pattern is not read in 0.5.23).
        "rank": r,
        "r": r,
        "max_module_rank": max(ranks) if ranks else None,
        "rank_pattern_mismatch": sorted(k for k, v in pattern_ranks.items() if v != r),
        "alpha_pattern_set": bool(raw.get("alpha_pattern")),
        "lora_alpha": raw.get("lora_alpha"),
        "scaling_sglang": scaling_sglang,
        "scaling_peft": scaling_peft,
        "target_kind": target_kind(raw),
        "target_type": _python_type_name(targets_raw),
        "normalized_targets": targets,
        "use_dora": bool(raw.get("use_dora", False)),
        "use_rslora": use_rslora,
        "peft_type_state": peft_state,
        "missing_config_keys": [key for key in _REQUIRED_CONFIG_KEYS if key not in raw],
        "added_token_ids": sorted((manifest.added_tokens or {}).values()),
        # LoRAConfig drops ids below the base vocab ("fake" added tokens).
        "added_tokens_beyond_vocab": sum(1 for v in (manifest.added_tokens or {}).values() if v >= model.vocab_size),
        "pinned": manifest.pinned,
        "tensor_count": len(manifest.tensors),
        "layer_out_of_range": out_of_range,
        "embedding_weight_names": sorted(embedding_names),
        # utils.warn_if_adapter_targets_embeddings joins the sorted names with ", ".
        "embedding_weight_names_text": ", ".join(sorted(embedding_names)),
        "normalized_weight_names": sorted([n_ for _, w in layers for n_ in w] + embedding_names),
        "reshape_failure": reshape_failure,
        "slice_failure": None if (normalizes or reshape_failure) else _slice_failure(layers, n),
        "outer_layouts": outer_layouts,
        "shared_outer": outer_layouts[0] if outer_layouts else None,
        "sites": sites,
        "normalizes_shared_sink": normalizes,
        # name -> shape once normalized (what the pool copies); pool_fit reads it.
        "normalized_shapes": {} if reshape_failure else {n_: s for _, w in layers for n_, s in w.items()},
        "target_failure": None,
        "pool_fit": None,
        "pool_partial": None,
        "unmatched_weight_names": [],
        "pool": None,
        "rebind": None,
    }


def derive(manifest: PoolManifest | PeftManifest, model: ModelConfig) -> dict[str, Any]:
    if isinstance(manifest, PoolManifest):
        return pool_facts(manifest)
    if manifest.source is not None and manifest.source.unreadable:
        return unreadable_facts(manifest)
    return peft_facts(manifest, model)


def unreadable_facts(manifest: PeftManifest) -> dict[str, Any]:
    """An adapter directory that could not be read: form "unreadable", so that no pool or
    PEFT rule applies to it and only adapter-file-unreadable reports it."""
    facts = dict(_NEUTRAL_PEFT_KEYS)
    facts.update({"name": manifest.name, "form": "unreadable", "path": manifest.path, "rank": None,
                  "normalized_targets": [], "shared_outer": None, "sites": [], "pool": None, "rebind": None})
    return facts
