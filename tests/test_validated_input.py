"""Validated input: a wrong type or an impossible value in a field a rule
or fact reads is a problem of that input with its field path, or a one-line input error
(exit 2) naming the file and the field; never "ok", never exit 3.

What sglang 0.5.23 does with each value was read from its source (lora/lora_config.py l.42-44,
lora/lora.py l.67 and l.71, lora/mem_pool.py l.247 and l.627-, lora/utils.py l.323-324,
arg_groups/lora_hook.py l.152); where sglang raises, the problem has its class and text,
where it accepts the value and fails later, a derived rule says how.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inkling_compat import check
from inkling_compat.errors import InputError
from inkling_compat.facts.adapter import scaling_failure
from inkling_compat.report.values import json_text
from oracle import sglang_argparse, sglang_server_args, sglang_sink
from oracle.require import load_or_skip
from adapter_fixtures import SERVE
from in_process import run_main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODEL = str(EXAMPLES / "config.json")


def adapter_dir(folder: Path, name: str = "ad", **changes: Any) -> Path:
    """examples/adapter with adapter_config.json keys replaced (a key set to ... is removed)."""
    target = folder / name
    shutil.copytree(EXAMPLES / "adapter", target)
    config = json.loads((target / "adapter_config.json").read_text())
    config.update(changes)
    (target / "adapter_config.json").write_text(json.dumps(config))
    return target


def problems(report: Any) -> dict[str, Any]:
    return {p.rule_id: p for p in report.problems}


def run_check(folder: Path, startup: bool, **changes: Any) -> Any:
    directory = adapter_dir(folder, **changes)
    config = dict(SERVE, lora_paths=[f"ad={directory}"]) if startup else SERVE
    return check(config, str(directory), model=MODEL)


# --- adapter_config.json: r and lora_alpha -------------------------------------------------

# (field, value, at start-up, rule, error class, message); at start-up sglang wraps the
# load error in "Failed to load LoRA adapter ad: ...".
ERRORS = [
    ("r", "sixteen", False, "adapter-rank-not-comparable", "TypeError", "'>' not supported between instances of 'str' and 'int'"),
    ("r", "sixteen", True, "adapter-scaling-fails", "TypeError", "Failed to load LoRA adapter ad: unsupported operand type(s) for /: 'int' and 'str'"),
    ("r", None, False, "adapter-rank-not-comparable", "TypeError", "'>' not supported between instances of 'NoneType' and 'int'"),
    ("r", None, True, "adapter-scaling-fails", "TypeError", "Failed to load LoRA adapter ad: unsupported operand type(s) for /: 'int' and 'NoneType'"),
    ("r", [1], False, "adapter-rank-not-comparable", "TypeError", "'>' not supported between instances of 'list' and 'int'"),
    ("r", [1], True, "adapter-scaling-fails", "TypeError", "Failed to load LoRA adapter ad: unsupported operand type(s) for /: 'int' and 'list'"),
    ("r", 0, False, "adapter-rank-zero", "ZeroDivisionError", "division by zero"),
    ("r", 0, True, "adapter-rank-zero", "ZeroDivisionError", "Failed to load LoRA adapter ad: division by zero"),
    ("r", False, False, "adapter-rank-zero", "ZeroDivisionError", "division by zero"),  # false is the int 0
    ("r", 0.0, False, "adapter-scaling-fails", "ZeroDivisionError", "float division by zero"),
    ("lora_alpha", "two", False, "adapter-scaling-fails", "TypeError", "unsupported operand type(s) for /: 'str' and 'int'"),
    ("lora_alpha", "two", True, "adapter-scaling-fails", "TypeError", "Failed to load LoRA adapter ad: unsupported operand type(s) for /: 'str' and 'int'"),
    ("lora_alpha", None, False, "adapter-scaling-fails", "TypeError", "unsupported operand type(s) for /: 'NoneType' and 'int'"),
    ("lora_alpha", [], False, "adapter-scaling-fails", "TypeError", "unsupported operand type(s) for /: 'list' and 'int'"),
    ("target_modules", 5, False, "adapter-target-modules-not-iterable", "TypeError", "'int' object is not iterable"),
    ("target_modules", [1], False, "adapter-target-module-not-string", "AttributeError", "'int' object has no attribute 'split'"),
    ("target_modules", ["down_proj", 1], True, "adapter-target-module-not-string", "AttributeError", "Failed to load LoRA adapter ad: 'int' object has no attribute 'split'"),
    ("peft_type", 5, False, "adapter-peft-type-not-string", "AttributeError", "'int' object has no attribute 'lower'"),
]


@pytest.mark.parametrize(("field", "value", "startup", "rule", "error_class", "message"), ERRORS, ids=lambda v: repr(v)[:24])
def test_sglang_raises_on_the_value(tmp_path: Path, field: str, value: Any, startup: bool, rule: str, error_class: str, message: str) -> None:
    report = run_check(tmp_path, startup, **{field: value})
    assert not report.ok
    first = report.problems[0]
    assert (first.rule_id, first.error_class, first.message) == (rule, error_class, message)
    assert f"adapter.adapter_config.{field}" in first.field_paths
    assert report.first is first  # origin sglang: the line "sglang 0.5.23 would first raise" names it


def test_the_replayed_scaling_is_pythons() -> None:
    """scaling_failure runs lora.py:71's division itself: the same class and text as Python."""
    for alpha, r in [(32, "sixteen"), (32.0, None), ([], 16), ("two", "x"), (16, 0.0), (16, False), (10**400, 3), (16.0, 0)]:
        try:
            alpha / r  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - the class is the point
            expected = {"error_class": type(exc).__name__, "message": str(exc)}
        assert scaling_failure({"r": r, "lora_alpha": alpha}) == expected
    assert scaling_failure({"r": 16, "lora_alpha": 32}) is None
    assert scaling_failure({"r": 16}) is None  # the KeyError of LoRAConfig comes first
    assert scaling_failure({"r": 16, "lora_alpha": object()}) is None  # not JSON: never operated on


