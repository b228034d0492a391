"""docs/rules.md is generated from the rule files and must be current.

Regenerate with `python -m inkling_compat.publish.catalog`.
"""

from __future__ import annotations

import re

from inkling_compat.publish import catalog
from inkling_compat.engine.rules import load_rules


def test_rules_md_is_current():
    path = catalog.default_output()
    assert path.is_file(), f"{path} is missing; run `python -m inkling_compat.publish.catalog`"
    assert path.read_text(encoding="utf-8") == catalog.render(), (
        "docs/rules.md is out of date; run `python -m inkling_compat.publish.catalog`"
    )


def test_catalog_covers_every_rule():
    text = catalog.render()
    rules = [c.rule for c in load_rules()]
    assert f"{len(rules)} rules." in text
    for rule in rules:
        assert f"\n## {rule.id}\n" in text
        assert f"| [{rule.id}](#{rule.id}) |" in text
        for fix in rule.fixes:
            assert fix.strip() in text
        first = rule.examples.fire[0]
        if first.message is not None:
            # A templated class (`{cls}`) is shown as check() renders it for the example.
            shown = rule.error_class if "{" not in rule.error_class else r"\w+"
            assert re.search(f"{shown}: {re.escape(first.message)}", text), rule.id


def test_catalog_is_deterministic():
    assert catalog.render() == catalog.render()


def test_check_mode(tmp_path, capsys):
    out = tmp_path / "rules.md"
    assert catalog.main(["--check", "--output", str(out)]) == 1
    assert catalog.main(["--output", str(out)]) == 0
    assert catalog.main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text(encoding="utf-8") + "stale\n", encoding="utf-8")
    assert catalog.main(["--check", "--output", str(out)]) == 1


def test_fences_survive_backticks():
    assert catalog._fence("a ``` b").startswith("````")
    assert catalog._code("x`y") == "``x`y``"
