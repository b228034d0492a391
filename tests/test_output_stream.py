"""No output stream fails the run (inkling_compat/output_stream.py): any encoding, a full disk, a
closed stdout, a broken pipe, stderr on a full disk; --output written by rename and never over an
input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest

from inkling_compat.report.formats import NAMES, get

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ["check", "--config", "examples/broken/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/broken/adapter_pool.yaml"]
FORMATS = NAMES  # every output format (report/formats.py)
FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full")


def _run(args, *, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "inkling_compat", *args], stdout=stdout, stderr=stderr, cwd=cwd, env=dict(os.environ, **(env or {})), timeout=60)


def _one_line(err: bytes) -> str:
    text = err.decode("utf-8", "replace")
    assert text.count("\n") == 1 and "Traceback" not in text and "internal error" not in text, text
    return text


@needs_full
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_full_disk_on_stdout_is_exit_2_and_one_line(fmt):
    with open(FULL, "wb") as full:
        done = _run([*BROKEN, "--format", fmt], stdout=full)
    assert done.returncode == 2
    assert "No space left on device" in _one_line(done.stderr)


def test_a_closed_stdout_is_exit_2_and_one_line():
    done = subprocess.run(f"exec {sys.executable} -m inkling_compat {' '.join(BROKEN)} >&-", shell=True, stderr=subprocess.PIPE, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    _one_line(done.stderr)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_broken_pipe_is_exit_2_and_one_line(fmt):
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run([*BROKEN, "--format", fmt], stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 2
    assert "Broken pipe" in _one_line(done.stderr)


@needs_full
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_input_error_with_stderr_on_a_full_disk_is_still_exit_2(tmp_path, fmt):
    with open(FULL, "wb") as full:
        done = _run(["check", "--config", str(tmp_path / "missing.yaml"), "--format", fmt], stderr=full, stdout=full)
    assert done.returncode == 2
    assert done.stdout is None


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"}, {"LC_ALL": "C", "PYTHONIOENCODING": ""}])
@pytest.mark.parametrize("fmt", FORMATS)
def test_any_output_encoding_escapes_what_it_cannot_encode(tmp_path, env, fmt):
    config = tmp_path / "serve.yaml"
    config.write_text('lora_backend: triton\n"m\\u00e1x_l\\u014dras\\U0001F600": 3\n', encoding="utf-8")
    done = _run(["check", "--config", str(config), "--format", fmt], env=env)
    assert done.returncode == 1, done.stderr
    assert done.stderr == b""
    out = done.stdout
    if get(fmt).syntax == "json":
        assert "máx_lōras😀" in json.dumps(json.loads(out), ensure_ascii=False)  # read back as the same characters
    elif get(fmt).syntax == "xml":
        dom = xml.dom.minidom.parseString(out)
        assert "máx_lōras😀" in dom.toxml()
    else:
        # escaped (ASCII), Latin-1 with the rest escaped, or UTF-8 (Python coerces the C locale)
        assert any(form in out for form in (b"m\\xe1x_l\\u014dras\\U0001f600", b"m\xe1x_l\\u014dras\\U0001f600", "máx_lōras😀".encode()))


def test_output_with_a_hard_link_is_edited_in_place(tmp_path):
    """The file the user named is edited: every name of it (a hard link) shows the report."""
    out = tmp_path / "report.json"
    out.write_text("old", encoding="utf-8")
    link = tmp_path / "hardlink.json"
    os.link(out, link)
    done = _run([*BROKEN, "--format", "json", "--output", str(out)])
    assert done.returncode == 1, done.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["ok"] is False
    assert link.read_text(encoding="utf-8") == out.read_text(encoding="utf-8") and os.path.samefile(out, link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hardlink.json", "report.json"]  # no temporary file left


def test_output_is_written_by_rename_for_a_file_of_one_name(tmp_path):
    """A reader never sees half a report: a new inode takes the old one's place."""
    out = tmp_path / "report.json"
    out.write_text("old", encoding="utf-8")
    reader = open(out, encoding="utf-8")  # a reader that opened the old report keeps reading it
    try:
        done = _run([*BROKEN, "--format", "json", "--output", str(out)])
        assert done.returncode == 1, done.stderr
        assert reader.read() == "old"
    finally:
        reader.close()
    assert json.loads(out.read_text(encoding="utf-8"))["ok"] is False


@pytest.mark.parametrize("which", ["config", "model", "adapter", "settings", "inside_adapter_folder"])
def test_an_output_that_is_an_input_is_refused(tmp_path, which):
    import shutil

    for name in ("serve.yaml", "adapter_pool.yaml"):
        shutil.copy(ROOT / "examples" / "broken" / name, tmp_path / name)
    shutil.copy(ROOT / "examples" / "config.json", tmp_path / "config.json")
    shutil.copytree(ROOT / "examples" / "adapter", tmp_path / "adapter")
    (tmp_path / ".inkling-compat.yaml").write_text("ignore: []\n", encoding="utf-8")
    args = ["check", "--config", "serve.yaml", "--model", "config.json", "--adapter", "adapter_pool.yaml", "--adapter", "adapter"]
    target = {"config": "serve.yaml", "model": "config.json", "adapter": "adapter_pool.yaml", "settings": ".inkling-compat.yaml",
              "inside_adapter_folder": "adapter/adapter_config.json"}[which]  # fmt: skip
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for fmt in ("text", "json"):
        done = _run([*args, "--format", fmt, "--output", target], cwd=tmp_path)
        assert done.returncode == 2
        assert "--output" in _one_line(done.stderr)
        assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
        if fmt == "json":
            assert json.loads(done.stdout)["input_error"]["field"] == "--output"
