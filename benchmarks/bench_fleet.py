"""Fleet check benchmark: 1,000 PEFT adapter directories, headers only, vs safetensors load_file.

    .venv/bin/python benchmarks/bench_fleet.py [--adapters 1000] [--full-size 100] [--repeat 5]
    .venv/bin/python benchmarks/bench_fleet.py --before c253eda [--repeat 5] [--profile]

With --before REV: only the in-process `check_fleet` times of the typical and distinct fleets,
for REV (a git worktree of its own) and for the working tree side by side, each run in a fresh
interpreter (no cache of an earlier run survives; a one-adapter fleet is checked first to
compile the rule plan), the sides alternating; one table with both columns and the ratio,
written to benchmarks/results/bench_fleet_compare.json. --profile adds a cProfile of one
distinct-fleet run of the working tree (top functions by own and cumulative time).

Generates (once, cached under benchmarks/.fleet_cache/, git-ignored) fleets of Inkling adapters
written with the `safetensors` library in PEFT naming: for each of the model's 16 layers the
attention factors (wq_du, wk_dv, wv_dv, wr_du, wo_ud; lora_A and lora_B) and the shared-sink
factors (gate_up_proj, down_proj under shared_experts): 14 tensors per layer, 224 per adapter.

* typical: 1,000 adapters of one recipe (small model dims, hidden 64), every 10th with rank 2r
  (incompatible) and every 10th+5 trained for another hidden size (pool shape mismatch);
* distinct: 1,000 adapters that are all different (rank, layer subset, dtype): no two share a
  tensor table, the worst case for the fleet fast path;
* full-size: 100 adapters at the bundled example model's dims (hidden 1536, intermediate 768,
  2 shared experts, r 16: ~10.7 MB each), and the first 100 of the typical fleet, to compare
  time and peak memory at equal count but ~100x the tensor bytes, and to time
  `safetensors.torch.load_file` on realistic files.

Measured: the in-process `check_fleet` wall time (median of --repeat runs; header cache and
interned tables cleared before each run, OS page cache warm), its tracemalloc peak, the
`inkling-compat check --adapter-dir` process wall time and max RSS, and `load_file` over the same
files. A table is printed and the figures are written to benchmarks/results/bench_fleet.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".fleet_cache"
RESULTS = HERE / "results" / "bench_fleet.json"

SMALL = {"hidden_size": 64, "intermediate_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "r": 4}
FULL = {"hidden_size": 1536, "intermediate_size": 768, "num_attention_heads": 12, "num_key_value_heads": 4, "r": 16}
LAYERS = 16
N_SHARED = 2


def model_config(dims: dict) -> dict:
    return {
        "architectures": ["InklingForConditionalGeneration"],
        "model_type": "inkling",
        "vocab_size": 201024,
        "hidden_size": dims["hidden_size"],
        "intermediate_size": dims["intermediate_size"],
        "num_hidden_layers": LAYERS,
        "num_attention_heads": dims["num_attention_heads"],
        "num_key_value_heads": dims["num_key_value_heads"],
        "n_routed_experts": 64,
        "num_experts_per_tok": 4,
        "n_shared_experts": N_SHARED,
        "shared_expert_sink": True,
        "inference_moe_w13_interleaved": True,
        "torch_dtype": "bfloat16",
    }


def server_config(dims: dict) -> dict:
    return {
        "enable_lora": True,
        "lora_backend": "triton",
        "max_loras_per_batch": 4,
        "max_lora_rank": dims["r"],
        "max_loaded_loras": 2000,
        "lora_target_modules": ["qkvr", "wo_ud", "gate_up_proj", "down_proj"],
        "experts_shared_outer_loras": True,
        "dtype": "bfloat16",
    }


def adapter_tensors(dims: dict, r: int, hidden: int, layers: list[int] | None = None, dtype: str = "bfloat16") -> dict:
    import torch

    H, I, hd = hidden, dims["intermediate_size"], dims["hidden_size"] // dims["num_attention_heads"]
    q, kv = dims["num_attention_heads"] * hd, dims["num_key_value_heads"] * hd
    out = {}
    for layer in range(LAYERS) if layers is None else layers:
        attn = f"base_model.model.llm.layers.{layer}.attn"
        for module, rows in (("wq_du", q), ("wk_dv", kv), ("wv_dv", kv), ("wr_du", q), ("wo_ud", H)):
            out[f"{attn}.{module}.lora_A.weight"] = torch.randn(r, H, dtype=torch.bfloat16)
            out[f"{attn}.{module}.lora_B.weight"] = torch.randn(rows, r, dtype=torch.bfloat16)
        sink = f"base_model.model.llm.layers.{layer}.mlp.shared_experts"
        out[f"{sink}.gate_up_proj.lora_A.weight"] = torch.randn(r, H, dtype=torch.bfloat16)
        out[f"{sink}.gate_up_proj.lora_B.weight"] = torch.randn(N_SHARED * 2 * I, r, dtype=torch.bfloat16)
        out[f"{sink}.down_proj.lora_A.weight"] = torch.randn(r, N_SHARED * I, dtype=torch.bfloat16)
        out[f"{sink}.down_proj.lora_B.weight"] = torch.randn(H, r, dtype=torch.bfloat16)
    return {k: v.to(getattr(torch, dtype)) for k, v in out.items()} if dtype != "bfloat16" else out


def distinct_variant(i: int, dims: dict) -> tuple[int, list[int], str]:
    """Adapter i of the worst-case fleet: its own (rank, layers, dtype), so no two adapters share
    a tensor table (4 ranks x 136 layer subsets x 2 dtypes = 1,088 variants)."""
    import itertools

    drops = [(d,) for d in range(LAYERS)] + list(itertools.combinations(range(LAYERS), 2))
    r = 1 + i % dims["r"]
    drop = drops[(i // dims["r"]) % len(drops)]
    dtype = "bfloat16" if (i // (dims["r"] * len(drops))) % 2 == 0 else "float16"
    return r, [layer for layer in range(LAYERS) if layer not in drop], dtype


def write_fleet(folder: Path, dims: dict, count: int, distinct: bool = False) -> None:
    """`count` adapters. Typical fleet: one recipe (all alike) except every 10th with rank 2r
    (incompatible) and every 10th+5 trained for another hidden size. Distinct fleet: every
    adapter has its own tensor table (see distinct_variant), all compatible."""
    from safetensors.torch import save_file

    stamp = folder / ".complete"
    if stamp.exists() and stamp.read_text() == f"{count}":
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(count):
        layers, dtype = None, "bfloat16"
        if distinct:
            r, layers, dtype = distinct_variant(i, dims)
            hidden = dims["hidden_size"]
        else:
            r = dims["r"] * 2 if i % 10 == 0 else dims["r"]
            hidden = dims["hidden_size"] + 64 if i % 10 == 5 else dims["hidden_size"]
        d = folder / f"adapter-{i:04d}"
        d.mkdir()
        save_file(adapter_tensors(dims, r, hidden, layers, dtype), str(d / "adapter_model.safetensors"), metadata={"format": "pt"})
        config = {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": "inkling-small" if dims is SMALL else "inkling",
            "r": r,
            "lora_alpha": 2 * r,
            "lora_dropout": 0.0,
            "target_modules": ["qkvr", "wo_ud", "gate_up_proj", "down_proj"],
            "use_rslora": False,
            "use_dora": False,
            "modules_to_save": None,
        }
        (d / "adapter_config.json").write_text(json.dumps(config, indent=2))
    stamp.write_text(f"{count}")


def setup_files(root: Path, dims: dict) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    serve, model = root / "serve.json", root / "config.json"
    serve.write_text(json.dumps(server_config(dims)))
    model.write_text(json.dumps(model_config(dims)))
    return serve, model


def cold() -> None:
    """Forget every cache a fleet check fills (headers, interned tables, layer memos)."""
    from inkling_compat.facts import adapter as adapter_facts
    from inkling_compat.inputs import adapter_dir as adapter_reader
    adapter_reader.clear_caches()
    adapter_facts._LAYER_MEMO.clear()
    adapter_facts.layer_id.cache_clear()


def time_check(serve: Path, model: Path, folder: Path, repeat: int) -> dict:
    from inkling_compat.fleet import check_fleet
    from inkling_compat.engine.rule_load import load_rules

    load_rules()  # rule files are parsed once per process; not part of a fleet check
    check_fleet(serve, [folder], model=model)  # warm the plan cache and the OS page cache
    times = []
    report = None
    for _ in range(repeat):
        cold()  # every header is read, parsed and validated again
        start = time.perf_counter()
        report = check_fleet(serve, [folder], model=model)
        times.append(time.perf_counter() - start)
    cold()
    tracemalloc.start()
    check_fleet(serve, [folder], model=model)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    cold()
    groups = report.by_adapter()
    return {
        "seconds_median": statistics.median(times),
        "seconds_min": min(times),
        "seconds_max": max(times),
        "runs": len(times),
        "tracemalloc_peak_mib": peak / 2**20,
        "adapters": len(groups),
        "adapters_ok": sum(1 for g in groups if g["ok"]),
        "problems": len(report.problems),
    }


_MEASURE = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = proc.communicate()
wall = time.perf_counter() - start
import resource
print(json.dumps({"wall": wall, "code": proc.returncode, "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "out": len(out), "err": err.decode()[-300:]}))
"""


