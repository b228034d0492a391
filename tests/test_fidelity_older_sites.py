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
from inkling_compat.inputs import argument_table
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
    # The enum has members the release's --moe-runner-backend does not offer (ascend in
    # 0.5.16-0.5.18): its parser refuses those before any layer is built.
    choices = argument_table.lookup("moe_runner_backend", release)["choices"]
    for member in enum:
        if member.value not in choices:
            found = _problems(release, {"moe_runner_backend": member.value}, {"lora-moe-backend-unsupported", "argparse-invalid-choice"})
            assert [message.split(":")[0] for _, message in found] == ["argument --moe-runner-backend"], member
            continue
        refused = not (
            member.is_auto() or member.is_experimental_sgl_trtllm() or member.is_experimental_sgl_marlin()
            or member.is_marlin() or member.is_triton())
        theirs = [("NotImplementedError", f"LoRA MoE not supported for backend {member}")] if refused else []
        assert _problems(release, {"moe_runner_backend": member.value}, {"lora-moe-backend-unsupported"}) == theirs, member


# --- `--moe-runner-backend auto`: what FusedMoEWithLoRA's runner is ---------------------------

class _Recorded:
    """Stands in for MoeRunner and for the quant methods FusedMoEWithLoRA tests with isinstance."""

    def __init__(self, backend: Any = None, *args: Any, **kwargs: Any) -> None:
        self.runner_backend = backend

    def get_triton_quant_info(self, layer: Any) -> None:
        return None


def _fused_moe_lora_runner(release: str, enum: Any) -> Any:
    """FusedMoEWithLoRA.__init__'s statements from `global_backend = get_moe_runner_backend()`
    through its `raise NotImplementedError`, executed from the wheel as `select(global_backend,
    base_layer) -> runner_backend` (an exception where sglang raises one)."""
    import ast

    source = wheel_source.read(_wheel(release), "sglang/srt/lora/layers.py")
    init = wheel_source.method(source, "FusedMoEWithLoRA", "__init__")
    body = ast.parse(init).body[0].body
    start = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "global_backend")
    end = next(i for i, s in enumerate(body) if i > start and "LoRA MoE not supported for backend" in ast.unparse(s))
    function = ast.parse("def select(self, base_layer):\n    pass\n").body[0]
    function.body = body[start : end + 1] + [ast.parse("return runner_backend").body[0]]
    module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    namespace: dict[str, Any] = {"MoeRunnerBackend": enum, "MoeRunner": _Recorded}
    exec(compile(module, f"<{release}>/sglang/srt/lora/layers.py", "exec"), namespace)
    stubs = {
        "sglang.srt.layers.quantization.unquant": {"UnquantizedFusedMoEMethod": _Unquantized},
        "sglang.srt.layers.quantization.compressed_tensors.compressed_tensors": {"CompressedTensorsFusedMoEMethod": type("CT", (_Recorded,), {})},
        "sglang.srt.layers.quantization.modelopt_quant": {"ModelOptNvFp4FusedMoEMethod": type("NvFp4", (_Recorded,), {})},
        "sglang.srt.lora.trtllm_lora_temp.lora_layer": {"init_experimental_sgl_trtllm_lora": lambda *a: None},
        "sglang.srt.lora.marlin_lora_temp.lora_layer": {"init_experimental_sgl_marlin_lora": lambda *a: None},
    }

    def select(global_backend: Any, quant_method: Any) -> Any:
        namespace["get_moe_runner_backend"] = lambda: global_backend
        layer = type("Layer", (), {"quant_method": quant_method, "moe_runner_config": None})()
        with wheel_source.installed(stubs):
            return namespace["select"](type("Wrapper", (), {})(), layer)

    return select


class _Unquantized(_Recorded):
    """UnquantizedFusedMoEMethod as FusedMoE builds it (its flags from the global backend)."""


