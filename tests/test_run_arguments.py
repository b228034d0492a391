"""`inkling-compat run` refuses numeric options out of their bounds, torchrun variables that
name no rank of a world, and a pickle-only adapter: one line, exit 2, before torch runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from in_process import Ran, run_main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BASE = ["run", "--config", str(EXAMPLES / "serve.yaml"), "--model", str(EXAMPLES / "config.json"), "--device", "cpu"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "inkling_compat", *BASE, *args], capture_output=True, text=True, timeout=120, env=full)


def _one_line_exit_2(done: subprocess.CompletedProcess[str] | Ran, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("inkling-compat: error: "), done.stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--tokens", "1e11"], ["--tokens"]),
        (["--tokens", "100000000000"], ["--tokens: 100000000000 is out of range"]),
        (["--tokens", str(2**63 - 1)], ["--tokens", "out of range"]),
        (["--seed", str(2**64)], ["--seed: 18446744073709551616 is out of range"]),
        (["--seed", "-1"], ["--seed: -1 is negative"]),
        (["--tp-rank", str(10**50)], ["--tp-rank: a number of 51 digits is out of range"]),
        (["--repeat", str(10**12)], ["--repeat"]),
        (["--tp-timeout", "nan"], ["--tp-timeout"]),
    ],
)
def test_numeric_options_out_of_bounds(args, words):
    _one_line_exit_2(_run(*args), *words)


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"RANK": "abc", "WORLD_SIZE": "2"}, ["RANK='abc' is not a non-negative integer"]),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "zz"}, ["LOCAL_RANK='zz'"]),
        ({"RANK": "5", "WORLD_SIZE": "2"}, ["RANK=5 is not a rank of WORLD_SIZE=2"]),
        ({"RANK": "0", "WORLD_SIZE": "0"}, ["WORLD_SIZE=0"]),
        ({"RANK": "0", "WORLD_SIZE": "9" * 30}, ["WORLD_SIZE="]),
    ],
)
def test_torchrun_variables_that_name_no_rank(env, words):
    _one_line_exit_2(_run(env={"TORCHELASTIC_RUN_ID": "test", **env}), *words)


def test_a_pickle_only_adapter_is_refused_in_the_checkers_words(tmp_path, capsys, monkeypatch):
    """(In this process: `run --device cpu` may set TRITON_INTERPRET, put back after the test.)"""
    adapter = tmp_path / "pickled"
    adapter.mkdir()
    shutil.copy(EXAMPLES / "adapter" / "adapter_config.json", adapter)
    (adapter / "adapter_model.bin").write_bytes(b"\x80\x04" + os.urandom(1000))  # never unpickled
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    _one_line_exit_2(run_main(capsys, *BASE, "--adapter", adapter), "adapter_model.bin: a pickle, which inkling-compat never unpickles")


def test_a_setup_sglang_refuses_is_refused_before_torch_is_imported(tmp_path):
    """The check runs first: a refused setup is exit 1 with sglang's words, torch never imported
    (its import takes seconds), whatever `--device` says."""
    serve = tmp_path / "serve.yaml"
    serve.write_text((EXAMPLES / "serve.yaml").read_text().replace("max_lora_rank: 16", "max_lora_rank: 0"), encoding="utf-8")
    code = (
        "import sys\nfrom inkling_compat.cli import main\n"
        f"code = main(['run', '--config', {str(serve)!r}, '--model', {str(EXAMPLES / 'config.json')!r}])\n"
        "print('torch' in sys.modules, code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "False 1", done.stdout + done.stderr
    assert "refused: the runtime does not run a setup sglang would reject" in done.stdout
