"""A rule whose CEL does not compile is refused when the rules load, naming its file.

The default version's `when && condition` are compiled as the engine's per-scope programs
(`engine/rule_compile.CompiledRule`), variants and params one by one; either way a broken
expression must fail `load_rules()`, never the first check that reaches it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from inkling_compat.engine.rule_load import load_rules, rules_dir
from inkling_compat.errors import RuleFileError

RULE = "sink-lora-multislot-needs-triton"


def _broken_copy(tmp_path: Path, old: str, new: str) -> str:
    shutil.copytree(rules_dir(), tmp_path / "rules", ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    path = next((tmp_path / "rules").rglob(f"{RULE}.yaml"))
    text = path.read_text()
    changed = re.sub(old, new, text, count=1, flags=re.M)
    assert changed != text
    path.write_text(changed)
    return str(tmp_path / "rules")


@pytest.mark.parametrize(
    "old, new, field",
    [
        (r"^condition: .*$", "condition: 'facts.sink.max_loras_per_batch > > 1'", "when/condition"),
        (r"^(    condition: ).*$", r"\1'facts.sink.max_loras_per_batch >'", "when/condition"),  # the 53ccafdf variant
    ],
    ids=["condition", "variant-condition"],
)
def test_broken_expression_is_refused_at_load(tmp_path, old, new, field):
    folder = _broken_copy(tmp_path, old, new)
    with pytest.raises(RuleFileError) as info:
        load_rules(folder)
    assert info.value.file.startswith(f"{RULE}.yaml") and info.value.field == field
    assert "CEL does not compile" in info.value.reason


def test_the_shipped_rules_load_and_every_program_compiles():
    rules = load_rules()
    assert rules and all(c.program is not None for c in rules)


def test_every_message_pattern_compiles():
    """Patterns are compiled on first use (explain, these tests), not when the rules load."""
    checked = 0
    for c in load_rules():
        for version in {None, *(v for v in c._versions)}:
            compiled = c if version is None else c.for_version(version)
            if compiled is not None:
                assert compiled.pattern.pattern == compiled.rule.message_pattern
                checked += 1
    assert checked >= len(load_rules())


def test_a_broken_pattern_is_a_rule_file_error(tmp_path):
    folder = _broken_copy(tmp_path, r"^message_pattern: .*$", "message_pattern: '(unclosed'")
    rule = next(c for c in load_rules(folder) if c.rule.id == RULE)
    with pytest.raises(RuleFileError) as info:
        rule.pattern
    assert info.value.file == f"{RULE}.yaml" and info.value.field == "message_pattern"
