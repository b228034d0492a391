"""sglang's server arguments as data, per release: lookup, conversion, and its argparse parser.

Each release's table (inkling_compat/data/sglang-X-arguments.json, gzipped for every release
but the default one) is generated from that release's own wheel by
tests/oracle/sglang_argparse.py, and a fidelity test regenerates it. A table is read on first
use only (a check whose config holds only the typed fields never reads one): its head line
holds its index (`index_of`: which row each config key and option string names), and a row is
parsed from its own line when first read (`_Rows`), so a launch check reads the index and the
few dozen rows its words reach.

The release read is the one selected for the check in progress (`using(version)`, a value per
thread the check sets once: the loaders below it are called from many places that do not
otherwise know the release); every function also takes it explicitly.

* `lookup(key)`: the argument a config key names, as sglang's ConfigArgumentMerger accepts keys
  (its dest, or any long option with dashes as underscores: `_config_keys`);
* `parse(argv)`: Python's own argparse on a parser rebuilt from the table (prog "sglang serve",
  as prepare_server_args builds it), so abbreviations, nargs, choices and every message are
  argparse's; defaults are left out of the result (only what the arguments set). The parser
  holds the actions argparse can reach from those words (`parser_for`, `_Reach`), each made
  as `add_argument` makes it (`_build`);
* each custom `type` of sglang is implemented once below under its own name (argparse's
  "invalid <name> value" message names the function).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
from _thread import _local
from typing import Any, Iterator

from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION, SGLANG_RELEASES, TABLE_RELEASE
from inkling_compat.inputs.package_files import package_dir

PROG = "sglang serve"

class _Selected(_local):
    """The release of the check in progress, per thread (a check runs in one thread, start to end)."""

    release = SGLANG_DEFAULT_VERSION


_SELECTED = _Selected()


def table_release(version: str) -> str:
    """The release whose table a version reads (a revision reads its release's)."""
    return TABLE_RELEASE.get(version, version)


def table_file(version: str) -> str:
    release = table_release(version)
    if release not in SGLANG_RELEASES:
        raise KeyError(f"no argument table for sglang {version!r}")
    return f"sglang-{release}-arguments.json" + ("" if release == SGLANG_DEFAULT_VERSION else ".gz")


TABLE_FILE = table_file(SGLANG_DEFAULT_VERSION)


@contextlib.contextmanager
def using(version: str) -> Iterator[None]:
    """Read `version`'s table in this context (the check's release)."""
    previous, _SELECTED.release = _SELECTED.release, table_release(version)
    try:
        yield
    finally:
        _SELECTED.release = previous


def selected() -> str:
    return _SELECTED.release


def table(version: str | None = None) -> dict[str, Any]:
    return _table(table_release(version or _SELECTED.release))


@functools.lru_cache(maxsize=None)
def _table(release: str) -> dict[str, Any]:
    return json.loads(_text(release))


def _text(release: str) -> bytes:
    """The table file's UTF-8 text."""
    with open(os.path.join(package_dir(), "data", table_file(release)), "rb") as handle:
        raw = handle.read()
    if table_file(release).endswith(".gz"):
        import gzip

        raw = gzip.decompress(raw)
    return raw


_HEAD_END = b', "arguments": ['


class _Rows:
    """A table read row by row: the file (tests/oracle/sglang_argparse.py `dumps`) holds its
    head, with the table's `index`, on its first line and one row per line after it, so a check
    parses the index and the rows it reads, not the release's five hundred rows. A file not so
    laid out is parsed whole."""

    def __init__(self, release: str) -> None:
        self.release = release
        text = _text(release)
        lines = text.split(b"\n")
        head: dict[str, Any] | None = None
        if lines[0].endswith(_HEAD_END):
            head = json.loads(lines[0][: -len(_HEAD_END)] + b"}")
        index = head.get("index") if head is not None else None
        if index is None or len(lines) != index["rows"] + 3 or lines[-2] != b"]}" or lines[-1] != b"":
            index, lines = index_of(json.loads(text)["arguments"]), []
        self.index, self.lines = index, lines
        self.found: dict[int, dict[str, Any]] = {}

    def row(self, i: int) -> dict[str, Any]:
        found = self.found.get(i)
        if found is None:
            if not self.lines:  # (a file not laid out by rows: read whole)
                found = _table(self.release)["arguments"][i]
            else:
                line = self.lines[i + 1]
                found = json.loads(line[:-1] if line.endswith(b",") else line)
            self.found[i] = found
        return found


@functools.lru_cache(maxsize=None)
def _rows(release: str) -> _Rows:
    return _Rows(release)


def index_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a check looks up in a table, by row number (written into the table file):

    * `keys`: ConfigArgumentMerger's `_config_keys`, the dest and every `--long` option with
      `-` -> `_` (a later registration of a key wins, as its dict comprehensions do), in the
      order its dict holds them;
    * `options`: every option string (but the help action's), sorted; `option_rows`: the row of each;
    * `always`: the rows argparse may reach whatever the words (`_Reach`): required, or with a
      single-dash option; `shared`: the groups of rows with one dest;
    * `plain`: argparse adds the rows without a word (`_plain`); `rows`: how many."""
    keys: dict[str, int] = {}
    options: dict[str, int] = {}
    by_dest: dict[str, list[int]] = {}
    always = []
    for i, row in enumerate(rows):
        if row["action"] == "help":
            continue
        keys[row["dest"]] = i
        for option in row["options"]:
            if option.startswith("--"):
                keys[option[2:].replace("-", "_")] = i
            else:
                always.append(i)
            options[option] = i
        if row["required"]:
            always.append(i)
        by_dest.setdefault(row["dest"], []).append(i)
    return {
        "keys": [[key, i] for key, i in keys.items()],
        "options": sorted(options),
        "option_rows": [options[option] for option in sorted(options)],
        "always": sorted(set(always)),
        "shared": [found for found in by_dest.values() if len(found) > 1],
        "plain": _plain([row for row in rows if row["action"] != "help"]),
        "rows": len(rows),
    }


def _by_key(version: str | None = None) -> dict[str, int]:
    return _keys(table_release(version or _SELECTED.release))


@functools.lru_cache(maxsize=None)
def _keys(release: str) -> dict[str, int]:
    """Each config key (`index_of`) -> its row's number."""
    return dict(_rows(release).index["keys"])


def lookup(key: str, version: str | None = None) -> dict[str, Any] | None:
    """The row a config key names (ConfigArgumentMerger's keys), or None."""
    release = table_release(version or _SELECTED.release)
    found = _keys(release).get(str(key).replace("-", "_"))
    return None if found is None else _rows(release).row(found)


def known_keys(version: str | None = None) -> list[str]:
    return list(_by_key(version))


def flag(row: dict[str, Any]) -> str:
    return row["options"][0]


# --- sglang's type functions (same names: argparse's message names them) ------------------


_SUFFIXES = ("i", "k", "M", "G", "T")  # (the last character of every suffix: a plain number compiles no pattern)


def human_readable_int(value: str) -> int:
    """sglang/srt/utils/common.py `human_readable_int`: SI (k, M, G, T) and IEC (Ki..Ti) suffixes."""
    value = value.strip()
    si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value) if value.endswith(_SUFFIXES) else None
    if match:
        from decimal import Decimal  # (only for a value with a suffix)

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
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"Invalid integer value: '{value}'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."
        ) from None


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


