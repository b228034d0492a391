"""Bounded everything: hostile sizes in every input are unusable input (exit
2, one line naming the file and the path) or a problem of that adapter, in bounded time and
memory; never exit 3, never a loop over an absurd size.

* nesting: 400, 500, 5,000 and 100,000 levels in each document (server config YAML/JSON, model
  config JSON/YAML, manifest, adapter_config.json, added_tokens.json, safetensors header),
  refused before json/PyYAML/pydantic recurse (inputs/limits.py MAX_DEPTH = 64);
* numbers: 5,000- and 1,000,000-digit integers (Python's int() refuses 4,300), and a tensor
  name's layer number of that size;
* text: a lone surrogate ("\\ud800", which json.loads accepts);
* loops: TP ranks replayed per class of equal shapes, a zero-byte [2**62, 0, 2**62] tensor
  checked without a list over its first axis, layers walked as ranges;
* headers: a 100 MB legal header refused in constant time, more than MAX_TENSORS counted
  before parsing; the header cache bounded in bytes (LRU);
* fleets: a broken adapter is that adapter's problem, the others are still checked.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.errors import InputError
from inkling_compat.fleet import check_fleet
from inkling_compat.inputs import adapter_dir, limits
from inkling_compat.inputs.loading import read_document

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SERVE = (EXAMPLES / "serve.yaml").read_text(encoding="utf-8")
MODEL = json.loads((EXAMPLES / "config.json").read_text(encoding="utf-8"))
ADAPTER_CONFIG = json.loads((EXAMPLES / "adapter" / "adapter_config.json").read_text(encoding="utf-8"))
_RAW = (EXAMPLES / "adapter" / "adapter_model.safetensors").read_bytes()
_LENGTH = struct.unpack("<Q", _RAW[:8])[0]
HEADER = json.loads(_RAW[8 : 8 + _LENGTH])
DATA = _RAW[8 + _LENGTH :]
FIRST = next(name for name in HEADER if name != "__metadata__")
DEPTHS = [400, 500, 5000, 100_000]
DIGITS = [5000, 10**6]


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def safetensors_file(header_text: bytes, data: bytes = DATA) -> bytes:
    header_text += b" " * (-len(header_text) % 8)
    return len(header_text).to_bytes(8, "little") + header_text + data


def header_text(header: dict) -> bytes:
    return json.dumps(header, separators=(",", ":")).encode()


def adapter(folder: Path, *, config: str | None = None, added: str | None = None, weights: bytes | None = None) -> Path:
    """The bundled example adapter, with one file replaced."""
    shutil.copytree(EXAMPLES / "adapter", folder)
    if config is not None:
        (folder / "adapter_config.json").write_text(config, encoding="utf-8")
    if added is not None:
        (folder / "added_tokens.json").write_text(added, encoding="utf-8")
    if weights is not None:
        (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def unreadable_reason(report, name: str) -> str:
    """The adapter-file-unreadable message of adapter `name` (fails if it has none)."""
    found = [p for p in report.problems if p.adapter == name and p.rule_id == "adapter-file-unreadable"]
    assert found, [(p.adapter, p.rule_id) for p in report.problems]
    return found[0].message


def run_cli(*args: str, limit_mb: int = 1024, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    """The CLI in a child process whose address space is capped (bounded memory, not only time)."""
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0}));"
        "from inkling_compat.cli import main; sys.exit(main(sys.argv[1:]))"
    ).format(limit_mb * 1024 * 1024)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return done, time.monotonic() - start


# --- nesting --------------------------------------------------------------------------------


def _input_files(tmp_path: Path, depth: int) -> dict[str, tuple[Path, str]]:
    """One too-deep document of each input kind: file -> (path, the field path it names)."""
    files = {
        "serve.yaml": (SERVE + f"\nsink: {nested(depth)}\n", "sink"),
        "serve.json": ('{"enable_lora": true, "sink": ' + nested(depth) + "}", "sink"),
        "config.json": (json.dumps(MODEL)[:-1] + ', "quantization_config": ' + nested(depth) + "}", "quantization_config"),
        "config.yaml": ("hidden_size: 1536\nquantization_config: " + nested(depth) + "\n", "quantization_config"),
        "manifest.yaml": ("adapter_config:\n  r: 1\n  target_modules: " + nested(depth) + "\ntensors: {}\n", "adapter_config.target_modules"),
        "block.yaml": ("sink:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(min(depth, 900))) + "  " * 901 + "x: 1\n", "sink"),
    }
    out = {}
    for name, (text, field) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        out[name] = (tmp_path / name, field)
    return out


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_documents_are_input_errors_naming_file_and_path(tmp_path, depth):
    for name, (path, field) in _input_files(tmp_path, depth).items():
        with pytest.raises(InputError) as info:
            read_document(path)
        error = info.value
        assert error.file == str(path)
        text = str(error)
        if depth >= 1000 and name.endswith(".yaml") and name != "block.yaml":
            assert "nesting depth" in text  # libyaml's own refusal, with the line
        else:
            assert error.field.startswith(field), (name, error.field)
            assert "nested too deeply (more than 64 levels)" in error.reason and "(line " in error.reason, text


def test_deep_json_never_reaches_the_json_parser(tmp_path, monkeypatch):
    """The depth limit is applied on the raw bytes: json.loads is never called with a
    too-deep document (it would recurse), neither for inputs nor for adapter files."""
    from inkling_compat.inputs import loading

    def refuse(*args, **kwargs):
        raise AssertionError("json.loads reached with a too-deep document")

    monkeypatch.setattr(loading.json, "loads", refuse)
    path = tmp_path / "serve.json"
    path.write_text('{"sink": ' + nested(70) + "}", encoding="utf-8")
    with pytest.raises(InputError, match="nested too deeply"):
        read_document(path)
    with pytest.raises(adapter_dir.AdapterFileError, match="nested too deeply"):
        adapter_dir.parse_json(('{"a": ' + nested(70) + "}").encode(), "x.json")


def test_deep_yaml_through_aliases_never_reaches_the_constructor(tmp_path, monkeypatch):
    """Anchors of 30 levels, each referenced 30 levels down in the next: `b` is 60 levels
    deep once expanded (fine), `c` 90 (refused), though no line nests more than 31. Measured on
    the node graph; PyYAML's recursive constructor is never called."""
    import yaml

    def refuse(*args, **kwargs):
        raise AssertionError("the recursive constructor was reached")

    monkeypatch.setattr(yaml.constructor.SafeConstructor, "construct_document", refuse)
    text = f"a: &a {nested(30)}\nb: &b {nested(30, '*a')}\nc: {nested(30, '*b')}\n"
    path = tmp_path / "alias.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_document(path)
    assert "nested too deeply" in info.value.reason and info.value.field.startswith("c")


