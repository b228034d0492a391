"""The sglang release a check is for (inputs/release.py), its argument table, and explain's notes
across releases (argument_history.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat import api
from inkling_compat.inputs.argument_history import (
    choice_note,
    flag_history,
    notes,
    rule_releases_note,
)
from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table, release
from inkling_compat.inputs.release import NEWEST, find_release
from inkling_compat.inputs.versions import SGLANG_RELEASES, SGLANG_VERSIONS
from in_process import run_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


_REAL_DISTRIBUTION_VERSION = release._distribution_version


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process (tests/in_process.py), where the fixture below hides
    an installed sglang (a command in a subprocess would see it, and it would decide the release)."""
    return lambda *args: run_main(capsys, *args)


@pytest.fixture(autouse=True)
def _no_installed_sglang(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = metadata.version

    def version(name: str) -> str:
        if name == "sglang":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    real_dist = release._distribution_version
    monkeypatch.setattr(release, "_distribution_version", lambda name: None if name == "sglang" else real_dist(name))
    release._installed.cache_clear()  # (read once per process)
    yield
    release._installed.cache_clear()


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_every_release_has_its_table_and_the_revision_reads_0_5_23s() -> None:
    for version in SGLANG_RELEASES:
        assert argument_table.table(version)["sglang"] == version
    assert argument_table.table("53ccafdf") is argument_table.table("0.5.23")
    assert set(SGLANG_VERSIONS) == {*SGLANG_RELEASES, "53ccafdf"}


def test_given_release_wins_and_an_unknown_one_is_named_with_the_range(tmp_path: Path) -> None:
    deploy = _project(tmp_path, {"deploy.yaml": "image: lmsysorg/sglang:v0.5.20\n"}) / "deploy.yaml"
    assert find_release("0.5.18", deploy).text() == "sglang 0.5.18 (from sglang_version=)"
    with pytest.raises(InputError) as caught:
        find_release("0.5.15", deploy, given_by="--sglang-version")
    assert (caught.value.file, caught.value.field) == ("(command line)", "--sglang-version")
    assert caught.value.reason == "sglang '0.5.15' is not supported: supported are 0.5.16 to 0.5.23, and revision 53ccafdf"


def test_a_hostile_given_version_is_named_briefly() -> None:
    for given in ("x" * 1_000_000, "0.5.23\x00", "", "../../etc/passwd"):
        with pytest.raises(InputError) as caught:
            find_release(given)
        assert len(caught.value.reason) < 200 and "supported are 0.5.16 to 0.5.23" in caught.value.reason


def test_image_tag_with_its_line(tmp_path: Path) -> None:
    text = "# image: lmsysorg/sglang:v0.5.16 (old)\nservices:\n  s:\n    image: docker.io/lmsysorg/sglang:v0.5.22-cu126\n"
    deploy = _project(tmp_path, {"deploy.yaml": text}) / "deploy.yaml"
    assert find_release(None, deploy).text() == "sglang 0.5.22 (from the image tag in deploy.yaml:4)"


def test_image_tags_as_public_launch_scripts_write_them(tmp_path: Path) -> None:
    # the shape of a public ROCm launch script (a `docker pull` comment, then `docker run`)
    script = (
        "#!/bin/bash\n\n# docker pull lmsysorg/sglang:v0.5.21-rocm700-mi30x\n\n"
        "docker run -it --rm --ipc=host \\\n    -p 8000:8000 \\\n    lmsysorg/sglang:v0.5.20-rocm700-mi30x \\\n"
        "    python3 -m sglang.launch_server --model-path org/model --tp 8\n"
    )
    root = _project(tmp_path, {"run.sh": script, "latest.sh": "docker run lmsysorg/sglang:latest python3 -m sglang.launch_server\n"})
    assert find_release(None, root / "run.sh").text() == "sglang 0.5.20 (from the image tag in run.sh:7)"
    assert find_release(None, root / "latest.sh").reason == NEWEST  # `latest` names no release
    (root / "old.sh").write_text("docker run lmsysorg/sglang:v0.5.3.post3-rocm700-mi30x\n")
    with pytest.raises(InputError, match=r"sglang '0.5.3.post3' is not supported"):
        find_release(None, root / "old.sh")


@given(st.text(alphabet="aZ-_.é1", max_size=16))
@settings(max_examples=300, deadline=None)
def test_distribution_names_compare_as_pep_503_normalizes_them(name: str) -> None:
    import re

    assert release.normalized_name(name) == re.sub(r"[-_.]+", "_", name).lower()


def test_a_line_is_searched_as_the_whole_case_insensitive_pattern_searches_it() -> None:
    """The literal part a line is tested for first (case-folded) never hides a match: the
    same answers as the compiled pattern on case variants, Unicode case folds and near misses."""
    import re

    lines = [
        "image: lmsysorg/sglang:v0.5.22", "FROM LMSYSORG/SGLANG:V0.5.21.post1", "x docker.io/LmSysOrg/SGlang:0.5.20-cu129",
        "image: lmsyſorg/ſglang:v0.5.22", "image: lmsysorg/sglang-router:v0.5.22", "lmsysorg/sglang:latest", "lmsysorg /sglang:v0.5.22",
        "sglang==0.5.22", "SGLANG[all] === v0.5.21", "ſglang==0.5.20", "xsglang==0.5.22", "sglang>=0.5.22", "sglang = = 0.5", "K\u212a sglang==0.5.19",
        "İ sglang[srt]==0.5.18  # pinned", "",
    ]
    for wrapped in (release._IMAGE, release._PIN):
        plain = re.compile(wrapped.pattern, re.IGNORECASE)
        for line in lines:
            ours, theirs = wrapped.search(line), plain.search(line)
            assert (ours and ours.group(1)) == (theirs and theirs.group(1)), (wrapped.pattern[:30], line)


def test_a_pin_beside_or_above_wins_over_the_image_tag(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "pyproject.toml": '[project]\ndependencies = ["sglang[all]==0.5.19", "torch"]\n',
        "deploy/k8s/serve.yaml": "image: lmsysorg/sglang:v0.5.22\n",
    })
    assert find_release(None, root / "deploy/k8s/serve.yaml").text() == "sglang 0.5.19 (from the pinned requirement in pyproject.toml:2)"
    (root / "deploy/k8s/requirements-gpu.txt").write_text("numpy\nsglang == 0.5.21  # pinned\n")
    assert find_release(None, root / "deploy/k8s/serve.yaml").text() == "sglang 0.5.21 (from the pinned requirement in requirements-gpu.txt:2)"


