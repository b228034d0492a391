"""Hypothesis strategies: consistent Inkling LoRA setups and single-fault mutations of them.

For fuzzing `check()` and your own adapter converters. Needs `hypothesis` (the `test`
extra); the checker itself never imports this module.

    from hypothesis import given
    from inkling_compat import check
    from inkling_compat.strategies import sink_setups, faulty_sink_setups

    @given(sink_setups())
    def test_my_converter_accepts(setup):
        assert check(**setup.arguments()).ok

A `SinkSetup` holds the geometry (n, H, I, tp, S, R, outer layout, sink class) and renders
the server config, model config and pool manifest sglang would see on one TP rank.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Callable

from hypothesis import strategies as st


@dataclass(frozen=True)
class SinkSetup:
    n: int  # n_shared_experts
    hidden: int  # H
    intermediate: int  # I (full, before TP)
    tp: int
    slots: int  # S = max_loras_per_batch
    rank: int  # R = max_lora_rank
    shared_outer: bool
    sink_class: str  # "legacy" | "v2"
    legacy_backend: str = "triton"

    @property
    def f_local(self) -> int:
        return self.intermediate // self.tp

    def config(self) -> dict[str, Any]:
        return {
            "enable_lora": True,
            "lora_backend": "triton_v2" if self.sink_class == "v2" else self.legacy_backend,
            "max_loras_per_batch": self.slots,
            "max_lora_rank": self.rank,
            "lora_target_modules": ["gate_up_proj", "down_proj"],
            "experts_shared_outer_loras": self.shared_outer,
            "tp_size": self.tp,
            "dtype": "bfloat16",
        }

    def model(self) -> dict[str, Any]:
        return {
            "architectures": ["InklingForConditionalGeneration"],
            "model_type": "inkling",
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "n_shared_experts": self.n,
            "shared_expert_sink": True,
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "num_attention_heads": 16,
            "num_key_value_heads": 4,
            "head_dim": 128,
        }

    def pool_shapes(self) -> dict[str, list[int]]:
        outer = 1 if self.shared_outer else self.n
        s, n, r, h, f = self.slots, self.n, self.rank, self.hidden, self.f_local
        return {
            "gate_up_lora_a": [s, outer, 2 * r, h],
            "gate_up_lora_b": [s, n, 2 * f, r],
            "down_lora_a": [s, n, r, f],
            "down_lora_b": [s, outer, h, r],
        }

    def adapter(self, shapes: dict[str, list[int]] | None = None) -> dict[str, Any]:
        shapes = shapes or self.pool_shapes()
        return {"name": "generated", "pool": {k: {"shape": list(v), "dtype": "bfloat16"} for k, v in shapes.items()}}

    def arguments(self) -> dict[str, Any]:
        """Keyword arguments for `check()`."""
        return {"config": self.config(), "model": self.model(), "adapter": self.adapter()}


@st.composite
def sink_setups(draw: Any, sink_class: str | None = None) -> SinkSetup:
    """A consistent setup that sglang 0.5.23 accepts (and so must `check()`)."""
    tp = draw(st.sampled_from([1, 2, 4]))
    cls = sink_class or draw(st.sampled_from(["legacy", "v2"]))
    slots = draw(st.integers(1, 16))
    backend = "triton" if slots > 1 else draw(st.sampled_from(["triton", "csgmv", "torch_native"]))
    return SinkSetup(
        n=draw(st.integers(1, 4)),
        hidden=64 * draw(st.integers(1, 112)),
        intermediate=tp * 16 * draw(st.integers(1, 64)),
        tp=tp,
        slots=slots,
        rank=draw(st.integers(1, 64)),
        shared_outer=draw(st.booleans()),
        sink_class=cls,
        legacy_backend=backend,
    )


@dataclass(frozen=True)
class Fault:
    """One injected fault and the rule that must report it for each sink class."""

    name: str
    expected: dict[str, str]  # sink class -> rule id
    applies: Callable[[SinkSetup], bool]
    mutate: Callable[[SinkSetup, dict[str, Any]], dict[str, Any]]


def _set_shape(buffer: str, transform: Callable[[SinkSetup, list[int]], list[int]]):
    def mutate(setup: SinkSetup, args: dict[str, Any]) -> dict[str, Any]:
        args = copy.deepcopy(args)
        spec = args["adapter"]["pool"][buffer]
        spec["shape"] = transform(setup, list(spec["shape"]))
        return args

    return mutate


def _with_dim(index: int, value: Callable[[SinkSetup, list[int]], int]):
    def transform(setup: SinkSetup, shape: list[int]) -> list[int]:
        shape[index] = value(setup, shape)
        return shape

    return transform


def _config(**changes: Any):
    def mutate(setup: SinkSetup, args: dict[str, Any]) -> dict[str, Any]:
        args = copy.deepcopy(args)
        args["config"].update(changes)
        return args

    return mutate


def _other_outer(setup: SinkSetup) -> int:
    return setup.n + 1 if setup.n + 1 != 1 else setup.n + 2


def _flip_outer(setup: SinkSetup, shape: list[int]) -> int:
    return setup.n if shape[1] == 1 else 1


SINK_FAULTS: tuple[Fault, ...] = (
    Fault(
        "csgmv backend with several slots",
        {"legacy": "sink-lora-multislot-needs-triton"},
        lambda s: s.sink_class == "legacy" and s.slots > 1,
        _config(lora_backend="csgmv"),
    ),
    Fault(
        "gate-up A without its slot axis",
        {"legacy": "sink-pool-not-4d", "v2": "sink-v2-pool-unpack"},
        lambda s: True,
        _set_shape("gate_up_lora_a", lambda s, shape: shape[1:]),
    ),
    Fault(
        "gate-up B with an extra axis",
        {"legacy": "sink-pool-not-4d", "v2": "sink-v2-pool-unpack"},
        lambda s: True,
        _set_shape("gate_up_lora_b", lambda s, shape: shape[:1] + [1] + shape[1:]),
    ),
    Fault(
        "gate-up A outer dimension neither 1 nor n",
        {"legacy": "sink-pool-outer-dim", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_a", _with_dim(1, lambda s, shape: _other_outer(s))),
    ),
    Fault(
        "down B outer layout differs from gate-up A",
        {"legacy": "sink-pool-outer-layout-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: s.n > 1,
        _set_shape("down_lora_b", _with_dim(1, _flip_outer)),
    ),
    Fault(
        "gate-up B expert count off by one",
        {"legacy": "sink-pool-expert-count", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_b", _with_dim(1, lambda s, shape: s.n + 1)),
    ),
    Fault(
        "down A expert count off by one",
        {"legacy": "sink-pool-expert-count", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(1, lambda s, shape: s.n + 1)),
    ),
    Fault(
        "gate-up A rank axis R instead of 2R",
        {"legacy": "sink-pool-rank-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("gate_up_lora_a", _with_dim(2, lambda s, shape: s.rank)),
    ),
    Fault(
        "down B rank off by one",
        {"legacy": "sink-pool-rank-mismatch", "v2": "sink-v2-pool-disagree"},
        lambda s: True,
        _set_shape("down_lora_b", _with_dim(3, lambda s, shape: s.rank + 1)),
    ),
    Fault(
        "down B hidden size off by one",
        {"legacy": "sink-pool-hidden-mismatch", "v2": "sink-pool-hidden-mismatch"},
        lambda s: True,
        _set_shape("down_lora_b", _with_dim(2, lambda s, shape: s.hidden + 1)),
    ),
    Fault(
        "down A intermediate width off by one",
        {"legacy": "sink-pool-intermediate-mismatch", "v2": "sink-pool-intermediate-mismatch"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(3, lambda s, shape: s.f_local + 1)),
    ),
    Fault(
        "down A slot count off by one",
        {"legacy": "sink-pool-slot-count-mismatch", "v2": "sink-pool-slot-count-mismatch"},
        lambda s: True,
        _set_shape("down_lora_a", _with_dim(0, lambda s, shape: s.slots + 1)),
    ),
    Fault(
        "pool built for another --max-lora-rank",
        {"legacy": "sink-pool-differs-from-config", "v2": "sink-pool-differs-from-config"},
        lambda s: True,
        lambda s, args: dict(args, adapter=s.adapter(replace(s, rank=s.rank + 1).pool_shapes())),
    ),
)


@st.composite
def faulty_sink_setups(draw: Any) -> tuple[SinkSetup, Fault, dict[str, Any]]:
    """(setup, fault, check() arguments with exactly that fault injected)."""
    setup = draw(sink_setups())
    fault = draw(st.sampled_from([f for f in SINK_FAULTS if setup.sink_class in f.expected and f.applies(setup)]))
    return setup, fault, fault.mutate(setup, setup.arguments())
