"""The shapes of the shared sink's four LoRA buffers in sglang's memory pool on one TP rank.

`LoRAMemoryPool` allocates, per target of the shared-sink MLP, a stacked A and B buffer with one
slot per `--max-loras-per-batch`; the sink's outer axis is 1 when the adapters share their outer
factor (shared-outer) and n otherwise (../shared/reference/inkling_spec.md, section 3).
"""

from __future__ import annotations


def expected_pool_shapes(
    slots: int, n: int, rank: int | None, hidden: int, f_local: int, shared_outer: bool
) -> dict[str, list[int]] | None:
    """mem_pool shapes of the four shared-sink buffers on one TP rank (spec section 3)."""
    if rank is None or n <= 0:
        return None
    outer = 1 if shared_outer else n
    return {
        "gate_up_lora_a": [slots, outer, 2 * rank, hidden],
        "gate_up_lora_b": [slots, n, 2 * f_local, rank],
        "down_lora_a": [slots, n, rank, f_local],
        "down_lora_b": [slots, outer, hidden, rank],
    }
