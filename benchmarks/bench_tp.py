"""Benchmark the tensor-parallel shared sink: per-rank forward, all-reduce and end-to-end time
against TP 1, for the two serving shapes.

    python benchmarks/bench_tp.py --commit $(git rev-parse --short HEAD)    # GPU: what the GPUs allow
    python benchmarks/bench_tp.py --device cpu --quick                     # CPU: tiny shapes, interpreter

Shapes (H, n, I) = (1536, 4, 768) and (7168, 2, 2048) (bench_runtime.py's (H, n, F) at TP 1:
TP t gives each rank F = I / t); a legacy sink with shared-outer LoRA, S = 8 slots of rank 16,
every token on a random slot (a quarter with no adapter). Each (shape, T, TP) is one world started
by `inkling_compat.runtime.tp.launch` (TP 1 too, so every row is timed by the same code): one
process per rank; on one GPU the TP 2 ranks share it and talk over gloo with CUDA tensors (NCCL
cannot put two ranks on one device), so their forwards also compete for the GPU; with a GPU per
rank, NCCL. Times are wall-clock medians of ``--repeat`` calls with a device synchronize around
each (no CUDA graphs): ``forward`` a rank's Triton forward alone, ``all-reduce`` the all-reduce
of its partial output after a barrier, ``end-to-end`` forward + all-reduce without the barrier
(includes waiting for the slowest rank); the row shows the slowest rank. Every world's
all-reduced output is compared with the unsharded float64 reference (error column). Writes
JSON row by row (benchmarks/results/bench_tp.json); never imports tests/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVING = [(1536, 4, 768), (7168, 2, 2048)]
QUICK_CPU = [(64, 2, 64), (128, 2, 128)]
SLOTS, RANK = 8, 16


def setup(H: int, n: int, I: int, tp: int) -> tuple[dict, dict, dict]:
    """(server config, model config, pool manifest of one rank's buffer shapes) for the check."""
    config = {
        "enable_lora": True, "lora_backend": "triton", "max_loras_per_batch": SLOTS, "max_lora_rank": RANK,
        "lora_target_modules": ["gate_up_proj", "down_proj"], "experts_shared_outer_loras": True, "dtype": "bfloat16",
    }
    model = {
        "architectures": ["InklingForConditionalGeneration"], "model_type": "inkling", "hidden_size": H,
        "intermediate_size": I, "n_shared_experts": n, "shared_expert_sink": True, "inference_moe_w13_interleaved": True,
        "n_routed_experts": 8, "num_experts_per_tok": 2, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    }
    F = I // tp
    pool = {"name": "bench", "pool": {
        "gate_up_lora_a": {"shape": [SLOTS, 1, 2 * RANK, H]}, "gate_up_lora_b": {"shape": [SLOTS, n, 2 * F, RANK]},
        "down_lora_a": {"shape": [SLOTS, n, RANK, F]}, "down_lora_b": {"shape": [SLOTS, 1, H, RANK]},
    }}
    return config, model, pool


def world(H: int, n: int, I: int, T: int, tp: int, device: str, repeat: int, timeout_s: float) -> dict:
    from inkling_compat.runtime.tp import TPSpec, TPWorldFailed, launch

    config, model, pool = setup(H, n, I, tp)
    spec = TPSpec(tp=tp, config=config, model=model, adapters=(pool,), device=device, tokens=T, repeat=repeat,
                  seed=T + H, timeout_s=timeout_s)
    row = {"H": H, "n": n, "I": I, "T": T, "tp": tp}
    started = time.perf_counter()
    try:
        result = launch(spec)
    except TPWorldFailed as exc:
        return {**row, "failed": str(exc), "wall_s": time.perf_counter() - started}
    slowest = lambda key: max(getattr(r, key) for r in result.ranks)  # noqa: E731
    e2e = [r.end_to_end_s for r in result.ranks if r.end_to_end_s is not None]
    return {
        **row, "backend": result.backend, "shared_device": result.shared_devices, "mode": result.mode,
        "devices": [r.device for r in result.ranks], "repeats": result.repeats,
        "forward_ms": slowest("forward_s") * 1e3, "forward_ms_per_rank": [r.forward_s * 1e3 for r in result.ranks],
        "first_call_ms": slowest("forward_first_s") * 1e3,
        "allreduce_ms": slowest("allreduce_s") * 1e3, "allreduce_ms_per_rank": [r.allreduce_s * 1e3 for r in result.ranks],
        "end_to_end_ms": max(e2e) * 1e3 if e2e else None,
        "max_relative_error": result.max_relative_error, "ok": result.ok, "lora_share": result.lora_share,
        "wall_s": time.perf_counter() - started,
    }


def _fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def table(rows: list[dict]) -> str:
    base = {(r["H"], r["n"], r["I"], r["T"]): r.get("end_to_end_ms") for r in rows if r["tp"] == 1 and "failed" not in r}
    lines = [f"{'H':>5} {'n':>2} {'I':>5} {'T':>5} {'TP':>3} {'backend':>13} {'forward ms':>11} {'all-reduce ms':>14} "
             f"{'end-to-end ms':>14} {'vs TP 1':>8} {'max rel err':>11}"]
    for r in rows:
        head = f"{r['H']:>5} {r['n']:>2} {r['I']:>5} {r['T']:>5} {r['tp']:>3}"
        if "failed" in r:
            lines.append(f"{head} FAILED: {r['failed']}")
            continue
        backend = r["backend"] + (" (1 GPU)" if r["shared_device"] else "")
        b, e = base.get((r["H"], r["n"], r["I"], r["T"])), r["end_to_end_ms"]
        ratio = f"{b / e:.2f}x" if (b and e) else "-"
        lines.append(f"{head} {backend:>13} {_fmt(r['forward_ms']):>11} {_fmt(r['allreduce_ms']):>14} {_fmt(e):>14} "
                     f"{ratio:>8} {r['max_relative_error']:>11.2e}" + ("" if r["ok"] else "  OUTSIDE TOLERANCE"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--quick", action="store_true", help="CPU: two tiny shapes, T = 8; GPU: the first shape, T = 64")
    parser.add_argument("--tp", default=None, help="comma list of TP sizes (default: 1, 2 and, with a GPU per rank, 4 and 8)")
    parser.add_argument("--tokens", default="64,1024")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per world (default 20 on cuda, 2 on cpu)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one world may take")
    parser.add_argument("--commit", default="", help="the commit measured (recorded in the JSON)")
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "bench_tp.json"))
    args = parser.parse_args(argv)

    import torch

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("bench_tp: --device cuda, but CUDA is not available", file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count() if device == "cuda" else 0
    if args.tp:
        tps = [int(t) for t in args.tp.split(",")]
    else:
        tps = [1, 2] + [t for t in (4, 8) if gpus >= t]
    if device == "cpu":
        shapes, tokens = (QUICK_CPU, [8]) if args.quick else (SERVING, [int(t) for t in args.tokens.split(",")])
        repeat = 2 if args.repeat is None else args.repeat
    else:
        shapes, tokens = (SERVING[:1], [64]) if args.quick else (SERVING, [int(t) for t in args.tokens.split(",")])
        repeat = 20 if args.repeat is None else args.repeat
    if device == "cuda":
        name = torch.cuda.get_device_name()
        machine = f"{gpus} x {name}"
        how = {t: ("NCCL, a GPU per rank" if gpus >= t else f"gloo with CUDA tensors, {t} ranks sharing {gpus} GPU(s)") for t in tps if t > 1}
    else:
        machine = f"CPU ({platform.machine()}), Triton interpreter"
        how = {t: "gloo on the CPU" for t in tps if t > 1}
    print(f"bench_tp on {machine}; " + "; ".join(f"TP {t}: {h}" for t, h in how.items()))
    if device == "cuda" and any(gpus < t for t in tps):
        print("  (ranks that share a GPU compete for it: their forward times are not those of a GPU per rank)")
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": args.commit, "machine": machine,
        "device": device, "gpus": gpus, "torch": torch.__version__, "python": platform.python_version(),
        "settings": {"S": SLOTS, "R": RANK, "r": RANK, "sink": "legacy, shared outer, w13 interleaved", "repeat": repeat,
                     "timer": "wall-clock median per call with device synchronize; slowest rank", "tp_backends": how},
        "rows": [],
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(table([]))  # the header
    for H, n, I in shapes:
        for T in tokens:
            for tp in tps:
                row = world(H, n, I, T, tp, device, repeat, args.timeout)
                result["rows"].append(row)
                print(table([r for r in result["rows"] if (r["H"], r["T"]) == (H, T)]).splitlines()[-1], flush=True)
                out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(table(result["rows"]))
    print(f"wrote {out}")
    failed = [r for r in result["rows"] if "failed" in r or not r.get("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
