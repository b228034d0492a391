"""Differential property: a launch command parsed by sglang 0.5.23's own argparse (from the wheel)
and by the checker, same values for every dest and the same refusal text.

sglang's side (tests/oracle/sglang_argparse.py): `prepare_server_args`' parser
(`ArgumentParser(prog="sglang serve")` + `ServerArgs.add_cli_args`) and, for a command with
`--config FILE`, the wheel's `ConfigArgumentMerger(parser).merge_config_with_args(argv)`, then
`parser.parse_args`; nothing after it (no `ServerArgs.from_cli_args`, no resolution: those
need the GPU). The checker's side: `inputs.launch.parse_launch`.

Cases: ordinary and LoRA flags with good and bad values, aliases (`--model`,
`--tensor-parallel-size`), `--flag=value`, unknown and misspelt flags, a `--config` YAML file
(dash and underscore keys, booleans, lists, mappings, an unsupported key, a non-YAML name).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling_compat.errors import InputError
from inkling_compat.inputs.launch import parse_launch
from oracle import sglang_argparse
from oracle.require import load_or_skip

# (flag, values that sglang accepts or refuses); the values are words as a shell gives them.
FLAGS: list[tuple[str, list[list[str]]]] = [
    ("--max-lora-rank", [["16"], ["abc"], ["1.5"], []]),
    ("--lora-backend", [["triton"], ["csgmv"], ["foo"]]),
    ("--max-loras-per-batch", [["4"], ["x"]]),
    ("--tp-size", [["2"], ["two"]]),
    ("--tensor-parallel-size", [["4"]]),
    ("--lora-target-modules", [["gate_up_proj", "down_proj"], ["all"], ["nonsense"]]),
    ("--lora-paths", [["a=/x/a"], ["/x/b"], ['{"lora_name":"c","lora_path":"/x/c","pinned":true}'], ["a=/x/a", "b=/x/b"]]),
    ("--enable-lora", [[]]),
    ("--experts-shared-outer-loras", [[]]),
    ("--mem-fraction-static", [["0.8"], ["lots"]]),
    ("--context-length", [["8192"]]),
    ("--host", [["0.0.0.0"]]),
    ("--port", [["30000"], ["http"]]),
    ("--trust-remote-code", [[]]),
    ("--log-level", [["info"]]),
    ("--dtype", [["bfloat16"], ["float64"]]),
    ("--chunked-prefill-size", [["4096"]]),
    ("--max_lora_rank", [["8"]]),
    ("--max-lora-rnk", [["8"]]),
    ("--enable-lora-overlap", [[]]),
    ("--max-lora", [["8"]]),
]

CONFIG_KEYS: list[tuple[str, list[Any]]] = [
    ("max-lora-rank", [16, "abc"]),
    ("lora-backend", ["triton", "foo"]),
    ("enable-lora", [True, False]),
    ("lora-target-modules", [["gate_up_proj", "down_proj"], []]),
    ("tp-size", [2]),
    ("trust-remote-code", [True, "yes"]),
    ("mem_fraction_static", [0.7]),
    ("max_lora_rank", [8]),
    ("lora-paths", [["a=/x/a"]]),
    ("json-model-override-args", [{"a": 1}]),
    ("unknown-flag", [1]),
]


def _ours(argv: list[str]) -> tuple[str, Any]:
    try:
        launch = parse_launch(["python", "-m", "sglang.launch_server", *argv])
    except InputError as exc:
        return "refused", exc.reason
    if launch.refusals:  # sglang's words; an exception sglang raises is named as its traceback ends
        refusal = launch.refusals[0]
        raised = refusal["error_class"] in ("json.decoder.JSONDecodeError", "AssertionError")
        return "refused", f"{refusal['error_class']}: {refusal['message']}" if raised else refusal["message"]
    return "ok", launch.values


@st.composite
def commands(draw: Any, config_dir: Path) -> list[str]:
    argv = ["--model-path", draw(st.sampled_from(["/m", "org/model"]))]
    if draw(st.booleans()):
        argv = ["--model", argv[1]]
    for flag, values in draw(st.lists(st.sampled_from(FLAGS), max_size=5)):
        words = draw(st.sampled_from(values))
        if len(words) == 1 and draw(st.booleans()) and flag.startswith("--max"):
            argv.append(f"{flag}={words[0]}")
        else:
            argv += [flag, *words]
    if draw(st.booleans()):
        data = {key: draw(st.sampled_from(values)) for key, values in draw(st.lists(st.sampled_from(CONFIG_KEYS), max_size=4, unique_by=lambda kv: kv[0]))}
        name = draw(st.sampled_from(["c.yaml", "c.yaml", "c.yml", "c.json"]))
        path = config_dir / name
        path.write_text(yaml.safe_dump(data, sort_keys=False) if name != "c.json" else json.dumps(data))
        at = draw(st.integers(0, len(argv)))
        argv[at:at] = ["--config", str(path)]
    return argv


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def test_launch_commands_parse_as_sglang_parses_them(tmp_path: Path) -> None:
    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    defaults = {a.dest: a.default for a in oracle.parser._actions}

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(commands(tmp_path))
    def prop(argv: list[str]) -> None:
        theirs = sglang_argparse.parse(oracle, list(argv))
        ours = _ours(list(argv))
        assert ours[0] == theirs[0], (argv, ours, theirs)
        if ours[0] == "refused":
            assert ours[1] == theirs[1], argv
            return
        for dest, value in ours[1].items():
            assert _plain(value) == _plain(theirs[1][dest]), (argv, dest)
        # what the checker leaves out is sglang's default
        for dest, value in theirs[1].items():
            if dest not in ours[1]:
                assert _plain(value) == _plain(defaults[dest]), (argv, dest)

    prop()


def test_argparse_messages_exactly() -> None:
    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    for argv in (["--model-path", "/m", "--max-lora-rank", "abc"], ["--model-path", "/m", "--lora-backend", "foo"], ["--port", "1"], ["--model-path", "/m", "--foo", "1"]):
        assert _ours(argv) == sglang_argparse.parse(oracle, argv)
    assert _ours(["--model-path", "/m", "--max-lora-rank", "abc"])[1] == "argument --max-lora-rank: invalid int value: 'abc'"


# Every kind of refusal inputs/refusals.py sorts (the rules argparse-* and the --config merger's).
REFUSING = [
    ["--model-path", "/m", "--cuda-graph-max-bs", "8"],  # ambiguous (sglang's own docs use it)
    ["--model-path", "/m", "--port"],  # expected one argument
    ["--model-path", "/m", "--port", "--host", "x"],
    ["--tp-size", "1"],  # required
    ["--model-path", "/m", "--enable-lora=yes"],  # ignored explicit argument
    ["--model-path", "/m", "--lora-backend", "foo"],  # invalid choice
    ["--model-path", "/m", "--mem-fraction-static", "lots"],  # invalid float value
    ["--model-path", "/m", "--lora-paths", '{"lora_name": "a"}'],  # the action's assert
    ["--model-path", "/m", "--cuda-graph-backend", "tc_piecewise"],  # sglang's own type function
    ["--model-path", "/m", "--config", "c.json"],  # the merger's refusals
    ["--model-path", "/m", "--config", "/nowhere/c.yaml"],
    ["--model-path", "/m", "--config"],
    ["--model-path", "/m", "--config", "a.yaml", "--config", "b.yaml"],
]


def test_every_kind_of_refusal_reads_as_sglangs() -> None:
    from inkling_compat.inputs.refusals import KINDS

    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    kinds = set()
    for argv in REFUSING:
        theirs = sglang_argparse.parse(oracle, list(argv))
        assert theirs[0] == "refused", argv
        assert _ours(list(argv)) == theirs, argv
        kinds.add(parse_launch(["python", "-m", "sglang.launch_server", *argv]).refusals[0]["kind"])
    assert kinds == set(KINDS) - {"unrecognized-arguments"}  # (unrecognized: test_argparse_messages_exactly)


def test_deprecation_warnings_are_sglangs_log_text() -> None:
    import logging

    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    for flag in ("--disable-cuda-graph", "--enable-dp-attention", "--monokernel-backend"):
        argv = ["--model-path", "/m", flag, *(["amd"] if flag == "--monokernel-backend" else [])]
        records: list[str] = []

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record.getMessage())

        handler = Keep()
        logging.getLogger().addHandler(handler)
        try:
            sglang_argparse.parse(oracle, argv)
        finally:
            logging.getLogger().removeHandler(handler)
        theirs = [r.removeprefix("\033[1;33m").removesuffix("\033[0m") for r in records if "deprecated" in r]
        ours = [w["message"] for w in parse_launch(["python", "-m", "sglang.launch_server", *argv]).warnings]
        assert ours == theirs and ours, flag
