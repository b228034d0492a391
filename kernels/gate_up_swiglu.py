"""Base gate/up GEMM + per-slot LoRA expand + gamma-weighted SwiGLU, in one kernel.

For each token t (in the routing's sorted order), expert e and feature j of the expert::

    g = x_t . w13_lin[row_g(e, j)]  +  bridge_g[t] . B_gu[s(t), e, j]        (fp32 accumulators)
    u = x_t . w13_lin[row_u(e, j)]  +  bridge_u[t] . B_gu[s(t), e, F + j]
    act[t, e*F + j] = silu(g) * u * gamma[t, e]     computed in fp32, rounded once

with ``row_g, row_u = e*2F + 2j, e*2F + 2j + 1`` for the interleaved w13 (legacy sink) and
``e*2F + j, e*2F + F + j`` for the contiguous one (V2 sink); the LoRA B rows are contiguous
halves in both cases (spec sections 1.4, 3, 6.1). ``bridge`` is the gate/up shrink output,
``[T, E_a * 2R]`` in sorted order: expert e reads columns ``o*2R + [0, R)`` (gate) and
``o*2R + R + [0, R)`` (up), ``o = 0`` for the shared outer layout and ``o = e`` per expert.

The LoRA expand runs inside the tile after the base K-loop, once per slot group present in the
tile (``routing.py``): the delta never round-trips through memory and the activation is the
GEMM's epilogue, so Y itself is never stored. The activation is written in sorted order for the
down kernel. Reference: :func:`gate_up_swiglu_reference`.

Library-GEMM path (``y`` given): the base product ``y = x @ w13_lin^T`` [T, n*2F] comes from the
library GEMM (cuBLAS through ``torch.mm``), which at T >= ``sink.BLAS_MIN_T`` runs faster than
this kernel's K loop; the kernel then loads y (token order) instead of running the K loop and
keeps the rest: the LoRA expand per slot group on sorted tiles and the SwiGLU, writing the
activation back in token order (``scatter``) for the library down GEMM. y is read once; the
delta is never stored.

Fused path (``a_gu`` instead of ``bridge``): the tiles are cut per slot group
(``routing.group_tile``), so each has one slot, and the bridge ``x_tile . A_gu[slot]^T`` is
accumulated in the same K loop from the x tiles the GEMM streams (every N program recomputes
its expert's bridge: A is small and read from L2). Reference: the same function, the bridge from
:func:`lora_shrink_reference`.
"""

from __future__ import annotations

from ._triton import (AUTOTUNE, INTERPRET, CachedLaunch, autotune, check_device, dot_precision, launch, launch_cache,
                      round_bf16_rne, round_flag, tiled_launch_config, tl, torch, triton)
from .lora_shrink import caps_of, t_bucket
from .tiles import pow2
from .routing import OneToken, SlotRouting, group_tile, kernel_routing, one_token_slot


