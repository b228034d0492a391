"""Each kernel against the torch reference beside it, with poisoned (NaN) output buffers so an
element a kernel forgets to write fails the test; plus the routing it shares."""

from __future__ import annotations


import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling_compat.kernels.down_proj import down_proj, down_proj_reference
from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu, gate_up_swiglu_reference, swiglu_reference
from inkling_compat.kernels.lora_shrink import lora_shrink, lora_shrink_reference
from inkling_compat.kernels.reference import linearize, relative_error
from inkling_compat.kernels.routing import build_routing, build_routing_torch, routing_reference
from sink_cases import DEVICE, Case, cases, make_problem, tolerance
from sink_cases import nan_filled as _nan, sorted_rows as _sorted, unsorted_rows as _unsort

FAST = settings(max_examples=200, deadline=None)
KERNEL = settings(max_examples=20 if DEVICE.type == "cpu" else 25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- routing -----------------------------------------------------------------------------------


@pytest.mark.long
@FAST
@given(st.integers(1, 9).flatmap(lambda S: st.tuples(st.just(S), st.lists(st.integers(-1, S - 1), min_size=1, max_size=80))))
def test_routing_groups_tokens_by_slot(data):
    S, ids = data
    slot_ids = torch.tensor(ids, device=DEVICE)
    r = build_routing(slot_ids, S)
    order = r.order.long().cpu()
    groups = r.row_group.long().cpu()
    gslot = r.group_slot.long().cpu()
    assert sorted(order.tolist()) == list(range(len(ids)))  # a permutation
    assert torch.all(groups[1:] >= groups[:-1])  # groups are contiguous runs
    for m, t in enumerate(order.tolist()):
        assert gslot[groups[m]].item() == ids[t]  # each row's group carries its slot
    got = {}
    for m, t in enumerate(order.tolist()):
        got.setdefault(ids[t], []).append(t)
    assert sorted((k, sorted(v)) for k, v in got.items()) == routing_reference(torch.tensor(ids))


@pytest.mark.long
@FAST
@given(st.lists(st.integers(-1, 3), min_size=1, max_size=40), st.lists(st.booleans(), min_size=4, max_size=4))
def test_routing_treats_empty_slots_as_no_adapter(ids, active):
    r = build_routing(torch.tensor(ids, device=DEVICE), 4, torch.tensor(active, device=DEVICE))
    gslot = r.group_slot.long().cpu()
    for m, t in enumerate(r.order.long().cpu().tolist()):
        expected = ids[t] if ids[t] >= 0 and active[ids[t]] else -1
        assert gslot[r.row_group[m].long()].item() == expected


@pytest.mark.long
@FAST
@given(st.integers(1, 70).flatmap(lambda S: st.tuples(
    st.just(S),
    st.lists(st.integers(-1, S - 1), min_size=1, max_size=600),
    st.none() | st.lists(st.booleans(), min_size=S, max_size=S),
)))
def test_routing_kernel_equals_torch_routing(data):
    """The one-launch counting sort gives exactly the torch routing (stable order, groups, slots),
    over chunk boundaries (T up to 600, S up to 70) and with or without empty slots."""
    S, ids, active = data
    slot_ids = torch.tensor(ids, device=DEVICE)
    act = None if active is None else torch.tensor(active, device=DEVICE)
    a, b = build_routing(slot_ids, S, act), build_routing_torch(slot_ids, S, act)
    for field in ("order", "row_group", "group_slot"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field


# --- shrink --------------------------------------------------------------------------------------


@KERNEL
@given(cases(), st.booleans())
def test_lora_shrink_gate_up_and_down(case, windowed):
    p = make_problem(case)
    if p.slot_ids is None:
        return
    a_gu, _, a_dn, _ = p.pool
    S, E, R2, H = a_gu.shape
    R = R2 // 2
    routing = build_routing(p.slot_ids, S)
    out = _nan((case.T, E * R2), p.x.dtype)
    lora_shrink(p.x, a_gu.reshape(S, E * R2, H), routing, R, out=out)
    if not bool((p.slot_ids >= 0).any()):
        # No token has an adapter: the shrink returns at once and writes nothing (no consumer
        # reads a bridge row of a token without an adapter).
        assert out.isnan().all()
        return
    ref = lora_shrink_reference(p.x, a_gu.reshape(S, E * R2, H), p.slot_ids, R)
    assert relative_error(_unsort(out, routing), ref) <= tolerance(case)
    assert not out.isnan().any()
    # The down sites read activations already in sorted order (gather=False).
    act = torch.randn(case.T, case.n * case.F, generator=torch.Generator().manual_seed(case.seed)).to(p.x)
    n, F = case.n, case.F
    if windowed:
        a = a_dn.reshape(S, n * R, F)
        window = F
    else:
        a = a_dn.permute(0, 2, 1, 3).reshape(S, R, n * F)
        window = 0
    out = _nan((case.T, a.shape[1]), p.x.dtype)
    lora_shrink(_sorted(act, routing), a, routing, R, window=window, gather=False, out=out)
    ref = lora_shrink_reference(act, a, p.slot_ids, R, window=window)
    assert not out.isnan().any()
    if ref.abs().max() > 0:
        assert relative_error(_unsort(out, routing), ref) <= tolerance(case)
    else:
        assert out.abs().max() == 0


@pytest.mark.long
@KERNEL
@given(cases(max_H=400), st.integers(2, 5))
def test_lora_shrink_split_k_equals_the_unsplit_bridge(case, splits):
    """Split-K reduced in the launch: every element written (NaN-poisoned output), the bridge of
    the unsplit shrink (up to float32 summation order), and a rerun is bit-identical (the
    arrival counters were reset by the last program of each tile)."""
    p = make_problem(case)
    if p.slot_ids is None or not bool((p.slot_ids >= 0).any()):
        return  # no adapter: the shrink writes nothing (test_lora_shrink_gate_up_and_down)
    a_gu, _, _, _ = p.pool
    S, E, R2, H = a_gu.shape
    routing = build_routing(p.slot_ids, S)
    a = a_gu.reshape(S, E * R2, H)
    ref = lora_shrink_reference(p.x, a, p.slot_ids, R2 // 2)
    first = None
    for _ in range(2):
        out = _nan((case.T, E * R2), p.x.dtype)
        lora_shrink(p.x, a, routing, R2 // 2, out=out, split_k=splits)
        assert not out.isnan().any()
        assert relative_error(_unsort(out, routing), ref) <= tolerance(case)
        if first is None:
            first = out
    assert torch.equal(first, out)


# --- gate/up + SwiGLU ------------------------------------------------------------------------


@KERNEL
@given(cases())
def test_gate_up_swiglu_matches_reference(case):
    p = make_problem(case)
    w13_lin, _ = linearize(p.w13, p.w2)
    n = case.n
    out = _nan((case.T, n * case.F), p.x.dtype)
    if p.slot_ids is None:
        gate_up_swiglu(p.x, w13_lin, p.gammas, n, interleaved=case.interleaved, out=out)
        ref = gate_up_swiglu_reference(p.x, w13_lin, p.gammas, n, interleaved=case.interleaved)
        assert relative_error(out, ref) <= tolerance(case)
        return
    a_gu, b_gu, _, _ = p.pool
    S, E, R2, H = a_gu.shape
    routing = build_routing(p.slot_ids, S)
    bridge_ref = lora_shrink_reference(p.x, a_gu.reshape(S, E * R2, H), p.slot_ids, R2 // 2).to(p.x.dtype)
    stride = 0 if E == 1 else R2
    gate_up_swiglu(p.x, w13_lin, p.gammas, n, interleaved=case.interleaved, routing=routing,
                   bridge=_sorted(bridge_ref, routing), b_gu=b_gu, bridge_expert_stride=stride, out=out)
    ref = gate_up_swiglu_reference(p.x, w13_lin, p.gammas, n, interleaved=case.interleaved, bridge=bridge_ref,
                                   b_gu=b_gu, slot_ids=p.slot_ids, bridge_expert_stride=stride)
    assert not out.isnan().any()
    assert relative_error(_unsort(out, routing), ref) <= tolerance(case)


def test_swiglu_layouts_agree():
    """Interleaved rows 2j/2j+1 and contiguous halves j/F+j are the same function of g and u."""
    g = torch.Generator().manual_seed(1)
    T, n, F = 5, 3, 4
    gate, up = torch.randn(T, n, F, generator=g, dtype=torch.float64), torch.randn(T, n, F, generator=g, dtype=torch.float64)
    gam = torch.rand(T, n, generator=g, dtype=torch.float64)
    inter = torch.stack((gate, up), dim=-1).reshape(T, n * 2 * F)
    contig = torch.cat((gate, up), dim=-1).reshape(T, n * 2 * F)
    a = swiglu_reference(inter, gam, n, interleaved=True)
    b = swiglu_reference(contig, gam, n, interleaved=False)
    assert torch.allclose(a, b)
    assert torch.allclose(a, (torch.nn.functional.silu(gate) * up * gam[..., None]).reshape(T, n * F))


# --- down ----------------------------------------------------------------------------------------


@KERNEL
@given(cases())
def test_down_proj_matches_reference(case):
    p = make_problem(case)
    _, w2_lin = linearize(p.w13, p.w2)
    act = torch.randn(case.T, case.n * case.F, generator=torch.Generator().manual_seed(case.seed + 1)).to(p.x)
    out = _nan((case.T, case.H), p.x.dtype)
    if p.slot_ids is None:
        down_proj(act, w2_lin, out=out)
        assert relative_error(out, down_proj_reference(act, w2_lin)) <= tolerance(case)
        return
    _, _, a_dn, b_dn = p.pool
    S, n, R, F = a_dn.shape
    routing = build_routing(p.slot_ids, S)
    if b_dn.shape[1] == 1:
        b = b_dn[:, 0]
    else:
        b = b_dn.permute(0, 2, 1, 3).reshape(S, case.H, n * R).contiguous()
    bridge = torch.randn(case.T, b.shape[2], generator=torch.Generator().manual_seed(case.seed + 2)).to(p.x)
    down_proj(_sorted(act, routing), w2_lin, routing=routing, bridge=_sorted(bridge, routing), b=b, out=out)
    ref = down_proj_reference(act, w2_lin, bridge=bridge, b=b, slot_ids=p.slot_ids)
    assert not out.isnan().any()
    assert relative_error(out, ref) <= tolerance(case)

