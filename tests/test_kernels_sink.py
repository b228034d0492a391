"""The whole shared-sink forward: Triton kernels vs the float64 torch reference.

Runs in Triton's interpreter on a CPU-only machine (small shapes: the interpreter executes each
program instance in numpy) and compiled on a GPU. ||out - ref|| / ||ref|| <= 1e-2 for bf16
operands over hypothesis-generated shapes: T in {1, odd, > one 64-row tile}, ranks 1-64 with mixed
true ranks padded to R (empty slots included), slot -1 and mixed slots, both outer layouts,
both gate/up layouts.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings

from inkling_compat.kernels.reference import relative_error
from inkling_compat.kernels.sink import sink_forward_torch, sink_forward_triton
from sink_cases import DEVICE, Case, cases, make_problem, tolerance

SETTINGS = settings(max_examples=40 if DEVICE.type == "cpu" else 40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.long
@SETTINGS
@given(cases())
@example(Case(T=1, n=2, H=64, F=48, S=4, R=16, ranks=(16, 16, 16, 16), shared_outer=True, interleaved=True, slot_mode="single"))
@example(Case(T=65, n=3, H=96, F=40, S=5, R=64, ranks=(1, 64, 0, 17, 33), shared_outer=False, interleaved=False, slot_mode="mixed"))
@example(Case(T=33, n=1, H=17, F=5, S=2, R=3, ranks=(3, 1), shared_outer=False, interleaved=True, slot_mode="mixed"))
@example(Case(T=7, n=2, H=40, F=24, S=3, R=8, ranks=(8, 2, 5), shared_outer=True, interleaved=False, slot_mode="all-minus-one"))
def test_forward_matches_reference(case):
    p = make_problem(case)
    ref = p.reference()
    out = sink_forward_triton(p.operands(), p.x, p.gammas, p.slot_ids)
    assert out.shape == (case.T, case.H) and out.dtype == p.x.dtype
    err = relative_error(out, ref)
    assert err <= p.bound(), (err, case)


@settings(max_examples=15 if DEVICE.type == "cpu" else 20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(dtypes=("bfloat16",)))
def test_lora_delta_is_tested(case):
    """The generated pools make the LoRA delta a large part of the output whenever a token has
    an adapter, so the 1e-2 bound above really constrains the delta."""
    p = make_problem(case)
    if p.slot_ids is None or not any(case.ranks[s] > 0 for s in p.slot_ids.tolist() if s >= 0):
        return
    share = relative_error(p.reference(lora=False), p.reference())
    assert share > 0.05, share


# The torch path (the benchmark's baseline, not the runtime) keeps bf16 intermediates: the base
# gate/up product and each LoRA delta are rounded to bf16 *before* they are added, then the
# activation, the output and the down delta. Where the base and the delta cancel, the rounding
# of each addend is large against their sum: over 1,500 random bf16 cases its error reached
# 2.45e-2 (one token, H = 8) and 7.2x what the kernels' own storage roundings cost, so no fixed
# or judged bound holds for it on random shapes. Its function is therefore tested on random
# shapes in float32 (1e-5: measured at most 2.3e-6 over the same 1,500 cases) and its bf16
# accuracy on pinned cases: a well-posed one, and the one hypothesis found (H = 8, one token)
# where it measures 1.06e-2 and the Triton kernels 4.5e-3.
TORCH_PATH_BF16_TOLERANCE = 2e-2


@settings(max_examples=15 if DEVICE.type == "cpu" else 20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(dtypes=("float32",)))
def test_torch_path_matches_reference(case):
    p = make_problem(case)
    out = sink_forward_torch(p.operands(), p.x, p.gammas, p.slot_ids)
    assert relative_error(out, p.reference()) <= tolerance(case)


@pytest.mark.parametrize("case", [
    Case(T=1, n=1, H=8, F=57, S=1, R=1, ranks=(1,), shared_outer=False, interleaved=False, slot_mode="mixed", dtype="bfloat16", seed=251),
    Case(T=40, n=2, H=128, F=64, S=3, R=8, ranks=(8, 4, 8), shared_outer=False, interleaved=True, slot_mode="mixed", dtype="bfloat16", seed=7),
], ids=["hypothesis-H8", "well-posed"])
def test_torch_path_in_bf16(case):
    p = make_problem(case)
    out = sink_forward_torch(p.operands(), p.x, p.gammas, p.slot_ids)
    assert relative_error(out, p.reference()) <= TORCH_PATH_BF16_TOLERANCE


def test_triton_path_meets_1e_2_where_the_torch_path_does_not():
    """The pinned case above: the runtime's kernels stay within the 1e-2 bound."""
    p = make_problem(Case(T=1, n=1, H=8, F=57, S=1, R=1, ranks=(1,), shared_outer=False, interleaved=False, slot_mode="mixed", dtype="bfloat16", seed=251))
    out = sink_forward_triton(p.operands(), p.x, p.gammas, p.slot_ids)
    assert relative_error(out, p.reference()) <= tolerance(p.case)  # 4.5e-3: the bound is not judged up here


