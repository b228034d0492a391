"""The plain input records (inputs/models.py) against the pydantic models of the same names
(inputs/input_schema.py, built from the records): the same declarations, and the plain reader `read` agreeing with
pydantic's validation wherever it takes a mapping (same values, same stated fields, same extra
keys, same dump), and never taking one pydantic refuses (the loader then validates it with
pydantic: the same error message by construction). Over every rule example's inputs, the
shipped examples, and generated and hostile mappings."""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from inkling_compat.engine.rule_load import load_rules
from inkling_compat.inputs import input_schema
from inkling_compat.inputs import models as m
from inkling_compat.inputs.loading import _strip_unknown, validate
from inkling_compat.testing.scenarios import example_arguments

PYDANTIC = input_schema.pydantic_models(m)
CLASSES = [cls for name, cls in m.RECORDS.items() if cls is not m.TensorTable]


def _pydantic(cls: type) -> Any:
    return PYDANTIC[cls.__name__]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_record_declares_what_the_pydantic_model_declares(cls: type) -> None:
    model = _pydantic(cls)
    assert list(cls.__fact_fields__) == list(model.model_fields)
    assert cls.__doc__ == model.__doc__
    assert cls._extra == (model.model_config.get("extra") or "ignore")
    for name, spec in cls.__fact_fields__.items():
        declared = model.model_fields[name]
        assert spec.is_required() == declared.is_required(), name
        if spec.default_factory is not None:
            assert declared.default_factory is not None and _same(spec.default_factory(), declared.default_factory()), name
        elif not spec.is_required():
            assert spec.default == declared.default and type(spec.default) is type(declared.default), name
        # The record's annotation and its bounds, a record it names as the model of that name.
        resolved = cls.model_fields[name]
        assert "inputs.models." not in repr(declared.annotation), name
        assert _named(declared.annotation) == _named(resolved.annotation), name
        assert [_bound(b) for b in declared.metadata] == [_bound(b) for b in resolved.metadata], name


def _named(annotation: Any) -> str:
    return repr(annotation).replace("inkling_compat.inputs.input_schema.", "inkling_compat.inputs.models.")


def _bound(marker: Any) -> tuple[Any, ...]:
    """A bound (or the strict-bool marker) by its values: its range, whys and strictness."""
    return (type(marker), *(getattr(marker, slot) for slot in type(marker).__slots__))


def _same(record_value: Any, model_value: Any) -> bool:
    if hasattr(model_value, "__pydantic_fields__"):
        return record_value == m.from_validated(model_value)
    return bool(record_value == model_value)


def test_the_table_reads_as_the_root_model() -> None:
    data = {"w": {"shape": [2, 3]}, "v": {"shape": [], "dtype": "float32"}}
    table = m.TensorTable({name: m.read(m.TensorSpec, spec) for name, spec in data.items()})
    assert table == m.from_validated(PYDANTIC["TensorTable"].model_validate(data))
    assert table.model_dump(mode="json") == PYDANTIC["TensorTable"].model_validate(data).model_dump(mode="json")
    assert table.content == (("w", (2, 3), "bfloat16"), ("v", (), "float32"))


def assert_agree(cls: type, data: Any) -> str:
    """The plain reader and pydantic on `data`: 'plain' (both took it, alike), 'pydantic' (only
    pydantic took it: the loader uses pydantic's) or 'refused' (pydantic refused, the reader too)."""
    plain = m.read(cls, data)
    try:
        model = _pydantic(cls).model_validate(data)
    except ValidationError:
        assert plain is None, f"the plain reader took what pydantic refuses: {data!r:.300}"
        return "refused"
    if plain is None:
        return "pydantic"
    validated = m.from_validated(model)
    assert _equal(plain, validated), f"{data!r:.300}: {plain!r:.300} != {validated!r:.300}"
    assert _equal(plain.model_dump(mode="json"), model.model_dump(mode="json"))
    assert _equal(plain.model_dump(), model.model_dump())
    assert plain.model_fields_set == model.model_fields_set
    assert plain.model_extra == model.model_extra
    return "plain"


