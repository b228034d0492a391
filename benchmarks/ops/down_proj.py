"""Per-op benchmark: the down GEMM + LoRA expand (rows scattered back to token order) in one
Triton kernel, beside its torch reference (``act @ w2_lin``, per-slot expand on host-bounded
segments), CUDA-graph medians over layers rotated past the L2. Also the base-only kernel.

    python benchmarks/ops/down_proj.py [--tokens 1,64,1024,4096] [--output FILE]
"""

from __future__ import annotations

import sys

from _op_bench import run
from common import graph_us, layers_for, make_problem


def bench_row(H, n, F, T, S=8, R=16):
    import torch

    from inkling_compat.kernels.down_proj import down_proj
    from inkling_compat.kernels.routing import build_routing
    from inkling_compat.kernels.sink import torch_segments

    layers = layers_for(2 * n * F * H + T * n * F * 2)
    probs = [make_problem(H, n, F, T, S=S, R=R, seed=i) for i in range(layers)]
    ops = [p.operands() for p in probs]
    routes = [build_routing(p.slot_ids, S) for p in probs]
    acts = [torch.randn(T, n * F, device="cuda").to(p.x.dtype) for p in probs]
    bridges = [torch.randn(T, R, device="cuda").to(p.x.dtype) for p in probs]
    segs = [torch_segments(o, p.slot_ids) for o, p in zip(ops, probs)]

    def triton_call(o, a, r, br, lora=True):
        if not lora:
            return lambda: down_proj(a, o.w2_lin)
        return lambda: down_proj(a, o.w2_lin, routing=r, bridge=br, b=o._down_expand_b)

    def torch_call(o, a, br, seg):
        def call():
            out = a @ o.w2_lin
            for s, rows in seg:
                out[rows] += br[rows] @ o._down_expand_b[s].T
        return call

    return {
        "triton_us": graph_us([triton_call(o, a, r, b) for o, a, r, b in zip(ops, acts, routes, bridges)]),
        "torch_us": graph_us([torch_call(o, a, b, s) for o, a, b, s in zip(ops, acts, bridges, segs)]),
        "triton_base_us": graph_us([triton_call(o, a, r, b, lora=False) for o, a, r, b in zip(ops, acts, routes, bridges)]),
        # the fused path's kernel: the down shrink in its K loop too (no bridge input)
        "triton_fused_us": graph_us([lambda o=o, a=a, r=r: down_proj(a, o.w2_lin, routing=r, b=o._down_expand_b, shrink_a=o._down_shrink_a,
                                                                    shrink_rank=R, shrink_window=0)
                                     for o, a, r in zip(ops, acts, routes)]),
        "weight_bytes": 2 * n * F * H,
    }


if __name__ == "__main__":
    sys.exit(run("down_proj", bench_row))
