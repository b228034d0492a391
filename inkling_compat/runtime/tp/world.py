"""The launcher of a tensor-parallel run: check the whole TP world, start one process per rank,
and end the world when a rank fails or the deadline passes.

``launch(spec)``:

1. `check_world`: one `check()` of the inputs with ``tp_size`` = the world size. The checker
   replays every TP rank (the slice and copy replays of `sglang/load_to_buffer` run for each
   rank), so one check covers the world; anything it rejects is refused here, before a process
   starts (`TPRefused`: sglang's message, and the rank it concerns when it is one rank's slice);
2. one ``python -m inkling_compat.runtime.tp.rank`` per rank, with torchrun's variables (RANK,
   WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and a file:// rendezvous in a fresh temporary
   folder (no port to race for), each in a session of its own with its output in a log file;
3. the launcher polls the ranks: the first that exits non-zero ends the world (the others are
   killed at once) with its one-line error (`TPWorldFailed`); so does the deadline
   (``spec.timeout_s`` after the start); otherwise rank 0's `TPResult` is returned.

Needs neither torch nor triton itself (the ranks do).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inkling_compat.errors import InputError
from inkling_compat.runtime.load import RuntimeRefused
from inkling_compat.runtime.tp.spec import RESULT_FILE, TPResult, TPSpec, error_file

MAX_TP = 64  # a sanity bound on processes started from one command line


class TPRefused(RuntimeRefused):
    """The checker rejects the TP world: ``str(exc)`` is sglang's message, ``exc.ranks`` the TP
    ranks it concerns (all of them unless it is one rank's slice of an adapter)."""

    def __init__(self, report: Any, tp: int, ranks: tuple[int, ...]):
        super().__init__(report)
        self.tp = tp
        self.ranks = ranks

    @property
    def concerns(self) -> str:
        if len(self.ranks) == self.tp:
            return f"every TP rank (tp_size {self.tp})"
        return ", ".join(f"TP rank {r}" for r in self.ranks) + f" of {self.tp}"


class TPWorldFailed(Exception):
    """A rank failed (an exception, a signal) or the world ran past its deadline. ``str(exc)`` is
    one line; ``exc.rank`` the rank that failed first (None for the deadline), ``exc.killed`` the
    ranks still running that were killed, ``exc.input_error`` the rank's InputError fields when
    that was the failure (the command exits 2 then), ``exc.failed_at`` when the rank recorded
    its failure (``time.time()``; None when it left no record)."""

    def __init__(self, message: str, *, rank: int | None, killed: list[int], input_error: dict[str, str] | None = None,
                 failed_at: float | None = None):
        super().__init__(message)
        self.rank = rank
        self.killed = killed
        self.input_error = input_error
        self.failed_at = failed_at


def world_config(config: Any, tp: int) -> Any:
    """The server config with ``tp_size`` = ``tp``. A config that states another TP size > 1 is
    an input error (the world size decides; ``tp_size: 1``, the default, is overridden)."""
    from inkling_compat.inputs.loading import load_server_config, read_document
    from inkling_compat.inputs.models import ServerConfig

    if isinstance(config, ServerConfig):
        stated, file, data = config.tp_size, "<config>", None
    else:
        server, _ = load_server_config(config)  # unusable input names its file and field here
        data = read_document(config) if isinstance(config, (str, Path)) else dict(config or {})
        stated, file = server.tp_size, str(config) if isinstance(config, (str, Path)) else "<config>"
    if stated not in (1, tp):
        raise InputError(file, "tp_size", f"{stated}, but the run has {tp} TP ranks (--tp {tp}): say tp_size: {tp} or leave it out")
    if data is None:
        return config.model_copy(update={"tp_size": tp})
    return {**data, "tp_size": tp}


def ranks_concerned(checked: Any, problem: Any, tp: int) -> tuple[int, ...]:
    """The TP ranks a problem is about: the rank whose slice of an adapter does not fit the pool
    (the copy replay records it, `facts.adapters[i].pool_fit.tp_rank`), else every rank (the
    config, the model and an adapter's own shapes are the same on every rank)."""
    index = getattr(problem, "adapter_index", None)
    adapters = getattr(checked.facts, "adapters", None) or []
    if problem.stage == "pool_load" and index is not None and 0 <= index < len(adapters):
        fit = getattr(adapters[index], "pool_fit", None)
        if fit is not None and fit.tp_rank is not None:
            return (fit.tp_rank,)
    return tuple(range(tp))


def check_world(spec: TPSpec) -> Any:
    """One check of the whole world (see the module doc); `TPRefused` on errors."""
    from inkling_compat.api import evaluate

    if not 1 <= spec.tp <= MAX_TP:
        raise InputError("(command line)", "--tp", f"{spec.tp}: the TP size must be in [1, {MAX_TP}]")
    kwargs: dict[str, Any] = {"model": spec.model, "platform": spec.platform}
    if spec.sglang_version is not None:
        kwargs["sglang_version"] = spec.sglang_version
    checked = evaluate(world_config(spec.config, spec.tp), list(spec.adapters) or None, **kwargs)
    if not checked.report.ok:
        raise TPRefused(checked.report, spec.tp, ranks_concerned(checked, checked.report.headline, spec.tp))
    return checked


def _kill(proc: subprocess.Popen) -> None:
    """The rank's own session (it was started with start_new_session), so nothing it started lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
        pass


def _failure(directory: str, rank: int, code: int, killed: bool) -> dict[str, Any] | None:
    """The rank's own one-line record, else what its exit says (a signal, its log's last line);
    None for a rank that succeeded or that the launcher killed before it recorded anything."""
    try:
        with open(error_file(directory, rank)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        pass
    if killed or code == 0:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        message = f"killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
    else:
        message = f"exited with status {code}"
        try:
            lines = Path(directory, f"rank{rank}.log").read_text(errors="replace").strip().splitlines()
            if lines:
                message += f": {lines[-1][:300]}"
        except OSError:
            pass
    return {"rank": rank, "time": float("inf"), "message": message}


def launch(spec: TPSpec, *, poll_s: float = 0.05) -> TPResult:
    """Check the world, run it, return rank 0's result (see the module doc)."""

    check_world(spec)
    directory = tempfile.mkdtemp(prefix="inkling-tp-")
    procs: dict[int, subprocess.Popen] = {}
    logs = []
    try:
        spec_path = os.path.join(directory, "spec.pkl")
        with open(spec_path, "wb") as handle:
            pickle.dump(spec, handle)
        for rank in range(spec.tp):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(spec.tp), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(spec.tp), INKLING_TP_INIT=f"file://{directory}/rendezvous",
                       INKLING_TP_DIR=directory)
            if spec.device == "cpu":
                env["TRITON_INTERPRET"] = "1"
            else:  # compiled kernels, whatever this process was set to (a test session may interpret)
                env.pop("TRITON_INTERPRET", None)
            log = open(os.path.join(directory, f"rank{rank}.log"), "wb")
            logs.append(log)
            procs[rank] = subprocess.Popen(
                [sys.executable, "-m", "inkling_compat.runtime.tp.rank", spec_path],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + spec.timeout_s
        while True:
            codes = {rank: proc.poll() for rank, proc in procs.items()}
            failed = [rank for rank, code in codes.items() if code not in (None, 0)]
            if failed or all(code == 0 for code in codes.values()) or time.monotonic() > deadline:
                break
            time.sleep(poll_s)
        running = [rank for rank, proc in procs.items() if proc.poll() is None]
        for rank in running:
            _kill(procs[rank])
        if failed:
            # The rank that failed first (others may have failed after it, waiting for it).
            records = [rec for rec in (_failure(directory, rank, procs[rank].returncode, rank in running) for rank in procs) if rec]
            first = min(records, key=lambda rec: (rec["time"], rec["rank"]))
            killed = f"; killed rank(s) {', '.join(map(str, running))}" if running else ""
            raise TPWorldFailed(f"TP rank {first['rank']} of {spec.tp} failed: {first['message']}{killed}",
                                rank=first["rank"], killed=running, input_error=first.get("input_error"),
                                failed_at=first["time"] if first["time"] != float("inf") else None)
        if running:
            raise TPWorldFailed(f"the TP world of {spec.tp} ranks did not finish within {spec.timeout_s:g} s; "
                                f"killed rank(s) {', '.join(map(str, running))}", rank=None, killed=running)
        try:
            with open(os.path.join(directory, RESULT_FILE), "rb") as handle:
                return pickle.load(handle)
        except OSError:
            raise TPWorldFailed(f"TP rank 0 of {spec.tp} exited without a result", rank=0, killed=[]) from None
    finally:
        for proc in procs.values():
            _kill(proc)
        for log in logs:
            log.close()
        shutil.rmtree(directory, ignore_errors=True)
