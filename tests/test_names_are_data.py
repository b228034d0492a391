"""Every name is data (report/escape.py, inputs/adapter_dir.as_text): a folder name that is not
UTF-8 or holds an escape sequence, or a key with control characters, is that adapter's result
or that key's problem, shown escaped in every output format; never exit 3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest

from inkling_compat.report.escape import shown
from inkling_compat.report.formats import NAMES, get

ROOT = Path(__file__).resolve().parent.parent
FORMATS = NAMES  # every output format (report/formats.py)
BAD = b"bad\xff\x1b[8m\xe2\x80\xaename"  # not UTF-8, an escape that hides text, a right-to-left override
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8 are a Linux file system's")


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "inkling_compat", *args], capture_output=True, cwd=ROOT, timeout=60)


@pytest.fixture
def fleet(tmp_path):
    folder = tmp_path / "fleet"
    folder.mkdir()
    shutil.copytree(ROOT / "examples" / "adapter", folder / "good")
    bad = os.path.join(os.fsencode(folder), BAD)
    shutil.copytree(os.fsencode(ROOT / "examples" / "adapter"), bad)
    return folder, os.fsdecode(bad)


def _no_raw_controls(out: bytes, fmt: str) -> None:
    assert b"\x1b" not in out and b"\xe2\x80\xae" not in out, out
    if get(fmt).syntax == "json":
        json.loads(out)
    if get(fmt).syntax == "xml":
        xml.dom.minidom.parseString(out)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fleet_entry_whose_name_is_not_utf8_is_that_adapters_result(fleet, fmt):
    folder, _ = fleet
    done = _run("check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter-dir", str(folder), "--format", fmt)
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr.count(b"\n") <= 1 and b"internal error" not in done.stderr
    _no_raw_controls(done.stdout, fmt)
    if fmt == "text":
        assert b"adapter bad\\xff\\x1b[8m\\u202ename" in done.stdout and b"adapter good" in done.stdout
    if fmt == "json":
        names = [a["name"] for a in json.loads(done.stdout)["adapters"]]
        assert names == ["bad\\xff\x1b[8m\u202ename", "good"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_single_adapter_whose_name_is_not_utf8_is_checked(fleet, fmt):
    _, bad = fleet
    done = _run("check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", bad, "--format", fmt)
    assert done.returncode in (0, 1), done.stderr
    _no_raw_controls(done.stdout, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_problem_placed_in_a_folder_whose_name_is_not_utf8_is_reported(fleet, fmt):
    """The problem's place is a file under that folder: SARIF's URI encodes the bytes on disk."""
    _, bad = fleet
    config = os.path.join(os.fsencode(bad), b"adapter_config.json")
    data = json.loads(Path(os.fsdecode(config)).read_text())
    Path(os.fsdecode(config)).write_text(json.dumps(dict(data, r=-4)))
    done = _run("check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", bad, "--format", fmt)
    assert done.returncode == 1, done.stderr
    assert b"internal error" not in done.stderr
    _no_raw_controls(done.stdout, fmt)
    if fmt == "sarif":
        (result,) = json.loads(done.stdout)["runs"][0]["results"]
        assert result["ruleId"] == "adapter-rank-negative"
        assert "/bad%FF%1B%5B8m%E2%80%AEname/adapter_config.json" in result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_characters_in_a_key_are_escaped(tmp_path, fmt):
    config = tmp_path / "serve.yaml"
    config.write_text('lora_backend: triton\n"x\\e[2J\\e[8m\\u202ey": 1\n', encoding="utf-8")
    done = _run("check", "--config", str(config), "--format", fmt)
    assert done.returncode == 1, done.stderr
    _no_raw_controls(done.stdout, fmt)


def test_an_input_error_line_escapes_the_name(tmp_path):
    missing = os.path.join(os.fsencode(tmp_path), b"no\x1b[2Jsuch\xff.yaml")
    done = subprocess.run([sys.executable, "-m", "inkling_compat", "check", "--config", missing], capture_output=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1 and b"\x1b" not in done.stderr and b"no\\x1b[2Jsuch\\xff.yaml" in done.stderr


def test_shown_keeps_the_text_outputs_own_colours_only():
    assert shown("\x1b[31merror\x1b[0m a\x1b[8mb", keep_colors=True) == "\x1b[31merror\x1b[0m a\\x1b[8mb"
    assert shown("tab\tnew\nline\r\x7f\x85\udcff") == "tab\tnew\nline\\x0d\\x7f\\x85\\xff"


@pytest.mark.parametrize("where", ["config", "model", "adapter"])
def test_a_nul_in_a_path_given_to_the_api_is_an_input_error(where):
    from inkling_compat.api import check
    from inkling_compat.errors import InputError

    args = {"config": "examples/serve.yaml"}
    if where == "config":
        args["config"] = "examples/ser\0ve.yaml"
    elif where == "model":
        args["model"] = "examples/con\0fig.json"
    else:
        args["adapter"] = ["examples/ad\0apter"]
    with pytest.raises(InputError, match="NUL"):
        check(**args)


def test_ascii_text_is_told_safe_as_the_pattern_tells_it():
    """The ASCII fast path of `shown` leaves alone exactly what the escape pattern finds nothing in."""
    from inkling_compat.report import escape

    for code in range(0x80):
        text = f"a{chr(code)}b"
        assert (shown(text) == text) == (escape._unsafe().search(text) is None), code
