"""Target-module names as sglang 0.5.23 normalizes them (no torch).

Mirrors `lora/utils.py` `get_normalized_target_modules` (l.277-327): every name's last dotted
part goes through `params_mapping`; the PEFT shorthands `all` / `all-linear` become the `all`
sentinel; and classifies `target_modules` as `LoRAConfig.__init__` (lora/lora_config.py
l.42-60) receives it from adapter_config.json.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

# get_normalized_target_modules `params_mapping`, exactly as in 0.5.23. Inkling's split
# attention names (wq_du, wk_dv, wv_dv, wr_du) and w1/w2/w3 are *not* in it: they stay as
# written (and are not valid pool targets; their weights are renamed later).
TARGET_ALIASES = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
    "out_proj": "out_proj",
    "embed_tokens": "embed_tokens",
    "vocab_emb": "embed_tokens",
    "embeddings": "embed_tokens",
    "word_embeddings": "embed_tokens",
    "lm_head": "lm_head",
    "output": "lm_head",
    "unembed_tokens": "lm_head",
    "q_a_proj": "fused_qkv_a_proj_with_mqa",
    "kv_a_proj_with_mqa": "fused_qkv_a_proj_with_mqa",
    "wq_b": "indexer.wq_b",
    "wk": "indexer.wk",
    "weights_proj": "indexer.weights_proj",
}
SHORTHANDS = ("all", "all-linear")


def normalized_targets(target_modules: Any) -> list[str]:
    """get_normalized_target_modules, sorted: suffixes mapped through `params_mapping`; the
    PEFT shorthands become the `all` sentinel. A dict iterates its keys as sglang does;
    anything else (a regex string, null, a number) gives no targets (sglang raises on those;
    the rules report it from `target_kind`)."""
    if isinstance(target_modules, str):
        return ["all"] if target_modules in SHORTHANDS else []
    if not isinstance(target_modules, (list, dict)):
        return []
    names = {str(name).split(".")[-1] for name in target_modules}
    return sorted({TARGET_ALIASES.get(name, name) for name in names})


def target_kind(raw: dict[str, Any]) -> str:
    """missing | list | shorthand | string | dict | none | other (a number or bool)."""
    if "target_modules" not in raw:
        return "missing"
    value = raw["target_modules"]
    if value is None:
        return "none"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "shorthand" if value in SHORTHANDS else "string"
    if isinstance(value, dict):
        return "dict"
    return "other"