def test_padded_rank_equals_compact_rank():
    """A pool padded to R > r gives the output of a compact R = r pool (spec section 8)."""
    compact = make_problem(Case(T=21, n=2, H=48, F=24, S=3, R=4, ranks=(4, 4, 4), shared_outer=True, interleaved=True, slot_mode="mixed", dtype="float32", seed=3))
    R = 32
    a_gu, b_gu, a_dn, b_dn = compact.pool
    S, E, _, H = a_gu.shape
    pa = torch.zeros(S, E, 2 * R, H, dtype=a_gu.dtype, device=a_gu.device)
    pa[:, :, :4], pa[:, :, R:R + 4] = a_gu[:, :, :4], a_gu[:, :, 4:]
    pb = torch.zeros(*b_gu.shape[:3], R, dtype=b_gu.dtype, device=b_gu.device)
    pb[..., :4] = b_gu
    pda = torch.zeros(S, a_dn.shape[1], R, a_dn.shape[3], dtype=a_dn.dtype, device=a_dn.device)
    pda[:, :, :4] = a_dn
    pdb = torch.zeros(*b_dn.shape[:3], R, dtype=b_dn.dtype, device=b_dn.device)
    pdb[..., :4] = b_dn
    padded = make_problem(compact.case)
    padded.pool = (pa, pb, pda, pdb)
    out_c = sink_forward_triton(compact.operands(), compact.x, compact.gammas, compact.slot_ids)
    out_p = sink_forward_triton(padded.operands(), padded.x, padded.gammas, padded.slot_ids)
    assert relative_error(out_p, out_c) <= tolerance(compact.case)


def test_three_d_input_is_flattened():
    p = make_problem(Case(T=12, n=2, H=32, F=16, S=2, R=4, ranks=(4, 2), shared_outer=False, interleaved=True, slot_mode="mixed"))
    ops = p.operands()
    flat = sink_forward_triton(ops, p.x, p.gammas, p.slot_ids)
    three = sink_forward_triton(ops, p.x.view(3, 4, -1), p.gammas.view(3, 4, -1), p.slot_ids)
    assert three.shape == flat.shape
    assert torch.equal(three, flat)


def test_sglang_input_assertions():
    p = make_problem(Case(T=4, n=2, H=32, F=16, S=1, R=2, ranks=(2,), shared_outer=True, interleaved=True, slot_mode="none"))
    ops = p.operands()
    with pytest.raises(AssertionError, match=r"x\.shape="):
        sink_forward_triton(ops, p.x.reshape(-1), p.gammas)
    with pytest.raises(AssertionError, match=r"gammas\.shape="):
        sink_forward_triton(ops, p.x, p.gammas.reshape(-1))
    with pytest.raises(AssertionError, match=r"gammas\.shape=.* n=2"):
        sink_forward_triton(ops, p.x, p.gammas[:, :1])


