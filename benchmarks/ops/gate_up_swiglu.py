"""Per-op benchmark: base gate/up GEMM + LoRA expand + SwiGLU in one Triton kernel, beside its
torch reference (``x @ w13_lin.T``, per-slot expand on host-bounded segments, SwiGLU in fp32),
CUDA-graph medians over layers rotated past the L2. Also the base-only kernel.

    python benchmarks/ops/gate_up_swiglu.py [--tokens 1,64,1024,4096] [--output FILE]
"""

from __future__ import annotations

import sys

from _op_bench import run
from common import graph_us, layers_for, make_problem


def bench_row(H, n, F, T, S=8, R=16):
    import torch

    from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu
    from inkling_compat.kernels.routing import build_routing
    from inkling_compat.kernels.sink import torch_segments

    layers = layers_for(2 * n * 2 * F * H + T * H * 2)
    probs = [make_problem(H, n, F, T, S=S, R=R, seed=i) for i in range(layers)]
    ops = [p.operands() for p in probs]
    routes = [build_routing(p.slot_ids, S) for p in probs]
    bridges = [torch.randn(T, 2 * R, device="cuda").to(p.x.dtype) for p in probs]
    segs = [torch_segments(o, p.slot_ids) for o, p in zip(ops, probs)]

    def triton_call(o, p, r, br, lora=True):
        if not lora:
            return lambda: gate_up_swiglu(p.x, o.w13_lin, p.gammas, n, interleaved=True)
        return lambda: gate_up_swiglu(p.x, o.w13_lin, p.gammas, n, interleaved=True, routing=r, bridge=br, b_gu=o.gate_up_b)

    def torch_call(o, p, br, seg):
        def call():
            y = p.x @ o.w13_lin.T
            for s, rows in seg:
                delta = torch.einsum("thk,ehjk->tehj", br[rows].view(-1, 2, R), o.gate_up_b[s].view(n, 2, F, R))
                y.view(T, n, F, 2)[rows] += delta.transpose(2, 3)
            yv = y.float().view(T, n, -1)
            (torch.nn.functional.silu(yv[..., 0::2]) * yv[..., 1::2] * p.gammas.float()[..., None]).to(p.x.dtype)
        return call

    return {
        "triton_us": graph_us([triton_call(o, p, r, b) for o, p, r, b in zip(ops, probs, routes, bridges)]),
        "torch_us": graph_us([torch_call(o, p, b, s) for o, p, b, s in zip(ops, probs, bridges, segs)]),
        "triton_base_us": graph_us([triton_call(o, p, r, b, lora=False) for o, p, r, b in zip(ops, probs, routes, bridges)]),
        # the fused path's kernel: the gate/up shrink in its K loop too (no bridge input)
        "triton_fused_us": graph_us([lambda o=o, p=p, r=r: gate_up_swiglu(p.x, o.w13_lin, p.gammas, n, interleaved=True, routing=r,
                                                                         b_gu=o.gate_up_b, a_gu=o.gate_up_a)
                                     for o, p, r in zip(ops, probs, routes)]),
        "weight_bytes": 2 * n * 2 * F * H,
    }


if __name__ == "__main__":
    sys.exit(run("gate_up_swiglu", bench_row))
