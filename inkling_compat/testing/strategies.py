"""Hypothesis strategies: consistent Inkling LoRA setups and single-fault mutations of them.

For fuzzing `check()` and your own adapter converters. Needs `hypothesis` (the `test`
extra); the checker itself never imports this module.

    from hypothesis import given
    from inkling_compat import check
    from inkling_compat.testing.strategies import sink_setups, faulty_sink_setups

    @given(sink_setups())
    def test_my_converter_accepts(setup):
        assert check(**setup.arguments()).ok

A `SinkSetup` holds the geometry (n, H, I, tp, S, R, outer layout, sink class) and renders
the server config, model config and pool manifest sglang would see on one TP rank.

What is here (docs/strategies.md has examples):

* configs: `sink_setups()`, `server_configs()`, `model_configs()`;
* pool manifests: `SinkSetup.pool_shapes()`, `pool_manifest()`, `pool_shape_variants()`
  (exact, consistent-but-other-flags, and boundary mutations), `single_fault_pools()`,
  `slot_updates()`, `pool_is_consistent()`;
* PEFT manifests: `peft_tensors()`, `peft_manifest()`, `peft_setups()` (a `PeftCase`);
* single faults with the rule that must report them: `SINK_FAULTS` / `faulty_sink_setups()`
  (config and pool faults), `PEFT_FAULTS` / `faulty_peft_setups()` (adapter faults).

Every strategy is built from shared primitive strategies (no strategy objects created per
draw), so 10^5 examples stay cheap.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Sequence

from hypothesis import strategies as st


@dataclass(frozen=True)
class SinkSetup:
    n: int  # n_shared_experts
    hidden: int  # H
    intermediate: int  # I (full, before TP)
    tp: int
    slots: int  # S = max_loras_per_batch
    rank: int  # R = max_lora_rank
    shared_outer: bool
    sink_class: str  # "legacy" | "v2"
    legacy_backend: str = "triton"

    @property
    def f_local(self) -> int:
        return self.intermediate // self.tp

    def config(self) -> dict[str, Any]:
        return {
            "enable_lora": True,
            "lora_backend": "triton_v2" if self.sink_class == "v2" else self.legacy_backend,
            "max_loras_per_batch": self.slots,
            "max_lora_rank": self.rank,
            "lora_target_modules": ["gate_up_proj", "down_proj"],
            "experts_shared_outer_loras": self.shared_outer,
            "tp_size": self.tp,
            "dtype": "bfloat16",
            # triton_v2 runs the routed experts' LoRA on a lora_* MoE runner (layers.py l.1090).
            "moe_runner_backend": "lora_triton" if self.sink_class == "v2" else "auto",
        }

    def model(self) -> dict[str, Any]:
        return {
            "architectures": ["InklingForConditionalGeneration"],
            "model_type": "inkling",
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "n_shared_experts": self.n,
            "shared_expert_sink": True,
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "num_attention_heads": 16,
            "num_key_value_heads": 4,
            "head_dim": 128,
        }

    def pool_shapes(self) -> dict[str, list[int]]:
        outer = 1 if self.shared_outer else self.n
        s, n, r, h, f = self.slots, self.n, self.rank, self.hidden, self.f_local
        return {
            "gate_up_lora_a": [s, outer, 2 * r, h],
            "gate_up_lora_b": [s, n, 2 * f, r],
            "down_lora_a": [s, n, r, f],
            "down_lora_b": [s, outer, h, r],
        }

    def adapter(self, shapes: dict[str, list[int]] | None = None) -> dict[str, Any]:
        shapes = shapes or self.pool_shapes()
        return {"name": "generated", "pool": {k: {"shape": list(v), "dtype": "bfloat16"} for k, v in shapes.items()}}

    def arguments(self) -> dict[str, Any]:
        """Keyword arguments for `check()`."""
        return {"config": self.config(), "model": self.model(), "adapter": self.adapter()}


@lru_cache(maxsize=None)
def _ints(low: int, high: int) -> Any:
    """One shared `st.integers(low, high)` per range: hypothesis caches what it computes about
    a strategy object, so reusing them keeps drawing cheap (fuzzing runs 10^5 examples)."""
    return st.integers(low, high)


def _pick(draw: Any, options: Sequence[Any]) -> Any:
    """`draw(st.sampled_from(options))` without building a new strategy per draw."""
    options = tuple(options)
    return options[draw(_ints(0, len(options) - 1))]


_BOOLS = st.booleans()
# (tp, sink class, shared outer, n, single-slot legacy backend), in shrinking order.
_SETUP_CHOICES = tuple(
    (tp, cls, outer, n, backend)
    for tp in (1, 2, 4)
    for cls in ("legacy", "v2")
    for outer in (False, True)
    for n in (1, 2, 3, 4)
    for backend in ("triton", "csgmv", "torch_native")
)


@st.composite
def sink_setups(draw: Any, sink_class: str | None = None, max_slots: int = 16) -> SinkSetup:
    """A consistent setup that sglang 0.5.23 accepts (and so must `check()`).

    n in 1..4, H a multiple of 64 up to 7168, I a multiple of 16*tp, tp in {1, 2, 4},
    S in 1..`max_slots`, R in 1..64, either outer layout, either sink class (or the one given).
    """
    # The categorical fields in one draw (fewer draws per example; each shrinks to the first option).
    tp, cls, shared_outer, n, backend = _SETUP_CHOICES[draw(_ints(0, len(_SETUP_CHOICES) - 1))]
    slots = draw(_ints(1, max_slots))
    return SinkSetup(
        n=n,
        hidden=64 * draw(_ints(1, 112)),
        intermediate=tp * 16 * draw(_ints(1, 64)),
        tp=tp,
        slots=slots,
        rank=draw(_ints(1, 64)),
        shared_outer=shared_outer,
        sink_class=sink_class or cls,
        legacy_backend="triton" if slots > 1 else backend,
    )


@dataclass(frozen=True)
class SinkFault:
    """One injected fault and the rule that must report it for each sink class."""

    name: str
    expected: dict[str, str]  # sink class -> rule id
    applies: Callable[[SinkSetup], bool]
    mutate: Callable[[SinkSetup, dict[str, Any]], dict[str, Any]]
    # Rules reported before it for some geometries: sglang fails earlier, inside torch.
    preceded_by: Callable[[SinkSetup], list[str]] = lambda setup: []

    def rule_ids(self, setup: SinkSetup) -> list[str]:
        """Every rule `check()` reports for this fault on `setup`, in report order."""
        return [*self.preceded_by(setup), self.expected[setup.sink_class]]


def _set_shape(buffer: str, transform: Callable[[SinkSetup, list[int]], list[int]]):
    def mutate(setup: SinkSetup, args: dict[str, Any]) -> dict[str, Any]:
        args = copy.deepcopy(args)
        spec = args["adapter"]["pool"][buffer]
        spec["shape"] = transform(setup, list(spec["shape"]))
        return args

    return mutate


def _with_dim(index: int, value: Callable[[SinkSetup, list[int]], int]):
    def transform(setup: SinkSetup, shape: list[int]) -> list[int]:
        shape[index] = value(setup, shape)
        return shape

    return transform


def _config(**changes: Any):
    def mutate(setup: SinkSetup, args: dict[str, Any]) -> dict[str, Any]:
        args = copy.deepcopy(args)
        args["config"].update(changes)
        return args

    return mutate


def _other_outer(setup: SinkSetup) -> int:
    return setup.n + 1 if setup.n + 1 != 1 else setup.n + 2


def _flip_outer(setup: SinkSetup, shape: list[int]) -> int:
    return setup.n if shape[1] == 1 else 1


def _v2_shared(setup: SinkSetup) -> bool:
    """The V2 sink takes its shared-outer path (outer axis 1, which includes n = 1)."""
    return setup.sink_class == "v2" and (setup.shared_outer or setup.n == 1)


def _bind_crash_if(condition: Callable[[SinkSetup], bool]) -> Callable[[SinkSetup], list[str]]:
    return lambda setup: ["sink-pool-bind-crash"] if condition(setup) else []


SINK_FAULTS: tuple[SinkFault, ...] = (
    SinkFault(
        "csgmv backend with several slots",
        {"legacy": "sink-lora-multislot-needs-triton"},
        lambda s: s.sink_class == "legacy" and s.slots > 1,
        _config(lora_backend="csgmv"),
    ),
    SinkFault(
        "gate-up A without its slot axis",
        {"legacy": "sink-pool-not-4d", "v2": "sink-v2-pool-unpack"},
        lambda s: True,
        _set_shape("gate_up_lora_a", lambda s, shape: shape[1:]),
    ),
    SinkFault(
        "gate-up B with an extra axis",
        {"legacy": "sink-pool-not-4d", "v2": "sink-v2-pool-unpack"},
        lambda s: True,
        _set_shape("gate_up_lora_b", lambda s, shape: shape[:1] + [1] + shape[1:]),
    ),
    SinkFault(
        "gate-up A outer dimension neither 1 nor n",
        {"legacy": "sink-pool-outer-dim", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_a", _with_dim(1, lambda s, shape: _other_outer(s))),
    ),
    SinkFault(
        "down B outer layout differs from gate-up A",
        {"legacy": "sink-pool-outer-layout-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: s.n > 1,
        _set_shape("down_lora_b", _with_dim(1, _flip_outer)),
    ),
    SinkFault(
        "gate-up B expert count off by one",
        {"legacy": "sink-pool-expert-count", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_b", _with_dim(1, lambda s, shape: s.n + 1)),
    ),
    SinkFault(
        "down A expert count off by one",
        {"legacy": "sink-pool-expert-count", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(1, lambda s, shape: s.n + 1)),
    ),
    SinkFault(
        "gate-up A rank axis R instead of 2R",
        {"legacy": "sink-pool-rank-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_a", _with_dim(2, lambda s, shape: s.rank)),
    ),
    SinkFault(
        "down B rank off by one",
        {"legacy": "sink-pool-rank-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("down_lora_b", _with_dim(3, lambda s, shape: s.rank + 1)),
    ),
    SinkFault(
        "down B hidden size off by one",
        {"legacy": "sink-pool-hidden-mismatch", "v2": "sink-pool-hidden-mismatch"},
        lambda s: True,
        _set_shape("down_lora_b", _with_dim(2, lambda s, shape: s.hidden + 1)),
    ),
    SinkFault(
        "down A intermediate width off by one",
        {"legacy": "sink-pool-intermediate-mismatch", "v2": "sink-pool-intermediate-mismatch"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(3, lambda s, shape: s.f_local + 1)),
        # V2 (shared outer) views its _down_cat [S, R, n*F] onto down A: torch fails at binding.
        _bind_crash_if(_v2_shared),
    ),
    SinkFault(
        "down A slot count off by one",
        {"legacy": "sink-pool-slot-count-mismatch", "v2": "sink-pool-slot-count-mismatch"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(0, lambda s, shape: s.slots + 1)),
        # V2 views down A onto _down_cat (shared outer), or as [S, n*R, -1] (per expert:
        # fails unless F is a multiple of S).
        _bind_crash_if(lambda s: s.sink_class == "v2" and (_v2_shared(s) or s.f_local % s.slots != 0)),
    ),
    SinkFault(
        "pool built for another --max-lora-rank",
        {"legacy": "sink-pool-differs-from-config", "v2": "sink-pool-differs-from-config"},
        lambda s: True,
        lambda s, args: dict(args, adapter=s.adapter(replace(s, rank=s.rank + 1).pool_shapes())),
    ),
)


@st.composite
def faulty_sink_setups(draw: Any) -> tuple[SinkSetup, SinkFault, dict[str, Any]]:
    """(setup, fault, check() arguments with exactly that fault injected)."""
    setup = draw(sink_setups())
    fault = _pick(draw, [f for f in SINK_FAULTS if setup.sink_class in f.expected and f.applies(setup)])
    return setup, fault, fault.mutate(setup, setup.arguments())


# ---------------------------------------------------------------------------------------------
# Server and model configs
# ---------------------------------------------------------------------------------------------


def server_configs(sink_class: str | None = None) -> Any:
    """Server config dicts (sglang argument names) of consistent shared-sink LoRA setups."""
    return sink_setups(sink_class).map(lambda setup: setup.config())


def model_configs() -> Any:
    """Inkling `config.json` dicts with a dense shared-expert sink (n, H, I vary)."""
    return sink_setups().map(lambda setup: setup.model())


# ---------------------------------------------------------------------------------------------
# Pool shapes: the exact pool, consistent pools of another geometry, boundary mutations
# ---------------------------------------------------------------------------------------------

POOL_BUFFERS: tuple[str, ...] = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
PoolShapes = dict[str, list[int]]


def pool_list(shapes: PoolShapes) -> list[list[int]]:
    """The four shapes in set_lora_info's argument order."""
    return [list(shapes[name]) for name in POOL_BUFFERS]


