"""A server config's value outside an argument's `choices=` is refused as the release's own
`--config` merging and argparse refuse it, for every choices-restricted argument of every
release's table (typed `ServerConfig` fields such as `moe_a2a_backend` included).

The oracle: the release's wheel (tests/oracle/sglang_argparse.py) merges a YAML file with the
same key through its own ConfigArgumentMerger and parses it with its own parser. The checker's
message for the key must end with the oracle's words. The three newest releases and 0.5.16 (whose
`--moe-a2a-backend` has no `pplx`) run everywhere; the others with INKLING_COMPAT_ALL_RELEASES=1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from oracle import sglang_argparse, sglang_sink
from oracle.require import load_or_skip

from inkling_compat.api import check
from inkling_compat.errors import InputError
from inkling_compat.inputs import argument_table
from inkling_compat.inputs.models import ServerConfig
from inkling_compat.inputs.server_arguments import CHOICES_BY_RULE, sort_arguments
from inkling_compat.inputs.versions import SGLANG_RELEASES

ROOT = Path(__file__).resolve().parent.parent
ALL = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
ALWAYS = (*SGLANG_RELEASES[:3], "0.5.16")
RELEASES = [pytest.param(r, marks=() if r in ALWAYS or ALL else pytest.mark.skip(reason="older release: make fidelity-all")) for r in SGLANG_RELEASES]


def _oracle(release: str) -> Any:
    return load_or_skip(lambda: sglang_argparse.load(sglang_sink.find_wheel(version=release)), f"{release} argument parser")


def _not_a_choice(row: dict[str, Any]) -> str:
    """A value of the argument's type that is none of its choices (argparse converts first)."""
    if row["dest"] == "moe_a2a_backend" and "pplx" not in row["choices"]:
        return "pplx"  # (a backend of the later releases)
    return "7" if row["type"] == "int" else "not-a-choice"


def _in_order(message: str, row: dict[str, Any]) -> str:
    """argparse lists a set's choices in its iteration order, which string hashing makes differ
    per process (the table records them sorted): such a list compared sorted."""
    head, sep, listed = message.partition(" (choose from ")
    if not isinstance(row["choices"], dict) or not sep:
        return message
    return f"{head}{sep}{', '.join(sorted(listed.removesuffix(')').split(', ')))})"


def _refused_by_the_wheel(oracle: Any, folder: Path, key: str, value: str) -> str:
    path = folder / "serve.yaml"
    path.write_text(yaml.safe_dump({key: value}), encoding="utf-8")
    said, text = sglang_argparse.parse(oracle, ["--model-path", "/m", "--config", str(path)])
    assert said == "refused", (key, value, text)
    return text


@pytest.mark.parametrize("release", RELEASES)
def test_every_choices_argument_is_refused_in_the_releases_words(release: str, tmp_path: Path) -> None:
    oracle = _oracle(release)
    rows = [r for r in argument_table.table(release)["arguments"] if r.get("choices") and r["dest"] not in CHOICES_BY_RULE]
    assert len(rows) > 60
    checked = []
    for row in rows:
        key = argument_table.flag(row)[2:]  # sglang's own spelling of a config key
        value = _not_a_choice(row)
        expected = _refused_by_the_wheel(oracle, tmp_path, key, value)
        if expected.startswith("Unsupported config option") and row["dest"] in ServerConfig.model_fields:
            # The checker's own format takes a typed field whatever the release's merger says
            # of it (rules/server_args/sglang-config-file-refused.yaml): argparse's words for it.
            said, expected = sglang_argparse.parse(oracle, ["--model-path", "/m", argument_table.flag(row), value])
            assert said == "refused"
        spellings = [key, row["dest"]] if row["dest"] in ServerConfig.model_fields else [key]  # (a typed field's name too)
        for spelt in spellings:
            with argument_table.using(release), pytest.raises(InputError) as caught:
                sort_arguments({spelt: value}, "serve.yaml")
            assert str(caught.value).startswith(f"serve.yaml: {spelt}: ")
            assert _in_order(str(caught.value), row).endswith(_in_order(expected, row)), (release, spelt)
        checked.append(row["dest"])
    assert "moe_a2a_backend" in checked and "dtype" in checked  # typed fields are among them


