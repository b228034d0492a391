"""The command's start-up shortcuts (inkling_compat/cli.py) change how fast it starts, never
what it prints: the stand-in for pydantic's plugin loader is what pydantic's own loader is with
every plugin disabled, and provides all that pydantic imports from it."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

from inkling_compat import cli

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter_pool.yaml"]
PYDANTIC = Path(pydantic.__file__).parent


def _names_pydantic_imports_from_loader() -> set[str]:
    names = set()
    for path in PYDANTIC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in ("_loader", "plugin._loader", "pydantic.plugin._loader"):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.Import) and any(a.name.endswith("plugin._loader") for a in node.names):
                names.add("(the module itself)")
    return names


def test_pydantic_imports_only_get_plugins_from_its_loader():
    assert _names_pydantic_imports_from_loader() == {"get_plugins"}


@pytest.mark.parametrize("value", cli._ALL_PLUGINS_OFF)
def test_pydantic_own_loader_returns_no_plugins_when_all_are_disabled(monkeypatch, value):
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", value)
    spec = importlib.util.spec_from_file_location("_real_pydantic_loader", PYDANTIC / "plugin" / "_loader.py")
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)

    def looked_up(**kwargs):
        raise AssertionError("pydantic looked for plugins although every plugin is disabled")

    real.entry_points = looked_up  # (this venv has no plugin: an empty answer would prove nothing)
    assert tuple(real.get_plugins()) == ()


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-c", code, *ARGS], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))  # fmt: skip


def test_the_command_prints_what_main_prints_in_process(capsys):
    code = cli.main(ARGS)
    in_process = capsys.readouterr().out
    run = _run(
        "import sys; from inkling_compat.cli import main; rc = main();"
        "print('metadata imported:', 'importlib.metadata' in sys.modules, file=sys.stderr); sys.exit(rc)"
    )
    assert (run.returncode, run.stdout) == (code, in_process)
    assert "metadata imported: False" in run.stderr  # the stand-in was used


def test_no_stand_in_when_some_plugins_may_load():
    run = _run(
        "import sys; from inkling_compat.cli import main; rc = main();"
        "print('stand-in:', getattr(sys.modules['pydantic.plugin._loader'], '__file__', None) is None, file=sys.stderr); sys.exit(rc)",
        env={"PYDANTIC_DISABLE_PLUGINS": "some-plugin"},
    )
    assert run.returncode == 0, run.stderr
    assert "stand-in: False" in run.stderr
