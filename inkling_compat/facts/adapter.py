"""An adapter's own facts: rank, normalized targets and shapes, shared-outer format, ...

What one adapter decides by itself, before the pool is known: `own_facts` gives a frozen
`PoolOwn`, `PeftOwn` or `UnreadableOwn`. `facts.in_pool.complete` turns them, with the sink
and the pool, into the published `AdapterFacts` models; a PEFT adapter's published own facts
are `PeftOwnFacts` (the base of `PeftAdapterFacts`), the rest here (normalized weights, outer
layouts, the binding's input) is what the pool replays read, not published.

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
import functools
import re

from inkling_compat.sglang.plain_dataclass import dataclass, replace

# The sglang replays these facts read (one implementation, shared with the runtime).
from inkling_compat.sglang.adapter_loader import CatRefusal, NormalizeFailure, ReshapeRefusal
from inkling_compat.sglang.adapter_loader import LAYER_MEMO as _LAYER_MEMO  # noqa: F401 (benchmarks clear it)
from inkling_compat.sglang.adapter_loader import is_inkling_base as _is_inkling_base
from inkling_compat.sglang.adapter_loader import layer_id
from inkling_compat.sglang.adapter_loader import normalize_layer as _normalize_layer  # noqa: F401 (tests/test_fleet.py)
from inkling_compat.sglang.adapter_loader import TEMPLATE as _TEMPLATE
from inkling_compat.sglang.adapter_loader import normalize_layer_shared as _normalize_layer_shared  # noqa: F401 (tests/test_fleet.py)
from inkling_compat.sglang.adapter_loader import normalize_template as _normalize_template
from inkling_compat.sglang.load_to_buffer import AdapterWeights, first_slice_failure
from inkling_compat.sglang.lora_config import normalized_targets, target_kind
from inkling_compat.facts.types import PeftOwnFacts
from inkling_compat.inputs.models import ModelConfig, PeftManifest, PoolManifest

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Hashable


# _detect_shared_outer_loras
@functools.cache
def _numbered_any_expert() -> re.Pattern[str]:
    return re.compile(r"(?:shared_)?experts\.\d+\.")


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


def python_scaling(raw: dict[str, Any]) -> float | None:
    """lora_alpha / r as Python computes it on the JSON values (None: either is absent or not a
    number, r is zero, or the division raises)."""
    alpha, r = raw.get("lora_alpha"), raw.get("r")
    if not all(type(v) in (int, float, bool) for v in (alpha, r)) or not r:
        return None
    try:
        return alpha / r
    except (ArithmeticError, TypeError):
        return None


# The least float whose float32 rounding is an infinity: halfway between float32's largest
# finite value (2**128 - 2**104) and 2**128, which round-to-nearest-even takes up (the largest
# value's mantissa is odd). struct.pack("<f", x) raises OverflowError from there on
# (tests/test_facts.py holds the two equal); comparing saves a check the import of struct.
_FLOAT32_OVERFLOW = float(2**128 - 2**103)


def past_float32(value: float | None) -> bool:
    """A finite float that float32 rounds to an infinity (above about 3.4e38)."""
    if value is None or not math.isfinite(value):
        return False
    return abs(value) >= _FLOAT32_OVERFLOW


def _first_non_string(items: Any) -> str | None:
    if not isinstance(items, list):
        return None
    return next((type(item).__name__ for item in items if not isinstance(item, str)), None)


# PEFT's LoraConfig field types for the keys sglang reads loosely (truthiness) or not at all,
# and what sglang 0.5.23 then does. r and lora_alpha as numbers are rules of their own.
def config_type_mismatches(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The adapter_config.json fields whose type is not PEFT's, in PEFT's order (ConfigTypeMismatch:
    the field, the Python type json.load gave, and the value's truthiness where it matters)."""
    found: list[dict[str, Any]] = []

    def add(field: str, truthy: bool | None = None) -> None:
        found.append({"field": field, "type": type(raw[field]).__name__, "truthy": truthy})

    if raw.get("r") is True:
        add("r", True)
    if isinstance(raw.get("lora_alpha"), bool):
        add("lora_alpha", raw["lora_alpha"])
    for field in ("use_rslora", "use_dora"):
        if field in raw and not isinstance(raw[field], bool):
            add(field, bool(raw[field]) if _is_json(raw[field]) else None)
    for field, value_type in (("rank_pattern", "int"), ("alpha_pattern", "int or float")):
        if field not in raw or raw[field] is None:
            continue
        value = raw[field]
        ok_values = isinstance(value, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and (value_type != "int" or isinstance(v, int)) for v in value.values()
        )
        if not ok_values:
            add(field)
    if "modules_to_save" in raw and raw["modules_to_save"] is not None:
        value = raw["modules_to_save"]
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            add("modules_to_save")
    return found


