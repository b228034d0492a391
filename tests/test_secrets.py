"""No secret of an input is ever printed (inputs/secrets.py, output_stream.masked): a token
planted in a config file, a launch command's `--api-key` and a `HF_TOKEN=` assignment, in every
output format, --diff and --fix, and the one line of an unusable input."""

from __future__ import annotations

from pathlib import Path

import pytest

from inkling_compat.cli import main
from inkling_compat.inputs import secrets
from inkling_compat.report.formats import NAMES

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "sk-live-0123456789abcdefXYZ"
HF_TOKEN = "hf_PLANTEDplantedPLANTED0123"
PASSWORD = "correct-horse-battery"
FORMATS = NAMES  # every output format (report/formats.py)
# A launch whose words carry secrets and that fires problems (an unknown flag whose value is a
# secret: argparse's message quotes it).
COMMAND = [f"HF_TOKEN={HF_TOKEN}", "python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--api-key", API_KEY,
           "--max-lora-rnk", API_KEY]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    from inkling_compat import output_stream

    monkeypatch.setattr(output_stream, "_hidden", set())


def _clean(text: str) -> None:
    for secret in (API_KEY, HF_TOKEN, PASSWORD, "0123456789abcdef", "PLANTEDplanted"):
        assert secret not in text


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_launch_commands_secrets_are_in_no_format(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", fmt, "--", *COMMAND]) == 1
    out, err = capsys.readouterr()
    _clean(out + err)
    assert "unrecognized arguments: --max-lora-rnk ****" in out.replace("\\u002a", "*")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_config_files_secrets_are_in_no_format(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "serve.yaml"
    # (a compose file given as the server config: printed as one unknown key)
    config.write_text(
        f"model_path: examples/model\nhf_token: {HF_TOKEN}\nservices:\n  db:\n    password: {PASSWORD}\n    api-key: {API_KEY}\n"
        f"  sglang:\n    environment:\n      - HUGGING_FACE_HUB_TOKEN={HF_TOKEN}\n      - OPENAI_API_KEY={API_KEY}\n"
    )
    assert main(["check", "--format", fmt, "--config", str(config)]) in (1, 2)
    out, err = capsys.readouterr()
    _clean(out + err)


def test_a_launch_files_secrets_are_not_in_diff_or_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    launch = tmp_path / "start.sh"
    launch.write_text(
        f"export HF_TOKEN={HF_TOKEN}\nexec python3 -m sglang.launch_server --model-path examples/model --api-key {API_KEY} --enable-lora "
        "--lora-backend csgmv --max-loras-per-batch 4 --max-lora-rank 16 --lora-target-modules gate_up_proj down_proj\n"
    )
    for flag in ("--diff", "--fix"):
        main(["check", flag, "--launch", str(launch)])
        out, err = capsys.readouterr()
        assert "--lora-backend triton" in out
        _clean(out + err)
    main(["check", "--diff", "--format", "json", "--launch", str(launch)])
    out, err = capsys.readouterr()
    _clean(out + err)


@pytest.mark.parametrize(("line", "code", "key"), [
    ("sink:\n  sink_class: [{key}]", 2, "sink.sink_class"),  # unusable input: one line on stderr
    ("max_loras_per_batch: [{key}]", 1, "max_loras_per_batch"),  # sglang's merger: `--max-loras-per-batch <key>`, argparse's refusal quotes it
])
def test_an_unusable_or_refused_value_does_not_echo_a_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, code: int, key: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"api_key: {API_KEY}\n" + line.format(key=API_KEY) + "\n")
    assert main(["check", "--config", str(config)]) == code
    out, err = capsys.readouterr()
    assert key in (err if code == 2 else out)
    _clean(out + err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_sglangs_refusal_of_a_secret_value_does_not_echo_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    """argparse quotes the value it refuses (`invalid int value: '<the key>'`): a problem of the
    deployment (exit 1), and the secret masked in every format."""
    config = tmp_path / "serve.yaml"
    config.write_text(f"api_key: {API_KEY}\nport: {API_KEY}\n")
    assert main(["check", "--config", str(config), "--format", fmt]) == 1
    out, err = capsys.readouterr()
    assert "port" in out
    _clean(out + err)


def test_secret_names() -> None:
    assert all(secrets.secret_name(n) for n in ("HF_TOKEN", "api_key", "--admin-api-key", "AWS_SECRET_ACCESS_KEY", "accessToken", "ssl_keyfile_password", "DB_PASSWORD"))
    assert not any(secrets.secret_name(n) for n in ("max_total_tokens", "--tokenizer-path", "--ssl-keyfile", "max_lora_rank", "SGLANG_OPT_LINEARIZED_SHARED_SINK", "--speculative-token-map", "--bucket-inter-token-latency"))


def test_sglangs_secret_arguments() -> None:
    """Of sglang 0.5.23's arguments, those whose value is a secret (the others named with
    "token" hold numbers, which are never masked)."""
    from inkling_compat.inputs import argument_table

    named = {o for row in argument_table.table()["arguments"] for o in row["options"] if secrets.secret_name(o)}
    assert {"--api-key", "--admin-api-key", "--ssl-keyfile-password"} <= named
    assert named - {"--api-key", "--admin-api-key", "--ssl-keyfile-password"} == {"--bucket-time-to-first-token", "--kt-max-deferred-experts-per-token"}


def test_secrets_in_every_written_form() -> None:
    text = f"""HF_TOKEN={HF_TOKEN}
environment:
  OPENAI_API_KEY: "{API_KEY}"
env:
  - name: DB_PASSWORD
    value: {PASSWORD}
{{"api_key": "{API_KEY}"}}
"""
    assert secrets.in_text(text) == {HF_TOKEN, API_KEY, PASSWORD}
    assert secrets.in_words(["--api-key", API_KEY, f"--hf-token={HF_TOKEN}", "--port", "30000"]) == {API_KEY, HF_TOKEN}
    assert secrets.mask(f'a "{PASSWORD}" <x>{PASSWORD.replace("-", "-")}</x> ghp_{"a" * 30}', {PASSWORD}) == 'a "****" <x>****</x> ****'


def test_the_github_actions_files_hold_no_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inkling_compat.ci import action

    config = tmp_path / "serve.yaml"
    config.write_text(f"model_path: examples/model\napi-key: {API_KEY}\nhf-token: {HF_TOKEN}\n")
    summary, sarif = tmp_path / "summary.md", tmp_path / "out.sarif"
    env = {"INKLING_CONFIG": str(config), "INKLING_SARIF": str(sarif), "GITHUB_STEP_SUMMARY": str(summary), "INKLING_UPLOAD_SARIF": "false"}
    assert action.run(env) == 1
    out, err = capsys.readouterr()
    assert "hf-token" in sarif.read_text()  # (the unknown key is reported, its value masked)
    _clean(out + err + sarif.read_text() + summary.read_text())


def test_values_that_are_ordinary_words_are_not_masked() -> None:
    """`api_key: true` or `KEY=1` would blank every `true` and `1` of a report (and break JSON)."""
    assert secrets.in_text("api_key: true\nHF_TOKEN=1\nsecret: 30000\npassword: null\n") == set()
    assert secrets.mask('{"ok": true, "n": 1000}', {"true", "1000", "no"}) == '{"ok": true, "n": 1000}'


def test_each_command_masks_its_own_inputs_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--", "python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--api-key", "problems"])
    capsys.readouterr()
    assert main(["check", "--format", "json", "--", "python", "-m", "sglang.launch_server", "--model-path", "examples/model"]) == 0
    assert '"problems": []' in capsys.readouterr().out


# The string readings of secrets.py against the patterns they stand for.
from hypothesis import given, settings, strategies as st  # noqa: E402

import re  # noqa: E402
import sys  # noqa: E402

_TRICKY = "aZkKs\u017f\u212a\u0130\u00dfT0_-.=: \n9HTTPServerTOKENkeYpassWsecretghp_hf_sk-AKIAxoxb-\u00e9"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=40))
def test_name_words_are_the_patterns(name: str) -> None:
    assert secrets.name_words(name) == re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_TRICKY + "eEnNyYcCrRwWdDoOpP", max_size=40))
