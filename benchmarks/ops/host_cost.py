"""Host (Python) cost of one eager forward and of its launches, on a CUDA GPU: where the eager
microseconds go when the GPU work is smaller than the launching.

    python benchmarks/ops/host_cost.py --output host_cost.json

For (H, n, F) = (1536, 4, 768), S = 8, r = 16, shared outer, T in {1, 64}: the host time per call
(``time.perf_counter`` around many calls issued back to back, the GPU kept busy; the queue never
drains because the calls are short) of the base forward, the LoRA forward (plan kept with the
ids), one ``torch.mm``, one Triton launch of each kernel the forward makes, and ``build_plan``;
then a cProfile of 300 base forwards at T = 1 (top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def host_us(fn, calls: int = 300) -> float:
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="host_cost.json")
    args = parser.parse_args(argv)
    import torch

    from common import make_problem
    from inkling_compat.kernels import sink
    from inkling_compat.kernels.down_proj import down_proj
    from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu
    from inkling_compat.kernels.plan import build_plan

    result = {"rows": {}}
    for T in (1, 64):
        p = make_problem(1536, 4, 768, T)
        ops = p.operands()
        ids = p.slot_ids
        none = torch.full_like(ids, -1)
        act = gate_up_swiglu(p.x, ops.w13_lin, p.gammas, ops.n, interleaved=True)
        w13t = ops.w13_lin.t()
        row = {
            "forward_base": host_us(lambda: sink.sink_forward_triton(ops, p.x, p.gammas, None)),
            "forward_lora": host_us(lambda: sink.sink_forward_triton(ops, p.x, p.gammas, ids)),
            "forward_all_unassigned": host_us(lambda: sink.sink_forward_triton(ops, p.x, p.gammas, none)),
            "torch_mm": host_us(lambda: torch.mm(p.x, w13t)),
            "triton_gate_up": host_us(lambda: gate_up_swiglu(p.x, ops.w13_lin, p.gammas, ops.n, interleaved=True)),
            "triton_down": host_us(lambda: down_proj(act, ops.w2_lin)),
            "build_plan_no_readback": host_us(lambda: build_plan(ids, 8, host_flag=False)),
            "empty_4k": host_us(lambda: torch.empty(4096, device="cuda")),
        }
        result["rows"][str(T)] = row
        print(f"T={T}: " + ", ".join(f"{k} {v:.1f} us" for k, v in row.items()), flush=True)

    p = make_problem(1536, 4, 768, 1)
    ops = p.operands()
    for _ in range(20):
        sink.sink_forward_triton(ops, p.x, p.gammas, None)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(300):
        sink.sink_forward_triton(ops, p.x, p.gammas, None)
    prof.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
    result["cprofile_base_t1"] = buf.getvalue()
    print(buf.getvalue())
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
