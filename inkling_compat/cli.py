"""The `inkling-compat` command: `check`, `rules`, `explain` and `run`.

Exit codes: 0 no errors (warnings allowed), 1 errors found, 2 unusable input (one line
naming the file and field), 3 a defect in the tool or a rule file. Never a traceback.
`check --format json` prints one JSON document whatever the exit code: the report, or
{"ok": false, "input_error": {...}} (exit 2) or {"ok": false, "internal_error": {...}} (exit 3).
"""

from __future__ import annotations

import gc
import json
import re
import sys
from types import SimpleNamespace

from inkling_compat.errors import UsageError  # (raised by the parser: inputs/cli_parser.py)
from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION, SGLANG_VERSIONS  # no pydantic: --help stays light
from inkling_compat.report import formats  # names only: each renderer is imported when used

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence
    import argparse

EXIT_OK, EXIT_PROBLEMS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
FAIL_ON = ("error", "warning", "not-checked")  # levels of the gate (report/gate.py)
COMMANDS = ("check", "rules", "explain", "run")


# The parsers built so far, by the command they hold (None: every command's): parsing changes
# nothing in a parser (an `append` option's default list is copied before it grows), and
# argparse's gettext look-ups for every option make building one cost more than parsing.
_PARSERS: dict[str | None, argparse.ArgumentParser] = {}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; for a known `command`, with that command's parser only (each
    parser costs a millisecond at a check's start; the runtime's module is imported only to
    parse `run`); for any other first word (none, a typo, `--help`), with every command's. Built
    once per process for each (a process may call `main` again: an API user, the tests)."""
    key = command if command in COMMANDS else None
    parser = _PARSERS.get(key)
    if parser is None:
        from inkling_compat.inputs.cli_parser import Command, build_parser  # (argparse: imported only for a parser)

        told = Command(__doc__.splitlines()[0], COMMANDS, _check_options, version_text, _add_run_parser)
        parser = _PARSERS[key] = build_parser(command, told)
    return parser


def _add_run_parser(sub: object) -> None:
    """`run`'s parser, added where inputs/cli_parser.py builds `run`'s or every command's."""
    from inkling_compat.runtime.run_cli import add_run_parser  # `run`: the reference runtime (torch/triton)

    add_run_parser(sub)


