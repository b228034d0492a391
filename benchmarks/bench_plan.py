"""Benchmark the per-batch plan (kernels/plan.py) on a CUDA GPU, eager, against sglang's
``prepare_lora_batch`` as the peer harness timed it (``eager_us.sglang_prepare_batch`` of a
``sglang_peer.py`` JSON from the same machine, when given).

    python benchmarks/bench_plan.py --commit $(git rev-parse --short HEAD) --peer sglang_peer.json

S = 8 slots, slot ids uniform over them on the device (as the peer harness's batches), T in
{1, 64, 1024, 4096}. ``plan_us``: ``build_plan`` as a forward builds it eager (the routing
launch and its one allocation, and the read-back of the all-unassigned flag, a device sync);
``plan_no_readback_us``: the same without the read-back (what a captured forward runs). Each is
``triton.testing.do_bench``'s median (L2 cleared between runs), as the peer harness times eager
paths. Writes ``{"commit", "plan_us": {T: us}, ...}`` (benchmarks/results/runtime_plan.json).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="1,64,1024,4096")
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--commit", default="")
    parser.add_argument("--peer", default=None, help="a sglang_peer.py JSON of the same machine (its prepare timings)")
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "runtime_plan.json"))
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("bench_plan: needs a CUDA GPU", file=sys.stderr)
        return 2
    import triton
    import triton.testing

    from inkling_compat.kernels.plan import build_plan

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    tokens = [int(t) for t in args.tokens.split(",") if t]
    S = args.slots
    gen = torch.Generator(device=dev).manual_seed(0)
    plan_us, no_readback_us, checks = {}, {}, {}
    for T in tokens:
        ids = torch.randint(0, S, (T,), device=dev, generator=gen)
        p = build_plan(ids, S)
        want = torch.bincount(ids + 1, minlength=S + 1)
        checks[str(T)] = (p.all_unassigned is False and
                          (p.routing is None or torch.equal(p.routing.slot_counts.long(), want)))
        plan_us[str(T)] = triton.testing.do_bench(lambda: build_plan(ids, S), warmup=25, rep=100, return_mode="median") * 1e3
        no_readback_us[str(T)] = triton.testing.do_bench(lambda: build_plan(ids, S, host_flag=False), warmup=25, rep=100,
                                                         return_mode="median") * 1e3
    result = {
        "commit": args.commit,
        "plan_us": plan_us,
        "plan_no_readback_us": no_readback_us,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{props.name}, {props.multi_processor_count} SMs, {platform.machine()}",
        "torch": torch.__version__, "triton": triton.__version__, "slots": S,
        "contents_checked": checks,
        "method": "triton.testing.do_bench median (L2 cleared), eager, slot ids uniform over the slots",
    }
    if args.peer and Path(args.peer).exists():
        peer = json.loads(Path(args.peer).read_text())
        prep: dict[str, list[float]] = {}
        for row in peer.get("rows", []):
            v = row.get("eager_us", {}).get("sglang_prepare_batch")
            if v is not None:
                prep.setdefault(str(row["T"]), []).append(v)
        sg = {t: min(v) for t, v in prep.items()}  # fastest of the harness's rows at this T (the strictest ratio)
        result["sglang_prepare_batch_us"] = sg
        result["sglang_prepare_source"] = f"{args.peer} (commit {peer.get('commit')}), the lowest row at each T"
        result["plan_over_sglang_prepare"] = {t: plan_us[t] / sg[t] for t in plan_us if t in sg}
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['machine']}, torch {torch.__version__}, triton {triton.__version__}, S={S}\n")
    print("| T | plan us | plan, no read-back us | sglang prepare_lora_batch us | plan / sglang |")
    print("|---|---|---|---|---|")
    for t in plan_us:
        sg = result.get("sglang_prepare_batch_us", {}).get(t)
        ratio = result.get("plan_over_sglang_prepare", {}).get(t)
        print(f"| {t} | {plan_us[t]:.1f} | {no_readback_us[t]:.1f} | {'n/a' if sg is None else f'{sg:.1f}'} | "
              f"{'n/a' if ratio is None else f'{ratio:.2f}'} |")
    print(f"\ncontents checked: {checks}; wrote {out}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
