"""Values that pass sglang 0.5.23's own checks and then fail or misbehave, each with what
sglang does (read from its source) and a reproducer that failed before its rule or fact existed:

- F10 config.json `n_routed_experts: 0` with MoE layers: sglang builds FusedMoE(num_experts=0)
  and routes over zero experts (inkling-moe-no-routed-experts).
- M0  `max_lora_rank: 0`: init_lora_shapes keeps any value that is not None (lora_manager.py
  l.893), so it is a rank-0 pool, not "not given" (adapter-incompatible-with-pool, the pool replay).
- P1  a --lora-paths entry with `"pinned": "false"`: LoRARef does not check the type and
  `int(lora_ref.pinned)` (lora_manager.py l.319) fails start-up (lora-paths-pinned-not-int).
- R50 `r: 10**50` sizes a pool nobody can allocate (lora-pool-too-large), not a shape mismatch;
  `lora_alpha: 1e300` makes the scaling an infinity in float32 (adapter-scaling-not-finite).
- I64 ints past 64 bits reach messages as written, not as CEL doubles (`rank 1e+50`).
- PC  sglang decides "pinned" by truthiness but counts `int(lora_ref.pinned)` (lora_manager.py
  l.319, l.378): `"pinned": 2` counts twice, `"pinned": "0"` is pinned but counts zero
  (adapter-pin-all-slots, facts.fleet.pin_refusal).
- M0b `max_lora_rank: 0` with a start-up adapter is one report: the replayed assertion, not also
  the derived prediction of it.
- I64b a safetensors header may hold u64 dimensions; torch sizes are int64, so a dimension past
  2**63 - 1 is refused naming the file and the tensor; the copy replay's shapes are texts.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from hostile import runner
from inkling_compat import check
from inkling_compat.api import evaluate
from inkling_compat.errors import InputError
from inkling_compat.inputs.adapter_dir import read_adapter_dir
from adapter_fixtures import SERVE

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODEL = json.loads((EXAMPLES / "config.json").read_text())
CONFIG = json.loads((EXAMPLES / "adapter" / "adapter_config.json").read_text())
TENSORS = {k: {"shape": list(v.shape), "dtype": v.dtype} for k, v in read_adapter_dir(str(EXAMPLES / "adapter")).tensors.root.items()}
# A float's text in a message: what an int past 64 bits became in CEL.
FLOAT_TEXT = re.compile(r"\d\.?\d*e[+-]\d+")


def manifest(name: str = "ad", tensors: dict[str, Any] | None = None, **config: Any) -> dict[str, Any]:
    """examples/adapter as a PEFT manifest, with adapter_config.json keys replaced."""
    return {"name": name, "adapter_config": dict(CONFIG, **config), "tensors": TENSORS if tensors is None else tensors}


def by_rule(report: Any) -> dict[str, Any]:
    return {p.rule_id: p for p in report.problems}


# --- F10 ---------------------------------------------------------------------------------


def test_f10_fuzz_reproducer_is_no_longer_a_silent_ok() -> None:
    """The fuzz case that found it (seed 1, case 30628 of the generator with the `values` family;
    12185 before it): config.json n_routed_experts 0."""
    (result,) = runner.run_cases(1, range(30628, 30629), jobs=1)
    assert result["kind"] != "failure", result
    assert "inkling-moe-no-routed-experts" in result["detail"]


def test_f10_moe_layers_without_routed_experts() -> None:
    report = check(SERVE, str(EXAMPLES / "adapter"), model=dict(MODEL, n_routed_experts=0))
    problem = by_rule(report)["inkling-moe-no-routed-experts"]
    assert not report.ok and (problem.origin, problem.severity, problem.stage) == ("derived", "runtime", "first_forward")
    assert problem.message.startswith("config.json has n_routed_experts 0 but layers 0 to 15 are MoE layers")
    assert "model.n_routed_experts" in problem.field_paths


def test_f10_an_all_dense_model_and_no_model_are_not_reported() -> None:
    """dense_mlp_idx = num_hidden_layers: no InklingMoE is built. Without --model the
    placeholder model (n_routed_experts 0 by InklingModelConfig's default) is not checked."""
    dense = check(SERVE, str(EXAMPLES / "adapter"), model=dict(MODEL, n_routed_experts=0, dense_mlp_idx=MODEL["num_hidden_layers"]))
    assert "inkling-moe-no-routed-experts" not in by_rule(dense)
    assert "inkling-moe-no-routed-experts" not in by_rule(check(SERVE, str(EXAMPLES / "adapter")))


# --- M0 ----------------------------------------------------------------------------------


def test_m0_max_lora_rank_zero_is_a_rank_zero_pool() -> None:
    """init_lora_shapes keeps --max-lora-rank 0 (`is not None`): the pool has rank 0, so a
    run-time adapter of rank 8 does not fit it although the start-up adapter has rank 16, and
    the start-up adapter's factors do not fit their rank-0 slot."""
    config = dict(SERVE, max_lora_rank=0, lora_paths=["boot"])
    checked = evaluate(config, [manifest("boot", r=16, tensors={}), manifest("late", r=8, tensors={})], model=MODEL)
    assert checked.facts.pool is not None and checked.facts.pool.rank == 0
    problems = [(p.rule_id, p.adapter) for p in checked.report.problems]
    assert ("adapter-incompatible-with-pool", "late") in problems
    assert ("adapter-incompatible-with-pool", "boot") not in problems  # start-up adapters are not admitted by can_support

    startup = check(dict(SERVE, max_lora_rank=0, lora_paths=["ad"]), manifest("ad"), model=MODEL)
    mismatch = by_rule(startup)["adapter-pool-shape-mismatch"]
    assert mismatch.message == "LoRA buffer shape torch.Size([0, 1536]) does not match weight shape torch.Size([2, 1536])."


# --- P1 ----------------------------------------------------------------------------------


def _pythons_int_error(value: Any) -> str:
    try:
        int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        return str(exc)
    raise AssertionError(f"int({value!r}) converts")


@pytest.mark.parametrize("pinned", ["false", "true", "yes", None, [], {}, float("nan"), float("inf")])
def test_p1_pinned_that_int_refuses_fails_start_up(pinned: Any) -> None:
    """LoRARef(pinned=...) keeps the value (a msgspec.Struct's init checks no type); after the
    adapter loaded, `self.num_pinned_loras += int(lora_ref.pinned)` raises and init_lora_adapters
    raises RuntimeError("Failed to load LoRA adapter a: " + int()'s message)."""
    config = dict(SERVE, lora_paths=["ok=/adapters/ok", {"lora_name": "a", "lora_path": "/adapters/a", "pinned": pinned}])
    report = check(config, None, model=MODEL)
    problem = by_rule(report)["lora-paths-pinned-not-int"]
    assert (problem.origin, problem.error_class) == ("sglang", "RuntimeError")
    assert problem.message == f"Failed to load LoRA adapter a: {_pythons_int_error(pinned)}"
    assert report.first is problem


def test_p1_the_string_false_counts_as_pinned() -> None:
    """validate_new_adapter tests the truthiness: "false" is pinned (lora_manager.py l.341, l.378)."""
    checked = evaluate(dict(SERVE, lora_paths=[{"lora_name": "a", "lora_path": "/a", "pinned": "false"}]), None, model=MODEL)
    (entry,) = checked.facts.lora_paths
    assert entry.pinned is True
    assert checked.facts.pinned_int_failure.model_dump() == {"name": "a", "error": "invalid literal for int() with base 10: 'false'"}


@pytest.mark.parametrize("pinned", [True, False, 1, 0, "1", " 0 ", 1.5])
def test_p1_pinned_that_int_converts_is_no_problem(pinned: Any) -> None:
    config = dict(SERVE, lora_paths=[{"lora_name": "a", "lora_path": "/adapters/a", "pinned": pinned}])
    assert "lora-paths-pinned-not-int" not in by_rule(check(config, None, model=MODEL))


def test_p1_from_a_yaml_file_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inkling_compat import cli

    serve = tmp_path / "serve.yaml"
    serve.write_text((EXAMPLES / "serve.yaml").read_text() + 'lora_paths:\n  - {lora_name: a, lora_path: /adapters/a, pinned: "false"}\n')
    code = cli.main(["check", "--config", str(serve), "--model", str(EXAMPLES / "config.json"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["first"]["message"] == "Failed to load LoRA adapter a: invalid literal for int() with base 10: 'false'"


# --- PC: what sglang counts as pinned -----------------------------------------------------

PIN_MESSAGE = (
    "Failed to load LoRA adapter {name} as a pinned adapter. It is not allowed to pin all slots in the LoRA memory pool to avoid "
    "starvation for unpinned adapters and base models. Please increase your `--max-loras-per-batch` or load it as unpinned LoRA adapters."
)


def _entries(*pinned: Any) -> list[dict[str, Any]]:
    return [{"lora_name": f"p{i}", "lora_path": f"/a/{i}", "pinned": value} for i, value in enumerate(pinned)]


def _pin_refusal(report: Any) -> str | None:
    problem = by_rule(report).get("adapter-pin-all-slots")
    return None if problem is None else problem.message


@pytest.mark.parametrize(
    ("pinned", "refused"),
    [
        ((2, True, True), "p2"),  # int(2) counts twice: p2 finds 3 of 4 slots pinned
        ((True, 2), None),  # p1 finds one pinned (the check is before its own count)
        (("2", True, True), "p2"),  # int("2") is 2
        ((2.9, True, True), "p2"),  # int(2.9) is 2
        (("0", True, True, True), None),  # "0" is pinned (checked) but counts zero
        ((True, True, "1", "0"), "p3"),  # "0" is checked as pinned: three counted before it
        ((True, True, True, False), None),  # false: not checked, counts zero
        ((-1, True, True, True), None),  # int(-1) takes one off: p3 finds two
        ((True, True, True, True), "p3"),
    ],
)
def test_pc_start_up_pins_count_int_of_pinned(pinned: tuple[Any, ...], refused: str | None) -> None:
    """validate_new_adapter tests the truthiness of `pinned` (l.378); _load_lora_adapter adds
    `int(lora_ref.pinned)` after the load (l.319)."""
    report = check(dict(SERVE, lora_paths=_entries(*pinned)), None, model=MODEL)
    expected = None if refused is None else f"Failed to load LoRA adapter {refused}: " + PIN_MESSAGE.format(name=refused)
    assert _pin_refusal(report) == expected


def test_pc_the_replay_of_the_counter() -> None:
    from inkling_compat.facts.fleet import startup_pin_stop
    from inkling_compat.facts.inputs import lora_path_entries
    from inkling_compat.inputs.models import ServerConfig

    entries = lora_path_entries(ServerConfig(lora_paths=_entries(2, "0", True, "false")))
    assert [e.pinned_count for e in entries] == [2, 0, 1, None]
    assert [e.pinned for e in entries] == [True, True, True, True]
    # 2 + 0 + 1 counted: the fourth ("false", pinned by truthiness) finds 3 >= 4 - 1 and is refused
    # before its int() is reached; with 5 slots it loads and its int() raises.
    assert startup_pin_stop(entries, 4) == ("refused", 3)
    assert startup_pin_stop(entries, 5) == ("int", 3)
    assert startup_pin_stop(entries[:3], 5) is None


def test_pc_a_refused_pin_is_reported_once_not_also_its_int_failure() -> None:
    """An entry refused by the pin check never reaches `int(lora_ref.pinned)`: start-up stops at
    the ValueError, so lora-paths-pinned-not-int is not reported for it (it was, beside it)."""
    report = check(dict(SERVE, lora_paths=_entries(True, True, True, "false")), None, model=MODEL)
    problems = by_rule(report)
    assert "lora-paths-pinned-not-int" not in problems
    assert report.first is problems["adapter-pin-all-slots"]
    assert report.first.message == "Failed to load LoRA adapter p3: " + PIN_MESSAGE.format(name="p3")
    five = check(dict(SERVE, max_loras_per_batch=5, lora_paths=_entries(True, True, True, "false")), None, model=MODEL)
    assert "adapter-pin-all-slots" not in by_rule(five)
    assert by_rule(five)["lora-paths-pinned-not-int"].message == "Failed to load LoRA adapter p3: invalid literal for int() with base 10: 'false'"


def test_pc_run_time_pins_count_after_the_start_up_count() -> None:
    """A start-up "pinned": 2 leaves one pinned run-time load in four slots (each adds int(True)):
    the second one is refused, without the start-up prefix."""
    config = dict(SERVE, lora_paths=_entries(2))
    late = [dict(manifest(name), pinned=True) for name in ("r1", "r2")]
    report = check(config, [manifest("p0"), *late], model=MODEL)
    assert _pin_refusal(report) == PIN_MESSAGE.format(name="r2")
    assert _pin_refusal(check(dict(SERVE, lora_paths=_entries(True)), [manifest("p0"), *late], model=MODEL)) is None


# --- R50 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "error_class"), [(10**50, "TypeError"), (2**30, "RuntimeError")])
def test_r50_a_huge_start_up_rank_fails_allocating_the_pool(r: int, error_class: str) -> None:
    """Without --max-lora-rank the pool's rank is the start-up adapters' largest r; torch.zeros
    of the buffers fails (TypeError past int64, else a storage overflow or OutOfMemoryError):
    start-up stops there, no adapter is copied (no shape-mismatch report)."""
    report = check(dict(SERVE, max_lora_rank=None, lora_paths=["ad"]), manifest(r=r), model=MODEL)
    problems = by_rule(report)
    problem = problems["lora-pool-too-large"]
    assert (problem.origin, problem.error_class, problem.stage) == ("derived", error_class, "lora_modules")
    assert problem.message.startswith(f"The LoRA memory pool's rank is {r} (the largest r of the --lora-paths adapters)")
    assert "adapter-pool-shape-mismatch" not in problems
    assert not FLOAT_TEXT.search(problem.message)


def test_r50_the_torch_errors_the_rule_names() -> None:
    """The classes come from torch: a size past int64 cannot be parsed, a storage past 2**63
    bytes overflows (meta tensors: nothing is allocated)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="Overflow when unpacking long"):
        torch.zeros((4, 2, 10**50, 1536), dtype=torch.bfloat16, device="meta")
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        torch.zeros((4, 2, 2**62, 1536), dtype=torch.bfloat16, device="meta")


def test_r50_a_pool_of_real_size_is_no_problem() -> None:
    report = check(dict(SERVE, max_lora_rank=None, lora_paths=["ad"]), manifest(r=1024), model=MODEL)
    assert "lora-pool-too-large" not in by_rule(report)


@pytest.mark.parametrize(("alpha", "r"), [(1e300, 1), (3.5e38, 1), (10**60, 10**20)])
def test_r50_a_scaling_float32_cannot_hold(alpha: float, r: int) -> None:
    """lora_alpha / r is finite for Python but not for float32: bf16 lora_B * scaling is
    computed in float32 (mem_pool.py l.1307-1361), the backends' scalings are float32."""
    with pytest.raises(OverflowError):
        struct.pack("<f", alpha / r)
    report = check(SERVE, manifest(lora_alpha=alpha, r=r), model=MODEL)
    problem = by_rule(report)["adapter-scaling-not-finite"]
    assert f"= {alpha / r!r}, past float32's range" in problem.message and not report.ok


def test_r50_a_large_scaling_float32_holds_is_no_problem() -> None:
    struct.pack("<f", 3.0e38)
    assert "adapter-scaling-not-finite" not in by_rule(check(SERVE, manifest(lora_alpha=3.0e38, r=1), model=MODEL))


# --- I64 ---------------------------------------------------------------------------------

BIG = 10**50


@pytest.mark.parametrize(
    ("config", "adapter", "rule", "text"),
    [
        ({}, {"r": BIG}, "adapter-incompatible-with-pool", f"with rank {BIG} is incompatible"),
        ({}, {"r": -BIG}, "adapter-rank-negative", f"has r {-BIG}:"),
        ({"lora_paths": ["ad"], "max_lora_rank": None}, {"r": -BIG}, "lora-pool-rank-negative", f"rank is {-BIG} (the largest r"),
        ({"lora_paths": ["ad"]}, {"r": BIG, "tensors": {}}, "adapter-rank-above-max-lora-rank", f"has rank {BIG} but --max-lora-rank is 16"),
        ({}, {"r": BIG, "rank_pattern": {"down_proj": 4}}, "adapter-rank-pattern-ignored", f"different from r={BIG};"),
        ({"lora_paths": ["ad"], "max_lora_rank": 0}, {"r": BIG, "tensors": {}}, "lora-max-lora-rank-zero", f"have ranks up to {BIG}:"),
    ],
    ids=["incompatible", "negative", "pool-negative", "above-max", "rank-pattern", "max-rank-zero"],
)
def test_i64_messages_name_the_int_as_written(config: dict[str, Any], adapter: dict[str, Any], rule: str, text: str) -> None:
    adapter = dict(adapter)
    tensors = adapter.pop("tensors", None)
    report = check(dict(SERVE, **config), manifest(tensors=tensors, **adapter), model=MODEL)
    problem = by_rule(report)[rule]
    assert text in problem.message, problem.message
    assert not FLOAT_TEXT.search(problem.message), problem.message


def test_i64_a_layer_number_past_64_bits(tmp_path: Path) -> None:
    """A tensor name's layer number is an int of any length (sglang's get_layer_id int()):
    torch's IndexError names it in full."""
    layer = "1" + "0" * 100
    tensors = {k.replace("layers.0.", f"layers.{layer}."): v for k, v in TENSORS.items()}
    problem = by_rule(check(SERVE, manifest(tensors=tensors), model=MODEL))["adapter-layer-out-of-range"]
    assert problem.message == f"index {layer} is out of range"


def test_i64_a_manifest_dimension_past_64_bits_is_an_input_error() -> None:
    """torch sizes are int64: a hand-written manifest's larger dimension is refused at the edge,
    naming the tensor and the axis (the directory reader refuses > 64-bit shapes itself)."""
    name = next(iter(TENSORS))
    tensors = dict(TENSORS, **{name: {"shape": [2**63, 1536], "dtype": "bfloat16"}})
    with pytest.raises(InputError, match=rf"tensors\.{re.escape(name)}\.shape\.0: must be at most 9223372036854775807"):
        check(SERVE, manifest(tensors=tensors), model=MODEL)


def test_i64_an_adapter_directory_with_r_past_64_bits(tmp_path: Path) -> None:
    """The same through adapter_config.json, as the fuzz writes it."""
    target = tmp_path / "ad"
    shutil.copytree(EXAMPLES / "adapter", target)
    (target / "adapter_config.json").write_text(json.dumps(dict(CONFIG, r=BIG)))
    problem = by_rule(check(SERVE, str(target), model=MODEL))["adapter-incompatible-with-pool"]
    assert f"LoRA adapter ad with rank {BIG} is incompatible" in problem.message


# --- M0b: --max-lora-rank 0 with a start-up adapter, reported once ----------------------------


def test_m0b_max_lora_rank_zero_is_reported_once_as_sglang_raises_it() -> None:
    """Start-up does not compare the ranks with a rank-0 pool; the first request's copy fails
    the shape assertion (mem_pool.py l.908). Where the copy is replayed, that assertion is the
    one report (sglang's text, `first`), not also lora-max-lora-rank-zero predicting it."""
    report = check(dict(SERVE, max_lora_rank=0, lora_paths=["ad"]), manifest("ad"), model=MODEL)
    about_it = [p for p in report.problems if p.rule_id in ("lora-max-lora-rank-zero", "adapter-pool-shape-mismatch")]
    assert [p.rule_id for p in about_it] == ["adapter-pool-shape-mismatch"]
    assert report.first is about_it[0] and about_it[0].error_class == "AssertionError"


def test_m0b_without_weights_the_derived_rule_says_it() -> None:
    """No tensors (or no model): the copy cannot be replayed, the derived rule predicts it."""
    report = check(dict(SERVE, max_lora_rank=0, lora_paths=["ad"]), manifest("ad", tensors={}), model=MODEL)
    problems = by_rule(report)
    assert "adapter-pool-shape-mismatch" not in problems
    assert problems["lora-max-lora-rank-zero"].message.startswith("--max-lora-rank 0 sizes the LoRA memory pool with rank 0")


# --- I64b: safetensors dimensions past int64 -------------------------------------------------


def _with_header_shape(tmp_path: Path, tensor: str, shape: list[int]) -> Path:
    """examples/adapter with one tensor's header entry given `shape` (zero elements: no data)."""
    target = tmp_path / "ad"
    shutil.copytree(EXAMPLES / "adapter", target)
    raw = (target / "adapter_model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8 : 8 + size]), raw[8 + size :]
    entries = [(k, v) for k, v in header.items() if k != "__metadata__"]
    out, new = b"", {}
    for name, entry in entries:
        begin, end = entry["data_offsets"]
        chunk = b"" if name == tensor else data[begin:end]
        new[name] = dict(entry, shape=shape if name == tensor else entry["shape"], data_offsets=[len(out), len(out) + len(chunk)])
        out += chunk
    text = json.dumps(new).encode()
    (target / "adapter_model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + out)
    return target


GATE_UP_A = "base_model.model.llm.layers.0.mlp.shared_experts.gate_up_proj.lora_A.weight"


@pytest.mark.parametrize("shape", [[2**63, 0], [0, 2**64 - 1], [2**63 + 5, 0, 3]])
def test_i64b_a_header_dimension_torch_cannot_hold_is_refused(tmp_path: Path, shape: list[int]) -> None:
    """The lora_A of gate_up is repeated twice by the loader: [2**63, 0] was reported as a weight
    shape of `1.8446744073709552e+19`. torch sizes are int64 (torch.empty((2**63, 0)) raises
    TypeError), so the file is refused, naming it, the tensor and the bound."""
    target = _with_header_shape(tmp_path, GATE_UP_A, shape)
    for config in (SERVE, dict(SERVE, lora_paths=["ad"])):
        report = check(config, str(target), model=MODEL)
        problem = by_rule(report)["adapter-file-unreadable"]
        axis = next(i for i, d in enumerate(shape) if d >= 2**63)
        assert problem.message.endswith(
            f"adapter_model.safetensors: tensor {GATE_UP_A!r}: dimension {shape[axis]} (axis {axis}) of shape {json.dumps(shape)} "
            "is past torch's int64 sizes (at most 9223372036854775807): torch cannot build this tensor"
        ), problem.message
        assert "\n" not in problem.message
        assert not any(FLOAT_TEXT.search(p.message) for p in report.problems)


def test_i64b_a_header_dimension_torch_holds_is_read(tmp_path: Path) -> None:
    """A dimension torch holds is read, and no message shows it as a double. (The loader's
    repeat of this lora_A makes an axis of 2**63, where torch raises RuntimeError; the replay
    still models that as a copy's shape mismatch: docs/fuzz.md, open.)"""
    target = _with_header_shape(tmp_path, GATE_UP_A, [2**62, 0])
    for config in (SERVE, dict(SERVE, lora_paths=["ad"])):
        report = check(config, str(target), model=MODEL)
        assert "adapter-file-unreadable" not in by_rule(report)
        assert report.problems and not any(FLOAT_TEXT.search(p.message) for p in report.problems)


def test_i64b_the_copy_replay_shapes_keep_every_digit_in_the_message() -> None:
    """The shape-mismatch params name the typed lists: read without CEL (64-bit ints), a
    dimension past 2**64 is written with every digit."""
    from inkling_compat.engine.evaluate import _render
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.facts.in_pool import _pool_fit
    from inkling_compat.sglang.load_to_buffer import CopyFailure

    fit = _pool_fit(CopyFailure(kind="shape_mismatch", weight=(2**64 + 1, 0), buffer=(2, 1536)))
    rule = next(c for c in load_rules() if c.rule.id == "adapter-pool-shape-mismatch")
    values = {("adapter_facts", "pool_fit", "weight"): list(fit.weight), ("adapter_facts", "pool_fit", "buffer"): list(fit.buffer)}
    message, _, _, _ = _render(rule, None, values.__getitem__)
    assert message == f"LoRA buffer shape torch.Size([2, 1536]) does not match weight shape torch.Size([{2**64 + 1}, 0])."
