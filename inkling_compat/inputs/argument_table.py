"""sglang's server arguments as data, per release: lookup, conversion, and what its argparse
parser makes of plain words.

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
* `plain_values(argv)`: argparse's values of words it reads one way only (defaults left out:
  only what the arguments set), read from the table; any other words are parsed by Python's
  own argparse on sglang's parser rebuilt from the table (inputs/argument_parser.py `parse`),
  so abbreviations, nargs, choices and every message are argparse's; that parser holds the
  actions argparse can reach from the words (`_Reach`);
* each custom `type` of sglang is implemented once below under its own name (argparse's
  "invalid <name> value" message names the function).
"""

from __future__ import annotations

import functools
import json
import os
import re
from _thread import _local

from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION, SGLANG_RELEASES, TABLE_RELEASE
from inkling_compat.inputs.package_files import package_dir

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterator

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


class using:
    """`with using(version):` reads `version`'s table in the block (the check's release), the
    previous release again after it. (A class, not `contextlib.contextmanager`: a check imports
    no contextlib.)"""

    def __init__(self, version: str) -> None:
        self.version = version

    def __enter__(self) -> None:
        self.previous, _SELECTED.release = _SELECTED.release, table_release(self.version)

    def __exit__(self, *exc_info: object) -> None:
        _SELECTED.release = self.previous


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
                raise _type_error(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    try:
        return int(value)
    except ValueError:
        raise _type_error(
            f"Invalid integer value: '{value}'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."
        ) from None


def json_list_type(value: str) -> Any:
    """common.py `json_list_type` (orjson.loads; its errors are json.JSONDecodeError)."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise _type_error(f"Invalid JSON list: {value}. Please provide a valid JSON list.") from None


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
        raise _type_error("tc_piecewise was removed; select breakable, full, or disabled")
    return raw


def parse_cuda_graph_config_arg(raw: str, constants: dict[str, Any] | None = None) -> Any:
    """cuda_graph_config.py `parse_cuda_graph_config_arg`: JSON, an object, each phase one of
    `Phase.ALL` holding an object whose keys are its `ALLOWED_KEYS_PER_PHASE` (the release's
    constants, recorded in its table: `type_constants`), a retired backend refused."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise _type_error(f"--cuda-graph-config must be JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise _type_error(f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}")
    if constants is None:
        return parsed
    phases = tuple(constants["phases"])
    result: dict[str, Any] = {}
    for phase, settings in parsed.items():
        phase = str(phase)
        if phase not in phases:
            raise _type_error(f"--cuda-graph-config: unknown phase '{phase}', expected one of {phases}")
        if not isinstance(settings, dict):
            raise _type_error(f"--cuda-graph-config['{phase}'] must be a JSON object, got {type(settings).__name__}")
        if "backend" in settings:
            parse_cuda_graph_backend_arg(settings["backend"])
        allowed = tuple(constants["allowed_keys"][phase])
        result[phase] = {}
        for key, value in settings.items():
            if key not in allowed:
                raise _type_error(f"--cuda-graph-config['{phase}']: unknown key '{key}', expected one of {allowed}")
            result[phase][key] = value
    return result


def _type_error(message: str) -> Exception:
    """argparse.ArgumentTypeError(message): a value refused (argparse imported only then)."""
    import argparse

    return argparse.ArgumentTypeError(message)


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


# The namespace attribute the deprecation warnings are collected under (not a dest: `parse`
# and inputs/launch.py take it out of the values).
WARNINGS = "_inkling_parse_warnings"


class ArgumentsRefused(Exception):
    """What sglang's argparse says and where: `message` is its text after "sglang serve: error: "."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.message, self.option = message, option


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

def plain_values(argv: list[str], require_model_path: bool = True, version: str | None = None) -> dict[str, Any] | None:
    """argparse's values of `argv` (`vars` of its namespace, in its order), found without
    argparse for words it reads in one way only, else None (argparse decides:
    inputs/argument_parser.py). Such words are options each written out in full as the table spells
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


def defaults(version: str | None = None) -> dict[str, Any]:
    return {row["dest"]: row["default"] for row in table(version)["arguments"] if row["action"] != "help"}
