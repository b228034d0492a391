"""`--fix` keeps everything it does not fix, and never makes a file sglang refuses.

Layout: comments (also after block scalars `|`, `>-`), CRLF line endings, tab indentation,
a byte-order mark, a missing final newline, key order and spelling. sglang's own `--config`
parser (`ConfigArgumentMerger` and the argument parser, from the 0.5.23 wheel) reads every
fixed rule example it read before the fix. A fix that names an argument by its dest
(`ep_join_mode`) edits the flag the user wrote (`--elastic-ep-join-mode`)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from inkling_compat import check
from inkling_compat.engine.fixes import Edit
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.fix import apply_fixes
from inkling_compat.fix.argv_edit import edit_argv
from inkling_compat.fix.command import launch_arity
from inkling_compat.fix.target import edit_text
from inkling_compat.testing.scenarios import example_arguments


@pytest.mark.parametrize(
    "text, edit, expected",
    [
        # a comment after a block scalar stays (it was deleted with the key, or eaten by a set)
        ("a: 1\nnote: |\n  hello\n  world\n# after block\nb: 2\n", Edit("remove", "note"), "a: 1\n# after block\nb: 2\n"),
        ("a: 1\nnote: >-\n  hello\n\n# after block\nb: 2\n", Edit("remove", "note"), "a: 1\n\n# after block\nb: 2\n"),
        ("a: 1\nnote: |\n  hello\n# after block\n", Edit("set", "note", "x"), "a: 1\nnote: x\n# after block\n"),
        ("a: 1\nnote: |\n  hello\n# after block\n", Edit("set", "b", 2), "a: 1\nnote: |\n  hello\nb: 2\n# after block\n"),
        ("a: 1\nnote: |\n  # inside\n  text\nb: 2\n", Edit("remove", "note"), "a: 1\nb: 2\n"),
        # line endings, byte-order mark, final newline
        ("a: 1\r\nb: 2\r\n", Edit("set", "c", 3), "a: 1\r\nb: 2\r\nc: 3\r\n"),
        ("a: 1\r\nb: 2 # two\r\n", Edit("set", "b", 3), "a: 1\r\nb: 3 # two\r\n"),
        ("\ufeffa: 1\nb: 2", Edit("set", "b", 3), "\ufeffa: 1\nb: 3"),
        ("\ufeffa: 1\nb: 2", Edit("set", "c", 3), "\ufeffa: 1\nb: 2\nc: 3"),
        # tab-indented JSON keeps its tabs
        ('{\n\t"a": 1,\n\t"b": {\n\t\t"x": 1\n\t}\n}\n', Edit("set", "c", 3), '{\n\t"a": 1,\n\t"b": {\n\t\t"x": 1\n\t},\n\t"c": 3\n}\n'),
        ('{\n\t"a": 1,\n\t"b": {\n\t\t"x": 1\n\t}\n}\n', Edit("set", "b.y", 2), '{\n\t"a": 1,\n\t"b": {\n\t\t"x": 1,\n\t\t"y": 2\n\t}\n}\n'),
        ('{\r\n\t"a": 1\r\n}', Edit("set", "b", [1, 2]), '{\r\n\t"a": 1,\r\n\t"b": [\r\n\t\t1,\r\n\t\t2\r\n\t]\r\n}'),
        # the argument as the user spelt it, whatever name the fix gives it
        ("elastic-ep-join-mode: scale\nmoe-runner-backend: lora_triton\n", Edit("remove", "ep_join_mode"), "moe-runner-backend: lora_triton\n"),
        ("moe-runner-backend: lora_triton\n", Edit("set", "ep_join_mode", "recover"), "moe-runner-backend: lora_triton\nelastic-ep-join-mode: recover\n"),
        ('{"elastic_ep_join_mode": "scale", "tp_size": 2}', Edit("remove", "ep_join_mode"), '{"tp_size": 2}'),
    ],
)
def test_an_edit_keeps_the_layout(text: str, edit: Edit, expected: str) -> None:
    assert edit_text(text, [edit], text.lstrip("\ufeff").startswith("{")) == expected


def test_argv_edit_finds_a_dest_by_its_flag() -> None:
    arity = launch_arity()
    tokens = ["--moe-runner-backend", "lora_triton", "--elastic-ep-join-mode", "scale", "--tp-size", "2"]
    assert edit_argv(tokens, [Edit("remove", "ep_join_mode")], arity).tokens == ("--moe-runner-backend", "lora_triton", "--tp-size", "2")
    assert edit_argv(["--tp-size", "2"], [Edit("set", "ep_join_mode", "scale")], arity).tokens == ("--tp-size", "2", "--elastic-ep-join-mode", "scale")


def test_elastic_ep_fix_is_applied_to_a_dash_spelt_file(tmp_path: Path) -> None:
    args = example_arguments({"base": "v2", "config": {"moe_runner_backend": "lora_triton", "elastic-ep-join-mode": "scale"}})
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(args["config"], sort_keys=False))

    def run(config):
        return check(config, args["adapter"], model=args["model"], platform=args["platform"])

    result = apply_fixes(str(path), run=run, unsafe=True)
    assert [(f.rule_id, f.applied) for f in result.fixes] == [("lora-moe-runner-elastic-ep", True)]
    assert "elastic-ep-join-mode" not in path.read_text() and result.report.ok


def _with_fix() -> list:
    out = []
    for compiled in load_rules():
        rule = compiled.rule
        if rule.fix is None:
            continue
        for index, example in enumerate(rule.examples.fire):
            if "launch" in example.input:  # a launch command's fix edits its words, not a config file
                continue
            out.append(pytest.param(rule.id, example.input, id=f"{rule.id}:{index}"))
    return out


def _sglang_reads(oracle, data: dict) -> str | None:
    """None when sglang 0.5.23's --config reads `data` (merger, then its argparse), else why not."""
    data = {k: v for k, v in data.items() if k != "env"}  # environment switches are not arguments
    try:
        words = oracle.merger()._convert_config_to_args(data)
    except (ValueError, TypeError) as exc:
        return str(exc)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            oracle.parser.parse_args(["--model-path", "m", *words])
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


@pytest.mark.parametrize("rule_id, example", _with_fix())
def test_every_fixed_example_is_read_by_sglangs_config_parser(rule_id: str, example: dict, tmp_path: Path) -> None:
    from oracle import sglang_argparse
    from oracle.require import load_or_skip

    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    args = example_arguments(example)
    for dashes in (False, True):
        data = {(k.replace("_", "-") if dashes and k != "env" else k): v for k, v in args["config"].items()}
        if _sglang_reads(oracle, data) is not None:
            continue  # sglang refuses the example as it is (a project-format key): nothing to keep
        path = tmp_path / ("dash.yaml" if dashes else "under.yaml")
        path.write_text(yaml.safe_dump(data, sort_keys=False))

        def run(config):
            return check(config, args["adapter"], model=args["model"], platform=args["platform"])

        apply_fixes(str(path), run=run, unsafe=True)
        assert _sglang_reads(oracle, yaml.safe_load(path.read_text()) or {}) is None, path.read_text()
