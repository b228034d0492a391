"""Rules of sites only older releases have, against each release's own code.

* `lora-backend-flashinfer-deprecated` / `lora-backend-invalid-name`: the release's
  lora/backend/lora_registry.py, executed from its wheel (a stand-in for the base class it
  imports), looks a name up as LoRAManager does (`get_backend_from_name`); for names whose
  factory raises or that are unknown, the checker reports the same class and words for that
  release, and nothing for a name whose factory returns a backend class.
* `lora-moe-backend-unsupported`: the release's MoeRunnerBackend enum (layers/moe/utils.py),
  executed from its wheel, decides with its own `is_*` methods which explicit
  --moe-runner-backend FusedMoEWithLoRA.__init__ refuses (not marlin, not triton, not one of the
  experimental LoRA paths it returns early for) and prints the member as sglang's f-string does;
  the rule has no form in a release whose lora/layers.py lacks that raise (0.5.19 on).

The three newest releases run everywhere; the others with INKLING_COMPAT_ALL_RELEASES=1
(`make fidelity-all`), as tests/test_fidelity_releases.py.
"""

from __future__ import annotations

import os
import re
import zipfile
from typing import Any

import pytest
from oracle import sglang_sink, wheel_source
from oracle.require import load_or_skip

from inkling_compat.api import check
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.inputs.versions import SGLANG_RELEASES
from inkling_compat.testing.scenarios import example_arguments

IN_CI = SGLANG_RELEASES[:3]
ALL = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
RELEASES = [pytest.param(r, marks=() if r in IN_CI or ALL else pytest.mark.skip(reason="older release: make fidelity-all")) for r in SGLANG_RELEASES]


def _wheel(release: str) -> Any:
    return load_or_skip(lambda: sglang_sink.find_wheel(version=release), f"{release} wheel")


def _problems(release: str, config: dict[str, Any], rule_ids: set[str]) -> list[tuple[str, str]]:
    report = check(**example_arguments({"config": config}), sglang_version=release)
    return [(p.error_class, p.message) for p in report.problems if p.rule_id in rule_ids]


class _Backend:
    """Stands in for BaseLoRABackend: the registry only names it in an annotation."""


@pytest.mark.parametrize("release", RELEASES)
def test_lora_backend_names_as_the_release_s_registry_answers(release: str) -> None:
    wheel = _wheel(release)
    source = wheel_source.read(wheel, "sglang/srt/lora/backend/lora_registry.py")
    registry = wheel_source.exec_module(
        source, f"<{release}>/sglang/srt/lora/backend/lora_registry.py", "sglang_lora_registry_oracle",
        {"sglang.srt.lora.backend.base_backend": {"BaseLoRABackend": _Backend}})
    names = sorted(registry.LORA_SUPPORTED_BACKENDS) + ["flashinfer", "triton-v2", "no_such_backend"]
    rules = {"lora-backend-flashinfer-deprecated", "lora-backend-invalid-name"}
    for name in dict.fromkeys(names):
        factory = registry.LORA_SUPPORTED_BACKENDS.get(name)
        try:
            # A registered factory imports its backend module (not loadable here): only the ones
            # that raise before importing anything are called.
            if factory is not None and "import" in wheel_source.top_level(source, factory.__name__):
                continue
            registry.get_backend_from_name(name)
            theirs: list[tuple[str, str]] = []
        except Exception as exc:  # sglang's own raise, whatever its class
            theirs = [(type(exc).__name__, str(exc))]
        assert _problems(release, {"lora_backend": name}, rules) == theirs, name
    assert "flashinfer" not in registry.LORA_SUPPORTED_BACKENDS or release in {"0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20"}


def _moe_runner_backend(release: str) -> Any:
    wheel = _wheel(release)
    source = wheel_source.read(wheel, "sglang/srt/layers/moe/utils.py")
    namespace: dict[str, Any] = {}
    exec(compile("from enum import Enum\n" + wheel_source.top_level(source, "MoeRunnerBackend"),
                 f"<{release}>/sglang/srt/layers/moe/utils.py", "exec"), namespace)
    return namespace["MoeRunnerBackend"]


def _raises_in_fused_moe_with_lora(release: str) -> bool:
    with zipfile.ZipFile(_wheel(release)) as archive:
        source = archive.read("sglang/srt/lora/layers.py").decode("utf-8")
    return bool(re.search(r'f"LoRA MoE not supported for backend \{runner_backend\}"', source))


@pytest.mark.parametrize("release", RELEASES)
def test_explicit_moe_runner_backends_as_the_release_s_fused_moe_lora_decides(release: str) -> None:
    if not _raises_in_fused_moe_with_lora(release):
        rule = next(c for c in load_rules() if c.rule.id == "lora-moe-backend-unsupported")
        assert rule.for_version(release) is None
        return
    enum = _moe_runner_backend(release)
    for member in enum:
        refused = not (
            member.is_auto() or member.is_experimental_sgl_trtllm() or member.is_experimental_sgl_marlin()
            or member.is_marlin() or member.is_triton())
        theirs = [("NotImplementedError", f"LoRA MoE not supported for backend {member}")] if refused else []
        assert _problems(release, {"moe_runner_backend": member.value}, {"lora-moe-backend-unsupported"}) == theirs, member
