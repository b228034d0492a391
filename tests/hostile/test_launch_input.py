"""Hostile launch input: `check --launch FILE` (and `--launch -`) on what is not a launch file
or is too large. Each is one exit-2 line naming the file, within the byte and word caps, as
`--config` is refused; never a hang, unbounded memory or a traceback. Device nodes are made
in a temporary folder (os.mknod), never the system's own /dev entries."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def _cli(*argv: str, stdin: object = subprocess.DEVNULL, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inkling_compat", *argv], cwd=ROOT, stdin=stdin, capture_output=True, text=True, timeout=timeout)  # type: ignore[arg-type]


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _device(folder: Path, major: int, minor: int) -> Path:
    path = folder / f"char-{major}-{minor}"
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(major, minor))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return path


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "launch.sh"
    os.mkfifo(fifo)
    _one_line(_cli("check", "--launch", str(fifo), timeout=30), str(fifo), "FIFO")


def test_a_zero_device_is_read_to_the_cap_and_refused(tmp_path: Path) -> None:
    zero = _device(tmp_path, 1, 5)  # the numbers of /dev/zero, made here
    _one_line(_cli("check", "--launch", str(zero), timeout=60), str(zero), "byte limit")


def test_a_null_device_has_no_command(tmp_path: Path) -> None:
    null = _device(tmp_path, 1, 3)
    _one_line(_cli("check", "--launch", str(null)), str(null), "no sglang launch command")


def test_a_100_mb_file_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "start.sh"
    with big.open("wb") as out:
        out.truncate(100 * 1024 * 1024)  # sparse: 100 MB without writing them
    _one_line(_cli("check", "--launch", str(big)), str(big), "byte limit")


def test_standard_input_past_the_cap_is_refused(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "inkling_compat", "check", "--launch", "-"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunk = b"#" * (1 << 20)

    def feed() -> None:  # an endless writer: the checker must stop reading at the cap
        try:
            while True:
                proc.stdin.write(chunk)  # type: ignore[union-attr]
        except (BrokenPipeError, OSError, ValueError):
            pass

    threading.Thread(target=feed, daemon=True).start()
    try:
        proc.wait(timeout=60)  # (a checker that kept reading would be killed here: a failure)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.returncode == 2, err
    assert b"<stdin>" in err and b"byte limit" in err and len(err.strip().splitlines()) == 1, err


def test_a_directory_is_refused(tmp_path: Path) -> None:
    _one_line(_cli("check", "--launch", str(tmp_path)), "is a directory")


@pytest.mark.long
def test_100_000_words_are_checked_and_more_are_refused(tmp_path: Path) -> None:
    head = "python3 -m sglang.launch_server --model-path /models/m"
    fits = tmp_path / "fits.sh"
    fits.write_text(head + " --tp 1" * ((100_000 - 5) // 2) + "\n")
    proc = _cli("check", "--launch", str(fits), timeout=120)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    over = tmp_path / "over.sh"
    over.write_text(head + " --tp 1" * 50_001 + "\n")
    _one_line(_cli("check", "--launch", str(over), timeout=120), str(over), "100,000 words")


def test_a_word_list_past_the_cap_is_refused(tmp_path: Path) -> None:
    words = tmp_path / "command.json"
    words.write_text('["python3", "-m", "sglang.launch_server"' + ', "--tp", "1"' * 50_001 + "]")
    _one_line(_cli("check", "--launch", str(words), timeout=120), str(words), "more than 100")


def test_a_script_under_the_byte_cap_but_past_the_grammars_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "start.sh"
    big.write_text("export A=1 # c\n" * (15 * 1024 * 1024 // 15))  # 15 MiB: under the file cap
    _one_line(_cli("check", "--launch", str(big), timeout=60), str(big), "shell script of more than")


@pytest.mark.parametrize(
    "body",
    [
        "true\n" * (1_000_000 // 5),
        "".join(f"V{i}=1\n" for i in range(20_000)) + "if true; then :; fi\n" * 20_000 + "nohup true &\n" * 10_000,  # every branch and wrapper over many variables
    ],
    ids=["short-commands", "variables-and-branches"],
)
def test_a_megabyte_of_script_ends(tmp_path: Path, body: str) -> None:
    many = tmp_path / "start.sh"
    many.write_text(body + "python3 -m sglang.launch_server --model-path m\n")
    proc = _cli("check", "--launch", str(many), timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "script, said",
    [
        ("f() { f; }\nf\n", "deep"),  # a function calling itself
        ("A=x\n" + "A=$A$A\n" * 40 + "python3 -m sglang.launch_server --x $A\n", "longer than"),  # doubling
        ("A=(x)\n" + 'A=("${A[@]}" "${A[@]}")\n' * 30 + 'python3 -m sglang.launch_server "${A[@]}"\n', "100,000"),
        ("(" * 5000 + "python3 -m sglang.launch_server --model-path m" + ")" * 5000 + "\n", ""),  # nesting
        ("bash -c '" * 1 + "bash -c \"python3 -m sglang.launch_server --model-path m\"'\n", ""),
    ],
    ids=["recursion", "doubling", "array-doubling", "nested-subshells", "bash-c"],
)
def test_scripts_that_would_blow_up_end_in_a_line_or_a_report(tmp_path: Path, script: str, said: str) -> None:
    path = tmp_path / "start.sh"
    path.write_text(script)
    proc = _cli("check", "--launch", str(path), timeout=60)
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2:
        assert len(proc.stderr.strip().splitlines()) == 1 and said in proc.stderr, proc.stderr
