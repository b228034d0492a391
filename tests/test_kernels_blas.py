"""The library-GEMM path of the shared-sink forward (kernels/sink.py ``forward_blas``): the base
GEMMs on torch.mm, the LoRA shrinks, the expand + SwiGLU epilogue over y and the down expand
added in place, against the float64 reference and the split path.

On a CPU the default dispatch never takes this path (it is for CUDA at T >= ``BLAS_MIN_T``), so
the tests call it directly; on a GPU they also check the dispatch takes it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings

from inkling_compat.kernels import sink
from inkling_compat.kernels.down_proj import down_proj
from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu, gate_up_swiglu_reference
from inkling_compat.kernels.reference import relative_error
from inkling_compat.kernels.plan import plan_for
from inkling_compat.kernels.routing import build_routing
from sink_cases import DEVICE, Case, cases, make_problem, tolerance

KERNEL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _flat(p, case):
    return p.x.reshape(-1, case.H), p.gammas.reshape(-1, case.n)


@pytest.mark.long
@KERNEL
@given(cases())
@example(Case(T=65, n=3, H=96, F=40, S=5, R=64, ranks=(1, 64, 0, 17, 33), shared_outer=False, interleaved=False, slot_mode="mixed"))
@example(Case(T=33, n=1, H=17, F=5, S=2, R=3, ranks=(3, 1), shared_outer=False, interleaved=True, slot_mode="mixed"))
@example(Case(T=20, n=2, H=64, F=48, S=4, R=16, ranks=(16, 16, 16, 16), shared_outer=True, interleaved=True, slot_mode="mixed"))
@example(Case(T=17, n=1, H=8, F=20, S=3, R=15, ranks=(15, 0, 0), shared_outer=False, interleaved=False, slot_mode="all-minus-one"))
@example(Case(T=1, n=3, H=8, F=8, S=1, R=1, ranks=(1,), shared_outer=False, interleaved=False, slot_mode="mixed", seed=4))
def test_blas_forward_matches_reference_and_split_path(case):
    p = make_problem(case)
    ops = p.operands()
    x, g = _flat(p, case)
    if p.slot_ids is None:
        out = sink.forward_blas(ops, x, g, None)
        assert relative_error(out, p.reference(lora=False)) <= p.bound(lora=False, library=True)
        return
    routing = build_routing(p.slot_ids.reshape(-1), case.S, ops.slot_active)
    out = sink.forward_blas(ops, x, g, routing)
    assert out.shape == (case.T, case.H) and out.dtype == p.x.dtype
    assert relative_error(out, p.reference()) <= p.bound(library=True)
    split = sink.forward_split(ops, x, g, routing)
    assert relative_error(split, p.reference()) <= p.bound(library=False)
    assert relative_error(out, split) <= p.between_paths()
    assert torch.equal(out, sink.forward_blas(ops, x, g, routing))  # a rerun is bit-identical
    default = sink.sink_forward_triton(ops, p.x, p.gammas, p.slot_ids)
    plan = plan_for(p.slot_ids.reshape(-1), case.S, x.device, slot_active=ops.slot_active)
    if plan.all_unassigned:  # every token on the base: the default path is the base MLP alone
        assert torch.equal(default, sink.forward_base(ops, x, g))
    elif sink.use_blas(ops, case.T, lora=True) and routing.group_start is not None:  # on a GPU at T >= BLAS_MIN_T, the default path
        assert torch.equal(out, default)


@pytest.mark.long
@KERNEL
@given(cases(max_T=80))
@example(Case(T=1, n=1, H=15, F=4, S=1, R=15, ranks=(15,), shared_outer=False, interleaved=False, slot_mode="mixed", seed=110))
def test_blas_forward_all_unassigned_is_its_base_forward(case):
    """No token has an adapter: every down tile returns at once and the gate/up epilogue adds
    nothing, so the output is the library path's base forward (up to the library GEMM's
    summation order, which may differ for the wider [w13; A_all] product)."""
    p = make_problem(case)
    ops = p.operands()
    x, g = _flat(p, case)
    ids = torch.full((case.T,), -1, dtype=torch.int64, device=DEVICE)
    out = sink.forward_blas(ops, x, g, build_routing(ids, case.S, ops.slot_active))
    assert relative_error(out, sink.forward_blas(ops, x, g, None)) <= tolerance(case)
    assert relative_error(out, p.reference(lora=False)) <= p.bound(lora=False, library=True)


@KERNEL
@given(cases(max_T=70))
def test_the_epilogue_over_y_is_the_gate_up_kernel_without_its_k_loop(case):
    """gate_up_swiglu(y=x @ w13^T) (token order out) equals the reference SwiGLU of the same
    bf16-rounded y plus the delta."""
    p = make_problem(case)
    ops = p.operands()
    x, g = _flat(p, case)
    y = torch.mm(x, ops.w13_lin.t())
    act = gate_up_swiglu(x, ops.w13_lin, g, case.n, interleaved=case.interleaved, y=y)
    ref = gate_up_swiglu_reference(x, ops.w13_lin, g, case.n, interleaved=case.interleaved)
    assert act.shape == (case.T, case.n * case.F)
    assert relative_error(act, ref) <= tolerance(case)


@KERNEL
@given(cases(max_T=70))
def test_accumulate_adds_only_to_the_adapter_rows(case):
    """down_proj(accumulate=True) leaves the rows of tokens without an adapter untouched (bit
    for bit) and adds the delta to the others."""
    p = make_problem(case)
    if p.slot_ids is None:
        return
    ops = p.operands()
    ids = p.slot_ids.reshape(-1)
    routing = build_routing(ids, case.S, ops.slot_active)
    act = torch.randn(case.T, case.n * case.F, device=DEVICE).to(p.x.dtype)
    bridge = torch.randn(case.T, ops._down_shrink_a.shape[1], device=DEVICE).to(p.x.dtype)
    base = torch.randn(case.T, case.H, device=DEVICE).to(p.x.dtype)
    out = down_proj(act, ops.w2_lin, routing=routing, bridge=bridge, b=ops._down_expand_b, out=base.clone(), accumulate=True)
    active = ops.slot_active.to(DEVICE)
    has = (ids >= 0) & (ids < case.S) & active[ids.clamp(0, case.S - 1)]
    assert torch.equal(out[~has], base[~has])
    # the added delta: bridge rows are in sorted order
    order = routing.order.long()
    sorted_ids = ids[order]
    expect = base.double().clone()
    for m in range(case.T):
        t, s = int(order[m]), int(sorted_ids[m])
        if has[t]:
            expect[t] += bridge[m].double() @ ops._down_expand_b[s].double().T
    assert relative_error(out[has], expect[has]) <= tolerance(case) or not bool(has.any())
