"""Every supported sglang release: its shipped argument table is what its own wheel gives, and
random launch commands parse as that wheel's own argparse parses them.

Per release R (0.5.16-0.5.23): tests/oracle/sglang_argparse.py loads R's wheel (stand-ins for
what its argument code imports) and builds `prepare_server_args`' parser; the checker parses the
same words with `inputs.launch.parse_launch` under `argument_table.using(R)`; with a `--config`
file (dash keys drawn the same way) the wheel's own `ConfigArgumentMerger` merges it first. The commands are
drawn from the union of every release's arguments, so a flag that R lacks (added later, or
removed) is drawn too and must be R's own "unrecognized arguments"; values are good and bad ones
for each argument's type and choices.

The three newest releases run everywhere (CI pre-downloads their wheels: .ci/run); the others
only with INKLING_COMPAT_ALL_RELEASES=1 (`make fidelity-all`; docs/fidelity.md has its last run).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from oracle import sglang_argparse, sglang_sink
from oracle.require import load_or_skip

from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table
from inkling_compat.inputs.launch import parse_launch
from inkling_compat.inputs.versions import SGLANG_RELEASES

TESTS = Path(__file__).resolve().parent
IN_CI = SGLANG_RELEASES[:3]
ALL = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
RELEASES = [pytest.param(r, marks=() if r in IN_CI or ALL else pytest.mark.skip(reason="older release: make fidelity-all")) for r in SGLANG_RELEASES]


def _load(release: str) -> Any:
    return load_or_skip(lambda: sglang_argparse.load(sglang_sink.find_wheel(version=release)), f"{release} argument parser")


@pytest.mark.long
def test_the_shipped_tables_are_what_the_release_wheels_give(tmp_path: Path) -> None:
    """Each release's shipped table (the three newest; every release under ALL) is what a fresh
    interpreter makes of its wheel, as the generator runs: one process, each wheel in turn."""
    releases = [r for r in SGLANG_RELEASES if r in IN_CI or ALL]
    wheels = {r: load_or_skip(lambda r=r: sglang_sink.find_wheel(version=r), f"{r} wheel") for r in releases}
    given = [word for wheel in wheels.values() for word in ("--wheel", str(wheel))]
    done = subprocess.run([sys.executable, "-m", "oracle.sglang_argparse", *given, "--out-dir", str(tmp_path)], cwd=TESTS, check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    for release, wheel in wheels.items():
        fresh = json.loads((tmp_path / f"{release}.json").read_text())
        shipped = dict(argument_table.table(release))
        fresh.pop("stood_in"), shipped.pop("stood_in")
        assert fresh["sglang"] == release
        assert shipped == fresh, f"{release} stale: run `cd tests && python -m oracle.sglang_argparse --wheel {wheel}`"


# --- random launch commands ---------------------------------------------------------------------

_VALUES: dict[str | None, list[str]] = {
    "int": ["8", "x", "1.5"],
    "float": ["0.5", "y"],
    "str": ["abc"],
    None: ["abc"],
    "human_readable_int": ["4k", "2Ki", "1.5Ki", "z", "64", "1.5", " 8k "],
    "json_list_type": ["[1, 2]", "["],
    "loads": ['{"a": 1}', "{"],
    "nullable_str": ["None", "abc"],
    "parse_cuda_graph_backend_arg": ["full", "tc_piecewise", "nope"],
    "parse_cuda_graph_config_arg": ['{"a": 1}', "[]", "{"],
}


@functools.lru_cache(maxsize=1)
def _union() -> list[dict[str, Any]]:
    """Every argument of every release (by first option), newest release's row first."""
    rows: dict[str, dict[str, Any]] = {}
    for release in SGLANG_RELEASES:
        for row in argument_table.table(release)["arguments"]:
            if row["action"] != "help" and "--config" not in row["options"] and row["dest"] != "model_path":
                rows.setdefault(row["options"][0], row)
    return sorted(rows.values(), key=lambda r: r["options"][0])


