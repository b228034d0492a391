"""The fused LoRA path: each shrink inside its GEMM's K loop, over group-aligned tiles.

Each fused kernel against its torch reference (NaN-poisoned outputs, so an element a kernel
forgets to write fails), the routing's group starts that the tiling reads, and the whole fused
forward against the float64 reference, against the split path, and (every token unassigned)
against the base path; the one-token forward (no routing launch) likewise. Runs in Triton's interpreter on a CPU-only machine, compiled on a GPU.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from inkling_compat.kernels import sink
from inkling_compat.kernels.down_proj import down_proj, down_proj_reference
from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu, gate_up_swiglu_reference
from inkling_compat.kernels.lora_shrink import lora_shrink_reference
from inkling_compat.kernels.plan import plan_for
from inkling_compat.kernels.reference import linearize, relative_error
from inkling_compat.kernels.routing import build_routing, build_routing_torch, extra_tiles, one_token
from sink_cases import DEVICE, Case, cases, make_problem, tolerance
from sink_cases import nan_filled as _nan, sorted_rows as _sorted, unsorted_rows as _unsort

FAST = settings(max_examples=60, deadline=None)
KERNEL = settings(max_examples=20 if DEVICE.type == "cpu" else 25, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _routing(p):
    return build_routing(p.slot_ids, p.case.S, torch.tensor([r > 0 for r in p.case.ranks], device=DEVICE))


# --- group starts ---------------------------------------------------------------------------------


@FAST
@given(st.integers(1, 70).flatmap(lambda S: st.tuples(
    st.just(S),
    st.lists(st.integers(-1, S - 1), min_size=1, max_size=600),
    st.none() | st.lists(st.booleans(), min_size=S, max_size=S),
)))
def test_group_starts_bound_each_group(data):
    """group_start[g] .. group_start[g + 1] are exactly the rows of group g, T past the last
    group; the kernel's starts equal the torch routing's."""
    S, ids, active = data
    act = None if active is None else torch.tensor(active, device=DEVICE)
    r = build_routing(torch.tensor(ids, device=DEVICE), S, act)
    t = build_routing_torch(torch.tensor(ids, device=DEVICE), S, act)
    assert torch.equal(r.group_start, t.group_start)
    starts = r.group_start.long().cpu().tolist()
    groups = r.row_group.long().cpu().tolist()
    T = len(ids)
    assert len(starts) == S + 3 and starts[0] == 0
    used = max(groups) + 1
    for g in range(used):
        assert groups[starts[g]:starts[g + 1]] == [g] * (starts[g + 1] - starts[g]) and starts[g + 1] > starts[g]
    assert starts[used:] == [T] * (S + 3 - used)
    # the group-aligned tiling's grid covers every group's tiles
    for bm in (16, 64):
        tiles = sum(-(-(starts[g + 1] - starts[g]) // bm) for g in range(used))
        assert tiles <= -(-T // bm) + extra_tiles(T, S)


# --- fused gate/up ----------------------------------------------------------------------------------


@pytest.mark.long
@KERNEL
@given(cases())
@example(Case(T=100, n=2, H=72, F=20, S=3, R=8, ranks=(8, 3, 0), shared_outer=True, interleaved=True, slot_mode="single"))
@example(Case(T=77, n=3, H=130, F=33, S=5, R=16, ranks=(16, 1, 0, 7, 16), shared_outer=False, interleaved=False, slot_mode="mixed"))
def test_fused_gate_up_matches_reference(case):
    """The gate/up shrink inside the K loop: the activation of the unfused reference (bridge from
    the shrink's reference), in sorted order, every element written."""
    p = make_problem(case)
    if p.slot_ids is None:
        return
    w13_lin, _ = linearize(p.w13, p.w2)
    a_gu, b_gu, _, _ = p.pool
    S, E, R2, H = a_gu.shape
    routing = _routing(p)
    out = _nan((case.T, case.n * case.F), p.x.dtype)
    gate_up_swiglu(p.x, w13_lin, p.gammas, case.n, interleaved=case.interleaved, routing=routing, b_gu=b_gu, a_gu=a_gu, out=out)
    ids = torch.where(torch.tensor([case.ranks[s] > 0 if s >= 0 else False for s in p.slot_ids.tolist()], device=DEVICE), p.slot_ids, -1)
    bridge = lora_shrink_reference(p.x, a_gu.reshape(S, E * R2, H), ids, R2 // 2)
    ref = gate_up_swiglu_reference(p.x, w13_lin, p.gammas, case.n, interleaved=case.interleaved, bridge=bridge, b_gu=b_gu,
                                   slot_ids=ids, bridge_expert_stride=0 if E == 1 else R2)
    assert not out.isnan().any()
    assert relative_error(_unsort(out, routing), ref) <= tolerance(case)


# --- fused down -------------------------------------------------------------------------------------


@KERNEL
@given(cases())
@example(Case(T=70, n=3, H=50, F=24, S=4, R=8, ranks=(8, 8, 2, 0), shared_outer=False, interleaved=True, slot_mode="mixed"))
@example(Case(T=1, n=2, H=33, F=40, S=2, R=16, ranks=(16, 4), shared_outer=True, interleaved=False, slot_mode="single"))
def test_fused_down_matches_reference(case):
    """The down shrink inside the K loop (shared outer: A_cat over all n*F activations; per
    expert: each expert's window): the output of the unfused reference, in token order."""
    p = make_problem(case)
    if p.slot_ids is None:
        return
    ops = p.operands()
    _, w2_lin = linearize(p.w13, p.w2)
    routing = _routing(p)
    act = torch.randn(case.T, case.n * case.F, generator=torch.Generator().manual_seed(case.seed + 1)).to(p.x)
    R = ops.rank
    window = 0 if ops.shared_outer else ops.f_local
    out = _nan((case.T, case.H), p.x.dtype)
    down_proj(_sorted(act, routing), w2_lin, routing=routing, b=ops._down_expand_b, shrink_a=ops._down_shrink_a,
              shrink_rank=R, shrink_window=window, out=out)
    ids = torch.where(ops.slot_active[p.slot_ids.clamp(min=0)] & (p.slot_ids >= 0), p.slot_ids, -1)
    bridge = lora_shrink_reference(act, ops._down_shrink_a, ids, R, window=window)
    ref = down_proj_reference(act, w2_lin, bridge=bridge, b=ops._down_expand_b, slot_ids=ids)
    assert not out.isnan().any()
    assert relative_error(out, ref) <= tolerance(case)


# --- the fused forward --------------------------------------------------------------------------------


@pytest.mark.long
@KERNEL
@given(cases())
@example(Case(T=1, n=2, H=64, F=48, S=4, R=16, ranks=(16, 16, 16, 16), shared_outer=True, interleaved=True, slot_mode="single"))
@example(Case(T=65, n=3, H=96, F=40, S=5, R=64, ranks=(1, 64, 0, 17, 33), shared_outer=False, interleaved=False, slot_mode="mixed"))
def test_fused_forward_matches_reference_and_split_path(case):
    """Three launches give the forward of the reference (the sink's judged bound) and of the
    split path (five launches) to within bf16 storage rounding; a rerun is bit-identical."""
    p = make_problem(case)
    if p.slot_ids is None:
        return
    ops = p.operands()
    routing = _routing(p)
    x, g = p.x.reshape(-1, case.H), p.gammas.reshape(-1, case.n)
    fused = sink.forward_fused(ops, x, g, routing)
    assert relative_error(fused, p.reference()) <= p.bound()
    split = sink.forward_split(ops, x, g, routing)
    assert relative_error(fused, split) <= tolerance(case)
    assert torch.equal(fused, sink.forward_fused(ops, x, g, routing))
    if sink.use_fused(ops, case.T):  # the default path is the fused one here
        _is_the_default_path(fused, ops, p, p.slot_ids, case)


@pytest.mark.long
@KERNEL
@given(cases(), st.sampled_from(["slot", "slot", "minus-one", "out-of-range", "empty-slot"]))
def test_one_token_forward_reads_its_slot_itself(case, which):
    """T = 1 without a routing launch (OneToken): each kernel reads and checks the token's slot
    id (-1, past S, or an empty slot: no adapter), giving the forward of the routed paths."""
    case = dataclasses.replace(case, T=1, slot_mode="single")
    p = make_problem(case)
    ops = p.operands()
    empty = [s for s, r in enumerate(case.ranks) if r == 0]
    sid = {"slot": int(p.slot_ids[0]), "minus-one": -1, "out-of-range": case.S,
           "empty-slot": empty[0] if empty else -1}[which]
    ids = torch.tensor([sid], device=DEVICE)
    x, g = p.x.reshape(1, case.H), p.gammas.reshape(1, case.n)
    one = sink.forward_fused(ops, x, g, one_token(ids, case.S, ops.slot_active))
    split = sink.forward_split(ops, x, g, build_routing(ids, case.S, ops.slot_active))
    assert relative_error(one, split) <= tolerance(case)
    ref = p.reference() if which == "slot" else p.reference(lora=False)
    assert relative_error(one, ref) <= (p.bound() if which == "slot" else p.bound(lora=False))
    if sink.use_fused(ops, 1):  # the default path at T = 1
        _is_the_default_path(one, ops, p, ids, case)


def _is_the_default_path(fused, ops, p, slot_ids, case):
    """``sink_forward_triton`` gives the fused forward bit for bit, except for a batch whose plan
    finds no token with an adapter: that runs the base forward, on CUDA eager the library GEMMs,
    whose sums round differently (to within bf16 storage rounding)."""
    default = sink.sink_forward_triton(ops, p.x, p.gammas, slot_ids)
    ids = slot_ids if isinstance(slot_ids, torch.Tensor) else torch.as_tensor(slot_ids)
    plan = plan_for(ids, ops.slots, fused.device, slot_active=ops.slot_active, active_key=ops.active_key())
    if plan.all_unassigned and sink.use_blas(ops, fused.shape[0], lora=False):
        assert relative_error(fused, default.reshape(fused.shape)) <= tolerance(case)
    else:
        assert torch.equal(fused, default)


@pytest.mark.long
@KERNEL
@given(cases(max_T=80))
def test_fused_forward_all_unassigned_is_the_base_forward(case):
    """Every token without an adapter: the fused path loads no A and adds no delta, so its
    output is the base forward's (bit for bit on the interpreter: same tiles, same sums)."""
    p = make_problem(case)
    ops = p.operands()
    ids = torch.full((case.T,), -1, dtype=torch.int64, device=DEVICE)
    routing = build_routing(ids, case.S, ops.slot_active)
    fused = sink.forward_fused(ops, p.x, p.gammas, routing)
    # The Triton base forward (the default on a GPU from BLAS_MIN_T tokens is the library's GEMMs,
    # whose bf16 y differs by a rounding): the same kernels without the LoRA.
    x, g = p.x.reshape(-1, case.H), p.gammas.reshape(-1, case.n)
    base = down_proj(gate_up_swiglu(x, ops.w13_lin, g, case.n, interleaved=case.interleaved), ops.w2_lin)
    if DEVICE.type == "cpu":
        assert torch.equal(fused, base)
    else:  # compiled variants may schedule the fp32 sums differently: a flipped bf16 rounding at most
        assert relative_error(fused, base) <= 1e-3


def test_fused_path_is_taken_for_few_slot_groups():
    """The dispatch: fused for one token (two launches, as the base; the H200 measured it
    faster there, and slower than the split path from T = 4: kernels/sink.py), split otherwise,
    and past the register-bridge width."""
    case = Case(T=3, n=2, H=32, F=16, S=8, R=16, ranks=(16,) * 8, shared_outer=True, interleaved=True, slot_mode="mixed")
    ops = make_problem(case).operands()
    assert sink.use_fused(ops, 1)
    assert not any(sink.use_fused(ops, t) for t in (2, 4, 64, 256))
    few = make_problem(Case(T=3, n=2, H=32, F=16, S=2, R=16, ranks=(16, 16), shared_outer=True, interleaved=True,
                            slot_mode="mixed")).operands()
    assert sink.use_fused(few, 1) and not sink.use_fused(few, 2)
    wide = Case(T=3, n=3, H=32, F=16, S=2, R=64, ranks=(64, 3), shared_outer=False, interleaved=True, slot_mode="mixed")
    assert not sink.use_fused(make_problem(wide).operands(), 1)  # a 192-wide per-expert down bridge