def _check_options() -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    """`check`'s options, in --help's order: (the flag, argparse's `add_argument` options). One
    table for the parser and for `_plain_check`."""
    return [
        ("--config", dict(help="server config (YAML/JSON, sglang argument names, dash or underscore); - reads it from standard input")),
        ("--launch", dict(metavar="FILE", help="a file holding the sglang launch command: a shell script (read as bash reads it; wrappers such as nohup, env, timeout, srun, docker run and bash -c unwrapped), or a YAML/JSON list of words; - reads standard input. Or give the command after --")),
        ("--env", dict(action="append", default=[], metavar="NAME=VALUE", help="with --launch: a value of the environment the launch file reads but does not set ($PORT, $MODEL_PATH); repeatable")),
        ("--env-file", dict(action="append", default=[], metavar="FILE", help="with --launch: NAME=VALUE lines (a .env file: # comments, blank lines, `export ` and quotes allowed) of the launch's environment; repeatable, --env wins")),
        ("--model", dict(help="the model's config.json, or the model's folder holding it")),
        ("--platform", dict(help="platform file, or a preset: h200 (default), h100, a100, l40s, b200, gb200, mi300x, cpu")),
        ("--adapter", dict(action="append", default=[], help="adapter manifest (pool or PEFT form, YAML/JSON; - reads it from standard input) or PEFT adapter directory; repeatable")),
        ("--adapter-dir", dict(action="append", default=[], help="folder with one PEFT adapter directory per adapter (a fleet); repeatable")),
        ("--strict", dict(action="store_true", help="for CI gates: exit 1 also on any warning and on any rule not checked (an input it needs was not given or could not be read); the same as --fail-on not-checked")),
        ("--fail-on", dict(choices=FAIL_ON, default="error", help="what exits 1: error (default), warning (errors and warnings), not-checked (also any rule not checked: --strict)")),
        ("--exit-zero", dict(action="store_true", help="exit 0 even when problems are found (2 and 3 still mean the check could not run)")),
        ("--format", dict(choices=formats.NAMES, default=formats.DEFAULT, help=formats.help_text())),
        ("--output", dict(metavar="FILE", help="write the report (any format) to FILE instead of standard output")),
        ("--select", dict(action="append", default=[], metavar="RULES", help="report only these rules: ids or prefixes, comma-separated; repeatable (replaces the settings' select)")),
        ("--ignore", dict(action="append", default=[], metavar="RULES", help="leave out these rules: ids or prefixes, comma-separated; repeatable (listed as ignored, not dropped)")),
        ("--settings", dict(metavar="FILE", help="settings file (.inkling-compat.yaml or pyproject.toml); default: the nearest one above the config file")),
        ("--isolated", dict(action="store_true", help="use no settings file")),
        ("--sglang-version", dict(metavar="VERSION", default=None, help=f"the sglang release to check against: {', '.join(SGLANG_VERSIONS)} (53ccafdf = the public revision 53ccafdf023b); default: the installed sglang, a pin (sglang==X) in a requirements*.txt or pyproject.toml beside or above the config, the image tag in it (lmsysorg/sglang:vX), else {SGLANG_DEFAULT_VERSION}")),
        ("--color", dict(choices=("auto", "always", "never"), default="auto", help="color the text output: auto (default: on a terminal, unless NO_COLOR is set), always, never")),
        ("--fix", dict(action="store_true", help="apply the safe machine-applicable fixes to the server config in place, re-check, repeat; report what was fixed and what remains")),
        ("--diff", dict(action="store_true", help="print the unified diff of what --fix would change; write nothing")),
        ("--unsafe-fixes", dict(action="store_true", help="with --fix/--diff: also the fixes that change capacity or behaviour (TP size, pool rank, slots, dtype)")),
    ]


def _plain_check(argv: list[str]) -> SimpleNamespace | None:
    """`check` followed by `--option VALUE` and `--flag` words only, each option written out in
    full, each value one argparse takes as a value (not starting with `-`, or `-` itself), each
    choice one of its choices: the names and values of the Namespace argparse gives it (as a
    SimpleNamespace: argparse is not imported), without building the parser
    (a millisecond of a check's start). None for any other command line: the parser decides
    (help, abbreviations, `--option=VALUE`, errors and their messages)."""
    if not argv or argv[0] != "check":
        return None
    table = _check_options()
    args = SimpleNamespace(command="check")
    by_flag = {}
    for flag, options in table:
        dest = flag[2:].replace("-", "_")
        action = options.get("action", "store")
        default = options.get("default", False if action == "store_true" else None)
        setattr(args, dest, list(default) if action == "append" else default)
        by_flag[flag] = (dest, action, options.get("choices"))
    words = iter(argv[1:])
    for word in words:
        if not isinstance(word, str) or word not in by_flag:
            return None
        dest, action, choices = by_flag[word]
        if action == "store_true":
            setattr(args, dest, True)
            continue
        value = next(words, None)
        if not isinstance(value, str) or (value.startswith("-") and value != "-") or (choices is not None and value not in choices):
            return None
        if action == "append":
            getattr(args, dest).append(value)
        else:
            setattr(args, dest, value)
    return args


def _run_check(args: argparse.Namespace) -> int:
    from inkling_compat.report.gate import exit_status, use_color
    from inkling_compat.report.outputs import render

    report, rules = check_report(args)
    if rules is None:  # --fix / --diff printed its own report; `report` is its exit status
        return report
    if isinstance(report, DeploymentChecked):  # several commands: each report headed by its place
        from inkling_compat.report.deployment import render_deployment

        color = args.output is None and use_color(args.color, sys.stdout.isatty())
        _emit(render_deployment(args.format, report.deployment, report.reports, rules, color=color), args.output, args.format)
        return max((exit_status(r, args.exit_zero) for _, r in report.reports), default=EXIT_OK)
    color = args.output is None and use_color(args.color, sys.stdout.isatty())
    _emit(render(args.format, report, rules, fleet=bool(args.adapter_dir), color=color), args.output, args.format)
    return exit_status(report, args.exit_zero)


