"""Differential properties for the sites the raise-site audit added rules for, where sglang's
own code runs on the CPU from the 0.5.23 wheel:

* `LoRAPathAction` (arg_groups/argparse_actions.py, executed whole: it imports only argparse,
  json and logging) on generated --lora-paths lists: it raises AssertionError or
  json.JSONDecodeError  <=>  check() reports lora-paths-json-missing-keys /
  lora-paths-json-invalid, with exactly its text;
* the --served-model-name check of `check_server_args` (arg_groups/validation_hook.py: the one
  `if` statement that tests served_model_name, cut out of the function with `ast`, run with
  `is_runai_obj_uri` and its SUPPORTED_SCHEMES from utils/runai_utils.py): it raises  <=>  check()
  reports served-model-name-colon, with exactly its text;
* `validate_experimental_sgl_marlin_server_args` and `validate_experimental_sgl_marlin_contract`
  (lora/marlin_lora_temp/policy.py, executed whole) on generated arguments and GPUs;
* `_admit_fp8_block_weights` (lora/moe/quant_info.py: the function's own source, with torch) on
  generated FP8 block sizes and expert sizes, against the lora_* runner's FP8 rules;
* `InklingCausalLLM.set_dflash_layers_to_capture` (models/inkling.py: the method's own source,
  bound to a stand-in with the decoder layers it reads) on generated layer-id lists, through
  both ways the ids reach it;
* `plan_out_scales` and `_prime_factors` (models/inkling_common/hmlp.py, their own source, with
  numpy) on generated vision patch sizes;
* `load_lora_weight_to_buffer` (lora/mem_pool.py, the pool oracle `oracle/sglang_mem_pool.py`) on
  generated shared-expert factors (numbered or packed, of rank 2 to 4) on dense and MoE layers.
"""

from __future__ import annotations

import argparse
import ast
import json
import textwrap
import types
from typing import Any, Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inkling_compat import check
from oracle import sglang_sink, wheel_source
from oracle.require import load_or_skip

ACTIONS = "sglang/srt/arg_groups/argparse_actions.py"
VALIDATION = "sglang/srt/arg_groups/validation_hook.py"
RUNAI = "sglang/srt/utils/runai_utils.py"
EXAMPLES = settings(max_examples=80, deadline=None)


def _load_action() -> type:
    wheel = sglang_sink.find_wheel()
    module = wheel_source.exec_module(wheel_source.read(wheel, ACTIONS), f"{wheel}/{ACTIONS}", "sglang_argparse_actions", {})
    return module.LoRAPathAction


def _load_served_name_check() -> Callable[[Any], None]:
    wheel = sglang_sink.find_wheel()
    source = wheel_source.read(wheel, VALIDATION)
    function = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "check_server_args")
    block = next(
        n for n in ast.walk(function)
        if isinstance(n, ast.If) and "served_model_name" in ast.unparse(n.test)
    )
    runai = wheel_source.read(wheel, RUNAI)
    namespace: dict[str, Any] = {}
    exec(wheel_source.top_level(runai, "SUPPORTED_SCHEMES"), namespace)
    exec(wheel_source.top_level(runai, "is_runai_obj_uri"), {"Path": object, **namespace}, namespace)
    body = textwrap.indent(textwrap.dedent(ast.get_source_segment(source, block, padded=True) or ""), "    ")
    exec(compile("def served_name_check(cfg):\n" + body, f"{wheel}/{VALIDATION}", "exec"), namespace)
    return namespace["served_name_check"]


@pytest.fixture(scope="module")
def lora_path_action() -> type:
    return load_or_skip(_load_action, "LoRAPathAction")


@pytest.fixture(scope="module")
def served_name_check() -> Callable[[Any], None]:
    return load_or_skip(_load_served_name_check, "served-model-name")


def _sglang_error(run: Callable[[], None]) -> tuple[str, str] | None:
    try:
        run()
    except (AssertionError, ValueError) as exc:
        return type(exc).__name__, str(exc)
    return None


