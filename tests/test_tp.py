"""The tensor-parallel runtime (`inkling_compat.runtime.tp`): the shards the checker accepts add
up to the unsharded layer.

On the CPU every rank is a process running Triton's interpreter over gloo, at small shapes
(2 CPU cores in CI): TP 2 through the command line on the bundled PEFT example and TP 4 through
the Python API agree with the unsharded float64 reference within 1e-2; a shard cut for the wrong
rank makes the sum differ (the comparison can fail); one rank's slice that does not fit is
refused by the checker before any process starts, naming that rank; a rank that raises or hangs
ends the world with one line within seconds. On one GPU: TP 2 as two processes sharing it over
gloo with CUDA tensors (skipped without CUDA).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from inkling_compat import cli  # noqa: E402
from inkling_compat.api import check, evaluate  # noqa: E402
from inkling_compat.runtime.load import build_pool, load, random_layer_weights  # noqa: E402
from inkling_compat.runtime.tp import Fault, TPRefused, TPSpec, TPWorldFailed, launch  # noqa: E402
from inkling_compat.runtime.tp import world as tp_world  # noqa: E402
from inkling_compat.runtime.tp.rank import choose_backend  # noqa: E402
from inkling_compat.testing.strategies import SinkSetup, peft_manifest  # noqa: E402

EXAMPLE = ("--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter")
# Small: per-expert outer factors on the V2 sink (contiguous gate/up), I = 64 cut 4 or 2 ways.
SMALL = SinkSetup(n=2, hidden=64, intermediate=64, tp=1, slots=2, rank=4, shared_outer=False, sink_class="v2")


def small_spec(tp: int, **kwargs) -> TPSpec:
    base = {"tp": tp, "config": SMALL.config(), "model": SMALL.model(), "adapters": (SMALL.adapter(SMALL_POOL[tp]),),
            "tokens": 8, "timeout_s": 240.0}
    return TPSpec(**{**base, **kwargs})


# The pool manifest states one rank's buffer shapes: F = I / tp.
SMALL_POOL = {tp: replace(SMALL, tp=tp).pool_shapes() for tp in (1, 2, 4)}


# --- one truth: the ranks' slices are cuts of one layer ---------------------------------------


@pytest.mark.parametrize("tp", [2, 4])
def test_the_ranks_pools_and_weights_are_cuts_of_the_unsharded_layer(tp):
    """No processes: rank p's pool (random adapters of a pool manifest) and base weights are the
    unsharded layer's, cut by the checker's slicing: gate/up B rows [pF, (p+1)F) and
    [I + pF, I + (p+1)F), down A columns [pF, (p+1)F), the outer factors replicated."""
    checked = evaluate(world_config_for(tp), SMALL.adapter(SMALL_POOL[tp]), model=SMALL.model())
    assert checked.report.ok, str(checked.report)
    whole = build_pool(checked, unsharded=True, seed=3).pool
    I = SMALL.intermediate
    F = I // tp
    layer = random_layer_weights(build_pool(checked, unsharded=True, seed=3).geometry, 3)
    for p in range(tp):
        part = build_pool(checked, tp_rank=p, seed=3).pool
        cols = slice(p * F, (p + 1) * F)
        assert torch.equal(part.gate_up_a, whole.gate_up_a) and torch.equal(part.down_b, whole.down_b)
        assert torch.equal(part.gate_up_b[:, :, :F], whole.gate_up_b[:, :, cols])
        assert torch.equal(part.gate_up_b[:, :, F:], whole.gate_up_b[:, :, I + p * F:I + (p + 1) * F])
        assert torch.equal(part.down_a, whole.down_a[..., cols])
        # (no device="cpu" here: on a GPU machine that would turn this pytest process's Triton into the interpreter)
        sink = load(world_config_for(tp), SMALL.model(), [SMALL.adapter(SMALL_POOL[tp])], dtype="float32", seed=3, tp_rank=p)
        assert torch.equal(sink.w2.cpu(), layer["w2"][:, :, cols])
        w13 = layer["w13"][:, 2 * p * F:2 * (p + 1) * F]  # interleaved checkpoint rows of these columns
        assert torch.equal(sink.w13.cpu(), torch.cat((w13[:, 0::2], w13[:, 1::2]), dim=1))  # V2: de-interleaved


def world_config_for(tp: int) -> dict:
    return tp_world.world_config(SMALL.config(), tp)


# --- the world agrees with the unsharded layer ------------------------------------------------


def test_cli_tp2_on_the_bundled_peft_example_agrees_with_the_unsharded_reference():
    result = subprocess.run(
        [sys.executable, "-m", "inkling_compat.cli", "run", "--tp", "2", "--device", "cpu", *EXAMPLE, "--tokens", "8", "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["ok"] and doc["tp"] == 2 and doc["backend"] == "gloo"
    assert doc["max_relative_error"] <= 1e-2 and doc["norm_relative_error"] <= 1e-2
    assert [r["columns"] for r in doc["ranks"]] == [[0, 384], [384, 768]]  # I = 768 cut in two
    assert doc["lora_share"] > 0.01  # the adapter's delta is part of what was compared
    assert "F=384 (TP rank 0/2)" in doc["sink"]


def test_tp4_agrees_with_the_unsharded_reference():
    result = launch(small_spec(4))
    assert result.ok, result
    assert result.max_relative_error <= 1e-2 and result.norm_relative_error <= 1e-2
    assert [r.columns for r in result.ranks] == [(0, 16), (16, 32), (32, 48), (48, 64)]
    assert result.lora_share > 0.3  # a large part of the output is the LoRA delta
    assert all(r.forward_s > 0 and r.allreduce_s > 0 for r in result.ranks)


def test_a_mis_sliced_shard_makes_the_sum_differ():
    """Rank 1 loads the adapters' slice cut for rank 0 (its own base weights): every shape fits,
    the kernels run, and the sum is not the layer's."""
    result = launch(small_spec(2, fault=Fault("mis-slice", 1)))
    assert not result.ok
    assert result.max_relative_error > 0.1, result.max_relative_error  # ten times the tolerance
    assert result.fault == Fault("mis-slice", 1)


