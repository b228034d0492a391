"""Small real PEFT adapter directories, written with the `safetensors` library in PEFT naming.

Shapes follow the bundled example model (examples/config.json: hidden 1536, intermediate 768,
2 shared experts, 16 layers); the rank is small so each file stays small.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

H, I, N = 1536, 768, 2
PREFIX = "base_model.model.llm.layers.{layer}.mlp.shared_experts"
# A LoRA server config that fits the bundled examples' model (rank 16, shared outer).
SERVE = {
    "enable_lora": True,
    "lora_backend": "triton",
    "max_loras_per_batch": 4,
    "max_lora_rank": 16,
    "lora_target_modules": ["gate_up_proj", "down_proj"],
    "experts_shared_outer_loras": True,
    "dtype": "bfloat16",
}
CONFIG = {
    "peft_type": "LORA",
    "task_type": "CAUSAL_LM",
    "base_model_name_or_path": "inkling",
    "r": 4,
    "lora_alpha": 8,
    "lora_dropout": 0.0,
    "target_modules": ["gate_up_proj", "down_proj"],
    "use_rslora": False,
    "use_dora": False,
    "modules_to_save": None,
}


def sink_shapes(r: int = 4, layers: tuple[int, ...] = (0, 1), hidden: int = H, inter: int = I, n: int = N) -> dict[str, list[int]]:
    """Flat (PEFT) shared-sink factors: gate_up A [r, H], B [n*2I, r]; down A [r, n*I], B [H, r]."""
    out = {}
    for layer in layers:
        p = PREFIX.format(layer=layer)
        out[f"{p}.gate_up_proj.lora_A.weight"] = [r, hidden]
        out[f"{p}.gate_up_proj.lora_B.weight"] = [n * 2 * inter, r]
        out[f"{p}.down_proj.lora_A.weight"] = [r, n * inter]
        out[f"{p}.down_proj.lora_B.weight"] = [hidden, r]
    return out


def write_adapter(
    folder: Path,
    shapes: dict[str, list[int]] | None = None,
    config: dict[str, Any] | None = None,
    *,
    r: int = 4,
    added_tokens: dict[str, int] | None = None,
    dtype: torch.dtype = torch.bfloat16,
) -> Path:
    """A PEFT adapter directory: adapter_config.json + adapter_model.safetensors (+ added_tokens.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    shapes = sink_shapes(r=r) if shapes is None else shapes
    gen = torch.Generator().manual_seed(len(shapes))
    tensors = {name: torch.randn(shape, generator=gen).to(dtype) for name, shape in shapes.items()}
    save_file(tensors, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    cfg = dict(CONFIG, r=r, lora_alpha=2 * r)
    cfg.update(config or {})
    (folder / "adapter_config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    if added_tokens is not None:
        (folder / "added_tokens.json").write_text(json.dumps(added_tokens), encoding="utf-8")
    return folder


def safetensors_bytes(header: dict[str, Any], data: bytes, pad: bool = True) -> bytes:
    """A safetensors file from a header object and data bytes (for hand-made broken files)."""
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data
