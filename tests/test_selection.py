"""--select / --ignore and the project's settings (engine/selection.py): ignored problems are
listed, not dropped; severity overrides; unusable settings are exit 2 naming file and key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from inkling_compat.cli import main
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.engine.selection import Selection, apply, build_selection, find_settings, matches
from inkling_compat.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
IDS = [c.rule.id for c in load_rules()]
BROKEN_ERRORS = {"unknown-config-key", "sink-lora-multislot-needs-triton", "sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"}


@pytest.fixture
def project(tmp_path):
    """A copy of the broken example in a project folder of its own (no settings yet)."""
    (tmp_path / "deploy").mkdir()
    shutil.copy(EX / "broken" / "serve.yaml", tmp_path / "deploy" / "serve.yaml")
    shutil.copy(EX / "broken" / "adapter_pool.yaml", tmp_path / "deploy" / "adapter_pool.yaml")
    shutil.copy(EX / "config.json", tmp_path / "deploy" / "config.json")
    return tmp_path


def check_json(capsys, project, *extra):
    args = ["check", "--config", str(project / "deploy" / "serve.yaml"), "--model", str(project / "deploy" / "config.json"), "--adapter", str(project / "deploy" / "adapter_pool.yaml"), "--format", "json", *extra]
    code = main(args)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_patterns_match_whole_words():
    assert matches("sink-pool-rank-mismatch", "sink-pool-rank-mismatch")
    assert matches("sink", "sink-pool-rank-mismatch") and matches("sink-", "sink-pool-rank-mismatch")
    assert matches("sink-pool", "sink-pool-rank-mismatch")
    assert not matches("sin", "sink-pool-rank-mismatch")
    assert not matches("sink-pool-rank-mis", "sink-pool-rank-mismatch")
    assert not matches("pool", "sink-pool-rank-mismatch")


def test_ignore_lists_the_problem_as_ignored(capsys, project):
    code, data, _ = check_json(capsys, project, "--ignore", "unknown-config-key,sink-lora-multislot-needs-triton")
    assert code == 1
    assert {p["rule_id"] for p in data["problems"]} == BROKEN_ERRORS - {"unknown-config-key", "sink-lora-multislot-needs-triton"}
    ignored = {item["rule_id"]: item for item in data["ignored"]}
    assert set(ignored) == {"unknown-config-key", "sink-lora-multislot-needs-triton"}
    assert ignored["unknown-config-key"]["by"] == "(command line)"
    assert ignored["unknown-config-key"]["locations"][0]["line"] == 5  # still placed
    assert data["selection"]["ignore"][0] == {"rule": "unknown-config-key", "reason": "", "by": "(command line)"}


def test_ignoring_every_error_passes(capsys, project):
    code, data, _ = check_json(capsys, project, "--ignore", "unknown-config-key", "--ignore", "sink")
    assert code == 0 and data["ok"] is True and data["problems"] == []
    assert {item["rule_id"] for item in data["ignored"]} == BROKEN_ERRORS


def test_select_a_prefix(capsys, project):
    code, data, _ = check_json(capsys, project, "--select", "sink-pool")
    assert {p["rule_id"] for p in data["problems"]} == {"sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"}
    reasons = {item["rule_id"]: item["reason"] for item in data["ignored"]}
    assert reasons["unknown-config-key"] == "not selected (sink-pool)"


@pytest.mark.parametrize("flag", ["--ignore", "--select"])
def test_unknown_rule_on_the_command_line_is_exit_2(flag, capsys, project):
    code, data, err = check_json(capsys, project, flag, "sink-pool-rank-mismatc")
    assert code == 2
    assert data["input_error"]["file"] == "(command line)" and data["input_error"]["field"] == flag
    assert "did you mean 'sink-pool-rank-mismatch'?" in data["input_error"]["reason"]
    assert len(err.strip().splitlines()) == 1


def test_settings_yaml_found_above_the_config(capsys, project):
    (project / ".inkling-compat.yaml").write_text(
        "ignore:\n  - rule: unknown-config-key\n    reason: the typo is a comment for the team\nseverity:\n  sink-pool-intermediate-mismatch: warning\n"
    )
    code, data, _ = check_json(capsys, project)
    (ignored,) = data["ignored"]
    assert ignored["rule_id"] == "unknown-config-key"
    assert ignored["reason"] == "the typo is a comment for the team"
    assert ignored["by"] == str(project / ".inkling-compat.yaml")
    severities = {p["rule_id"]: p["severity"] for p in data["problems"]}
    assert severities["sink-pool-intermediate-mismatch"] == "warning"
    assert data["selection"]["settings_file"] == str(project / ".inkling-compat.yaml")
    code, data, _ = check_json(capsys, project, "--isolated")
    assert data["ignored"] == [] and data["selection"] is None


def test_pyproject_table(capsys, project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.inkling-compat]\nselect = ["sink-", "unknown-config-key"]\nignore = [{rule = "sink-lora-multislot-needs-triton", reason = "triton is set at deploy time"}]\n'
    )
    code, data, _ = check_json(capsys, project)
    assert {p["rule_id"] for p in data["problems"]} == BROKEN_ERRORS - {"sink-lora-multislot-needs-triton"}
    assert data["ignored"][0]["reason"] == "triton is set at deploy time"


def test_yaml_settings_win_over_pyproject_in_one_folder(project):
    (project / "pyproject.toml").write_text("[tool.inkling-compat]\nignore = ['sink']\n")
    (project / ".inkling-compat.yaml").write_text("ignore: [unknown-config-key]\n")
    assert find_settings(project / "deploy" / "serve.yaml") == project / ".inkling-compat.yaml"


def test_pyproject_without_the_table_is_not_a_settings_file(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    found = find_settings(project / "deploy" / "serve.yaml")
    assert found is None or not str(found).startswith(str(project))


@pytest.mark.parametrize(
    "name, text, field",
    [
        (".inkling-compat.yaml", "ignore:\n  - sink-pool-rank-mismatc\n", "ignore[0]"),
        (".inkling-compat.yaml", "ignore:\n  - rule: nope-nothing\n    reason: x\n", "ignore[0].rule"),
        (".inkling-compat.yaml", "severity:\n  sink-pool-rank-mismatch: fatal\n", "severity.sink-pool-rank-mismatch"),
        (".inkling-compat.yaml", "ignor: [sink]\n", "ignor"),
        (".inkling-compat.yaml", "ignore:\n  - rule: sink\n    reasn: x\n", "ignore[0].reasn"),
        ("pyproject.toml", "[tool.inkling-compat]\nignore = ['sink-pool-rank-mismatc']\n", "tool.inkling-compat.ignore[0]"),
        ("pyproject.toml", "[tool.inkling-compat\nignore = 1\n", "tool.inkling-compat"),
    ],
)
def test_unusable_settings_are_exit_2_naming_file_and_key(name, text, field, capsys, project):
    (project / name).write_text(text)
    code, data, err = check_json(capsys, project)
    assert code == 2
    assert data["input_error"]["file"] == str(project / name)
    assert data["input_error"]["field"] == field
    assert len(err.strip().splitlines()) == 1


def test_unknown_id_in_settings_says_did_you_mean(capsys, project):
    (project / ".inkling-compat.yaml").write_text("ignore: [sink-pool-rank-mismatc]\n")
    _, data, _ = check_json(capsys, project)
    assert "did you mean 'sink-pool-rank-mismatch'?" in data["input_error"]["reason"]


def test_the_hooks_checks_key_is_allowed(capsys, project):
    (project / ".inkling-compat.yaml").write_text("checks:\n  - config: deploy/serve.yaml\nignore: [unknown-config-key]\n")
    code, data, _ = check_json(capsys, project)
    assert code == 1 and [i["rule_id"] for i in data["ignored"]] == ["unknown-config-key"]


def test_ignored_problems_in_sarif_and_junit(capsys, project):
    base = ["check", "--config", str(project / "deploy" / "serve.yaml"), "--model", str(project / "deploy" / "config.json"), "--adapter", str(project / "deploy" / "adapter_pool.yaml"), "--ignore", "unknown-config-key"]
    main([*base, "--format", "sarif"])
    log = json.loads(capsys.readouterr().out)
    suppressed = [r for r in log["runs"][0]["results"] if r.get("suppressions")]
    assert [r["ruleId"] for r in suppressed] == ["unknown-config-key"]
    assert suppressed[0]["suppressions"][0]["kind"] == "external"
    main([*base, "--format", "junit"])
    root = ET.fromstring(capsys.readouterr().out)
    case = next(c for s in root for c in s if c.get("name") == "unknown-config-key")
    assert case.find("skipped").get("message").startswith("ignored")
    main([*base, "--format", "github"])
    assert "unknown-config-key" not in capsys.readouterr().out


def test_apply_leaves_the_report_as_it_is():
    from inkling_compat import check

    report = check(str(EX / "broken" / "serve.yaml"), str(EX / "broken" / "adapter_pool.yaml"), model=str(EX / "config.json"))
    before = [p.rule_id for p in report.problems]
    selected = apply(report, build_selection(IDS, ignore=["sink"]))
    assert [p.rule_id for p in report.problems] == before
    assert [p.rule_id for p in selected.problems] == ["unknown-config-key"]
    assert apply(report, Selection()) is report


def test_build_selection_checks_every_pattern():
    with pytest.raises(InputError) as info:
        build_selection(IDS, select=["sink,,  ,lora-nothing-like-this"])
    assert info.value.field == "--select"


@pytest.mark.parametrize("ours", [False, True])
def test_a_hostile_pyproject_is_never_a_crash(ours, capsys, project):
    nested = "a = " + "[" * 5000 + "]" * 5000 + "\n"
    (project / "pyproject.toml").write_text(("[tool.inkling-compat]\n" if ours else "") + nested)
    code, data, err = check_json(capsys, project)
    if ours:  # our table, unreadable: exit 2 naming it
        assert code == 2 and data["input_error"]["field"] == "tool.inkling-compat"
    else:  # someone else's pyproject: not a settings file
        assert code == 1 and data["selection"] is None


def test_only_a_pyproject_naming_the_table_is_parsed():
    from inkling_compat.engine.selection import _table_forms

    mentions = _table_forms()[0]
    for text in (b"[tool.inkling-compat]", b"[[tool.inkling-compat.checks]]", b"tool.inkling-compat.select = []", b"[tool]\ninkling-compat = {}", b'[tool."inkling-compat"]', b"[tool.inkling-compat\n"):
        assert mentions.search(text), text
    for text in (b'[project]\nname = "inkling-compat"\nversion = "1"\n', b"# run inkling-compat check in CI\n"):
        assert not mentions.search(text), text


def test_a_script_entry_named_inkling_compat_is_not_our_table(capsys, project):
    from inkling_compat.engine.selection import _names_table

    scripts = b'[project.scripts]\ninkling-compat = "inkling_compat.cli:main"\n'
    assert not _names_table(scripts) and not _names_table(b'"inkling-compat" = \'x\'\n')
    for text in (b'[tool]\ninkling-compat = "x"\n', b'[ "tool" ]  # ours\ninkling-compat = "x"\n', scripts + b"[tool.inkling-compat]\nselect = []\n", b"[tool]\ninkling-compat = {}"):
        assert _names_table(text), text
    (project / "pyproject.toml").write_text('[tool]\ninkling-compat = "x"\n')
    code, data, _ = check_json(capsys, project)
    assert code == 2 and data["input_error"]["field"] == "tool.inkling-compat", data
    (project / "pyproject.toml").write_text(scripts.decode() + "[project]\nname = 'x'\n")
    code, data, _ = check_json(capsys, project)
    assert code == 1 and data["selection"] is None


def _names_table_by_regex(raw: bytes) -> bool:
    """`_names_table` as its regexes define it (`_table_forms`): the scanner must agree."""
    from inkling_compat.engine.selection import _table_forms

    if b"inkling-compat" not in raw:
        return False
    mentions, string_key, header = _table_forms()
    for mention in mentions.finditer(raw):
        line = raw.rfind(b"\n", 0, mention.start()) + 1
        if not string_key.match(raw, line):
            return True
        headers = [m.group(1) for m in header.finditer(raw, 0, line)]
        if headers and headers[-1].replace(b" ", b"").replace(b"\t", b"").strip(b"\"'") == b"tool":
            return True
    return False


_TABLE_PIECES = (
    b"inkling-compat", b"tool", b"[", b"]", b".", b"=", b'"', b"'", b" ", b"\t", b"\n", b"\r\n", b"#", b"x", b"-", b"_", b"{}",
    b"[tool]", b"[project.scripts]", b"[tool.inkling-compat]", b"\xff",
)  # fmt: skip


def test_the_table_scan_reads_as_its_regexes():
    """The scanner `_names_table` (no regex compiled at a check's start) decides as the three
    regexes of `_table_forms` do, on the cases above and on texts made of the pieces they read."""
    import random

    from inkling_compat.engine.selection import _names_table

    cases = [
        b'[project.scripts]\ninkling-compat = "inkling_compat.cli:main"\n', b'"inkling-compat" = \'x\'\n', b'[tool]\ninkling-compat = "x"\n',
        b'[ "tool" ]  # ours\ninkling-compat = "x"\n', b"[tool]\ninkling-compat = {}", b"[tool.inkling-compat]", b"[[tool.inkling-compat.checks]]",
        b"tool.inkling-compat.select = []", b'[tool."inkling-compat"]', b"[tool.inkling-compat\n", b"# run inkling-compat check in CI\n",
        b'[project]\nname = "inkling-compat"\n', b"inkling-compat", b'[tool]\r\ninkling-compat = "x"\n', b'[tool] # x\r\ninkling-compat = "x"',
        b"[[ tool ]]\n\tinkling-compat\t=\t'x'", b'[tool]]]\ninkling-compat = "x"', b"[ tool . \"inkling-compat", b"tool.inkling-compat",
        b'\ninkling-compat = "x"', b'[tool]\n\ninkling-compat="x"\n[other]\ninkling-compat = "y"', b"[t-o_o.l]\ninkling-compat='x'",
        (Path(__file__).resolve().parent.parent / "pyproject.toml").read_bytes(),
    ]  # fmt: skip
    chooser = random.Random(31)
    for _ in range(6000):
        cases.append(b"".join(chooser.choice(_TABLE_PIECES) for _ in range(chooser.randint(1, 14))))
    for text in cases:
        assert _names_table(text) == _names_table_by_regex(text), text


def test_a_pyproject_of_many_mentions_is_scanned_in_linear_time():
    """A pyproject with a string key named `inkling-compat` on each of 50,000 lines (or all on
    one line) is not ours, decided in one pass: reading the headers above each mention again
    (the regexes' way) took minutes for this megabyte."""
    import time

    from inkling_compat.engine.selection import _names_table

    for raw in (b"[project]\n" + b'inkling-compat = "x"\n' * 50_000, b'inkling-compat = "x" ' * 50_000):
        started = time.perf_counter()
        assert not _names_table(raw)
        assert time.perf_counter() - started < 10


def test_a_selection_never_changes_what_sglang_raises_first():
    """--select / --ignore change what is shown; sglang still raises the left-out error first,
    and the report says so instead of naming a later error as sglang's first."""
    from inkling_compat import check
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.engine.selection import apply, build_selection
    from inkling_compat.report.text import render_text

    root = Path(__file__).resolve().parent.parent / "examples"
    report = check(str(root / "broken" / "serve.yaml"), str(root / "broken" / "adapter_pool.yaml"), model=str(root / "config.json"))
    first = report.first
    ids = [c.rule.id for c in load_rules()]
    shown = apply(report, build_selection(ids, select=["sink-pool"], ignore=[], settings_file=None))
    assert shown.first_ignored["rule_id"] == first.rule_id
    assert shown.headline_label().startswith("of the problems shown")
    assert f"would first raise {first.rule_id} (ignored" in render_text(shown)
    assert shown.to_dict()["first_ignored"]["rule_id"] == first.rule_id
    kept = apply(report, build_selection(ids, select=[], ignore=["unknown-config-key"], settings_file=None))
    assert kept.first_ignored is None and kept.first == first
