"""sglang 0.5.23's server arguments as data: lookup, conversion, and sglang's argparse parser.

The table (inkling_compat/data/sglang-0.5.23-arguments.json) is generated from the wheel's own
parser by tests/oracle/sglang_argparse.py, and a fidelity test regenerates it. It is read on
first use only (a check whose config holds only the typed fields never reads it).

* `lookup(key)`: the argument a config key names, as sglang's ConfigArgumentMerger accepts keys
  (its dest, or any long option with dashes as underscores: `_config_keys`);
* `parse(argv)`: Python's own argparse on a parser rebuilt from the table (prog "sglang serve",
  as prepare_server_args builds it), so abbreviations, nargs, choices and every message are
  argparse's; defaults are left out of the result (only what the arguments set);
* each custom `type` of sglang is implemented once below under its own name (argparse's
  "invalid <name> value" message names the function).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
from decimal import Decimal
from importlib import resources
from typing import Any

TABLE_FILE = "sglang-0.5.23-arguments.json"
PROG = "sglang serve"


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return json.loads(resources.files("inkling_compat").joinpath("data", TABLE_FILE).read_text())


@functools.lru_cache(maxsize=1)
def _by_key() -> dict[str, dict[str, Any]]:
    """ConfigArgumentMerger's `_config_keys`: dest, and every `--long` option with `-` -> `_`
    (a later registration of a key wins, as its dict comprehensions do)."""
    out: dict[str, dict[str, Any]] = {}
    for row in table()["arguments"]:
        if row["action"] == "help":
            continue
        out[row["dest"]] = row
        for option in row["options"]:
            if option.startswith("--"):
                out[option[2:].replace("-", "_")] = row
    return out


def lookup(key: str) -> dict[str, Any] | None:
    return _by_key().get(str(key).replace("-", "_"))


def known_keys() -> list[str]:
    return list(_by_key())


def flag(row: dict[str, Any]) -> str:
    return row["options"][0]


# --- sglang's type functions (same names: argparse's message names them) ------------------


def human_readable_int(value: str) -> int:
    """sglang/srt/utils/common.py `human_readable_int`: SI (k, M, G, T) and IEC (Ki..Ti) suffixes."""
    value = value.strip()
    si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    return int(value)


def json_list_type(value: str) -> Any:
    """common.py `json_list_type` (orjson.loads; its errors are json.JSONDecodeError)."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError(f"Invalid JSON list: {value}. Please provide a valid JSON list.") from None


def nullable_str(val: str) -> str | None:
    if not val or val == "None":
        return None
    return val


def loads(value: str) -> Any:
    """json.loads (the `type` of sglang's JSON-valued flags)."""
    return json.loads(value)


def parse_cuda_graph_backend_arg(raw: str) -> str:
    """model_executor/cuda_graph_config.py: the retired backend refused before the choices."""
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError("tc_piecewise was removed; select breakable, full, or disabled")
    return raw


def parse_cuda_graph_config_arg(raw: str) -> Any:
    """cuda_graph_config.py `parse_cuda_graph_config_arg`, its JSON and object checks (the
    per-phase key lists are sglang's runtime constants: not checked here)."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}")
    return parsed


TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "human_readable_int": human_readable_int,
    "json_list_type": json_list_type,
    "nullable_str": nullable_str,
    "loads": loads,
    "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
    "parse_cuda_graph_config_arg": parse_cuda_graph_config_arg,
}


# --- sglang's actions ---------------------------------------------------------------------


class LoRAPathAction(argparse.Action):
    """arg_groups/argparse_actions.py `LoRAPathAction`: `{...}` entries as JSON objects."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        lora_paths: list[Any] = []
        for lora_path in values or []:
            lora_path = lora_path.strip()
            if lora_path.startswith("{") and lora_path.endswith("}"):
                try:
                    obj = json.loads(lora_path)
                except json.JSONDecodeError as exc:
                    raise ArgumentsRefused(f"json.decoder.JSONDecodeError: {exc}", option_string) from None
                if not ("lora_path" in obj and "lora_name" in obj):
                    raise ArgumentsRefused(
                        f"AssertionError: {lora_path!r} looks like a JSON str, but it does not contain 'lora_name' and 'lora_path' keys.", option_string
                    )
                lora_paths.append(obj)
            else:
                lora_paths.append(lora_path)
        setattr(namespace, self.dest, lora_paths)


