"""Every outcome of a check is visible in every format: problems left out by --ignore are
listed in the text with their reason, a --strict failure caused only by rules not checked
shows in text, JSON, github, SARIF, JUnit and concise (never an exit 1 with an empty
document), and a bare sglang `assert` reads as the condition that failed with its values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from inkling_compat import check
from inkling_compat.cli import main
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.report.formats import NAMES, get
from inkling_compat.report.outputs import render
from inkling_compat.testing.scenarios import example_arguments

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples" / "model" / "config.json")


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", "--isolated", *args])
    return code, capsys.readouterr().out


@pytest.fixture
def tp5(tmp_path):
    """A config whose TP size divides neither the heads nor the MoE width: two bare asserts."""
    config = tmp_path / "serve.yaml"
    config.write_text("tp_size: 5\n")
    return str(config)


@pytest.fixture
def lora_off(tmp_path):
    """No error, no warning; adapter rules not checked (no adapter): only --strict fails it."""
    config = tmp_path / "serve.yaml"
    config.write_text("tp_size: 4\n")
    return str(config)


def test_text_lists_ignored_problems_with_their_reason(capsys, tp5):
    code, out = _cli(capsys, "--config", tp5, "--model", MODEL, "--ignore", "inkling-attn-heads,inkling-moe")
    assert code == 0
    lines = out.splitlines()
    start = lines.index("2 ignored:")
    assert lines[start + 1] == "  ignored inkling-attn-heads-divisible-by-tp: ignored (inkling-attn-heads) (by (command line))"
    assert lines[start + 2] == "  ignored inkling-moe-intermediate-divisible-by-moe-tp: ignored (inkling-moe) (by (command line))"
    # sglang still raises the ignored assert first, and the headline says why it fails
    assert "would first raise inkling-attn-heads-divisible-by-tp (ignored: ignored (inkling-attn-heads))" in out
    assert "num_attention_heads 12 is not divisible by the attention TP size 5" in out.splitlines()[-1]


def test_strict_failure_of_rules_not_checked_in_every_format(capsys, lora_off):
    base = ["--config", lora_off, "--model", MODEL, "--strict"]
    report = check(lora_off, model=MODEL)
    unchecked = sorted(rule_id for ids in report.coverage.reasons.values() for rule_id in ids)
    assert report.ok and not report.warnings and unchecked, "the case needs rules not checked and nothing else"
    code, text = _cli(capsys, *base)
    assert code == 1 and f"--strict: fails: {len(unchecked)} rule(s) not checked (no adapter)" in text
    code, out = _cli(capsys, *base, "--format", "json")
    assert code == 1 and json.loads(out)["strict_failures"] == [f"{len(unchecked)} rule(s) not checked (no adapter): {', '.join(report.coverage.reasons['no adapter'])}"]
    code, out = _cli(capsys, *base, "--format", "github")
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert code == 1 and len(errors) == 1 and errors[0].startswith("::error title=inkling-compat --strict::")
    assert all(rule_id in errors[0] for rule_id in unchecked)
    code, out = _cli(capsys, *base, "--format", "sarif")
    invocation = json.loads(out)["runs"][0]["invocations"][0]
    notes = invocation["toolExecutionNotifications"]
    assert code == 1 and invocation["exitCode"] == 1 and [n["level"] for n in notes] == ["error"]
    assert sorted(notes[0]["properties"]["rule_ids"]) == unchecked
    code, out = _cli(capsys, *base, "--format", "junit")
    root = ET.fromstring(out)
    failed = sorted(case.get("name") for suite in root for case in suite if case.find("failure") is not None)
    assert code == 1 and failed == unchecked and root.get("failures") == str(len(unchecked))
    assert {case.find("failure").get("type") for suite in root for case in suite if case.find("failure") is not None} == {"not-checked"}
    code, out = _cli(capsys, *base, "--format", "concise")
    assert code == 1 and out.startswith("-: --strict ") and all(rule_id in out for rule_id in unchecked)
    code, out = _cli(capsys, *base, "--format", "gitlab")
    (issue,) = json.loads(out)
    assert code == 1 and issue["check_name"] == "inkling-compat --strict" and all(rule_id in issue["description"] for rule_id in unchecked)
    for fmt in NAMES:  # (every format of the table: never an exit 1 with an empty document)
        code, out = _cli(capsys, *base, "--format", fmt)
        assert code == 1 and out.strip() and "not checked" in out, fmt


def test_without_strict_rules_not_checked_fail_nothing(capsys, lora_off):
    """The same inputs without --strict: exit 0, no error annotation, no JUnit failure."""
    base = ["--config", lora_off, "--model", MODEL]
    code, out = _cli(capsys, *base, "--format", "github")
    assert code == 0 and "::error" not in out
    code, out = _cli(capsys, *base, "--format", "junit")
    assert code == 0 and ET.fromstring(out).get("failures") == "0"
    code, out = _cli(capsys, *base, "--format", "sarif")
    assert "toolExecutionNotifications" not in json.loads(out)["runs"][0]["invocations"][0]


def test_two_bare_asserts_each_say_their_own_condition(capsys, tp5):
    """Both messages are sglang's empty text: neither reads as "same as above"."""
    code, out = _cli(capsys, "--config", tp5, "--model", MODEL)
    assert code == 1 and "same AssertionError as above" not in out
    assert "AssertionError: (bare assert: num_attention_heads 12 is not divisible by the attention TP size 5)" in out
    assert "AssertionError: (bare assert: intermediate_size 768 is not divisible by the MoE TP size 5 (tp_size / ep_size))" in out


BARE = [c.rule for c in load_rules() if c.rule.message == "" and c.rule.origin != "inkling-compat"]


def test_every_empty_message_is_a_bare_assert_with_because():
    assert BARE, "the shipped rules have bare asserts"
    assert all(rule.because for rule in BARE)


@pytest.mark.parametrize("rule", BARE, ids=lambda rule: rule.id)
@pytest.mark.parametrize("fmt", NAMES)
def test_a_bare_assert_shows_its_condition_with_values_in_every_format(rule, fmt):
    report = check(**example_arguments(rule.examples.fire[0].input))
    problem = next(p for p in report.problems if p.rule_id == rule.id)
    assert problem.message == "" and problem.because and "{" not in problem.because
    assert re.search(r"\d|'", problem.because) or "{" not in rule.because, problem.because  # the values, not the template
    shown = render(fmt, report, load_rules())
    needle = json.dumps(problem.because)[1:-1] if get(fmt).syntax == "json" else problem.because
    if fmt == "junit":
        needle = needle.replace("'", "&apos;") if needle not in shown else needle
    if fmt == "github":
        needle = needle.replace(",", "%2C") if needle not in shown else needle
    assert needle in shown, (fmt, problem.because)


def test_heads_assert_names_the_count_that_fails():
    report = check({"tp_size": 4}, model={"architectures": ["InklingForConditionalGeneration"], "num_attention_heads": 12, "swa_num_attention_heads": 6, "swa_num_key_value_heads": 2})
    heads = next(p for p in report.problems if p.rule_id == "inkling-attn-heads-divisible-by-tp")
    assert heads.because == "swa_num_attention_heads 6 is not divisible by the attention TP size 4"
    report = check({"tp_size": 4}, model={"architectures": ["InklingForConditionalGeneration"], "num_key_value_heads": 6})
    kv = next(p for p in report.problems if p.rule_id == "inkling-attn-kv-heads-divisible-by-tp")
    assert kv.because == "num_key_value_heads 6 neither is divisible by nor divides the attention TP size 4"
