"""Deployment files (inputs/deployment.py): what each format holds, where each sglang command is,
what is unknown, every command checked under its place (cli, api), and a deployment file given
as a server config named, never dumped (its environment holds secrets)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from inkling_compat.api import check_deployment
from inkling_compat.cli import main
from inkling_compat.errors import InputError
from inkling_compat.inputs.deployment import read_deployment
from inkling_compat.inputs.deployment_kind import COMPOSE, DOCKERFILE, KUBERNETES, SKYPILOT
from inkling_compat.report.formats import NAMES, get

SECRET = "hf_s3cr3tT0kenValue"
PD = """apiVersion: apps/v1
kind: Deployment
metadata: {name: prefill}
spec:
  template:
    spec:
      containers:
      - name: sglang
        image: lmsysorg/sglang
        command: [python3, -m, sglang.launch_server]
        args: [--model-path, /models/m, --disaggregation-mode, prefill, --port, "$(PORT)", --node-rank, "$(RANK)"]
        env:
        - {name: PORT, value: "30000"}
        - name: RANK
          valueFrom: {fieldRef: {fieldPath: "metadata.labels['index']"}}
        - {name: HF_TOKEN, value: %s}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec: {ports: [{port: 80}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: decode}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: sglang
            image: lmsysorg/sglang
            command: [bash, -c, "exec python3 -m sglang.launch_server --model-path /models/m --max-lora-rnk 8"]
""" % SECRET


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_manifest_stream_gives_every_command_with_its_place_env_and_unknowns(tmp_path: Path) -> None:
    found = read_deployment(_write(tmp_path, "pd.yaml", PD))
    assert found.kind == KUBERNETES and found.structured
    first, second = found.commands
    assert first.place.endswith("pd.yaml:10 (Deployment prefill, container sglang)")
    assert first.words[:3] == ("python3", "-m", "sglang.launch_server")
    assert first.words[8] == "30000"  # $(PORT) from the container's literal env
    assert dict(first.unknown) == {10: "$(RANK), from fieldRef in Deployment prefill, container sglang"}
    assert first.env["HF_TOKEN"] == SECRET and "RANK" not in first.env
    assert "CronJob decode, container sglang" in second.place
    assert second.words[-2:] == ("--max-lora-rnk", "8")


def test_leader_and_worker_templates_are_both_read(tmp_path: Path) -> None:
    lws = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws}
spec:
  leaderWorkerTemplate:
    leaderTemplate:
      spec: {containers: [{name: l, command: [python3, -m, sglang.launch_server, --model-path, /m]}]}
    workerTemplate:
      spec: {containers: [{name: w, command: [python3, -m, sglang.launch_server, --model-path, /m, --node-rank, "$(LWS_WORKER_INDEX)"]}]}
"""
    leader, worker = read_deployment(_write(tmp_path, "lws.yaml", lws)).commands
    assert "(leader)" in leader.where and "(workers)" in worker.where
    assert list(worker.unknown) == [6]  # set by the LWS controller, not in the manifest


def test_compose_strings_lists_and_environment_forms(tmp_path: Path) -> None:
    text = """services:
  a:
    image: x
    entrypoint: python3 -m sglang.launch_server
    command: --model-path /m --port 1
    environment: ["SGLANG_X=1", "HF_TOKEN=%s"]
  b:
    image: x
    entrypoint: [python3, -m, sglang.launch_server]
    command: [--model-path, /m]
    environment: {PORT: 2}
  c:
    image: redis
""" % SECRET
    found = read_deployment(_write(tmp_path, "compose.yaml", text))
    assert found.kind == COMPOSE
    a, b = found.commands
    assert a.where == "service a" and a.words[3:] == ("--model-path", "/m", "--port", "1")
    assert a.env["SGLANG_X"] == "1"
    assert b.words == ("python3", "-m", "sglang.launch_server", "--model-path", "/m") and b.env["PORT"] == "2"


def test_a_dockerfile_exec_entrypoint_takes_the_cmd_as_arguments(tmp_path: Path) -> None:
    text = 'FROM base AS build\nCMD ["ignored"]\nFROM lmsysorg/sglang\nENV SGLANG_X="a b"\nENTRYPOINT ["python3", "-m", "sglang.launch_server"]\nCMD ["--model-path", "/m"]\n'
    (command,) = read_deployment(_write(tmp_path, "Dockerfile", text)).commands
    assert command.words == ("python3", "-m", "sglang.launch_server", "--model-path", "/m")
    assert command.line == 5 and command.where == "ENTRYPOINT + CMD"
    assert command.env["SGLANG_X"] == "a b"


def test_a_skypilot_task_runs_its_script_with_its_envs(tmp_path: Path) -> None:
    text = "envs:\n  MODEL: /m\n  HF_TOKEN:\nresources: {accelerators: H100:1}\nrun: |\n  echo hi\n  python -m sglang.launch_server --model-path $MODEL --port 8000\n"
    found = read_deployment(_write(tmp_path, "task.yaml", text))
    (command,) = found.commands
    assert found.kind == SKYPILOT and command.line == 7
    assert command.words[3:5] == ("--model-path", "/m")


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("values.yaml", "image: {repository: lmsysorg/sglang, tag: latest}\nreplicaCount: 1\n", "a Helm values file: render the chart with `helm template`"),
        ("deploy.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: {{ .Values.name }}}\n", "a Helm chart template: render it with `helm template`"),
        ("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "no sglang launch command in this Kubernetes manifest (looked in the command + args of 0 containers in 1 object"),
        ("c.yaml", "services:\n  r: {image: redis, command: redis-server}\n", "no sglang launch command in this docker-compose file (looked in the entrypoint + command of 1 service"),
        ("Dockerfile", "FROM python\nCMD [\"python\", \"app.py\"]\n", "no sglang launch command in this Dockerfile"),
        ("run.sh", "echo hello\n", "no sglang launch command in this shell script"),
    ],
)
def test_what_holds_no_command_says_so_in_one_line(tmp_path: Path, name: str, text: str, said: str) -> None:
    with pytest.raises(InputError) as refused:
        read_deployment(_write(tmp_path, name, text))
    assert said in refused.value.reason and "\n" not in str(refused.value)


def test_check_launch_of_a_stream_reports_each_command_under_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "pd.yaml", PD)
    assert main(["check", "--launch", path, "--format", "json"]) == 1  # the worst of the reports
    data = json.loads(capsys.readouterr().out)
    assert data["deployment"] == {"file": path, "kind": KUBERNETES} and data["exit_code"] == 1
    assert [r["ok"] for r in data["reports"]] == [True, False]
    assert data["reports"][1]["place"] == f"{path}:34 (CronJob decode, container sglang)"
    assert main(["check", "--launch", path]) == 1
    text = capsys.readouterr().out
    assert f"== {path}:10 (Deployment prefill, container sglang)" in text and "--max-lora-rank" in text
    for fmt in NAMES:
        main(["check", "--launch", path, "--format", fmt])
        out, err = capsys.readouterr()
        assert SECRET not in out + err, fmt
        if get(fmt).syntax == "json":
            json.loads(out)  # (one document for every command)