def test_shallow_documents_still_read(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('{"sink": ' + nested(63) + ', "a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', encoding="utf-8")
    assert read_document(path)["a"].startswith("[[")
    path = tmp_path / "ok.yaml"
    path.write_text("sink: " + nested(63) + "\n", encoding="utf-8")
    assert read_document(path)["sink"]


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_adapter_files_are_problems_of_that_adapter(tmp_path, depth):
    fleet = tmp_path / "fleet"
    adapter(fleet / "good")
    adapter(fleet / "config", config=json.dumps(ADAPTER_CONFIG)[:-1] + ', "x": ' + nested(depth) + "}")
    adapter(fleet / "tokens", added='{"a": ' + nested(depth) + "}")
    deep_meta = b'{"__metadata__":' + nested(depth, '"x"').encode() + b"," + header_text({k: v for k, v in HEADER.items() if k != "__metadata__"})[1:]
    adapter(fleet / "header", weights=safetensors_file(deep_meta))
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    for name in ("config", "tokens", "header"):
        assert "nested too deeply" in unreadable_reason(report, name), name
    assert not [p for p in report.problems if p.adapter == "good"]


def test_check_data_limits_caller_dicts():
    with pytest.raises(InputError) as info:
        check({"enable_lora": True, "sink": json.loads(nested(65))})
    assert info.value.field.startswith("sink[0]") and "nested too deeply" in info.value.reason
    loop: list = []
    loop.append(loop)
    with pytest.raises(InputError, match="nested too deeply"):
        check({"enable_lora": True, "sink": loop})


# --- numbers and text ----------------------------------------------------------------------------


@pytest.mark.parametrize("digits", DIGITS)
def test_long_integers_in_inputs_are_input_errors(tmp_path, digits):
    big = "9" * digits
    cases = {
        "serve.yaml": (SERVE.replace("tp_size: 1", f"tp_size: {big}"), "tp_size"),
        "unknown.yaml": (SERVE + f"\nfoo: [1, {big}]\n", "foo[1]"),
        "hex.yaml": (SERVE + f"\nfoo: 0x{'f' * digits}\n", "foo"),
        "config.json": (json.dumps(MODEL)[:-1] + f', "hidden_size": {big}' + "}", "hidden_size"),
        "unused.json": (json.dumps(MODEL)[:-1] + f', "zzz": {{"a": [{big}]}}' + "}", "zzz.a[0]"),
    }
    for name, (text, field) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        started = time.monotonic()
        with pytest.raises(InputError) as info:
            read_document(path)
        assert time.monotonic() - started < 5
        assert info.value.field == field, (name, str(info.value))
        assert f"digits (more than {limits.MAX_NUMBER_DIGITS})" in info.value.reason


def test_numbers_inside_strings_and_long_floats_are_fine(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('{"a": "' + "9" * 5000 + '", "b": 1.' + "5" * 300 + "}", encoding="utf-8")
    assert read_document(path)["a"] == "9" * 5000


@pytest.mark.parametrize("digits", DIGITS)
def test_long_integers_in_adapter_files_are_problems_of_that_adapter(tmp_path, digits):
    big = "9" * digits
    fleet = tmp_path / "fleet"
    adapter(fleet / "good")
    adapter(fleet / "rank", config=json.dumps(ADAPTER_CONFIG).replace('"r": 1', f'"r": {big}'))
    adapter(fleet / "tokens", added='{"tok": ' + big + "}")
    text = header_text(HEADER)
    first = HEADER[FIRST]
    shape = json.dumps(first["shape"], separators=(",", ":")).encode()
    offsets = json.dumps(first["data_offsets"], separators=(",", ":")).encode()
    adapter(fleet / "shape", weights=safetensors_file(text.replace(shape, f"[{big},0]".encode(), 1)))
    adapter(fleet / "offsets", weights=safetensors_file(text.replace(offsets, f"[0,{big}]".encode(), 1)))
    long_layer = FIRST.replace("layers.0.", f"layers.{big}.")
    adapter(fleet / "layer", weights=safetensors_file(text.replace(FIRST.encode(), long_layer.encode(), 1)))
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    for name in ("rank", "tokens", "shape", "offsets"):
        assert f"a number of {digits} digits" in unreadable_reason(report, name), name
    assert f"a layer number of {digits} digits" in unreadable_reason(report, "layer")
    assert not [p for p in report.problems if p.adapter == "good"]


def test_long_layer_number_in_a_manifest_is_an_input_error(tmp_path):
    path = tmp_path / "manifest.json"
    name = f"base_model.model.llm.layers.{'7' * 5000}.mlp.gate_up_proj.lora_A.weight"
    manifest = {"adapter_config": {"r": 1, "lora_alpha": 2, "target_modules": ["gate_up_proj"]}, "tensors": {name: {"shape": [1, 1536]}}}
    path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError) as info:
        check(EXAMPLES / "serve.yaml", path, model=EXAMPLES / "config.json")
    assert info.value.file == str(path) and "a layer number of 5000 digits" in info.value.reason


def test_lone_surrogates_are_refused(tmp_path):
    for name, text, field in (
        ("serve.json", '{"enable_lora": true, "lora_backend": "tri\\ud800ton"}', "lora_backend"),
        ("config.json", json.dumps(MODEL).replace('"inkling"', '"\\ud800"'), "model_type"),
        ("key.json", json.dumps(MODEL)[:-1] + ', "\\udc00x": 1}', "'\\udc00x'"),
    ):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as info:
            read_document(path)
        assert info.value.field == field and "lone UTF-16 surrogate" in info.value.reason, str(info.value)
    fleet = tmp_path / "fleet"
    adapter(fleet / "good")
    adapter(fleet / "config", config=json.dumps(ADAPTER_CONFIG).replace('"gate_up_proj"', '"gate_up_proj\\ud800"'))
    adapter(fleet / "tokens", added='{"\\ud800": 5}')
    adapter(fleet / "name", weights=safetensors_file(header_text(HEADER).replace(FIRST.encode(), FIRST.encode() + b"\\ud800", 1)))
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    for name in ("config", "tokens", "name"):
        assert "lone UTF-16 surrogate" in unreadable_reason(report, name), name
    assert not [p for p in report.problems if p.adapter == "good"]
    # A surrogate pair is one real character: read as such.
    path = tmp_path / "pair.json"
    path.write_text('{"a": "\\ud83d\\ude00"}', encoding="utf-8")
    assert read_document(path)["a"] == "\U0001f600"


# --- loops over sizes ------------------------------------------------------------------------------


@st.composite
def routed_layer(draw):
    """A layer's routed shared-sink weights (packed shapes or numbered experts), with a TP
    geometry where cuts cross the axis ends at different ranks."""
    dims = st.sampled_from([0, 1, 2, 3, 4, 6, 8, 16, 24, 48, 96, 100])
    sites = {}
    for site in ("gate_up_a", "gate_up_b", "down_a", "down_b"):
        kind = draw(st.sampled_from(["none", "packed2", "packed3", "dict"]))
        if kind == "packed2":
            sites[site] = draw(st.lists(dims, min_size=2, max_size=2))
        elif kind == "packed3":
            sites[site] = draw(st.lists(dims, min_size=3, max_size=3))
        elif kind == "dict":
            sites[site] = {e: draw(st.lists(dims, min_size=2, max_size=2)) for e in range(draw(st.integers(1, 3)))}
        else:
            sites[site] = None
    return sites


def _weights(sites: dict) -> dict[str, list[int]]:
    names = {"gate_up_a": "gate_up_proj.lora_A", "gate_up_b": "gate_up_proj.lora_B", "down_a": "down_proj.lora_A", "down_b": "down_proj.lora_B"}
    out = {}
    for site, weight in sites.items():
        if isinstance(weight, dict):
            for expert, shape in weight.items():
                out[f"base_model.model.llm.layers.3.mlp.shared_experts.experts.{expert}.{names[site]}.weight"] = shape
        elif weight is not None:
            out[f"base_model.model.llm.layers.3.mlp.shared_experts.{names[site]}.weight"] = weight
    return out


@settings(max_examples=300, deadline=None)
@given(routed_layer(), st.integers(1, 40), st.sampled_from([1, 2, 3, 5, 8, 16]), st.sampled_from([1, 2]), st.booleans(), st.sampled_from([1, 2, 4]))
def test_rank_classes_give_the_first_failure_of_every_rank(sites, tp, f_local, n, outer, r):
    """The pool replay over one rank per class equals the replay over all TP ranks."""
    from inkling_compat.sglang.pool_shapes import expected_pool_shapes
    from inkling_compat.sglang.load_to_buffer import _Fit

    weights = _weights(sites)
    if not weights:
        return
    pool = expected_pool_shapes(4, n, 4, 16, f_local, outer)
    targets = ["down_proj", "gate_up_proj"]
    fast = _Fit(pool, r, n, outer, tp, f_local)._layer_uncached(3, dict(weights), targets)
    slow_fit = _Fit(pool, r, n, outer, tp, f_local)
    slow = slow_fit._layer_uncached(3, dict(weights), targets, every_rank=True)
    assert fast == slow


def test_rank_classes_do_not_grow_with_tp():
    from inkling_compat.sglang.load_to_buffer import rank_classes

    routed = {"gate_up_a": [1, 1536], "gate_up_b": [3072, 1], "down_a": [1, 1536], "down_b": [1536, 1]}
    assert len(rank_classes(routed, 2, 10**20, 768 // 4)) < 20
    assert rank_classes(routed, 2, 10**20, 0) == [0]  # intermediate_size // tp == 0: one class


@pytest.mark.parametrize("shape", [[2**62, 0, 2**62], [10**8, 0, 1]])
@pytest.mark.parametrize("outer", [True, False])
def test_zero_byte_tensors_with_huge_axes_are_checked_without_a_loop(tmp_path, shape, outer):
    name = FIRST.replace("down_proj.lora_A", "gate_up_proj.lora_A")
    rest = {k: v for k, v in HEADER.items() if k not in ("__metadata__", name)}
    position, data, entries = 0, b"", {}
    for key, entry in sorted(rest.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = entry["data_offsets"]
        entries[key] = dict(entry, data_offsets=[position, position + end - begin])
        position += end - begin
        data += DATA[begin:end]
    header = {name: {"dtype": "BF16", "shape": shape, "data_offsets": [0, 0]}, **entries}
    fleet = tmp_path / "fleet"
    adapter(fleet / "zero", weights=safetensors_file(header_text(header), data))
    config = tmp_path / "serve.yaml"
    config.write_text(SERVE.replace("experts_shared_outer_loras: true", f"experts_shared_outer_loras: {str(outer).lower()}"), encoding="utf-8")
    tracemalloc.start()
    started = time.monotonic()
    report = check_fleet(config, [fleet], model=EXAMPLES / "config.json")
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 10 and peak < 200 * 1024 * 1024, (elapsed, peak)
    ids = {p.rule_id for p in report.problems if p.adapter == "zero"}
    assert ids, "an expert axis of 10**8 in a pool of 2 experts (or 1) is a problem"


def test_the_layer_walk_is_a_range():
    """facts/model.py walks layers lazily: a model of the largest accepted layer count with
    every layer excluded costs one pass, and nothing is a list of layers."""
    from inkling_compat.facts.model import quantization_facts
    from inkling_compat.inputs.models import ModelConfig

    model = ModelConfig.model_validate(dict(MODEL, num_hidden_layers=4096))
    started = time.monotonic()
    quantization_facts(model)
    assert time.monotonic() - started < 10  # a hang guard: one pass takes milliseconds


# --- large headers and the header cache ------------------------------------------------------------


def _many_tensors(count: int) -> bytes:
    header = {"__metadata__": {"format": "pt"}}
    for i in range(count):
        header[str(i)] = {"dtype": "BF16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]}
    return safetensors_file(header_text(header), b"\0" * (2 * count))


def test_a_100_mb_header_is_not_read(tmp_path):
    """safetensors allows a 100,000,000-byte header (1.4 M tensors here: 19 s and 1.3 GB to
    check in full before this limit); it is refused from its 8-byte length, in constant time."""
    folder = adapter(tmp_path / "fleet" / "big")
    length = 99_999_992
    with open(folder / "adapter_model.safetensors", "wb") as handle:
        handle.write(length.to_bytes(8, "little"))
        handle.truncate(8 + length)  # sparse: a legal length, no 100 MB written
    tracemalloc.start()
    started = time.monotonic()
    report = check_fleet(EXAMPLES / "serve.yaml", [tmp_path / "fleet"], model=EXAMPLES / "config.json")
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "more than the 16,777,216 bytes this checker reads" in unreadable_reason(report, "big")
    assert elapsed < 5 and peak < 50 * 1024 * 1024, (elapsed, peak)


def test_more_tensors_than_the_cap_are_counted_before_parsing(tmp_path, monkeypatch):
    """A header under the byte limit with more than MAX_TENSORS tensors: refused from the
    count of JSON objects on the raw bytes; json.loads never parses it."""
    import inkling_compat.inputs.adapter_dir as reader

    monkeypatch.setattr(reader, "MAX_TENSORS", 1000)
    adapter(tmp_path / "fleet" / "many", weights=_many_tensors(1001))
    adapter(tmp_path / "fleet" / "fine", weights=None)
    real_loads = json.loads

    def loads(text, *args, **kwargs):
        body = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        assert '"1000":{"dtype"' not in body, "the capped header was parsed"
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(reader.json, "loads", loads)
    report = check_fleet(EXAMPLES / "serve.yaml", [tmp_path / "fleet"], model=EXAMPLES / "config.json")
    assert "more than 1,000 tensors in the header (1,001)" in unreadable_reason(report, "many")
    assert not [p for p in report.problems if p.adapter == "fine"]


def test_header_cache_is_bounded_in_bytes_lru(tmp_path, monkeypatch):
    adapter_dir.clear_caches()
    monkeypatch.setattr(adapter_dir, "_HEADERS", adapter_dir._HeaderCache(600_000))
    folders = []
    for i in range(8):  # each header ~61 KB of JSON (cost ~245 KB): two fit the budget
        folders.append(adapter(tmp_path / f"a{i}", weights=_many_tensors(1000 + i)))
    for folder in folders:
        adapter_dir.read_adapter_dir(folder)
        assert adapter_dir._HEADERS.used <= 600_000
        assert len(adapter_dir._HEADERS._by_file) <= 2  # file entries go with their content
    assert len(adapter_dir._HEADERS) == 2
    # The most recently used stay: reading the last one again is a hit (no parse).
    calls = []
    real = adapter_dir.parse_header
    monkeypatch.setattr(adapter_dir, "parse_header", lambda *a, **k: calls.append(1) or real(*a, **k))
    adapter_dir.read_adapter_dir(folders[-1])
    assert calls == []
    adapter_dir.read_adapter_dir(folders[0])
    assert calls == [1]
    adapter_dir.clear_caches()


def test_cached_tables_are_released_with_their_headers(tmp_path, monkeypatch):
    import gc

    adapter_dir.clear_caches()
    monkeypatch.setattr(adapter_dir, "_HEADERS", adapter_dir._HeaderCache(600_000))
    for i in range(6):
        adapter_dir.read_adapter_dir(adapter(tmp_path / f"a{i}", weights=_many_tensors(1000 + i)))
    gc.collect()
    assert len(adapter_dir._TABLES) <= 2
    adapter_dir.clear_caches()


# --- fleets ----------------------------------------------------------------------------------------


def test_hostile_fleet_gives_every_adapter_a_result_in_bounded_memory(tmp_path):
    fleet = tmp_path / "fleet"
    adapter(fleet / "a-good")
    adapter(fleet / "deep", config="[" * 100_000 + "]" * 100_000)
    adapter(fleet / "digits", added='{"t": ' + "1" * 10**6 + "}")
    adapter(fleet / "surrogate", config=json.dumps(ADAPTER_CONFIG).replace('"none"', '"\\udfff"'))
    adapter(fleet / "layer", weights=safetensors_file(header_text(HEADER).replace(FIRST.encode(), FIRST.replace("layers.0.", "layers." + "3" * 5000 + ".").encode(), 1)))
    adapter(fleet / "z-good")
    done, elapsed = run_cli("check", "--config", str(EXAMPLES / "serve.yaml"), "--model", str(EXAMPLES / "config.json"), "--adapter-dir", str(fleet), "--format", "json", limit_mb=1024)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    by_name = {a["name"]: a for a in result["adapters"]}
    assert set(by_name) == {"a-good", "deep", "digits", "surrogate", "layer", "z-good"}
    assert by_name["a-good"]["ok"] and by_name["z-good"]["ok"]
    for name in ("deep", "digits", "surrogate", "layer"):
        assert not by_name[name]["ok"]
    assert elapsed < 30


def test_a_defect_checking_one_adapter_is_that_adapters_problem(tmp_path, monkeypatch):
    """Should checking one adapter still fail inside inkling-compat, the fleet is checked
    without it and the failure is that adapter's problem (the defect's text is kept)."""
    import inkling_compat.facts.adapter as facts_adapter

    fleet = tmp_path / "fleet"
    adapter(fleet / "good")
    adapter(fleet / "bad", config=json.dumps(dict(ADAPTER_CONFIG, base_model_name_or_path="explode")))
    real = facts_adapter.own_facts

    def own_facts(manifest, *args, **kwargs):
        if getattr(manifest, "adapter_config", {}).get("base_model_name_or_path") == "explode":
            raise ValueError("boom")
        return real(manifest, *args, **kwargs)

    monkeypatch.setattr(facts_adapter, "own_facts", own_facts)
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    message = unreadable_reason(report, "bad")
    assert "a defect: please report it" in message and "ValueError: boom" in message
    assert not [p for p in report.problems if p.adapter == "good"]


def test_a_defect_reading_one_adapter_is_that_adapters_problem(tmp_path, monkeypatch):
    fleet = tmp_path / "fleet"
    adapter(fleet / "good")
    adapter(fleet / "bad")
    real = adapter_dir.read_adapter_dir

    def read(directory, **kwargs):
        if os.path.basename(directory) == "bad":
            raise RecursionError("deep inside")
        return real(directory, **kwargs)

    monkeypatch.setattr(adapter_dir, "read_adapter_dir", read)
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    assert "RecursionError: deep inside" in unreadable_reason(report, "bad")
    assert not [p for p in report.problems if p.adapter == "good"]


# --- the command line, in a process with capped memory ----------------------------------------------


@pytest.mark.parametrize(
    "name, text",
    [
        ("serve.json", '{"sink": ' + nested(100_000) + "}"),
        ("serve.yaml", SERVE.replace("tp_size: 1", "tp_size: " + "9" * 10**6)),
        ("serve2.yaml", SERVE.replace("tp_size: 1", "tp_size: 100000000000000000000")),
    ],
)
def test_cli_exit_2_one_line(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done, elapsed = run_cli("check", "--config", str(path), "--model", str(EXAMPLES / "config.json"), "--adapter", str(EXAMPLES / "adapter"), limit_mb=768)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in done.stderr
    assert elapsed < 30


def test_cli_model_with_absurd_layer_count_exits_2(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(MODEL, num_hidden_layers=2**31)), encoding="utf-8")
    done, _ = run_cli("check", "--config", str(EXAMPLES / "serve.yaml"), "--model", str(path), limit_mb=768)
    assert done.returncode == 2 and "num_hidden_layers" in done.stderr, done.stderr


# --- files that are not files -------------------------------------------------------------------


def test_fifo_input_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "serve.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        read_document(fifo)
    assert time.monotonic() - started < 5 and "FIFO" in info.value.reason


def test_a_device_is_read_at_most_to_the_size_limit(tmp_path):
    link = tmp_path / "config.json"
    link.symlink_to("/dev/zero")
    tracemalloc.start()
    with pytest.raises(InputError) as info:
        read_document(link)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "byte limit" in info.value.reason and peak < 40 * 1024 * 1024
    assert read_document("/dev/null") == {}


# --- quantization excludes over many layers ----------------------------------------------------------

_TAILS = [".mlp.shared_experts.shared_w13_weight", ".mlp.shared_experts.shared_w2_weight", ".mlp.experts", ".attn.qkvr", ".mlp.gate_up_proj"]


@st.composite
def exclude_modules(draw):
    """Modules as exclude lists hold them (slices of real prefixes, with layer numbers in them)
    and as hostile ones do (digits anywhere, pieces of the template)."""
    out = []
    for _ in range(draw(st.integers(0, 6))):
        layer = draw(st.sampled_from([0, 1, 3, 7, 10, 12, 21, 100, 101, 310, 4095]))
        text = "llm.layers." + str(layer) + draw(st.sampled_from(_TAILS))
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start, len(text)))
        out.append(text[start:end])
    out += draw(st.lists(st.text(alphabet="0123.lmsx_13w", max_size=6), max_size=4))
    return out


@settings(max_examples=400, deadline=None)
@given(exclude_modules(), st.sampled_from(_TAILS))
def test_layer_exclusions_equal_the_substring_test(modules, tail):
    from inkling_compat.facts.model import LayerExclusions, _excluded

    fast = LayerExclusions(modules, "llm.layers.", tail)
    for layer in [*range(0, 130), 310, 1000, 1010, 3101, 4095]:
        assert fast(layer) == _excluded(modules, f"llm.layers.{layer}{tail}"), (layer, modules)


def test_a_huge_exclude_list_on_many_layers_is_quick():
    """50,000 excluded modules that match nothing, then three that exclude everything, on
    4,096 layers: more than 300 s one substring test at a time."""
    from inkling_compat.facts.model import quantization_facts
    from inkling_compat.inputs.models import ModelConfig

    quant = {
        "quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
        "modelopt_quant_config": {"quant_cfg": {"*weight_quantizer": {"num_bits": [2, 1], "block_sizes": {"scale_bits": [4, 3]}}}},
        "exclude_modules": [f"aaaa{i}" for i in range(50_000)] + [f"layers.{d}" for d in range(10)] + ["shared_experts", "attn", "mlp"],
    }
    model = ModelConfig.model_validate(dict(MODEL, num_hidden_layers=4096, quantization_config=quant))
    started = time.monotonic()
    facts, sink_bf16 = quantization_facts(model)
    assert time.monotonic() - started < 20
    assert sink_bf16 and not facts.routed_moe_quantized and not facts.linears_quantized


def test_a_recursive_yaml_alias_is_refused_not_walked_forever(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("enable_lora: true\nsink: &a [*a, *a, *a]\n", encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        read_document(path)
    assert time.monotonic() - started < 10 and "nested too deeply" in info.value.reason and info.value.field.startswith("sink")


def test_a_caller_dict_sharing_sub_objects_is_counted_not_walked_forever():
    shared: list = [1]
    for _ in range(60):
        shared = [shared, shared]  # 2**60 values once walked as a tree
    started = time.monotonic()
    with pytest.raises(InputError, match="more than 500000 values"):
        check({"enable_lora": True, "sink": shared})
    assert time.monotonic() - started < 20
