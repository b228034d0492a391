"""sglang's own `--config` file format, as sglang/srt/utils/server_args_config_parser.py reads it.

`ConfigArgumentMerger` turns a YAML mapping into command-line words, put before the command
line's own (command line over config file over defaults): a key is `--<key>` as written (dash
or underscore); a bool of a store_true flag is the flag (false leaves it out), any other bool
`--key true|false`; a list is the flag and each item (an empty list is left out); a mapping is
its JSON (a date, binary value or set inside it is json's TypeError, as sglang stops on it);
anything else its str() (a date `2020-01-01`, a timestamp `2020-01-01 10:00:00`, binary
`b'...'`, a set `{'a'}`, NaN `nan`: what sglang passes to argparse). The words are then parsed by argparse
(`argument_parser.parse`), so an unknown key is argparse's "unrecognized arguments".

Refusals, with sglang's messages: a file that is not .yaml/.yml, a missing file, two `--config`
or none after the flag, a root that is not a mapping, a key whose action is neither store_true
nor single-valued ("Unsupported config option ..."). Which keys a release's merger knows is in
its table (`config_merger_keys`): 0.5.23 any long spelling of a flag, 0.5.16-0.5.22 its dest
only, with only store and store_true actions supported.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from inkling_compat.inputs import argument_table, path_text


class ConfigRefused(ValueError):
    """sglang's ValueError about its config file (its text exactly); `key`: the key refused."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


def _config_keys(row: dict[str, Any]) -> set[str]:
    return {row["dest"]} | {o[2:].replace("-", "_") for o in row["options"] if o.startswith("--")}


def _takes_one_value(row: dict[str, Any]) -> bool:
    # `isinstance(action, argparse._StoreAction) or action.nargs is None`
    return row["action"] == "store" or row["nargs"] is None


_KINDS = {
    "store_true": "_StoreTrueAction",
    "store": "_StoreAction",
    "store_false": "_StoreFalseAction",
    "boolean_optional": "BooleanOptionalAction",
    "help": "_HelpAction",
}


def _merger_keys() -> tuple[frozenset[str], dict[str, str]]:
    return _release_merger_keys(argument_table.selected())


@functools.lru_cache(maxsize=None)
def _release_merger_keys(release: str) -> tuple[frozenset[str], dict[str, str]]:
    """(store_true keys, unsupported key -> action class name), as the release's
    ConfigArgumentMerger builds them."""
    table = argument_table.table(release)
    rows = [r for r in table["arguments"]]
    if table.get("config_merger_keys") == "dests":
        return _dest_merger_keys(rows)
    store_true = {k for r in rows if r["action"] == "store_true" for k in _config_keys(r)}
    supported = [r for r in rows if r["action"] == "store_true" or _takes_one_value(r)]
    supported_keys = {k for r in supported for k in _config_keys(r)}
    unsupported: dict[str, str] = {}
    for r in rows:
        if r in supported or not r["options"] or "--config" in r["options"] or "--help" in r["options"] or "-h" in r["options"]:
            continue
        for k in _config_keys(r):
            if k not in supported_keys:
                unsupported[k] = _KINDS.get(r["action"], r["action"])
    return frozenset(store_true), unsupported


def _dest_merger_keys(rows: list[dict[str, Any]]) -> tuple[frozenset[str], dict[str, str]]:
    """sglang 0.5.16-0.5.22's merger: keys are dests only; only `_StoreTrueAction` and
    `_StoreAction` are supported, so a dest that a deprecated alias shares is refused too (its
    dict comprehension: the last such action of a dest names it)."""
    store_true = {r["dest"] for r in rows if r["action"] == "store_true"}
    unsupported: dict[str, str] = {}
    for r in rows:
        if not r["options"] or r["action"] in ("store_true", "store") or {"--config", "--help", "-h"} & set(r["options"]):
            continue
        unsupported[r["dest"]] = _KINDS.get(r["action"], r["action"])
    return frozenset(store_true), unsupported


def config_to_args(config: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(key, its words) per key, in file order: `_convert_config_to_args`."""
    store_true, unsupported = _merger_keys()
    out: list[tuple[str, list[str]]] = []
    for key, value in config.items():
        key_norm = str(key).replace("-", "_")
        if key_norm in unsupported:
            raise ConfigRefused(f"Unsupported config option '{key_norm}' with action '{unsupported[key_norm]}'", str(key))
        words: list[str] = []
        if isinstance(value, bool):
            if key_norm in store_true:
                if value:
                    words.append(f"--{key}")
            else:
                words += [f"--{key}", str(value).lower()]
        elif isinstance(value, list):
            if value:
                words.append(f"--{key}")
                words += [str(item) for item in value]
        elif isinstance(value, dict):
            words += [f"--{key}", _dumps(value, str(key))]
        else:
            words += [f"--{key}", str(value)]
        out.append((str(key), words))
    return out


def _dumps(value: dict[str, Any], key: str) -> str:
    """`json.dumps(value)` as sglang calls it: a YAML date, timestamp, binary value or set inside
    the mapping is its TypeError (sglang stops there), NaN and infinities are written as Python's
    json writes them (`NaN`, `Infinity`)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ConfigRefused(f"{type(exc).__name__}: {exc}", key) from None


def config_file_path(argv: list[str]) -> str | None:
    """`_extract_config_file_path`."""
    indices = [i for i, word in enumerate(argv) if word == "--config"]
    if len(indices) > 1:
        raise ConfigRefused("Multiple config files specified! Only one allowed.")
    if not indices:
        return None
    if indices[0] == len(argv) - 1:
        raise ConfigRefused("No config file specified after --config flag!")
    return argv[indices[0] + 1]


def check_yaml_path(file_path: str) -> None:
    """`_validate_yaml_file`."""
    suffix = path_text.suffix(file_path)  # (sglang reads `Path(file_path)`)
    if suffix.lower() not in [".yaml", ".yml"]:
        raise ConfigRefused(f"Config file must be YAML format, got: {suffix}")
    if not path_text.exists(file_path):
        raise ConfigRefused(f"Config file not found: {file_path}")


def check_root(data: Any) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigRefused("Config file must contain a dictionary at root level")
    return data


def merge(argv: list[str], config_words: list[str]) -> list[str]:
    """`merge_config_with_args`: the config's words, then the command line without `--config FILE`."""
    index = argv.index("--config")
    return config_words + argv[:index] + argv[index + 2 :]