def check_report(args: argparse.Namespace) -> tuple:  # type: ignore[type-arg]
    """(the report, the rules) of `check` for parsed arguments, before any output: the
    GitHub Action renders one check several ways (inkling_compat/ci/action.py). The release is
    found first (inputs/release.py): a launch command is parsed with that release's table."""
    from inkling_compat.inputs import argument_table
    from inkling_compat.inputs.release import Release, find_release

    if not isinstance(args.sglang_version, Release):
        deployment = args.launch if args.launch not in (None, "-") else args.config
        args.sglang_version = find_release(args.sglang_version, deployment, given_by="--sglang-version")
    with argument_table.using(args.sglang_version.version):
        return _check_report(args)


def _check_report(args: argparse.Namespace) -> tuple:  # type: ignore[type-arg]
    from inkling_compat.engine.evaluate import check
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.inputs.launch import cli_config
    from inkling_compat.inputs.command_line import check_words
    from inkling_compat.report.gate import gated

    check_words(args.platform, args.adapter, args.launch if args.launch == "-" else args.config)
    words = getattr(args, "launch_words", None)
    _hide_secrets(args, words, command_line=True)
    unknown_text: dict[str, str] = {}
    if args.launch is not None and args.config is None and words is None and not (args.fix or args.diff):
        from inkling_compat.inputs.deployment import read_deployment

        deployment = read_deployment(args.launch, env=_launch_env(args))
        if deployment.structured:
            return _check_deployment(args, deployment)
        from inkling_compat.inputs.launch import launch_config  # a script or list of words: its one command, read once

        args.config = launch_config(deployment.commands[0], placed=False)
    if (args.fix or args.diff) and args.launch is not None:
        from inkling_compat.inputs.deployment import read_deployment
        from inkling_compat.inputs.launch import read_words_unknown

        deployment = read_deployment(args.launch, env=_launch_env(args))
        if deployment.structured and len(deployment.commands) > 1:
            from inkling_compat.errors import InputError

            raise InputError(deployment.file, "--fix/--diff", f"{deployment.kind} with {len(deployment.commands)} sglang commands: --fix/--diff print one command corrected; check it without them, or give one command after --")
        if deployment.structured:
            command = deployment.commands[0]
            words = command.launch_words()
            unknown_text = {command.words[i]: why for i, why in command.unknown.items()}
        else:
            words, unknown_text = read_words_unknown(args.launch, _launch_env(args))  # (a launch file's command is printed corrected, never rewritten)
    if args.config is None or isinstance(args.config, str):  # (not the launch read above)
        args.config = cli_config(args.config, None if words is not None and args.launch is not None else args.launch, words, _launch_env(args), unknown_text)
    _hide_secrets(args.config)
    if (args.fix or args.diff) and not isinstance(args.config, str):
        from inkling_compat.fix.command import run_fix_launch

        selection = _selection(args, load_rules())
        _refuse_output_over_inputs(args)
        _started()
        return run_fix_launch(args, list(words or []), selection, load_rules(), _emit, unknown_text), None
    load_rules()  # (the rules `check` uses, loaded once per process) before the collector resumes
    selection = _selection(args, load_rules())  # (unusable settings: exit 2 before checking)
    _refuse_output_over_inputs(args)
    _started()
    if args.fix or args.diff:  # the check runs inside the fix loop (inkling_compat/fix/)
        from inkling_compat.fix.command import run_fix_command

        return run_fix_command(args, selection, load_rules(), _emit), None
    if args.adapter_dir:
        from inkling_compat.fleet import ProgressBar, check_fleet

        bar = ProgressBar()
        try:
            report = check_fleet(
                args.config,
                args.adapter_dir,
                args.adapter,
                model=args.model,
                platform=args.platform,
                sglang_version=args.sglang_version,
                progress=bar,
            )
        finally:
            bar.close()
    else:
        report = check(
            args.config,
            args.adapter or None,
            model=args.model,
            platform=args.platform,
            sglang_version=args.sglang_version,
        )
    from inkling_compat.engine.selection import apply
    from inkling_compat.engine.suppress import apply_inline

    report = apply_inline(report, [args.config, args.platform, *args.adapter])  # `# inkling-compat: ignore[...]`
    return gated(apply(report, selection), args.fail_on, args.strict), load_rules()  # (Report.passes)


