"""Shared driver of the per-op benchmarks: a table of (shape, T) rows, each op's Triton time
beside its torch reference's time, CUDA-graph medians over layers rotated past the L2."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = [(1536, 4, 768), (7168, 2, 2048)]
TOKENS = [1, 64, 1024, 4096]


def run(name: str, bench_row, argv=None) -> int:
    """``bench_row(H, n, F, T) -> {"triton_us": .., "torch_us": .., ...}`` for every shape and T."""
    parser = argparse.ArgumentParser(description=f"per-op benchmark: {name}")
    parser.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    parser.add_argument("--output", default="")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(f"{name}: needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = []
    print("| op | H | n | F | T | Triton us | torch reference us | torch / Triton | Triton fused us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for H, n, F in SHAPES:
        for T in (int(t) for t in args.tokens.split(",")):
            row = {"op": name, "H": H, "n": n, "F": F, "T": T, **bench_row(H, n, F, T)}
            rows.append(row)
            print(f"| {name} | {H} | {n} | {F} | {T} | {row['triton_us']:.1f} | {row['torch_us']:.1f} | "
                  f"{row['torch_us'] / row['triton_us']:.2f} | {_opt(row.get('triton_fused_us'))} |", flush=True)
            torch.cuda.empty_cache()
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def _opt(value) -> str:
    return "" if value is None else f"{value:.1f}"
