"""The shared sink run tensor-parallel on torch.distributed: one process per TP rank, each with
its own slice of the base weights and adapters, the partial outputs all-reduced and compared
with the unsharded layer's float64 reference.

    from inkling_compat.runtime.tp import TPSpec, launch
    result = launch(TPSpec(tp=2, config="serve.yaml", model="config.json", adapters=("adapter/",)))
    result.ok, result.max_relative_error, result.ranks

`spec.py` (what a run is and reports), `world.py` (check the world, start the ranks, end the
world on a failure or the deadline), `rank.py` (one rank's shard, forward and all-reduce; rank
0's comparison). `inkling-compat run --tp N` is the command line (`runtime/run_cli.py`); under
`torchrun` the same command runs as one rank of torchrun's world.
"""

from inkling_compat.runtime.tp.spec import Fault, RankTimes, TPResult, TPSpec
from inkling_compat.runtime.tp.world import TPRefused, TPWorldFailed, check_world, launch, world_config

__all__ = ["Fault", "RankTimes", "TPResult", "TPSpec", "TPRefused", "TPWorldFailed", "check_world", "launch", "world_config"]
