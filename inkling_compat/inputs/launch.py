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
A refusal is an InputError placed at its argument ("argument 12: --max-lora-rank") or at the
config file key's line.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table
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
    unknown: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    # Where each dest was set, (dest, file, where): the command's "argument 12: --max-lora-rank"
    # or the --config file's key; the last setting wins, as in argparse.
    places: tuple[tuple[str, str, str], ...] = ()

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
    """The launch as sglang parses it, with the selected release's table (a command that names
    no file is parsed once per process and release)."""
    key = (argument_table.selected(), label, *words)
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
    except ConfigRefused as exc:
        raise InputError(label, "--config", str(exc)) from None
    if config_file is not None:
        try:
            check_yaml_path(config_file)
        except ConfigRefused as exc:
            raise InputError(label, "--config", str(exc)) from None
        from inkling_compat.inputs.loading import read_document

        try:
            data = read_document(config_file)
        except InputError as exc:
            if exc.field != "(root)" or not exc.reason.startswith("expected a mapping"):
                raise
            data = []  # a root that is not a mapping: sglang's own refusal below
        try:
            pairs = config_to_args(check_root(data))
        except ConfigRefused as exc:
            raise InputError(config_file, _at_line(config_file, exc.key) if exc.key else "(root)", str(exc)) from None
        config_words = [w for _key, ws in pairs for w in ws]
        config_origins = [("config", key) for key, ws in pairs for _ in ws]
        index = argv.index("--config")
        argv = config_words + argv[:index] + argv[index + 2 :]
        origins = config_origins + origins[:index] + origins[index + 2 :]
    try:
        values, extras = argument_table.parser().parse_known_args(argv)
    except argument_table.ArgumentsRefused as exc:
        raise _placed(exc, argv, origins, label, config_file) from None
    except Exception as exc:  # argparse.ArgumentError
        refusal = argument_table.ArgumentsRefused(str(exc), getattr(exc, "argument_name", None))
        raise _placed(refusal, argv, origins, label, config_file) from None
    unknown = []
    if extras:
        from inkling_compat.inputs.server_arguments import unknown_item

        message = "unrecognized arguments: " + " ".join(extras)
        first = next((i for i, w in enumerate(argv) if w == extras[0]), None)
        origin = origins[first] if first is not None else ("command", None)
        name = extras[0].lstrip("-").split("=", 1)[0]
        file = config_file if origin[0] == "config" and config_file else label
        key = origin[1] if origin[0] == "config" else f"argument {origin[1]}: {extras[0]}"
        item = unknown_item(name, extras, file, message)
        item["key"] = str(key)
        if origin[0] == "command":
            item["suggestion"] = item["flag"]
        unknown.append(item)
    return Launch(vars(values), env, tuple(argv), label, config_file, tuple(unknown), _places(argv, origins, label, config_file))


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


def _placed(exc: Any, argv: list[str], origins: list[tuple[str, Any]], label: str, config_file: str | None) -> InputError:
    """The refusal at its argument: the first word that is one of the refused flag's spellings."""
    names = set((exc.option or "").split("/")) - {""}
    index = None
    for i, word in enumerate(argv):
        if word.split("=", 1)[0] in names:
            index = i
            break
    message = exc.message
    if index is None:
        return InputError(label, "(command)", message)
    kind, where = origins[index]
    if kind == "config" and config_file:
        return InputError(config_file, _at_line(config_file, str(where)), message)
    return InputError(label, f"argument {where}: {argv[index].split('=', 1)[0]}", message)


def _at_line(config_file: str, key: str) -> str:
    """`key (line N)`: the key's line in the config file (only composed for a refusal)."""
    from inkling_compat.inputs.source_map import positions

    try:
        found = positions(Path(config_file).read_text(encoding="utf-8")).get(key)
    except (OSError, UnicodeDecodeError):
        found = None
    return f"{key} (line {found[0]})" if found else key


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
