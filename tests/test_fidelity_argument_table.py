"""The shipped argument table is sglang 0.5.23's own parser, regenerated from the wheel.

tests/oracle/sglang_argparse.py builds `argparse.ArgumentParser(prog="sglang serve")` +
`ServerArgs.add_cli_args` from the wheel and writes every action's option strings, dest,
action kind, type name, choices, nargs, const and default; the file in the package must be
exactly what it writes today: tests/test_fidelity_releases.py regenerates it (with each CI
release's table) in a fresh interpreter and compares; here, its rows against the parser.
"""

from __future__ import annotations

import json

from oracle import sglang_argparse
from oracle.require import load_or_skip

from inkling_compat.inputs import argument_parser, argument_table
from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION


def test_the_shipped_table_is_the_parsers_actions() -> None:
    loaded = load_or_skip(sglang_argparse.load, "argument parser")
    shipped = json.loads(sglang_argparse.TABLE_PATH.read_text())
    assert shipped == argument_table.table(SGLANG_DEFAULT_VERSION)  # the file test_fidelity_releases.py regenerates
    rows = shipped["arguments"]
    assert len(rows) == len(loaded.parser._actions)
    by_dest = {row["dest"]: row for row in rows}
    assert by_dest["max_lora_rank"]["type"] == "int"
    assert "--model" in by_dest["model_path"]["options"]
    assert by_dest["lora_paths"]["action"] == "LoRAPathAction"


def test_nothing_of_sglang_is_stood_in() -> None:
    loaded = load_or_skip(sglang_argparse.load, "argument parser")
    assert not [name for name in loaded.stood_in if name.split(".")[0] == "sglang"]



def _actions(parser) -> list[tuple]:
    # (a row's type function is made per call: compared by its name)
    def value(key, v):
        return getattr(v, "__qualname__", v) if key == "type" else v

    return [(type(a), sorted((k, value(k, v)) for k, v in vars(a).items() if k != "container")) for a in parser._actions]


def test_the_parser_is_the_one_add_argument_builds() -> None:
    """`argument_parser._parser` makes each row's action without `add_argument`'s checks of
    hand-written calls: for every release's table, the parser is the one `add_argument` builds
    from the same arguments (each action's class and attributes, the option strings it answers,
    its group)."""
    from inkling_compat.inputs.versions import SGLANG_RELEASES

    for release in SGLANG_RELEASES:
        fast = argument_parser._parser.__wrapped__(True, release)
        slow = argument_parser._SglangArgParser(prog=argument_table.PROG, exit_on_error=False)
        for row in argument_table._table(release)["arguments"]:
            if row["action"] != "help":
                options, kwargs = argument_parser._arguments(row)
                slow.add_argument(*options, **kwargs)
                slow._actions[-1].required = bool(row["required"])
        assert _actions(fast) == _actions(slow), release
        assert {k: fast._actions.index(v) for k, v in fast._option_string_actions.items()} == {
            k: slow._actions.index(v) for k, v in slow._option_string_actions.items()
        }, release
        for built in (fast, slow):  # (each action in the parser's option group, as `_add_action` places it)
            assert built._optionals._group_actions == built._actions, release
            assert all(a.container is built._optionals for a in built._actions), release
        assert fast._has_negative_number_optionals == slow._has_negative_number_optionals == [], release


def test_a_class_not_made_by_copy_is_constructed(monkeypatch) -> None:
    """Where an action class's constructor does not store its keywords as given (`_made` None:
    another Python's argparse), every row is added through its constructor: the same parser."""
    copied = argument_parser._parser.__wrapped__(True, SGLANG_DEFAULT_VERSION)
    monkeypatch.setattr(argument_parser, "_made", lambda built, kind: None)
    constructed = argument_parser._parser.__wrapped__(True, SGLANG_DEFAULT_VERSION)
    assert _actions(copied) == _actions(constructed)
    assert list(copied._option_string_actions) == list(constructed._option_string_actions)


