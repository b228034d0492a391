"""schemas/*.schema.json are generated from the pydantic models and must be current;
every rule file, base scenario and example input validates.

Validation goes through the pydantic models (the source of truth). When `jsonschema`
happens to be installed (it is not a dependency), the rule files and scenarios are also
validated against the exported schemas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from inkling_compat.publish import schemas as schema_export
from inkling_compat.inputs.models import ModelConfig, PeftManifest, Platform, PoolManifest, ServerConfig
from inkling_compat.inputs.loading import load_adapter, load_model_config, load_platform, load_server_config
from inkling_compat.engine.rule_load import load_rule_file, rules_dir
from inkling_compat.engine.rule_schema import Rule
from inkling_compat.engine.rule_load import rule_files as _rule_files
from inkling_compat.testing.scenarios import base_scenarios

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def rule_files() -> list[Path]:
    return sorted(_rule_files())


def test_schema_files_are_current():
    stale = schema_export.stale_files()
    assert not stale, f"out of date: {stale}; run `python -m inkling_compat.publish.schemas`"


@pytest.mark.parametrize("name", sorted(schema_export.SCHEMAS))
def test_schema_file_shape(name):
    text = (schema_export.schemas_dir() / name).read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    data = json.loads(text)
    assert data["$id"] == schema_export.ID_PREFIX + name.removesuffix(".schema.json")
    assert data["$schema"] == schema_export.JSON_SCHEMA_DIALECT
    assert data["title"]
    assert json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n" == text


def test_export_is_deterministic():
    assert schema_export.render_all() == schema_export.render_all()


def test_schema_content_follows_models():
    rendered = {name: json.loads(text) for name, text in schema_export.render_all().items()}
    assert set(rendered["server-config.schema.json"]["properties"]) == set(ServerConfig.model_fields)
    assert set(rendered["model-config.schema.json"]["properties"]) == set(ModelConfig.model_fields)
    assert set(rendered["platform.schema.json"]["properties"]) == set(Platform.model_fields)
    adapter = rendered["adapter-manifest.schema.json"]
    assert {ref["$ref"].rsplit("/", 1)[-1] for ref in adapter["oneOf"]} == {"PoolManifest", "PeftManifest"}
    rule = rendered["rule.schema.json"]
    aliases = {f.alias or name for name, f in Rule.model_fields.items()}
    assert set(rule["properties"]) == aliases | {"family", "guards"}  # the file form (engine/definitions.py)
    required = {f.alias or name for name, f in Rule.model_fields.items() if f.is_required()}
    assert rule["required"] == ["id"]
    assert rule["anyOf"] == [{"required": ["family"]}, {"required": sorted(required, key=list(Rule.model_fields).index), "properties": {"source": rule["anyOf"][1]["properties"]["source"]}}]
    assert set(rule["anyOf"][1]["required"]) == required  # without a family, a rule file states everything
    assert "pass" in rule["$defs"]["Examples"]["properties"]
    assert {"GuardsFile", "FamilyFile", "PartialSource"} <= set(rule["$defs"])


def test_check_mode(tmp_path, capsys):
    assert schema_export.main(["--check", "--dir", str(tmp_path)]) == 1
    assert schema_export.main(["--dir", str(tmp_path)]) == 0
    assert schema_export.main(["--check", "--dir", str(tmp_path)]) == 0
    victim = tmp_path / "platform.schema.json"
    victim.write_text(victim.read_text(encoding="utf-8").replace('"H200"', '"H100"'), encoding="utf-8")
    assert schema_export.main(["--check", "--dir", str(tmp_path)]) == 1


@pytest.mark.parametrize("path", rule_files(), ids=lambda p: p.name)
def test_rule_file_validates(path):
    rule = load_rule_file(path).rule  # with its family and guards expanded
    assert Rule.model_validate(rule.model_dump(by_alias=True)) == rule
    assert rule.id == path.stem


@pytest.mark.parametrize("name", sorted(base_scenarios()))
def test_base_scenarios_validate(name):
    scenario = base_scenarios()[name]
    ServerConfig.model_validate(scenario.get("config") or {})
    ModelConfig.model_validate(scenario.get("model") or {})
    Platform.model_validate(scenario.get("platform") or {})
    if scenario.get("adapter") is not None:
        model = PoolManifest if "pool" in scenario["adapter"] else PeftManifest
        model.model_validate(scenario["adapter"])


def example_files() -> list[Path]:
    if not EXAMPLES.is_dir():
        return []
    return sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))


def load_example(path: Path) -> None:
    """Load an example file as the format its name or content says it is."""
    if "deployments" in path.parts:  # a deployment file: every sglang command in it found
        from inkling_compat.inputs.deployment import read_deployment

        assert read_deployment(str(path)).commands
        return
    if path.name == "adapter_config.json" and "hf-cache" in path.parts:  # a snapshot: links into its repository's blobs/
        from inkling_compat.inputs.adapter_dir import read_cached_adapter
        from inkling_compat.inputs.models import LoraRef

        manifest = read_cached_adapter(str(path.parent), str(path.parents[2]), LoraRef(name="cached", path=str(path.parent)))
        assert manifest.source.unreadable is None, manifest.source.unreadable
        return
    if path.name == "adapter_config.json":  # a PEFT adapter directory: read as the directory
        manifest, _ = load_adapter(path.parent)
        assert manifest.source.unreadable is None, manifest.source.unreadable
        return
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    name = path.name.lower()
    if isinstance(data, dict) and ("pool" in data or "adapter_config" in data) or "adapter" in name:
        load_adapter(path)
    elif name == "config.json" or "model" in name:
        load_model_config(path)
    elif "platform" in name:
        load_platform(path)
    else:
        load_server_config(path)


@pytest.mark.skipif(not example_files(), reason="no example files in examples/")
@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_file_loads(path):
    load_example(path)  # raises InputError on unusable input


# --- against the exported JSON Schemas, when jsonschema is available -------------------


def _validator(name: str):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((schema_export.schemas_dir() / name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_rule_files_match_json_schema():
    validator = _validator("rule.schema.json")
    for path in rule_files():
        errors = sorted(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))), key=str)
        assert not errors, f"{path.name}: {errors[0].message}"


def test_guard_and_family_files_match_json_schema():
    validator = _validator("rule.schema.json")
    defs = validator.schema["$defs"]
    cls = type(validator)
    files = [(rules_dir() / "_guards.yaml", "GuardsFile")] + [(p, "FamilyFile") for p in sorted(rules_dir().rglob("_family-*.yaml"))]
    assert len(files) > 1
    for path, definition in files:
        sub = cls({"$defs": defs, "$ref": f"#/$defs/{definition}"})
        errors = sorted(sub.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))), key=str)
        assert not errors, f"{path.name}: {errors[0].message}"


def test_scenarios_match_json_schemas():
    config = _validator("server-config.schema.json")
    adapter = _validator("adapter-manifest.schema.json")
    for scenario in base_scenarios().values():
        config.validate(scenario.get("config") or {})
        if scenario.get("adapter") is not None:
            adapter.validate(scenario["adapter"])
