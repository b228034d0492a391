"""A launch command as the server config: what sglang 0.5.23's entry points parse.

Accepted commands (leading `VAR=value` assignments, `env` and `exec` skipped):
`python[3[.X]] -m sglang.launch_server ARGS` (`sys.argv[1:]`), `sglang serve ARGS` (the wheel's
console script `sglang = sglang.cli.main:main`: serve strips `--model-type X` and turns a
leading positional into `--model-path`), and `python -m sglang.cli.main serve ARGS`. ARGS alone
(starting with `-`) are taken as they are.

A launch file (`--launch FILE`, `-` for stdin; a regular file or standard input under the
16 MiB cap of config files, at most 100,000 words) holds a shell script, read as bash reads it
(inputs/shell.py: the words bash would pass to the sglang command it runs, wrappers unwrapped,
variables of the script expanded), or a YAML/JSON list of words (a container's `command` + `args`).
A word whose value the file does not define (`$PORT` from the environment, `$1`, `$(cmd)`) is
not guessed: its argument is left out of the parse and named ("--port comes from $PORT, not set
in start.sh"), and the rules that read what it sets are not checked (`Launch.unknown_values`).

`--config FILE` inside the command is sglang's own config file, merged as
`ConfigArgumentMerger.merge_config_with_args` does (config words first, so the command line wins),
with its refusals: only .yaml/.yml (a .json config is refused here, as sglang refuses it; the
checker's own `check --config` still reads JSON), dash keys only (`--<key>` as written).
The merged words are parsed as sglang's argparse parses them (`argument_table.plain_values`, else
argparse rebuilt from sglang's table: inputs/argument_parser.py).
sglang's refusals (argparse's errors, the merger's ValueErrors, the --lora-paths action's) are
the launch's `refusals` (inputs/refusals.py), placed at their argument ("argument 12:
--max-lora-rank") or at the config file's key: problems of the deployment, reported by rules.
"""

from __future__ import annotations

import functools
import re

from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table
from inkling_compat.sglang.plain_dataclass import dataclass, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

COMMAND = "<command>"


def _refusals() -> Any:
    """inputs/refusals.py, imported where sglang refuses or warns (a launch it takes needs none)."""
    from inkling_compat.inputs import refusals

    return refusals


def _assigns(word: str) -> bool:
    """A `NAME=value` word (`^[A-Za-z_][A-Za-z0-9_]*=`), told with string methods."""
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isascii() and name.isidentifier()



@dataclass(frozen=True)
class Launch:
    """One launch command, parsed as sglang parses it."""

    # The dests its arguments set (argparse's values; defaults left out).
    values: dict[str, Any]
    # VAR=value assignments before the command (and `export` lines of a script).
    env: dict[str, str]
    # The merged words argparse parsed, and for each where it came from.
    argv: tuple[str, ...]
    label: str = COMMAND
    config_file: str | None = None
    # Where each dest was set, (dest, file, where): the command's "argument 12: --max-lora-rank"
    # or the --config file's key; the last setting wins, as in argparse.
    places: tuple[tuple[str, str, str], ...] = ()
    # Where sglang stops parsing (inputs/refusals.py: at most one; then `values` is empty),
    # and the deprecation warnings its parser logs on the way.
    refusals: tuple[dict[str, Any], ...] = ()
    warnings: tuple[dict[str, Any], ...] = ()
    # The dests whose value the launch file does not define, with why: ("port", "--port comes
    # from $PORT, not set in start.sh"); dest "*" where any argument may be set (`$EXTRA_ARGS`).
    unknown_values: tuple[tuple[str, str], ...] = ()
    # Further sglang commands found in the same file after this one.
    more_commands: int = 0
    # What the report says about the launch file besides its problems (the values not known,
    # the commands not checked).
    notes: tuple[str, ...] = ()

    def server_config_data(self) -> dict[str, Any]:
        """The project's server config mapping of this launch (`server_config_data`)."""
        return server_config_data(self)


MAX_LAUNCH_WORDS = 100_000


def read_words(path: str, env: dict[str, str] | None = None) -> list[str]:
    """The words of a launch file's first sglang command (or stdin's for `-`), its environment
    first as `NAME=value` words."""
    return read_words_unknown(path, env)[0]


