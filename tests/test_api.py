"""The Python API: inputs as paths, dicts or models; the report's surface."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inkling_compat import InputError, check
from inkling_compat.inputs.models import ModelConfig, PoolManifest, ServerConfig, Platform
from inkling_compat.testing.scenarios import example_arguments

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SEED_JOINED = (
    "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend; "
    "the shared sink does not use linearized BF16 weights"
)


def test_bundled_example_passes_from_paths():
    report = check(EXAMPLES / "serve.yaml", EXAMPLES / "adapter_pool.yaml", model=EXAMPLES / "config.json")
    assert report.ok and report.problems == []
    assert report.first is None
    report.raise_for_problems()  # nothing to raise


def test_dicts_and_models_are_equivalent():
    args = example_arguments({})
    from_dicts = check(**args)
    from_models = check(
        ServerConfig.model_validate(args["config"]),
        PoolManifest.model_validate(args["adapter"]),
        model=ModelConfig.model_validate(args["model"]),
        platform=Platform.model_validate(args["platform"]),
    )
    assert from_dicts.to_dict() == from_models.to_dict()


def test_inputs_not_given_are_said():
    """A missing model or platform is replaced by placeholder defaults: the report says so
    (facts.inputs_given), so an ok without --model is not mistaken for a checked model."""
    args = example_arguments({})
    assert check(**args).not_given == []
    without = check(args["config"], args["adapter"])
    assert without.not_given == ["model", "platform"]
    assert "no model config given" in str(without)
    assert without.to_dict()["not_given"] == ["model", "platform"]


def test_seed_joined_message_and_report_surface():
    args = example_arguments({"config": {"lora_backend": "csgmv", "sink": {"linearized_bf16_enabled": False}}})
    report = check(**args)
    assert not report.ok
    assert [p.rule_id for p in report.problems] == ["sink-lora-multislot-needs-triton", "sink-lora-not-linearized-bf16"]
    assert all(p.message == SEED_JOINED for p in report.problems)
    assert [p.fragment for p in report.problems] == [
        "multi-slot dense LoRA requires the Triton backend",
        "the shared sink does not use linearized BF16 weights",
    ]
    assert report.first.message == SEED_JOINED
    assert report.given_facts == {"linearized_bf16_enabled": False}
    text = str(report)
    assert SEED_JOINED in text and "was given, not derived" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False and data["problems"][0]["rule_id"] == "sink-lora-multislot-needs-triton"
    with pytest.raises(ValueError) as raised:
        report.raise_for_problems()
    assert str(raised.value) == SEED_JOINED


def test_report_is_in_sglang_order_across_stages():
    # A pool fault (pool_bind) and an initialize_lora fault (lora_modules): sglang raises the latter first.
    args = example_arguments(
        {"config": {"lora_backend": "csgmv"}, "adapter": {"pool": {"gate_up_lora_a": {"shape": [1, 32, 1536]}}}}
    )
    report = check(**args)
    assert [p.rule_id for p in report.problems] == ["sink-lora-multislot-needs-triton", "sink-pool-not-4d"]
    assert report.problems[1].adapter == "sink-r16"


def test_several_adapters_are_checked_each():
    args = example_arguments({})
    bad = json.loads(json.dumps(args["adapter"]))
    bad["name"] = "bad"
    bad["pool"]["down_lora_b"]["shape"] = [4, 1, 1536, 8]
    report = check(args["config"], [args["adapter"], bad], model=args["model"])
    assert [(p.rule_id, p.adapter) for p in report.problems] == [("sink-pool-rank-mismatch", "bad")]


def test_unknown_sglang_version_is_an_input_error():
    with pytest.raises(InputError, match="sglang_version"):
        check(sglang_version="0.4.0")


def test_type_error_names_file_and_field(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("sink:\n  sink_class: {eight: 8}\n")  # (a server argument's value argparse refuses is sglang's refusal: test_validated_input)
    with pytest.raises(InputError) as raised:
        check(path)
    assert raised.value.file == str(path) and raised.value.field == "sink.sink_class"


def test_defaults_pass():
    assert check().ok
