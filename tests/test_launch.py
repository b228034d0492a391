"""The launch command and sglang's config file as inputs (inputs/launch.py, sglang_config.py,
server_arguments.py, read_by_sglang.py): real files, sglang's and argparse's words."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inkling_compat import check
from inkling_compat.errors import InputError
from inkling_compat.inputs.launch import parse_launch, read_words
from in_process import run_main

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ["python", "-m", "sglang.launch_server", "--config", "examples/sglang-config.yaml", "--lora-paths", "support=examples/adapter", "--experts-shared-outer-loras"]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples name their model and adapter relative to the repository


def _problems(report):
    return [(p.rule_id, p.message) for p in report.problems]


def test_examples_check_ok_with_no_model_and_no_adapter() -> None:
    for report in (check(argv=read_words("examples/launch.sh")), check(argv=LAUNCH)):
        assert report.ok, str(report)
        # The model and the adapter the launch names were read: every rule was checked or does not apply.
        assert "model" not in report.not_given and report.coverage.checked > 0 and report.coverage.reasons == {}, report.coverage.reasons
    assert check(config="examples/sglang-config.yaml").ok


def test_launch_dash_config_and_underscore_file_check_alike(tmp_path: Path) -> None:
    underscore = tmp_path / "serve.yaml"
    underscore.write_text(
        "model_path: examples/model\nenable_lora: true\nlora_backend: triton\nmax_loras_per_batch: 4\nmax_lora_rank: 16\n"
        "lora_target_modules: [gate_up_proj, down_proj]\nexperts_shared_outer_loras: true\nlora_paths: [support=examples/adapter]\ndtype: bfloat16\n"
        "served_model_name: inkling-lora\n"
    )
    a = check(config=str(underscore))
    b = check(argv=LAUNCH)
    assert a.ok and b.ok
    assert str(a).splitlines()[-1] == str(b).splitlines()[-1]  # the same rules checked / not applicable


def _refusal(words: list[str]) -> dict:
    (refusal,) = parse_launch(words).refusals
    return refusal


def test_argparse_refusals_are_located_at_their_argument() -> None:
    refusal = _refusal(["python3", "-m", "sglang.launch_server", "--model-path", "m", "--max-lora-rank", "abc"])
    assert (refusal["kind"], refusal["key"]) == ("invalid-value", "argument 3: --max-lora-rank")
    assert refusal["message"] == "argument --max-lora-rank: invalid int value: 'abc'"


def test_config_refusals_are_sglangs(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text("{}")
    refusal = _refusal(["sglang", "serve", "m", "--config", str(tmp_path / "c.json")])
    assert (refusal["kind"], refusal["message"], refusal["key"]) == ("config-file", "Config file must be YAML format, got: .json", "argument 3: --config")
    (tmp_path / "c.yaml").write_text("- a\n")
    assert _refusal(["sglang", "serve", "m", "--config", str(tmp_path / "c.yaml")])["message"] == "Config file must contain a dictionary at root level"
    (tmp_path / "c.yaml").write_text("lora-paths: [a=b]\n")
    refusal = _refusal(["sglang", "serve", "m", "--config", str(tmp_path / "c.yaml")])
    assert (refusal["file"], refusal["key"]) == (str(tmp_path / "c.yaml"), "lora-paths")
    assert refusal["message"] == "Unsupported config option 'lora_paths' with action 'LoRAPathAction'"
    report = check(argv=["sglang", "serve", "m", "--config", str(tmp_path / "c.yaml")])
    assert [(p.rule_id, [(loc.file, loc.line) for loc in p.locations]) for p in report.errors] == [("sglang-config-file-refused", [(str(tmp_path / "c.yaml"), 1)])]


def test_an_unknown_flag_is_argparses_unrecognized_arguments() -> None:
    report = check(argv=["SGLANG_OPT_LINEARIZED_SHARED_SINK=1", "python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--max-lora-rnk", "8"])
    assert [p.rule_id for p in report.errors] == ["argparse-unrecognized-arguments"]
    assert report.errors[0].message == "unrecognized arguments: --max-lora-rnk 8"
    assert report.errors[0].fixes[0] == "Did you mean --max-lora-rank?"
    assert [str(loc) for loc in report.errors[0].locations] == ["<command> (argument 3: --max-lora-rnk)"]


def test_a_bad_value_in_the_config_file_is_placed_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("port: 1\nmax-lora-rank: abc\n")
    refusal = _refusal(["sglang", "serve", "m", "--config", str(tmp_path / "c.yaml")])
    assert (refusal["file"], refusal["key"], refusal["message"]) == (str(tmp_path / "c.yaml"), "max-lora-rank", "argument --max-lora-rank: invalid int value: 'abc'")
    report = check(argv=["sglang", "serve", "m", "--config", str(tmp_path / "c.yaml")])
    assert [(loc.line, loc.field) for loc in report.errors[0].locations] == [(2, "max-lora-rank")]


SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "examples/model"]
# (the words after SGLANG, the rule, sglang's message, the first fix)
REFUSALS = [
    (["--max-lora-rnk", "8"], "argparse-unrecognized-arguments", "unrecognized arguments: --max-lora-rnk 8", "Did you mean --max-lora-rank?"),
    (["--cuda-graph-max-bs", "8"], "argparse-ambiguous-option", "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill",
     "Write the full flag: --cuda-graph-max-bs-decode or --cuda-graph-max-bs-prefill"),
    (["--lora-backend", "foo"], "argparse-invalid-choice", "argument --lora-backend: invalid choice: 'foo' (choose from 'triton', 'csgmv', 'ascend', 'torch_native', 'triton_v2')",
     "Give --lora-backend one of: 'triton', 'csgmv', 'ascend', 'torch_native', 'triton_v2'"),
    (["--tp-size", "two"], "argparse-invalid-value", "argument --tp-size/--tensor-parallel-size: invalid int value: 'two'", "Give --tp-size an integer"),
    (["--port"], "argparse-expected-argument", "argument --port: expected one argument", "Give --port its value, or remove the flag"),
    (["--enable-lora=1"], "argparse-refused", "argument --enable-lora: ignored explicit argument '1'", "Write --enable-lora alone: it takes no value"),
    (["--config", "serve.json"], "sglang-config-file-refused", "Config file must be YAML format, got: .json", "Give --config a .yaml or .yml file (sglang reads no other format)"),
]


@pytest.mark.parametrize("words,rule,message,fix", REFUSALS, ids=[r[1] for r in REFUSALS])
def test_every_parse_time_refusal_is_a_problem_with_sglangs_words(words, rule, message, fix) -> None:
    """sglang stops at its argument parsing: the refusal is what it would first raise (exit 1),
    with a fix, and no later rule is reached, even one whose fields the command sets."""
    # --lora-backend csgmv with 4 slots alone fires sink-lora-multislot-needs-triton
    report = check(argv=[*SGLANG, "--enable-lora", "--lora-backend", "csgmv", "--max-loras-per-batch", "4", "--max-lora-rank", "16",
                         "--lora-target-modules", "gate_up_proj", "down_proj", *words])
    assert [p.rule_id for p in report.errors] == [rule]
    assert report.first is not None and (report.first.rule_id, report.first.message) == (rule, message)
    assert report.first.fixes[0] == fix
    assert report.headline_label() == "sglang 0.5.23 would first raise"
    assert report.coverage.status["sink-lora-multislot-needs-triton"] == "not_checked"
    assert "sink-lora-multislot-needs-triton" in report.coverage.reasons[f"not reached: {rule} comes first"]


def test_missing_model_path_is_argparses_required_arguments() -> None:
    report = check(argv=["python", "-m", "sglang.launch_server", "--tp-size", "1", "--max-lora-rnk", "8"])
    assert [(p.rule_id, p.message) for p in report.errors] == [("argparse-required-arguments", "the following arguments are required: --model-path/--model")]
    assert report.errors[0].fixes[0] == "Add --model-path (the model's folder or its hub id)"


def test_a_deprecated_flag_is_sglangs_warning_and_the_launch_goes_on() -> None:
    report = check(argv=[*SGLANG, "--disable-cuda-graph", "--enable-lora", "--lora-backend", "csgmv", "--max-loras-per-batch", "4", "--max-lora-rank", "16",
                         "--lora-target-modules", "gate_up_proj", "down_proj"])
    warning = next(p for p in report.warnings if p.rule_id == "argparse-deprecated-argument")
    assert warning.message == "'--disable-cuda-graph' is deprecated and will be removed in a future release. Use '--cuda-graph-backend-{decode,prefill}=disabled' instead."
    assert [str(loc) for loc in warning.locations] == ["<command> (argument 3: --disable-cuda-graph)"]
    assert "sink-lora-multislot-needs-triton" in [p.rule_id for p in report.errors]


def test_refusals_exit_1_not_2(capsys: pytest.CaptureFixture[str]) -> None:
    """In process (tests/in_process.py); the exit status of a real process: test_cli_takes_the_command_after_a_double_dash."""
    for words, _rule, message, _fix in REFUSALS:
        done = run_main(capsys, "check", "--", *SGLANG, *words)
        assert done.returncode == 1, done.stdout + done.stderr
        assert message in done.stdout and not done.stderr


REFUSED_BEFORE_THE_MODEL = "sglang refused its arguments before it read the model config: the checks that read it were not reached"


@pytest.mark.parametrize("model", [["--model-path", "examples/model"], []], ids=["with-model-path", "without"])
def test_a_refused_launch_never_says_the_model_was_not_given(capsys: pytest.CaptureFixture[str], model: list[str]) -> None:
    """sglang stops at the refusal, before it reads any model: the note says that, in every format."""
    words = ["python", "-m", "sglang.launch_server", *model, "--enable-lora", "--bogus-flag", "1"]
    done = run_main(capsys, "check", "--", *words)
    assert done.returncode == 1 and not done.stderr, done.stdout + done.stderr
    assert "no model config given" not in done.stdout
    assert f"note: {REFUSED_BEFORE_THE_MODEL}\n" in done.stdout
    report = check(argv=words)
    assert "model" not in report.not_given and list(report.coverage.notes) == [REFUSED_BEFORE_THE_MODEL]
    assert "model" not in report.to_dict()["not_given"]


def test_a_refused_launch_with_the_model_given_to_the_check_says_nothing_about_it() -> None:
    report = check(argv=["python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--bogus-flag", "1"], model="examples/config.json")
    assert [p.rule_id for p in report.errors] == ["argparse-unrecognized-arguments"]
    assert "model" not in report.not_given and not report.coverage.notes


def test_a_model_path_not_read_is_not_said_to_be_not_given(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    done = run_main(capsys, "check", "--", "python", "-m", "sglang.launch_server", "--model-path", "org/inkling", "--enable-lora", "--max-lora-rank", "8", "--lora-target-modules", "all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no model config given" not in done.stdout
    assert "note: --model-path org/inkling: not read (not in the local Hugging Face cache" in done.stdout


def test_command_line_wins_over_its_config_file(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("max-lora-rank: 8\nport: 1\n")
    launch = parse_launch(["sglang", "serve", "m", "--max-lora-rank", "16", "--config", str(tmp_path / "c.yaml")])
    assert launch.values["max_lora_rank"] == 16 and launch.values["port"] == 1 and launch.values["model_path"] == "m"


def test_every_argument_in_any_spelling_is_accepted_in_a_config() -> None:
    report = check(config={"model-path": "/nowhere", "host": "0.0.0.0", "mem_fraction_static": 0.8, "tensor_parallel_size": 1, "trust_remote_code": True, "log-level": "info"})
    assert not [p for p in report.errors if p.rule_id == "unknown-config-key"]
    refused = check(config={"port": "http"})  # sglang's argparse refuses it: a problem of the deployment
    assert [(p.rule_id, p.message) for p in refused.problems] == [("argparse-invalid-value", "argument --port: invalid int value: 'http'")]


def test_cli_takes_the_command_after_a_double_dash() -> None:
    done = subprocess.run([sys.executable, "-m", "inkling_compat", "check", "--", *LAUNCH], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "inkling_compat", "check", "--launch", "-"], input=(ROOT / "examples/launch.sh").read_text(), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_paths_not_on_this_machine_are_named_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    report = check(argv=["python", "-m", "sglang.launch_server", "--model-path", "org/inkling", "--enable-lora", "--lora-paths", "a=/nowhere/a"])
    assert report.not_read == [
        f"--model-path org/inkling: not read (not in the local Hugging Face cache at {tmp_path}): the model checks are not checked",
        "--lora-paths a=/nowhere/a: not read (not a local folder): that adapter is not checked",
    ]
    assert "model" in report.not_given and report.to_dict()["not_read"] == report.not_read
    assert "note: --model-path org/inkling: not read (" in str(report)


def test_a_rules_problem_is_located_at_its_argument(tmp_path: Path) -> None:
    """A problem of a launch command points at the words that set its fields, or at the key
    of the command's --config file."""
    words = ["python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--enable-lora", "--lora-backend", "csgmv",
             "--max-loras-per-batch", "4", "--max-lora-rank", "16", "--lora-target-modules", "gate_up_proj", "down_proj"]
    report = check(argv=words)
    problem = next(p for p in report.problems if p.rule_id == "sink-lora-multislot-needs-triton")
    assert [str(loc) for loc in problem.locations] == ["<command> (argument 4: --lora-backend)", "<command> (argument 6: --max-loras-per-batch)"]
    config = tmp_path / "sglang.yaml"
    config.write_text("model-path: examples/model\nenable-lora: true\nlora-backend: csgmv\nmax-loras-per-batch: 4\n")
    report = check(argv=["python", "-m", "sglang.launch_server", "--config", str(config), "--max-lora-rank", "16", "--lora-target-modules", "gate_up_proj", "down_proj"])
    problem = next(p for p in report.problems if p.rule_id == "sink-lora-multislot-needs-triton")
    assert [(loc.line, loc.field) for loc in problem.locations] == [(3, "lora-backend"), (4, "max-loras-per-batch")]