def read_words_unknown(path: str, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """`read_words`, and each word whose value the file does not define (its text as written,
    `$PORT`) with where it comes from: `--fix` edits the words, so they are known by text."""
    found = read_commands(path, env)[0]
    prefix = [f"{k}={v}" for k, v in found.env.items() if _assigns(f"{k}=")]
    return prefix + list(found.words), {found.words[i]: why for i, why in found.unknown.items()}


def unknown_by_text(words: list[str] | tuple[str, ...], unknown_text: dict[str, str]) -> dict[int, str]:
    """The unknown map of words from `read_words_unknown`'s texts."""
    return {i: unknown_text[w] for i, w in enumerate(words) if w in unknown_text} if unknown_text else {}


def read_text(path: str) -> str:
    """A launch file's text: a regular file (or standard input) under the config files' byte
    cap; FIFOs, sockets and devices are refused as for `--config`."""
    from inkling_compat.inputs import stdin
    from inkling_compat.inputs.loading import MAX_INPUT_BYTES, read_capped

    label = stdin.NAME if path == "-" else path
    raw = stdin.read_bytes(MAX_INPUT_BYTES) if path == "-" else read_capped(path, "a launch file (a shell script or a list of words)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(label, "(file)", "not UTF-8 text") from None


def read_commands(path: str, env: dict[str, str] | None = None) -> list[Any]:
    """Every sglang command of a launch file (inputs/shell.FoundCommand), in the order it
    runs them; an InputError when there is none."""
    from inkling_compat.inputs.shell import FoundCommand, find_commands, find_in_argv

    label = "<stdin>" if path == "-" else path
    text = read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("[") or stripped.startswith("- "):
        from inkling_compat.inputs.loading import _yaml_data

        try:
            data = _yaml_data(text)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - any parse failure is the file's problem
            raise InputError(label, "(file)", f"not a YAML/JSON list of words: {' '.join(str(exc).split())[:200]}") from None
        if not isinstance(data, list) or not all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in data):
            raise InputError(label, "(root)", "expected a list of words (a container's command + args)")
        if len(data) > MAX_LAUNCH_WORDS:
            raise InputError(label, "(root)", f"more than {MAX_LAUNCH_WORDS:,} words")
        words = [str(w) for w in data]
        if words and words[0].startswith("-"):  # the image's entry point is sglang: args alone
            return [FoundCommand(tuple(words), 1)]
        found = find_in_argv(words, origin=label, env=env)
        if not found:
            raise InputError(label, "(file)", "no sglang launch command in it (looked for python -m sglang.launch_server ..., sglang serve ..., also inside env/nohup/timeout/docker run/bash -c ...)")
        return found
    found = find_commands(text, origin=label, env=env)
    if not found:
        raise InputError(label, "(file)", "no sglang launch command in it (looked for python -m sglang.launch_server ..., sglang serve ..., also inside env/nohup/timeout/docker run/bash -c ...; functions only where called, heredocs are text)")
    return found


def script_words(text: str, label: str = COMMAND) -> list[str]:
    """The first sglang command of a shell script, its environment first as `NAME=value`
    words (inputs/shell.py reads the script)."""
    from inkling_compat.inputs.shell import find_commands

    found = find_commands(text, origin=label)
    if not found:
        raise InputError(label, "(file)", "no sglang launch command in it (python -m sglang.launch_server ..., sglang serve ...)")
    return [f"{k}={v}" for k, v in found[0].env.items()] + list(found[0].words)


def _entry(words: list[str]) -> tuple[int, str] | None:
    """(index of the first server argument, the entry point) or None: leading `NAME=value`
    words (and `env`, `exec`) are skipped; ARGS alone (a first word starting with `-`) are the
    server arguments as they are."""
    from inkling_compat.inputs.shell import _entry_at

    i = 0
    while i < len(words) and (_assigns(words[i]) or words[i] in ("env", "exec")):
        i += 1
    if i < len(words) and words[i].startswith("-"):
        return i, "arguments"
    found = _entry_at(words[i:])
    return None if found is None else (i + found[0], found[1])


def _serve_argv(argv: list[str]) -> list[str]:
    """cli/serve.py: `--model-type X` is serve's own, a leading positional is the model path."""
    return [w for w, _ in _serve_pairs([(w, None) for w in argv])]


def _serve_pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """`_serve_argv` over (word, mark) pairs: each word keeps its mark (an unknown value's
    reason, or its origin)."""
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(pairs):
        word = pairs[i][0]
        if word == "--model-type" and i + 1 < len(pairs):
            i += 2
            continue
        if word.startswith("--model-type="):
            i += 1
            continue
        out.append(pairs[i])
        i += 1
    if out and not out[0][0].startswith("-"):
        out = [("--model-path", None), *out]
    return out


_LAUNCHES: dict[tuple[str, ...], Launch] = {}  # a command without --config -> its parse


def parse_launch(words: list[str], label: str = COMMAND, *, env: dict[str, str] | None = None, unknown: dict[int, str] | None = None, more: int = 0) -> Launch:
    """The launch as sglang parses it (a command that names no file is parsed once per process and
    release, with the selected release's table).
    `env`: the command's environment besides its `NAME=value` words; `unknown`: index of a word
    -> where its value comes from (inputs/shell.FoundCommand); `more`: commands found after it."""
    if len(words) > MAX_LAUNCH_WORDS:
        raise InputError(label, "(command)", f"more than {MAX_LAUNCH_WORDS:,} words")
    key = (argument_table.selected(), label, tuple(sorted((env or {}).items())), tuple(sorted((unknown or {}).items())), more, *words)
    hit = _LAUNCHES.get(key)
    if hit is not None:
        return hit
    launch = _parse_launch(words, label, env or {}, unknown or {}, more)
    if launch.config_file is None:
        if len(_LAUNCHES) >= 256:
            _LAUNCHES.clear()
        _LAUNCHES[key] = launch
    return launch


def launch_config(command: Any, *, placed: bool = True) -> Launch:
    """A deployment command (inputs/deployment.py) parsed as sglang parses it; a refusal is
    placed at the command (`placed`: its file:line and container, for a file of several
    commands or containers)."""
    try:
        return parse_launch(list(command.words), command.file, env=dict(command.env), unknown=dict(command.unknown))
    except InputError as exc:
        if placed and exc.file == command.file:
            raise InputError(command.place, exc.field, exc.reason) from None
        raise


def _parse_launch(words: list[str], label: str, given_env: dict[str, str] | None = None, unknown: dict[int, str] | None = None, more: int = 0) -> Launch:
    words, given_env, unknown = _command_words(words, label, dict(given_env or {}), dict(unknown or {}))
    start, entry = _entry(words)  # type: ignore[misc]  # (_command_words found it)
    env = {**given_env, **dict(w.split("=", 1) for w in words[:start] if _assigns(w))}
    # Each word with where it is: ("command", its index in sglang's sys.argv, 1 = the first
    # server argument) or ("config", key); and the reason its value is not known, if so.
    unknown_values: tuple[tuple[str, str], ...] = ()
    if entry != "sglang serve" and not unknown:  # (the common case, without the pairs below)
        argv = words[start:]
        origins: list[tuple[str, Any]] = [("command", i + 1) for i in range(len(argv))]
    else:
        pairs = [(w, (("command", i + 1), unknown.get(start + i))) for i, w in enumerate(words[start:])]
        if entry == "sglang serve":  # (the `--model-path` serve adds is placed at the path it names)
            served = _serve_pairs(pairs)
            pairs = [(w, mark or ((served[k + 1][1][0], None) if k + 1 < len(served) else (("command", None), None))) for k, (w, mark) in enumerate(served)]
        argv = [w for w, _ in pairs]
        origins = [origin for _, (origin, _) in pairs]
        if any(why for _, (_, why) in pairs):
            argv, origins, unknown_values = _without_unknown(argv, origins, [why for _, (_, why) in pairs])
    config_file = None
    if "--config" in argv:  # (sglang's own config file: its format's module imported only here)
        from inkling_compat.inputs.sglang_config import ConfigRefused, check_root, check_yaml_path, config_file_path, config_to_args

        try:
            config_file = config_file_path(argv)
            if config_file is not None:
                check_yaml_path(config_file)
        except ConfigRefused as exc:
            at = argv.index("--config") + 1
            return _refused(env, argv, label, None, _refusals().item("config-file", str(exc), "ValueError", label, f"argument {at}: --config", _refusals().config_fix(str(exc))))
        if config_file is not None:
            from inkling_compat.inputs.loading import read_document

            try:
                data = read_document(config_file)
            except InputError as exc:
                if exc.reason.startswith("malformed YAML"):  # yaml.safe_load's error: sglang stops with it
                    return _refused(env, argv, label, config_file, _unreadable_yaml(config_file))
                if exc.field != "(root)" or not exc.reason.startswith("expected a mapping"):
                    raise
                data = []  # a root that is not a mapping: sglang's own refusal below
            try:
                pairs = config_to_args(check_root(data))
            except ConfigRefused as exc:
                key = exc.key or ""
                return _refused(env, argv, label, config_file, _refusals().item("config-file", str(exc), "ValueError", config_file, key, _refusals().config_fix(str(exc))))
            config_words = [w for _key, ws in pairs for w in ws]
            config_origins = [("config", key) for key, ws in pairs for _ in ws]
            index = argv.index("--config")
            argv = config_words + argv[:index] + argv[index + 2 :]
            origins = config_origins + origins[:index] + origins[index + 2 :]
    # (a --model-path the file does not define, or words that may hold it: not "required")
    required = not any(dest in ("model_path", "*") for dest, _ in unknown_values)
    values = argument_table.plain_values(argv, required)  # (words argparse reads one way only: no parser built)
    if values is not None:
        return Launch(values, env, tuple(argv), label, config_file, _places(argv, origins, label, config_file), unknown_values=unknown_values, more_commands=more)
    import argparse

    from inkling_compat.inputs.argument_parser import parser_for

    started = argparse.Namespace()  # (argparse fills it in place: what was read before a refusal)
    try:
        namespace, extras = _parse_known(parser_for(argv, required), argv, started)
    except Exception as exc:  # ArgumentsRefused, argparse.ArgumentError (the warnings logged before it stand)
        refusal = exc if isinstance(exc, argument_table.ArgumentsRefused) else argument_table.ArgumentsRefused(str(exc), getattr(exc, "argument_name", None))
        return _refused(env, argv, label, config_file, _placed(refusal, argv, origins, label, config_file), _warnings(started, argv, origins, label, config_file))
    values = vars(namespace)
    warnings = _warnings(namespace, argv, origins, label, config_file)
    values.pop(argument_table.WARNINGS, None)
    if extras:  # sglang's parse_args: the same parse, then argparse's error about the rest
        first = next((i for i, w in enumerate(argv) if w == extras[0]), None)
        refusal = _at(_refusals().item("unrecognized-arguments", "unrecognized arguments: " + " ".join(extras), "SystemExit", label, ""), first, argv, origins, label, config_file)
        refusal.update(_suggested(extras[0]))
        return _refused(env, argv, label, config_file, refusal, warnings)
    return Launch(values, env, tuple(argv), label, config_file, _places(argv, origins, label, config_file), warnings=warnings, unknown_values=unknown_values, more_commands=more)


def _refused(env: dict[str, str], argv: list[str], label: str, config_file: str | None, refusal: dict[str, Any], warnings: tuple[dict[str, Any], ...] = ()) -> Launch:
    """A launch sglang stops parsing: no values (nothing after the refusal runs)."""
    return Launch({}, env, tuple(argv), label, config_file, refusals=(refusal,), warnings=warnings)


def _unreadable_yaml(config_file: str) -> dict[str, Any]:
    """`_parse_yaml_config`: yaml.safe_load of the open file raises (after the error log
    "Failed to read config file ..."), with PyYAML's own text. The checker's reader already
    refused the text's syntax, so the loader stops while composing: no value is built."""
    import yaml

    try:
        with open(config_file, encoding="utf-8") as handle:
            yaml.safe_load(handle)
    except yaml.YAMLError as exc:
        cls = f"{type(exc).__module__}.{type(exc).__name__}"
        return _refusals().item("config-file", str(exc), cls, config_file, "", "Fix the YAML syntax where the message points")
    except (OSError, ValueError, RecursionError) as exc:  # (read as sglang reads it: the same refusal)
        return _refusals().item("config-file", str(exc), type(exc).__name__, config_file, "", "")
    raise InputError(config_file, "(yaml)", "malformed YAML")  # (PyYAML takes what libyaml refused: not expected)


def _suggested(word: str) -> dict[str, str]:
    """"Did you mean" for an unrecognized option word: the closest known flag (`fix`), and the
    word's key and that flag's dest (`name`, `suggestion`: the rename `--fix` makes)."""
    if not word.startswith("--"):
        return {"fix": "", "name": "", "suggestion": ""}
    from inkling_compat.inputs.server_arguments import unknown_item

    name = word[2:].split("=", 1)[0]
    found = unknown_item(name, [word], "")
    # a flag of other sglang releases says which, and what replaced it (argument_history.py)
    fix = found["releases"][:1].upper() + found["releases"][1:] if found.get("releases") else f"Did you mean {found['flag']}?" if found["flag"] else ""
    return {"fix": fix, "name": name.replace("-", "_"), "suggestion": found["suggestion"]}


def _warnings(namespace: Any, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> tuple[dict[str, Any], ...]:
    found = getattr(namespace, argument_table.WARNINGS, None) or ()
    return tuple(_warning(option, said, new_flag, argv, origins, label, config_file) for option, said, new_flag in found)


def _warning(option: str, said: str, new_flag: str, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> dict[str, Any]:
    index = next((i for i, w in enumerate(argv) if w.split("=", 1)[0] == option), None)
    found = _at(_refusals().item("deprecated", said, "", label, ""), index, argv, origins, label, config_file)
    found["fix"] = f"Use {new_flag} instead of {option}" if new_flag else f"Remove {option}"
    return found


_CHUNK = 128  # words per argparse call: argparse's option scan is quadratic in one call's words


def _parse_known(parser: Any, argv: list[str], namespace: Any = None) -> tuple[Any, list[str]]:
    """`parser.parse_known_args(argv)` in linear time: argparse finds each option's successor by
    scanning every option index (quadratic in the words), so a long command is parsed in
    chunks that start at an option word (as argparse itself classifies words), each into the
    same namespace; the required arguments are checked once at the end, in argparse's words.
    The result, and any refusal, is the one parse's (tests/test_launch_input.py)."""
    if not getattr(parser, "_memo_optional", False):
        # How a word reads (option, abbreviation, value) depends on the word alone: an
        # abbreviation (`--tp`) is otherwise matched against every option string each time.
        parser._parse_optional = functools.lru_cache(maxsize=65536)(parser._parse_optional)
        parser._memo_optional = True
    if len(argv) <= _CHUNK or "--" in argv:
        return parser.parse_known_args(argv, namespace)

    # argparse reads every word before it acts on any (an ambiguous abbreviation anywhere is
    # its first refusal), so every word is read here first, in order.
    optional = [parser._parse_optional(word) is not None if word[:1] in parser.prefix_chars else False for word in argv]
    starts = [0]
    for i in range(1, len(argv)):
        if i - starts[-1] >= _CHUNK and optional[i]:
            starts.append(i)
    starts.append(len(argv))
    if namespace is None:
        import argparse

        namespace = argparse.Namespace()
    extras: list[str] = []
    required = [a for a in parser._actions if a.required]
    for a in required:
        a.required = False
    try:
        for begin, end in zip(starts, starts[1:]):
            namespace, more = parser.parse_known_args(argv[begin:end], namespace)
            extras += more
    finally:
        for a in required:
            a.required = True
    missing = ["/".join(a.option_strings) or a.metavar or a.dest for a in required if not hasattr(namespace, a.dest)]
    if missing:
        parser.error("the following arguments are required: " + ", ".join(missing))
    return namespace, extras


def _command_words(words: list[str], label: str, env: dict[str, str], unknown: dict[int, str]) -> tuple[list[str], dict[str, str], dict[int, str]]:
    """The words from the entry point on, found through wrappers (`nohup`, `timeout`, `docker
    run`, `bash -c` ...) when the words do not start with one (inputs/shell.find_in_argv)."""
    if _entry(words) is not None:
        return words, env, unknown
    if not unknown:
        from inkling_compat.inputs.shell import find_in_argv

        found = find_in_argv(words, origin=label, env=env)
        if found:
            return list(found[0].words), {**env, **found[0].env}, dict(found[0].unknown)
    raise InputError(label, "(command)", "not an sglang launch command (python -m sglang.launch_server ..., sglang serve ...)")


def _without_unknown(argv: list[str], origins: list[tuple[str, Any]], why: list[str | None]) -> tuple[list[str], list[tuple[str, Any]], tuple[tuple[str, str], ...]]:
    """The words argparse can judge: an option whose value the file does not define is left
    out with its values (never a false "invalid int value: '$PORT'"), and named with where the
    value comes from; a word not known in an option's place may be any arguments (dest "*")."""
    keep: list[int] = []
    said: dict[str, str] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        name, eq, _ = word.partition("=")
        row = _row_of(name) if word.startswith("--") else None
        if why[i] is not None and (row is None or not eq):
            said.setdefault("*", f"{_short(word)} may hold any arguments: it comes from {why[i]}")
            i += 1
            continue
        if row is None:
            keep.append(i)
            i += 1
            continue
        nargs = row.get("nargs")
        takes = 0 if eq or row["action"] in ("store_true", "store_false", "boolean_optional", "DeprecatedStoreTrueAction") or nargs == 0 else None
        j = i + 1
        if takes is None:
            limit = 1 if nargs is None else (int(nargs) if isinstance(nargs, int) else len(argv))
            while j < len(argv) and j - i - 1 < limit and not (argv[j].startswith("-") and len(argv[j]) > 1 and why[j] is None):
                if nargs == "?" and argv[j].startswith("-"):
                    break
                j += 1
        unknown_here = next((why[k] for k in range(i, j) if why[k] is not None), None)
        if unknown_here is None:
            keep.extend(range(i, j))
        else:
            dest = "*" if row["dest"] == "config" else row["dest"]
            said.setdefault(dest, f"{name} comes from {unknown_here}")
        i = j
    return [argv[k] for k in keep], [origins[k] for k in keep], tuple(said.items())


def _row_of(option: str) -> dict[str, Any] | None:
    """The table row an option word names: its exact spelling, or an abbreviation argparse
    would take (unique prefix); None for an unknown or ambiguous one (argparse says why)."""
    row = argument_table.lookup(option[2:])
    if row is not None and any(o == option for o in row["options"]):
        return row
    try:
        from inkling_compat.inputs.argument_parser import parser

        found = parser()._parse_optional(option)
    except Exception:  # noqa: BLE001 - an ambiguous prefix: argparse refuses it in the parse
        return None
    if isinstance(found, list):  # (newer argparse: every match)
        found = found[0] if len(found) == 1 else None
    action = found[0] if found else None
    if action is None or not action.option_strings:
        return None
    return argument_table.lookup(action.option_strings[-1].lstrip("-"))


def _short(word: str) -> str:
    return word if len(word) <= 40 else word[:37] + "..."


def _places(argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> tuple[tuple[str, str, str], ...]:
    """(dest, file, where) for each dest an option word sets (see `Launch.places`)."""
    last: dict[str, tuple[str, str, Any]] = {}  # dest -> (option, kind, at) of its last setting
    rows: dict[str, Any] = {}
    for word, (kind, at) in zip(argv, origins):
        if not word.startswith("--"):
            continue
        option = word.split("=", 1)[0]
        row = rows[option] if option in rows else rows.setdefault(option, argument_table.lookup(option[2:]))
        if row is not None:
            last[row["dest"]] = (option, kind, at)
    return tuple(
        (dest, config_file, str(at)) if kind == "config" and config_file else (dest, label, f"argument {at}: {option}")
        for dest, (option, kind, at) in last.items()
    )


def _placed(exc: Any, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> dict[str, Any]:
    """The refusal at its argument: the first word that is one of the refused flag's spellings
    (an ambiguous prefix: the word itself)."""
    message = exc.message
    names = set((exc.option or "").split("/")) - {""}
    if message.startswith("ambiguous option: "):
        names = {message.split()[2].split("=", 1)[0]}
    index = next((i for i, word in enumerate(argv) if word.split("=", 1)[0] in names), None)
    if message.startswith(("json.decoder.JSONDecodeError: ", "AssertionError: ")):
        cls, _, said = message.partition(": ")
        found = _refusals().item("lora-paths-action", said, cls, label, "")
    else:
        found = _refusals().item("", message, "SystemExit", label, "")
        found.update(_refusals().argparse_refusal(message))
    return _at(found, index, argv, origins, label, config_file)


def _at(found: dict[str, Any], index: int | None, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> dict[str, Any]:
    """`found` placed at argv[index]: the command's argument, or the --config file's key."""
    if index is not None:
        kind, where = origins[index]
        if kind == "config" and config_file:
            found.update(file=config_file, key=str(where))
        else:
            found.update(file=label, key=f"argument {where}: {argv[index].split('=', 1)[0]}")
    return found


def server_config_data(launch: Launch) -> dict[str, Any]:
    """The project's server config mapping of a launch: typed fields by dest, the rest under
    `arguments`, SGLANG_* switches the checker knows from the assignments under `env`."""
    from inkling_compat.inputs.models import EnvSwitches, ServerConfig

    fields = ServerConfig.__fact_fields__
    data: dict[str, Any] = {}
    arguments: dict[str, Any] = {}
    for dest, value in launch.values.items():
        if dest in fields and dest not in ("env", "sink", "arguments"):
            data[dest] = value
        else:
            arguments[dest] = value
    if arguments:
        data["arguments"] = arguments
    env = {k: v for k, v in launch.env.items() if k in EnvSwitches.__fact_fields__}
    if env:
        data["env"] = env
    return data


def cli_config(config: str | None, launch: str | None, words: list[str] | None, env: dict[str, str] | None = None, unknown_text: dict[str, str] | None = None) -> Any:
    """`check`'s server config: --config FILE, --launch FILE (a parsed Launch: its first sglang
    command), or the words after `--`; exactly one of them. `env`: values of `--env`/`--env-file`
    for what the launch file does not define; `unknown_text`: words of a launch file read by
    `read_words_unknown` whose values it does not define."""
    given = [name for name, value in (("--config", config), ("--launch", launch), ("--", words)) if value is not None]
    if len(given) != 1:
        raise InputError("(command line)", "check", "give one of --config FILE, --launch FILE or -- LAUNCH COMMAND" + (f" (got {' and '.join(given)})" if given else ""))
    if config is not None:
        return config
    if launch is not None:
        found = read_commands(launch, env)
        first, label = found[0], "<stdin>" if launch == "-" else launch
        parsed = parse_launch(list(first.words), label, env=dict(first.env), unknown=dict(first.unknown), more=len(found) - 1)
        if len(found) > 1:
            lines = ", ".join(str(f.line) for f in found[1:6]) + (", ..." if len(found) > 6 else "")
            said = f"{len(found) - 1} more sglang command(s) in {label} (line {lines}) not checked: this report is the command at line {first.line}"
            parsed = replace(parsed, notes=(*parsed.notes, said))
        return parsed
    return parse_launch(list(words or []), env=env, unknown=unknown_by_text(list(words or []), unknown_text or {}))


@functools.cache
def _env_line() -> re.Pattern[str]:
    return re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def env_values(pairs: list[str], files: list[str]) -> dict[str, str]:
    """`--env-file FILE` (NAME=VALUE lines; `#` comments, blank lines, `export `, one pair of
    quotes around a value) then `--env NAME=VALUE`, later ones winning; an InputError naming
    the file and line, or the option, for anything else."""
    from inkling_compat.inputs.loading import read_capped

    env: dict[str, str] = {}
    for file in files:
        raw = read_capped(file, "a .env file of NAME=VALUE lines")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(file, "(file)", "not UTF-8 text") from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = _env_line().match(line)
            if m is None:
                raise InputError(file, f"line {number}", "expected NAME=VALUE")
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            elif " #" in value:
                value = value.split(" #", 1)[0].rstrip()
            env[m.group(1)] = value
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not _assigns(name + "="):
            raise InputError("(command line)", "--env", f"expected NAME=VALUE, got {pair[:60]!r}")
        env[name] = value
    return env