def test_empty_batch():
    p = make_problem(Case(T=1, n=2, H=32, F=16, S=2, R=4, ranks=(4, 2), shared_outer=True, interleaved=False, slot_mode="mixed"))
    ops = p.operands()
    out = sink_forward_triton(ops, p.x[:0], p.gammas[:0], p.slot_ids[:0])
    assert out.shape == (0, 32)


def test_capture_needs_cuda():
    """The captured forward is a CUDA graph: on a CPU tensor it says so (no traceback deep in torch)."""
    if DEVICE.type == "cuda":
        pytest.skip("CPU-only check")
    from inkling_compat.kernels.capture import capture_forward
    from inkling_compat.kernels.errors import RuntimeUnavailable

    case = Case(T=2, n=1, H=16, F=8, S=2, R=4, ranks=(4, 4), shared_outer=True, interleaved=True, slot_mode="mixed")
    with pytest.raises(RuntimeUnavailable, match="CUDA"):
        capture_forward(make_problem(case).operands(), 2)


def test_torch_segments_make_the_torch_loop_sync_free():
    """Segments computed beforehand (one host sync) give the same torch forward."""
    from inkling_compat.kernels.sink import torch_segments

    case = Case(T=40, n=2, H=32, F=16, S=4, R=8, ranks=(8, 0, 4, 8), shared_outer=False, interleaved=True, slot_mode="mixed", seed=3)
    p = make_problem(case)
    ops = p.operands()
    a = sink_forward_torch(ops, p.x, p.gammas, p.slot_ids)
    b = sink_forward_torch(ops, p.x, p.gammas, segments=torch_segments(ops, p.slot_ids))
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shared_outer,n,R", [(False, 3, 64), (False, 2, 64), (True, 3, 64), (False, 3, 40)])
def test_wide_gate_up_bridge_is_shrunk_in_blocks_that_fit(dtype, shared_outer, n, R):
    """E_a * 2R rank rows above 128 (per-expert pools of high rank) are shrunk in narrower blocks:
    on the GPU one 384-row block would not fit shared memory (OutOfResources)."""
    case = Case(T=33, n=n, H=96, F=24, S=3, R=R, ranks=(R, R // 2, 0), shared_outer=shared_outer, interleaved=False,
                slot_mode="mixed", dtype=dtype, seed=n * R)
    p = make_problem(case)
    out = sink_forward_triton(p.operands(), p.x, p.gammas, p.slot_ids)
    assert relative_error(out, p.reference()) <= tolerance(case)


def test_the_kernels_make_exactly_the_storage_roundings_and_the_bound_is_judged_by_them():
    """The judged bound (kernels/reference.py): on an ill-conditioned output (one token, H = 80,
    found by hypothesis through the runtime) the bf16 storage roundings alone pass 1e-2; the
    kernels' result is the storage-rounded reference to within 1e-3, and it meets the judged
    bound though not the plain one."""
    from inkling_compat.kernels.reference import STORAGE_SLACK, accuracy

    from inkling_compat.runtime.load import load
    from inkling_compat.testing.strategies import SinkSetup

    args = SinkSetup(n=1, hidden=80, intermediate=48, tp=2, slots=3, rank=3, shared_outer=False, sink_class="legacy",
                     legacy_backend="triton").arguments()
    sink = load(args["config"], args["model"], [args["adapter"]], device=DEVICE, seed=0, tp_rank=0, slot_ranks=[1, 2, 3])
    x, g, slots = sink.random_inputs(1, seed=0)
    out, ref = sink.forward(x, g, slots), sink.reference(x, g, slots)
    stored = sink.reference(x, g, slots, storage=torch.bfloat16)
    acc = accuracy(out, ref, stored)
    assert acc.storage_norm_error > 1e-2 and acc.norm_relative_error > 1e-2  # the plain bound fails
    assert relative_error(out, stored) <= 1e-3
    assert acc.ok and acc.norm_bound == STORAGE_SLACK * acc.storage_norm_error
    assert "storage roundings alone cost" in acc.describe()
