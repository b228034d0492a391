"""A long launch command is parsed in linear time (inputs/launch._parse_known: argparse in
chunks that start at an option word, each word's reading memoized) with the result of one
argparse call: the same values, the same unrecognized words, the same refusal, whatever the
chunk size. (Speed itself: benchmarks/bench_launch.py.)"""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat.inputs import argument_parser, argument_table, launch

_WORDS = [
    "--tp", "2", "--tp-size", "x", "--dp", "1", "--enable-lora", "--max-lora-rank", "16", "--lora-paths", "a=/x", "b", '{"lora_name": "c", "lora_path": "/c"}',
    "--model-path", "m", "--model", "--unknown-flag", "v", "-1", "-x", "--port=30000", "--cuda-graph-max-bs", "8", "--disable-cuda-graph", "--lora-backend", "triton",
    "--lora-backend", "nope", "--max-loras-per-batch", "-3", "--kv-cache-dtype", "auto", "positional", "--enable-dp-attention", "--no-enable-lora", "--lora-target-modules", "all",
    "", "-", "--", "--tp=3", "--lora-paths=x", "--enable-lora=1", "--mod",
]  # fmt: skip


def _one_call(parser: argparse.ArgumentParser, argv: list[str]) -> object:
    try:
        namespace, extras = parser.parse_known_args(argv)
    except (argument_table.ArgumentsRefused, argparse.ArgumentError) as exc:
        return ("refused", str(exc))
    return (vars(namespace), extras)


def _chunked(parser: argparse.ArgumentParser, argv: list[str]) -> object:
    try:
        namespace, extras = launch._parse_known(parser, argv)
    except (argument_table.ArgumentsRefused, argparse.ArgumentError) as exc:
        return ("refused", str(exc))
    return (vars(namespace), extras)


@settings(max_examples=300, deadline=None)
@given(argv=st.lists(st.sampled_from(_WORDS), max_size=40), chunk=st.integers(1, 6), required=st.booleans())
def test_chunked_parse_is_one_parse(argv: list[str], chunk: int, required: bool) -> None:
    parser = argument_parser.parser(required)
    expected = _one_call(parser, argv)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(launch, "_CHUNK", chunk)
        assert _chunked(parser, argv) == expected, argv
    assert all(a.required == (required and a.dest == "model_path") for a in parser._actions if a.dest == "model_path")
