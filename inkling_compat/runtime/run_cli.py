"""`inkling-compat run`: one shared-sink forward through the Triton kernels on random inputs,
compared with the float64 torch reference.

Exit codes as for `check`: 0 ran and matched the reference within tolerance, 1 the checker
rejects the setup (the report is printed; nothing runs), 2 unusable input or torch/triton
missing (one line), 3 the result is outside tolerance (a defect of the runtime).
With ``--device cpu`` (the default without CUDA) the kernels run in Triton's interpreter:
``TRITON_INTERPRET=1`` is set here, before triton is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

TOLERANCE = 1e-2


def add_run_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="run one shared-sink forward (Triton kernels) on random inputs vs the torch reference")
    run.add_argument("--config", required=True, help="server config (YAML/JSON, sglang argument names)")
    run.add_argument("--model", help="the model's config.json")
    run.add_argument("--platform", help="platform file or preset (as for check)")
    run.add_argument("--adapter", action="append", default=[], help="one pool manifest, or PEFT adapter directories/manifests (slot i = i-th); repeatable")
    run.add_argument("--tokens", type=int, default=16, help="tokens in the batch (default 16)")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="cpu runs the Triton interpreter (default: cuda if available)")
    run.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--tp-rank", type=int, default=0, help="which TP rank's shard to run (default 0)")
    run.add_argument("--layer", type=int, help="layer whose factors are loaded from PEFT adapters (default: the first with shared-sink factors)")
    run.add_argument("--repeat", type=int, default=None, help="timed repetitions after a warm-up (default: 10 on cuda, 0 on cpu)")
    run.add_argument("--format", choices=("text", "json"), default="text")


def _fail(args: argparse.Namespace, message: str, field: str = "(arguments)") -> int:
    """One line on stderr, exit 2; with --format json also one JSON document on stdout (the
    same as `check --format json` prints for an input error)."""
    print(f"inkling-compat: error: {message}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps({"ok": False, "exit_code": 2, "input_error": {"file": "(command line)", "field": field, "reason": message}}, indent=2))
    return 2


def run_command(args: argparse.Namespace) -> int:
    if args.tokens < 0:
        return _fail(args, f"--tokens: {args.tokens} is negative", "--tokens")
    device = args.device
    if device == "cpu" and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported anywhere
    try:
        import torch
    except ImportError as exc:
        return _fail(args, f"`run` needs torch and triton (pip install 'inkling-compat[runtime]'): {exc}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cpu" and "triton" not in sys.modules:
            os.environ["TRITON_INTERPRET"] = "1"
    if device == "cuda" and not torch.cuda.is_available():
        return _fail(args, "--device cuda: CUDA is not available on this machine (use --device cpu)", "--device")

    from inkling_compat.kernels.errors import RuntimeUnavailable
    from inkling_compat.report.text import render_text
    from inkling_compat.runtime.load import RuntimeRefused, load

    try:
        sink = load(
            args.config, args.model, args.adapter or None, platform=args.platform, device=device,
            dtype=args.dtype, seed=args.seed, tp_rank=args.tp_rank, layer=args.layer,
        )
    except RuntimeRefused as exc:
        if args.format == "json":
            print(json.dumps({"refused": True, "message": str(exc), "report": exc.report.to_dict()}, indent=2))
        else:
            print(render_text(exc.report, color=sys.stdout.isatty()))
            print(f"\nrefused: the runtime does not run a setup sglang would reject ({exc.error_class}: {exc})")
        return 1
    except RuntimeUnavailable as exc:
        return _fail(args, str(exc))

    from inkling_compat.kernels._triton import INTERPRET
    from inkling_compat.kernels.reference import relative_error

    x, gammas, slots = sink.random_inputs(args.tokens, seed=args.seed)
    sync = torch.cuda.synchronize if sink.device.type == "cuda" else (lambda: None)
    t0 = time.perf_counter()
    out = sink.forward(x, gammas, slots)
    sync()
    first_s = time.perf_counter() - t0
    repeat = args.repeat if args.repeat is not None else (10 if sink.device.type == "cuda" else 0)
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        sink.forward(x, gammas, slots, validate=False)
        sync()
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    ref = sink.reference(x, gammas, slots)
    ref_s = time.perf_counter() - t0
    base = sink.reference(x, gammas, None) if sink.lora_attached else ref
    norm_err = relative_error(out, ref)
    diff = (out.double() - ref).abs().max().item() if out.numel() else 0.0
    scale = ref.abs().max().item() if ref.numel() else 0.0
    max_err = diff / scale if scale > 0 else diff
    if not torch.isfinite(out).all():
        max_err = norm_err = float("inf")
    lora_share = relative_error(base, ref) if sink.lora_attached else 0.0
    ok = max_err <= TOLERANCE and norm_err <= TOLERANCE
    counts: dict[int, int] = {}
    for s in slots.tolist():
        counts[s] = counts.get(s, 0) + 1
    mode = "Triton interpreter" if INTERPRET else "compiled Triton"
    warm = sorted(times)[len(times) // 2] if times else None
    result = {
        "sink": sink.describe(),
        "notes": sink.notes,
        "tokens": args.tokens,
        "slots": {str(k): v for k, v in sorted(counts.items())},
        "device": str(sink.device),
        "mode": mode,
        "dtype": str(sink.dtype).replace("torch.", ""),
        "max_relative_error": max_err,
        "norm_relative_error": norm_err,
        "tolerance": TOLERANCE,
        "lora_share": lora_share,
        "first_call_s": first_s,
        "warm_median_s": warm,
        "repeats": repeat,
        "reference_s": ref_s,
        "ok": ok,
    }
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        print(f"ran {sink.describe()}")
        for note in sink.notes:
            print(f"  {note}")
        slots_text = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        print(f"  inputs: T={args.tokens} tokens (seed {args.seed}), tokens per slot {{{slots_text}}}, {result['dtype']} on {sink.device} ({mode})")
        print(
            f"max relative error vs float64 torch reference: {max_err:.2e} (max|out-ref| / max|ref|); "
            f"||out-ref||/||ref|| = {norm_err:.2e}; tolerance {TOLERANCE:g}: {'ok' if ok else 'FAILED'}"
        )
        if sink.lora_attached:
            print(f"  LoRA share of the output: ||ref - base||/||ref|| = {lora_share:.2f}")
        timing = f"time: Triton forward {first_s * 1e3:.1f} ms (first call{', includes compilation' if not INTERPRET else ', interpreted'})"
        if warm is not None:
            timing += f", warm median {warm * 1e3:.3f} ms over {repeat}"
        print(timing + f"; float64 reference {ref_s * 1e3:.1f} ms")
    if not ok:
        print(f"inkling-compat: internal error: the Triton result is outside tolerance ({max_err:.2e} > {TOLERANCE:g})", file=sys.stderr)
        return 3
    return 0
