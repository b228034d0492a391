"""An honest report: `first` and "would first raise" name only what sglang raises; derived
predictions and inkling-compat's own findings are labelled as such; raise_for_problems raises
an Exception in every case; pickle weights are "not checked"; derived crash classes are
torch's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inkling_compat import check
from inkling_compat.report.model import Problem, Report, SglangWouldRaise
from inkling_compat.sglang import set_lora_info
from inkling_compat.testing.scenarios import example_arguments
from in_process import run_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PEFT_CONFIG = {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["gate_up_proj", "down_proj"]}
# Legacy sink, shared outer, down A with 2 slots in a 4-slot pool: sglang's checks pass and
# torch raises IndexError copying slot 2 (a derived crash, and nothing sglang raises itself).
BIND_CRASH = {"adapter": {"pool": {"down_lora_a": {"shape": [2, 2, 16, 768]}}}}


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process (tests/in_process.py)."""
    return lambda *args: run_main(capsys, *args)


def problem(rule_id: str = "r", origin: str = "sglang", error_class: str = "ValueError", message: str = "boom", severity: str = "error") -> Problem:
    return Problem(rule_id, severity, origin, error_class, message, message, "argparse", (), ("fix it",))


# --- first / headline / labels ---------------------------------------------------------------


def test_derived_only_report_does_not_say_sglang_raises():
    report = check(**example_arguments(BIND_CRASH))
    assert not report.ok and {p.origin for p in report.errors} == {"derived"}
    assert report.first is None
    assert report.headline.rule_id == "sink-pool-bind-crash"
    text = str(report)
    assert "would first raise" not in text
    assert "sglang 0.5.23 accepts this and then:" in text
    assert "  sglang accepts this and then: " in text  # the problem's own line is labelled too
    data = json.loads(json.dumps(report.to_dict()))
    assert data["first"] is None
    assert data["headline"]["label"] == "sglang 0.5.23 accepts this and then"
    assert data["headline"]["problem"]["rule_id"] == "sink-pool-bind-crash"
    assert {p["label"] for p in data["problems"]} == {"sglang accepts this and then"}


def test_own_finding_is_labelled_inkling_compat():
    report = check(**example_arguments({"config": {"max_lora_rnk": 16}}))
    assert [p.rule_id for p in report.errors] == ["unknown-config-key"]
    assert report.first is None
    text = str(report)
    assert "would first raise" not in text and "sglang 0.5.23 accepts" not in text
    assert text.splitlines()[-2].endswith("; inkling-compat:")
    assert text.splitlines()[-1].startswith("  <config>: unrecognized arguments: ")  # no class: sglang raises nothing
    data = report.to_dict()
    assert data["first"] is None and data["headline"]["label"] == "inkling-compat"
    assert data["problems"][0]["label"] == "inkling-compat"


def test_sglang_error_is_first_even_behind_an_own_finding():
    """unknown-config-key sorts first (stage argparse, order 0); sglang's ValueError is still
    what "would first raise" names."""
    report = check(**example_arguments({"config": {"max_lora_rnk": 16, "lora_backend": "csgmv"}}))
    assert [p.rule_id for p in report.errors] == ["unknown-config-key", "sink-lora-multislot-needs-triton"]
    assert report.first.rule_id == "sink-lora-multislot-needs-triton"
    lines = str(report).splitlines()
    assert lines[-2].endswith("; sglang 0.5.23 would first raise:")
    assert lines[-1].startswith("  ValueError: InklingBatchDenseMLPWithLoRA is ineligible")
    assert report.to_dict()["first"]["rule_id"] == "sink-lora-multislot-needs-triton"


def test_unreadable_adapter_is_an_own_finding(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "adapter_config.json").write_text('{"r": 16,', encoding="utf-8")
    report = check(EXAMPLES / "serve.yaml", [str(folder)], model=EXAMPLES / "config.json")
    assert [p.rule_id for p in report.errors] == ["adapter-file-unreadable"]
    assert report.first is None
    assert "would first raise" not in str(report) and str(report).splitlines()[-2].endswith("; inkling-compat:")


def test_fleet_text_labels_the_headline(tmp_path):
    from inkling_compat.fleet import check_fleet
    from inkling_compat.report.text import render_by_adapter

    fleet = tmp_path / "fleet"
    (fleet / "broken").mkdir(parents=True)
    (fleet / "broken" / "adapter_config.json").write_text("[", encoding="utf-8")
    report = check_fleet(EXAMPLES / "serve.yaml", [fleet], model=EXAMPLES / "config.json")
    last = render_by_adapter(report).splitlines()[-1]
    assert last.startswith("inkling-compat [broken]: ") and "would first raise" not in last