def _outcome(parser, argv: list[str]) -> tuple:
    """What argparse makes of argv: (values, extras) or the refusal's text and option."""
    import argparse

    import contextlib
    import io

    namespace = argparse.Namespace()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            found, extras = parser.parse_known_args(list(argv), namespace)
    except SystemExit as exc:  # (the help action: argparse prints the whole help)
        return ("exit", exc.code, printed.getvalue())
    except (argument_table.ArgumentsRefused, argparse.ArgumentError) as exc:
        return ("refused", str(exc), getattr(exc, "option", None), sorted(vars(namespace).items(), key=repr))
    return ("parsed", sorted(vars(found).items(), key=repr), extras)


def _words(rng, rows) -> list[str]:
    """Random words of a launch: option strings, their abbreviations and `=value` forms,
    single-dash groups, unknown options, values (negative numbers, `-`, `--`)."""
    options = [o for row in rows for o in row["options"]]
    words = []
    for _ in range(rng.randint(0, 12)):
        option = rng.choice(options)
        kind = rng.randint(0, 9)
        if kind == 0:
            word = option[: rng.randint(2, len(option))]  # an abbreviation, maybe ambiguous
        elif kind == 1:
            word = option + "=" + rng.choice(["1", "x", "", "a=b", "-1"])
        elif kind == 2:
            word = rng.choice(["-", "--", "-1", "-.5", "-x", "-tp", "--no-such", "--no", "--mod", "--lora", "-h3", "--=x", "-h"])
        elif kind == 3:
            word = rng.choice(["1", "x", "{}", "[1]", "None", "true", "a b"])
        else:
            word = option
        words.append(word)
        if rng.random() < 0.5:
            words.append(rng.choice(["8", "0.5", "x", "auto", "-3", "triton", "a=b", "{\"lora_name\": \"a\", \"lora_path\": \"b\"}"]))
    if rng.random() < 0.7:
        words[:0] = ["--model-path", "/m"]
    return words


def test_a_parser_for_the_words_parses_them_as_the_whole_parser() -> None:
    """`parser_for(argv)` (only the actions argparse can reach from argv) gives every result
    and refusal the release's whole parser gives: random words of every release's table, with
    abbreviations, `=` forms, unknown and single-dash words, and the required --model-path."""
    import random

    from inkling_compat.inputs.versions import SGLANG_RELEASES

    rng = random.Random(31)
    for release in SGLANG_RELEASES:
        rows = [row for row in argument_table._table(release)["arguments"] if row["action"] != "help"]
        assert argument_table._reach(release) is not None, release  # (every shipped table is plain)
        wholes = {required: argument_parser._parser.__wrapped__(required, release) for required in (True, False)}
        for _ in range(80):
            argv = _words(rng, rows)
            for required, whole in wholes.items():
                part = argument_parser.parser_for(argv, required, release)
                assert _outcome(part, argv) == _outcome(whole, argv), (release, argv)


def _config_keys(rows) -> dict:
    """ConfigArgumentMerger's `_config_keys` over the rows (dest, every `--long` option with `-` -> `_`)."""
    out = {}
    for row in rows:
        if row["action"] != "help":
            out[row["dest"]] = row
            out.update({o[2:].replace("-", "_"): row for o in row["options"] if o.startswith("--")})
    return out


def test_each_table_file_holds_its_index_and_its_rows_line_by_line() -> None:
    """The index in each shipped table's head is the one its rows give, and each row read from
    its own line, each key looked up, is the table's (tests/oracle/sglang_argparse.py writes them)."""
    from inkling_compat.inputs.versions import SGLANG_RELEASES

    for release in SGLANG_RELEASES:
        whole = argument_table._table(release)
        rows = whole["arguments"]
        assert whole["index"] == argument_table.index_of(rows), release
        lazy = argument_table._Rows(release)
        assert lazy.lines, release  # (laid out by rows: not read whole)
        assert [lazy.row(i) for i in range(len(rows))] == rows, release
        keys = _config_keys(rows)
        assert argument_table.known_keys(release) == list(keys), release
        assert all(argument_table.lookup(key, release) == row for key, row in keys.items()), release
        assert argument_table.lookup("no_such_key", release) is None