# The namespace attribute the deprecation warnings are collected under (not a dest: `parse`
# and inputs/launch.py take it out of the values).
WARNINGS = "_inkling_parse_warnings"


class _StoreValue(argparse.Action):
    """DeprecatedStoreTrueAction / DeprecatedStoreConstAction / DeprecatedAliasStoreAction:
    each stores one value (True, its const_value, or the values) after a warning, whose text
    (argparse_actions.py `print_deprecated_warning`'s message) is collected on the namespace."""

    def __init__(self, option_strings: Any, dest: str, stored: Any = None, use_values: bool = False, new_flag: str | None = None, **kwargs: Any) -> None:
        self.stored, self.use_values, self.new_flag = stored, use_values, new_flag
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        replacement = f" Use '{self.new_flag}' instead." if self.new_flag else ""
        said = f"'{option_string}' is deprecated and will be removed in a future release.{replacement}"
        found = getattr(namespace, WARNINGS, None)
        setattr(namespace, WARNINGS, [*(found or []), (option_string, said, self.new_flag or "")])
        setattr(namespace, self.dest, values if self.use_values else self.stored)


class ArgumentsRefused(Exception):
    """What sglang's argparse says and where: `message` is its text after "sglang serve: error: "."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.message, self.option = message, option


class _SglangArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise ArgumentsRefused(message)


def _add(parser: argparse.ArgumentParser, row: dict[str, Any]) -> None:
    kind = row["action"]
    choices = row["choices"]
    if isinstance(choices, dict):  # a set: sorted (argparse's own order of a set varies per process)
        choices = choices["set"]
    kwargs: dict[str, Any] = {"dest": row["dest"], "default": argparse.SUPPRESS}
    if kind in ("store", "LoRAPathAction"):
        kwargs.update(type=TYPES[row["type"]] if row["type"] else None, nargs=row["nargs"], choices=choices)
        if row["const"] is not None:
            kwargs["const"] = row["const"]
        if kind == "LoRAPathAction":
            kwargs["action"] = LoRAPathAction
    elif kind in ("store_true", "store_false", "boolean_optional"):
        kwargs["action"] = {"store_true": "store_true", "store_false": "store_false", "boolean_optional": argparse.BooleanOptionalAction}[kind]
    elif kind == "DeprecatedStoreTrueAction":
        kwargs.update(action=_StoreValue, stored=True, nargs=0, new_flag=row.get("new_flag"))
    elif kind == "DeprecatedStoreConstAction":
        kwargs.update(action=_StoreValue, stored=row.get("const_value"), nargs=row["nargs"], choices=choices, new_flag=row.get("new_flag"))
    elif kind == "DeprecatedAliasStoreAction":
        kwargs.update(action=_StoreValue, use_values=True, nargs=row["nargs"], choices=choices, type=TYPES.get(row["type"] or "", None), new_flag=row.get("new_flag"))
    else:
        raise ValueError(f"argument table: unknown action kind {kind!r}")
    parser.add_argument(*row["options"], **kwargs)


@functools.lru_cache(maxsize=2)
def parser(require_model_path: bool = True) -> argparse.ArgumentParser:
    """sglang's parser rebuilt from the table (built once per process, on first use)."""
    built = _SglangArgParser(prog=PROG, exit_on_error=False)
    for row in table()["arguments"]:
        if row["action"] == "help":
            continue
        _add(built, row)
        if row["required"] and require_model_path:
            built._actions[-1].required = True
    return built


def parse(argv: list[str], require_model_path: bool = True) -> dict[str, Any]:
    """The dests the arguments set (argparse's values), or ArgumentsRefused with its text."""
    try:
        namespace = parser(require_model_path).parse_args(argv)
    except argparse.ArgumentError as exc:
        raise ArgumentsRefused(str(exc), exc.argument_name) from None
    values = vars(namespace)
    values.pop(WARNINGS, None)
    return values


def defaults() -> dict[str, Any]:
    return {row["dest"]: row["default"] for row in table()["arguments"] if row["action"] != "help"}
