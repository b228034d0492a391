"""The reference runtime: run the shared sink + multi-slot LoRA forward for a setup the checker
accepts, and refuse (with sglang's own message) a setup it rejects.

    from inkling_compat.runtime.load import load
    sink = load("serve.yaml", "config.json", ["adapter_pool.yaml"], device="cpu")
    x, gammas, slots = sink.random_inputs(16)
    out = sink.forward(x, gammas, slots)          # Triton kernels (interpreted on the CPU)
    ref = sink.reference(x, gammas, slots)        # float64 torch reference

`load()` runs the check once (`api.evaluate`); if the report has errors it raises
`RuntimeRefused`, whose text is exactly what sglang 0.5.23 would raise first (`exc.report` holds
every problem, and `exc.__cause__` is that exception with sglang's class). Otherwise it builds,
from that check's own typed inputs and facts (nothing is loaded or derived a second time), the
base weights (random, seeded, or given) and the pool `[S, E_a, 2R, H]`, ... (spec section 3)
from pool manifests or PEFT adapters (`build_pool`, see `pool_builder`). Importing this module needs neither torch nor
triton; `load()` raises `RuntimeUnavailable` (one line) when they are missing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from inkling_compat.errors import InputError


class RuntimeRefused(Exception):
    """check() found errors: the runtime refuses, as sglang would. ``str(exc)`` is sglang's
    message for the first error; ``exc.report`` is the whole report."""

    def __init__(self, report: Any):
        self.report = report
        first = report.headline  # sglang's first raise, else what fails after it accepts
        self.error_class = first.error_class
        self.rule_id = first.rule_id
        super().__init__(first.message)


class RuntimeInputError(InputError):
    """Input the checker accepts but the runtime cannot run (no batch-dense sink, ...)."""


def _import_runtime() -> tuple[Any, Any]:
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        from inkling_compat.kernels.errors import RuntimeUnavailable  # pragma: no cover

        raise RuntimeUnavailable(f"the reference runtime needs torch and triton (pip install 'inkling-compat[runtime]'): {exc}") from None
    from inkling_compat.kernels import sink as sink_mod
    from inkling_compat.kernels._triton import torch

    return torch, sink_mod


def _adapter_items(adapters: Any) -> list[Any]:
    if adapters is None:
        return []
    if isinstance(adapters, (list, tuple)):
        return list(adapters)
    return [adapters]


@dataclass
class SharedSink:
    """One TP rank's shared sink with its LoRA pool, ready to run."""

    operands: Any  # kernels.sink.SinkOperands
    w13: Any  # [n, 2F, H] in the layout the sink uses (for the reference)
    w2: Any  # [n, H, F]
    pool: Any | None  # pool_builder.Pool (on the device) or None
    report: Any
    geometry: Any
    device: Any
    dtype: Any
    sink_class: str
    lora_attached: bool
    layer: int | None = None
    notes: list[str] = field(default_factory=list)
    checked: Any = None  # the api.evaluate result it was built from (inputs, facts, report)

    @property
    def n(self) -> int:
        return self.operands.n

    @property
    def hidden(self) -> int:
        return self.operands.hidden

    @property
    def f_local(self) -> int:
        return self.operands.f_local

    @property
    def slots(self) -> int:
        return self.operands.slots

    @property
    def rank(self) -> int:
        return self.operands.rank

    @property
    def interleaved(self) -> bool:
        return self.operands.interleaved

    @property
    def shared_outer(self) -> bool:
        return self.operands.shared_outer

    def _check_slots(self, slot_ids: Any) -> Any:
        torch, _ = _import_runtime()
        ids = torch.as_tensor(slot_ids).reshape(-1)
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"slot ids must be integers, got {ids.dtype}")
        bad = ids[(ids < -1) | (ids >= self.slots)]
        if bad.numel():
            raise IndexError(f"slot ids must be -1 (no adapter) or in [0, {self.slots}): got {sorted(set(bad.tolist()))[:8]}")
        return ids.to(self.device)

    def forward(self, x: Any, gammas: Any, slot_ids: Any = None, *, validate: bool = True) -> Any:
        """out [T, H] via the Triton kernels. ``slot_ids`` [T]: slot per token, -1 = no adapter."""
        _, sink_mod = _import_runtime()
        if not self.lora_attached:
            slot_ids = None  # no LoRA on this sink: every token runs the base MLP
        elif slot_ids is not None and validate:
            slot_ids = self._check_slots(slot_ids)
        return sink_mod.sink_forward_triton(self.operands, x, gammas, slot_ids)

    __call__ = forward

    def capture(self, tokens: int) -> Any:
        """A callable ``(x, gammas, slot_ids) -> out`` for exactly ``tokens`` tokens that replays
        the forward from a CUDA graph (kernels/capture.py; CUDA only). Slot ids are not
        validated on replay: pass ids in [-1, slots)."""
        from inkling_compat.kernels.capture import capture_forward

        return capture_forward(self.operands, tokens, lora=self.lora_attached)

    def forward_torch(self, x: Any, gammas: Any, slot_ids: Any = None) -> Any:
        """The same forward in plain torch (storage dtype; the benchmark's torch LoRA path)."""
        _, sink_mod = _import_runtime()
        slot_ids = self._check_slots(slot_ids) if (slot_ids is not None and self.lora_attached) else None
        return sink_mod.sink_forward_torch(self.operands, x, gammas, slot_ids)

    def reference(self, x: Any, gammas: Any, slot_ids: Any = None, *, dtype: Any = None, storage: Any = None) -> Any:
        """float64 torch reference (spec 6.1) on the unlinearized weights and pool buffers
        (``storage``: rounded where the kernels store, see kernels/reference.py)."""
        torch, _ = _import_runtime()
        from inkling_compat.kernels.reference import sink_forward_reference

        pool = self.pool.buffers() if (self.pool is not None and self.lora_attached) else None
        return sink_forward_reference(
            x, gammas, self.w13, self.w2, interleaved=self.interleaved, pool=pool,
            slot_ids=None if (slot_ids is None or pool is None) else torch.as_tensor(slot_ids).to(x.device),
            dtype=dtype or torch.float64, storage=storage,
        )

    def random_inputs(self, tokens: int, *, seed: int = 0, no_adapter_fraction: float = 0.25) -> tuple[Any, Any, Any]:
        """(x [T, H], gammas [T, n], slot_ids [T]) on the device: x ~ N(0, 1), gammas ~ U(0, 1),
        slots uniform over the filled slots with about ``no_adapter_fraction`` tokens at -1."""
        torch, _ = _import_runtime()
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(tokens, self.hidden, generator=gen).to(self.device, self.dtype)
        gammas = torch.rand(tokens, self.n, generator=gen).to(self.device, self.dtype)
        filled = [s for s, r in enumerate(self.pool.slot_ranks) if r > 0] if self.pool is not None else []
        if filled:
            pick = torch.tensor(filled)[torch.randint(0, len(filled), (tokens,), generator=gen)]
            none = torch.rand(tokens, generator=gen) < no_adapter_fraction
            slots = torch.where(none, torch.full_like(pick, -1), pick)
        else:
            slots = torch.full((tokens,), -1, dtype=torch.int64)
        return x, gammas, slots.to(self.device)

    def with_pool(self, pool: Any) -> "SharedSink":
        """The same base weights with another pool (pool_builder.Pool of this geometry)."""
        torch, sink_mod = _import_runtime()
        pool = pool.to(self.device, self.dtype)
        ops = _operands(sink_mod, torch, self.operands.w13_lin, self.operands.w2_lin, self.n, self.interleaved, pool, self.device)
        return replace(self, operands=ops, pool=pool)

    def describe(self) -> str:
        layout = "interleaved" if self.interleaved else "contiguous [gate||up]"
        if self.pool is None or not self.lora_attached:
            lora = "no LoRA pool"
        else:
            outer = "shared outer (E_a = 1)" if self.shared_outer else f"per-expert outer (E_a = {self.n})"
            ranks = ", ".join(str(r) for r in self.pool.slot_ranks)
            lora = f"S={self.slots} slots, R={self.rank}, {outer}, true ranks [{ranks}]"
        return (
            f"{self.sink_class} sink: n={self.n}, H={self.hidden}, F={self.f_local} "
            f"(TP rank {self.geometry.tp_rank}/{self.geometry.tp_size}), w13 {layout}; {lora}"
        )


