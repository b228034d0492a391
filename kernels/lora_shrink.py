"""LoRA shrink for mixed slots in one launch: ``bridge[t] = x[t] . A[slot(t)]^T`` per block.

``A`` is viewed as ``[S, NB * R, K_a]``: ``NB`` output blocks of ``R`` rank rows each. Block
``b`` of token t's bridge is ``x[t, win_b] . A[s, bR:(b+1)R, :]^T`` where ``win_b`` is the whole
input row, or with ``window`` set the input columns ``[b*window, b*window + K_a)`` (the
per-expert down shrink: expert e's activations meet only expert e's down-A).

The sites of the shared sink (spec section 6):

* gate/up, shared outer:  A = A_gu[:, 0]            [S, 2R, H],   NB = 2
* gate/up, per expert:    A = A_gu.view(S, n*2R, H) [S, 2nR, H],  NB = 2n
* down, shared outer:     A = A_cat                 [S, R, n*F],  NB = 1 (A_cat[s,k,eF+j] = A_dn[s,e,k,j])
* down, per expert:       A = A_dn.view(S, n*R, F)  [S, nR, F],   NB = n, window = F

Rows are processed in the routing's sorted order (see ``routing.py``); the bridge is written in
sorted order, zero for tokens without an adapter (not written at all when no token of the batch
has one: nothing reads it then). Reference: :func:`lora_shrink_reference`.

Split-K: at small T the grid ``(cdiv(T, BLOCK_M), NB)`` is a handful of programs each
walking a long K (= H or n*F) and leaves most SMs idle (12-35 us per shrink on an H200 at T = 1).
With ``split_k`` > 1 a third grid axis cuts K into ``split_k`` ranges; each program writes its
float32 partial to a workspace, and the last program of each output tile to finish (a per-tile
arrival counter) adds the partials in split order and writes the bridge. The sum's order never
depends on arrival, so reruns stay bit-identical; the counter is reset by that last program.
:func:`choose_split` picks the split from the grid size. (Handing the partials to the consumer
kernels instead cost them more than the split saved: each of their tiles re-read every split.)
"""

from __future__ import annotations

from ._triton import (AUTOTUNE, INTERPRET, CachedLaunch, autotune, check_device, dot_precision, launch, launch_cache,
                      round_bf16_rne, round_flag, tl, torch, triton)
from . import tiles
from .tiles import cdiv, next_power_of_2, pow2
from .routing import SlotRouting


