"""Named guards and rule families (engine/definitions.py) are load-time shorthand: every rule
expands to exactly the rule it was when written out in full (snapshot of commit 92d9af3, before
guards and families existed), and a reference to an unknown guard or family is a broken rule file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from inkling_compat import cli
from inkling_compat.engine import definitions
from inkling_compat.engine import rules as rulebook
from inkling_compat.engine.rules import load_rules, rule_files, rules_dir
from inkling_compat.errors import RuleFileError

# Per rule id, computed with the loader of 92d9af3 from the rule files of 92d9af3: the `when`,
# the compiled expression (also of each sglang-version variant) and a hash of the whole rule.
SNAPSHOT = json.loads((Path(__file__).parent / "data" / "rules_92d9af3.json").read_text(encoding="utf-8"))
# Fact paths renamed since 92d9af3 (issue 9: typed facts), new -> old. A rename changes no
# expression's structure; compare with the names the snapshot used. Add a line per rename.
RENAMED = {
    "facts.pool": "facts.sink.expected_pool",
}
_RENAMED = re.compile(r"(?<![\w.])(" + "|".join(sorted(map(re.escape, RENAMED), key=len, reverse=True)) + r")(?!\w)")


def _old_names(text: str) -> str:
    return _RENAMED.sub(lambda m: RENAMED[m.group(1)], text)


RULES = {c.rule.id: c for c in load_rules()}
RAW = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in rule_files()}
DEFS = definitions.load_definitions(rules_dir())


# Rule fields added since 92d9af3: not part of what a rule expanded to then.
NEW_FIELDS = {"any_model", "fix", "because"}  # fix: how to repair a problem, not what is checked


def _rule_hash(rule) -> str:
    data = json.dumps(rule.model_dump(mode="json", by_alias=True, exclude=NEW_FIELDS), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(_old_names(data).encode()).hexdigest()


def _guards_of(rule_id: str) -> list[str]:
    raw = RAW[rule_id]
    family = DEFS.families[raw["family"]].shared if "family" in raw else {}
    return list(family.get("guards", [])) + list(raw.get("guards", []))


# Rules written since 92d9af3 (not in the snapshot; their expressions have no "before").
ADDED = {
    "adapter-normalize-cat-mismatch",  # torch.cat of split gate/up factors (found by tests/test_fidelity_adapter.py)
    # Validated input (issue 10 item 1): adapter_config.json values sglang reads unchecked.
    "adapter-scaling-fails",
    "adapter-rank-not-comparable",
    "adapter-peft-type-not-string",
    "adapter-target-module-not-string",
    "adapter-rank-float",
    "adapter-rank-negative",
    "adapter-config-type-mismatch",
    "lora-pool-rank-negative",
    "lora-max-lora-rank-zero",
    "adapter-scaling-not-finite",
    "model-not-inkling",  # coverage (issue 10 item 2): a config.json that is not Inkling's, or empty
    # FusedMoE's divisibility asserts for Inkling's routed experts (found by the TP runtime, issue 13).
    "inkling-moe-intermediate-divisible-by-moe-tp",
    "inkling-moe-routed-experts-divisible-by-ep",
    # Issue 10's open findings (F10, P1, R50): values sglang accepts and then fails on.
    "inkling-moe-no-routed-experts",
    "lora-paths-pinned-not-int",
    "lora-pool-too-large",
    # Configuration-dependent raise sites the audit (tests/test_audit.py) found without a rule.
    "lora-dp-attention-overlap-loading",
    "lora-dp-attention-attn-tp",
    "lora-dp-attention-backend-unsupported",
    "lora-triton-v2-needs-lora-moe-runner",
    "lora-moe-runner-targets-lack-moe",
    "lora-moe-runner-sm90-sm100-only",
    "served-model-name-colon",
    "lora-paths-json-missing-keys",
    "lora-paths-json-invalid",
    "adapter-extra-embeddings-without-added-tokens",
    "marlin-ep-needs-standard-dispatch",
    "marlin-lora-needs-virtual-experts",
    "marlin-lora-needs-triton-backend",
    "marlin-ep-needs-trivial-placement",
    # The rest of the audit's configuration-dependent sites (issue 19).
    "lora-moe-runner-fp8-needs-block-quant",
    "lora-moe-runner-rank-above-256",
    "lora-moe-runner-fp8-block-128",
    "lora-moe-runner-fp8-dims-128",
    "marlin-moe-lora-quant-method-unsupported",
    "marlin-lora-runner-needs-sm90",
    "experimental-sgl-marlin-quant-method-unsupported",
    "experimental-sgl-marlin-needs-sm90",
    "experimental-sgl-marlin-needs-standard-dispatcher",
    "experimental-sgl-trtllm-fp8-needs-block-quant",
    "experimental-sgl-trtllm-no-mxfp8",
    "experimental-sgl-trtllm-bf16-needs-virtual-experts",
    "experimental-sgl-trtllm-nvfp4-needs-virtual-experts",
    "inkling-audio-mode-not-dmel",
    "inkling-vision-encoder-not-hmlp",
    "inkling-vision-patch-size-too-small",
    "inkling-vision-temporal-patch-size-not-positive",
    "inkling-mtp-banded-needs-multi-layer-eagle",
    "inkling-dflash-layer-ids-repeated",
    "inkling-dflash-layer-ids-unsorted",
    "inkling-scattered-sconv-hidden-div-moe-tp",
    "adapter-shared-expert-on-dense-layer",
    "adapter-shared-expert-factor-not-3d",
}


# Snapshot rules corrected since 92d9af3 (a fidelity fix, not shorthand), with why: their `when`
# is still the snapshot's; their expression or another field is not (and must not be).
_EXACT_INT = "its message names the int as written (a fact's str), not the CEL value (a double past 64 bits: 1e+50)"
CHANGED = {
    "adapter-incompatible-with-pool": "--max-lora-rank 0 is a rank-0 pool (lora_manager.py l.893 `is not None`), not 'not given'; " + _EXACT_INT,
    "adapter-rank-above-max-lora-rank": _EXACT_INT,
    "adapter-rank-pattern-ignored": _EXACT_INT,
    "adapter-layer-out-of-range": _EXACT_INT,
    "adapter-pool-shape-mismatch": "the shapes read the facts' text (pool_fit.buffer_text, weight_text): every digit",
    "adapter-shared-outer-unexpected-format": "the shape reads pool_fit.weight_text: every digit",
    "adapter-embedding-under-eagle": "the module list is joined from adapter_facts.embedding_weight_names in its params (no stored text fact); the same message",
    "lora-max-lora-rank-zero": "yields to the copy replay's own assertion (adapter-pool-shape-mismatch) where the copy is replayed: one report",
    **{
        rule_id: "a bare assert: its params state the failed condition's values for `because`"
        for rule_id in (
            "inkling-attn-heads-divisible-by-tp", "inkling-attn-kv-heads-divisible-by-tp", "inkling-scattered-sconv-hidden-div-tp",
            "inkling-attn-backend-fa4-or-triton", "inkling-requires-mamba-extra-buffer",
        )
    },
    "adapter-pin-all-slots": "counts int(pinned) as sglang does (lora_manager.py l.319): \"pinned\": 2 counts twice, \"0\" is pinned but counts zero",
    "unknown-config-key": "a server config key is an sglang argument in any spelling; one that is not says argparse's own words (\"unrecognized arguments: --foo 16\")",
}


def test_same_rule_ids_as_before():
    assert set(RULES) == set(SNAPSHOT) | ADDED
    assert len(SNAPSHOT) == 134


@pytest.mark.parametrize("rule_id", sorted(SNAPSHOT))
def test_rule_expands_to_what_it_was(rule_id):
    compiled, before = RULES[rule_id], SNAPSHOT[rule_id]
    assert _old_names(compiled.rule.when) == before["when"]
    if rule_id in CHANGED:
        same = _old_names(compiled.expression) == before["expression"] and _rule_hash(compiled.rule) == before["rule_sha256"]
        assert not same, f"{rule_id} is in CHANGED but is the snapshot's rule"
        return
    assert _old_names(compiled.expression) == before["expression"]
    variants = {v: c.expression for v in compiled.rule.sglang_versions or () if (c := compiled.for_version(v)) is not compiled}
    variants.update(
        {v: compiled.for_version(v).expression for variant in compiled.rule.variants for v in variant.sglang_versions}
    )
    assert {v: _old_names(e) for v, e in variants.items()} == before["variant_expressions"]
    assert _rule_hash(compiled.rule) == before["rule_sha256"]  # every other field, examples included


@pytest.mark.parametrize("guard", sorted(DEFS.guards))
def test_guard_is_shared_and_expands_to_the_old_text(guard):
    users = [rid for rid in RAW if guard in _guards_of(rid)]
    assert len(users) >= 2, f"guard {guard} is used by {users}: inline it"
    expression = DEFS.guards[guard].expression
    for rid in users:
        assert expression in RULES[rid].rule.when
        if rid not in ADDED:
            assert _old_names(RULES[rid].rule.when) == SNAPSHOT[rid]["when"]


# `when` texts still written in more than one rule file: one fact, or one fact and a null check
# of one field, where a guard's name would say no more than the expression.
STILL_REPEATED = {
    "facts.lora_enabled",
    "facts.quant.is_inkling_nvfp4",
    "facts.lora_enabled && config.max_loaded_loras != null",
    "facts.lora_enabled && type(config.lora_paths) == list",
    "facts.model.dflash_layer_ids != null",
}


def test_no_when_restates_a_guard():
    for rid, raw in RAW.items():
        when = raw.get("when")
        if when is None:
            continue
        for name, guard in DEFS.guards.items():
            assert not (when == guard.expression or when.startswith(guard.expression + " && ")), (
                f"{rid}: `when` restates guard {name}; write `guards: [{name}]`"
            )


def test_no_other_when_is_written_twice():
    written = {}
    for source, when in [(rid, raw.get("when")) for rid, raw in RAW.items()] + [
        (family.file, family.shared.get("when")) for family in DEFS.families.values()
    ]:
        if when is not None:
            written.setdefault(when, []).append(source)
    repeated = {when: where for when, where in written.items() if len(where) > 1}
    assert set(repeated) <= STILL_REPEATED, {w: v for w, v in repeated.items() if w not in STILL_REPEATED}


@pytest.mark.parametrize("family", sorted(DEFS.families))
def test_family_members_get_the_shared_fields(family):
    shared = DEFS.families[family].shared
    members = [rid for rid, raw in RAW.items() if raw.get("family") == family]
    assert len(members) >= 2
    for rid in members:
        rule, own = RULES[rid].rule, RAW[rid]
        for key in ("severity", "origin", "error_class", "stage", "scope", "sglang_versions", "join"):
            if key in shared:
                assert key not in own
                value = getattr(rule, key)
                assert (value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value) == shared[key]
        for key, value in shared.get("source", {}).items():
            assert getattr(rule.source, key) == value
        for key, value in shared.get("params", {}).items():
            assert rule.params[key] == value
        for key in ("field_paths", "after", "references"):
            if key in shared:
                assert getattr(rule, key)[: len(shared[key])] == shared[key]
        if shared.get("guards"):
            assert rule.when.startswith(" && ".join(DEFS.guards[g].expression for g in shared["guards"]))
        # what makes the rule that rule stays in its own file
        for key in ("id", "title", "message", "message_pattern", "condition", "explanation", "fixes", "examples"):
            assert key in own, (rid, key)
        assert rule.id == rid


def test_v2_lora_modes_is_two_families_of_five():
    """sglang's _check_v2_lora_modes raises one message per mode, from two callers."""
    for family, option in (("v2-lora-modes-lora-backend", "--lora-backend triton_v2"), ("v2-lora-modes-moe-runner", "--moe-runner-backend {backend}")):
        members = sorted(rid for rid, raw in RAW.items() if raw.get("family") == family)
        assert len(members) == 5
        assert all(RULES[rid].rule.message.startswith(option + " does not yet support ") for rid in members)
        assert {RULES[rid].rule.source.function for rid in members} == {DEFS.families[family].shared["source"]["function"]}