def _default_device() -> str | None:
    """cuda where torch sees a GPU, else cpu (None: torch is missing, _import_runtime says so)."""
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else "cpu"


def _resolve_device(device: Any, torch: Any) -> Any:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeInputError("<device>", "device", "CUDA is not available on this machine (use --device cpu)")
    if dev.type not in ("cuda", "cpu"):
        raise RuntimeInputError("<device>", "device", f"unsupported device {dev.type!r} (cpu or cuda)")
    return dev


def load(
    config: Any,
    model: Any = None,
    adapters: Any = None,
    *,
    weights: dict[str, Any] | None = None,
    platform: Any = None,
    device: Any = None,
    dtype: Any = None,
    seed: int = 0,
    tp_rank: int = 0,
    layer: int | None = None,
    slot_ranks: Sequence[int] | None = None,
    lora_scaling: float = 1.0,
    sglang_version: str | None = None,
) -> SharedSink:
    """Check, then build a runnable sink. See the module doc.

    ``model``: the model's config.json (path, dict or ModelConfig). ``weights``: optional base
    weights ``{"w13": [n, 2F or 2I, H] in checkpoint (interleaved) order, "w2": [n, H, F or I]}``
    (unsharded tensors are sliced for ``tp_rank``); random (seeded) when omitted.
    ``adapters``: one pool manifest, or PEFT adapters (directories, or manifests with tensor
    shapes), each a path, dict or manifest model. ``slot_ranks``: true ranks of the random
    adapters a pool manifest gets (default: the pool rank R in every slot). ``layer``: which
    layer's factors to load from PEFT adapters (default: the first that has shared-sink ones).
    ``device``: "cpu" runs the kernels in Triton's interpreter (``TRITON_INTERPRET=1`` is set
    before triton is imported), "cuda" compiled; default cuda when available.
    """
    from inkling_compat.api import evaluate

    items = _adapter_items(adapters)
    kwargs = {"model": model, "platform": platform}
    if sglang_version is not None:
        kwargs["sglang_version"] = sglang_version
    # One check: its typed inputs and facts are what the runtime builds from (no second load).
    checked = evaluate(config, items or None, **kwargs)
    report = checked.report
    if not report.ok:
        raise RuntimeRefused(report)

    if device is None:  # (decided before triton is imported: on cpu it runs in the interpreter)
        device = _default_device()
    if device is not None and str(device).startswith("cpu") and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported (kernels/_triton.py)
    torch, sink_mod = _import_runtime()
    from inkling_compat.kernels.reference import linearize

    dev = _resolve_device(device, torch)
    sink = checked.facts.sink
    if sink.kind != "batch_dense":
        what = {
            "none": "the model has no shared experts (n_shared_experts = 0)",
            "dense_mlp": "the shared experts are a plain dense MLP (shared_expert_sink is false)",
            "fused": "the shared experts are served by InklingSharedFusedMoE (non-interleaved w13 or an FP4 sink)",
        }.get(sink.kind, f"sink kind {sink.kind!r}")
        raise RuntimeInputError("<model>", "shared sink", f"{what}; the runtime implements InklingBatchDenseMLP only")
    if dtype is None:
        dtype = torch.bfloat16
    elif isinstance(dtype, str):
        dtype = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float32": torch.float32, "fp32": torch.float32,
                 "float16": torch.float16, "fp16": torch.float16}.get(dtype)
        if dtype is None:
            raise RuntimeInputError("<dtype>", "dtype", "bfloat16, float16 or float32")

    built = build_pool(checked, tp_rank=tp_rank, layer=layer, seed=seed, slot_ranks=slot_ranks, lora_scaling=lora_scaling)
    geo, pool = built.geometry, built.pool
    n, tp = geo.n, geo.tp_size
    interleaved = not sink.w13_gate_up_contiguous

    # Base weights, checkpoint (interleaved) order for this rank, then the sink's layout.
    # Random ones are one draw of the whole layer that every TP rank cuts its slice from.
    F, H, I = geo.f_local, geo.hidden, geo.intermediate
    if weights is None:
        weights = random_layer_weights(geo, seed)
    w13, w2 = torch.as_tensor(weights["w13"]).float(), torch.as_tensor(weights["w2"]).float()
    # The loader's cut of an unsharded checkpoint tensor: this rank's F columns of each expert.
    if tuple(w13.shape) == (n, 2 * I, H) and tp > 1:
        w13 = w13[:, 2 * tp_rank * F:2 * (tp_rank + 1) * F]
    if tuple(w2.shape) == (n, H, I) and tp > 1:
        w2 = w2[:, :, tp_rank * F:(tp_rank + 1) * F]
    if tuple(w13.shape) != (n, 2 * F, H) or tuple(w2.shape) != (n, H, F):
        raise RuntimeInputError("<weights>", "w13/w2", f"expected w13 [{n}, {2 * F}, {H}] and w2 [{n}, {H}, {F}] "
                                f"(or unsharded), got {list(w13.shape)} and {list(w2.shape)}")
    if not interleaved:  # V2: the loader de-interleaves each TP block once (spec 1.2)
        w13 = torch.cat((w13[:, 0::2], w13[:, 1::2]), dim=1)

    w13 = w13.to(dev, dtype)
    w2 = w2.to(dev, dtype)
    w13_lin, w2_lin = linearize(w13, w2)
    if pool is not None:
        pool = pool.to(dev, dtype)
    ops = _operands(sink_mod, torch, w13_lin, w2_lin, n, interleaved, pool, dev)
    return SharedSink(
        operands=ops, w13=w13, w2=w2, pool=pool, report=report, geometry=geo, device=dev, dtype=dtype,
        sink_class=sink.sink_class or "base", lora_attached=sink.lora_attached and pool is not None, layer=built.layer,
        notes=built.notes, checked=checked,
    )


