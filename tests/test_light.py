"""The checking path stays light: importing inkling_compat and running check() pulls in
neither torch nor triton (the reference kernels in `kernels/` are optional).

Start-up time is deliberately not asserted here; benchmarks/bench_check.py measures it.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "triton")

PROBE = """
import json, sys
import inkling_compat
from inkling_compat import check
from inkling_compat.testing.scenarios import example_arguments
report = check(**example_arguments({}))
bad = check(**example_arguments({"config": {"lora_backend": "csgmv"}}))
from inkling_compat import cli  # the rest of the tool
from inkling_compat.report import text as render
from inkling_compat.publish import catalog, schemas as schema_export
heavy = sorted(m for m in sys.modules if m.split(".")[0] in %r)
print(json.dumps({"ok": report.ok, "bad_ok": bad.ok, "heavy": heavy}))
""" % (HEAVY,)


def test_check_imports_neither_torch_nor_triton():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["ok"] is True and data["bad_ok"] is False, data
    assert data["heavy"] == [], f"checking path imported {data['heavy']}"


def test_cli_check_imports_neither_torch_nor_triton(tmp_path):
    import yaml

    from inkling_compat.testing.scenarios import base_scenarios

    legacy = base_scenarios()["legacy"]
    (tmp_path / "serve.yaml").write_text(yaml.safe_dump(legacy["config"]), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(legacy["model"]), encoding="utf-8")
    (tmp_path / "adapter.yaml").write_text(yaml.safe_dump(legacy["adapter"]), encoding="utf-8")
    probe = (
        "import sys\n"
        "from inkling_compat import cli\n"
        "code = cli.main(['check', '--config', 'serve.yaml', '--model', 'config.json', '--adapter', 'adapter.yaml'])\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')]\n"
        "print(f'CODE={code} HEAVY=' + ','.join(sorted(heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "CODE=0 HEAVY="