# --- broken rule data -------------------------------------------------------------------------

MINIMAL = {
    "id": "demo-rule",
    "title": "A demo",
    "severity": "error",
    "origin": "sglang",
    "error_class": "ValueError",
    "message": "demo",
    "message_pattern": "demo",
    "stage": "server_args",
    "condition": "config.tp_size > 8",
    "explanation": "A demo rule.",
    "fixes": ["None."],
    "examples": {"fire": [{"description": "d", "input": {}}], "pass": [{"description": "d", "input": {}}]},
}


def _folder(tmp_path: Path, rule: dict, family: dict | None = None, guards: dict | None = None) -> Path:
    (tmp_path / "server_args").mkdir()
    (tmp_path / "server_args" / f"{rule['id']}.yaml").write_text(yaml.safe_dump(rule), encoding="utf-8")
    if family is not None:
        (tmp_path / "server_args" / f"_family-{family['family']}.yaml").write_text(yaml.safe_dump(family), encoding="utf-8")
    if guards is not None:
        (tmp_path / "_guards.yaml").write_text(yaml.safe_dump({"guards": guards}), encoding="utf-8")
    return tmp_path


GUARDS = {
    "lora-on": {"expression": "facts.lora_enabled", "description": "LoRA is enabled."},
    "either": {"expression": "config.tp_size == 2 || config.tp_size == 4", "description": "Two or four GPUs."},
}


