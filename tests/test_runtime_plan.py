"""The batch plan (kernels/plan.py): its contents against a torch reading of the slot ids, its
reuse by every layer of a batch, and the base path of a batch without adapters. CPU (Triton's
interpreter) and GPU alike; the CUDA-graph tests need CUDA."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling_compat.kernels import plan as plan_mod
from inkling_compat.kernels import sink
from inkling_compat.kernels.plan import build_plan, plan_for
from inkling_compat.kernels.reference import relative_error
from sink_cases import DEVICE, Case, make_problem

PLAN = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@PLAN
@given(st.integers(1, 6), st.lists(st.integers(-1, 5), min_size=2, max_size=80))
def test_plan_contents(S, ids):
    ids = [i if i < S else -1 for i in ids]
    slot_ids = torch.tensor(ids, device=DEVICE)
    p = build_plan(slot_ids, S)
    r = p.routing
    key = torch.tensor(ids) + 1
    counts = torch.bincount(key, minlength=S + 1)
    assert r.slot_counts.cpu().tolist() == counts.tolist()
    assert r.slot_offsets.cpu().tolist() == (torch.cumsum(counts, 0) - counts).tolist()
    assert r.order.cpu().tolist() == torch.argsort(key, stable=True).tolist()
    none = all(i < 0 for i in ids)
    assert int(r.no_adapter.item()) == int(none)
    assert p.all_unassigned is none
    # groups: slots present in ascending order (-1 first), each starting at its offset
    present = [k for k in range(S + 1) if counts[k]]
    assert r.group_slot.cpu().tolist()[:len(present)] == [k - 1 for k in present]
    assert r.group_start.cpu().tolist()[:len(present)] == [int(r.slot_offsets[k]) for k in present]


def test_plan_from_host_ids_needs_no_read_back(monkeypatch):
    """Ids on the CPU: the host flag comes from them (no .item() on the routing's flag)."""
    S = 3
    read = []
    real = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda self: read.append(1) or real(self))
    p = build_plan(torch.tensor([-1, -1, -1]), S, device=DEVICE)
    assert p.all_unassigned is True and not read
    p = build_plan(torch.tensor([-1, 2, -1]), S, device=DEVICE)
    assert p.all_unassigned is False and not read


def test_one_token_plan_has_no_routing():
    p = build_plan(torch.tensor([2], device=DEVICE), 4)
    assert p.routing is None and p.all_unassigned is False
    assert build_plan(torch.tensor([-1], device=DEVICE), 4).all_unassigned is True
    assert build_plan(torch.tensor([7], device=DEVICE), 4).all_unassigned is True  # out of range: no adapter


def test_plan_is_kept_with_its_tensor_until_the_ids_change():
    ids = torch.tensor([0, 1, -1, 1], device=DEVICE)
    first = plan_for(ids, 2, ids.device)
    assert plan_for(ids, 2, ids.device) is first
    assert plan_for(ids, 3, ids.device) is not first  # other slot count
    again = plan_for(ids, 2, ids.device)
    ids[2] = 0  # in place: a new version
    changed = plan_for(ids, 2, ids.device)
    assert changed is not again and changed.routing.order.cpu().tolist() == [0, 2, 1, 3]
    assert plan_for(ids.clone(), 2, ids.device) is not changed  # another tensor


def test_plan_keeps_nothing_on_the_tensor_and_lets_it_go():
    """The plan table holds the last KEPT plans only; the slot-id tensor carries no attribute,
    so once a batch's tensor is dropped and KEPT other batches ran, nothing holds it."""
    import gc
    import weakref

    ids = torch.tensor([0, 1, -1, 1], device=DEVICE)
    plan_for(ids, 2, ids.device)
    assert not ids.__dict__
    gone = weakref.ref(ids)
    del ids
    for _ in range(plan_mod.KEPT):
        plan_for(torch.tensor([1, 0], device=DEVICE), 2, torch.device(DEVICE))
    gc.collect()
    assert gone() is None


