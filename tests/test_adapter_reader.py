"""The adapter directory reader: real PEFT directories (written with `safetensors`), hostile and
broken files, and the header validator compared with the `safetensors` library itself."""

from __future__ import annotations

import json
import os
import pickle
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from adapter_fixtures import H, I, N, PREFIX, safetensors_bytes, sink_shapes, write_adapter  # noqa: E402

from inkling_compat import check  # noqa: E402
from inkling_compat.inputs.adapter_dir import (  # noqa: E402
    MAX_HEADER_BYTES,
    AdapterFileError,
    clear_caches,
    parse_header,
    read_adapter_dir,
    read_safetensors_header,
)

safetensors = pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def unreadable(manifest) -> tuple[str | None, str | None]:
    return manifest.source.unreadable_file, manifest.source.unreadable


# --- a real adapter ----------------------------------------------------------------------


def test_reads_a_peft_directory(tmp_path):
    folder = write_adapter(tmp_path / "sink", r=4, added_tokens={"<eos>": 5})
    manifest = read_adapter_dir(folder)
    assert manifest.name == "sink" and manifest.path == str(folder)
    assert manifest.adapter_config["r"] == 4 and manifest.adapter_config["target_modules"] == ["gate_up_proj", "down_proj"]
    assert manifest.added_tokens == {"<eos>": 5}
    assert manifest.source.weights_format == "safetensors" and manifest.source.unreadable is None
    expected = sink_shapes(r=4)
    assert {name: spec.shape for name, spec in manifest.tensors.items()} == expected
    assert {spec.dtype for _, spec in manifest.tensors.items()} == {"bfloat16"}


def test_only_the_header_is_read(tmp_path, monkeypatch):
    folder = write_adapter(tmp_path / "sink", r=4)
    weights = folder / "adapter_model.safetensors"
    (length,) = struct.unpack("<Q", weights.read_bytes()[:8])
    reads: list[int] = []
    real_open = open

    class Spy:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self, n=-1):
            data = self.handle.read(n)
            reads.append(len(data))
            return data

        def seek(self, *a):
            return self.handle.seek(*a)

    def spy_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        return Spy(handle) if str(path).endswith(".safetensors") else handle

    clear_caches()
    monkeypatch.setattr("builtins.open", spy_open)
    read_adapter_dir(folder)
    assert sum(reads) == 8 + length < weights.stat().st_size


def test_peft_adapter_checks_clean_with_the_examples(tmp_path):
    folder = write_adapter(tmp_path / "sink", r=16)
    report = check(EXAMPLES / "serve.yaml", str(folder), model=EXAMPLES / "config.json")
    assert report.problems == [], [p.message for p in report.problems]
    assert report.adapters == [{"name": "sink", "path": str(folder), "form": "peft"}]


def test_bundled_example_adapter_passes():
    report = check(EXAMPLES / "serve.yaml", EXAMPLES / "adapter", model=EXAMPLES / "config.json")
    assert report.problems == [], [p.message for p in report.problems]
    size = (EXAMPLES / "adapter" / "adapter_model.safetensors").stat().st_size
    assert size < 32 * 1024


def test_lora_paths_name_the_directory(tmp_path):
    folder = write_adapter(tmp_path / "dir-name", r=16)
    config = {"enable_lora": True, "lora_backend": "triton", "max_loras_per_batch": 4, "max_lora_rank": 16,
              "lora_target_modules": ["gate_up_proj", "down_proj"], "lora_paths": [f"support={folder}"]}  # fmt: skip
    report = check(config, str(folder), model=EXAMPLES / "config.json")
    assert report.adapters[0]["name"] == "support" and report.adapters[0]["path"] == str(folder)


def test_multiple_safetensors_files_are_merged(tmp_path):
    folder = write_adapter(tmp_path / "two", r=4)
    extra = {f"{PREFIX.format(layer=5)}.down_proj.lora_B.weight": [H, 4]}
    import torch
    from safetensors.torch import save_file

    save_file({k: torch.ones(v, dtype=torch.bfloat16) for k, v in extra.items()}, str(folder / "z-extra.safetensors"))
    manifest = read_adapter_dir(folder)
    assert manifest.source.weights_files == ["adapter_model.safetensors", "z-extra.safetensors"]
    assert set(extra) <= set(manifest.tensors)


