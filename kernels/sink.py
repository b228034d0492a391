"""The shared-sink forward with multi-slot LoRA, composed of the three Triton kernels.

One forward (spec sections 1.4 and 6), the split path::

    routing   = plan_for(slot_ids).routing                   # once per batch (plan.py), no host sync
    bridge_gu = lora_shrink(x, A_gu)                         # [T, E_a*2R], sorted rows
    act       = gate_up_swiglu(x, w13_lin, gammas, bridge_gu, B_gu)   # base + delta + SwiGLU
    bridge_dn = lora_shrink(act, A_down)                     # [T, R] or [T, n*R]
    out       = down_proj(act, w2_lin, bridge_dn, B_down)    # base + delta, back to token order

Four launches per layer for a LoRA batch plus the routing once per batch, two for a base-only
one (``slot_ids`` None, or a batch whose plan knows no token has an adapter). At small T both
shrinks split K over more programs (``choose_split``), reduced inside the shrink launch in a
fixed order. The fused path (few slot groups:
:func:`use_fused`) is three launches: the routing, then each GEMM with its shrink in its own K
loop (``a_gu=`` / ``shrink_a=``), over tiles cut per slot group so a tile has one slot; for
one token two launches (no routing: each kernel reads the token's slot, ``OneToken``).
The library-GEMM path (:func:`use_blas`: CUDA, T >= ``BLAS_MIN_T``) hands the two base GEMMs
to cuBLAS (``torch.mm``) and keeps the LoRA and the epilogues in Triton: the gate/up kernel
loads y instead of running its K loop, and the down kernel adds only the delta to the library's
output (``forward_blas``). ``SinkOperands``
holds the base weights in their linearized views and the four pool buffers plus derived copies:
the two down operands and, on the library-GEMM path, ``[w13; A_all]`` (like sglang's
``_a_cat``/``_down_cat``). They are copies: after changing the pool buffers in place, call
:meth:`SinkOperands.refresh` (and capture again), or the forward reads the old adapters.
:func:`sink_forward_torch` is the same forward in plain torch (the benchmark's torch LoRA path).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._triton import launch_cache, torch
from .down_proj import down_proj
from .gate_up_swiglu import gate_up_swiglu
from .lora_shrink import caps_of, choose_split, counters_needed, lora_shrink
from .plan import BatchPlan, plan_for
from .routing import OneToken, SlotRouting, build_routing


@dataclass
class SinkOperands:
    """Base weights (linearized) and the LoRA pool of one shared sink on one TP rank."""

    w13_lin: torch.Tensor  # [n*2F, H]
    w2_lin: torch.Tensor  # [n*F, H]
    n: int
    interleaved: bool  # w13 gate/up rows interleaved (legacy) or contiguous halves (V2)
    gate_up_a: torch.Tensor | None = None  # [S, E_a, 2R, H]
    gate_up_b: torch.Tensor | None = None  # [S, n, 2F, R], B pre-scaled
    down_a: torch.Tensor | None = None  # [S, n, R, F]
    down_b: torch.Tensor | None = None  # [S, E_b, H, R], B pre-scaled
    slot_active: torch.Tensor | None = None  # [S] bool: slot holds an adapter
    # derived, see refresh()
    _down_shrink_a: torch.Tensor | None = None
    _down_expand_b: torch.Tensor | None = None
    _w13_ext: torch.Tensor | None = None  # [n*2F + S*E_a*2R, H]: w13_lin, then every slot's gate/up A
    _active_u8: torch.Tensor | None = None
    _active_key: tuple[bool, ...] | None = None
    _counters: torch.Tensor | None = None

    @property
    def hidden(self) -> int:
        return self.w13_lin.shape[1]

    @property
    def f_local(self) -> int:
        return self.w2_lin.shape[0] // self.n

    @property
    def has_pool(self) -> bool:
        return self.gate_up_a is not None

    @property
    def slots(self) -> int:
        return self.gate_up_a.shape[0] if self.has_pool else 0

    @property
    def rank(self) -> int:
        return self.gate_up_b.shape[3] if self.has_pool else 0

    @property
    def shared_outer(self) -> bool:
        return self.has_pool and self.gate_up_a.shape[1] == 1

    def active_u8(self) -> torch.Tensor:
        """``slot_active`` as uint8 (what the one-token kernels read), made once per refresh."""
        if self._active_u8 is None:
            self._active_u8 = self.slot_active.to(torch.uint8).contiguous()
        return self._active_u8

    def active_key(self) -> tuple[bool, ...] | None:
        """``slot_active`` read on the host, once per refresh (the plan's key: layers whose slots
        read the same share one plan); None inside a capture when not read before."""
        if self._active_key is None and self.slot_active is not None:
            if self.slot_active.is_cuda and torch.cuda.is_current_stream_capturing():
                return None
            self._active_key = tuple(bool(v) for v in self.slot_active.tolist())
        return self._active_key

    def counters(self, need: int, device: torch.device) -> torch.Tensor:
        """Zeroed int32 arrival counters of the split shrinks (each split launch leaves its
        counters zero again), kept with the operands so a forward allocates none. Inside a CUDA
        graph capture a buffer not made beforehand is made for that forward alone."""
        buf = self._counters
        if buf is None or buf.numel() < need or buf.device != device:
            buf = torch.zeros(max(need, 256), dtype=torch.int32, device=device)
            if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
                return buf
            self._counters = buf
        return buf

    def refresh(self) -> "SinkOperands":
        """(Re)build the derived operands from the pool buffers."""
        self._w13_ext = None
        self._active_u8 = None
        self._active_key = None
        if not self.has_pool:
            return self
        S, n, R, F = self.down_a.shape
        if self.shared_outer:
            # A_cat[s, k, e*F + j] = A_dn[s, e, k, j]; the expand reads B_dn[:, 0] in place.
            self._down_shrink_a = self.down_a.permute(0, 2, 1, 3).reshape(S, R, n * F).contiguous()
            self._down_expand_b = self.down_b[:, 0]
        else:
            # Windowed shrink over A_dn itself; B_cat[s, h, e*R + k] = B_dn[s, e, h, k].
            self._down_shrink_a = self.down_a.reshape(S, n * R, F)
            H = self.down_b.shape[2]
            self._down_expand_b = self.down_b.permute(0, 2, 1, 3).reshape(S, H, n * R).contiguous()
        if self.slot_active is None:
            self.slot_active = torch.ones(S, dtype=torch.bool, device=self.gate_up_a.device)
            self._active_key = (True,) * S
        else:
            self.active_key()
        return self


def gate_up_ext(ops: SinkOperands) -> torch.Tensor:
    """``[w13_lin; A_all]`` [n*2F + S*E_a*2R, H], built on first use after :meth:`SinkOperands.refresh`:
    one library GEMM then gives y and every slot's gate/up shrink (S*E_a*2R more output columns,
    3-17 % more N at the benchmark's shapes) instead of a shrink launch that reads x again.
    ``w13_lin`` becomes a view of its first rows, so the operands hold the weights once (a
    caller that keeps its own w13 tensor, as ``SharedSink`` keeps the unlinearized one for the
    reference, holds them a second time)."""
    if ops._w13_ext is None:
        rows = ops.w13_lin.shape[0]
        S, E_a, R2, H = ops.gate_up_a.shape
        ext = torch.empty((rows + S * E_a * R2, H), dtype=ops.w13_lin.dtype, device=ops.w13_lin.device)
        ext[:rows].copy_(ops.w13_lin)
        ext[rows:].copy_(ops.gate_up_a.reshape(S * E_a * R2, H))
        ops.w13_lin = ext[:rows]
        ops._w13_ext = ext
    return ops._w13_ext


def _flatten(x: torch.Tensor, gammas: torch.Tensor, n: int, hidden: int) -> tuple[torch.Tensor, torch.Tensor]:
    # sglang's forward asserts (spec 5.4), with the same texts.
    assert x.ndim in (2, 3), f"{x.shape=}"
    assert gammas.ndim in (2, 3), f"{gammas.shape=}"
    assert gammas.size(-1) == n, f"{gammas.shape=} {n=}"
    x_td = x.reshape(-1, hidden)
    g_td = gammas.reshape(-1, n)
    if g_td.shape[0] != x_td.shape[0]:
        raise ValueError(f"gammas give {g_td.shape[0]} tokens, x gives {x_td.shape[0]}")
    return x_td.contiguous(), g_td


def sink_forward_triton(
    ops: SinkOperands,
    x: torch.Tensor,
    gammas: torch.Tensor,
    slot_ids: torch.Tensor | None = None,
    *,
    routing: SlotRouting | None = None,
    plan: BatchPlan | None = None,
) -> torch.Tensor:
    """out [T, H] (dtype of x). ``slot_ids`` [T] (-1 = no adapter) or None for base only.

    ``plan``: the batch's plan (``plan.build_plan``), built once for every layer; without it
    the plan kept with the ``slot_ids`` tensor is used or built (``plan.plan_for``). A batch
    whose plan knows that no token has an adapter runs the base path. ``routing``: a routing
    built by the caller (the plan is then not used)."""
    x_td, g_td = _flatten(x, gammas, ops.n, ops.hidden)
    T = x_td.shape[0]
    if not ops.has_pool or (slot_ids is None and plan is None and routing is None):
        return forward_base(ops, x_td, g_td)
    if ops._down_shrink_a is None:
        ops.refresh()
    if routing is None:
        if plan is None:
            ids = slot_ids if isinstance(slot_ids, torch.Tensor) else torch.as_tensor(slot_ids)
            plan = plan_for(ids, ops.slots, x_td.device, slot_active=ops.slot_active, active_key=ops.active_key())
        if plan.num_tokens != T:
            raise ValueError(f"the batch plan is for {plan.num_tokens} tokens, x gives {T}")
        if plan.all_unassigned:
            return forward_base(ops, x_td, g_td)
        if plan.routing is None:  # one token: the fused kernels read its slot themselves
            if use_fused(ops, 1):
                return forward_fused(ops, x_td, g_td, OneToken(plan.slot_ids, ops.active_u8(), ops.slots))
            routing = build_routing(plan.slot_ids, ops.slots, ops.slot_active)
        else:
            routing = plan.routing
    if use_blas(ops, T, lora=True) and routing.group_start is not None:
        return forward_blas(ops, x_td, g_td, routing)
    if use_fused(ops, T) and routing.group_start is not None:
        return forward_fused(ops, x_td, g_td, routing)
    return forward_split(ops, x_td, g_td, routing)


def forward_base(ops: SinkOperands, x_td: torch.Tensor, g_td: torch.Tensor) -> torch.Tensor:
    """The base MLP alone: the library GEMMs on CUDA (eager at every T; inside a CUDA-graph
    capture from ``BLAS_MIN_T_BASE`` tokens), else the two Triton GEMM kernels."""
    if use_blas(ops, x_td.shape[0], lora=False):
        return forward_blas(ops, x_td, g_td, None)
    act = gate_up_swiglu(x_td, ops.w13_lin, g_td, ops.n, interleaved=ops.interleaved)
    return down_proj(act, ops.w2_lin)


# From how many tokens the base GEMMs go to the library (cuBLAS through torch.mm) and the Triton
# kernels keep the LoRA and the epilogues. With LoRA the library path also folds the shrinks into
# library GEMMs, which pays from the smallest T measured past one token (T = 4); T = 1 keeps the
# fused path (two launches). Base only, the library's GEMMs win from T = 32 and tie at 16
# (benchmarks/ops/blas_crossover.py; figures in docs/performance.md). Only on CUDA: on the CPU
# (Triton's interpreter) the tests call each path directly.
BLAS_MIN_T = 4
BLAS_MIN_T_BASE = 16


def use_blas(ops: SinkOperands, tokens: int, *, lora: bool) -> bool:
    """Whether :func:`sink_forward_triton` computes the base GEMMs with the library GEMM. Eager
    (no CUDA-graph capture) the base takes it at every T: below ``BLAS_MIN_T_BASE`` its GPU work is
    smaller than the launching, and two library GEMMs and one Triton epilogue cost less host time
    than two Triton GEMM launches (benchmarks/ops/host_cost.py)."""
    if not ops.w13_lin.is_cuda:
        return False
    if tokens >= (BLAS_MIN_T if lora else BLAS_MIN_T_BASE):
        return True
    return not lora and not torch.cuda.is_current_stream_capturing()


def forward_blas(ops: SinkOperands, x_td: torch.Tensor, g_td: torch.Tensor, routing: SlotRouting | None) -> torch.Tensor:
    """The base GEMMs on the library (token order throughout), the LoRA in Triton around them:
    ``[y | bridges] = x @ [w13; A_all]^T`` (one library GEMM gives the gate/up shrink of every
    slot too), the expand + SwiGLU epilogue over y (sorted tiles, each row reading its slot's
    bridge columns; activation back in token order), ``out = act @ w2``, the down shrink (shared
    outer: ``act @ A_cat_all^T`` on the library; per expert: the windowed Triton shrink), the
    down expand added in place to the adapter rows. Base only
    (``routing`` None): the two GEMMs and the SwiGLU epilogue."""
    if routing is None:
        y = torch.mm(x_td, ops.w13_lin.t())
        act = gate_up_swiglu(x_td, ops.w13_lin, g_td, ops.n, interleaved=ops.interleaved, y=y)
        return torch.mm(act, ops.w2_lin)
    rows = ops.w13_lin.shape[0]
    S, E_a, R2, H = ops.gate_up_a.shape
    y_ext = torch.mm(x_td, gate_up_ext(ops).t())  # [T, rows + S*E_a*2R]: y, then each slot's bridge
    act = gate_up_swiglu(x_td, ops.w13_lin, g_td, ops.n, interleaved=ops.interleaved, routing=routing,
                         bridge=y_ext[:, rows:], b_gu=ops.gate_up_b, bridge_expert_stride=0 if E_a == 1 else R2,
                         bridge_slot_stride=E_a * R2, y=y_ext[:, :rows])
    out = torch.mm(act, ops.w2_lin)
    if ops.shared_outer:  # every slot's down shrink as one library GEMM: [T, S*R], slot s at s*R
        bridge_dn = torch.mm(act, ops._down_shrink_a.reshape(S * ops.rank, -1).t())
        return down_proj(act, ops.w2_lin, routing=routing, bridge=bridge_dn, b=ops._down_expand_b, out=out,
                         accumulate=True, bridge_slot_stride=ops.rank)
    # Per expert the shrink is block-diagonal (expert e's activations meet only its A): as one dense
    # GEMM it would be n times the work, so the Triton shrink reads each window.
    bridge_dn = _ShrinkPlan.of(ops, x_td, gate_up=False).down(ops, act, routing, gather=True)
    return down_proj(act, ops.w2_lin, routing=routing, bridge=bridge_dn, b=ops._down_expand_b, out=out, accumulate=True)


# When the fused path (shrinks inside the GEMMs' K loops) is taken: at T = 1 only, where it
# measured faster than the split path on an H200 (bench_runtime; the figures per T are in
# docs/performance.md, "Reference runtime"). Each slot group gets tiles of its own, and every tile streams all the weights it
# needs (from L2 after the first) and, per N program, its slot's A (2R x H for gate/up, R x n*F
# for down: half the weight bytes of a 32-wide N tile). With one group (T = 1) that costs less
# than the three launches it saves; with G groups the weights are read G times over instead of
# cdiv(T, BLOCK_M) times, so the split path (several slots per tile, A read once per tile by
# the split-K shrinks) wins once tokens spread over many slots, and at large T, where the
# redundant A work is MMA time (2R / 2*BLOCK_N more) against ~15 % for the split shrinks.
FUSED_MAX_GROUPS = 1  # the most slot groups a batch can have: min(T, S + 1)
FUSED_MAX_T = 1
# Register bridges up to this width (the gate/up half-bridge R, the down bridge R or n*R).
FUSED_MAX_BRIDGE = 128


def use_fused(ops: SinkOperands, tokens: int) -> bool:
    """Whether :func:`sink_forward_triton` takes the fused path for ``tokens`` tokens."""
    groups = min(tokens, ops.slots + 1)
    return (tokens <= FUSED_MAX_T and groups <= FUSED_MAX_GROUPS and ops.rank <= 64
            and ops._down_shrink_a.shape[1] <= FUSED_MAX_BRIDGE)


def forward_fused(ops: SinkOperands, x_td: torch.Tensor, g_td: torch.Tensor, routing: SlotRouting | OneToken) -> torch.Tensor:
    """Three launches: routing, gate/up with the gate/up shrink in its K loop, down with the down
    shrink in its K loop (group-aligned tiles, one slot each; no bridges in memory, no memset).
    Two with a :class:`OneToken` routing (T = 1), as many as the base path."""
    window = 0 if ops.shared_outer else ops.f_local
    act = gate_up_swiglu(x_td, ops.w13_lin, g_td, ops.n, interleaved=ops.interleaved, routing=routing,
                         b_gu=ops.gate_up_b, a_gu=ops.gate_up_a)
    return down_proj(act, ops.w2_lin, routing=routing, b=ops._down_expand_b, shrink_a=ops._down_shrink_a,
                     shrink_rank=ops.rank, shrink_window=window)


def forward_split(ops: SinkOperands, x_td: torch.Tensor, g_td: torch.Tensor, routing: SlotRouting) -> torch.Tensor:
    """Five launches (and a memset at small T): routing, the gate/up shrink, gate/up, the down
    shrink, down; the shrinks split K at small T."""
    plan = _ShrinkPlan.of(ops, x_td)
    bridge_gu = plan.gate_up(ops, x_td, routing)
    act = gate_up_swiglu(
        x_td, ops.w13_lin, g_td, ops.n, interleaved=ops.interleaved, routing=routing,
        bridge=bridge_gu, b_gu=ops.gate_up_b, bridge_expert_stride=plan.bridge_expert_stride,
    )
    bridge_dn = plan.down(ops, act, routing, gather=False)
    return down_proj(act, ops.w2_lin, routing=routing, bridge=bridge_dn, b=ops._down_expand_b)


@dataclass(frozen=True)
class _ShrinkPlan:
    """The two shrinks of one forward (split and block choices, one counter buffer), shared by
    the split and the library-GEMM paths."""

    block: int  # gate/up rank rows per shrink block
    bridge_expert_stride: int
    split_gu: int
    split_dn: int
    counters_gu: torch.Tensor | None
    counters_dn: torch.Tensor | None

    @staticmethod
    def of(ops: SinkOperands, x_td: torch.Tensor, *, gate_up: bool = True) -> "_ShrinkPlan":
        _, E_a, R2, H = ops.gate_up_a.shape
        _, rows_dn, k_dn = ops._down_shrink_a.shape
        block, stride, split_gu, split_dn, need_gu, need_dn = _shrink_choices(x_td.device, x_td.shape[0], E_a, R2, H, rows_dn,
                                                                           k_dn, gate_up)
        # One zeroed counter buffer, kept with the operands, for both split shrinks; each leaves its part zero.
        counters = ops.counters(need_gu + need_dn, x_td.device) if max(split_gu, split_dn) > 1 else None
        return _ShrinkPlan(block, stride, split_gu, split_dn,
                           None if counters is None else counters[:need_gu], None if counters is None else counters[need_gu:])

    def gate_up(self, ops: SinkOperands, x_td: torch.Tensor, routing: SlotRouting) -> torch.Tensor:
        S, E_a, R2, H = ops.gate_up_a.shape
        return lora_shrink(x_td, ops.gate_up_a.reshape(S, E_a * R2, H), routing, self.block, split_k=self.split_gu,
                           counters=self.counters_gu)

    def down(self, ops: SinkOperands, act: torch.Tensor, routing: SlotRouting, *, gather: bool) -> torch.Tensor:
        window = 0 if ops.shared_outer else ops.f_local
        return lora_shrink(act, ops._down_shrink_a, routing, ops.rank, window=window, gather=gather, split_k=self.split_dn,
                           counters=self.counters_dn)


@launch_cache
def _shrink_choices(device, T: int, E_a: int, R2: int, H: int, rows_dn: int, k_dn: int, gate_up: bool) -> tuple:
    """(gate/up rank rows per block, bridge expert stride, gate/up splits, down splits, gate/up
    counters, down counters) for T tokens."""
    R = R2 // 2
    # Up to 128 rank rows per gate/up block (same bridge layout): each x tile is read once,
    # not 2*E_a times; wider blocks would not fit an A tile's pipeline stages in shared memory.
    block = next(b for b in (E_a * R2, R2, R) if b <= 128 or b == R)
    nb_gu, nb_dn = (E_a * R2 // block if gate_up else 0), rows_dn // R
    caps = caps_of(device)
    split_gu = choose_split(T, nb_gu, H, caps=caps) if gate_up else 1
    split_dn = choose_split(T, nb_dn, k_dn, caps=caps)
    return block, 0 if E_a == 1 else R2, split_gu, split_dn, counters_needed(T, nb_gu), counters_needed(T, nb_dn)


def torch_segments(ops: SinkOperands, slot_ids: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
    """(slot, token rows) of each active slot that has tokens, in slot order: the torch loop's
    segments. One host sync (the segment sizes), so compute them before a CUDA-graph capture."""
    if ops._down_shrink_a is None:
        ops.refresh()
    ids = slot_ids.reshape(-1).to(ops.w13_lin.device).long()
    ids = torch.where((ids >= 0) & ops.slot_active[ids.clamp(min=0)], ids, -1)
    order = torch.argsort(ids, stable=True)
    counts = torch.bincount(ids + 1, minlength=ops.slots + 1).tolist()
    segments = []
    start = counts[0]
    for s in range(ops.slots):
        if counts[s + 1]:
            segments.append((s, order[start:start + counts[s + 1]]))
            start += counts[s + 1]
    return segments


def sink_forward_torch(
    ops: SinkOperands,
    x: torch.Tensor,
    gammas: torch.Tensor,
    slot_ids: torch.Tensor | None = None,
    *,
    segments: list[tuple[int, torch.Tensor]] | None = None,
) -> torch.Tensor:
    """The same forward in plain torch, in the storage dtype (bf16 GEMMs, fp32 SwiGLU).

    Base: two GEMMs around the activation. LoRA: tokens sorted by slot once (one host sync for
    the segment sizes, or ``segments`` from :func:`torch_segments` computed beforehand, which
    makes the forward graph-capturable), then per active slot a shrink and an expand with
    ``torch.mm`` on its segment, added into Y before the activation and into the output after
    the down GEMM (Punica's loop baseline).
    """
    x_td, g_td = _flatten(x, gammas, ops.n, ops.hidden)
    T, n, F = x_td.shape[0], ops.n, ops.f_local
    y = x_td @ ops.w13_lin.T  # [T, n*2F]
    if ops.has_pool and (slot_ids is not None or segments is not None):
        if segments is None:
            segments = torch_segments(ops, slot_ids)
        R = ops.rank
        yv = y.view(T, n, 2, F) if not ops.interleaved else None
        for s, rows in segments:
            xs = x_td[rows]
            bridge = xs @ ops.gate_up_a[s].reshape(-1, ops.hidden).T  # [t, E_a*2R]
            bridge = bridge.view(-1, ops.gate_up_a.shape[1], 2, R)
            if ops.shared_outer:
                bridge = bridge.expand(-1, n, 2, R)
            # delta[t, e, h, j] = sum_k bridge[t, e, h, k] * B_gu[s, e, h*F + j, k]
            delta = torch.einsum("tehk,ehjk->tehj", bridge, ops.gate_up_b[s].view(n, 2, F, R))
            if ops.interleaved:
                y.view(T, n, F, 2)[rows] += delta.transpose(2, 3)
            else:
                yv[rows] += delta
    else:
        segments = []
    yv = y.float().view(T, n, -1)
    if ops.interleaved:
        g, u = yv[..., 0::2], yv[..., 1::2]
    else:
        g, u = yv[..., :F], yv[..., F:]
    act = (torch.nn.functional.silu(g) * u * g_td.float()[..., None]).to(x_td.dtype).reshape(T, n * F)
    out = act @ ops.w2_lin
    for s, rows in segments:
        acts = act[rows]
        if ops.shared_outer:
            bridge = acts @ ops._down_shrink_a[s].T  # [t, R]
        else:
            bridge = torch.einsum("tej,ekj->tek", acts.view(-1, n, F), ops.down_a[s]).reshape(-1, n * ops.rank)
        out[rows] += bridge @ ops._down_expand_b[s].T
    return out
