"""The `inkling-compat` command: exit codes, one-line input errors, output formats.

The cases run `cli.main()` in this process with its streams captured (the `run_cli` fixture:
tests/in_process.py); a few run the real process (`run_process`: `python -m inkling_compat.cli`,
and the installed console script) so that the exit status, the streams as the shell sees them
and "never a traceback" are checked end to end.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inkling_compat import cli
from inkling_compat.explain import explain_matches
from inkling_compat.engine.rule_load import load_rules, rule_files, rules_dir
from inkling_compat.testing.scenarios import base_scenarios, deep_merge
from in_process import Ran, run_main

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SEED_TEXT = (
    "ValueError: InklingBatchDenseMLPWithLoRA is ineligible: "
    "multi-slot dense LoRA requires the Triton backend"
)
MULTISLOT_MESSAGE = "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend"


def run_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inkling_compat.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process: (returncode, stdout, stderr)."""
    return lambda *args: run_main(capsys, *args)


def write_setup(folder: Path, config: dict | None = None, adapter: dict | None = None) -> dict[str, Path]:
    """The `legacy` scenario as files: serve.yaml, config.json (model), adapter.yaml."""
    base = base_scenarios()["legacy"]
    paths = {
        "config": folder / "serve.yaml",
        "model": folder / "config.json",
        "adapter": folder / "adapter.yaml",
    }
    paths["config"].write_text(yaml.safe_dump(deep_merge(base["config"], config or {})), encoding="utf-8")
    paths["model"].write_text(json.dumps(base["model"], indent=2), encoding="utf-8")
    paths["adapter"].write_text(yaml.safe_dump(deep_merge(base["adapter"], adapter or {})), encoding="utf-8")
    return paths


def check_args(paths: dict[str, Path], *extra: str) -> list[str]:
    return [
        "check",
        "--config", str(paths["config"]),
        "--model", str(paths["model"]),
        "--adapter", str(paths["adapter"]),
        *extra,
    ]  # fmt: skip


def eight_slot_pool() -> dict:
    return {
        "pool": {
            "gate_up_lora_a": {"shape": [8, 1, 32, 1536]},
            "gate_up_lora_b": {"shape": [8, 2, 1536, 16]},
            "down_lora_a": {"shape": [8, 2, 16, 768]},
            "down_lora_b": {"shape": [8, 1, 1536, 16]},
        }
    }


# --- check: exit 0 and 1 -------------------------------------------------------------


