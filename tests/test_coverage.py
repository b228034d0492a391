"""Coverage: every rule of a check is checked, not applicable or not checked, and "ok" says so.

A rule is not checked when an input it reads (directly, or through a fact derived from it:
each fact field's `From` in facts/types.py) was not given or could not be read: no --model, an empty or
non-Inkling config.json, no adapter, an unreadable adapter, pickle-only weights. `--strict`
turns anything not checked, and any warning, into exit 1.
"""

from __future__ import annotations

import json
import pickle
import shutil
import typing
from pathlib import Path

import pytest

from inkling_compat import check
from inkling_compat.engine import coverage
from inkling_compat.engine.evaluator import FAST
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.facts import types
from inkling_compat.fleet import check_fleet
from inkling_compat.report.model import Coverage, Report
from in_process import run_main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SERVE, MODEL, PEFT, POOL = (str(EXAMPLES / n) for n in ("serve.yaml", "config.json", "adapter", "adapter_pool.yaml"))
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32}
STATUSES = {"checked", "not_applicable", "not_checked"}


def the_plan():
    return FAST.plan(load_rules(), "0.5.23")  # (the plan the checks use, kept by the fast evaluator)


def reads(rule_id: str) -> frozenset[str]:
    compiled = next(c for c in the_plan().ordered if c.rule.id == rule_id)
    return coverage.rule_reads(compiled)[0]


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process (tests/in_process.py)."""
    return lambda *args: run_main(capsys, *args)


def pickle_adapter(folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "adapter" / "adapter_config.json", folder / "adapter_config.json")
    (folder / "adapter_model.bin").write_bytes(b"not opened")
    return folder


# --- the mapping from facts to inputs ------------------------------------------------------


def _declared_fields() -> list[tuple[str, typing.Any]]:
    """(path, field) of every fact field, depth first (a list's elements included)."""
    out: list[tuple[str, typing.Any]] = []

    def walk(model: type, prefix: str, seen: tuple[type, ...]) -> None:
        for name, field in model.model_fields.items():
            out.append((f"{prefix}.{name}", field))
            for sub in types._models_in(field.annotation):
                if sub not in seen:
                    walk(sub, f"{prefix}.{name}", seen + (sub,))

    walk(types.Facts, "facts", ())
    for form in types.ADAPTER_FORMS:
        walk(form, "adapter_facts", ())
    return out


@pytest.mark.parametrize("path", sorted({p for p, f in _declared_fields() if types._declared(f) is not None}))
def test_every_declared_input_is_an_input_coverage_knows(path):
    for field in [f for p, f in _declared_fields() if p == path]:
        declared = types._declared(field)
        assert declared is None or set(declared) <= set(coverage.INPUTS)


def test_every_global_and_adapter_fact_says_what_it_is_derived_from():
    models = [types.Facts, *types.ADAPTER_FORMS]
    assert [(m.__name__, name) for m in models for name, field in m.model_fields.items() if types._declared(field) is None] == []


def test_an_input_that_is_not_one_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="unknown inputs"):
        types.From("modle")


def test_paths_map_to_inputs():
    # A server argument's own value is an input of its own (a launch file may not define it);
    # facts derived from the config read the typed fields together ("config-facts").
    assert coverage.path_inputs(("config", "tp_size")) == ("config", "value:tp_size")
    assert coverage.path_inputs(("config", "arguments", "port")) == ("config", "value:port")
    assert coverage.path_inputs(("env", "SGLANG_EXPERIMENTAL_LORA_OPTI")) == ("config",)
    assert coverage.path_inputs(("facts", "sink", "sink_class")) == ("config", "model", "config-facts")
    assert coverage.path_inputs(("facts", "sink", "backend_name")) == ("config", "config-facts")  # the longest prefix decides
    assert coverage.path_inputs(("facts", "lora_paths", "exists")) == ("config", "config-facts")  # a method call on a fact
    assert set(coverage.path_inputs(("adapter_facts", "pool_fit", "kind"))) == {"adapter", "weights", "config", "model", "config-facts"}
    assert coverage.path_inputs(("adapter_facts", "use_dora")) == ("adapter",)
    assert coverage.path_inputs(("adapter", "tensors")) == ("adapter", "weights")
    assert coverage.path_inputs(("input", "unknown_keys")) == ()


def test_what_a_rule_reads_is_derived_from_its_expressions():
    assert reads("inkling-attn-heads-divisible-by-tp") >= {"config", "model"}
    assert "model" not in reads("adapter-dora") and "weights" not in reads("adapter-dora")
    assert "weights" in reads("adapter-layer-out-of-range")
    assert reads("unknown-config-key") == frozenset()


