"""inkling_compat.inputs.path_text reads a path as pathlib reads it: `shown`, `name`, `suffix`
and `exists` against `str(Path(p))`, `Path(p).name`, `.suffix` and `.exists()`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat.inputs import path_text

EDGES = [
    "", ".", "..", "/", "//", "///", "////a", "//a//b/", "./", "./a", "a/", "a//b", "a/./b", "a/../b", "/./", ".a", "a.", "a..",
    "a.b.c", "a.tar.gz", ".yaml", "x.yaml/", "x.YAML", "dir/.hidden", "dir/name.", " ", "a b/c d.json", "é/ü.yml", "a\\b.c", "a\x00b",
    "-", "~/x", "/x/..", "a/.", "a/.b/.",
]  # fmt: skip


def _same(text: str) -> None:
    path = Path(text)
    assert path_text.shown(text) == str(path), text
    assert path_text.name(text) == path.name, text
    assert path_text.suffix(text) == path.suffix, text
    assert path_text.shown(path) == str(path) and path_text.name(path) == path.name


@pytest.mark.parametrize("text", EDGES)
def test_edges_read_as_pathlib_reads_them(text: str) -> None:
    _same(text)


@given(st.text(alphabet="/./a.b\\ é\n", max_size=14))
@settings(max_examples=400, deadline=None)
def test_generated_paths_read_as_pathlib_reads_them(text: str) -> None:
    _same(text)


def test_exists_answers_as_pathlib(tmp_path: Path) -> None:
    (tmp_path / "file.yaml").write_text("a: 1\n")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cases = ["file.yaml", "file.yaml/", "file.yaml/child", "missing.yaml", "loop", "loop/x", ".", "./file.yaml", "a\x00b"]
    for case in cases:
        full = f"{tmp_path}/{case}"
        assert path_text.exists(full) == Path(full).exists(), case
        assert path_text.is_file(full) == Path(full).is_file(), case


@pytest.mark.skipif(os.geteuid() == 0, reason="root searches every folder")
def test_exists_raises_where_pathlib_raises(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.yaml").write_text("")
    locked.chmod(0)
    try:
        with pytest.raises(PermissionError):
            Path(locked / "x.yaml").exists()
        with pytest.raises(PermissionError):
            path_text.exists(str(locked / "x.yaml"))
        with pytest.raises(PermissionError):
            path_text.is_file(str(locked / "x.yaml"))
    finally:
        locked.chmod(0o700)