@pytest.mark.parametrize("release", RELEASES)
def test_the_ruled_choices_are_reported_in_the_releases_words(release: str, tmp_path: Path) -> None:
    """The LoRA arguments' choices are rules (a problem of the deployment, exit 1), in the same words."""
    oracle = _oracle(release)
    for dest in sorted(CHOICES_BY_RULE - {"lora_target_modules"}):
        row = argument_table.lookup(dest)
        assert row is not None and row["choices"]
        value = "7" if row["type"] == "int" else "not-a-choice"
        expected = _refused_by_the_wheel(oracle, tmp_path, argument_table.flag(row)[2:], value)
        report = check({"enable_lora": True, "lora_backend": "triton", dest: int(value) if row["type"] == "int" else value}, None, sglang_version=release)
        assert expected in [p.message for p in report.problems], (release, dest)


def test_moe_a2a_backend_pplx_on_0_5_16_is_refused_by_the_command(tmp_path: Path) -> None:
    _oracle("0.5.16")
    serve = tmp_path / "serve.yaml"
    serve.write_text("model_path: /models/x\nmoe_a2a_backend: pplx\n", encoding="utf-8")
    report = check(str(serve), None, sglang_version="0.5.16")  # a problem of the deployment (exit 1), at its key
    assert [(p.rule_id, p.error_class, p.message) for p in report.problems] == [(
        "argparse-invalid-choice", "SystemExit",
        "argument --moe-a2a-backend: invalid choice: 'pplx' "
        "(choose from 'none', 'deepep', 'mooncake', 'nixl', 'mori', 'ascend_fuseep', 'flashinfer', 'megamoe', 'ascend_tp')",
    )]
    assert [(loc.file, loc.line) for loc in report.problems[0].locations] == [(str(serve), 2)]
    assert check(str(serve), None, sglang_version="0.5.23") is not None  # (0.5.23 has pplx: no refusal)


def test_the_ruled_choices_are_the_rule_familys_fields() -> None:
    fields = set()
    for path in (ROOT / "rules").rglob("*.yaml"):
        rule = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # (libyaml: the same data, 9x faster)
        if isinstance(rule, dict) and rule.get("family") == "argparse-lora-choices" and "id" in rule:
            fields |= {p.removeprefix("config.") for p in rule["field_paths"]}
    assert fields == set(CHOICES_BY_RULE)


def test_an_empty_value_and_a_choice_are_not_refused() -> None:
    with argument_table.using("0.5.16"):
        out, unknown, _ = sort_arguments({"moe_a2a_backend": "deepep", "quantization": None, "dtype": "bfloat16"}, "serve.yaml")
    assert out == {"moe_a2a_backend": "deepep", "quantization": None, "dtype": "bfloat16"} and unknown == []


# A list or a mapping given to a typed field that takes no list, as sglang's merger passes it
# (`--flag a b`, `--flag '{json}'`, nothing for `[]`), then its argparse.
CONTAINERS = ([], ["8"], [8, 9], {"a": 1}, [True])


@pytest.mark.parametrize("release", RELEASES)
def test_a_container_value_of_a_typed_field_is_what_the_releases_merger_makes_of_it(release: str, tmp_path: Path) -> None:
    oracle = _oracle(release)
    rows = [argument_table.lookup(dest) for dest in sorted(ServerConfig.model_fields)]
    rows = [r for r in rows if r is not None and r["nargs"] not in ("*", "+") and r["dest"] != "model_path"]
    assert len(rows) > 20
    compared = 0
    for row in rows:
        key = argument_table.flag(row)[2:]
        for value in CONTAINERS:
            path = tmp_path / "serve.yaml"
            path.write_text(yaml.safe_dump({"model-path": "/m", key: value}), encoding="utf-8")
            said, text = sglang_argparse.parse(oracle, ["--config", str(path)])
            if said == "refused" and text.startswith("Unsupported config option"):
                continue  # (the checker's format takes a typed field whatever the merger says: above)
            report = check(str(path), None, sglang_version=release)  # never an InputError (exit 2)
            messages = [p.message for p in report.problems if p.rule_id.startswith("argparse-") or p.rule_id == "unknown-config-key"]
            if said == "refused":
                assert any(_in_order(text, row) in _in_order(m, row) for m in messages), (release, key, value, text, messages)
            else:
                assert messages == [], (release, key, value, messages)
            compared += 1
    assert compared > 5 * 20


