"""`inkling-compat run`: one shared-sink forward through the Triton kernels on random inputs,
compared with the float64 torch reference.

Exit codes as for `check`: 0 ran and matched the reference within tolerance, 1 the checker
rejects the setup (the report is printed; nothing runs), 2 unusable input or torch/triton
missing (one line), 3 the result is outside tolerance (a defect of the runtime), or, with
``--tp``, a rank failed or the world ran past ``--tp-timeout`` (one line).
With ``--device cpu`` (the default without CUDA) the kernels run in Triton's interpreter:
``TRITON_INTERPRET=1`` is set here, before triton is imported.

``--tp N`` runs the layer tensor-parallel: one process per rank (`runtime/tp`), the partial
outputs all-reduced and compared with the unsharded layer. Under ``torchrun`` (its variables in
the environment) the command is one rank of torchrun's world instead, and rank 0 prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from inkling_compat.kernels.accuracy import TOLERANCE  # the one bound (plain numbers, no torch)

MAX_TP_TIMEOUT_S = 86400  # a day: timedelta and the launcher's deadline stay finite


def add_run_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="run one shared-sink forward (Triton kernels) on random inputs vs the torch reference")
    run.add_argument("--config", required=True, help="server config (YAML/JSON, sglang argument names)")
    run.add_argument("--model", help="the model's config.json")
    run.add_argument("--platform", help="platform file or preset (as for check)")
    run.add_argument("--adapter", action="append", default=[], help="one pool manifest, or PEFT adapter directories/manifests (slot i = i-th); repeatable")
    run.add_argument("--tokens", type=int, default=16, help="tokens in the batch (default 16, at most 65,536)")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="cpu runs the Triton interpreter (default: cuda if available)")
    run.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    run.add_argument("--seed", type=int, default=0, help="torch's seed (0 to 2**63-2)")
    run.add_argument("--tp-rank", type=int, default=None, help="which TP rank's shard to run on its own (default 0)")
    run.add_argument("--tp", type=int, default=None, metavar="N",
                     help="run tensor-parallel: N processes, one per TP rank (tp_size = N), outputs all-reduced and compared with the unsharded layer")
    run.add_argument("--tp-timeout", type=float, default=300.0, metavar="S",
                     help="with --tp: seconds the world may take, and the bound on its rendezvous and each collective (default 300)")
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


def _under_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ and "RANK" in os.environ and "WORLD_SIZE" in os.environ


# Bounds of the numeric options: what torch accepts (a seed is a u64 for torch.Generator, but
# the runtime adds to it) and what one process can hold (a batch of --tokens x hidden floats).
_BOUNDS = {
    "tokens": (0, 65_536),
    "seed": (0, 2**63 - 2),
    "tp_rank": (0, 1023),
    "tp": (1, 1024),
    "layer": (0, 1_000_000),
    "repeat": (0, 1_000_000),
}
_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def _argument_problem(args: argparse.Namespace) -> tuple[str, str] | None:
    """(option, one line) for a numeric option out of its bounds, or None."""
    for name, (low, high) in _BOUNDS.items():
        value = getattr(args, name, None)
        if value is not None and not low <= value <= high:
            option = "--" + name.replace("_", "-")
            shown = str(value) if len(str(value)) <= 40 else f"a number of {len(str(value))} digits"
            if value < 0 == low:
                return option, f"{option}: {shown} is negative"
            return option, f"{option}: {shown} is out of range ({low} to {high:,})"
    timeout = getattr(args, "tp_timeout", None)
    if timeout is not None and not 0 < timeout <= 86_400:  # (NaN fails both comparisons)
        return "--tp-timeout", f"--tp-timeout: {timeout} is out of range (more than 0, at most 86,400 seconds)"
    return None


def _torchrun_problem() -> str | None:
    """One line for torchrun's variables that do not describe a rank of a world, or None."""
    values = {}
    for name in _TORCHRUN_VARIABLES:
        text = os.environ.get(name)
        if text is None:
            continue
        if not (text.isascii() and text.isdigit() and len(text) <= 6):
            return f"torchrun's {name}={text[:40]!r} is not a non-negative integer (of at most 6 digits)"
        values[name] = int(text)
    rank, world = values.get("RANK", 0), values.get("WORLD_SIZE", 1)
    if world < 1 or rank >= world:
        return f"torchrun's RANK={rank} is not a rank of WORLD_SIZE={world} (0 to {world - 1})"
    local_world = values.get("LOCAL_WORLD_SIZE", world)
    local_rank = values.get("LOCAL_RANK", rank)
    if local_world < 1 or local_rank >= local_world:
        return f"torchrun's LOCAL_RANK={local_rank} is not a rank of LOCAL_WORLD_SIZE={local_world} (0 to {local_world - 1})"
    return None


