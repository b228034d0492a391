"""Host (Python) cost of the kernel wrappers' launch preparation, on the CPU: what one eager
launch spends in this project's code before triton's runner takes over.

    python benchmarks/ops/host_cost_cpu.py --output host_cost_cpu.json

What it times (the process's CPU time, best of 5 rounds: steadier than wall time on a shared
machine): each wrapper call (argument checks, output allocation, the tile choice, grid and
constexprs, the argument tuple) and the cached launch's hit path (``CachedLaunch.__call__``: its
key, the lookup, the call), with the compiled kernel replaced by a no-op and
``torch.cuda.current_device`` by a constant. Triton's own runner and C launcher (about 9 of the
27 us per launch in the H200 profile, benchmarks/results/host_cost_630c186.json), the CUDA
allocator and the GPU are not in it: this is a CPU-side figure for the project's share only.
Shapes: (H, n, F) = (1536, 4, 768), S = 8, r = 16, bf16, the calls one eager forward makes
(base: the library path's SwiGLU epilogue, and the Triton base GEMMs; LoRA: the epilogue with the
bridge columns, the down accumulate, the windowed down shrink and the shrinks' split choices of the
per-expert library path; the routing launch of the batch plan).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")


class _NoKernel:
    def __getitem__(self, grid):
        return lambda *args: None


class _NoJit:
    """Stands in for ``fn``: ``fn[grid](*args, **meta)`` returns a kernel whose launches do nothing."""

    def __getitem__(self, grid):
        return lambda *args, **meta: _NoKernel()


def per_call_us(fn, calls: int, rounds: int = 5) -> float:
    for _ in range(50):
        fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t0) / calls * 1e6)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="host_cost_cpu.json")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    import torch

    from inkling_compat.kernels import _triton, tiles
    from inkling_compat.kernels import down_proj as dp
    from inkling_compat.kernels import gate_up_swiglu as gu
    from inkling_compat.kernels import lora_shrink as ls
    from inkling_compat.kernels import routing as rt
    from inkling_compat.kernels import sink

    _triton.FAST_LAUNCH = True
    torch.cuda.current_device = lambda: 0
    for mod in (gu, dp, ls, rt):
        mod._launch.fn = _NoJit()
    # The H200's tiles (the interpreter's differ only in sizes; the host work is the same).
    for mod in (gu, dp, ls, sink):
        mod.caps_of = lambda device: tiles.H200
    if hasattr(_triton, "clear_launch_caches"):
        _triton.clear_launch_caches()

    H, n, F, S, R = 1536, 4, 768, 8, 16
    dt = torch.bfloat16
    w13 = torch.empty(2 * n * F, H, dtype=dt)
    w2 = torch.empty(n * F, H, dtype=dt)
    b_gu = torch.empty(S, 1, 2 * F, R, dtype=dt).expand(S, n, 2 * F, R)
    b_dn = torch.empty(S, H, R, dtype=dt)
    a_dn = torch.empty(S, n * R, F, dtype=dt)
    ops = sink.SinkOperands(w13_lin=w13, w2_lin=w2, n=n, interleaved=False, gate_up_a=torch.empty(S, n, 2 * R, H, dtype=dt),
                            gate_up_b=b_gu, down_a=torch.empty(S, n, R, F, dtype=dt),
                            down_b=torch.empty(S, n, H, R, dtype=dt)).refresh()
    rows = {}
    for T in (1, 64):
        x = torch.empty(T, H, dtype=dt)
        g = torch.empty(T, n, dtype=dt)
        act = torch.empty(T, n * F, dtype=dt)
        y = torch.empty(T, 2 * n * F, dtype=dt)
        y_ext = torch.empty(T, 2 * n * F + S * 2 * R, dtype=dt)
        out = torch.empty(T, H, dtype=dt)
        bridge_dn = torch.empty(T, S * R, dtype=dt)
        routing = rt.build_routing(torch.zeros(T, dtype=torch.int32), S)
        row = {
            "gate_up epilogue (base, y given)": lambda: gu.gate_up_swiglu(x, w13, g, n, interleaved=True, y=y),
            "gate_up GEMM (base)": lambda: gu.gate_up_swiglu(x, w13, g, n, interleaved=True),
            "down GEMM (base)": lambda: dp.down_proj(act, w2),
            "gate_up epilogue (LoRA, bridge columns)": lambda: gu.gate_up_swiglu(
                x, w13, g, n, interleaved=True, routing=routing, bridge=y_ext[:, 2 * n * F:], b_gu=b_gu,
                bridge_slot_stride=2 * R, y=y_ext[:, :2 * n * F]),
            "down accumulate (LoRA)": lambda: dp.down_proj(act, w2, routing=routing, bridge=bridge_dn, b=b_dn, out=out,
                                                           accumulate=True, bridge_slot_stride=R),
            "down shrink, windowed (LoRA)": lambda: ls.lora_shrink(act, a_dn, routing, R, window=F, split_k=3),
            "shrink choices of a forward (per expert)": lambda: sink._ShrinkPlan.of(ops, x),
            "routing": lambda: rt.build_routing(torch.zeros(T, dtype=torch.int32), S),
        }
        rows[str(T)] = {name: per_call_us(fn, args.calls) for name, fn in row.items()}
        for name, us in rows[str(T)].items():
            print(f"T={T:<3} {name:<42} {us:7.2f} us", flush=True)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        commit = ""
    result = {"commit": commit, "python": platform.python_version(), "torch": torch.__version__,
              "triton": _triton.triton.__version__, "machine": platform.machine(), "calls": args.calls,
              "load_average": os.getloadavg(), "rows_us": rows}
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
