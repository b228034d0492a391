"""sglang 0.5.23's adapter weight normalization, as a plan over shapes (no torch).

Mirrors `lora/lora.py` `LoRAAdapter` (wheel line numbers):

* `_process_weight` (l.164-200): `layer_id` is `layers/utils/common.get_layer_id`;
* `_normalize_weights` (l.202-216), per layer, in this order:
  `normalize_qkv_proj` (l.264-315), `normalize_inkling_qkvr_proj` (l.218-262),
  `_normalize_shared_expert_moe` (l.317-370, the Inkling shared-sink reshape, gated on
  `is_inkling_base`), `_rename_expert_w_to_proj` (l.372-387), `normalize_gate_up_proj`
  (l.462-501).

`plan_layer` decides, from one layer's name -> shape dict, the torch steps sglang takes
(`inkling_compat.sglang.plan`) and the names/shapes they leave; the checker's facts read the
shapes (`normalize_layer`), the runtime applies the same steps to tensors
(`runtime/pool_builder.apply_plan`). Parts of `_normalize_weights` that no Inkling adapter
reaches (`_normalize_in_proj`, `_normalize_in_proj_qkvz`, `normalize_fused_qkv_a_proj`, the
non-gated MoE rename) are not replayed. Nothing here raises: a torch reshape sglang would fail
is returned as `failure`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from inkling_compat.sglang.plain_dataclass import dataclass, replace
from inkling_compat.sglang.plan import Cat, NamedFields, Rename, Repeat, Reshape, Step, Zeros, cat_failure, numel, step_shape

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_DIGITS = "0123456789"
_WINDOW = 32  # ASCII digits a number may have for the plain search (a longer run: the regex)
_TRIES = 8  # occurrences of the key the plain search looks at before it hands the name to the regex


@lru_cache(maxsize=None)
def _numbered_regex(key: str) -> re.Pattern[str]:
    return re.compile(re.escape(key) + r"(\d+)\.")


def numbered(name: str, key: str) -> str | None:
    r"""The digits of the leftmost `key` + digits + "." in `name`: what `re.search(key +
    r"(\d+)\.", name).group(1)` finds (sglang's get_layer_id: key "layers."), or None. A plain
    search for the names adapters have (a few occurrences, ASCII digits), so that a check
    compiles no regex for it (0.1 ms each); anything else (a non-ASCII character after the key
    or the digits, many occurrences, a long number) goes to the regex itself
    (tests/test_numbered_names.py compares the two)."""
    start = name.find(key)
    tries = 0
    while start >= 0:
        first = start + len(key)
        window = name[first:first + _WINDOW + 1]
        run = len(window) - len(window.lstrip(_DIGITS))
        after = window[run:run + 1]
        if after == "." and run:
            return window[:run]
        tries += 1
        if (after and not after.isascii()) or run > _WINDOW or tries >= _TRIES:
            match = _numbered_regex(key).search(name)
            return match.group(1) if match else None
        start = name.find(key, start + 1)
    return None
GATE_UP_KEYS = (".w1.", ".w3.", ".gate_proj.", ".up_proj.", ".gate_up_proj.")
DOWN_KEYS = (".w2.", ".down_proj.")
_QKV_KEYS = ("q_proj", "k_proj", "v_proj", "qkv_proj")
_W_RENAMES = ((".w1.", ".gate_proj."), (".w3.", ".up_proj."), (".w2.", ".down_proj."))


@lru_cache(maxsize=65536)
def layer_id(name: str) -> int | None:
    r"""layers/utils/common.get_layer_id: int() of the first `layers\.(\d+)\.` match."""
    digits = numbered(name, "layers.")
    return int(digits) if digits is not None else None


def is_inkling_base(model: Any) -> bool:
    """`_normalize_shared_expert_moe`'s gate (l.320-332): architecture or model_type."""
    return any("Inkling" in arch for arch in model.architectures) or "inkling" in model.model_type.lower()


def sink_site(name: str) -> dict[str, Any] | None:
    """Which shared-sink buffer a PEFT tensor feeds (`{"site": "gate_up_a" | ..., "expert":
    N or None}`), or None if it is not a sink factor: the name tests of l.335-354."""
    if "shared_experts." not in name:
        return None
    is_down = any(key in name for key in DOWN_KEYS)
    is_gate_up = any(key in name for key in GATE_UP_KEYS)
    if not (is_down or is_gate_up):
        return None
    factor = "a" if "lora_A" in name else "b" if "lora_B" in name else None
    if factor is None:
        return None
    expert = numbered(name, "shared_experts.")
    return {
        "site": f"{'down' if is_down else 'gate_up'}_{factor}",
        "expert": int(expert) if expert is not None else None,
    }


@dataclass(frozen=True)
class ReshapeRefusal:
    """A reshape of `_normalize_shared_expert_moe` torch refuses: the factor, the shape asked
    for, the factor's element count, and the site (down_a, gate_up_b)."""

    name: str
    shape: tuple[int, ...]
    size: int
    site: str


@dataclass(frozen=True)
class CatRefusal:
    """A torch.cat of the normalization torch refuses: the tensor it would make and torch's text."""

    name: str
    message: str


NormalizeFailure = ReshapeRefusal | CatRefusal


class LayerPlan(NamedFields):
    """The steps `_normalize_weights` takes on one layer, the name -> shape dict they leave
    (in sglang's dict order), and the first reshape torch rejects (then `steps` stop before it
    and `shapes` is the layer as sglang holds it when it raises)."""

    __slots__ = ()
    _fields = ("steps", "shapes", "failure")

    def __new__(cls, steps: tuple[Step, ...], shapes: dict[str, list[int]], failure: NormalizeFailure | None) -> "LayerPlan":
        return tuple.__new__(cls, (steps, shapes, failure))


class _Refused(Exception):
    """torch refuses a concatenation of the plan (carries the failure)."""

    def __init__(self, failure: CatRefusal):
        self.failure = failure


def plan_layer(weights: dict[str, list[int]], r: int | None, n_shared: int, inkling: bool) -> LayerPlan:
    """`LoRAAdapter._normalize_weights` on one layer (names -> shapes); `weights` is not changed."""
    shapes = {name: list(shape) for name, shape in weights.items()}
    steps: list[Step] = []

    def do(step: Step) -> None:
        if isinstance(step, Cat):
            message = cat_failure([shapes[name] for name in step.inputs], step.dim)
            if message is not None:  # torch.cat raises; sglang's load stops here
                raise _Refused(CatRefusal(name=step.out, message=message))
        steps.append(step)
        step_shape(step, shapes)

    try:
        return _plan(shapes, steps, do, r, n_shared, inkling)
    except _Refused as refused:
        return LayerPlan(tuple(steps), shapes, refused.failure)


def _plan(shapes: dict[str, list[int]], steps: list[Step], do: Any, r: int | None, n_shared: int, inkling: bool) -> LayerPlan:
    """The body of `plan_layer`: each step through `do`, which applies it to `shapes`."""
    # normalize_qkv_proj (l.264): q/k/v -> qkv_proj (stacked on dim 0).
    names = list(shapes)
    if any(k in name for name in names for k in _QKV_KEYS):
        for name in names:
            if "q_proj" in name and name in shapes:
                others = [o for o in (name.replace("q_proj", "k_proj"), name.replace("q_proj", "v_proj")) if o in shapes]
                do(Cat(name.replace("q_proj", "qkv_proj"), (name, *others), 0))
    # normalize_inkling_qkvr_proj (l.218): wq_du/wk_dv/wv_dv/wr_du -> qkvr when all four exist,
    # then a qkvr lora_A of rank r is repeated 4x along the rank axis.
    for name in list(shapes):
        if "wq_du" not in name or name not in shapes:
            continue
        others = tuple(name.replace("wq_du", x) for x in ("wk_dv", "wv_dv", "wr_du"))
        if any(o not in shapes for o in others):
            continue
        do(Cat(name.replace("wq_du", "qkvr"), (name, *others), len(shapes[name]) - 2))
    for name in list(shapes):
        shape = shapes[name]
        if "qkvr" in name and "lora_A" in name and len(shape) >= 2 and shape[-2] == r:
            do(Repeat(name, tuple([1] * (len(shape) - 2) + [4, 1])))
    # _normalize_shared_expert_moe (l.317): flat Inkling shared-sink factors -> 3-D.
    if inkling and n_shared > 0:
        for name in list(shapes):
            if "shared_experts." not in name or numbered(name, "shared_experts.") is not None:
                continue
            is_down = any(k in name for k in DOWN_KEYS)
            is_gate_up = any(k in name for k in GATE_UP_KEYS)
            shape = shapes[name]
            if not (is_down or is_gate_up) or len(shape) != 2:
                continue
            if "lora_A" in name and is_down:
                rank, flat = shape
                target = (rank, n_shared, flat // n_shared)
                if numel(target) != rank * flat:
                    return LayerPlan(tuple(steps), shapes, ReshapeRefusal(name=name, shape=tuple(target), size=rank * flat, site="down_a"))
                do(Reshape(name, target, True))
            elif "lora_A" in name or is_down:
                do(Reshape(name, (1, *shape)))
            else:
                flat, rank = shape
                target = (n_shared, flat // n_shared, rank)
                if numel(target) != rank * flat:
                    return LayerPlan(tuple(steps), shapes, ReshapeRefusal(name=name, shape=tuple(target), size=rank * flat, site="gate_up_b"))
                do(Reshape(name, target))
    # _rename_expert_w_to_proj (l.372): w1/w3/w2 -> gate_proj/up_proj/down_proj (moved to the end).
    renames = []
    for name in shapes:
        for old, new in _W_RENAMES:
            if old in name:
                renames.append(Rename(name, name.replace(old, new)))
                break
    for step in renames:
        do(step)
    # normalize_gate_up_proj (l.462): gate_proj (+ up_proj, zero-filled if absent or empty) ->
    # gate_up_proj; a packed gate_up_proj lora_A is repeated twice along the rank axis.
    for name in list(shapes):
        if name not in shapes:
            continue
        if "gate_proj" in name:
            up_name = name.replace("gate_proj", "up_proj")
            gate = shapes[name]
            up = shapes.get(up_name)
            if up is None or numel(up) == 0:
                do(Zeros(up_name, name))
            do(Cat(name.replace("gate_proj", "gate_up_proj"), (name, up_name), len(gate) - 2))
        elif "gate_up_proj" in name and "lora_A" in name:
            shape = shapes[name]
            if len(shape) >= 2:
                do(Repeat(name, tuple([1] * (len(shape) - 2) + [2, 1])))
    return LayerPlan(tuple(steps), shapes, None)


def normalize_layer(weights: dict[str, list[int]], r: int | None, n_shared: int, inkling: bool) -> NormalizeFailure | None:
    """`plan_layer`'s shapes written into `weights` (in place); returns its failure, if any."""
    plan = plan_layer(weights, r, n_shared, inkling)
    weights.clear()
    weights.update(plan.shapes)
    return plan.failure


LAYER_MEMO: dict[Any, Any] = {}
# A layer's names with `layers.<N>.` written as TEMPLATE: the memo key of alike layers.
TEMPLATE = "layers.#."
# (template name, layer) -> name: the same few hundred names come back for every adapter of a
# fleet; a pure function of its key, bounded like LAYER_MEMO.
_NAMES: dict[tuple[str, int], str] = {}


def layer_name(template: str, lid: int) -> str:
    """`template` with TEMPLATE written `layers.<lid>.` (a memo entry's name in layer `lid`)."""
    key = (template, lid)
    name = _NAMES.get(key)
    if name is None:
        if len(_NAMES) >= 1 << 17:
            _NAMES.clear()
        name = _NAMES[key] = template.replace(TEMPLATE, f"layers.{lid}.")
    return name


_TEMPLATES: dict[tuple[str, int], str] = {}


def layer_template(name: str, lid: int) -> str:
    """`name` with `layers.<lid>.` written TEMPLATE (the inverse of `layer_name`), cached the same way."""
    key = (name, lid)
    template = _TEMPLATES.get(key)
    if template is None:
        if len(_TEMPLATES) >= 1 << 17:
            _TEMPLATES.clear()
        template = _TEMPLATES[key] = name.replace(f"layers.{lid}.", TEMPLATE)
    return template


def normalize_layer_shared(
    lid: int, weights: dict[str, list[int]], r: int | None, n: int, inkling: bool
) -> NormalizeFailure | None:
    """`normalize_layer`, computed once per layer *shape* (names with the layer number taken
    out, shapes, r, n): every layer of an adapter, and the layers of alike adapters, share it."""
    tag = f"layers.{lid}."
    try:
        items = tuple((name.replace(tag, TEMPLATE), tuple(shape)) for name, shape in weights.items())
        hash(items)
    except TypeError:
        return normalize_layer(weights, r, n, inkling)
    normalized, failure, _ = normalize_template(lid, items, r, n, inkling)
    weights.clear()
    weights.update(normalized)
    return failure


def normalize_template(
    lid: int, items: tuple[tuple[str, tuple[int, ...]], ...], r: int | None, n: int, inkling: bool
) -> tuple[dict[str, list[int]], NormalizeFailure | None, tuple[tuple[str, tuple[int, ...]], ...]]:
    """`normalize_layer_shared` for a layer already written as (template name, shape tuple)
    pairs (the caller templated each name once): the normalized name -> shape dict of layer
    `lid` (new lists), the failure if any, and the normalized layer as template pairs (the
    key under which the pool replay memoizes this layer)."""
    key = (items, r, n, inkling)
    memo = LAYER_MEMO.get(key)
    if memo is None:
        template = {name: list(shape) for name, shape in items}
        failure = normalize_layer(template, r, n, inkling)
        # (normalized template pairs, failure, layer -> the normalized names in that layer)
        memo = (tuple((name, tuple(shape)) for name, shape in template.items()), failure, {})
        if len(LAYER_MEMO) >= 8192:
            LAYER_MEMO.clear()
        LAYER_MEMO[key] = memo
    out_items, failure, names_by_layer = memo
    names = names_by_layer.get(lid)
    if names is None:  # at most one entry per layer number (a model's layer count)
        names = names_by_layer[lid] = tuple(layer_name(name, lid) for name, _ in out_items)
    normalized = {name: list(shape) for name, (_, shape) in zip(names, out_items)}
    if failure is not None:
        failure = replace(failure, name=layer_name(failure.name, lid))
    return normalized, failure, out_items
