"""Differential property: the checker's adapter-loader model against sglang 0.5.23's `LoRAAdapter`.

The oracle (tests/oracle/sglang_adapter.py) runs sglang's `lora/lora.py`, read from the
wheel, on meta tensors: `initialize_weights_from_tensors` (filing by layer, then
`_normalize_weights`). Generated PEFT adapters for a sink setup (`peft_tensors`: flat or
numbered per expert; fused gate_up_proj, split gate_proj/up_proj, w1/w3/w2 names, a gate
without its up; one axis nudged; a layer past the model's last; an Inkling base or not) go
through it and through the checker, and:

* sglang loads the adapter  <=>  `inkling_compat.sglang.adapter_loader.plan_layer` predicts no
  failure for any layer, and then every layer's normalized names and shapes, in sglang's
  dict order, are what `plan_layer` predicts;
* sglang raises torch's reshape error  <=>  `plan_layer`'s first failing layer gives exactly
  that text, and `check()` reports `sink-slice-flat-factor-reshape` with it;
* sglang raises IndexError for a layer past the last  <=>  `check()` reports
  `adapter-layer-out-of-range` with exactly its text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.sglang import adapter_loader
from inkling_compat.testing.strategies import MODEL_LAYERS, sink_setups
from oracle import sglang_adapter, tally
from oracle.require import load_or_skip
from oracle.share import run_property
from test_fidelity import verdict

LOAD_RULES = ("adapter-layer-out-of-range", "sink-slice-flat-factor-reshape")


@pytest.fixture(scope="module")
def adapter_oracle() -> sglang_adapter.SglangAdapter:
    oracle = load_or_skip(sglang_adapter.load, "adapter-loader")
    tally.META["lora/lora.py sha256"] = oracle.lora_sha256[:16]
    return oracle


_SETUPS = sink_setups(max_slots=4)
_NAMING = st.sampled_from(["fused", "fused", "split", "w", "gate_only"])
_LAYOUT = st.sampled_from(["flat", "numbered"])
_FAR_LAYER = st.sampled_from([MODEL_LAYERS, MODEL_LAYERS + 1, 2 * MODEL_LAYERS - 1])
_BASE = st.sampled_from(["inkling", "inkling", "inkling", "other"])
_NUDGE = st.sampled_from(["+1", "-1", "x2", "/2"])
_ONE_IN = {k: st.integers(0, k - 1) for k in (2, 3, 4, 8)}
_INDEX = st.integers(0, 10**6)


def _tensors(setup: Any, r: int, layout: str, naming: str, layers: list[int]) -> tuple[dict[str, list[int]], list[str]]:
    """(name -> shape, adapter_config target_modules) of the shared-sink factors."""
    n, h, i = setup.n, setup.hidden, setup.intermediate
    out: dict[str, list[int]] = {}
    experts = [None] if layout == "flat" else list(range(n))
    width = n * i if layout == "flat" else i
    for layer in layers:
        for e in experts:
            base = f"base_model.model.llm.layers.{layer}.mlp.shared_experts." + ("" if e is None else f"{e}.")
            gate, up, down = {"w": ("w1", "w3", "w2")}.get(naming, ("gate_proj", "up_proj", "down_proj"))
            if naming == "fused":
                out[f"{base}gate_up_proj.lora_A.weight"] = [r, h]
                out[f"{base}gate_up_proj.lora_B.weight"] = [2 * width, r]
            else:
                out[f"{base}{gate}.lora_A.weight"] = [r, h]
                out[f"{base}{gate}.lora_B.weight"] = [width, r]
                if naming != "gate_only":
                    out[f"{base}{up}.lora_A.weight"] = [r, h]
                    out[f"{base}{up}.lora_B.weight"] = [width, r]
            out[f"{base}{down}.lora_A.weight"] = [r, width]
            out[f"{base}{down}.lora_B.weight"] = [h, r]
    targets = {"fused": ["gate_up_proj", "down_proj"], "w": ["w1", "w3", "w2"]}.get(naming, ["gate_proj", "up_proj", "down_proj"])
    return out, targets


@st.composite
def adapter_cases(draw: Any, inkling_only: bool = False, rank_above: bool = False) -> dict[str, Any]:
    """`rank_above`: an eighth of the cases have r above the setup's --max-lora-rank."""
    setup = draw(_SETUPS)
    r = draw(st.integers(1, setup.rank))
    if rank_above and draw(_ONE_IN[8]) == 0:
        r = setup.rank + draw(st.integers(1, 3))
    layout, naming = draw(_LAYOUT), draw(_NAMING)
    layers = sorted({draw(st.integers(0, MODEL_LAYERS - 1)) for _ in range(draw(st.integers(1, 3)))})
    if draw(_ONE_IN[8]) == 0:
        layers.append(draw(_FAR_LAYER))
    tensors, targets = _tensors(setup, r, layout, naming, layers)
    desc = f"{layout} {naming} layers {layers}"
    if draw(_ONE_IN[2]) == 0:  # nudge one axis of one tensor
        names = list(tensors)
        name = names[draw(_INDEX) % len(names)]
        axis = draw(_ONE_IN[2])
        how = draw(_NUDGE)
        value = tensors[name][axis]
        value = {"+1": value + 1, "-1": max(value - 1, 1), "x2": 2 * value, "/2": max(value // 2, 1)}[how]
        # A split gate/up pair is nudged together: gate and up of different shapes make
        # normalize_gate_up_proj's torch.cat fail, a known disagreement kept out of this
        # property (test_split_gate_up_of_different_shapes_fails_in_torch_cat below).
        partners = {name}
        for gate, up in ((".gate_proj.", ".up_proj."), (".w1.", ".w3.")):
            for one, other in ((gate, up), (up, gate)):
                if one in name and name.replace(one, other) in tensors:
                    partners.add(name.replace(one, other))
        for partner in partners:
            tensors[partner] = [value if k == axis else v for k, v in enumerate(tensors[partner])]
        desc += f" | {name.split('layers.')[1]} axis {axis} {how}"
    model = setup.model()
    if draw(_BASE) == "other" and not inkling_only:
        model = dict(model, architectures=["LlamaForCausalLM"], model_type="llama")
    return {"setup": setup, "r": r, "tensors": tensors, "targets": targets, "model": model, "desc": desc}


def predicted(case: dict[str, Any]) -> tuple[str | None, dict[int, list[tuple[str, list[int]]]]]:
    """adapter_loader's prediction: (torch's reshape error text or None, normalized layers)."""
    model = case["model"]
    inkling = any("Inkling" in a for a in model["architectures"]) or "inkling" in model["model_type"].lower()
    by_layer: dict[int, dict[str, list[int]]] = {}
    for name, shape in case["tensors"].items():
        by_layer.setdefault(adapter_loader.layer_id(name), {})[name] = list(shape)
    layers: dict[int, list[tuple[str, list[int]]]] = {}
    for lid in sorted(by_layer):
        plan = adapter_loader.plan_layer(by_layer[lid], case["r"], model["n_shared_experts"], inkling)
        if plan.failure is not None:
            failure = plan.failure
            return f"shape '{list(failure.shape)}' is invalid for input of size {failure.size}", layers
        layers[lid] = [(name, list(shape)) for name, shape in plan.shapes.items()]
    return None, layers


def compare_case(oracle: sglang_adapter.SglangAdapter, case: dict[str, Any]) -> tuple[bool, str, str]:
    model = case["model"]
    outcome = oracle.load(
        case["tensors"], r=case["r"], target_modules=case["targets"], architectures=model["architectures"],
        model_type=model["model_type"], n_shared_experts=model["n_shared_experts"], num_hidden_layers=MODEL_LAYERS,
    )
    manifest = {
        "name": "generated",
        "adapter_config": {"peft_type": "LORA", "r": case["r"], "lora_alpha": 2 * case["r"], "target_modules": case["targets"]},
        "tensors": {name: {"shape": shape, "dtype": "bfloat16"} for name, shape in case["tensors"].items()},
    }
    report = check(config=case["setup"].config(), model=model, adapter=manifest)
    reported = [p for p in report.problems if p.rule_id in LOAD_RULES]
    first = (reported[0].rule_id, reported[0].error_class, reported[0].message) if reported else None
    in_range = all((adapter_loader.layer_id(n) or 0) < MODEL_LAYERS for n in case["tensors"])
    failure, layers = predicted(case)
    if outcome.ok:
        label = "sglang loads"
        agreed = first is None and failure is None and in_range and layers == outcome.layers
    elif outcome.error_class == "IndexError":
        label = "sglang: layer out of range"
        agreed = not in_range and first == ("adapter-layer-out-of-range", "IndexError", outcome.message)
    elif outcome.error_class == "RuntimeError" and " is invalid for input of size " in (outcome.message or ""):
        label = "sglang: reshape error"
        agreed = in_range and failure == outcome.message and first == ("sink-slice-flat-factor-reshape", "RuntimeError", outcome.message)
    else:
        label = f"sglang: other {outcome.error_class}"
        agreed = False
    detail = (
        f"{case['desc']}; n={model['n_shared_experts']} H={case['setup'].hidden} I={case['setup'].intermediate} r={case['r']} "
        f"base={model['model_type']}: sglang {outcome.error_class or 'ok'} {outcome.message or ''} "
        f"layers {json.dumps(outcome.layers) if outcome.ok else '-'}; predicted failure {failure!r} layers {json.dumps(layers)}; "
        f"checker first load rule {first}"
    )
    return agreed, label, detail


@pytest.mark.fidelity
def test_adapter_normalization_agrees_with_sglang(adapter_oracle: sglang_adapter.SglangAdapter) -> None:
    prop = "LoRAAdapter._normalize_weights"

    def compare(case: dict[str, Any]) -> None:
        agreed, label, detail = compare_case(adapter_oracle, case)
        verdict(prop, agreed, label, lambda: detail)

    run_property(prop, adapter_cases(), compare, default_examples=500, share=0.5)


# ---------------------------------------------------------------------------------------------
# Known disagreement (reported, not fixed here: rules/ and inkling_compat/ belong to the lead)
# ---------------------------------------------------------------------------------------------

SPLIT_SETUP_TENSORS = {
    "base_model.model.llm.layers.1.mlp.shared_experts.0.gate_proj.lora_A.weight": [8, 64],
    "base_model.model.llm.layers.1.mlp.shared_experts.0.gate_proj.lora_B.weight": [32, 16],
    "base_model.model.llm.layers.1.mlp.shared_experts.0.up_proj.lora_A.weight": [8, 64],
    "base_model.model.llm.layers.1.mlp.shared_experts.0.up_proj.lora_B.weight": [32, 8],
    "base_model.model.llm.layers.1.mlp.shared_experts.0.down_proj.lora_A.weight": [8, 32],
    "base_model.model.llm.layers.1.mlp.shared_experts.0.down_proj.lora_B.weight": [64, 8],
}
SPLIT_CAT_ERROR = "Sizes of tensors must match except in dimension 0. Expected 16 in dimension 1 but got 8 for tensor number 1 in the list"


@pytest.mark.fidelity
def test_split_gate_up_oracle_raises_torch_cat(adapter_oracle: sglang_adapter.SglangAdapter) -> None:
    """sglang's side of the disagreement below (holds today)."""
    outcome = adapter_oracle.load(
        SPLIT_SETUP_TENSORS, r=8, target_modules=["gate_proj", "up_proj", "down_proj"],
        architectures=["InklingForConditionalGeneration"], model_type="inkling", n_shared_experts=1, num_hidden_layers=16,
    )
    assert (outcome.error_class, outcome.message) == ("RuntimeError", SPLIT_CAT_ERROR)


def test_split_gate_up_of_different_shapes_fails_in_torch_cat() -> None:
    from inkling_compat.testing.strategies import SinkSetup

    setup = SinkSetup(n=1, hidden=64, intermediate=32, tp=1, slots=2, rank=8, shared_outer=False, sink_class="legacy")
    manifest = {
        "name": "generated",
        "adapter_config": {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["gate_proj", "up_proj", "down_proj"]},
        "tensors": {name: {"shape": shape, "dtype": "bfloat16"} for name, shape in SPLIT_SETUP_TENSORS.items()},
    }
    report = check(config=setup.config(), model=setup.model(), adapter=manifest)
    errors = [p for p in report.problems if p.severity == "error" and p.origin in ("sglang", "argparse")]
    assert errors, "check() reports no sglang error"
    # sglang loads adapter weights on the CPU; the oracle runs on meta tensors, whose torch.cat
    # words the same size check differently. The checker gives the CPU text, which is torch's
    # own on CPU tensors of these shapes:
    torch = pytest.importorskip("torch")
    names = [n for n in SPLIT_SETUP_TENSORS if ".lora_B." in n and ("gate_proj" in n or "up_proj" in n)]
    with pytest.raises(RuntimeError) as cpu:
        torch.cat([torch.empty(SPLIT_SETUP_TENSORS[n]) for n in sorted(names)], 0)  # gate_proj, then up_proj
    assert (errors[0].rule_id, errors[0].error_class, errors[0].message) == ("adapter-normalize-cat-mismatch", "RuntimeError", str(cpu.value))
    assert [p.rule_id for p in report.problems] == ["adapter-normalize-cat-mismatch"]  # nothing after the failed load
