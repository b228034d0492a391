"""Float64 (or float32) torch reference of the shared-sink forward with multi-slot LoRA.

Written straight from the spec (sections 1.4, 3 and 6.1) on the *unlinearized* base weights
``w13 [n, 2F, H]``, ``w2 [n, H, F]`` and the four pool buffers, independently of the derived
operands and views the kernels use, so that a test against it also checks the linearization,
the derived down operands and the bridge layouts. Torch only (no triton)::

    Y[t, e]   = W13_e x_t                                       (rows gate/up per layout)
    Y[t,e,g_j] += sum_k (Ag(s) x_t)_k B_gu[s, e, j, k]          gate rows, s = slot(t) >= 0
    Y[t,e,u_j] += sum_k (Au(s) x_t)_k B_gu[s, e, F + j, k]      up rows
    a[t,e,j]  = silu(g) * u * gamma[t, e]
    out[t]    = sum_e W2_e a[t, e]  +  delta_down[t]
    delta_down: shared outer  B_dn[s,0] . sum_e A_dn[s,e] a[t,e]
                per expert    sum_e B_dn[s,e] . (A_dn[s,e] a[t,e])

with ``Ag(s) = A_gu[s, o, 0:R]``, ``Au(s) = A_gu[s, o, R:2R]``, ``o = 0`` (shared outer) or e.

``storage=torch.bfloat16`` rounds where the kernels store (shrink outputs, activation, output);
:func:`accuracy` judges a result against float64 with the 1e-2 bound, or 1.25x what those
roundings alone cost where that is more (ill-conditioned outputs).
"""

from __future__ import annotations

import torch

from .accuracy import STORAGE_SLACK, TOLERANCE, Accuracy, judged_tolerance  # noqa: F401 - re-exported


def split_gate_up(w13_e: torch.Tensor, interleaved: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(gate rows, up rows) of one expert's [2F, ...] block."""
    if interleaved:
        return w13_e[0::2], w13_e[1::2]
    half = w13_e.shape[0] // 2
    return w13_e[:half], w13_e[half:]


def sink_forward_reference(
    x: torch.Tensor,
    gammas: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    *,
    interleaved: bool,
    pool: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    slot_ids: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float64,
    storage: torch.dtype | None = None,
    round_pre_activation: bool = False,
) -> torch.Tensor:
    """out [T, H] in ``dtype``. ``pool`` = (A_gu, B_gu, A_dn, B_dn) with B pre-scaled.

    ``round_pre_activation``: with ``storage``, the base gate/up pre-activations are rounded
    to it too before any LoRA delta is added: the library-GEMM path stores ``y = x @ w13^T``
    (kernels/sink.forward_blas), the fused kernels keep it in registers.

    ``storage`` (for example bf16): round to it where the kernels (and sglang's LoRA backends)
    store an intermediate, the shrink outputs, the activation and the output, and compute in
    ``dtype`` between. What this changes against the unrounded reference is the error any
    implementation storing those tensors in ``storage`` must make, so a tolerance can be judged
    against it (:func:`accuracy`)."""
    rnd = (lambda t: t.to(storage).to(dtype)) if storage is not None else (lambda t: t)
    n, F2, H = w13.shape
    F = F2 // 2
    x = x.reshape(-1, H).to(dtype)
    gam = gammas.reshape(-1, n).to(dtype)
    T = x.shape[0]
    w13d, w2d = w13.to(dtype), w2.to(dtype)
    gate = torch.empty((T, n, F), dtype=dtype, device=x.device)
    up = torch.empty_like(gate)
    for e in range(n):
        wg, wu = split_gate_up(w13d[e], interleaved)
        gate[:, e] = x @ wg.T
        up[:, e] = x @ wu.T
    if round_pre_activation:
        gate, up = rnd(gate), rnd(up)
    groups: list[tuple[int, torch.Tensor]] = []
    if pool is not None and slot_ids is not None:
        a_gu, b_gu, a_dn, b_dn = (p.to(dtype) for p in pool)
        R = b_gu.shape[3]
        ids = slot_ids.reshape(-1).to(x.device)
        for s in sorted(set(ids.tolist())):
            if s >= 0:
                groups.append((s, (ids == s).nonzero().reshape(-1)))
        for s, rows in groups:
            xs = x[rows]
            for e in range(n):
                o = 0 if a_gu.shape[1] == 1 else e
                gate[rows, e] += rnd(xs @ a_gu[s, o, :R].T) @ b_gu[s, e, :F].T
                up[rows, e] += rnd(xs @ a_gu[s, o, R:].T) @ b_gu[s, e, F:].T
    act = rnd(torch.nn.functional.silu(gate) * up * gam[..., None])
    out = torch.zeros((T, H), dtype=dtype, device=x.device)
    for e in range(n):
        out += act[:, e] @ w2d[e].T
    for s, rows in groups:
        a = act[rows]
        if b_dn.shape[1] == 1:
            bridge = sum(a[:, e] @ a_dn[s, e].T for e in range(n))
            out[rows] += rnd(bridge) @ b_dn[s, 0].T
        else:
            for e in range(n):
                out[rows] += rnd(a[:, e] @ a_dn[s, e].T) @ b_dn[s, e].T
    return rnd(out)


def linearize(w13: torch.Tensor, w2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sink's linearized views (spec 1.3): w13_lin [n*2F, H], w2_lin [n*F, H] with
    ``w2_lin[e*F + j, h] = w2[e, h, j]``."""
    n, F2, H = w13.shape
    return w13.reshape(n * F2, H), w2.permute(0, 2, 1).reshape(n * w2.shape[2], H).contiguous()


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN/inf give inf)."""
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return float("inf")
    denom = r.norm().item()
    return (o - r).norm().item() / (denom if denom > 0 else 1.0)


def needs_storage_reference(dtype: torch.dtype) -> bool:
    """16-bit storage rounds measurably; float32 storage does not (its bound is not judged)."""
    return dtype in (torch.bfloat16, torch.float16)


def accuracy(out: torch.Tensor, ref: torch.Tensor, storage_ref: torch.Tensor | None = None, *,
             tolerance: float = TOLERANCE) -> Accuracy:
    """``out`` against the float64 ``ref``; ``storage_ref``: the reference with ``storage=`` the
    dtype the kernels store in (None: the bound is ``tolerance`` alone)."""
    max_err, norm_err = errors(out, ref)
    st_max, st_norm = errors(storage_ref, ref) if storage_ref is not None else (0.0, 0.0)
    return Accuracy(max_err, norm_err, st_max, st_norm, tolerance)


def errors(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """(max relative error, norm relative error) of `out` against `ref`: the largest absolute
    difference over the largest reference magnitude, and ||out - ref|| / ||ref|| (both inf when
    `out` holds NaN/inf). What `inkling-compat run` compares with its tolerance, one rank or TP."""
    norm_err = relative_error(out, ref)
    if not torch.isfinite(out).all():
        return float("inf"), float("inf")
    diff = (out.double() - ref.double()).abs().max().item() if out.numel() else 0.0
    scale = ref.abs().max().item() if ref.numel() else 0.0
    return (diff / scale if scale > 0 else diff), norm_err