def test_a_pin_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("sglang==0.5.17\n")
    inner = _project(tmp_path / "repo", {"serve.yaml": "tp_size: 1\n"})
    assert find_release(None, inner / "serve.yaml") == find_release(None, None)
    assert find_release(None, None).reason == NEWEST
    (inner / ".git").rmdir()  # outside any repository: beside the file only
    assert find_release(None, inner / "serve.yaml").reason == NEWEST
    (inner / "requirements.txt").write_text("sglang==0.5.17\n")
    assert find_release(None, inner / "serve.yaml").version == "0.5.17"


def test_an_unsupported_release_found_in_a_file_is_named_with_where(tmp_path: Path) -> None:
    deploy = _project(tmp_path, {"deploy.yaml": "image: lmsysorg/sglang:v0.4.10-cu124\n"}) / "deploy.yaml"
    with pytest.raises(InputError) as caught:
        find_release(None, deploy)
    assert caught.value.file == "the image tag in deploy.yaml:1"
    assert "'0.4.10' is not supported: supported are 0.5.16 to 0.5.23" in caught.value.reason


def test_the_installed_distribution_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "SGLang-0.5.21.dist-info").mkdir(parents=True)
    (site / "SGLang-0.5.21.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: SGLang\nVersion: 0.5.21\n\nbody\n")
    monkeypatch.setattr(release, "_distribution_version", _REAL_DISTRIBUTION_VERSION)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    assert metadata.distribution("sglang").version == "0.5.21"  # what importlib.metadata finds there too
    release._installed.cache_clear()
    deploy = _project(tmp_path, {"deploy.yaml": "image: lmsysorg/sglang:v0.5.22\n"}) / "deploy.yaml"
    assert find_release(None, deploy).text() == "sglang 0.5.21 (from the installed sglang distribution)"


