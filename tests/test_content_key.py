"""The fast evaluator derives the facts once per distinct input (engine/content.py keys them by
their exact content) and keeps a one-adapter check's contexts with them: equal content gives
the same facts, any difference in what `derive` reads gives another key, and a check never gets
another input's facts or contexts."""

from __future__ import annotations

import copy

from inkling_compat.engine.content import inputs_key
from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import FAST, REFERENCE, FastEvaluator
from inkling_compat.facts.derive import derive
from inkling_compat.facts.inputs import load_inputs
from inkling_compat.testing.scenarios import example_arguments


def _inputs(**changes):
    args = example_arguments({})
    for name, value in changes.items():
        args[name] = value
    return load_inputs(args["config"], args["adapter"], model=args["model"], platform=args["platform"])


def test_equal_content_gives_one_key_and_one_facts():
    fast = FastEvaluator()
    first, second = _inputs(), _inputs()
    assert first.server is not second.server and inputs_key(first) == inputs_key(second) is not None
    facts = fast.derive(first)
    assert fast.derive(second) is facts and facts == derive(second)


def test_every_difference_derive_reads_is_another_key():
    import dataclasses

    from inkling_compat.inputs.models import PeftManifest

    args = example_arguments({})
    inputs = _inputs()
    base = inputs_key(inputs)
    config = args["config"]
    peft = PeftManifest.model_validate({"name": "a", "adapter_config": {"r": 1, "lora_alpha": 2}, "tensors": {"x": {"shape": [1, 2], "dtype": "BF16"}}})
    changed = [
        _inputs(config=dict(config, max_loras_per_batch=config["max_loras_per_batch"] + 1)),
        _inputs(model=dict(args["model"], vocab_size=1000)),
        _inputs(platform="h100"),
        _inputs(adapter=None),
        dataclasses.replace(inputs, given=inputs.given - {"platform"}),
        *(
            dataclasses.replace(inputs, adapters=(peft.model_copy(update=update),))
            for update in (
                {},
                {"adapter_config": {"r": 1.0, "lora_alpha": 2}},  # (1.0 is not 1)
                {"adapter_config": {"r": True, "lora_alpha": 2}},  # (nor is True)
                {"adapter_config": {"lora_alpha": 2, "r": 1}},  # (nor another order: sglang reads keys in order)
                {"name": "b"},
                {"tensors": PeftManifest.model_validate({"name": "a", "adapter_config": {}, "tensors": {"x": {"shape": [1, 3], "dtype": "BF16"}}}).tensors},
            )
        ),
    ]
    keys = [inputs_key(i) for i in changed]
    assert None not in keys and [k == base for k in keys] == [False] * len(keys) and len(set(keys)) == len(keys)


def test_a_model_field_stated_with_its_default_is_not_the_default():
    """`model_fields_set` is part of the content: the facts read which fields were stated."""
    stated, unstated = _inputs(model={"vocab_size": 201024}), _inputs(model={})
    assert stated.model.vocab_size == unstated.model.vocab_size
    assert inputs_key(stated) != inputs_key(unstated)


def test_checks_of_equal_inputs_share_facts_and_contexts_and_get_the_reference_report():
    args = example_arguments({})
    first = evaluate(**args, evaluator=FAST)
    second = evaluate(**copy.deepcopy(args), evaluator=FAST)
    assert second.facts is first.facts
    assert second.report.to_dict() == evaluate(**args, evaluator=REFERENCE).report.to_dict()
    other = evaluate(**dict(args, config=dict(args["config"], lora_backend="csgmv", max_loras_per_batch=4)), evaluator=FAST)
    assert other.facts is not first.facts and other.report.to_dict() == evaluate(**dict(args, config=dict(args["config"], lora_backend="csgmv", max_loras_per_batch=4)), evaluator=REFERENCE).report.to_dict()


def test_nothing_is_kept_with_the_caches_off(monkeypatch):
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    fast = FastEvaluator()
    inputs = _inputs()
    assert fast.derive(inputs) is not fast.derive(inputs)


def test_the_contexts_of_a_one_adapter_check_are_kept_with_its_inputs():
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.inputs.models import SGLANG_DEFAULT_VERSION

    fast = FastEvaluator()
    plan = fast.plan(load_rules(), SGLANG_DEFAULT_VERSION)

    def contexts(inputs):
        return fast.contexts_of(inputs, fast.derive(inputs), plan)

    assert contexts(_inputs()) is contexts(_inputs())
    assert contexts(_inputs(platform="h100")) is not contexts(_inputs())
    adapter = example_arguments({})["adapter"]
    assert contexts(_inputs(adapter=[adapter, adapter])) is not contexts(_inputs(adapter=[adapter, adapter]))  # (a fleet's are built per check)