def _ours(config: dict[str, Any], ids: set[str]) -> tuple[str, str] | None:
    found = [p for p in check(config=config).problems if p.rule_id in ids]
    return (found[0].error_class, found[0].message) if found else None


_JSONISH = st.sampled_from([
    '{"lora_name": "a", "lora_path": "/p"}', '  {"lora_name": "a", "lora_path": "/p", "pinned": true} ',
    '{"name": "a", "lora_path": "/p"}', '{"lora_name": "a"}', "{}", "{'lora_name': 'a', 'lora_path': '/p'}",
    '{"lora_name": "a", "lora_path": "/p",}', "{lora_name: a}", '{"a": 1} x}', "{ }", '{"lora_path": "/p", "lora_name": null}',
])
_ITEM = st.one_of(_JSONISH, st.sampled_from(["sink=/adapters/sink", "/adapters/plain", "{brace=/x"]),
                  st.text(alphabet='{}":, ablorat_nmeph/', max_size=24))


@EXAMPLES
@given(items=st.lists(_ITEM, max_size=3))
def test_lora_path_action_matches_the_rules(lora_path_action, items):
    def run() -> None:
        lora_path_action(option_strings=["--lora-paths"], dest="lora_paths")(argparse.ArgumentParser(), argparse.Namespace(), items)

    theirs = _sglang_error(run)
    ours = _ours({"enable_lora": True, "max_lora_rank": 8, "lora_target_modules": ["all"], "lora_paths": items},
                 {"lora-paths-json-missing-keys", "lora-paths-json-invalid"})
    assert ours == theirs


_NAMES = st.one_of(
    st.sampled_from(["inkling", "inkling:v2", "S3://bucket/a:b", "s3://bucket/a:b", "gs://x:y", "az://x", "file://x:y", ":", ""]),
    st.text(alphabet="ab:/s3gz", max_size=10),
)


@EXAMPLES
@given(name=_NAMES)
def test_served_model_name_check_matches_the_rule(served_name_check, name):
    theirs = _sglang_error(lambda: served_name_check(types.SimpleNamespace(served_model_name=name)))
    assert _ours({"served_model_name": name}, {"served-model-name-colon"}) == theirs


def test_the_properties_see_both_outcomes(lora_path_action, served_name_check):
    bad = '{"name": "a", "lora_path": "/p"}'
    with pytest.raises(AssertionError):
        lora_path_action(option_strings=["--lora-paths"], dest="lora_paths")(argparse.ArgumentParser(), argparse.Namespace(), [bad])
    with pytest.raises(json.JSONDecodeError):
        lora_path_action(option_strings=["--lora-paths"], dest="lora_paths")(argparse.ArgumentParser(), argparse.Namespace(), ["{x}"])
    with pytest.raises(AssertionError):
        served_name_check(types.SimpleNamespace(served_model_name="a:b"))
    served_name_check(types.SimpleNamespace(served_model_name="s3://a:b"))


# --- validate_experimental_sgl_marlin_server_args (lora/marlin_lora_temp/policy.py) -----------

POLICY = "sglang/srt/lora/marlin_lora_temp/policy.py"
MARLIN_RULES = {"marlin-ep-needs-standard-dispatch", "marlin-lora-needs-virtual-experts",
                "marlin-lora-needs-triton-backend", "marlin-ep-needs-trivial-placement"}


def _policy_module() -> Any:
    """The wheel's marlin_lora_temp/policy.py, run with its one import stood in."""
    wheel = sglang_sink.find_wheel()
    stubs = {"sglang.srt.arg_groups.overrides": {"resolving_view": lambda server_args: server_args}}
    return wheel_source.exec_module(wheel_source.read(wheel, POLICY), f"{wheel}/{POLICY}", "sglang_marlin_policy", stubs)


@pytest.fixture(scope="module")
def marlin_policy() -> Callable[..., None]:
    return load_or_skip(lambda: _policy_module().validate_experimental_sgl_marlin_server_args, "experimental_sgl_marlin policy")


