"""An oracle made of sglang's own LoRA adapter loader (`lora/lora.py` `LoRAAdapter`), on meta tensors.

sglang 0.5.23's `sglang/srt/lora/lora.py` is read from the wheel at test time and executed
whole. What runs for real: `LoRAAdapter.__init__` (one `LoRALayer` per base layer, in an
`nn.ModuleList`), `initialize_weights_from_tensors` -> `_process_weight` (filing each tensor
under `get_layer_id(name)`, the ModuleList's own IndexError past the last layer) and
`_normalize_weights` with every step it calls (`normalize_qkv_proj`,
`normalize_inkling_qkvr_proj`, `_normalize_shared_expert_moe`, `_rename_expert_w_to_proj`,
`_normalize_in_proj`, `_normalize_in_proj_qkvz`, `normalize_gate_up_proj`,
`normalize_fused_qkv_a_proj`), with torch's reshape / transpose / cat / repeat / zeros_like
checking the shapes.

Stand-ins: `LoadConfig`, `BaseLoRABackend`, `DefaultModelLoader`, `AutoConfig` (names only:
the weights come from `initialize_weights_from_tensors`, never from disk); `LoRAConfig` is a
namespace with `hf_config`, `r`, `lora_alpha`, `target_modules`, `lora_added_tokens_size`; the
base config a namespace with `architectures`, `model_type`, `n_shared_experts`,
`num_hidden_layers`. `get_layer_id` (layers/utils/common.py) and
`get_normalized_target_modules` (lora/utils.py), which `_process_weight` calls, are those
functions' own source read from the wheel. No base model is given (`base_model=None`, as for
an adapter loaded before the model's MoE layers exist), so no MoE layer is non-gated.

Tensors are on torch's `meta` device, as a subclass whose `.cpu()` returns the tensor itself
(`_process_weight` calls `.cpu()`, which a meta tensor refuses).
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle import wheel_source
from oracle.sglang_sink import find_wheel

LORA_PATH = "sglang/srt/lora/lora.py"
UTILS_PATH = "sglang/srt/lora/utils.py"
LAYER_UTILS_PATH = "sglang/srt/layers/utils/common.py"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    layers: dict[int, list[tuple[str, list[int]]]] | None = None  # layer -> normalized (name, shape), in dict order
    error_class: str | None = None
    message: str | None = None


def _meta_class() -> type:
    import torch

    class MetaTensor(torch.Tensor):
        """A meta tensor that `.cpu()` leaves where it is."""

        def cpu(self, *args: Any, **kwargs: Any) -> Any:
            return self

    return MetaTensor


@dataclass
class SglangAdapter:
    module: types.ModuleType
    utils_stub: dict[str, Any]
    origin: str
    wheel: Path
    lora_sha256: str
    meta: type
    get_layer_id: Any  # layers/utils/common.get_layer_id, from the wheel

    def tensor(self, shape: list[int]) -> Any:
        import torch

        return torch.empty(tuple(shape), device="meta", dtype=torch.bfloat16).as_subclass(self.meta)

    def adapter(
        self,
        tensors: dict[str, list[int]],
        *,
        r: int,
        target_modules: Any,
        architectures: list[str],
        model_type: str,
        n_shared_experts: int,
        num_hidden_layers: int,
    ) -> Any:
        """sglang's LoRAAdapter holding `tensors` (name -> shape) after initialize_weights_from_tensors;
        raises what sglang raises."""
        config = types.SimpleNamespace(
            hf_config={"peft_type": "LORA"}, r=r, lora_alpha=2 * r, target_modules=target_modules,
            lora_added_tokens_size=0, path="/adapters/generated",
        )
        base = types.SimpleNamespace(
            architectures=architectures, model_type=model_type, n_shared_experts=n_shared_experts,
            num_hidden_layers=num_hidden_layers,
        )
        with wheel_source.installed({"sglang.srt.lora.utils": self.utils_stub}):  # imported at call time
            adapter = self.module.LoRAAdapter("generated", config, base, None, None, None)
            adapter.initialize_weights_from_tensors({name: self.tensor(shape) for name, shape in tensors.items()})
        return adapter

    def load(self, tensors: dict[str, list[int]], **kwargs: Any) -> Outcome:
        """`adapter()`: the normalized layers, or the exception's class and text."""
        try:
            adapter = self.adapter(tensors, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome
            return Outcome(False, error_class=type(exc).__name__, message=str(exc))
        layers = {
            i: [(name, list(t.shape)) for name, t in layer.weights.items()]
            for i, layer in enumerate(adapter.layers)
            if layer.weights
        }
        return Outcome(True, layers=layers)


def load(wheel: Path | None = None) -> SglangAdapter:
    import torch  # noqa: F401 - lora.py imports it

    wheel = wheel or find_wheel()
    source = wheel_source.read(wheel, LORA_PATH)
    origin = f"{wheel}!/{LORA_PATH}"
    layer_ns: dict[str, Any] = {"re": re}
    exec(wheel_source.top_level(wheel_source.read(wheel, LAYER_UTILS_PATH), "get_layer_id"), layer_ns)
    utils_ns: dict[str, Any] = {"Union": typing.Union, "Iterable": typing.Iterable, "Optional": typing.Optional, "Set": typing.Set, "List": typing.List}
    exec(wheel_source.top_level(wheel_source.read(wheel, UTILS_PATH), "get_normalized_target_modules"), utils_ns)
    names = {"LoadConfig": object, "BaseLoRABackend": object, "LoRAConfig": object, "DefaultModelLoader": object, "AutoConfig": object}
    stubs = {
        "sglang.srt.configs.load_config": {"LoadConfig": names["LoadConfig"]},
        "sglang.srt.layers.utils": {"get_layer_id": layer_ns["get_layer_id"]},
        "sglang.srt.lora.backend.base_backend": {"BaseLoRABackend": object},
        "sglang.srt.lora.lora_config": {"LoRAConfig": object},
        "sglang.srt.model_loader.loader": {"DefaultModelLoader": object},
        "sglang.srt.utils.hf_transformers_utils": {"AutoConfig": object},
    }
    module = wheel_source.exec_module(source, origin, "sglang.srt.lora.lora", stubs)
    utils_stub = {"get_normalized_target_modules": utils_ns["get_normalized_target_modules"]}
    return SglangAdapter(module, utils_stub, origin, wheel, wheel_source.sha256(source), _meta_class(), layer_ns["get_layer_id"])
