"""The shipped argument table is sglang 0.5.23's own parser, regenerated from the wheel.

tests/oracle/sglang_argparse.py builds `argparse.ArgumentParser(prog="sglang serve")` +
`ServerArgs.add_cli_args` from the wheel and writes every action's option strings, dest,
action kind, type name, choices, nargs, const and default; the file in the package must be
exactly what it writes today.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from oracle import sglang_argparse
from oracle.require import load_or_skip

TESTS = Path(__file__).resolve().parent


def test_the_shipped_table_is_what_the_wheel_gives(tmp_path: Path) -> None:
    loaded = load_or_skip(sglang_argparse.load, "argument parser")
    # Generated in a fresh interpreter, as the generator runs: which missing modules get stood
    # in depends on what a process has imported already.
    out = tmp_path / "table.json"
    done = subprocess.run([sys.executable, "-m", "oracle.sglang_argparse", "--wheel", str(loaded.wheel), "--out", str(out)], cwd=TESTS, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    fresh = json.loads(out.read_text())
    shipped = json.loads(sglang_argparse.TABLE_PATH.read_text())
    # Which absent third-party modules were stood in depends on what this environment has
    # installed (torch's optional imports among them); the table itself must not.
    fresh.pop("stood_in"), shipped.pop("stood_in")
    assert shipped == fresh, "stale: run `cd tests && python -m oracle.sglang_argparse`"
    rows = shipped["arguments"]
    assert len(rows) == len(loaded.parser._actions)
    by_dest = {row["dest"]: row for row in rows}
    assert by_dest["max_lora_rank"]["type"] == "int"
    assert "--model" in by_dest["model_path"]["options"]
    assert by_dest["lora_paths"]["action"] == "LoRAPathAction"


def test_nothing_of_sglang_is_stood_in() -> None:
    loaded = load_or_skip(sglang_argparse.load, "argument parser")
    assert not [name for name in loaded.stood_in if name.split(".")[0] == "sglang"]
