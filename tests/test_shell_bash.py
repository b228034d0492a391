"""Differential: the words inputs/shell.py finds in a generated script are the words real bash
passes to `python3` (a recording stand-in first on PATH that writes its argv and environment as
JSON), command by command, in the order bash runs them."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling_compat.inputs.shell import find_commands

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="no bash on this machine")

_RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD_TO"], "a", encoding="utf-8") as out:
    out.write(json.dumps({{"argv": sys.argv[1:], "env": {{k: v for k, v in os.environ.items() if k.startswith("V_")}}}}) + "\\n")
"""


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bin")
    stand_in = folder / "python3"
    stand_in.write_text(_RECORDER.format(python=sys.executable))
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    return folder


def bash_runs(script: str, folder: Path, tmp: Path) -> list[dict]:
    """What bash passes to python3 for each sglang command the script runs."""
    path, record = tmp / "start.sh", tmp / "record.jsonl"
    path.write_text(script)
    record.unlink(missing_ok=True)
    env = {"PATH": f"{folder}:/usr/bin:/bin", "RECORD_TO": str(record), "HOME": str(tmp), "LC_ALL": "C"}
    empty = tmp / "empty"  # the working folder: a file-name pattern matches nothing, so bash keeps it
    empty.mkdir(exist_ok=True)
    subprocess.run([BASH, str(path)], env=env, cwd=empty, check=False, timeout=20, capture_output=True)
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


# --- generated scripts --------------------------------------------------------------------

_SAFE = st.text(alphabet="abcXYZ019_./:=,-+@%", min_size=1, max_size=8).filter(lambda t: not t.startswith(("-", "=")) or len(t) > 1)
_ANY = st.text(alphabet="ab #$'\"\\\n\t*;&|()<>{}~=-", min_size=0, max_size=8)
_NAMES = ["V_A", "V_B", "V_C"]


def _single(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _double(text: str) -> str:
    return '"' + "".join("\\" + c if c in '$`"\\' else c for c in text) + '"'


@st.composite
def _value_source(draw: st.DrawFn) -> str:
    """A value's source text (an assignment's right side)."""
    kind = draw(st.sampled_from(["single", "double", "plain", "ansi"]))
    if kind == "single":
        return _single(draw(_ANY))
    if kind == "double":
        return _double(draw(_ANY))
    if kind == "ansi":
        return "$'" + draw(st.text(alphabet="abc ", max_size=5)) + "\\t" + draw(st.text(alphabet="xyz", max_size=3)) + "'"
    return draw(_SAFE)


@st.composite
def _word(draw: st.DrawFn, defined: list[str], arrays: list[str]) -> str:
    """One argument's source text, built from pieces bash joins into words."""
    pieces = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["safe", "single", "double", "hash", "escaped", "continued"]
        if defined:
            kinds += ["var", "var_quoted", "default", "default_unset", "alternative", "assign_default"]
        if arrays:
            kinds += ["array"]
        kind = draw(st.sampled_from(kinds))
        if kind == "safe":
            pieces.append(draw(_SAFE))
        elif kind == "single":
            pieces.append(_single(draw(_ANY)))
        elif kind == "double":
            text = draw(_ANY)
            if defined and draw(st.booleans()):
                pieces.append('"' + _double(text)[1:-1] + "${" + draw(st.sampled_from(defined)) + '}"')
            else:
                pieces.append(_double(text))
        elif kind == "hash":
            pieces.append("a#b")
        elif kind == "escaped":
            pieces.append("\\" + draw(st.sampled_from(list("# $'\";&|<>()"))))
        elif kind == "continued":
            pieces.append("x\\\ny")
        elif kind == "var":
            pieces.append("$" + draw(st.sampled_from(defined)) + " ")
        elif kind == "var_quoted":
            pieces.append('"$' + draw(st.sampled_from(defined)) + '"')
        elif kind == "default":
            pieces.append("${" + draw(st.sampled_from(defined)) + draw(st.sampled_from([":-", "-"])) + draw(_SAFE) + "}")
        elif kind == "default_unset":
            pieces.append('"${V_UNSET_HERE:-' + draw(_SAFE) + '}"')
        elif kind == "alternative":
            pieces.append("${" + draw(st.sampled_from(defined)) + ":+" + draw(_SAFE) + "}")
        elif kind == "assign_default":
            pieces.append('"${' + draw(st.sampled_from(defined)) + ":=" + draw(_SAFE) + '}"')
        else:
            name = draw(st.sampled_from(arrays))
            pieces.append(draw(st.sampled_from(['"${%s[@]}"', "${%s[@]}", '"${%s[*]}"', '"${%s[0]}"'])) % name)
    return "".join(pieces)


@st.composite
def scripts(draw: st.DrawFn) -> str:
    lines = ["#!/bin/bash", "# python3 -m sglang.launch_server --in-a-comment", "unset V_UNSET_HERE"]
    defined: list[str] = []
    arrays: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["assign", "export", "array", "heredoc", "function"]))
        if kind in ("assign", "export"):
            name = draw(st.sampled_from(_NAMES))
            lines.append(("export " if kind == "export" else "") + f"{name}={draw(_value_source())}")
            defined.append(name)
        elif kind == "array":
            name = "V_ARR"
            elements = " ".join(draw(st.lists(_value_source(), max_size=3)))
            lines.append(f"{name}=({elements})")
            arrays.append(name)
        elif kind == "heredoc":
            lines += ["cat > /dev/null <<EOF", "python3 -m sglang.launch_server --in-a-heredoc", "EOF"]
        else:
            lines.append("never_called() { python3 -m sglang.launch_server --never; }")
    for _ in range(draw(st.integers(1, 2))):
        wrapper = draw(st.sampled_from(["", "exec ", "nohup ", "env V_E=1 ", "timeout 30 ", "V_P=2 ", "cd / && ", "true; "]))
        module = draw(st.sampled_from(["-m sglang.launch_server", "-u -m sglang.launch_server", "-X utf8 -m sglang.launch_server"]))
        arguments = [draw(_word(defined, arrays)) for _ in range(draw(st.integers(0, 5)))]
        joiner = draw(st.sampled_from([" ", " \\\n  "]))
        command = f"python3 {module}" + "".join(joiner + a for a in arguments)
        if wrapper == "exec ":
            command = "exec " + command
        else:
            command = wrapper + command
        if draw(st.booleans()):
            command += "  # trailing comment"
        lines.append(command)
        if wrapper == "exec ":
            break
    return "\n".join(lines) + "\n"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(script=scripts())