def _operands(sink_mod: Any, torch: Any, w13_lin: Any, w2_lin: Any, n: int, interleaved: bool, pool: Any, dev: Any) -> Any:
    if pool is None:
        return sink_mod.SinkOperands(w13_lin, w2_lin, n, interleaved)
    return sink_mod.SinkOperands(
        w13_lin, w2_lin, n, interleaved, *pool.buffers(),
        slot_active=torch.tensor([r > 0 for r in pool.slot_ranks], device=dev),
    ).refresh()


def random_layer_weights(geo: Any, seed: int) -> dict[str, Any]:
    """Seeded random base weights of the whole layer, in checkpoint (interleaved) order:
    w13 [n, 2I, H] ~ N(0, 1/H), w2 [n, H, I] ~ N(0, 1/I). `load()` cuts a TP rank's slice from
    them, so the ranks of one seed hold the slices of one layer (the TP runtime's reference)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    n, H, I = geo.n, geo.hidden, geo.intermediate
    w13 = torch.randn(n, 2 * I, H, generator=gen) * H ** -0.5
    w2 = torch.randn(n, H, I, generator=gen) * I ** -0.5
    return {"w13": w13, "w2": w2}


@dataclass
class PoolBuild:
    """The runtime's pool for one TP rank: its geometry, the buffers (None: no LoRA on the
    sink), the PEFT layer loaded and what was put in each slot."""

    geometry: Any  # pool_builder.Geometry
    pool: Any | None  # pool_builder.Pool (CPU, float32)
    layer: int | None
    notes: list[str]


def build_pool(
    checked: Any,
    *,
    tp_rank: int = 0,
    layer: int | None = None,
    seed: int = 0,
    slot_ranks: Sequence[int] | None = None,
    lora_scaling: float = 1.0,
    unsharded: bool = False,
) -> PoolBuild:
    """The pool buffers for an accepted check (`api.evaluate(...)`), from its own inputs and
    facts: the geometry is the facts' pool (`facts.pool`: S, R, shared-outer) and sink (F),
    the adapters are the manifests the check loaded. Needs torch (not triton).

    A pool manifest's random adapters are drawn once for the whole layer (F = I) and cut for
    ``tp_rank`` by the checker's slicing (`pool_builder.slice_for_rank`), so the ranks of one
    seed hold the slices of the same adapters. ``unsharded``: the whole layer's pool (F = I,
    nothing cut), what the TP ranks' slices add up to (the TP runtime's reference)."""
    from inkling_compat.runtime import pool_builder as pb
    from inkling_compat.sglang.adapter_loader import is_inkling_base

    import torch

    inputs, facts = checked.inputs, checked.facts
    server, model_cfg, manifests = inputs.server, inputs.model, list(inputs.adapters)
    sink, pool_facts = facts.sink, facts.pool
    tp = max(server.tp_size, 1)
    if not 0 <= tp_rank < tp:
        raise RuntimeInputError("<tp_rank>", "tp_rank", f"{tp_rank} is not in [0, {tp})")
    geo = pb.Geometry(
        n=model_cfg.n_shared_experts, hidden=model_cfg.hidden_size, intermediate=model_cfg.intermediate_size, tp_size=tp,
        tp_rank=tp_rank, slots=sink.max_loras_per_batch, rank=pool_facts.rank if pool_facts is not None else 0,
        shared_outer=bool(pool_facts.shared_outer) if pool_facts is not None else False,
    )
    whole = replace(geo, tp_size=1, tp_rank=0)  # the layer before the TP cut
    if unsharded:
        geo = whole
    notes: list[str] = []
    if not (sink.lora_attached and geo.rank > 0):
        if manifests:
            notes.append("LoRA is not attached to the sink (not enabled, or gate_up_proj/down_proj not both targeted): base forward only")
        return PoolBuild(geo, None, None, notes)
    pool_manifests = [m for m in manifests if hasattr(m, "pool")]
    peft = [m for m in manifests if not hasattr(m, "pool")]
    if pool_manifests and peft:
        raise RuntimeInputError("<adapters>", "adapter", "give either one pool manifest or PEFT adapters, not both")
    if len(pool_manifests) > 1:
        raise RuntimeInputError("<adapters>", "adapter", f"{len(pool_manifests)} pool manifests: the runtime builds one pool")
    if pool_manifests:
        pool = pb.random_pool(whole, seed=seed + 1, slot_ranks=list(slot_ranks) if slot_ranks else None,
                              scaling=lora_scaling, name=pool_manifests[0].name)
        if geo.tp_size > 1:
            pool = _cut_pool(pool, geo, pb, torch)
        notes.append(f"pool manifest {pool_manifests[0].name!r}: random factors in all {geo.slots} slots, scaling {lora_scaling:g} folded into B")
        return PoolBuild(geo, pool, None, notes)
    if peft:
        pool, used_layer = _peft_pool(peft, geo, layer, seed, notes, torch, pb, is_inkling_base(model_cfg))
        return PoolBuild(geo, pool, used_layer, notes)
    notes.append("no adapters: the pool is empty (every slot zero)")
    return PoolBuild(geo, geo.empty_pool(), None, notes)


def _cut_pool(pool: Any, geo: Any, pb: Any, torch: Any) -> Any:
    """A whole-layer pool cut for one TP rank, slot by slot, by the sink's slice methods as the
    checker replays them (gate/up B rows and down A columns; the outer factors replicated)."""
    if not pool.slot_ranks:
        return geo.empty_pool()
    sites = ("gate_up_a", "gate_up_b", "down_a", "down_b")
    cut = [torch.stack([pb.slice_for_rank(buf[s], site, geo) for s in range(buf.shape[0])])
           for site, buf in zip(sites, pool.buffers())]
    return pb.Pool(*cut, list(pool.slot_ranks), list(pool.slot_names), list(pool.slot_scalings))


def _peft_pool(peft: list[Any], geo: Any, layer: int | None, seed: int, notes: list[str], torch: Any, pb: Any, inkling: bool) -> tuple[Any, int | None]:
    if len(peft) > geo.slots:
        raise RuntimeInputError("<adapters>", "adapter", f"{len(peft)} adapters for {geo.slots} slots (--max-loras-per-batch)")
    gen = torch.Generator().manual_seed(seed + 1)
    loaded = []
    for m in peft:
        source = getattr(m, "source", None)
        if source is not None and getattr(source, "directory", None):
            if getattr(source, "weights_format", "safetensors") != "safetensors":
                # The checker only warns (sglang would torch.load it); the runtime never unpickles.
                files = ", ".join(source.weights_files) or "no weights file"
                raise RuntimeInputError(
                    source.directory, "adapter",
                    f"{files}: {'a pickle, which inkling-compat never unpickles' if source.weights_format == 'pickle' else 'no *.safetensors weights'}"
                    " (the runtime reads safetensors only); convert the weights to safetensors in a trusted environment",
                )
            tensors = pb.read_safetensors(source.directory, list(source.weights_files) or None)
            origin = source.directory
        else:
            shapes = {name: list(spec.shape) for name, spec in m.tensors.items() if name in set(pb.sink_tensor_names(list(m.tensors)))}
            tensors = pb.random_peft_tensors(shapes, gen)
            origin = "random values of the manifest's shapes"
        loaded.append((m, tensors, origin))
    layers = sorted({lid for _, t, _ in loaded for lid in pb.sink_layers(list(t))})
    if layer is None:
        if not layers:
            raise RuntimeInputError("<adapters>", "adapter", "no adapter has shared-sink (shared_experts.*) LoRA factors")
        layer = layers[0]
    pool = geo.empty_pool()
    for slot, (m, tensors, origin) in enumerate(loaded):
        factors, rank, scaling = pb.peft_factors(tensors, m.adapter_config, geo, layer, inkling=inkling, name=m.name)
        if factors is None:
            notes.append(f"slot {slot} {m.name!r}: no shared-sink factors in layer {layer} (slot stays zero)")
            continue
        pb.put_slot(pool, slot, factors, rank, m.name, scaling)
        notes.append(f"slot {slot} {m.name!r}: rank {rank}, scaling {scaling:g}, layer {layer} ({origin})")
    return pool, layer
