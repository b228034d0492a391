"""Differential properties for the sites the raise-site audit added rules for, where sglang's
own code runs on the CPU from the 0.5.23 wheel:

* `LoRAPathAction` (arg_groups/argparse_actions.py, executed whole: it imports only argparse,
  json and logging) on generated --lora-paths lists: it raises AssertionError or
  json.JSONDecodeError  <=>  check() reports lora-paths-json-missing-keys /
  lora-paths-json-invalid, with exactly its text;
* the --served-model-name check of `check_server_args` (arg_groups/validation_hook.py: the one
  `if` statement that tests served_model_name, cut out of the function with `ast`, run with
  `is_runai_obj_uri` and its SUPPORTED_SCHEMES from utils/runai_utils.py): it raises  <=>  check()
  reports served-model-name-colon, with exactly its text.
"""

from __future__ import annotations

import argparse
import ast
import json
import textwrap
import types
from typing import Any, Callable

import pytest
from hypothesis import given, settings
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


def _load_policy() -> Callable[..., None]:
    wheel = sglang_sink.find_wheel()
    stubs = {"sglang.srt.arg_groups.overrides": {"resolving_view": lambda server_args: server_args}}
    module = wheel_source.exec_module(wheel_source.read(wheel, POLICY), f"{wheel}/{POLICY}", "sglang_marlin_policy", stubs)
    return module.validate_experimental_sgl_marlin_server_args


@pytest.fixture(scope="module")
def marlin_policy() -> Callable[..., None]:
    return load_or_skip(_load_policy, "experimental_sgl_marlin policy")


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