@st.composite
def _words(draw: Any, row: dict[str, Any]) -> list[str]:
    flag = draw(st.sampled_from([o for o in row["options"] if o.startswith("--")] or row["options"]))
    if row["action"] in ("store_true", "store_false", "DeprecatedStoreTrueAction", "DeprecatedAction") or row["nargs"] == 0:
        return [flag]
    if row["action"] == "boolean_optional":
        return [draw(st.sampled_from([flag, "--no-" + flag[2:]]))]
    choices = row["choices"]
    if isinstance(choices, dict):
        choices = choices["set"]
    if row["action"] == "LoRAPathAction":
        pool = ["a=/x/a", "/x/b", '{"lora_name": "c", "lora_path": "/x/c"}', '{"lora_name": "c"}']
    elif choices:
        pool = [str(c) for c in choices] + ["bogus"]
    else:
        pool = _VALUES.get(row["type"], ["abc"])
    count = 1 if row["nargs"] in (None, "?") else draw(st.integers(1, 2))
    values = [draw(st.sampled_from(pool)) for _ in range(count)]
    if row["nargs"] is None and len(values) == 1 and draw(st.booleans()):
        return [f"{flag}={values[0]}"]
    return [flag, *values]


@st.composite
def _config_value(draw: Any, row: dict[str, Any]) -> Any:
    if row["action"] in ("store_true", "store_false", "DeprecatedStoreTrueAction", "boolean_optional") or row["nargs"] == 0:
        return draw(st.sampled_from([True, False, "yes"]))
    words = draw(_words(row))
    values = [w.split("=", 1)[1] for w in words[:1] if "=" in w] or words[1:]
    if row["nargs"] in ("+", "*") or (isinstance(row["nargs"], int) and row["nargs"] > 1):
        return values
    value = values[0] if values else "x"
    return int(value) if value.isdigit() and draw(st.booleans()) else value


@st.composite
def _commands(draw: Any, config_dir: Path | None = None) -> list[str]:
    argv = ["--model-path", "/m"]
    for row in draw(st.lists(st.sampled_from(_union()), max_size=4)):
        argv += draw(_words(row))
    if config_dir is not None and draw(st.booleans()):
        # sglang's own --config file: dash keys (its merger passes `--<key>` as written)
        rows = draw(st.lists(st.sampled_from(_union()), max_size=3, unique_by=lambda r: r["options"][0]))
        data = {row["options"][0][2:]: draw(_config_value(row)) for row in rows if row["options"][0].startswith("--")}
        path = config_dir / "c.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        at = draw(st.integers(0, len(argv)))
        argv[at:at] = ["--config", str(path)]
    return argv


def _ours(release: str, argv: list[str]) -> tuple[str, Any]:
    with argument_table.using(release):
        try:
            launch = parse_launch(["sglang", "serve", *argv])
        except InputError as exc:
            return "refused", exc.reason
    if launch.refusals:  # sglang stops parsing: the problem argparse-* / sglang-config-file-refused reports
        refusal = launch.refusals[0]  # (an action's AssertionError reads as its traceback ends, as the oracle gives it)
        raised = refusal["error_class"] == "AssertionError"
        return "refused", f"AssertionError: {refusal['message']}" if raised else refusal["message"]
    return "ok", launch.values


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


_INVALID_CHOICE = re.compile(r"(argument (\S+): invalid choice: .*\(choose from )(.*)\)", re.S)


def _same_refusal(release: str, ours: str, theirs: str) -> bool:
    """The same refusal; where the argument's choices are a `set`, argparse names them in its
    iteration order, which the string hash seed of sglang's process decides (docs/fidelity.md:
    the checker lists them sorted), so that list is compared as a set."""
    if ours == theirs:
        return True
    a, b = _INVALID_CHOICE.fullmatch(ours), _INVALID_CHOICE.fullmatch(theirs)
    if a is None or b is None or a.group(1) != b.group(1):
        return False
    options = set(a.group(2).split("/"))
    rows = [r for r in argument_table.table(release)["arguments"] if options & set(r["options"])]
    unordered = len(rows) == 1 and isinstance(rows[0]["choices"], dict) and "set" in rows[0]["choices"]
    return unordered and sorted(a.group(3).split(", ")) == sorted(b.group(3).split(", "))