def test_tokens_of_inactive_slots_count_as_unassigned():
    """slot_active False: the routing treats the slot's tokens as -1, and a batch whose tokens
    are all on such slots is all-unassigned (the base path)."""
    active = torch.tensor([True, False, True], device=DEVICE)
    ids = torch.tensor([1, 1, -1, 1], device=DEVICE)
    p = build_plan(ids, 3, slot_active=active)
    assert p.all_unassigned is True and int(p.routing.no_adapter.item()) == 1
    assert build_plan(ids.cpu(), 3, device=torch.device(DEVICE), slot_active=active).all_unassigned is True
    assert build_plan(torch.tensor([1], device=DEVICE), 3, slot_active=active).all_unassigned is True
    mixed = build_plan(torch.tensor([1, 2, 0, 1], device=DEVICE), 3, slot_active=active)
    assert mixed.all_unassigned is False
    assert mixed.routing.slot_counts.cpu().tolist() == [2, 1, 0, 1]  # slot 1's tokens counted as -1
    # every slot active: the same plan as without a mask (no mask applied, no key)
    full = plan_for(ids, 3, torch.device(DEVICE), slot_active=torch.ones(3, dtype=torch.bool, device=DEVICE))
    assert full.active_key is None and plan_for(ids, 3, torch.device(DEVICE)) is full
    # layers whose masks read the same share a plan; another mask gets its own
    a = plan_for(ids, 3, torch.device(DEVICE), slot_active=active)
    assert plan_for(ids, 3, torch.device(DEVICE), slot_active=active.clone()) is a
    assert plan_for(ids, 3, torch.device(DEVICE), slot_active=torch.tensor([False, True, True], device=DEVICE)) is not a


def test_inactive_slot_with_stale_rows_is_not_applied():
    """A slot marked inactive whose pool rows still hold numbers: the forward leaves them out
    (as the torch reference does), on the plan's path too."""
    p = make_problem(_case(9))
    ops = p.operands()
    ids = torch.tensor([0, 1, 1, -1, 2, 1, 0, 2, 1], device=DEVICE)
    ops.slot_active = torch.tensor([True, False, True], device=DEVICE)
    ops.gate_up_b[1].normal_()
    ops.refresh()
    out = sink.sink_forward_triton(ops, p.x, p.gammas, ids)
    ref = sink.sink_forward_torch(ops, p.x, p.gammas, ids)
    assert relative_error(out, ref) <= 2e-2
    ops.slot_active = torch.ones(3, dtype=torch.bool, device=DEVICE)
    ops.refresh()
    assert relative_error(sink.sink_forward_triton(ops, p.x, p.gammas, ids), ref) > 5e-2  # the stale rows matter


def _case(T, *, shared_outer=True, interleaved=True, slot_mode="mixed"):
    return Case(T=T, n=2, H=64, F=32, S=3, R=8, ranks=(8, 4, 8), shared_outer=shared_outer, interleaved=interleaved,
                slot_mode=slot_mode, dtype="bfloat16", seed=T)


def _count_routing(monkeypatch):
    calls = []
    real = plan_mod.build_routing

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(plan_mod, "build_routing", counting)
    return calls


@pytest.mark.parametrize("T", [1, 9, 40])
def test_layers_share_one_plan(T, monkeypatch):
    """Three layers (distinct weights) called with the same slot-id tensor: one routing launch,
    each layer's output identical to its forward with a plan of its own."""
    calls = _count_routing(monkeypatch)
    probs = [make_problem(_case(T) if i == 0 else Case(**{**_case(T).__dict__, "seed": 100 + i})) for i in range(3)]
    ids = probs[0].slot_ids.clone()
    ids[0] = 1
    ops = [p.operands() for p in probs]
    outs = [sink.sink_forward_triton(o, p.x, p.gammas, ids) for o, p in zip(ops, probs)]
    assert len(calls) == (0 if T == 1 else 1)
    for o, p, out in zip(ops, probs, outs):
        own = sink.sink_forward_triton(o, p.x, p.gammas, plan=build_plan(ids.clone(), o.slots))
        assert torch.equal(out, own)
        p.slot_ids = ids
        assert relative_error(out, p.reference()) <= p.bound()


