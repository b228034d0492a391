"""The facts are plain records built without validation (inputs/record.py): every rule
example's derived facts hold the types their fields declare (what pydantic would have
checked), the published schema comes from the same class bodies, and a check imports no
pydantic model of the facts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from inkling_compat import api
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.facts import types as ft
from inkling_compat.inputs.record import mismatches
from inkling_compat.testing.scenarios import example_arguments

EXAMPLES = [ex for c in load_rules() for ex in (*c.rule.examples.fire, *c.rule.examples.pass_)]


def test_every_rule_examples_facts_have_their_declared_types():
    wrong = {}
    for ex in EXAMPLES:
        facts = api.evaluate(**example_arguments(ex.input)).facts
        found = mismatches(facts)
        if found:
            wrong[ex.description] = found[:3]
    assert wrong == {}


def test_mismatches_names_a_wrong_value():
    good = ft.LoraPath(name="a", path="/a", pinned=False)
    assert mismatches(good) == []
    assert mismatches(ft.LoraPath(name="a", path=("/a",), pinned=0)) == ["LoraPath.path: tuple ('/a',), not str", "LoraPath.pinned: int 0, not bool"]


def test_records_are_frozen_keyword_only_and_compare_by_value():
    a = ft.LoraPath(name="a", path="/a", pinned=False)
    assert a == ft.LoraPath(name="a", path="/a", pinned=False) and hash(a) == hash(ft.LoraPath(name="a", path="/a", pinned=False))
    assert a != a.model_copy(update={"pinned": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ft.LoraPath(name="a", path="/a")  # a field without a default is missing
    with pytest.raises(TypeError):
        ft.LoraPath(name="a", path="/a", pinned=False, pined=True)  # an unknown field
    assert repr(a) == "LoraPath(name='a', path='/a', pinned=False)"
    assert not hasattr(a, "__dict__")  # slotted


def test_json_dump_is_pydantics():
    """model_dump(mode="json") of a record equals the published pydantic model's."""
    from inkling_compat.publish.facts_schema import models

    facts = api.evaluate(argv=["python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--enable-lora", "--lora-paths", "a=examples/adapter"]).facts
    published = models()["Facts"].model_validate(facts.model_dump())
    assert facts.model_dump(mode="json") == published.model_dump(mode="json")


def test_a_check_builds_no_pydantic_fact_model():
    code = (
        "import sys; from inkling_compat.api import check; check(argv=['python', '-m', 'sglang.launch_server', '--model-path', 'x']);"
        "print('inkling_compat.publish.facts_schema' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_each_annotation_is_what_eval_makes_of_it():
    """`model_fields` reads each annotation's text as `eval` in its module does (a name looked up
    without compiling, any other text evaluated once per module; typing's names where the
    module, importing typing for the type checker only, has none): every record class of the
    facts and the inputs."""
    import builtins
    import sys as _sys

    from inkling_compat.inputs import models, record

    classes = [c for module in (ft, models) for c in vars(module).values() if isinstance(c, record._RecordType)]
    assert len(classes) > 40
    for cls in classes:
        namespace = vars(_sys.modules[cls.__module__])
        for name, text in cls.__dict__.get("__annotations__", {}).items():
            if isinstance(text, str):
                assert repr(record._evaluated(text, cls.__module__, namespace)) == repr(eval(text, namespace, record.typing_scope(namespace))), (cls, name)  # noqa: S307
    given = {"__builtins__": builtins, "int": str}
    assert record._evaluated("int", "test.a", given) is str  # (the module's name before the builtin's)
    assert record._evaluated("float", "test.a", given) is float and record._evaluated("None", "test.a", given) is None
    assert record._evaluated("int | None", "test.a", given) == (str | None)
