"""`--fix` / `--diff` honour `--format` for a launch command as for a config file (SARIF with
`fixes`, JUnit, GitHub: the document is the report, the diff and summary go to stderr), and
control characters from any input are escaped in every format, on stdout and stderr alike."""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from inkling_compat import cli
from inkling_compat.report.formats import NAMES, get

ROOT = Path(__file__).resolve().parent.parent.parent
MODEL, ADAPTER = ROOT / "examples" / "model", ROOT / "examples" / "adapter"
HOSTILE = "x\x1b[2J\x07\u202ey"  # clears the screen, rings, reverses what follows
LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", str(MODEL), "--lora-paths", f"a={ADAPTER}", "--served-model-name", HOSTILE, "--max-loras-per-batch", "8", "--lora-backend", "csgmv"]
CONFIG = f"enable_lora: true\nmax_lora_rank: 16\nlora_target_modules: [all]\nmax_loras_per_batch: 8\nlora_backend: csgmv\nmodel_path: {MODEL}\nlora_paths: [a={ADAPTER}]\nserved_model_name: \"x\\e[2J\\a\\u202ey\"\n"
SCHEMA_FILE = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _parsed(fmt: str, out: str):
    if get(fmt).syntax == "json":
        return json.loads(out)
    if get(fmt).syntax == "xml":
        return ET.fromstring(out)
    if fmt == "github":
        assert all(line.startswith("::") for line in out.splitlines() if line), out
    return out


@pytest.mark.parametrize("fmt", NAMES)
@pytest.mark.parametrize("mode", ["--fix", "--diff"])
@pytest.mark.parametrize("source", ["launch", "config"])
def test_fix_output_is_the_format_asked_for_and_escapes_control_characters(fmt: str, mode: str, source: str, tmp_path: Path) -> None:
    if source == "launch":
        argv = ["check", mode, "--format", fmt, "--", *LAUNCH]
    else:
        config = tmp_path / "serve.yaml"
        config.write_text(CONFIG)
        argv = ["check", mode, "--format", fmt, "--config", str(config)]
    code, out, err = _run(argv)
    assert code in (0, 1), err
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream, stream
    document = _parsed(fmt, out)
    if fmt == "text":
        assert ("would fix: " if mode == "--diff" else "fixed: ") in out
    elif fmt == "json":
        assert {f["rule_id"] for f in document["fixes"] if f.get("applied")} >= {"sink-lora-multislot-needs-triton"}
    else:
        assert ("would fix: " if mode == "--diff" else "fixed: ") in err  # the summary on stderr
    if fmt == "sarif":
        run = document["runs"][0]
        assert {f["rule_id"] for f in run["properties"]["fixes"]} >= {"sink-lora-multislot-needs-triton"}
        if source == "launch":
            assert "--lora-backend triton" in run["properties"]["command"]
        if source == "config" and mode == "--diff":
            (result,) = [r for r in run["results"] if r["ruleId"] == "sink-lora-multislot-needs-triton"]
            (change,) = result["fixes"][0]["artifactChanges"]
            assert "lora_backend: triton" in change["replacements"][0]["insertedContent"]["text"]
        jsonschema = pytest.importorskip("jsonschema")
        jsonschema.Draft4Validator(json.loads(SCHEMA_FILE.read_bytes())).validate(document)
