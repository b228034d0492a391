"""The expected verdict of each public deployment file in tests/data/deployments/, computed
without inkling-compat: the words each sglang process would get, and sglang 0.5.23's own
argument parser (the wheel's, tests/oracle/sglang_argparse.py) on them.

How each file runs, as its runtime runs it:

* a shell script, SkyPilot's `run:` (its `envs:` exported), a container's `bash -c`/`sh -c`
  string and a Dockerfile's shell form: real `bash`, with recording stand-ins for `python`,
  `python3`, `sglang`, `docker`, `nohup`, `env` on a PATH of their own (every other command is
  answered by a `command_not_found_handle` that does nothing), in a temporary folder and an empty
  environment: nothing of the script runs but its words;
* a Kubernetes container: `command` + `args` as written, `$(VAR)` replaced from the container's
  literal `env` as the kubelet does; a compose service: its strings split by `shlex.split`, as
  compose splits them; a Dockerfile's exec form: its JSON words (Docker's own parser, the
  `dockerfile` package);
* a value the file does not define (a `valueFrom` variable, one the cluster sets such as
  `LWS_LEADER_ADDRESS`) is a sentinel word `@unknown:NAME@`: the words holding one are the
  unknown ones, and the verdict is sglang's on the other words (each unknown option and its
  value left out).

`python -m oracle.deployment_corpus` (from tests/) writes each case's `expected.json`:
{"kind": ..., "commands": [{"argv": [...], "unknown": [indices], "verdict": "ok" | "refused: ..."}]}
or {"kind": ..., "none": true} for a file without an sglang command (or one that must be
rendered first: a Helm values file or template).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "data" / "deployments"
SENTINEL = re.compile(r"@unknown:([A-Za-z_][A-Za-z0-9_]*)@")

# How each case's file runs (the corpus is small and reviewed: named, not guessed).
KINDS = {
    "atom-validation-pipe": "bash",
    "coco-pd-prefill": "bash",
    "dynamo-agg-crd": "kubernetes",
    "genaicomps-compose-no-command": "compose",
    "hidden-capacity-docker-run": "bash",
    "lsmcache-server": "bash",
    "marie-docker-run-qwenvl": "bash",
    "marie-docker-run-qwq": "bash",
    "rlinf-qwen3-30b": "bash",
    "rlinf-wideseek": "bash",
    "rubric-dockerfile-shell-cmd": "dockerfile",
    "rubric-dockerfile-uv-run": "dockerfile",
    "sglang-405b-bench-comment-only": "bash",
    "sglang-attention-explorer": "bash",
    "sglang-compose": "compose",
    "sglang-hicache-nohup-chain": "bash",
    "sglang-k8s-distributed-sts": "kubernetes",
    "sglang-k8s-service": "kubernetes",
    "sglang-lws-helm-template": "helm",
    "sglang-lws-helm-values": "helm",
    "sglang-lws-lb-router": "kubernetes",
    "sglang-lws-pd-decode": "kubernetes",
    "sglang-lws-pd-prefill": "kubernetes",
    "sglang-minimax-exec-other-script": "bash",
    "sglang-minimax-exports-only": "bash",
    "sglang-ms-example-npu": "bash",
    "sglang-runtime-run-not-sglang": "bash",
    "skypilot-llama2": "skypilot",
    "skypilot-llava": "skypilot",
    "skypilot-sglang": "skypilot",
}

# Each stand-in appends its whole record with one printf (one write to the O_APPEND file): two
# commands a script starts in the background record at the same time, and records written
# word by word interleave.
_STANDIN = """#!/bin/sh
printf '%s\\0' "${0##*/}" "$@" "$(printf '\\001')" >> "$RECORD"
"""
_PASS_ON = """#!/bin/sh
printf '%s\\0' "${0##*/}" "$@" "$(printf '\\001')" >> "$RECORD"
while [ $# -gt 0 ]; do case "$1" in *=*|-*) shift;; *) exec "$@";; esac; done
"""


def case_file(case: Path) -> Path:
    return next(p for p in sorted(case.iterdir()) if p.name not in ("SOURCE", "expected.json"))


def bash_runs(script: str, env: dict[str, str] | None = None) -> list[list[str]]:
    """The argv of every recorded process the script starts, as real bash passes them."""
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = Path(tmp, "bin")
        bin_dir.mkdir()
        for name in ("python", "python3", "sglang", "docker"):
            (bin_dir / name).write_text(_STANDIN)
            (bin_dir / name).chmod(0o755)
        for name in ("nohup", "env"):
            (bin_dir / name).write_text(_PASS_ON)
            (bin_dir / name).chmod(0o755)
        Path(tmp, "script.sh").write_text(script)
        record = Path(tmp, "record")
        record.write_bytes(b"")
        environment = {"PATH": str(bin_dir), "HOME": tmp, "RECORD": str(record), **(env or {})}
        # The script run as a file (`bash script.sh`), not sourced: bash reads the two
        # differently (a backslash ending the file is dropped from a script, a word when sourced).
        # BASH_ENV runs first: unknown commands do nothing, and the script waits for its jobs.
        Path(tmp, "prelude.sh").write_text("command_not_found_handle() { return 0; }\ntrap wait EXIT\n")
        environment["BASH_ENV"] = str(Path(tmp, "prelude.sh"))
        subprocess.run(["/bin/bash", "--norc", "--noprofile", "script.sh"], cwd=tmp, env=environment, timeout=20, check=False, capture_output=True)
        raw = record.read_bytes().split(b"\0")
    runs, current = [], []
    for word in raw[:-1]:
        if word == b"\x01":
            runs.append(current)
            current = []
        else:
            current.append(word.decode())
    return runs


def sglang_argv(run: list[str]) -> list[str] | None:
    """The words from the sglang entry on (a `docker run` line: the command after the image)."""
    for i, word in enumerate(run):
        if re.fullmatch(r"python(\d+(\.\d+)?)?", word.rsplit("/", 1)[-1]) and run[i + 1 : i + 3] == ["-m", "sglang.launch_server"]:
            return run[i:]
        if word == "sglang" and run[i + 1 : i + 2] == ["serve"]:
            return run[i:]
        if run[0] != "docker":
            return None
    return None


def kubernetes_runs(text: str) -> list[list[str]]:
    import yaml

    runs = []
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict):
            continue
        for container in _containers(doc):
            env, unknown = {}, set()
            for item in container.get("env") or []:
                if "value" in item:
                    env[item["name"]] = str(item["value"])
                else:
                    unknown.add(item["name"])

            def expand(word: str) -> str:
                def one(m: re.Match[str]) -> str:
                    name = m.group(1)
                    return env[name] if name in env else f"@unknown:{name}@"

                return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, word)

            words = [expand(str(w)) for w in (container.get("command") or []) + (container.get("args") or [])]
            if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh") and words[1] == "-c":
                runs += bash_runs(words[2], {**env, **{n: f"@unknown:{n}@" for n in unknown}})
            else:
                runs.append(words)
    return runs


def _containers(value: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("containers", "initContainers") and isinstance(item, list):
                found += [c for c in item if isinstance(c, dict)]
            elif key == "mainContainer" and isinstance(item, dict):
                found.append(item)
            else:
                found += _containers(item)
    elif isinstance(value, list):
        for item in value:
            found += _containers(item)
    return found


def compose_runs(text: str) -> list[list[str]]:
    import yaml

    runs = []
    for service in (yaml.safe_load(text).get("services") or {}).values():
        parts = [service.get("entrypoint"), service.get("command")]
        words = [w for p in parts if p for w in (shlex.split(p) if isinstance(p, str) else [str(x) for x in p])]
        if words:
            runs.append(words)
    return runs


def skypilot_runs(text: str) -> list[list[str]]:
    import yaml

    task = yaml.safe_load(text)
    env = {k: str(v) for k, v in (task.get("envs") or {}).items() if v is not None}
    return bash_runs(task["run"], env)


def dockerfile_runs(path: Path) -> list[list[str]]:
    import dockerfile

    entrypoint = cmd = None
    for ins in dockerfile.parse_file(str(path)):
        if ins.cmd == "FROM":
            entrypoint = cmd = None
        elif ins.cmd == "ENTRYPOINT":
            entrypoint, cmd = ins, None
        elif ins.cmd == "CMD":
            cmd = ins
    runs = entrypoint or cmd
    if runs is None:
        return []
    if not runs.json:
        return bash_runs(runs.value[0])
    return [list(runs.value) + (list(cmd.value) if entrypoint is not None and cmd is not None else [])]


def verdict(argv: list[str]) -> str:
    """sglang 0.5.23's parser on the server arguments (unknown options left out)."""
    from oracle import sglang_argparse

    oracle = sglang_argparse.load()
    args = argv[3:] if argv[0] != "sglang" else argv[2:]
    known: list[str] = []
    skip = False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        if SENTINEL.search(word):
            if known and known[-1].startswith("--") and i > 0 and args[i - 1] == known[-1]:
                known.pop()
            continue
        if i + 1 < len(args) and SENTINEL.search(args[i + 1]) and word.startswith("--"):
            skip = True
            continue
        known.append(word)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            oracle.parser.parse_args(known)
    except SystemExit:
        return "refused: " + err.getvalue().strip().splitlines()[-1].split("sglang serve: error: ", 1)[1]
    return "ok"


def expected(case: Path) -> dict[str, Any]:
    kind = KINDS[case.name]
    path = case_file(case)
    text = path.read_text()
    if kind == "helm":
        return {"kind": kind, "none": True}
    runs = {
        "bash": lambda: bash_runs(text),
        "kubernetes": lambda: kubernetes_runs(text),
        "compose": lambda: compose_runs(text),
        "skypilot": lambda: skypilot_runs(text),
        "dockerfile": lambda: dockerfile_runs(path),
    }[kind]()
    commands = []
    for run in runs:
        argv = sglang_argv(run)
        if argv is None:
            continue
        unknown = [i for i, w in enumerate(argv) if SENTINEL.search(w)]
        commands.append({"argv": argv, "unknown": unknown, "verdict": verdict(argv)})
    return {"kind": kind, "commands": commands} if commands else {"kind": kind, "none": True}


def main() -> int:
    for case in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        data = expected(case)
        (case / "expected.json").write_text(json.dumps(data, indent=1) + "\n")
        print(case.name, "none" if data.get("none") else [c["verdict"][:70] for c in data["commands"]])
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    os.environ.pop("SGLANG_ARGS", None)
    sys.exit(main())
