"""Down GEMM + per-slot LoRA expand, in one kernel, scattering rows back to token order.

For each sorted row m (token ``order[m]``) and hidden column h::

    out[order[m], h] = act[m] . w2_lin[:, h]  +  bridge[m] . B[s(m), h, :]

``act`` [T, n*F] comes from the gate/up kernel (sorted order); the sum over experts happens in
the K-loop because ``w2_lin[e*F + j, h] = w2[e, h, j]`` (spec 1.3). ``bridge`` is the down
shrink output [T, KB] and ``B`` is ``[S, H, KB]``:

* shared outer: KB = R, B = B_dn[:, 0]  (one rank-R bridge summed over experts);
* per expert:   KB = n*R, B = B_cat with B_cat[s, h, e*R + k] = B_dn[s, e, h, k].

Reference: :func:`down_proj_reference`.

Library-GEMM path (``accumulate=True``): ``out`` already holds ``act @ w2_lin`` in token order,
from the library GEMM (cuBLAS through ``torch.mm``, faster than this kernel's K loop at
T >= ``sink.BLAS_MIN_T``); the kernel skips the K loop and adds only the delta, in place, to the
rows of tokens that have an adapter (a tile with none returns at once).

Fused path (``shrink_a`` instead of ``bridge``): group-aligned tiles (one slot each)
accumulate the down shrink ``act_tile . A[slot]^T`` in the GEMM's K loop, each bridge column over
its window of activations. Reference: the same function, the bridge from
:func:`lora_shrink_reference`.
"""

from __future__ import annotations

from ._triton import (AUTOTUNE, INTERPRET, CachedLaunch, autotune, check_device, dot_precision, launch, launch_cache,
                      round_bf16_rne, round_flag, tiled_launch_config, tl, torch, triton)
from .lora_shrink import caps_of, t_bucket
from .tiles import pow2
from .routing import OneToken, SlotRouting, group_tile, kernel_routing, one_token_slot


