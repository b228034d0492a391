"""README.md is true: its outputs are what the commands print, its figures are the code's, its
snippets parse and drive what they name, and it reads in the order a newcomer needs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inkling_compat import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
HEADINGS = ["Install", "Quick start", "In CI", "Configuration", "Rules", "Reference runtime", "Python API", "Documentation"]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README, re.S)


def _console(prefix: str) -> list[tuple[list[str], list[str]]]:
    """(the command's words, the lines shown) of each console block whose command starts so."""
    out = []
    for block in _blocks("console"):
        first, *shown = block.rstrip("\n").split("\n")
        if first.startswith(f"$ {prefix}"):
            out.append((shlex.split(first[2:]), shown))
    return out


def test_it_reads_in_order_and_briefly():
    assert len(README.split()) <= 1600
    assert re.findall(r"^## (.+)$", README, re.M) == HEADINGS
    first_heading = README.index("\n## ")
    opening = README[:first_heading]
    # what it is, a real output, then the two commands; in that order
    assert opening.index("pre-flight checker") < opening.index("```console") < opening.index("```sh")


def test_the_first_sh_block_is_the_two_commands_ci_runs():
    lines = _blocks("sh")[0].strip().splitlines()
    assert len(lines) == 2
    assert "inkling-compat check --launch examples/" in lines[0] or "inkling-compat check --config examples/" in lines[0]
    assert lines[1].endswith("python -m pytest -q -n 2") and "python3 -m venv .venv" in lines[1]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "sed -n 2p" in run  # (.ci/run takes the second line of this block)


def test_the_check_outputs_shown_are_what_check_prints(capsys, monkeypatch):
    """Every console block that runs `inkling-compat check` (with the environment it names)
    shows what it prints (inkling_compat/publish/readme.py writes them)."""
    from inkling_compat.publish.readme import check_command

    monkeypatch.chdir(ROOT)
    shown = [(check_command(block.split("\n", 1)[0]), block.rstrip("\n").split("\n")[1:]) for block in _blocks("console")]
    shown = [(command, lines) for command, lines in shown if command is not None]
    assert len(shown) >= 3
    for (env, args), lines in shown:
        with monkeypatch.context() as scope:
            for name, value in env.items():
                scope.setenv(name, value)
            code = cli.main([*args, "--color", "never"])
        out = capsys.readouterr().out
        assert out.rstrip("\n").split("\n") == lines, f"README.md shows another output of {' '.join(args)}: run `make generate`"
        assert code == (1 if any(line.startswith("error ") for line in lines) else 0)


@pytest.mark.long
def test_the_run_output_shown_is_what_run_prints():
    ((words, lines),) = _console("inkling-compat run")
    done = subprocess.run([sys.executable, "-m", "inkling_compat.cli", *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    for line in lines:
        assert line == "..." or line in printed, line


def test_the_figures_are_the_codes():
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.inputs.models import PLATFORM_PRESETS

    (count,) = re.findall(r"^(\d+) rules, one YAML file each", README, re.M)
    assert int(count) == len(load_rules()), "README.md's rule count is stale: run `make generate`"
    presets = re.search(r"`--platform`: a preset \((.*?)\) or a platform file", README, re.S).group(1)
    assert re.findall(r"`([\w-]+)`", presets) == list(PLATFORM_PRESETS)


def test_the_snippets_parse_and_drive_what_they_name(tmp_path):
    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.engine.selection import build_selection

    workflow, settings, suppression = (yaml.safe_load(b) for b in _blocks("yaml"))
    job = workflow["jobs"]["inkling-compat"]
    assert job["permissions"]["security-events"] == "write"
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (step,) = [s for s in job["steps"] if s.get("uses", "").startswith("inkling-compat/inkling-compat@")]
    assert "config" in step["with"] and set(step["with"]) <= set(action["inputs"])
    path = tmp_path / ".inkling-compat.yaml"
    path.write_text(_blocks("yaml")[1], encoding="utf-8")
    selection = build_selection((c.rule.id for c in load_rules()), settings_file=path)
    assert selection.select == tuple(settings["select"]) and selection.ignore[0].reason == settings["ignore"][0]["reason"]
    assert suppression == {"max_lora_rnk": 32} and "# inkling-compat: ignore[unknown-config-key]" in _blocks("yaml")[2]


@pytest.mark.parametrize("link", sorted(set(re.findall(r"\]\(((?:docs/|LICENSE)[^)#]*)\)", README))))
def test_the_links_lead_somewhere(link):
    assert (ROOT / link).exists(), link
