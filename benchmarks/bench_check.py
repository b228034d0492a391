"""Checker performance: rule loading, check() latency and throughput, CLI start-up.

    python benchmarks/bench_check.py [--runs 2000] [--inputs 1000] [--procs 10]

Prints a table and writes benchmarks/results/bench_check.json. Target: check() median
<= 1 ms per config + pool-form adapter on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from inkling_compat.engine.evaluate import check
from inkling_compat.engine.rules import load_rules
from inkling_compat.testing.scenarios import base_scenarios, deep_merge, example_arguments

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_check.json"
TARGET_MEDIAN_MS = 1.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def bench_rule_loading(repeats: int = 5) -> dict[str, Any]:
    times = []
    for _ in range(repeats):
        load_rules.cache_clear()
        start = time.perf_counter()
        rules = load_rules()
        times.append(time.perf_counter() - start)
    return {"rules": len(rules), "repeats": repeats, "median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3}


def bench_latency(runs: int) -> dict[str, Any]:
    args = example_arguments({})  # legacy: one config + pool-form adapter, passing
    load_rules()
    for _ in range(50):  # warm-up
        check(**args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        check(**args)
        times.append(time.perf_counter() - start)
    report = check(**args)
    return {
        "runs": runs,
        "ok": report.ok,
        "rules_evaluated": report.rules_evaluated,
        "median_ms": statistics.median(times) * 1e3,
        "p90_ms": percentile(times, 0.90) * 1e3,
        "p99_ms": percentile(times, 0.99) * 1e3,
    }


def generated_inputs(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Deterministic variations of the legacy scenario: slots, rank, backend, shapes."""
    rng = random.Random(seed)
    legacy = base_scenarios()["legacy"]
    backends = ["triton", "triton", "csgmv", "triton_v2", "torch_native"]
    out = []
    for _ in range(count):
        slots = rng.choice([1, 2, 4, 8, 16])
        rank = rng.choice([8, 16, 32, 64])
        pool_rank = rank if rng.random() < 0.8 else rng.choice([8, 16, 32, 64])
        n = legacy["model"]["n_shared_experts"]
        hidden, inter = legacy["model"]["hidden_size"], legacy["model"]["intermediate_size"]
        outer = 1 if rng.random() < 0.7 else n
        pool = {
            "gate_up_lora_a": {"shape": [slots, outer, 2 * pool_rank, hidden]},
            "gate_up_lora_b": {"shape": [slots, n, 2 * inter, pool_rank]},
            "down_lora_a": {"shape": [slots, n, pool_rank, inter]},
            "down_lora_b": {"shape": [slots, outer, hidden, pool_rank]},
        }
        if rng.random() < 0.1:  # a 3-D buffer now and then
            pool["down_lora_a"]["shape"] = pool["down_lora_a"]["shape"][1:]
        config = deep_merge(
            legacy["config"],
            {"max_loras_per_batch": slots, "max_lora_rank": rank, "lora_backend": rng.choice(backends)},
        )
        adapter = deep_merge(legacy["adapter"], {"pool": pool})
        out.append({"config": config, "model": legacy["model"], "platform": legacy["platform"], "adapter": adapter})
    return out


def bench_throughput(count: int) -> dict[str, Any]:
    inputs = generated_inputs(count)
    load_rules()
    failing = 0
    start = time.perf_counter()
    for args in inputs:
        if not check(**args).ok:
            failing += 1
    elapsed = time.perf_counter() - start
    return {"inputs": count, "failing": failing, "seconds": elapsed, "checks_per_s": count / elapsed}


def _cli_command() -> list[str]:
    script = Path(sys.executable).parent / "inkling-compat"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "inkling_compat.cli"]


def _wall(command: list[str], repeats: int, cwd: str) -> tuple[list[float], int]:
    times, code = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        code = subprocess.run(command, capture_output=True, cwd=cwd).returncode
        times.append(time.perf_counter() - start)
    return times, code


def bench_process(repeats: int) -> dict[str, Any]:
    legacy = base_scenarios()["legacy"]
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "serve.yaml").write_text(yaml.safe_dump(legacy["config"]), encoding="utf-8")
        Path(tmp, "config.json").write_text(json.dumps(legacy["model"]), encoding="utf-8")
        Path(tmp, "adapter.yaml").write_text(yaml.safe_dump(legacy["adapter"]), encoding="utf-8")
        command = _cli_command() + ["check", "--config", "serve.yaml", "--model", "config.json", "--adapter", "adapter.yaml"]
        _wall(command, 1, tmp)  # warm the file cache and bytecode
        cli_times, code = _wall(command, repeats, tmp)
        base_times, _ = _wall([sys.executable, "-c", "pass"], repeats, tmp)
    return {
        "repeats": repeats,
        "command": " ".join(["inkling-compat"] + command[len(_cli_command()) :]),
        "exit_code": code,
        "cli_median_ms": statistics.median(cli_times) * 1e3,
        "python_pass_median_ms": statistics.median(base_times) * 1e3,
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    except OSError:
        return None
    return out.stdout.strip() or None


def table(results: dict[str, Any]) -> str:
    loading, latency, throughput, proc = (results[k] for k in ("rule_loading", "latency", "throughput", "process"))
    rows = [
        ("rules loaded", f"{loading['rules']}"),
        ("rule loading (load_rules, cold cache), median", f"{loading['median_ms']:.1f} ms"),
        (f"check() legacy + pool adapter, median of {latency['runs']}", f"{latency['median_ms']:.3f} ms"),
        ("check() p90", f"{latency['p90_ms']:.3f} ms"),
        ("check() p99", f"{latency['p99_ms']:.3f} ms"),
        (f"throughput, {throughput['inputs']} generated inputs", f"{throughput['checks_per_s']:.0f} checks/s"),
        (f"`inkling-compat check` process, median of {proc['repeats']}", f"{proc['cli_median_ms']:.0f} ms"),
        ("`python -c pass` baseline, same count", f"{proc['python_pass_median_ms']:.0f} ms"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"| {'measure':<{width}} | value |", f"|{'-' * (width + 2)}|-------|"]
    lines += [f"| {name:<{width}} | {value} |" for name, value in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--inputs", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=10)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "commit": git_commit(),
        "target": {"check_median_ms": TARGET_MEDIAN_MS},
    }
    results["rule_loading"] = bench_rule_loading()
    results["latency"] = bench_latency(args.runs)
    results["throughput"] = bench_throughput(args.inputs)
    results["process"] = bench_process(args.procs)
    results["target"]["met"] = results["latency"]["median_ms"] <= TARGET_MEDIAN_MS

    print(f"{results['date']}  {results['machine']}  {results['cpu_count']} CPUs  Python {results['python']}  commit {results['commit']}")
    print(table(results))
    verdict = "met" if results["target"]["met"] else "NOT met"
    print(f"target: check() median <= {TARGET_MEDIAN_MS} ms: {verdict}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
