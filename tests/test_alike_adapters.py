"""Adapters alike in what most rules read share one evaluation of those rules (engine/alike.py):
the fast evaluator's report equals the reference's (which runs every adapter's rules in its whole
context) on fleets of alike and differing adapters, and alike adapters do share."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from inkling_compat.engine import alike, context
from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import FAST, REFERENCE, ReferenceEvaluator
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.errors import InputError
from inkling_compat.testing.scenarios import example_arguments

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _outcome(evaluator, **arguments):
    try:
        checked = evaluate(**arguments, evaluator=evaluator)
    except InputError as exc:
        return ("input-error", str(exc))
    return ("report", checked.report.to_dict(), checked.report.coverage.adapters)


def _adapter(folder: Path, name: str, **config) -> str:
    target = folder / name
    shutil.copytree(EXAMPLES / "adapter", target)
    if config:
        path = target / "adapter_config.json"
        data = json.loads(path.read_text())
        data.update(config)
        for key in [k for k, v in config.items() if v is None]:
            del data[key]
        path.write_text(json.dumps(data))
    return str(target)


def _fleet(folder: Path) -> list[str]:
    """Alike adapters, and some that differ in content or in who they are."""
    dirs = [_adapter(folder, f"same{i}") for i in range(5)]
    dirs += [_adapter(folder, "rank32", r=32), _adapter(folder, "rank32b", r=32), _adapter(folder, "dora", use_dora=True)]
    dirs += [_adapter(folder, "no-r", r=None), _adapter(folder, "targets", target_modules="all")]
    unreadable = folder / "unreadable"
    unreadable.mkdir()
    pickled = Path(_adapter(folder, "pickled"))
    (pickled / "adapter_model.safetensors").rename(pickled / "adapter_model.bin")
    empty = Path(_adapter(folder, "no-weights"))
    (empty / "adapter_model.safetensors").unlink()
    return dirs + [str(unreadable), str(pickled), str(empty), _adapter(folder, "same5")]


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"enable_dp_attention": True, "tp_size": 2, "dp_size": 2},
        {"max_lora_rank": 8, "lora_target_modules": ["gate_up_proj"]},
        {"lora_backend": "triton_v2"},
    ],
)
def test_a_fleet_gets_the_reference_report(tmp_path, config):
    dirs = _fleet(tmp_path)
    base = {"enable_lora": True, "lora_backend": "triton", "max_loras_per_batch": 4, "max_lora_rank": 64, "lora_target_modules": ["gate_up_proj", "down_proj"], **config}
    for lora_paths in (
        None,
        [f"{Path(d).name}={d}" for d in dirs[::2]],
        [{"lora_name": Path(d).name, "lora_path": d, "pinned": i % 3 == 0} for i, d in enumerate(dirs)],
    ):
        server = dict(base, **({"lora_paths": lora_paths} if lora_paths is not None else {}))
        arguments = dict(config=server, adapter=dirs, model=str(EXAMPLES / "config.json"))
        assert _outcome(FAST, **arguments) == _outcome(REFERENCE, **arguments)


def test_alike_adapters_share_their_content_rules(tmp_path, monkeypatch):
    dirs = [_adapter(tmp_path, f"a{i}") for i in range(6)]
    whole = []
    original = context.Contexts.for_adapter

    def counted(self, index):
        whole.append(index)
        return original(self, index)

    monkeypatch.setattr(context.Contexts, "for_adapter", counted)
    import yaml

    server = dict(yaml.safe_load((EXAMPLES / "serve.yaml").read_text()), lora_paths=[f"a{i}={d}" for i, d in enumerate(dirs)])
    report = evaluate(config=server, adapter=dirs, model=str(EXAMPLES / "config.json"), evaluator=FAST).report
    assert report.ok and whole == [1]  # (the first adapter runs with the global rules; the second in its whole context; the rest shared)


class _ReferenceOnePlan(ReferenceEvaluator):
    """The reference evaluator with the rule set's plan built once (what this test compares is
    how each adapter's rules run, not the plan)."""

    def __init__(self):
        self.plans = {}

    def plan(self, rules, version):
        if (rules, version) not in self.plans:
            self.plans[(rules, version)] = super().plan(rules, version)
        return self.plans[(rules, version)]


