"""Run hostile recipes and classify each outcome, in bounded worker processes.

Each case runs in-process (`check()` / `check_fleet()`, then the text and JSON renderings
encoded as the CLI writes them, and every few cases `cli.main` itself) inside a worker
process with an address-space limit; the parent gives each worker a range of case indices,
reads one JSON line per case, kills a worker that goes silent and starts the next one after
the case it was on. Outcome kinds:

  ok          a report without problems        warnings   a report with warnings only
  errors      a report with errors             input-error  InputError (exit 2)
  failure     anything else: an exception, exit 3, a mismatch between the CLI and the API,
              more than one stderr line, over the time or memory bound, a hang, a crash;
              `--fix` (every FIX_EVERY-th case and every `values` case, on a copy of the
              config) raising, writing a file the check refuses, or not idempotent

    python tests/hostile/runner.py --examples 100000 --jobs 2 --out build/fuzz-hostile

prints the summary (also written to OUT/summary.json and OUT/summary.md); exit 1 when a
failure is not one of `known.KNOWN`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform as _platform
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from hostile import cases  # noqa: E402

CPU_LIMIT_S = 2.0  # per case: CPU seconds of the check (wall time on 2 shared cores is noise)
FIX_CPU_LIMIT_S = 3 * CPU_LIMIT_S  # the --fix step, timed apart: it checks the config three times or more
_limit = [CPU_LIMIT_S]  # the bound of what runs now (the check, or the fix step)
# A hang is told from a slow case on a loaded machine (or a niced run) by the CPU it gets: from
# FIRST_LOOK_S of wall time on the case is looked at every LOOK_S; one that used less than
# BLOCKED_CPU_S of CPU since the last look (a blocking open uses none) is stopped, and so is one
# past CPU_LIMIT_S of CPU or WALL_CAP_S of wall time.
FIRST_LOOK_S = 2.0
LOOK_S = 1.0
BLOCKED_CPU_S = 0.001
WALL_CAP_S = 30.0
MEMORY_LIMIT_MB = 500  # per worker: peak RSS above the warmed-up worker's
ADDRESS_SPACE_MB = 1536  # RLIMIT_AS headroom above the warmed-up worker's size
CLI_EVERY = 7  # every 7th case also runs through cli.main (text, or JSON on odd cases)
FIX_EVERY = 3  # every 3rd case (and every `values` case) also runs --fix on a copy of its config
RESTART_OVER_MB = 100  # a worker whose peak grew this much is replaced (peak RSS never goes down)
SILENT_KILL_S = 40.0  # the parent kills a worker that writes nothing for this long


class CaseTimeout(BaseException):  # BaseException: no `except Exception` in the code under test swallows it
    pass


_case_start = [0.0, 0.0, 0.0]  # wall and CPU at the start of the running case, CPU at the last look


def _alarm(signum: int, frame: Any) -> None:
    now = _cpu()
    wall, cpu, since = time.perf_counter() - _case_start[0], now - _case_start[1], now - _case_start[2]
    _case_start[2] = now
    if cpu > _limit[0]:
        raise CaseTimeout(f"over {_limit[0]:g} s CPU ({wall:.1f} s wall)")
    if since < BLOCKED_CPU_S or wall > WALL_CAP_S:
        raise CaseTimeout(f"hang: {wall:.1f} s wall, {cpu:.3f} s CPU, {since:.4f} s since the last look")
    signal.setitimer(signal.ITIMER_REAL, LOOK_S)  # working, on a loaded machine: look again


def _frame(exc: BaseException) -> str:
    """The innermost frame of the package in the traceback: module:function:line."""
    where = ""
    for f in traceback.extract_tb(exc.__traceback__):
        if "inkling_compat" in f.filename:
            where = f"{f.filename.split('inkling_compat')[-1].lstrip('/')}:{f.name}:{f.lineno}"
    return where


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _utf8(text: str) -> None:
    text.encode("utf-8")  # what print() on the CLI's UTF-8 stdout does; surrogates raise here


def run_inprocess(inv: dict[str, Any]) -> dict[str, Any]:
    """One invocation through the API; the outcome's kind and detail."""
    from inkling_compat.api import check
    from inkling_compat.errors import InputError
    from inkling_compat.fleet import check_fleet
    from inkling_compat.report.text import render_by_adapter, render_text

    try:
        if inv["folders"]:
            report = check_fleet(inv["config"], inv["folders"], inv["adapters"], model=inv["model"], platform=inv["platform"])
            text = render_by_adapter(report)
        else:
            report = check(inv["config"], inv["adapters"] or None, model=inv["model"], platform=inv["platform"])
            text = render_text(report)
        _utf8(text)
        _utf8(json.dumps(report.to_dict(), indent=2))
    except InputError as exc:
        if inv["expect"] == "report":
            return {"kind": "failure", "detail": f"InputError where a report is promised: {_short(str(exc))}", "sig": "InputError:fleet", "where": _frame(exc)}
        try:
            _utf8(str(exc))
        except UnicodeEncodeError as enc:
            return {"kind": "failure", "detail": f"InputError text cannot be printed: {enc}", "sig": "UnicodeEncodeError:InputError", "where": _frame(exc)}
        return {"kind": "input-error", "detail": _short(str(exc))}
    except CaseTimeout:
        raise
    except BaseException as exc:  # noqa: BLE001 - classifying is the point
        where = _frame(exc)
        return {"kind": "failure", "detail": f"{type(exc).__name__}: {_short(str(exc))}", "sig": f"{type(exc).__name__}:{':'.join(where.split(':')[:2])}", "where": where}
    kind = "errors" if not report.ok else ("warnings" if report.problems else "ok")
    if kind == "ok" and inv.get("watched"):  # an unusable value of a field the rules read, and nothing said
        return {"kind": "failure", "detail": f"ok with no problem although {', '.join(inv['watched'])} is unusable", "sig": "silent-ok:" + ",".join(inv["watched"])}
    return {"kind": kind, "detail": ",".join(sorted({p.rule_id for p in report.problems}))[:300]}


