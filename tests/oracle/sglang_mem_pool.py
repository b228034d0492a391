"""An oracle made of sglang's own LoRA memory pool (`lora/mem_pool.py`), on meta tensors.

sglang 0.5.23's `sglang/srt/lora/mem_pool.py` and `sglang/srt/lora/utils.py` are read from the
wheel at test time and executed whole. What runs for real:

* `LoRAMemoryPool.__init__` and `init_buffers`: which buffers exist (`gate_up_proj` /
  `down_proj`, their routed `_moe` and shared-sink `_shared_moe` forms) and their shapes
  (`get_lora_A_shape` / `get_lora_B_shape`, `_effective_tp_size`,
  `_column_parallel_lora_b_per_rank_dim`, `divide` from distributed/utils.py), with
  `get_hidden_dim` and `get_stacked_multiply` of sglang's `InklingForConditionalGeneration`
  (models/inkling.py, the two methods' own source bound to a stand-in model);
* `load_lora_weight_to_buffer`: the target-module match, the routing of shared-expert factors
  (3-D packed or `shared_experts.<e>.` per expert) into the `_shared_moe` buffers, the sink's
  `slice_moe_lora_{a,b}_weights` (sglang's `inkling_common/lora.py`, via `sglang_sink`), the
  shared-outer checks, and `load_lora_weight_tensor`'s `LoRA buffer shape ... does not match
  weight shape ...` assertion, then the copies (meta tensors: shapes checked, nothing stored);
* before it, `LoRAManager.validate_new_adapter` (lora_manager.py, the method's own source bound
  to a namespace with the manager's attributes it reads: no adapters loaded yet, none
  pinned, attention DP off) with the pool's real `can_support`;
* the adapter it loads is sglang's own `LoRAAdapter` after `initialize_weights_from_tensors`
  (`sglang_adapter`).

Stand-ins: `get_parallel()` (tp size/rank 0, attention TP = TP, MoE TP = TP, EP 1),
`is_pin_memory_available()` False (nothing is pinned), `get_eviction_policy`, `LoRARef`,
`LoRAConfig`, `AutoConfig`, `ForwardBatch` (names only), `envs.SGLANG_EXPERIMENTAL_LORA_OPTI`
False, `BaseLayerWithLoRA` / `unwrap_lora_layer`, a `FusedMoE` / `FusedMoEWithLoRA` class for the
routed experts (a module that holds no weights: the adapter has none for them), and the base
model: an `nn.Module` with the config namespace, one meta parameter (the buffers' device), the
routed-experts stand-in and the shared sink as children, and 16 layers whose `mlp` is not a
dense MLP (dense_mlp_idx 0: every layer is MoE). Every TP rank's copy is run, in rank order,
on the same pool.
"""

from __future__ import annotations

import logging
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle import sglang_adapter, sglang_sink, wheel_source
from oracle.sglang_sink import find_wheel

MEM_POOL_PATH = "sglang/srt/lora/mem_pool.py"
UTILS_PATH = "sglang/srt/lora/utils.py"
DISTRIBUTED_UTILS_PATH = "sglang/srt/distributed/utils.py"
INKLING_PATH = "sglang/srt/models/inkling.py"
MANAGER_PATH = "sglang/srt/lora/lora_manager.py"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    error_class: str | None = None
    message: str | None = None
    step: str | None = None  # "adapter" (LoRAAdapter), "pool" (init), "load" (load_lora_weight_to_buffer)
    buffers: dict[str, list[int]] | None = None  # shared-sink buffer shapes of layer 0
    rank: int | None = None  # the TP rank whose copy raised


