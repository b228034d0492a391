"""`nvfp4-linear-in-features-not-16` against sglang's own ModelOptFp4LinearMethod.create_weights.

The method is read from each release's wheel (layers/quantization/modelopt_quant.py) and run
with a stand-in layer and quant config up to the point where it would allocate the FP4 weight
(a stand-in ModelWeightParameter stops it there: the checks before it passed). For each
deployment below, the input size per TP rank the checker names for the first unaligned linear
(`facts.model.nvfp4_unaligned_in_features`) makes the release's method raise the rule's class
and words; so does every size that is not a multiple of 16, and no multiple of 16 does. Which
linears Inkling builds, and their sizes, are read from the model code (the fact's description
cites the lines); this test holds the check itself and its words to sglang's.

The three newest releases run everywhere; the others with INKLING_COMPAT_ALL_RELEASES=1.
"""

from __future__ import annotations

import os
import types
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
RULE = "nvfp4-linear-in-features-not-16"
NVFP4 = {"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [], "modelopt_quant_config": {
    "quant_cfg": {"*weight_quantizer": {"num_bits": [2, 1], "block_sizes": {"-1": 16, "scale_bits": [4, 3]}}}}}}


class _PastTheChecks(Exception):
    """The stand-in ModelWeightParameter: create_weights got past its checks."""


def _create_weights(release: str) -> Any:
    wheel = load_or_skip(lambda: sglang_sink.find_wheel(version=release), f"{release} wheel")
    source = wheel_source.method(wheel_source.read(wheel, "sglang/srt/layers/quantization/modelopt_quant.py"),
                                 "ModelOptFp4LinearMethod", "create_weights")

    def stop(*args: Any, **kwargs: Any) -> None:
        raise _PastTheChecks

    torch = types.SimpleNamespace(nn=types.SimpleNamespace(Module=object), dtype=object, float8_e4m3fn="fp8", uint8="u8",
                                  empty=lambda *a, **k: None, float32="f32")
    namespace: dict[str, Any] = {"torch": torch, "List": list, "ModelWeightParameter": stop, "PerTensorScaleParameter": stop}
    exec(compile(source, f"<{release}>/modelopt_quant.py", "exec"), namespace)
    return namespace["create_weights"]


def _theirs(create_weights: Any, size: int) -> tuple[str, str] | None:
    method = types.SimpleNamespace(quant_config=types.SimpleNamespace(is_checkpoint_nvfp4_serialized=True, group_size=16))
    try:
        create_weights(method, types.SimpleNamespace(), size, [64], size, 64, "bf16")
    except _PastTheChecks:
        return None
    except ValueError as exc:
        return type(exc).__name__, str(exc)
    raise AssertionError("create_weights returned without allocating its weight")


# (deployment, the first unaligned linear the checker must name, or None)
DEPLOYMENTS = [
    pytest.param({"config": {"tp_size": 4}, "model": {"head_dim": 40}}, "llm.layers.0.attn.wo_ud", id="wo_ud-12x40-tp4"),
    pytest.param({"config": {"tp_size": 4}, "model": {"local_layer_ids": [3], "swa_head_dim": 40}}, "llm.layers.3.attn.wo_ud", id="swa-wo_ud"),
    pytest.param({"model": {"dense_mlp_idx": 2, "dense_intermediate_size": 1000}}, "llm.layers.0.mlp.down_proj", id="dense-down_proj"),
    pytest.param({"config": {"tp_size": 8, "dp_size": 2, "enable_dp_attention": True}, "model": {"dense_mlp_idx": 1, "dense_intermediate_size": 1032}},
                 "llm.layers.0.mlp.down_proj", id="dense-down_proj-attn-tp4"),
    pytest.param({"base": "bare", "model": {"n_routed_experts": 8, "n_shared_experts": 2, "shared_expert_sink": False, "intermediate_size": 100}},
                 "llm.layers.0.mlp.shared_experts.down_proj", id="shared-experts-down_proj"),
    pytest.param({"model": {"hidden_size": 1544, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128}},
                 "llm.layers.0.attn.qkvr", id="hidden-1544"),
    pytest.param({}, None, id="default-geometry"),
    pytest.param({"config": {"tp_size": 4}, "model": {"swa_head_dim": 40}}, None, id="swa-dim-without-swa-layers"),
    pytest.param({"model": {"dense_mlp_idx": 1, "dense_intermediate_size": 1000, "quantization_config": {"quantization": {
        **NVFP4["quantization"], "exclude_modules": ["model.layers.0.mlp.w2_md"]}}}}, None, id="excluded"),
]


def _rule_words() -> str:
    return next(c for c in load_rules() if c.rule.id == RULE).rule.message


@pytest.mark.parametrize("release", RELEASES)
def test_the_check_and_its_words_are_the_release_s(release: str) -> None:
    create_weights = _create_weights(release)
    for size in range(1, 257):
        assert _theirs(create_weights, size) == (None if size % 16 == 0 else ("ValueError", _rule_words())), size


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("deployment,linear", DEPLOYMENTS)
def test_the_size_named_is_one_the_release_refuses(release: str, deployment: dict[str, Any], linear: str | None) -> None:
    create_weights = _create_weights(release)
    model = {"quantization_config": NVFP4, **deployment.get("model", {})}
    report = check(**example_arguments(dict(deployment, model=model)), sglang_version=release)
    fired = [p for p in report.problems if p.rule_id == RULE]
    if linear is None:
        assert fired == []
        return
    (problem,) = fired
    named, size = problem.because.split(" has ")
    assert named == linear
    assert _theirs(create_weights, int(size.split(" ")[0])) == (problem.error_class, problem.message)
