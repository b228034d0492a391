"""Fleet checks: `--adapter-dir` and lists of adapter directories, per-adapter results, hostile
members, exit codes, the progress bar, and the fleet fast path's equivalence with the plain
rules it replaces."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from adapter_fixtures import H, PREFIX, safetensors_bytes, sink_shapes, write_adapter  # noqa: E402

from inkling_compat import check  # noqa: E402
from inkling_compat.errors import InputError  # noqa: E402
from inkling_compat.facts.derive import derive  # noqa: E402
from inkling_compat.facts.inputs import load_inputs  # noqa: E402
from inkling_compat.fleet import ProgressBar, check_fleet  # noqa: E402
from inkling_compat.inputs.loading import load_adapter, load_model_config  # noqa: E402
from in_process import run_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process (tests/in_process.py)."""
    return lambda *args: run_main(capsys, *args)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """Good, incompatible and hostile adapters side by side."""
    root = tmp_path_factory.mktemp("fleet")
    folder = root / "adapters"
    write_adapter(folder / "good", r=16)
    write_adapter(folder / "good-small-rank", r=8)
    write_adapter(folder / "rank-32", r=32)  # above --max-lora-rank 16
    write_adapter(folder / "other-model", sink_shapes(r=16, hidden=2048), r=16)  # trained for hidden 2048
    broken = folder / "broken-config"
    write_adapter(broken, r=16)
    (broken / "adapter_config.json").write_text('{"r": 16,', encoding="utf-8")
    truncated = folder / "truncated"
    write_adapter(truncated, r=16)
    os.truncate(truncated / "adapter_model.safetensors", 100)
    lying = folder / "lying-header"
    lying.mkdir()
    (lying / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["down_proj"]}))
    (lying / "adapter_model.safetensors").write_bytes(
        safetensors_bytes({f"{PREFIX.format(layer=0)}.down_proj.lora_B.weight": {"dtype": "BF16", "shape": [H, 16], "data_offsets": [0, 2**40]}}, bytes(64))
    )
    pickled = folder / "pickled"
    pickled.mkdir()
    (pickled / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}))
    (pickled / "adapter_model.bin").write_bytes(b"\x80\x04K\x01.")
    escape = folder / "escape"
    write_adapter(escape, r=16)
    (escape / "adapter_config.json").unlink()
    (escape / "adapter_config.json").symlink_to(root / "outside.json")
    (root / "outside.json").write_text("{}")
    outside = write_adapter(root / "elsewhere", r=16)
    (folder / "linked-out").symlink_to(outside, target_is_directory=True)
    (folder / "notes.txt").write_text("not an adapter")  # files are not fleet members
    (folder / ".cache").mkdir()  # hidden folders are skipped
    return folder


EXPECTED = {
    "broken-config": ["adapter-file-unreadable"],
    "escape": ["adapter-file-unreadable"],
    "good": [],
    "good-small-rank": [],
    "linked-out": ["adapter-file-unreadable"],
    "lying-header": ["adapter-file-unreadable"],
    "other-model": ["adapter-pool-shape-mismatch"],
    "pickled": ["adapter-weights-pickle"],
    "rank-32": ["adapter-incompatible-with-pool"],
    "truncated": ["adapter-file-unreadable"],
}


def by_name(report) -> dict[str, list[str]]:
    return {a["name"]: [p["rule_id"] for p in a["problems"]] for a in report.by_adapter()}


def test_api_fleet(fleet):
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    assert by_name(report) == EXPECTED
    assert not report.ok and all(p.adapter_index is not None for p in report.problems)
    # The same through check() with a list of directories.
    again = check(EXAMPLES / "serve.yaml", sorted(str(p) for p in fleet.iterdir() if p.is_dir() and not p.name.startswith(".")), model=EXAMPLES / "config.json")
    names = {a["name"]: a for a in again.by_adapter()}
    assert {n: [p["rule_id"] for p in a["problems"]] for n, a in names.items()} == dict(EXPECTED, **{"linked-out": []})