def _run_measured(cmd: list[str]) -> dict:
    """Run `cmd` from a small launcher process (this one has imported torch, and a child's max RSS
    counts the pages it shares with its parent before exec): wall s, exit code, max RSS MiB."""
    launcher = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True)
    return json.loads(launcher.stdout)


def time_cli(serve: Path, model: Path, folder: Path) -> dict:
    """The CLI as a user runs it, and the same command without adapters (start-up cost)."""
    cmd = [sys.executable, "-m", "inkling_compat.cli", "check", "--config", str(serve), "--model", str(model)]
    fleet = _run_measured([*cmd, "--adapter-dir", str(folder), "--format", "json"])
    bare = _run_measured(cmd)
    return {
        "seconds": fleet["wall"],
        "exit_code": fleet["code"],
        "max_rss_mib": fleet["rss"],
        "stdout_bytes": fleet["out"],
        "stderr_tail": fleet["err"],
        "seconds_without_adapters": bare["wall"],
        "max_rss_mib_without_adapters": bare["rss"],
        "exit_code_without_adapters": bare["code"],
    }


def time_load_file(folder: Path, limit: int | None = None) -> dict:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*/adapter_model.safetensors"))[:limit]
    start = time.perf_counter()
    tensors = 0
    for f in files:
        tensors += len(load_file(str(f)))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "files": len(files), "tensors": tensors, "bytes": sum(f.stat().st_size for f in files)}


