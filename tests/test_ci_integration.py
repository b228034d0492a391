"""Drop-in CI: the pre-commit hook run through `pre-commit try-repo`, the hook's choice of checks,
and the GitHub Action's check step run as GitHub runs it (action.yml's `run:` and `env:` with
the inputs substituted, GITHUB_OUTPUT and RUNNER_TEMP set)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inkling_compat.ci import hook, targets
from inkling_compat.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GOOD = ["--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter"]
PROJECT = """\
checks:
  - config: examples/serve.yaml
    model: examples/config.json
    adapter: examples/adapter
  - config: examples/broken/serve.yaml
    model: examples/config.json
    adapter: [examples/broken/adapter_pool.yaml]
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's repository: the bundled examples and a .inkling-compat.yaml naming two checks."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / ".inkling-compat.yaml").write_text(PROJECT, encoding="utf-8")
    (tmp_path / "README.md").write_text("# deploy\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- the hook through pre-commit ----------------------------------------------------------------


def _pre_commit() -> str:
    found = shutil.which("pre-commit", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        pytest.skip("pre-commit is not installed (it is in the `test` extra)")
    return found


@pytest.mark.long
def test_the_hook_runs_through_pre_commit_try_repo(project, tmp_path_factory):
    pre_commit = _pre_commit()
    git = ["git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "."], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "deploy"], cwd=project, check=True)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")), PRE_COMMIT_COLOR="never")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # The broken server config changed (and a file the hook's pattern leaves out): only the
    # check that reads it runs, and it fails with the rules' ids and their places.
    done = subprocess.run(
        [pre_commit, "try-repo", str(ROOT), "inkling-compat", "--files", "examples/broken/serve.yaml", "README.md"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "- exit code: 1" in out and "Failed" in out
    assert "== .inkling-compat.yaml: checks[1]: inkling-compat check --config examples/broken/serve.yaml" in out
    assert "checks[0]" not in out  # the good check's files did not change
    assert "sink-lora-multislot-needs-triton" in out and "examples/broken/serve.yaml:" in out


def test_the_hook_manifest_is_valid_and_matches_the_inputs():
    manifest = ROOT / ".pre-commit-hooks.yaml"
    try:
        from pre_commit.clientlib import load_manifest
    except ImportError:
        pytest.skip("pre-commit is not installed (it is in the `test` extra)")
    (entry,) = load_manifest(str(manifest))
    assert entry["id"] == "inkling-compat" and entry["language"] == "python" and entry["require_serial"]
    assert entry["entry"] == "python -m inkling_compat.ci.hook"
    files = re.compile(entry["files"])
    for path in ["deploy/serve.yaml", "serve.yml", "models/config.json", "a/adapter_model.safetensors", "a/adapter_model.bin", "pyproject.toml"]:
        assert files.search(path), path
    for path in ["README.md", "src/app.py", "notpyproject.toml"]:
        assert not files.search(path), path


# -- which checks the hook runs ------------------------------------------------------------------


def test_only_the_checks_whose_inputs_changed_run(project, capsys):
    assert hook.run(["examples/serve.yaml"]) == 0
    out = capsys.readouterr().out
    assert "checks[0]" in out and "checks[1]" not in out and "ok" in out
    assert hook.run(["examples/broken/adapter_pool.yaml"]) == 1
    out = capsys.readouterr().out
    assert "checks[1]" in out and "checks[0]" not in out
    assert hook.run(["examples/adapter/adapter_config.json"]) == 0  # a file inside an adapter directory
    assert "checks[0]" in capsys.readouterr().out
    assert hook.run(["README.md", "other/serve.yaml"]) == 0
    assert capsys.readouterr().out == ""


def test_a_shared_input_or_the_project_file_runs_every_check(project, capsys):
    assert hook.run(["examples/config.json"]) == 1  # both checks read the model config
    out = capsys.readouterr().out
    assert "checks[0]" in out and "checks[1]" in out
    assert hook.run([".inkling-compat.yaml"]) == 1
    out = capsys.readouterr().out
    assert "checks[0]" in out and "checks[1]" in out
    assert hook.run(["--all"]) == 1


def test_the_hooks_own_arguments_name_one_check(project, capsys):
    assert hook.run([*GOOD, "examples/adapter/adapter_model.safetensors"]) == 0
    assert capsys.readouterr().out.startswith("ok")  # (no header for the one check of the arguments)
    assert hook.run([*GOOD, "examples/broken/serve.yaml"]) == 0
    assert capsys.readouterr().out == ""


def test_the_checks_can_live_in_pyproject(project, capsys):
    (project / ".inkling-compat.yaml").unlink()
    (project / "pyproject.toml").write_text(
        '[tool.inkling-compat]\n[[tool.inkling-compat.checks]]\nconfig = "examples/serve.yaml"\n'
        'model = "examples/config.json"\nadapter = "examples/adapter"\n',
        encoding="utf-8",
    )
    (project / "sub").mkdir()
    os.chdir(project / "sub")  # found upward; paths stay relative to the file that names them
    assert targets.find_project_file(Path.cwd()) == project / "pyproject.toml"
    (target,) = targets.read_targets(project / "pyproject.toml")
    assert target.config == project / "examples" / "serve.yaml" and target.adapter == (project / "examples" / "adapter",)
    os.chdir(project)
    assert hook.run(["examples/serve.yaml"]) == 0
    assert "tool.inkling-compat.checks[0]" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, field, reason",
    [
        ("checks: {config: a.yaml}\n", "checks", "expected a list of checks"),
        ("checks: [a.yaml]\n", "checks[0]", "expected a mapping"),
        ("checks: [{model: m.json}]\n", "checks[0].config", "Field required"),
        ("checks: [{config: a.yaml, adapters: [x]}]\n", "checks[0].adapters", "did you mean 'adapter'?"),
        ("checks: [{config: a.yaml, adapter_dir: [x]}]\n", "checks[0].adapter_dir", "did you mean 'adapter-dir'?"),
        ("checks: [{config: a.yaml, model: 3}]\n", "checks[0].model", "expected a string"),
        ("checks: [{config: a.yaml, adapter: [1]}]\n", "checks[0].adapter", "expected a path or a list of paths"),
        ('checks: [{config: "a\\0b"}]\n', "checks[0].config", "NUL character"),
        ("checks: [{config: a.yaml, adapter-dir: ['']}]\n", "checks[0].adapter-dir", "an empty path"),
        ("- a list\n", "(root)", "expected a mapping"),
        ("checks: []\nignores: [x]\n", "ignores", "did you mean 'ignore'?"),  # the check's own settings, validated once
    ],
)
def test_a_malformed_project_file_is_exit_2_naming_the_key(project, capsys, text, field, reason):
    path = project / ".inkling-compat.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        targets.read_targets(path)
    assert error.value.field == field and reason in error.value.reason
    assert hook.run(["examples/serve.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f".inkling-compat.yaml: {field}: " in err


@pytest.mark.parametrize("text", ["&a [*a]\n", "a: &a [*a, *a]\n", "checks: [" * 200 + "\n", "\x00\x01", "checks:\n  - config: [\n"])
def test_a_hostile_project_file_is_one_exit_2_line(project, capsys, text):
    (project / ".inkling-compat.yaml").write_text(text, encoding="utf-8")
    assert hook.run(["examples/serve.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("inkling-compat hook: error: .inkling-compat.yaml: ")


def test_without_checks_the_hook_says_how_to_name_them(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert hook.run(["serve.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".inkling-compat.yaml" in err and "--config" in err
    assert hook.run(["--format", "xml"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    (tmp_path / "pyproject.toml").write_text("[tool\n", encoding="utf-8")  # someone else's broken file
    assert hook.run(["serve.yaml"]) == 2
    assert "no check to run" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text("[tool.inkling-compat\n", encoding="utf-8")
    assert hook.run(["serve.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pyproject.toml: tool.inkling-compat: pyproject.toml does not parse" in err
    (tmp_path / "pyproject.toml").write_text("[tool]\ninkling-compat = 3\n", encoding="utf-8")
    assert hook.run(["serve.yaml"]) == 2
    assert "pyproject.toml: tool.inkling-compat: expected a table" in capsys.readouterr().err


def test_the_hook_as_a_command(project):
    done = subprocess.run([sys.executable, "-m", "inkling_compat.ci.hook", "examples/broken/serve.yaml"], capture_output=True, text=True)
    assert done.returncode == 1 and "checks[1]" in done.stdout


# -- the GitHub Action ---------------------------------------------------------------------------

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
INPUT = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _step(step_id: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if s.get("id") == step_id)


EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _run_check_step(inputs: dict[str, str], tmp_path: Path, fork: str = "") -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """action.yml's check step as a runner runs it: its `env:` with `${{ inputs.* }}` filled in
    (given or default), the install step's Python (this one), the event's fork flag, `run:`
    under bash in the workspace, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and RUNNER_TEMP set."""
    step = _step("check")
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()} | inputs
    context = {f"inputs.{name}": value for name, value in values.items()}
    context |= {"steps.install.outputs.python": sys.executable, "github.event.pull_request.head.repo.fork": fork}
    env = {key: EXPRESSION.sub(lambda m: context[m.group(1)], value) for key, value in step["env"].items()}
    output = tmp_path / "github_output"
    output.touch()
    (tmp_path / "step_summary").touch()
    (tmp_path / "runner_temp").mkdir(exist_ok=True)
    env = dict(
        os.environ, **env, GITHUB_OUTPUT=str(output), RUNNER_TEMP=str(tmp_path / "runner_temp"),
        GITHUB_ACTION_PATH=str(ROOT), GITHUB_WORKSPACE=str(ROOT), GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    assert step["shell"] == "bash"
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    outputs = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines() if "=" in line)
    return done, outputs


def test_the_action_is_a_composite_that_installs_checks_and_uploads():
    assert ACTION["runs"]["using"] == "composite"
    steps = ACTION["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    assert '"$GITHUB_ACTION_PATH"' in _step("install")["run"] and "pip install" in _step("install")["run"]
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.sarif }}"
    assert "always()" in upload["if"] and "inputs.upload-sarif == 'true'" in upload["if"]
    assert "steps.check.outputs.upload == 'true'" in upload["if"]


def test_every_action_the_action_uses_is_pinned_by_commit():
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    uses = [s["uses"] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert len(uses) == 3 and len(re.findall(r"^\s*-?\s*uses:", text, re.M)) == 3
    for ref in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), ref
        line = next(line for line in text.splitlines() if ref in line)
        assert re.search(r"#\s*v\d+\.\d+\.\d+$", line), line  # the release the commit is


def test_the_action_keeps_the_callers_python_and_caches_pip():
    setup = ACTION["runs"]["steps"][0]
    assert setup["with"]["update-environment"] is False
    install = _step("install")
    assert "-m venv" in install["run"] and install["env"]["PIP_CACHE_DIR"] == "${{ runner.temp }}/inkling-compat-pip"
    assert "${{ steps.python.outputs.python-path }}" == install["env"]["INKLING_BASE_PYTHON"]
    cache = next(s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == install["env"]["PIP_CACHE_DIR"]
    assert _step("check")["env"]["INKLING_PYTHON"] == "${{ steps.install.outputs.python }}"
    assert _step("check")["run"].startswith('"$INKLING_PYTHON" -m inkling_compat.ci.action')


def test_a_forks_pull_request_skips_the_upload_with_a_notice(tmp_path):
    args = {"config": "examples/serve.yaml", "model": "examples/config.json", "adapter": "examples/adapter"}
    done, outputs = _run_check_step(args, tmp_path, fork="true")
    assert done.returncode == 0 and outputs["upload"] == "false" and Path(outputs["sarif"]).is_file()
    assert "::notice title=inkling-compat::SARIF upload skipped: a pull request from a fork" in done.stdout
    assert "SARIF upload skipped" in (tmp_path / "step_summary").read_text(encoding="utf-8")
    (tmp_path / "own").mkdir()
    done, outputs = _run_check_step(args, tmp_path / "own", fork="false")
    assert outputs["upload"] == "true" and "::notice" not in done.stdout
    done, outputs = _run_check_step({**args, "upload-sarif": "false"}, tmp_path / "own")
    assert outputs["upload"] == "false"


def test_the_job_summary_has_the_counts_and_the_first_problems(tmp_path):
    done, outputs = _run_check_step(
        {"config": "examples/broken/serve.yaml", "model": "examples/config.json", "adapter": "examples/broken/adapter_pool.yaml"}, tmp_path
    )
    summary = (tmp_path / "step_summary").read_text(encoding="utf-8")
    assert done.returncode == 1 and summary.startswith("### inkling-compat: failed\n")
    assert "4 error(s), 0 warning(s), 0 ignored; exit 1." in summary
    rows = [line for line in summary.splitlines() if line.startswith(("| error |", "| runtime |"))]
    assert len(rows) == 4 and "`examples/broken/serve.yaml:5:1`" in rows[0] and "unknown-config-key" in rows[0]


def test_the_action_checks_once(tmp_path, monkeypatch, capsys):
    from inkling_compat import cli
    from inkling_compat.ci import action

    calls = []
    real = cli.check_report
    monkeypatch.setattr(cli, "check_report", lambda args: calls.append(args) or real(args))
    env = {"INKLING_CONFIG": "examples/broken/serve.yaml", "INKLING_MODEL": "examples/config.json", "RUNNER_TEMP": str(tmp_path)}
    monkeypatch.chdir(ROOT)
    assert action.run(env) == 1
    assert len(calls) == 1
    assert capsys.readouterr().out.count("::error ") >= 2 and (tmp_path / "inkling-compat.sarif").is_file()
    for name in ("config", "model", "adapter", "adapter-dir", "args"):
        assert name in ACTION["inputs"], name
    used = set(INPUT.findall((ROOT / "action.yml").read_text(encoding="utf-8")))
    assert used <= set(ACTION["inputs"]), used - set(ACTION["inputs"])


def test_the_action_on_the_broken_example_fails_annotates_and_writes_sarif(tmp_path):
    done, outputs = _run_check_step(
        {"config": "examples/broken/serve.yaml", "model": "examples/config.json", "adapter": "examples/broken/adapter_pool.yaml\n"},
        tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert outputs["exit-code"] == "1"
    annotations = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    assert annotations, done.stdout
    for line in annotations:
        assert re.match(r"::error file=examples/broken/[\w.]+(,line=\d+,col=\d+)?,title=[a-z0-9-]+::", line), line
    assert any(",line=" in line for line in annotations)
    sarif = json.loads(Path(outputs["sarif"]).read_text(encoding="utf-8"))
    assert Path(outputs["sarif"]).parent == tmp_path / "runner_temp"
    results = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and results
    titles = {re.search(r"title=([a-z0-9-]+)::", line).group(1) for line in annotations}
    assert titles == {r["ruleId"] for r in results if r["level"] == "error"}


def test_the_action_on_the_good_example_passes(tmp_path):
    done, outputs = _run_check_step(
        {"config": "examples/serve.yaml", "model": "examples/config.json", "adapter": "examples/adapter", "args": "--sglang-version 53ccafdf"},
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["exit-code"] == "0" and Path(outputs["sarif"]).is_file()
    assert "::error" not in done.stdout


def test_the_action_without_a_usable_input_is_exit_2_with_an_annotation(tmp_path):
    done, outputs = _run_check_step({"config": ""}, tmp_path)
    assert done.returncode == 2 and done.stdout.startswith("::error title=inkling-compat::")
    done, outputs = _run_check_step({"config": "examples/serve.yaml", "args": "--adapter 'unclosed"}, tmp_path)
    assert done.returncode == 2 and "'args'" in done.stdout
    done, outputs = _run_check_step({"config": "examples/missing.yaml"}, tmp_path)
    assert done.returncode == 2 and outputs["exit-code"] == "2"


# -- docs/ci.md: the snippets match what they drive ----------------------------------------------

CI_DOC = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
BLOCKS = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", CI_DOC, re.S)]


def _commands(text: str) -> list[list[str]]:
    import shlex

    found = []
    for part in re.split(r"&&|\n", text):
        words = shlex.split(part)
        if words[:2] == ["inkling-compat", "check"]:
            found.append(words[1:])
    return found


def test_the_github_snippet_uses_the_actions_inputs():
    (workflow, step_only) = BLOCKS[0], BLOCKS[1]
    steps = workflow["jobs"]["inkling-compat"]["steps"]
    uses = next(s for s in steps if s.get("uses", "").startswith("inkling-compat/inkling-compat@"))
    assert set(uses["with"]) <= set(ACTION["inputs"])
    assert {n for n, spec in ACTION["inputs"].items() if spec.get("required")} <= set(uses["with"])
    assert workflow["jobs"]["inkling-compat"]["permissions"]["security-events"] == "write"
    (command,) = _commands(step_only[0]["run"])
    assert command[-2:] == ["--format", "github"]


def test_the_documented_commands_parse():
    from inkling_compat import cli

    gitlab = BLOCKS[2]["inkling-compat"]
    commands = _commands(BLOCKS[1][0]["run"]) + [c for line in gitlab["script"] for c in _commands(line)]
    assert len(commands) == 3
    for command in commands:
        args = cli._parser().parse_args(command)
        assert args.command == "check" and args.config and args.adapter_dir == ["adapters/"]
    quality, junit = (cli._parser().parse_args(c) for c in commands[1:])
    assert quality.format == "gitlab" and gitlab["artifacts"]["reports"]["codequality"] == quality.output
    assert quality.exit_zero and not junit.exit_zero  # (a failing first command would stop the script)
    assert junit.format == "junit" and gitlab["artifacts"]["reports"]["junit"] == junit.output
    assert gitlab["artifacts"]["when"] == "always"


def test_the_pre_commit_snippets_name_the_hook_and_valid_checks(tmp_path):
    (repo,) = BLOCKS[3]["repos"]
    (entry,) = repo["hooks"]
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert entry["id"] == manifest[0]["id"]
    parsed = hook._parser().parse_args(entry["args"])
    assert parsed.config == "deploy/serve.yaml" and parsed.adapter_dir == ["adapters/"]
    project = tmp_path / ".inkling-compat.yaml"
    project.write_text(yaml.safe_dump(BLOCKS[4]), encoding="utf-8")
    first, second = targets.read_targets(project)
    assert first.adapter_dir == (tmp_path / "adapters",) and second.sglang_version == "53ccafdf"


def test_the_readme_line_for_ci_uses_the_action():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = yaml.safe_load(readme.split("## In CI", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0])
    job = block["jobs"]["inkling-compat"]
    assert job["permissions"]["security-events"] == "write"
    (step,) = [s for s in job["steps"] if s.get("uses", "").startswith("inkling-compat/inkling-compat@")]
    assert set(step["with"]) <= set(ACTION["inputs"])
    assert "config" in step["with"]
