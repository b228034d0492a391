"""What supporting every sglang release costs a check of the default one: table load, a launch
command's first parse, a check from files, and the package's data size, before and after.

    python benchmarks/bench_release_tables.py --before a125866 [--procs 15] [--runs 300]

Each figure is measured in fresh interpreters (a table is read once per process), the two trees
alternating process by process, both with their bytecode written first (as an install does). Prints one table and writes
benchmarks/results/bench_release_tables.json (date, machine, commit, load average). Target: the
default release's figures equal within noise; the package's data grows by at most 2 MB.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare

ROOT = compare.ROOT
RESULTS = ROOT / "benchmarks" / "results" / "bench_release_tables.json"
EXAMPLES = ROOT / "examples"
LAUNCH = ["sglang", "serve", "--model-path", "/m", "--enable-lora", "--max-lora-rank", "16", "--lora-backend", "triton", "--tp-size", "2"]


def side(runs: int) -> dict[str, float]:
    """One process's figures (ms) for the tree on PYTHONPATH, with the cyclic collector paused
    during start-up as the `inkling-compat` command pauses it (cli.main): otherwise a collection
    that the imports before it happen to trigger lands in whichever step allocates next."""
    import gc

    gc.disable()
    started = time.perf_counter()
    from inkling_compat.inputs import argument_table

    argument_table.table()
    table_ms = (time.perf_counter() - started) * 1e3
    from inkling_compat.inputs.launch import parse_launch

    started = time.perf_counter()
    parse_launch(list(LAUNCH))
    parse_ms = (time.perf_counter() - started) * 1e3
    from inkling_compat.engine.evaluate import check

    gc.enable()

    args = {"config": str(EXAMPLES / "serve.yaml"), "adapter": str(EXAMPLES / "adapter_pool.yaml"), "model": str(EXAMPLES / "config.json")}
    check(**args)  # warm
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        check(**args)
        times.append((time.perf_counter() - started) * 1e3)
    return {"table_ms": table_ms, "first_parse_ms": parse_ms, "check_median_ms": statistics.median(times)}


def data_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in (tree / "inkling_compat" / "data").iterdir() if p.name.startswith("sglang-"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", required=False)
    parser.add_argument("--procs", type=int, default=15)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side(args.runs)))
        return 0
    trees = {"after": ROOT}
    if args.before:
        trees["before"], _ = compare.prepare_tree(args.before)
    for tree in trees.values():  # the .pyc files an install writes (bench_check.py says why)
        compileall.compile_dir(str(tree / "inkling_compat"), quiet=1)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.procs):
        for name, tree in trees.items():
            samples[name].append(compare.run_side(tree, "bench_release_tables.py", ["--runs", str(args.runs)]))
    medians = {name: {key: statistics.median(s[key] for s in rows) for key in rows[0]} for name, rows in samples.items()}
    sizes = {name: data_bytes(tree) for name, tree in trees.items()}
    labels = [("default table read (fresh process)", "table_ms"), ("first launch parse (parser built)", "first_parse_ms"), ("check() from files, median", "check_median_ms")]
    rows = []
    for label, key in labels:
        before = medians.get("before", {}).get(key)
        after = medians["after"][key]
        rows.append((label, f"{before:.2f} ms" if before is not None else "", f"{after:.2f} ms", compare.ratio(before, after)))
    rows.append(("argument tables in the package", f"{sizes.get('before', 0) / 1e3:.0f} kB" if "before" in sizes else "", f"{sizes['after'] / 1e3:.0f} kB", ""))
    compare.print_table(rows)
    out = {**compare.environment(), "load_average": os.getloadavg(), "procs": args.procs, "runs": args.runs, "medians": medians, "data_bytes": sizes}
    if args.before:
        out["before_commit"] = compare.git("rev-parse", "--short", args.before)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
