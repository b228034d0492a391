"""What finding a hub id in the local Hugging Face cache adds to a check.

    python benchmarks/bench_hf_cache.py

The same deployment (the example model and adapter with the example's LoRA arguments) is
checked with local paths (`--model-path examples/model --lora-paths sql=examples/adapter`) and
with hub ids found in the bundled cache (examples/hf-cache/hub, `HF_HUB_CACHE`). Measured:

- `lookup` alone (a hit and a miss), in process, median of 2,000 calls;
- one `check(argv=...)` in process, local vs hub ids, 200 pairs run back to back;
- one `python -m inkling_compat check -- ...` process, local vs hub ids, 21 pairs (the cost
  a command line pays: imports included);

the added cost is the median of the pairs' differences (the order alternating);
- for comparison, importing `huggingface_hub.file_download` (the library's own lookup), if
  installed, median of 5 fresh processes; and importing inputs/hf_cache.py itself, the one
  cost a process pays besides the lookup (median of 9).

The promise: a hub-cache lookup adds at most 20 ms to a check. Prints a table and
writes benchmarks/results/bench_hf_cache.json (date, machine, commit, load average).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_hf_cache.json"
HUB = str(ROOT / "examples" / "hf-cache" / "hub")
SERVE = ["--enable-lora", "--lora-backend", "triton", "--max-loras-per-batch", "4", "--max-lora-rank", "16",
         "--lora-target-modules", "gate_up_proj", "down_proj", "--experts-shared-outer-loras"]
LOCAL = ["python", "-m", "sglang.launch_server", "--model-path", "examples/model", *SERVE, "--lora-paths", "sql=examples/adapter"]
HUBIDS = ["python", "-m", "sglang.launch_server", "--model-path", "inkling-compat/inkling-mini", *SERVE,
          "--lora-paths", "sql=inkling-compat/inkling-mini-sql-lora"]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _median_time(fn, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _in_process() -> dict[str, float]:
    from inkling_compat import check
    from inkling_compat.inputs.hf_cache import lookup

    hit = _median_time(lambda: lookup("inkling-compat/inkling-mini", "config.json", HUB), 2000)
    miss = _median_time(lambda: lookup("meta-llama/Llama-3.1-8B-Instruct", "config.json", HUB), 2000)
    for words in (LOCAL, HUBIDS):  # warm: rule plans, caches
        report = check(argv=words)
        assert report.ok and not report.not_read, str(report)
    local, hub = _paired(lambda words: _timed(check, words), 200)
    return {"lookup_hit_ms": _ms(hit), "lookup_miss_ms": _ms(miss),
            "check_local_ms": _ms(statistics.median(local)), "check_hub_ms": _ms(statistics.median(hub)),
            "check_added_ms": _ms(statistics.median(h - lo for lo, h in zip(local, hub)))}


def _timed(fn, words: list[str]) -> float:
    start = time.perf_counter()
    fn(argv=words)
    return time.perf_counter() - start


def _paired(run, n: int) -> tuple[list[float], list[float]]:
    """n pairs (local, hub ids) run back to back, the order alternating: on a shared machine
    the median of the pairs' differences is steadier than a difference of medians."""
    local, hub = [], []
    for i in range(n):
        if i % 2:
            hub.append(run(HUBIDS))
            local.append(run(LOCAL))
        else:
            local.append(run(LOCAL))
            hub.append(run(HUBIDS))
    return local, hub


def _process(words: list[str]) -> float:
    """One fresh `inkling-compat check` process's wall time."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "inkling_compat", "check", "--", *words], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stdout + done.stderr
    return elapsed


def _processes() -> dict[str, float]:
    _process(LOCAL), _process(HUBIDS)  # warm the file cache
    local, hub = _paired(_process, 21)
    return {"process_local_ms": _ms(statistics.median(local)), "process_hub_ms": _ms(statistics.median(hub)),
            "process_added_ms": _ms(statistics.median(h - lo for lo, h in zip(local, hub)))}


def _module_import() -> float:
    """What a check process imports only for a hub id: inputs/hf_cache.py (its imports that
    the check does not already hold), after the rest of the checker is imported."""
    code = ("import inkling_compat.api, inkling_compat.inputs.read_by_sglang, time; t = time.perf_counter(); "
            "import inkling_compat.inputs.hf_cache; print(time.perf_counter() - t)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout) for _ in range(9)]
    return _ms(statistics.median(times))


def _library_import() -> float | None:
    code = "import time; t = time.perf_counter(); import huggingface_hub.file_download; print(time.perf_counter() - t)"
    times = []
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        times.append(float(done.stdout))
    return _ms(statistics.median(times))


def main() -> None:
    os.environ["HF_HUB_CACHE"] = HUB
    os.chdir(ROOT)
    figures = {**_in_process(), **_processes(), "hf_cache_import_ms": _module_import(), "huggingface_hub_file_download_import_ms": _library_import()}
    rows = [
        ("lookup, hit (in process)", figures["lookup_hit_ms"]),
        ("lookup, miss (in process)", figures["lookup_miss_ms"]),
        ("check(argv=...), local paths", figures["check_local_ms"]),
        ("check(argv=...), hub ids from the cache", figures["check_hub_ms"]),
        ("  added by the hub ids (median of pair differences)", figures["check_added_ms"]),
        ("inkling-compat check process, local paths", figures["process_local_ms"]),
        ("inkling-compat check process, hub ids", figures["process_hub_ms"]),
        ("  added by the hub ids (median of pair differences; target <= 20 ms)", figures["process_added_ms"]),
        ("import inkling_compat.inputs.hf_cache (a process's one-time cost)", figures["hf_cache_import_ms"]),
        ("import huggingface_hub.file_download (not used)", figures["huggingface_hub_file_download_import_ms"]),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'case':<{width}}  median ms")
    for name, value in rows:
        print(f"{name:<{width}}  {'-' if value is None else f'{value:9.3f}'}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    RESULTS.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "commit": commit,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
    }, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
