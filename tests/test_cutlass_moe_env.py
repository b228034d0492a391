"""SGLANG_CUTLASS_MOE: where each release reads it, checked against the release's own code, and
the variable read from every deployment form the checker reads.

sglang 0.5.16 and 0.5.17 act on it in `arg_groups/overrides.py` `_cutlass_moe_env_override`
(from ServerArgs._handle_moe_kernel_config, on every model): an assert on --quantization, then
the MoE runner set to cutlass. 0.5.18-0.5.20 only list it among the deprecated environment
variables (environ.py `_DEPRECATED_ENVS`: a warning), 0.5.21 on do not name it. The rule
`cutlass-moe-env-needs-fp8` reports the assert; the oracle runs the wheel's own function (its
source read out of the wheel, `envs` and `logger` stood in) for each quantization.
"""

from __future__ import annotations

import logging
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from oracle import sglang_sink, wheel_source
from oracle.require import load_or_skip

from inkling_compat.api import check, check_deployment
from inkling_compat.inputs.versions import SGLANG_RELEASES

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "examples" / "config.json")
RULE = "cutlass-moe-env-needs-fp8"
ALL = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
ACTING = ("0.5.17", "0.5.16")
ALWAYS = (*SGLANG_RELEASES[:3], *ACTING)
RELEASES = [pytest.param(r, marks=() if r in ALWAYS or ALL else pytest.mark.skip(reason="older release: make fidelity-all")) for r in SGLANG_RELEASES]
QUANTIZATIONS = [None, "fp8", "mxfp8", "modelopt_fp4", "awq", "w8a8_fp8"]


def _wheel(release: str) -> Path:
    return Path(load_or_skip(lambda: sglang_sink.find_wheel(version=release), f"{release} wheel"))


def _reads(wheel: Path) -> dict[str, list[str]]:
    """Every sglang source file (tests aside) that names the variable, with the lines."""
    out: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("sglang/") and name.endswith(".py") and "/test" not in name:
                text = archive.read(name).decode("utf-8", "replace")
                if "SGLANG_CUTLASS_MOE" in text:
                    out[name] = [line.strip() for line in text.splitlines() if "SGLANG_CUTLASS_MOE" in line]
    return out


class _Flag:
    def __init__(self, value: bool) -> None:
        self.value = value

    def get(self) -> bool:
        return self.value


class _Envs:
    def __init__(self, value: bool) -> None:
        self.SGLANG_CUTLASS_MOE = _Flag(value)


class _View:
    def __init__(self, quantization: str | None) -> None:
        self.quantization = quantization


def _sglang_says(wheel: Path, quantization: str | None) -> str | None:
    """What the release's own `_cutlass_moe_env_override` raises with the variable on (None: nothing)."""
    source = wheel_source.top_level(wheel_source.read(wheel, "sglang/srt/arg_groups/overrides.py"), "_cutlass_moe_env_override")
    scope: dict[str, Any] = {"Any": Any, "envs": _Envs(True), "logger": logging.getLogger("sglang-oracle")}
    exec(compile(source, f"{wheel.name}/overrides.py", "exec"), scope)  # noqa: S102 - sglang's own function, from its wheel
    try:
        result = scope["_cutlass_moe_env_override"](_View(quantization))
    except AssertionError as exc:
        return str(exc)
    assert result == {"moe_runner_backend": "cutlass"}
    return None


@pytest.mark.parametrize("release", RELEASES)
def test_where_each_release_reads_the_variable(release: str) -> None:
    reads = _reads(_wheel(release))
    if release in ACTING:
        assert "sglang/srt/arg_groups/overrides.py" in reads
        assert any("envs.SGLANG_CUTLASS_MOE.get()" in line for line in reads["sglang/srt/arg_groups/overrides.py"])
    else:
        # no read that acts on it: at most the deprecation table (a warning) and comments
        acting = {name: lines for name, lines in reads.items() if any(re.search(r"envs\.SGLANG_CUTLASS_MOE|getenv\(\s*\"SGLANG_CUTLASS_MOE|environ\.get\(\s*\"SGLANG_CUTLASS_MOE", line) for line in lines)}
        assert acting == {}
        assert set(reads) <= {"sglang/srt/environ.py", "sglang/srt/server_args.py"}


@pytest.mark.parametrize("release", ACTING)
@pytest.mark.parametrize("quantization", QUANTIZATIONS)
def test_the_rule_is_the_releases_own_assert(release: str, quantization: str | None) -> None:
    expected = _sglang_says(_wheel(release), quantization)
    config: dict[str, Any] = {"env": {"SGLANG_CUTLASS_MOE": True}}
    if quantization is not None:
        config["quantization"] = quantization
    report = check(config, None, model=MODEL, sglang_version=release)
    said = [(p.error_class, p.message) for p in report.problems if p.rule_id == RULE]
    assert said == ([("AssertionError", expected)] if expected is not None else [])


@pytest.mark.parametrize("release", ["0.5.18", "0.5.20", "0.5.23"])
def test_later_releases_do_not_refuse_it(release: str) -> None:
    report = check({"env": {"SGLANG_CUTLASS_MOE": True}}, None, model=MODEL, sglang_version=release)
    assert RULE not in [p.rule_id for p in report.problems]


# The variable as each deployment form sets it, on a BF16 launch (no --quantization).
LAUNCH = "python -m sglang.launch_server --model-path /models/inkling --enable-lora --lora-backend triton --max-lora-rank 16"
FORMS = {
    "k8s.yaml": f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: inkling}}
spec:
  template:
    spec:
      containers:
      - name: sglang
        image: lmsysorg/sglang:v0.5.16
        env:
        - {{name: SGLANG_CUTLASS_MOE, value: "1"}}
        command: [{", ".join(repr(w) for w in LAUNCH.split())}]
""".replace("'", '"'),
    "docker-compose.yaml": f"""services:
  sglang:
    image: lmsysorg/sglang:v0.5.16
    environment:
      SGLANG_CUTLASS_MOE: "true"
    command: {LAUNCH}
""",
    "run.sh": f"""#!/bin/bash
docker run --gpus all -e SGLANG_CUTLASS_MOE=1 lmsysorg/sglang:v0.5.16 {LAUNCH}
""",
    "Dockerfile": f"""FROM lmsysorg/sglang:v0.5.16
ENV SGLANG_CUTLASS_MOE=1
CMD {LAUNCH}
""",
    "serve.sh": f"""#!/bin/bash
export SGLANG_CUTLASS_MOE=1
{LAUNCH}
""",
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_deployment_form_sets_the_variable(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(FORMS[name], encoding="utf-8")
    found = check_deployment(path, model=MODEL, sglang_version="0.5.16")
    assert len(found) == 1, name
    _, report = found[0]
    assert [(p.rule_id, p.message) for p in report.problems if p.rule_id == RULE] == [(RULE, "cutlass MoE is only supported with fp8/mxfp8 quantization")]
    unset = tmp_path / ("unset-" + name)
    unset.write_text(FORMS[name].replace("SGLANG_CUTLASS_MOE", "SGLANG_OTHER"), encoding="utf-8")
    (_, report), = check_deployment(unset, model=MODEL, sglang_version="0.5.16")
    assert RULE not in [p.rule_id for p in report.problems]