def run_command(args: argparse.Namespace) -> int:
    problem = _argument_problem(args)
    if problem is not None:
        return _fail(args, problem[1], problem[0])
    if _under_torchrun():
        line = _torchrun_problem()
        if line is not None:
            return _fail(args, line, "(environment)")
    if args.tp is not None or _under_torchrun():
        return _run_tp(args)
    # The check runs first (runtime/load.py): a setup sglang would refuse is refused without
    # importing torch; "auto" is decided after it (cuda where available).
    device = None if args.device == "auto" else args.device
    if device == "cpu" and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported anywhere

    from inkling_compat.kernels.errors import RuntimeUnavailable
    from inkling_compat.report.text import render_text
    from inkling_compat.runtime.load import RuntimeInputError, RuntimeRefused, load

    try:
        sink = load(
            args.config, args.model, args.adapter or None, platform=args.platform, device=device,
            dtype=args.dtype, seed=args.seed, tp_rank=args.tp_rank or 0, layer=args.layer,
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
    except RuntimeInputError as exc:
        if exc.field != "device":
            raise
        return _fail(args, f"--device {device}: {exc.reason}", "--device")
    import torch

    from inkling_compat.kernels._triton import INTERPRET
    from inkling_compat.kernels.reference import accuracy, needs_storage_reference, relative_error

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
    # What bf16 storage alone costs on these inputs: the bound is judged against it.
    stored = sink.reference(x, gammas, slots, storage=sink.dtype) if needs_storage_reference(sink.dtype) else None
    acc = accuracy(out, ref, stored, tolerance=TOLERANCE)
    max_err, norm_err, ok = acc.max_relative_error, acc.norm_relative_error, acc.ok
    lora_share = relative_error(base, ref) if sink.lora_attached else 0.0
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
        "storage_max_error": acc.storage_max_error,
        "storage_norm_error": acc.storage_norm_error,
        "max_bound": acc.max_bound,
        "norm_bound": acc.norm_bound,
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
            f"||out-ref||/||ref|| = {norm_err:.2e}; {acc.describe()}: {'ok' if ok else 'FAILED'}"
        )
        if sink.lora_attached:
            print(f"  LoRA share of the output: ||ref - base||/||ref|| = {lora_share:.2f}")
        timing = f"time: Triton forward {first_s * 1e3:.1f} ms (first call{', includes compilation' if not INTERPRET else ', interpreted'})"
        if warm is not None:
            timing += f", warm median {warm * 1e3:.3f} ms over {repeat}"
        print(timing + f"; float64 reference {ref_s * 1e3:.1f} ms")
    if not ok:
        print(f"inkling-compat: internal error: the Triton result is outside tolerance "
              f"({max_err:.2e} / {norm_err:.2e} > {acc.max_bound:.2e} / {acc.norm_bound:.2e})", file=sys.stderr)
        return 3
    return 0


# --- tensor-parallel -------------------------------------------------------------------------


