"""One rank of a tensor-parallel shared-sink run on torch.distributed.

Every rank builds only its own shard with `runtime.load(..., tp_rank=rank)`: its slice of the
base weights (the loader's cut of the layer's checkpoint tensors) and of each adapter (the
checker's slicing plans, `sglang/slicing.py` through `pool_builder`), with ``tp_size`` = the
world size. It runs the Triton forward and all-reduces the partial outputs of the down
projection (the row-parallel sum sglang's shared-expert MLP ends with). Rank 0 then compares the
sum with the float64 reference of the unsharded layer (`kernels/reference.py` on the whole
layer's weights and pool: `load.random_layer_weights`, `load.build_pool(unsharded=True)`) and
gathers every rank's timings.

Backend: gloo on the CPU (Triton's interpreter); on CUDA, NCCL when every rank has a GPU of its
own, else gloo with CUDA tensors (NCCL refuses two ranks on one device). The rendezvous is bounded
by ``spec.timeout_s``, each collective by ``spec.collective_timeout_s``: a rank that never
arrives makes the others raise, never wait for ever.

Started by the launcher (`tp/world.py`): ``python -m inkling_compat.runtime.tp.rank SPEC``, with
torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and ``INKLING_TP_INIT``
(the rendezvous) and ``INKLING_TP_DIR`` (where rank 0 leaves its result and a failing rank its
one-line error) in the environment. Under ``torchrun`` the run command calls `run_rank` itself.
"""

from __future__ import annotations

import json
import os
import pickle
import statistics
import sys
import time
import traceback
from datetime import timedelta
from typing import Any

from inkling_compat.runtime.tp.spec import RESULT_FILE, RankTimes, TPResult, TPSpec, error_file

class CollectiveTimeout(RuntimeError):
    """A collective did not complete in time: some rank never took part."""


def choose_backend(device: str, world: int, local_rank: int, local_world: int, cuda_count: int, requested: str | None = None) -> tuple[str, str, bool]:
    """(torch device, backend, ranks share a GPU) for one rank. See the module doc."""
    from inkling_compat.runtime.load import RuntimeInputError

    if requested not in (None, "gloo", "nccl"):
        raise RuntimeInputError("<backend>", "backend", f"{requested!r}: gloo or nccl")
    if device == "cpu":
        if requested == "nccl":
            raise RuntimeInputError("<backend>", "backend", "nccl needs CUDA devices (use gloo on the CPU)")
        return "cpu", "gloo", False
    if cuda_count < 1:
        raise RuntimeInputError("<device>", "device", "CUDA is not available on this machine (use --device cpu)")
    shared = cuda_count < local_world
    if shared and requested == "nccl":
        raise RuntimeInputError("<backend>", "backend", f"nccl needs a GPU per rank: {local_world} ranks, {cuda_count} GPU(s) (gloo shares them)")
    backend = requested or ("gloo" if shared else "nccl")
    return f"cuda:{local_rank % cuda_count}", backend, shared


def _median(values: list[float], default: float | None) -> float | None:
    return statistics.median(values) if values else default


class _Group:
    """The world's collectives, each bounded by ``bound_s``: a peer that failed or never takes
    part makes this rank raise `CollectiveTimeout`, never wait for ever."""

    def __init__(self, dist: Any, rank: int, bound_s: float):
        self.dist, self.rank, self.bound = dist, rank, timedelta(seconds=bound_s)

    def _wait(self, name: str, work: Any) -> None:
        try:
            work.wait(timeout=self.bound)
        except Exception as exc:
            text = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            raise CollectiveTimeout(f"{name} on rank {self.rank} did not complete within {self.bound.total_seconds():g} s "
                                    f"(another rank failed or never took part): {text}") from None

    def barrier(self) -> None:
        self._wait("barrier", self.dist.barrier(async_op=True))

    def all_reduce(self, t: Any) -> Any:
        self._wait("all_reduce", self.dist.all_reduce(t, async_op=True))
        return t

    def all_gather(self, t: Any, world: int) -> list[Any]:
        out = [t.new_empty(t.shape) for _ in range(world)]
        self._wait("all_gather", self.dist.all_gather(out, t, async_op=True))
        return out


