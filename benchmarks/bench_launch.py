"""Launch input at its caps, and what reading a shell script costs over the same command.

    python benchmarks/bench_launch.py

* a launch command of 100,000 words (the cap), and one with 4,000 `--lora-paths` entries:
  the parse (inputs/launch.parse_launch) and the whole check (`check(argv=...)`), in one
  process, best of 3; the promise is under 1 s each;
* a 1,000-line launch script (exports, comments, a function, a heredoc, the command continued
  over lines) against the same command given after `--`: fresh `python -m inkling_compat check`
  processes, best of 7 each; the promise is at most 50 ms more for the script.

Prints a table and writes benchmarks/results/bench_launch.json (date, machine, commit, load
average).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_launch.json"
SERVER = ["python3", "-m", "sglang.launch_server"]
COMMAND = [*SERVER, "--model-path", "/models/inkling", "--enable-lora", "--max-lora-rank", "16", "--lora-target-modules", "all", "--tp", "2", "--port", "30000"]


def _best(fn, runs: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall, CPU) seconds, the best of `runs`: on a shared machine the wall clock also counts
    the time other processes held the cores, so both are reported."""
    wall = cpu = float("inf")
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def _in_process() -> list[dict]:
    from inkling_compat.api import check
    from inkling_compat.inputs import launch

    rows = []
    cases = {
        "100,000 words": [*SERVER, "--model-path", "/m"] + ["--tp", "2"] * ((100_000 - 5) // 2),
        "4,000 --lora-paths entries": [*SERVER, "--model-path", "/m", "--enable-lora", "--lora-paths"] + [f"a{i}=/x/a{i}" for i in range(4_000)],
    }
    check(argv=COMMAND)  # (imports and the rules loaded once, as in any process)
    for name, words in cases.items():
        def parse() -> None:
            launch._LAUNCHES.clear()
            launch.parse_launch(words)

        def whole() -> None:
            launch._LAUNCHES.clear()
            check(argv=words)

        (parse_wall, parse_cpu), (check_wall, check_cpu) = _best(parse, 3), _best(whole, 3)
        rows.append({"case": name, "words": len(words), "parse_s": round(parse_wall, 4), "parse_cpu_s": round(parse_cpu, 4), "check_s": round(check_wall, 4), "check_cpu_s": round(check_cpu, 4), "limit_s": 1.0})
    return rows


def _script() -> str:
    lines = ["#!/bin/bash", "set -euo pipefail", "# a launch script of 1,000 lines"]
    lines += ["usage() {", '  echo "usage: $0" >&2', "}", "cat > /tmp/notes <<EOF", "python3 -m sglang.launch_server --in-a-heredoc", "EOF"]
    while len(lines) < 1000 - len(COMMAND):
        i = len(lines)
        lines.append(f'export SETTING_{i}="value {i}"  # setting {i}' if i % 2 else f"# comment line {i} with a#hash and 'quotes'")
    lines.append(" \\\n  ".join(COMMAND))
    return "\n".join(lines) + "\n"


def _process(argv: list[str], runs: int) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh check process, the best of `runs`."""
    import resource

    env = dict(os.environ, NO_COLOR="1")
    wall = cpu = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "inkling_compat", *argv], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = min(wall, time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"check failed: {proc.stderr}")
    return wall, cpu


def main() -> None:
    rows = _in_process()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "start.sh"
        script.write_text(_script())
        assert script.read_text().count("\n") >= 1000
        command_s, command_cpu = _process(["check", "--", *COMMAND], 7)
        script_s, script_cpu = _process(["check", "--launch", str(script)], 7)
    script_row = {
        "case": "1,000-line script vs -- command",
        "command_s": round(command_s, 4),
        "script_s": round(script_s, 4),
        "extra_ms": round((script_s - command_s) * 1000, 1),
        "command_cpu_s": round(command_cpu, 4),
        "script_cpu_s": round(script_cpu, 4),
        "extra_cpu_ms": round((script_cpu - command_cpu) * 1000, 1),
        "limit_ms": 50,
    }
    print(f"{'case':<28} {'words':>7} {'parse s (cpu)':>15} {'check s (cpu)':>15}  limit")
    for r in rows:
        print(f"{r['case']:<28} {r['words']:>7} {r['parse_s']:>6.3f} ({r['parse_cpu_s']:.3f}) {r['check_s']:>6.3f} ({r['check_cpu_s']:.3f})  < {r['limit_s']} s")
    print(f"{'1,000-line script':<28} {'':>7} {'-- cmd s (cpu)':>15} {'script s (cpu)':>15}  extra (cpu)")
    print(
        f"{'':<28} {'':>7} {command_s:>6.3f} ({command_cpu:.3f}) {script_s:>6.3f} ({script_cpu:.3f})  "
        f"{script_row['extra_ms']:+.1f} ms ({script_row['extra_cpu_ms']:+.1f} ms); limit 50 ms"
    )
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                "commit": commit,
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "caps": rows,
                "script": script_row,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
