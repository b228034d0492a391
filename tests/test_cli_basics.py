"""What users of Ruff, cfn-lint and Spectral expect of a checker's command line: NO_COLOR and
--color, --exit-zero and --fail-on, standard input, a one-line-per-problem format, explain
as JSON, a --help naming every command, clear words for a wrong --platform or a fleet given
to --adapter; and check() with select/ignore/settings, JUnit's not-applicable rules skipped."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from inkling_compat import check, cli
from inkling_compat.inputs import stdin

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
GOOD = ["--config", str(EX / "serve.yaml"), "--model", str(EX / "config.json"), "--adapter", str(EX / "adapter_pool.yaml")]
BROKEN = ["--config", str(EX / "broken/serve.yaml"), "--model", str(EX / "config.json"), "--adapter", str(EX / "broken/adapter_pool.yaml")]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def _fresh_stdin():
    stdin.reset()
    yield
    stdin.reset()


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _feed(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


# --color and NO_COLOR (report/gate.use_color)


def test_no_color_wins_over_a_terminal_and_always_wins_over_no_color(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    _, painted, _ = _run(capsys, "check", *BROKEN)
    assert ANSI.search(painted)
    monkeypatch.setenv("NO_COLOR", "1")
    _, plain, _ = _run(capsys, "check", *BROKEN)
    assert not ANSI.search(plain) and plain == ANSI.sub("", painted)
    _, forced, _ = _run(capsys, "check", *BROKEN, "--color", "always")
    assert ANSI.search(forced)
    monkeypatch.delenv("NO_COLOR")
    _, never, _ = _run(capsys, "check", *BROKEN, "--color", "never")
    assert not ANSI.search(never)


def test_color_is_documented_in_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--color {auto,always,never}" in out and "NO_COLOR" in out


# --exit-zero and --fail-on


def test_exit_zero_exits_0_on_problems_but_not_on_unusable_input(capsys, tmp_path):
    assert _run(capsys, "check", *BROKEN)[0] == 1
    assert _run(capsys, "check", *BROKEN, "--exit-zero")[0] == 0
    assert _run(capsys, "check", "--config", str(tmp_path / "missing.yaml"), "--exit-zero")[0] == 2


def _warning_only(tmp_path: Path) -> list[str]:
    """A setup whose only problems are warnings: the good example with an unread .bin adapter."""
    adapter = tmp_path / "bin-adapter"
    shutil.copytree(EX / "adapter", adapter)
    (adapter / "adapter_model.safetensors").rename(adapter / "adapter_model.bin")
    return ["--config", str(EX / "serve.yaml"), "--model", str(EX / "config.json"), "--adapter", str(adapter)]


def test_fail_on_is_a_level_and_strict_is_not_checked(capsys, tmp_path):
    args = _warning_only(tmp_path)
    code, out, _ = _run(capsys, "check", *args, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and any(p["severity"] == "warning" for p in report["problems"])
    assert _run(capsys, "check", *args, "--fail-on", "error")[0] == 0
    code, out, _ = _run(capsys, "check", *args, "--fail-on", "warning", "--format", "json")
    assert code == 1 and json.loads(out)["exit_code"] == 1  # (the document says what the command exits)
    assert _run(capsys, "check", *args, "--fail-on", "warning", "--exit-zero")[0] == 0
    # Rules not checked (no --model) fail `not-checked` and `--strict` alike, not `warning`.
    partial = ["--config", str(EX / "serve.yaml"), "--adapter", str(EX / "adapter_pool.yaml")]
    assert _run(capsys, "check", *partial, "--fail-on", "warning")[0] == 0
    assert _run(capsys, "check", *partial, "--fail-on", "not-checked")[0] == 1
    assert _run(capsys, "check", *partial, "--strict")[0] == 1
    assert _run(capsys, "check", *GOOD, "--fail-on", "not-checked")[0] == _run(capsys, "check", *GOOD, "--strict")[0]


# standard input


def test_config_from_standard_input_is_read_and_placed(capsys, monkeypatch):
    _feed(monkeypatch, (EX / "broken/serve.yaml").read_text())
    code, out, _ = _run(capsys, "check", "--config", "-", "--model", str(EX / "config.json"), "--format", "concise")
    assert code == 1
    assert out.splitlines()[0].startswith("-:5:1: unknown-config-key ")  # (line 5 holds max_lora_rnk)


def test_adapter_manifest_from_standard_input(capsys, monkeypatch):
    _feed(monkeypatch, (EX / "broken/adapter_pool.yaml").read_text())
    code, out, _ = _run(capsys, "check", "--config", str(EX / "serve.yaml"), "--model", str(EX / "config.json"), "--adapter", "-", "--format", "json")
    assert code == 1
    assert "sink-pool-rank-mismatch" in {p["rule_id"] for p in json.loads(out)["problems"]}


def test_standard_input_has_the_file_limits_and_errors(capsys, monkeypatch):
    _feed(monkeypatch, "a: [1\n")
    code, _, err = _run(capsys, "check", "--config", "-")
    assert code == 2 and err.startswith("inkling-compat: error: <stdin>: line ") and "malformed YAML" in err
    stdin.reset()
    _feed(monkeypatch, "- 1\n")
    code, _, err = _run(capsys, "check", "--config", "-")
    assert code == 2 and "<stdin>: (root): expected a mapping" in err
    code, _, err = _run(capsys, "check", "--config", "-", "--adapter", "-")
    assert code == 2 and "standard input can be read once" in err


# --format concise


def test_concise_is_one_line_per_problem_at_its_place(capsys):
    code, out, _ = _run(capsys, "check", *BROKEN, "--format", "concise")
    report = check(str(EX / "broken/serve.yaml"), str(EX / "broken/adapter_pool.yaml"), model=str(EX / "config.json"))
    lines = out.splitlines()
    assert code == 1 and len(lines) == len(report.problems)
    for line, problem in zip(lines, report.problems):
        assert re.match(r"^[^:\s]+(:\d+:\d+)?: \S+ ", line), line
        assert f": {problem.rule_id} " in line
    assert any(re.match(r"^.*examples/broken/serve\.yaml:5:1: unknown-config-key ", line) for line in lines)
    assert _run(capsys, "check", *GOOD, "--format", "concise")[1] == ""


# explain --format json


def test_explain_json_names_the_rules_best_first(capsys):
    text = "ValueError: Inkling shared-sink LoRA rank dimensions do not match"
    code, out, _ = _run(capsys, "explain", "--format", "json", text)
    doc = json.loads(out)
    assert code == 0 and doc["ok"]
    (finding,) = doc["findings"]
    assert finding["matches"][0]["rule_id"] == "sink-pool-rank-mismatch"
    assert finding["matches"][0]["fixes"] and finding["matches"][0]["url"].endswith("sink-pool-rank-mismatch.md")
    code, out, _ = _run(capsys, "explain", "--format", "json", "nothing sglang says")
    assert code == 1 and json.loads(out) == {"ok": False, "findings": [], "releases": []}


# --help, --platform, --adapter


def test_top_level_help_names_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for command in ("check", "rules", "explain", "run"):
        assert re.search(rf"^\s+{command}\s+\S", out, re.M), command


def test_an_unknown_platform_lists_the_presets(capsys):
    from inkling_compat.inputs.models import PLATFORM_PRESETS

    code, _, err = _run(capsys, "check", *GOOD, "--platform", "h2000")
    assert code == 2
    assert err.startswith("inkling-compat: error: h2000: (file): no such file, and not a platform preset (--platform takes a file or one of: h200, ")
    assert all(name in err for name in PLATFORM_PRESETS) and "did you mean 'h200'?" in err


def test_a_fleet_given_to_adapter_points_at_adapter_dir(capsys, tmp_path):
    for name in ("a", "b"):
        shutil.copytree(EX / "adapter", tmp_path / "fleet" / name)
    code, _, err = _run(capsys, "check", "--config", str(EX / "serve.yaml"), "--adapter", str(tmp_path / "fleet"))
    assert code == 2 and "use --adapter-dir for a fleet" in err
    assert _run(capsys, "check", "--config", str(EX / "serve.yaml"), "--model", str(EX / "config.json"), "--adapter-dir", str(tmp_path / "fleet"))[0] == 0


# check() and JUnit


def test_check_takes_select_ignore_and_settings(tmp_path):
    args = (str(EX / "broken/serve.yaml"), str(EX / "broken/adapter_pool.yaml"))
    everything = check(*args, model=str(EX / "config.json"))
    ignored = check(*args, model=str(EX / "config.json"), ignore="sink-pool")
    assert {p.rule_id for p in ignored.problems} == {p.rule_id for p in everything.problems if not p.rule_id.startswith("sink-pool-")}
    assert {i["rule_id"] for i in ignored.ignored} == {p.rule_id for p in everything.problems if p.rule_id.startswith("sink-pool-")}
    selected = check(*args, model=str(EX / "config.json"), select=["unknown-config-key"])
    assert [p.rule_id for p in selected.problems] == ["unknown-config-key"]
    settings = tmp_path / ".inkling-compat.yaml"
    settings.write_text("ignore:\n  - rule: unknown-config-key\n    reason: a key of our own\n")
    by_file = check(*args, model=str(EX / "config.json"), settings=settings)
    assert "unknown-config-key" not in {p.rule_id for p in by_file.problems}
    assert {i["rule_id"]: i["reason"] for i in by_file.ignored}["unknown-config-key"] == "a key of our own"


def test_junit_skips_the_rules_that_do_not_apply(capsys):
    code, out, _ = _run(capsys, "check", *GOOD, "--format", "junit")
    report = check(str(EX / "serve.yaml"), str(EX / "adapter_pool.yaml"), model=str(EX / "config.json"))
    root = ET.fromstring(out)
    cases = list(root.iter("testcase"))
    passed = [c for c in cases if not list(c)]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert code == 0 and len(passed) == report.coverage.checked
    assert sum(1 for c in skipped if c.find("skipped").get("message").startswith("not applicable")) == report.coverage.not_applicable
