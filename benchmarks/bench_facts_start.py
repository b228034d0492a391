"""The facts' share of a launch check's start: what `check --launch examples/launch.sh` spends on
the facts and the sglang replays, per installed venv, in fresh processes.

    python benchmarks/bench_facts_start.py --runs 21 /tmp/wv /tmp/wv_mine

For each venv (one with the package installed, e.g. by /work/wt/tools/wheel_venv.sh), `--runs`
processes, the venvs alternating run by run, each running the check in-process from the
repository root (the examples' paths) and measuring, with the wall clock:

* imports: the self time (its own imports subtracted) of importing facts/, sglang/,
  inputs/adapter_dir.py and inputs/hf_cache.py, and of the standard modules only they bring
  into a launch check (hashlib and OpenSSL's _hashlib, _sha1, struct, weakref);
* derive_work: the fast evaluator's `derive`, its imports subtracted;
* load_inputs_work: `load_inputs` (the inputs' reading, the adapter directory's included), its
  imports subtracted (most of it is inputs/'s, so it is shown, not counted in the share);
* share: imports + derive_work.

Prints each figure's median and best per venv, and the modules' medians; writes the runs
(benchmarks/results/bench_facts_start.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One process's measure (run by the venv's interpreter, cwd the repository root).
PROBE = r"""
import contextlib, io, json, re, sys, time
import importlib._bootstrap as bootstrap
load = bootstrap._find_and_load
stack, own = [], {}
def timed(name, import_):
    start = time.perf_counter(); stack.append(0.0)
    try:
        return load(name, import_)
    finally:
        spent = time.perf_counter() - start; inner = stack.pop()
        own[name] = own.get(name, 0.0) + spent - inner
        if stack:
            stack[-1] += spent
bootstrap._find_and_load = timed
from inkling_compat.cli import main
import inkling_compat.engine.evaluate as evaluate
import inkling_compat.engine.evaluator as evaluator
work = {}
def wrap(owner, name, key):
    function = getattr(owner, name)
    def timed_call(*args, **kwargs):
        imported = sum(own.values()); start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            work[key] = work.get(key, 0.0) + time.perf_counter() - start - (sum(own.values()) - imported)
    setattr(owner, name, timed_call)
wrap(type(evaluator.FAST), "derive", "derive_work")
wrap(evaluate, "load_inputs", "load_inputs_work")
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["check", "--launch", "examples/launch.sh"])
ours = re.compile(r"^inkling_compat\.(facts|sglang|inputs\.(adapter_dir|hf_cache))($|\.)|^(hashlib|_hashlib|_sha1|struct|_struct|weakref|_weakrefset)$")
modules = {name: t * 1e3 for name, t in own.items() if ours.search(name)}
out = {"code": code, "imports": sum(modules.values()), "derive_work": work.get("derive_work", 0.0) * 1e3,
       "load_inputs_work": work.get("load_inputs_work", 0.0) * 1e3, "modules": modules}
out["share"] = out["imports"] + out["derive_work"]
print(json.dumps(out))
"""

FIGURES = ("share", "imports", "derive_work", "load_inputs_work")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venvs", nargs="+", help="venvs with inkling-compat installed")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "bench_facts_start.json")
    args = parser.parse_args(argv)
    runs: dict[str, list[dict]] = {venv: [] for venv in args.venvs}
    for _ in range(args.runs):
        for venv in args.venvs:
            # (-I: the venv's package, not the repository's, though the cwd is the repository root)
            done = subprocess.run([f"{venv}/bin/python", "-I", "-c", PROBE], cwd=ROOT, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 3
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if result["code"] not in (0, 1):
                print(f"{venv}: the check exited {result['code']}", file=sys.stderr)
                return 3
            runs[venv].append(result)
    width = max(len(v) for v in args.venvs)
    print(f"ms, median (best) of {args.runs} runs each, the venvs alternating")
    print(" " * width + "".join(f"{name:>22}" for name in FIGURES))
    for venv in args.venvs:
        print(venv.ljust(width) + "".join(f"{statistics.median(r[k] for r in runs[venv]):14.2f} ({min(r[k] for r in runs[venv]):5.2f})" for k in FIGURES))
    for venv in args.venvs:
        names = {name for r in runs[venv] for name in r["modules"]}
        medians = {name: statistics.median(r["modules"].get(name, 0.0) for r in runs[venv]) for name in names}
        print(f"{venv}: " + " ".join(f"{name.removeprefix('inkling_compat.')}={ms:.2f}" for name, ms in sorted(medians.items(), key=lambda kv: -kv[1])))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    rounded = {venv: [{k: (round(v, 3) if isinstance(v, float) else {m: round(t, 3) for m, t in v.items()} if isinstance(v, dict) else v) for k, v in r.items()} for r in rs] for venv, rs in runs.items()}
    args.output.write_text(json.dumps({"runs": rounded}, separators=(",", ":")) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
