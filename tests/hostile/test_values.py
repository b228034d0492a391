"""Values that are not plain text reach the rules as sglang reads them: NaN, infinities, -0 and
integers past 64 bits in every int/float argument of sglang's table, on the command line and in
sglang's config file; YAML dates, timestamps, binary values and sets converted as
`ConfigArgumentMerger` converts them (str(), or json.dumps inside a mapping, whose TypeError
stops sglang and is the checker's one-line refusal)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from inkling_compat import cli
from inkling_compat.inputs.argument_table import table

ROOT = Path(__file__).resolve().parent.parent.parent
BASE = ["python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--lora-paths", "a=examples/adapter"]
# (the command-line word, the same value in YAML)
VALUES = [("nan", ".nan"), ("inf", ".inf"), ("-inf", "-.inf"), ("-0", "-0"), ("-0.0", "-0.0"), (str(2**63), str(2**63)), (str(2**64), str(2**64)), (str(10**100), str(10**100))]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _numeric_flags() -> list[str]:
    rows = table()["arguments"]
    return [next(o for o in r["options"] if o.startswith("--")) for r in rows if r["type"] in ("int", "float", "human_readable_int") and r["action"] == "store" and r["nargs"] is None]


@pytest.mark.long
@pytest.mark.parametrize("form", ["command line", "config file"])
def test_every_numeric_argument_takes_every_hostile_number(form: str, tmp_path: Path) -> None:
    flags = _numeric_flags()
    assert len(flags) > 100  # the whole table, not a sample
    failures = []
    for flag in flags:
        for n, (word, yaml_text) in enumerate(VALUES):
            if form == "command line":
                argv = ["check", "--", *BASE, flag, word]
            else:
                # (a file of its own each: ext4 flushes a file truncated and written again on
                # close, ~2.5 ms of wall time each, where a new file costs ~0.05 ms)
                config = tmp_path / f"{flag[2:]}-{n}.yaml"
                config.write_text(f"{flag[2:]}: {yaml_text}\n")
                argv = ["check", "--", *BASE, "--config", str(config)]
            code, _, err = _run(argv)
            if code not in (0, 1, 2) or err.count("\n") > 1:
                failures.append((flag, word, code, err[:200]))
    assert not failures, failures[:5]


def test_nan_threshold_is_sglangs_assertion(tmp_path: Path) -> None:
    """`assert lora_drain_wait_threshold >= 0.0` fails for NaN: the rule fires (it was exit 3)."""
    config = tmp_path / "c.yaml"
    config.write_text("lora-drain-wait-threshold: .nan\n")
    for argv in (["check", "--", *BASE, "--lora-drain-wait-threshold", "nan"], ["check", "--", *BASE, "--config", str(config)]):
        code, out, _ = _run(argv)
        assert code == 1 and "--lora-drain-wait-threshold must be non-negative." in out
    code, out, _ = _run(["check", "--", *BASE, "--lora-drain-wait-threshold", "inf"])
    assert "must be non-negative" not in out


@pytest.mark.parametrize(
    "value, refused",
    [
        ("2020-01-01", None),
        ("2020-01-01 10:00:00", None),
        ("2020-01-01T10:00:00Z", None),
        ("!!binary aGVsbG8=", None),
        ("!!set {a, b}", None),
        ("[2020-01-01, !!binary aGVsbG8=]", None),
        ("{a: 2020-01-01}", "TypeError: Object of type date is not JSON serializable"),
        ("{a: 2020-01-01 10:00:00}", "TypeError: Object of type datetime is not JSON serializable"),
        ("{a: !!binary aGVsbG8=}", "TypeError: Object of type bytes is not JSON serializable"),
        ("{a: !!set {b}}", "TypeError: Object of type set is not JSON serializable"),
        ("{a: .nan}", None),
    ],
)
def test_yaml_types_convert_as_sglangs_merger(value: str, refused: str | None, tmp_path: Path) -> None:
    """The words are the wheel's `ConfigArgumentMerger._convert_config_to_args`'s; where it
    raises, the check is one line naming the key, exit 2 (it was exit 3)."""
    import yaml

    from inkling_compat.inputs.sglang_config import ConfigRefused, config_to_args
    from oracle import sglang_argparse
    from oracle.require import load_or_skip

    oracle = load_or_skip(sglang_argparse.load, "argument parser")
    key = "json-model-override-args" if value.startswith("{") else "served-model-name" if not value.startswith("[") else "lora-target-modules"
    config = tmp_path / "c.yaml"
    config.write_text(f"{key}: {value}\n")
    data = yaml.safe_load(config.read_text())
    if refused is None:
        ours = [w for _, words in config_to_args(data) for w in words]
        assert ours == oracle.merger()._convert_config_to_args(data)
    else:
        with pytest.raises(TypeError) as raised:
            oracle.merger()._convert_config_to_args(data)
        assert f"TypeError: {raised.value}" == refused
        with pytest.raises(ConfigRefused, match=refused):
            config_to_args(data)
    # sglang's own --config in a launch command: its refusal is a problem of the deployment (exit 1,
    # rule sglang-config-file-refused); the checker's own --config format: unusable input (exit 2)
    for argv, refused_code in ((["check", "--", *BASE, "--config", str(config)], 1), (["check", "--config", str(config)], 2)):
        code, out, err = _run(argv)
        assert code in (0, 1, 2) and err.count("\n") <= 1, err
        if refused is not None:
            assert code == refused_code and refused in out + err and key in out + err, out + err