# --- statuses -----------------------------------------------------------------------------


def test_the_bundled_example_is_checked_in_full():
    for adapter in (PEFT, POOL):
        report = check(SERVE, adapter, model=MODEL)
        cov = report.coverage
        assert set(cov.status) == {c.rule.id for c in the_plan().ordered}
        assert set(cov.status.values()) <= STATUSES
        assert cov.not_checked == 0 and cov.reasons == {}, cov.reasons
        assert cov.checked > 0 and cov.checked + cov.not_applicable == len(cov.status)
        assert report.passes(strict=True)


def test_no_model_leaves_the_model_checks_not_checked():
    report = check(SERVE, PEFT)
    cov = report.coverage
    assert report.ok and list(cov.reasons) == ["no --model"]
    ids = cov.reasons["no --model"]
    assert "inkling-attn-heads-divisible-by-tp" in ids and "inkling-dtype-bf16" in ids
    assert all("model" in reads(rule_id) for rule_id in ids)
    assert cov.status["adapter-dora"] == "checked"  # reads the adapter and the config only
    assert cov.checked + cov.not_applicable + cov.not_checked == len(cov.status)
    assert not report.passes(strict=True)


def test_a_false_when_over_a_placeholder_is_not_checked_not_not_applicable():
    # The placeholder model has no shared experts, so every sink rule's `when` is false on it:
    # that says nothing about the real model.
    with_model, without = check(SERVE, POOL, model=MODEL).coverage, check(SERVE, POOL).coverage
    assert with_model.status["sink-v2-pool-rebind-invalid"] == "not_applicable"  # a legacy sink, really
    assert without.status["sink-v2-pool-rebind-invalid"] == "not_checked"


@pytest.mark.parametrize("model", ["/dev/null", {}, "EMPTY_FILE"])
def test_an_empty_model_config_is_not_checked_and_said(model, tmp_path):
    if model == "EMPTY_FILE":
        (tmp_path / "config.json").write_text("{}", encoding="utf-8")
        model = str(tmp_path)  # a model folder holding `{}`
    report = check(SERVE, PEFT, model=model)
    assert list(report.coverage.reasons) == ["model config is empty"]
    warning = next(p for p in report.problems if p.rule_id == "model-not-inkling")
    assert warning.severity == "warning" and warning.origin == "inkling-compat"
    assert "the file sets none of the config.json fields the checks read" in warning.message


def test_a_llama_config_is_named_once_and_its_inkling_checks_do_not_apply():
    """Another model is not a problem: the Inkling-only checks are not applicable, said once in
    a note; the checks that read the model config for Inkling's fields are not checked."""
    report = check(SERVE, PEFT, model=LLAMA)
    assert list(report.coverage.reasons) == ["model is not Inkling (LlamaForCausalLM)"]
    assert [p.rule_id for p in report.problems] == []
    assert report.coverage.notes == ("the model is LlamaForCausalLM: the Inkling checks do not apply; the general LoRA and server-argument checks ran",)
    inkling_only = {c.rule.id for c in the_plan().ordered if c.rule.inkling_only}
    assert {i for i, s in report.coverage.status.items() if s == "not_applicable"} >= inkling_only
    assert not inkling_only & set(report.coverage.reasons["model is not Inkling (LlamaForCausalLM)"])
    assert report.coverage.status["adapter-dora"] == "checked" and report.coverage.status["lora-needs-rank-and-targets"] == "checked"
    assert report.ok and not report.passes(strict=True)
    text = str(report)
    assert "not checked (model is not Inkling (LlamaForCausalLM))" in text
    assert text.count("the Inkling checks do not apply") == 1


def test_an_inkling_mtp_config_is_inkling():
    report = check(SERVE, PEFT, model={"architectures": ["InklingForConditionalGenerationMTP"], "hidden_size": 1536})
    assert "model-not-inkling" not in [p.rule_id for p in report.problems]
    assert report.coverage.reasons == {}


def test_no_adapter_leaves_the_adapter_rules_not_checked():
    report = check(SERVE, model=MODEL)
    cov = report.coverage
    assert list(cov.reasons) == ["no adapter"]
    adapter_ids = set(the_plan().adapter_ids)
    assert adapter_ids <= set(cov.reasons["no adapter"]) | {i for i, s in cov.status.items() if s == "not_applicable"}
    assert cov.status["adapter-dora"] == "not_checked"


