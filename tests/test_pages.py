"""A page per rule, docs/rules/<id>.md: present for every rule, current, in Ruff's order, linking
where it says; `inkling-compat rules <id>` prints it; `--version` and `python -m inkling_compat`.

Regenerate the pages with `python -m inkling_compat.publish.pages`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from inkling_compat import cli
from inkling_compat.engine import sites
from inkling_compat.engine.rule_load import load_rules, rule_files
from inkling_compat.publish import pages
from inkling_compat.report.urls import rule_page_path, rule_url, sglang_source_url

ROOT = Path(__file__).resolve().parents[1]
FOLDER = pages.default_output()
RULES = [c.rule for c in load_rules()]
SECTIONS = ["## What it checks", "## Why", "## Example", "## Fix", "## Source", "## Versions"]


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return pages.render_pages()


def test_every_rule_has_a_current_page(rendered):
    assert FOLDER.is_dir(), f"{FOLDER} is missing; run `python -m inkling_compat.publish.pages`"
    on_disk = {p.name for p in FOLDER.glob("*.md")}
    assert on_disk == {f"{r.id}.md" for r in RULES} | {"index.md"}, "run `python -m inkling_compat.publish.pages`"
    for name, text in rendered.items():
        assert (FOLDER / name).read_text(encoding="utf-8") == text, (
            f"docs/rules/{name} is out of date; run `python -m inkling_compat.publish.pages`"
        )


def test_the_pages_are_deterministic(rendered):
    assert pages.render_pages() == rendered


def test_each_page_in_ruffs_order_with_the_rules_content(rendered):
    for rule in RULES:
        text = rendered[f"{rule.id}.md"]
        assert text.startswith(f"# {rule.id}\n"), rule.id
        where = [text.find(s) for s in SECTIONS]
        assert -1 not in where and where == sorted(where), (rule.id, where)
        assert rule.title in text and rule.explanation.strip() in text
        for fix in rule.fixes:
            assert f"- {fix.strip()}" in text.split("## Fix\n", 1)[1].split("\n## ", 1)[0], rule.id
        first = rule.examples.fire[0]
        if first.message is not None:
            # A templated class (`{cls}`) is shown as check() renders it for the example.
            shown = rule.error_class if "{" not in rule.error_class else r"\w+"
            assert re.search(f"{shown}: {re.escape(first.message)}", text), rule.id
        versions = text.split("## Versions\n", 1)[1]
        # (less the releases that lack the rule's site: inkling_compat/data/sglang-sites.json)
        applies = [v for v in rule.sglang_versions if rule.id not in sites.absent(v)]
        assert f"Applies to sglang {', '.join(applies)} " in versions
        if applies != rule.sglang_versions:
            assert f"Not checked for sglang {', '.join(v for v in rule.sglang_versions if v not in applies)}:" in versions
        for variant in rule.variants:
            assert f"### In sglang {', '.join(variant.sglang_versions)}" in versions, rule.id
        assert text.rstrip().endswith(f"Page: <{rule_url(rule.id)}>")


def test_the_source_is_a_link_to_the_pinned_line(rendered):
    for rule in RULES:
        source = rendered[f"{rule.id}.md"].split("## Source\n", 1)[1].split("\n## ", 1)[0]
        src = rule.source
        if src is None:
            assert "None in sglang" in source, rule.id
            continue
        if src.line is not None:
            assert f"(https://github.com/sgl-project/sglang/blob/v0.5.23/{src.path}#L{src.line})" in source, rule.id
        if src.commit:
            assert f"(https://github.com/sgl-project/sglang/blob/{src.commit}/{src.path}" in source, rule.id
            if src.commit_line is not None:
                assert f"{src.path}#L{src.commit_line})" in source


def test_sglang_source_url():
    assert sglang_source_url("python/sglang/x.py", "v0.5.23", 7) == "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/x.py#L7"
    assert sglang_source_url("/python/x.py", "abc") == "https://github.com/sgl-project/sglang/blob/abc/python/x.py"


def test_rule_url_names_the_page_in_the_repository():
    for rule in RULES:
        assert rule_url(rule.id).endswith("/" + rule_page_path(rule.id))
        assert (ROOT / rule_page_path(rule.id)).is_file()


def test_relative_links_between_pages_resolve(rendered):
    for name, text in rendered.items():
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert (FOLDER / target).resolve().is_file(), (name, target)


def test_the_index_links_every_page_once_by_component(rendered):
    index = rendered["index.md"]
    for path in rule_files():
        assert index.count(f"]({path.stem}.md)") >= 1
        section = index.split(f"\n## {path.parent.name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"| [{path.stem}]({path.stem}.md) |" in section


def test_check_mode_finds_missing_stale_and_left_over_pages(tmp_path, capsys):
    out = tmp_path / "rules"
    assert pages.main(["--check", "--output", str(out)]) == 1
    assert pages.main(["--output", str(out)]) == 0
    assert pages.main(["--check", "--output", str(out)]) == 0
    page = out / f"{RULES[0].id}.md"
    page.unlink()
    assert pages.main(["--check", "--output", str(out)]) == 1
    assert pages.main(["--output", str(out)]) == 0
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert pages.main(["--check", "--output", str(out)]) == 1
    assert pages.main(["--output", str(out)]) == 0
    # The page of a rule that is gone is removed; a file written by hand is left alone.
    gone = out / "a-removed-rule.md"
    gone.write_text(page.read_text(encoding="utf-8").replace(RULES[0].id, "a-removed-rule"), encoding="utf-8")
    mine = out / "notes.md"
    mine.write_text("# my notes\n", encoding="utf-8")
    assert pages.main(["--check", "--output", str(out)]) == 1
    assert pages.main(["--output", str(out)]) == 0
    assert not gone.exists() and mine.exists()
    assert pages.main(["--check", "--output", str(out)]) == 0


def test_rules_id_prints_the_page(capsys):
    rule = RULES[0]
    assert cli.main(["rules", rule.id]) == 0
    assert capsys.readouterr().out == (FOLDER / f"{rule.id}.md").read_text(encoding="utf-8")


def test_rules_id_json_carries_the_url(capsys):
    import json

    assert cli.main(["rules", "adapter-dora", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == "adapter-dora" and data["url"] == rule_url("adapter-dora")


def test_an_unknown_rule_id_is_exit_2_with_did_you_mean(capsys):
    assert cli.main(["rules", "adapter-dorra"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no rule 'adapter-dorra'" in err and "did you mean 'adapter-dora'" in err
    assert cli.main(["rules", "zzzz"]) == 2
    assert "`inkling-compat rules` lists them" in capsys.readouterr().err


def test_rules_without_id_lists_as_before(capsys):
    assert cli.main(["rules"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"{len(RULES)} rules" and len(out) == len(RULES) + 1


def test_version_names_package_sglang_versions_and_rule_count(capsys):
    import inkling_compat
    from inkling_compat.inputs.versions import SGLANG_VERSIONS

    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"inkling-compat {inkling_compat.__version__} (sglang ")
    assert all(v in line for v in SGLANG_VERSIONS) and f"; {len(RULES)} rules)" in line
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'\nversion = "{inkling_compat.__version__}"\n' in pyproject


def test_version_loads_no_engine():
    code = (
        "import sys, contextlib, io\nimport inkling_compat.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: c.main(['--version'])\n    except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'yaml', 'inkling_compat.engine', 'inkling_compat.facts'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_is_the_command():
    run = lambda *args: subprocess.run([sys.executable, "-m", "inkling_compat", *args], capture_output=True, text=True, cwd=ROOT)  # noqa: E731
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("inkling-compat ")
    ok = run("check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter")
    assert ok.returncode == 0 and ok.stdout.startswith("ok"), ok.stderr
    broken = run("check", "--config", "examples/broken/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/broken/adapter_pool.yaml")
    assert broken.returncode == 1
    usage = run("check")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