# --- raise_for_problems -----------------------------------------------------------------------


def test_argparse_rule_raises_an_exception_not_systemexit():
    report = check(**example_arguments({"config": {"lora_backend": "triton-v2"}}))
    assert report.first.origin == "argparse"
    with pytest.raises(Exception) as raised:  # a caller's `except Exception` catches it
        report.raise_for_problems()
    exc = raised.value
    assert isinstance(exc, SglangWouldRaise) and not isinstance(exc, SystemExit)
    assert exc.sglang_class == "SystemExit"
    assert str(exc) == report.first.message and exc.problem is report.first and exc.report is report


def test_sglang_class_is_kept_where_it_is_an_exception():
    report = check(**example_arguments({"config": {"lora_backend": "csgmv"}}))
    with pytest.raises(ValueError) as raised:
        report.raise_for_problems()
    assert isinstance(raised.value, SglangWouldRaise)
    assert type(raised.value).__name__ == "ValueError" and raised.value.sglang_class == "ValueError"


def test_derived_crash_raises_the_derived_class():
    report = check(**example_arguments(BIND_CRASH))
    with pytest.raises(SglangWouldRaise) as raised:
        report.raise_for_problems()
    assert raised.value.problem.rule_id == "sink-pool-bind-crash"
    assert raised.value.sglang_class == report.headline.error_class


def test_own_finding_raises_with_no_sglang_class():
    report = check(**example_arguments({"config": {"max_lora_rnk": 16}}))
    with pytest.raises(SglangWouldRaise) as raised:
        report.raise_for_problems()
    assert type(raised.value) is SglangWouldRaise and raised.value.sglang_class is None
    assert str(raised.value).startswith("<config>: unrecognized arguments: ")


@pytest.mark.parametrize(
    "origin,error_class,expected",
    [
        ("sglang", "KeyError", KeyError),
        ("sglang", "FileNotFoundError", FileNotFoundError),
        ("sglang", "ImportError", ImportError),
        ("argparse", "SystemExit", None),
        ("derived", "logger.warning", None),
        ("sglang", "NoSuchClass", None),
    ],
)
def test_raised_class_and_text(origin, error_class, expected):
    report = Report(problems=[problem(origin=origin, error_class=error_class, message="'quant_algo'")])
    try:
        report.raise_for_problems()
    except Exception as exc:  # noqa: BLE001 - what is caught is under test
        assert isinstance(exc, SglangWouldRaise)
        assert str(exc) == "'quant_algo'"  # as is: KeyError would quote it once more
        if expected is not None:
            assert isinstance(exc, expected) and type(exc).__name__ == error_class
        else:
            assert type(exc) is SglangWouldRaise
    else:
        raise AssertionError("raise_for_problems did not raise")


def test_warnings_alone_raise_nothing():
    Report(problems=[problem(severity="warning")]).raise_for_problems()


# --- pickle weights: not checked, a warning -----------------------------------------------------


