"""A launch command as the server config: what sglang 0.5.23's entry points parse.

Accepted commands (leading `VAR=value` assignments, `env` and `exec` skipped):
`python[3[.X]] -m sglang.launch_server ARGS` (`sys.argv[1:]`), `sglang serve ARGS` (the wheel's
console script `sglang = sglang.cli.main:main`: serve strips `--model-type X` and turns a
leading positional into `--model-path`), and `python -m sglang.cli.main serve ARGS`. ARGS alone
(starting with `-`) are taken as they are.

A launch file (`--launch FILE`, `-` for stdin) holds shell words (a script: `export VAR=value`
lines and `\\` continuations; the line that runs sglang is the command) or a YAML/JSON list of
words (a container's `command` + `args`).

`--config FILE` inside the command is sglang's own config file, merged as
`ConfigArgumentMerger.merge_config_with_args` does (config words first, so the command line wins),
with its refusals: only .yaml/.yml (a .json config is refused here, as sglang refuses it; the
checker's own `check --config` still reads JSON), dash keys only (`--<key>` as written).
The merged words are parsed by argparse rebuilt from sglang's table (`argument_table.parse`).
sglang's refusals (argparse's errors, the merger's ValueErrors, the --lora-paths action's) are
the launch's `refusals` (inputs/refusals.py), placed at their argument ("argument 12:
--max-lora-rank") or at the config file's key: problems of the deployment, reported by rules.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table, refusals
from inkling_compat.inputs.sglang_config import ConfigRefused, check_root, check_yaml_path, config_file_path, config_to_args

COMMAND = "<command>"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(.*/)?python(\d+(\.\d+)?)?$")


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

    def server_config_data(self) -> dict[str, Any]:
        """The project's server config mapping of this launch (`server_config_data`)."""
        return server_config_data(self)


def read_words(path: str) -> list[str]:
    """The words of a launch file (or stdin for `-`)."""
    import sys

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, "(file)", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(path, "(file)", "not UTF-8 text") from None
    stripped = text.lstrip()
    if stripped.startswith("[") or stripped.startswith("- "):
        from inkling_compat.inputs.loading import _yaml_data

        try:
            data = _yaml_data(text)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the file's problem
            raise InputError(path, "(file)", f"not a YAML/JSON list of words: {exc}") from None
        if not isinstance(data, list) or not all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in data):
            raise InputError(path, "(root)", "expected a list of words (a container's command + args)")
        return [str(w) for w in data]
    return script_words(text, path)


def script_words(text: str, label: str = COMMAND) -> list[str]:
    """The sglang command of a shell script, with its script's `export VAR=value` lines first."""
    joined = re.sub(r"\\\r?\n", " ", text)
    exports: list[str] = []
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InputError(label, "(file)", f"not shell words: {exc}") from None
        if not words:
            continue
        if words[0] == "export":
            exports += [w for w in words[1:] if _ASSIGNMENT.match(w)]
            continue
        if _entry(words) is not None:
            return exports + words
    raise InputError(label, "(file)", "no sglang launch command in it (python -m sglang.launch_server ..., sglang serve ...)")


def _entry(words: list[str]) -> tuple[int, str] | None:
    """(index of the first server argument, the entry point) or None."""
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in ("env", "exec")):
        i += 1
    rest = words[i:]
    if not rest:
        return None
    if _PYTHON.match(rest[0]):
        j = 1
        while j < len(rest) and rest[j].startswith("-") and rest[j] != "-m":
            j += 1  # interpreter options (-u, -X ...)
        if j + 1 < len(rest) and rest[j] == "-m":
            module = rest[j + 1]
            if module == "sglang.launch_server":
                return i + j + 2, "python -m sglang.launch_server"
            if module in ("sglang.cli.main", "sglang") and j + 2 < len(rest) and rest[j + 2] == "serve":
                return i + j + 3, "sglang serve"
        return None
    if re.match(r"^(.*/)?sglang$", rest[0]) and len(rest) > 1 and rest[1] == "serve":
        return i + 2, "sglang serve"
    if rest[0].startswith("-"):
        return i, "arguments"
    return None


