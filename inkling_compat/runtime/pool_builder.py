"""Build the shared sink's four LoRA pool buffers (spec section 3) from adapters, with torch.

Two sources:

* **pool manifests** (the four buffer shapes): every slot gets random factors of a true rank
  ``r_s <= R`` (default R), rank-padded the way the pool pads (gate-A rows ``[0, r_s)``, up-A
  rows ``[R, R + r_s)``, B columns ``[0, r_s)``, everything else zero), B multiplied by a scaling;
* **PEFT adapters** (a directory with ``adapter_config.json`` + ``*.safetensors``, or a PEFT
  manifest whose tensors are only shapes, then filled with random values): adapter i goes to
  slot i. For one layer, the shared-sink factors are normalized as sglang 0.5.23's
  ``LoRAAdapter`` does (spec 3.1: unnumbered 2-D factors of an Inkling base become 3-D; w1/w3/w2
  are renamed; gate and up are stacked, a packed gate/up A is repeated), TP-sliced for rank p as
  the sink's slice methods do (spec 3.2: gate/up B keeps rows ``[pF,(p+1)F) ++ [I+pF, I+(p+1)F)``
  of each expert, down A keeps columns ``[pF,(p+1)F)``, gate/up A and down B are replicated),
  padded to R and B multiplied by ``lora_alpha / r``.

The normalization and the slicing are not written here: they are the checker's own replays
(``inkling_compat.sglang.adapter_loader.plan_layer`` and ``inkling_compat.sglang.slicing``),
which return plans of torch steps that ``apply_plan`` runs on the tensors; so the buffers get
exactly the shapes the checker predicted (tests/test_one_truth.py).

Everything here assumes ``check()`` accepted the inputs; a shape that still does not fit raises
``PoolBuildError`` (a bug or an input the rules do not cover), never a silent mis-copy.
Needs torch (and safetensors for adapter directories); the checker never imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from inkling_compat.sglang import adapter_loader, load_to_buffer, slicing
from inkling_compat.sglang.plan import Cat, Rename, Repeat, Reshape, Step, Take, Zeros


SINK_TARGETS = ("gate_up_proj", "down_proj")  # the pool targets the sink's buffers serve


class PoolBuildError(ValueError):
    """An adapter factor that does not fit the pool although check() accepted the inputs."""


@dataclass(frozen=True)
class Geometry:
    """One TP rank's sink: n experts, hidden H, full intermediate I, F = I / tp, S slots, rank R."""

    n: int
    hidden: int
    intermediate: int
    tp_size: int
    tp_rank: int
    slots: int
    rank: int
    shared_outer: bool

    @property
    def f_local(self) -> int:
        return self.intermediate // self.tp_size

    @property
    def outer(self) -> int:
        return 1 if self.shared_outer else self.n

    def empty_pool(self, dtype: torch.dtype = torch.float32) -> "Pool":
        S, E, R, H, F, n = self.slots, self.outer, self.rank, self.hidden, self.f_local, self.n
        return Pool(
            gate_up_a=torch.zeros(S, E, 2 * R, H, dtype=dtype),
            gate_up_b=torch.zeros(S, n, 2 * F, R, dtype=dtype),
            down_a=torch.zeros(S, n, R, F, dtype=dtype),
            down_b=torch.zeros(S, E, H, R, dtype=dtype),
            slot_ranks=[0] * S,
            slot_names=[None] * S,
        )


