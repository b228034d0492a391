"""Properties of the sink rules: consistent setups pass, each single fault is reported by
exactly the rule that owns it, and reports are ordered and worded like sglang."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from inkling_compat import check
from inkling_compat.strategies import faulty_sink_setups, sink_setups

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(sink_setups())
def test_consistent_setup_passes(setup):
    report = check(**setup.arguments())
    assert report.problems == [], [p.message for p in report.problems]
    assert report.ok


@SETTINGS
@given(faulty_sink_setups())
def test_single_fault_yields_exactly_its_rule(case):
    setup, fault, arguments = case
    report = check(**arguments)
    ids = [p.rule_id for p in report.problems]
    assert ids == [fault.expected[setup.sink_class]], (fault.name, setup, ids)
    assert not report.ok


@SETTINGS
@given(faulty_sink_setups())
def test_raise_for_problems_matches_first(case):
    _, _, arguments = case
    report = check(**arguments)
    first = report.first
    try:
        report.raise_for_problems()
    except Exception as exc:  # noqa: BLE001 - the class is what is under test
        assert type(exc).__name__ == first.error_class
        assert str(exc) == first.message
    else:
        raise AssertionError("raise_for_problems did not raise")
