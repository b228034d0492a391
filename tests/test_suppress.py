"""Inline suppression (engine/suppress.py): `# inkling-compat: ignore[rule-id] reason` on a line
of a YAML input silences that rule's problems placed on that line; each use is listed as
ignored with its reason, and one that silences nothing is a note of the report."""

from __future__ import annotations

import json
from pathlib import Path

from inkling_compat import cli
from inkling_compat.engine.suppress import parse

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
BROKEN = (EX / "broken/serve.yaml").read_text()  # line 5: `max_lora_rnk: 32`, an unknown key


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text(text)
    return path


def _check(capsys, *args: str) -> tuple[int, dict]:
    code = cli.main(["check", *args, "--model", str(EX / "config.json"), "--format", "json", "--isolated"])
    return code, json.loads(capsys.readouterr().out)


def test_parse_reads_ids_prefixes_and_reason():
    (s,) = parse("a: 1\nb: 2  # inkling-compat: ignore[unknown-config-key, sink-pool] kept on purpose\n", "f.yaml")
    assert (s.line, s.rules, s.reason) == (2, ("unknown-config-key", "sink-pool"), "kept on purpose")
    assert parse("a: 1  # inkling-compat ignore[x]\n", "f.yaml") == []  # (the colon is part of the syntax)


def test_a_suppression_silences_its_rule_on_its_line_and_says_so(tmp_path, capsys):
    lines = BROKEN.splitlines()
    assert lines[4].startswith("max_lora_rnk")
    lines[4] += "  # inkling-compat: ignore[unknown-config-key] our launcher reads it"
    config = _config(tmp_path, "\n".join(lines) + "\n")
    code, report = _check(capsys, "--config", str(config))
    assert "unknown-config-key" not in {p["rule_id"] for p in report["problems"]}
    (item,) = [i for i in report["ignored"] if i["rule_id"] == "unknown-config-key"]
    assert item["reason"] == "our launcher reads it" and item["by"] == f"{config}:5"
    assert not any(n.startswith("unused suppression") for n in report["coverage"]["notes"])
    assert code == 1  # (the other problems of the broken example stay)
    cli.main(["check", "--config", str(config), "--model", str(EX / "config.json"), "--isolated"])
    assert f"ignored unknown-config-key: our launcher reads it (by {config}:5)" in capsys.readouterr().out
    cli.main(["check", "--config", str(config), "--model", str(EX / "config.json"), "--isolated", "--format", "sarif"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    (silenced,) = [r for r in results if r["ruleId"] == "unknown-config-key"]
    assert silenced["suppressions"] == [{"kind": "inSource", "status": "accepted", "justification": "our launcher reads it"}]


def test_another_rule_or_another_line_is_not_silenced_and_is_reported_unused(tmp_path, capsys):
    lines = BROKEN.splitlines()
    lines[4] += "  # inkling-compat: ignore[sink-lora-multislot-needs-triton]"
    lines[2] += "  # inkling-compat: ignore[unknown-config-key] wrong line"
    config = _config(tmp_path, "\n".join(lines) + "\n")
    _, report = _check(capsys, "--config", str(config))
    assert "unknown-config-key" in {p["rule_id"] for p in report["problems"]}
    assert report["ignored"] == []
    unused = [n for n in report["coverage"]["notes"] if n.startswith("unused suppression")]
    assert unused == [
        f"unused suppression at {config}:3: ignore[unknown-config-key] silences no problem placed on that line",
        f"unused suppression at {config}:5: ignore[sink-lora-multislot-needs-triton] silences no problem placed on that line",
    ]


def test_an_adapter_manifest_line_can_be_silenced(tmp_path, capsys):
    manifest = (EX / "broken/adapter_pool.yaml").read_text().splitlines()
    where = next(i for i, line in enumerate(manifest) if "gate_up_lora_a" in line)
    manifest[where] += "  # inkling-compat: ignore[sink-pool-rank-mismatch] padded at load"
    path = tmp_path / "pool.yaml"
    path.write_text("\n".join(manifest) + "\n")
    _, report = _check(capsys, "--config", str(EX / "serve.yaml"), "--adapter", str(path))
    assert "sink-pool-rank-mismatch" not in {p["rule_id"] for p in report["problems"]}
    assert [i["reason"] for i in report["ignored"] if i["rule_id"] == "sink-pool-rank-mismatch"] == ["padded at load"]