def parse_cuda_graph_config_arg(raw: str, constants: dict[str, Any] | None = None) -> Any:
    """cuda_graph_config.py `parse_cuda_graph_config_arg`: JSON, an object, each phase one of
    `Phase.ALL` holding an object whose keys are its `ALLOWED_KEYS_PER_PHASE` (the release's
    constants, recorded in its table: `type_constants`), a retired backend refused."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}")
    if constants is None:
        return parsed
    phases = tuple(constants["phases"])
    result: dict[str, Any] = {}
    for phase, settings in parsed.items():
        phase = str(phase)
        if phase not in phases:
            raise argparse.ArgumentTypeError(f"--cuda-graph-config: unknown phase '{phase}', expected one of {phases}")
        if not isinstance(settings, dict):
            raise argparse.ArgumentTypeError(f"--cuda-graph-config['{phase}'] must be a JSON object, got {type(settings).__name__}")
        if "backend" in settings:
            parse_cuda_graph_backend_arg(settings["backend"])
        allowed = tuple(constants["allowed_keys"][phase])
        result[phase] = {}
        for key, value in settings.items():
            if key not in allowed:
                raise argparse.ArgumentTypeError(f"--cuda-graph-config['{phase}']: unknown key '{key}', expected one of {allowed}")
            result[phase][key] = value
    return result


def _type(row: dict[str, Any]) -> Any:
    """The row's type function; one that checks against module constants gets its release's."""
    function = TYPES[row["type"]]
    constants = row.get("type_constants")
    if constants is None:
        return function

    def bound(raw: str) -> Any:
        return function(raw, constants)

    bound.__name__ = function.__name__  # (argparse names the function in "invalid X value")
    return bound


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


class _Deprecated(argparse.Action):
    """argparse_actions.py `DeprecatedAction` (0.5.16-0.5.22): a retired flag that sets nothing;
    with an `error_message` (0.5.19 on) argparse's error with that message."""

    def __init__(self, option_strings: Any, dest: str, error_message: str | None = None, **kwargs: Any) -> None:
        self.error_message = error_message
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if self.error_message is not None:
            parser.error(self.error_message)