@triton.jit(do_not_specialize=["T", "TB"])
def _gate_up_swiglu_kernel(
    x_ptr, w_ptr, gamma_ptr, act_ptr, bridge_ptr, b_ptr, a_ptr,
    order_ptr, row_group_ptr, group_slot_ptr, group_start_ptr,
    T, H, F, N_EXP, R, BRIDGE_EXPERT_STRIDE, BRIDGE_SLOT_STRIDE, TB, EXTRA_M, N_GROUPS,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_gm, stride_ge,
    stride_am, stride_an,
    stride_brm, stride_brn,
    stride_bs, stride_be, stride_bf, stride_br,
    stride_as, stride_ae, stride_ar, stride_ak,
    INTERLEAVED: tl.constexpr, HAS_LORA: tl.constexpr, FUSED: tl.constexpr, ONE_TOKEN: tl.constexpr, GATHER: tl.constexpr,
    Y_IN: tl.constexpr, SCATTER: tl.constexpr, BRIDGE_TOKEN_ORDER: tl.constexpr, UPCAST: tl.constexpr,
    ROUND: tl.constexpr, DOT_PREC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_G: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Grouped ordering of (M tile, N tile) for L2 reuse of the weight tiles.
    pid = tl.program_id(0)
    num_m = tl.cdiv(T, BLOCK_M) + EXTRA_M
    n_per_expert = tl.cdiv(F, BLOCK_N)
    num_n = N_EXP * n_per_expert
    group_size = GROUP_M * num_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group
    e = pid_n // n_per_expert
    jb = pid_n % n_per_expert

    if ONE_TOKEN:  # T = 1 without a routing launch: row 0, the slot read and checked here
        offs_m = tl.arange(0, BLOCK_M)
        m_mask = offs_m < T
        slot = one_token_slot(group_slot_ptr, group_start_ptr, N_GROUPS)
    elif FUSED:  # group-aligned tiles: one slot per tile, so the shrink can run in the K loop
        grp, row0, row_end = group_tile(group_start_ptr, pid_m, T, N_GROUPS, BLOCK_M, BLOCK_G)
        if row_end <= row0:
            return
        offs_m = row0 + tl.arange(0, BLOCK_M)
        m_mask = offs_m < row_end
        slot = tl.load(group_slot_ptr + grp)
    else:
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        m_mask = offs_m < T
    if GATHER:
        src = tl.load(order_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)
    else:
        src = offs_m.to(tl.int64)
    offs_j = jb * BLOCK_N + tl.arange(0, BLOCK_N)
    j_mask = offs_j < F
    if INTERLEAVED:
        row_g = e * 2 * F + 2 * offs_j
        row_u = row_g + 1
    else:
        row_g = e * 2 * F + offs_j
        row_u = row_g + F
    offs_k = tl.arange(0, BLOCK_K)
    x_base = x_ptr + src[:, None] * stride_xm
    wg_base = w_ptr + row_g.to(tl.int64)[None, :] * stride_wn
    wu_base = w_ptr + row_u.to(tl.int64)[None, :] * stride_wn
    if Y_IN:  # x_ptr is y = x @ w13_lin^T (token order): w13 row i is y's column i
        if INTERLEAVED:
            # (g, u) pairs are adjacent columns: one contiguous [BLOCK_M, 2*BLOCK_N] load, split
            # in registers (two stride-2 loads would each issue 2-byte accesses).
            offs_c = jb * 2 * BLOCK_N + tl.arange(0, 2 * BLOCK_N)
            pairs = tl.load(x_base + (e * 2 * F + offs_c)[None, :] * stride_xk,
                            mask=m_mask[:, None] & (offs_c < 2 * F)[None, :], other=0.0)
            acc_g, acc_u = tl.split(tl.reshape(pairs, (BLOCK_M, BLOCK_N, 2)))
            acc_g = acc_g.to(tl.float32)
            acc_u = acc_u.to(tl.float32)
        else:
            ymask = m_mask[:, None] & j_mask[None, :]
            acc_g = tl.load(x_base + row_g[None, :] * stride_xk, mask=ymask, other=0.0).to(tl.float32)
            acc_u = tl.load(x_base + row_u[None, :] * stride_xk, mask=ymask, other=0.0).to(tl.float32)
    else:
        acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if FUSED:
        # The tile's bridge (gate and up halves of this expert's 2R rank rows) accumulates
        # beside the GEMM from the same x tiles; a tile without an adapter masks the A loads off.
        # One [BLOCK_M, 2*BLOCK_R] bridge: columns [0, BLOCK_R) gate rank rows, [BLOCK_R, 2*BLOCK_R)
        # up rank rows (A rows R + r). One dot per K step, at least 32 wide, so that it shares
        # the x operand's register layout with the GEMM's dots (a 16-wide one did not: 255
        # registers and a spill at 16x32x128 on sm_90, against 80 unfused).
        offs_c = tl.arange(0, 2 * BLOCK_R)
        is_up = offs_c >= BLOCK_R
        rank_c = tl.where(is_up, offs_c - BLOCK_R, offs_c)
        c_use = rank_c < R * (slot >= 0).to(tl.int32)  # no rank rows to load without an adapter
        a_base = a_ptr + slot.to(tl.int64) * stride_as + e * stride_ae + (rank_c + tl.where(is_up, R, 0))[None, :] * stride_ar
        br = tl.zeros((BLOCK_M, 2 * BLOCK_R), dtype=tl.float32)
    for k0 in range(0, 0 if Y_IN else H, BLOCK_K):
        k_mask = (k0 + offs_k) < H
        xt = tl.load(x_base + (k0 + offs_k)[None, :] * stride_xk, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        wmask = k_mask[:, None] & j_mask[None, :]
        wg = tl.load(wg_base + (k0 + offs_k)[:, None] * stride_wk, mask=wmask, other=0.0)
        wu = tl.load(wu_base + (k0 + offs_k)[:, None] * stride_wk, mask=wmask, other=0.0)
        if UPCAST:
            xt = xt.to(tl.float32)
            wg = wg.to(tl.float32)
            wu = wu.to(tl.float32)
        acc_g += tl.dot(xt, wg, input_precision=DOT_PREC)
        acc_u += tl.dot(xt, wu, input_precision=DOT_PREC)
        if FUSED:
            at = tl.load(a_base + (k0 + offs_k)[:, None] * stride_ak, mask=k_mask[:, None] & c_use[None, :], other=0.0)
            if UPCAST:
                at = at.to(tl.float32)
            else:
                at = at.to(xt.dtype)
            br += tl.dot(xt, at, input_precision=DOT_PREC)

    if FUSED:
        if slot >= 0:
            # The bridge is rounded to the storage dtype, as the separate shrink stores it.
            # B as two [2*BLOCK_R, BLOCK_N] operands, zero on the other half's rows: the gate
            # delta reads only the gate columns of the bridge, the up delta only the up ones.
            b_base = b_ptr + slot.to(tl.int64) * stride_bs + e * stride_be + rank_c[:, None] * stride_br
            rows_ok = (rank_c < R)[:, None] & j_mask[None, :]
            bg = tl.load(b_base + offs_j[None, :] * stride_bf, mask=rows_ok & ~is_up[:, None], other=0.0)
            bu = tl.load(b_base + (F + offs_j)[None, :] * stride_bf, mask=rows_ok & is_up[:, None], other=0.0)
            if UPCAST:
                if ROUND:
                    bridge = round_bf16_rne(br)
                else:
                    bridge = br
                bg = bg.to(tl.float32)
                bu = bu.to(tl.float32)
            else:
                bridge = br.to(x_ptr.dtype.element_ty)
                bg = bg.to(bridge.dtype)
                bu = bu.to(bridge.dtype)
            acc_g += tl.dot(bridge, bg, input_precision=DOT_PREC)
            acc_u += tl.dot(bridge, bu, input_precision=DOT_PREC)
    elif HAS_LORA:
        row_group = tl.load(row_group_ptr + offs_m, mask=m_mask, other=-1)
        g_lo = tl.load(row_group_ptr + pid_m * BLOCK_M)
        g_hi = tl.load(row_group_ptr + tl.minimum(pid_m * BLOCK_M + BLOCK_M, T) - 1)
        offs_r = tl.arange(0, BLOCK_R)
        if BRIDGE_TOKEN_ORDER:  # the library GEMM's extra columns: token rows, each slot's own columns
            br_rows = src
        else:
            br_rows = offs_m.to(tl.int64)
        br_base = bridge_ptr + br_rows[:, None] * stride_brm + (e * BRIDGE_EXPERT_STRIDE) * stride_brn
        for g in range(g_lo, g_hi + 1):
            slot = tl.load(group_slot_ptr + g)
            if slot >= 0:
                in_group = m_mask & (row_group == g)
                b_base = b_ptr + slot.to(tl.int64) * stride_bs + e * stride_be
                br_slot = br_base + (slot * BRIDGE_SLOT_STRIDE) * stride_brn
                for r0 in range(0, R, BLOCK_R):
                    r_mask = (r0 + offs_r) < R
                    bmask = in_group[:, None] & r_mask[None, :]
                    br_g = tl.load(br_slot + (r0 + offs_r)[None, :] * stride_brn, mask=bmask, other=0.0)
                    br_u = tl.load(br_slot + (R + r0 + offs_r)[None, :] * stride_brn, mask=bmask, other=0.0)
                    lmask = r_mask[:, None] & j_mask[None, :]
                    bg = tl.load(b_base + offs_j[None, :] * stride_bf + (r0 + offs_r)[:, None] * stride_br, mask=lmask, other=0.0)
                    bu = tl.load(b_base + (F + offs_j)[None, :] * stride_bf + (r0 + offs_r)[:, None] * stride_br, mask=lmask, other=0.0)
                    if UPCAST:
                        br_g = br_g.to(tl.float32)
                        br_u = br_u.to(tl.float32)
                        bg = bg.to(tl.float32)
                        bu = bu.to(tl.float32)
                    else:
                        bg = bg.to(br_g.dtype)
                        bu = bu.to(br_u.dtype)
                    acc_g += tl.dot(br_g, bg, input_precision=DOT_PREC)
                    acc_u += tl.dot(br_u, bu, input_precision=DOT_PREC)

    gamma = tl.load(gamma_ptr + src * stride_gm + e * stride_ge, mask=m_mask, other=0.0).to(tl.float32)
    act = acc_g * tl.sigmoid(acc_g) * acc_u * gamma[:, None]
    if SCATTER:  # back to token order (the library down GEMM reads it there)
        dst = src
    else:
        dst = offs_m.to(tl.int64)
    out = act_ptr + dst[:, None] * stride_am + (e * F + offs_j)[None, :] * stride_an
    if ROUND:
        act = round_bf16_rne(act)
    tl.store(out, act.to(act_ptr.dtype.element_ty), mask=m_mask[:, None] & j_mask[None, :])


def _configs():
    out = []
    for bm, bn, bk, w, st in (
        (16, 16, 256, 4, 4), (16, 32, 256, 4, 3),  # T <= 16: more programs streaming the weights
        (16, 32, 128, 4, 4), (16, 64, 128, 4, 4), (32, 64, 128, 4, 4),
        (64, 64, 64, 4, 4), (128, 64, 64, 8, 3), (128, 128, 64, 8, 3),
    ):
        out.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=st))
    return out


