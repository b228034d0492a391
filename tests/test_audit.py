"""The raise-site audit (tests/oracle/audit.py) on the sglang 0.5.23 wheel: every `raise` and
`assert` of the audited files (and of the functions rules pin in other files) is covered by a
rule or listed in tests/data/audit_exclusions.yaml with a category and a reason, and every rule
still holds its message where it is pinned. Across releases: sites are matched by file, function,
class and message (a moved line is no problem; an added, reworded or removed one is, until a rule,
a variant, an exclusion or the site data accounts for it), each cached release audits clean, and a
check of a release does not evaluate the rules whose site it lacks."""

from __future__ import annotations

import os
import re
import types
from pathlib import Path

import pytest

from inkling_compat import check
from inkling_compat.engine import sites
from inkling_compat.inputs.versions import SGLANG_RELEASES
from oracle import audit, sglang_sink
from oracle.require import load_or_skip

FIDELITY = Path(__file__).resolve().parent.parent / "docs" / "fidelity.md"


@pytest.fixture(scope="module")
def result() -> audit.Audit:
    pins = audit.pins()
    wheel = load_or_skip(sglang_sink.find_wheel, "raise-site audit")
    scan = audit.read_sites(wheel, audit.pinned_scope(wheel, pins))
    return audit.check(scan, pins, audit.load_exclusions(), {p.rule_id for p in pins})


def test_every_site_is_covered_or_excluded(result):
    assert result.problems == ()


# Sites in functions rules pin outside the audited files (read since every rule's pinned file is
# read), that depend on the deployment and have no rule yet: counted in docs/fidelity.md.
KNOWN_GAPS: list[str] = []


def test_no_configuration_dependent_site_is_left_without_a_rule(result):
    gaps = [f"{v.site.path} {v.site.function}" for v in result.verdicts if v.category == "not-yet-covered"]
    assert gaps == KNOWN_GAPS, "write a rule for each (docs/writing-rules.md), or exclude it with the category that holds"


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
        audit.Exclusion(s.path, s.function, s.error_class, s.template, "internal-invariant", "test")
        for s in sites if s.line != 4
    ]
    assert audit.check(scan, [_pin(3, "x must be >= 0, got {x}")], excluded, {"r"}).problems == ()
    uncovered = audit.check(scan, [], excluded, set()).problems
    assert len(uncovered) == 1 and re.search(r"x.py:4 .*neither covered", uncovered[0])
    moved = audit.check(scan, [_pin(7, "x must be positive", "AssertionError")], excluded, {"r"}).problems
    assert any("rule r: python/sglang/srt/lora/x.py:7 raises 'y is required'" in p for p in moved)
    stale = excluded + [audit.Exclusion(sites[0].path, "check", "ValueError", "gone", "run-time-state", "test")]
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


# --- across releases ---------------------------------------------------------------------------

PATH = "python/sglang/srt/lora/x.py"


def _release(source: str, release: str) -> audit.Scan:
    return audit.Scan(tuple(audit.sites_of(source, PATH)), tuple(audit.anchors_of(source, PATH)),
                      {PATH: tuple(source.splitlines())}, release)