def _serve_argv(argv: list[str]) -> list[str]:
    """cli/serve.py: `--model-type X` is serve's own, a leading positional is the model path."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--model-type" and i + 1 < len(argv):
            i += 2
            continue
        if argv[i].startswith("--model-type="):
            i += 1
            continue
        out.append(argv[i])
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", *out]
    return out


_LAUNCHES: dict[tuple[str, ...], Launch] = {}  # a command without --config -> its parse


def parse_launch(words: list[str], label: str = COMMAND) -> Launch:
    """The launch as sglang parses it (a command that names no file is parsed once per process)."""
    key = (label, *words)
    hit = _LAUNCHES.get(key)
    if hit is not None:
        return hit
    launch = _parse_launch(words, label)
    if launch.config_file is None:
        if len(_LAUNCHES) >= 256:
            _LAUNCHES.clear()
        _LAUNCHES[key] = launch
    return launch


def _parse_launch(words: list[str], label: str) -> Launch:
    found = _entry(words)
    if found is None:
        raise InputError(label, "(command)", "not an sglang launch command (python -m sglang.launch_server ..., sglang serve ...)")
    start, entry = found
    env = dict(w.split("=", 1) for w in words[:start] if _ASSIGNMENT.match(w))
    argv = list(words[start:])
    if entry == "sglang serve":
        argv = _serve_argv(argv)
    # Where each word is: ("command", its index in sglang's sys.argv, 1 = the first server
    # argument) or ("config", key).
    origins: list[tuple[str, Any]] = [("command", i + 1) for i in range(len(argv))]
    config_file = None
    try:
        config_file = config_file_path(argv) if "--config" in argv else None
        if config_file is not None:
            check_yaml_path(config_file)
    except ConfigRefused as exc:
        at = argv.index("--config") + 1
        return _refused(env, argv, label, None, refusals.item("config-file", str(exc), "ValueError", label, f"argument {at}: --config", refusals.config_fix(str(exc))))
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
            return _refused(env, argv, label, config_file, refusals.item("config-file", str(exc), "ValueError", config_file, key, refusals.config_fix(str(exc))))
        config_words = [w for _key, ws in pairs for w in ws]
        config_origins = [("config", key) for key, ws in pairs for _ in ws]
        index = argv.index("--config")
        argv = config_words + argv[:index] + argv[index + 2 :]
        origins = config_origins + origins[:index] + origins[index + 2 :]
    started = argparse.Namespace()  # (argparse fills it in place: what was read before a refusal)
    try:
        namespace, extras = argument_table.parser().parse_known_args(argv, namespace=started)
    except Exception as exc:  # ArgumentsRefused, argparse.ArgumentError (the warnings logged before it stand)
        refusal = exc if isinstance(exc, argument_table.ArgumentsRefused) else argument_table.ArgumentsRefused(str(exc), getattr(exc, "argument_name", None))
        return _refused(env, argv, label, config_file, _placed(refusal, argv, origins, label, config_file), _warnings(started, argv, origins, label, config_file))
    values = vars(namespace)
    warnings = _warnings(namespace, argv, origins, label, config_file)
    values.pop(argument_table.WARNINGS, None)
    if extras:  # sglang's parse_args: the same parse, then argparse's error about the rest
        first = next((i for i, w in enumerate(argv) if w == extras[0]), None)
        refusal = _at(refusals.item("unrecognized-arguments", "unrecognized arguments: " + " ".join(extras), "SystemExit", label, ""), first, argv, origins, label, config_file)
        refusal.update(_suggested(extras[0]))
        return _refused(env, argv, label, config_file, refusal, warnings)
    return Launch(values, env, tuple(argv), label, config_file, _places(argv, origins, label, config_file), warnings=warnings)


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
        return refusals.item("config-file", str(exc), cls, config_file, "", "Fix the YAML syntax where the message points")
    except (OSError, ValueError, RecursionError) as exc:  # (read as sglang reads it: the same refusal)
        return refusals.item("config-file", str(exc), type(exc).__name__, config_file, "", "")
    raise InputError(config_file, "(yaml)", "malformed YAML")  # (PyYAML takes what libyaml refused: not expected)


def _suggested(word: str) -> dict[str, str]:
    """"Did you mean" for an unrecognized option word: the closest known flag (`fix`), and the
    word's key and that flag's dest (`name`, `suggestion`: the rename `--fix` makes)."""
    if not word.startswith("--"):
        return {"fix": "", "name": "", "suggestion": ""}
    from inkling_compat.inputs.server_arguments import unknown_item

    name = word[2:].split("=", 1)[0]
    found = unknown_item(name, [word], "")
    return {"fix": f"Did you mean {found['flag']}?" if found["flag"] else "", "name": name.replace("-", "_"), "suggestion": found["suggestion"]}


def _warnings(namespace: Any, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> tuple[dict[str, Any], ...]:
    found = getattr(namespace, argument_table.WARNINGS, None) or ()
    return tuple(_warning(option, said, new_flag, argv, origins, label, config_file) for option, said, new_flag in found)


def _warning(option: str, said: str, new_flag: str, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> dict[str, Any]:
    index = next((i for i, w in enumerate(argv) if w.split("=", 1)[0] == option), None)
    found = _at(refusals.item("deprecated", said, "", label, ""), index, argv, origins, label, config_file)
    found["fix"] = f"Use {new_flag} instead of {option}" if new_flag else f"Remove {option}"
    return found


def _places(argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> tuple[tuple[str, str, str], ...]:
    """(dest, file, where) for each dest an option word sets (see `Launch.places`)."""
    found: dict[str, tuple[str, str]] = {}
    for word, (kind, at) in zip(argv, origins):
        if not word.startswith("--"):
            continue
        option = word.split("=", 1)[0]
        row = argument_table.lookup(option[2:])
        if row is None:
            continue
        if kind == "config" and config_file:
            found[row["dest"]] = (config_file, str(at))
        else:
            found[row["dest"]] = (label, f"argument {at}: {option}")
    return tuple((dest, file, where) for dest, (file, where) in found.items())


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
        found = refusals.item("lora-paths-action", said, cls, label, "")
    else:
        found = refusals.item("", message, "SystemExit", label, "")
        found.update(refusals.argparse_refusal(message))
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

    fields = ServerConfig.model_fields
    data: dict[str, Any] = {}
    arguments: dict[str, Any] = {}
    for dest, value in launch.values.items():
        if dest in fields and dest not in ("env", "sink", "arguments"):
            data[dest] = value
        else:
            arguments[dest] = value
    if arguments:
        data["arguments"] = arguments
    env = {k: v for k, v in launch.env.items() if k in EnvSwitches.model_fields}
    if env:
        data["env"] = env
    return data


def cli_config(config: str | None, launch: str | None, words: list[str] | None) -> Any:
    """`check`'s server config: --config FILE, --launch FILE (a parsed Launch), or the words
    after `--`; exactly one of them."""
    given = [name for name, value in (("--config", config), ("--launch", launch), ("--", words)) if value is not None]
    if len(given) != 1:
        raise InputError("(command line)", "check", "give one of --config FILE, --launch FILE or -- LAUNCH COMMAND" + (f" (got {' and '.join(given)})" if given else ""))
    if config is not None:
        return config
    if launch is not None:
        return parse_launch(read_words(launch), "<stdin>" if launch == "-" else launch)
    return parse_launch(list(words or []))
