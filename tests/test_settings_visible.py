"""Settings are visible and bounded (engine/selection.py): the outputs name the settings file
and every override or ignore it applied, with its line; a settings file is read with the inputs'
caps (size, a regular file), so a sparse 3 GB pyproject, a FIFO or /dev/zero is exit 2 at once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from in_process import run_main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path):
    """The broken example two folders below a settings file that hides it."""
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    for name in ("serve.yaml", "adapter_pool.yaml"):
        shutil.copy(ROOT / "examples" / "broken" / name, deep / name)
    shutil.copy(ROOT / "examples" / "config.json", deep / "config.json")
    return tmp_path


@pytest.fixture
def run_check(capsys, monkeypatch):
    """`inkling-compat check ARGS` run in `cwd`, in this process (tests/in_process.py); a check
    still running after 60 s fails the test instead of hanging it."""

    def hung(*_):
        raise TimeoutError("the check ran past 60 s")

    def run(cwd: Path, *args: str):
        monkeypatch.chdir(cwd)
        previous = signal.signal(signal.SIGALRM, hung)
        signal.alarm(60)
        try:
            return run_main(capsys, "check", *args)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return run


ARGS = ("--config", "b/serve.yaml", "--model", "b/config.json", "--adapter", "b/adapter_pool.yaml")


def test_a_severity_override_and_ignore_are_named_with_their_line(project, run_check):
    (project / ".inkling-compat.yaml").write_text("ignore:\n  - unknown-config-key\nseverity:\n  sink-: warning\n", encoding="utf-8")
    done = run_check(project / "a", *ARGS)
    assert done.returncode == 0, done.stdout + done.stderr  # what the settings hid...
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert "note: settings: ../.inkling-compat.yaml" in notes  # ...is said
    assert any(n.startswith("note: 2 error(s) reported as warning by ../.inkling-compat.yaml:4 (sink-)") for n in notes), notes
    js = json.loads(run_check(project / "a", *ARGS, "--format", "json").stdout)
    assert "settings: ../.inkling-compat.yaml" in js["selection"]["notes"]
    assert js["selection"]["ignore"][0]["line"] == 2
    sarif = json.loads(run_check(project / "a", *ARGS, "--format", "sarif").stdout)
    texts = [n["message"]["text"] for n in sarif["runs"][0]["invocations"][0]["toolConfigurationNotifications"]]
    assert any("reported as warning by ../.inkling-compat.yaml:4" in t for t in texts), texts


def test_a_pyproject_table_is_named_with_its_line(project, run_check):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.inkling-compat]\nseverity = {"sink-" = "warning"}\n', encoding="utf-8")
    done = run_check(project / "a", *ARGS)
    assert "reported as warning by ../pyproject.toml:5 (sink-)" in done.stdout, done.stdout


@pytest.mark.parametrize("kind", ["sparse", "fifo", "devzero"])
@pytest.mark.parametrize("name", ["pyproject.toml", ".inkling-compat.yaml"])
def test_a_hostile_settings_file_is_exit_2_at_once(project, kind, name, run_check):
    target = project / "a" / "b" / name
    if kind == "sparse":
        with open(target, "wb") as handle:
            handle.truncate(3 * 1024**3)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        os.symlink("/dev/zero", target)
    start = time.perf_counter()
    done = run_check(project / "a", *ARGS)
    assert time.perf_counter() - start < 20
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and name in done.stderr
    explicit = run_check(project / "a", *ARGS, "--settings", f"b/{name}")
    assert explicit.returncode == 2 and explicit.stderr.count("\n") == 1
