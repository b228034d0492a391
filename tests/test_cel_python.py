"""The rules' Python forms (engine/cel_python.py, engine/cel_forms.py, engine/python_first.py)
against CEL itself: where a form returns, it returns what CEL returns (the same value and the
same type); where CEL raises, the form raised. Checked on every operator and function for pairs
of values of every kind, on every shipped expression in the variables of every rule example's
check and of the hostile corpus, and in those variables mutated (hypothesis). Plus: every
expression of the shipped rules is translated or listed below with why, the generated module
is current, and what the translator refuses it says."""

from __future__ import annotations

import itertools
import marshal
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat.engine import cel
from inkling_compat.engine.cel_python import Untranslated, translate
from inkling_compat.engine import cel_forms
from inkling_compat.engine.context import cel_context
from inkling_compat.engine.evaluate import evaluate
from inkling_compat.engine.evaluator import ReferenceEvaluator
from inkling_compat.engine.python_first import PARAMS_MODULE, RUN_MODULE, Variables, forms, is_plain, param_forms
from inkling_compat.errors import InputError
from inkling_compat.publish import rules_python
from inkling_compat.testing.scenarios import example_arguments

# Shipped texts left to CEL, with why (none today): a new rule whose text falls to CEL is seen here.
UNTRANSLATED: dict[str, str] = {}

_NAMESPACE = {name: getattr(cel_forms, name) for name in dir(cel_forms) if not name.startswith("__")}


def _form(text: str):
    return eval(f"lambda v: {translate(text)}", dict(_NAMESPACE))  # noqa: S307 - the translator's own output


