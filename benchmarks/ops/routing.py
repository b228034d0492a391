"""Per-op benchmark: the routing (one Triton counting-sort launch) beside its torch reference
(``build_routing_torch``: stable argsort + scatter/cumsum, ~29 launches), CUDA-graph medians.

    python benchmarks/ops/routing.py [--tokens 1,64,1024,4096] [--output FILE]
"""

from __future__ import annotations

import sys

from _op_bench import run
from common import graph_us


def bench_row(H, n, F, T, S=8):
    import torch

    from inkling_compat.kernels.routing import build_routing, build_routing_torch

    ids = [torch.randint(0, S, (T,), device="cuda") for _ in range(4)]
    active = torch.ones(S, dtype=torch.bool, device="cuda")
    return {
        "triton_us": graph_us([lambda i=i: build_routing(i, S, active) for i in ids]),
        "torch_us": graph_us([lambda i=i: build_routing_torch(i, S, active) for i in ids]),
    }


if __name__ == "__main__":
    sys.exit(run("routing", bench_row))
