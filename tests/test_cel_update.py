"""The CEL core's first conversion of values into a context reads the datetime C API from
`_datetime` (engine/cel.py `update`): a check imports no `datetime`, the stand-in leaves
sys.modules, and every value converts as with the real module, datetimes included."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from inkling_compat.engine import cel
ctx = cel.Context()
cel.update(ctx, {"a": {"b": [1, "x", None, 2.5, True, -2**63]}})
assert "datetime" not in sys.modules, "datetime imported"
assert cel.compile('a.b[1] == "x" && a.b[3] > 2.0 && a.b[2] == null && a.b[4] && a.b[5] < 0').execute(ctx) is True
import datetime
assert sys.modules["datetime"] is datetime and hasattr(datetime, "MINYEAR") and datetime.__file__.endswith("datetime.py")
when = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
step = datetime.timedelta(seconds=90)
cel.update(ctx, {"t": when, "d": step})
assert cel.compile("t").execute(ctx) == when
assert cel.compile("d").execute(ctx) == step
assert cel.compile("t + d > t && duration('90s') == d").execute(ctx) is True
print(repr(cel.compile("t + d").execute(ctx)))
"""

REAL_FIRST = "import datetime\n" + PROBE.replace('assert "datetime" not in sys.modules, "datetime imported"\n', "")


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_first_context_reads_the_datetime_api_without_importing_datetime():
    assert _run(PROBE) == _run(REAL_FIRST) == "datetime.datetime(2020, 1, 2, 3, 5, 35, tzinfo=datetime.timezone.utc)\n"