def test_rule_examples_with_their_adapters_repeated(tmp_path):
    """Every adapter rule's example, its adapters three times over (alike copies under other
    names, where they have one) after another adapter each time, gets the reference's report."""
    reference = _ReferenceOnePlan()
    other = example_arguments({})["adapter"]
    compared = 0
    for c in (c for c in load_rules() if c.rule.scope == "adapter"):
        for example in (*c.rule.examples.fire, *c.rule.examples.pass_):
            args = example_arguments(example.input)
            adapters = args["adapter"]
            if adapters is None:
                continue
            adapters = adapters if isinstance(adapters, list) else [adapters]
            repeated = []
            for n in range(3):
                repeated.append(copy.deepcopy(other))  # (another adapter between the copies: its results are not theirs)
                for item in adapters:
                    item = copy.deepcopy(item)
                    if isinstance(item, dict) and isinstance(item.get("name"), str) and n:
                        item["name"] += f"-{n}"
                    repeated.append(item)
            arguments = dict(args, adapter=repeated)
            assert _outcome(FAST, **arguments) == _outcome(reference, **arguments), c.rule.id
            compared += 1
    assert compared > 50


def test_identity_rules_are_those_that_read_who_an_adapter_is():
    assert alike.reads_identity({("adapter", "name")}) and alike.reads_identity({("adapter",)})
    assert alike.reads_identity({("adapter", "source")}) and alike.reads_identity({("facts", "lora_paths", "pinned")})
    assert not alike.reads_identity({("adapter", "source", "weights_format"), ("adapter_facts", "r"), ("facts", "sink"), ("adapter", "pinned")})


def test_the_content_key_leaves_out_exactly_the_identity():
    doc = {"name": "a", "path": "p", "pinned": True, "form": "peft", "source": {"directory": "d", "weights_format": "none"}}
    facts = {"name": "a", "lora_id": "i", "r": 1}
    kept_doc, kept_facts = alike._without_identity(doc, facts)
    left_out = {("adapter", k) for k in doc if k not in kept_doc} | {("adapter", "source", k) for k in doc["source"] if k not in kept_doc["source"]}
    left_out |= {("adapter_facts", k) for k in facts if k not in kept_facts}
    assert left_out == set(alike.IDENTITY) - {("facts", "lora_paths")}  # (not in the view: each adapter's context gets its own)
    assert doc["source"]["directory"] == "d" and kept_facts == {"r": 1} and kept_doc["pinned"] is True  # (a bool: content)


def test_alike_adapters_that_differ_in_who_they_are_get_their_own_problems(tmp_path):
    """Five adapters alike in content under DP attention, four of them --lora-paths entries,
    two of those pinned: an unpinned one (listed or not) cannot be served (sglang refuses it),
    a pinned one can: each adapter's verdict is its own."""
    import yaml

    dirs = [_adapter(tmp_path, f"a{i}") for i in range(5)]
    entries = [{"lora_name": f"a{i}", "lora_path": d, "pinned": i in (0, 2)} for i, d in enumerate(dirs[:4])]
    server = dict(yaml.safe_load((EXAMPLES / "serve.yaml").read_text()), enable_dp_attention=True, tp_size=2, dp_size=2, lora_paths=entries)
    arguments = dict(config=server, adapter=dirs, model=str(EXAMPLES / "config.json"))
    fast = _outcome(FAST, **arguments)
    assert fast == _outcome(REFERENCE, **arguments)
    assert [(p["rule_id"], p["adapter"]) for p in fast[1]["problems"]] == [("adapter-dp-attention-unpinned", name) for name in ("a1", "a3", "a4")]


