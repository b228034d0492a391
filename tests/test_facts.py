"""The typed facts: frozen models built by one pure `derive`, published as
schemas/facts.schema.json and docs/facts.md, and the rules checked against them at load time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import yaml

from inkling_compat import api, cli
from inkling_compat.engine import paths as rule_paths
from inkling_compat.engine import rule_load
from inkling_compat.engine.rule_load import load_rules, rules_dir
from inkling_compat.errors import RuleFileError
from inkling_compat.facts.derive import derive
from inkling_compat.facts.inputs import load_inputs
from inkling_compat.facts.types import Facts, PeftAdapterFacts, PoolAdapterFacts
from inkling_compat.publish import facts_doc

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RULE = "sink-pool-differs-from-config"


def _rules_with(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    (path,) = folder.rglob(f"{RULE}.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


def test_misspelt_fact_refuses_the_rule_file(tmp_path):
    folder = _rules_with(tmp_path, lambda d: d.update(condition=f"({d['condition']}) && facts.sink.lora_attachd"))
    with pytest.raises(RuleFileError) as info:
        load_rules(str(folder))
    assert info.value.file == f"{RULE}.yaml" and info.value.field == "when/condition"
    assert "facts.sink.lora_attachd" in info.value.reason


@pytest.mark.parametrize(
    "field, expression, path",
    [
        ("params.expected", '"" + string(adapter_facts.pool_fitt)', "adapter_facts.pool_fitt"),
        ("when/condition", "config.tp_sze > 1", "config.tp_sze"),
        ("when/condition", "env.SGLANG_NO_SUCH_SWITCH", "env.SGLANG_NO_SUCH_SWITCH"),
        ("when/condition", "facts.adapters.size() > 0", "facts.adapters"),  # read as adapter_facts_list
    ],
)
def test_unknown_paths_in_params_and_inputs_are_refused(tmp_path, field, expression, path):
    def edit(d):
        if field.startswith("params."):
            d["params"]["expected"] = expression
        else:
            d["condition"] = expression

    with pytest.raises(RuleFileError) as info:
        load_rules(str(_rules_with(tmp_path, edit)))
    assert info.value.field == field and path in info.value.reason


def test_misspelt_fact_exits_3_naming_file_and_path(tmp_path, monkeypatch, capsys):
    folder = _rules_with(tmp_path, lambda d: d.update(condition="facts.sink.lora_attachd"))
    monkeypatch.setattr(rule_load, "rules_folder", lambda: str(folder))
    load_rules.cache_clear()
    try:
        assert cli.main(["rules"]) == 3
    finally:
        load_rules.cache_clear()
    err = capsys.readouterr().err
    assert f"{RULE}.yaml" in err and "facts.sink.lora_attachd" in err


@pytest.mark.parametrize(
    "expression",
    [
        'facts.lora_paths.exists(p, p.name == adapter.name)',  # a macro and its variable
        'facts.target_modules.filter(t, t.startsWith("gate")).size() > 0',
        'adapters.exists(config, config.name == "x")',  # a comprehension variable shadowing `config`
        'adapter_facts_list.all(a, a.form != "") && size(facts.fleet.runtime_names) >= 0',
        'adapter.tensors.exists(k, k.contains("lora_A"))',  # a map's keys
        '"facts.sink.nothing" != ""',  # text, not a path
    ],
)
def test_macros_methods_and_comprehension_variables_are_not_fields(tmp_path, expression):
    (compiled,) = [c for c in load_rules(str(_rules_with(tmp_path, lambda d: d.update(condition=expression)))) if c.rule.id == RULE]
    assert compiled.rule.condition == expression


def test_every_rule_path_exists_and_schema_knows_what_it_defines():
    rule_paths.check_rule_paths(load_rules())
    assert rule_paths.path_exists(("facts", "pool", "gate_up_lora_a"))
    assert not rule_paths.path_exists(("facts", "sink", "pool_rank"))  # the pool has one definition
    assert not rule_paths.path_exists(("facts", "startup", "pool_rank"))


# Paths no rule reads but an output does (the runtime's pool and sink layout, the report).
# (facts.inputs_given.model_is_inkling: read by engine/coverage.py, the Inkling-only gate and its note)
OUTPUT_READ = {"facts.sink.given", "facts.inputs_given.config", "facts.inputs_given.model", "facts.inputs_given.platform", "facts.inputs_given.model_is_inkling", "facts.pool.rank", "facts.pool.shared_outer", "facts.lora_paths.name",
               "facts.lora_paths.path", "facts.lora_paths.pinned", "adapter_facts.form", "adapter_facts.name"}


def test_no_fact_is_read_by_nobody():
    read = set()
    for c in load_rules():
        for v in [c, *(x for x in c._versions.values() if x is not None)]:
            for p in v.paths:
                read.update(".".join(p[:i]) for i in range(1, len(p) + 1))
    read = {p.replace("adapter_facts_list", "adapter_facts") for p in read}
    unread = [path for path, *_ in _leaves() if path not in read and path not in OUTPUT_READ]
    assert not unread, f"facts no rule or output reads: {unread}"


def _leaves():
    rows = list(facts_doc.rows(Facts, "facts", skip=("adapters",)))
    for model in (PoolAdapterFacts, PeftAdapterFacts):
        rows += list(facts_doc.rows(model, "adapter_facts"))
    prefixes = {r[0].rsplit(".", 1)[0] for r in rows}
    # a leaf: no row below it; a path a rule reads whole (e.g. adapter_facts.pool_fit) covers its fields
    return [r for r in rows if r[0] not in prefixes and not _covered(r[0])]


def _covered(path: str) -> bool:
    whole = {"adapter_facts.pool_fit", "adapter_facts.pool_partial", "adapter_facts.slice_failure", "adapter_facts.reshape_failure",
             "adapter_facts.target_failure", "adapter_facts.layer_out_of_range", "adapter_facts.binding", "adapter_facts.pool",
             "adapter_facts.rebind", "facts.pool",
             "adapter_facts.config_type_mismatches"}  # (its items are read in a `map` macro)
    return any(path.startswith(w + ".") for w in whole)


def test_facts_are_frozen_and_complete():
    checked = api.evaluate(EXAMPLES / "serve.yaml", EXAMPLES / "adapter_pool.yaml", model=EXAMPLES / "config.json")
    facts = checked.facts
    assert isinstance(facts, Facts) and isinstance(facts.adapters[0], PoolAdapterFacts)
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError, as the own facts
        facts.sink.kind = "fused"  # frozen
    assert api.check(EXAMPLES / "serve.yaml", EXAMPLES / "adapter_pool.yaml", model=EXAMPLES / "config.json") == checked.report
    assert checked.inputs.adapters[0].name == facts.adapters[0].name
    assert derive(checked.inputs) == facts  # pure: the same inputs give the same facts


def test_an_adapters_own_facts_are_typed_and_frozen():
    """A misspelt fact is an error where it is read, never a silent None."""
    import dataclasses

    from inkling_compat.facts import adapter as own_module

    inputs = load_inputs(EXAMPLES / "serve.yaml", EXAMPLES / "adapter", model=EXAMPLES / "config.json")
    own = own_module.own_facts(inputs.adapters[0], inputs.model)
    assert isinstance(own, own_module.PeftOwn) and own.rank == own.facts.r == inputs.adapters[0].adapter_config["r"]
    with pytest.raises(AttributeError):
        own.rnak  # noqa: B018
    with pytest.raises(AttributeError):
        own.facts.normalised_targets  # noqa: B018
    with pytest.raises(dataclasses.FrozenInstanceError):
        own.path = "elsewhere"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        own.facts.r = 8


def test_unknown_is_none_not_a_default():
    facts = derive(load_inputs(None))  # no rank, no adapter: the pool is unknown
    assert facts.pool is None and facts.startup.max_r is None and facts.fleet.startup_outer_reference is None
    assert facts.adapters == []


def test_facts_doc_is_current():
    assert facts_doc.DOC.read_text(encoding="utf-8") == facts_doc.render(), "run `python -m inkling_compat.publish.facts_doc`"


def test_facts_schema_lists_the_model_fields():
    import json

    from inkling_compat.publish import schemas

    data = json.loads(schemas.render("facts.schema.json"))
    assert set(data["properties"]) == set(Facts.model_fields)
    assert data["$defs"]["SinkFacts"]["properties"]["lora_attached"]["description"]


@settings(max_examples=300, deadline=None)
@given(name=st.text(max_size=40), path=st.one_of(st.none(), st.text(max_size=40)))
def test_lora_id_is_uuid5_of_name_and_path(name: str, path: str | None) -> None:
    import uuid

    from inkling_compat.facts.adapter import lora_id

    text = f"{name}\0{path if path is not None else name}"
    try:
        expected = uuid.uuid5(uuid.NAMESPACE_URL, text).hex
    except UnicodeEncodeError:  # a lone surrogate: both refuse it alike
        with pytest.raises(UnicodeEncodeError):
            lora_id(name, path)
        return
    assert lora_id(name, path) == expected


def _float32_overflows(value: float) -> bool:
    import struct

    try:
        struct.pack("<f", value)
    except OverflowError:
        return True
    return False


# float32's largest finite value, the halfway point to 2**128 and their neighbours.
_FLOAT32_EDGES = [float(2**128 - 2**104), float(2**128 - 2**103), float(2**128)]


@settings(max_examples=500, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_FLOAT32_EDGES), st.floats(min_value=3.4e38, max_value=3.41e38)))
def test_past_float32_is_where_struct_refuses_a_float32(value: float) -> None:
    import math

    from inkling_compat.facts.adapter import past_float32

    for v in (value, -value, math.nextafter(value, math.inf), math.nextafter(value, -math.inf)):
        assert past_float32(v) == (math.isfinite(v) and _float32_overflows(v)), v


@pytest.mark.parametrize("release", ["0.5.16", "0.5.23"])
def test_lora_id_is_the_wheels_deterministic_id(release: str) -> None:
    """LoRARef.deterministic_id read from the wheel and run (uuid5 as lora_registry.py imports
    it) on names and paths as a launch gives them: the checker's id is sglang's."""
    import uuid

    from inkling_compat.facts.adapter import lora_id
    from oracle import sglang_sink, wheel_source
    from oracle.require import load_or_skip

    wheel = load_or_skip(lambda: sglang_sink.find_wheel(version=release), f"{release} wheel")
    namespace: dict = {"uuid5": uuid.uuid5, "NAMESPACE_URL": uuid.NAMESPACE_URL}
    exec(wheel_source.method(wheel_source.read(wheel, "sglang/srt/lora/lora_registry.py"), "LoRARef", "deterministic_id"), namespace)
    deterministic_id = namespace["deterministic_id"]
    for name, path in [("support", "examples/adapter"), ("a", "/p"), ("", ""), ("é名", "/données/适配器"), ("x" * 300, "/" + "y" * 4000)]:
        assert lora_id(name, path) == deterministic_id(name, path)