class ArgumentsRefused(Exception):
    """What sglang's argparse says and where: `message` is its text after "sglang serve: error: "."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.message, self.option = message, option


class _SglangArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise ArgumentsRefused(message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # Argparse tries the help argument's metavar with a formatter while the parser is built;
        # given a width, the formatter does not ask the terminal for one (which imports shutil,
        # and with it bz2 and lzma, into every check). This parser's help is never printed.
        return self.formatter_class(prog=self.prog, width=80)


def _add(parser: argparse.ArgumentParser, row: dict[str, Any]) -> argparse.Action:
    """The row's action added to `parser` as `add_argument(*options, **kwargs)` adds it, without
    the checks `add_argument` makes of hand-written calls (option strings, a callable type, the
    metavar tried in a help formatter): the rows are sglang's own parser's, read from it, and
    those checks were most of the cost of building the parser at a launch check's start
    (docs/performance.md; tests/test_fidelity_argument_table.py: the same parser)."""
    options, kwargs = _arguments(row)
    action_class = parser._pop_action_class(kwargs)  # (argparse's registry: "store_true" -> its class)
    return parser._add_action(action_class(option_strings=list(options), **kwargs))


def _arguments(row: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The row as `add_argument`'s arguments: option strings, keywords."""
    kind = row["action"]
    choices = row["choices"]
    if isinstance(choices, dict):  # a set: sorted (argparse's own order of a set varies per process)
        choices = choices["set"]
    kwargs: dict[str, Any] = {"dest": row["dest"], "default": argparse.SUPPRESS}
    if kind in ("store", "LoRAPathAction"):
        kwargs.update(type=_type(row) if row["type"] else None, nargs=row["nargs"], choices=choices)
        if row["const"] is not None:
            kwargs["const"] = row["const"]
        if kind == "LoRAPathAction":
            kwargs["action"] = LoRAPathAction
    elif kind in ("store_true", "store_false", "boolean_optional"):
        kwargs["action"] = {"store_true": "store_true", "store_false": "store_false", "boolean_optional": argparse.BooleanOptionalAction}[kind]
    elif kind == "DeprecatedAction":
        kwargs.update(action=_Deprecated, nargs=row["nargs"], error_message=row.get("error_message"))
    elif kind == "DeprecatedStoreTrueAction":
        kwargs.update(action=_StoreValue, stored=True, nargs=0, new_flag=row.get("new_flag"))
    elif kind == "DeprecatedStoreConstAction":
        kwargs.update(action=_StoreValue, stored=row.get("const_value"), nargs=row["nargs"], choices=choices, new_flag=row.get("new_flag"))
    elif kind == "DeprecatedAliasStoreAction":
        kwargs.update(action=_StoreValue, use_values=True, nargs=row["nargs"], choices=choices, type=TYPES.get(row["type"] or "", None), new_flag=row.get("new_flag"))
    else:
        raise ValueError(f"argument table: unknown action kind {kind!r}")
    return list(row["options"]), kwargs


