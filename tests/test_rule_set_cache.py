"""The validated rule-set cache (engine/rule_cache.py) changes how fast the rules load, never
which rules load or what is refused: a hit gives the rules a miss gives, any edit of a rule file
or of the code that validates rules misses, and a hit is still validated and compiled."""

from __future__ import annotations

import json
import shutil

import pytest

from inkling_compat.engine import definitions, paths, rule_cache
from inkling_compat.engine.rules import load_rules, rules_dir
from inkling_compat.errors import RuleFileError

RULE = "adapter-weights-pickle"  # a rule file of rules/ with its own title and condition


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("INKLING_COMPAT_CACHE_DIR", str(folder))
    monkeypatch.delenv("INKLING_COMPAT_NO_CACHE", raising=False)
    _new_process()
    yield folder
    _new_process()


def _new_process() -> None:
    """What a fresh process starts with: no rules, definitions or parsed files in memory."""
    load_rules.cache_clear()
    rule_cache.clear()


@pytest.fixture
def rules_copy(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return folder


def _rule_file(folder, rule_id=RULE):
    (path,) = folder.rglob(f"{rule_id}.yaml")
    return path


def _forbid_miss_path(monkeypatch):
    """A load that expands the files or runs the path check fails: it must be a hit."""

    def refuse(*args, **kwargs):
        raise AssertionError("the rule set was loaded from its files although it is cached")

    monkeypatch.setattr(definitions, "load_definitions", refuse)
    monkeypatch.setattr(paths, "check_rule_paths", refuse)


def _snapshot(compiled):
    out = []
    for c in compiled:
        versions = {v: (None if w is None else (w.file, w.expression, sorted(w.param_programs), sorted(w.paths), w.rule.model_dump()))
                    for v, w in c._versions.items()}  # fmt: skip
        out.append((c.file, c.expression, sorted(c.paths), sorted(c.param_programs), c.rule.model_dump(), versions))
    return out


def test_a_hit_gives_the_rules_a_miss_gives(cache_dir, monkeypatch):
    missed = _snapshot(load_rules())
    assert list((cache_dir / "rule-sets-v1").glob("*.json")), "a successful load stores the rule set"
    _new_process()
    with monkeypatch.context() as m:
        _forbid_miss_path(m)
        hit = load_rules()
    assert _snapshot(hit) == missed  # every rule, variant, expression, param and path, in order
    _new_process()
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    assert _snapshot(load_rules()) == missed


def test_a_hit_runs_the_rules_like_a_miss(cache_dir):
    from inkling_compat.engine.evaluate import check
    from inkling_compat.testing.scenarios import example_arguments

    inputs = [e.input for c in load_rules()[::9] for e in c.rule.examples.fire + c.rule.examples.pass_]
    before = [check(**example_arguments(i)).to_dict() for i in inputs]
    _new_process()
    load_rules()  # a hit
    assert [check(**example_arguments(i)).to_dict() for i in inputs] == before


def test_an_edited_rule_file_misses(cache_dir, rules_copy, monkeypatch):
    load_rules(str(rules_copy))
    path = _rule_file(rules_copy)
    path.write_text(path.read_text(encoding="utf-8").replace("\ntitle: ", "\ntitle: Edited. ", 1), encoding="utf-8")
    _new_process()
    (edited,) = [c for c in load_rules(str(rules_copy)) if c.rule.id == RULE]
    assert edited.rule.title.startswith("Edited. ")


def test_an_edited_guard_misses(cache_dir, rules_copy):
    first = {c.rule.id: c.expression for c in load_rules(str(rules_copy))}
    guards = rules_copy / definitions.GUARDS_FILE
    data = guards.read_text(encoding="utf-8")
    name, body = next(iter(__import__("yaml").safe_load(data)["guards"].items()))
    edited = data.replace(body["expression"], f"({body['expression']}) && true", 1)
    assert edited != data
    guards.write_text(edited, encoding="utf-8")
    _new_process()
    second = {c.rule.id: c.expression for c in load_rules(str(rules_copy))}
    assert second != first and all("&& true" in second[k] for k in first if second[k] != first[k])


def test_an_edited_validity_module_misses(cache_dir, tmp_path, monkeypatch):
    """The key covers the code that decides what is valid: simulate editing one such module."""
    module = tmp_path / "schema_module.py"
    module.write_text("FIELDS = 1\n", encoding="utf-8")
    monkeypatch.setattr(rule_cache, "_VALIDITY_CODE", rule_cache._VALIDITY_CODE + (str(module),))
    monkeypatch.setattr(rule_cache, "_code_digest", None)
    load_rules()
    _new_process()
    with monkeypatch.context() as m:
        _forbid_miss_path(m)
        load_rules()  # unchanged: a hit
    module.write_text("FIELDS = 2\n", encoding="utf-8")
    monkeypatch.setattr(rule_cache, "_code_digest", None)  # a new process reads the code again
    _new_process()
    calls = []
    real = paths.check_rule_paths
    monkeypatch.setattr(paths, "check_rule_paths", lambda compiled: calls.append(1) or real(compiled))
    load_rules()
    assert calls == [1], "an edited validity module must load the rules from their files"


def test_another_cel_library_misses(cache_dir, tmp_path, monkeypatch):
    """A hit does not compile the guards no rule names: the miss did, with the same CEL library."""
    from types import SimpleNamespace

    from inkling_compat.engine import cel

    key = rule_cache.rule_set_key(rules_dir())
    core = tmp_path / "cel.so"
    core.write_bytes(b"another build")
    monkeypatch.setattr(cel, "_core", SimpleNamespace(__file__=str(core)))
    monkeypatch.setattr(rule_cache, "_code_digest", None)
    assert rule_cache.rule_set_key(rules_dir()) != key


def test_every_validity_module_exists():
    """A renamed module would otherwise drop out of the key without a sound."""
    from pathlib import Path

    package = Path(rule_cache.__file__).resolve().parent.parent
    for name in rule_cache._VALIDITY_CODE:
        assert (package / name).is_file(), name


def test_a_misspelt_fact_is_refused_after_a_hit_of_the_good_state(cache_dir, rules_copy):
    load_rules(str(rules_copy))
    _new_process()
    load_rules(str(rules_copy))  # a hit of the good state
    path = _rule_file(rules_copy)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\ncondition: ", "\ncondition: facts.sink.lora_attachd || ", 1), encoding="utf-8")
    _new_process()
    with pytest.raises(RuleFileError) as info:
        load_rules(str(rules_copy))
    assert info.value.file == f"{RULE}.yaml" and "facts.sink.lora_attachd" in info.value.reason


def _stored(cache_dir):
    (path,) = (cache_dir / "rule-sets-v1").glob("*.json")
    return path


def test_a_hit_is_still_validated_and_compiled(cache_dir, monkeypatch):
    load_rules()
    path = _stored(cache_dir)
    good = json.loads(path.read_text(encoding="utf-8"))
    for tamper, field in ((lambda d: d.update(severity="bogus"), "severity"), (lambda d: d.update(condition="1 +"), "when/condition")):
        entry = json.loads(json.dumps(good))
        tamper(entry[0][1])
        path.write_text(json.dumps(entry), encoding="utf-8")
        _new_process()
        with pytest.raises(RuleFileError) as info:
            load_rules()
        assert info.value.field == field and info.value.file == entry[0][0]


def test_an_unreadable_rule_set_is_ignored(cache_dir, monkeypatch):
    expected = _snapshot(load_rules())
    path = _stored(cache_dir)
    for junk in ("{not json", '{"a": 1}', "[[1, 2]]", ""):
        path.write_text(junk, encoding="utf-8")
        _new_process()
        assert _snapshot(load_rules()) == expected
    assert json.loads(path.read_text(encoding="utf-8"))  # rewritten by the last load


def test_off_stores_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    load_rules()
    assert not (cache_dir / "rule-sets-v1").exists()


def test_bounded(cache_dir, rules_copy, monkeypatch):
    monkeypatch.setattr(rule_cache, "RULE_SET_ENTRIES", 2)
    path = _rule_file(rules_copy)
    text = path.read_text(encoding="utf-8")
    for n in range(4):
        path.write_text(text + f"\n# edit {n}\n", encoding="utf-8")
        _new_process()
        load_rules(str(rules_copy))
    assert len(list((cache_dir / "rule-sets-v1").glob("*.json"))) == 2