def run_cli(inv: dict[str, Any], as_json: bool) -> tuple[int, str, str]:
    """`cli.main(argv)` with stdout and stderr as the CLI writes them (UTF-8, strict)."""
    from inkling_compat import cli

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(cases.cli_argv(inv, as_json))
    out.flush(), err.flush()
    return code, out.buffer.getvalue().decode("utf-8", "replace"), err.buffer.getvalue().decode("utf-8", "replace")


EXPECTED_CODE = {"ok": 0, "warnings": 0, "errors": 1, "input-error": 2}


def check_cli(inv: dict[str, Any], outcome: dict[str, Any], as_json: bool) -> dict[str, Any] | None:
    """A failure when the command's exit code, stderr or JSON disagree with the API's outcome."""
    code, out, err = run_cli(inv, as_json)
    want = EXPECTED_CODE.get(outcome["kind"])
    lines = err.strip("\n").split("\n") if err.strip() else []
    if code == 3:
        return {"kind": "failure", "detail": f"exit 3: {_short(err.strip())}", "sig": "exit3:" + err.split(":")[2].strip()[:40] if err.count(":") > 2 else "exit3"}
    if want is not None and code != want:
        return {"kind": "failure", "detail": f"cli exit {code}, the API's outcome is {outcome['kind']} (exit {want}): {_short(err)}", "sig": "cli-mismatch"}
    if len(lines) > 1 or (code == 2 and len(lines) != 1):
        return {"kind": "failure", "detail": f"exit {code} with {len(lines)} stderr lines: {_short(err)}", "sig": "stderr-lines"}
    if as_json:
        try:
            doc = json.loads(out)
        except ValueError:
            return {"kind": "failure", "detail": f"--format json printed no JSON document (exit {code}): {_short(out)}", "sig": "json-missing"}
        if not isinstance(doc, dict) or "ok" not in doc:
            return {"kind": "failure", "detail": "--format json document without 'ok'", "sig": "json-shape"}
    return None