def test_guards_expand_in_order_before_when(tmp_path):
    folder = _folder(tmp_path, dict(MINIMAL, guards=["lora-on", "either"], when="config.enable_lora == true"), guards=GUARDS)
    (compiled,) = load_rules(str(folder))
    # a guard with a top-level || is parenthesized, or && would bind first
    assert compiled.rule.when == "facts.lora_enabled && (config.tp_size == 2 || config.tp_size == 4) && config.enable_lora == true"
    assert compiled.expression == f"({compiled.rule.when}) && (config.tp_size > 8)"


def test_unknown_guard_is_a_broken_rule_file(tmp_path):
    folder = _folder(tmp_path, dict(MINIMAL, guards=["lora-on", "lora-of"]), guards=GUARDS)
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("demo-rule.yaml", "guards")
    assert "'lora-of'" in info.value.reason and "lora-on" in info.value.reason


def test_unknown_guard_exits_3_naming_file_and_field(tmp_path, monkeypatch, capsys):
    folder = _folder(tmp_path, dict(MINIMAL, guards=["no-such-guard"]), guards=GUARDS)
    monkeypatch.setattr(rulebook, "rules_dir", lambda: folder)
    load_rules.cache_clear()
    try:
        assert cli.main(["rules"]) == 3
    finally:
        load_rules.cache_clear()
    err = capsys.readouterr().err
    assert "demo-rule.yaml: guards: unknown guard 'no-such-guard'" in err