def _equal(a: Any, b: Any) -> bool:
    """Equal values of equal types, all the way down (1 == 1.0 == True are told apart; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, m._Input):
        return _equal(dict(a), dict(b)) and a.model_fields_set == b.model_fields_set and _equal(a.model_extra, b.model_extra)
    if isinstance(a, m.TensorTable):
        return _equal(a.root, b.root)
    return bool(a == b)


def _example_inputs() -> list[tuple[type, dict[str, Any]]]:
    from inkling_compat.inputs.loading import load_server_config  # noqa: F401 - the loader's own preparation below
    from inkling_compat.inputs.server_arguments import sort_arguments

    out: list[tuple[type, dict[str, Any]]] = []
    for compiled in load_rules():
        rule = compiled.rule
        for example in [*rule.examples.fire, *rule.examples.pass_]:
            arguments = example_arguments(example.input)
            config = arguments.get("config")
            if isinstance(config, dict):
                fields = m.ServerConfig.__fact_fields__
                data = config if all(k in fields for k in config) else sort_arguments(config, "<config>")[0]
                out.append((m.ServerConfig, _strip_unknown(m.ServerConfig, data)))
            elif hasattr(config, "server_config_data"):
                out.append((m.ServerConfig, _strip_unknown(m.ServerConfig, config.server_config_data())))
            if isinstance(arguments.get("model"), dict):
                out.append((m.ModelConfig, arguments["model"]))
            if isinstance(arguments.get("platform"), dict):
                out.append((m.Platform, _strip_unknown(m.Platform, arguments["platform"])))
            adapters = arguments.get("adapter")
            for adapter in adapters if isinstance(adapters, list) else [adapters]:
                if isinstance(adapter, dict):
                    cls = m.PoolManifest if "pool" in adapter else m.PeftManifest
                    out.append((cls, _strip_unknown(cls, adapter)))
    return out


def test_every_rule_example_reads_alike() -> None:
    outcomes: dict[str, int] = {}
    for cls, data in _example_inputs():
        outcome = assert_agree(cls, data)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    # The examples are typed as a file gives them: nearly all read without pydantic.
    assert outcomes.get("plain", 0) > 10 * (outcomes.get("pydantic", 0) + 1), outcomes


def test_an_empty_mapping_reads_as_pydantic_reads_it() -> None:
    """Read from no values (`ModelConfig()` of a check without a model: its defaults, without
    making the class's readers), every input record is pydantic's, or refused as pydantic
    refuses it (a required field)."""
    for cls in m.RECORDS.values():
        if isinstance(cls, type) and issubclass(cls, m._Input):
            assert assert_agree(cls, {}) in ("plain", "refused"), cls


def test_the_launch_example_reads_without_pydantic() -> None:
    from inkling_compat.inputs.launch import cli_config
    from inkling_compat.inputs.loading import read_document

    launch = cli_config(None, "examples/launch.sh", None)
    assert assert_agree(m.ServerConfig, _strip_unknown(m.ServerConfig, launch.server_config_data())) == "plain"
    assert assert_agree(m.ModelConfig, read_document("examples/model/config.json")) == "plain"
    assert assert_agree(m.Platform, {}) == "plain"
    for preset in m.PLATFORM_PRESETS.values():
        assert assert_agree(m.Platform, dict(preset)) == "plain"


# Hostile and generated values: what each field could be given by a file or a caller's dict.
_EDGE_INTS = [0, 1, -1, 2, 4096, 4097, 1 << 14, (1 << 14) + 1, 1 << 16, (1 << 16) + 1, 1 << 20, (1 << 20) + 1, 1 << 24, (1 << 63) - 1, 1 << 63, -(1 << 63), -(1 << 63) - 1, 10**50]
_TEXTS = ["", "0", "1", "true", "false", "True", "FALSE", "yes", "No", "on", "OFF", "t", "f", "y", "n", " 1", "1 ", "tru", "İ", "ı", "１", "legacy", "v2", "cuda", "rocm", "safetensors", "none", "9.0", "sm_90", "12.8", "bfloat16", "all", "\ud800"]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(_EDGE_INTS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, -0.0, 1.5, 9.0, 12.8, 1e300]),
    st.sampled_from(_TEXTS),
    st.text(max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.sampled_from(["shape", "dtype", "quant_method", "decoder_dmodel", "x", "SGLANG_RAGGED_VERIFY_MODE"]), st.text(max_size=4), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=8,
)


def _mappings(cls: type) -> Any:
    names = list(cls.__fact_fields__)
    keys = st.one_of(st.sampled_from(names), st.sampled_from(names), st.text(max_size=6))
    return st.dictionaries(keys, _VALUES, max_size=6)


def _typed_mappings(cls: type, depth: int = 0) -> Any:
    """Mappings whose values are mostly of their field's type: the reader's own ground."""
    fields = cls.model_fields  # (resolved annotations)
    parts = {}
    for name, spec in fields.items():
        parts[name] = _typed_value(spec.annotation, depth)
    return st.fixed_dictionaries({}, optional=parts)


def _typed_value(annotation: Any, depth: int) -> Any:
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _typed_value(annotation.__origin__, depth)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[_typed_value(a, depth) for a in typing.get_args(annotation)])
    if annotation is type(None):
        return st.none()
    if annotation is int:
        return st.one_of(st.sampled_from(_EDGE_INTS), st.integers(-3, 300), st.booleans())
    if annotation is bool:
        return st.one_of(st.booleans(), st.sampled_from(_TEXTS[:20]), st.sampled_from([0, 1, 2]))
    if annotation is str:
        return st.one_of(st.text(max_size=6), st.sampled_from(_TEXTS), st.integers(0, 2))
    if annotation is float:
        return st.one_of(st.floats(), st.integers(-2, 2), st.sampled_from(["0.5", "x"]))
    if origin is typing.Literal:
        return st.one_of(st.sampled_from(typing.get_args(annotation)), st.sampled_from(_TEXTS))
    if origin is list:
        (item,) = typing.get_args(annotation)
        return st.lists(_typed_value(item, depth), max_size=3)
    if origin is tuple:
        return st.one_of(st.tuples(*[_typed_value(a, depth) for a in typing.get_args(annotation)]), st.lists(st.integers(0, 12), max_size=3), st.sampled_from(["9.0", "sm_90", 9, 12.8]))
    if origin is dict:
        _, value_type = typing.get_args(annotation)
        return st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 2)), _typed_value(value_type, depth), max_size=3)
    if annotation is typing.Any:
        return _VALUES
    if annotation is m.TensorTable:
        return st.dictionaries(st.text(max_size=6), _typed_mappings(m.TensorSpec, depth + 1), max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, m._Input):
        return _typed_mappings(annotation, depth + 1) if depth < 2 else st.just({})
    raise AssertionError(f"no strategy for {annotation}")


@functools.cache
def _generated_and_hostile(cls: type) -> Any:
    """One strategy object per class, built once: hypothesis works out a strategy's properties
    (validation, emptiness, reusable values) once per object, so a strategy built afresh for
    every example spent more CPU on that than on drawing."""
    return st.one_of(_typed_mappings(cls), _mappings(cls))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_generated_and_hostile_mappings_read_alike(cls: type, data: Any) -> None:
    mapping = data.draw(_generated_and_hostile(cls))
    assert_agree(cls, _strip_unknown(cls, mapping) if cls._extra == "forbid" else mapping)


def test_the_loader_gives_pydantic_s_message_where_the_reader_declines() -> None:
    from inkling_compat.errors import InputError

    for cls, data, field in [
        (m.ServerConfig, {"tp_size": 0}, "tp_size"),
        (m.ServerConfig, {"tp_size": "2"}, None),
        (m.ServerConfig, {"max_lora_rank": "x"}, "max_lora_rank"),
        (m.ModelConfig, {"hidden_size": "64"}, "hidden_size"),
        (m.ModelConfig, {"use_sconv": "false"}, "use_sconv"),
        (m.Platform, {"compute_capability": "sm_100"}, None),
        (m.PeftManifest, {"adapter_config": {}, "tensors": {"w": {"shape": [-1]}}}, "tensors.w.shape.0"),
    ]:
        assert m.read(cls, data) is None
        try:
            expected: Any = m.from_validated(_pydantic(cls).model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            expected = InputError("f", ".".join(map(str, err["loc"])), err["msg"])
        try:
            got: Any = validate(cls, data, "f")
        except InputError as exc:
            got = exc
        if isinstance(expected, InputError):
            assert isinstance(got, InputError) and (got.field, str(got)) == (expected.field, str(expected)) and got.field == field
        else:
            assert _equal(got, expected)


def test_a_record_made_by_a_caller_is_validated_as_pydantic_validates_it() -> None:
    # A caller's typed input (check(config=ServerConfig(...))) is checked as a file is.
    assert m.ServerConfig(tp_size=2, lora_target_modules="all").lora_target_modules == ["all"]
    assert _equal(m.ServerConfig(tp_size="2"), m.from_validated(PYDANTIC["ServerConfig"](tp_size="2")))
    for cls, data in [(m.ServerConfig, {"tp_size": 0}), (m.ModelConfig, {"hidden_size": "64"}), (m.PeftManifest, {})]:
        with pytest.raises(ValidationError) as ours:
            cls(**data)
        with pytest.raises(ValidationError) as theirs:
            _pydantic(cls)(**data)
        assert ours.value.errors() == theirs.value.errors()
    # Records inside are taken as they are (as pydantic keeps a model it is given).
    source = m.AdapterSource(directory="/a")
    manifest = m.PeftManifest(adapter_config={}, source=source, tensors={"w": {"shape": [1, 2]}})
    assert manifest.source is source and manifest.tensors.content == (("w", (1, 2), "bfloat16"),)
    # model_construct, for what the package built itself, does not validate.
    assert m.ServerConfig.model_construct(tp_size=0).tp_size == 0