@triton.jit(do_not_specialize=["T", "TB"])
def _down_proj_kernel(
    act_ptr, w_ptr, out_ptr, bridge_ptr, b_ptr, a_ptr,
    order_ptr, row_group_ptr, group_slot_ptr, group_start_ptr,
    T, K, H, KB, BRIDGE_SLOT_STRIDE, TB, EXTRA_M, N_GROUPS, A_BLOCK, WINDOW, KWIN,
    stride_am, stride_ak,
    stride_wk, stride_wn,
    stride_om, stride_on,
    stride_brm, stride_brk,
    stride_bs, stride_bh, stride_bk,
    stride_as, stride_ar, stride_ak_a,
    HAS_LORA: tl.constexpr, FUSED: tl.constexpr, ONE_TOKEN: tl.constexpr, SCATTER: tl.constexpr, ACC_IN: tl.constexpr,
    BRIDGE_TOKEN_ORDER: tl.constexpr,
    UPCAST: tl.constexpr, ROUND: tl.constexpr,
    DOT_PREC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_KB: tl.constexpr, BLOCK_G: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(T, BLOCK_M) + EXTRA_M
    num_n = tl.cdiv(H, BLOCK_N)
    group_size = GROUP_M * num_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    if ONE_TOKEN:  # T = 1 without a routing launch: row 0, the slot read and checked here
        offs_m = tl.arange(0, BLOCK_M)
        m_mask = offs_m < T
        slot = one_token_slot(group_slot_ptr, group_start_ptr, N_GROUPS)
    elif FUSED:  # group-aligned tiles (one slot per tile): the down shrink runs in the K loop
        grp, row0, row_end = group_tile(group_start_ptr, pid_m, T, N_GROUPS, BLOCK_M, BLOCK_G)
        if row_end <= row0:
            return
        offs_m = row0 + tl.arange(0, BLOCK_M)
        m_mask = offs_m < row_end
        slot = tl.load(group_slot_ptr + grp)
    else:
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        m_mask = offs_m < T
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < H
    offs_k = tl.arange(0, BLOCK_K)
    a_base = act_ptr + offs_m[:, None] * stride_am
    w_base = w_ptr + offs_n[None, :] * stride_wn
    if ACC_IN:
        # Groups are sorted by slot with "no adapter" first: the tile's last group has the
        # highest slot, so a tile whose last group has none has no adapter rows at all.
        g_last = tl.load(row_group_ptr + tl.minimum(pid_m * BLOCK_M + BLOCK_M, T) - 1)
        if tl.load(group_slot_ptr + g_last) < 0:
            return
        row_slot = tl.load(group_slot_ptr + tl.load(row_group_ptr + offs_m, mask=m_mask, other=0), mask=m_mask, other=-1)
        m_mask = m_mask & (row_slot >= 0)  # rows without an adapter keep the library's value
        dst0 = tl.load(order_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)
        acc = tl.load(out_ptr + dst0[:, None] * stride_om + offs_n[None, :] * stride_on,
                      mask=m_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if FUSED:
        # Bridge column c = block c // A_BLOCK (an expert when windowed) reads A row c over the
        # activation columns of its window [blk*WINDOW, blk*WINDOW + KWIN) (WINDOW 0: KWIN = K).
        offs_kb = tl.arange(0, BLOCK_KB)
        kb_mask = offs_kb < KB
        kb_use = offs_kb < KB * (slot >= 0).to(tl.int32)  # no A columns to load without an adapter
        col_shift = (offs_kb // A_BLOCK) * WINDOW
        sa_base = a_ptr + slot.to(tl.int64) * stride_as + offs_kb[None, :] * stride_ar
        br = tl.zeros((BLOCK_M, BLOCK_KB), dtype=tl.float32)
    for k0 in range(0, 0 if ACC_IN else K, BLOCK_K):
        k_mask = (k0 + offs_k) < K
        at = tl.load(a_base + (k0 + offs_k)[None, :] * stride_ak, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        wt = tl.load(w_base + (k0 + offs_k).to(tl.int64)[:, None] * stride_wk, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        if UPCAST:
            at = at.to(tl.float32)
            wt = wt.to(tl.float32)
        acc += tl.dot(at, wt, input_precision=DOT_PREC)
        if FUSED:
            koff = (k0 + offs_k)[:, None] - col_shift[None, :]
            smask = k_mask[:, None] & kb_use[None, :] & (koff >= 0) & (koff < KWIN)
            sa = tl.load(sa_base + koff * stride_ak_a, mask=smask, other=0.0)
            if UPCAST:
                sa = sa.to(tl.float32)
            else:
                sa = sa.to(at.dtype)
            br += tl.dot(at, sa, input_precision=DOT_PREC)

    if FUSED:
        if slot >= 0:
            # The bridge is rounded to the storage dtype, as the separate shrink stores it.
            bt = tl.load(b_ptr + slot.to(tl.int64) * stride_bs + offs_n[None, :] * stride_bh + offs_kb[:, None] * stride_bk,
                         mask=kb_mask[:, None] & n_mask[None, :], other=0.0)
            if UPCAST:
                if ROUND:
                    bridge = round_bf16_rne(br)
                else:
                    bridge = br
                bt = bt.to(tl.float32)
            else:
                bridge = br.to(act_ptr.dtype.element_ty)
                bt = bt.to(bridge.dtype)
            acc += tl.dot(bridge, bt, input_precision=DOT_PREC)
    elif HAS_LORA:
        row_group = tl.load(row_group_ptr + offs_m, mask=m_mask, other=-1)
        g_lo = tl.load(row_group_ptr + pid_m * BLOCK_M)
        g_hi = tl.load(row_group_ptr + tl.minimum(pid_m * BLOCK_M + BLOCK_M, T) - 1)
        offs_kb = tl.arange(0, BLOCK_KB)
        if BRIDGE_TOKEN_ORDER:  # the library GEMM's bridge: token rows, each slot's own columns
            br_base = bridge_ptr + tl.load(order_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)[:, None] * stride_brm
        else:
            br_base = bridge_ptr + offs_m[:, None] * stride_brm
        for g in range(g_lo, g_hi + 1):
            slot = tl.load(group_slot_ptr + g)
            if slot >= 0:
                in_group = m_mask & (row_group == g)
                b_base = b_ptr + slot.to(tl.int64) * stride_bs + offs_n[None, :] * stride_bh
                br_slot = br_base + (slot * BRIDGE_SLOT_STRIDE) * stride_brk
                for kb0 in range(0, KB, BLOCK_KB):
                    kb_mask = (kb0 + offs_kb) < KB
                    br = tl.load(br_slot + (kb0 + offs_kb)[None, :] * stride_brk, mask=in_group[:, None] & kb_mask[None, :], other=0.0)
                    bt = tl.load(b_base + (kb0 + offs_kb)[:, None] * stride_bk, mask=kb_mask[:, None] & n_mask[None, :], other=0.0)
                    if UPCAST:
                        br = br.to(tl.float32)
                        bt = bt.to(tl.float32)
                    else:
                        bt = bt.to(br.dtype)
                    acc += tl.dot(br, bt, input_precision=DOT_PREC)

    if SCATTER:
        dst = tl.load(order_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)
    else:
        dst = offs_m.to(tl.int64)
    out = out_ptr + dst[:, None] * stride_om + offs_n[None, :] * stride_on
    if ROUND:
        acc = round_bf16_rne(acc)
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


def _configs():
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=st)
        for bm, bn, bk, w, st in (
            (16, 16, 256, 4, 4), (16, 32, 256, 4, 3),  # T <= 16: more programs streaming the weights
            (16, 32, 128, 4, 4), (16, 64, 128, 4, 4), (32, 64, 128, 4, 4),
            (64, 128, 64, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3),
        )
    ]


_launch = CachedLaunch(_down_proj_kernel)
_tuned = autotune(_configs(), ["TB", "K", "H", "KB", "HAS_LORA", "FUSED", "ONE_TOKEN"])(_down_proj_kernel) if AUTOTUNE else None


def down_proj(
    act: torch.Tensor,
    w2_lin: torch.Tensor,
    *,
    routing: SlotRouting | OneToken | None = None,
    bridge: torch.Tensor | None = None,
    b: torch.Tensor | None = None,
    shrink_a: torch.Tensor | None = None,
    shrink_rank: int = 0,
    shrink_window: int = 0,
    out: torch.Tensor | None = None,
    accumulate: bool = False,
    bridge_slot_stride: int = 0,
) -> torch.Tensor:
    """``out`` [T, H] in token order. ``act`` is in sorted order when ``routing`` is given
    (rows are scattered back through ``routing.order``). ``bridge`` [T, KB] (sorted order) and
    ``b`` [S, H, KB] enable the LoRA delta.

    ``shrink_a`` instead of ``bridge``: the fused path, the down shrink computed in the GEMM's
    K loop over group-aligned tiles. It is the shrink's A as :func:`lora_shrink` takes it,
    ``[S, KB, K_a]`` in blocks of ``shrink_rank`` rows, each block over the activation window
    ``[blk * shrink_window, blk * shrink_window + K_a)`` (``shrink_window`` 0: all of them).

    ``accumulate``: ``out`` (token order) already holds ``act @ w2_lin``; only the delta of the
    ``bridge`` is added to it, in place (``act`` is then not read). ``bridge_slot_stride`` > 0:
    the bridge is in token order and holds every slot's shrink, slot s at columns
    ``s * bridge_slot_stride`` (``act @ A_all^T`` from the library GEMM)."""
    T, K = act.shape
    if w2_lin.shape[0] != K:
        raise ValueError(f"down_proj: w2_lin {tuple(w2_lin.shape)} does not take {K} activations")
    H = w2_lin.shape[1]
    fused = shrink_a is not None
    if fused and bridge is not None:
        raise ValueError("down_proj: give the bridge or A (fused shrink), not both")
    has_lora = bridge is not None or fused
    if has_lora and routing is None:
        raise ValueError("down_proj: LoRA needs a routing")
    if fused:
        rows, k_a = shrink_a.shape[1], shrink_a.shape[2]
        if (getattr(routing, 'group_start', 0) is None or shrink_rank <= 0 or rows % shrink_rank
                or (k_a != K if shrink_window == 0 else (shrink_window != k_a or rows // shrink_rank * k_a > K))):
            raise ValueError(f"down_proj: shrink A {tuple(shrink_a.shape)} (rank {shrink_rank}, window {shrink_window}) does not fit {K} activations")
    if accumulate and (bridge is None or out is None or out.shape != (T, H) or getattr(routing, "group_start", None) is None):
        raise ValueError("down_proj: accumulate adds a bridge's delta to a given out [T, H] (a SlotRouting needed)")
    check_device(act, w2_lin, bridge, b, shrink_a, out)
    if out is None:
        out = torch.empty((T, H), dtype=act.dtype, device=act.device)
    if T == 0:
        return out
    if has_lora:
        KB = shrink_a.shape[1] if fused else (bridge_slot_stride or bridge.shape[1])
        if b.shape[1] != H or b.shape[2] != KB or (bridge_slot_stride and bridge.shape[1] != b.shape[0] * KB):
            raise ValueError(f"down_proj: B {tuple(b.shape)} does not fit H={H}, bridge width {KB}")
        lora_args = (shrink_a if fused else bridge, b, shrink_a if fused else act)
        lora_strides = (0 if fused else bridge.stride(0), 0 if fused else bridge.stride(1), *b.stride())
    else:
        KB = 1
        lora_args = (act, act, act)
        lora_strides = (0, 0, 0, 0, 0)
    a_strides = tuple(shrink_a.stride()) if fused else (0, 0, 0)
    S, single, extra, routing_args = kernel_routing(routing, fused=fused, tokens=T, filler=act)
    grid, meta = _launch_config(act.device, act.dtype, out.dtype, T, K, H, KB, S, extra, has_lora, fused,
                                routing is not None and not single, single, accumulate, bridge_slot_stride > 0)
    args = (
        act, w2_lin, out, *lora_args, *routing_args,
        T, K, H, KB, bridge_slot_stride, t_bucket(T), extra, S if single else S + 1, shrink_rank if fused else 1, shrink_window, shrink_a.shape[2] if fused else K,
        *act.stride(), *w2_lin.stride(), *out.stride(),
        *lora_strides, *a_strides,
    )
    launch(_launch, _tuned, grid, args, meta, tunable=not accumulate)
    return out


@launch_cache
def _launch_config(device, dtype, out_dtype, T, K, H, KB, S, extra, has_lora, fused, scatter, single, accumulate,
                   token_order) -> tuple:
    """(grid, constexprs and launch options) of one launch; with autotuning (and no
    ``accumulate``) the grid is a function of the tuned config and the options are left to the tuner."""
    # Fused: the whole bridge width in one block (the register bridge), at least 32 wide: at the
    # T <= 16 tiles (16x32) a 16-wide bridge dot takes another x layout (sm_90 build: 74
    # registers and 49 HMMA, against 63 and 18 at 32 wide; benchmarks/ops/compile_report.py).
    # Unfused: up to 64 bridge columns per expand step.
    block_kb = (pow2(KB, 32) if fused else min(64, pow2(KB))) if has_lora else 16
    flags = dict(HAS_LORA=has_lora, FUSED=fused, SCATTER=scatter, ONE_TOKEN=single, ACC_IN=accumulate,
                 BRIDGE_TOKEN_ORDER=token_order, UPCAST=INTERPRET, ROUND=round_flag(out_dtype), DOT_PREC=dot_precision(dtype),
                 BLOCK_KB=block_kb, BLOCK_G=pow2(S + 1, 2))
    # accumulate: no K loop, a memory-bound read-add-write of the adapter rows, one config (never tuned)
    return tiled_launch_config(flags, caps_of(device), "down_accumulate" if accumulate else "down_proj", T=T, N=H, K=K,
                               extra=extra, dtype_bytes=dtype.itemsize, tuned=_tuned is not None and not accumulate)


def down_proj_reference(
    act: torch.Tensor,
    w2_lin: torch.Tensor,
    *,
    bridge: torch.Tensor | None = None,
    b: torch.Tensor | None = None,
    slot_ids: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Same output with everything in token order, in ``dtype`` math."""
    out = act.to(dtype) @ w2_lin.to(dtype)
    if bridge is not None:
        ids = slot_ids.reshape(-1)
        for slot in sorted(set(ids.tolist())):
            if slot < 0:
                continue
            rows = (ids == slot).nonzero().reshape(-1)
            out[rows] += bridge[rows].to(dtype) @ b[slot].to(dtype).T
    return out
