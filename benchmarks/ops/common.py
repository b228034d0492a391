"""What the runtime benchmarks share: random shared-sink problems (never zeros), layer rotation
past the L2, and the two timers (CUDA-graph replay median, eager ``do_bench`` median).

Self-contained (the benchmarks never import tests/): a problem is the base weights, a full pool
of S slots of rank R, inputs, gammas and slot ids, built on the GPU from one seed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

L2_BYTES = 60 * 1024 * 1024  # H200


@dataclass
class SinkProblem:
    H: int
    n: int
    F: int
    T: int
    S: int
    R: int
    shared_outer: bool
    interleaved: bool
    w13: torch.Tensor  # [n, 2F, H]
    w2: torch.Tensor  # [n, H, F]
    pool: tuple  # (A_gu, B_gu, A_dn, B_dn), B pre-scaled
    x: torch.Tensor
    gammas: torch.Tensor
    slot_ids: torch.Tensor  # [T] uniform over the S slots (no -1)

    def operands(self):
        from inkling_compat.kernels.reference import linearize
        from inkling_compat.kernels.sink import SinkOperands

        w13_lin, w2_lin = linearize(self.w13, self.w2)
        return SinkOperands(w13_lin, w2_lin, self.n, self.interleaved, *self.pool).refresh()

    def reference(self, *, lora: bool = True) -> torch.Tensor:
        from inkling_compat.kernels.reference import sink_forward_reference

        return sink_forward_reference(self.x, self.gammas, self.w13, self.w2, interleaved=self.interleaved,
                                      pool=self.pool if lora else None, slot_ids=self.slot_ids if lora else None)


def make_problem(H, n, F, T, *, S=8, R=16, shared_outer=True, interleaved=True, seed=0, lora_scale=0.5,
                 dtype=torch.bfloat16, device="cuda") -> SinkProblem:
    g = torch.Generator(device=device).manual_seed(seed)
    E = 1 if shared_outer else n

    def randn(*shape, std=1.0):
        return (torch.randn(*shape, generator=g, device=device) * std).to(dtype)

    pool = (
        randn(S, E, 2 * R, H, std=H ** -0.5),
        randn(S, n, 2 * F, R, std=lora_scale * R ** -0.5),
        randn(S, n, R, F, std=F ** -0.5),
        randn(S, E, H, R, std=lora_scale * R ** -0.5),
    )
    return SinkProblem(
        H, n, F, T, S, R, shared_outer, interleaved,
        w13=randn(n, 2 * F, H, std=H ** -0.5), w2=randn(n, H, F, std=F ** -0.5), pool=pool,
        x=randn(T, H), gammas=(torch.rand(T, n, generator=g, device=device) + 0.05).to(dtype),
        slot_ids=torch.randint(0, S, (T,), generator=g, device=device),
    )


def layers_for(bytes_per_layer: int) -> int:
    """Copies to rotate through so the working set is over 3x the L2 (at most 16)."""
    return max(1, min(16, -(-3 * L2_BYTES // max(1, bytes_per_layer))))


def graph_us(calls: list, replays: int = 20) -> float:
    """us per call: one CUDA graph holds one call per rotated layer; median over replays."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for c in calls:
            c()
    for _ in range(3):
        graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(calls))
    del graph
    return statistics.median(times)


def eager_us(calls: list) -> float:
    """us per call, eager: ``do_bench`` median (L2 cleared between runs), rotating the layers."""
    import triton.testing

    state = {"i": 0}

    def call():
        state["i"] = (state["i"] + 1) % len(calls)
        calls[state["i"]]()

    for c in calls:
        c()
    return triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median") * 1e3
