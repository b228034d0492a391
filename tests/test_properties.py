"""Properties of the sink rules: consistent setups pass, each single fault is reported by
exactly the rule that owns it, and reports are ordered and worded like sglang."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from inkling_compat import check
from inkling_compat.testing.strategies import (
    faulty_peft_setups,
    faulty_sink_setups,
    peft_setups,
    pool_manifest,
    single_fault_pools,
    sink_setups,
)

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
    assert ids == fault.rule_ids(setup), (fault.name, setup, ids)
    assert not report.ok


@SETTINGS
@given(faulty_sink_setups())
def test_raise_for_problems_matches_first(case):
    _, _, arguments = case
    report = check(**arguments)
    first = report.headline  # what raise_for_problems raises (first is only what sglang itself raises)
    try:
        report.raise_for_problems()
    except Exception as exc:  # noqa: BLE001 - the class is what is under test
        assert type(exc).__name__ == first.error_class
        assert str(exc) == first.message
    else:
        raise AssertionError("raise_for_problems did not raise")


@SETTINGS
@given(peft_setups())
def test_consistent_peft_adapter_passes(case):
    report = check(**case.arguments())
    assert report.problems == [], [p.message for p in report.problems]


@SETTINGS
@given(faulty_peft_setups())
def test_single_peft_fault_yields_exactly_its_rule(case):
    _, fault, arguments = case
    ids = [p.rule_id for p in check(**arguments).problems]
    assert ids == [fault.expected], (fault.name, ids)


@SETTINGS
@given(sink_setups().flatmap(lambda setup: single_fault_pools(setup).map(lambda fault: (setup, fault))))
def test_a_pool_the_config_does_not_build_is_never_accepted(case):
    """Any single boundary mutation of the pool (an axis off by one, swapped, dropped or
    added, one buffer at another rank) is reported: by the sglang check it trips, or by a
    derived rule for what fails later (tests/test_fidelity.py says which, against sglang)."""
    setup, (description, shapes) = case
    if shapes == setup.pool_shapes():  # e.g. two equal axes swapped
        return
    arguments = dict(setup.arguments(), adapter=pool_manifest(shapes))
    report = check(**arguments)
    assert not report.ok, (description, shapes)