# (field, value, rule, error class, severity): sglang accepts the value and fails later (derived).
DERIVED = [
    ("r", -1, "adapter-rank-negative", "AssertionError", "runtime"),
    ("r", 1.5, "adapter-rank-float", "TypeError", "error"),
    ("r", 16.0, "adapter-rank-float", "TypeError", "error"),
]


@pytest.mark.parametrize(("field", "value", "rule", "error_class", "severity"), DERIVED)
def test_sglang_accepts_and_fails_later(tmp_path: Path, field: str, value: Any, rule: str, error_class: str, severity: str) -> None:
    for startup in (False, True):
        report = run_check(tmp_path / str(startup), startup, **{field: value})
        problem = problems(report)[rule]
        assert not report.ok
        assert (problem.origin, problem.error_class, problem.severity) == ("derived", error_class, severity)
        assert f"r {value}" in problem.message


def test_negative_r_sizes_a_pool_that_cannot_be_allocated(tmp_path: Path) -> None:
    directory = adapter_dir(tmp_path, r=-4)
    report = check(dict(SERVE, max_lora_rank=None, lora_paths=[f"ad={directory}"]), str(directory), model=MODEL)
    problem = problems(report)["lora-pool-rank-negative"]
    assert (problem.origin, problem.error_class) == ("derived", "RuntimeError")
    assert "rank is -4 (the largest r of the --lora-paths adapters)" in problem.message


# (field, value, the text the warning gives it): wrong PEFT types sglang reads loosely or not at all.
WARNINGS = [
    ("r", True, "r has type bool, PEFT writes int (sglang 0.5.23 uses true as rank 1)"),
    ("lora_alpha", True, "lora_alpha has type bool, PEFT writes int or float (sglang 0.5.23 divides it as 1)"),
    ("use_rslora", "yes", "use_rslora has type str, PEFT writes bool (sglang 0.5.23 does not read it; PEFT tests its truthiness (true))"),
    ("use_rslora", None, "use_rslora has type NoneType, PEFT writes bool"),
    ("use_dora", 0, "use_dora has type int, PEFT writes bool (sglang 0.5.23 tests its truthiness: it is false)"),
    ("rank_pattern", [], "rank_pattern has type list, PEFT writes a mapping of module name to int (sglang 0.5.23 does not read it)"),
    ("rank_pattern", {"down_proj": "8"}, "rank_pattern has type dict, PEFT writes a mapping of module name to int"),
    ("alpha_pattern", "x", "alpha_pattern has type str, PEFT writes a mapping of module name to int or float"),
    ("modules_to_save", "lm_head", "modules_to_save has type str, PEFT writes a list of strings or null"),
]