def test_peft_loraconfig_parses_the_fixture(tmp_path):
    peft = pytest.importorskip("peft")
    folder = write_adapter(tmp_path / "sink", r=4)
    config = peft.LoraConfig.from_pretrained(str(folder))
    assert config.r == 4 and set(config.target_modules) == {"gate_up_proj", "down_proj"}


# --- hostile and broken directories: a problem for that adapter, never an exception ---------


def _header_file(folder: Path, header: dict, data: bytes, pad: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["down_proj"]}))
    (folder / "adapter_model.safetensors").write_bytes(safetensors_bytes(header, data, pad))


def _t(dtype="BF16", shape=(2, 2), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


NAME = f"{PREFIX.format(layer=0)}.down_proj.lora_B.weight"

# case -> (builder(folder), file, reason fragment)
HOSTILE = {
    "missing-config": (lambda d: (d.mkdir(), (d / "adapter_model.safetensors").write_bytes(safetensors_bytes({}, b""))), "adapter_config.json", "missing"),
    "config-invalid-json": (lambda d: (d.mkdir(), (d / "adapter_config.json").write_text('{"r": 4,')), "adapter_config.json", "invalid JSON"),
    "config-not-object": (lambda d: (d.mkdir(), (d / "adapter_config.json").write_text("[1, 2]")), "adapter_config.json", "expected an object"),
    "config-not-utf8": (lambda d: (d.mkdir(), (d / "adapter_config.json").write_bytes(b'{"r": "\xff\xfe"}')), "adapter_config.json", "not UTF-8"),
    "config-deeply-nested": (lambda d: (d.mkdir(), (d / "adapter_config.json").write_text("[" * 100_000 + "]" * 100_000)), "adapter_config.json", "nested too deeply"),
    "config-too-large": (lambda d: (d.mkdir(), os.truncate(_touch(d / "adapter_config.json"), 17 * 1024 * 1024)), "adapter_config.json", "limit"),
    "config-is-directory": (lambda d: (d.mkdir(), (d / "adapter_config.json").mkdir()), "adapter_config.json", "directory"),
    "added-tokens-not-object": (lambda d: (write_adapter(d), (d / "added_tokens.json").write_text("[1]")), "added_tokens.json", "expected an object"),
    "added-tokens-bad-id": (lambda d: (write_adapter(d), (d / "added_tokens.json").write_text('{"<x>": "7"}')), "added_tokens.json", "non-integer id"),
    "file-too-short": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(b"\x01\x02")), "adapter_model.safetensors", "too short"),
    "header-past-end": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(struct.pack("<Q", 4096) + b"{}")), "adapter_model.safetensors", "runs past the end"),
    "header-absurd": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(struct.pack("<Q", 2**63) + b"{}")), "adapter_model.safetensors", "limit"),
    "header-over-cap": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}")), "adapter_model.safetensors", "limit"),
    "header-truncated": (lambda d: (write_adapter(d), _truncate(d / "adapter_model.safetensors", 40)), "adapter_model.safetensors", "runs past the end"),
    "header-not-utf8": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(struct.pack("<Q", 4) + b"\xff\xfe{}")), "adapter_model.safetensors", "not UTF-8"),
    "header-not-json": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").write_bytes(struct.pack("<Q", 4) + b"{{}}")), "adapter_model.safetensors", "invalid JSON"),
    "header-not-object": (lambda d: _header_file(d, [], b""), "adapter_model.safetensors", "expected an object"),  # type: ignore[arg-type]
    "unknown-dtype": (lambda d: _header_file(d, {NAME: _t(dtype="Q8")}, bytes(8)), "adapter_model.safetensors", "unknown dtype"),
    "negative-shape": (lambda d: _header_file(d, {NAME: _t(shape=(-2, -2))}, bytes(8)), "adapter_model.safetensors", "non-negative"),
    "float-shape": (lambda d: _header_file(d, {NAME: _t(shape=(2.0, 2))}, bytes(8)), "adapter_model.safetensors", "non-negative"),
    "shape-beyond-64-bit": (lambda d: _header_file(d, {NAME: _t(shape=(2**64, 0))}, bytes(0), ), "adapter_model.safetensors", "64-bit"),
    "numel-overflow": (lambda d: _header_file(d, {NAME: _t(shape=(2**32, 2**32, 2))}, bytes(8)), "adapter_model.safetensors", "overflows"),
    "offsets-out-of-range": (lambda d: _header_file(d, {NAME: _t(offsets=(0, 800))}, bytes(8)), "adapter_model.safetensors", "span"),
    "offsets-backwards": (lambda d: _header_file(d, {NAME: _t(offsets=(8, 0))}, bytes(8)), "adapter_model.safetensors", "before they begin"),
    "offsets-overlap": (lambda d: _header_file(d, {NAME: _t(), NAME + "2": _t(offsets=(4, 12))}, bytes(16)), "adapter_model.safetensors", "overlaps"),
    "offsets-gap": (lambda d: _header_file(d, {NAME: _t(offsets=(8, 16))}, bytes(16)), "adapter_model.safetensors", "gap"),
    "size-disagrees-with-offsets": (lambda d: _header_file(d, {NAME: _t(shape=(2, 3))}, bytes(8)), "adapter_model.safetensors", "12 bytes"),
    "trailing-bytes": (lambda d: _header_file(d, {NAME: _t()}, bytes(24)), "adapter_model.safetensors", "padded"),
    "bad-metadata": (lambda d: _header_file(d, {"__metadata__": {"a": 1}, NAME: _t()}, bytes(8)), "adapter_model.safetensors", "__metadata__"),
    "entry-not-object": (lambda d: _header_file(d, {NAME: [1, 2]}, b""), "adapter_model.safetensors", "expected an object"),
    "entry-missing-keys": (lambda d: _header_file(d, {NAME: {"dtype": "BF16"}}, b""), "adapter_model.safetensors", "missing"),
    "weights-is-directory": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").unlink(), (d / "adapter_model.safetensors").mkdir()), "adapter_model.safetensors", "directory"),
    "symlink-outside": (lambda d: (write_adapter(d), (d / "adapter_config.json").unlink(), (d / "adapter_config.json").symlink_to("/etc/hostname")), "adapter_config.json", "outside the adapter directory"),
    "symlink-loop": (lambda d: (write_adapter(d), (d / "adapter_model.safetensors").unlink(), (d / "adapter_model.safetensors").symlink_to(d / "loop"), (d / "loop").symlink_to(d / "adapter_model.safetensors")), "adapter_model.safetensors", "loop"),
    "symlink-dangling": (lambda d: (write_adapter(d), (d / "adapter_config.json").unlink(), (d / "adapter_config.json").symlink_to(d / "gone.json")), "adapter_config.json", "dangling"),
}


