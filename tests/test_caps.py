"""Work proportional to the input inside the documented caps (docs/fuzz.md): each case at or
near a cap ends with a report or a one-line exit 2 naming the right format.

The time bound here is a guard against hangs and quadratic work, not a speed target: each case
takes about 0.5-2 s on a loaded 2-core runner, and quadratic work at these sizes takes minutes.
The cases' times are measured by benchmarks/bench_caps.py and reported in docs/fuzz.md."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat import explain
from inkling_compat.errors import InputError
from inkling_compat.inputs import adapter_dir, loading, source_map
from inkling_compat.inputs.models import ServerConfig

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HANG_S = 30.0


def _cli(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "inkling_compat", *args], capture_output=True, text=True, timeout=60)
    return done, time.perf_counter() - start


def _refused(path: Path) -> tuple[str, float]:
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        loading.read_document(path)
    return str(info.value), time.perf_counter() - start


def test_a_10_mb_json_list_is_refused_as_json_by_its_value_count(tmp_path):
    path = tmp_path / "serve.json"
    path.write_text('{"enable_lora": true, "x": [' + ",".join(["0"] * 5_000_000) + "]}")
    message, took = _refused(path)
    assert "(json): more than 100000 values" in message and "JSON document" in message
    assert "YAML" not in message and "alias" not in message
    assert took < HANG_S


@pytest.mark.parametrize("text", ["x:\n" + "- 0\n" * 4_000_000, "x: [" + ",".join(["0"] * 5_500_000) + "]\n"], ids=["block-16MB", "flow-11MB"])
def test_a_long_yaml_list_is_refused_while_composing(tmp_path, text):
    path = tmp_path / "serve.yaml"
    path.write_text(text)
    message, took = _refused(path)
    assert "(yaml): more than 100000 values" in message and "alias" not in message
    assert took < HANG_S


def test_a_document_just_under_the_value_cap_still_reads(tmp_path):
    path = tmp_path / "serve.json"
    path.write_text('{"x": [' + ",".join(["0"] * 99_990) + "]}")
    assert len(loading.read_document(path)["x"]) == 99_990
    path = tmp_path / "serve.yaml"
    path.write_text("x:\n" + "- 0\n" * 99_990)
    assert len(loading.read_document(path)["x"]) == 99_990


def test_an_alias_bomb_is_still_called_one(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 6)]
    path = tmp_path / "serve.yaml"
    path.write_text("\n".join(lines) + "\n")
    message, _ = _refused(path)
    assert "alias bomb" in message


def test_20000_unknown_keys_are_all_reported(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text((EXAMPLES / "serve.yaml").read_text() + "".join(f"unknown_key_{i:06d}_xx: 1\n" for i in range(20_000)))
    done, took = _cli("check", "--config", str(config))
    assert done.returncode == 1, done.stderr
    assert "unknown_key_019999_xx" in done.stdout and "Traceback" not in done.stderr
    assert took < HANG_S


def test_30000_env_entries_are_all_reported(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text((EXAMPLES / "serve.yaml").read_text() + "env:\n" + "".join(f"  SGLANG_FAKE_{i:06d}: true\n" for i in range(30_000)))
    done, took = _cli("check", "--config", str(config))
    assert done.returncode == 1, done.stderr
    assert "env.SGLANG_FAKE_029999" in done.stdout
    assert took < HANG_S


def test_unknown_keys_keep_their_suggestions_and_are_linear():
    data = {"max_lora_rnk": 8, **{f"zz_{i}": 1 for i in range(40_000)}}
    start = time.perf_counter()
    found = loading.unknown_keys(ServerConfig, data)
    took = time.perf_counter() - start
    assert found[0] == {"key": "max_lora_rnk", "suggestion": "max_lora_rank"}
    assert len(found) == 40_001 and took < HANG_S
    from inkling_compat.engine.context import unknown_keys_text

    text = unknown_keys_text([dict(k, file="s.yaml") for k in found[:2]])
    assert text == "s.yaml: unknown key max_lora_rnk (did you mean max_lora_rank?), s.yaml: unknown key zz_0"


def _write_adapter(folder: Path, shards: list[list[str]]) -> None:
    folder.mkdir()
    (folder / "adapter_config.json").write_text((EXAMPLES / "adapter" / "adapter_config.json").read_text())
    for index, names in enumerate(shards):
        header = {name: {"dtype": "BF16", "shape": [0, 16], "data_offsets": [0, 0]} for name in names}
        raw = json.dumps(header).encode()
        (folder / f"adapter_model-{index:05d}-of-{len(shards):05d}.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)


@pytest.mark.long
def test_the_tensor_cap_counts_across_an_adapters_shards(tmp_path):
    shards = [[f"base_model.model.model.layers.{s}_{i}.mlp.lora_A.weight" for i in range(40_000)] for s in range(3)]
    _write_adapter(tmp_path / "a", shards)
    start = time.perf_counter()
    manifest = adapter_dir.read_adapter_dir(tmp_path / "a")
    assert time.perf_counter() - start < HANG_S
    assert "more than 100,000 tensors in the adapter's weights files (3 of 3 read)" in manifest.source.unreadable
    _write_adapter(tmp_path / "b", shards[:2])
    assert adapter_dir.read_adapter_dir(tmp_path / "b").source.unreadable is None


@pytest.mark.long
def test_placing_a_message_among_99000_tensors_is_linear(tmp_path):
    names = [f"base_model.model.model.layers.{i}.mlp.experts.gate_up_proj.lora_A.weight" for i in range(99_000)]
    _write_adapter(tmp_path / "a", [names])
    manifest = adapter_dir.read_adapter_dir(tmp_path / "a")
    message = "unexpected tensors: " + ", ".join(repr(n) for n in names[:70_000])
    assert len(message) > 5_000_000
    start = time.perf_counter()
    place = source_map._tensor_place(manifest, manifest.source, str(tmp_path / "a"), message)
    assert time.perf_counter() - start < HANG_S
    assert place.tensor in names[:70_000]
    first = names[5]
    assert source_map._tensor_place(manifest, manifest.source, "d", f"bad {first}.x here").tensor == first


_OLD_PREFIX = re.compile(r"^.*?\b(?:[A-Z]\w*(?:Error|Exception|Exit)|Traceback[^:]*):\s?")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Traceback", "ValueError:", "x:", " ", "Exit:", "(most recent call last):", "TracebackError:", "a", "\t", "É", ":"]), max_size=10))
def test_the_exception_prefix_strip_is_the_one_regex_it_replaces(parts):
    text = "".join(parts)
    assert explain.strip_exception_prefix(text) == _OLD_PREFIX.sub("", text, count=1)


def test_explain_is_linear_in_a_line_of_tracebacks():
    start = time.perf_counter()
    explain.findings("Traceback " * 16_000)
    assert time.perf_counter() - start < HANG_S


def test_unknown_server_arguments_are_linear(tmp_path):
    """A server config with 5,000 keys sglang does not know: each is argparse's
    'unrecognized arguments', without parsing each one or a 'did you mean' past the first 100."""
    from inkling_compat import check
    from inkling_compat.inputs.server_arguments import MAX_SUGGESTIONS

    path = tmp_path / "serve.yaml"
    path.write_text("enable_lora: true\nmax-lora-rnk: 8\n" + "".join(f"unknown-key-{i}: {i}\n" for i in range(5000)))
    start = time.perf_counter()
    report = check(str(path))
    assert time.perf_counter() - start < HANG_S
    (problem,) = [p for p in report.problems if p.rule_id == "unknown-config-key"]
    assert problem.message.startswith(f"{path}: unrecognized arguments: --max-lora-rnk 8 (did you mean max_lora_rank?)")
    assert problem.message.count("unrecognized arguments") == 5001
    assert problem.message.count("did you mean") <= MAX_SUGGESTIONS
