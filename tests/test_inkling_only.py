"""Only the rules that apply to the model served: a rule marked `inkling_only` (its sglang site
is on the Inkling model path) is *not applicable* on a model sglang builds with another class,
said once in a note, and *not checked* when no model config was read; it never fires on either.

The property runs every rule example with the model replaced by real non-Inkling config.json
files (tests/data/non_inkling_models.yaml: Llama 3, Mistral 7B, Qwen2.5, sources recorded
there), and with no model at all."""

from __future__ import annotations

import copy
import zlib
from pathlib import Path

import pytest
import yaml

from inkling_compat import check
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.testing.scenarios import example_arguments

ROOT = Path(__file__).resolve().parent.parent
MODELS = yaml.safe_load((ROOT / "tests" / "data" / "non_inkling_models.yaml").read_text(encoding="utf-8"))
RULES = load_rules()
INKLING_ONLY = frozenset(c.rule.id for c in RULES if c.rule.inkling_only)
EXAMPLES = [
    pytest.param(ex.input, id=f"{c.rule.id}:{kind}:{i}")
    for c in RULES
    for kind in ("fire", "pass")
    for i, ex in enumerate(c.rule.examples.fire if kind == "fire" else c.rule.examples.pass_)
]
NAMES = sorted(MODELS)


def _inkling_site(source_path: str | None) -> bool:
    """A site in sglang's Inkling modules: models/inkling.py, models/inkling_common/,
    configs/inkling.py, Inkling's kernels (inkling_attn_prologue.py)."""
    return source_path is not None and ("/models/inkling" in source_path or source_path.rsplit("/", 1)[-1].startswith("inkling"))


def test_every_rule_whose_site_is_inklings_is_marked():
    """The mark follows the site: every rule raised in sglang's Inkling modules is marked (but
    the two slice rules marked any_model: their site is reached on other bases too), and every
    sink rule (the MoE sink exists on Inkling only)."""
    unmarked = [
        c.rule.id for c in RULES
        if (_inkling_site(c.rule.source.path if c.rule.source else None) or c.rule.id.startswith("sink-")) and not c.rule.any_model and not c.rule.inkling_only
    ]
    assert unmarked == []
    assert {"inkling-requires-radix-cache", "inkling-attn-backend-fa4-or-triton"} <= INKLING_ONLY
    assert len(INKLING_ONLY) >= 50


def _as(example_input: dict, name: str) -> dict:
    """The example's arguments with its model's class and type replaced by a real other model's
    (every other field the example sets kept, so the Inkling-only rules' own fields still hold
    the values that make them fire on Inkling)."""
    args = example_arguments(example_input)
    model = dict(copy.deepcopy(MODELS[name]["config"]), **{k: v for k, v in (args["model"] or {}).items() if k not in ("architectures", "model_type")})
    args["model"] = model
    return args


@pytest.mark.parametrize("example_input", EXAMPLES)
def test_no_inkling_only_rule_fires_on_another_model_or_without_one(example_input: dict, request: pytest.FixtureRequest):
    name = NAMES[zlib.crc32(request.node.callspec.id.encode()) % len(NAMES)]  # one real model per example, spread over all
    report = check(**_as(example_input, name))
    fired = {p.rule_id for p in report.problems} & INKLING_ONLY
    assert not fired, f"{name}: {fired}"
    status = report.coverage.status
    assert {status[i] for i in INKLING_ONLY} == {"not_applicable"}
    arch = MODELS[name]["config"]["architectures"][0]
    if any(p.stage == "argparse" for p in report.problems):
        return  # sglang stops at parsing: nothing after it is reached, nothing to note about the model
    assert f"the model is {arch}: the Inkling checks do not apply; the general LoRA and server-argument checks ran" in report.coverage.notes

    args = example_arguments(example_input)
    args["model"] = None
    report = check(**args)
    assert not {p.rule_id for p in report.problems} & INKLING_ONLY
    assert {report.coverage.status[i] for i in INKLING_ONLY} == {"not_checked"}


@pytest.mark.parametrize("name", NAMES)
def test_a_real_other_model_is_checked_for_the_general_rules(name: str):
    """On the real file: the LoRA server-argument and adapter rules still run and fire (a
    server-argument refusal sglang raises for any model), the Inkling-only ones do not."""
    serve = {"enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["q_proj"], "disable_radix_cache": True,
             "attention_backend": "flashinfer", "max_loras_per_batch": 4, "max_loaded_loras": 2}
    report = check(serve, str(ROOT / "examples" / "adapter"), model=MODELS[name]["config"])
    ids = [p.rule_id for p in report.problems]
    assert "lora-max-loaded-loras-below-per-batch" in ids  # sglang's own check, whatever the model
    assert not set(ids) & INKLING_ONLY
    assert report.coverage.status["adapter-dora"] == "checked"
    same_on_inkling = check(serve, str(ROOT / "examples" / "adapter"), model=str(ROOT / "examples" / "config.json"))
    assert {"inkling-requires-radix-cache", "inkling-attn-backend-fa4-or-triton"} <= {p.rule_id for p in same_on_inkling.problems}


def test_model_type_decides_when_no_class_is_named():
    only_type = check({"disable_radix_cache": True}, model={"model_type": "mistral", "hidden_size": 4096})
    assert not {p.rule_id for p in only_type.problems} & INKLING_ONLY
    assert only_type.coverage.status["inkling-requires-radix-cache"] == "not_applicable"
    assert only_type.coverage.notes[0].startswith("the model is a mistral model (model_type 'mistral', no architectures): the Inkling checks do not apply")
    inkling_type = check({"disable_radix_cache": True}, model={"model_type": "inkling_mm_model", "hidden_size": 1536})
    assert "inkling-requires-radix-cache" in [p.rule_id for p in inkling_type.problems]


def test_a_hub_model_not_read_leaves_the_inkling_checks_not_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`--model-path mistralai/...` not in the cache: no model read, so nothing is evaluated on
    Inkling's defaults (the radix-cache assert would fire on them)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    report = check(argv=["python", "-m", "sglang.launch_server", "--model-path", "mistralai/Mistral-7B-v0.1", "--disable-radix-cache", "--attention-backend", "flashinfer"])
    assert report.ok and report.problems == []
    assert report.coverage.status["inkling-requires-radix-cache"] == "not_checked"
    assert "inkling-requires-radix-cache" in report.coverage.reasons["--model-path not read"]
    assert "not checked (--model-path not read: " in str(report)
