"""Pool fit: what happens when the memory pool copies a PEFT adapter into a slot.

Per adapter, once the global facts are known (the pool sglang allocates from the server and
model config), this replays sglang 0.5.23's `LoRAMemoryPool.load_lora_weight_to_buffer`
(lora/mem_pool.py l.891-1384) on shapes only, for every TP rank of the shared sink:

1. every normalized layer weight must contain a pool target module
   (`get_target_module_name`, utils.py l.351-370, called without a guard at mem_pool.py l.983);
2. `shared_experts.` weights of a layer owning the sink go to the `*_shared_moe` buffers,
   numbered ones (`experts.<N>.`) as a per-expert dict, others as one packed tensor
   (l.985-1015);
3. the sink's `slice_moe_lora_{a,b}_weights` cut them for the rank (`inkling_compat.sglang.slicing`;
   a dict of per-expert tensors only gets the TP cut, l.163-223 of inkling_common/lora.py);
4. the copy into the slot (l.1146-1370): lora_A buffers of the layer, then lora_B buffers;
   with `experts_shared_outer_loras` the gate_up lora_A and down lora_B must have one expert
   (the "experts_shared_outer_loras is enabled but ..." ValueErrors), and every copied view
   must have the weight's shape (the bare assert "LoRA buffer shape ... does not match weight
   shape ...", where a rank above the pool's R shows up as a clamped buffer view).

Pool buffers per slot (spec section 3): gate_up A `[E_a, 2R, H]`, gate_up B `[n, 2F, R]`,
down A `[n, R, F]`, down B `[E_b, H, R]` with `E_a = E_b = 1` when shared-outer, else `n`.

The result is the first failure in sglang's order, or None. Where sglang's order depends on
Python set iteration (the order of the two shared buffers inside a layer), gate_up comes
before down. A layer whose slicing itself fails (the sink-slice-* rules) or that holds a
degenerate factor (0-D, 1-D, a non-3-D packed tensor in a per-expert pool) ends the replay
with no result: sglang raises something else there first.
"""

from __future__ import annotations

import re
from functools import lru_cache

from inkling_compat.sglang.plain_dataclass import dataclass, replace
from inkling_compat.sglang import slicing
from inkling_compat.sglang.adapter_loader import layer_name, layer_template, numbered
from inkling_compat.sglang.pool_shapes import BufferShapes, StartupPool

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

STOP = object()  # sglang fails here with something this module does not report
_STOP = STOP


def _cut(length: int, start: int, end: int) -> int:
    return max(0, min(end, length) - min(start, length))


@dataclass(frozen=True)
class FactorSliceFailure:
    """A shared-sink factor (`name`) the sink's slice methods reject, and what they raise."""

    name: str
    failure: slicing.SliceRefusal


def first_slice_failure(
    layers: Sequence[tuple[int, dict[str, list[int]]]],
    n: int,
    tp_size: int = 1,
    tp_rank: int = 0,
    f_local: int = 0,
) -> FactorSliceFailure | None:
    """First unnumbered shared-sink factor the sink's slice methods reject (when the loader did
    not reshape the factors), in mem_pool's order: per layer, canonical gate_up then down,
    lora_A then lora_B (l.1077-1101). The geometry is `inkling_compat.sglang.slicing`."""
    if n <= 0:
        return None
    for _, weights in layers:
        packed = {name: shape for name, shape in weights.items() if "shared_experts." in name and numbered(name, "experts.") is None}
        for module, target in (("gate_up_proj", slicing.GATE_UP), ("down_proj", slicing.DOWN)):
            for factor in ("a", "b"):
                for name, shape in packed.items():
                    if module not in name or ("lora_A" in name) != (factor == "a"):
                        continue
                    failure = slicing.slice_failure(factor, shape, target, n, tp_size, tp_rank, f_local)
                    if failure is not None:
                        return FactorSliceFailure(name=name, failure=failure)
    return None


def expert_id(name: str) -> int | None:
    """The expert of a per-expert shared factor (`experts.<N>.`, l.995-1006), else None."""
    digits = numbered(name, "experts.")
    return int(digits) if digits is not None else None