def _shard(spec: TPSpec, rank: int, world: int, device: str) -> Any:
    """This rank's SharedSink: only its slice of the weights and adapters (`load(tp_rank=rank)`,
    whose check of the world runs again here: its inputs and facts are what it builds from)."""
    from inkling_compat.runtime.load import build_pool, load
    from inkling_compat.runtime.tp.world import world_config

    sink = load(
        world_config(spec.config, world), spec.model, list(spec.adapters) or None, platform=spec.platform,
        device=device, dtype=spec.dtype, seed=spec.seed, tp_rank=rank, layer=spec.layer, sglang_version=spec.sglang_version,
    )
    fault = spec.fault
    if fault is not None and fault.rank == rank and fault.kind == "mis-slice" and sink.pool is not None:
        wrong = build_pool(sink.checked, tp_rank=(rank + 1) % world, layer=sink.layer, seed=spec.seed).pool
        sink = sink.with_pool(wrong)  # the adapters' slice of the next rank, this rank's base weights
    return sink


def _timed_forward(sink: Any, inputs: tuple[Any, Any, Any], group: _Group, sync: Any, repeat: int) -> tuple[Any, list[float]]:
    """(the all-reduced output of the first call, [first forward, forward, all-reduce,
    forward + all-reduce] in seconds: medians of ``repeat`` timed calls, else the first call;
    NaN for the last without repetitions). Barriers before each timed step so that a step's time
    is its own, not the wait for the slowest rank (the last one has none before the all-reduce)."""
    x, gammas, slots = inputs

    def timed(fn: Any) -> tuple[Any, float]:
        sync()
        t0 = time.perf_counter()
        value = fn()
        sync()
        return value, time.perf_counter() - t0

    group.barrier()
    out, first_s = timed(lambda: sink.forward(x, gammas, slots))
    group.barrier()
    out, first_ar = timed(lambda: group.all_reduce(out))
    fwd, ars, e2e = [], [], []
    for _ in range(repeat):
        group.barrier()
        part, t = timed(lambda: sink.forward(x, gammas, slots, validate=False))
        fwd.append(t)
        group.barrier()
        ars.append(timed(lambda: group.all_reduce(part))[1])
        group.barrier()
        e2e.append(timed(lambda: group.all_reduce(sink.forward(x, gammas, slots, validate=False)))[1])
    return out, [first_s, _median(fwd, first_s), _median(ars, first_ar), _median(e2e, float("nan"))]


def run_rank(spec: TPSpec, rank: int, world: int, init_method: str, local_rank: int | None = None, local_world: int | None = None) -> TPResult | None:
    """This rank's part of the run; rank 0 returns the result, the others None."""
    if spec.device == "cpu" and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (load does it too)
    import torch
    import torch.distributed as dist

    local_rank = rank if local_rank is None else local_rank
    device, backend, shared = choose_backend(
        spec.device, world, local_rank, local_world or world, torch.cuda.device_count() if spec.device != "cpu" else 0, spec.backend)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))  # Triton launches on the current device
    sink = _shard(spec, rank, world, device)  # before the rendezvous, which then waits only for the slowest start
    inputs = sink.random_inputs(spec.tokens, seed=spec.seed)  # the same batch on every rank
    fault = spec.fault if spec.fault is not None and spec.fault.rank == rank else None

    # No try/finally around the world: on a failure this rank's connections close only when its
    # process exits, after main() has left its one-line error, so the launcher names this rank
    # and not a peer that only saw the connection drop.
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world, timeout=timedelta(seconds=spec.timeout_s))
    if fault is not None and fault.kind == "raise":
        raise RuntimeError(f"injected fault: rank {rank} raises before its forward")
    if fault is not None and fault.kind == "hang":
        time.sleep(10 * (spec.timeout_s + (spec.collective_timeout_s or 0)))
    group = _Group(dist, rank, spec.collective_timeout_s or spec.timeout_s)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    out, times = _timed_forward(sink, inputs, group, sync, spec.repeat)
    geo, index = sink.geometry, torch.device(device).index
    mine = torch.tensor([-1 if index is None else index, *times, geo.tp_rank * geo.f_local, (geo.tp_rank + 1) * geo.f_local],
                        dtype=torch.float64, device=torch.device(device) if backend == "nccl" else torch.device("cpu"))
    gathered = group.all_gather(mine, world)
    result = _report(spec, sink, out, *inputs, gathered, device, backend, shared, world) if rank == 0 else None
    group.barrier()
    dist.destroy_process_group()
    return result