def _touch(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _truncate(path: Path, size: int) -> None:
    os.truncate(path, size)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_directory_is_a_problem_of_that_adapter(tmp_path, case):
    build, file, reason = HOSTILE[case]
    folder = tmp_path / case
    build(folder)
    clear_caches()
    manifest = read_adapter_dir(folder)
    got_file, got_reason = unreadable(manifest)
    assert got_file == file and reason in got_reason, (got_file, got_reason)
    report = check(EXAMPLES / "serve.yaml", manifest, model=EXAMPLES / "config.json")
    assert [p.rule_id for p in report.problems] == ["adapter-file-unreadable"]
    assert report.problems[0].message.endswith(f"{file}: {got_reason}")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path):
    folder = write_adapter(tmp_path / "fifo")
    (folder / "adapter_model.safetensors").unlink()
    os.mkfifo(folder / "adapter_model.safetensors")
    manifest = read_adapter_dir(folder)  # opening a FIFO for reading would block forever
    assert unreadable(manifest) == ("adapter_model.safetensors", "is not a regular file (FIFO, socket or device)")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_a_problem(tmp_path):
    folder = write_adapter(tmp_path / "locked")
    (folder / "adapter_config.json").chmod(0)
    try:
        assert unreadable(read_adapter_dir(folder))[0] == "adapter_config.json"
    finally:
        (folder / "adapter_config.json").chmod(0o644)