def test_words_are_what_bash_passes(script: str, recorder: Path, tmp_path: Path) -> None:
    ran = bash_runs(script, recorder, tmp_path)
    found = find_commands(script, origin="start.sh")
    assert [list(f.words[1:]) for f in found] == [r["argv"] for r in ran], script
    # Every value is defined in these scripts; a file-name pattern is not known (it depends on
    # the files where the script runs), and in an empty folder bash passes it as written.
    assert all(why.endswith("a file-name pattern bash expands where the script runs") for f in found for why in f.unknown.values()), script
    for f, r in zip(found, ran):
        assert {k: v for k, v in f.env.items() if k.startswith("V_")} == r["env"], script


@pytest.mark.parametrize(
    "script",
    [
        'V_A="two words"\npython3 -m sglang.launch_server $V_A "$V_A" ${V_A}x\n',
        "V_ARR=(a 'b c' \"\")\npython3 -m sglang.launch_server \"${V_ARR[@]}\" ${V_ARR[@]} \"${V_ARR[*]}\"\n",
        "python3 -m sglang.launch_server --x \"multi\nline\" a#b 'q # not' \\#c # gone\n",
        "f() { python3 -m sglang.launch_server --in-f \"$1\" \"${2:-d}\"; }\nf 'one two'\n",
        "cd / && exec env V_E=1 python3 -X utf8 -m sglang.launch_server --after-cd\n",
        "bash -c 'python3 -m sglang.launch_server --in-c \"$1\"' name 'an arg'\n",
        "export V_A=1\nbash -c 'python3 -m sglang.launch_server \"$V_A\" 2'\n",
        "unset V_U V_Z\nV_A=x\nV_A+=y\npython3 -m sglang.launch_server --$V_A --a=${V_U-} ${V_Z:=z} $V_Z\n",
        "if true; then python3 -m sglang.launch_server --in-if; fi\nfor i in 1; do :; done\n",
        "python3 -m sglang.launch_server $'a\\tb' \"\" '' x\\\ny\n",
        'V_A=""\npython3 -m sglang.launch_server $V_A "$V_A" ${V_A:-e} ${V_A-f}\n',
        'V_ARR=()\nunset V_U\npython3 -m sglang.launch_server "${V_ARR[@]}" "x${V_ARR[@]}" "" "${V_U[@]}" "${V_ARR[*]}"\n',
        "export V_A=''\npython3 -m sglang.launch_server \"${V_A:=0}\" \\\n  \\ \n",
        # a backslash ending the file (no newline after it): bash passes it as a word
        "python3 -m sglang.launch_server \\\n    --dp 4 \\",
        "python3 -m sglang.launch_server --dp 4 \\\n",
        "python3 -m sglang.launch_server --dp 4 \\ \\",
    ],
)
def test_chosen_scripts_against_bash(script: str, recorder: Path, tmp_path: Path) -> None:
    ran = bash_runs(script, recorder, tmp_path)
    found = find_commands(script, origin="start.sh")
    assert ran, script
    assert [list(f.words[1:]) for f in found] == [r["argv"] for r in ran]


@pytest.mark.parametrize(
    "script",
    [
        "V_ARR=(python3 -m sglang.launch_server)\nV_ARR+=(--a 'b c')\nV_ARR+=(\"\")\n\"${V_ARR[@]}\"\n",
        "V_B=q\nV_ARR=(\n  python3 -m sglang.launch_server\n  --x \"${V_B:-d}\"\n)\nexec \"${V_ARR[@]}\" --y \"${V_ARR[1]}\"\n",
    ],
)
def test_arrays_built_in_steps_against_bash(script: str, recorder: Path, tmp_path: Path) -> None:
    ran = bash_runs(script, recorder, tmp_path)
    found = find_commands(script, origin="start.sh")
    assert ran, script
    assert [list(f.words[1:]) for f in found] == [r["argv"] for r in ran]
