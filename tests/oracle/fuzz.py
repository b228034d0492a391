"""`make fuzz`: the differential properties at full size, spread over the machine's cores.

Runs the differential test files (tests/test_fidelity*.py: lora.py, server args, adapter
loader) in JOBS pytest processes at once; each runs every property with
EXAMPLES / JOBS examples and its own hypothesis seed (1..JOBS, so a run is reproducible),
counts disagreements instead of stopping at the first, and writes its counts to JSON. The
counts are then merged into one table (property, cases, agreements, disagreements), printed
and written to build/fuzz/summary.md together with the wall time of the whole run.

    python tests/oracle/fuzz.py [--examples 100000] [--jobs 2] [--out build/fuzz]

Exit status: 0 when every case agreed, 1 otherwise (or when a job failed).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from oracle import tally  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000, help="examples per property, over all jobs")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=str(ROOT / "build" / "fuzz"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("job*.json"):  # never merge the counts of an earlier run
        stale.unlink()
    per_job = [args.examples // args.jobs + (1 if i < args.examples % args.jobs else 0) for i in range(args.jobs)]
    start = time.perf_counter()
    procs = []
    for job, examples in enumerate(per_job, start=1):
        env = dict(
            os.environ,
            INKLING_COMPAT_FIDELITY_EXAMPLES=str(examples),
            INKLING_COMPAT_FIDELITY_COUNT="1",
            INKLING_COMPAT_FIDELITY_SEED=str(job),
            INKLING_COMPAT_FIDELITY_OUT=str(out / f"job{job}.json"),
        )
        log = open(out / f"job{job}.log", "w", encoding="utf-8")
        files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_fidelity*.py"))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
        procs.append((subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    codes = []
    for proc, log in procs:
        codes.append(proc.wait())
        log.close()
    wall = time.perf_counter() - start
    reports = [str(out / f"job{job}.json") for job in range(1, args.jobs + 1) if (out / f"job{job}.json").exists()]
    if not reports:
        print(f"no results: see {out}/job*.log", file=sys.stderr)
        return 1
    data = tally.merge(reports)
    text = tally.table(data)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    header = (
        f"make fuzz: {args.examples} examples per property (the newer ones a share: docs/fidelity.md) in {args.jobs} jobs, wall time {wall:.0f} s "
        f"({wall / 60:.1f} min), {stamp}, {platform.node()} ({os.cpu_count()} cores), python {platform.python_version()}"
    )
    print(header)
    print(text)
    (out / "summary.md").write_text(header + "\n\n" + text + "\n", encoding="utf-8")
    failed = [job for job, code in enumerate(codes, start=1) if code != 0]
    if failed:
        print(f"jobs {failed} failed: see {out}/job*.log", file=sys.stderr)
    disagreements = sum(p["disagreements"] for p in data["properties"].values())
    return 1 if failed or disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