_MARLIN_FIELDS = {
    "enable_lora": st.sampled_from([None, True, False]),
    "lora_paths": st.sampled_from([None, [], ["a=/adapters/a"]]),
    "lora_use_virtual_experts": st.booleans(),
    "lora_backend": st.sampled_from(["triton", "triton", "csgmv", "triton_v2"]),
    "ep_size": st.sampled_from([1, 1, 2, 4]),
    "moe_a2a_backend": st.sampled_from(["none", "none", "none", "deepep"]),
    "init_expert_location": st.sampled_from(["trivial", "trivial", "static"]),
    "ep_num_redundant_experts": st.sampled_from([0, 0, 0, 1]),
    "enable_eplb": st.sampled_from([False, False, True]),
    "elastic_ep_backend": st.sampled_from([None, None, None, "mooncake"]),
    "enable_elastic_expert_backup": st.sampled_from([False, False, True]),
}


@EXAMPLES
@given(case=st.fixed_dictionaries(_MARLIN_FIELDS))
def test_experimental_sgl_marlin_policy_matches_the_rules(marlin_policy, case):
    args = types.SimpleNamespace(**case)
    theirs = _sglang_error(lambda: marlin_policy(args, args))
    config = {k: v for k, v in case.items() if v is not None or k == "enable_lora"}
    config.update(moe_runner_backend="experimental_sgl_marlin", tp_size=case["ep_size"], max_lora_rank=8, lora_target_modules=["all"])
    assert _ours(config, MARLIN_RULES) == theirs


# validate_experimental_sgl_marlin_contract: the layer-level check of init_experimental_sgl_marlin_lora.
CONTRACT_RULE = "experimental-sgl-marlin-needs-sm90"
_NVFP4 = {"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [], "modelopt_quant_config": {
    "quant_cfg": {"*weight_quantizer": {"num_bits": [2, 1], "block_sizes": {"-1": 16, "scale_bits": [4, 3]}}}}}}


@pytest.fixture(scope="module")
def marlin_contract() -> Callable[..., None]:
    return load_or_skip(lambda: _policy_module().validate_experimental_sgl_marlin_contract, "experimental_sgl_marlin contract")


@EXAMPLES
@given(major=st.sampled_from([7, 8, 9, 10, 12]), minor=st.sampled_from([0, 6, 9]), ep=st.sampled_from([1, 2, 4]),
       experts=st.sampled_from([8, 64, 128]))
def test_experimental_sgl_marlin_contract_matches_the_rule(marlin_contract, major, minor, ep, experts):
    # Inkling's routed FusedMoE as InklingMoE builds it (inkling_common/moe.py l.830-848): gated
    # SiLU, FusedMoE's defaults for the rest; an EP split the model accepts (experts % ep == 0).
    runner_config = types.SimpleNamespace(
        activation="silu", is_gated=True, gemm1_alpha=None, gemm1_clamp_limit=None, swiglu_limit=None,
        apply_router_weight_on_input=False, no_combine=False, num_experts=experts, num_local_experts=experts // ep,
    )
    theirs = _sglang_error(lambda: marlin_contract(runner_config, moe_ep_size=ep, device_capability=(major, minor)))
    config = {"enable_lora": True, "lora_backend": "triton", "lora_use_virtual_experts": True, "max_lora_rank": 8,
              "lora_target_modules": ["all"], "moe_runner_backend": "experimental_sgl_marlin", "tp_size": ep, "ep_size": ep}
    found = [p for p in check(config=config, model={"n_routed_experts": experts, "quantization_config": _NVFP4},
                              platform={"compute_capability": [major, minor]}).problems if p.rule_id == CONTRACT_RULE]
    assert ((found[0].error_class, found[0].message) if found else None) == theirs


# _admit_fp8_block_weights: what a lora_* runner's FP8 provider checks when it binds the weights.
QUANT_INFO = "sglang/srt/lora/moe/quant_info.py"
FP8_RULES = {"lora-moe-runner-fp8-block-128", "lora-moe-runner-fp8-dims-128"}