@pytest.mark.parametrize(("field", "value", "text"), WARNINGS, ids=lambda v: repr(v)[:24])
def test_a_wrong_peft_type_is_a_warning_never_silent(tmp_path: Path, field: str, value: Any, text: str) -> None:
    report = run_check(tmp_path, False, **{field: value})
    problem = problems(report)["adapter-config-type-mismatch"]
    assert problem.severity == "warning" and problem.origin == "inkling-compat"
    assert text in problem.message
    assert report.warnings


def test_use_dora_string_false_is_refused_as_sglang_does(tmp_path: Path) -> None:
    """`if lora_config.use_dora:` — a string "false" is true: sglang refuses the adapter."""
    found = problems(run_check(tmp_path, False, use_dora="false"))
    assert found["adapter-dora"].severity == "error"
    assert "use_dora has type str, PEFT writes bool (sglang 0.5.23 tests its truthiness: it is true, so the adapter is refused as DoRA)" in found["adapter-config-type-mismatch"].message


def test_peft_types_pass_quietly(tmp_path: Path) -> None:
    report = run_check(tmp_path, False, use_rslora=False, use_dora=False, rank_pattern={"down_proj": 1}, alpha_pattern={}, modules_to_save=None)
    assert report.ok and not report.problems


def test_json_text_is_short_and_never_walks_a_large_value() -> None:
    assert json_text(1.5) == "1.5" and json_text("sixteen") == '"sixteen"' and json_text([1]) == "[1]"
    assert json_text(list(range(10**6))) == "a list of 1000000 item(s)"
    assert json_text(10**4000) == "an int of 4001 digits"
    assert len(json_text("x" * 1000)) == 40


def test_run_refuses_a_word_rank_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """runtime/pool_builder.py read r with int() and exited 3; check() now refuses first. (In
    this process: `run --device cpu` may set TRITON_INTERPRET, put back after the test.)"""
    directory = adapter_dir(tmp_path, r="sixteen")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    result = run_main(capsys, "run", "--config", EXAMPLES / "serve.yaml", "--model", MODEL, "--adapter", directory, "--device", "cpu")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "TypeError: '>' not supported between instances of 'str' and 'int'" in result.stdout + result.stderr


# --- the server config -------------------------------------------------------------------


def argparse_says(tmp_path: Path, field: str, value: Any) -> str:
    """What sglang 0.5.23 says for a config file of the key (its own merger, then its parser:
    the words `--flag TEXT` its merger makes of the value, and every flag of the argument named)."""
    oracle = load_or_skip(lambda: sglang_argparse.load(sglang_sink.find_wheel(version="0.5.23")), "0.5.23 argument parser")
    dashed = tmp_path / "dashed.yaml"
    dashed.write_text(f"model-path: /m\n{field.replace('_', '-')}: {json.dumps(value) if not isinstance(value, bool) else str(value).lower()}\n")
    said, text = sglang_argparse.parse(oracle, ["--config", str(dashed)])
    assert said == "refused", text
    return text


@pytest.mark.parametrize(("field", "value", "kind"), [
    ("max_lora_rank", "x", int), ("max_lora_rank", 1.5, int), ("max_lora_rank", 16.0, int), ("max_lora_rank", True, int),
    ("max_loras_per_batch", "eight", int), ("tp_size", 2.5, int), ("max_loaded_loras", "many", int), ("lora_drain_wait_threshold", "soon", float),
])
def test_a_value_argparse_refuses_is_argparses_message(tmp_path: Path, field: str, value: Any, kind: type) -> None:
    serve = tmp_path / "serve.yaml"
    serve.write_text(f"enable_lora: true\n{field}: {json.dumps(value) if not isinstance(value, bool) else str(value).lower()}\n")
    expected = argparse_says(tmp_path, field, value)
    # sglang refuses the deployment (its argparse exits): a problem of the deployment, exit 1,
    # in argparse's words, at the key; sglang parses nothing further, so nothing else is reached
    report = check(str(serve), None)
    (problem,) = report.problems
    assert (problem.rule_id, problem.error_class, problem.message) == ("argparse-invalid-value", "SystemExit", expected)
    assert [(loc.file, loc.line) for loc in problem.locations] == [(str(serve), 2)]
    assert not report.ok and all(not reason.startswith("not reached") or "argparse-invalid-value" in reason for reason in report.coverage.reasons)