def _same(a, b) -> bool:
    """Equal values of the same types all the way down (NaN is NaN; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def _agrees(form, program, variables, ctx) -> str | None:
    """None where the form agrees with CEL in these variables, else what differs (a form that
    raises `Error` says CEL raises)."""
    try:
        got = form(variables)
    except cel_forms.Error:
        try:
            program.execute(ctx)
        except Exception:  # noqa: BLE001
            return None
        return "the form said CEL raises; it did not"
    except Exception:  # noqa: BLE001 - the form may always decline
        return None
    try:
        expected = program.execute(ctx)
    except Exception as exc:  # noqa: BLE001
        return f"CEL raised {type(exc).__name__}: {exc}; the form returned {got!r}"
    if not _same(got, expected):
        return f"CEL gave {expected!r} ({type(expected).__name__}); the form {got!r} ({type(got).__name__})"
    return None


# -- every operator and function, on pairs of values of every kind -------------------------
SAMPLES = [
    None, True, False, 0, 1, -1, 7, -7, 2, (1 << 63) - 1, -(1 << 63), (1 << 53) + 1, 1 << 53,
    0.0, -0.0, 1.0, 2.5, -7.5, 9.223372036854776e18, float("nan"), float("inf"), float("-inf"),
    "", "a", "é", "K", "ſ", "S3://x", "NGRAM", "ngram", "K\u212a",
    [], [1], [1.0], [1, "a"], ["a", "b"], [None], [[1]], {}, {"a": 1}, {"a": 1.0}, {"b": [1]},
]
BINARY = ["a == b", "a != b", "a < b", "a <= b", "a > b", "a >= b", "a in b", "a + b", "a - b", "a * b", "a / b", "a % b",
          "a && b", "a || b", "a[b]", "a.startsWith(b)", "a.endsWith(b)", "a.contains(b)", "join(a, b)", "first(a, b)",
          "a ? b : a", "[a, b]", "[a] == [b]", "{'k': a} == {'k': b}", "a.exists(x, x == b)", "a.all(x, x != b)",
          "a.exists_one(x, x == b)", "a.map(x, [x, b])", "a.filter(x, x == b)", "a.matches(b)",
          "a.exists(x, x > b)", "a.all(x, x > b)", "a.exists_one(x, x > b)", "a.exists(x, x == adapter)", "a.all(x, x == adapter)",
          "a && adapter.x", "adapter.x || a", "a == adapter", "(a && b) && adapter_facts.x == 1", "a ? adapter : b",
          "a.map(x, x > adapter)", "!(adapter.x == a) || b"]
UNARY = ["!a", "-a", "size(a)", "a.size()", "string(a)", "has(a.a)", "a.a", "pytype(a)", "pysorted(a)", "pyset(a)",
         "first(a)", "unknown_keys_text(a)", "type(a) == int", "type(a) == double", "type(a) == bool", "type(a) == list",
         "type(a) == map", "type(a) == null_type", "type(a) == string", "a == null", "[a][0]", "{'k': a}['k']"]
PATTERNS = ["(?i)^(s3|gs|az)://", "(?i)^NGRAM$", "^(EAGLE|NEXTN)$", "gram", "(?i)k", "a.c", "(?i)^(a|b", "^$"]


@pytest.mark.parametrize("text", BINARY)
def test_each_operator_is_cels_on_pairs_of_every_kind(text):
    form, program = _form(text), cel.compile(text)
    failures = []
    for a, b in itertools.product(SAMPLES, SAMPLES + (PATTERNS if "matches" in text else [])):
        variables = {"a": a, "b": b}
        problem = _agrees(form, program, variables, cel_context(variables))
        if problem:
            failures.append(f"a={a!r} b={b!r}: {problem}")
    assert failures == []


@pytest.mark.parametrize("text", UNARY)
def test_each_function_is_cels_on_values_of_every_kind(text):
    form, program = _form(text), cel.compile(text)
    values = SAMPLES + [[{"file": "f", "key": "k", "suggestion": "s"}], [3, 1, 2], ["b", "a"], {"a": {"a": 2}}, [1, 2.0, True, None], [2, "a"], ["a", 2]]
    failures = []
    for a in values:
        problem = _agrees(form, program, {"a": a}, cel_context({"a": a}))
        if problem:
            failures.append(f"a={a!r}: {problem}")
    assert failures == []


def test_the_int_arithmetic_is_64_bit_truncating():
    assert cel_forms.div(-7, 2) == -3 and cel_forms.mod(-7, 2) == -1 and cel_forms.mod(7, -2) == 1
    for call in (lambda: cel_forms.add((1 << 63) - 1, 1), lambda: cel_forms.div(-(1 << 63), -1), lambda: cel_forms.neg(-(1 << 63)),
                 lambda: cel_forms.div(1, 0), lambda: cel_forms.mod(1, 0), lambda: cel_forms.mod(1.5, 1.0), lambda: cel_forms.add(1, 1.0),
                 lambda: cel_forms.eq((1 << 53) + 1, 1.0), lambda: cel_forms.lt(float("nan"), 1.0), lambda: cel_forms.string(1.5)):
        with pytest.raises(cel_forms.Unanswered):
            call()


@pytest.mark.parametrize(
    "text",
    ["9223372036854775808", "0x10", "1u", "'a\\n'", "r'a'", "'''a'''", "{1: 2}", "int(x)", "double(x)", "dyn(x)", "x.y(1, 2)",
     "type(x) == y", "type(x)", "int", "x.map(a, b, c)", "Msg{f: 1}", "x.exists(a.b, true)", "bytes('a')", "unknown(x)"],
)
def test_the_translator_refuses_what_it_cannot_answer(text):
    with pytest.raises(Untranslated):
        translate(text)


# -- the shipped expressions ------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    """(the generated module's text as generated now, texts left to CEL)."""
    return rules_python.fresh()


def test_every_shipped_expression_is_translated_or_listed(shipped):
    assert shipped[1] == UNTRANSLATED


def test_the_generated_modules_are_current(shipped):
    for module, source in shipped[0].items():
        assert (Path(rules_python.__file__).resolve().parents[1] / "data" / f"{module}.py").read_text(encoding="utf-8") == source, (
            f"run `{rules_python.COMMAND}`"
        )
    assert len(forms()) == shipped[0][RUN_MODULE].count("\n    ") and forms()
    assert len(param_forms()) == shipped[0][PARAMS_MODULE].count("\n    ") and param_forms()
    assert not set(forms()) & set(param_forms())


def test_a_passing_check_loads_no_params_forms(monkeypatch):
    """The forms of the texts only params hold are loaded where a rule fires (its message is
    rendered), not in a passing check; a failing one renders its params with them."""
    from inkling_compat.engine import python_first
    from inkling_compat.engine.evaluate import check

    root = Path(__file__).resolve().parent.parent
    monkeypatch.setattr(python_first, "_PARAM_FORMS", None)
    assert check(str(root / "examples/serve.yaml"), str(root / "examples/adapter_pool.yaml"), model=str(root / "examples/config.json")).problems == []
    assert python_first._PARAM_FORMS is None
    report = check(str(root / "examples/broken/serve.yaml"), str(root / "examples/broken/adapter_pool.yaml"), model=str(root / "examples/config.json"))
    assert report.problems and python_first._PARAM_FORMS


def _every_form():
    return sorted({**forms(), **param_forms()}.items())


class _Recording(ReferenceEvaluator):
    """The reference, keeping each check's variables."""

    def __init__(self, seen: dict[bytes, dict]):
        self.seen = seen

    def context(self, variables):
        try:
            self.seen.setdefault(marshal.dumps(variables), variables)
        except ValueError:
            pass
        return super().context(variables)


def _example_variables() -> list[dict]:
    from inkling_compat.engine.rule_load import load_rules

    seen: dict[bytes, dict] = {}
    recording = _Recording(seen)
    for c in load_rules():
        rules = [(c.rule, (c.rule.sglang_versions or [None])[0])] + [(c.rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for v in c.rule.variants]
        for rule, version in rules:
            for example in [*rule.examples.fire, *rule.examples.pass_]:
                try:
                    evaluate(**example_arguments(example.input), sglang_version=version, evaluator=recording)
                except InputError:
                    pass
    return list(seen.values())


def _hostile_variables(tmp: Path, count: int) -> list[dict]:
    from hostile import cases

    seen: dict[bytes, dict] = {}
    recording = _Recording(seen)
    for index in range(count):
        recipe = cases.recipe(1, index)
        directory = tmp / str(index)
        try:
            invocation = cases.materialize(recipe, directory)
        except OSError:
            continue
        try:
            if invocation["folders"]:
                continue
            try:
                evaluate(config=invocation["config"], adapter=invocation["adapters"] or None, model=invocation["model"], platform=invocation["platform"], evaluator=recording)
            except InputError:
                pass
        finally:
            cases.undo_permissions(directory)
    return list(seen.values())


@pytest.fixture(scope="module")
def programs():
    """(text, its form, its CEL program) of every shipped expression with a form."""
    return [(text, form, cel.compile(text)) for text, form in _every_form()]


def _disagreements(programs, variables) -> list[str]:
    ctx = cel_context(variables)
    assert is_plain(variables) == Variables(variables).plain
    if not is_plain(variables):
        return []
    return [f"{text!r}: {problem}" for text, form, program in programs if (problem := _agrees(form, program, variables, ctx))]


@pytest.fixture(scope="module")
def example_variables():
    return _example_variables()


@pytest.mark.long
def test_every_form_is_cels_in_the_variables_of_every_rule_example(programs, example_variables):
    failures = []
    for variables in example_variables:
        failures += _disagreements(programs, variables)
    assert failures[:20] == []


@pytest.mark.long
def test_each_rules_joined_form_is_its_joined_program(example_variables):
    """`(when) && (condition)`, composed of its parts' forms (python_first.joined_program), is
    what CEL's joined program gives, in every rule example's variables."""
    from inkling_compat.engine.python_first import joined_program
    from inkling_compat.engine.rule_load import load_rules

    joined = []
    for c in load_rules():
        for v in {id(x): x for x in [c, *(x for x in c._versions.values() if x is not None)]}.values():
            program = joined_program(v)
            if program.form is not None:
                joined.append((v.expression, program.form, cel.compile(v.expression)))
    assert len(joined) > 200
    failures = []
    for variables in example_variables[::3]:
        failures += _disagreements(joined, variables)
    assert failures[:20] == []


@pytest.mark.long
def test_every_form_is_cels_in_the_variables_of_the_hostile_corpus(programs, tmp_path):
    failures = []
    found = _hostile_variables(tmp_path, 60)
    for variables in found:
        failures += _disagreements(programs, variables)
    assert len(found) > 10 and failures[:20] == []


# -- mutated variables ------------------------------------------------------------------------
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, -1, 2, 16, 64, (1 << 63) - 1, -(1 << 63), 1 << 53, (1 << 53) + 1]),
    st.integers(-(1 << 63), (1 << 63) - 1), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, 1.0, 0.5]),
    st.text(max_size=6), st.sampled_from(["", "triton", "triton_v2", "lora_marlin", "peft", "pool", "fp8", "EAGLE", "ngram", "é"]),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["name", "dim", "shape", "kind", "r", "a"]), inner, max_size=3)), max_leaves=6)
