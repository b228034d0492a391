"""What a check imports: `inkling-compat check --launch examples/launch.sh`, run in a fresh
interpreter, leaves none of the modules a check does not need in `sys.modules` (pydantic and
what it pulls in, the YAML library for a launch-only check, the runtime's and the tools' modules,
the output formats it does not print, `--fix`, explain, publishing). A property of the start-up,
not a timing: the process time it keeps down is measured in benchmarks/bench_check.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Run as `inkling-compat check ...` is, from the repository root (examples/launch.sh reads
# examples/model and examples/adapter).
_SCRIPT = """
import json, sys
sys.argv = ["inkling-compat", *sys.argv[1:]]
from inkling_compat import cli
try:
    cli.main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

NEVER = (
    # pydantic and what only it imports: the check builds plain records
    "pydantic", "pydantic_core", "annotated_types", "typing_inspection", "importlib.metadata", "email",
    # heavy or optional libraries no plain check reads
    "torch", "triton", "re2", "huggingface_hub", "safetensors", "numpy", "uuid", "platform", "html",
    # the package's modules for other commands and outputs
    "inkling_compat.inputs.input_schema", "inkling_compat.engine.rule_schema", "inkling_compat.publish",
    "inkling_compat.runtime", "inkling_compat.fix", "inkling_compat.explain", "inkling_compat.ci",
    "inkling_compat.report.sarif", "inkling_compat.report.junit", "inkling_compat.report.gitlab",
    "inkling_compat.report.github", "inkling_compat.report.checkstyle", "inkling_compat.report.json_report",
    "inkling_compat.testing",
)  # fmt: skip


def _imported(*args: str) -> tuple[int, list[str]]:
    run = subprocess.run([sys.executable, "-c", _SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    last = run.stdout.strip().splitlines()[-1]
    data = json.loads(last)
    return data["code"], data["modules"]


def _found(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_a_launch_check_imports_only_what_it_needs() -> None:
    code, modules = _imported("check", "--launch", "examples/launch.sh")
    assert code == 0
    assert _found(modules, NEVER) == []
    # A launch file is a shell script: no YAML is read, and the YAML library is not imported.
    assert _found(modules, ("yaml", "inkling_compat.inputs.yaml_read", "ruamel")) == []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_output_format_asked_for_is_the_only_one_imported(fmt: str) -> None:
    code, modules = _imported("check", "--launch", "examples/launch.sh", "--format", fmt)
    assert code == 0
    assert _found(modules, NEVER[: NEVER.index("inkling_compat.report.json_report")] + ("inkling_compat.testing",)) == []
