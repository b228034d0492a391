"""A captured forward: the shared-sink forward for a fixed token count, replayed from a CUDA graph.

Eager, one forward is two to five kernel launches plus Python; at T <= 64 the host side (argument
packing, autotune cache lookups, launches) costs more than the GPU work (0.6-1.0 ms per eager
forward on an H200, against tens of microseconds replayed). :func:`capture_forward`
runs the forward once outside the graph (compiling and, with ``INKLING_AUTOTUNE=1``, tuning every
kernel for this T, so the capture itself never autotunes), captures it into a CUDA graph over
static input buffers, and returns a :class:`CapturedForward`: calling it copies the new inputs
into those buffers and replays the graph (three copies and one replay).

The output is the graph's own buffer, overwritten by the next call (clone it to keep it). The
captured forward holds the operands it was captured with, their derived copies included (the
down shrink's A_cat and, from ``sink.BLAS_MIN_T`` tokens, ``[w13; A_all]``): after any pool
update, in place or not, refresh the operands and capture again.
"""

from __future__ import annotations

from ._triton import torch
from .errors import RuntimeUnavailable
from .sink import SinkOperands, sink_forward_triton


class CapturedForward:
    """``out = captured(x, gammas, slot_ids)`` for exactly ``tokens`` tokens (see module doc)."""

    def __init__(self, ops: SinkOperands, tokens: int, *, lora: bool, dtype: torch.dtype, device: torch.device):
        if tokens <= 0:
            raise ValueError(f"capture: tokens must be positive, got {tokens}")
        if device.type != "cuda":
            raise RuntimeUnavailable("capture: CUDA graphs need a CUDA device (use the eager forward on the CPU)")
        self.tokens = tokens
        self.lora = lora and ops.has_pool
        self.x = torch.zeros((tokens, ops.hidden), dtype=dtype, device=device)
        self.gammas = torch.zeros((tokens, ops.n), dtype=dtype, device=device)
        self.slot_ids = torch.full((tokens,), -1, dtype=torch.int64, device=device)
        ids = self.slot_ids if self.lora else None
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):  # compile (and autotune) outside the capture
            sink_forward_triton(ops, self.x, self.gammas, ids)
        torch.cuda.current_stream(device).wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = sink_forward_triton(ops, self.x, self.gammas, ids)

    def __call__(self, x: torch.Tensor, gammas: torch.Tensor, slot_ids: torch.Tensor | None = None) -> torch.Tensor:
        x = x.reshape(-1, self.x.shape[1])
        if x.shape[0] != self.tokens:
            raise ValueError(f"captured for {self.tokens} tokens, got {x.shape[0]}")
        self.x.copy_(x)
        self.gammas.copy_(gammas.reshape(self.gammas.shape))
        if self.lora:
            if slot_ids is None:
                self.slot_ids.fill_(-1)
            else:
                self.slot_ids.copy_(slot_ids.reshape(-1))
        self.graph.replay()
        return self.out


def capture_forward(ops: SinkOperands, tokens: int, *, lora: bool = True, dtype: torch.dtype | None = None) -> CapturedForward:
    """Capture the forward of ``ops`` for ``tokens`` tokens (LoRA path when ``lora`` and the
    operands hold a pool; slot ids of -1 then run the base path inside the same graph)."""
    return CapturedForward(ops, tokens, lora=lora, dtype=dtype or ops.w13_lin.dtype, device=ops.w13_lin.device)
