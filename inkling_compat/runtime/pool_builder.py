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

Everything here assumes ``check()`` accepted the inputs; a shape that still does not fit raises
``PoolBuildError`` (a bug or an input the rules do not cover), never a silent mis-copy.
Needs torch (and safetensors for adapter directories); the checker never imports this module.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import torch

_LAYER = re.compile(r"layers\.(\d+)\.")
_NUMBERED = re.compile(r"(?:shared_)?experts\.(\d+)\.")
_GATE_UP_KEYS = (".w1.", ".w3.", ".gate_proj.", ".up_proj.", ".gate_up_proj.")
_DOWN_KEYS = (".w2.", ".down_proj.")


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
    """Copy one adapter's (sliced, pre-scaled) factors into a slot, padding to the pool rank R."""
    R = pool.gate_up_b.shape[3]
    if rank > R:
        raise PoolBuildError(f"adapter {name!r}: rank {rank} is above the pool rank {R}")
    a_gu, b_gu, a_dn, b_dn = (factors[k] for k in ("gate_up_a", "gate_up_b", "down_a", "down_b"))
    expect = {
        "gate_up_a": (pool.gate_up_a.shape[1], 2 * rank, pool.gate_up_a.shape[3]),
        "gate_up_b": (pool.gate_up_b.shape[1], pool.gate_up_b.shape[2], rank),
        "down_a": (pool.down_a.shape[1], rank, pool.down_a.shape[3]),
        "down_b": (pool.down_b.shape[1], pool.down_b.shape[2], rank),
    }
    for key, shape in expect.items():
        if tuple(factors[key].shape) != shape:
            raise PoolBuildError(f"adapter {name!r}: {key} has shape {tuple(factors[key].shape)}, the pool needs {shape}")
    for buf in pool.buffers():
        buf[slot].zero_()
    pool.gate_up_a[slot, :, :rank] = a_gu[:, :rank]
    pool.gate_up_a[slot, :, R:R + rank] = a_gu[:, rank:]
    pool.gate_up_b[slot, :, :, :rank] = b_gu
    pool.down_a[slot, :, :rank] = a_dn
    pool.down_b[slot, :, :, :rank] = b_dn
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
    out = []
    for name in names:
        if "shared_experts." not in name or ("lora_A" not in name and "lora_B" not in name):
            continue
        if any(k in name for k in _GATE_UP_KEYS + _DOWN_KEYS):
            out.append(name)
    return out


def sink_layers(names: list[str]) -> list[int]:
    """Layer ids that hold shared-sink factors."""
    found = set()
    for name in sink_tensor_names(names):
        m = _LAYER.search(name)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)


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


def _is_gate_up(name: str) -> bool:
    return any(k in name for k in _GATE_UP_KEYS)


def _is_down(name: str) -> bool:
    return any(k in name for k in _DOWN_KEYS)