def _rule(message: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(join=None, message=message, source=types.SimpleNamespace(path=PATH, function="check"))


@pytest.fixture()
def base() -> tuple[audit.Scan, audit.Audit, list[audit.Exclusion]]:
    scan = _release(SOURCE, "0.5.23")
    excluded = [audit.Exclusion(s.path, s.function, s.error_class, s.template, "internal-invariant", "test")
                for s in scan.sites if s.line != 4]
    return scan, audit.check(scan, [_pin(3, "x must be >= 0, got {x}")], excluded, {"r"}), excluded


def _todo(base, source: str, data=None, rules=None, exclusions=None) -> list[tuple[str, bool]]:
    scan, result, excluded = base
    assert result.problems == ()
    todo = audit.compare(scan, result, _release(source, "0.5.22"), exclusions if exclusions is not None else excluded,
                         data=data, rules=rules if rules is not None else {"r": _rule("x must be >= 0, got {x}")})
    return [(t.kind, t.problem) for t in todo]


def test_a_moved_site_is_no_problem(base):
    moved = "\n\n# a comment\n" + SOURCE.replace("def check(cfg):\n", "def check(cfg):\n    cfg = cfg\n")
    assert audit.diff(base[0].sites, _release(moved, "0.5.22").sites).moved  # every line moved ...
    assert _todo(base, moved) == []  # ... and nothing is to do


def test_an_added_site_is_a_problem_until_excluded_for_its_release(base):
    added = SOURCE + "    raise KeyError(f'no {cfg.k}')\n"
    assert _todo(base, added) == [("added", True)]
    exclusion = audit.Exclusion(PATH, "check", "KeyError", "no {cfg.k}", "run-time-state", "test", ("0.5.22",))
    assert _todo(base, added, exclusions=base[2] + [exclusion]) == []


def test_a_reworded_site_is_a_problem_until_the_rule_reads_so_in_its_release(base):
    reworded = SOURCE.replace("x must be >= 0", "x must not be negative")
    assert _todo(base, reworded) == [("reworded", True)]
    assert _todo(base, reworded, rules={"r": _rule("x must not be negative, got {x}")}) == []
    excluded_reworded = SOURCE.replace('"y" + " is required"', '"y is needed"')
    assert _todo(base, excluded_reworded) == [("reworded", True)]


def test_a_removed_site_is_a_problem_until_the_site_data_says_the_release_lacks_it(base):
    removed = SOURCE.replace('        raise ValueError(\n            f"x must be >= 0, got {cfg.x!r}"\n        )\n', "        pass\n")
    assert _todo(base, removed) == [("removed", True)]
    assert _todo(base, removed, data={"releases": ["0.5.22"], "rules": {"r": {"0.5.22": None}}}) == []
    assert _todo(base, removed, rules={"r": None}) == []  # a rule that does not apply there


def test_a_changed_condition_is_listed_to_review_not_counted(base):
    changed = SOURCE.replace("if cfg.x < 0:", "if cfg.x < 0 and cfg.strict:")
    assert _todo(base, changed) == [("condition", False)]


def test_the_site_data_follows_a_rule_by_function_and_message(base):
    scan, result, _ = base
    pins = [_pin(3, "x must be >= 0, got {x}")]
    moved = "\n\n" + SOURCE
    assert audit.rule_sites(scan, result, pins, _release(moved, "0.5.22")) == {"r": 5}
    gone = SOURCE.replace("def check(cfg):", "def other(cfg):")
    assert audit.rule_sites(scan, result, pins, _release(gone, "0.5.22")) == {"r": None}
    reworded = SOURCE.replace("x must be >= 0", "x must be positive")
    assert audit.rule_sites(scan, result, pins, _release(reworded, "0.5.22")) == {
        "r": {"line": 3, "message": "x must be positive, got {cfg.x!r}"}}


# The two releases before the default one here (with it, the three newest: the wheels CI
# fetches); every release with INKLING_COMPAT_ALL_RELEASES=1 (`make fidelity-all`): an older
# wheel's audit searches the whole wheel for the checks that later releases moved out of
# server_args.py (about a minute each).
ALL = os.environ.get("INKLING_COMPAT_ALL_RELEASES") == "1"
RELEASES = [v for v in SGLANG_RELEASES if v != audit.DEFAULT_RELEASE][: None if ALL else 2]


@pytest.mark.long
def test_each_release_audits_clean(capsys):
    """Every site of each release covered (by the rule as it reads there, at the site data's line)
    or excluded, every difference from 0.5.23 accounted for, and its site data current. (One test
    for the releases: their audits parse each source file they share once.)"""
    wheels = {r: sorted(sglang_sink.cache_dir().glob(f"sglang-{r}-*.whl")) for r in RELEASES}
    if not any(wheels.values()):
        pytest.skip(f"no sglang {' or '.join(RELEASES)} wheel in {sglang_sink.cache_dir()}")
    base = load_or_skip(sglang_sink.find_wheel, "raise-site audit")
    for release, found in wheels.items():
        if not found:
            print(f"sglang {release}: no wheel in {sglang_sink.cache_dir()}, not audited")
            continue
        count = audit.audit_release(found[0], base)
        assert count == 0, f"sglang {release}:\n" + capsys.readouterr().out
        capsys.readouterr()


def test_a_release_is_checked_without_the_rules_whose_site_it_lacks():
    from inkling_compat.engine.plan import Plan
    from inkling_compat.engine.rule_load import load_rules

    lacking = sites.absent("0.5.22")
    assert {"lora-moe-runner-requires-triton-v2", "sink-v2-slot-out-of-range", "lora-moe-runner-fp8-block-128"} <= lacking
    rules = load_rules()
    # Besides 0.5.23's rules, only the rules of sites older releases have (none in 0.5.22).
    older_only = {"lora-backend-flashinfer-deprecated", "lora-moe-backend-unsupported", "cutlass-moe-env-needs-fp8"}
    assert lacking - set(Plan(rules, "0.5.23").global_ids + Plan(rules, "0.5.23").adapter_ids) == older_only
    assert not lacking & set(Plan(rules, "0.5.22").global_ids + Plan(rules, "0.5.22").adapter_ids)
    # Each such rule's firing examples (which fire on 0.5.23: tests/test_rule_examples.py) do not
    # fire it on 0.5.22: an input 0.5.22's parser refuses is refused so, the rest are checked
    # without it.
    from inkling_compat.errors import InputError
    from inkling_compat.testing.scenarios import example_arguments

    checked = 0
    for compiled in rules:
        if compiled.rule.id not in lacking:
            continue
        for example in compiled.rule.examples.fire:
            try:
                report = check(**example_arguments(example.input), sglang_version="0.5.22")
            except InputError:
                continue
            checked += 1
            assert compiled.rule.id not in {p.rule_id for p in report.problems}
    assert checked >= 10


def test_a_check_of_the_default_release_does_not_read_the_site_data():
    sites.data.cache_clear()
    sites.absent.cache_clear()
    check(argv=["--model-path", "m", "--enable-lora", "--lora-paths", "a=/x"])
    assert sites.data.cache_info().currsize == 0


def test_the_site_data_is_made_from_the_rules_as_they_are():
    """The site data records the digest of what it is made from besides the wheels (the rules'
    sources and messages in each release, the exclusions, the audit's code): a rule pinned
    elsewhere, reworded or given a variant makes it stale here, without the wheels."""
    data = audit.load_data()
    assert data.get("inputs") == audit.data_inputs(), (
        "inkling_compat/data/sglang-sites.json is stale: run `make generate` with the wheels of every supported "
        "release cached (or python tests/oracle/audit.py --write-data)")
    assert data["releases"] == sorted((r for r in SGLANG_RELEASES if r != audit.DEFAULT_RELEASE), key=lambda r: tuple(map(int, r.split("."))))


def test_the_digest_follows_what_the_audit_reads_of_a_rule(monkeypatch):
    from inkling_compat.engine import rule_load

    rules = rule_load.load_rules()
    before = audit.data_inputs()
    pinned = next(c for c in rules if c.rule.source is not None and c.rule.source.line is not None)
    # The same rule pinned one line further down.
    rule = pinned.rule.model_copy(update={"source": pinned.rule.source.model_copy(update={"line": pinned.rule.source.line + 1})})
    moved = types.SimpleNamespace(rule=rule, for_version=lambda v: pinned.for_version(v) and types.SimpleNamespace(rule=rule))
    monkeypatch.setattr(rule_load, "load_rules", lambda *a, **k: [moved if c is pinned else c for c in rules])
    assert audit.data_inputs() != before


def test_the_site_data_is_written_only_from_every_supported_release_s_wheel(tmp_path, monkeypatch, capsys):
    wheels = [tmp_path / f"sglang-{r}-cp311-cp311-manylinux_2_34_x86_64.whl" for r in ("0.5.22", "0.5.20", "0.5.24")]
    found, missing = audit.release_wheels(wheels)
    assert [audit.wheel_release(w) for w in found] == ["0.5.22", "0.5.20"]  # (0.5.24 is no supported release)
    assert missing == ["0.5.21", "0.5.19", "0.5.18", "0.5.17", "0.5.16"]
    # With a cache that lacks them, nothing is written (a partial file would drop releases).
    monkeypatch.setenv("INKLING_COMPAT_CACHE", str(tmp_path))
    monkeypatch.delenv("INKLING_COMPAT_SGLANG_WHEEL", raising=False)
    monkeypatch.setattr(audit, "write_data", lambda *a, **k: pytest.fail("written without the wheels"))
    assert audit.main(["--write-data"]) == 1
    assert "not written: no wheel of sglang 0.5.23, 0.5.22," in capsys.readouterr().err