def pool_manifest(
    shapes: PoolShapes,
    *,
    rebind: PoolShapes | None = None,
    updated_slots: list[int] | None = None,
    name: str = "generated",
) -> dict[str, Any]:
    """A pool-form adapter manifest (dict form accepted by `check()`)."""
    manifest: dict[str, Any] = {
        "name": name,
        "pool": {k: {"shape": list(shapes[k]), "dtype": "bfloat16"} for k in POOL_BUFFERS},
    }
    if rebind is not None:
        manifest["rebind"] = {k: {"shape": list(rebind[k]), "dtype": "bfloat16"} for k in POOL_BUFFERS}
    if updated_slots is not None:
        manifest["updated_slots"] = list(updated_slots)
    return manifest


def pool_is_consistent(setup: SinkSetup, shapes: PoolShapes) -> bool:
    """True when `shapes` is a pool that *some* server config could build for this model and
    TP size: four 4-D buffers with one slot count S >= 1, one rank R >= 1, one outer layout
    (1 or n), n on the inner factors, the model's H and the per-rank F. S and R may differ
    from the setup's flags (that is a pool/config mismatch, not an inconsistency)."""
    ga, gb, da, db = pool_list(shapes)
    if any(len(s) != 4 for s in (ga, gb, da, db)):
        return False
    s, r, n, h, f = gb[0], gb[3], setup.n, setup.hidden, setup.f_local
    return (
        s >= 1
        and r >= 1
        and ga[0] == da[0] == db[0] == s
        and ga[1] in (1, n)
        and db[1] == ga[1]
        and gb[1] == da[1] == n
        and ga[2] == 2 * r
        and da[2] == r
        and db[3] == r
        and ga[3] == db[2] == h
        and gb[2] == 2 * f
        and da[3] == f
    )