@dataclass
class Pool:
    gate_up_a: torch.Tensor  # [S, E_a, 2R, H]
    gate_up_b: torch.Tensor  # [S, n, 2F, R] (pre-scaled)
    down_a: torch.Tensor  # [S, n, R, F]
    down_b: torch.Tensor  # [S, E_b, H, R] (pre-scaled)
    slot_ranks: list[int]  # true rank per slot (0: empty)
    slot_names: list[str | None]
    slot_scalings: list[float] = field(default_factory=list)

    def buffers(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.gate_up_a, self.gate_up_b, self.down_a, self.down_b

    def to(self, device: Any, dtype: torch.dtype) -> "Pool":
        return Pool(*(t.to(device=device, dtype=dtype) for t in self.buffers()), list(self.slot_ranks), list(self.slot_names), list(self.slot_scalings))


# --- random pools ---------------------------------------------------------------------------


def random_factors(geo: Geometry, rank: int, generator: torch.Generator, scaling: float) -> dict[str, torch.Tensor]:
    """Unpadded factors of one adapter for this rank, in the pool's per-slot layout:
    gate_up_a [E_a, 2r, H] (gate rows then up rows), gate_up_b [n, 2F, r] (pre-scaled),
    down_a [n, r, F], down_b [E_b, H, r] (pre-scaled). A ~ N(0, 1/in), B ~ N(0, 1/r)."""
    E, n, H, F, r = geo.outer, geo.n, geo.hidden, geo.f_local, rank

    def randn(*shape: int, std: float) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * std

    return {
        "gate_up_a": randn(E, 2 * r, H, std=H ** -0.5),
        "gate_up_b": randn(n, 2 * F, r, std=r ** -0.5) * scaling,
        "down_a": randn(n, r, F, std=F ** -0.5),
        "down_b": randn(E, H, r, std=r ** -0.5) * scaling,
    }


def put_slot(pool: Pool, slot: int, factors: dict[str, torch.Tensor], rank: int, name: str | None, scaling: float) -> None:
    """Copy one adapter's (sliced, pre-scaled) factors into a slot, padding to the pool rank R.

    Expert e of a factor goes to expert e of the buffer, as mem_pool's
    `_iter_local_expert_weights` yields them (l.368-400): a shared-outer factor (one expert)
    in a per-expert pool fills expert 0 only and the other experts stay zero (the checker's
    `pool_partial`)."""
    R = pool.gate_up_b.shape[3]
    if rank > R:
        raise PoolBuildError(f"adapter {name!r}: rank {rank} is above the pool rank {R}")
    a_gu, b_gu, a_dn, b_dn = (factors[k] for k in ("gate_up_a", "gate_up_b", "down_a", "down_b"))
    buffers = {"gate_up_a": pool.gate_up_a, "gate_up_b": pool.gate_up_b, "down_a": pool.down_a, "down_b": pool.down_b}
    expect = {
        "gate_up_a": (2 * rank, pool.gate_up_a.shape[3]),
        "gate_up_b": (pool.gate_up_b.shape[2], rank),
        "down_a": (rank, pool.down_a.shape[3]),
        "down_b": (pool.down_b.shape[2], rank),
    }
    for key, shape in expect.items():
        got = tuple(factors[key].shape)
        experts = buffers[key].shape[1]
        if len(got) != 3 or got[1:] != shape or not 1 <= got[0] <= experts:
            raise PoolBuildError(f"adapter {name!r}: {key} has shape {got}, the pool needs ({experts}, {shape[0]}, {shape[1]})")
    for buf in pool.buffers():
        buf[slot].zero_()
    # The checker's copy geometry (load_to_buffer.rank_copies): gate rows at 0, up rows at R.
    for (d0, d1), (s0, s1) in load_to_buffer.rank_copies(2, rank, R):
        pool.gate_up_a[slot, :a_gu.shape[0], d0:d1] = a_gu[:, s0:s1]
    for (d0, d1), (s0, s1) in load_to_buffer.rank_copies(1, rank, R):
        pool.down_a[slot, :a_dn.shape[0], d0:d1] = a_dn[:, s0:s1]
    pool.gate_up_b[slot, :b_gu.shape[0], :, :rank] = b_gu
    pool.down_b[slot, :b_dn.shape[0], :, :rank] = b_dn
    pool.slot_ranks[slot] = rank
    pool.slot_names[slot] = name
    while len(pool.slot_scalings) <= slot:
        pool.slot_scalings.append(0.0)
    pool.slot_scalings[slot] = scaling


def random_pool(geo: Geometry, *, seed: int, slot_ranks: list[int] | None = None, scaling: float = 1.0, name: str = "pool") -> Pool:
    """Every slot filled with a random adapter of true rank ``slot_ranks[s]`` (default R)."""
    gen = torch.Generator().manual_seed(seed)
    ranks = list(slot_ranks) if slot_ranks is not None else [geo.rank] * geo.slots
    if len(ranks) != geo.slots:
        raise PoolBuildError(f"{len(ranks)} slot ranks given for {geo.slots} slots")
    pool = geo.empty_pool()
    for s, r in enumerate(ranks):
        if r <= 0:
            continue
        put_slot(pool, s, random_factors(geo, r, gen, scaling), r, f"{name}[{s}]", scaling)
    return pool


# --- PEFT adapters --------------------------------------------------------------------------


def sink_tensor_names(names: list[str]) -> list[str]:
    """Names of shared-sink LoRA factors (gate/up or down, lora_A or lora_B)."""
    return [name for name in names if adapter_loader.sink_site(name) is not None]


def sink_layers(names: list[str]) -> list[int]:
    """Layer ids that hold shared-sink factors."""
    return sorted({lid for lid in (adapter_loader.layer_id(name) for name in sink_tensor_names(names)) if lid is not None})


def read_safetensors(directory: str, files: list[str] | None = None) -> dict[str, torch.Tensor]:
    """Every tensor of the directory's ``*.safetensors`` files (sglang's loader reads all)."""
    try:
        from safetensors.torch import load_file
    except ImportError as exc:
        from inkling_compat.kernels.errors import RuntimeUnavailable

        raise RuntimeUnavailable(f"reading adapter weights needs safetensors (pip install 'inkling-compat[runtime]'): {exc}") from None
    if files is None:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors") and not f.startswith("."))
    if not files:
        raise PoolBuildError(f"{directory}: no *.safetensors weights (the runtime reads safetensors only, never pickles)")
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        tensors.update(load_file(os.path.join(directory, file)))
    return tensors


def apply_plan(plan: Sequence[Step], tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Run a plan of `inkling_compat.sglang.plan` steps on tensors, in place: the torch calls
    sglang makes, with the shapes the checker computed from the same plan."""
    for step in plan:
        if isinstance(step, Reshape):
            t = tensors[step.name].reshape(step.shape)
            tensors[step.name] = t.transpose(0, 1).contiguous() if step.transpose01 else t
        elif isinstance(step, Cat):
            tensors[step.out] = torch.cat([tensors.pop(name) for name in step.inputs], step.dim)
        elif isinstance(step, Zeros):
            tensors[step.name] = torch.zeros_like(tensors[step.like])
        elif isinstance(step, Repeat):
            tensors[step.name] = tensors[step.name].repeat(*step.reps)
        elif isinstance(step, Rename):
            tensors[step.new] = tensors.pop(step.old)
        elif isinstance(step, Take):
            # The bounds are clamped in the plan, so narrow() never runs past the end.
            t = tensors[step.name]
            tensors[step.name] = torch.cat([t.narrow(step.dim, a, b - a) for a, b in step.ranges], step.dim).contiguous()
        else:  # pragma: no cover - the Step union is closed
            raise TypeError(f"not a plan step: {step!r}")
    return tensors


def _shape(t: torch.Tensor) -> list[int]:
    return list(t.shape)


def normalize_layer(weights: dict[str, torch.Tensor], r: int | None, n_shared: int, inkling: bool) -> dict[str, torch.Tensor]:
    """sglang's LoRAAdapter normalization of one layer's factors: the checker's plan
    (`sglang.adapter_loader.plan_layer`) applied to the tensors."""
    plan = adapter_loader.plan_layer({k: _shape(v) for k, v in weights.items()}, r, n_shared, inkling)
    if plan.failure is not None:
        f = plan.failure
        if isinstance(f, adapter_loader.CatRefusal):
            raise PoolBuildError(f"{f.name}: {f.message}")
        raise PoolBuildError(f"{f.name}: shape '{list(f.shape)}' is invalid for input of size {f.size}")
    return apply_plan(plan.steps, dict(weights))


def slice_for_rank(t: torch.Tensor, site: str, geo: Geometry, *, per_expert: bool = False) -> torch.Tensor:
    """The sink's `slice_moe_lora_{a,b}_weights` for this rank: the checker's slice plan
    (`sglang.slicing`) applied to the tensor; `per_expert` for an entry of a per-expert dict."""
    factor = site[-1]
    target = slicing.GATE_UP if site.startswith("gate_up") else slicing.DOWN
    if per_expert:
        result = slicing.slice_expert(factor, _shape(t), target, geo.tp_size, geo.tp_rank, geo.f_local)
    else:
        result = slicing.slice_factor(factor, _shape(t), target, geo.n, geo.tp_size, geo.tp_rank, geo.f_local)
    if result.failure is not None:
        raise PoolBuildError(f"{site}: {result.failure.error_class}: {result.failure.message}")
    out = apply_plan(result.plan, {slicing.WEIGHT: t})[slicing.WEIGHT]
    if _shape(out) != result.shape:  # pragma: no cover - plan and shape come from one function
        raise PoolBuildError(f"{site}: sliced to {_shape(out)}, the plan says {result.shape}")
    return out


def peft_factors(
    tensors: dict[str, torch.Tensor], adapter_config: dict[str, Any], geo: Geometry, layer: int, *, inkling: bool, name: str
) -> tuple[dict[str, torch.Tensor] | None, int, float]:
    """(factors for put_slot, true rank, scaling) of one adapter at one layer, or (None, r, s)
    when the adapter has no shared-sink factors there (its slot then stays zero)."""
    # As sglang reads them (lora.py:71): a boolean r is the int it is (true: rank 1), and the
    # scaling is Python's `lora_alpha / r` (never float(alpha) first: an int alpha too large
    # for a float still divides). check() has refused every value for which that raises.
    r_raw = adapter_config.get("r")
    r = int(r_raw) if isinstance(r_raw, int) else None
    alpha = adapter_config.get("lora_alpha")
    scaling = alpha / r if r and isinstance(alpha, (int, float)) else 1.0
    names = [k for k in sink_tensor_names(list(tensors)) if adapter_loader.layer_id(k) == layer]
    if not names:
        return None, int(r or 0), scaling
    w = normalize_layer({k: tensors[k].float() for k in names}, r, geo.n, inkling)
    # The checker's routing (mem_pool l.982-1015) on the tensors: packed, or {expert: tensor}.
    routed, _ = load_to_buffer.route_shared(w, SINK_TARGETS)
    out: dict[str, torch.Tensor] = {}
    rank = None
    for site in load_to_buffer.SITES:
        weight = routed[site]
        if weight is None:
            raise PoolBuildError(f"adapter {name!r}: layer {layer} has no {site.replace('_', ' ')} factor")
        if isinstance(weight, dict):
            if sorted(weight) != list(range(len(weight))):
                raise PoolBuildError(f"adapter {name!r}: numbered {site} factors for experts {sorted(weight)}")
            t = torch.stack([slice_for_rank(weight[e], site, geo, per_expert=True) for e in sorted(weight)])
        else:
            t = slice_for_rank(weight, site, geo)
        if site in ("gate_up_b", "down_b"):
            t = t * scaling
        out[site] = t
        site_rank = {"gate_up_a": t.shape[1] // 2, "gate_up_b": t.shape[2], "down_a": t.shape[1], "down_b": t.shape[2]}[site]
        if rank is None:
            rank = site_rank
        elif site_rank != rank:
            raise PoolBuildError(f"adapter {name!r}: factor ranks disagree in layer {layer} ({site} has {site_rank}, expected {rank})")
    return out, int(rank or 0), scaling


def random_peft_tensors(tensor_shapes: dict[str, list[int]], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random tensors for a PEFT manifest that lists only shapes: A ~ N(0, 1/in), B ~ N(0, 1/r)."""
    out = {}
    for name, shape in tensor_shapes.items():
        fan = shape[-1] if "lora_A" in name else max(shape[-1], 1)
        out[name] = torch.randn(*shape, generator=generator) * (max(fan, 1) ** -0.5)
    return out