_BASE: list[dict] = []


def _paths(value, prefix=()):
    if isinstance(value, dict):
        for key, child in value.items():
            yield prefix + (key,)
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value[:3]):
            yield prefix + (index,)
            yield from _paths(child, prefix + (index,))


def _mutated(variables: dict, path: tuple, value, delete: bool) -> dict:
    out = marshal.loads(marshal.dumps(variables))  # (a deep copy)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    if delete and isinstance(holder, dict):
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_form_is_cels_in_mutated_variables(data):
    if not _BASE:
        from inkling_compat.testing.scenarios import base_scenarios

        seen: dict[bytes, dict] = {}
        for scenario in list(base_scenarios().values())[:6]:
            try:
                evaluate(**example_arguments(scenario), evaluator=_Recording(seen))
            except InputError:
                pass
        _BASE.extend(seen.values())
        _BASE.append({"programs": [(t, f, cel.compile(t)) for t, f in _every_form()]})
    programs = _BASE[-1]["programs"]
    variables = data.draw(st.sampled_from(_BASE[:-1]))
    for _ in range(data.draw(st.integers(1, 4))):
        paths = sorted(set(_paths(variables)), key=repr)
        path = data.draw(st.sampled_from(paths))
        variables = _mutated(variables, path, data.draw(_VALUES), data.draw(st.booleans()))
    failures = _disagreements(programs, variables)
    assert failures[:10] == []


@pytest.mark.parametrize(
    "value,plain",
    [
        ({"a": [1, 2.5, True, None, "é", (1, {"b": "c"})]}, True),
        ({"a": 1 << 63}, False),
        ({"a": [-(1 << 63) - 1]}, False),
        ({"a": "\udcff"}, False),
        ({"\udcff": 1}, False),
        ({"a": {1: 2}}, False),
        ({"a": {1, 2}}, False),
        ({"a": [b"x"]}, False),
        ({"a": [[[object()]]]}, False),
        ("\udcff", False),
        (1 << 64, False),
        ([], True),
    ],
)
def test_only_plain_variables_run_the_forms(value, plain):
    assert is_plain(value) is plain