def test_a_null_test_of_the_source_is_no_read_of_who_the_adapter_is():
    """`adapter.source != null` reads the source whole, but tells only whether there is one:
    such a rule is a content rule keyed by the parts of the source it reads."""
    from inkling_compat.engine.rule_compile import CompiledRule
    from inkling_compat.engine.rule_schema import Rule

    def rule(when, condition):
        data = load_rules()[0].rule.model_dump(by_alias=True, exclude_none=True)
        data.update(variants=[], sglang_versions=None, after=[], when=when, condition=condition)
        return CompiledRule(Rule.model_validate(data), "x.yaml")

    tested = rule('adapter.form == "peft" && adapter.source != null', 'adapter.source.weights_format == "none"')
    assert not alike.reads_identity(alike.gate_paths(tested))
    for when, condition in (("adapter.source != null", "size(adapter.source) > 2"), ("true", "adapter.source == adapter.source"), ("null != adapter.source", "true")):
        assert alike.reads_identity(alike.gate_paths(rule(when, condition)))


def _custom(when, condition, rule_id="custom-adapter-rule"):
    from inkling_compat.engine.rule_compile import CompiledRule
    from inkling_compat.engine.rule_schema import Rule

    base = next(c for c in load_rules() if c.rule.scope == "adapter")
    data = base.rule.model_dump(by_alias=True, exclude_none=True)
    data.update(id=rule_id, variants=[], sglang_versions=None, after=[], when=when, condition=condition)
    return CompiledRule(Rule.model_validate(data), "x.yaml")


def test_the_entry_macro_is_no_read_of_who_the_adapter_is():
    """`facts.lora_paths.exists(p, p.name == adapter.name)` reads the entries and the name only to
    ask whether the adapter is an entry (a pinned one): the key holds the `pinned` of the entries
    of its name. Any other read of either keeps the rule an identity rule."""
    macro = 'adapter.form == "peft" && facts.lora_paths.exists(p, p.name == adapter.name)'
    assert not alike.reads_identity(alike.gate_paths(_custom(macro, "!facts.lora_paths.exists(q, q.name == adapter.name && q.pinned)")))
    for when, condition in (
        (macro, 'adapter.name == "a"'),
        (macro, "size(facts.lora_paths) > 1"),
        ("true", "facts.lora_paths.exists(p, p.path == adapter.path)"),
    ):
        assert alike.reads_identity(alike.gate_paths(_custom(when, condition)))


def test_a_rule_set_that_reads_every_entry_gets_the_reference_report(tmp_path):
    """With an adapter rule that reads the whole --lora-paths list, each adapter's context holds
    every entry (engine/plan.py `lora_paths_by_name` is false): the shared results stay each
    adapter's own."""
    import yaml

    rules = (*load_rules(), _custom('adapter.form == "peft"', "size(facts.lora_paths) > 2 && facts.lora_paths.exists(p, p.name == adapter.name && !p.pinned)"))
    dirs = [_adapter(tmp_path, f"a{i}") for i in range(6)]
    entries = [{"lora_name": f"a{i}", "lora_path": d, "pinned": i in (0, 2)} for i, d in enumerate(dirs[:4])]
    server = dict(yaml.safe_load((EXAMPLES / "serve.yaml").read_text()), lora_paths=entries, max_loras_per_batch=8, enable_dp_attention=True, tp_size=2, dp_size=2)
    arguments = dict(config=server, adapter=dirs, model=str(EXAMPLES / "config.json"), rules=rules)
    fast = _outcome(FAST, **arguments)
    assert fast == _outcome(REFERENCE, **arguments)
    assert [p["adapter"] for p in fast[1]["problems"] if p["rule_id"] == "custom-adapter-rule"] == ["a1", "a3"]
    assert [p["adapter"] for p in fast[1]["problems"] if p["rule_id"] == "adapter-dp-attention-unpinned"] == ["a1", "a3", "a4", "a5"]
