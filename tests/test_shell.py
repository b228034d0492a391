"""inputs/shell.py: the sglang commands of shell scripts and container argv, with their words as
bash passes them (the differential against real bash is tests/test_shell_bash.py), and
`check --launch` on such scripts: values not defined in the file are "not checked", never a
false argparse error; `--env` / `--env-file` supply them.

The scripts marked "from" are public launch scripts (found with the search tool; reduced to
their launch part, paths kept as written)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat.errors import InputError
from inkling_compat.inputs import shell
from inkling_compat.inputs.launch import cli_config, env_values, parse_launch
from inkling_compat.inputs.shell import FoundCommand, find_commands, find_in_argv
from in_process import run_main

ROOT = Path(__file__).resolve().parent.parent
SERVER = ["python3", "-m", "sglang.launch_server"]


def one(script: str, **kw: object) -> FoundCommand:
    found = find_commands(script, origin="start.sh", **kw)  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


# --- public scripts ------------------------------------------------------------------------


def test_lsmcache_server_sh():
    # from WittenYeh/LSMCache server.sh: unset lines, then a command continued over lines
    script = (
        "# launch server script\nunset http_proxy\nunset https_proxy\n\npython3 -m sglang.launch_server \\\n"
        '    --model-path "/root/Qwen-7B/" \\\n    --host 0.0.0.0 \\\n    --port 30000 \\\n    --mem-fraction-static 0.8 \\\n'
        "    --trust-remote-code \\\n    --tp 1\n"
    )
    found = one(script)
    assert found.words == (*SERVER, "--model-path", "/root/Qwen-7B/", "--host", "0.0.0.0", "--port", "30000", "--mem-fraction-static", "0.8", "--trust-remote-code", "--tp", "1")
    assert found.line == 5 and not found.unknown


def test_atom_validation_script_with_a_pipe_and_background():
    # from zejunchen-zejun/ATOMModelBackendValidationHelper sgl/test.0.6B.tp1.sh
    script = (
        '#!/bin/bash\necho "run sgl"\nexport CUDA_VISIBLE_DEVICES=7\n\nrm -rf /root/.cache/\n\nmodel_path=/data/models/Qwen3-0.6B\n\n'
        "python3 -m sglang.launch_server \\\n    --model-path $model_path \\\n    --host localhost \\\n    --port 8000 \\\n"
        "    --kv-cache-dtype fp8_e4m3 \\\n    --tensor-parallel-size 1 \\\n    2>&1 | tee log.serve.log &\n"
    )
    found = one(script)
    assert found.words[3:5] == ("--model-path", "/data/models/Qwen3-0.6B")
    assert found.words[-2:] == ("--tensor-parallel-size", "1")  # the redirection and the pipe are not words
    assert found.env == {"CUDA_VISIBLE_DEVICES": "7"}


def test_defaults_from_the_environment_are_not_known():
    # from gongyisheng/oss-workspace miles/lora-gpt-oss/gpt-oss/run_sglang.sh
    script = (
        "#!/bin/bash\nset -ex\n\npkill -9 sglang\nsleep 3\nexport CUDA_VISIBLE_DEVICES=7\n\n"
        "MODEL_PATH=${MODEL_PATH:-/root/gpt-oss-20b}\nPORT=${PORT:-30000}\n\n\npython -m sglang.launch_server \\\n"
        '    --model-path "${MODEL_PATH}" \\\n    --lora-paths "my-lora-adapter=/root/lora_model/gpt-oss-20b" \\\n'
        '    --tp-size 1 \\\n    --lora-backend triton \\\n    --port "${PORT}" \\\n    --host 0.0.0.0\n'
    )
    found = one(script)
    assert found.unknown == {4: "$MODEL_PATH, not set in start.sh (default /root/gpt-oss-20b)", 12: "$PORT, not set in start.sh (default 30000)"}
    given = one(script, env={"MODEL_PATH": "/m", "PORT": "1"})
    assert not given.unknown and given.words[4] == "/m" and given.words[12] == "1"


def test_variables_set_in_the_file_are_expanded():
    # from a ReCall launch_sglang.sh: quoted assignments, unquoted use
    script = (
        '#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=2,3\nMODEL_NAME="qwen3b"\nMODEL_PATH="/mnt/model/Qwen2.5-3B-Instruct"\n\n'
        "python3 -m sglang.launch_server \\\n    --served-model-name ${MODEL_NAME} \\\n    --model-path ${MODEL_PATH} \\\n    --tp 2\n"
    )
    assert one(script).words[3:] == ("--served-model-name", "qwen3b", "--model-path", "/mnt/model/Qwen2.5-3B-Instruct", "--tp", "2")


# --- the grammar ---------------------------------------------------------------------------


def test_a_hash_inside_a_word_is_not_a_comment():
    found = one("python3 -m sglang.launch_server --model-path a#b --tp 2 # the rest is a comment --dp 9\n")
    assert found.words[3:] == ("--model-path", "a#b", "--tp", "2")


def test_comments_heredocs_and_uncalled_functions_are_not_commands():
    script = (
        "# python3 -m sglang.launch_server --commented\n"
        "cat > notes.txt <<EOF\npython3 -m sglang.launch_server --in-heredoc\nEOF\n"
        "never() { python3 -m sglang.launch_server --never; }\n"
        "-not-a-command --tp 2\n"
        "exec python3 -m sglang.launch_server --model-path m\n"
    )
    assert one(script).words[3:] == ("--model-path", "m")


def test_a_called_function_runs_with_its_arguments():
    script = 'serve() {\n  python3 -m sglang.launch_server --model-path "$1" --port "${2:-30000}"\n}\nserve /models/a\n'
    found = one(script)
    assert found.words[3:] == ("--model-path", "/models/a", "--port", "30000") and found.line == 2


def test_quotes_spanning_lines_and_continuations():
    found = one("python3 -m sglang.launch_server --json-model-override-args '{\n  \"a\": 1\n}' --model\\\n-path m\n")
    assert found.words[3:] == ("--json-model-override-args", '{\n  "a": 1\n}', "--model-path", "m")


def test_chains_subshells_and_cd_then_exec():
    assert one("cd /srv && exec python3 -m sglang.launch_server --model-path m\n").words[3:] == ("--model-path", "m")
    assert one("(cd /srv; python3 -m sglang.launch_server --model-path m) || exit 1\n").words[3:] == ("--model-path", "m")
    assert one("true | python3 -m sglang.launch_server --model-path m\n").words[3:] == ("--model-path", "m")


def test_arrays():
    script = 'ARGS=(--model-path "/models/my model" --tp 2)\nARGS+=(--enable-lora)\npython -m sglang.launch_server "${ARGS[@]}"\n'
    assert one(script).words[3:] == ("--model-path", "/models/my model", "--tp", "2", "--enable-lora")


def test_unquoted_variables_are_split_into_words():
    script = 'COMMON="--tp 2  --dp 1"\npython3 -m sglang.launch_server --model-path m $COMMON "$COMMON"\n'
    assert one(script).words[5:] == ("--tp", "2", "--dp", "1", "--tp 2  --dp 1")


@pytest.mark.parametrize(
    "line, expected",
    [
        ("nohup python3 -m sglang.launch_server --model-path m > log 2>&1 &", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("env -u X A=1 python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("timeout -s KILL 3600 python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("numactl --interleave=all -C 0-7 python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("taskset -c 0-7 python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("srun -N 2 --ntasks-per-node=1 --exclusive python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("uv run --with x python -m sglang.launch_server --model-path m", ("python", "-m", "sglang.launch_server", "--model-path", "m")),
        ("uv run -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("python3 -u -X faulthandler -O -m sglang.launch_server --model-path m", ("python3", "-u", "-X", "faulthandler", "-O", "-m", "sglang.launch_server", "--model-path", "m")),
        ("/opt/venv/bin/python3.11 -m sglang.launch_server --model-path m", ("/opt/venv/bin/python3.11", "-m", "sglang.launch_server", "--model-path", "m")),
        ("sglang serve --model-path m", ("sglang", "serve", "--model-path", "m")),
        ("python -m sglang.cli.main serve m", ("python", "-m", "sglang.cli.main", "serve", "m")),
        ("bash -lc 'sh -c \"exec python3 -m sglang.launch_server --model-path m\"'", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        (
            "docker run --gpus all --shm-size 32g -p 30000:30000 -v /data:/data --ipc=host -it --rm lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m",
            ("python3", "-m", "sglang.launch_server", "--model-path", "m"),
        ),
        ("podman run -d --entrypoint python3 img -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
        ("sudo -E -u svc python3 -m sglang.launch_server --model-path m", ("python3", "-m", "sglang.launch_server", "--model-path", "m")),
    ],
)
def test_wrappers_are_unwrapped(line: str, expected: tuple[str, ...]):
    assert one(line + "\n").words == expected


def test_docker_environment_is_the_containers():
    found = one("export OUTER=1\ndocker run -e SGLANG_X=1 --env HF_HOME=/cache -e OUTER img python3 -m sglang.launch_server --model-path m\n")
    assert found.env == {"SGLANG_X": "1", "HF_HOME": "/cache", "OUTER": "1"}


def test_bash_c_sees_only_exported_variables():
    found = one("export A=1\nB=2\nbash -c 'python3 -m sglang.launch_server --model-path \"$A\" --tp \"$B\"'\n")
    assert found.words[4] == "1" and found.unknown == {6: "$B, not set in start.sh"}


def test_every_command_is_found_in_order():
    script = "python3 -m sglang.launch_server --model-path a --port 1 &\npython3 -m sglang.launch_server --model-path b --port 2 &\nwait\n"
    found = find_commands(script, origin="start.sh")
    assert [f.words[4] for f in found] == ["a", "b"] and [f.line for f in found] == [1, 2]


def test_variables_set_in_a_branch_are_not_known_after_it():
    script = 'if [ -z "$PORT" ]; then PORT=30000; fi\npython3 -m sglang.launch_server --model-path m --port $PORT\n'
    assert one(script).unknown == {6: "$PORT, set in a branch or loop at line 1 of start.sh"}


def test_command_output_and_positional_parameters_are_not_known():
    found = one('python3 -m sglang.launch_server --model-path "$1" --host $(hostname -i) --port "${@}"\n')
    assert found.unknown[4] == "$1, an argument of start.sh"
    assert "a command's output" in found.unknown[6]
    assert found.unknown[8] == "$@, the arguments of start.sh"


def test_find_in_argv_unwraps_a_containers_command():
    found = find_in_argv(["/bin/sh", "-c", "exec python3 -m sglang.launch_server --model-path m --port $PORT"], origin="deploy.yaml", env={"PORT": "8000"})
    assert found[0].words[3:] == ("--model-path", "m", "--port", "8000") and found[0].env == {"PORT": "8000"}
    assert find_in_argv(["python3", "-m", "sglang.launch_server", "--port", "$(PORT)"], origin="x")[0].words[-1] == "$(PORT)"  # exec form: no shell
    assert find_in_argv(["nginx", "-g", "daemon off;"], origin="x") == []


# --- check --launch ------------------------------------------------------------------------


def test_an_undefined_value_is_not_checked_never_an_argparse_error(tmp_path: Path):
    script = tmp_path / "start.sh"
    script.write_text("python3 -m sglang.launch_server --model-path m --port $PORT --max-lora-rank ${RANK} --enable-lora\n")
    launch = cli_config(None, str(script), None)
    assert "port" not in launch.values and "max_lora_rank" not in launch.values
    assert dict(launch.unknown_values) == {"port": f"--port comes from $PORT, not set in {script}", "max_lora_rank": f"--max-lora-rank comes from $RANK, not set in {script}"}
    from inkling_compat.api import check

    report = check(launch)
    reasons = report.coverage.reasons
    assert f"--max-lora-rank comes from $RANK, not set in {script}" in reasons
    assert "lora-needs-rank-and-targets" in reasons[f"--max-lora-rank comes from $RANK, not set in {script}"]
    assert not any(p.rule_id == "lora-needs-rank-and-targets" for p in report.problems)
    given = check(cli_config(None, str(script), None, {"PORT": "1", "RANK": "16"}))
    assert any(p.rule_id == "lora-needs-rank-and-targets" for p in given.problems)  # now it is known: checked


def test_an_undefined_model_path_is_not_a_missing_required_argument():
    launch = parse_launch([*SERVER, "--model-path", "$M", "--tp", "2"], "start.sh", unknown={4: "$M, not set in start.sh"})
    assert launch.values == {"tp_size": 2} and launch.unknown_values == (("model_path", "--model-path comes from $M, not set in start.sh"),)


def test_words_that_may_hold_any_arguments_leave_the_config_not_checked():
    launch = parse_launch([*SERVER, "--model-path", "m", "$EXTRA"], "start.sh", unknown={5: "$EXTRA, not set in start.sh"})
    assert launch.unknown_values == (("*", "$EXTRA may hold any arguments: it comes from $EXTRA, not set in start.sh"),)
    from inkling_compat.api import check

    report = check(launch)
    assert report.coverage.not_checked > 100 and not report.problems


def test_env_file_and_env(tmp_path: Path):
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\n\nexport PORT=1\nMODEL='/m x'\nRANK=8 # inline\n")
    assert env_values(["RANK=16"], [str(env_file)]) == {"PORT": "1", "MODEL": "/m x", "RANK": "16"}
    (tmp_path / "bad.env").write_text("not a pair\n")
    with pytest.raises(InputError, match="line 1"):
        env_values([], [str(tmp_path / "bad.env")])
    with pytest.raises(InputError, match="NAME=VALUE"):
        env_values(["1X=2"], [])


def test_cli_names_the_value_not_known_and_takes_env(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    script = tmp_path / "start.sh"
    script.write_text("PORT=30000\npython3 -m sglang.launch_server --model-path /models/m --port $PORT --tp $TP\n")
    monkeypatch.chdir(ROOT)
    run = lambda *a: run_main(capsys, "check", "--launch", str(script), *a)  # noqa: E731  (in process: tests/in_process.py)
    plain = run()
    assert plain.returncode == 0, plain.stderr
    assert f"note: not checked: --tp-size comes from $TP, not set in {script}" in plain.stdout or f"note: not checked: --tp comes from $TP, not set in {script}" in plain.stdout
    as_json = json.loads(run("--format", "json", "--env", "TP=3").stdout)
    assert not any("--tp" in r for r in as_json["coverage"]["not_checked_reasons"])


def test_several_commands_are_counted(tmp_path: Path):
    script = tmp_path / "pd.sh"
    script.write_text("python3 -m sglang.launch_server --model-path m --disaggregation-mode prefill &\npython3 -m sglang.launch_server --model-path m --disaggregation-mode decode &\n")
    launch = cli_config(None, str(script), None)
    assert launch.values["disaggregation_mode"] == "prefill" and launch.more_commands == 1
    from inkling_compat.api import check

    assert f"1 more sglang command(s) in {script} (line 2) not checked: this report is the command at line 1" in check(launch).coverage.notes


def test_a_script_without_a_command_says_what_was_looked_for(tmp_path: Path):
    script = tmp_path / "start.sh"
    script.write_text("echo hello\n# python3 -m sglang.launch_server\n")
    with pytest.raises(InputError, match="no sglang launch command"):
        cli_config(None, str(script), None)


def test_fix_on_a_script_keeps_values_it_does_not_define_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    script = tmp_path / "start.sh"
    script.write_text("python3 -m sglang.launch_server --model-path m --port $PORT --enable-lora --lora-backend triton_v2 --enable-pdmux\n")
    monkeypatch.chdir(ROOT)
    proc = run_main(capsys, "check", "--launch", str(script), "--fix", "--unsafe-fixes")
    assert proc.returncode in (0, 1) and "invalid int value" not in proc.stderr, proc.stderr
    corrected = proc.stdout.split("corrected command: ")[1].splitlines()[0]
    assert "$PORT" in corrected and "--enable-pdmux" not in corrected
    assert "not checked: --port comes from $PORT" in proc.stdout


def test_the_grammar_is_imported_only_when_a_script_is_read():
    code = (
        "import sys\nfrom inkling_compat.api import check\n"
        "check(argv=['python3', '-m', 'sglang.launch_server', '--model-path', 'm', '--tp', '2'])\n"
        "check(argv=['nohup', 'python3', '-m', 'sglang.launch_server', '--model-path', 'm'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_sglang_serve_with_a_model_path_not_known():
    found = one('sglang serve "$MODEL" --tp 2\n')
    launch = parse_launch(list(found.words), "start.sh", unknown=dict(found.unknown))
    assert launch.values == {"tp_size": 2} and launch.unknown_values == (("model_path", "--model-path comes from $MODEL, not set in start.sh"),)


def test_a_sourced_file_is_named_where_a_value_is_not_known():
    found = one("source ./env.sh\nexport A=1\npython3 -m sglang.launch_server --model-path $MODEL --x $A\n")
    assert found.unknown == {4: "$MODEL, not set in start.sh (it sources ./env.sh, not read)"} and found.words[6] == "1"


def test_the_grammar_is_tree_sitter_bash_s_own_read_without_its_package_init():
    """The parser's grammar is the one `tree_sitter_bash.language()` gives, loaded from the same
    binding without running the package's `__init__` (it imports `importlib.resources`)."""
    code = (
        "import sys\n"
        "from inkling_compat.inputs import shell\n"
        "language = shell._parser().language\n"
        "assert 'tree_sitter_bash' not in sys.modules, 'the package __init__ ran'\n"
        "import tree_sitter, tree_sitter_bash\n"
        "assert language == tree_sitter.Language(tree_sitter_bash.language()), language\n"
        "assert [c.words for c in shell.find_commands('python -m sglang.launch_server --model-path m', origin='x')] == [('python', '-m', 'sglang.launch_server', '--model-path', 'm')]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# An array built for `exec "${cmd[@]}"` (from MindLab-Research/Mixture-of-LoRA-Harness,
# mol_harness/scripts/start_glm52_sglang_tp8_4lora.sh, reduced): an element the file does not
# define leaves the other elements known, and elements appended under a condition are one word
# not known; the command is found either way (it was "no sglang launch command", exit 2).
ARRAY_SCRIPT = """PYTHON_BIN="${PYTHON_BIN:-python3}"
LORA_ROOT="${LORA_ROOT:-/root/loras}"
cmd=(
  "${PYTHON_BIN}" -m sglang.launch_server
  --model-path /root/base
  --enable-lora
  --lora-paths
    "L0=${LORA_ROOT}/L0"
  --max-lora-rank 16
  --lora-use-virtual-experts
)
if [[ "${DISABLE_OVERLAP:-1}" == "1" ]]; then
  cmd+=(--disable-overlap-schedule)
fi
cmd+=("$@")
exec "${cmd[@]}"
"""


def test_an_array_with_elements_not_known_is_still_the_command() -> None:
    found = one(ARRAY_SCRIPT)
    assert list(found.words) == ["python3", "-m", "sglang.launch_server", "--model-path", "/root/base", "--enable-lora", "--lora-paths",
                                 "L0=${LORA_ROOT}/L0", "--max-lora-rank", "16", "--lora-use-virtual-experts", "--disable-overlap-schedule", "$@"]
    assert found.unknown == {
        7: "$LORA_ROOT, not set in start.sh (default /root/loras)",
        11: "${cmd[@]}: elements appended in a branch or loop at line 12 of start.sh",
        12: "$@, the arguments of start.sh",
    }


def test_check_on_an_array_script_names_what_it_could_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "start.sh"
    script.write_text(ARRAY_SCRIPT)
    ran = run_main(capsys, "check", "--launch", str(script))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "no sglang launch command" not in ran.stdout + ran.stderr
    assert f"--lora-paths comes from $LORA_ROOT, not set in {script} (default /root/loras)" in ran.stdout + ran.stderr


# The word tests made with string methods read a word as the patterns they stand for read it.
_WORDS = st.text(alphabet="aZ_9=.\n *?[\u0663py\u00e9thon3", max_size=12) | st.sampled_from(["python", "python3", "python3.11", "python\n", "python3.", "python.1", "python\u0663", "x=1", "=1", "_=\n", "a b=c", "A1=", "1A=x"])


@given(_WORDS)
@settings(max_examples=500, deadline=None)
def test_word_tests_read_words_as_their_patterns(word: str) -> None:
    import re

    from inkling_compat.inputs import launch, shell

    assert shell.is_name(word) == (re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", word) is not None)
    assert shell._is_python(word) == (re.match(r"^python(\d+(\.\d+)?)?$", word) is not None)
    assert shell._has_glob(word) == (re.search(r"[*?\[]", word) is not None)
    m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", word, re.S)
    assert shell._assignment(word) == (None if m is None else (m.group(1), m.group(2)))
    assert launch._assigns(word) == (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word) is not None)


# The string readings of inputs/shell.py against the patterns they stand for.
@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=30), st.integers(0, 30))
def test_the_tail_after_a_command_is_the_patterns(source: bytes, start: int) -> None:
    start = min(start, len(source))
    found = re.compile(rb"(?:[ \t]|\\[^\n]|\\\n)*").match(source, start)
    assert shell._tail_end(source, start) == found.end()


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="\\\r\n a\t$", max_size=30))
def test_continuations_are_joined_as_the_pattern_joins_them(text: str) -> None:
    assert shell._joined(text) == re.sub(r"\\\r?\n", "", text)