def test_an_empty_server_config_is_not_a_bare_ok():
    report = check({}, model=MODEL)
    text = str(report)
    assert "LoRA is not enabled" in text
    summary = text.splitlines()[-1]
    assert summary.startswith("ok: no errors (0 warning(s)); ") and " checked" in summary and "not applicable" in summary
    # LoRA off: an adapter rule whose `when` is false without any adapter does not apply.
    assert report.coverage.status["adapter-dora"] == "not_applicable"
    assert report.coverage.status["inkling-attn-heads-divisible-by-tp"] == "checked"


def test_pickle_weights_leave_the_tensor_checks_not_checked(tmp_path):
    report = check(SERVE, str(pickle_adapter(tmp_path / "old")), model=MODEL)
    cov = report.coverage
    assert list(cov.reasons) == ["pickle weights, never opened"]
    assert cov.status["adapter-layer-out-of-range"] == "not_checked"
    assert cov.status["adapter-dora"] == "checked" and cov.status["adapter-weights-pickle"] == "checked"
    assert all("weights" in reads(rule_id) for rule_id in cov.reasons["pickle weights, never opened"])
    assert [p.rule_id for p in report.problems] == ["adapter-weights-pickle"]
    assert report.ok and not report.passes(strict=True)


def test_a_hand_written_peft_manifest_without_tensors_is_not_checked_for_them():
    manifest = {"name": "manual", "adapter_config": {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}}
    cov = check(SERVE, manifest, model=MODEL).coverage
    assert list(cov.reasons) == ["no tensors stated"]


def test_a_fleet_counts_each_adapter(tmp_path):
    fleet = tmp_path / "fleet"
    shutil.copytree(EXAMPLES / "adapter", fleet / "good")
    pickle_adapter(fleet / "old")
    (fleet / "broken").mkdir()
    (fleet / "broken" / "adapter_config.json").write_text("{", encoding="utf-8")
    report = check_fleet(SERVE, [str(fleet)], model=MODEL)
    per = {a["name"]: a["coverage"] for a in report.by_adapter()}
    assert per["good"]["not_checked"] == 0 and per["good"]["checked"] > 0
    assert set(per["old"]["not_checked_reasons"]) == {"pickle weights, never opened"}
    assert set(per["broken"]["not_checked_reasons"]) == {"adapter could not be read"}
    assert per["broken"]["checked"] == 1  # adapter-file-unreadable itself
    # A rule not checked for one adapter is not checked for the fleet.
    assert report.coverage.status["adapter-layer-out-of-range"] == "not_checked"
    assert set(report.coverage.reasons) == {"pickle weights, never opened", "adapter could not be read"}


def test_a_rule_after_one_that_fired_is_not_reached():
    # inkling-attn-kv-heads-divisible-by-tp runs after inkling-attn-heads-divisible-by-tp.
    model = dict(json.loads(Path(MODEL).read_text()), num_attention_heads=7, num_key_value_heads=3)
    report = check({"tp_size": 2}, model=model)
    assert "inkling-attn-heads-divisible-by-tp" in [p.rule_id for p in report.problems]
    assert report.coverage.status["inkling-attn-kv-heads-divisible-by-tp"] == "not_checked"
    assert "inkling-attn-kv-heads-divisible-by-tp" in report.coverage.reasons["not reached: inkling-attn-heads-divisible-by-tp comes first"]


# A rule that fires on any of its examples is checked: tests/test_rule_examples.py.


# --- the report, text and JSON -------------------------------------------------------------


def test_text_summary_says_what_was_not_checked():
    line = str(check(SERVE, PEFT)).splitlines()[-1]
    cov = check(SERVE, PEFT).coverage
    assert line == (
        f"ok: no errors (0 warning(s)); {cov.checked} checked, {cov.not_applicable} not applicable, "
        f"{cov.not_checked} not checked (no --model); sglang 0.5.23 (the newest supported: none installed, pinned or in an image tag)"
    )


def test_json_has_the_coverage():
    data = check(SERVE, PEFT).to_dict()
    cov = data["coverage"]
    assert set(cov) == {"checked", "not_applicable", "not_checked", "not_checked_reasons", "notes", "rules"}
    assert cov["not_checked"] == len(cov["not_checked_reasons"]["no --model"]) > 0
    assert cov["checked"] + cov["not_applicable"] + cov["not_checked"] == len(cov["rules"])
    assert data["strict"] is False and data["exit_code"] == 0 and "strict_failures" not in data
    assert data["adapters"][0]["coverage"]["not_checked_reasons"]["no --model"] > 0


def test_a_report_built_by_hand_has_no_coverage():
    report = Report()
    assert report.coverage == Coverage() and report.coverage.summary() == ""
    assert str(report) == "ok: no errors (0 warning(s)), 0 checks; sglang 0.5.23"
    assert report.passes(strict=True)