class DeploymentChecked:
    """`check --launch FILE` of a deployment file: each sglang command and its report."""

    def __init__(self, deployment: object, reports: list) -> None:  # type: ignore[type-arg]
        self.deployment = deployment
        self.reports = reports


def _check_deployment(args: argparse.Namespace, deployment: object) -> tuple:  # type: ignore[type-arg]
    """Every command of a deployment file checked as one launch command is (the gate, the
    selection and inline ignores applied to each report)."""
    from inkling_compat.inputs.launch import launch_config
    from inkling_compat.engine.evaluate import check
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.engine.selection import apply
    from inkling_compat.engine.suppress import apply_inline
    from inkling_compat.report.gate import gated

    if args.adapter_dir:
        from inkling_compat.errors import InputError

        raise InputError("(command line)", "--adapter-dir", "a fleet is checked against one command: give the command with -- or a file holding one")
    configs = [(command, launch_config(command)) for command in deployment.commands]  # type: ignore[attr-defined]
    for _, config in configs:
        _hide_secrets(config)
    load_rules()
    args.config = configs[0][1]
    selection = _selection(args, load_rules())
    _refuse_output_over_inputs(args)
    _started()
    reports = []
    for command, config in configs:
        report = check(config, args.adapter or None, model=args.model, platform=args.platform, sglang_version=args.sglang_version)
        report = apply_inline(report, [config, args.platform, *args.adapter])
        reports.append((command, gated(apply(report, selection), args.fail_on, args.strict)))
    return DeploymentChecked(deployment, reports), load_rules()


def _launch_env(args: argparse.Namespace) -> dict[str, str] | None:
    """The environment `--env-file` and `--env` give a launch command (None when neither is given)."""
    if not getattr(args, "env", None) and not getattr(args, "env_file", None):
        return None
    from inkling_compat.inputs.launch import env_values

    return env_values(args.env, args.env_file)


def _hide_secrets(given: object, words: list[str] | None = None, *, command_line: bool = False) -> None:
    """Tell the output the secrets of the inputs (inputs/secrets.py): the files named on the
    command line (`given` the parsed command line), the launch command's words, a parsed
    launch's environment and --config file."""
    import os

    from inkling_compat.inputs import secrets
    from inkling_compat.output_stream import hide

    found = secrets.in_words(words or [])
    files: list[object] = []
    if command_line:
        files = [given.config, given.launch, given.platform, *(given.adapter or [])]
    elif callable(getattr(given, "server_config_data", None)):  # a parsed launch (inputs/launch.py)
        found |= secrets.in_words(getattr(given, "argv", ())) | secrets.in_mapping(getattr(given, "env", {}))
        found |= secrets.in_words(f"{k}={v}" for k, v in getattr(given, "env", {}).items())
        files = [getattr(given, "config_file", None)]
    for path in files:
        # only regular files, as much as an input may hold (a FIFO is never opened here)
        if isinstance(path, str) and path != "-" and os.path.isfile(path) and os.path.getsize(path) <= 16 * 2**20:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    found |= secrets.in_text(handle.read())
            except OSError:
                continue
    hide(found)


def _selection(args: argparse.Namespace, rules: tuple) -> object:
    """--select / --ignore over the settings file (engine/selection.py); exit 2 if unusable."""
    from inkling_compat.engine.selection import build_selection, find_settings

    settings = None if args.isolated else (args.settings or find_settings(args.config if isinstance(args.config, str) else None))
    args.settings_used = settings
    return build_selection((c.rule.id for c in rules), select=args.select, ignore=args.ignore, settings_file=settings)


def _emit(text: str, output: str | None, fmt: str = "text") -> None:
    """The document on stdout, or in --output FILE (exit 2 if it cannot be written)."""
    from inkling_compat.output_stream import emit

    emit(text, output, fmt)