@triton.jit(do_not_specialize=["T", "TB"])
def _lora_shrink_kernel(
    x_ptr, a_ptr, out_ptr, ws_ptr, count_ptr,
    order_ptr, row_group_ptr, group_slot_ptr,
    T, K, R, WINDOW, TB, K_SPLIT, N_SPLIT,
    stride_xm, stride_xk,
    stride_as, stride_ar, stride_ak,
    stride_om, stride_on,
    stride_ws, stride_wm,
    SPLIT: tl.constexpr, GATHER: tl.constexpr, UPCAST: tl.constexpr, ROUND: tl.constexpr, DOT_PREC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
):
    if (tl.load(group_slot_ptr) < 0) & (tl.load(group_slot_ptr + 1) < 0):
        return  # no token of the batch has an adapter: no consumer reads the bridge
    pid_m = tl.program_id(0)
    blk = tl.program_id(1)
    sp = tl.program_id(2)
    k_lo = sp * K_SPLIT
    k_hi = tl.minimum(K, k_lo + K_SPLIT)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < T
    if GATHER:
        src = tl.load(order_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)
    else:
        src = offs_m.to(tl.int64)
    row_group = tl.load(row_group_ptr + offs_m, mask=m_mask, other=-1)
    g_lo = tl.load(row_group_ptr + pid_m * BLOCK_M)
    g_hi = tl.load(row_group_ptr + tl.minimum(pid_m * BLOCK_M + BLOCK_M, T) - 1)
    offs_r = tl.arange(0, BLOCK_R)
    r_mask = offs_r < R
    offs_k = tl.arange(0, BLOCK_K)
    x_base = x_ptr + src[:, None] * stride_xm + (blk * WINDOW) * stride_xk
    acc = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    for g in range(g_lo, g_hi + 1):
        slot = tl.load(group_slot_ptr + g)
        if slot >= 0:
            in_group = m_mask & (row_group == g)
            a_base = a_ptr + slot.to(tl.int64) * stride_as + (blk * R + offs_r)[None, :] * stride_ar
            part = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
            for k0 in range(k_lo, k_hi, BLOCK_K):
                k_mask = (k0 + offs_k) < k_hi
                xt = tl.load(x_base + (k0 + offs_k)[None, :] * stride_xk, mask=in_group[:, None] & k_mask[None, :], other=0.0)
                at = tl.load(a_base + (k0 + offs_k)[:, None] * stride_ak, mask=k_mask[:, None] & r_mask[None, :], other=0.0)
                if UPCAST:
                    xt = xt.to(tl.float32)
                    at = at.to(tl.float32)
                else:
                    at = at.to(xt.dtype)
                part += tl.dot(xt, at, input_precision=DOT_PREC)
            acc += part  # rows outside the group loaded zeros: their part is 0
    out_mask = m_mask[:, None] & r_mask[None, :]
    cols = (blk * R + offs_r)[None, :]
    out = out_ptr + offs_m[:, None] * stride_om + cols * stride_on
    if SPLIT:
        ws = ws_ptr + offs_m[:, None] * stride_wm + cols
        tl.store(ws + sp * stride_ws, acc, mask=out_mask)
        tl.debug_barrier()  # every thread's partial is issued before the arrival is counted
        counter = count_ptr + pid_m * tl.num_programs(1) + blk
        arrived = tl.atomic_add(counter, 1, sem="acq_rel")
        if arrived == N_SPLIT - 1:  # the last of this tile's splits: sum them in split order
            total = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
            for s in range(0, N_SPLIT):
                total += tl.load(ws + s * stride_ws, mask=out_mask, other=0.0, cache_modifier=".cg")
            if ROUND:
                total = round_bf16_rne(total)
            tl.store(out, total.to(out_ptr.dtype.element_ty), mask=out_mask)
            tl.atomic_xchg(counter, 0)  # ready for the next launch (or graph replay)
    else:
        if ROUND:
            acc = round_bf16_rne(acc)
        tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=out_mask)


def _configs():
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_K": bk}, num_warps=w, num_stages=st)
        for bm, bk, w, st in ((16, 64, 4, 4), (16, 128, 4, 4), (16, 256, 4, 3), (32, 128, 4, 4), (64, 64, 4, 4))
    ]


_launch = CachedLaunch(_lora_shrink_kernel)
_tuned = autotune(_configs(), ["TB", "K", "R", "K_SPLIT", "N_SPLIT"])(_lora_shrink_kernel) if AUTOTUNE else None


def caps_of(device: "torch.device") -> tiles.DeviceCaps:
    """The tile policy's view of ``device`` (the interpreter when Triton interprets)."""
    return tiles.device_caps(device, interpreter=INTERPRET)


def choose_split(T: int, nb: int, K: int, block_m: int | None = None, *, caps: tiles.DeviceCaps | None = None,
                 max_split: int = 32) -> int:
    """K splits for the shrink (``tiles.split_k``); ``caps`` default: the interpreter when
    interpreting, else the H200's."""
    caps = caps or (tiles.INTERPRETER if INTERPRET else tiles.H200)
    return tiles.split_k(caps, T=T, blocks=nb, K=K, block_m=block_m, max_split=max_split)


def counters_needed(T: int, nb: int) -> int:
    """Arrival counters of a split launch: one per (16-row tile, block), enough for any BLOCK_M >= 16."""
    return cdiv(max(T, 1), 16) * nb


def t_bucket(T: int) -> int:
    """Autotune key: tokens rounded up to a power of two (capped) so configs are reused."""
    return min(next_power_of_2(max(T, 1)), 8192)