def test_coverage_survives_pickle_and_replace():
    report = check(SERVE, PEFT)
    again = pickle.loads(pickle.dumps(report))
    assert again.coverage == report.coverage and again.coverage.reasons == report.coverage.reasons
    strict = report.replace(strict=True)
    assert strict.coverage is report.coverage and strict.exit_code == 1 and report.exit_code == 0


# --- --strict -------------------------------------------------------------------------------


def test_strict_passes_the_full_example(run_cli):
    result = run_cli("check", "--config", SERVE, "--model", MODEL, "--adapter", PEFT, "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--strict: passes" in result.stdout


def test_strict_fails_on_not_checked_and_says_why(run_cli):
    plain = run_cli("check", "--config", SERVE, "--adapter", PEFT)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    strict = run_cli("check", "--config", SERVE, "--adapter", PEFT, "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "--strict: fails:" in strict.stdout and "not checked (no --model)" in strict.stdout
    doc = json.loads(run_cli("check", "--config", SERVE, "--adapter", PEFT, "--strict", "--format", "json").stdout)
    assert doc["ok"] is True and doc["strict"] is True and doc["exit_code"] == 1
    assert any("not checked (no --model)" in f for f in doc["strict_failures"])


def test_strict_fails_on_a_warning_and_in_a_fleet(tmp_path, run_cli):
    fleet = tmp_path / "fleet"
    shutil.copytree(EXAMPLES / "adapter", fleet / "good")
    pickle_adapter(fleet / "old")
    args = ["check", "--config", SERVE, "--model", MODEL, "--adapter-dir", str(fleet)]
    assert run_cli(*args).returncode == 0
    strict = run_cli(*args, "--strict", "--format", "json")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    failures = json.loads(strict.stdout)["strict_failures"]
    assert any(f.startswith("warning adapter-weights-pickle [old]") for f in failures)
    assert any("not checked (pickle weights, never opened)" in f for f in failures)


def test_strict_is_in_the_help(run_cli):
    result = run_cli("check", "--help")
    assert "--strict" in result.stdout and "not checked" in result.stdout


def test_fleet_text_names_an_adapter_that_is_ok_but_not_fully_checked():
    from inkling_compat.report.text import render_by_adapter

    manifest = {"adapter_config": {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}}
    report = check(SERVE, [dict(manifest, name="a"), dict(manifest, name="b")], model=MODEL)
    lines = render_by_adapter(report).splitlines()
    unchecked = report.by_adapter()[0]["coverage"]["not_checked"]
    assert unchecked > 0
    assert f"adapter a: ok ({unchecked} not checked: no tensors stated)" in lines
    assert "not checked (no tensors stated)" in lines[-1]


# --- a rule that was not checked cannot fire -------------------------------------------------


def test_a_non_inkling_model_fires_no_inkling_rule():
    """Llama's 32 heads over TP 5: InklingAttention is never built for a Llama model, so its
    head-divisibility assert is not checked, and does not fire on the Inkling defaults that
    stand in for the fields Llama's config.json lacks."""
    llama = dict(LLAMA, num_attention_heads=32, num_key_value_heads=8)
    report = check({"enable_lora": True, "tp_size": 5, "lora_backend": "triton", "max_lora_rank": 16}, model=llama)
    ids = [p.rule_id for p in report.problems]
    assert "inkling-attn-heads-divisible-by-tp" not in ids
    assert "model-not-inkling" not in ids
    assert report.coverage.status["inkling-attn-heads-divisible-by-tp"] == "not_applicable"
    # The same setup on an Inkling model does fire (12 heads over TP 5).
    inkling = check({"enable_lora": True, "tp_size": 5, "lora_backend": "triton", "max_lora_rank": 16}, model=MODEL)
    assert "inkling-attn-heads-divisible-by-tp" in [p.rule_id for p in inkling.problems]


# No rule fires on a placeholder, over every rule example: tests/test_rule_examples.py
# (and over the hostile corpus: tests/test_evaluators.py).


def test_a_bare_assert_says_what_failed():
    """sglang's bare `assert` prints "AssertionError: " and nothing more: the report keeps
    sglang's (empty) text and states the failed condition with its values."""
    from inkling_compat.report.text import render_text

    report = check({"enable_lora": True, "tp_size": 5, "lora_backend": "triton", "max_lora_rank": 16}, model=MODEL)
    heads = next(p for p in report.problems if p.rule_id == "inkling-attn-heads-divisible-by-tp")
    assert heads.message == ""
    assert heads.because == "num_attention_heads 12 is not divisible by the attention TP size 5"
    assert "AssertionError: (bare assert: num_attention_heads 12 is not divisible by the attention TP size 5)" in render_text(report)
    assert heads.to_dict()["because"] == heads.because