def parser(require_model_path: bool = True, version: str | None = None) -> argparse.ArgumentParser:
    """sglang's parser rebuilt from the release's table (built once per process, on first use)."""
    return _parser(require_model_path, table_release(version or _SELECTED.release))


@functools.lru_cache(maxsize=None)
def _parser(require_model_path: bool, release: str) -> argparse.ArgumentParser:
    return _build(require_model_path, [row for row in _table(release)["arguments"] if row["action"] != "help"])


def parser_for(argv: list[str], require_model_path: bool = True, version: str | None = None) -> argparse.ArgumentParser:
    """A parser that parses `argv` as the release's whole parser does, holding only the actions
    argparse can reach from these words (`_Reach`): where the table allows it, a launch check
    builds a few dozen actions rather than the release's five hundred."""
    release = table_release(version or _SELECTED.release)
    reach = _reach(release)
    rows = reach.rows_for(argv) if reach is not None else None
    if rows is None:
        return _parser(require_model_path, release)
    return _part(require_model_path, release, rows)


@functools.lru_cache(maxsize=64)
def _part(require_model_path: bool, release: str, rows: tuple[int, ...]) -> argparse.ArgumentParser:
    found = _rows(release)
    return _build(require_model_path, [found.row(i) for i in rows])


class _Reach:
    """Which of a table's rows argparse can reach from given words. argparse reads a word as
    an option only if it starts with `-`; then it looks up the word, its part before `=`, and
    (abbreviations, single-dash groups) the option strings that start with the word's part
    before `=` or that the word starts with. Every other action of the parser takes part in a
    parse only if it is required (argparse names the missing ones), or shares a dest with an
    action that may set it (argparse converts a default it finds in the namespace), so the
    rows kept are: those, every row with a single-dash option, and every row an option string
    of the words' reaches. They are kept in table order, the order argparse lists options in
    its messages (tests/test_fidelity_argument_table.py: every refusal and result the same).
    Made only for a table whose rows argparse adds without a word (`_plain`); else the whole
    parser is used."""

    def __init__(self, index: dict[str, Any]) -> None:
        self.sorted = index["options"]
        self.by_option = dict(zip(index["options"], index["option_rows"]))
        self.longest = max(map(len, self.sorted), default=0)
        self.shared = {i: found for found in index["shared"] for i in found}
        self.always = frozenset(index["always"])

    def rows_for(self, argv: list[str]) -> tuple[int, ...] | None:
        """The rows argparse can reach from argv, or None where it can reach the help action
        (which prints every option)."""
        chosen = set(self.always)
        by_option, ordered = self.by_option, self.sorted
        for word in set(argv):
            if word[:1] != "-":
                continue
            head = word.partition("=")[0]
            if word.startswith(("-h", "--help")) or "--help".startswith(head) or "-h".startswith(head):
                return None
            at = _first_not_below(ordered, head)
            while at < len(ordered) and ordered[at].startswith(head):
                chosen.add(by_option[ordered[at]])
                at += 1
            for end in range(1, min(len(word), self.longest) + 1):
                found = by_option.get(word[:end])
                if found is not None:
                    chosen.add(found)
        for i in [i for i in chosen if i in self.shared]:
            chosen.update(self.shared[i])
        return tuple(sorted(chosen))