def lora_shrink(
    x: torch.Tensor,
    a: torch.Tensor,
    routing: SlotRouting,
    rank: int,
    *,
    window: int = 0,
    gather: bool = True,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    split_k: int = 1,
    counters: torch.Tensor | None = None,
) -> torch.Tensor:
    """Bridge ``[T, NB * rank]`` in sorted row order (``split_k`` > 1: K cut into that many
    ranges, reduced in the launch; same result up to float32 summation order).

    ``x`` [T, K_in] is in original token order when ``gather`` (rows read through
    ``routing.order``), else already in sorted order. ``a`` is [S, NB * rank, K_a] (any strides).
    ``counters``: zeroed int32 arrival counters, at least :func:`counters_needed` of them (the
    split launch leaves them zero again); allocated here when not given.
    """
    T = x.shape[0]
    S, rows, K = a.shape
    if rows % rank:
        raise ValueError(f"lora_shrink: A has {rows} rows, not a multiple of rank {rank}")
    nb = rows // rank
    if window == 0 and K != x.shape[1]:
        raise ValueError(f"lora_shrink: A width {K} != input width {x.shape[1]}")
    if window and nb * window > x.shape[1]:
        raise ValueError(f"lora_shrink: {nb} windows of {window} exceed input width {x.shape[1]}")
    check_device(x, a)
    if out is None:
        out = torch.empty((T, nb * rank), dtype=out_dtype or x.dtype, device=x.device)
    if T == 0:
        return out
    grid, meta, k_split, split_k = _launch_config(x.device, x.dtype, out.dtype, T, K, nb, rank, int(split_k), gather)
    if split_k > 1:
        ws = torch.empty((split_k, T, nb * rank), dtype=torch.float32, device=x.device)
        need = counters_needed(T, nb)
        if counters is None:
            count = torch.zeros(need, dtype=torch.int32, device=x.device)
        elif counters.numel() < need or counters.dtype != torch.int32:
            raise ValueError(f"lora_shrink: counters need {need} int32 entries, got {counters.numel()} {counters.dtype}")
        else:
            count = counters
    else:
        ws, count = out, out  # never touched
    args = (
        x, a, out, ws, count,
        routing.order, routing.row_group, routing.group_slot,
        T, K, rank, window, t_bucket(T), k_split, split_k,
        *x.stride(), *a.stride(), *out.stride(),
        ws.stride(0) if split_k > 1 else 0, ws.stride(1) if split_k > 1 else 0,
    )
    launch(_launch, _tuned, grid, args, meta)
    return out


@launch_cache
def _launch_config(device, dtype, out_dtype, T, K, nb, rank, split_k, gather) -> tuple:
    """(grid, constexprs and launch options, K range per split, splits) of one launch; with
    autotuning the grid is a function of the tuned config and the options are left to the tuner."""
    split_k = max(1, min(split_k, cdiv(K, 32)))
    k_split = cdiv(cdiv(K, split_k), 32) * 32  # aligned ranges (the last may be short)
    split_k = cdiv(K, k_split)
    flags = dict(SPLIT=split_k > 1, GATHER=gather, UPCAST=INTERPRET, ROUND=round_flag(out_dtype), DOT_PREC=dot_precision(dtype),
                 BLOCK_R=pow2(rank))
    if _tuned is not None:
        return (lambda meta: (cdiv(T, meta["BLOCK_M"]), nb, split_k)), flags, k_split, split_k
    cfg = tiles.choose("lora_shrink", caps_of(device), T=T, K=K, dtype_bytes=dtype.itemsize).launch(n=False)
    return (cdiv(T, cfg["BLOCK_M"]), nb, split_k), {**flags, **cfg}, k_split, split_k


def lora_shrink_reference(
    x: torch.Tensor, a: torch.Tensor, slot_ids: torch.Tensor, rank: int, *, window: int = 0,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Same bridge in *original* token order, in ``dtype`` math (torch only)."""
    T = x.shape[0]
    S, rows, K = a.shape
    nb = rows // rank
    xd, ad = x.to(dtype), a.to(dtype)
    out = torch.zeros((T, nb * rank), dtype=dtype, device=x.device)
    for slot in sorted(set(slot_ids.reshape(-1).tolist())):
        if slot < 0:
            continue
        rows_t = (slot_ids.reshape(-1) == slot).nonzero().reshape(-1)
        for b in range(nb):
            xin = xd[rows_t, b * window: b * window + K] if window else xd[rows_t]
            out[rows_t, b * rank:(b + 1) * rank] = xin @ ad[slot, b * rank:(b + 1) * rank].T
    return out
