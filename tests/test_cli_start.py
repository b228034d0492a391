"""The command's start and exit: a plain `check` command line is read without building the
parser (cli._plain_check), to the Namespace argparse gives it, and any other line goes to
argparse; the command's own process leaves without the interpreter's teardown (cli.command),
its output flushed, its exit functions run, its exit status the same."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inkling_compat import cli

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = str(ROOT / "examples" / "launch.sh")


def _argparse(argv: list[str]) -> tuple[object, object]:
    """argparse's answer for `argv`: (the Namespace's items in order, None) or (None, its error)."""
    try:
        args = cli._parser(argv[0] if argv else None).parse_args(argv)
    except cli.UsageError as exc:
        return None, str(exc)
    except SystemExit as exc:  # --help, --version
        return None, f"exit {exc.code}"
    return list(vars(args).items()), None


# Words that argparse reads in every way it can: values, flags, choices, abbreviations,
# `--option=VALUE`, values that look like options or numbers, and what is not a word of `check`.
VALUES = ["serve.yaml", "-", "", "a b", "-x", "-1", "--", "--launch", "-h", "é", "=x"]
SINGLE = [
    ["--launch", "x.sh"],
    ["--config", "-"],
    ["--format", "json"],
    ["--format", "jsn"],
    ["--fail-on", "warning"],
    ["--color", "never"],
    ["--strict"],
    ["--exit-zero"],
    ["--fix"],
    ["--select", "sink"],
    ["--adapter", "a.yaml"],
    ["--env", "PORT=1"],
    ["--launch=x.sh"],
    ["--strict=1"],
    ["--lau", "x.sh"],
    ["--form", "json"],
    ["-h"],
    ["--help"],
    ["--version"],
    ["extra"],
    ["--launch"],
    ["--sglang-version", "0.5.22"],
]


def _command_lines() -> list[list[str]]:
    lines: list[list[str]] = [[], ["check"], ["rules"], ["--version"], ["chek", "--launch", "x"]]
    for flag, _ in cli._check_options():
        for value in VALUES:
            lines.append(["check", flag, value])
        lines.append(["check", flag])
    for first, second in itertools.product(SINGLE, repeat=2):
        lines.append(["check", *first, *second])
    lines.append(["check", "--adapter", "a", "--adapter", "b", "--launch", "x", "--launch", "y", "--env", "A=1"])
    return lines


@pytest.mark.parametrize("argv", _command_lines(), ids=lambda argv: " ".join(argv) or "(none)")
def test_a_command_line_read_without_the_parser_is_read_as_argparse_reads_it(argv):
    fast = cli._plain_check(argv)
    items, error = _argparse(argv)
    if fast is not None:
        assert error is None, f"argparse refuses {argv}: {error}"
        assert repr(list(vars(fast).items())) == repr(items)  # (names, order, values and their types)
    for default_list in ("adapter", "select", "env"):  # (a parse never grows the table's default)
        assert dict(cli._check_options())[f"--{default_list}"]["default"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--launch", "examples/launch.sh"],
        ["check", "--config", "-", "--format", "json", "--output", "report.json"],
        ["check", "--config", "serve.yaml", "--model", "config.json", "--adapter", "a.yaml", "--adapter", "b", "--strict", "--color", "never"],
        ["check"],
    ],
)
def test_a_plain_check_builds_no_parser(argv):
    assert cli._plain_check(argv) is not None


def test_the_table_is_the_parsers():
    """Every option of `check`'s parser is in the table, with its action, default and choices."""
    check_parser = cli._parser("check")._subparsers._group_actions[0].choices["check"]  # type: ignore[union-attr]
    parsed = {a.option_strings[0]: a for a in check_parser._actions if a.option_strings and a.dest != "help"}
    assert list(parsed) == [flag for flag, _ in cli._check_options()]


def _process(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (stdout buffered, as a pipe's is)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_the_command_process_exits_with_mains_status_its_output_whole_and_exit_functions_run():
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('exit function ran', file=sys.stderr))\n"
        "atexit.register(lambda: print('and wrote to stdout'))\n"
        "sys.argv = ['inkling-compat', *sys.argv[1:]]\n"
        "from inkling_compat.cli import command\n"
        "sys.exit(command())\n"
    )
    ok = _process(code, "check", "--launch", LAUNCH, "--format", "json")
    assert ok.returncode == 0 and ok.stdout.endswith("}\nand wrote to stdout\n") and '"ok": true' in ok.stdout
    assert ok.stderr == "exit function ran\n"
    unusable = _process(code, "check", "--launch", "no-such-file.sh")
    assert unusable.returncode == 2 and unusable.stderr.endswith("exit function ran\n")
    assert unusable.stderr.count("\n") == 2 and "no-such-file.sh" in unusable.stderr
    refused = _process(code, "check", "--format", "nope")
    assert refused.returncode == 2 and "invalid choice: 'nope'" in refused.stderr


def test_the_command_process_waits_for_a_thread_still_running():
    code = (
        "import sys, threading, time\n"
        "sys.argv = ['inkling-compat', 'check', '--launch', sys.argv[1]]\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread done', file=sys.stderr)\n"
        "threading.Thread(target=late).start()\n"
        "from inkling_compat.cli import command\n"
        "sys.exit(command())\n"
    )
    result = _process(code, LAUNCH)
    assert result.returncode == 0 and result.stderr == "thread done\n"
    assert result.stdout.startswith("ok:")


def test_python_m_and_the_console_script_run_command():
    """`python -m inkling_compat` and pyproject's console script both enter through `command`."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"inkling-compat": "inkling_compat.cli:command"}
    result = subprocess.run([sys.executable, "-m", "inkling_compat", "check", "--launch", LAUNCH], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.startswith("ok:") and result.stderr == ""


def test_the_collector_runs_after_start_up_less_often_for_a_check_only_in_the_commands_process():
    code = (
        "import gc, sys\n"
        "before = gc.get_threshold()\n"
        "from inkling_compat import cli\n"
        "if sys.argv[1] == 'own':\n"
        "    sys.argv = ['inkling-compat', 'check', '--launch', sys.argv[2]]\n"
        "    cli.main()\n"
        "else:\n"
        "    cli.main(['check', '--launch', sys.argv[2]])\n"
        "print(gc.isenabled(), before[1:] == gc.get_threshold()[1:], gc.get_threshold()[0] // before[0] if sys.argv[1] == 'caller' else gc.get_threshold()[0], file=sys.stderr)\n"
    )
    assert _process(code, "own", LAUNCH).stderr == "True True 10000\n"
    assert _process(code, "caller", LAUNCH).stderr == "True True 1\n"


def test_a_launch_check_builds_no_parser_of_ours_and_escapes_nothing_it_need_not():
    """`check --launch examples/launch.sh` (its report plain ASCII): no parser of the command
    line built, report/escape.py not imported."""
    code = (
        "import contextlib, io, json, sys\n"
        "from inkling_compat import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = cli.main(['check', '--launch', 'examples/launch.sh'])\n"
        "print(json.dumps([code, out.getvalue().isascii(), sorted(map(str, cli._PARSERS)), 'inkling_compat.report.escape' in sys.modules]))\n"
    )
    result = _process(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[0, true, [], false]"
