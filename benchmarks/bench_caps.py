"""The worst case under each input cap: wall time and peak memory of one `inkling-compat` process.

    python benchmarks/bench_caps.py

Each case is a file (or adapter folder) at or just past one cap of docs/fuzz.md, checked by a
fresh `python -m inkling_compat` process; its time is wall clock, its memory the process's
peak RSS (wait4). Prints a table and writes benchmarks/results/bench_caps.json (date, machine,
commit, load average). The promise: each case ends within 2 s and 500 MB in a report (exit 0
or 1) or one exit-2 line. A run takes well under a minute.
"""

from __future__ import annotations

import json
import os
import platform
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RESULTS = ROOT / "benchmarks" / "results" / "bench_caps.json"
SERVE = (EXAMPLES / "serve.yaml").read_text()


def _adapter(folder: Path, shards: list[int]) -> Path:
    folder.mkdir()
    (folder / "adapter_config.json").write_text((EXAMPLES / "adapter" / "adapter_config.json").read_text())
    for index, count in enumerate(shards):
        names = (f"base_model.model.model.layers.{index}_{i}.mlp.experts.gate_up_proj.lora_A.weight" for i in range(count))
        raw = json.dumps({n: {"dtype": "BF16", "shape": [0, 16], "data_offsets": [0, 0]} for n in names}).encode()
        (folder / f"adapter_model-{index:05d}-of-{len(shards):05d}.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return folder


def _cases(tmp: Path) -> list[tuple[str, str, list[str], str | None]]:
    """(name, cap, arguments, stdin file)."""
    def write(name: str, text: str) -> str:
        (tmp / name).write_text(text)
        return str(tmp / name)

    check = ["check", "--config"]
    peft = ["check", "--config", str(EXAMPLES / "serve.yaml"), "--model", str(EXAMPLES / "config.json"), "--adapter"]
    return [
        ("JSON list, 10 MB (5,000,000 values)", "100,000 values", check + [write("l.json", '{"x": [' + ",".join(["0"] * 5_000_000) + "]}")], None),
        ("JSON list, 99,990 values", "100,000 values", check + [write("u.json", '{"x": [' + ",".join(["0"] * 99_990) + "]}")], None),
        ("YAML block list, 16 MB", "100,000 values", check + [write("b.yaml", "x:\n" + "- 0\n" * 4_000_000)], None),
        ("YAML flow list, 11 MB", "100,000 values", check + [write("f.yaml", "x: [" + ",".join(["0"] * 5_500_000) + "]\n")], None),
        ("YAML list, 99,990 values", "100,000 values", check + [write("u.yaml", "x:\n" + "- 0\n" * 99_990)], None),
        ("20,000 unknown keys", "100,000 values", check + [write("k20.yaml", SERVE + "".join(f"unknown_key_{i:06d}_xx: 1\n" for i in range(20_000)))], None),
        ("49,000 unknown keys", "100,000 values", check + [write("k49.yaml", SERVE + "".join(f"unknown_key_{i:06d}_xx: 1\n" for i in range(49_000)))], None),
        ("30,000 env entries", "100,000 values", check + [write("e30.yaml", SERVE + "env:\n" + "".join(f"  SGLANG_FAKE_{i:06d}: true\n" for i in range(30_000)))], None),
        ("99,000 tensors in one header", "100,000 tensors", peft + [str(_adapter(tmp / "t1", [99_000]))], None),
        ("3 shards of 40,000 tensors", "100,000 tensors (all shards)", peft + [str(_adapter(tmp / "t3", [40_000] * 3))], None),
        ("explain: 160 KB of 'Traceback '", "8 MB of text", ["explain", "-"], write("tb.txt", "Traceback " * 16_000)),
        ("explain: 1 MB, 100 KB lines", "8 MB of text", ["explain", "-"], write("tb1.txt", ("Traceback " * 10_000 + "\n") * 10)),
    ]


def _run(arguments: list[str], stdin: str | None) -> tuple[int, float, float]:
    """(exit status, wall seconds, peak RSS in MB) of one checker process."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source:
        process = subprocess.Popen([sys.executable, "-m", "inkling_compat", *arguments], stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, took, usage.ru_maxrss / 1024


def main() -> None:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for name, cap, arguments, stdin in _cases(Path(folder)):
            code, took, peak = _run(arguments, stdin)
            rows.append({"case": name, "cap": cap, "exit": code, "seconds": round(took, 2), "peak_mb": round(peak)})
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  {'cap':<28} exit  seconds  peak MB")
    for r in rows:
        print(f"{r['case']:<{width}}  {r['cap']:<28} {r['exit']:>4}  {r['seconds']:>7.2f}  {r['peak_mb']:>7}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "commit": commit,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cases": rows,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
