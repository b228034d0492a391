"""A server config's keys sorted by sglang's argument table: typed fields, other arguments, unknown.

A key of the project's config (YAML/JSON/dict) may be the dest (`tp_size`) or any long option
with dashes or underscores (`tp-size`, `tensor_parallel_size`). (sglang's own `--config` file
takes only the dash spelling: its merger passes `--<key>` as written, and argparse refuses
`--tp_size`; launch.py applies that rule to a `--config` inside a launch command.) A key that names one of `ServerConfig`'s typed fields is put under
that field, its value as the file gives it once the release's argparse takes the words the
merger makes of it (`_check_typed`: else argparse's refusal, in its words). Any other
argument is turned into the words sglang's ConfigArgumentMerger makes of it and converted by
argparse (`_parse`): the converted value goes to `arguments[dest]`, a refusal is
an InputError naming the key with argparse's text. A key argparse does not know (after its
own prefix matching) is an unknown key whose message is argparse's "unrecognized arguments".
"""

from __future__ import annotations

import bisect
from functools import lru_cache

from typing import Any

from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table
from inkling_compat.inputs.models import ServerConfig
from inkling_compat.inputs.sglang_config import ConfigRefused, config_to_args

# The project's own sections of a server config: not sglang arguments.
PROJECT_KEYS = ("env", "sink", "draft", "arguments")


