"""Every problem says where it is in the user's files (inputs/source_map.py): the server
config, model config or manifest file with line:column for its field paths, or the adapter
directory's adapter_config.json key / safetensors file and tensor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inkling_compat import check
from inkling_compat.inputs import source_map
from inkling_compat.inputs.source_map import Location, positions
from inkling_compat.report.text import render_text

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
BROKEN = dict(config=str(EX / "broken" / "serve.yaml"), adapter=str(EX / "broken" / "adapter_pool.yaml"), model=str(EX / "config.json"))


def _at(report, rule_id):
    return next(p for p in report.problems if p.rule_id == rule_id).locations


def _text_at(loc: Location) -> str:
    """The file's text from the location's line and column on."""
    line = Path(loc.file).read_text(encoding="utf-8").splitlines()[loc.line - 1]
    return line[loc.column - 1 :]


def test_positions_of_keys_and_items():
    text = "a: 1\nb:\n  c: [10, 20]\n  d:\n    - x: 1\n"
    found = positions(text)
    assert found["a"] == (1, 1)
    assert found["b.c"] == (3, 3)
    assert found["b.c[1]"] == (3, 11)
    assert found["b.d[0].x"] == (5, 7)


def test_positions_of_json_text():
    found = positions('{\n  "r": 4,\n  "target_modules": ["q", "k"]\n}\n')
    assert found["r"] == (2, 3)
    assert found["target_modules[1]"] == (3, 27)


@pytest.mark.parametrize("text", ["", "a: [unclosed", "- just\n- a list\n", "x: &a [1, 2]\ny: *a\n"])
def test_positions_never_raise(text):
    assert isinstance(positions(text), dict)


def test_broken_example_points_at_the_lines():
    report = check(**BROKEN)
    (typo,) = _at(report, "unknown-config-key")
    assert (typo.file, typo.line, typo.column, typo.field) == (BROKEN["config"], 5, 1, "max_lora_rnk")
    assert _text_at(typo).startswith("max_lora_rnk:")
    rank = _at(report, "sink-pool-rank-mismatch")
    assert [loc.field for loc in rank] == ["pool.gate_up_lora_a.shape[2]", "pool.gate_up_lora_b.shape[3]", "pool.down_lora_a.shape[2]", "pool.down_lora_b.shape[3]"]
    assert [_text_at(loc)[:2] for loc in rank] == ["16", "16", "16", "16"]  # each the rank item itself
    inter = {loc.field: loc for loc in _at(report, "sink-pool-intermediate-mismatch")}
    assert inter["intermediate_size"].file == BROKEN["model"]
    assert _text_at(inter["intermediate_size"]).startswith('"intermediate_size"')
    assert inter["tp_size"].line is None  # not in serve.yaml: the default is what fired


def test_every_stated_location_starts_at_its_key():
    for problem in check(**BROKEN).problems:
        for loc in problem.locations:
            if loc.line is None:
                continue
            last = loc.field.rsplit(".", 1)[-1]
            key = last.split("[", 1)[0]
            at = _text_at(loc)
            assert at.startswith((key, f'"{key}"')) or last.endswith("]"), (problem.rule_id, loc)


def test_text_output_shows_file_line_column():
    text = render_text(check(**BROKEN))
    assert f"  at {BROKEN['config']}:5:1 (max_lora_rnk)" in text
    assert f"  not in {BROKEN['config']} (defaults): lora_backend, max_loras_per_batch" in text


def test_json_config_and_env_keys(tmp_path):
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["all"], "env": {"SOME_FLAG": True}}, indent=2))
    report = check(str(config), str(EX / "adapter_pool.yaml"), model=str(EX / "config.json"))
    (loc,) = _at(report, "unknown-config-key")
    assert (loc.line, loc.column, loc.field) == (8, 5, "env.SOME_FLAG")  # (the list takes lines 4-6)
    assert _text_at(loc).startswith('"SOME_FLAG": true')


def test_multimodal_model_fields_under_text_config(tmp_path):
    model = json.loads((EX / "config.json").read_text())
    model["intermediate_size"] = 700  # no longer what the pool was built for
    nested = {"architectures": model.pop("architectures", None), "text_config": model}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(nested, indent=2))
    report = check(str(EX / "serve.yaml"), str(EX / "adapter_pool.yaml"), model=str(tmp_path))  # the model's folder
    places = [loc for p in report.problems for loc in p.locations if loc.field.endswith("intermediate_size")]
    assert places, [p.rule_id for p in report.problems]
    assert places[0].file == str(tmp_path / "config.json")
    assert places[0].field == "text_config.intermediate_size"
    assert _text_at(places[0]).startswith('"intermediate_size": 700')


def test_adapter_directory_points_at_adapter_config_key(tmp_path):
    pytest.importorskip("safetensors")
    from adapter_fixtures import write_adapter

    folder = write_adapter(tmp_path / "a", config={"use_dora": True})
    report = check(str(EX / "serve.yaml"), str(folder), model=str(EX / "config.json"))
    (loc,) = _at(report, "adapter-dora")
    assert loc.file == str(folder / "adapter_config.json")
    assert _text_at(loc).startswith('"use_dora": true')


def test_adapter_directory_points_at_the_safetensors_file(tmp_path):
    pytest.importorskip("safetensors")
    from adapter_fixtures import sink_shapes, write_adapter

    shapes = sink_shapes()
    shapes["base_model.model.llm.layers.0.self_attn.q_proj.lora_A.weight"] = [4, 1536]
    folder = write_adapter(tmp_path / "a", shapes)
    report = check(str(EX / "serve.yaml"), str(folder), model=str(EX / "config.json"))
    places = _at(report, "adapter-weight-no-target-module")
    assert Location(str(folder / "adapter_model.safetensors")) in places
    assert str(places[0]) == str(folder / "adapter_model.safetensors")


def test_tensor_named_in_the_message_is_located():
    class Source:
        weights_files = ["adapter_model.safetensors"]

    class Adapter:
        tensors = {"layers.0.a.lora_A.weight": None, "a": None}

    loc = source_map._tensor_place(Adapter(), Source(), "dir", "bad shape for layers.0.a.lora_A.weight")
    assert loc == Location("dir/adapter_model.safetensors", tensor="layers.0.a.lora_A.weight")
    assert str(loc) == "dir/adapter_model.safetensors (tensor layers.0.a.lora_A.weight)"


def test_dict_inputs_have_no_file_places():
    report = check({"enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["all"], "max_lora_rnk": 1}, None)
    assert report.problems and all(p.locations == () for p in report.problems)


def test_ok_path_reads_no_file_again(monkeypatch):
    def refuse(file):
        raise AssertionError(f"composed {file} again for an ok check")

    monkeypatch.setattr(source_map, "_read_positions", refuse)
    report = check(str(EX / "serve.yaml"), str(EX / "adapter_pool.yaml"), model=str(EX / "config.json"))
    assert report.ok and not report.problems


def test_a_file_changed_since_the_check_gives_no_line(tmp_path):
    maps = source_map.SourceMaps()
    assert maps.place(str(tmp_path / "gone.yaml"), "a") == Location(str(tmp_path / "gone.yaml"), "a")


def test_locations_in_json(tmp_path):
    data = check(**BROKEN).to_dict()
    (loc,) = data["problems"][0]["locations"]
    assert loc == {"file": BROKEN["config"], "field": "max_lora_rnk", "line": 5, "column": 1, "tensor": None}


def test_a_fifo_in_place_of_a_file_is_never_opened_for_reading(tmp_path):
    import os

    fifo = tmp_path / "serve.yaml"
    os.mkfifo(fifo)
    assert source_map._read_positions(str(fifo)) == {}  # (returns at once: no writer needed)


def test_positions_are_composed_once_per_content(tmp_path, monkeypatch):
    path = tmp_path / "serve.yaml"
    path.write_text("a: 1\nb: 2\n")
    calls = []
    real = source_map.positions
    monkeypatch.setattr(source_map, "positions", lambda text: calls.append(text) or real(text))
    monkeypatch.setattr(source_map, "_CACHE", {})
    assert source_map._read_positions(str(path))["b"] == (2, 1)
    assert source_map._read_positions(str(path))["b"] == (2, 1)
    path.write_text("b: 2\na: 1\n")  # same size, maybe the same mtime: still composed again
    assert source_map._read_positions(str(path))["b"] == (1, 1)
    assert len(calls) == 2


def test_platform_file_places(tmp_path):
    platform = tmp_path / "platform.yaml"
    platform.write_text("name: MI300X\ndevice: rocm\ncompute_capability: [9, 4]\n")
    config = tmp_path / "serve.yaml"
    config.write_text("enable_lora: true\nmax_lora_rank: 16\nlora_target_modules: [all]\nlora_backend: triton_v2\n")
    report = check(str(config), None, model=str(EX / "config.json"), platform=str(platform))
    places = {loc.field: (loc.file, loc.line, loc.column) for loc in _at(report, "lora-triton-v2-no-rocm")}
    assert places == {"lora_backend": (str(config), 4, 1), "device": (str(platform), 2, 1)}
    preset = check(str(config), None, model=str(EX / "config.json"), platform="mi300x")
    assert [loc.field for loc in _at(preset, "lora-triton-v2-no-rocm")] == ["lora_backend"]  # a preset is no file
