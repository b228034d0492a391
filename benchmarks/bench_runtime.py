"""Benchmark the shared-sink forward: torch base, torch LoRA (Punica-style loop over slots),
our Triton base and our Triton LoRA path, on a CUDA GPU.

    INKLING_AUTOTUNE=1 python benchmarks/bench_runtime.py            # full sweep
    python benchmarks/bench_runtime.py --quick                        # one shape, two T

Shapes (H, n, F): (1536, 4, 768) and (7168, 2, 2048); T in {1, 64, 1024, 4096}; S = 8 slots of
rank r = 16 (pool R = 16), shared-outer legacy layout (interleaved w13) by default, every token
on a random slot (uniform mix over the 8 slots). Timing: ``triton.testing.do_bench`` medians
(it clears L2 between runs) over inputs and weights rotated across enough copies ("layers") to
exceed 3x the 60 MB L2, plus CUDA-graph replay medians for the paths without a host sync (the
torch LoRA loop syncs to size its segments, so it has no graph figure). Each configuration is also
checked against the float64 reference. Prints a table and writes JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

L2_BYTES = 60 * 1024 * 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one shape, T in {1, 1024}")
    parser.add_argument("--layouts", default="shared-interleaved", help="comma list of shared-interleaved, perexpert-contiguous")
    parser.add_argument("--tokens", default="1,64,1024,4096")
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "bench_runtime.json"))
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("bench_runtime: needs a CUDA GPU (the CPU interpreter is for correctness only)", file=sys.stderr)
        return 2
    import triton
    import triton.testing

    from inkling_compat.kernels._triton import AUTOTUNE
    from inkling_compat.kernels.reference import relative_error
    from inkling_compat.kernels.routing import build_routing
    from inkling_compat.kernels.sink import sink_forward_torch, sink_forward_triton
    from sink_cases import Case, make_problem

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)

    # Ceilings measured in this run: bf16 GEMM 8192^3 and a 1 GiB device-to-device copy.
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t_mm = triton.testing.do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
    peak_tflops = 2 * 8192**3 / (t_mm * 1e-3) / 1e12
    src = torch.randn(256 * 1024 * 1024, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    t_cp = triton.testing.do_bench(lambda: dst.copy_(src), warmup=20, rep=200, return_mode="median")
    copy_tbs = 2 * src.numel() * 4 / (t_cp * 1e-3) / 1e12
    del a, b, src, dst

    shapes = [(1536, 4, 768), (7168, 2, 2048)]
    tokens = [int(t) for t in args.tokens.split(",")]
    if args.quick:
        shapes, tokens = shapes[:1], [1, 1024]
    layouts = args.layouts.split(",")
    rows = []
    for layout in layouts:
        shared, interleaved = {"shared-interleaved": (True, True), "perexpert-contiguous": (False, False)}[layout]
        for H, n, F in shapes:
            for T in tokens:
                rows.append(bench_one(torch, triton, Case, make_problem, relative_error, build_routing,
                                      sink_forward_torch, sink_forward_triton, H, n, F, T, shared, interleaved, layout,
                                      peak_tflops, copy_tbs))
                print(_row_text(rows[-1]), flush=True)
                _write(args.output, _result(torch, triton, props, AUTOTUNE, peak_tflops, copy_tbs, rows))

    out = _write(args.output, _result(torch, triton, props, AUTOTUNE, peak_tflops, copy_tbs, rows))
    print()
    print(f"{props.name}, torch {torch.__version__}, triton {triton.__version__}, autotune={AUTOTUNE}; "
          f"measured ceilings: bf16 GEMM {peak_tflops:.0f} TFLOP/s, copy {copy_tbs:.2f} TB/s")
    print(table(rows))
    print(f"\nwrote {out}")
    return 0


def _result(torch, triton, props, autotune, peak_tflops, copy_tbs, rows) -> dict:
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "autotune": autotune,
        "ceilings": {"bf16_gemm_8192_tflops": peak_tflops, "d2d_copy_tbs": copy_tbs},
        "settings": {"S": 8, "r": 16, "R": 16, "slot_mix": "uniform over 8 slots",
                     "timer": "CUDA graph replay median over rotated layers; eager do_bench median (L2 cleared)"},
        "rows": rows,
    }


def _write(path: str, result: dict) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return out


def bench_one(torch, triton, Case, make_problem, relative_error, build_routing, sink_forward_torch, sink_forward_triton,
              H, n, F, T, shared, interleaved, layout, peak_tflops, copy_tbs):
    S, R = 8, 16
    weight_bytes = 2 * (3 * n * F * H)
    per_layer = weight_bytes + 2 * T * H * 2
    layers = max(1, min(16, -(-3 * L2_BYTES // per_layer)))
    base_case = Case(T=T, n=n, H=H, F=F, S=S, R=R, ranks=(R,) * S, shared_outer=shared, interleaved=interleaved,
                     slot_mode="mixed", seed=1000 + T)
    torch.manual_seed(T)
    problems = [make_problem(Case(**{**base_case.__dict__, "seed": base_case.seed + i}), lora_scale=0.5) for i in range(layers)]
    for p in problems:  # every token on one of the 8 slots (no -1 tokens): uniform mix
        p.slot_ids = torch.randint(0, S, (T,), device=p.x.device, generator=None)
    ops = [p.operands() for p in problems]

    # correctness on the first layer (float64 reference on the GPU)
    p0 = problems[0]
    ref = p0.reference()
    err_triton = relative_error(sink_forward_triton(ops[0], p0.x, p0.gammas, p0.slot_ids), ref)
    err_torch = relative_error(sink_forward_torch(ops[0], p0.x, p0.gammas, p0.slot_ids), ref)
    err_base = relative_error(sink_forward_triton(ops[0], p0.x, p0.gammas, None), p0.reference(lora=False))
    del ref

    def rotating(fn):
        state = {"i": 0}

        def call():
            i = state["i"] = (state["i"] + 1) % layers
            return fn(ops[i], problems[i])

        return call

    paths = {
        "torch_base": lambda o, p: sink_forward_torch(o, p.x, p.gammas, None),
        "torch_lora": lambda o, p: sink_forward_torch(o, p.x, p.gammas, p.slot_ids),
        "triton_base": lambda o, p: sink_forward_triton(o, p.x, p.gammas, None),
        "triton_lora": lambda o, p: sink_forward_triton(o, p.x, p.gammas, p.slot_ids),
    }
    eager = {}
    for name, fn in paths.items():
        call = rotating(fn)
        for _ in range(layers):  # warm-up: compile / autotune every configuration first
            call()
        eager[name] = triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median") * 1e3  # us
    graph = {}
    for name in ("torch_base", "triton_base", "triton_lora"):
        graph[name] = _graph_median(torch, paths[name], ops, problems) * 1e3
    graph["torch_lora"] = None

    flops_base = 6 * T * H * n * F
    r = R
    if shared:
        flops_lora = 2 * T * H * 2 * r + 4 * T * r * n * F + 2 * T * n * F * r + 2 * T * r * H
    else:
        flops_lora = 2 * T * H * 2 * n * r + 4 * T * r * n * F + 2 * T * n * F * r + 2 * T * n * r * H
    # Graph replay (no launch gaps) where the path can be captured; the torch LoRA loop syncs
    # to size its segments, so it is compared eager against eager torch base.
    t_tb, t_tl, t_xb, t_xl = graph["torch_base"], eager["torch_lora"], graph["triton_base"], graph["triton_lora"]
    row = {
        "layout": layout, "H": H, "n": n, "F": F, "T": T, "S": S, "r": r, "layers_rotated": layers,
        "eager_us": eager, "graph_us": graph,
        "err_triton_lora": err_triton, "err_torch_lora": err_torch, "err_triton_base": err_base,
        "flops_base": flops_base, "flops_lora_extra": flops_lora, "weight_bytes": weight_bytes,
        "tflops_triton_lora": (flops_base + flops_lora) / (t_xl * 1e-6) / 1e12,
        "tflops_triton_base": flops_base / (t_xb * 1e-6) / 1e12,
        "tflops_torch_base": flops_base / (t_tb * 1e-6) / 1e12,
        "weight_tbs_triton_base": weight_bytes / (t_xb * 1e-6) / 1e12,
        "weight_tbs_torch_base": weight_bytes / (t_tb * 1e-6) / 1e12,
        "ratio_triton_lora_vs_torch_base": t_xl / t_tb,
        "ratio_triton_lora_vs_triton_base": t_xl / t_xb,
        "ratio_triton_base_vs_torch_base": t_xb / t_tb,
        "ratio_torch_lora_vs_torch_base_eager": t_tl / eager["torch_base"],
        "fraction_of_bf16_ceiling_triton_lora": (flops_base + flops_lora) / (t_xl * 1e-6) / 1e12 / peak_tflops,
        "fraction_of_copy_bw_triton_base_weights": weight_bytes / (t_xb * 1e-6) / 1e12 / copy_tbs,
    }
    del problems, ops
    torch.cuda.empty_cache()
    return row


def _graph_median(torch, fn, ops, problems, replays: int = 20) -> float:
    """ms per forward: one CUDA graph holds one forward per rotated layer; median of replays."""
    layers = len(ops)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(layers):
            fn(ops[i], problems[i])
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(layers):
            fn(ops[i], problems[i])
    times = []
    for _ in range(3):
        g.replay()
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / layers)
    del g
    return statistics.median(times)


def _fmt(v):
    return "n/a" if v is None else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")


def _row_text(r) -> str:
    e, g = r["eager_us"], r["graph_us"]
    return (f"{r['layout']:<21} H={r['H']:<5} n={r['n']} F={r['F']:<5} T={r['T']:<5} | eager us: torch base {_fmt(e['torch_base'])}, "
            f"torch lora {_fmt(e['torch_lora'])}, triton base {_fmt(e['triton_base'])}, triton lora {_fmt(e['triton_lora'])} | "
            f"graph us: torch base {_fmt(g['torch_base'])}, triton base {_fmt(g['triton_base'])}, triton lora {_fmt(g['triton_lora'])} | "
            f"err {r['err_triton_lora']:.1e}")


def table(rows) -> str:
    """Markdown. Times in µs: CUDA-graph replay median, eager do_bench median in brackets."""
    head = ("| layout | H | n | F | T | torch base | torch LoRA (eager) | Triton base | Triton LoRA | "
            "Triton LoRA / torch base | Triton LoRA / Triton base | torch LoRA / torch base (eager) | "
            "Triton LoRA TFLOP/s (% of bf16 ceiling) | base weight stream TB/s Triton / torch | rel. err Triton / torch |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        e, g = r["eager_us"], r["graph_us"]
        lines.append(
            f"| {r['layout']} | {r['H']} | {r['n']} | {r['F']} | {r['T']} | {_fmt(g['torch_base'])} ({_fmt(e['torch_base'])}) | "
            f"{_fmt(e['torch_lora'])} | {_fmt(g['triton_base'])} ({_fmt(e['triton_base'])}) | {_fmt(g['triton_lora'])} ({_fmt(e['triton_lora'])}) | "
            f"{r['ratio_triton_lora_vs_torch_base']:.2f} | {r['ratio_triton_lora_vs_triton_base']:.2f} | "
            f"{r['ratio_torch_lora_vs_torch_base_eager']:.2f} | {r['tflops_triton_lora']:.0f} ({100 * r['fraction_of_bf16_ceiling_triton_lora']:.0f}%) | "
            f"{r['weight_tbs_triton_base']:.2f} / {r['weight_tbs_torch_base']:.2f} | {r['err_triton_lora']:.1e} / {r['err_torch_lora']:.1e} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
