"""The examples of docs/strategies.md run as written (with fewer hypothesis examples)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import settings

DOC = Path(__file__).resolve().parent.parent / "docs" / "strategies.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def run_block(index: int) -> dict:
    namespace: dict = {"__name__": f"strategies_doc_{index}"}
    exec(compile(blocks()[index], f"{DOC}#block{index}", "exec"), namespace)
    return namespace


def small(test):
    """The doc's test with 50 examples (the doc's own settings are for a real run)."""
    return settings(max_examples=50, deadline=None, database=None)(test)


def test_the_doc_has_three_examples():
    assert len(blocks()) == 3


def test_exporter_example_passes():
    run_block(0)["test_every_export_is_servable"]()  # as written: its own @settings


def test_validator_example_behaves_as_described():
    namespace = run_block(1)
    small(namespace["test_validator_accepts_what_sglang_accepts"])()
    # The doc says the toy validator misses faults, and the test names one.
    with pytest.raises(AssertionError, match=r"sglang fails with"):
        small(namespace["test_validator_rejects_what_sglang_rejects"])()


def test_pool_builder_example_passes():
    small(run_block(2)["test_builder_output_matches"])()