def test_a_name_is_told_without_its_words_only_where_its_words_say_no(name: str) -> None:
    """`secret_name`'s quick refusal (no hint in the lower-cased name) never refuses a name its
    words call a secret."""
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)]
    by_words = bool(words) and (words[-1].endswith(("token", "key", "secret", "password", "passwd")) or any(w.startswith(("secret", "password", "passwd")) for w in words))
    assert secrets.secret_name(name) == by_words


def test_name_words_examples() -> None:
    for name in ["HTTPServer", "ABc", "HF_TOKEN", "apiKey", "sslKeyfilePassword", "A", "a1B2", "KEY9key", "", "--api-key", "xYZw"]:
        assert secrets.name_words(name) == re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name), name


def test_the_hint_takes_each_character_the_pattern_takes() -> None:
    """Every code point in place of each letter of each hint: the same answer as the pattern."""
    pattern = re.compile(r"(?i)token|key|secret|passw")
    letters = re.compile(r"(?i)[tokenyscrpaw]")
    for point in range(sys.maxunicode + 1):
        c = chr(point)
        if letters.fullmatch(c) or c.lower() in "tokenyscrpaw" and c.lower():
            for hint in ("token", "key", "secret", "passw"):
                for at in range(len(hint)):
                    line = "x" + hint[:at] + c + hint[at + 1 :] + "x"
                    assert secrets._hinted(line) == bool(pattern.search(line)), (hex(point), line)
    for c in ("\u0130", "\u00df", "\ufb05", "\u212a", "\u017f"):  # (lower case of several characters, ligatures)
        for line in (f"to{c}en", f"{c}ey", f"secre{c}", f"pa{c}w", f"pas{c}w", f"{c}"):
            assert secrets._hinted(line) == bool(pattern.search(line)), line


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=60))
def test_the_hint_is_the_pattern(line: str) -> None:
    assert secrets._hinted(line) == bool(re.search(r"(?i)token|key|secret|passw", line))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="hf_sk-gpousrithbAKIxoa0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ. \n", max_size=80))
def test_mask_replaces_every_token_shape(text: str) -> None:
    assert secrets.mask(text) == re.sub(secrets.TOKEN_SHAPES, secrets.MASK, text)


def test_mask_replaces_each_token_shape() -> None:
    tokens = ["hf_" + "a" * 16, "sk-" + "b_" * 8, "ghp_" + "A" * 20, "ghr_" + "9" * 20, "github_pat_" + "x_" * 10, "AKIA" + "B7" * 8, "xoxs-" + "z-" * 5]
    for token in tokens:
        for text in (token, f"at {token}.", f"{token} and {token}", "x" + token):
            assert secrets.mask(text) == re.sub(secrets.TOKEN_SHAPES, secrets.MASK, text), text
        assert secrets.mask(f"key {token}") == f"key {secrets.MASK}"