def test_pickle_adapter_is_not_checked_not_an_sglang_error(tmp_path, run_cli):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps(PEFT_CONFIG), encoding="utf-8")
    (folder / "adapter_model.bin").write_bytes(b"\x80\x04K\x01.")
    report = check(EXAMPLES / "serve.yaml", [str(folder)], model=EXAMPLES / "config.json")
    assert report.ok and report.errors == []
    [warning] = report.warnings
    assert warning.rule_id == "adapter-weights-pickle" and warning.origin == "inkling-compat"
    assert "not checked" in warning.message and "did not run for this adapter" in warning.message
    assert "pool fit, layer range" in warning.message and "sglang loads it" in warning.message
    result = run_cli("check", "--config", EXAMPLES / "serve.yaml", "--model", EXAMPLES / "config.json", "--adapter", folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning [old] adapter-weights-pickle (inkling-compat, adapter_load)" in result.stdout
    assert "  inkling-compat: adapter old: not checked: adapter_model.bin is a pickle" in result.stdout


# --- derived crash classes are torch's ------------------------------------------------------------


def _torch_raises(op) -> str:
    try:
        op()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__
    return "nothing"


def test_replay_crash_classes_are_what_torch_raises():
    """Each failure kind the set_lora_info replay reports, against the same torch op on meta
    tensors (as the fidelity oracle runs sglang)."""
    torch = pytest.importorskip("torch")

    def meta(*shape):
        return torch.empty(*shape, device="meta")

    # legacy: down A with 2 slots indexed by slot 2; gate-up B with an odd 2F viewed as [S, n, F, 2, 2R]
    legacy_index = set_lora_info.legacy_refresh_crash([[4, 1, 32, 64], [4, 2, 64, 16], [2, 2, 16, 32], [4, 1, 64, 16]], 2)
    legacy_view = set_lora_info.legacy_refresh_crash([[4, 1, 32, 64], [4, 2, 63, 16], [4, 2, 16, 31], [4, 1, 64, 16]], 2)
    assert legacy_index[0] == _torch_raises(lambda: meta(2, 2, 16, 32)[2])
    assert legacy_view[0] == _torch_raises(lambda: meta(4, 2 * 63, 32).view(4, 2, 31, 2, 32))
    # V2: zero-element reshape with -1, zero range step, permute of a 3-D buffer, view mismatch
    zero = set_lora_info.v2_sites_crash([[0, 2, 32, 64], [0, 2, 64, 16], [0, 2, 16, 32], [0, 2, 64, 16]], 2)
    step = set_lora_info.v2_sites_crash([[4, 1, 32, 64], [4, 2, 1, 16], [4, 2, 16, 1], [4, 1, 64, 16]], 2)
    permute = set_lora_info.v2_sites_crash([[4, 1, 32, 64], [4, 2, 64, 16], [4, 2, 16], [4, 1, 64, 16]], 2)
    assert zero[0] == _torch_raises(lambda: meta(0, 2, 64, 16).reshape(0, 2 * 2 * 16, -1))
    assert step[0] == _torch_raises(lambda: range(0, 10, 0))
    assert permute[0] == _torch_raises(lambda: meta(4, 2, 16).permute(0, 2, 1, 3))
    slot = set_lora_info.simulate("v2", 2, [[4, 1, 32, 64], [4, 2, 64, 16], [4, 2, 16, 32], [4, 1, 64, 16]], updated_slots=[9])
    assert slot.first.error_class == _torch_raises(lambda: meta(4, 2, 16, 32)[9]) == "IndexError"


def test_derived_bind_crash_is_reported_with_torchs_class():
    report = check(**example_arguments(BIND_CRASH))
    crash = next(p for p in report.problems if p.rule_id == "sink-pool-bind-crash")
    assert "IndexError: index 2 is out of bounds for dimension 0 with size 2" in crash.message
    assert crash.error_class == "IndexError"


def test_raised_exception_survives_pickle():
    """A process pool hands exceptions back pickled: the class made for ValueError must come
    back as itself, with its text and problem."""
    import pickle

    report = check(**example_arguments({"config": {"lora_backend": "csgmv"}}))
    try:
        report.raise_for_problems()
    except ValueError as raised:
        exc = raised
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is type(exc) and isinstance(again, SglangWouldRaise) and isinstance(again, ValueError)
    assert str(again) == str(exc) and again.problem == exc.problem and again.sglang_class == "ValueError"
    plain = pickle.loads(pickle.dumps(SglangWouldRaise("own finding")))
    assert type(plain) is SglangWouldRaise and str(plain) == "own finding"


def test_a_prediction_of_silent_misbehaviour_names_no_class(tmp_path, run_cli):
    """error_class "none" (nothing is raised, results are wrong: n_routed_experts 0 with MoE
    layers) is printed as its text alone, never "none: ...", in text and SARIF alike."""
    model = json.loads((EXAMPLES / "config.json").read_text())
    model["n_routed_experts"] = 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps(model))
    base = ("check", "--config", EXAMPLES / "serve.yaml", "--model", path, "--adapter", EXAMPLES / "adapter")
    text = run_cli(*base)
    assert text.returncode == 1 and "inkling-moe-no-routed-experts" in text.stdout
    assert "sglang accepts this and then: config.json has n_routed_experts 0" in text.stdout
    assert "none:" not in text.stdout
    sarif = json.loads(run_cli(*base, "--format", "sarif").stdout)
    assert [r["message"]["text"] for r in sarif["runs"][0]["results"]][0].startswith("config.json has n_routed_experts 0")