def test_passing_setup_exits_0(tmp_path):
    result = run_process(*check_args(write_setup(tmp_path)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok:") or "\nok:" in result.stdout
    assert result.stderr == ""


def test_failing_setup_exits_1_with_sglangs_text(tmp_path):
    """Through the installed console script (pyproject.toml [project.scripts])."""
    script = shutil.which("inkling-compat", path=str(Path(sys.executable).parent))
    assert script, f"no inkling-compat script beside {sys.executable}: the project is not installed"
    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    result = subprocess.run([script, *check_args(paths)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"ValueError: {MULTISLOT_MESSAGE}" in result.stdout
    assert "sink-lora-multislot-needs-triton" in result.stdout
    assert "Traceback" not in result.stderr


def test_sglang_version_selects_the_wording(tmp_path, run_cli):
    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    result = run_cli(*check_args(paths), "--sglang-version", "53ccafdf")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "multi-slot dense LoRA requires a Triton backend" in result.stdout
    bad = run_cli(*check_args(paths), "--sglang-version", "0.4.0")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "--sglang-version" in bad.stderr


def test_closed_stdout_is_not_an_internal_error(tmp_path, monkeypatch, capsys):
    """`inkling-compat check ... | head -1`: the reader leaves early; no 'internal error', but
    exit 2 and one line: the report was not delivered."""

    class ClosedPipe:
        def isatty(self):
            return False

        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert cli.main(check_args(paths)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Broken pipe" in err and "internal error" not in err


@pytest.mark.skipif(
    not any(p.stem == "unknown-config-key" for p in rule_files()),
    reason="rules/unknown-config-key.yaml (the 'did you mean' rule) is not written yet",
)
def test_unknown_key_exits_1_with_suggestion(tmp_path, run_cli):
    paths = write_setup(tmp_path, config={"max_lora_rnk": 16})
    result = run_cli(*check_args(paths))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "max_lora_rnk" in result.stdout
    assert "did you mean max_lora_rank" in result.stdout
    assert "serve.yaml" in result.stdout


def test_json_format_parses(tmp_path, run_cli):
    ok = run_cli(*check_args(write_setup(tmp_path), "--format", "json"))
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["ok"] is True and data["problems"] == []

    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    bad = run_cli(*check_args(paths, "--format", "json"))
    assert bad.returncode == 1, bad.stderr
    data = json.loads(bad.stdout)
    assert data["ok"] is False
    by_id = {p["rule_id"]: p for p in data["problems"]}
    problem = by_id["sink-lora-multislot-needs-triton"]
    assert problem["message"] == MULTISLOT_MESSAGE
    assert problem["error_class"] == "ValueError"
    assert problem["fixes"]


def test_no_colour_when_stdout_is_not_a_tty(tmp_path, run_cli):
    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    plain = run_process(*check_args(paths))  # stdout is a pipe
    assert plain.returncode == 1
    assert not ANSI.search(plain.stdout) and not ANSI.search(plain.stderr)
    forced = run_cli(*check_args(paths, "--color", "always"))
    assert ANSI.search(forced.stdout), "--color always should colour (sanity check of the ANSI regex)"
    never = run_cli(*check_args(paths, "--color", "never"))
    assert not ANSI.search(never.stdout)


def test_no_colour_in_process(tmp_path, capsys):
    paths = write_setup(tmp_path, config={"lora_backend": "csgmv", "max_loras_per_batch": 8}, adapter=eight_slot_pool())
    assert cli.main(check_args(paths)) == 1
    out = capsys.readouterr().out
    assert MULTISLOT_MESSAGE in out
    assert "\x1b[" not in out


def test_platform_preset_and_file(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    assert run_cli(*check_args(paths, "--platform", "h100")).returncode == 0
    platform = tmp_path / "platform.yaml"
    platform.write_text("name: H200\ncompute_capability: '9.0'\n", encoding="utf-8")
    result = run_cli(*check_args(paths, "--platform", str(platform)))
    assert result.returncode == 0, result.stdout + result.stderr


# --- check: exit 2, one line naming file and field -------------------------------------

BILLION_LAUGHS_300 = "\n".join(
    ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 31)]
    + ["lora_paths: *l30", ""]
)
# The classic nine-by-nine billion laughs: only 72 aliases, but 9**9 strings once expanded.
BILLION_LAUGHS_CLASSIC = "\n".join(
    ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    + ["lora_paths: *l8", ""]
)

BAD_INPUTS = {
    # case: (which file, its content (str or bytes), expected field text in the error)
    "malformed-yaml": ("config", "enable_lora: [true\nlora_backend: triton\n", "line"),
    "wrong-type": ("config", "enable_lora: true\nsink:\n  sink_class: 7\n", "sink.sink_class"),  # (a server argument's list is sglang's words: test_validated_input)
    "nested-wrong-type": ("config", "env:\n  SGLANG_OPT_LINEARIZED_SHARED_SINK: maybe\n", "env.SGLANG_OPT_LINEARIZED_SHARED_SINK"),
    "non-mapping": ("config", "- enable_lora\n- lora_backend\n", "(root)"),
    "scalar-document": ("config", "just a string\n", "(root)"),
    "alias-bomb": ("config", BILLION_LAUGHS_300, "(yaml)"),
    "non-utf8": ("config", b"enable_lora: true\nlora_backend: \xff\xfe\xfa\n", "(file)"),
    "adapter-neither-form": ("adapter", "name: sink-r16\ntensors: {}\n", "(root)"),
    "adapter-bad-shape": ("adapter", "pool:\n  gate_up_lora_a: {shape: [4, x]}\n", "pool.gate_up_lora_a.shape"),
    "model-wrong-type": ("model", '{"hidden_size": "big"}', "hidden_size"),
    "model-invalid-json": ("model", '{"hidden_size": 1536,,}', "line 1"),
}


def assert_one_line_error(result: subprocess.CompletedProcess[str] | Ran, file_name: str, field: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert file_name in lines[0], lines[0]
    assert field in lines[0], lines[0]


def write_bad_input(tmp_path, case):
    """The example setup with one of its files replaced by BAD_INPUTS[case]: (paths, which file,
    the field its error names)."""
    which, content, field = BAD_INPUTS[case]
    paths = write_setup(tmp_path)
    if isinstance(content, bytes):
        paths[which].write_bytes(content)
    else:
        paths[which].write_text(content, encoding="utf-8")
    return paths, which, field


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_unusable_input_exits_2_with_one_line(tmp_path, case, run_cli):
    paths, which, field = write_bad_input(tmp_path, case)
    result = run_cli(*check_args(paths))
    assert_one_line_error(result, paths[which].name, field)


def test_classic_billion_laughs_is_refused(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    paths["config"].write_text(BILLION_LAUGHS_CLASSIC, encoding="utf-8")
    def hung(*_):
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        result = run_cli(*check_args(paths))
    except TimeoutError:
        pytest.fail("hung expanding the alias bomb")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert_one_line_error(result, "serve.yaml", "(yaml)")


def test_missing_file_exits_2(tmp_path):
    paths = write_setup(tmp_path)
    missing = tmp_path / "nope.yaml"
    result = run_process("check", "--config", missing, "--model", paths["model"])
    assert_one_line_error(result, "nope.yaml", "(file)")
    assert "no such file" in result.stderr


def test_missing_adapter_file_exits_2(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    result = run_cli("check", "--config", paths["config"], "--adapter", tmp_path / "gone.yaml")
    assert_one_line_error(result, "gone.yaml", "(file)")


def test_directory_instead_of_file_exits_2(tmp_path, run_cli):
    folder = tmp_path / "configs"
    folder.mkdir()
    result = run_cli("check", "--config", folder)
    assert_one_line_error(result, "configs", "(file)")
    assert "directory" in result.stderr


def test_missing_required_argument_exits_2(run_cli):
    result = run_cli("check")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--config" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_platform_preset_exits_2(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    result = run_cli(*check_args(paths, "--platform", "tpu-v9"))
    assert_one_line_error(result, "tpu-v9", "(file)")


def test_a_value_sglang_refuses_in_a_config_exits_1_in_its_words(tmp_path, capsys):
    """sglang's argparse would refuse the deployment: its problem (exit 1, argparse's words, the
    key's line, a fix), not input the checker cannot use (exit 2)."""
    paths = write_setup(tmp_path)
    paths["config"].write_text("enable_lora: true\nmax_loras_per_batch: eight\n", encoding="utf-8")
    assert cli.main(["check", "--config", str(paths["config"])]) == 1
    out = capsys.readouterr().out
    assert "error argparse-invalid-value" in out and "SystemExit: argument --max-loras-per-batch: invalid int value: 'eight'" in out
    assert f"at {paths['config']}:2:1 (max_loras_per_batch)" in out and "fix: Give --max-loras-per-batch an integer" in out


def test_input_error_in_process(tmp_path, capsys):
    paths = write_setup(tmp_path)
    paths["config"].write_text("sink:\n  sink_class: [eight]\n", encoding="utf-8")
    assert cli.main(["check", "--config", str(paths["config"])]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "serve.yaml" in captured.err and "sink.sink_class" in captured.err


# --- rules and explain -----------------------------------------------------------------


def test_rules_lists_every_rule(run_cli):
    result = run_cli("rules")
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.splitlines() if line.strip() and not line.endswith(" rules")}
    on_disk = {path.stem for path in rule_files()}
    assert listed == on_disk == {c.rule.id for c in load_rules()}
    assert result.stdout.rstrip().endswith(f"{len(on_disk)} rules")


def test_rules_json_lists_every_rule(run_cli):
    result = run_cli("rules", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {r["id"] for r in data} == {c.rule.id for c in load_rules()}


def test_explain_seed_text(capsys):
    assert cli.main(["explain", SEED_TEXT]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sink-lora-multislot-needs-triton:")
    rule = next(c.rule for c in load_rules() if c.rule.id == "sink-lora-multislot-needs-triton")
    for fix in rule.fixes:
        assert fix in out


def test_explain_full_log_line_in_subprocess():
    line = f"[2026-01-01 12:00:00 TP0] Scheduler hit an exception: Traceback ... {SEED_TEXT}"
    result = run_process("explain", line)
    assert result.returncode == 0, result.stderr
    assert "sink-lora-multislot-needs-triton" in result.stdout
    assert "Fixes" in result.stdout


def test_explain_finds_every_rule_from_a_log_line():
    """A firing example's text, as it appears in a log ("[ts] ValueError: <message>"), is
    explained by a set of rules that includes that rule (so patterns must not be anchored
    to the start of the text)."""
    missed = []
    for c in load_rules():
        for example in c.rule.examples.fire:
            if example.message is None:
                continue
            line = f"[2026-01-01 00:00:00 TP0] {c.rule.error_class}: {example.message}"
            if c.rule.id not in [m.rule.id for m in explain_matches(line)]:
                missed.append(f"{c.rule.id}: {c.rule.message_pattern!r}")
    assert not missed, "explain misses these rules on a log line:\n" + "\n".join(sorted(set(missed)))


def test_explain_unrelated_text_exits_1(capsys):
    assert cli.main(["explain", "CUDA out of memory. Tried to allocate 2.00 GiB"]) == 1
    assert "no rule matches" in capsys.readouterr().out


# --- --format json: one JSON document whatever the exit code ----------------------------


def assert_json_error(result: subprocess.CompletedProcess[str] | Ran, code: int, key: str) -> dict:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    data = json.loads(result.stdout)  # the whole of stdout is one document
    assert data["ok"] is False and data["exit_code"] == code and key in data, data
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    return data[key]


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_json_format_on_unusable_input(tmp_path, case, run_cli):
    paths, which, field = write_bad_input(tmp_path, case)
    error = assert_json_error(run_cli(*check_args(paths, "--format", "json")), 2, "input_error")
    assert set(error) == {"file", "field", "reason"}
    assert paths[which].name in error["file"] and field in f"{error['field']}: {error['reason']}", error


def test_json_format_on_a_missing_file_and_a_bad_command_line(tmp_path, run_cli):
    error = assert_json_error(run_cli("check", "--config", tmp_path / "nope.yaml", "--format=json"), 2, "input_error")
    assert error == {"file": str(tmp_path / "nope.yaml"), "field": "(file)", "reason": "no such file"}
    paths = write_setup(tmp_path)
    bad = run_cli(*check_args(paths, "--format", "json", "--sglang-version", "0.4.0"))
    error = assert_json_error(bad, 2, "input_error")
    assert error["file"] == "(command line)" and error["field"] == "--sglang-version" and error["reason"] == "sglang '0.4.0' is not supported: supported are 0.5.16 to 0.5.23, and revision 53ccafdf"
    missing = assert_json_error(run_cli("check", "--format", "json"), 2, "input_error")
    assert "--config" in missing["reason"]


def test_json_format_on_internal_error(tmp_path, monkeypatch, capsys):
    import inkling_compat.engine.evaluate as evaluate

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a defect")

    monkeypatch.setattr(evaluate, "check", broken)
    assert cli.main(check_args(write_setup(tmp_path), "--format", "json")) == 3
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data == {"ok": False, "exit_code": 3, "internal_error": {"type": "ZeroDivisionError", "message": "a defect"}}
    assert captured.err == "inkling-compat: internal error: ZeroDivisionError: a defect\n"
    # Without --format json: nothing on stdout, as before.
    assert cli.main(check_args(write_setup(tmp_path))) == 3
    assert capsys.readouterr().out == ""


# --- --model DIR ------------------------------------------------------------------------


def test_model_directory_is_read_as_its_config_json(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    folder = tmp_path / "Inkling-model"
    folder.mkdir()
    (folder / "config.json").write_text(paths["model"].read_text(encoding="utf-8"), encoding="utf-8")
    as_file = run_cli(*check_args(paths, "--format", "json"))
    paths["model"] = folder
    as_dir = run_cli(*check_args(paths, "--format", "json"))
    assert as_dir.returncode == as_file.returncode == 0, as_dir.stderr
    assert json.loads(as_dir.stdout) == json.loads(as_file.stdout)
    # A wrong value in the folder's config.json names that file.
    (folder / "config.json").write_text('{"hidden_size": "big"}', encoding="utf-8")
    assert_one_line_error(run_cli(*check_args(paths)), str(folder / "config.json"), "hidden_size")


def test_model_directory_without_config_json_exits_2(tmp_path, run_cli):
    paths = write_setup(tmp_path)
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    paths["model"] = empty
    result = run_cli(*check_args(paths))
    assert_one_line_error(result, "not-a-model", "(file)")
    assert "config.json" in result.stderr
    error = assert_json_error(run_cli(*check_args(paths, "--format", "json")), 2, "input_error")
    assert error["file"] == str(empty)


def test_help_does_not_import_the_engine_or_pydantic():
    code = "import sys; from inkling_compat import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith(('pydantic', 'inkling_compat.engine', 'inkling_compat.explain'))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_run_format_json_prints_one_document_on_input_errors(capsys):
    assert cli.main(["run", "--config", "examples/serve.yaml", "--tokens", "-1", "--format", "json"]) == 2
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc == {"ok": False, "exit_code": 2, "input_error": {"file": "(command line)", "field": "--tokens", "reason": "--tokens: -1 is negative"}}
    assert out.err.strip() == "inkling-compat: error: --tokens: -1 is negative"
    assert cli.main(["run", "--config", "/no/such/serve.yaml", "--format", "json", "--device", "cpu"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["input_error"] == {"file": "/no/such/serve.yaml", "field": "(file)", "reason": "no such file"}