def test_unknown_family_is_a_broken_rule_file(tmp_path):
    folder = _folder(tmp_path, dict(MINIMAL, family="no-such-family"))
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("demo-rule.yaml", "family")


FAMILY = {
    "family": "demo-helper",
    "description": "A demo helper.",
    "shared": {
        "severity": "error",
        "origin": "sglang",
        "error_class": "ValueError",
        "stage": "server_args",
        "source": {"path": "python/sglang/srt/demo.py", "function": "demo"},
        "field_paths": ["config.tp_size"],
        "guards": ["lora-on"],
    },
}


def _member(**extra) -> dict:
    own = {k: v for k, v in MINIMAL.items() if k not in FAMILY["shared"]}
    return dict(own, family="demo-helper", **extra)


def test_family_member_expands_with_the_shared_fields(tmp_path):
    folder = _folder(tmp_path, _member(source={"line": 7}, field_paths=["config.dp_size"], when="config.dp_size > 1"), FAMILY, GUARDS)
    (compiled,) = load_rules(str(folder))
    rule = compiled.rule
    assert (rule.severity, rule.origin, rule.error_class, rule.stage) == ("error", "sglang", "ValueError", "server_args")
    assert (rule.source.path, rule.source.function, rule.source.line) == ("python/sglang/srt/demo.py", "demo", 7)
    assert rule.field_paths == ["config.tp_size", "config.dp_size"]
    assert rule.when == "facts.lora_enabled && config.dp_size > 1"


def test_member_may_not_restate_a_family_value(tmp_path):
    folder = _folder(tmp_path, _member(stage="argparse"), FAMILY, GUARDS)
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("demo-rule.yaml", "stage")
    assert "demo-helper" in info.value.reason


def test_a_bad_family_value_is_reported_in_the_family_file(tmp_path):
    family = json.loads(json.dumps(FAMILY))
    family["shared"]["stage"] = "no_such_stage"
    folder = _folder(tmp_path, _member(), family, GUARDS)
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("_family-demo-helper.yaml", "stage")


@pytest.mark.parametrize("field", ["message", "condition", "examples"])
def test_a_family_may_not_share_what_makes_a_rule(tmp_path, field):
    family = json.loads(json.dumps(FAMILY))
    family["shared"][field] = MINIMAL[field]
    folder = _folder(tmp_path, _member(), family, GUARDS)
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("_family-demo-helper.yaml", "shared")


def test_family_file_is_named_for_its_family(tmp_path):
    folder = _folder(tmp_path, _member(), FAMILY, GUARDS)
    (folder / "server_args" / "_family-demo-helper.yaml").rename(folder / "server_args" / "_family-other.yaml")
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("_family-other.yaml", "family")


def test_a_guard_that_does_not_compile_is_refused(tmp_path):
    folder = _folder(tmp_path, dict(MINIMAL), guards={"bad": {"expression": "facts.lora_enabled &&", "description": "x"}})
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert (info.value.file, info.value.field) == ("_guards.yaml", "guards.bad.expression")


@pytest.mark.parametrize("family", sorted(DEFS.families))
def test_a_family_file_is_no_rule_and_each_member_runs_its_own_examples(family):
    """A `_family-*.yaml` holds only what its members share (no message, condition or
    examples: it is never evaluated); each member is a rule file with its own failing and
    passing examples, which tests/test_rule_examples.py runs."""
    path = next(Path(rules_dir()).rglob(f"{definitions.FAMILY_PREFIX}{family}.yaml"))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(data) <= {"family", "description", "shared"}, (path, set(data))
    assert not {"message", "condition", "examples", "id"} & set(data["shared"]), path
    by_id = {c.rule.id: c.rule for c in load_rules()}
    members = [rid for rid, raw in RAW.items() if raw.get("family") == family]
    assert members
    for rid in members:
        assert RAW[rid]["examples"]["fire"] and RAW[rid]["examples"]["pass"], rid
        assert by_id[rid].examples.fire and by_id[rid].examples.pass_, rid