class _Boom:
    """Unpickling this creates a marker file: the test fails if anything unpickles it."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_weights_are_never_unpickled(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}))
    marker = tmp_path / "unpickled"
    (folder / "adapter_model.bin").write_bytes(pickle.dumps(_Boom(str(marker))))
    manifest = read_adapter_dir(folder)
    assert manifest.source.weights_format == "pickle" and manifest.source.weights_files == ["adapter_model.bin"]
    report = check(EXAMPLES / "serve.yaml", manifest, model=EXAMPLES / "config.json")
    assert [p.rule_id for p in report.problems] == ["adapter-weights-pickle"]
    assert "never unpickles" in report.problems[0].message and report.problems[0].fixes
    assert not marker.exists()


def test_training_files_do_not_count_as_weights(tmp_path):
    folder = tmp_path / "cfg-only"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}))
    (folder / "training_args.bin").write_bytes(b"\x80\x04N.")
    (folder / ".hidden.safetensors").write_bytes(b"")
    manifest = read_adapter_dir(folder)
    assert manifest.source.weights_format == "none" and manifest.source.weights_files == []
    config = {"enable_lora": True, "lora_backend": "triton", "max_loras_per_batch": 4, "max_lora_rank": 16,
              "lora_target_modules": ["gate_up_proj", "down_proj"], "lora_paths": [f"cfg-only={folder}"]}  # fmt: skip
    report = check(config, str(folder), model=EXAMPLES / "config.json")
    assert [p.message for p in report.problems] == [f"Failed to load LoRA adapter cfg-only: Cannot find any model weights with `{folder}`"]


def test_invalid_added_tokens_is_sglangs_warning(tmp_path):
    folder = write_adapter(tmp_path / "tok", r=16)
    (folder / "added_tokens.json").write_text("")
    report = check(EXAMPLES / "serve.yaml", str(folder), model=EXAMPLES / "config.json")
    assert [(p.rule_id, p.message) for p in report.problems] == [
        ("adapter-added-tokens-unparsable", "Failed to parse added_tokens.json: Expecting value: line 1 column 1 (char 0)")
    ]
    assert report.ok


def test_not_a_directory_is_input_error(tmp_path):
    from inkling_compat.errors import InputError

    with pytest.raises(InputError):
        read_adapter_dir(tmp_path / "nope")


# --- the header validator against the safetensors library ------------------------------


def _valid_file() -> bytes:
    header = {
        "__metadata__": {"format": "pt"},
        "a.lora_A.weight": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
        "a.lora_B.weight": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]},
        "b.empty": {"dtype": "I64", "shape": [0, 4], "data_offsets": [24, 24]},
        "c.f4": {"dtype": "F4", "shape": [4], "data_offsets": [24, 26]},
    }
    return safetensors_bytes(header, bytes(range(26)))


VALID = _valid_file()
HEADER_END = 8 + struct.unpack("<Q", VALID[:8])[0]


def _library_view(path: Path) -> dict | None:
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {k: (list(handle.get_slice(k).get_shape()), handle.get_slice(k).get_dtype()) for k in handle.keys()}
    except Exception:  # noqa: BLE001 - any refusal of the library
        return None


def _our_view(path: Path) -> dict | None:
    clear_caches()
    try:
        return {k: (shape, dtype) for k, (shape, dtype) in read_safetensors_header(path).items()}
    except AdapterFileError:
        return None


def _agree(tmp_path_factory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    path.write_bytes(raw)
    ours, theirs = _our_view(path), _library_view(path)
    assert (ours is None) == (theirs is None), (raw[:HEADER_END + 4], ours, theirs)
    if ours is not None:
        assert ours == theirs


def test_valid_file_agrees(tmp_path_factory):
    _agree(tmp_path_factory, VALID)


FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, HEADER_END + 7), st.integers(0, 255)), min_size=1, max_size=4))
def test_byte_mutations_agree_with_safetensors(tmp_path_factory, edits):
    raw = bytearray(VALID)
    for position, value in edits:
        if position < len(raw):
            raw[position] = value
    _agree(tmp_path_factory, bytes(raw))


_numbers = st.one_of(st.integers(-3, 40), st.sampled_from([2**32, 2**63, 2**64 - 1, 2**64]), st.floats(0, 4), st.text(max_size=2), st.none())


@FUZZ
@given(
    st.sampled_from(["a.lora_A.weight", "a.lora_B.weight", "b.empty", "c.f4", "__metadata__"]),
    st.sampled_from(["dtype", "shape", "data_offsets", "extra", None]),
    st.one_of(_numbers, st.lists(_numbers, max_size=4), st.sampled_from(["BF16", "F16", "U8", "F8_E4M3", "F6_E2M3", "Q8", "bf16", ""])),
    st.integers(-8, 8),
)
def test_structured_mutations_agree_with_safetensors(tmp_path_factory, name, key, value, data_delta):
    header = json.loads(VALID[8:HEADER_END])
    data = VALID[HEADER_END:]
    if key is None:
        header[name] = value
    elif isinstance(header.get(name), dict):
        header[name][key] = value
    data = data[: max(0, len(data) + data_delta)] if data_delta < 0 else data + bytes(data_delta)
    _agree(tmp_path_factory, safetensors_bytes(header, data))


@FUZZ
@given(st.binary(max_size=64), st.integers(0, 2**64 - 1))
def test_arbitrary_prefix_is_bounded(tmp_path_factory, tail, length):
    """Any length prefix and any bytes: a clean answer, never an exception, a hang or a huge read."""
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    path.write_bytes(struct.pack("<Q", length) + tail)
    assert _our_view(path) is None or length <= len(tail)


def test_parse_header_rejects_with_reasons():
    with pytest.raises(AdapterFileError, match="unknown dtype"):
        parse_header(json.dumps({"x": {"dtype": "Z", "shape": [1], "data_offsets": [0, 1]}}).encode(), 1)
    assert parse_header(b"{}", 0) == {}


def test_example_shapes_are_the_model_shapes():
    assert sink_shapes(r=16)[f"{PREFIX.format(layer=0)}.gate_up_proj.lora_B.weight"] == [N * 2 * I, 16]


def test_a_directory_s_real_path_found_from_its_folder_s(tmp_path, monkeypatch):
    """read_fleet resolves a folder's real path once per check (LoraPathIndex.folders): an
    adapter directory that is no symlink gets realpath()'s answer; a symlink, or a path ending
    in `/`, `.` or `..`, is left to realpath itself (None)."""
    import os

    from inkling_compat.inputs.adapter_dir import _dir_real

    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    (real / "b").symlink_to(real / "a", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    folders: dict[str, str] = {}
    for path in (str(real / "a"), "real/a", "link/a", "./link/a", str(tmp_path / "link" / "a")):
        assert _dir_real(path, folders) == os.path.realpath(path)
    for path in ("real/b", "real/a/", "real/a/.", "real/a/..", "real/missing"):
        assert _dir_real(path, folders) is None


def test_the_interned_tables_are_held_weakly_as_a_weak_value_dictionary():
    """adapter_dir's table map against weakref.WeakValueDictionary on the same steps: an entry
    leaves with its value, and a key set again keeps its new value when the old one dies."""
    import gc
    import weakref

    from inkling_compat.inputs import adapter_dir

    class Value:
        pass

    ours, standard = adapter_dir._WeakValues(), weakref.WeakValueDictionary()
    held = {name: Value() for name in "abc"}
    for name, value in held.items():
        ours[name] = standard[name] = value
    replaced = Value()
    ours["a"] = standard["a"] = replaced  # (the first "a" still alive in `held`)
    del held["a"], held["b"]
    gc.collect()
    for key in "abcd":
        assert ours.get(key) is standard.get(key), key
    assert ours.get("a") is replaced and len(ours) == len(standard) == 2
    del replaced
    gc.collect()
    assert ours.get("a") is None and len(ours) == len(standard) == 1
    ours.clear()
    assert len(ours) == 0 and ours.get("c") is None