def _refuse_output_over_inputs(args: argparse.Namespace) -> None:
    from inkling_compat.output_stream import refuse_inputs_as_output

    if args.output is None:
        return
    from inkling_compat.output_stream import read_through

    config = args.config if isinstance(args.config, str) else args.launch  # (a launch command's own file)
    named_files, named_folders = read_through(args.config)  # what the config leads the check to read
    files = [config, args.launch, args.model, args.platform, *args.adapter, getattr(args, "settings_used", None), *named_files]
    refuse_inputs_as_output(args.output, files, folders=[args.model, *args.adapter, *args.adapter_dir, *named_folders])


def version_text() -> str:
    """`inkling-compat 0.1.0 (sglang 0.5.23 (default), 53ccafdf; 135 rules)`, without loading the
    engine: the rules are counted as files, one per rule (as `engine.rule_load.rule_files` lists them)."""
    from importlib import resources

    from inkling_compat import __version__

    folder = resources.files("inkling_compat.rules")
    count = sum(1 for _ in _rule_files(folder))
    versions = ", ".join(f"{v} (default)" if v == SGLANG_DEFAULT_VERSION else v for v in SGLANG_VERSIONS)
    return f"inkling-compat {__version__} (sglang {versions}; {count} rules)"


def _rule_files(folder):  # type: ignore[no-untyped-def]
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _rule_files(entry)
        elif entry.name.endswith(".yaml") and not entry.name.startswith("_"):
            yield entry


def _run_rules(args: argparse.Namespace) -> int:
    from inkling_compat.engine.rule_load import load_rules

    compiled = load_rules()
    if args.id is not None:
        return _print_rule(args.id, compiled, args.format)
    if args.format == "json":
        print(json.dumps([c.rule.model_dump(by_alias=True, exclude={"examples"}) for c in compiled], indent=2))
        return EXIT_OK
    width = max(len(c.rule.id) for c in compiled)
    for c in compiled:
        r = c.rule
        print(f"{r.id:<{width}}  {r.severity:<7}  {r.origin:<14}  {r.stage:<13}  {r.title}")
    print(f"{len(compiled)} rules")
    return EXIT_OK