def _load_fp8_admit() -> Callable[[Any], None]:
    import torch

    namespace: dict[str, Any] = {"torch": torch}
    exec(wheel_source.top_level(wheel_source.read(sglang_sink.find_wheel(), QUANT_INFO), "_admit_fp8_block_weights"), namespace)
    return namespace["_admit_fp8_block_weights"]


@pytest.fixture(scope="module")
def fp8_admit() -> Callable[[Any], None]:
    return load_or_skip(_load_fp8_admit, "MoE LoRA FP8 quant info")


def _sglang_not_implemented(run: Callable[[], None]) -> tuple[str, str] | None:
    try:
        run()
    except NotImplementedError as exc:
        return type(exc).__name__, str(exc)
    return None


@EXAMPLES
@given(block=st.sampled_from([[128, 128], [128, 128], [64, 64], [128, 64], [256, 128]]), hidden=st.sampled_from([1536, 2048, 1600, 1408]),
       intermediate=st.sampled_from([768, 1024, 1536, 2816]), tp=st.sampled_from([1, 2, 4]), ep=st.sampled_from([1, 2]))
def test_fp8_block_admission_matches_the_rules(fp8_admit, block, hidden, intermediate, tp, ep):
    import torch

    moe_tp = max(tp // ep, 1)
    local_experts = 64 // ep
    per_rank = intermediate // moe_tp
    # The layer as FusedMoE holds it: w13 [E, 2I, H], scales of 128-blocks in fp32 (meta tensors).
    scale = lambda rows, cols: torch.empty((local_experts, -(-rows // 128), -(-cols // 128)), dtype=torch.float32, device="meta")  # noqa: E731
    quant_info = types.SimpleNamespace(
        block_shape=tuple(block), hidden_size=hidden, intermediate_size=per_rank, num_local_experts=local_experts,
        w13_weight=torch.empty((local_experts, 2 * per_rank, hidden), device="meta"), w13_scale=scale(2 * per_rank, hidden),
        w2_scale=scale(hidden, per_rank),
    )
    theirs = _sglang_not_implemented(lambda: fp8_admit(quant_info))
    config = {"enable_lora": True, "lora_backend": "triton_v2", "moe_runner_backend": "lora_triton", "quantization": "fp8",
              "max_lora_rank": 16, "lora_target_modules": ["gate_up_proj", "down_proj"], "tp_size": tp, "ep_size": ep}
    model = {"n_routed_experts": 64, "n_shared_experts": 2, "shared_expert_sink": True, "hidden_size": hidden,
             "intermediate_size": intermediate, "num_attention_heads": 16, "num_key_value_heads": 4,
             "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": block}}
    found = [p for p in check(config=config, model=model).problems if p.rule_id in FP8_RULES]
    assert ((found[0].error_class, found[0].message) if found else None) == theirs


# InklingCausalLLM.set_dflash_layers_to_capture, reached from a DFLASH draft's target_layer_ids
# (resolve_target_layer_ids: non-empty, each in range) or from --return-aux-hidden-state-layer-ids
# (handle_aux_hidden_state_capture: non-empty, non-negative, distinct; then in range).
INKLING = "sglang/srt/models/inkling.py"
DFLASH_RULES = {"inkling-dflash-layer-ids-repeated", "inkling-dflash-layer-ids-unsorted"}
LAYERS = 16


def _load_dflash_capture() -> Callable[[list[int]], None]:
    namespace: dict[str, Any] = {}
    source = wheel_source.method(wheel_source.read(sglang_sink.find_wheel(), INKLING), "InklingCausalLLM", "set_dflash_layers_to_capture")
    exec("from __future__ import annotations\n" + source, namespace)
    method = namespace["set_dflash_layers_to_capture"]

    def capture(ids: list[int]) -> None:
        model = types.SimpleNamespace(layers=[types.SimpleNamespace(layer_id=i, mlp_ar_fusable=True) for i in range(LAYERS)])
        method(model, ids)

    return capture


@pytest.fixture(scope="module")
def dflash_capture() -> Callable[[list[int]], None]:
    return load_or_skip(_load_dflash_capture, "Inkling DFLASH capture")


@EXAMPLES
@given(ids=st.lists(st.integers(0, LAYERS - 1), min_size=1, max_size=5), aux=st.booleans())
def test_dflash_capture_ids_match_the_rules(dflash_capture, ids, aux):
    if aux and len(set(ids)) != len(ids):
        ids = sorted(set(ids), reverse=True)  # the argument check refuses a repeat before the model
    theirs = _sglang_error(lambda: dflash_capture(list(ids)))
    if aux:
        config = {"enable_return_aux_hidden_states": True, "speculative_algorithm": "DFLASH", "return_aux_hidden_state_layer_ids": ids}
    else:
        config = {"speculative_algorithm": "DFLASH", "draft": {"dflash_target_layer_ids": ids}}
    found = [p for p in check(config=config, model={"n_routed_experts": 8, "num_hidden_layers": LAYERS}).problems if p.rule_id in DFLASH_RULES]
    assert ((found[0].error_class, found[0].message) if found else None) == theirs


# HMLPPatchEncoder's scale plan (hmlp.py plan_out_scales, _prime_factors).
HMLP = "sglang/srt/models/inkling_common/hmlp.py"
VISION_RULES = {"inkling-vision-patch-size-too-small", "inkling-vision-temporal-patch-size-not-positive"}


def _load_plan_out_scales() -> Callable[..., Any]:
    import numpy as np

    source = wheel_source.read(sglang_sink.find_wheel(), HMLP)
    namespace: dict[str, Any] = {"np": np}
    for name in ("_prime_factors", "plan_out_scales"):
        exec("from __future__ import annotations\n" + wheel_source.top_level(source, name), namespace)
    return namespace["plan_out_scales"]


@pytest.fixture(scope="module")
def plan_out_scales() -> Callable[..., Any]:
    return load_or_skip(_load_plan_out_scales, "HMLP scale plan")


@EXAMPLES
@given(patch=st.integers(-3, 32), temporal=st.integers(-3, 8))
def test_hmlp_scale_plan_matches_the_rules(plan_out_scales, patch, temporal):
    # n_layers past the number of scales: the plan takes numpy's argmin, not scipy's assignment.
    theirs = _sglang_error(lambda: plan_out_scales(temporal, patch, 64, 3))
    model = {"n_routed_experts": 8, "vision_config": {"decoder_dmodel": 1536, "patch_size": patch, "temporal_patch_size": temporal, "n_layers": 64}}
    found = [p for p in check(config={"enable_multimodal": True}, model=model).problems if p.rule_id in VISION_RULES]
    assert ((found[0].error_class, found[0].message) if found else None) == theirs


def test_the_model_and_runner_properties_see_both_outcomes(marlin_contract, fp8_admit, dflash_capture, plan_out_scales):
    config = types.SimpleNamespace(activation="silu", is_gated=True, gemm1_alpha=None, gemm1_clamp_limit=None, swiglu_limit=None,
                                   apply_router_weight_on_input=False, no_combine=False, num_experts=64, num_local_experts=64)
    with pytest.raises(ValueError):
        marlin_contract(config, moe_ep_size=1, device_capability=(8, 0))
    marlin_contract(config, moe_ep_size=1, device_capability=(9, 0))
    with pytest.raises(ValueError, match="unique"):
        dflash_capture([1, 1])
    with pytest.raises(ValueError, match="sorted"):
        dflash_capture([2, 1])
    dflash_capture([1, 2])
    with pytest.raises(ValueError, match="patch_size"):
        plan_out_scales(1, 1, 64, 3)
    with pytest.raises(ValueError, match="positive"):
        plan_out_scales(0, 16, 64, 3)
    plan_out_scales(1, 16, 64, 3)
    import torch

    def quant_info(block: tuple[int, int], hidden: int) -> Any:
        scale = lambda rows, cols: torch.empty((8, -(-rows // 128), -(-cols // 128)), dtype=torch.float32, device="meta")  # noqa: E731
        return types.SimpleNamespace(block_shape=block, hidden_size=hidden, intermediate_size=768, num_local_experts=8,
                                     w13_weight=torch.empty((8, 1536, hidden), device="meta"), w13_scale=scale(1536, hidden), w2_scale=scale(hidden, 768))

    with pytest.raises(NotImplementedError, match=r"\[128, 128\] weight blocks"):
        fp8_admit(quant_info((64, 64), 1536))
    with pytest.raises(NotImplementedError, match="hidden_size % 128"):
        fp8_admit(quant_info((128, 128), 1600))
    fp8_admit(quant_info((128, 128), 1536))


# load_lora_weight_to_buffer's routing of shared-expert factors (mem_pool.py l.985-1020, l.404).
POOL_RULES = {"adapter-shared-expert-on-dense-layer", "adapter-shared-expert-factor-not-3d"}


@pytest.fixture(scope="module")
def pool_oracle_dense() -> Any:
    from oracle import sglang_mem_pool

    return load_or_skip(sglang_mem_pool.load, "LoRA memory pool")


_FACTOR = st.tuples(
    st.integers(0, 3),  # layer
    st.sampled_from([None, 0, 1]),  # expert (None: packed)
    st.sampled_from(["gate_up_proj", "down_proj"]),
    st.sampled_from(["lora_A", "lora_B"]),
    st.sampled_from([2, 3, 4]),  # rank of the tensor
)


@settings(max_examples=40, deadline=None)
@given(factor=_FACTOR, dense=st.integers(0, 2))
@example(factor=(0, 0, "down_proj", "lora_B", 2), dense=1)  # an expert-0 factor on a dense layer: sglang raises
@example(factor=(1, None, "down_proj", "lora_B", 4), dense=0)  # a 4-D packed factor: sglang raises
@example(factor=(1, 0, "down_proj", "lora_B", 2), dense=1)  # on an MoE layer: loads
def test_shared_expert_routing_matches_the_rules(pool_oracle_dense, factor, dense):
    from inkling_compat.testing.strategies import SinkSetup

    layer, expert, module, side, rank = factor
    setup = SinkSetup(n=2, hidden=64, intermediate=32, tp=1, slots=2, rank=8, shared_outer=False, sink_class="legacy")
    rows = {("gate_up_proj", "lora_A"): [8, 64], ("gate_up_proj", "lora_B"): [64, 8],
            ("down_proj", "lora_A"): [8, 32], ("down_proj", "lora_B"): [64, 8]}[(module, side)]
    shape = ([1] * (rank - 2)) + rows if expert is None or rank != 2 else rows
    where = f"shared_experts.{expert}." if expert is not None else "shared_experts."
    tensors = {f"base_model.model.llm.layers.{layer}.mlp.{where}{module}.{side}.weight": shape}
    model = setup.model()
    kwargs = {"r": 8, "target_modules": ["gate_up_proj", "down_proj"], "architectures": model["architectures"],
              "model_type": model["model_type"], "n_shared_experts": 2}
    outcomes = pool_oracle_dense.load(setup, kwargs, tensors, 4, dense_layers=dense)
    raised = {(o.error_class, o.message.replace("MetaTensor", "Tensor")) for o in outcomes if not o.ok}
    theirs = {r for r in raised if r[1].startswith(("Cannot load LoRA weight", "Expected dict or 3D"))}
    adapter = {"name": "g", "adapter_config": {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["gate_up_proj", "down_proj"]},
               "tensors": {name: {"shape": s} for name, s in tensors.items()}}
    report = check(config=setup.config(), model=dict(model, num_hidden_layers=4, dense_mlp_idx=dense), adapter=adapter)
    ours = {(p.error_class, p.message) for p in report.problems if p.rule_id in POOL_RULES}
    assert ours == theirs, (raised, [(p.rule_id, p.message) for p in report.problems])
    if (factor, dense) in (((0, 0, "down_proj", "lora_B", 2), 1), ((1, None, "down_proj", "lora_B", 4), 0)):
        assert theirs, raised  # the property sees sglang raise both