def _tp_device(args: argparse.Namespace) -> str | None:
    """cpu or cuda for the ranks (None: torch is missing). Only "auto" imports torch here; the
    ranks set TRITON_INTERPRET themselves (this process runs no kernel)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    if args.device != "auto":
        return args.device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _tp_spec(args: argparse.Namespace, tp: int, device: str) -> Any:
    from inkling_compat.runtime.tp.spec import TPSpec

    return TPSpec(
        tp=tp, config=args.config, model=args.model, adapters=tuple(args.adapter), platform=args.platform, device=device,
        dtype=args.dtype, seed=args.seed, tokens=args.tokens,
        repeat=args.repeat if args.repeat is not None else (10 if device == "cuda" else 0),
        layer=args.layer, timeout_s=args.tp_timeout,
    )


def _print_refused(args: argparse.Namespace, exc: Any) -> int:
    from inkling_compat.report.text import render_text

    if args.format == "json":
        print(json.dumps({"refused": True, "message": str(exc), "tp": exc.tp, "ranks": list(exc.ranks),
                          "report": exc.report.to_dict()}, indent=2))
    else:
        print(render_text(exc.report, color=sys.stdout.isatty()))
        print(f"\nrefused: the runtime does not run a setup sglang would reject ({exc.error_class}: {exc}); "
              f"it concerns {exc.concerns}; no process was started")
    return 1


def _run_tp(args: argparse.Namespace) -> int:
    if args.tp_rank is not None:
        return _fail(args, "--tp-rank runs one rank's shard on its own; --tp runs every rank (give one of them)", "--tp-rank")
    if not 0 < args.tp_timeout <= MAX_TP_TIMEOUT_S:
        return _fail(args, f"--tp-timeout: {args.tp_timeout:g} is not a number of seconds in (0, {MAX_TP_TIMEOUT_S}]", "--tp-timeout")
    device = _tp_device(args)
    if device is None:
        return _fail(args, "`run` needs torch and triton (pip install 'inkling-compat[runtime]')")
    if _under_torchrun():
        return _run_torchrun_rank(args, device)
    from inkling_compat.runtime.tp.world import TPRefused, TPWorldFailed, launch

    try:
        result = launch(_tp_spec(args, args.tp, device))
    except TPRefused as exc:
        return _print_refused(args, exc)
    except TPWorldFailed as exc:
        if exc.input_error is not None:
            err = exc.input_error
            return _fail(args, f"{err['file']}: {err['field']}: {err['reason']} (reported by TP rank {exc.rank})", err["field"])
        print(f"inkling-compat: error: {exc}", file=sys.stderr)
        if args.format == "json":
            print(json.dumps({"ok": False, "exit_code": 3, "tp_failure": {"message": str(exc), "rank": exc.rank, "killed": exc.killed}}, indent=2))
        return 3
    return _print_tp_result(args, result)


def _run_torchrun_rank(args: argparse.Namespace, device: str) -> int:
    """One rank of torchrun's world: every rank checks the world (the same result on each);
    rank 0 prints. A failure is one line and an immediate exit (torchrun ends the others)."""
    from inkling_compat.runtime.tp.rank import exit_now, run_rank
    from inkling_compat.runtime.tp.world import TPRefused, check_world

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.tp is not None and args.tp != world:
        return _fail(args, f"--tp {args.tp}, but torchrun started {world} processes", "--tp")
    spec = _tp_spec(args, world, device)
    try:
        check_world(spec)
    except TPRefused as exc:
        return _print_refused(args, exc) if rank == 0 else 1
    try:
        result = run_rank(spec, rank, world, "env://", int(os.environ.get("LOCAL_RANK", rank)),
                          int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    except Exception as exc:  # one line, then out at once: a collective may still wait for a peer
        print(f"inkling-compat: error: TP rank {rank} of {world} failed: {type(exc).__name__}: {str(exc).strip()[:400]}", file=sys.stderr)
        exit_now(3)
    return _print_tp_result(args, result) if result is not None else 0


def _print_tp_result(args: argparse.Namespace, result: Any) -> int:
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(f"ran {result.sink}")
        for note in result.notes:
            print(f"  {note}")
        slots_text = ", ".join(f"{k}: {v}" for k, v in result.slots.items())
        share = " (ranks share a GPU: gloo with CUDA tensors)" if result.shared_devices else ""
        print(f"  TP world: {result.tp} processes, {result.backend} on {result.device}{share}, {result.mode}; "
              f"T={result.tokens} tokens (seed {args.seed}), tokens per slot {{{slots_text}}}, {result.dtype}")
        what = f"median of {result.repeats}" if result.repeats else "first call"
        for r in result.ranks:
            line = (f"  rank {r.rank} ({r.device}): intermediate columns [{r.columns[0]}, {r.columns[1]}) of each expert; "
                    f"forward {r.forward_s * 1e3:.3f} ms, all-reduce {r.allreduce_s * 1e3:.3f} ms ({what})")
            if r.end_to_end_s is not None:
                line += f", forward + all-reduce {r.end_to_end_s * 1e3:.3f} ms"
            print(line)
        print(
            f"max relative error of the all-reduced output vs the unsharded float64 reference: {result.max_relative_error:.2e} "
            f"(max|out-ref| / max|ref|); ||out-ref||/||ref|| = {result.norm_relative_error:.2e}; "
            f"{result.accuracy.describe()}: {'ok' if result.ok else 'FAILED'}"
        )
        if result.lora_share:
            print(f"  LoRA share of the output: ||ref - base||/||ref|| = {result.lora_share:.2f}")
        print(f"time: float64 reference of the whole layer {result.reference_s * 1e3:.1f} ms (rank 0)")
    if not result.ok:
        print(f"inkling-compat: internal error: the all-reduced TP result is outside tolerance "
              f"({result.max_relative_error:.2e} / {result.norm_relative_error:.2e} > "
              f"{result.accuracy.max_bound:.2e} / {result.accuracy.norm_bound:.2e})", file=sys.stderr)
        return 3
    return 0