def normalize_layer(weights: dict[str, torch.Tensor], n_shared: int, inkling: bool) -> dict[str, torch.Tensor]:
    """sglang's LoRAAdapter normalization restricted to shared-sink factors of one layer."""
    w = {k: v for k, v in weights.items()}
    # _normalize_shared_expert_moe: flat (unnumbered) 2-D factors of an Inkling base -> 3-D.
    if inkling and n_shared > 0:
        for name in list(w):
            if re.search(r"shared_experts\.\d+\.", name) or w[name].dim() != 2:
                continue
            t = w[name]
            if "lora_A" in name:
                if _is_down(name):
                    r, flat = t.shape
                    if flat % n_shared:
                        raise PoolBuildError(f"{name}: width {flat} is not divisible by {n_shared} experts")
                    w[name] = t.reshape(r, n_shared, flat // n_shared).transpose(0, 1).contiguous()
                else:
                    w[name] = t.unsqueeze(0)
            else:
                if _is_down(name):
                    w[name] = t.unsqueeze(0)
                else:
                    flat, r = t.shape
                    if flat % n_shared:
                        raise PoolBuildError(f"{name}: height {flat} is not divisible by {n_shared} experts")
                    w[name] = t.reshape(n_shared, flat // n_shared, r)
    # _rename_expert_w_to_proj
    for name in list(w):
        for old, new in ((".w1.", ".gate_proj."), (".w3.", ".up_proj."), (".w2.", ".down_proj.")):
            if old in name:
                w[name.replace(old, new)] = w.pop(name)
                break
    # normalize_gate_up_proj: gate + up (zeros if absent) stacked on dim -2; packed A repeated.
    for name in list(w):
        if name not in w:
            continue
        if "gate_proj" in name:
            up_name = name.replace("gate_proj", "up_proj")
            gate = w.pop(name)
            up = w.pop(up_name, None)
            if up is None or up.numel() == 0:
                up = torch.zeros_like(gate)
            w[name.replace("gate_proj", "gate_up_proj")] = torch.cat((gate, up), gate.dim() - 2)
        elif "gate_up_proj" in name and "lora_A" in name:
            reps = [1] * w[name].dim()
            reps[-2] = 2
            w[name] = w[name].repeat(*reps)
    return w


def _site(name: str) -> str:
    kind = "down" if _is_down(name) else "gate_up"
    return f"{kind}_{'a' if 'lora_A' in name else 'b'}"


def _slice_2d(t: torch.Tensor, site: str, n: int) -> torch.Tensor:
    """The slice methods' 2-D handling (spec 3.2) for packed factors that are still 2-D."""
    if t.dim() != 2:
        return t
    if site == "gate_up_a" or site == "down_b":
        return t.unsqueeze(0)
    if site == "down_a":
        r, width = t.shape
        if width % n:
            raise PoolBuildError(f"down A width {width} is not divisible by {n} experts")
        return t.reshape(r, n, width // n).transpose(0, 1).contiguous()
    rows, r = t.shape
    if rows % n:
        raise PoolBuildError(f"gate/up B height {rows} is not divisible by {n} experts")
    return t.reshape(n, rows // n, r)


def _tp_slice(t: torch.Tensor, site: str, geo: Geometry) -> torch.Tensor:
    """TP shard of rank p (spec 3.2); gate/up A and down B are replicated."""
    if geo.tp_size <= 1:
        return t
    p, F = geo.tp_rank, geo.f_local
    if site == "down_a":
        return t[..., p * F:(p + 1) * F]
    if site == "gate_up_b":
        half = t.shape[-2] // 2
        return torch.cat((t[..., p * F:(p + 1) * F, :], t[..., half + p * F:half + (p + 1) * F, :]), dim=-2)
    return t


def peft_factors(
    tensors: dict[str, torch.Tensor], adapter_config: dict[str, Any], geo: Geometry, layer: int, *, inkling: bool, name: str
) -> tuple[dict[str, torch.Tensor] | None, int, float]:
    """(factors for put_slot, true rank, scaling) of one adapter at one layer, or (None, r, s)
    when the adapter has no shared-sink factors there (its slot then stays zero)."""
    r = int(adapter_config.get("r") or 0)
    alpha = adapter_config.get("lora_alpha")
    scaling = float(alpha) / r if r and isinstance(alpha, (int, float)) else 1.0
    layer_key = f"layers.{layer}."
    names = [k for k in sink_tensor_names(list(tensors)) if layer_key in k]
    if not names:
        return None, r, scaling
    w = normalize_layer({k: tensors[k].float() for k in names}, geo.n, inkling)
    packed: dict[str, torch.Tensor] = {}
    per_expert: dict[str, dict[int, torch.Tensor]] = {}
    for key, t in w.items():
        site = _site(key)
        m = _NUMBERED.search(key)
        if m:
            per_expert.setdefault(site, {})[int(m.group(1))] = t
        elif site in packed:
            raise PoolBuildError(f"adapter {name!r}: two {site} factors in layer {layer}")
        else:
            packed[site] = t
    out: dict[str, torch.Tensor] = {}
    rank = None
    for site in ("gate_up_a", "gate_up_b", "down_a", "down_b"):
        if site in packed and site in per_expert:
            raise PoolBuildError(f"adapter {name!r}: layer {layer} has both packed and numbered {site} factors")
        if site in packed:
            t = _tp_slice(_slice_2d(packed[site], site, geo.n), site, geo)
        elif site in per_expert:
            experts = per_expert[site]
            if sorted(experts) != list(range(len(experts))):
                raise PoolBuildError(f"adapter {name!r}: numbered {site} factors for experts {sorted(experts)}")
            t = torch.stack([_tp_slice(experts[e], site, geo) for e in sorted(experts)])
        else:
            raise PoolBuildError(f"adapter {name!r}: layer {layer} has no {site.replace('_', ' ')} factor")
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