def test_cli_fleet_text(fleet, run_cli):
    result = run_cli("check", "--config", EXAMPLES / "serve.yaml", "--model", EXAMPLES / "config.json", "--adapter-dir", fleet)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr and result.stderr == ""
    lines = result.stdout.splitlines()
    assert f"adapter good ({fleet / 'good'}): ok" in lines
    assert f"adapter rank-32 ({fleet / 'rank-32'}): 1 error(s), 0 warning(s)" in lines
    assert any(line.startswith("  runtime adapter-pool-shape-mismatch") for line in lines)
    assert "LoRA buffer shape torch.Size([32, 1536]) does not match weight shape torch.Size([32, 2048])." in result.stdout
    assert "symlink points outside the adapter folder" in result.stdout
    assert "symlink points outside the adapter directory" in result.stdout
    assert lines[-2].startswith("10 adapter(s): 2 ok, 7 with errors, 1 with warnings only")  # pickled: not checked, a warning


def test_cli_fleet_json(fleet, run_cli):
    result = run_cli("check", "--config", EXAMPLES / "serve.yaml", "--model", EXAMPLES / "config.json", "--adapter-dir", fleet, "--format", "json")
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert {a["name"]: [p["rule_id"] for p in a["problems"]] for a in data["adapters"]} == EXPECTED
    assert {a["name"]: a["ok"] for a in data["adapters"]}["good"] is True
    assert all(p["adapter_index"] is not None for p in data["problems"])


def test_cli_fleet_and_single_adapters_combine(fleet, tmp_path, run_cli):
    extra = write_adapter(tmp_path / "extra", r=16)
    result = run_cli("check", "--config", EXAMPLES / "serve.yaml", "--model", EXAMPLES / "config.json", "--adapter", extra, "--adapter-dir", fleet, "--format", "json")
    data = json.loads(result.stdout)
    assert data["adapters"][0]["name"] == "extra" and len(data["adapters"]) == 11


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
def test_unusable_fleet_folder_exits_2(tmp_path, kind, run_cli):
    target = tmp_path / "adapters"
    if kind == "file":
        target.write_text("x")
    elif kind == "empty":
        target.mkdir()
        (target / "readme.txt").write_text("no adapters here")
    result = run_cli("check", "--config", EXAMPLES / "serve.yaml", "--adapter-dir", target)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "adapters" in result.stderr and "(adapter-dir)" in result.stderr


def test_alias_bomb_config_with_fleet_exits_2(tmp_path, fleet, run_cli):
    bomb = tmp_path / "serve.yaml"
    bomb.write_text('a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")))
    result = run_cli("check", "--config", bomb, "--adapter-dir", fleet)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_duplicate_names_across_folders(tmp_path):
    for folder in ("team-a", "team-b"):
        write_adapter(tmp_path / folder / "support", r=16)
    report = check_fleet(EXAMPLES / "serve.yaml", [tmp_path / "team-a", tmp_path / "team-b"], model=EXAMPLES / "config.json")
    assert [p.message for p in report.problems if p.rule_id == "adapter-duplicate-name"] == [
        "Failed to load LoRA adapter support because it is already loaded"
    ]


# --- progress bar -----------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal():
    quiet = io.StringIO()
    bar = ProgressBar(stream=quiet, delay=0)
    for i in range(1, 6):
        bar(i, 5)
    bar.close()
    assert quiet.getvalue() == ""
    tty = _Tty()
    bar = ProgressBar(stream=tty, delay=0)
    for i in range(1, 6):
        bar(i, 5)
    bar.close()
    assert "5/5 adapters" in tty.getvalue() and tty.getvalue().endswith("\r\x1b[K")


def test_progress_bar_waits_for_a_long_run():
    tty = _Tty()
    bar = ProgressBar(stream=tty, delay=60)
    bar(1, 1000)
    bar.close()
    assert tty.getvalue() == ""


def test_progress_callback_counts_every_adapter(fleet):
    seen = []
    check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, 10) for i in range(1, 11)]


# --- the fast path gives the plain results ---------------------------------------------------


def test_shared_facts_equal_per_adapter_facts(fleet, tmp_path):
    model = load_model_config(EXAMPLES / "config.json")
    copies = [shutil.copytree(fleet / "good", tmp_path / f"copy-{i}") for i in range(3)]
    manifests = [load_adapter(str(p))[0] for p in [*copies, fleet / "rank-32", fleet / "other-model", fleet / "pickled", fleet / "broken-config"]]
    assert manifests[0].tensors is manifests[1].tensors  # interned: alike adapters share a table
    inputs = load_inputs(EXAMPLES / "serve.yaml", manifests, model=model)
    fast, plain = derive(inputs), derive(inputs, memo=False)
    assert fast.adapters[0] is not fast.adapters[1] and fast.adapters[0].normalized_targets is fast.adapters[1].normalized_targets  # shared, not re-derived
    assert fast == plain