# --- refused before a process starts ----------------------------------------------------------


def _uneven_down_a() -> dict:
    """Expert 1's down A is 56 wide, not I = 64: at tp 4 (F = 16) ranks 0-2 cut their 16 columns,
    rank 3's cut [48, 64) is clamped to 8 columns, which the pool slot copy refuses."""
    manifest = peft_manifest(SMALL, 2, layout="numbered", layers=(0,))
    name = next(k for k in manifest["tensors"] if ".1.down_proj.lora_A" in k)
    manifest["tensors"][name] = {"shape": [2, 56]}
    return manifest


def test_one_ranks_slice_that_does_not_fit_is_refused_before_any_process_starts(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a rank process was started for a world the checker rejects")

    monkeypatch.setattr(tp_world.subprocess, "Popen", no_process)
    manifest = _uneven_down_a()
    with pytest.raises(TPRefused) as caught:
        launch(TPSpec(tp=4, config=SMALL.config(), model=SMALL.model(), adapters=(manifest,)))
    exc = caught.value
    expected = check({**SMALL.config(), "tp_size": 4}, manifest, model=SMALL.model()).first
    assert str(exc) == expected.message == "LoRA buffer shape torch.Size([2, 16]) does not match weight shape torch.Size([2, 8])."
    assert exc.rule_id == "adapter-pool-shape-mismatch"
    assert exc.ranks == (3,) and exc.concerns == "TP rank 3 of 4"


def test_the_command_line_prints_the_refusal_and_the_rank(tmp_path, capsys):
    path = tmp_path / "adapter.json"
    path.write_text(json.dumps(_uneven_down_a()))
    config, model = tmp_path / "serve.json", tmp_path / "config.json"
    config.write_text(json.dumps(SMALL.config()))
    model.write_text(json.dumps(SMALL.model()))
    code = cli.main(["run", "--tp", "4", "--device", "cpu", "--config", str(config), "--model", str(model), "--adapter", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "AssertionError: LoRA buffer shape torch.Size([2, 16]) does not match weight shape torch.Size([2, 8])." in out
    assert "it concerns TP rank 3 of 4; no process was started" in out


def test_a_problem_of_every_rank_is_refused_for_the_world(capsys):
    """The example at tp 8: 12 attention heads do not split 8 ways (sglang asserts it)."""
    assert cli.main(["run", "--tp", "8", "--device", "cpu", *EXAMPLE, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["refused"] and doc["tp"] == 8 and doc["ranks"] == list(range(8))
    assert doc["report"]["first"]["rule_id"] == "inkling-attn-heads-divisible-by-tp"


def test_a_config_stating_another_tp_size_is_an_input_error(tmp_path, capsys):
    config = tmp_path / "serve.yaml"
    config.write_text("enable_lora: true\ntp_size: 4\n")
    assert cli.main(["run", "--tp", "2", "--device", "cpu", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"inkling-compat: error: {config}: tp_size: 4, but the run has 2 TP ranks (--tp 2): say tp_size: 2 or leave it out"
    assert cli.main(["run", "--tp", "2", "--tp-rank", "1", "--device", "cpu", *EXAMPLE]) == 2
    assert "--tp-rank runs one rank's shard on its own" in capsys.readouterr().err


# --- a failing rank ends the world ------------------------------------------------------------


def test_a_rank_that_raises_ends_the_world_within_seconds():
    with pytest.raises(TPWorldFailed) as caught:
        launch(small_spec(2, fault=Fault("raise", 1)))
    ended = time.time()
    exc = caught.value
    # (rank 0, waiting in a collective, has either seen the connection drop and exited, or is killed)
    assert str(exc).startswith("TP rank 1 of 2 failed: RuntimeError: injected fault: rank 1 raises before its forward")
    assert "\n" not in str(exc)
    assert exc.rank == 1 and exc.failed_at is not None
    assert ended - exc.failed_at < 5.0, ended - exc.failed_at  # the other rank did not wait for its timeout


def test_a_rank_that_hangs_makes_the_others_time_out():
    """Rank 1 never takes part: rank 0's first collective gives up after 3 s and the launcher
    kills rank 1 (the world's own deadline, 240 s here, is not what ends it)."""
    start = time.monotonic()
    with pytest.raises(TPWorldFailed) as caught:
        launch(small_spec(2, fault=Fault("hang", 1), collective_timeout_s=3.0))
    exc = caught.value
    assert exc.rank == 0 and exc.killed == [1]
    assert str(exc).startswith("TP rank 0 of 2 failed: CollectiveTimeout: barrier on rank 0 did not complete within 3 s")
    assert str(exc).endswith("; killed rank(s) 1") and "\n" not in str(exc)
    assert time.monotonic() - start < 120


def test_the_worlds_deadline_kills_every_rank():
    """Nothing times out inside the world (collectives may wait 1000 s): the launcher's deadline
    (6 s after the start) ends it and kills both ranks, wherever they are by then."""
    start = time.monotonic()
    with pytest.raises(TPWorldFailed) as caught:
        launch(small_spec(2, fault=Fault("hang", 1), timeout_s=6.0, collective_timeout_s=1000.0))
    assert str(caught.value) == "the TP world of 2 ranks did not finish within 6 s; killed rank(s) 0, 1"
    assert caught.value.rank is None and caught.value.killed == [0, 1]
    assert time.monotonic() - start < 30


# --- backend choice ----------------------------------------------------------------------------


def test_backend_choice():
    assert choose_backend("cpu", 4, 2, 4, 0) == ("cpu", "gloo", False)
    assert choose_backend("cuda", 2, 1, 2, 1) == ("cuda:0", "gloo", True)  # one GPU, two ranks: gloo with CUDA tensors
    assert choose_backend("cuda", 8, 5, 8, 8) == ("cuda:5", "nccl", False)  # a GPU per rank
    assert choose_backend("cuda", 4, 3, 4, 2) == ("cuda:1", "gloo", True)
    assert choose_backend("cuda", 2, 1, 2, 2, "gloo") == ("cuda:1", "gloo", False)
    with pytest.raises(Exception, match="nccl needs a GPU per rank"):
        choose_backend("cuda", 2, 1, 2, 1, "nccl")
    with pytest.raises(Exception, match="CUDA is not available"):
        choose_backend("cuda", 2, 0, 2, 0)


# --- one GPU -----------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_tp2_as_two_processes_sharing_one_gpu_over_gloo():
    """The bundled example at TP 2 on the GPU: with one GPU both ranks live on it and talk over
    gloo with CUDA tensors (NCCL refuses two ranks on one device); with two or more, NCCL."""
    result = launch(TPSpec(tp=2, config="examples/serve.yaml", model="examples/config.json", adapters=("examples/adapter",),
                           device="cuda", tokens=64, repeat=5, timeout_s=300.0))
    assert result.ok, result
    assert result.mode == "compiled Triton" and result.device == "cuda"
    if torch.cuda.device_count() == 1:
        assert result.backend == "gloo" and result.shared_devices
        assert [r.device for r in result.ranks] == ["cuda:0", "cuda:0"]
    else:
        assert result.backend == "nccl" and not result.shared_devices
    assert all(r.end_to_end_s is not None and r.end_to_end_s > 0 for r in result.ranks)