def test_a_typed_fields_choice_is_the_releases_whatever_else_the_config_holds(tmp_path: Path) -> None:
    """A config of typed fields only is read by the release's argparse too (0.5.22 has no
    `lora_triton` MoE runner: sglang refuses it, alone in the file or beside other keys)."""
    _oracle("0.5.22")
    for text in ("speculative_moe_runner_backend: lora_triton\n", "enable_lora: true\nspeculative_moe_runner_backend: lora_triton\nchunked_prefill_size: 64\n"):
        serve = tmp_path / "serve.yaml"
        serve.write_text(text, encoding="utf-8")
        report = check(str(serve), None, sglang_version="0.5.22")
        assert [p.rule_id for p in report.problems] == ["argparse-invalid-choice"], text
        assert report.problems[0].message.startswith("argument --speculative-moe-runner-backend: invalid choice: 'lora_triton'")
    assert check({"speculative_moe_runner_backend": "lora_triton"}, None, sglang_version="0.5.23").ok


def test_a_ruled_lora_choice_refused_first_is_what_sglang_says_first(tmp_path: Path) -> None:
    """sglang's merger passes the keys in file order and argparse stops at the first refusal: an
    invalid LoRA choice (a rule's) before an invalid typed choice is the one reported."""
    oracle = _oracle("0.5.22")
    serve = tmp_path / "serve.yaml"
    serve.write_text("max-lora-chunk-size: 8\nspeculative-moe-runner-backend: lora_triton\n", encoding="utf-8")
    said, text = sglang_argparse.parse(oracle, ["--model-path", "/m", "--config", str(serve)])
    assert said == "refused" and text.startswith("argument --max-lora-chunk-size: invalid choice: 8")
    report = check(str(serve), None, sglang_version="0.5.22")
    assert [p.message for p in report.problems if p.severity == "error"][:1] == [text]
    serve.write_text("speculative-moe-runner-backend: lora_triton\nmax-lora-chunk-size: 8\n", encoding="utf-8")
    said, text = sglang_argparse.parse(oracle, ["--model-path", "/m", "--config", str(serve)])
    assert text.startswith("argument --speculative-moe-runner-backend")
    assert check(str(serve), None, sglang_version="0.5.22").problems[0].message.startswith(text[:60])


# Configs whose keys sglang's argparse refuses, in several orders: a LoRA choice that its rule
# checks, a typed field's value of the wrong type, an unknown key, a valid key after them.
_ORDERED_REFUSALS = [
    "lora-backend: tritonx\nlora-target-modules: [w13]\nenable-lora: true\nmax-lora-rank: 8\n",
    "lora-target-modules: [w13]\nlora-backend: tritonx\n",
    "max-lora-chunk-size: 8\nlora-eviction-policy: fifo\nlora-backend: x\n",
    "lora-backend: tritonx\ntp-size: abc\n",
    "tp-size: abc\nlora-backend: tritonx\n",
    "lora-target-modules: [w13]\nmax-loras-per-batch: x\n",
    "foo-bar: 1\nlora-backend: tritonx\n",
    "tp-size: 1.5\nlora-backend: triton\n",
    "max-lora-rank: true\nlora-backend: triton\n",
    "mem-fraction-static: half\nmax-lora-chunk-size: 8\n",
    "max-lora-chunk-size: 8\nlora-eviction-policy: fifo\nmax-loras-per-batch: x\n",
]


@pytest.mark.parametrize("text", _ORDERED_REFUSALS)
def test_the_first_refusal_in_file_order_is_what_sglang_says_first(text: str, tmp_path: Path) -> None:
    """sglang's merger passes the keys in file order and argparse stops at the first value it
    refuses, a typed field's value of the wrong type included (named with all its flags, as
    argparse names them): that refusal is the report's first raise, and a later key's refusal,
    which argparse never reaches (another refused LoRA choice included), is in no problem."""
    serve = tmp_path / "serve.yaml"
    serve.write_text("model-path: /m\n" + text, encoding="utf-8")
    said, expected = sglang_argparse.parse(_oracle(SGLANG_RELEASES[0]), ["--config", str(serve)])
    assert said == "refused"
    report = check(str(serve), None, sglang_version=SGLANG_RELEASES[0])
    assert report.first is not None and report.first.message == expected
    assert [p.message for p in report.problems if p.message.startswith("argument ")] == [expected]