@dataclass
class SglangMemPool:
    module: types.ModuleType
    utils: types.ModuleType
    adapter_oracle: sglang_adapter.SglangAdapter
    sink_oracle: sglang_sink.SglangSink
    inkling_methods: dict[str, Any]
    validate_new_adapter: Any  # LoRAManager.validate_new_adapter (lora_manager.py), unbound
    layer_stubs: dict[str, Any]
    wheel: Path
    mem_pool_sha256: str

    def _base_model(self, setup: Any, num_layers: int, sink: Any) -> Any:
        import torch

        config = types.SimpleNamespace(
            hidden_size=setup.hidden, intermediate_size=setup.intermediate, n_shared_experts=setup.n,
            n_routed_experts=8, num_hidden_layers=num_layers, vocab_size=201024,
        )
        methods = self.inkling_methods

        class InklingStandIn(torch.nn.Module):
            get_hidden_dim = methods["get_hidden_dim"]
            get_stacked_multiply = methods["get_stacked_multiply"]

        model = InklingStandIn()
        model.config = config
        model.text_config = config
        model.anchor = torch.nn.Parameter(torch.empty(1, device="meta"))
        model.routed = self.layer_stubs["FusedMoE"]()
        model.sink = sink
        model.llm = types.SimpleNamespace(layers=[types.SimpleNamespace(mlp=object()) for _ in range(num_layers)])
        return model

    def _sink(self, setup: Any) -> Any:
        sink = self.sink_oracle.layer(setup.sink_class, n=setup.n, tp_size=setup.tp, f_local=setup.f_local, linearized=True, contiguous=True)
        name = "triton_v2" if setup.sink_class == "v2" else setup.legacy_backend
        sink.initialize_lora(sglang_sink.FakeBackend(name, setup.slots, object()))
        return sink

    def load(
        self, setup: Any, adapter_kwargs: dict[str, Any], tensors: dict[str, list[int]], num_layers: int,
        order: tuple[str, ...] = ("gate_up_proj", "down_proj"),
        dense_layers: int = 0,
    ) -> list[Outcome]:
        """A pool for `setup` (its server config and model), LoRAManager.validate_new_adapter,
        LoRAAdapter(tensors), then load_lora_weight_to_buffer into slot 0: the first exception, or
        ok; one outcome per buffer order in `order` (the module visited first), the same for all
        when the failure comes before the copy. The first `dense_layers` layers hold no LoRA
        module (Inkling's dense-MLP layers)."""
        import torch

        sink = self._sink(setup)
        base = self._base_model(setup, num_layers, sink)
        parallel = types.SimpleNamespace(
            tp_size=setup.tp, tp_rank=0, attn_tp_size=setup.tp, moe_ep_size=1, moe_ep_rank=0, moe_tp_size=setup.tp, moe_tp_rank=0,
        )
        self.module.get_parallel = lambda: parallel
        targets = self.utils.get_normalized_target_modules(["gate_up_proj", "down_proj"])
        with wheel_source.installed(self.stub_tree()):
            # The order of sglang's LoRAManager: the pool exists (init_memory_pool), then
            # load_lora_adapter validates the adapter's config against it, builds the
            # LoRAAdapter, and the first batch that uses it copies it into a slot.
            try:
                pool = self.module.LoRAMemoryPool(
                    base.config, setup.slots, torch.bfloat16, setup.rank, targets, base, "lru", 0,
                    experts_shared_outer_loras=setup.shared_outer,
                )
            except Exception as exc:  # noqa: BLE001
                return [Outcome(False, type(exc).__name__, str(exc), "pool")] * len(order)
            buffers = {
                f"{kind}:{name}": list(buf[name][0].shape)
                for kind, buf in (("A", pool.A_buffer), ("B", pool.B_buffer))
                for name in buf
                if name.endswith("_shared_moe")
            }
            config = types.SimpleNamespace(
                r=adapter_kwargs["r"], target_modules=adapter_kwargs["target_modules"], lora_added_tokens_size=0, use_dora=False,
            )
            manager = types.SimpleNamespace(attn_dp_enabled=False, lora_refs={}, memory_pool=pool, num_pinned_loras=0, max_loras_per_batch=setup.slots)
            ref = types.SimpleNamespace(lora_name="generated", lora_path="/adapters/generated", pinned=False)
            try:
                self.validate_new_adapter(manager, config, ref)
            except Exception as exc:  # noqa: BLE001
                return [Outcome(False, type(exc).__name__, str(exc), "validate", buffers)] * len(order)
            try:
                adapter = self.adapter_oracle.adapter(tensors, num_hidden_layers=num_layers, **adapter_kwargs)
            except Exception as exc:  # noqa: BLE001
                return [Outcome(False, type(exc).__name__, str(exc), "adapter", buffers)] * len(order)
            # Layers below `dense_layers` are dense MLPs (Inkling's dense_mlp_idx): no routed experts,
            # no sink, and no LoRA module the adapter's MLP factors could go to.
            modules = [{} if i < dense_layers else {"mlp.experts": base.routed, "mlp.shared_experts": sink} for i in range(num_layers)]
            # load_lora_weight_to_buffer visits the buffers in the pool's dict order, which
            # init_buffers takes from iterating the *set* --lora-target-modules: gate_up_proj
            # before down_proj or after, as the process's string hash seed falls. Both orders.
            # Every TP rank loads its own cut (the pool's shapes are the same on each); the
            # outcome of an order is that of the lowest rank that raises.
            results = []
            for first in order:
                for buf in (pool.A_buffer, pool.B_buffer):
                    items = sorted(buf.items(), key=lambda kv: not kv[0].startswith(first))
                    buf.clear()
                    buf.update(items)
                result = Outcome(True, buffers=buffers)
                for rank in range(setup.tp):
                    pool.tp_rank = pool.moe_tp_rank = sink.moe_tp_rank = base.routed.moe_tp_rank = rank
                    try:
                        pool.load_lora_weight_to_buffer("generated", 0, adapter, modules, None, None)
                    except Exception as exc:  # noqa: BLE001
                        result = Outcome(False, type(exc).__name__, str(exc), "load", buffers, rank)
                        break
                results.append(result)
        return results

    def stub_tree(self) -> dict[str, dict[str, Any]]:
        return {"sglang.srt.lora.layers": self.layer_stubs, "sglang.srt.layers.moe.fused_moe_triton.layer": {"FusedMoE": self.layer_stubs["FusedMoE"]}}