def test_the_memo_is_keyed_on_content_not_on_the_table_object():
    """Manifests written by hand hold equal tensor tables that are distinct objects: they
    still share one derivation, and the result is the plain one."""
    from inkling_compat.facts import in_pool

    model = load_model_config(EXAMPLES / "config.json")
    tensors = {name: {"shape": shape} for name, shape in sink_shapes(16).items()}
    doc = {"adapter_config": {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}, "tensors": tensors}
    first, second = (load_adapter(dict(doc, name=name))[0] for name in ("a", "b"))
    assert first.tensors is not second.tensors and first.tensors.root == second.tensors.root
    own = in_pool.own_facts([first, second], model)
    assert own[0].weights is own[1].weights and (own[0].name, own[1].name) == ("a", "b")
    assert own[0].lora_id != own[1].lora_id
    inputs = load_inputs(EXAMPLES / "serve.yaml", [first, second], model=model)
    assert derive(inputs) == derive(inputs, memo=False)


def test_input_error_for_missing_adapter_dir_in_api(tmp_path):
    with pytest.raises(InputError):
        check_fleet(EXAMPLES / "serve.yaml", [tmp_path / "missing"])


MODULES = [
    "mlp.shared_experts.gate_up_proj.lora_A.weight",
    "mlp.shared_experts.gate_up_proj.lora_B.weight",
    "mlp.shared_experts.down_proj.lora_A.weight",
    "mlp.shared_experts.down_proj.lora_B.weight",
    "mlp.shared_experts.w1.lora_A.weight",
    "mlp.shared_experts.w3.lora_B.weight",
    "mlp.shared_experts.1.gate_proj.lora_A.weight",
    "mlp.shared_experts.0.down_proj.lora_B.weight",
    "attn.wq_du.lora_A.weight",
    "attn.wk_dv.lora_A.weight",
    "attn.wo_ud.lora_B.weight",
]


@st.composite
def layer_weights(draw):
    layer = draw(st.integers(0, 20))
    names = draw(st.lists(st.sampled_from(MODULES), min_size=1, max_size=6, unique=True))
    dims = st.sampled_from([1, 2, 4, 6, 8, 1536, 3072, 1000])
    weights = {
        f"base_model.model.llm.layers.{layer}.{m}": draw(st.lists(dims, min_size=2, max_size=3)) for m in names
    }
    return layer, weights, draw(st.sampled_from([None, 4, 8])), draw(st.sampled_from([0, 2, 3]))


@settings(max_examples=200, deadline=None)
@given(layer_weights(), st.booleans())
def test_layer_memo_equals_plain_normalization(case, inkling):
    from inkling_compat.facts.adapter import _normalize_layer, _normalize_layer_shared

    layer, weights, r, n = case
    plain = {k: list(v) for k, v in weights.items()}
    shared = {k: list(v) for k, v in weights.items()}
    assert _normalize_layer_shared(layer, shared, r, n, inkling) == _normalize_layer(plain, r, n, inkling)
    assert shared == plain
    # and a second time, from the memo
    again = {k: list(v) for k, v in weights.items()}
    assert _normalize_layer_shared(layer, again, r, n, inkling) == _normalize_layer({k: list(v) for k, v in weights.items()}, r, n, inkling)
    assert again == plain


@settings(max_examples=200, deadline=None)
@given(layer_weights(), st.sampled_from([1, 2]), st.booleans())
def test_pool_fit_layer_memo_equals_plain_replay(case, tp, outer):
    from inkling_compat.sglang.pool_shapes import expected_pool_shapes
    from inkling_compat.sglang.load_to_buffer import CopyFailure, _Fit

    layer, weights, r, n = case
    pool = expected_pool_shapes(4, max(n, 1), 16, 1536, 768 // tp, outer)
    targets = ["down_proj", "gate_up_proj"]
    memo_fit = _Fit(pool, r or 8, max(n, 1), outer, tp, 768 // tp)
    memo_fit.layer(layer + 1, {k.replace(f"layers.{layer}.", f"layers.{layer + 1}."): v for k, v in weights.items()}, targets)
    got = memo_fit.layer(layer, weights, targets)  # the second layer comes from the memo
    plain_fit = _Fit(pool, r or 8, max(n, 1), outer, tp, 768 // tp)
    plain = plain_fit._layer_uncached(layer, weights, targets)
    if isinstance(plain, CopyFailure):
        plain = replace(plain, layer=None)
        got = replace(got, layer=None)
    assert got == plain
