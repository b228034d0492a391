"""The `inkling-compat` command line's argparse parsers, built by cli.py where its own reading of
a plain `check` line does not answer (`cli._plain_check`): argparse is imported with this module,
not with the command."""

from __future__ import annotations

import argparse

from typing import Any, Callable

from inkling_compat.errors import UsageError


class Command:
    """What cli.py tells the parser: its description, its commands, `check`'s options
    (`cli._check_options`), the `--version` text (computed when asked for), and what adds
    `run`'s parser (the reference runtime's, imported only to parse `run`)."""

    def __init__(self, description: str, commands: tuple[str, ...], check_options: Callable[[], list[tuple[str, dict[str, Any]]]], version_text: Callable[[], str], add_run_parser: Callable[[Any], None]) -> None:
        self.description, self.commands, self.check_options = description, commands, check_options
        self.version_text, self.add_run_parser = version_text, add_run_parser


class _CliParser(argparse.ArgumentParser):
    # While the parser is built, argparse tries each argument's metavar with a help formatter:
    # one given a width does not ask the terminal for it (which imports shutil, bz2 and lzma into
    # every check). Help printed later gets the terminal's width.
    building = False

    def error(self, message: str) -> None:  # one line, exit 2, like every other input error
        raise UsageError(message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        if _CliParser.building:
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()


def build_parser(command: str | None, told: Command) -> argparse.ArgumentParser:
    """The command line's parser: for a known `command`, with that command's parser only; for
    any other first word, with every command's (`cli._parser` keeps each built)."""
    _CliParser.building = True
    try:
        return _build(command, told)
    finally:
        _CliParser.building = False


def _build(command: str | None, told: Command) -> argparse.ArgumentParser:
    parser = _CliParser(prog="inkling-compat", description=told.description, epilog="`inkling-compat COMMAND --help` describes each command. Exit codes: 0 ok, 1 problems, 2 unusable input, 3 a defect of the tool.")
    parser.add_argument("--version", action=_VersionAction, version_text=told.version_text, help="print the version, the sglang versions known and the rule count")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CliParser, title="commands", metavar="COMMAND")
    every = command not in told.commands
    if every or command == "check":
        _add_check(sub, told.check_options())
    if every or command == "rules":
        rules = sub.add_parser("rules", help="list the rules, or print one rule's page")
        rules.add_argument("id", nargs="?", help="a rule id: print its page (docs/rules/<id>.md)")
        rules.add_argument("--format", choices=("text", "json"), default="text")
    if every or command == "explain":
        explain = sub.add_parser("explain", help="explain an error message copied from a log")
        explain.add_argument("text", help="the error text: a message, a log line, a traceback or a log excerpt; - reads standard input")
        explain.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json (each error found and the rules matching it)")
    if every or command == "run":
        told.add_run_parser(sub)
    return parser


def _add_check(sub: argparse._SubParsersAction, check_options: list[tuple[str, dict[str, Any]]]) -> None:  # type: ignore[type-arg]
    chk = sub.add_parser("check", help="check a server config, model config and adapters", usage="%(prog)s [options] (--config FILE | --launch FILE | -- LAUNCH COMMAND...)")
    for flag, options in check_options:
        chk.add_argument(flag, **options)


class _VersionAction(argparse.Action):
    """`--version`, computed only when asked for (the parser is built on every run)."""

    def __init__(self, option_strings: list[str], dest: str, version_text: Callable[[], str], **kwargs: object):
        self.version_text = version_text
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help"))  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(self.version_text())
        parser.exit()