def check_fix(inv: dict[str, Any]) -> dict[str, Any] | None:
    """`--fix --unsafe-fixes` on a copy of the case's server config: a failure when the fix
    raises anything but InputError, writes a file the check then refuses, or is not idempotent
    (a second --fix on its result changes the file again).

    apply_fixes checks the file it wrote (FixResult.report), so an InputError out of it after
    the copy changed is a written file the check refuses. When it wrote nothing, a second fix
    and a re-check would be its own first check of the same bytes again: they are not run."""
    from inkling_compat.errors import InputError
    from inkling_compat.fix import apply_fixes

    config = inv["config"]
    if not isinstance(config, str) or not os.path.isfile(config):
        return None
    copy = os.path.join(os.path.dirname(config), "fixed-copy" + (Path(config).suffix if Path(config).suffix.isascii() else ""))
    try:
        shutil.copyfile(config, copy)
        with open(copy, "rb") as handle:
            before = handle.read()
    except OSError:
        return None

    def run(source: Any) -> Any:
        from inkling_compat.api import check
        from inkling_compat.fleet import check_fleet

        if inv["folders"]:
            return check_fleet(source, inv["folders"], inv["adapters"], model=inv["model"], platform=inv["platform"])
        return check(source, inv["adapters"] or None, model=inv["model"], platform=inv["platform"])

    step = "fix"
    try:
        try:
            first = apply_fixes(copy, run=run, unsafe=True)
        except InputError as exc:
            if _changed(copy, before):
                return {"kind": "failure", "detail": f"--fix wrote a file the check refuses: {_short(str(exc))}", "sig": "fix-unusable"}
            return None
        if not first.written:
            return None
        step = "second fix"
        second = apply_fixes(copy, run=run, unsafe=True)
        if second.written:
            return {"kind": "failure", "detail": f"--fix is not idempotent: a second run changed the file again ({_short(second.diff)})", "sig": "fix-not-idempotent"}
    except InputError:
        return None
    except CaseTimeout:
        raise
    except BaseException as exc:  # noqa: BLE001 - classifying is the point
        where = _frame(exc)
        return {"kind": "failure", "detail": f"{step}: {type(exc).__name__}: {_short(str(exc))}", "sig": f"fix:{type(exc).__name__}:{':'.join(where.split(':')[:2])}", "where": where}
    return None