SITES = ("gate_up_a", "gate_up_b", "down_a", "down_b")


def route_shared(weights: dict[str, Any], targets: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """mem_pool l.982-1015: a layer's `shared_experts.` weights routed to the sink's four
    buffers: per site `None`, one packed weight, or `{expert: weight}` for numbered ones (a later
    packed weight replaces them, a later numbered one replaces a packed one, as the dict
    assignments there do). `weights` maps names to anything (shapes here, tensors in the
    runtime); returns (routed, names) with the same structure, names instead of weights."""
    routed: dict[str, Any] = dict.fromkeys(SITES)
    names: dict[str, Any] = {}
    for name, weight in weights.items():
        if "shared_experts." not in name:
            continue
        module = target_module(name, list(targets))
        if module not in ("gate_up_proj", "down_proj"):
            continue
        site = f"{module[:-5]}_{'a' if 'lora_A' in name else 'b'}"
        expert = expert_id(name)
        if expert is not None:
            if not isinstance(routed[site], dict):
                routed[site] = {}
                names[site] = {}
            routed[site][expert] = weight
            names[site][expert] = name
        else:
            routed[site] = weight
            names[site] = name
    return routed, names


def slice_site(site: str, weight: Any, n: int, tp: int, rank: int, f_local: int) -> Any:
    """What the sink's `slice_moe_lora_{a,b}_weights` hand to the copy for one routed weight
    (a shape, or `{expert: shape}`) on TP rank `rank`; `STOP` where they raise (the sink-slice-*
    rules report that)."""
    if weight is None:
        return None
    factor = site[-1]
    target = slicing.GATE_UP if site.startswith("gate_up") else slicing.DOWN
    if isinstance(weight, dict):
        # Per-expert dicts skip the 2-D step; only the TP cut applies (l.165-169, l.200-204).
        out = {}
        for eid, shape in weight.items():
            cut = slicing.slice_expert(factor, shape, target, tp, rank, f_local)
            if cut.failure is not None or cut.shape is None:
                return STOP
            out[eid] = cut.shape
        return out
    result = slicing.slice_factor(factor, weight, target, n, tp, rank, f_local)
    if result.failure is not None or result.shape is None:
        return STOP
    return result.shape


def rank_copies(c: int, r: int, max_r: int) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """The lora_A copies into a slot (l.1251-1262): for each of the `c` stacked slices (2 for
    gate_up, 1 for down), buffer rows `[ci*R, ci*R + r)` get weight rows `[ci*r, (ci+1)*r)`;
    as ((buffer start, stop), (weight start, stop)) pairs. lora_B fills columns `[0, r)`."""
    return tuple(((ci * max_r, ci * max_r + r), (ci * r, (ci + 1) * r)) for ci in range(c))


def rank_classes(routed: dict[str, Any], n: int, tp: int, f_local: int) -> list[int]:
    """The TP ranks (ascending, each the smallest of its class) that stand for all of
    0..tp-1 when the sink's slice methods cut a layer's routed weights (`route_shared`).

    A rank `p` reaches the shapes only through the cuts `[p*F, p*F + F)` (and, for gate/up B,
    `[L//2 + p*F, ...)`) clamped to an axis of length `L` (`slicing._down_a_cut`,
    `_gate_up_b_cut`): their length is `F` while the cut lies inside the axis, shorter at the
    one rank where it crosses the end, 0 after. So every rank below a breakpoint
    `L//F`, `L//F + 1` (and the same for `L - L//2`) gives the same shapes; the axis lengths
    are those of the weights and, after `_to_3d`'s reshape, their quotients by `n`. Extra
    ranks are harmless (each is replayed as it is)."""
    if tp <= 1 or f_local <= 0:
        return [0]
    lengths: set[int] = set()
    for weight in routed.values():
        shapes = weight.values() if isinstance(weight, dict) else ([weight] if weight is not None else [])
        for shape in shapes:
            for length in shape:
                lengths.add(length)
                if n > 0:
                    lengths.add(length // n)
    points = {0}
    for length in lengths:
        for axis in (length, length - length // 2):
            points.add(axis // f_local)
            points.add(axis // f_local + 1)
    return sorted(p for p in points if 0 <= p < tp)


def target_module(name: str, targets: list[str]) -> str | None:
    """utils.get_target_module_name: the longest target contained in the name."""
    best = None
    for target in targets:
        if target in name and (best is None or len(target) > len(best)):
            best = target
    return best


@lru_cache(maxsize=64)
def _any_target(targets: tuple[str, ...]) -> Any:
    """A regex that finds any of `targets` in a name (`any(t in name for t in targets)` in one
    call per name; the literal alternatives are escaped, so it is plain substring search)."""
    return re.compile("|".join(re.escape(t) for t in targets))


# Substring tests (names x targets) a process makes before it searches with the regex: its
# compile (~0.1 ms) pays back over a fleet's thousands of names, not over one adapter's few.
_PLAIN_TESTS = [20_000]


def unmatched_names(names: Sequence[str], targets: Sequence[str]) -> list[str]:
    """The names that contain no target module (mem_pool l.930-935), in order."""
    if not targets:
        return list(names)
    tests = len(names) * len(targets)
    if tests <= _PLAIN_TESTS[0]:
        _PLAIN_TESTS[0] -= tests
        return [n for n in names if not any(t in n for t in targets)]
    search = _any_target(tuple(targets)).search
    return [n for n in names if search(n) is None]


@dataclass(frozen=True)
class AdapterWeights:
    """What the copy reads of one PEFT adapter once LoRAAdapter normalized it: every weight
    name (layers and embeddings, sorted), the layers as (layer, name -> shape) in layer order,
    each layer as (template name, shape) pairs where the caller has them (the memo key of
    alike layers), r, and whether a tensor names a layer past the model's last."""

    names: tuple[str, ...]
    layers: tuple[tuple[int, dict[str, list[int]]], ...]
    templates: Mapping[int, Any]
    r: int | None
    layer_out_of_range: bool = False


@dataclass(frozen=True)
class LoadSetup:
    """What the copy reads of the server, the model and the sink, the same for every adapter:
    the pool's target modules, LoRA attached to the sink, F, n, the routed experts, the first
    MoE layer (dense_mlp_idx) and the TP size."""

    targets: tuple[str, ...]
    lora_attached: bool
    f_local: int
    n_shared: int
    n_routed: int
    first_moe: int
    tp_size: int


@dataclass(frozen=True)
class UnmatchedTarget:
    """A layer weight get_target_module_name finds no target for: its name, layer, and the
    pool's target modules (sorted: sglang prints them as a set, whose order varies per process)."""

    name: str
    layer: int
    targets: tuple[str, ...]


if TYPE_CHECKING:  # (annotations only: a Literal alias costs 20-30 us to build at import)
    from typing import Literal

    CopyKind = Literal["dict_entries", "expert_dim", "unexpected_format", "expert_out_of_range", "shape_mismatch", "not_expert_weights"]


@dataclass(frozen=True)
class CopyFailure:
    """A failure copying one routed weight into its slot: `kind`, the shared-outer buffer
    (`module`) and the value it refuses, the shapes compared (`buffer` view, `weight`), the
    expert, and where: layer, TP rank, site and the weight's name."""

    kind: CopyKind
    module: str | None = None
    value: int | None = None
    weight: tuple[int, ...] | None = None
    expert: int | None = None
    buffer: tuple[int, ...] | None = None
    layer: int | None = None
    tp_rank: int | None = None
    site: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class PartialCopy:
    """A shared-outer (one-expert) factor copied into a per-expert pool: only expert 0 of the
    pool's `experts` is filled."""

    layer: int
    site: str
    name: str
    experts: int


@dataclass(frozen=True)
class IndexedShared:
    """A per-expert shared-expert factor (`shared_experts.<N>.`, not 3-D) on a layer with no
    shared MoE LoRA module: its name and layer."""

    name: str
    layer: int


@dataclass(frozen=True)
class LoadReplay:
    """One adapter's load_lora_weight_to_buffer: the weights with no target module, the first
    one the copy loop stops on, the first copy failure, a partial copy, and an indexed shared
    factor on a layer without the sink's module."""

    unmatched_weight_names: tuple[str, ...] = ()
    target_failure: UnmatchedTarget | None = None
    pool_fit: CopyFailure | None = None
    pool_partial: PartialCopy | None = None
    indexed_shared_without_sink: IndexedShared | None = None


_NO_REPLAY = LoadReplay()


def load_setup(targets: Sequence[str], lora_attached: bool, f_local: int, model: Any, tp_size: int) -> LoadSetup:
    """The `LoadSetup` of a model config (n, routed experts, first MoE layer) and the server's TP size."""
    return LoadSetup(
        targets=tuple(targets),
        lora_attached=lora_attached,
        f_local=f_local,
        n_shared=model.n_shared_experts,
        n_routed=model.n_routed_experts,
        first_moe=max(int(model.dense_mlp_idx or 0), 0),
        tp_size=max(int(tp_size or 1), 1),
    )


def replay_load(weights: AdapterWeights | None, setup: LoadSetup, pool: StartupPool | None) -> LoadReplay:
    """load_lora_weight_to_buffer for one adapter (`weights` None: the adapter failed to load,
    in LoRAAdapter's normalization, so no pool copy follows). `pool` is the start-up pool
    (`pool_shapes.startup_pool`, computed once per check by the caller)."""
    if weights is None:
        return _NO_REPLAY
    targets = list(setup.targets)
    # mem_pool l.930-935: weights (layer and embedding, normalized) containing no target module.
    unmatched_names_ = tuple(unmatched_names(weights.names, targets))
    layers = weights.layers
    if not layers:
        return LoadReplay(unmatched_weight_names=unmatched_names_)
    # get_target_module_name finds no target exactly in the unmatched names: the first of
    # them in layer order is where the copy loop raises.
    target_failure = None
    if unmatched_names_:
        unmatched = set(unmatched_names_)
        target_failure = next(
            (UnmatchedTarget(name=name, layer=lid, targets=tuple(sorted(targets))) for lid, layer in layers for name in layer if name in unmatched),
            None,
        )
    indexed = indexed_shared_without_sink(layers, setup, weights, target_failure)
    if indexed is not None:
        # It raises before any later layer's target lookup or copy.
        if target_failure is not None and target_failure.layer > indexed.layer:
            target_failure = None
        return LoadReplay(unmatched_weight_names=unmatched_names_, target_failure=target_failure, indexed_shared_without_sink=indexed)
    r = weights.r
    if (
        pool is None
        or pool.allocation is not None  # start-up failed allocating the pool: nothing is copied
        or not setup.lora_attached
        or not isinstance(r, int)
        or r <= 0
        or setup.n_routed <= 0
        or weights.layer_out_of_range
    ):
        return LoadReplay(unmatched_weight_names=unmatched_names_, target_failure=target_failure)
    fit = _Fit(pool=pool.buffers, r=r, n=max(setup.n_shared, 0), shared_outer=pool.shared_outer, tp=setup.tp_size, f_local=setup.f_local)
    pool_fit = None
    for lid, layer in layers:
        if target_failure is not None and lid >= target_failure.layer:
            break  # the unmatched name raises before this layer's copies
        if lid < setup.first_moe:
            continue  # dense-MLP layer: no sink, its shared-buffer weights are never copied
        result = fit.layer(lid, layer, targets, weights.templates.get(lid))
        if result is _STOP:
            break
        if result is not None:
            pool_fit = result
            break
    return LoadReplay(unmatched_weight_names=unmatched_names_, target_failure=target_failure, pool_fit=pool_fit, pool_partial=fit.partial)


def indexed_shared_without_sink(
    layers: Sequence[tuple[int, dict[str, list[int]]]], setup: LoadSetup, weights: AdapterWeights, target_failure: UnmatchedTarget | None
) -> IndexedShared | None:
    """mem_pool l.985-1020: a per-expert shared factor (`shared_experts.<N>.`, not 3-D) on a
    layer whose modules hold no shared MoE LoRA module raises "Cannot load LoRA weight ...: layer
    ... has no matching target for indexed shared-expert weights". With LoRA on the batch-dense
    sink, that module (is_shared_fused_moe once initialize_lora ran, inkling_common/lora.py
    l.38) is on every MoE layer and on no dense one (layers below dense_mlp_idx). Only that
    case is modelled (None otherwise); the first such weight in sglang's order (layers in order,
    a layer's weights in the adapter's order) unless get_target_module_name raised before it."""
    if not setup.lora_attached or weights.layer_out_of_range:
        return None
    for lid, layer in sorted(layers, key=lambda item: item[0]):
        if lid >= setup.first_moe:
            break
        for name, shape in layer.items():
            if target_failure is not None and (lid, name) == (target_failure.layer, target_failure.name):
                return None
            if "shared_experts." in name and numbered(name, "experts.") is not None and len(shape) != 3:
                return IndexedShared(name=name, layer=lid)
        if target_failure is not None and lid >= target_failure.layer:
            return None
    return None


class _Fit:
    def __init__(self, pool: BufferShapes, r: int, n: int, shared_outer: bool, tp: int, f_local: int):
        self.r = r
        self.n = n
        self.shared_outer = shared_outer
        self.tp = tp
        self.f_local = f_local
        # Per-slot views of the four buffers: [experts, rows, cols].
        self.slot = {
            "gate_up_a": list(pool.gate_up_lora_a[1:]),
            "gate_up_b": list(pool.gate_up_lora_b[1:]),
            "down_a": list(pool.down_lora_a[1:]),
            "down_b": list(pool.down_lora_b[1:]),
        }
        self.max_r = pool.gate_up_lora_b[-1]
        self.partial: PartialCopy | None = None  # a shared-outer factor in a per-expert pool
        self._memo: dict[Any, Any] = {}
        self._layer = 0
        self._names: dict[str, Any] = {}

    def layer(self, lid: int, weights: dict[str, list[int]], targets: list[str], template: Any = None) -> Any:
        """The first failure copying this layer (or _STOP / None), computed once per layer
        shape: layers whose weights differ only in the layer number give the same answer.
        `template`: `weights` as (template name, shape tuple) pairs, if the caller has them."""
        if template is None:
            template = tuple((layer_template(name, lid), tuple(shape)) for name, shape in weights.items())
        key = (template, tuple(targets))
        memo = self._memo.get(key)
        if memo is None:
            template = {name: list(shape) for name, shape in key[0]}
            partial_before = self.partial
            self.partial = None
            result = self._layer_uncached(-1, template, targets)
            memo = self._memo[key] = (result, self.partial)
            self.partial = partial_before
        result, partial = memo
        if self.partial is None and partial is not None:
            self.partial = replace(partial, layer=lid, name=layer_name(partial.name, lid))
        if isinstance(result, CopyFailure):
            result = replace(result, layer=lid, name=layer_name(result.name or "", lid))
        return result

    def _layer_uncached(self, lid: int, weights: dict[str, list[int]], targets: list[str], every_rank: bool = False) -> Any:
        """The layer's first failure over TP ranks 0..tp-1 in order. Only one rank per class
        of ranks that cut every weight to the same shapes is replayed (`rank_classes`; the
        copy reads shapes only), so the work does not grow with the TP size; `every_rank`
        replays them all (the tests compare both)."""
        routed, names = route_shared(weights, targets)
        if all(v is None for v in routed.values()):
            return None
        self._layer, self._names = lid, names
        ranks = range(self.tp) if every_rank else rank_classes(routed, self.n, self.tp, self.f_local)
        for rank in ranks:
            sliced = {}
            for site, weight in routed.items():
                cut = self._slice(site, weight, rank)
                if cut is _STOP:
                    return _STOP
                sliced[site] = cut
            # A buffers of the layer, then B buffers (mem_pool l.1146 and l.1275).
            for site in ("gate_up_a", "down_a", "gate_up_b", "down_b"):
                failure = self._copy(site, sliced[site])
                if failure is _STOP:
                    return _STOP
                if failure is not None:
                    expert = failure.expert
                    name = names[site].get(expert, next(iter(names[site].values()))) if isinstance(names[site], dict) else names[site]
                    return replace(failure, layer=lid, tp_rank=rank, site=site, name=name)
        return None

    def _slice(self, site: str, weight: Any, rank: int) -> Any:
        return slice_site(site, weight, self.n, self.tp, rank, self.f_local)

    def _experts(self, weight: Any, experts_in_pool: int) -> Any:
        """_iter_local_expert_weights (shared buffers: not localized): (eid, shape) pairs.

        A packed 3-D weight yields `weight[0]` experts of one shape, and the copy checks each
        the same way except for `eid >= experts_in_pool`: expert 0 and the first expert past
        the pool stand for them all, so a legal zero-byte `[2**62, 0, 1]` costs two checks,
        not a list of 2**62 pairs."""
        if isinstance(weight, dict):
            return list(weight.items())
        if len(weight) == 3:
            shape = weight[1:]
            return [(i, shape) for i in sorted({0, max(experts_in_pool, 0)}) if i < weight[0]]
        # l.404: a packed shared factor of another rank than 3 (the sink's slicing passes it on).
        return CopyFailure(kind="not_expert_weights", weight=tuple(weight))

    def _outer(self, site: str, weight: Any) -> Any:
        """The one shared-outer expert of gate_up A / down B (l.1164-1201, l.1291-1340)."""
        module = "gate_up_proj_moe lora_A" if site == "gate_up_a" else "down_proj_moe lora_B"
        if isinstance(weight, dict):
            if len(weight) != 1:
                return CopyFailure(kind="dict_entries", module=module, value=len(weight))
            return next(iter(weight.items()))
        if len(weight) == 3:
            if weight[0] != 1:
                return CopyFailure(kind="expert_dim", module=module, value=weight[0])
            return (0, weight[1:])
        return CopyFailure(kind="unexpected_format", module=module, weight=tuple(weight))

    def _copy(self, site: str, weight: Any) -> Any:
        if weight is None or (isinstance(weight, dict) and not weight):
            return None
        experts_in_pool, rows, cols = self.slot[site]
        r, max_r = self.r, self.max_r
        is_a = site.endswith("_a")
        c = 2 if site == "gate_up_a" else 1
        special = self.shared_outer and site in ("gate_up_a", "down_b")
        if special:
            outer = self._outer(site, weight)
            if isinstance(outer, CopyFailure):
                return outer
            pairs = [outer]
        else:
            pairs = self._experts(weight, experts_in_pool)
            if isinstance(pairs, CopyFailure):
                return pairs
            if (
                self.partial is None
                and site in ("gate_up_a", "down_b")
                and not isinstance(weight, dict)
                and weight[0] == 1
                and experts_in_pool > 1
            ):
                # _iter_local_expert_weights yields expert 0 only; experts 1.. stay zero.
                self.partial = PartialCopy(layer=self._layer, site=site, name=self._names[site], experts=experts_in_pool)
        for eid, shape in pairs:
            if not special and eid >= experts_in_pool:
                return CopyFailure(kind="expert_out_of_range", expert=eid, value=experts_in_pool)
            if is_a:
                if special:
                    # The representative check: buffer[slot, 0, :r*c, :] against the weight.
                    view = [_cut(rows, 0, r * c), cols]
                    if list(shape) != view:
                        return CopyFailure(kind="shape_mismatch", buffer=tuple(view), weight=tuple(shape), expert=eid)
                if len(shape) < 2:
                    return _STOP  # IndexError: too many indices
                for (d0, d1), (s0, s1) in rank_copies(c, r, max_r):
                    view = [_cut(rows, d0, d1), cols]
                    part = [_cut(shape[0], s0, s1)] + list(shape[1:])
                    if part != view:
                        return CopyFailure(kind="shape_mismatch", buffer=tuple(view), weight=tuple(part), expert=eid)
            else:
                view = [rows, _cut(cols, 0, r)]
                if list(shape) != view:
                    return CopyFailure(kind="shape_mismatch", buffer=tuple(view), weight=tuple(shape), expert=eid)
        return None