def test_gitlab_report_of_a_deployment_is_one_array_with_each_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "pd.yaml", PD)
    assert main(["check", "--launch", path, "--format", "gitlab"]) == 1
    issues = json.loads(capsys.readouterr().out)
    assert issues and all(i["description"].startswith(f"{path}:34 (CronJob decode, container sglang): ") for i in issues)
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_api_check_deployment(tmp_path: Path) -> None:
    checked = check_deployment(_write(tmp_path, "pd.yaml", PD))
    assert [(c.where, r.ok) for c, r in checked] == [("Deployment prefill, container sglang", True), ("CronJob decode, container sglang", False)]


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("compose.yaml", f"services:\n  s:\n    image: x\n    environment: {{HF_TOKEN: {SECRET}}}\n    command: --model-path /m\n", "a docker-compose file, not a server config: give it with --launch"),
        ("k8s.yaml", PD, "a Kubernetes manifest (a stream of 3 documents), not a server config: give it with --launch"),
        ("pod.yaml", f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, env: [{{name: TOKEN, value: {SECRET}}}]}}]}}\n", "a Kubernetes manifest, not a server config"),
        ("task.yaml", f"envs: {{HF_TOKEN: {SECRET}}}\nrun: python -m sglang.launch_server\n", "a SkyPilot task, not a server config"),
    ],
)
def test_a_deployment_file_given_as_config_is_named_never_dumped(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, named: str) -> None:
    path = _write(tmp_path, name, text)
    for fmt in NAMES:
        assert main(["check", "--config", path, "--format", fmt]) == 2
        out, err = capsys.readouterr()
        assert named in out + err and SECRET not in out + err, fmt


@pytest.mark.parametrize(
    "text",
    [
        "a: &a [" + ",".join(["x"] * 50) + "]\n" + "".join(f"b{i}: &b{i} [" + ",".join([f"*{'a' if i == 0 else f'b{i - 1}'}"] * 50) + "]\n" for i in range(6)) + "apiVersion: v1\nkind: Pod\n",
        "apiVersion: v1\nkind: Pod\nspec: " + "[" * 200 + "]" * 200 + "\n",
        "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, command: 5, args: {a: 1}}, 7, null]}\n",
        "---\n" * 5000,
        "\x00\x01 not text",
    ],
)
def test_hostile_manifests_are_unusable_input_or_nothing_found(tmp_path: Path, text: str) -> None:
    start = time.monotonic()
    with pytest.raises(InputError) as refused:
        read_deployment(_write(tmp_path, "m.yaml", text))
    assert "\n" not in str(refused.value)
    assert time.monotonic() - start < 5