def test_a_container_is_what_sglangs_merger_makes_of_it() -> None:
    """`[16]` is `--max-lora-rank 16`; `[16, 32]` leaves `32` unrecognized; a mapping is its JSON
    text, which `int` refuses: sglang's refusals (exit 1), never unusable input (exit 2)
    (tests/test_config_choices.py compares every typed field with each release's wheel)."""
    from inkling_compat.inputs.loading import load_server_config

    assert load_server_config({"enable_lora": True, "max_lora_rank": [16]})[0].max_lora_rank == 16
    assert load_server_config({"enable_lora": True, "max_lora_rank": []})[0].max_lora_rank is None
    report = check({"enable_lora": True, "max_lora_rank": [16, 32]}, None)
    assert (report.problems[0].rule_id, report.problems[0].message) == ("unknown-config-key", "<config>: unrecognized arguments: 32")
    report = check({"enable_lora": True, "max_lora_rank": {"a": 1}}, None)
    assert [(p.rule_id, p.message) for p in report.problems] == [("argparse-invalid-value", """argument --max-lora-rank: invalid int value: '{"a": 1}'""")]


def test_a_numeric_string_is_what_argparse_converts() -> None:
    report = check(dict(SERVE, max_lora_rank="16", tp_size="1"), str(EXAMPLES / "adapter"), model=MODEL)
    assert report.ok


@pytest.fixture(scope="module")
def server_args_oracle() -> sglang_server_args.SglangServerArgs:
    return load_or_skip(sglang_server_args.load, "server-args")


ENV = {"SGLANG_EXPERIMENTAL_LORA_OPTI": False, "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": False, "SGLANG_RAGGED_VERIFY_MODE": "static"}


@pytest.mark.fidelity
def test_negative_max_lora_rank_passes_sglangs_checks_and_is_a_derived_crash(server_args_oracle: sglang_server_args.SglangServerArgs) -> None:
    config = {"enable_lora": True, "max_lora_rank": -1, "lora_target_modules": ["gate_up_proj", "down_proj"]}
    assert server_args_oracle.check(config, ENV, False).ok  # check_lora_server_args accepts it (-1 is truthy)
    problem = problems(check(dict(SERVE, max_lora_rank=-1), None, model=MODEL))["lora-pool-rank-negative"]
    assert (problem.origin, problem.error_class) == ("derived", "RuntimeError")
    assert problem.message.startswith("The LoRA memory pool's rank is -1 (--max-lora-rank): sglang 0.5.23 accepts it")


@pytest.mark.fidelity
def test_zero_max_lora_rank_without_lora_paths_is_sglangs_assertion(server_args_oracle: sglang_server_args.SglangServerArgs) -> None:
    config = {"enable_lora": True, "max_lora_rank": 0, "lora_target_modules": ["gate_up_proj", "down_proj"]}
    outcome = server_args_oracle.check(config, ENV, False)
    problem = check(dict(SERVE, max_lora_rank=0), None, model=MODEL).first
    assert (problem.rule_id, problem.error_class, problem.message) == ("lora-needs-rank-and-targets", outcome.error_class, outcome.message)


