"""An adapter's own facts: rank, normalized targets and shapes, shared-outer format, ...

What one adapter decides by itself, before the pool is known. `facts.in_pool.complete`
turns them, with the sink and the pool, into the published `AdapterFacts` models; the
intermediate values here (normalized shapes, outer layouts, binding input) are not published.

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

import json
import math
import re
import struct
import uuid
from typing import Any

# The sglang replays these facts read (one implementation, shared with the runtime).
from inkling_compat.sglang.adapter_loader import LAYER_MEMO as _LAYER_MEMO  # noqa: F401 (benchmarks clear it)
from inkling_compat.sglang.adapter_loader import is_inkling_base as _is_inkling_base
from inkling_compat.sglang.adapter_loader import layer_id
from inkling_compat.sglang.adapter_loader import normalize_layer as _normalize_layer  # noqa: F401 (tests/test_fleet.py)
from inkling_compat.sglang.adapter_loader import TEMPLATE as _TEMPLATE
from inkling_compat.sglang.adapter_loader import normalize_layer_shared as _normalize_layer_shared  # noqa: F401 (tests/test_fleet.py)
from inkling_compat.sglang.adapter_loader import normalize_template as _normalize_template
from inkling_compat.sglang.load_to_buffer import first_slice_failure as _slice_failure
from inkling_compat.sglang.lora_config import normalized_targets, target_kind
from inkling_compat.inputs.models import ModelConfig, PeftManifest, PoolManifest

_NUMBERED_ANY_EXPERT = re.compile(r"(?:shared_)?experts\.\d+\.")  # _detect_shared_outer_loras
# LoRAConfig.__init__ reads these three unconditionally, in this order (KeyError otherwise).
_REQUIRED_CONFIG_KEYS = ("target_modules", "r", "lora_alpha")


# tensor name -> (name once `unembed_tokens` is renamed, layer id, name with the layer written
# as _TEMPLATE): a pure function of the name, cached because a fleet repeats the same names in
# every adapter (224 names x 1,000 adapters); bounded.
_NAMES: dict[str, tuple[str, int | None, str | None]] = {}


def _tensor_name(raw: str) -> tuple[str, int | None, str | None]:
    info = _NAMES.get(raw)
    if info is None:
        name = raw.replace("unembed_tokens", "lm_head") if "unembed_tokens" in raw else raw
        lid = layer_id(name)
        info = (name, lid, None if lid is None else name.replace(f"layers.{lid}.", _TEMPLATE))
        if len(_NAMES) >= 1 << 17:
            _NAMES.clear()
        _NAMES[raw] = info
    return info


def _python_type_name(value: Any) -> str:
    return type(value).__name__


# The types json.load produces: only on these is replaying sglang's Python arithmetic safe
# (a dict input may hold any object, whose operators could do anything).
_JSON_TYPES = (type(None), bool, int, float, str, list, dict)


def _is_json(value: Any) -> bool:
    return type(value) in _JSON_TYPES


def json_text(value: Any, limit: int = 40) -> str:
    """A value as JSON for a message, at most `limit` characters; containers by their size
    beyond a few items (never a walk over a large or deep value)."""
    if isinstance(value, (list, dict)):
        small = len(value) <= 4 and all(not isinstance(v, (list, dict)) for v in (value.values() if isinstance(value, dict) else value))
        if not small:
            return f"a {type(value).__name__} of {len(value)} item(s)"
    if isinstance(value, int) and not isinstance(value, bool):
        # Every digit, never truncated: the input readers refuse more than 100 (inputs/limits.py),
        # and a message that names an int must name the one the file holds.
        return str(value) if abs(value) < 10**100 else f"an int of {int(value.bit_length() * 0.30103) + 1} digits"
    if not _is_json(value):
        return f"a {type(value).__name__}"
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def py_str(value: Any) -> str:
    """A number as Python's str() prints it in sglang's f-strings (every digit of an int up to
    the readers' 100, `True` for true); anything else as json_text."""
    if type(value) in (bool, float) or (type(value) is int and abs(value) < 10**100):
        return str(value)
    return json_text(value)


def scaling_failure(raw: dict[str, Any]) -> dict[str, str] | None:
    """lora.py:71 `self.scaling = self.config.lora_alpha / self.config.r`, replayed on the
    JSON values: what Python raises (a type that does not divide, r 0 / 0.0 / false, an int
    quotient too large for a float), or None when it computes (or a key is absent: that is
    LoRAConfig's KeyError first)."""
    if "r" not in raw or "lora_alpha" not in raw:
        return None
    alpha, r = raw["lora_alpha"], raw["r"]
    if not (_is_json(alpha) and _is_json(r)):
        return None
    if isinstance(alpha, int) and isinstance(r, int) and max(abs(alpha), abs(r)) >= 1 << 4096:
        # Python's int limits already refuse such digits at load; bounded here as well.
        return None
    try:
        alpha / r
    except (TypeError, ZeroDivisionError, OverflowError) as exc:
        return {"error_class": type(exc).__name__, "message": str(exc)}
    return None


def _not_finite(raw: dict[str, Any]) -> bool:
    """lora_alpha / r computes (numbers, r not zero) and gives NaN or an infinity, in Python
    or once rounded to float32: json.load reads NaN, Infinity and 1e999 as floats, and sglang
    scales lora_B by the result (a bf16 tensor times a Python float computes in float32) and
    hands the backends a float32 `scalings` tensor."""
    return scaling_not_finite_text(raw) is not None


def scaling_not_finite_text(raw: dict[str, Any]) -> str | None:
    """What the scaling is where it is not finite: "NaN", "an infinity", or the Python float
    and that float32 cannot hold it; None where it is finite in float32 (or not computed)."""
    alpha, r = raw.get("lora_alpha"), raw.get("r")
    if not all(type(v) in (int, float, bool) for v in (alpha, r)) or not r:
        return None
    try:
        scaling = alpha / r
    except (ArithmeticError, TypeError):
        return None
    if math.isnan(scaling):
        return "NaN"
    if math.isinf(scaling):
        return "an infinity"
    try:
        struct.pack("<f", scaling)  # OverflowError exactly when float32 rounding gives an infinity
    except OverflowError:
        return f"{scaling!r}, past float32's range (an infinity in float32 and the bf16 pool)"
    return None


def _first_non_string(items: Any) -> str | None:
    if not isinstance(items, list):
        return None
    return next((type(item).__name__ for item in items if not isinstance(item, str)), None)


# PEFT's LoraConfig field types for the keys sglang reads loosely (truthiness) or not at all,
# and what sglang 0.5.23 then does. r and lora_alpha as numbers are rules of their own.
def config_type_mismatches(raw: dict[str, Any]) -> list[str]:
    found: list[str] = []

    def add(field: str, expected: str, effect: str) -> None:
        found.append(f"{field} has type {type(raw[field]).__name__}, PEFT writes {expected} ({effect})")

    if raw.get("r") is True:
        add("r", "int", "sglang 0.5.23 uses true as rank 1")
    if isinstance(raw.get("lora_alpha"), bool):
        add("lora_alpha", "int or float", f"sglang 0.5.23 divides it as {int(raw['lora_alpha'])}")
    for field in ("use_rslora", "use_dora"):
        if field in raw and not isinstance(raw[field], bool):
            truthy = bool(raw[field]) if _is_json(raw[field]) else None
            if field == "use_dora":
                effect = ("sglang 0.5.23 tests its truthiness: it is " + ("true, so the adapter is refused as DoRA" if truthy else "false"))
            else:
                effect = "sglang 0.5.23 does not read it; PEFT tests its truthiness" + ("" if truthy is None else f" ({'true' if truthy else 'false'})")
            add(field, "bool", effect)
    for field, value_type in (("rank_pattern", "int"), ("alpha_pattern", "int or float")):
        if field not in raw or raw[field] is None:
            continue
        value = raw[field]
        ok_values = isinstance(value, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and (value_type != "int" or isinstance(v, int)) for v in value.values()
        )
        if not ok_values:
            add(field, f"a mapping of module name to {value_type}", "sglang 0.5.23 does not read it")
    if "modules_to_save" in raw and raw["modules_to_save"] is not None:
        value = raw["modules_to_save"]
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            add("modules_to_save", "a list of strings or null", "sglang 0.5.23 does not read it")
    return found


def lora_id(name: str, path: str | None) -> str:
    """LoRARef.deterministic_id: the id sglang gives a --lora-paths adapter (uuid5 of
    "name\\0path"); messages that quote an adapter id use it."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"{name}\0{path if path is not None else name}").hex


def padded_dims(shape: list[int]) -> dict[str, Any]:
    """A shape that CEL can index safely: `dim` padded with -1 to four entries, plus ndim/last."""
    return {"ndim": len(shape), "dim": list(shape[:4]) + [-1] * (4 - len(shape[:4])), "last": shape[-1] if shape else -1}


def pool_facts(manifest: PoolManifest) -> dict[str, Any]:
    pool = manifest.pool
    gate_a = pool.gate_up_lora_a.shape
    gate_b = pool.gate_up_lora_b.shape
    buffers = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
    # The adapter's own facts; `facts.derive` adds what depends on the pool and the sink.
    return {
            "pool": {name: padded_dims(getattr(pool, name).shape) for name in buffers},
            "rebind": {name: padded_dims(getattr(manifest.rebind, name).shape) for name in buffers} if manifest.rebind else None,
            "name": manifest.name,
            "form": "pool",
            "rank": gate_b[-1] if gate_b else None,
            "normalized_targets": ["gate_up_proj", "down_proj"],
            "shared_outer": (gate_a[1] == 1) if len(gate_a) >= 2 else None,
            # Full shapes for facts.derive's `binding` (inkling_compat.sglang.set_lora_info), which needs
            # the sink class and n: what set_lora_info / re-bind / slot updates do with them.
            "binding_input": {
                "pool": [list(getattr(pool, name).shape) for name in buffers],
                "rebind": [list(getattr(manifest.rebind, name).shape) for name in buffers] if manifest.rebind else None,
                "updated_slots": manifest.updated_slots,
            },
    }


def peft_facts(manifest: PeftManifest, model: ModelConfig) -> dict[str, Any]:
    raw = manifest.adapter_config
    r_raw = raw.get("r")
    # A boolean r is the int it is, as in sglang's Python (true: rank 1, false: 0); the
    # adapter-config-type-mismatch warning says so. Floats and other types: None (rules of their own).
    r = int(r_raw) if isinstance(r_raw, int) else None
    alpha = raw.get("lora_alpha")
    alpha = alpha if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None
    rank_pattern = raw.get("rank_pattern") or {}
    rank_pattern = rank_pattern if isinstance(rank_pattern, dict) else {}
    pattern_ranks = {k: v for k, v in rank_pattern.items() if isinstance(v, int)}
    n = model.n_shared_experts
    inkling = _is_inkling_base(model)
    normalizes = inkling and n > 0
    targets_raw = raw.get("target_modules")
    # A list item that is not a string: get_normalized_target_modules raises on it
    # (`name.split`), so no target set comes out.
    target_item_type = _first_non_string(targets_raw)
    targets = normalized_targets(targets_raw) if target_item_type is None else []
    use_rslora = bool(raw.get("use_rslora", False))

    # peft_type: LoRAAdapter asserts hf_config["peft_type"].lower() == "lora" (KeyError if absent).
    if "peft_type" not in raw:
        peft_state = "missing"
    elif not isinstance(raw["peft_type"], str):
        peft_state = "not_string"
    else:
        peft_state = "lora" if raw["peft_type"].lower() == "lora" else "other"

    # _process_weight: tensors with a layer id go to that layer (IndexError past the last
    # layer); embed_tokens / lm_head tensors are kept only when the adapter targets them.
    # Each layer is kept as name -> (template name, shape): the key of its normalization memo.
    by_layer: dict[int, dict[str, tuple[str, Any]]] = {}
    embedding_names: list[str] = []
    out_of_range = None
    tensors = manifest.tensors
    root = getattr(tensors, "root", tensors)
    known = _NAMES.get
    for raw_name in sorted(root):
        name, lid, template = known(raw_name) or _tensor_name(raw_name)
        if lid is not None:
            if lid >= model.num_hidden_layers and out_of_range is None:
                out_of_range = {"name": name, "layer": lid, "num_layers": model.num_hidden_layers, "layer_str": str(lid)}
            by_layer.setdefault(lid, {})[name] = (template, tuple(root[raw_name].shape))
        elif "embed_tokens" in name or "lm_head" in name:
            module = "embed_tokens" if "embed_tokens" in name else "lm_head"
            if "all" in targets or module in targets:
                embedding_names.append(name)

    layers: list[tuple[int, dict[str, list[int]]]] = []
    templates: dict[int, Any] = {}  # layer -> its normalized template pairs (the pool replay's memo key)
    failure = None
    for lid, entries in sorted(by_layer.items()):
        items = tuple(entries.values())
        try:
            hash(items)
        except TypeError:  # not a shape of ints: normalized on its own
            weights = {name: list(shape) for name, (_, shape) in entries.items()}
            failure = _normalize_layer(weights, r, n, inkling)
        else:
            weights, failure, templates[lid] = _normalize_template(lid, items, r, n, inkling)
        layers.append((lid, weights))
        if failure is not None:
            # sglang raises here; the later layers stay as read (names only are used below).
            layers += [(later, {name: list(shape) for name, (_, shape) in rest.items()}) for later, rest in sorted(by_layer.items()) if later > lid]
            break

    # _detect_shared_outer_loras: gate_up lora_A after normalization; 3-D -> dim0 == 1,
    # numbered 2-D -> per expert; everything else is ignored.
    outer_layouts: list[bool] = []
    if failure is None:
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

    failure_of_scaling = scaling_failure(raw)
    # LoRAConfig drops ids below the base vocab ("fake" added tokens).
    added = sum(1 for v in (manifest.added_tokens or {}).values() if v >= model.vocab_size)
    # Only where Python computes it (an int quotient past a float raises OverflowError).
    computes = alpha is not None and bool(r) and failure_of_scaling is None
    scaling_sglang = (alpha / r) if computes else None
    scaling_peft = _peft_scaling(alpha, r, use_rslora) if computes else None
    return {
        "name": manifest.name,
        "form": "peft",
        "path": manifest.path,
        "lora_id": lora_id(manifest.name, manifest.path),
        # sglang sizes and admits by `r` alone (rank_pattern is not read in 0.5.23).
        "rank": r,
        "r": r,
        "r_type": _python_type_name(r_raw),
        "r_text": json_text(r_raw),
        "r_str": py_str(r_raw),
        "scaling_failure": failure_of_scaling,
        "scaling_not_finite": _not_finite(raw) if failure_of_scaling is None else False,
        "scaling_not_finite_text": scaling_not_finite_text(raw) if failure_of_scaling is None else None,
        "lora_alpha_text": json_text(raw.get("lora_alpha")),
        "config_type_mismatches": config_type_mismatches(raw),
        "rank_pattern_mismatch": sorted(k for k, v in pattern_ranks.items() if v != r),
        "alpha_pattern_set": bool(raw.get("alpha_pattern")),
        "scaling_sglang": scaling_sglang,
        "scaling_peft": scaling_peft,
        "target_kind": target_kind(raw),
        "target_type": _python_type_name(targets_raw),
        "target_item_type": target_item_type,
        "normalized_targets": targets,
        "use_dora": bool(raw.get("use_dora", False)),
        "use_rslora": use_rslora,
        "peft_type_state": peft_state,
        "peft_type_type": _python_type_name(raw.get("peft_type")),
        "missing_config_keys": [key for key in _REQUIRED_CONFIG_KEYS if key not in raw],
        "added_tokens_beyond_vocab": added,
        "extra_token_embedding": extra_token_embedding(manifest, added),
        "tensor_count": len(manifest.tensors),
        "layer_out_of_range": out_of_range,
        "embedding_weight_names": sorted(embedding_names),
        # utils.warn_if_adapter_targets_embeddings joins the sorted names with ", ".
        "embedding_weight_names_text": ", ".join(sorted(embedding_names)),
        "normalized_weight_names": sorted([n_ for _, w in layers for n_ in w] + embedding_names),
        # The first torch failure of the normalization: a reshape (`_normalize_shared_expert_moe`)
        # or a concatenation (`normalize_gate_up_proj`, `normalize_qkv_proj`, ...).
        "reshape_failure": _without_kind(failure) if failure and failure["kind"] == "reshape" else None,
        "cat_failure": {"message": failure["message"]} if failure and failure["kind"] == "cat" else None,
        "slice_failure": None if (normalizes or failure) else _slice_failure(layers, n),
        "outer_layouts": outer_layouts,
        "shared_outer": outer_layouts[0] if outer_layouts else None,
        "normalizes_shared_sink": normalizes,
        # name -> shape once normalized (what the pool copies); pool_fit reads it.
        "normalized_shapes": {} if failure else {n_: s for _, w in layers for n_, s in w.items()},
        # The same by layer, and each layer as template pairs (sglang.load_to_buffer.replay_load reads
        # them instead of grouping and templating the names again).
        "normalized_layers": None if failure else layers,
        "normalized_templates": None if failure else templates,
    }


def extra_token_embedding(manifest: PeftManifest, added: int) -> dict[str, Any] | None:
    """lora.py _process_weight l.194-200: a tensor outside the layers whose name holds
    input_embeddings / output_embeddings (and not embed_tokens / lm_head, caught before it)
    must have lora_added_tokens_size rows; the first that has not, in file order."""
    for raw_name, spec in manifest.tensors.items():
        name = raw_name.replace("unembed_tokens", "lm_head")
        if layer_id(name) is not None or "embed_tokens" in name or "lm_head" in name:
            continue
        if ("input_embeddings" in name or "output_embeddings" in name) and spec.shape and spec.shape[0] != added:
            return {"name": name, "rows": spec.shape[0]}
    return None


def _peft_scaling(alpha: float, r: int, use_rslora: bool) -> float | None:
    """PEFT's scaling: lora_alpha / sqrt(r) with rsLoRA, else lora_alpha / r (None where
    Python raises: a float cannot hold it, or the square root of a negative r)."""
    try:
        return alpha / math.sqrt(r) if use_rslora else alpha / r
    except (OverflowError, ValueError):
        return None


def _without_kind(failure: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in failure.items() if k != "kind"}


def own_facts(manifest: PoolManifest | PeftManifest, model: ModelConfig) -> dict[str, Any]:
    """The adapter's own facts (a new dict; read-only once returned)."""
    if isinstance(manifest, PoolManifest):
        return pool_facts(manifest)
    if manifest.source is not None and manifest.source.unreadable:
        return unreadable_facts(manifest)
    return peft_facts(manifest, model)


def unreadable_facts(manifest: PeftManifest) -> dict[str, Any]:
    """An adapter directory that could not be read: form "unreadable", so that no pool or
    PEFT rule applies to it and only adapter-file-unreadable reports it."""
    return {"name": manifest.name, "form": "unreadable", "path": manifest.path, "rank": None,
            "normalized_targets": [], "shared_outer": None}