def _first_not_below(ordered: list[str], key: str) -> int:
    """`bisect.bisect_left(ordered, key)` (that module is not otherwise imported by a check)."""
    low, high = 0, len(ordered)
    while low < high:
        middle = (low + high) // 2
        if ordered[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low


@functools.lru_cache(maxsize=None)
def _reach(release: str) -> _Reach | None:
    index = _rows(release).index
    return _Reach(index) if index["plain"] else None


def _plain(rows: list[dict[str, Any]]) -> bool:
    """argparse adds these rows without a word: no option string twice (nor the help action's),
    none that may look like a negative number to argparse (`-` and a digit or `.`: its
    `_negative_number_matcher` then changes how it reads `-1`), each an option."""
    options = [option for row in rows for option in row["options"]]
    if len(set(options)) != len(options) or "-h" in options or "--help" in options:
        return False
    return all(row["options"] for row in rows) and not any(option[1:2] == "." or option[1:2].isdecimal() for option in options if option[1:2] != "-")


def _build(require_model_path: bool, rows: list[dict[str, Any]]) -> argparse.ArgumentParser:
    built = _SglangArgParser(prog=PROG, exit_on_error=False)
    group = built._optionals
    actions, by_option, group_actions = built._actions, built._option_string_actions, group._group_actions
    # Each row's action made as `add_argument` makes it (below) where argparse adds the rows
    # without a word (`_plain`).
    plain = _plain(rows)
    store, store_true = (_made(built, "store"), _made(built, "store_true")) if plain else (None, None)
    for row in rows:
        kind = row["action"]
        if kind == "store_true" and store_true is not None:
            cls, attributes = store_true
            attributes = {**attributes, "option_strings": [*row["options"]], "dest": row["dest"], "container": group}
        elif kind == "store" and store is not None and row["const"] is None and "type_constants" not in row and not isinstance(row["choices"], dict):
            cls, attributes = store
            name = row["type"]
            attributes = {**attributes, "option_strings": [*row["options"]], "dest": row["dest"], "container": group, "type": TYPES[name] if name else None, "nargs": row["nargs"], "choices": row["choices"]}
        else:
            action = _add(built, row)
            if row["required"] and require_model_path:
                action.required = True
            continue
        # What `add_argument` makes of the row (`_arguments`): the class's attributes with the
        # row's values of the keywords its constructor stores as given (`_made`), added to
        # the parser's option group as `_add_action` adds it.
        action = cls.__new__(cls)
        action.__dict__ = attributes
        if row["required"] and require_model_path:
            attributes["required"] = True
        actions.append(action)
        for option in attributes["option_strings"]:
            by_option[option] = action
        group_actions.append(action)
    return built


def _made(built: argparse.ArgumentParser, kind: str) -> tuple[type, dict[str, Any]] | None:
    """(the class, the attributes) of an action `add_argument(action=kind)` makes for the table's
    keywords, where its constructor stores each keyword as given under its own name and derives
    nothing else from those of a row (told by two actions of different values): then any row's
    action of this kind is these attributes with the row's values. Else None (constructed)."""
    cls = built._registry_get("action", kind, None)
    if cls is None:
        return None
    made = []
    for name, values in (("x", dict(type=int, nargs="+", choices=["a"])), ("y", dict(type=None, nargs=None, choices=None))):
        kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, **(values if kind == "store" else {})}
        options = [f"--{name}"]
        attributes = vars(cls(option_strings=options, **kwargs))
        if attributes.get("option_strings") is not options or any(attributes.get(k, attributes) is not v for k, v in kwargs.items()):
            return None
        made.append({k: v for k, v in attributes.items() if k not in kwargs and k != "option_strings"})
    if made[0] != made[1]:
        return None
    return cls, {**made[0], "default": argparse.SUPPRESS}