@pytest.mark.fidelity
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_max_loras_per_batch_is_sglangs_assertion(server_args_oracle: sglang_server_args.SglangServerArgs, value: int) -> None:
    outcome = server_args_oracle.check({"max_loras_per_batch": value}, ENV, False)
    problem = check(dict(SERVE, max_loras_per_batch=value), None, model=MODEL).first
    assert (problem.rule_id, problem.error_class, problem.message) == ("lora-max-loras-per-batch-not-positive", outcome.error_class, outcome.message)


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("tp_size", 0, "must be at least 1"), ("tp_size", -1, "must be at least 1"), ("tp_size", 10**20, "must be at most 4096"),
    ("ep_size", 0, "must be at least 1"), ("attn_dp_size", -2, "must be at least 1"), ("dp_size", 10**6, "must be at most 4096"),
    ("max_lora_rank", 1 << 20, "must be at most 65536"), ("max_loras_per_batch", 10**9, "must be at most 65536"),
])
def test_impossible_or_absurd_server_sizes_are_input_errors(tmp_path: Path, field: str, value: int, reason: str) -> None:
    serve = tmp_path / "serve.yaml"
    serve.write_text(f"enable_lora: true\n{field}: {value}\n")
    with pytest.raises(InputError) as caught:
        check(str(serve), None)
    assert str(caught.value).startswith(f"{serve}: {field}: {reason}")


def test_max_lora_chunk_size_outside_choices_is_argparses_choice_error() -> None:
    first = check(dict(SERVE, max_lora_chunk_size=8), None, model=MODEL).first
    assert first.origin == "argparse" and first.message == "argument --max-lora-chunk-size: invalid choice: 8 (choose from 16, 32, 64, 128)"


# --- the model's config.json ----------------------------------------------------------------


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("hidden_size", -5, "must be at least 1"), ("hidden_size", 0, "must be at least 1"),
    ("intermediate_size", 0, "must be at least 1"), ("num_hidden_layers", 0, "must be at least 1"),
    ("num_hidden_layers", 2**31, "must be at most 4096"), ("num_hidden_layers", 10**90, "must be at most 4096"),
    ("n_shared_experts", -1, "must be at least 0"), ("n_shared_experts", 10**6, "must be at most 16384"),
    ("vocab_size", 0, "must be at least 1"), ("vocab_size", -201024, "must be at least 1"),
    ("num_attention_heads", 0, "must be at least 1"), ("num_key_value_heads", -4, "must be at least 1"),
    ("hidden_size", "1536x", "Input should be a valid integer"), ("num_hidden_layers", 1.5, "Input should be a valid integer"),
    ("hidden_size", True, "Input should be a valid integer, not a boolean (true)"),
    # Read as they are (transformers does not convert config.json values): no lax coercion.
    ("n_routed_experts", 64.0, "Input should be a valid integer, not a float (64.0)"), ("n_routed_experts", "64", "Input should be a valid integer, not a string ('64')"),
    ("num_hidden_layers", 64.0, "Input should be a valid integer, not a float"), ("num_hidden_layers", "64", "Input should be a valid integer, not a string"),
    ("n_shared_experts", 0.0, "Input should be a valid integer, not a float"),
    ("shared_expert_sink", "false", "Input should be a valid boolean"), ("use_sconv", 1, "Input should be a valid boolean"),
])
def test_an_impossible_model_value_names_the_file_and_field(tmp_path: Path, field: str, value: Any, reason: str) -> None:
    model = json.loads((EXAMPLES / "config.json").read_text())
    model[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(model))
    with pytest.raises(InputError) as caught:
        check(str(EXAMPLES / "serve.yaml"), str(EXAMPLES / "adapter"), model=str(path))
    assert str(caught.value).startswith(f"{path}: {field}: {reason}")
    assert "\n" not in str(caught.value)