def test_an_unrecognized_flag_is_renamed_by_fix(capsys: pytest.CaptureFixture[str]) -> None:
    from inkling_compat.cli import main

    assert main(["check", "--diff", "--", *SGLANG, "--max-lora-rnk", "8"]) == 1
    out = capsys.readouterr().out
    assert "+python -m sglang.launch_server --model-path examples/model --max-lora-rank 8" in out
    assert "argparse-unrecognized-arguments (safe): rename max_lora_rnk -> max_lora_rank" in out


def test_a_config_file_that_is_not_yaml_is_pyyamls_error(tmp_path: Path) -> None:
    """sglang's merger reads --config with yaml.safe_load and lets its error stop the launch."""
    import yaml

    config = tmp_path / "c.yaml"
    config.write_text("model-path: m\ntp-size: [1\n")
    with pytest.raises(yaml.YAMLError) as raised, open(config) as handle:
        yaml.safe_load(handle)
    report = check(argv=["python", "-m", "sglang.launch_server", "--config", str(config)])
    (problem,) = report.errors
    assert (problem.rule_id, problem.error_class, problem.message) == ("sglang-config-file-refused", f"yaml.parser.{type(raised.value).__name__}", str(raised.value))
    assert str(config) in problem.message and report.first is problem


def test_refusals_and_warnings_from_the_config_file_are_placed_at_its_keys(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("model-path: examples/model\ntp-size: 1\ncuda-graph-max-bs: 8\n")
    report = check(argv=["python", "-m", "sglang.launch_server", "--config", str(config), "--disable-cuda-graph"])
    assert [(p.rule_id, [(loc.line, loc.field or loc.argument) for loc in p.locations]) for p in report.problems] == [
        ("argparse-ambiguous-option", [(3, "cuda-graph-max-bs")]),
    ]
    # (argparse stops at the ambiguous word, before the flag after it: no warning yet)
    config.write_text("model-path: examples/model\ndisable-cuda-graph: true\n")
    report = check(argv=["python", "-m", "sglang.launch_server", "--config", str(config)])
    assert [(p.rule_id, p.message) for p in report.problems] == [
        ("sglang-config-file-refused", "Unsupported config option 'disable_cuda_graph' with action 'DeprecatedStoreTrueAction'"),
    ]


def test_a_warning_logged_before_a_refusal_stands() -> None:
    report = check(argv=[*SGLANG, "--disable-cuda-graph", "--tp-size", "two"])
    assert sorted((p.rule_id, p.severity) for p in report.problems) == [("argparse-deprecated-argument", "warning"), ("argparse-invalid-value", "error")]
    assert report.first.rule_id == "argparse-invalid-value"
