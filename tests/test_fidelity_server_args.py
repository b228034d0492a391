"""Differential property: the server_args rules against sglang 0.5.23's own LoRA argument checks.

The oracle (tests/oracle/sglang_server_args.py) runs, from the sglang wheel, argparse with the
`choices` of arg_groups/fields/lora.py and `check_lora_server_args` of arg_groups/lora_hook.py
on generated server configs. For every case:

* argparse refuses a flag  <=>  check() reports an argparse error from rules/server_args, and
  the first one is argparse's text exactly;
* check_lora_server_args raises  <=>  check() reports an sglang error from rules/server_args,
  and the first one has its exception class and exactly its text;
* the warnings it logs (when it gets past its first assertion) are the server_args warnings
  check() reports, in order.

The cases are the values sglang's checks see after the resolution hooks that run before
them (docs/fidelity.md): the speculative algorithm in its resolved upper-case name (not NEXTN,
not UNO), attention DP as --attn-dp-size (not the deprecated --dp-size spelling), no mxfp8
quantization with a lora_* MoE runner.

Every earlier release 0.5.16-0.5.22 runs the same property through its own checks and its whole
parser, checked with check(sglang_version=R) (`test_server_args_agree_with_each_earlier_release`;
0.5.22 and 0.5.21 here, the others under INKLING_COMPAT_ALL_RELEASES=1: make fidelity-all).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.report.model import Report
from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION, SGLANG_RELEASES
from oracle import sglang_server_args, tally
from oracle.sglang_sink import find_wheel
from oracle.require import load_or_skip
from test_fidelity import run_property, verdict

RULES_DIR = Path(__file__).resolve().parent.parent / "rules" / "server_args"
SERVER_ARGS_RULES = frozenset(p.stem for p in RULES_DIR.glob("*.yaml") if not p.stem.startswith("_"))
MODEL = {
    "architectures": ["InklingForConditionalGeneration"],
    "model_type": "inkling",
    "hidden_size": 256,
    "intermediate_size": 128,
    "shared_expert_sink": True,
    "n_shared_experts": 2,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
}
ROCM = {"device": "rocm", "name": "MI300X", "compute_capability": [9, 4]}
CUDA = {"device": "cuda", "name": "H200", "compute_capability": [9, 0]}

# Allowed disagreements: none. (A rule listed here would need its reason in docs/fidelity.md.)
ALLOWED: dict[str, str] = {}


@pytest.fixture(scope="module")
def server_args_oracle() -> sglang_server_args.SglangServerArgs:
    oracle = load_or_skip(sglang_server_args.load, "server-args")
    tally.META["lora_hook.py sha256"] = oracle.hook_sha256[:16]
    return oracle


# Each option list holds the default several times, so most cases differ from a working
# config in a few fields and reach the later checks.
def _options(default: Any, *others: Any, weight: int = 2) -> Any:
    return st.sampled_from([default] * weight + list(others))


_PATH_ITEMS = st.sampled_from(
    ["sink=/adapters/sink", "/adapters/plain", {"lora_name": "a", "lora_path": "/p"}, {"lora_name": "a", "lora_path": "/p", "pinned": True},
     {"lora_name": "a"}, {"lora_path": "/p"}, 3, None, ["nested"]]
)
_FIELDS: dict[str, Any] = {
    "enable_lora": _options(True, None, False, weight=3),
    "enable_lora_overlap_loading": _options(None, True, False),
    "max_lora_rank": _options(16, None, 0, 1, 64),
    "lora_target_modules": _options(
        ["gate_up_proj", "down_proj"], None, [], ["all"], ["all", "all"], ["all", "gate_up_proj"], ["gate_up_proj", "w13"],
        ["mlp"], ["qkvr", "wo_ud", "lm_head"], ["ALL"],
    ),
    "max_loaded_loras": _options(None, 0, 1, 2, 3, 4, 7, 8, 9, 16, 17),
    "max_loras_per_batch": _options(8, -1, 0, 1, 2, 4, weight=4),
    "lora_eviction_policy": _options("lru", "fifo", "LRU", ""),
    "lora_backend": _options("triton", "csgmv", "triton_v2", "torch_native", "ascend", "triton-v2", "uno_cublas", "Triton", weight=3),
    "max_lora_chunk_size": _options(16, None, 8, 24, 32, 64, 128, 256, 0, -16),
    "lora_use_virtual_experts": _options(False, True),
    "lora_drain_wait_threshold": _options(0.0, -1.0, -0.5, 2.0, 1e-9),
    "moe_runner_backend": _options("auto", "triton", "lora_triton", "lora_cutedsl", "lora_marlin", "experimental_sgl_trtllm", "flashinfer_cutlass", weight=4),
    "speculative_moe_runner_backend": _options(None, "triton", "lora_triton", "experimental_sgl_trtllm", weight=4),
    "speculative_algorithm": _options(None, "NGRAM", "EAGLE", "EAGLE3", "DFLASH", "DSPARK", "STANDALONE", "FROZEN_KV_MTP", weight=4),
    "speculative_adaptive": _options(False, True, weight=3),
    "attn_dp_size": _options(1, 2, 4, weight=4),
    "enable_pdmux": _options(False, True, weight=4),
    "enable_two_batch_overlap": _options(False, True, weight=4),
    "quantization": _options(None, "fp8", "modelopt_fp4", "awq", "w8a8_int8", weight=3),
    "moe_a2a_backend": _options("none", "deepep", weight=4),
    "ep_join_mode": _options(None, "scale", weight=5),
    "enable_eplb": _options(False, True, weight=5),
    "init_expert_location": _options("trivial", "static", weight=5),
    "ep_num_redundant_experts": _options(0, 1, weight=5),
}
_ENV: dict[str, Any] = {
    "SGLANG_EXPERIMENTAL_LORA_OPTI": _options(False, True, weight=4),
    "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": _options(False, True, weight=4),
    "SGLANG_RAGGED_VERIFY_MODE": _options("static", "dynamic", weight=3),
}
_LEAVE_OUT = st.integers(0, 2)  # how often a field is left to sglang's default


@st.composite
def server_arg_cases(draw: Any) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name, strategy in _FIELDS.items():
        if draw(_LEAVE_OUT) > 0:
            config[name] = draw(strategy)
    kind = draw(st.integers(0, 5))  # --lora-paths: absent, a list, a dict, another type
    if kind == 1 or kind == 2:
        config["lora_paths"] = draw(st.lists(_PATH_ITEMS, max_size=4))
    elif kind == 3:
        config["lora_paths"] = draw(st.sampled_from([{}, {"a": "/p"}, {"a": "/p", "b": "/q"}]))
    elif kind == 4:
        config["lora_paths"] = draw(st.sampled_from(["sink=/adapters/sink", "", 3, 0, True, 1.5]))
    env = {name: draw(strategy) for name, strategy in _ENV.items()}
    return {"config": config, "env": env, "rocm": draw(_options(False, True, weight=5))}


def _describe(report: Report) -> str:
    return "; ".join(f"{p.rule_id}[{p.origin}/{p.severity}]: {p.message}" for p in report.problems if p.rule_id in SERVER_ARGS_RULES) or "no server_args problems"


_STOPPING = frozenset(compiled.rule.id for compiled in load_rules() if compiled.rule.stops)  # (sglang parses nothing after these)


def compare_case(oracle: Any, case: dict[str, Any], release: str | None = None) -> tuple[bool, str, str]:
    """(agreed, outcome label, detail) for one case, checked as `release` (default: 0.5.23)."""
    parsed = oracle.parse(case["config"])
    called = oracle.check(case["config"], case["env"], case["rocm"])
    version = {} if release is None else {"sglang_version": release}
    report = check(config={**case["config"], "env": case["env"]}, model=MODEL, platform=ROCM if case["rocm"] else CUDA, **version)
    ours = [p for p in report.problems if p.rule_id in SERVER_ARGS_RULES and p.rule_id not in ALLOWED]
    argparse_errors = [p for p in ours if p.origin == "argparse" and p.severity == "error"]
    sglang_errors = [p for p in ours if p.origin == "sglang" and p.severity == "error"]
    warnings = [p.message for p in ours if p.severity == "warning"]
    if parsed.ok:
        parse_agrees = not argparse_errors
    else:
        parse_agrees = bool(argparse_errors) and argparse_errors[0].message == parsed.message
    if called.ok:
        call_agrees = not sglang_errors
    else:
        call_agrees = bool(sglang_errors) and (sglang_errors[0].error_class, sglang_errors[0].message) == (called.error_class, called.message)
    # sglang logs its warnings after the slot-count assertion only.
    warned_agrees = called.message == "max_loras_per_batch must be positive" or tuple(warnings) == called.warnings
    if not parsed.ok and parse_agrees and argparse_errors[0].rule_id in _STOPPING:
        # argparse stopped the launch: sglang's checks (the oracle's call) never run
        call_agrees = warned_agrees = not sglang_errors and not warnings
    label = ("argparse refuses" if not parsed.ok else "argparse accepts") + ", " + (
        f"sglang raises {called.error_class}" if not called.ok else "sglang accepts"
    )
    detail = (
        f"{json.dumps(case, default=str)} -> argparse: {parsed.message or 'ok'}; sglang: "
        f"{called.error_class}({called.message!r}) l.{called.line} warnings {list(called.warnings)}; checker: {_describe(report)}"
    )
    return parse_agrees and call_agrees and warned_agrees, label, detail


@pytest.mark.fidelity
def test_server_args_agree_with_sglang(server_args_oracle: sglang_server_args.SglangServerArgs) -> None:
    prop = "check_lora_server_args + argparse choices"

    def compare(case: dict[str, Any]) -> None:
        agreed, label, detail = compare_case(server_args_oracle, case)
        verdict(prop, agreed, label, lambda: detail)

    run_property(prop, server_arg_cases(), compare, default_examples=1000)


@pytest.mark.fidelity
def test_server_args_oracle_sees_each_check(server_args_oracle: sglang_server_args.SglangServerArgs) -> None:
    """The oracle is sglang's code, not an echo of the rules: known inputs give sglang's texts."""
    env = {"SGLANG_EXPERIMENTAL_LORA_OPTI": False, "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": False, "SGLANG_RAGGED_VERIFY_MODE": "static"}
    assert server_args_oracle.check({"max_loras_per_batch": 0}, env, False).message == "max_loras_per_batch must be positive"
    v2 = {"enable_lora": True, "lora_backend": "triton_v2", "max_lora_rank": 8, "lora_target_modules": ["all"]}
    assert server_args_oracle.check(v2, env, True).message == "--lora-backend triton_v2 does not yet support ROCm"
    assert server_args_oracle.check(v2, env, False).ok
    assert server_args_oracle.parse({"lora_backend": "x"}).message.startswith("argument --lora-backend: invalid choice: 'x'")


# --- every supported release ---------------------------------------------------------------------
#
# The same property through each release's own checks (oracle.sglang_server_args.load_release:
# 0.5.16-0.5.18's ServerArgs.check_lora_server_args method, 0.5.19-0.5.22's lora_hook.py) and its
# whole argument parser, checked as that release. The cases leave out the fields the release has
# no argument for (--attn-dp-size before 0.5.22). 0.5.23 is the property above; the next two
# releases run here everywhere, the others under INKLING_COMPAT_ALL_RELEASES=1 (make fidelity-all).

EARLIER = [r for r in SGLANG_RELEASES if r != SGLANG_DEFAULT_VERSION]
ALL_RELEASES = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
EARLIER_PARAMS = [
    pytest.param(r, marks=() if i < 2 or ALL_RELEASES else pytest.mark.skip(reason="older release: make fidelity-all"))
    for i, r in enumerate(EARLIER)
]


@pytest.mark.fidelity
@pytest.mark.parametrize("release", EARLIER_PARAMS)
def test_server_args_agree_with_each_earlier_release(release: str) -> None:
    oracle = load_or_skip(lambda: sglang_server_args.load_release(find_wheel(version=release)), f"{release} server-args")
    assert oracle.release == release
    has = {a.dest for a in oracle.argparse_oracle.parser._actions}
    prop = f"check_lora_server_args + argparse@{release}"

    def compare(case: dict[str, Any]) -> None:
        case = {**case, "config": {k: v for k, v in case["config"].items() if k in has or k == "lora_paths"}}
        agreed, label, detail = compare_case(oracle, case, release)
        verdict(prop, agreed, label, lambda: detail)

    run_property(prop, server_arg_cases(), compare, default_examples=300 if ALL_RELEASES else 150)


def test_the_release_oracles_see_each_release_s_checks() -> None:
    """Known inputs give each kind of release its own text: the method of 0.5.16-0.5.18 refuses
    EAGLE with LoRA, 0.5.19's hook takes it; 0.5.22's parser refuses triton_v2."""
    env = {"SGLANG_EXPERIMENTAL_LORA_OPTI": False, "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": False, "SGLANG_RAGGED_VERIFY_MODE": "static"}
    eagle = {"enable_lora": True, "speculative_algorithm": "EAGLE", "max_lora_rank": 8, "lora_target_modules": ["all"]}
    cases = {
        "0.5.22": lambda o: o.parse({"lora_backend": "triton_v2"}).message.startswith("argument --lora-backend: invalid choice: 'triton_v2'"),
        "0.5.21": lambda o: o.check(eagle, env, False).ok and o.check({"max_loras_per_batch": 0}, env, False).message == "max_loras_per_batch must be positive",
    }
    if ALL_RELEASES:
        cases["0.5.18"] = lambda o: o.check(eagle, env, False).message == "Currently LoRA is only compatible with NGRAM speculative decoding."
    for release, holds in cases.items():
        oracle = load_or_skip(lambda: sglang_server_args.load_release(find_wheel(version=release)), f"{release} server-args")
        assert holds(oracle), release


# --- LoRA launch commands, end to end, per release ------------------------------------------------
#
# A launch command of LoRA flags goes through release R's own parser and, when it parses, R's own
# check_lora_server_args on the namespace it gives; the checker checks the same words with
# check(argv=..., sglang_version=R). No resolution hook of sglang runs between the two for these
# flags (the speculative, attention-DP and MoE-runner fields stay at their defaults here), so the
# namespace is what check_lora_server_args sees.

_LAUNCH_FIELDS = (
    "enable_lora", "max_lora_rank", "lora_target_modules", "max_loaded_loras", "max_loras_per_batch",
    "lora_eviction_policy", "lora_backend", "max_lora_chunk_size", "lora_drain_wait_threshold", "lora_paths",
)
_LAUNCH_PATHS = st.lists(st.sampled_from(["sink=/adapters/sink", "/adapters/plain", "a=/p", '{"lora_name": "c", "lora_path": "/x/c"}', '{"lora_name": "c"}']), min_size=1, max_size=3)


@st.composite
def lora_launch_commands(draw: Any) -> list[str]:
    argv = ["--model-path", "/m"]
    for name in draw(st.permutations(_LAUNCH_FIELDS)):
        if draw(_LEAVE_OUT) == 0:
            continue
        flag = "--" + name.replace("_", "-")
        if name == "enable_lora":
            argv += [flag] if draw(st.booleans()) else []
        elif name == "lora_paths":
            argv += [flag, *draw(_LAUNCH_PATHS)]
        else:
            value = draw(_FIELDS[name])
            if value is None:
                continue
            argv += [flag, *(str(v) for v in value)] if isinstance(value, list) else [flag, str(value)]
    return argv


LAUNCH_RELEASES = [
    pytest.param(r, marks=() if i < 3 or ALL_RELEASES else pytest.mark.skip(reason="older release: make fidelity-all"))
    for i, r in enumerate(SGLANG_RELEASES)
]
_QUIET_ENV = {"SGLANG_EXPERIMENTAL_LORA_OPTI": False, "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": False, "SGLANG_RAGGED_VERIFY_MODE": "static"}


@pytest.mark.fidelity
@pytest.mark.parametrize("release", LAUNCH_RELEASES)
def test_lora_launch_commands_agree_with_each_release(release: str) -> None:
    from oracle import sglang_argparse

    oracle = load_or_skip(lambda: sglang_server_args.load_release(find_wheel(version=release)), f"{release} server-args")
    prop = f"LoRA launch command@{release}"

    def compare(argv: list[str]) -> None:
        verdict_, parsed = sglang_argparse.parse(oracle.argparse_oracle, list(argv))
        report = check(argv=["python", "-m", "sglang.launch_server", *argv], model=MODEL, platform=CUDA, sglang_version=release)
        ours = [p for p in report.problems if p.rule_id in SERVER_ARGS_RULES and p.severity == "error"]
        if verdict_ == "refused":
            # the parse stops the launch: the checker's first error is its refusal, in its words
            # (an action's AssertionError, LoRAPathAction's, reads as its traceback ends)
            first = ours[0] if ours else None
            agreed = first is not None and parsed in (first.message.split(" (did you mean")[0], f"{first.error_class}: {first.message}")
            label, said = "argparse refuses", parsed
        else:
            called = oracle.check({k: v for k, v in parsed.items()}, _QUIET_ENV, False)
            errors = [p for p in ours if p.origin == "sglang"]
            if called.ok:
                agreed = not ours
            else:
                agreed = not [p for p in ours if p.origin == "argparse"] and bool(errors) and (errors[0].error_class, errors[0].message) == (called.error_class, called.message)
            label = "sglang accepts" if called.ok else f"sglang raises {called.error_class}"
            said = f"{called.error_class}({called.message!r})"
        verdict(prop, agreed, label, lambda: f"{argv} -> sglang {release}: {said}; checker: {_describe(report)}")

    run_property(prop, lora_launch_commands(), compare, default_examples=300 if ALL_RELEASES else 100)