def test_a_table_not_laid_out_by_rows_is_read_whole(monkeypatch) -> None:
    text = json.dumps(argument_table._table(SGLANG_DEFAULT_VERSION)).encode()
    monkeypatch.setattr(argument_table, "_text", lambda release: text)
    lazy = argument_table._Rows(SGLANG_DEFAULT_VERSION)
    assert not lazy.lines
    assert lazy.index == argument_table._table(SGLANG_DEFAULT_VERSION)["index"]
    assert lazy.row(1) == argument_table._table(SGLANG_DEFAULT_VERSION)["arguments"][1]


def test_first_not_below_is_bisect_left() -> None:
    import bisect
    import random

    rng = random.Random(5)
    ordered = sorted(argument_table._rows(SGLANG_DEFAULT_VERSION).index["options"])
    for key in [*ordered, "", "-", "--", "--a", "--zzz", "--model", "--model-path-x", *("--" + "".join(rng.choice("abtlmo-") for _ in range(4)) for _ in range(200))]:
        assert argument_table._first_not_below(ordered, key) == bisect.bisect_left(ordered, key), key


def test_the_selected_release_is_per_thread() -> None:
    import threading

    seen = []
    with argument_table.using("0.5.16"):
        worker = threading.Thread(target=lambda: seen.append(argument_table.selected()))
        worker.start()
        worker.join()
        assert argument_table.selected() == "0.5.16"
    assert seen == [SGLANG_DEFAULT_VERSION] and argument_table.selected() == SGLANG_DEFAULT_VERSION


def _plain_words(rng, rows) -> list[str]:
    """Random words as launches write them: options written out in full, most followed by
    values their type and choices take, some by too many, too few or refused values."""
    words = []
    for _ in range(rng.randint(0, 14)):
        row = rng.choice(rows)
        words.append(rng.choice(row["options"]))
        choices = row["choices"]["set"] if isinstance(row["choices"], dict) else row["choices"]
        count = {None: 1, "?": 1, "+": rng.randint(1, 3), "*": rng.randint(0, 3)}.get(row["nargs"], row["nargs"] if isinstance(row["nargs"], int) else 1)
        if rng.random() < 0.15:
            count += rng.choice([-1, 1])
        for _ in range(max(count, 0)):
            if choices and rng.random() < 0.9:
                words.append(str(rng.choice(choices)))
            else:
                words.append(rng.choice(["8", "0.5", "x", "1k", "2Gi", "auto", "None", "", "[1, 2]", "{}", "a=b", " a ", "{\"lora_name\": \"a\", \"lora_path\": \"b\"}", "==SUPPRESS=="]))
    if rng.random() < 0.8:
        words[:0] = ["--model-path", "/m"]
    return words


def test_the_values_found_without_argparse_are_argparses() -> None:
    """`plain_values(argv)` (no parser built) is, where it answers, the whole parser's parse of
    argv: the same values in the same order (random words of every release's table, as
    launches write them and otherwise); where it does not answer, argparse decides. And it
    answers for a launch as examples/launch.sh writes it."""
    import argparse
    import random

    from inkling_compat.inputs.versions import SGLANG_RELEASES

    rng = random.Random(32)
    answered = 0
    for release in SGLANG_RELEASES:
        rows = [row for row in argument_table._table(release)["arguments"] if row["action"] != "help"]
        wholes = {required: argument_parser._parser.__wrapped__(required, release) for required in (True, False)}
        for n in range(300):
            argv = _plain_words(rng, rows) if n % 4 else _words(rng, rows)
            for required, whole in wholes.items():
                found = argument_table.plain_values(argv, required, release)
                if found is None:
                    continue
                answered += 1
                outcome = _outcome(whole, argv)
                assert outcome[0] == "parsed" and not outcome[2], (release, argv, outcome)
                namespace = argparse.Namespace()
                assert list(vars(whole.parse_args(argv, namespace)).items()) == list(found.items()), (release, argv)
    assert answered > 400, answered  # (a fast path taken often enough to be tested)
    launch = ["--model-path", "m", "--port", "30000", "--mem-fraction-static", "0.85", "--trust-remote-code", "--enable-lora", "--lora-target-modules", "gate_up_proj", "down_proj", "--lora-paths", "support=a", " b "]
    assert argument_table.plain_values(launch) == argument_parser._parser(True, SGLANG_DEFAULT_VERSION).parse_args(launch).__dict__