def _neighbours(value: int, setup: SinkSetup) -> list[int]:
    """Boundary values for one axis: off by one, 0/1, n and n+1, doubled, halved."""
    candidates = [value - 1, value + 1, 0, 1, 2, setup.n, setup.n + 1, 2 * value, value // 2, value + setup.n]
    return sorted({c for c in candidates if c >= 0 and c != value})


def _axis_change(draw: Any, setup: SinkSetup, shapes: PoolShapes, buffer: str) -> tuple[str, PoolShapes]:
    shape = list(shapes[buffer])
    if not shape:
        return "no axis to change", shapes
    axis = draw(_ints(0, len(shape) - 1))
    shape[axis] = _pick(draw, _neighbours(shape[axis], setup))
    return f"{buffer} axis {axis} -> {shape[axis]}", {**shapes, buffer: shape}


def _swap_axes(draw: Any, setup: SinkSetup, shapes: PoolShapes, buffer: str) -> tuple[str, PoolShapes]:
    shape = list(shapes[buffer])
    if len(shape) < 2:
        return "no axes to swap", shapes
    i = draw(_ints(0, len(shape) - 2))
    j = draw(_ints(i + 1, len(shape) - 1))
    shape[i], shape[j] = shape[j], shape[i]
    return f"{buffer} axes {i}<->{j} swapped", {**shapes, buffer: shape}


def _change_ndim(draw: Any, setup: SinkSetup, shapes: PoolShapes, buffer: str) -> tuple[str, PoolShapes]:
    shape = list(shapes[buffer])
    how = _pick(draw, ("drop", "insert", "flatten", "merge"))
    if how == "drop" and shape:
        axis = draw(_ints(0, len(shape) - 1))
        del shape[axis]
    elif how == "insert":
        axis = draw(_ints(0, len(shape)))
        shape.insert(axis, _pick(draw, (1, 2, setup.n)))
    elif how == "flatten" and len(shape) >= 2:
        shape = [math.prod(shape[:-1]), shape[-1]]
    elif how == "merge" and len(shape) >= 2:
        axis = draw(_ints(0, len(shape) - 2))
        shape[axis : axis + 2] = [shape[axis] * shape[axis + 1]]
    return f"{buffer} {how} -> {len(shape)}-D", {**shapes, buffer: shape}


def _mix_rank(draw: Any, setup: SinkSetup, shapes: PoolShapes, buffer: str) -> tuple[str, PoolShapes]:
    """One buffer built for another rank R' (the other three keep R)."""
    other = _pick(draw, sorted({max(setup.rank - 1, 1), setup.rank + 1, 2 * setup.rank, 1} - {setup.rank}) or [setup.rank + 1])
    donor = replace(setup, rank=other).pool_shapes()
    shape = donor[buffer]
    if len(shapes[buffer]) == 4:
        shape = list(shapes[buffer])
        axis = {"gate_up_lora_a": 2, "gate_up_lora_b": 3, "down_lora_a": 2, "down_lora_b": 3}[buffer]
        shape[axis] = donor[buffer][axis]
    return f"{buffer} at rank {other}", {**shapes, buffer: shape}


def _consistent_variants(setup: SinkSetup) -> list[tuple[str, SinkSetup]]:
    """Setups whose pool is consistent but built for other flags or another model/TP size."""
    variants = [
        ("slots + 1", replace(setup, slots=setup.slots + 1)),
        ("rank + 1", replace(setup, rank=setup.rank + 1)),
        ("rank * 2", replace(setup, rank=setup.rank * 2)),
        ("other outer layout", replace(setup, shared_outer=not setup.shared_outer)),
        ("hidden + 1", replace(setup, hidden=setup.hidden + 1)),
        ("sliced for tp 1", replace(setup, tp=1)),
        ("sliced for tp * 2", replace(setup, tp=setup.tp * 2)),
        ("one more expert", replace(setup, n=setup.n + 1)),
    ]
    if setup.slots > 1:
        variants.append(("slots - 1", replace(setup, slots=setup.slots - 1)))
    if setup.rank > 1:
        variants.append(("rank - 1", replace(setup, rank=setup.rank - 1)))
    if setup.n > 1:
        variants.append(("one expert fewer", replace(setup, n=setup.n - 1)))
    return variants


@st.composite
def pool_shape_variants(draw: Any, setup: SinkSetup, max_faults: int = 2) -> tuple[str, PoolShapes]:
    """(description, shapes) around `setup.pool_shapes()`, aimed at boundaries.

    About one in eight draws is the exact pool, one in five a consistent pool built for
    other flags or another geometry (S +- 1, R +- 1, the other outer layout, H + 1, another
    TP size or expert count); the rest apply 1..`max_faults` mutations: one axis off by one
    (or 0, 1, n, n+1, doubled, halved), two axes swapped, an axis dropped or inserted (3-D
    / 5-D), a buffer flattened to 2-D, or one buffer at another rank.
    """
    choice = draw(_ints(0, 39))
    if choice < 5:
        return "exact pool", setup.pool_shapes()
    if choice < 13:
        name, other = _pick(draw, _consistent_variants(setup))
        return f"consistent pool, {name}", other.pool_shapes()
    return _mutate(draw, setup, max_faults)


@st.composite
def slot_updates(draw: Any, setup: SinkSetup) -> list[int]:
    """Slot ids for on_lora_slots_updated (1-4 distinct ids): in range, at the edges
    (-1, S, S+1, -S, -S-1) and beyond. sglang passes a set; the manifest lists it."""
    s = setup.slots
    # Each id is one draw: an in-range slot, or one of the edges (-1, S, S+1, -S, -S-1).
    choices = (*range(s), -1, s, s + 1, -s, -s - 1)
    ids: list[int] = []
    for _ in range(draw(_ints(1, 4))):
        slot = _pick(draw, choices)
        if slot not in ids:
            ids.append(slot)
    return ids


@st.composite
def single_fault_pools(draw: Any, setup: SinkSetup) -> tuple[str, PoolShapes]:
    """Exactly one boundary mutation of the setup's pool: (description, shapes)."""
    return _mutate(draw, setup, 1)


def _mutate(draw: Any, setup: SinkSetup, max_faults: int) -> tuple[str, PoolShapes]:
    shapes = setup.pool_shapes()
    names = []
    for _ in range(draw(_ints(1, max_faults))):
        mutation, buffer = _pick(draw, _MUTATIONS)
        name, shapes = mutation(draw, setup, shapes, buffer)
        names.append(name)
    return "; ".join(names), shapes


# (mutation, buffer) pairs; an axis change is twice as likely as the others.
_MUTATIONS = tuple(
    (mutation, buffer)
    for mutation in (_axis_change, _axis_change, _swap_axes, _change_ndim, _mix_rank)
    for buffer in POOL_BUFFERS
)


# ---------------------------------------------------------------------------------------------
# PEFT manifests: adapters as a trainer writes them, and single faults of them
# ---------------------------------------------------------------------------------------------

PEFT_LAYER_PREFIX = "base_model.model.llm.layers"


def peft_tensors(setup: SinkSetup, r: int, layout: str, layers: Sequence[int] = (1,)) -> dict[str, dict[str, Any]]:
    """The shared-sink LoRA tensors of a PEFT adapter for this model (unsharded: sglang cuts
    them per TP rank). `layout`:

    * `"flat"`: one unnumbered factor per projection, as PEFT saves a fused sink: gate_up
      lora_A [r, H], lora_B [n*2I, r]; down lora_A [r, n*I], lora_B [H, r]. sglang reshapes
      them per expert and serves them shared-outer (one A and one B for all experts);
    * `"numbered"`: `shared_experts.<e>.` factors per expert: gate_up lora_A [r, H], lora_B
      [2I, r]; down lora_A [r, I], lora_B [H, r]; served per expert (outer = n).
    """
    n, h, i = setup.n, setup.hidden, setup.intermediate
    tensors: dict[str, dict[str, Any]] = {}
    for layer in layers:
        base = f"{PEFT_LAYER_PREFIX}.{layer}.mlp.shared_experts"
        if layout == "flat":
            shapes = {
                f"{base}.gate_up_proj.lora_A.weight": [r, h],
                f"{base}.gate_up_proj.lora_B.weight": [n * 2 * i, r],
                f"{base}.down_proj.lora_A.weight": [r, n * i],
                f"{base}.down_proj.lora_B.weight": [h, r],
            }
        elif layout == "numbered":
            shapes = {}
            for e in range(n):
                shapes.update(
                    {
                        f"{base}.{e}.gate_up_proj.lora_A.weight": [r, h],
                        f"{base}.{e}.gate_up_proj.lora_B.weight": [2 * i, r],
                        f"{base}.{e}.down_proj.lora_A.weight": [r, i],
                        f"{base}.{e}.down_proj.lora_B.weight": [h, r],
                    }
                )
        else:
            raise ValueError(f"unknown layout {layout!r}: flat or numbered")
        tensors.update({name: {"shape": shape, "dtype": "bfloat16"} for name, shape in shapes.items()})
    return tensors


def peft_manifest(
    setup: SinkSetup,
    r: int | None = None,
    *,
    layout: str | None = None,
    layers: Sequence[int] = (1,),
    name: str = "generated",
    alpha: float | None = None,
) -> dict[str, Any]:
    """A PEFT-form manifest (dict form accepted by `check()`) that fits `setup`: rank `r`
    (default: the pool rank R), the layout matching the setup's outer layout (flat when
    shared-outer, numbered per expert otherwise)."""
    r = setup.rank if r is None else r
    layout = layout or ("flat" if setup.shared_outer else "numbered")
    return {
        "name": name,
        "adapter_config": {
            "peft_type": "LORA",
            "r": r,
            "lora_alpha": alpha if alpha is not None else 2 * r,
            "target_modules": ["gate_up_proj", "down_proj"],
        },
        "tensors": peft_tensors(setup, r, layout, layers),
    }


@dataclass(frozen=True)
class PeftCase:
    """A sink setup and a PEFT adapter for it; `arguments()` gives `check()`'s inputs."""

    setup: SinkSetup
    manifest: dict[str, Any]

    def arguments(self) -> dict[str, Any]:
        return {"config": self.setup.config(), "model": self.setup.model(), "adapter": self.manifest}


@st.composite
def peft_setups(draw: Any, sink_class: str | None = None) -> PeftCase:
    """A consistent setup with a PEFT adapter that sglang 0.5.23 loads: rank r <= R, the
    layout of the setup's outer mode, shared-sink factors in 1-3 of the model's 16 layers."""
    setup = draw(sink_setups(sink_class))
    r = draw(_ints(1, setup.rank))
    layers = sorted({draw(_ints(0, MODEL_LAYERS - 1)) for _ in range(draw(_ints(1, 3)))})
    return PeftCase(setup, peft_manifest(setup, r, layers=layers))


def _peft_config(**changes: Any) -> Callable[[SinkSetup, dict[str, Any]], dict[str, Any]]:
    def mutate(setup: SinkSetup, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = copy.deepcopy(manifest)
        for key, value in changes.items():
            if value is _DROP:
                manifest["adapter_config"].pop(key, None)
            else:
                manifest["adapter_config"][key] = value
        return manifest

    return mutate


_DROP = object()


def _peft_tensor(site: str, transform: Callable[[SinkSetup, list[int]], list[int]]) -> Callable[[SinkSetup, dict[str, Any]], dict[str, Any]]:
    """Change the shape of every tensor whose name contains `site` (e.g. "down_proj.lora_A")."""

    def mutate(setup: SinkSetup, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = copy.deepcopy(manifest)
        for name, spec in manifest["tensors"].items():
            if site in name:
                spec["shape"] = transform(setup, list(spec["shape"]))
        return manifest

    return mutate


_LAYER_ID = re.compile(r"\.layers\.(\d+)\.")
MODEL_LAYERS = 16  # num_hidden_layers of SinkSetup.model() (the ModelConfig default)


def _peft_past_last_layer(setup: SinkSetup, manifest: dict[str, Any]) -> dict[str, Any]:
    """Every tensor moved from layer L to layer L + num_hidden_layers."""
    manifest = copy.deepcopy(manifest)
    shift = lambda m: f".layers.{int(m.group(1)) + MODEL_LAYERS}."  # noqa: E731
    manifest["tensors"] = {_LAYER_ID.sub(shift, name): spec for name, spec in manifest["tensors"].items()}
    return manifest


def _is_flat(setup: SinkSetup) -> bool:
    return setup.shared_outer


@dataclass(frozen=True)
class PeftFault:
    """One injected PEFT fault and the rule that must report it first."""

    name: str
    expected: str  # rule id
    applies: Callable[[SinkSetup], bool]
    mutate: Callable[[SinkSetup, dict[str, Any]], dict[str, Any]]


PEFT_FAULTS: tuple[PeftFault, ...] = (
    PeftFault("peft_type LOHA", "adapter-peft-type-not-lora", lambda s: True, _peft_config(peft_type="LOHA")),
    PeftFault("r missing from adapter_config.json", "adapter-config-missing-key", lambda s: True, _peft_config(r=_DROP)),
    PeftFault("r = 0", "adapter-rank-zero", lambda s: True, _peft_config(r=0)),
    PeftFault("DoRA adapter", "adapter-dora", lambda s: True, _peft_config(use_dora=True)),
    PeftFault(
        "target_modules a regex string",
        "adapter-target-modules-string-invalid",
        lambda s: True,
        _peft_config(target_modules=".*(gate_up|down)_proj"),
    ),
    PeftFault(
        "r above --max-lora-rank",
        "adapter-incompatible-with-pool",
        lambda s: True,
        lambda s, m: _peft_config(r=s.rank + 1, lora_alpha=2 * (s.rank + 1))(s, m),
    ),
    PeftFault(
        "tensors of a layer past num_hidden_layers",
        "adapter-layer-out-of-range",
        lambda s: True,
        _peft_past_last_layer,
    ),
    PeftFault(
        "flat down lora_A one column short of n*I",
        "sink-slice-flat-factor-reshape",
        lambda s: _is_flat(s) and s.n > 1,
        _peft_tensor("down_proj.lora_A", lambda s, shape: [shape[0], shape[1] - 1]),
    ),
    PeftFault(
        "down lora_B for hidden size H + 1",
        "adapter-pool-shape-mismatch",
        lambda s: True,
        _peft_tensor("down_proj.lora_B", lambda s, shape: [shape[0] + 1, shape[1]]),
    ),
    PeftFault(
        "per-expert (numbered) factors with --experts-shared-outer-loras",
        "adapter-shared-outer-dict-entries",
        lambda s: _is_flat(s) and s.n > 1,
        lambda s, m: peft_manifest(s, m["adapter_config"]["r"], layout="numbered", name=m["name"]),
    ),
)


@st.composite
def faulty_peft_setups(draw: Any) -> tuple[PeftCase, PeftFault, dict[str, Any]]:
    """(case, fault, check() arguments with exactly that PEFT fault injected)."""
    case = draw(peft_setups())
    fault = _pick(draw, [f for f in PEFT_FAULTS if f.applies(case.setup)])
    arguments = case.arguments()
    arguments["adapter"] = fault.mutate(case.setup, case.manifest)
    return case, fault, arguments
