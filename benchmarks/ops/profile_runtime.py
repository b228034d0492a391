"""Per-kernel GPU time of one eager shared-sink forward (torch.profiler), by part: routing,
shrinks, base gate/up GEMM (+ expand + SwiGLU), down GEMM (+ expand), other. The breakdown in
docs/performance.md comes from this script.

    INKLING_AUTOTUNE=1 python benchmarks/ops/profile_runtime.py [--package inkling_compat.kernels]

``--package`` names the kernels package to profile (default the installed one); pointing it at a
copy of an older kernels/ directory (``--path DIR --package NAME``) profiles the "before" side.
S = 8 slots, r = R = 16, tokens uniform over the slots, shared-outer interleaved layout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PARTS = (("_routing_kernel", "routing"), ("_lora_shrink_kernel", "shrink"), ("_gate_up_swiglu_kernel", "gate_up"),
         ("_down_proj_kernel", "down"))


def part_of(name: str) -> str:
    for key, part in PARTS:
        if key in name:
            return part
    return "torch_ops"  # the routing's torch glue (the torch reference routing; nothing else launches torch kernels)


def profile(sink, ops, p, slot_ids, forwards: int = 20) -> dict:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    for _ in range(3):
        sink.sink_forward_triton(ops, p.x, p.gammas, slot_ids)
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(forwards):
            sink.sink_forward_triton(ops, p.x, p.gammas, slot_ids)
        torch.cuda.synchronize()
    per_part: dict = defaultdict(float)
    kernels: dict = defaultdict(float)
    launches = 0
    for ev in prof.events():
        dt = getattr(ev, "device_time", None)
        if dt is None:
            dt = getattr(ev, "cuda_time", 0.0)
        if getattr(ev, "device_type", None) is not None and "CUDA" not in str(ev.device_type):
            continue
        if not dt:
            continue
        launches += 1
        per_part[part_of(ev.name)] += dt / forwards
        kernels[ev.name[:60]] += dt / forwards
    return {"gpu_us": sum(per_part.values()), "kernels_per_forward": launches / forwards,
            "parts_us": dict(per_part), "top_kernels_us": dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:8])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="inkling_compat.kernels")
    parser.add_argument("--path", default="", help="directory to put on sys.path first (for --package)")
    parser.add_argument("--tokens", default="1,64,4096")
    parser.add_argument("--output", default="")
    args = parser.parse_args(argv)
    if args.path:
        sys.path.insert(0, args.path)
    import torch

    from common import make_problem

    sink = importlib.import_module(args.package + ".sink")
    rows = []
    for H, n, F in ((1536, 4, 768), (7168, 2, 2048)):
        for T in (int(t) for t in args.tokens.split(",")):
            p = make_problem(H, n, F, T, seed=T)
            w13_lin = p.w13.reshape(n * 2 * F, H)
            w2_lin = p.w2.permute(0, 2, 1).reshape(n * F, H).contiguous()
            ops = sink.SinkOperands(w13_lin, w2_lin, n, True, *p.pool).refresh()
            # Both LoRA paths where the package has them (its dispatch forced for the measurement).
            variants = ("fused", "split") if hasattr(sink, "use_fused") else ("",)
            for variant in variants:
                if variant:
                    saved, sink.use_fused = sink.use_fused, (lambda _ops, _t, fused=variant == "fused": fused)
                try:
                    row = {"package": args.package, "path": variant, "H": H, "n": n, "F": F, "T": T, **profile(sink, ops, p, p.slot_ids)}
                finally:
                    if variant:
                        sink.use_fused = saved
                rows.append(row)
                parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(row["parts_us"].items()))
                print(f"{args.package} {variant} ({H}, {n}, {F}) T={T}: GPU {row['gpu_us']:.1f} us in {row['kernels_per_forward']:.0f} kernels | {parts}", flush=True)
            del p, ops
            torch.cuda.empty_cache()
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
