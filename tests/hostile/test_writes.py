"""Every file the tool writes (`--output`, `--fix`) goes through inkling_compat/write_file.py:
the file the user named is edited (through a symlink, in place for a hard link, owner, group
and mode kept), a device, FIFO or directory is refused and left as it is, a file changed while
fixing is not overwritten, and every failure is exit 2 naming the file and what failed.

Device nodes are made privately in a temporary folder (never the system's /dev)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from pathlib import Path

import pytest

from inkling_compat import cli

ROOT = Path(__file__).resolve().parent.parent.parent
MODEL, ADAPTER = ROOT / "examples" / "model", ROOT / "examples" / "adapter"
# One safe fix: the multi-slot sink needs the triton backend.
FIXABLE = f"# top\nenable_lora: true   # on\nmax_lora_rank: 16\nlora_target_modules: [all]\nmax_loras_per_batch: 8\nlora_backend: csgmv\nmodel_path: {MODEL}\nlora_paths: [a={ADAPTER}]\n"
FIXED = FIXABLE.replace("csgmv", "triton")
IS_ROOT = os.geteuid() == 0


def _run(argv: list[str], stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        from inkling_compat.inputs import stdin as stdin_module

        stdin_module.reset(stdin.encode())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    finally:
        if stdin is not None:
            stdin_module.reset()
    return code, out.getvalue(), err.getvalue()


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    return err


def test_fix_through_a_symlink_edits_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text(FIXABLE)
    link = tmp_path / "link.yaml"
    link.symlink_to("real.yaml")
    code, _, _ = _run(["check", "--config", str(link), "--fix"])
    assert code == 0
    assert link.is_symlink() and os.readlink(link) == "real.yaml"
    assert real.read_text() == FIXED


def test_fix_of_a_hard_link_edits_every_name(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    a.write_text(FIXABLE)
    b = tmp_path / "b.yaml"
    os.link(a, b)
    inode = a.stat().st_ino
    assert _run(["check", "--config", str(b), "--fix"])[0] == 0
    assert a.read_text() == FIXED and b.stat().st_ino == inode == a.stat().st_ino and a.stat().st_nlink == 2


@pytest.mark.skipif(not IS_ROOT, reason="giving a file another owner needs root")
def test_fix_keeps_owner_group_and_mode(tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(FIXABLE)
    os.chown(config, 1234, 5678)
    os.chmod(config, 0o640)
    assert _run(["check", "--config", str(config), "--fix"])[0] == 0
    info = config.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 5678, 0o640)
    assert config.read_text() == FIXED


def test_output_keeps_mode_and_a_symlink(tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(FIXED)
    report = tmp_path / "report.txt"
    report.write_text("old")
    os.chmod(report, 0o600)
    link = tmp_path / "latest.txt"
    link.symlink_to(report)
    assert _run(["check", "--config", str(config), "--output", str(link)])[0] == 0
    assert link.is_symlink() and "ok: no errors" in report.read_text() and stat.S_IMODE(report.stat().st_mode) == 0o600


def _node(path: Path) -> None:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # a private /dev/full-like node


@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
@pytest.mark.parametrize("named", ["itself", "through a symlink"])
def test_a_device_node_is_refused_never_replaced(tmp_path: Path, named: str) -> None:
    node = tmp_path / "node"
    _node(node)
    config = tmp_path / "serve.yaml"
    config.write_text(FIXABLE)
    if named == "itself":
        argv = ["check", "--config", str(config), "--output", str(node)]
    else:
        link = tmp_path / "report-link.txt"
        link.symlink_to(node)
        argv = ["check", "--config", str(config), "--output", str(link)]
    code, _, err = _run(argv)
    assert code == 2 and "is a character device, not a regular file: not written" in _one_line(err)
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 7)


def test_a_fifo_and_a_directory_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    config = tmp_path / "serve.yaml"
    config.write_text(FIXED)
    for target, kind in ((fifo, "a FIFO"), (tmp_path, "a directory")):
        code, _, err = _run(["check", "--config", str(config), "--output", str(target)])
        assert code == 2 and f"--output: is {kind}" in _one_line(err)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_file_changed_while_fixing_is_not_overwritten(tmp_path: Path) -> None:
    from inkling_compat.engine.evaluate import check
    from inkling_compat.errors import InputError
    from inkling_compat.fix.apply import apply_fixes

    config = tmp_path / "serve.yaml"
    config.write_text(FIXABLE)
    calls = []

    def run(source):  # the user saves an edit while the fix re-checks
        calls.append(source)
        if len(calls) == 2:
            config.write_text(FIXABLE + "# my edit\n")
        return check(source)

    with pytest.raises(InputError) as raised:
        apply_fixes(str(config), run=run)
    assert raised.value.reason == "changed while fixing; run again" and raised.value.field == "--fix"
    assert config.read_text().endswith("# my edit\n")


@pytest.mark.parametrize(
    "where, error, operation",
    [
        ("os.replace", errno.ENOSPC, "cannot write: No space left on device"),
        ("os.fsync", errno.EROFS, "cannot write: Read-only file system"),
        ("tempfile.mkstemp", errno.ENAMETOOLONG, "cannot create a file in"),
    ],
)
@pytest.mark.parametrize("option", ["--output", "--fix"])
def test_every_write_failure_is_exit_2_naming_file_and_operation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, error: int, operation: str, option: str) -> None:
    import tempfile

    config = tmp_path / "serve.yaml"
    config.write_text(FIXABLE)
    module, name = where.split(".")
    target = {"os": os, "tempfile": tempfile}[module]

    def fail(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    argv = ["check", "--config", str(config), "--fix"] if option == "--fix" else ["check", "--config", str(config), "--output", str(tmp_path / "report.txt")]
    monkeypatch.setattr(target, name, fail)
    code, _, err = _run(argv)
    monkeypatch.undo()
    line = _one_line(err)
    assert code == 2 and option in line and operation in line
    assert config.read_text() == FIXABLE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["serve.yaml"]  # no temporary file left


def test_a_long_file_name_is_fixed(tmp_path: Path) -> None:
    config = tmp_path / ("x" * 245 + ".yaml")
    config.write_text(FIXABLE)
    assert _run(["check", "--config", str(config), "--fix"])[0] == 0
    assert config.read_text() == FIXED


def test_output_may_not_name_what_a_launch_command_reads(tmp_path: Path) -> None:
    import shutil

    # Copies (links followed): a defect here must not overwrite the repository's examples.
    MODEL, ADAPTER = tmp_path / "model", tmp_path / "adapter"
    shutil.copytree(ROOT / "examples" / "model", MODEL)
    shutil.copytree(ROOT / "examples" / "adapter", ADAPTER)
    (MODEL / "config.json").unlink()
    shutil.copy(ROOT / "examples" / "config.json", tmp_path / "model-config.json")
    (MODEL / "config.json").symlink_to(tmp_path / "model-config.json")
    config = tmp_path / "s.yaml"
    config.write_text(f"model-path: {MODEL}\n")
    launch = tmp_path / "launch.sh"
    launch.write_text(f"python -m sglang.launch_server --config {config}\n")
    cases = [
        (["--output", str(config), "--", "python", "-m", "sglang.launch_server", "--config", str(config)], "is the input"),
        (["--output", str(launch), "--launch", str(launch)], "is the input"),
        (["--output", str(MODEL / "config.json"), "--", "python", "-m", "sglang.launch_server", "--model-path", str(MODEL)], "inside the input folder"),
        (["--output", str(ADAPTER / "adapter_config.json"), "--", "python", "-m", "sglang.launch_server", "--model-path", str(MODEL), "--lora-paths", f"a={ADAPTER}"], "inside the input folder"),
        (["--output", str(MODEL / "config.json"), "--config", str(config)], "inside the input folder"),
        (["--output", str(tmp_path / "model-config.json"), "--", "python", "-m", "sglang.launch_server", "--model-path", str(MODEL)], "inside the input folder"),
    ]
    before = {p: p.read_bytes() for p in (config, launch, tmp_path / "model-config.json", ADAPTER / "adapter_config.json")}
    for argv, words in cases:
        code, _, err = _run(["check", *argv])
        assert code == 2 and words in _one_line(err), (argv, err)
        for fix in (["--fix"], ["--diff"]):
            if "--launch" in argv or "--" in argv:
                code, _, err = _run(["check", *fix, *argv])
                assert code == 2 and words in _one_line(err), (argv, err)
    assert before == {p: p.read_bytes() for p in before}


def test_config_from_stdin_fix_prints_the_fixed_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["check", "--config", "-", "--fix"], stdin=FIXABLE)
    assert code == 0 and out == FIXED
    assert "fixed: 1" in err and "ok: no errors" in err
    assert list(tmp_path.iterdir()) == []  # no file named `-`
