"""`explain` reads anyone's pasted log: its matching is linear in the text. Every rule pattern,
the prefilter and the log-prefix pattern are RE2's (google-re2), and a crafted 1 MB text that
made Python's backtracking search run for minutes returns. (The speed figure is the
benchmark's: benchmarks/bench_explain.py; the bound here only tells linear from quadratic.)"""

from __future__ import annotations

import time

import pytest

from inkling_compat import explain

CRAFTED = {
    # `cannot read adapter .+ \(.*\): .+: .+$` from every start: cubic in Python's re
    "nested wildcards": "cannot read adapter " + "a (b): " * 150000,
    # `(Failed to load LoRA adapter .+: )?Failed to load .+ because ...` from every repeat
    "repeated optional prefix": "Failed to load LoRA adapter x: " * 33000,
    "invalid choice": "argument --lora-backend: invalid choice: " + "x (choose from " * 66000,
    # the log prefix's bracketed field scans for a time from each position
    "unclosed bracket": "[" + "12:34 " * 170000,
    "many records": "ValueError: x\n" * 70000,
}


def test_every_pattern_is_compiled_by_re2() -> None:
    import re2

    patterns = [p for _, ps in explain._rules() for p in ps]
    assert len(patterns) > 100
    assert all(isinstance(explain.instrumented(p), re2._Regexp) for p in patterns)
    keyed, rest = explain._prefilter()
    assert isinstance(keyed, re2._Regexp) and (rest is None or isinstance(rest, re2._Regexp))
    assert isinstance(explain._LOG_PREFIX, re2._Regexp)


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_megabyte_returns(name: str) -> None:
    text = CRAFTED[name][:1_000_000]
    explain.findings("warm up")
    start = time.process_time()
    explain.findings(text)
    # Linear work is well under a second of CPU; Python's re took minutes on these.
    assert time.process_time() - start < 10


def test_matching_is_unchanged_by_the_linear_engine() -> None:
    found = explain.findings("cannot read adapter sink (/x/a): adapter_config.json: is not valid JSON")
    assert found and found[0].matches
