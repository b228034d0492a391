"""The rule catalog, docs/rules/index.md, is generated from the rule files and must be current
(the per-rule pages next to it: tests/test_pages.py).

Regenerate with `python -m inkling_compat.publish.pages`.
"""

from __future__ import annotations

from inkling_compat.publish import catalog, pages
from inkling_compat.engine.rule_load import load_rules, rule_files


def test_rules_index_is_current():
    path = catalog.default_output()
    assert path.is_file(), f"{path} is missing; run `python -m inkling_compat.publish.pages`"
    assert path.read_text(encoding="utf-8") == catalog.render(), (
        "docs/rules/index.md is out of date; run `python -m inkling_compat.publish.pages`"
    )


def test_catalog_covers_every_rule():
    text = catalog.render()
    rules = [c.rule for c in load_rules()]
    assert f"{len(rules)} rules in " in text
    for rule in rules:  # each once, linking to its page (whose content tests/test_pages.py checks)
        assert text.count(f"| [{rule.id}]({rule.id}.md) |") == 1, rule.id
    for rule in rules:
        for variant in rule.variants:
            section = text.split(f"## In sglang {variant.sglang_versions[0]}\n", 1)[1]
            assert f"- [{rule.id}]({rule.id}.md): " in section


def test_catalog_groups_by_component():
    text = catalog.render()
    for path in rule_files():
        section = text.split(f"\n## {path.parent.name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"| [{path.stem}]({path.stem}.md) |" in section, path


def test_catalog_is_deterministic():
    assert catalog.render() == catalog.render()


def test_check_mode(tmp_path, capsys):
    out = tmp_path / "rules"
    assert pages.main(["--check", "--output", str(out)]) == 1
    assert pages.main(["--output", str(out)]) == 0
    assert pages.main(["--check", "--output", str(out)]) == 0
    index = out / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "stale\n", encoding="utf-8")
    assert pages.main(["--check", "--output", str(out)]) == 1


def test_fences_survive_backticks():
    assert catalog._fence("a ``` b").startswith("````")
    assert catalog._code("x`y") == "``x`y``"