def _unquantized_runner(release: str, enum: Any, global_backend: Any) -> Any:
    """The runner backend UnquantizedFusedMoEMethod.create_moe_runner (the wheel's) builds on a
    CUDA GPU (not NPU, no aiter) under `global_backend`; its flags are FusedMoE.__init__'s."""
    source = wheel_source.read(_wheel(release), "sglang/srt/layers/quantization/unquant.py")
    namespace: dict[str, Any] = {
        "MoeRunnerBackend": enum, "MoeRunner": _Recorded, "get_moe_runner_backend": lambda: global_backend,
        "_is_npu": False, "_use_aiter": False, "Optional": Any,
    }
    text = "from __future__ import annotations\n" + wheel_source.method(source, "UnquantizedFusedMoEMethod", "create_moe_runner")
    exec(compile(text, f"<{release}>/sglang/srt/layers/quantization/unquant.py", "exec"), namespace)
    method = _Unquantized()
    method.use_flashinfer_trtllm_moe = global_backend.is_flashinfer_trtllm() or global_backend.is_flashinfer_trtllm_routed()
    method.use_flashinfer_cutlass = global_backend.is_flashinfer_cutlass()
    method.use_deep_gemm = global_backend.is_deep_gemm()
    method.use_triton_kernels = global_backend.is_triton_kernels()
    namespace["create_moe_runner"](method, object(), type("Config", (), {})())
    return method


FP8_CHECKPOINT = {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}


@pytest.mark.parametrize("release", RELEASES)
def test_auto_moe_runner_backend_as_the_release_s_fused_moe_lora_resolves_it(release: str) -> None:
    """auto on an unquantized model: the wheel's UnquantizedFusedMoEMethod builds a triton runner
    and FusedMoEWithLoRA takes it (checked, nothing fires); under --moe-a2a-backend pplx the
    server arguments resolve auto to deep_gemm, which it refuses (the same words); a quantized
    model's method picks its runner on the GPU (fp8: DeepGEMM where it is enabled there): not
    checked, with why; never passed, never fired."""
    if not _raises_in_fused_moe_with_lora(release):
        pytest.skip("this release's FusedMoEWithLoRA has no such raise (the rule has no form here)")
    enum = _moe_runner_backend(release)
    select = _fused_moe_lora_runner(release, enum)
    rule = {"lora-moe-backend-unsupported"}

    # Inkling's server-argument overrides leave auto alone unless pplx or a quantization decides it.
    wheel = _wheel(release)
    overrides = wheel_source.read(wheel, "sglang/srt/arg_groups/overrides.py")
    assert "moe_runner_backend" not in wheel_source.top_level(overrides, "_inkling_overrides")
    server_args = wheel_source.read(wheel, "sglang/srt/server_args.py")
    pplx_resolves = re.search(r'if self\.moe_runner_backend == "auto":\s+self\.moe_runner_backend = "deep_gemm"', server_args) is not None
    assert pplx_resolves == (release != "0.5.16")  # (0.5.16's parser has no pplx choice)

    # An unquantized model under auto.
    unquantized = _unquantized_runner(release, enum, enum.AUTO)
    assert select(enum.AUTO, unquantized) == enum.TRITON
    report = check(**example_arguments({"config": {}}), sglang_version=release)
    assert report.coverage.status["lora-moe-backend-unsupported"] == "checked" and not [p for p in report.problems if p.rule_id in rule]

    # pplx: the global backend is deep_gemm.
    if pplx_resolves:
        with pytest.raises(NotImplementedError) as raised:
            select(enum.DEEP_GEMM, _unquantized_runner(release, enum, enum.DEEP_GEMM))
        pplx = {"moe_a2a_backend": "pplx", "enable_dp_attention": True, "tp_size": 2, "dp_size": 2}
        assert _problems(release, pplx, rule) == [("NotImplementedError", str(raised.value))]

    # A quantized model: the quant method's runner decides, and fp8's reads the GPU.
    assert select(enum.AUTO, _Recorded(enum.TRITON)) == enum.TRITON
    with pytest.raises(NotImplementedError):
        select(enum.AUTO, type("M", (), {"runner": _Recorded(enum.DEEP_GEMM)})())
    fp8 = wheel_source.method(wheel_source.read(wheel, "sglang/srt/layers/quantization/fp8.py"), "Fp8MoEMethod", "create_moe_runner")
    assert "is_deepgemm_moe_runner_backend_enabled()" in fp8
    report = check(**example_arguments({"config": {}, "model": FP8_CHECKPOINT}), sglang_version=release)
    assert not [p for p in report.problems if p.rule_id in rule]
    reason = "--moe-runner-backend auto with fp8 routed experts and a quantization: sglang picks the MoE runner on the GPU at start-up"
    assert "lora-moe-backend-unsupported" in report.coverage.reasons[reason]
    explicit = check(**example_arguments({"config": {"moe_runner_backend": "triton"}, "model": FP8_CHECKPOINT}), sglang_version=release)
    assert explicit.coverage.status["lora-moe-backend-unsupported"] == "checked"
