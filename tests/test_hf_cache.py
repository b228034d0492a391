"""Hub ids found in the local Hugging Face cache (inputs/hf_cache.py, read_by_sglang.py):
the lookup against huggingface_hub's own `try_to_load_from_cache` and `constants` on generated
and hostile caches, and the bundled miniature cache (examples/hf-cache) checked end to end."""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.inputs import hf_cache
from inkling_compat.inputs.hf_cache import cache_dir, is_repo_id, lookup

huggingface_hub = pytest.importorskip("huggingface_hub")
from huggingface_hub import constants as hf_constants  # noqa: E402
from huggingface_hub.file_download import try_to_load_from_cache  # noqa: E402
from huggingface_hub.utils import HFValidationError, validate_repo_id  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "examples" / "hf-cache" / "hub"
MODEL_ID, ADAPTER_ID = "inkling-compat/inkling-mini", "inkling-compat/inkling-mini-sql-lora"
SERVE = ["--enable-lora", "--lora-backend", "triton", "--max-loras-per-batch", "4", "--max-lora-rank", "16",
         "--lora-target-modules", "gate_up_proj", "down_proj", "--experts-shared-outer-loras"]
HASH = "a" * 40


def _library(repo_id: str, filename: str, cache: Path, revision: str | None) -> tuple[str, str | None]:
    """huggingface_hub's answer: ("found", path) / ("absent", None) / ("none", None); an
    exception it raises on a broken cache counts as not found."""
    try:
        out = try_to_load_from_cache(repo_id, filename, cache_dir=str(cache), revision=revision)
    except (OSError, UnicodeDecodeError, ValueError):
        return "none", None
    if isinstance(out, str):
        return "found", out
    return ("none", None) if out is None else ("absent", None)


def _ours(repo_id: str, filename: str, cache: Path, revision: str | None) -> tuple[str, str | None]:
    found = lookup(repo_id, filename, str(cache), revision)
    if found.found:
        return "found", os.path.join(found.snapshot, filename)
    return ("absent", None) if found.known_absent else ("none", None)


# --- the cache folder -------------------------------------------------------------------------