# uuid.NAMESPACE_URL's bytes (RFC 4122 appendix C).
_NAMESPACE_URL = bytes.fromhex("6ba7b8119dad11d180b400c04fd430c8")


def _sha1() -> Any:
    """SHA-1 from Python's own `_sha1` (what hashlib falls back to), where the interpreter has
    it: the same digest (FIPS 180-4) without hashlib's import of OpenSSL's `_hashlib` (about
    3 ms at a check's start, for one hash)."""
    try:
        from _sha1 import sha1
    except ImportError:  # (a build without it: hashlib's)
        from hashlib import sha1
    return sha1


def lora_id(name: str, path: str | None) -> str:
    """LoRARef.deterministic_id: the id sglang gives a --lora-paths adapter (uuid5 of
    "name\\0path"); messages that quote an adapter id use it. `uuid.uuid5(NAMESPACE_URL,
    ...).hex` as RFC 4122 defines it (SHA-1 of the namespace and the name, version 5, variant
    10), without importing uuid (it imports platform; tests/test_facts.py holds it to uuid5 and
    to the wheel's own deterministic_id)."""
    digest = bytearray(_sha1()(_NAMESPACE_URL + f"{name}\0{path if path is not None else name}".encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    return digest.hex()


def padded_dims(shape: list[int]) -> dict[str, Any]:
    """A shape that CEL can index safely: `dim` padded with -1 to four entries, plus ndim/last."""
    return {"ndim": len(shape), "dim": list(shape[:4]) + [-1] * (4 - len(shape[:4])), "last": shape[-1] if shape else -1}


_BUFFERS = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
_SINK_TARGETS = ("gate_up_proj", "down_proj")


@dataclass(frozen=True)
class PoolOwn:
    """A pool manifest's own facts: the buffer shapes set_lora_info, the re-bind and slot
    updates receive (published as `pool` / `rebind`), and R and the layout they state."""

    form: ClassVar[str] = "pool"
    normalized_targets: ClassVar[tuple[str, ...]] = _SINK_TARGETS
    outer_layouts: ClassVar[tuple[bool, ...]] = ()
    name: str
    pool_shapes: tuple[tuple[int, ...], ...]
    rebind_shapes: tuple[tuple[int, ...], ...] | None
    updated_slots: tuple[int, ...] | None
    rank: int | None
    shared_outer: bool | None


@dataclass(frozen=True)
class PeftOwn:
    """A PEFT adapter's own facts: the published ones (`facts`), its path, the shared-outer
    layouts detected, and its weights once normalized (None: the normalization failed, so no
    pool copy follows)."""

    form: ClassVar[str] = "peft"
    facts: PeftOwnFacts
    path: str | None
    outer_layouts: tuple[bool, ...]
    weights: AdapterWeights | None
    # What the facts are computed from, besides name and path (`facts.in_pool.content_key`;
    # None: not memoized): alike adapters share it, and their completion with it.
    content: Hashable | None = None

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def lora_id(self) -> str:
        return self.facts.lora_id

    @property
    def rank(self) -> int | None:
        # sglang sizes and admits by `r` alone (rank_pattern is not read in 0.5.23).
        return self.facts.r

    @property
    def normalized_targets(self) -> list[str]:
        return self.facts.normalized_targets

    @property
    def shared_outer(self) -> bool | None:
        return self.outer_layouts[0] if self.outer_layouts else None

    def named(self, name: str, path: str | None) -> PeftOwn:
        """The same facts for an alike adapter of another name and path."""
        if name == self.name and path == self.path:
            return self
        return replace(self, facts=self.facts.model_copy(update={"name": name, "lora_id": lora_id(name, path)}), path=path)


@dataclass(frozen=True)
class UnreadableOwn:
    """An adapter directory that could not be read: form "unreadable", so that no pool or
    PEFT rule applies to it and only adapter-file-unreadable reports it."""

    form: ClassVar[str] = "unreadable"
    normalized_targets: ClassVar[tuple[str, ...]] = ()
    outer_layouts: ClassVar[tuple[bool, ...]] = ()
    rank: ClassVar[None] = None
    shared_outer: ClassVar[None] = None
    name: str
    path: str | None


OwnFacts = PoolOwn | PeftOwn | UnreadableOwn


def buffer_dims(shapes: tuple[tuple[int, ...], ...]) -> dict[str, Any]:
    """The four buffers' shapes as `BufferDims` holds them (padded for CEL)."""
    return {name: padded_dims(list(shape)) for name, shape in zip(_BUFFERS, shapes)}


def pool_facts(manifest: PoolManifest) -> PoolOwn:
    pool = manifest.pool
    gate_a = pool.gate_up_lora_a.shape
    gate_b = pool.gate_up_lora_b.shape
    rebind = manifest.rebind
    return PoolOwn(
        name=manifest.name,
        pool_shapes=tuple(tuple(getattr(pool, name).shape) for name in _BUFFERS),
        rebind_shapes=tuple(tuple(getattr(rebind, name).shape) for name in _BUFFERS) if rebind else None,
        updated_slots=tuple(manifest.updated_slots) if manifest.updated_slots is not None else None,
        rank=gate_b[-1] if gate_b else None,
        shared_outer=(gate_a[1] == 1) if len(gate_a) >= 2 else None,
    )


def _rank(raw: dict[str, Any]) -> int | None:
    """A boolean r is the int it is, as in sglang's Python (true: rank 1, false: 0); the
    adapter-config-type-mismatch warning says so. Floats and other types: None (rules of their own)."""
    r_raw = raw.get("r")
    return int(r_raw) if isinstance(r_raw, int) else None


def _alpha(raw: dict[str, Any]) -> int | float | None:
    alpha = raw.get("lora_alpha")
    return alpha if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None


def peft_type_state(raw: dict[str, Any]) -> str:
    """LoRAAdapter asserts hf_config["peft_type"].lower() == "lora" (KeyError if absent)."""
    if "peft_type" not in raw:
        return "missing"
    if not isinstance(raw["peft_type"], str):
        return "not_string"
    return "lora" if raw["peft_type"].lower() == "lora" else "other"


def _targets(raw: dict[str, Any]) -> tuple[list[str], str | None]:
    """(normalized targets, the type of the first list item that is not a string): on such an
    item get_normalized_target_modules raises (`name.split`), so no target set comes out."""
    item_type = _first_non_string(raw.get("target_modules"))
    return (normalized_targets(raw.get("target_modules")) if item_type is None else []), item_type


def rank_pattern_mismatch(raw: dict[str, Any], r: int | None) -> list[str]:
    rank_pattern = raw.get("rank_pattern") or {}
    rank_pattern = rank_pattern if isinstance(rank_pattern, dict) else {}
    return sorted(k for k, v in rank_pattern.items() if isinstance(v, int) and v != r)


@dataclass(frozen=True)
class _ReadLayers:
    """_process_weight: tensors with a layer id go to that layer (IndexError past the last
    layer); embed_tokens / lm_head tensors are kept only when the adapter targets them. Each
    layer is name -> (template name, shape): the key of its normalization memo."""

    by_layer: dict[int, dict[str, tuple[str, Any]]]
    embedding_names: list[str]
    out_of_range: dict[str, Any] | None


def read_layers(manifest: PeftManifest, num_layers: int, targets: list[str]) -> _ReadLayers:
    by_layer: dict[int, dict[str, tuple[str, Any]]] = {}
    embedding_names: list[str] = []
    out_of_range = None
    tensors = manifest.tensors
    root = getattr(tensors, "root", tensors)
    known = _NAMES.get
    for raw_name in sorted(root):
        name, lid, template = known(raw_name) or _tensor_name(raw_name)
        if lid is not None:
            if lid >= num_layers and out_of_range is None:
                out_of_range = {"name": name, "layer": lid, "num_layers": num_layers}
            by_layer.setdefault(lid, {})[name] = (template, tuple(root[raw_name].shape))
        elif "embed_tokens" in name or "lm_head" in name:
            module = "embed_tokens" if "embed_tokens" in name else "lm_head"
            if "all" in targets or module in targets:
                embedding_names.append(name)
    return _ReadLayers(by_layer, sorted(embedding_names), out_of_range)


@dataclass(frozen=True)
class _Normalized:
    """The layers once `_normalize_weights` ran (layer order; past a failure, the later layers
    as read: only their names are used), each layer's normalized template pairs (the pool
    replay's memo key), and the first torch failure."""

    layers: tuple[tuple[int, dict[str, list[int]]], ...]
    templates: dict[int, Any]
    failure: NormalizeFailure | None


def normalize(by_layer: dict[int, dict[str, tuple[str, Any]]], r: int | None, n: int, inkling: bool) -> _Normalized:
    layers: list[tuple[int, dict[str, list[int]]]] = []
    templates: dict[int, Any] = {}
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
    return _Normalized(tuple(layers), templates, failure)


def outer_layouts(layers: tuple[tuple[int, dict[str, list[int]]], ...]) -> tuple[bool, ...]:
    """_detect_shared_outer_loras: gate_up lora_A after normalization; 3-D -> dim0 == 1,
    numbered 2-D -> per expert; everything else is ignored. Each layout once, first first."""
    found: list[bool] = []
    for _, weights in layers:
        for name, shape in weights.items():
            if "gate_up_proj" not in name or "lora_A" not in name:
                continue
            if len(shape) == 3:
                value = shape[0] == 1
            elif _numbered_any_expert().search(name):
                value = False
            else:
                continue
            if value not in found:
                found.append(value)
    return tuple(found)


def scaling_facts(raw: dict[str, Any], r: int | None, use_rslora: bool) -> dict[str, Any]:
    """The scaling facts of PeftOwnFacts: what `lora_alpha / r` raises, whether it is finite,
    and sglang's and PEFT's value where Python computes it (an int quotient past a float
    raises OverflowError)."""
    failure = scaling_failure(raw)
    quotient = python_scaling(raw)
    alpha = _alpha(raw)
    computes = alpha is not None and bool(r) and failure is None
    return {
        "scaling_failure": failure,
        # json.load reads NaN, Infinity and 1e999 as floats; sglang scales lora_B by the
        # quotient (a bf16 tensor times a Python float computes in float32) and hands the
        # backends a float32 `scalings` tensor: NaN, an infinity or a float past float32's
        # range all poison the adapter's outputs.
        "scaling_not_finite": failure is None and quotient is not None and (not math.isfinite(quotient) or past_float32(quotient)),
        "scaling_python": quotient if failure is None else None,
        "scaling_past_float32": failure is None and past_float32(quotient),
        "scaling_sglang": (alpha / r) if computes else None,  # type: ignore[operator]
        "scaling_peft": _peft_scaling(alpha, r, use_rslora) if computes else None,  # type: ignore[arg-type]
    }


def _failure_facts(failure: NormalizeFailure | None) -> dict[str, Any]:
    """The first torch failure of the normalization: a reshape (`_normalize_shared_expert_moe`)
    or a concatenation (`normalize_gate_up_proj`, `normalize_qkv_proj`, ...)."""
    return {
        "reshape_failure": {k: list(v) if isinstance(v, tuple) else v for k, v in vars(failure).items()} if isinstance(failure, ReshapeRefusal) else None,
        "cat_failure": {"message": failure.message} if isinstance(failure, CatRefusal) else None,
    }


def _slice_failure(layers: tuple[tuple[int, dict[str, list[int]]], ...], n: int) -> dict[str, Any] | None:
    found = first_slice_failure(layers, n)
    return None if found is None else {**vars(found.failure), "name": found.name}


def _holds_dict(value: Any) -> bool:
    return isinstance(value, dict) or (isinstance(value, list) and any(_holds_dict(v) for v in value))


def _own_record(values: dict[str, Any]) -> PeftOwnFacts:
    """`PeftOwnFacts.model_validate(values)`: the dicts (in lists too) become their records;
    values without one are the fields as they are (the usual adapter: no failure found)."""
    if any(_holds_dict(v) for v in values.values()):
        return PeftOwnFacts.model_validate(values)
    return PeftOwnFacts(**values)


def peft_facts(manifest: PeftManifest, model: ModelConfig) -> PeftOwn:
    raw = manifest.adapter_config
    r = _rank(raw)
    n = model.n_shared_experts
    inkling = _is_inkling_base(model)
    normalizes = inkling and n > 0
    targets, target_item_type = _targets(raw)
    use_rslora = bool(raw.get("use_rslora", False))
    read = read_layers(manifest, model.num_hidden_layers, targets)
    normalized = normalize(read.by_layer, r, n, inkling)
    failure = normalized.failure
    # LoRAConfig drops ids below the base vocab ("fake" added tokens).
    added = sum(1 for v in (manifest.added_tokens or {}).values() if v >= model.vocab_size)
    names = tuple(sorted([name for _, w in normalized.layers for name in w] + read.embedding_names))
    facts = _own_record(dict(  # the failures and mismatches found as dicts become their records
        form="peft",
        name=manifest.name,
        lora_id=lora_id(manifest.name, manifest.path),
        r=r,
        r_type=_python_type_name(raw.get("r")),
        **scaling_facts(raw, r, use_rslora),
        config_type_mismatches=config_type_mismatches(raw),
        rank_pattern_mismatch=rank_pattern_mismatch(raw, r),
        alpha_pattern_set=bool(raw.get("alpha_pattern")),
        target_kind=target_kind(raw),
        target_type=_python_type_name(raw.get("target_modules")),
        target_item_type=target_item_type,
        normalized_targets=targets,
        use_dora=bool(raw.get("use_dora", False)),
        use_rslora=use_rslora,
        peft_type_state=peft_type_state(raw),
        peft_type_type=_python_type_name(raw.get("peft_type")),
        missing_config_keys=[key for key in _REQUIRED_CONFIG_KEYS if key not in raw],
        added_tokens_beyond_vocab=added,
        extra_token_embedding=extra_token_embedding(manifest, added),
        tensor_count=len(manifest.tensors),
        layer_out_of_range=read.out_of_range,
        embedding_weight_names=read.embedding_names,
        normalizes_shared_sink=normalizes,
        **_failure_facts(failure),
        slice_failure=None if (normalizes or failure) else _slice_failure(normalized.layers, n),
    ))
    weights = None if failure else AdapterWeights(
        names=names, layers=normalized.layers, templates=normalized.templates, r=r, layer_out_of_range=read.out_of_range is not None
    )
    return PeftOwn(facts=facts, path=manifest.path, outer_layouts=() if failure else outer_layouts(normalized.layers), weights=weights)


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


def own_facts(manifest: PoolManifest | PeftManifest, model: ModelConfig) -> OwnFacts:
    """The adapter's own facts."""
    if isinstance(manifest, PoolManifest):
        return pool_facts(manifest)
    if manifest.source is not None and manifest.source.unreadable:
        return UnreadableOwn(name=manifest.name, path=manifest.path)
    return peft_facts(manifest, model)
