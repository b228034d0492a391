"""`run`'s numeric arguments are validated on the command line (exit 2, one line), never
handed to torch (which failed with exit 3)."""

from __future__ import annotations

import pytest

from inkling_compat import cli


@pytest.mark.parametrize("args", [["--tokens", "1e11"], ["--tokens", str(2**63 - 1)], ["--seed", str(2**64)], ["--seed", str(-(2**63) - 1)]])
def test_out_of_range_numbers_are_exit_2_with_one_line(args, capsys):
    assert cli.main(["run", "--config", "examples/serve.yaml", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and args[0] in err
