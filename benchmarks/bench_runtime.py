"""Benchmark the shared-sink forward on a CUDA GPU: torch base, the torch per-slot LoRA loop,
our Triton base, our Triton LoRA path (mixed slots, and every token unassigned), eager and
replayed from CUDA graphs.

    INKLING_AUTOTUNE=1 python benchmarks/bench_runtime.py --commit $(git rev-parse --short HEAD)
    python benchmarks/bench_runtime.py --quick                        # one shape, two T

Shapes (H, n, F): (1536, 4, 768) and (7168, 2, 2048); T in {1, 64, 1024, 4096}; S = 8 slots of
rank r = 16 (pool R = 16); layouts shared-interleaved (legacy) and perexpert-contiguous; every
token on a random slot (uniform over the 8 slots). Timing: CUDA-graph replay medians over inputs
and weights rotated across enough copies ("layers") to exceed 3x the 60 MB L2, and eager
``do_bench`` medians. ``graph_us.torch_lora`` is the plain torch loop (tokens sorted by slot,
``torch.mm`` shrink/expand per slot, segment bounds computed on the host before the capture);
``graph_us.triton_lora_all_unassigned`` the Triton LoRA path with every slot id -1;
``eager_us.triton_lora_captured`` a call of ``capture_forward`` (input copies + one replay);
``graph_us.triton_lora_{fused,split}`` (and ``..._all_unassigned_{fused,split}``) each routed LoRA
path forced (routing launch included), whichever ``sink_forward_triton`` takes at that T (its
choice: ``fused_default``; at T = 1 its fused path has no routing launch).
Each configuration is checked against the float64 reference. Writes JSON row by row; never
imports tests/ (problems come from benchmarks/ops/common.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "ops"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one shape, T in {1, 1024}")
    parser.add_argument("--layouts", default="shared-interleaved,perexpert-contiguous",
                        help="comma list of shared-interleaved, perexpert-contiguous")
    parser.add_argument("--tokens", default="1,64,1024,4096")
    parser.add_argument("--commit", default="", help="the commit measured (recorded in the JSON)")
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "bench_runtime.json"))
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("bench_runtime: needs a CUDA GPU (the CPU interpreter is for correctness only)", file=sys.stderr)
        return 2
    import triton
    import triton.testing

    from inkling_compat.kernels._triton import AUTOTUNE

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
    meta = dict(commit=args.commit, autotune=AUTOTUNE, peak_tflops=peak_tflops, copy_tbs=copy_tbs)
    rows = []
    for layout in args.layouts.split(","):
        shared, interleaved = {"shared-interleaved": (True, True), "perexpert-contiguous": (False, False)}[layout]
        for H, n, F in shapes:
            for T in tokens:
                rows.append(bench_one(torch, H, n, F, T, shared, interleaved, layout, peak_tflops, copy_tbs))
                print(_row_text(rows[-1]), flush=True)
                _write(args.output, _result(torch, triton, props, meta, rows))

    out = _write(args.output, _result(torch, triton, props, meta, rows))
    print()
    print(f"{props.name}, torch {torch.__version__}, triton {triton.__version__}, autotune={AUTOTUNE}, commit {args.commit or '?'}; "
          f"measured ceilings: bf16 GEMM {peak_tflops:.0f} TFLOP/s, copy {copy_tbs:.2f} TB/s")
    print(table(rows))
    print(f"\nwrote {out}")
    return 0


def _result(torch, triton, props, meta, rows) -> dict:
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": meta["commit"],
        "machine": f"{props.name}, {props.multi_processor_count} SMs, {platform.machine()}",
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "autotune": meta["autotune"],
        "ceilings": {"bf16_gemm_8192_tflops": meta["peak_tflops"], "d2d_copy_tbs": meta["copy_tbs"]},
        "settings": {"S": 8, "r": 16, "R": 16, "slot_mix": "uniform over 8 slots",
                     "timer": "CUDA graph replay median over rotated layers; eager do_bench median (L2 cleared)",
                     "torch_lora_graph": "tokens sorted by slot, torch.mm shrink/expand per slot, segment bounds on the host before capture"},
        "rows": rows,
    }


def _write(path: str, result: dict) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return out


def bench_one(torch, H, n, F, T, shared, interleaved, layout, peak_tflops, copy_tbs):
    from common import eager_us, graph_us, layers_for, make_problem

    from inkling_compat.kernels.capture import capture_forward
    from inkling_compat.kernels.reference import relative_error
    from inkling_compat.kernels.routing import build_routing
    from inkling_compat.kernels.sink import forward_fused, forward_split, sink_forward_torch, sink_forward_triton, torch_segments, use_fused

    S, R = 8, 16
    weight_bytes = 2 * (3 * n * F * H)
    layers = layers_for(weight_bytes + 2 * T * H * 2)
    problems = [make_problem(H, n, F, T, S=S, R=R, shared_outer=shared, interleaved=interleaved, seed=1000 * T + i)
                for i in range(layers)]
    ops = [p.operands() for p in problems]
    segments = [torch_segments(o, p.slot_ids) for o, p in zip(ops, problems)]
    unassigned = [torch.full_like(p.slot_ids, -1) for p in problems]

    # correctness on the first layer (float64 reference on the GPU)
    p0 = problems[0]
    ref = p0.reference()
    err_triton = relative_error(sink_forward_triton(ops[0], p0.x, p0.gammas, p0.slot_ids), ref)
    err_torch = relative_error(sink_forward_torch(ops[0], p0.x, p0.gammas, segments=segments[0]), ref)
    ref_base = p0.reference(lora=False)
    err_base = relative_error(sink_forward_triton(ops[0], p0.x, p0.gammas, None), ref_base)
    err_unassigned = relative_error(sink_forward_triton(ops[0], p0.x, p0.gammas, unassigned[0]), ref_base)

    def forced(path, o, p, ids):  # one of the two routed LoRA paths, whatever sink_forward_triton would choose
        return path(o, p.x, p.gammas, build_routing(ids, o.slots, o.slot_active))

    err_fused = relative_error(forced(forward_fused, ops[0], p0, p0.slot_ids), ref)
    err_split = relative_error(forced(forward_split, ops[0], p0, p0.slot_ids), ref)
    captured = capture_forward(ops[0], T)
    err_captured = relative_error(captured(p0.x, p0.gammas, p0.slot_ids).clone(), ref)
    del ref, ref_base

    def calls(fn):
        return [lambda i=i: fn(i) for i in range(layers)]

    paths = {
        "torch_base": calls(lambda i: sink_forward_torch(ops[i], problems[i].x, problems[i].gammas, None)),
        "torch_lora": calls(lambda i: sink_forward_torch(ops[i], problems[i].x, problems[i].gammas, segments=segments[i])),
        "triton_base": calls(lambda i: sink_forward_triton(ops[i], problems[i].x, problems[i].gammas, None)),
        "triton_lora": calls(lambda i: sink_forward_triton(ops[i], problems[i].x, problems[i].gammas, problems[i].slot_ids)),
        "triton_lora_all_unassigned": calls(lambda i: sink_forward_triton(ops[i], problems[i].x, problems[i].gammas, unassigned[i])),
        # both routed LoRA paths forced, whichever the default takes here (sink.use_fused; T = 1: no routing)
        "triton_lora_fused": calls(lambda i: forced(forward_fused, ops[i], problems[i], problems[i].slot_ids)),
        "triton_lora_split": calls(lambda i: forced(forward_split, ops[i], problems[i], problems[i].slot_ids)),
        "triton_lora_all_unassigned_fused": calls(lambda i: forced(forward_fused, ops[i], problems[i], unassigned[i])),
        "triton_lora_all_unassigned_split": calls(lambda i: forced(forward_split, ops[i], problems[i], unassigned[i])),
    }
    eager = {name: eager_us(c) for name, c in paths.items() if name in ("torch_base", "torch_lora", "triton_base", "triton_lora")}
    eager["torch_lora_host_sync"] = eager_us(calls(lambda i: sink_forward_torch(ops[i], problems[i].x, problems[i].gammas, problems[i].slot_ids)))
    eager["triton_lora_captured"] = eager_us([lambda: captured(p0.x, p0.gammas, p0.slot_ids)])
    del captured
    graph = {name: graph_us(c) for name, c in paths.items()}

    flops_base = 6 * T * H * n * F
    r = R
    if shared:
        flops_lora = 2 * T * H * 2 * r + 4 * T * r * n * F + 2 * T * n * F * r + 2 * T * r * H
    else:
        flops_lora = 2 * T * H * 2 * n * r + 4 * T * r * n * F + 2 * T * n * F * r + 2 * T * n * r * H
    t_tb, t_tl, t_xb, t_xl = graph["torch_base"], graph["torch_lora"], graph["triton_base"], graph["triton_lora"]
    row = {
        "layout": layout, "H": H, "n": n, "F": F, "T": T, "S": S, "r": r, "layers_rotated": layers,
        "eager_us": eager, "graph_us": graph,
        "err_triton_lora": err_triton, "err_torch_lora": err_torch, "err_triton_base": err_base,
        "err_triton_lora_all_unassigned": err_unassigned, "err_triton_lora_captured": err_captured,
        "err_triton_lora_fused": err_fused, "err_triton_lora_split": err_split, "fused_default": use_fused(ops[0], T),
        "flops_base": flops_base, "flops_lora_extra": flops_lora, "weight_bytes": weight_bytes,
        "tflops_triton_lora": (flops_base + flops_lora) / (t_xl * 1e-6) / 1e12,
        "tflops_triton_base": flops_base / (t_xb * 1e-6) / 1e12,
        "tflops_torch_base": flops_base / (t_tb * 1e-6) / 1e12,
        "weight_tbs_triton_base": weight_bytes / (t_xb * 1e-6) / 1e12,
        "weight_tbs_torch_base": weight_bytes / (t_tb * 1e-6) / 1e12,
        "ratio_triton_lora_vs_torch_base": t_xl / t_tb,
        "ratio_triton_lora_vs_triton_base": t_xl / t_xb,
        "ratio_triton_base_vs_torch_base": t_xb / t_tb,
        "ratio_triton_lora_vs_torch_lora_graph": t_xl / t_tl,
        "ratio_triton_lora_all_unassigned_vs_triton_base": graph["triton_lora_all_unassigned"] / t_xb,
        "ratio_triton_lora_fused_vs_triton_base": graph["triton_lora_fused"] / t_xb,
        "ratio_triton_lora_split_vs_triton_base": graph["triton_lora_split"] / t_xb,
        "ratio_triton_lora_all_unassigned_fused_vs_triton_base": graph["triton_lora_all_unassigned_fused"] / t_xb,
        "ratio_triton_lora_all_unassigned_split_vs_triton_base": graph["triton_lora_all_unassigned_split"] / t_xb,
        "ratio_torch_lora_vs_torch_base_eager": eager["torch_lora_host_sync"] / eager["torch_base"],
        "fraction_of_bf16_ceiling_triton_lora": (flops_base + flops_lora) / (t_xl * 1e-6) / 1e12 / peak_tflops,
        "fraction_of_copy_bw_triton_base_weights": weight_bytes / (t_xb * 1e-6) / 1e12 / copy_tbs,
    }
    del problems, ops, segments
    torch.cuda.empty_cache()
    return row


def _fmt(v):
    return "n/a" if v is None else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")


def _row_text(r) -> str:
    e, g = r["eager_us"], r["graph_us"]
    return (f"{r['layout']:<21} H={r['H']:<5} n={r['n']} F={r['F']:<5} T={r['T']:<5} | graph us: torch base {_fmt(g['torch_base'])}, "
            f"torch lora {_fmt(g['torch_lora'])}, triton base {_fmt(g['triton_base'])}, triton lora {_fmt(g['triton_lora'])}, "
            f"unassigned {_fmt(g['triton_lora_all_unassigned'])} | eager us: triton lora {_fmt(e['triton_lora'])}, "
            f"captured {_fmt(e['triton_lora_captured'])} | err {r['err_triton_lora']:.1e}")


def table(rows) -> str:
    """Markdown. Times in us: CUDA-graph replay medians; eager do_bench medians where named."""
    head = ("| layout | (H, n, F) | T | Triton base | Triton LoRA | LoRA / base | all unassigned / base | fused / base | split / base | "
            "unassigned fused / split / base | torch loop (graph) | "
            "Triton LoRA / torch loop | torch base | base weight TB/s | eager LoRA | captured call | rel. err |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        e, g = r["eager_us"], r["graph_us"]
        lines.append(
            f"| {r['layout']} | ({r['H']}, {r['n']}, {r['F']}) | {r['T']} | {_fmt(g['triton_base'])} | {_fmt(g['triton_lora'])} | "
            f"{r['ratio_triton_lora_vs_triton_base']:.2f} | {r['ratio_triton_lora_all_unassigned_vs_triton_base']:.2f} | "
            f"{r['ratio_triton_lora_fused_vs_triton_base']:.2f} | {r['ratio_triton_lora_split_vs_triton_base']:.2f} | "
            f"{r['ratio_triton_lora_all_unassigned_fused_vs_triton_base']:.2f} / {r['ratio_triton_lora_all_unassigned_split_vs_triton_base']:.2f} | "
            f"{_fmt(g['torch_lora'])} | {r['ratio_triton_lora_vs_torch_lora_graph']:.2f} | {_fmt(g['torch_base'])} | "
            f"{r['weight_tbs_triton_base']:.2f} | {_fmt(e['triton_lora'])} | {_fmt(e['triton_lora_captured'])} | {r['err_triton_lora']:.1e} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
