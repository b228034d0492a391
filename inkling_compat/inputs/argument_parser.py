"""sglang's argparse parser rebuilt from a release's argument table (inputs/argument_table.py),
for the words only argparse can judge: its refusals and messages, abbreviations, `--opt=value`,
deprecated flags, the help action. argparse is imported with this module, where a check needs
it (a launch whose words `argument_table.plain_values` reads takes neither).

* `parse(argv)`: (`argument_table.plain_values`, else) Python's own argparse on a parser rebuilt from the table (prog "sglang serve",
  as prepare_server_args builds it), so abbreviations, nargs, choices and every message are
  argparse's; defaults are left out of the result (only what the arguments set). The parser
  holds the actions argparse can reach from those words (`parser_for`, `argument_table._Reach`),
  each made as `add_argument` makes it (`_build`);
* sglang's custom actions (the --lora-paths one, the deprecated flags') as argparse Actions.
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Any

from inkling_compat.inputs import argument_table
from inkling_compat.inputs.argument_table import ArgumentsRefused, WARNINGS

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
        kwargs.update(type=argument_table._type(row) if row["type"] else None, nargs=row["nargs"], choices=choices)
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
        kwargs.update(action=_StoreValue, use_values=True, nargs=row["nargs"], choices=choices, type=argument_table.TYPES.get(row["type"] or "", None), new_flag=row.get("new_flag"))
    else:
        raise ValueError(f"argument table: unknown action kind {kind!r}")
    return list(row["options"]), kwargs


def parser(require_model_path: bool = True, version: str | None = None) -> argparse.ArgumentParser:
    """sglang's parser rebuilt from the release's table (built once per process, on first use)."""
    return _parser(require_model_path, argument_table.table_release(version or argument_table.selected()))


@functools.lru_cache(maxsize=None)
def _parser(require_model_path: bool, release: str) -> argparse.ArgumentParser:
    return _build(require_model_path, [row for row in argument_table._table(release)["arguments"] if row["action"] != "help"])


def parser_for(argv: list[str], require_model_path: bool = True, version: str | None = None) -> argparse.ArgumentParser:
    """A parser that parses `argv` as the release's whole parser does, holding only the actions
    argparse can reach from these words (`_Reach`): where the table allows it, a launch check
    builds a few dozen actions rather than the release's five hundred."""
    release = argument_table.table_release(version or argument_table.selected())
    reach = argument_table._reach(release)
    rows = reach.rows_for(argv) if reach is not None else None
    if rows is None:
        return _parser(require_model_path, release)
    return _part(require_model_path, release, rows)


@functools.lru_cache(maxsize=64)
def _part(require_model_path: bool, release: str, rows: tuple[int, ...]) -> argparse.ArgumentParser:
    found = argument_table._rows(release)
    return _build(require_model_path, [found.row(i) for i in rows])


def _build(require_model_path: bool, rows: list[dict[str, Any]]) -> argparse.ArgumentParser:
    built = _SglangArgParser(prog=argument_table.PROG, exit_on_error=False)
    group = built._optionals
    actions, by_option, group_actions = built._actions, built._option_string_actions, group._group_actions
    # Each row's action made as `add_argument` makes it (below) where argparse adds the rows
    # without a word (`argument_table._plain`).
    plain = argument_table._plain(rows)
    store, store_true = (_made(built, "store"), _made(built, "store_true")) if plain else (None, None)
    for row in rows:
        kind = row["action"]
        if kind == "store_true" and store_true is not None:
            cls, attributes = store_true
            attributes = {**attributes, "option_strings": [*row["options"]], "dest": row["dest"], "container": group}
        elif kind == "store" and store is not None and row["const"] is None and "type_constants" not in row and not isinstance(row["choices"], dict):
            cls, attributes = store
            name = row["type"]
            attributes = {**attributes, "option_strings": [*row["options"]], "dest": row["dest"], "container": group, "type": argument_table.TYPES[name] if name else None, "nargs": row["nargs"], "choices": row["choices"]}
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


def parse(argv: list[str], require_model_path: bool = True, version: str | None = None) -> dict[str, Any]:
    """The dests the arguments set (argparse's values), or ArgumentsRefused with its text
    (`argument_table.plain_values` where it answers)."""
    found = argument_table.plain_values(argv, require_model_path, version)
    if found is not None:
        return found
    try:
        namespace = parser_for(argv, require_model_path, version).parse_args(argv)
    except argparse.ArgumentError as exc:
        raise ArgumentsRefused(str(exc), exc.argument_name) from None
    values = vars(namespace)
    values.pop(WARNINGS, None)
    return values
