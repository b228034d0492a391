"""A deployment file against the same command given after `--`: what reading the file costs.

    python benchmarks/bench_deployment.py [--runs N]

Cases, each a fresh `python -m inkling_compat check` process (its CPU time, user + system from
wait4, and its wall clock; the median of N runs, the cases interleaved so that load on the machine
falls on all of them alike; the promise is judged on CPU time, which other processes' load on a
shared machine does not inflate):

* `--`: the example deployment's sglang command after `--` (what a check costs without a file);
* a 50-document Kubernetes stream (`helm template` output: the sglang Deployment among 49 other
  objects: Deployments of other containers, Services, ConfigMaps) holding that command;
* the same command in a docker-compose file and a SkyPilot task.

Also `read_deployment` in process (the reading alone, median of 200). The promise: a
50-document stream costs at most 50 ms more than the `--` command. Prints a table and writes
benchmarks/results/bench_deployment.json (date, machine, commit, load average).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_deployment.json"
ARGS = [
    "--model-path", "examples/model", "--host", "0.0.0.0", "--port", "30000", "--enable-lora", "--lora-backend", "triton",
    "--max-loras-per-batch", "4", "--max-lora-rank", "16", "--lora-target-modules", "gate_up_proj", "down_proj",
    "--experts-shared-outer-loras", "--lora-paths", "support=examples/adapter",
]
COMMAND = ["python3", "-m", "sglang.launch_server", *ARGS]


def _stream() -> str:
    def deployment(name: str, command: list[str]) -> str:
        return (
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels: {{app: {name}}}\nspec:\n  replicas: 1\n"
            f"  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n"
            f"      containers:\n      - name: {name}\n        image: registry.example/{name}:1.0\n        command: {json.dumps(command)}\n"
            f"        env:\n        - {{name: LOG_LEVEL, value: info}}\n        - name: TOKEN\n          valueFrom: {{secretKeyRef: {{name: s, key: k}}}}\n"
            f"        resources: {{limits: {{cpu: '1', memory: 1Gi}}}}\n        ports: [{{containerPort: 8080}}]\n"
        )

    docs = []
    for i in range(49):
        kind = i % 3
        if kind == 0:
            docs.append(deployment(f"app-{i}", ["/bin/server", "--port", "8080", "--workers", "4"]))
        elif kind == 1:
            docs.append(f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\nspec:\n  selector: {{app: app-{i}}}\n  ports: [{{port: 80, targetPort: 8080}}]\n")
        else:
            docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n" + "".join(f"  key{j}: value-{j}\n" for j in range(20)))
    docs.insert(25, deployment("sglang", COMMAND))
    return "---\n".join(docs)


def _compose() -> str:
    return "services:\n  sglang:\n    image: lmsysorg/sglang\n    entrypoint: python3 -m sglang.launch_server\n    command: " + " ".join(ARGS) + "\n"


def _skypilot() -> str:
    return "envs:\n  MODEL: examples/model\nresources: {accelerators: H200:1}\nrun: |\n  " + " ".join(COMMAND) + "\n"


def _time(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the process, from wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "inkling_compat", *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{args}: exit {code}: {process.stderr.read().decode().strip() if process.stderr else ''}")
    process.stderr.close() if process.stderr else None
    return elapsed, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    runs = int((argv or sys.argv[1:] or ["--runs", "15"])[-1])
    with tempfile.TemporaryDirectory() as tmp:
        files = {"stream": Path(tmp, "stream.yaml"), "compose": Path(tmp, "compose.yaml"), "skypilot": Path(tmp, "task.yaml")}
        files["stream"].write_text(_stream())
        files["compose"].write_text(_compose())
        files["skypilot"].write_text(_skypilot())
        cases = {
            "-- command": ["check", "--", *COMMAND],
            "Kubernetes stream, 50 documents": ["check", "--launch", str(files["stream"])],
            "docker-compose file": ["check", "--launch", str(files["compose"])],
            "SkyPilot task": ["check", "--launch", str(files["skypilot"])],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for name, args in cases.items():  # warm the file cache
            _time(args)
        for _ in range(runs):
            for name, args in cases.items():
                wall, used = _time(args)
                times[name].append(wall)
                cpu[name].append(used)
        sys.path.insert(0, str(ROOT))
        from inkling_compat.inputs.deployment import read_deployment

        read_deployment(str(files["stream"]))
        reads = []
        for _ in range(200):
            start = time.perf_counter()
            read_deployment(str(files["stream"]))
            reads.append(time.perf_counter() - start)
    base = statistics.median(times["-- command"])
    base_cpu = statistics.median(cpu["-- command"])
    rows = [
        {
            "case": name,
            "median_ms": round(statistics.median(t) * 1000, 1),
            "extra_ms": round((statistics.median(t) - base) * 1000, 1),
            "cpu_median_ms": round(statistics.median(cpu[name]) * 1000, 1),
            "cpu_extra_ms": round((statistics.median(cpu[name]) - base_cpu) * 1000, 1),
            "runs": len(t),
        }
        for name, t in times.items()
    ]
    read_ms = round(statistics.median(reads) * 1000, 2)
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  wall ms  vs --  CPU ms  vs --")
    for r in rows:
        print(f"{r['case']:<{width}}  {r['median_ms']:>7}  {r['extra_ms']:>+5}  {r['cpu_median_ms']:>6}  {r['cpu_extra_ms']:>+5}")
    print(f"read_deployment of the 50-document stream, in process: {read_ms} ms (median of 200)")
    stream = next(r for r in rows if r["case"].startswith("Kubernetes"))
    # CPU time is the figure compared: on a shared machine the wall clock carries other processes' load.
    verdict = "met" if stream["cpu_extra_ms"] <= 50 else "NOT met"
    print(f"promise: a 50-document stream costs at most 50 ms more than the -- command: {verdict} ({stream['cpu_extra_ms']:+} ms CPU, {stream['extra_ms']:+} ms wall)")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "commit": commit,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cases": rows,
        "read_deployment_stream_ms": read_ms,
        "promise_met": verdict == "met",
    }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
