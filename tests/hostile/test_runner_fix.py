"""The harness's --fix step (runner.check_fix) tells each failure it exists for: a fix that
raises, one that writes a file the check then refuses, one that is not idempotent; and a fix
that writes nothing, or a config the check refuses from the start, is no failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hostile import cases, runner
from inkling_compat import fix as fix_module
from inkling_compat.errors import InputError


@pytest.fixture
def inv(tmp_path: Path) -> dict[str, Any]:
    r = {"seed": 0, "index": 0, "family": "type", "setup": "adapter_dir", "fleet_size": 3, "muts": []}
    return cases.materialize(r, tmp_path / "case")


class _Fixed:
    def __init__(self, written: bool) -> None:
        self.written, self.diff = written, "-a\n+b"


def _fake(monkeypatch: pytest.MonkeyPatch, act: Any) -> list[str]:
    calls: list[str] = []

    def apply_fixes(path: str, **_: Any) -> _Fixed:
        calls.append(path)
        return act(path, len(calls))

    monkeypatch.setattr(fix_module, "apply_fixes", apply_fixes)
    return calls


def test_the_real_fix_of_a_clean_config_is_no_failure(inv: dict[str, Any]) -> None:
    assert runner.check_fix(inv) is None


def test_a_fix_that_writes_nothing_runs_once(inv: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake(monkeypatch, lambda path, n: _Fixed(False))
    assert runner.check_fix(inv) is None
    assert len(calls) == 1 and calls[0].endswith("fixed-copy.yaml")


def test_a_written_file_the_check_refuses_is_a_failure(inv: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def act(path: str, n: int) -> _Fixed:
        Path(path).write_text("[unusable")
        raise InputError(path, "(file)", "not YAML")

    _fake(monkeypatch, act)
    assert runner.check_fix(inv)["sig"] == "fix-unusable"


def test_an_input_error_without_a_write_is_no_failure(inv: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def act(path: str, n: int) -> _Fixed:
        raise InputError(path, "(file)", "refused before any fix")

    _fake(monkeypatch, act)
    assert runner.check_fix(inv) is None


def test_a_fix_that_writes_again_is_not_idempotent(inv: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake(monkeypatch, lambda path, n: _Fixed(True))
    assert runner.check_fix(inv)["sig"] == "fix-not-idempotent"
    assert len(calls) == 2


def test_a_fix_that_raises_is_a_failure(inv: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def act(path: str, n: int) -> _Fixed:
        raise KeyError("boom")

    _fake(monkeypatch, act)
    assert runner.check_fix(inv)["sig"].startswith("fix:KeyError")
