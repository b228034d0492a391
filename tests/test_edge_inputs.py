"""Inputs at the edges of what the checker computes with: a pool axis beyond int64 arithmetic,
a NUL in a path given to the Python API, a safetensors header rewritten in place."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inkling_compat import api
from inkling_compat.errors import InputError
from inkling_compat.inputs import adapter_dir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize(("buffer", "axis"), [("gate_up_lora_b", 2), ("down_lora_a", 3)])
def test_a_rebind_axis_of_2_to_the_62_is_an_input_error_not_exit_3(tmp_path, buffer, axis):
    doc = yaml.safe_load((EXAMPLES / "adapter_pool.yaml").read_text())
    doc["rebind"] = {k: dict(v, shape=list(v["shape"])) for k, v in doc["pool"].items()}
    doc["rebind"][buffer]["shape"][axis] = 2**62
    manifest = tmp_path / "pool.yaml"
    manifest.write_text(yaml.safe_dump(doc))
    args = ["--config", str(EXAMPLES / "serve.yaml"), "--model", str(EXAMPLES / "config.json"), "--adapter", str(manifest)]
    done = subprocess.run([sys.executable, "-m", "inkling_compat", "check", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "64-bit integer overflow" in done.stderr and "sink-pool-shape-changed" in done.stderr


@pytest.mark.parametrize(
    "kwargs",
    [
        {"config": "a\x00b.yaml"},
        {"config": str(EXAMPLES / "serve.yaml"), "model": "m\x00.json"},
        {"config": str(EXAMPLES / "serve.yaml"), "model": str(EXAMPLES / "config.json"), "adapter": "a\x00"},
        {"config": str(EXAMPLES / "serve.yaml"), "platform": "p\x00.yaml"},
    ],
)
def test_a_nul_in_a_path_is_an_input_error(kwargs):
    with pytest.raises(InputError, match="NUL character|not a directory|no such file"):
        api.check(**kwargs)


def _safetensors(names: list[str], dtype: str) -> bytes:
    raw = json.dumps({n: {"dtype": dtype, "shape": [1, 1], "data_offsets": [2 * i, 2 * i + 2]} for i, n in enumerate(names)}).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * (2 * len(names))


def test_a_header_rewritten_in_place_at_the_same_size_and_mtime_is_read_again(tmp_path):
    path = tmp_path / "adapter_model.safetensors"
    path.write_bytes(_safetensors(["a.lora_A.weight"], "BF16"))
    first = adapter_dir.read_safetensors_header(path)
    info = os.stat(path)
    rewritten = _safetensors(["b.lora_A.weight"], "BF16")  # same length, another name
    assert len(rewritten) == info.st_size
    with open(path, "r+b") as handle:
        handle.write(rewritten)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    again = os.stat(path)
    assert (again.st_size, again.st_mtime_ns, again.st_ino) == (info.st_size, info.st_mtime_ns, info.st_ino)
    assert first == {"a.lora_A.weight": ([1, 1], "BF16")}
    assert adapter_dir.read_safetensors_header(path) == {"b.lora_A.weight": ([1, 1], "BF16")}
