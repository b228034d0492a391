"""Named guards and rule families (engine/definitions.py) are load-time shorthand: every rule
expands to its reviewed snapshot (tests/data/expanded/<id>.json, one per rule), and a reference
to an unknown guard or family is a broken rule file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from inkling_compat import cli
from inkling_compat.engine import definitions
from inkling_compat.engine import rule_load
from inkling_compat.engine.rule_load import load_rules, rule_files, rules_dir
from inkling_compat.errors import RuleFileError

RULES = {c.rule.id: c for c in load_rules()}
# (libyaml's safe loader where there is one: the same data as yaml.safe_load, read at every
# collection, in each pytest-xdist worker; the pure-Python one took 0.93 s for the rule files, 0.10 s)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
RAW = {p.stem: yaml.load(p.read_text(encoding="utf-8"), Loader=_SAFE_LOADER) for p in rule_files()}
DEFS = definitions.load_definitions(rules_dir())

# Per rule, what it expands to (family merged, guards written out, `after` derived): the rule's
# fields and the compiled expression of each sglang version, in tests/data/expanded/<id>.json.
# An edit of a guard, a family or a rule shows here as a diff of exactly the rules it changes.
# Regenerate after an intended change (and review the diff):
#     INKLING_COMPAT_UPDATE_SNAPSHOTS=1 python -m pytest -q tests/test_guards_families.py -k expanded
EXPANDED = Path(__file__).parent / "data" / "expanded"
UPDATE = os.environ.get("INKLING_COMPAT_UPDATE_SNAPSHOTS", "") not in ("", "0")


def expanded(rule_id: str) -> str:
    compiled = RULES[rule_id]
    versions = sorted({*(compiled.rule.sglang_versions or ()), *(v for variant in compiled.rule.variants for v in variant.sglang_versions)})
    data = {
        "rule": compiled.rule.model_dump(mode="json", by_alias=True, exclude_none=True),
        "expression": {version: compiled.for_version(version).expression for version in versions if compiled.for_version(version) is not None},
    }
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _guards_of(rule_id: str) -> list[str]:
    raw = RAW[rule_id]
    family = DEFS.families[raw["family"]].shared if "family" in raw else {}
    return list(family.get("guards", [])) + list(raw.get("guards", []))


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_expanded_rule_is_its_snapshot(rule_id):
    path = EXPANDED / f"{rule_id}.json"
    text = expanded(rule_id)
    if UPDATE:
        EXPANDED.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot of {rule_id}: run INKLING_COMPAT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_guards_families.py -k expanded"
    assert path.read_text(encoding="utf-8") == text, f"{rule_id} expands differently from tests/data/expanded/{rule_id}.json"


def test_expanded_snapshots_are_of_existing_rules():
    stale = sorted(p.stem for p in EXPANDED.glob("*.json") if p.stem not in RULES)
    if UPDATE:
        for rule_id in stale:
            (EXPANDED / f"{rule_id}.json").unlink()
        return
    assert not stale, f"snapshots of rules that no longer exist: {stale}"


@pytest.mark.parametrize("guard", sorted(DEFS.guards))
def test_guard_is_shared_and_written_out_in_each_rule(guard):
    users = [rid for rid in RAW if guard in _guards_of(rid)]
    assert len(users) >= 2, f"guard {guard} is used by {users}: inline it"
    expression = DEFS.guards[guard].expression
    for rid in users:
        assert expression in RULES[rid].rule.when


# `when` texts still written in more than one rule file: one fact, or one fact and a null check
# of one field, where a guard's name would say no more than the expression.
STILL_REPEATED = {
    "facts.lora_enabled",
    "facts.quant.is_inkling_nvfp4",
    "facts.lora_enabled && config.max_loaded_loras != null",
    "facts.lora_enabled && type(config.lora_paths) == list",
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
            got = getattr(rule.source, key)
            assert got == value or (key == "function" and got.startswith(f"{value} (")), (rid, key)  # (a member may refine its function)
        for key, value in shared.get("params", {}).items():
            assert rule.params[key] == value
        for key in ("field_paths", "after", "references"):
            if key in shared and not (key == "after" and DEFS.families[family].follows):
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
    monkeypatch.setattr(rule_load, "rules_folder", lambda: str(folder))
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
    assert set(data) <= {"family", "description", "shared", "order", "follows"}, (path, set(data))
    assert not {"message", "condition", "examples", "id"} & set(data["shared"]), path
    by_id = {c.rule.id: c.rule for c in load_rules()}
    members = [rid for rid, raw in RAW.items() if raw.get("family") == family]
    assert members
    for rid in members:
        assert RAW[rid]["examples"]["fire"] and RAW[rid]["examples"]["pass"], rid
        assert by_id[rid].examples.fire and by_id[rid].examples.pass_, rid


# --- a family's order, what it follows, refined sources ---------------------------------------


def _members_folder(tmp_path: Path, family: dict, members: list[dict], others: list[dict] = ()) -> Path:
    folder = _folder(tmp_path, members[0], family, GUARDS)
    for rule in [*members[1:], *others]:
        (folder / "server_args" / f"{rule['id']}.yaml").write_text(yaml.safe_dump(rule), encoding="utf-8")
    return folder


def test_a_family_order_derives_after_and_follows_gates_on_what_comes_before(tmp_path):
    earlier = dict(MINIMAL, id="demo-earliest", order=1)
    before = dict(MINIMAL, id="demo-before", order=2, after=["demo-earliest"])
    family = dict(FAMILY, order=["demo-a", "demo-b", "demo-c"], follows=["demo-before"])
    members = [_member(id=f"demo-{x}", order=n) for n, x in ((10, "a"), (11, "b"), (12, "c"))] + [_member(id="demo-free", order=13)]
    rules = {c.rule.id: c.rule for c in load_rules(str(_members_folder(tmp_path, family, members, [earlier, before])))}
    assert rules["demo-a"].after == ["demo-earliest", "demo-before"]
    assert rules["demo-b"].after == ["demo-earliest", "demo-before", "demo-a"]
    assert rules["demo-c"].after == ["demo-earliest", "demo-before", "demo-a", "demo-b"]
    assert rules["demo-free"].after == []  # not in the order: its `after` as written


def test_follows_may_name_a_family(tmp_path):
    other = {"family": "other-helper", "description": "d", "shared": {"stage": "server_args"}, "order": ["demo-x", "demo-y"]}
    family = dict(FAMILY, order=["demo-a"], follows=["other-helper"])
    members = [_member(id="demo-a", order=10)]
    (tmp_path / "server_args").mkdir()
    for rule in [dict({k: v for k, v in MINIMAL.items() if k != "stage"}, id=i, family="other-helper", order=n) for n, i in ((1, "demo-x"), (2, "demo-y"))]:
        (tmp_path / "server_args" / f"{rule['id']}.yaml").write_text(yaml.safe_dump(rule), encoding="utf-8")
    (tmp_path / "server_args" / "_family-other-helper.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    (tmp_path / "server_args" / "_family-demo-helper.yaml").write_text(yaml.safe_dump(family), encoding="utf-8")
    (tmp_path / "server_args" / "demo-a.yaml").write_text(yaml.safe_dump(members[0]), encoding="utf-8")
    (tmp_path / "_guards.yaml").write_text(yaml.safe_dump({"guards": GUARDS}), encoding="utf-8")
    rules = {c.rule.id: c.rule for c in load_rules(str(tmp_path))}
    assert rules["demo-a"].after == ["demo-x", "demo-y"]
    assert rules["demo-y"].after == ["demo-x"]


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"order": ["demo-a", "demo-nobody"]}, "order", "not a member"),
        ({"order": ["demo-b", "demo-a"]}, "order", "do not rise"),
        ({"order": ["demo-a"], "follows": ["demo-nothing"]}, "follows", "unknown rule or family"),
    ],
)
def test_a_bad_order_or_follows_is_a_broken_rule_file(tmp_path, change, field, words):
    members = [_member(id="demo-a", order=1), _member(id="demo-b", order=2)]
    with pytest.raises(RuleFileError) as info:
        load_rules(str(_members_folder(tmp_path, dict(FAMILY, **change), members)))
    assert info.value.field == field and words in info.value.reason


def test_a_member_may_refine_its_function_not_replace_it(tmp_path):
    folder = _folder(tmp_path, _member(source={"line": 7, "function": "demo (its second branch)"}), FAMILY, GUARDS)
    (compiled,) = load_rules(str(folder))
    assert compiled.rule.source.function == "demo (its second branch)"
    (tmp_path / "other").mkdir()
    folder = _folder(tmp_path / "other", _member(source={"function": "another"}), FAMILY, GUARDS)
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert info.value.field == "source.function"


def test_the_copy_refusals_join_their_family():
    """The load-to-buffer refusals are members: one `follows` instead of the same list in each."""
    family = DEFS.families["load-lora-weight-to-buffer"]
    assert len(family.order) == 6 and all(RAW[rid]["family"] == family.name for rid in family.order)
    assert all("after" not in RAW[rid] for rid in family.order)
    chain = RULES["adapter-weight-no-target-module"].rule.after + ["adapter-weight-no-target-module"]
    for index, rid in enumerate(family.order):
        assert RULES[rid].rule.after == chain + list(family.order[:index])
