"""The raise-site audit (tests/oracle/audit.py) on the sglang 0.5.23 wheel: every `raise` and
`assert` of the audited files is covered by a rule or listed in tests/data/audit_exclusions.yaml
with a category and a reason, and every rule pinned into those files still holds its message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oracle import audit, sglang_sink
from oracle.require import load_or_skip

FIDELITY = Path(__file__).resolve().parent.parent / "docs" / "fidelity.md"


@pytest.fixture(scope="module")
def result() -> audit.Audit:
    scan = load_or_skip(lambda: audit.read_sites(sglang_sink.find_wheel()), "raise-site audit")
    pins = audit.pins()
    return audit.check(scan, pins, audit.load_exclusions(), {p.rule_id for p in pins})


def test_every_site_is_covered_or_excluded(result):
    assert result.problems == ()


def test_no_configuration_dependent_site_is_left_without_a_rule(result):
    gaps = [f"{v.site.path}:{v.site.line}" for v in result.verdicts if v.category == "not-yet-covered"]
    assert gaps == [], "write a rule for each (docs/writing-rules.md), or exclude it with the category that holds"


def test_fidelity_md_shows_the_current_table(result):
    text = FIDELITY.read_text(encoding="utf-8")
    assert audit.markdown_table(result) in text, "regenerate: python tests/oracle/audit.py --table"


# --- the audit's own parts, on small sources ------------------------------------------------

SOURCE = '''
def check(cfg):
    if cfg.x < 0:
        raise ValueError(
            f"x must be >= 0, got {cfg.x!r}"
        )
    assert cfg.y, "y" + " is required"
    assert cfg.z
    for bad, reason in ((cfg.a, "A"), (cfg.b, "B")):
        if bad:
            raise RuntimeError(f"unsupported: {reason}")
'''


def test_sites_are_read_with_their_templates_and_check_lines():
    sites = audit.sites_of(SOURCE, "python/sglang/srt/lora/x.py")
    assert [(s.line, s.check_line, s.error_class, s.template) for s in sites] == [
        (4, 3, "ValueError", "x must be >= 0, got {cfg.x!r}"),
        (7, 7, "AssertionError", "y is required"),
        (8, 8, "AssertionError", ""),
        (11, 9, "RuntimeError", "unsupported: {reason}"),
    ]
    assert {s.function for s in sites} == {"check"}


def test_templates_match_rule_messages():
    assert audit.template_matches("x must be >= 0, got {cfg.x!r}", "x must be >= 0, got {x}")
    assert audit.template_matches("{option} does not yet support {mode}", "--lora-backend triton_v2 does not yet support ROCm")
    # a rule's hole is a value, not a sentence of the site's
    assert not audit.template_matches(
        "--moe-runner-backend {backend} requires --enable-lora (or --lora-paths)",
        "--moe-runner-backend {backend} requires Standard dispatch, got {a2a}",
    )
    assert not audit.template_matches("x must be >= 0, got {cfg.x!r}", "y must be >= 0, got {x}")


def _pin(line: int, message: str, error_class: str = "ValueError") -> audit.Pin:
    return audit.Pin("r", "python/sglang/srt/lora/x.py", line, message, "check", error_class, False)


def test_an_uncovered_site_a_moved_pin_and_a_stale_exclusion_fail():
    sites = tuple(audit.sites_of(SOURCE, "python/sglang/srt/lora/x.py"))
    scan = audit.Scan(sites, tuple(audit.anchors_of(SOURCE, "python/sglang/srt/lora/x.py")))
    excluded = [
        audit.Exclusion(s.path, s.line, s.error_class, s.template, "internal-invariant", "test")
        for s in sites if s.line != 4
    ]
    assert audit.check(scan, [_pin(3, "x must be >= 0, got {x}")], excluded, {"r"}).problems == ()
    uncovered = audit.check(scan, [], excluded, set()).problems
    assert len(uncovered) == 1 and re.search(r"x.py:4 .*neither covered", uncovered[0])
    moved = audit.check(scan, [_pin(7, "x must be positive", "AssertionError")], excluded, {"r"}).problems
    assert any("rule r: python/sglang/srt/lora/x.py:7 raises 'y is required'" in p for p in moved)
    stale = excluded + [audit.Exclusion(sites[0].path, 99, "ValueError", "gone", "run-time-state", "test")]
    elsewhere = audit.check(scan, [audit.Pin("r", sites[0].path, 2, "m", "other", "KeyError", False)], excluded, {"r"})
    assert any("is in check, not in other" in p for p in elsewhere.problems)
    assert any("no such site" in p for p in audit.check(scan, [_pin(3, "x must be >= 0, got {x}")], stale, {"r"}).problems)


def test_diff_names_moved_reworded_added_and_removed():
    old = audit.sites_of(SOURCE, "python/sglang/srt/lora/x.py")
    new_source = "\n" + SOURCE.replace("is required", "must be set").replace("    assert cfg.z\n", "")
    new_source += "\ndef extra():\n    raise KeyError('k')\n"
    d = audit.diff(old, audit.sites_of(new_source, "python/sglang/srt/lora/x.py"))
    assert [(a.line, b.line) for a, b in d.moved] == [(4, 5)]  # line 11 stays: one line in, one out
    assert [(a.template, b.template) for a, b in d.reworded] == [("y is required", "y must be set")]
    assert [s.template for s in d.removed] == [""]
    assert [s.error_class for s in d.added] == ["KeyError"]


def test_an_else_branch_is_checked_from_its_if():
    source = "def f(kv, tp):\n    if kv >= tp:\n        assert kv % tp == 0\n    else:\n        assert tp % kv == 0\n"
    assert [(s.line, s.check_line) for s in audit.sites_of(source, "python/sglang/srt/x.py")] == [(3, 2), (5, 2)]