@pytest.mark.parametrize("T", [1, 9, 40])
def test_all_unassigned_batch_runs_the_base_path(T, monkeypatch):
    """No token with an adapter: the base kernels only (no LoRA launch), the base output exactly."""
    p = make_problem(_case(T, slot_mode="all-minus-one"))
    ops = p.operands()
    ids = torch.full((T,), -1, device=DEVICE)
    base = sink.sink_forward_triton(ops, p.x, p.gammas, None)
    lora = []
    real_gu, real_dn = sink.gate_up_swiglu, sink.down_proj
    monkeypatch.setattr(sink, "gate_up_swiglu", lambda *a, **k: lora.append(k.get("routing")) or real_gu(*a, **k))
    monkeypatch.setattr(sink, "down_proj", lambda *a, **k: lora.append(k.get("routing")) or real_dn(*a, **k))
    monkeypatch.setattr(sink, "lora_shrink", lambda *a, **k: pytest.fail("a LoRA shrink ran"))
    out = sink.sink_forward_triton(ops, p.x, p.gammas, ids)
    assert torch.equal(out, base)
    assert lora and all(r is None for r in lora)  # the base kernels only, no routing given to any


def test_plan_for_another_batch_size_is_refused():
    p = make_problem(_case(9))
    with pytest.raises(ValueError, match="plan is for 4 tokens"):
        sink.sink_forward_triton(p.operands(), p.x, p.gammas, plan=build_plan(torch.zeros(4, dtype=torch.long, device=DEVICE), 3))


# --- GPU: captured forwards -------------------------------------------------------------------


@cuda
@pytest.mark.parametrize("T", [1, 9, 64, 1024])
def test_capture_shares_the_plan_and_replays_new_ids(T, monkeypatch):
    """Two layers captured in one CUDA graph with the same slot-id tensor: the routing is
    captured once (when cuda-python reads the capture id), and replays follow new ids copied
    into the tensor, all-unassigned included (the LoRA launches then return at once)."""
    probs = [make_problem(Case(**{**_case(T).__dict__, "H": 1536, "F": 768, "n": 4, "S": 8, "R": 16,
                                  "ranks": (16,) * 8, "seed": s}), lora_scale=0.5) for s in (1, 2)]
    ops = [p.operands() for p in probs]
    ids = torch.zeros(T, dtype=torch.long, device="cuda")
    for o, p in zip(ops, probs):
        sink.sink_forward_triton(o, p.x, p.gammas, ids)  # compile outside the capture
    torch.cuda.synchronize()
    calls = _count_routing(monkeypatch)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = [sink.sink_forward_triton(o, p.x, p.gammas, ids) for o, p in zip(ops, probs)]
    readable = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
    assert len(calls) == (0 if T == 1 else 1 if readable else 2)
    gen = torch.Generator(device="cuda").manual_seed(T)
    for new in (torch.randint(-1, 8, (T,), device="cuda", generator=gen), torch.full((T,), -1, device="cuda")):
        ids.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        for o, p, out in zip(ops, probs, outs):
            p.slot_ids = new
            assert relative_error(out, p.reference(lora=bool((new >= 0).any()))) <= 1e-2
            assert relative_error(out, sink.sink_forward_triton(o, p.x, p.gammas, new.clone())) <= 1e-2


@cuda
def test_capture_id_is_read_on_this_machine():
    """cuda-python reads the capture id (else plans are not shared inside captures)."""
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    x = torch.zeros(4, device="cuda")
    with torch.cuda.stream(s):
        with torch.cuda.graph(g, stream=s):
            inside = plan_mod._capture_id(torch.device("cuda"))
            x.add_(1)
    assert plan_mod._capture_id(torch.device("cuda")) is None
    assert inside not in (None, -1)


@cuda
@pytest.mark.parametrize("T", [1, 64, 4096])
def test_eager_all_unassigned_equals_base_on_the_gpu(T):
    p = make_problem(Case(**{**_case(T).__dict__, "H": 1536, "F": 768, "n": 4, "S": 8, "R": 16, "ranks": (16,) * 8}))
    ops = p.operands()
    base = sink.sink_forward_triton(ops, p.x, p.gammas, None)
    assert torch.equal(sink.sink_forward_triton(ops, p.x, p.gammas, torch.full((T,), -1, device="cuda")), base)