def _report(spec: TPSpec, sink: Any, out: Any, x: Any, gammas: Any, slots: Any, gathered: list[Any], device: str,
            backend: str, shared: bool, world: int) -> TPResult:
    """Rank 0: the all-reduced output against the unsharded layer's float64 reference."""
    import torch

    from inkling_compat.kernels._triton import INTERPRET
    from inkling_compat.kernels.reference import accuracy, needs_storage_reference, relative_error, sink_forward_reference
    from inkling_compat.runtime.load import build_pool, random_layer_weights

    t0 = time.perf_counter()
    whole = build_pool(sink.checked, unsharded=True, layer=sink.layer, seed=spec.seed)
    layer = random_layer_weights(whole.geometry, spec.seed)  # checkpoint (interleaved) order
    w13, w2 = layer["w13"].to(sink.device, sink.dtype), layer["w2"].to(sink.device, sink.dtype)
    pool = whole.pool.to(sink.device, sink.dtype) if (whole.pool is not None and sink.lora_attached) else None

    def reference(with_lora: bool, storage: Any = None) -> Any:
        return sink_forward_reference(
            x, gammas, w13, w2, interleaved=True, pool=pool.buffers() if (pool is not None and with_lora) else None,
            slot_ids=slots if (pool is not None and with_lora) else None, dtype=torch.float64, storage=storage)

    ref = reference(True)
    reference_s = time.perf_counter() - t0
    # The unsharded layer's storage roundings. Each rank also rounds its partial output before
    # the all-reduce, which this reference does not; on a well-posed output the two stay far
    # under 1e-2 (2.7e-3 on the bundled example).
    stored = reference(True, storage=sink.dtype) if needs_storage_reference(sink.dtype) else None
    acc = accuracy(out, ref, stored)
    max_err, norm_err = acc.max_relative_error, acc.norm_relative_error
    lora_share = relative_error(reference(False), ref) if pool is not None else 0.0
    counts: dict[str, int] = {}
    for s in slots.tolist():
        counts[str(s)] = counts.get(str(s), 0) + 1
    ranks = []
    for r, row in enumerate(gathered):
        index, first, fwd, ar, e2e, c0, c1 = row.tolist()
        ranks.append(RankTimes(rank=r, device="cpu" if index < 0 else f"cuda:{int(index)}", columns=(int(c0), int(c1)), forward_first_s=first,
                               forward_s=fwd, allreduce_s=ar, end_to_end_s=None if e2e != e2e else e2e))
    return TPResult(
        tp=world, backend=backend, device=device.split(":")[0], mode="Triton interpreter" if INTERPRET else "compiled Triton",
        dtype=str(sink.dtype).replace("torch.", ""), sink=sink.describe(), notes=tuple(sink.notes), tokens=spec.tokens,
        slots=dict(sorted(counts.items(), key=lambda kv: int(kv[0]))), ranks=tuple(ranks), max_relative_error=max_err,
        norm_relative_error=norm_err, lora_share=lora_share, reference_s=reference_s, repeats=spec.repeat,
        shared_devices=shared, fault=spec.fault, storage_max_error=acc.storage_max_error,
        storage_norm_error=acc.storage_norm_error,
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:400] if first else type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """A rank started by the launcher: run, leave the result (rank 0) or a one-line error."""
    argv = sys.argv[1:] if argv is None else argv
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    directory = os.environ["INKLING_TP_DIR"]
    try:
        with open(argv[0], "rb") as handle:
            spec = pickle.load(handle)  # written by our own launcher (world.launch)
        result = run_rank(spec, rank, world, os.environ["INKLING_TP_INIT"],
                          int(os.environ.get("LOCAL_RANK", rank)), int(os.environ.get("LOCAL_WORLD_SIZE", world)))
        if result is not None:
            path = os.path.join(directory, RESULT_FILE)
            with open(path + ".tmp", "wb") as handle:
                pickle.dump(result, handle)
            os.replace(path + ".tmp", path)  # the launcher never reads half a result
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure becomes the one line the launcher prints
        from inkling_compat.errors import InputError
        from inkling_compat.runtime.load import RuntimeRefused

        record: dict[str, Any] = {"rank": rank, "time": time.time(), "message": _one_line(exc)}
        if isinstance(exc, InputError):
            record["input_error"] = {"file": exc.file, "field": exc.field, "reason": exc.reason}
        path = error_file(directory, rank)
        with open(path + ".tmp", "w") as handle:
            json.dump(record, handle)
        os.replace(path + ".tmp", path)  # whole, before this process's exit closes its connections
        if not isinstance(exc, (InputError, RuntimeRefused)):
            traceback.print_exc()  # into this rank's log, for whoever debugs it
        return 2 if isinstance(exc, InputError) else 1 if isinstance(exc, RuntimeRefused) else 3


def exit_now(code: int) -> None:
    """Leave without the interpreter's teardown: after a failure the process group may still
    hold a collective that waits for a dead peer, and its destructor would wait with it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