def _print_rule(rule_id: str, compiled: tuple, fmt: str) -> int:  # type: ignore[type-arg]
    """`rules <id>`: the rule's page, as docs/rules/<id>.md holds it (JSON: the rule and its URL)."""
    import difflib

    from inkling_compat.errors import InputError
    from inkling_compat.report.urls import rule_url

    by_id = {c.rule.id: c.rule for c in compiled}
    rule = by_id.get(rule_id.strip())
    if rule is None:
        close = difflib.get_close_matches(rule_id, list(by_id), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "; `inkling-compat rules` lists them"
        raise InputError("(command line)", "rules <id>", f"no rule {rule_id!r}{hint}")
    if fmt == "json":
        print(json.dumps(dict(rule.model_dump(by_alias=True, exclude={"examples"}), url=rule_url(rule.id)), indent=2))
        return EXIT_OK
    from inkling_compat.publish.pages import components, render_page

    print(render_page(rule, components().get(rule.id, "rules")), end="")
    return EXIT_OK


def _run_explain(args: argparse.Namespace) -> int:
    from inkling_compat.explain import findings, read_text, render

    text = read_text(args.text, sys.stdin)
    found = findings(text)
    releases = _release_notes(text, found)
    if args.format == "json":
        from inkling_compat.report.explain_json import explain_document

        print(json.dumps({"ok": bool(found or releases), "findings": explain_document(found), "releases": releases}, indent=2))
        return EXIT_OK if found or releases else EXIT_PROBLEMS
    if not found and not releases:
        print("no rule matches this text; `inkling-compat rules` lists what is covered")
        return EXIT_PROBLEMS
    blocks = [render(found, several_lines=len(text.strip().splitlines()) > 1)] if found else []
    if releases:
        blocks.append("sglang releases\n" + "\n".join(f"  - {note}" for note in releases))
    print("\n\n".join(blocks))
    return EXIT_OK


def _release_notes(text: str, found: list) -> list[str]:  # type: ignore[type-arg]
    """What the releases' tables and rules say about the text (inkling_compat/inputs/argument_history.py):
    an argument or choice some releases lack, a rule raised by some releases only."""
    from inkling_compat.inputs.argument_history import notes, rule_releases_note

    from inkling_compat.engine import sites

    out = notes(text)
    for finding in found:
        rule = finding.matches[0].rule
        # (a release whose code lacks the rule's site does not raise it: engine/sites.py; a
        # variant was written for its releases' code)
        versions = [v for v in rule.sglang_versions or [] if rule.id not in sites.absent(v)]
        note = rule_releases_note(versions + [v for variant in rule.variants for v in variant.sglang_versions])
        if note:
            out.append(f"{rule.id}: {note}")
    return out


def _run_run(args: argparse.Namespace) -> int:
    from inkling_compat.runtime.run_cli import run_command

    return run_command(args)


def _started() -> None:
    """End of start-up in a process of our own (see `main`): the objects built so far (modules,
    pydantic validators, compiled rules) live as long as the process, so they are frozen out of
    the collector's generations and the collector resumes for what the command itself creates.
    For `check`, its youngest generation is collected every 10,000 new objects instead of 700: a
    check of one command creates about 7,000 and little cyclic garbage (examples/launch.sh: the
    pure-Python half of `datetime`, dropped at its import, 311 objects whose one collection cost
    about 2 ms), and the process ends after it; a fleet's or a long input's cycles are still
    collected as they accrue."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        if _command_ran == "check":
            gc.set_threshold(10_000, *gc.get_threshold()[1:])
        gc.enable()


_collector_paused = False
_command_ran: str | None = None  # the command `main` ran last (see `command`)


def main(argv: Sequence[str] | None = None) -> int:
    global _collector_paused
    # Start-up builds some 100,000 long-lived objects and almost no garbage, which the cyclic
    # collector's passes walk again and again (and once more at an interpreter's exit). So, as
    # the command (argv None: not a caller's process), the collector waits until start-up is
    # done (`_started`), which freezes what start-up built; it then runs for what the command
    # creates. (How the command's process leaves: `command`.)
    if argv is None and gc.isenabled():
        gc.disable()
        _collector_paused = True
    from inkling_compat import output_stream

    output_stream.prepare()
    try:
        code = _main(argv)
    finally:
        _started()  # (a no-op once `check` has called it)
    return output_stream.finish(code, own_process=argv is None)


def _main(argv: Sequence[str] | None) -> int:
    import os

    # pydantic scans every installed distribution's entry points for plugins when it builds
    # the first model (slow in a virtualenv with torch); the command uses no pydantic plugin.
    # (Effective only while no model is built yet: the package's __init__ must import lazily.)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from inkling_compat.errors import InputError, RuleEvaluationError, RuleFileError
    from inkling_compat.output_stream import stream_error

    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _wanted_format(argv)
    launch_words = None
    if argv and argv[0] == "check" and "--" in argv:  # `check [options] -- python -m sglang.launch_server ...`
        cut = argv.index("--")
        argv, launch_words = argv[:cut], argv[cut + 1 :]
    try:
        args = _plain_check(argv)
        if args is None:
            args = _parser(argv[0] if argv else None).parse_args(argv)
        args.launch_words = launch_words
    except UsageError as exc:
        named = re.match(r"argument ([^:\s]+)", str(exc))
        return _fail(EXIT_INPUT, f"inkling-compat: error: {exc}", as_json, input_error={"file": "(command line)", "field": named.group(1) if named else "(arguments)", "reason": str(exc)})
    global _command_ran
    _command_ran = args.command
    runners = {"check": _run_check, "rules": _run_rules, "explain": _run_explain, "run": _run_run}
    if args.command != "check":
        _started()  # only `check`'s start-up is worth the pause
    try:
        return runners[args.command](args)
    except RuleFileError as exc:
        return _fail(EXIT_INTERNAL, f"inkling-compat: internal error: broken rule file: {exc}", as_json, internal_error={"type": "RuleFileError", "message": f"broken rule file: {exc}"})
    except InputError as exc:
        if as_json and exc.field in ("--output", "(output)"):  # the failure document goes to stdout
            as_json = (as_json[0], None)
        return _fail(EXIT_INPUT, f"inkling-compat: error: {exc}", as_json, input_error={"file": exc.file, "field": exc.field, "reason": exc.reason})
    except RuleEvaluationError as exc:
        return _fail(EXIT_INTERNAL, f"inkling-compat: internal error: {exc}", as_json, internal_error={"type": "RuleEvaluationError", "message": str(exc)})
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if not stream_error(exc):
            return _fail(EXIT_INTERNAL, f"inkling-compat: internal error: {type(exc).__name__}: {exc}", as_json, internal_error={"type": type(exc).__name__, "message": str(exc)})
        # A print() to a full disk, a closed stream or a reader gone away (`| head`): exit 2.
        from inkling_compat.output_stream import say, silence

        say(f"inkling-compat: error: cannot write to standard output: {exc.strerror or type(exc).__name__}")
        if argv is None:
            silence(1)  # what is still buffered would fail again at exit
        return EXIT_INPUT
    except Exception as exc:  # never a traceback for the user
        return _fail(EXIT_INTERNAL, f"inkling-compat: internal error: {type(exc).__name__}: {exc}", as_json, internal_error={"type": type(exc).__name__, "message": str(exc)})


def _wanted_format(argv: list[str]) -> tuple[str, str | None] | None:
    """(format, --output) of `check ... --format F` (F: a format with a failure document,
    report/formats.py) or `run ... --format json`, read before parsing: a command line that
    argparse refuses still gets its document. None for a format without one (text)."""
    if not argv or argv[0] not in ("check", "run"):
        return None
    documented = formats.with_failure_document() if argv[0] == "check" else ("json",)
    fmt = output = None
    for a, b in zip(argv, argv[1:] + [""]):
        if a == "--format" and b in documented:
            fmt = b
        elif a.startswith("--format=") and a[9:] in documented:
            fmt = a[9:]
        elif a == "--output" and b:
            output = b
        elif a.startswith("--output="):
            output = a[9:]
    return (fmt, output if argv[0] == "check" else None) if fmt else None


def _fail(code: int, line: str, as_json: tuple[str, str | None] | None, **error: dict) -> int:
    """One line on stderr; with `check|run --format json`, also one JSON document on stdout:
    {"ok": false, "input_error": {"file", "field", "reason"}} or {"ok": false,
    "internal_error": {"type", "message"}}."""
    from inkling_compat.output_stream import OutputError, say, write_stdout

    from inkling_compat.report.escape import shown

    if "\n" in line or "\r" in line:  # one line, whatever the message held
        line = " ".join(line.split())
    say(shown(line))  # (stderr that cannot take it: the exit code still says it)
    if as_json:
        from inkling_compat.report.outputs import render_failure

        fmt, output = as_json
        document = render_failure(fmt, code, **error) or ""
        try:
            _emit(document, output, fmt)
        except OutputError:  # the output file is what failed: stdout still gets it
            try:
                if output is not None and document:
                    write_stdout(document, fmt)
            except OutputError:
                pass
    return code


def command() -> int:
    """The `inkling-compat` command as a process of its own (the console script, `python -m
    inkling_compat`): `main()`, then the process leaves once its streams are flushed and its
    exit functions have run, without the interpreter's teardown of every module and object
    (some 6 ms of a check: nothing of it is output). The usual exit while another thread is
    alive, after `run` (torch's own teardown), or when a stream cannot be flushed here."""
    code = main()
    _leave(code)
    return code


def _leave(code: int) -> None:
    import os

    threading = sys.modules.get("threading")
    if _command_ran == "run" or (threading is not None and threading.active_count() > 1) or not _flushed():
        return
    import atexit

    atexit._run_exitfuncs()  # (each runs once: the interpreter's exit would find none left)
    if _flushed():  # (what an exit function wrote)
        os._exit(code)


def _flushed() -> bool:
    """Whether stdout and stderr took what is buffered (if not, the interpreter's exit says it,
    as it always did)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            return False
    return True


if __name__ == "__main__":
    sys.exit(command())