def test_a_set_s_choices_compare_in_any_order() -> None:
    said = "argument --sampling-backend: invalid choice: 'bogus' (choose from {})"
    sorted_, hashed = "'ascend', 'flashinfer', 'intel_xpu', 'pytorch'", "'intel_xpu', 'flashinfer', 'ascend', 'pytorch'"
    assert _same_refusal("0.5.22", said.format(sorted_), said.format(hashed))
    assert not _same_refusal("0.5.22", said.format(sorted_), said.format("'intel_xpu', 'flashinfer', 'pytorch'"))
    listed = "argument --lora-backend: invalid choice: 'x' (choose from {})"
    rows = [r for r in argument_table.table("0.5.22")["arguments"] if "--lora-backend" in r["options"]]
    assert isinstance(rows[0]["choices"], list) and len(rows[0]["choices"]) > 1  # a list keeps its order
    choices = [repr(c) for c in rows[0]["choices"]]
    assert not _same_refusal("0.5.22", listed.format(", ".join(choices)), listed.format(", ".join(reversed(choices))))


@pytest.mark.parametrize("release", RELEASES)
def test_random_commands_parse_as_the_release_parses_them(release: str, tmp_path: Path) -> None:
    oracle = _load(release)
    # what argparse leaves in the namespace when nothing is given (a dest's first default that
    # is not SUPPRESS: a deprecated alias shares its dest with the real flag)
    defaults = sglang_argparse.parse(oracle, ["--model-path", "/m"])[1]

    @settings(max_examples=150 if ALL else 60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_commands(tmp_path))
    @example(["--model-path", "/m", "--lora-paths", '{"lora_name": "c"}'])  # the action's AssertionError
    @example(["--model-path", "/m", "--sampling-backend", "bogus"])  # a set's choices (0.5.22: hash order)
    def prop(argv: list[str]) -> None:
        theirs = sglang_argparse.parse(oracle, list(argv))
        ours = _ours(release, list(argv))
        assert ours[0] == theirs[0], (release, argv, ours, theirs)
        if ours[0] == "refused":
            assert _same_refusal(release, ours[1].split(" (did you mean")[0], theirs[1]), (release, argv, ours[1], theirs[1])
            return
        for dest, value in ours[1].items():
            assert _plain(value) == _plain(theirs[1][dest]), (release, argv, dest)
        for dest, value in theirs[1].items():
            if dest not in ours[1]:
                assert _plain(value) == _plain(defaults[dest]), (release, argv, dest)

    prop()


def test_the_oracle_converts_with_sglang_s_own_functions() -> None:
    oracle = _load(SGLANG_RELEASES[0])
    assert sglang_argparse.parse(oracle, ["--model-path", "/m", "--sidecar-args", "[1, 2]"])[1]["sidecar_args"] == [1, 2]


def test_a_flag_of_one_release_only_is_refused_by_the_others_in_their_words() -> None:
    """The cases the issue names, against the tables alone (no wheel needed)."""
    assert _ours("0.5.23", ["--model-path", "/m", "--no-enable-tf32-matmul"])[0] == "ok"
    assert _ours("0.5.22", ["--model-path", "/m", "--no-enable-tf32-matmul"])[1].startswith("unrecognized arguments: --no-enable-tf32-matmul")
    assert _ours("0.5.22", ["--model-path", "/m", "--speculative-skip-dp-mlp-sync"])[0] == "ok"
    assert _ours("0.5.23", ["--model-path", "/m", "--speculative-skip-dp-mlp-sync"])[1].startswith("unrecognized arguments: --speculative-skip-dp-mlp-sync")
    assert _ours("0.5.23", ["--model-path", "/m", "--lora-backend", "triton_v2"])[0] == "ok"
    refused = _ours("0.5.22", ["--model-path", "/m", "--lora-backend", "triton_v2"])[1]
    assert refused == "argument --lora-backend: invalid choice: 'triton_v2' (choose from 'triton', 'csgmv', 'ascend', 'torch_native')"
    # the revision reads 0.5.23's table
    assert _ours("53ccafdf", ["--model-path", "/m", "--lora-backend", "triton_v2"])[0] == "ok"


def test_each_release_merges_a_config_file_as_its_own_merger_does(tmp_path: Path) -> None:
    """0.5.16-0.5.22's ConfigArgumentMerger names keys by dest and supports store and store_true
    only: a dest a deprecated alias shares is refused; 0.5.23's takes any spelling."""
    config = tmp_path / "c.yaml"
    config.write_text("dsa-prefill-backend: flashmla_sparse\n")
    argv = ["--model-path", "/m", "--config", str(config)]
    assert _ours("0.5.19", argv) == ("refused", "Unsupported config option 'dsa_prefill_backend' with action 'DeprecatedAliasStoreAction'")
    assert _ours("0.5.23", argv)[0] == "ok"
