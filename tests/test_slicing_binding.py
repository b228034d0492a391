"""inkling_compat.sglang.slicing and inkling_compat.sglang.set_lora_info on known cases (no sglang wheel needed;
tests/test_fidelity.py compares both with sglang's own code on generated cases)."""

from __future__ import annotations

from inkling_compat.sglang import set_lora_info as binding
from inkling_compat.sglang import slicing
from inkling_compat.sglang.slicing import DOWN, GATE_UP


def test_tp_shards_of_the_spec():
    # spec section 8: n=2, F_full=4, tp=2, rank 1 -> gate/up B rows [2:4] ++ [6:8], down A cols [2:4]
    assert slicing.slice_lora_b([2, 8, 1], GATE_UP, n=2, tp_size=2, tp_rank=1, f_local=2) == [2, 4, 1]
    assert slicing.slice_lora_a([2, 1, 4], DOWN, n=2, tp_size=2, tp_rank=1, f_local=2) == [2, 1, 2]


def test_flat_factors_become_per_expert():
    assert slicing.slice_lora_a([16, 1536], DOWN, n=2, tp_size=1, tp_rank=0, f_local=768) == [2, 16, 768]
    assert slicing.slice_lora_b([3072, 16], GATE_UP, n=2, tp_size=1, tp_rank=0, f_local=768) == [2, 1536, 16]
    assert slicing.slice_lora_a([32, 1536], GATE_UP, n=2, tp_size=2, tp_rank=1, f_local=384) == [1, 32, 1536]
    assert slicing.slice_lora_b([1536, 16], DOWN, n=2, tp_size=2, tp_rank=1, f_local=384) == [1, 1536, 16]


def test_divisibility_failures_carry_sglangs_text():
    failure = slicing.slice_failure("a", [16, 1024], DOWN, 3)
    assert failure is not None and failure.site == "down_a" and failure.error_class == "ValueError"
    assert failure.message == "Shared-sink down LoRA-A width must be divisible by 3, got 1024"
    assert slicing.slice_lora_a([16, 1024], DOWN, 3, 1, 0, 0) is None
    failure = slicing.slice_failure("b", [3071, 16], GATE_UP, 3)
    assert failure is not None and failure.message == "Shared-sink gate/up LoRA-B height must be divisible by 3, got 3071"
    assert slicing.slice_failure("b", [3071, 16], DOWN, 3) is None  # down B is only unsqueezed


def test_cuts_past_the_end_are_clamped_like_torch():
    # [1, 5] -> [1, 1, 5]; rank 1 of F=4 keeps columns [4, 8) -> one column
    assert slicing.slice_lora_a([1, 5], DOWN, n=1, tp_size=2, tp_rank=1, f_local=4) == [1, 1, 1]
    # rows [4, 6) of 8 keep the gate part only: the up cut [8, 10) is past the end (torch: [2, 2, 1])
    assert slicing.slice_lora_b([2, 8, 1], GATE_UP, n=2, tp_size=2, tp_rank=2, f_local=2) == [2, 2, 1]
    # a rank whose cuts both start past the end keeps nothing
    assert slicing.slice_lora_b([2, 8, 1], GATE_UP, n=2, tp_size=2, tp_rank=4, f_local=2) == [2, 0, 1]


POOL = [[4, 1, 32, 1536], [4, 2, 1536, 16], [4, 2, 16, 768], [4, 1, 1536, 16]]


def test_a_consistent_pool_binds_in_both_classes():
    for sink_class in ("legacy", "v2"):
        result = binding.simulate(sink_class, 2, POOL, POOL, [0, 3])
        assert result.first is None
        assert result.completed == binding.BindSteps(set_lora_info=True, rebind=True, slots=True)


def test_torch_failures_after_the_checks():
    short_down_a = [POOL[0], POOL[1], [2, 2, 16, 768], POOL[3]]
    legacy = binding.simulate("legacy", 2, short_down_a).first
    assert legacy == binding.BindFailure(
        step="set_lora_info",
        kind="torch",
        error_class="IndexError",
        message="index 2 is out of bounds for dimension 0 with size 2",
    )
    v2 = binding.simulate("v2", 2, short_down_a).first
    assert v2.kind == "torch" and v2.message == "shape '[2, 16, 2, 768]' is invalid for input of size 98304"
    slots = binding.simulate("v2", 2, POOL, None, [4, 1]).first
    assert (slots.step, slots.message) == ("slots", "index 4 is out of bounds for dimension 0 with size 4")
    assert binding.simulate("v2", 2, POOL, None, [-1]).first is None  # torch accepts -1


def test_sglang_checks_come_first():
    first = binding.simulate("legacy", 2, POOL, None, [4, 1]).first
    assert (first.kind, first.message) == ("sglang", "Shared-sink LoRA slot out of range: [1, 4]")
    first = binding.simulate("v2", 2, [[1, 32, 1536], *POOL[1:]]).first
    assert (first.kind, first.message) == ("python", "not enough values to unpack (expected 4, got 3)")
