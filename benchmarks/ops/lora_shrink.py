"""Per-op benchmark: the gate/up LoRA shrink (mixed slots, one launch, split-K at small T)
beside its torch reference (per-slot ``torch.mm`` over tokens sorted by slot, segment bounds
computed on the host before capture), CUDA-graph medians over layers rotated past the L2.

    python benchmarks/ops/lora_shrink.py [--tokens 1,64,1024,4096] [--output FILE]
"""

from __future__ import annotations

import sys

from _op_bench import run
from common import graph_us, layers_for, make_problem


def bench_row(H, n, F, T, S=8, R=16):
    from inkling_compat.kernels.lora_shrink import choose_split, lora_shrink
    from inkling_compat.kernels.routing import build_routing
    from inkling_compat.kernels.sink import torch_segments

    layers = layers_for(S * 2 * R * H * 2 + T * H * 2)
    probs = [make_problem(H, n, F, T, S=S, R=R, seed=i) for i in range(layers)]
    ops = [p.operands() for p in probs]
    routes = [build_routing(p.slot_ids, S) for p in probs]
    segs = [torch_segments(o, p.slot_ids) for o, p in zip(ops, probs)]
    split = choose_split(T, 2, H)

    def triton_call(p, r):
        return lambda: lora_shrink(p.x, p.pool[0].reshape(S, 2 * R, H), r, R, split_k=split)

    def torch_call(p, seg):
        a = p.pool[0].reshape(S, 2 * R, H)

        def call():
            for s, rows in seg:
                p.x[rows] @ a[s].T
        return call

    return {
        "triton_us": graph_us([triton_call(p, r) for p, r in zip(probs, routes)]),
        "torch_us": graph_us([torch_call(p, s) for p, s in zip(probs, segs)]),
        "split_k": split,
    }


if __name__ == "__main__":
    sys.exit(run("lora_shrink", bench_row))