def plain_values(argv: list[str], require_model_path: bool = True, version: str | None = None) -> dict[str, Any] | None:
    """argparse's values of `argv` (`vars` of its namespace, in its order), found without
    argparse for words it reads in one way only, else None (argparse decides: `parse`,
    inputs/launch.py). Such words are options each written out in full as the table spells
    them (argparse takes an exact option string before any abbreviation), each followed by
    the values its action takes (words not starting with `-`: argparse reads each as a value),
    of an action that stores them (`store`, `store_true`/`store_false`, `boolean_optional`, the
    --lora-paths action's plain entries), each value converted by the row's type and one of its
    choices, every required argument given. Anything else (an abbreviation, `--opt=value`, a
    value starting with `-`, a deprecated flag, a value the type or the choices refuse, ...)
    is None: argparse then parses it and says what sglang's says. Building the parser costs
    a launch check's start more than the rest of its arguments' reading
    (tests/test_fidelity_argument_table.py: the same values as argparse's)."""
    release = table_release(version or _SELECTED.release)
    reach = _reach(release)
    if reach is None:
        return None
    found, by_option = _rows(release), reach.by_option
    values: dict[str, Any] = {}
    seen: set[int] = set()
    i, end = 0, len(argv)
    while i < end:
        at = by_option.get(argv[i])
        if at is None:  # (a value before any option, an option not written out in full, `--`, ...)
            return None
        row, option = found.row(at), argv[i]
        i += 1
        start = i
        while i < end and argv[i][:1] != "-":
            i += 1
        given = argv[start:i]
        value = _stored(row, option, given)
        if value is _REFUSED:
            return None
        values[row["dest"]] = value
        seen.add(at)
    if require_model_path and any(found.row(at)["required"] and at not in seen for at in reach.always):
        return None
    return values


_REFUSED = object()  # (`_stored`: argparse decides)


def _stored(row: dict[str, Any], option: str, given: list[str]) -> Any:
    """What the row's action stores for an option followed by the values `given` (the words up
    to the next option), or _REFUSED where argparse may read them otherwise (values left over,
    too few, a conversion or a choice refused, an action kept to argparse)."""
    kind, nargs = row["action"], row["nargs"]
    if kind in ("store_true", "store_false", "boolean_optional"):
        if given:
            return _REFUSED
        if kind == "boolean_optional":
            return not option.startswith("--no-")  # (BooleanOptionalAction: `--no-X` stores False)
        return kind == "store_true"
    if kind not in ("store", "LoRAPathAction") or row["const"] is not None or "==SUPPRESS==" in given:
        return _REFUSED
    if nargs is None or nargs == "?":
        if len(given) != 1:
            return _REFUSED
    elif nargs not in ("+", "*") or not given:
        return _REFUSED
    name = row["type"]
    if name is not None and name not in TYPES:
        return _REFUSED
    convert = _type(row) if name is not None else None
    choices = row["choices"]
    if isinstance(choices, dict):
        choices = choices["set"]
    converted = []
    for word in given:
        try:
            value = convert(word) if convert is not None else word
        except Exception:  # noqa: BLE001 - argparse's message says why (parsed again by it)
            return _REFUSED
        if choices is not None and value not in choices:
            return _REFUSED
        converted.append(value)
    if kind == "LoRAPathAction":  # (its plain entries, stripped; a `{...}` entry is JSON, read by the action itself)
        stripped = [str(entry).strip() for entry in converted]
        if any(entry.startswith("{") and entry.endswith("}") for entry in stripped):
            return _REFUSED
        return stripped
    return converted[0] if nargs is None or nargs == "?" else converted


def parse(argv: list[str], require_model_path: bool = True, version: str | None = None) -> dict[str, Any]:
    """The dests the arguments set (argparse's values), or ArgumentsRefused with its text."""
    found = plain_values(argv, require_model_path, version)
    if found is not None:
        return found
    try:
        namespace = parser_for(argv, require_model_path, version).parse_args(argv)
    except argparse.ArgumentError as exc:
        raise ArgumentsRefused(str(exc), exc.argument_name) from None
    values = vars(namespace)
    values.pop(WARNINGS, None)
    return values


def defaults(version: str | None = None) -> dict[str, Any]:
    return {row["dest"]: row["default"] for row in table(version)["arguments"] if row["action"] != "help"}