def test_the_installed_versions_are_importlib_metadatas() -> None:
    """The installed distributions' versions as importlib.metadata reads them (release.py reads
    the dist-info folders itself: importing importlib.metadata costs more than a check)."""
    for name in ("pydantic", "PyYAML", "pyyaml", "tree-sitter", "tree_sitter_bash", "common-expression-language", "inkling-compat", "no-such-distribution-x"):
        try:
            expected = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected = None
        assert _REAL_DISTRIBUTION_VERSION(name) == expected, name


def test_sys_paths_folders_are_listed_as_os_listdir_lists_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_listing` (the import system's listing of a sys.path folder, where it is current) names
    what os.listdir names: for every folder of sys.path, and for a folder the imports listed
    before a distribution was added to it (its modification time moved: listed again)."""
    import importlib
    import os

    for folder in sys.path:
        try:
            expected = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        assert sorted(release._listing(folder)) == expected, folder
    site = tmp_path / "site"
    site.mkdir()
    (site / "release_listed_module.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    importlib.import_module("release_listed_module")  # (the finder lists the folder)
    monkeypatch.delitem(sys.modules, "release_listed_module")
    assert sorted(release._listing(str(site))) == ["release_listed_module.py"]
    (site / "SGLang-0.5.20.dist-info").mkdir()
    os.utime(site, ns=(os.stat(site).st_atime_ns, os.stat(site).st_mtime_ns + 10**9))  # (a coarse clock: the folder's time moves)
    (site / "SGLang-0.5.20.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: SGLang\nVersion: 0.5.20\n")
    assert sorted(release._listing(str(site))) == ["SGLang-0.5.20.dist-info", "release_listed_module.py"]
    assert _REAL_DISTRIBUTION_VERSION("sglang") == "0.5.20"


def test_hostile_files_are_bounded(tmp_path: Path) -> None:
    long_line = "sglang" + "=" * 100_000 + "\n" + "lmsysorg/sglang:" * 50_000 + "\n"
    deploy = _project(tmp_path, {"requirements.txt": long_line, "deploy.yaml": "\x00\xff" + long_line}) / "deploy.yaml"
    started = time.perf_counter()
    assert find_release(None, deploy).reason == NEWEST
    assert time.perf_counter() - started < 5  # linear patterns: a bad guess would take minutes


def test_check_reports_the_release_and_why(tmp_path: Path) -> None:
    config = _project(tmp_path, {"serve.yaml": (EXAMPLES / "serve.yaml").read_text(), "requirements.txt": "sglang==0.5.22\n"}) / "serve.yaml"
    report = api.check(str(config))
    assert (report.sglang_version, report.sglang_version_from) == ("0.5.22", "from the pinned requirement in requirements.txt:1")
    assert report.to_dict()["sglang_version_from"] == "from the pinned requirement in requirements.txt:1"
    assert api.check(str(config), sglang_version="0.5.23").sglang_version_from == "from sglang_version="


def test_a_launch_command_is_read_with_the_release_table() -> None:
    argv = ["sglang", "serve", "--model-path", "/m", "--speculative-skip-dp-mlp-sync"]
    report = api.check(argv=argv, sglang_version="0.5.22")
    assert not report.errors
    report = api.check(argv=argv, sglang_version="0.5.23")
    assert [p.rule_id for p in report.errors] == ["argparse-unrecognized-arguments"]
    # sglang's own words, and the release history as the first fix
    assert report.errors[0].message == "unrecognized arguments: --speculative-skip-dp-mlp-sync"
    assert report.errors[0].fixes[0] == "--speculative-skip-dp-mlp-sync is an argument of sglang 0.5.16 to 0.5.22 only; removed in 0.5.23 (no replacement in its arguments)"
    typo = api.check(argv=["sglang", "serve", "--model-path", "/m", "--max-lora-rnk", "8"], sglang_version="0.5.22")
    assert typo.errors[0].message == "unrecognized arguments: --max-lora-rnk 8" and typo.errors[0].fixes[0] == "Did you mean --max-lora-rank?"
    refused = api.check(argv=["sglang", "serve", "--model-path", "/m", "--lora-backend", "triton_v2"], sglang_version="0.5.22")
    assert "invalid choice: 'triton_v2' (choose from 'triton', 'csgmv', 'ascend', 'torch_native')" in refused.errors[0].message


def test_cli_says_the_release_in_text_and_json(tmp_path: Path, run_cli) -> None:
    deploy = _project(tmp_path, {"launch.sh": "# lmsysorg/sglang:v0.5.16 (a comment)\nIMAGE=lmsysorg/sglang:v0.5.21 sglang serve --model-path /m\n"}) / "launch.sh"
    done = run_cli("check", "--launch", deploy)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("; sglang 0.5.21 (from the image tag in launch.sh:2)")
    done = run_cli("check", "--launch", deploy, "--format", "json", "--sglang-version", "0.5.17")
    document = json.loads(done.stdout)
    assert (document["sglang_version"], document["sglang_version_from"]) == ("0.5.17", "from --sglang-version")


def test_explain_names_the_releases_of_a_flag_and_its_replacement() -> None:
    assert flag_history("--no-enable-tf32-matmul").note() == (
        "--no-enable-tf32-matmul is an argument of sglang 0.5.23 only; added in 0.5.23: on sglang 0.5.16 to 0.5.22 upgrade, or leave it out"
    )
    assert flag_history("--stream-output").note() == (
        "--stream-output is an argument of sglang 0.5.16 to 0.5.19 only; removed in 0.5.20: use --incremental-streaming-output instead"
    )
    assert flag_history("--max-loaded-loras").note().endswith("the sglang that refused it is older than 0.5.16; upgrade sglang")
    assert flag_history("--no-such-flag").releases == ()
    assert choice_note("--lora-backend", "triton_v2") == (
        "'triton_v2' is a choice of --lora-backend in sglang 0.5.23 only; sglang 0.5.16 to 0.5.22 offers 'triton', 'csgmv', 'ascend', 'torch_native'"
    )
    assert choice_note("--lora-backend", "triton") is None
    log = "[2026-01-01 00:00:00] sglang serve: error: unrecognized arguments: --max-loaded-loras=4 --stream-output\n" * 3
    assert notes(log) == [flag_history("--max-loaded-loras").note(), flag_history("--stream-output").note()]
    assert rule_releases_note(["0.5.23", "53ccafdf"]) == "this error is raised by sglang 0.5.23 only (not by 0.5.16 to 0.5.22)"
    assert rule_releases_note(list(SGLANG_VERSIONS)) is None


def test_explain_command_prints_the_notes(run_cli) -> None:
    done = run_cli("explain", "sglang serve: error: unrecognized arguments: --no-enable-tf32-matmul")
    assert done.returncode == 0
    assert "sglang releases\n  - --no-enable-tf32-matmul is an argument of sglang 0.5.23 only" in done.stdout
    document = json.loads(run_cli("explain", "unrecognized arguments: --stream-output", "--format", "json").stdout)
    assert document["releases"] == [flag_history("--stream-output").note()]


def test_explain_names_the_releases_that_raise_a_message(run_cli) -> None:
    """A rule whose sglang site older releases lack (engine/sites.py, from the audit)."""
    done = run_cli("explain", "ValueError: --lora-backend triton_v2 does not yet support two-batch overlap")
    assert done.returncode == 0
    assert "  - lora-triton-v2-no-two-batch-overlap: this error is raised by sglang 0.5.23 only (not by 0.5.16 to 0.5.22)" in done.stdout
    done = run_cli("explain", "ValueError: InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend")
    assert done.returncode == 0 and "sglang releases" not in done.stdout  # raised by every release
