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

from inkling_compat.inputs import argument_table
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