def _suggestion(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(str(key).replace("-", "_"), argument_table.known_keys(), n=1, cutoff=0.6)
    return close[0] if close else ""


# "Did you mean" for this many unknown keys of one input: each suggestion scores the key
# against every argument (difflib), so 5,000 unknown keys would take seconds.
MAX_SUGGESTIONS = 100


def unknown_item(key: str, words: list[str], file: str, message: str | None = None, suggest: bool = True) -> dict[str, Any]:
    releases = _other_releases(words) if suggest else ""
    suggestion = _suggestion(key) if suggest and not releases else ""
    return {
        "key": str(key),
        "suggestion": suggestion,
        "file": file,
        "message": message or "unrecognized arguments: " + " ".join(words),
        "flag": "--" + suggestion.replace("_", "-") if suggestion else "",
        # a flag of other sglang releases: which, and what replaced it (argument_history.py)
        "releases": releases,
    }


def _other_releases(words: list[str]) -> str:
    option = next((w.split("=", 1)[0] for w in words if isinstance(w, str) and w.startswith("--")), "")
    if not option:
        return ""
    from inkling_compat.inputs.argument_history import flag_history

    history = flag_history(option)
    return history.note() if history.releases and argument_table.selected() not in history.releases else ""


# The typed fields whose choices rules check (rules/server_args/_family-argparse-lora-choices.yaml:
# one rule each, reported as a problem of the deployment); tests/test_config_choices.py holds
# this list to the family.
CHOICES_BY_RULE = frozenset({"lora_backend", "lora_eviction_policy", "max_lora_chunk_size", "lora_target_modules"})


def _parse(words: list[str]) -> dict[str, Any]:
    """argparse's values of a key's words (inputs/argument_parser.py `parse`), or ArgumentsRefused;
    argparse imported only for words `argument_table.plain_values` leaves to it."""
    found = argument_table.plain_values(words, require_model_path=False)
    if found is not None:
        return found
    from inkling_compat.inputs.argument_parser import parse

    return parse(words, require_model_path=False)


def _check_typed(row: dict[str, Any], value: Any, key: str, file: str) -> Any:
    """A typed field's value, refused where the release's argparse refuses the words the merger
    makes of it (`invalid int value`, `invalid choice`, in its words, as for every other
    argument); where argparse would take the value as it is (a number of the argument's type,
    one of its `choices=`) it is not parsed. (A
    value the file leaves empty, `null`, is the field's default here; a choice of a LoRA
    argument that its rule checks is left to that rule.)"""
    if value is None or isinstance(value, (dict, list)) or _taken_as_is(row, value):
        return value
    words = [argument_table.flag(row), str(value).lower() if isinstance(value, bool) else str(value)]  # (the merger's words for a scalar)
    try:
        _parse(words)
    except argument_table.ArgumentsRefused as exc:
        raise InputError(file, key, f"sglang's argparse refuses it: {exc.message}") from None
    return value  # (the value as the file gives it: the Python API's, which the field's own checks read)


def _taken_as_is(row: dict[str, Any], value: Any) -> bool:
    """Whether argparse would take the value as the file gives it (no parse needed: a repeated
    check of a config reads its keys without argparse)."""
    if row["dest"] in CHOICES_BY_RULE:
        return True  # (a refused choice is its rule's: rules/server_args/_family-argparse-lora-choices.yaml)
    if row.get("choices"):
        return not isinstance(value, bool) and str(value) in {str(choice) for choice in row["choices"]}
    kind = row.get("type")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return kind is None or isinstance(value, str)


def sort_arguments(data: dict[str, Any], file: str) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
    """Each key of a server config as the release's argparse reads it, in file order (sglang's
    merger passes the keys in that order): the typed fields' values, the other arguments'
    (`arguments`), and the keys argparse does not know. A value argparse refuses raises its
    refusal, unless a LoRA argument's choice it refuses came first: sglang stops there, and that
    argument's rule (rules/server_args/_family-argparse-lora-choices.yaml) reports it; a later
    key argparse would refuse is left out (never read). The third value is that LoRA
    argument's dest (`input.choice_stop`: a later refused LoRA choice is not sglang's to
    report), None where no LoRA choice was refused."""
    fields = ServerConfig.__fact_fields__
    out: dict[str, Any] = {}
    arguments: dict[str, Any] = dict(data.get("arguments") or {}) if isinstance(data.get("arguments"), dict) else {}
    unknown: list[dict[str, Any]] = []
    stopped: str | None = None
    for key, value in data.items():
        if key == "arguments":
            continue
        row = _row(str(key))
        try:
            _sort_one(key, value, row, file, fields, out, arguments, unknown)
        except InputError as exc:
            if not (stopped is not None and exc.reason.startswith("sglang's argparse refuses it: ")):
                raise
            continue  # (a value sglang's argparse never reaches: the key is left out)
        if stopped is None and row is not None and _ruled_choice_refused(row, value):
            stopped = row["dest"]
    if arguments:
        out["arguments"] = arguments
    return out, unknown, stopped


def _sort_one(key: Any, value: Any, row: dict[str, Any] | None, file: str, fields: Any, out: dict[str, Any], arguments: dict[str, Any], unknown: list[dict[str, Any]]) -> None:
    if key in fields and not _as_words(row, value):
        out[key] = _check_typed(row, value, key, file) if row is not None else value
        return
    if row is not None and row["dest"] in fields and not _as_words(row, value):
        out[row["dest"]] = _check_typed(row, value, str(key), file)
        return
    # A known argument in any spelling (the project's files use dests: an extension, as
    # sglang's own --config passes `--<key>` as written and argparse knows only dashes).
    # A flag as written is passed as written (the merger keys it as sglang does: a dest that
    # a deprecated alias shares is refused by name); another spelling of a known argument
    # as its first flag.
    dashed = str(key).replace("_", "-")
    spelled = dashed if "--" + dashed in _option_rows(argument_table.selected()) else argument_table.flag(row)[2:] if row is not None else key
    try:
        words = config_to_args({spelled: value})[0][1]
    except ConfigRefused as exc:
        raise InputError(file, str(key), str(exc)) from None
    if not words:  # a store_true flag set false, an empty list: sglang leaves it out
        return
    parsed = _parsed(words, str(key), file, unknown)
    for dest, converted in parsed.items():
        if dest in fields:
            out[dest] = converted
        else:
            arguments[dest] = converted


def _ruled_choice_refused(row: dict[str, Any] | None, value: Any) -> bool:
    """Whether the release's argparse refuses this value of a LoRA argument whose choices a rule checks."""
    if row is None or row["dest"] not in CHOICES_BY_RULE or value is None:
        return False
    choices = {str(choice) for choice in row.get("choices") or ()}
    if all(not isinstance(v, (bool, dict, list)) and str(v) in choices for v in (value if isinstance(value, list) else [value])):
        return False  # (each a choice as written: what argparse takes, without parsing)
    try:
        words = config_to_args({argument_table.flag(row)[2:]: value})[0][1]
        if words:
            _parse(words)
    except (ConfigRefused, argument_table.ArgumentsRefused):
        return True
    return False


def _as_words(row: dict[str, Any] | None, value: Any) -> bool:
    """Whether a typed field's value is read as sglang's merger passes it: a list or a mapping
    given to an argument that takes no list (a switch, one value) becomes words (`--flag a b`,
    `--flag '{json}'`, nothing for `[]`) that argparse reads or refuses, as for any other key."""
    return row is not None and row["nargs"] not in ("*", "+") and isinstance(value, (list, dict))


_PARSED: dict[tuple[str, ...], dict[str, Any]] = {}  # (release, *one key's words) -> argparse's values


def _parsed(words: list[str], key: str, file: str, unknown: list[dict[str, Any]]) -> dict[str, Any]:
    """argparse's values of one key's words (remembered: a config's keys repeat across checks)."""
    memo = (argument_table.selected(), *words)
    hit = _PARSED.get(memo)
    if hit is not None:
        return hit
    if not _could_match(words[0]):  # no option has it as a prefix: argparse cannot take it
        unknown.append(unknown_item(key, words, file, "unrecognized arguments: " + " ".join(words), suggest=len(unknown) < MAX_SUGGESTIONS))
        return {}
    try:
        parsed = _parse(words)
    except argument_table.ArgumentsRefused as exc:
        if exc.message.startswith("unrecognized arguments:") or exc.message.startswith("ambiguous option:"):
            # (a known flag given more values than it takes: the extra values are what argparse
            # did not recognise, not a misspelt key to suggest a name for)
            extra_values = exc.message.startswith("unrecognized arguments:") and exc.message != "unrecognized arguments: " + " ".join(words)
            unknown.append(unknown_item(key, words, file, exc.message, suggest=len(unknown) < MAX_SUGGESTIONS and not extra_values))
            return {}
        raise InputError(file, key, f"sglang's argparse refuses it: {exc.message}") from None
    if len(_PARSED) >= 4096:
        _PARSED.clear()
    if all(isinstance(v, (str, int, float, bool, type(None))) for v in parsed.values()):
        _PARSED[memo] = parsed  # (mutable values are converted again each time)
    return parsed


def _long_options() -> tuple[str, ...]:
    return _release_long_options(argument_table.selected())


@lru_cache(maxsize=None)
def _release_long_options(release: str) -> tuple[str, ...]:
    return tuple(sorted(o for row in argument_table.table(release)["arguments"] for o in row["options"] if o.startswith("--")))


def _row(key: str) -> dict[str, Any] | None:
    """The argument a key names: the one whose flag it spells (`mamba-radix-cache-strategy`),
    not a deprecated alias registered later for the same dest; else the merger's lookup."""
    return _option_rows(argument_table.selected()).get("--" + key.replace("_", "-")) or argument_table.lookup(key)


@lru_cache(maxsize=None)
def _option_rows(release: str) -> dict[str, dict[str, Any]]:
    return {o: row for row in argument_table.table(release)["arguments"] for o in row["options"] if o.startswith("--")}


def _could_match(word: str) -> bool:
    """Whether argparse could read `word` as an option: it is one, or (abbreviations are
    allowed) a prefix of one."""
    option = word.split("=", 1)[0]
    if not option.startswith("--"):
        return True  # (argparse's own words for it)
    options = _long_options()
    i = bisect.bisect_left(options, option)
    return i < len(options) and options[i].startswith(option)