def _layer_stubs() -> dict[str, Any]:
    import torch

    class BaseLayerWithLoRA(torch.nn.Module):
        pass

    class FusedMoE(torch.nn.Module):
        """Routed experts: no weights; what the pool reads (is_shared_fused_moe, moe_tp_rank)."""

        is_shared_fused_moe = False
        moe_tp_rank = 0

    class FusedMoEWithLoRA(BaseLayerWithLoRA):
        pass

    # The routed stand-in counts as both (a FusedMoE module, wrapped for LoRA).
    class RoutedExperts(FusedMoEWithLoRA, FusedMoE):
        pass

    def unwrap_lora_layer(module: Any) -> Any:
        return getattr(module, "base_layer", module)

    return {"BaseLayerWithLoRA": BaseLayerWithLoRA, "FusedMoEWithLoRA": FusedMoEWithLoRA, "FusedMoE": RoutedExperts, "unwrap_lora_layer": unwrap_lora_layer}


def load(wheel: Path | None = None) -> SglangMemPool:
    import torch  # noqa: F401

    wheel = wheel or find_wheel()
    adapter_oracle = sglang_adapter.load(wheel)
    sink_oracle = sglang_sink.load(wheel)
    origin_utils = f"{wheel}!/{UTILS_PATH}"
    utils = wheel_source.exec_module(
        wheel_source.read(wheel, UTILS_PATH), origin_utils, "sglang.srt.lora.utils",
        {"sglang.srt.model_executor.forward_batch_info": {"ForwardBatch": object}, "sglang.srt.utils.hf_transformers_utils": {"AutoConfig": object}},
    )
    dist: dict[str, Any] = {}
    dist_source = wheel_source.read(wheel, DISTRIBUTED_UTILS_PATH)
    for name in ("ensure_divisibility", "divide"):
        exec(wheel_source.top_level(dist_source, name), dist)
    inkling_source = wheel_source.read(wheel, INKLING_PATH)
    inkling_ns: dict[str, Any] = {"torch": torch, "InklingDenseMLP": type("InklingDenseMLP", (), {})}
    methods: dict[str, Any] = {}
    for name in ("get_hidden_dim", "get_stacked_multiply"):
        exec("from __future__ import annotations\n" + wheel_source.method(inkling_source, "InklingForConditionalGeneration", name), inkling_ns)
        methods[name] = inkling_ns[name]
    layer_stubs = _layer_stubs()
    manager_ns: dict[str, Any] = {"logger": logging.getLogger("sglang.srt.lora.lora_manager")}
    exec(wheel_source.method(wheel_source.read(wheel, MANAGER_PATH), "LoRAManager", "validate_new_adapter"), manager_ns)
    envs = types.SimpleNamespace(SGLANG_EXPERIMENTAL_LORA_OPTI=types.SimpleNamespace(get=lambda: False))
    source = wheel_source.read(wheel, MEM_POOL_PATH)
    stubs = {
        "sglang.srt.distributed": {"divide": dist["divide"]},
        "sglang.srt.environ": {"envs": envs},
        "sglang.srt.layers.utils": {"get_layer_id": adapter_oracle.get_layer_id},
        "sglang.srt.lora.eviction_policy": {"get_eviction_policy": lambda policy: None},
        "sglang.srt.lora.layers": layer_stubs,
        "sglang.srt.lora.lora": {"LoRAAdapter": adapter_oracle.module.LoRAAdapter},
        "sglang.srt.lora.lora_config": {"LoRAConfig": object},
        "sglang.srt.lora.lora_registry": {"LoRARef": object},
        "sglang.srt.lora.utils": utils.__dict__,
        "sglang.srt.runtime_context": {"get_parallel": None},
        "sglang.srt.utils": {"is_pin_memory_available": lambda: False},
        "sglang.srt.utils.hf_transformers_utils": {"AutoConfig": object},
    }
    module = wheel_source.exec_module(source, f"{wheel}!/{MEM_POOL_PATH}", "sglang.srt.lora.mem_pool", stubs)
    return SglangMemPool(module, utils, adapter_oracle, sink_oracle, methods, manager_ns["validate_new_adapter"], layer_stubs, wheel, wheel_source.sha256(source))