def time_headers_only(folder: Path) -> dict:
    """Reading + validating every header, nothing else (no header cache, no interning)."""
    from inkling_compat.inputs import adapter_dir as adapter_reader
    files = sorted(folder.glob("*/adapter_model.safetensors"))
    start = time.perf_counter()
    for f in files:
        adapter_reader.clear_caches()
        adapter_reader.read_safetensors_header(f)
    seconds = time.perf_counter() - start
    adapter_reader.clear_caches()
    return {"seconds": seconds, "files": len(files)}


def _git_commit() -> str | None:
    """The checked-out commit, with "+dirty" when the tree has changes (None outside git)."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def _side(folder: str, serve: str, model: str, warm: str, profile: bool) -> dict:
    """One timed check_fleet in this (fresh) interpreter, for whichever code PYTHONPATH names."""
    try:
        from inkling_compat.engine.rule_load import load_rules
    except ModuleNotFoundError:
        try:
            from inkling_compat.engine.rules import load_rules  # type: ignore[no-redef] # before the loader had its own module
        except ModuleNotFoundError:
            from inkling_compat.rulebook import load_rules  # type: ignore[no-redef] # the flat layout of c253eda and before
    from inkling_compat.fleet import check_fleet

    load_rules()
    check_fleet(serve, [warm], model=model)  # the rule plan compiled, nothing of `folder` cached
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    report = check_fleet(serve, [folder], model=model)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "adapters": len(report.by_adapter()), "problems": len(report.problems)}
    if profiler is not None:
        import io
        import pstats

        profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(45)
        out["profile"] = text.getvalue()
    return out


def compare_main(args: argparse.Namespace) -> None:
    import compare

    write_fleet(CACHE / "small" / "fleet", SMALL, args.adapters)
    write_fleet(CACHE / "distinct" / "fleet", SMALL, args.adapters, distinct=True)
    serve_s, model_s = setup_files(CACHE / "small", SMALL)
    serve_d, model_d = setup_files(CACHE / "distinct", SMALL)
    warm = CACHE / "warm"
    if not (warm / "example" / "adapter_config.json").exists():
        shutil.copytree(HERE.parent / "examples" / "adapter", warm / "example", dirs_exist_ok=True)
    trees = {"before": compare.prepare_tree(args.before)[0], "after": HERE.parent}
    results = compare.environment()
    results.update(before_commit=compare.git("rev-parse", "--short", args.before), after_commit=results["commit"], repeat=args.repeat)
    fleets = {"typical": (CACHE / "small" / "fleet", serve_s, model_s), "distinct": (CACHE / "distinct" / "fleet", serve_d, model_d)}
    for name, (folder, serve, model) in fleets.items():
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for index in range(args.repeat):
            for side in ("before", "after") if index % 2 == 0 else ("after", "before"):
                runs[side].append(compare.run_side(trees[side], "bench_fleet.py", [str(folder), str(serve), str(model), str(warm)]))
        results[name] = {
            side: {
                "seconds_median": statistics.median(r["seconds"] for r in rs),
                "seconds_min": min(r["seconds"] for r in rs),
                "seconds": [r["seconds"] for r in rs],
                "adapters": rs[0]["adapters"],
                "problems": rs[0]["problems"],
            }
            for side, rs in runs.items()
        }
    if args.profile:
        folder, serve, model = fleets["distinct"]
        profiled = compare.run_side(trees["after"], "bench_fleet.py", [str(folder), str(serve), str(model), str(warm), "--profile"])
        results["distinct_profile"] = {"seconds_under_profiler": profiled["seconds"], "text": profiled["profile"]}
    results["load_average_at_end"] = list(os.getloadavg())
    out = RESULTS.with_name("bench_fleet_compare.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")

    print(f"{results['date']}  {results['machine']}  before {results['before_commit']} / after {results['after_commit']}")
    print(f"load average (1, 5, 15 min) at start {results['load_average_at_start']}, at end {results['load_average_at_end']}")
    rows = []
    for name in fleets:
        b, a = results[name]["before"], results[name]["after"]
        rows.append((f"check_fleet, {a['adapters']} adapters, {name}: median of {args.repeat}", f"{b['seconds_median']:.3f} s", f"{a['seconds_median']:.3f} s", compare.ratio(b["seconds_median"], a["seconds_median"])))
        rows.append((f"  {name}: best of {args.repeat}", f"{b['seconds_min']:.3f} s", f"{a['seconds_min']:.3f} s", compare.ratio(b["seconds_min"], a["seconds_min"])))
        rows.append((f"  {name}: problems reported", str(b["problems"]), str(a["problems"]), ""))
    compare.print_table(rows)
    target = results["distinct"]["after"]["seconds_median"]
    print(f"target: 1,000 distinct adapters <= 2 s in-process: {'met' if target <= 2.0 else 'NOT met'} ({target:.2f} s)")
    if args.profile:
        print(f"\ncProfile of one distinct-fleet run of the working tree ({results['distinct_profile']['seconds_under_profiler']:.2f} s under the profiler):")
        print(results["distinct_profile"]["text"])
    print(f"written: {out.relative_to(HERE.parent)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapters", type=int, default=1000)
    parser.add_argument("--full-size", type=int, default=100, help="adapters in the realistic-size subset")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", metavar="REV", help="compare the fleet check with this git revision (e.g. c253eda)")
    parser.add_argument("--profile", action="store_true", help="with --before: also profile one distinct-fleet run")
    parser.add_argument("--side", nargs=4, metavar=("FOLDER", "SERVE", "MODEL", "WARM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(_side(*args.side, profile=args.profile)))
        return
    if args.before:
        compare_main(args)
        return

    small_root, full_root, distinct_root = CACHE / "small", CACHE / "full", CACHE / "distinct"
    t0 = time.perf_counter()
    write_fleet(small_root / "fleet", SMALL, args.adapters)
    write_fleet(distinct_root / "fleet", SMALL, args.adapters, distinct=True)
    write_fleet(full_root / "fleet", FULL, args.full_size)
    generated = time.perf_counter() - t0
    serve_s, model_s = setup_files(small_root, SMALL)
    serve_d, model_d = setup_files(distinct_root, SMALL)
    serve_f, model_f = setup_files(full_root, FULL)
    # The first --full-size adapters of the small fleet: same count and recipe as the full-size
    # subset, tensors ~100x smaller, to compare time and peak memory at equal count.
    sub = CACHE / "small_subset"
    if not (sub / ".complete").exists() or (sub / ".complete").read_text() != str(args.full_size):
        shutil.rmtree(sub, ignore_errors=True)
        sub.mkdir(parents=True)
        for d in sorted((small_root / "fleet").glob("adapter-*"))[: args.full_size]:
            shutil.copytree(d, sub / d.name)
        (sub / ".complete").write_text(str(args.full_size))

    results = {
        "date": date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, {platform.system()} {platform.release()}",
        "commit": _git_commit(),
        "load_average_at_start": os.getloadavg(),
        "generation_seconds": generated,
        "tensors_per_adapter": 14 * LAYERS,
        "small_dims": SMALL,
        "full_dims": FULL,
    }
    results["cli"] = time_cli(serve_s, model_s, small_root / "fleet")
    results["typical"] = time_check(serve_s, model_s, small_root / "fleet", args.repeat)
    results["typical"]["load_file"] = time_load_file(small_root / "fleet")
    results["typical"]["headers_only"] = time_headers_only(small_root / "fleet")
    results["distinct"] = time_check(serve_d, model_d, distinct_root / "fleet", args.repeat)
    results["distinct"]["load_file"] = time_load_file(distinct_root / "fleet")
    results["full_subset"] = time_check(serve_f, model_f, full_root / "fleet", args.repeat)
    results["full_subset"]["load_file"] = time_load_file(full_root / "fleet")
    results["small_subset"] = time_check(serve_s, model_s, sub, args.repeat)
    results["small_subset"]["load_file"] = time_load_file(sub)

    results["load_average_at_end"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")

    def row(label: str, r: dict) -> tuple[str, ...]:
        lf = r["load_file"]
        return (
            label,
            str(r["adapters"]),
            f"{lf['bytes'] / lf['files'] / 2**20:.2f}",
            f"{r['seconds_median']:.3f}",
            f"{r['tracemalloc_peak_mib']:.1f}",
            f"{lf['seconds']:.3f}",
            f"{lf['seconds'] / r['seconds_median']:.1f}x",
        )

    rows = [
        ("fleet", "adapters", "MiB/file", "check s (median)", "peak MiB", "load_file s", "load_file/check"),
        row("typical (one recipe, 1/5 bad)", results["typical"]),
        row("distinct (no two alike)", results["distinct"]),
        row("typical, first 100", results["small_subset"]),
        row("full-size, 100", results["full_subset"]),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)))
    cli = results["cli"]
    print(
        f"headers only (read + validate {results['typical']['headers_only']['files']} headers): {results['typical']['headers_only']['seconds']:.3f} s; "
        f"CLI `check --adapter-dir` on the typical fleet: {cli['seconds']:.2f} s wall (of which start-up without adapters {cli['seconds_without_adapters']:.2f} s), "
        f"max RSS {cli['max_rss_mib']:.0f} MiB (without adapters {cli['max_rss_mib_without_adapters']:.0f} MiB), exit {cli['exit_code']}"
    )
    print(f"load average (1 min) at start / end: {results['load_average_at_start'][0]:.2f} / {results['load_average_at_end'][0]:.2f}")
    print(f"written: {RESULTS.relative_to(HERE.parent)}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))  # compare.py, the before/after harness
    if "--side" not in sys.argv:  # a side run imports only the tree its PYTHONPATH names
        sys.path.insert(0, str(HERE.parent))
    main()
