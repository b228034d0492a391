"""The public deployment corpus (tests/data/deployments/: 30 files from sglang's docs and
scripts, SkyPilot's tasks, public repositories' manifests, compose files, Dockerfiles and
`docker run` lines, each with its SOURCE): every sglang command the checker finds is the one the
runtime would start, word for word, with the same words unknown; and the verdict the checker
reaches on it is sglang 0.5.23's own (tests/oracle/deployment_corpus.py computes both without
inkling-compat: real bash with recording stand-ins, the wheel's argument parser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inkling_compat.errors import InputError
from inkling_compat.inputs.deployment import read_deployment
from inkling_compat.inputs.launch import parse_launch
from oracle import deployment_corpus
from oracle.require import load_or_skip

CASES = sorted(p for p in deployment_corpus.CORPUS.iterdir() if p.is_dir())
# Where inputs/shell.py and bash part (the case stays in the corpus, and the test flips when fixed).
KNOWN_DIFFERENCES = {
}


def _params(cases: list[Path]) -> list:  # type: ignore[type-arg]
    return [pytest.param(c, id=c.name, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[c.name], strict=True)) if c.name in KNOWN_DIFFERENCES else pytest.param(c, id=c.name) for c in cases]


def _reads_arguments(text: str) -> bool:
    """A script whose values its arguments may change ($1, $@, $#, shift): bash run without
    arguments shows one of its runs, so the checker may call more of its words unknown."""
    import re

    return bool(re.search(r"\$[@#1-9*]|\$\{[@#1-9]|\bshift\b", text))


def _expected(case: Path) -> dict:
    return json.loads((case / "expected.json").read_text())


def test_the_corpus_is_at_least_30_public_files_with_sources() -> None:
    assert len(CASES) >= 30
    for case in CASES:
        source = (case / "SOURCE").read_text()
        assert source.startswith("repo: ") and "\nurl: https://github.com/" in source, case.name
        assert case.name in deployment_corpus.KINDS


@pytest.mark.parametrize("case", _params(CASES))
def test_the_commands_found_are_the_ones_the_runtime_starts(case: Path) -> None:
    expected = _expected(case)
    path = deployment_corpus.case_file(case)
    if expected.get("none"):
        with pytest.raises(InputError) as refused:
            read_deployment(str(path))
        assert "\n" not in str(refused.value)
        assert "no sglang launch command" in refused.value.reason or "helm template" in refused.value.reason
        return
    found = read_deployment(str(path)).commands
    assert len(found) == len(expected["commands"])
    for command, want in zip(found, expected["commands"]):
        if _reads_arguments(path.read_text()):
            assert set(want["unknown"]) <= set(command.unknown), command.place
            assert len(command.words) == len(want["argv"]), command.place
            assert [w for i, w in enumerate(command.words) if i not in command.unknown] == [w for i, w in enumerate(want["argv"]) if i not in command.unknown], command.place
            continue
        assert sorted(command.unknown) == want["unknown"], command.place
        known = [w for i, w in enumerate(command.words) if i not in command.unknown]
        assert known == [w for i, w in enumerate(want["argv"]) if i not in want["unknown"]], command.place


def _ours(words: tuple[str, ...], unknown: list[int]) -> str:
    """The checker's verdict on the words the file determines (each unknown option and its value
    left out, as the oracle's verdict leaves them out)."""
    kept: list[str] = []
    for i, word in enumerate(words):
        if i in unknown:
            if kept and kept[-1].startswith("--") and i > 0 and words[i - 1] == kept[-1]:
                kept.pop()
            continue
        kept.append(word)
    try:
        launch = parse_launch(kept)
    except InputError as exc:
        return f"refused: {exc.reason}"
    return f"refused: {launch.refusals[0]['message']}" if launch.refusals else "ok"


@pytest.mark.parametrize("case", _params(CASES))
def test_each_verdict_is_sglangs_own(case: Path) -> None:
    load_or_skip(lambda: __import__("oracle.sglang_argparse", fromlist=["load"]).load(), "argparse")
    expected = _expected(case)
    assert deployment_corpus.expected(case) == expected, "expected.json is stale: python -m oracle.deployment_corpus (from tests/)"
    if expected.get("none"):
        return
    path = deployment_corpus.case_file(case)
    found = read_deployment(str(path)).commands
    for command, want in zip(found, expected["commands"]):
        if _reads_arguments(path.read_text()) and set(command.unknown) != set(want["unknown"]):
            # the oracle's verdict on the same words the checker could read
            want = dict(want, verdict=deployment_corpus.verdict([w if i not in command.unknown else "@unknown:ARG@" for i, w in enumerate(want["argv"])]))
        assert _ours(command.words, sorted(command.unknown)) == want["verdict"], command.place