def _changed(path: str, before: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read() != before
    except OSError:
        return True


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def run_case(seed: int, index: int, work: Path) -> dict[str, Any]:
    """Materialize, run (API, and every CLI_EVERY-th case the CLI), time and measure one case."""
    r = cases.recipe(seed, index)
    directory = work / f"c{index}"
    result: dict[str, Any] = {"i": index, "family": r["family"], "setup": r["setup"]}
    try:
        inv = cases.materialize(r, directory)
        rss0, cpu0, t0 = _rss_mb(), _cpu(), time.perf_counter()
        _case_start[:] = [t0, cpu0, cpu0]
        signal.setitimer(signal.ITIMER_REAL, FIRST_LOOK_S)
        check_cpu: float | None = None  # the check's CPU (the --fix step after it is bounded apart)
        try:
            outcome = run_inprocess(inv)
            if index % CLI_EVERY == 0 and outcome["kind"] != "failure":
                outcome = check_cli(inv, outcome, as_json=index % 2 == 1) or outcome
            check_cpu = _cpu() - cpu0
            if (index % FIX_EVERY == 0 or r["family"] == "values") and outcome["kind"] != "failure":
                fix_cpu0 = _cpu()
                _case_start[:] = [time.perf_counter(), fix_cpu0, fix_cpu0]  # the fix step's own bound
                _limit[0] = FIX_CPU_LIMIT_S
                outcome = check_fix(inv) or outcome
        except CaseTimeout as exc:
            outcome = {"kind": "failure", "detail": str(exc), "sig": "timeout" if str(exc).startswith("hang") else "slow"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _limit[0] = CPU_LIMIT_S
        cpu, wall = (_cpu() - cpu0 if check_cpu is None else check_cpu), time.perf_counter() - t0
        result.update(outcome, cpu=round(cpu, 4), wall=round(wall, 4), rss=round(_rss_mb(), 1), rss_up=round(_rss_mb() - rss0, 1))
        if outcome["kind"] != "failure" and cpu > CPU_LIMIT_S:
            result.update(kind="failure", detail=f"{cpu:.2f} s CPU (limit {CPU_LIMIT_S:g} s); outcome {outcome['kind']}", sig="slow")
    finally:
        cases.undo_permissions(directory)
        shutil.rmtree(directory, ignore_errors=True)
    return result


# ---------------------------------------------------------------- the worker process


def _vm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) / 1024
    return 0.0


SHM = "/dev/shm"
SHM_ROOM = 1 << 30  # free bytes it must have: a case writes a few MB at most, and removes them


def _scratch_root() -> str | None:
    """Where a worker writes its cases: a memory file system (/dev/shm) where there is one with
    room, else the default temporary folder. A case makes and removes some ten files and
    folders; on a disk's file system (ext4 /tmp here) each make-write-remove cost ~1.1 ms of
    system CPU, on /dev/shm ~0.03 ms (cases 0-399: worker system CPU 0.9 s -> 0.37 s)."""
    try:
        room = os.statvfs(SHM)
    except OSError:
        return None
    return SHM if room.f_bavail * room.f_frsize >= SHM_ROOM and os.access(SHM, os.W_OK | os.X_OK) else None


def worker(seed: int, start: int, stop: int, scratch: str | None = None) -> int:
    """Run cases start..stop-1, one JSON line each on stdout ("start" lines before each)."""
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    work = Path(tempfile.mkdtemp(prefix="worker-", dir=scratch or _scratch_root()))
    from inkling_compat.api import check

    check(str(cases.EXAMPLES / "serve.yaml"), str(cases.EXAMPLES / "adapter"), model=str(cases.EXAMPLES / "config.json"))
    run_cli({"config": str(cases.EXAMPLES / "serve.yaml"), "model": None, "platform": None, "adapters": [], "folders": []}, False)
    base_rss = _rss_mb()
    limit = int((_vm_mb() + ADDRESS_SPACE_MB) * 2**20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    emit = sys.stdout
    emit.write(json.dumps({"ready": True, "base_rss": base_rss}) + "\n")
    emit.flush()
    try:
        for index in range(start, stop):
            emit.write(json.dumps({"start": index}) + "\n")
            emit.flush()
            try:
                result = run_case(seed, index, work)
            except MemoryError:
                result = {"i": index, "kind": "failure", "detail": "MemoryError (address-space limit)", "sig": "memory"}
            result["rss_over"] = round(result.get("rss", base_rss) - base_rss, 1)
            if result["kind"] != "failure" and result["rss_over"] > MEMORY_LIMIT_MB:
                result.update(kind="failure", detail=f"peak RSS {result['rss_over']:.0f} MB over the worker's start", sig="memory")
            emit.write(json.dumps(result) + "\n")
            emit.flush()
            if result["rss_over"] > RESTART_OVER_MB:
                return 99  # a fresh process for the rest: the next cases' memory is measured from a clean start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# ---------------------------------------------------------------- the parent


def run_cases(seed: int, indices: range, jobs: int = 2, on_result=None) -> list[dict[str, Any]]:
    """Every case of `indices`, over `jobs` worker processes; the results in index order."""
    chunks = _split(indices, jobs)
    # The workers' folders, removed at the end whatever became of them (a killed worker
    # cannot remove its own; on /dev/shm what is left stays in memory).
    scratch = tempfile.mkdtemp(prefix="hostile-", dir=_scratch_root())
    try:
        return _run_cases(seed, indices, jobs, on_result, chunks, scratch)
    finally:
        cases.undo_permissions(Path(scratch))
        shutil.rmtree(scratch, ignore_errors=True)


def _run_cases(seed: int, indices: range, jobs: int, on_result: Any, chunks: list[range], scratch: str) -> list[dict[str, Any]]:
    pending = [list(c) for c in chunks if len(c)]
    results: dict[int, dict[str, Any]] = {}
    running: list[dict[str, Any]] = []
    while pending or running:
        while pending and len(running) < jobs:
            todo = pending.pop(0)
            running.append(_spawn(seed, todo, scratch))
        ready, _, _ = select.select([w["proc"].stdout for w in running], [], [], 1.0)
        for w in list(running):
            if w["proc"].stdout in ready:
                line = w["proc"].stdout.readline()
                if line:
                    w["seen"] = time.monotonic()
                    msg = json.loads(line)
                    if "start" in msg:
                        w["current"] = msg["start"]
                    elif "i" in msg:
                        results[msg["i"]] = msg
                        w["current"] = None
                        if on_result:
                            on_result(msg)
                    continue
                code = w["proc"].wait()
                running.remove(w)
                _after_exit(w, code, results, pending, seed)
            elif time.monotonic() - w["seen"] > SILENT_KILL_S:
                w["proc"].kill()
                w["proc"].wait()
                running.remove(w)
                _after_exit(w, "killed (silent)", results, pending, seed)
    return [results[i] for i in indices if i in results]


def _split(indices: range, jobs: int) -> list[range]:
    n = len(indices)
    size = -(-n // max(1, jobs))
    return [indices[i : i + size] for i in range(0, n, size)] if n else []


def _spawn(seed: int, todo: list[int], scratch: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seed", str(seed), "--start", str(todo[0]), "--stop", str(todo[-1] + 1), "--scratch", scratch]
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=str(cases.ROOT))
    return {"proc": proc, "todo": todo, "current": None, "seen": time.monotonic()}


def _after_exit(w: dict[str, Any], code: Any, results: dict[int, dict[str, Any]], pending: list[list[int]], seed: int) -> None:
    current = w["current"]
    if current is not None and current not in results:  # the worker died on this case
        r = cases.recipe(seed, current)
        results[current] = {"i": current, "family": r["family"], "setup": r["setup"], "kind": "failure", "detail": f"worker ended ({code}) during the case", "sig": f"crash:{code}"}
    rest = [i for i in w["todo"] if i not in results and (current is None or i > current)]
    if rest:
        pending.append(rest)


def summarize(results: list[dict[str, Any]], seconds: float, seed: int, jobs: int) -> dict[str, Any]:
    from hostile import known

    kinds: dict[str, int] = {}
    by_family: dict[str, dict[str, int]] = {}
    failures = []
    for r in results:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        fam = by_family.setdefault(r["family"], {})
        fam[r["kind"]] = fam.get(r["kind"], 0) + 1
        if r["kind"] == "failure":
            r = dict(r, known=known.match(r, cases.recipe(seed, r["i"])))
            failures.append(r)
    return {
        "cases": len(results),
        "seconds": round(seconds, 1),
        "seed": seed,
        "jobs": jobs,
        "kinds": kinds,
        "by_family": by_family,
        "max_cpu_s": max((r.get("cpu", 0) for r in results), default=0),
        "max_wall_s": max((r.get("wall", 0) for r in results), default=0),
        "peak_rss_mb": max((r.get("rss", 0) for r in results), default=0),
        "peak_rss_passing_mb": max((r.get("rss", 0) for r in results if r["kind"] != "failure"), default=0),
        "max_rss_over_passing_mb": max((r.get("rss_over", 0) for r in results if r["kind"] != "failure"), default=0),
        "max_rss_over_mb": max((r.get("rss_over", 0) for r in results), default=0),
        "failures": failures,
        "unknown_failures": [f for f in failures if not f["known"]],
        "python": sys.version.split()[0],
        "machine": f"{_platform.machine()} {os.cpu_count()} cpus",
    }


def markdown(s: dict[str, Any]) -> str:
    rows = [f"cases {s['cases']} in {s['seconds']} s ({s['jobs']} workers, seed {s['seed']}); "
            f"max per case {s['max_cpu_s']:.2f} s CPU, {s['max_wall_s']:.2f} s wall; peak worker RSS {s['peak_rss_passing_mb']:.0f} MB "
            f"(+{s['max_rss_over_passing_mb']:.0f} MB over the worker's start) over the passing cases, {s['peak_rss_mb']:.0f} MB over all", "",
            "| family | ok | warnings | errors | input-error | failure |", "|---|---|---|---|---|---|"]
    for fam in sorted(s["by_family"]):
        c = s["by_family"][fam]
        rows.append(f"| {fam} | " + " | ".join(str(c.get(k, 0)) for k in ("ok", "warnings", "errors", "input-error", "failure")) + " |")
    k = s["kinds"]
    rows.append("| **all** | " + " | ".join(str(k.get(x, 0)) for x in ("ok", "warnings", "errors", "input-error", "failure")) + " |")
    sigs: dict[str, list[dict[str, Any]]] = {}
    for f in s["failures"]:
        sigs.setdefault(f"{f['known'] or 'UNKNOWN'} | {f.get('sig', '')}", []).append(f)
    if sigs:
        rows += ["", "| known finding | signature | cases | first case: detail |", "|---|---|---|---|"]
        for key, fs in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
            kn, sig = key.split(" | ", 1)
            rows.append(f"| {kn} | `{sig}` | {len(fs)} | {fs[0]['i']}: {fs[0]['detail'][:160].replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(cases.ROOT / "build" / "fuzz-hostile"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=0)
    parser.add_argument("--scratch", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.seed, args.start, args.stop, args.scratch)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done: list[dict[str, Any]] = []

    def progress(result: dict[str, Any]) -> None:  # a partial summary now and then, for long runs
        done.append(result)
        if len(done) % 2000 == 0:
            partial = summarize(sorted(done, key=lambda r: r["i"]), time.perf_counter() - t0, args.seed, args.jobs)
            (out / "partial.md").write_text(markdown(partial))
            (out / "partial.json").write_text(json.dumps(partial, indent=1))

    results = run_cases(args.seed, range(args.examples), args.jobs, on_result=progress)
    s = summarize(results, time.perf_counter() - t0, args.seed, args.jobs)
    (out / "summary.json").write_text(json.dumps(s, indent=1))
    (out / "summary.md").write_text(markdown(s))
    print(markdown(s))
    return 1 if s["unknown_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