def test_a_stream_of_fifty_documents_is_read_in_order(tmp_path: Path) -> None:
    docs = [f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        command: [python3, -m, sglang.launch_server, --model-path, /m{i}]\n" for i in range(50)]
    found = read_deployment(_write(tmp_path, "many.yaml", "---\n".join(docs))).commands
    assert [c.words[-1] for c in found] == [f"/m{i}" for i in range(50)]
    assert [c.line for c in found] == [9 + 10 * i for i in range(50)]


def test_the_readme_deployment_output_is_what_check_prints(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import shlex

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```console\n(.*?)```", readme, re.S) if b.startswith("$ HF_HUB_CACHE=")]
    first, *shown = block.rstrip("\n").split("\n")
    words = shlex.split(first[2:])
    monkeypatch.chdir(root)
    monkeypatch.setenv("HF_HUB_CACHE", words[0].split("=", 1)[1])
    assert main([*words[2:], "--color", "never"]) == 0
    assert capsys.readouterr().out.rstrip("\n").split("\n") == shown


@pytest.mark.parametrize("name", ["kubernetes.yaml", "compose.yaml", "docker-run.sh", "skypilot.yaml"])
def test_every_example_deployment_checks_ok_with_the_model_from_the_cache(name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    monkeypatch.setenv("HF_HUB_CACHE", "examples/hf-cache/hub")
    assert main(["check", "--launch", f"examples/deployments/{name}", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    reports = data.get("reports", [data])
    assert len(reports) == 1 and reports[0]["ok"]
    assert reports[0]["coverage"]["not_checked"] == 0  # model and adapter read from the cache


def test_compose_interpolation_is_unknown_unless_given(tmp_path: Path) -> None:
    text = "services:\n  s:\n    image: x\n    entrypoint: python3 -m sglang.launch_server\n    command: --model-path ${MODEL} --port $$PORT --host ${HOST:-0.0.0.0}\n"
    path = _write(tmp_path, "compose.yaml", text)
    (command,) = read_deployment(path).commands
    assert command.words[3:] == ("--model-path", "${MODEL}", "--port", "$PORT", "--host", "${HOST:-0.0.0.0}")
    assert sorted(command.unknown) == [4, 8] and "interpolated by compose" in command.unknown[4]
    (given,) = read_deployment(path, env={"MODEL": "/m"}).commands
    assert given.words[4] == "/m" and sorted(given.unknown) == [8]


def test_fix_and_diff_take_one_command_of_a_deployment_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    several = _write(tmp_path, "pd.yaml", PD)
    assert main(["check", "--launch", several, "--diff"]) == 2
    assert "a Kubernetes manifest with 2 sglang commands: --fix/--diff print one command corrected" in capsys.readouterr().err
    one = _write(tmp_path, "c.yaml", "services:\n  s:\n    image: x\n    entrypoint: python3 -m sglang.launch_server\n    command: --model-path /m --max-lora-rnk 8\n")
    assert main(["check", "--launch", one, "--diff"]) == 1
    out = capsys.readouterr().out
    assert "argparse-unrecognized-arguments" in out and "no sglang launch command" not in out


def test_a_dockerfile_past_the_line_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    from inkling_compat.inputs.deployment_formats import MAX_DOCKERFILE_LINES

    text = "FROM x\n" + "ENV A=b\n" * MAX_DOCKERFILE_LINES + 'CMD ["python3", "-m", "sglang.launch_server"]\n'
    start = time.monotonic()
    with pytest.raises(InputError, match="more than the 20000-line limit: not read"):
        read_deployment(_write(tmp_path, "Dockerfile", text))
    assert time.monotonic() - start < 1
    ok = "FROM x\n" + "".join(f"ENV A{i}=b\n" for i in range(5000)) + "ENV SGLANG_X=1\n" + 'CMD ["python3", "-m", "sglang.launch_server", "--model-path", "/m"]\n'
    (command,) = read_deployment(_write(tmp_path, "Dockerfile", ok)).commands
    assert command.env["SGLANG_X"] == "1" and "A7" not in command.env  # only what the command can see a difference from


def test_a_stream_of_more_containers_than_the_limit_is_refused_before_its_scripts_are_read(tmp_path: Path) -> None:
    from inkling_compat.inputs.deployment_formats import MAX_CONTAINERS

    doc = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, command: [bash, -c, 'python3 -m sglang.launch_server']}]}\n"
    start = time.monotonic()
    with pytest.raises(InputError, match=f"more than {MAX_CONTAINERS} containers: not read"):
        read_deployment(_write(tmp_path, "many.yaml", "---\n".join([doc] * (MAX_CONTAINERS + 1))))
    assert time.monotonic() - start < 5


def test_a_manifest_stream_on_standard_input_as_config_is_named(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from inkling_compat.inputs import stdin

    stdin.reset()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(PD.encode())))
    try:
        assert main(["check", "--config", "-"]) == 2
    finally:
        stdin.reset()
    out, err = capsys.readouterr()
    assert "a Kubernetes manifest (a stream of 3 documents), not a server config: give it with --launch" in err
    assert SECRET not in out + err


def test_the_github_action_step_checks_a_deployment_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inkling_compat.ci.action import _check_once

    sarif = tmp_path / "out.sarif"
    code, report, line = _check_once(["--launch", _write(tmp_path, "pd.yaml", PD)], sarif)
    assert (code, report.ok, line) == (1, False, "")
    assert len(json.loads(sarif.read_text())["runs"]) == 2
    assert "::group::" in capsys.readouterr().out