_launch = CachedLaunch(_gate_up_swiglu_kernel)
_tuned = autotune(_configs(), ["TB", "H", "F", "N_EXP", "R", "HAS_LORA", "FUSED", "ONE_TOKEN"])(_gate_up_swiglu_kernel) if AUTOTUNE else None


def gate_up_swiglu(
    x: torch.Tensor,
    w13_lin: torch.Tensor,
    gammas: torch.Tensor,
    n_experts: int,
    *,
    interleaved: bool,
    routing: SlotRouting | OneToken | None = None,
    bridge: torch.Tensor | None = None,
    b_gu: torch.Tensor | None = None,
    bridge_expert_stride: int = 0,
    bridge_slot_stride: int = 0,
    a_gu: torch.Tensor | None = None,
    y: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Activation ``[T, n*F]`` (dtype of x). In sorted order when ``routing`` is given (x and
    gammas are then read through ``routing.order``), else in token order.

    ``y`` [T, n*2F]: the base product ``x @ w13_lin^T`` already computed (token order) by the
    library GEMM; the kernel adds the delta and the SwiGLU to it, and the activation is then in
    token order whether or not ``routing`` is given. ``bridge_slot_stride`` > 0: the bridge is in
    token order and holds every slot's shrink, slot s at columns ``s * bridge_slot_stride``
    (the library GEMM's extra columns ``x @ A_all^T``, computed with y in one product).

    ``bridge`` [T, E_a*2R] (sorted order) and ``b_gu`` [S, n, 2F, R] enable the LoRA delta.
    ``a_gu`` [S, E_a, 2R, H] instead of ``bridge``: the fused path, the gate/up shrink computed
    in the GEMM's K loop over group-aligned tiles (no bridge in memory, no shrink launch).
    """
    T, H = x.shape
    rows = w13_lin.shape[0]
    if rows % (2 * n_experts) or w13_lin.shape[1] != H:
        raise ValueError(f"gate_up_swiglu: w13_lin {tuple(w13_lin.shape)} does not fit n={n_experts}, H={H}")
    F = rows // (2 * n_experts)
    if gammas.shape != (T, n_experts):
        raise ValueError(f"gate_up_swiglu: gammas {tuple(gammas.shape)} != {(T, n_experts)}")
    fused = a_gu is not None
    if fused and bridge is not None:
        raise ValueError("gate_up_swiglu: give the bridge or A (fused shrink), not both")
    has_lora = bridge is not None or fused
    if has_lora and routing is None:
        raise ValueError("gate_up_swiglu: LoRA needs a routing")
    if fused and (getattr(routing, 'group_start', 0) is None or a_gu.shape[0] != b_gu.shape[0] or a_gu.shape[3] != H
                  or a_gu.shape[2] != 2 * b_gu.shape[3] or a_gu.shape[1] not in (1, n_experts)):
        raise ValueError(f"gate_up_swiglu: A {tuple(a_gu.shape)} / B {tuple(b_gu.shape)} do not fit H={H}, n={n_experts}")
    if y is not None and (fused or y.shape != (T, rows)):
        raise ValueError(f"gate_up_swiglu: y {tuple(y.shape)} must be x @ w13_lin^T {(T, rows)}, without A (fused shrink)")
    check_device(x, w13_lin, gammas, bridge, b_gu, a_gu, y)
    if out is None:
        out = torch.empty((T, n_experts * F), dtype=x.dtype, device=x.device)
    if T == 0:
        return out
    base_in = x if y is None else y  # the kernel's first operand: x for its own K loop, else y
    if has_lora:
        R = b_gu.shape[3]
        br = a_gu if fused else bridge  # the bridge pointer is never read when fused
        lora_args = (br, b_gu, a_gu if fused else x)
        lora_strides = (0 if fused else bridge.stride(0), 0 if fused else bridge.stride(1), *b_gu.stride())
    else:
        R = 1
        lora_args = (x, x, x)  # never read
        lora_strides = (0, 0, 0, 0, 0, 0)
    if fused:
        a_strides = (a_gu.stride(0), 0 if a_gu.shape[1] == 1 else a_gu.stride(1), a_gu.stride(2), a_gu.stride(3))
    else:
        a_strides = (0, 0, 0, 0)
    S, single, extra, routing_args = kernel_routing(routing, fused=fused, tokens=T, filler=x)
    gather = routing is not None and not single
    grid, meta = _launch_config(x.device, x.dtype, out.dtype, T, H, F, n_experts, R, S, extra, interleaved,
                                has_lora, fused, single, gather, y is not None, bridge_slot_stride > 0)
    args = (
        base_in, w13_lin, gammas, out, *lora_args, *routing_args,
        T, H, F, n_experts, R, bridge_expert_stride, bridge_slot_stride, t_bucket(T), extra, S if single else S + 1,
        *base_in.stride(), *w13_lin.stride(), *gammas.stride(), *out.stride(),
        *lora_strides, *a_strides,
    )
    launch(_launch, _tuned, grid, args, meta, tunable=y is None)
    return out


@launch_cache
def _launch_config(device, dtype, out_dtype, T, H, F, n_experts, R, S, extra, interleaved, has_lora, fused, single,
                   gather, y_in, token_order) -> tuple:
    """(grid, constexprs and launch options) of one launch; with autotuning (and no ``y``) the
    grid is a function of the tuned config and the options are left to the tuner."""
    flags = dict(INTERLEAVED=interleaved, HAS_LORA=has_lora, FUSED=fused, GATHER=gather, ONE_TOKEN=single,
                 Y_IN=y_in, SCATTER=y_in and gather, BRIDGE_TOKEN_ORDER=token_order, UPCAST=INTERPRET,
                 ROUND=round_flag(out_dtype), DOT_PREC=dot_precision(dtype),
                 BLOCK_R=pow2(R) if has_lora else 16, BLOCK_G=pow2(S + 1, 2))
    # y given: no K loop, a memory-bound epilogue over y, one config (never tuned)
    return tiled_launch_config(flags, caps_of(device), "gate_up_epilogue" if y_in else "gate_up_swiglu", T=T, N=F, K=H,
                               groups=n_experts, extra=extra, dtype_bytes=dtype.itemsize, tuned=_tuned is not None and not y_in)


def swiglu_reference(y: torch.Tensor, gammas: torch.Tensor, n_experts: int, *, interleaved: bool) -> torch.Tensor:
    """gamma-weighted SwiGLU of ``y`` [T, n*2F] per (token, expert), in y's dtype (spec 1.4)."""
    T = y.shape[0]
    yv = y.reshape(T, n_experts, -1)
    F = yv.shape[2] // 2
    if interleaved:
        g, u = yv[..., 0::2], yv[..., 1::2]
    else:
        g, u = yv[..., :F], yv[..., F:]
    act = torch.nn.functional.silu(g) * u * gammas.to(y.dtype)[..., None]
    return act.reshape(T, n_experts * F)


def gate_up_swiglu_reference(
    x: torch.Tensor,
    w13_lin: torch.Tensor,
    gammas: torch.Tensor,
    n_experts: int,
    *,
    interleaved: bool,
    bridge: torch.Tensor | None = None,
    b_gu: torch.Tensor | None = None,
    slot_ids: torch.Tensor | None = None,
    bridge_expert_stride: int = 0,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The same activation in token order and ``dtype`` math; ``bridge`` in token order."""
    T = x.shape[0]
    y = x.to(dtype) @ w13_lin.to(dtype).T
    if bridge is not None:
        S, n, F2, R = b_gu.shape
        F = F2 // 2
        yv = y.view(T, n, F2)
        br = bridge.to(dtype)
        bd = b_gu.to(dtype)
        ids = slot_ids.reshape(-1)
        for slot in sorted(set(ids.tolist())):
            if slot < 0:
                continue
            rows = (ids == slot).nonzero().reshape(-1)
            for e in range(n):
                o = e * bridge_expert_stride
                dg = br[rows, o:o + R] @ bd[slot, e, :F].T
                du = br[rows, o + R:o + 2 * R] @ bd[slot, e, F:].T
                if interleaved:
                    yv[rows, e, 0::2] += dg
                    yv[rows, e, 1::2] += du
                else:
                    yv[rows, e, :F] += dg
                    yv[rows, e, F:] += du
    return swiglu_reference(y, gammas.to(dtype), n_experts, interleaved=interleaved)