def test_a_huge_int_is_never_printed_whole(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        check(str(EXAMPLES / "serve.yaml"), None, model={"num_hidden_layers": 10**60})
    assert "got an int of about 61 digits" in str(caught.value)
    # Longer ones are refused by the loader's integer-size limit before validation, also by field.
    with pytest.raises(InputError, match=r"^<model>: num_hidden_layers: "):
        check(str(EXAMPLES / "serve.yaml"), None, model={"num_hidden_layers": 10**1000})


@pytest.mark.parametrize("value", [0, -5])
def test_the_cli_exits_2_on_an_impossible_model_value(tmp_path: Path, value: int) -> None:
    model = json.loads((EXAMPLES / "config.json").read_text())
    model["hidden_size"] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(model))
    result = subprocess.run(
        [sys.executable, "-m", "inkling_compat.cli", "check", "--config", str(EXAMPLES / "serve.yaml"), "--model", str(path), "--adapter", str(EXAMPLES / "adapter")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "hidden_size" in result.stderr and str(path) in result.stderr and "Traceback" not in result.stderr


def test_zero_max_lora_rank_with_lora_paths_is_a_copy_failure(tmp_path: Path) -> None:
    """With --lora-paths, sglang's assertion lets 0 through and init_lora_shapes keeps it: the
    copy fails. With the weights read, the replayed assertion is the report (once); the derived
    prediction stands in where the copy cannot be replayed (tests/test_values_sglang_accepts_then_fails.py M0b)."""
    directory = adapter_dir(tmp_path, r=1)
    report = check(dict(SERVE, max_lora_rank=0, lora_paths=[f"ad={directory}"]), str(directory), model=MODEL)
    problem = problems(report)["adapter-pool-shape-mismatch"]
    assert (problem.origin, problem.error_class, problem.severity) == ("sglang", "AssertionError", "runtime")
    assert "lora-max-lora-rank-zero" not in problems(report)
    assert not report.ok


@pytest.mark.parametrize(("shape", "reason"), [([-1, 1536], "must be at least 0"), ([2, True], "Input should be a valid integer, not a boolean")])
def test_a_manifest_tensor_dimension_is_a_non_negative_int(shape: list[Any], reason: str) -> None:
    name = "base_model.model.llm.layers.1.mlp.shared_experts.down_proj.lora_B.weight"
    adapter = {"name": "a", "adapter_config": {"peft_type": "LORA", "r": 1, "lora_alpha": 2, "target_modules": ["down_proj"]}, "tensors": {name: {"shape": shape}}}
    with pytest.raises(InputError) as caught:
        check(str(EXAMPLES / "serve.yaml"), adapter, model=MODEL)
    bad = next(i for i, d in enumerate(shape) if isinstance(d, bool) or d < 0)
    assert str(caught.value).startswith(f"<adapter>: tensors.{name}.shape.{bad}: {reason}")


def test_a_pool_buffer_dimension_is_a_non_negative_int() -> None:
    with pytest.raises(InputError, match=r"^<adapter>: pool\.down_lora_b\.shape\.0: must be at least 0"):
        check(str(EXAMPLES / "serve.yaml"), _pool_with(down_lora_b=[-4, 1, 1536, 16]), model=MODEL)


def _pool_with(**shapes: list[int]) -> dict[str, Any]:
    import yaml

    pool = yaml.safe_load((EXAMPLES / "adapter_pool.yaml").read_text())
    for buffer, shape in shapes.items():
        pool["pool"][buffer]["shape"] = shape
    return pool


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_lora_alpha_is_a_derived_error(tmp_path: Path, text: str) -> None:
    """json.load reads NaN, Infinity and 1e999 as floats; sglang scales lora_B by alpha / r unchecked."""
    directory = adapter_dir(tmp_path, lora_alpha=0)
    path = directory / "adapter_config.json"
    path.write_text(path.read_text().replace('"lora_alpha": 0', f'"lora_alpha": {text}'))
    report = check(SERVE, str(directory), model=MODEL)
    problem = problems(report)["adapter-scaling-not-finite"]
    assert (problem.origin, problem.severity) == ("derived", "error") and not report.ok
    assert "adapter.adapter_config.lora_alpha" in problem.field_paths


@pytest.mark.parametrize("field", ["max_loaded_loras", "max_loras_per_batch", "max_lora_rank", "page_size", "max_lora_chunk_size", "ep_num_redundant_experts", "moe_dense_tp_size"])
@pytest.mark.parametrize("value", [-(2**63) - 1, 2**64, -(10**30)])
def test_server_ints_stay_64_bit(tmp_path: Path, field: str, value: int) -> None:
    """Past int64 a value would reach CEL as a double and a rule's arithmetic fail (exit 3): it is refused as input."""
    serve = tmp_path / "serve.yaml"
    base = {"max_lora_rank": 8, "lora_target_modules": "[down_proj]", field: value}
    serve.write_text("enable_lora: true\n" + "".join(f"{k}: {v}\n" for k, v in base.items()))
    with pytest.raises(InputError) as caught:
        check(str(serve), str(EXAMPLES / "adapter"), model=MODEL)
    assert str(caught.value).startswith(f"{serve}: {field}: must be at")
    assert f"got {value}" in str(caught.value)