ENVS = [
    {},
    {"HF_HOME": "/srv/hf"},
    {"HF_HOME": "~/hf"},
    {"HF_HUB_CACHE": "/data/hub"},
    {"HF_HUB_CACHE": "/data/hub", "HF_HOME": "/srv/hf"},
    {"HUGGINGFACE_HUB_CACHE": "/legacy/hub", "HF_HOME": "/srv/hf"},
    {"HUGGINGFACE_HUB_CACHE": "/legacy/hub", "HF_HUB_CACHE": "/data/hub"},
    {"XDG_CACHE_HOME": "/xdg"},
    {"XDG_CACHE_HOME": "/xdg", "HF_HOME": "/srv/hf"},
    {"HF_HOME": "$SOMEWHERE/hf", "SOMEWHERE": "/expanded"},
    {"HF_HUB_CACHE": ""},
]


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join(sorted(e)) or "default")
def test_cache_folder_is_huggingface_hubs(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "SOMEWHERE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        expected = importlib.reload(hf_constants).HF_HUB_CACHE
        ours = cache_dir(dict(env))  # (expandvars reads the process environment, as the library does)
    finally:
        monkeypatch.undo()
        importlib.reload(hf_constants)
    assert ours == expected


# --- repo ids -----------------------------------------------------------------------------------

@given(st.text(alphabet="ab-_./:\\ é0", max_size=12))
@settings(max_examples=300, deadline=None)
def test_repo_ids_are_huggingface_hubs(value: str) -> None:
    assert is_repo_id(value) == _hub_accepts(value)


def _hub_accepts(value: str) -> bool:
    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


@pytest.mark.parametrize("value", [
    "a" * 96, "a" * 97, "o" * 96 + "/" + "n" * 96, "o" * 97 + "/n", "o/" + "n" * 97, "-a", "a-", ".a", "a.", "_a_", "a/_", "a_/b",
    "a/-b", "a-/b", "/a", "a/", "/", "", "a//b", "a.b-c_d/E.F-9", "ab\n", "a\u0131b", "a\u212ab", "\uff41", "a b", "a@b", "1", "a/b/c",
])  # fmt: skip
def test_repo_id_lengths_and_edges_are_huggingface_hubs(value: str) -> None:
    assert is_repo_id(value) == _hub_accepts(value)


# --- the lookup, differential on generated caches ---------------------------------------------

REVISIONS = [None, "main", "v1.0", HASH, "b" * 40, "../x", "", "refs/pr/1"]
REF_TEXTS = [HASH, HASH + "\n", "b" * 40, "..", ".", "", "x/y", "c" * 300, HASH.encode("utf-16").hex()[:40]]


@st.composite
def caches(draw: st.DrawFn) -> dict:
    """A cache that mostly holds the file (main -> HASH -> a link into blobs/), with faults
    drawn into each part: the repository, its refs, its snapshots, the file, .no_exist."""
    def part(usual, *faults):
        return draw(st.one_of(st.just(usual), *faults)) if draw(st.booleans()) else usual

    return {
        "repo": part("dir", st.sampled_from(["absent", "file"])),
        "refs": part({"main": HASH}, st.dictionaries(st.sampled_from(["main", "v1.0"]), st.one_of(st.sampled_from(REF_TEXTS), st.just(b"\xff\xfe"), st.just("dir")), max_size=2)),
        "snapshots": part({HASH: "dir"}, st.dictionaries(st.sampled_from([HASH, "b" * 40, "..x"]), st.sampled_from(["dir", "file", "dangling", "loop", "outside"]), max_size=2)),
        "files": part({HASH: "blob", "b" * 40: "plain"}, st.dictionaries(st.sampled_from([HASH, "b" * 40]), st.sampled_from(["blob", "dir", "dangling", "loop", "fifo", "plain"]), max_size=2)),
        "no_exist": part([], st.lists(st.sampled_from([HASH, "b" * 40, "main"]), max_size=2)),
    }


def _build(root: Path, spec: dict, filename: str) -> Path:
    cache = root / "hub"
    cache.mkdir()
    repo = cache / "models--org--name"
    if spec["repo"] == "file":
        repo.write_text("x")
        return cache
    if spec["repo"] == "absent":
        return cache
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "b1").write_text('{"architectures": ["X"]}')
    (repo / "refs").mkdir()
    for name, text in spec["refs"].items():
        if text == "dir":
            (repo / "refs" / name).mkdir()
        else:
            (repo / "refs" / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    (repo / "snapshots").mkdir()
    outside = root / "elsewhere"
    outside.mkdir(exist_ok=True)
    for name, kind in spec["snapshots"].items():
        path = repo / "snapshots" / name
        if kind == "dir":
            path.mkdir()
        elif kind == "file":
            path.write_text("x")
        elif kind == "dangling":
            path.symlink_to("nowhere")
        elif kind == "loop":
            path.symlink_to(name)
        else:
            path.symlink_to(outside)
    for name, kind in spec["files"].items():
        snapshot = repo / "snapshots" / name
        if not snapshot.is_dir():
            continue
        path = snapshot / filename
        if path.exists() or path.is_symlink():
            continue
        if kind == "blob":
            path.symlink_to("../../blobs/b1")
        elif kind == "dir":
            path.mkdir()
        elif kind == "dangling":
            path.symlink_to("../../blobs/none")
        elif kind == "loop":
            path.symlink_to(filename)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.write_text("{}")
    for name in spec["no_exist"]:
        (repo / ".no_exist" / name).mkdir(parents=True, exist_ok=True)
        (repo / ".no_exist" / name / filename).write_text("")
    return cache


@given(caches(), st.sampled_from(REVISIONS), st.sampled_from(["config.json", "adapter_config.json"]))
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_lookup_finds_what_try_to_load_from_cache_finds(tmp_path_factory: pytest.TempPathFactory, spec: dict, revision: str | None, filename: str) -> None:
    cache = _build(tmp_path_factory.mktemp("c"), spec, filename)
    assert _ours("org/name", filename, cache, revision) == _library("org/name", filename, cache, revision)


def test_lookup_of_the_bundled_cache_equals_the_library() -> None:
    for repo_id, filename in ((MODEL_ID, "config.json"), (ADAPTER_ID, "adapter_config.json"), (ADAPTER_ID, "adapter_model.safetensors"), (MODEL_ID, "tokenizer.json")):
        for revision in (None, "main", (HUB / f"models--{repo_id.replace('/', '--')}" / "refs" / "main").read_text(), "v2"):
            assert _ours(repo_id, filename, HUB, revision) == _library(repo_id, filename, HUB, revision)
    assert _ours(MODEL_ID, "config.json", HUB, None)[0] == "found"


def test_the_bundled_blobs_are_the_example_files() -> None:
    """The cache holds the examples' own bytes under the names the Hub gives them (a git blob
    hash, SHA-256 for the LFS-stored safetensors file), so the two cannot drift apart."""
    pairs = [(MODEL_ID, "config.json", ROOT / "examples/config.json"),
             (ADAPTER_ID, "adapter_config.json", ROOT / "examples/adapter/adapter_config.json"),
             (ADAPTER_ID, "adapter_model.safetensors", ROOT / "examples/adapter/adapter_model.safetensors")]
    for repo_id, filename, example in pairs:
        path = Path(try_to_load_from_cache(repo_id, filename, cache_dir=str(HUB)))
        data = example.read_bytes()
        assert path.read_bytes() == data
        lfs = filename.endswith(".safetensors")
        blob = path.parents[2] / "blobs" / (hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
        assert blob.read_bytes() == data
        if path.is_symlink():  # (git keeps the links; an sdist holds plain copies, which the library reads alike)
            assert not os.path.isabs(os.readlink(path)) and path.resolve() == blob.resolve()  # relative: the cache moves with the tree


# --- hostile caches ------------------------------------------------------------------------------

def _repo(cache: Path, name: str = "models--org--name") -> Path:
    repo = cache / name
    (repo / "refs").mkdir(parents=True)
    (repo / "snapshots" / HASH).mkdir(parents=True)
    return repo


def test_hostile_refs_are_bounded(tmp_path: Path) -> None:
    """A ref that is a FIFO, a device, a huge file or a link out of the cache neither blocks nor
    is read whole; a ref naming a folder outside snapshots/ names no snapshot."""
    repo = _repo(tmp_path)
    (repo / "snapshots" / HASH / "config.json").write_text("{}")
    os.mkfifo(repo / "refs" / "fifo")
    (repo / "refs" / "zero").symlink_to("/dev/zero")
    with open(repo / "refs" / "huge", "wb") as f:
        f.truncate(2**40)  # sparse: reading it whole would take the machine's memory
    (repo / "refs" / "up").write_text("../../../../etc")
    (repo / "refs" / "loop").symlink_to("loop")
    result: list = []
    worker = threading.Thread(target=lambda: result.extend(lookup("org/name", "config.json", str(tmp_path), r) for r in ("fifo", "zero", "huge", "up", "loop")), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "a hostile ref blocked the lookup"
    assert [r.found for r in result] == [False] * 5


def test_hostile_files_never_traceback_or_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """config.json as a FIFO, a link loop or a link to a device is not found; a huge one is
    refused by the model loader's size cap (exit 2 naming the file); an adapter whose blob
    links out of its repository folder is that adapter's problem."""
    from inkling_compat.errors import InputError

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    cases = {"fifo": lambda p: os.mkfifo(p), "loop": lambda p: p.symlink_to(p.name), "device": lambda p: p.symlink_to("/dev/zero")}
    for name, make in cases.items():
        repo = _repo(tmp_path, f"models--org--{name}")
        (repo / "refs" / "main").write_text(HASH)
        make(repo / "snapshots" / HASH / "config.json")
        report = check(argv=["python", "-m", "sglang.launch_server", "--model-path", f"org/{name}"])
        assert report.not_read == [f"--model-path org/{name}: not read (not in the local Hugging Face cache at {tmp_path}): the model checks are not checked"]
    repo = _repo(tmp_path, "models--org--huge")
    (repo / "refs" / "main").write_text(HASH)
    with open(repo / "snapshots" / HASH / "config.json", "wb") as f:
        f.truncate(2**34)
    with pytest.raises(InputError) as raised:
        check(argv=["python", "-m", "sglang.launch_server", "--model-path", "org/huge"])
    assert "config.json" in str(raised.value)
    repo = _repo(tmp_path, "models--org--leaky")
    (repo / "refs" / "main").write_text(HASH)
    secret = tmp_path / "secret.json"
    secret.write_text('{"r": 8}')
    (repo / "snapshots" / HASH / "adapter_config.json").symlink_to(secret)
    report = check(argv=["python", "-m", "sglang.launch_server", "--model-path", "examples/model", *SERVE, "--lora-paths", "a=org/leaky"])
    problem = next(p for p in report.problems if p.rule_id == "adapter-file-unreadable")
    assert problem.adapter == "a" and "symlink points outside" in problem.message


# --- the check end to end --------------------------------------------------------------------------

@pytest.fixture()
def in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)


def _launch(*words: str) -> list[str]:
    return ["python", "-m", "sglang.launch_server", *words]


def test_hub_model_and_adapter_checked_from_the_cache(in_root: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", "examples/hf-cache/hub")
    report = check(argv=_launch("--model-path", MODEL_ID, *SERVE, "--lora-paths", f"sql={ADAPTER_ID}"))
    assert report.ok and report.not_read == [] and "model" not in report.not_given
    assert [(a["name"], a["path"], a["form"]) for a in report.adapters] == [("sql", ADAPTER_ID, "peft")]
    local = check(argv=_launch("--model-path", "examples/model", *SERVE, "--lora-paths", "sql=examples/adapter"))
    assert (report.coverage.status, report.coverage.reasons) == (local.coverage.status, local.coverage.reasons)  # the same checks on the same files
    commits = [(HUB / f"models--{r.replace('/', '--')}" / "refs" / "main").read_text()[:12] for r in (MODEL_ID, ADAPTER_ID)]
    assert report.coverage.notes == (
        f"--model-path {MODEL_ID}: read from the local Hugging Face cache at examples/hf-cache/hub (revision main: snapshot {commits[0]})",
        f"--lora-paths sql={ADAPTER_ID}: read from the local Hugging Face cache at examples/hf-cache/hub (revision main: snapshot {commits[1]})",
    )
    assert local.coverage.notes == ()


def test_the_cache_is_read_from_hf_home_and_from_the_commands_own_assignments(in_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", "examples/hf-cache")  # HF_HOME/hub
    assert check(argv=_launch("--model-path", MODEL_ID)).not_read == []
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert check(argv=_launch("--model-path", MODEL_ID)).not_read != []
    assert check(argv=["HF_HUB_CACHE=examples/hf-cache/hub", *_launch("--model-path", MODEL_ID)]).not_read == []


def test_revision_is_honoured(in_root: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", "examples/hf-cache/hub")
    commit = (HUB / "models--inkling-compat--inkling-mini" / "refs" / "main").read_text()
    for revision in ("main", commit):
        assert check(argv=_launch("--model-path", MODEL_ID, "--revision", revision)).not_read == []
    report = check(argv=_launch("--model-path", MODEL_ID, "--revision", "v2"))
    assert report.not_read == [f"--model-path {MODEL_ID}: not read (not in the local Hugging Face cache at examples/hf-cache/hub ({MODEL_ID} at revision v2)): the model checks are not checked"]


def test_not_in_the_cache_is_named_with_the_cache(in_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    report = check(argv=_launch("--model-path", "meta-llama/Llama-3.1-8B-Instruct", *SERVE, "--lora-paths", f"sql={ADAPTER_ID}"))
    assert report.not_read == [
        f"--model-path meta-llama/Llama-3.1-8B-Instruct: not read (not in the local Hugging Face cache at {tmp_path}): the model checks are not checked",
        f"--lora-paths sql={ADAPTER_ID}: not read (not in the local Hugging Face cache at {tmp_path}): that adapter is not checked",
    ]
    repo = _repo(tmp_path, "models--org--gone")
    (repo / "refs" / "main").write_text(HASH)
    (repo / ".no_exist" / HASH).mkdir(parents=True)
    (repo / ".no_exist" / HASH / "config.json").write_text("")
    report = check(argv=_launch("--model-path", "org/gone"))
    assert report.not_read == [f"--model-path org/gone: not read (the local Hugging Face cache at {tmp_path} records that org/gone has no config.json): the model checks are not checked"]


def test_a_local_folder_wins_over_a_hub_id_of_the_same_name(in_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """transformers and sglang read a path that exists before asking the hub: `examples/model`
    is a valid hub id too."""
    assert is_repo_id("examples/model")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert check(argv=_launch("--model-path", "examples/model")).not_read == []


def test_the_lookup_does_not_import_huggingface_hub() -> None:
    import subprocess
    import sys

    code = ("import sys; from inkling_compat.inputs.hf_cache import lookup, cache_dir; lookup('a/b', 'config.json', cache_dir());"
            "print('huggingface_hub' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
    assert hf_cache.__doc__ and "try_to_load_from_cache" in hf_cache.__doc__


def test_a_cache_of_plain_files_checks_alike(in_root: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """snapshots/ holding copies instead of links (an sdist's copy of the bundled cache; a cache
    written with symlinks off) is read alike."""
    import shutil

    copy = tmp_path / "hub"
    shutil.copytree(HUB, copy)  # (links followed: plain files)
    assert not any(p.is_symlink() for p in copy.rglob("*"))
    monkeypatch.setenv("HF_HUB_CACHE", str(copy))
    report = check(argv=_launch("--model-path", MODEL_ID, *SERVE, "--lora-paths", f"sql={ADAPTER_ID}"))
    assert report.ok and report.not_read == [] and [a["form"] for a in report.adapters] == ["peft"], str(report)
