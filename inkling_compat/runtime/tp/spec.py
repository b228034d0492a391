"""What a tensor-parallel run is asked to do and what it reports.

Plain data, no torch: the launcher (`tp/world.py`) pickles a `TPSpec` for its rank processes,
each rank (`tp/rank.py`) reads it, and rank 0 hands a `TPResult` back (a pickle in the world's
temporary folder, or printed itself when `torchrun` started the world).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, Literal

from inkling_compat.kernels.accuracy import TOLERANCE  # as `inkling-compat run` (plain numbers, no torch)

FaultKind = Literal["raise", "hang", "mis-slice"]

# Where rank 0 leaves its result and each rank its one-line failure, in the world's folder.
RESULT_FILE = "result.pkl"


def error_file(directory: str, rank: int) -> str:
    return os.path.join(directory, f"rank{rank}.error.json")


@dataclass(frozen=True)
class Fault:
    """A test hook, never set by the command line: `rank` raises before the forward ("raise"),
    sleeps past every timeout ("hang"), or loads the LoRA slice cut for rank ``rank + 1``
    while keeping its own base-weight slice ("mis-slice"), so the all-reduced sum is not the
    layer's (proof that the comparison can fail)."""

    kind: FaultKind
    rank: int


@dataclass(frozen=True)
class TPSpec:
    """One TP run: the inputs `check()` takes, the world size and how to run it.

    ``config`` is the server config as given (path, dict or model); every rank and the launcher
    read it with ``tp_size`` set to ``tp`` (`world.world_config`). ``device`` "cpu" runs every
    rank in Triton's interpreter (gloo); "cuda" gives each rank its own GPU (NCCL) when there
    are enough, else the ranks share the GPUs round-robin and talk over gloo with CUDA tensors.
    ``timeout_s`` bounds the rendezvous (``init_process_group``) and, unless
    ``collective_timeout_s`` is given, every collective; the launcher kills the world when it is
    not done ``timeout_s`` after its ranks were started.
    """

    tp: int
    config: Any
    model: Any = None
    adapters: tuple[Any, ...] = ()
    platform: Any = None
    device: str = "cpu"
    dtype: str = "bfloat16"
    seed: int = 0
    tokens: int = 16
    repeat: int = 0
    layer: int | None = None
    sglang_version: str | None = None
    timeout_s: float = 300.0
    collective_timeout_s: float | None = None  # each collective's bound; None: timeout_s
    backend: str | None = None  # None: chosen per device (see rank.choose_backend)
    fault: Fault | None = None


@dataclass(frozen=True)
class RankTimes:
    """One rank's shard and timings (seconds; medians over the timed repetitions, else the
    first call). ``forward_s``: its Triton forward alone; ``allreduce_s``: the all-reduce of
    the partial outputs after a barrier (communication only); ``end_to_end_s``: forward plus
    all-reduce without the barrier, so it includes waiting for the slowest rank."""

    rank: int
    device: str
    columns: tuple[int, int]  # the intermediate columns [start, stop) of each expert this rank holds
    forward_first_s: float
    forward_s: float
    allreduce_s: float
    end_to_end_s: float | None  # None without timed repetitions


@dataclass(frozen=True)
class TPResult:
    """What rank 0 reports: the all-reduced output against the unsharded float64 reference."""

    tp: int
    backend: str
    device: str
    mode: str  # "Triton interpreter" | "compiled Triton"
    dtype: str
    sink: str  # rank 0's SharedSink.describe()
    notes: tuple[str, ...]
    tokens: int
    slots: dict[str, int]  # tokens per slot (-1: no adapter)
    ranks: tuple[RankTimes, ...]
    max_relative_error: float  # max|out - ref| / max|ref|
    norm_relative_error: float  # ||out - ref|| / ||ref||
    lora_share: float  # ||ref - base|| / ||ref|| (0 without LoRA)
    reference_s: float
    repeats: int
    shared_devices: bool  # several ranks on one GPU (gloo with CUDA tensors)
    fault: Fault | None = None
    tolerance: float = TOLERANCE
    # The same two errors of the storage-rounded unsharded reference (0 for float32): the bound
    # is judged against them (kernels/reference.py: Accuracy).
    storage_max_error: float = 0.0
    storage_norm_error: float = 0.0

    @property
    def accuracy(self) -> Any:
        from inkling_compat.kernels.accuracy import Accuracy  # plain numbers, no torch

        return Accuracy(self.max_relative_error, self.norm_relative_error, self.storage_max_error,
                        self.storage_norm_error, self.tolerance)

    @property
    def ok(self) -> bool:
        return self.accuracy.ok

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["max_bound"], data["norm_bound"] = self.accuracy.max_bound, self.accuracy.norm_bound
        data["ranks"] = [asdict(r) for r in self.ranks]
        return data
