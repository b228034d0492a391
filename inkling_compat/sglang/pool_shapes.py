"""The shared sink's LoRA pool as sglang 0.5.23 allocates it at start-up, on one TP rank.

`LoRAMemoryPool` allocates, per target of the shared-sink MLP, a stacked A and B buffer with one
slot per `--max-loras-per-batch`; the sink's outer axis is 1 when the adapters share their outer
factor (shared-outer) and n otherwise (../shared/reference/inkling_spec.md, section 3). R and
the layout are decided once, by LoRAManager.init_state, from the arguments or the start-up
adapters (`startup_pool`); allocating the buffers can fail (`allocation_failure`).
"""

from __future__ import annotations

from inkling_compat.sglang.plain_dataclass import dataclass

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence

Shape = tuple[int, ...]


@dataclass(frozen=True)
class BufferShapes:
    """The four shared-sink buffer shapes of one TP rank: [S, E_a, 2R, H], [S, n, 2F, R],
    [S, n, R, F], [S, E_b, H, R]."""

    gate_up_lora_a: Shape
    gate_up_lora_b: Shape
    down_lora_a: Shape
    down_lora_b: Shape

    def items(self) -> tuple[tuple[str, Shape], ...]:
        return (
            ("gate_up_lora_a", self.gate_up_lora_a),
            ("gate_up_lora_b", self.gate_up_lora_b),
            ("down_lora_a", self.down_lora_a),
            ("down_lora_b", self.down_lora_b),
        )


@dataclass(frozen=True)
class StartupAdapter:
    """What init_lora_shapes and _detect_shared_outer_loras read of one start-up adapter."""

    rank: int | None
    shared_outer: bool | None


@dataclass(frozen=True)
class AllocationFailure:
    """What allocating the pool raises: the error class, the bytes the buffers take, and R."""

    error_class: str
    bytes: int
    rank: int


@dataclass(frozen=True)
class StartupPool:
    """The pool sglang allocates: its buffers, the shared-outer layout, R, and the allocation's
    failure (None: it may fit)."""

    buffers: BufferShapes
    shared_outer: bool
    rank: int
    allocation: AllocationFailure | None


def expected_pool_shapes(slots: int, n: int, rank: int | None, hidden: int, f_local: int, shared_outer: bool) -> BufferShapes | None:
    """mem_pool shapes of the four shared-sink buffers on one TP rank (spec section 3)."""
    if rank is None or n <= 0:
        return None
    outer = 1 if shared_outer else n
    return BufferShapes(
        gate_up_lora_a=(slots, outer, 2 * rank, hidden),
        gate_up_lora_b=(slots, n, 2 * f_local, rank),
        down_lora_a=(slots, n, rank, f_local),
        down_lora_b=(slots, outer, hidden, rank),
    )


def startup_pool(
    slots: int,
    n: int,
    hidden: int,
    f_local: int,
    num_layers: int,
    max_lora_rank: int | None,
    experts_shared_outer_loras: bool | None,
    startup: Sequence[StartupAdapter],
) -> StartupPool | None:
    """The four shared-sink buffer shapes sglang allocates, with R and the shared-outer layout
    decided the way LoRAManager.init_state decides them: from --max-lora-rank /
    --experts-shared-outer-loras when given, else from the **start-up** adapters `startup`
    (init_lora_shapes, _detect_shared_outer_loras; nothing detected means per-expert).
    Adapters loaded at run time never change the pool (None: R unknown, or no shared experts)."""
    # lora_manager.py l.893: `if max_lora_rank is not None` keeps a given 0 (a rank-0 pool;
    # the argparse-level assertion that tests its truthiness is lora_hook.py l.152's).
    rank = max_lora_rank if max_lora_rank is not None else max((a.rank for a in startup if isinstance(a.rank, int)), default=None)
    if experts_shared_outer_loras is not None:
        shared_outer = bool(experts_shared_outer_loras)
    else:
        detected = [a.shared_outer for a in startup if a.shared_outer is not None]
        shared_outer = bool(detected) and bool(detected[0])
    buffers = expected_pool_shapes(slots, n, rank, hidden, f_local, shared_outer)
    if buffers is None or rank is None:
        return None
    return StartupPool(buffers=buffers, shared_outer=shared_outer, rank=rank, allocation=allocation_failure(buffers, rank, num_layers))


# The bytes past which no GPU holds the pool: 1 TiB, several times the largest GPU memory
# (H200 141 GB, B200 180 GB, B300 288 GB), so a pool this large fails on every platform.
GPU_BYTES_BOUND = 1 << 40
_INT64_MAX = (1 << 63) - 1


def allocation_failure(buffers: BufferShapes, rank: int, num_layers: int) -> AllocationFailure | None:
    """What allocating the pool raises, for a rank that sizes it past any GPU (None: it may fit).

    mem_pool.py init_buffers (l.606-700) allocates, for every target module and each of the
    model's num_layer layers, `torch.zeros(shape, dtype=bf16)` with the rank (times the
    module's stack count) in the shape: the four shared-sink buffers alone take
    num_layers x their elements x 2 bytes. torch refuses a size past a 64-bit int while it
    parses the shape (TypeError "Overflow when unpacking long"), a storage of more than 2**63
    bytes (RuntimeError "Storage size calculation overflowed") and memory the device does not
    have (torch.OutOfMemoryError, a RuntimeError). A negative rank is the other failure
    (lora-pool-rank-negative); ranks of real adapters (<= 2**16) never come near this."""
    if rank < 0:
        return None
    shapes = [shape for _, shape in buffers.items()]
    total = max(num_layers, 1) * 2 * sum(_numel(shape) for shape in shapes)
    if total <= GPU_BYTES_BOUND:
        return None
    error = "TypeError" if max(d for shape in shapes for d in shape) > _INT64_MAX else "RuntimeError"
    return AllocationFailure(error_class=error, bytes=total, rank=rank)


def _numel(shape: Shape) -> int:
    out = 1
    for d in shape:
        out *= max(d, 0)
    return out
