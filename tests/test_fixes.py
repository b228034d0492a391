"""Machine-applicable fixes: every rule's `fix` removes its problem from its firing examples
(or says why it does not apply there), a fix never introduces a new error, `--fix` is
idempotent, `--diff` writes nothing, and edits keep the user's file as it was written."""

from __future__ import annotations

import copy
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.cli import main
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.engine.rule_schema import FixEdit, Rule
from inkling_compat.errors import RuleFileError
from inkling_compat.fix import apply_fixes
from inkling_compat.engine.fixes import Edit
from inkling_compat.fix.target import CannotEdit, Conflict, edit_text
from inkling_compat.testing.scenarios import deep_merge, example_arguments
from inkling_compat.testing.strategies import SinkSetup, sink_setups

REPO = Path(__file__).resolve().parent.parent
RULES = load_rules()
WITH_FIX = [c.rule for c in RULES if c.rule.fix is not None]
# Firing inputs for rules whose own firing examples the fix does not repair (the typo's
# suggested key is already set there, or there is no suggestion).
EXTRA_FIRE = {
    "unknown-config-key": [{"config": {"max_loaded_lora": 8}}],
    # LoRA on is the whole fix where rank and targets are set (the bare example sets neither).
    "lora-moe-runner-requires-enable-lora": [{"base": "v2", "config": {"enable_lora": False, "moe_runner_backend": "lora_triton"}}],
}


def _cases():
    for rule in WITH_FIX:
        versions = [(rule, rule.sglang_versions[0])] + [(rule.for_version(v.sglang_versions[0]), v.sglang_versions[0]) for v in rule.variants]
        for version_rule, version in versions:
            inputs = [ex.input for ex in version_rule.examples.fire] + EXTRA_FIRE.get(rule.id, [])
            for index, example in enumerate(inputs):
                yield pytest.param(rule, version, example, id=f"{rule.id}@{version}:{index}")


CASES = list(_cases())


def _fixed(example: dict, version: str, unsafe: bool = True):
    args = example_arguments(example)
    config = args.pop("config")
    if "launch" in example:  # a launch command: its words are edited (fix/argv_edit.py)
        from inkling_compat.fix.apply import apply_fixes_argv
        from inkling_compat.fix.command import launch_arity
        from inkling_compat.inputs.launch import parse_launch

        def run_words(tokens):
            return check(parse_launch(list(tokens)), args["adapter"], model=args["model"], platform=args["platform"], sglang_version=version)

        words = ["python", "-m", "sglang.launch_server", *map(str, example["launch"])]
        return run_words(words), apply_fixes_argv(words, run=run_words, arity=launch_arity(), unsafe=unsafe)

    def run(conf):
        return check(conf, args["adapter"], model=args["model"], platform=args["platform"], sglang_version=version)

    return run(config), apply_fixes(config, run=run, unsafe=unsafe)


@pytest.mark.parametrize("rule,version,example", CASES)
def test_fix_removes_its_problem_or_says_why_not(rule, version, example):
    before, result = _fixed(example, version)
    assert any(p.rule_id == rule.id for p in before.problems)
    mine = [f for f in result.fixes if f.rule_id == rule.id]
    assert mine, "the report lists the rule's fix"
    if any(f.applied for f in mine):
        assert not any(p.rule_id == rule.id for p in result.report.problems), [str(f) for f in mine]
    else:
        assert all(f.reason for f in mine), [str(f) for f in mine]


def test_every_fix_is_applied_somewhere():
    """For each rule with a fix, at least one of its firing inputs is fixed by it."""
    fixed = set()
    for case in CASES:
        rule, version, example = case.values
        _, result = _fixed(example, version)
        if any(f.rule_id == rule.id and f.applied for f in result.fixes) and not any(p.rule_id == rule.id for p in result.report.problems):
            fixed.add(rule.id)
    assert fixed == {r.id for r in WITH_FIX}, sorted({r.id for r in WITH_FIX} - fixed)


def test_safe_fixes_are_not_applied_as_unsafe_and_vice_versa():
    example = {"config": {"lora_backend": "csgmv", "max_loras_per_batch": 8, "max_loaded_loras": 2}}
    _, safe_only = _fixed(example, "0.5.23", unsafe=False)
    applied = {f.rule_id: f.safety for f in safe_only.fixes if f.applied}
    assert applied == {"sink-lora-multislot-needs-triton": "safe"}
    left = {f.rule_id: f.reason for f in safe_only.fixes if not f.applied}
    assert left["lora-max-loaded-loras-below-per-batch"] == "unsafe: applied only with --unsafe-fixes"
    _, both = _fixed(example, "0.5.23", unsafe=True)
    assert {f.rule_id for f in both.fixes if f.applied} == {"sink-lora-multislot-needs-triton", "lora-max-loaded-loras-below-per-batch"}
    assert both.config["max_loaded_loras"] == 8 and both.config["lora_backend"] == "triton"


def test_report_fixes_api():
    report = check({"lora_backend": "csgmv", "max_loras_per_batch": 8, "enable_lora": True, "max_lora_rank": 16, "lora_target_modules": ["all"]}, model=str(REPO / "examples/config.json"))
    fixes = report.fixes()
    assert [(f.rule_id, f.safety, [str(e) for e in f.edits], f.applicable) for f in fixes] == [
        ("sink-lora-multislot-needs-triton", "safe", ["set lora_backend = 'triton'"], True)
    ]
    assert fixes[0].to_dict()["edits"] == [{"kind": "set", "key": "lora_backend", "value": "triton"}]


# --- the rule field ------------------------------------------------------------------------


def _rule_data(**fix):
    raw = yaml.safe_load((REPO / "rules/sink/sink-lora-multislot-needs-triton.yaml").read_text())
    raw.pop("guards")
    raw["fix"] = fix
    return raw


def test_an_edit_is_one_kind():
    with pytest.raises(ValueError, match="exactly one of set, remove, rename"):
        FixEdit.model_validate({"set": "lora_backend", "remove": "lora_backend", "value": "1"})
    with pytest.raises(ValueError, match="`to` goes with `rename`"):
        FixEdit.model_validate({"rename": "lora_backend"})
    with pytest.raises(ValueError, match="has an \\{item\\} hole but the fix has no for_each"):
        Rule.model_validate(_rule_data(safety="safe", description="x", edits=[{"rename": "{item.key}", "to": "x"}]))


@pytest.mark.parametrize(
    "fix,field,reason",
    [
        ({"edits": [{"set": "lora_backend", "value": "facts.sink.no_such_fact"}]}, "fix.edits.0.value", "reads facts.sink.no_such_fact"),
        ({"edits": [{"set": "lora_bakend", "value": "'triton'"}]}, "fix.edits.0.set", "edits lora_bakend"),
        ({"when": "config.lora_backend ==", "edits": [{"remove": "lora_backend"}]}, "fix.when", "CEL does not compile"),
    ],
)
def test_a_broken_fix_is_refused_when_the_rules_load(fix, field, reason):
    from inkling_compat.engine.paths import check_fix
    from inkling_compat.engine.rule_schema import FixSpec

    with pytest.raises(RuleFileError) as err:
        check_fix(FixSpec.model_validate(dict(safety="safe", description="x", **fix)), "r.yaml")
    assert err.value.field == field and reason in err.value.reason


# --- the bundled broken example, through the command ---------------------------------------


@pytest.fixture
def broken(tmp_path, monkeypatch):
    for name in ("serve.yaml", "adapter_pool.yaml"):
        shutil.copy(REPO / "examples/broken" / name, tmp_path / name)
    shutil.copy(REPO / "examples/config.json", tmp_path / "config.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


ARGS = ["check", "--config", "serve.yaml", "--adapter", "adapter_pool.yaml", "--model", "config.json", "--isolated", "--color", "never"]
BROKEN_DIFF = """--- a/serve.yaml
+++ b/serve.yaml
@@ -5,3 +5,4 @@
 max_lora_rnk: 32
 lora_target_modules: [all]
 dtype: bfloat16
+lora_backend: triton
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_diff_on_broken_example_writes_nothing(broken, capsys):
    before = _files(broken)
    assert main(ARGS + ["--diff"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(BROKEN_DIFF)
    assert "would fix: 1 (serve.yaml)\n  sink-lora-multislot-needs-triton (safe) (line 8): set lora_backend = 'triton'" in out
    assert "unknown-config-key (safe): rename max_lora_rnk -> max_lora_rank - max_lora_rank is set too" in out
    assert _files(broken) == before  # byte-identical, and no file added


def test_fix_on_broken_example_leaves_what_no_safe_fix_solves(broken, capsys):
    original = (broken / "serve.yaml").read_text()
    pool = (broken / "adapter_pool.yaml").read_bytes()
    assert main(ARGS + ["--fix"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("fixed: 1 (serve.yaml)\n  sink-lora-multislot-needs-triton (safe) (line 8): set lora_backend = 'triton'\n")
    assert (broken / "serve.yaml").read_text() == original + "lora_backend: triton\n"  # what --diff showed
    assert (broken / "adapter_pool.yaml").read_bytes() == pool  # adapter files are never modified
    report = check("serve.yaml", "adapter_pool.yaml", model="config.json")
    assert [p.rule_id for p in report.problems] == ["unknown-config-key", "sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"]
    assert [f.rule_id for f in report.fixes() if f.applicable and f.safety == "safe"] == ["unknown-config-key"]  # a conflict, refused when applied
    # Idempotent: a second run changes nothing.
    fixed = _files(broken)
    assert main(ARGS + ["--fix"]) == 1
    assert capsys.readouterr().out.startswith("fixed: 0\n")
    assert _files(broken) == fixed
    assert main(ARGS + ["--diff"]) == 1  # exit 1: errors remain; no diff printed
    assert not capsys.readouterr().out.startswith("---")


def test_fix_json_output_lists_fixes(broken, capsys):
    import json

    assert main(ARGS + ["--fix", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(f["rule_id"], f["applied"]) for f in document["fixes"]] == [("sink-lora-multislot-needs-triton", True), ("unknown-config-key", False)]
    assert [p["rule_id"] for p in document["problems"]] == ["unknown-config-key", "sink-pool-rank-mismatch", "sink-pool-intermediate-mismatch"]


def test_fix_keeps_the_file_mode(broken):
    os.chmod(broken / "serve.yaml", 0o640)
    result = apply_fixes(str(broken / "serve.yaml"), str(broken / "adapter_pool.yaml"), model=str(broken / "config.json"))
    assert result.written
    assert stat.S_IMODE(os.stat(broken / "serve.yaml").st_mode) == 0o640
    assert sorted(p.name for p in broken.iterdir()) == ["adapter_pool.yaml", "config.json", "serve.yaml"]  # no temporary left


def test_anchored_file_gets_the_diff_only(tmp_path):
    path = tmp_path / "serve.yaml"
    text = "max_lora_rank: &r 16\nenable_lora: true\nmax_loras_per_batch: 8\nlora_target_modules: [all]\n"
    path.write_text(text)
    result = apply_fixes(str(path), model=str(REPO / "examples/config.json"))
    assert not result.written and path.read_text() == text
    (fix,) = [f for f in result.fixes if f.rule_id == "sink-lora-multislot-needs-triton"]
    assert not fix.applied and "anchors/aliases" in fix.reason
    assert "+lora_backend: triton" in result.rewrite_diff


# --- editing the user's text ---------------------------------------------------------------

DASHED = """# sglang-style flags, as `--max-lora-rank` spells them
enable-lora: true        # LoRA on
max-lora-rank: 16
max-loras-per-batch: 8
lora-target-modules:
  - gate_up_proj
  - down_proj
env:
  SGLANG_OPT_LINEARIZED_SHARED_SINK: '1'
"""


def test_dash_style_yaml_keeps_spelling_comments_and_layout():
    out = edit_text(DASHED, [Edit("set", "lora_backend", "triton"), Edit("set", "max_lora_rank", 32)], is_json=False)
    assert out == DASHED.replace("max-lora-rank: 16", "max-lora-rank: 32") + "lora-backend: triton\n"
    out = edit_text(DASHED, [Edit("set", "lora_target_modules", ["gate_up_proj", "down_proj", "qkvr"])], is_json=False)
    assert "lora-target-modules:\n  - gate_up_proj\n  - down_proj\n  - qkvr\nenv:" in out
    out = edit_text(DASHED, [Edit("remove", "max_loras_per_batch"), Edit("rename", "enable_lora", to="enable_lora")], is_json=False)
    assert out == DASHED.replace("max-loras-per-batch: 8\n", "")
    out = edit_text(DASHED, [Edit("set", "env.SGLANG_OPT_LINEARIZED_SHARED_SINK", "0")], is_json=False)
    assert "SGLANG_OPT_LINEARIZED_SHARED_SINK: '0'" in out  # quoting kept


def test_yaml_refusals():
    with pytest.raises(CannotEdit, match="anchors/aliases"):
        edit_text("a: &x 1\nb: *x\n", [Edit("set", "b", 2)], is_json=False)
    with pytest.raises(CannotEdit, match="flow style"):
        edit_text("{enable_lora: true}\n", [Edit("set", "lora_backend", "triton")], is_json=False)
    with pytest.raises(CannotEdit, match="given twice"):
        edit_text("max-lora-rank: 8\nmax_lora_rank: 16\n", [Edit("set", "max_lora_rank", 32)], is_json=False)
    with pytest.raises(Conflict, match="set too"):
        edit_text("max_lora_rnk: 8\nmax_lora_rank: 16\n", [Edit("rename", "max_lora_rnk", to="max_lora_rank")], is_json=False)


JSON_CONFIG = """{
    "enable_lora": true,
    "max_lora_rank": 16,
    "lora_target_modules": ["all"],
    "env": {"SGLANG_OPT_LINEARIZED_SHARED_SINK": true}
}
"""


def test_json_edits_keep_layout():
    out = edit_text(JSON_CONFIG, [Edit("set", "lora_backend", "triton")], is_json=True)
    assert out == JSON_CONFIG.replace("true}\n}", 'true},\n    "lora_backend": "triton"\n}')
    out = edit_text(JSON_CONFIG, [Edit("remove", "max_lora_rank"), Edit("set", "env.SGLANG_X", False)], is_json=True)
    assert out == JSON_CONFIG.replace('    "max_lora_rank": 16,\n', "").replace("true}", 'true, "SGLANG_X": false}')


def test_fix_on_a_json_config_file(tmp_path):
    path = tmp_path / "serve.json"
    path.write_text('{\n  "enable_lora": true,\n  "max_lora_rank": 16,\n  "lora_target_modules": ["all"]\n}\n')
    result = apply_fixes(str(path), model=str(REPO / "examples/config.json"))
    assert result.written
    assert path.read_text() == '{\n  "enable_lora": true,\n  "max_lora_rank": 16,\n  "lora_target_modules": ["all"],\n  "lora_backend": "triton"\n}\n'
    assert check(str(path), model=str(REPO / "examples/config.json")).ok


def test_fix_on_bundled_example_is_a_no_op(tmp_path):
    for name in ("serve.yaml", "adapter_pool.yaml"):
        shutil.copy(REPO / "examples" / name, tmp_path / name)
    before = _files(tmp_path)
    result = apply_fixes(str(tmp_path / "serve.yaml"), str(tmp_path / "adapter_pool.yaml"), model=str(REPO / "examples/config.json"))
    assert result.diff == "" and not result.written and _files(tmp_path) == before


# --- property: a fix never introduces an error ---------------------------------------------

FIXABLE_CONFIGS = [
    ex.input["config"] for rule in WITH_FIX for ex in rule.examples.fire if "config" in ex.input and ex.input.get("base", "legacy") == "legacy"
]


# sglang stops at `max_loras_per_batch must be positive` before the overlap-loading assertion:
# that rule's fix (twice the slots) is computed only from a positive slot count.
NEGATIVE_SLOTS_WITH_OVERLAP = [{"max_loras_per_batch": -1}, {"enable_lora_overlap_loading": True}]
SMALLEST_SETUP = SinkSetup(n=1, hidden=64, intermediate=16, tp=1, slots=1, rank=1, shared_outer=False, sink_class="legacy", legacy_backend="triton")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sink_setups(), st.lists(st.sampled_from(FIXABLE_CONFIGS), min_size=1, max_size=3), st.booleans())
@example(SMALLEST_SETUP, NEGATIVE_SLOTS_WITH_OVERLAP, True)
@example(SMALLEST_SETUP, [{"max_loras_per_batch": -1}, {"enable_lora_overlap_loading": True, "max_loaded_loras": 9}], True)
def test_fixing_never_introduces_an_error(setup, faults, unsafe):
    config = setup.config()
    for fault in faults:
        config = deep_merge(config, copy.deepcopy(fault))
    args = dict(adapter=setup.adapter(), model=setup.model())
    before = check(config, **args)
    result = apply_fixes(config, unsafe=unsafe, **args)
    after = check(result.config, **args)
    hidden = {rid for reason, ids in before.coverage.reasons.items() if reason.startswith("not reached") for rid in ids}
    new = {p.rule_id for p in after.errors} - {p.rule_id for p in before.errors} - hidden
    assert not new, (config, result.config, new)
    assert len(after.errors) <= len(before.errors) + len(hidden)
    if len(before.errors) <= 1:  # safe: only makes it load (with another fault beside it, the loop may take it back)
        assert not any(f.safety == "safe" and "taken back" in (f.reason or "") for f in result.fixes)
    again = apply_fixes(result.config, unsafe=unsafe, **args)  # idempotent
    assert again.config == result.config and not again.applied
    # The same fixes made in a YAML file, in place, read back as the dict the dict editor made.
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "serve.yaml")
        Path(path).write_text(yaml.safe_dump(config, sort_keys=False, default_flow_style=None))
        in_file = apply_fixes(path, unsafe=unsafe, **args)
        assert yaml.safe_load(Path(path).read_text()) == result.config
        assert [f.rule_id for f in in_file.applied] == [f.rule_id for f in result.applied]


@pytest.mark.fidelity
def test_fixes_of_negative_slots_with_overlap_loading_make_a_config_sglang_accepts():
    """Both fixes made (unsafe): the slots back to sglang's default, --max-loaded-loras twice
    that, and sglang's own check_lora_server_args (the 0.5.23 wheel's) accepts the result."""
    from oracle import sglang_server_args
    from oracle.require import load_or_skip

    oracle = load_or_skip(sglang_server_args.load, "server-args")
    config = SMALLEST_SETUP.config()
    for fault in NEGATIVE_SLOTS_WITH_OVERLAP:
        config = deep_merge(config, fault)
    args = dict(adapter=SMALLEST_SETUP.adapter(), model=SMALLEST_SETUP.model())
    first = check(config, **args)
    overlap = next(f for f in first.fixes() if f.rule_id == "lora-overlap-loading-max-loaded-loras")
    assert not overlap.applicable and "max_loras_per_batch > 0" in overlap.reason
    result = apply_fixes(config, unsafe=True, **args)
    assert [f.rule_id for f in result.applied] == ["lora-max-loras-per-batch-not-positive", "lora-overlap-loading-max-loaded-loras"]
    assert "max_loras_per_batch" not in result.config and result.config["max_loaded_loras"] == 16
    env = {"SGLANG_EXPERIMENTAL_LORA_OPTI": False, "SGLANG_ENABLE_OVERLAP_PLAN_STREAM": False, "SGLANG_RAGGED_VERIFY_MODE": "static"}
    server_args = {k: v for k, v in result.config.items() if k != "env"}
    assert oracle.check(server_args, env, False).ok
    assert oracle.check({k: v for k, v in config.items() if k != "env"}, env, False).message == "max_loras_per_batch must be positive"
    assert not [p.rule_id for p in check(result.config, **args).errors if p.rule_id.startswith("lora-")]


# --- launch commands -----------------------------------------------------------------------

from inkling_compat.fix.argv_edit import edit_argv  # noqa: E402

LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--enable-lora", "--max-lora-rank", "8", "--lora-target-modules", "gate_up_proj", "down_proj", "--tp", "2"]


def test_argv_set_replaces_in_place_and_appends_new_flags():
    out = edit_argv(LAUNCH, [Edit("set", "max_lora_rank", 32), Edit("set", "lora_backend", "triton")])
    assert out.tokens == tuple(LAUNCH[:7]) + ("32",) + tuple(LAUNCH[8:]) + ("--lora-backend", "triton")
    out = edit_argv(LAUNCH, [Edit("set", "lora_target_modules", ["gate_up_proj", "down_proj", "qkvr"])])
    assert out.tokens == tuple(LAUNCH[:11]) + ("qkvr",) + tuple(LAUNCH[11:])


def test_argv_equals_form_underscores_and_store_true():
    tokens = ["--max_lora_rank=8", "--enable-lora", "--lora-backend=csgmv"]
    out = edit_argv(tokens, [Edit("set", "max_lora_rank", 16), Edit("set", "lora_backend", "triton"), Edit("set", "enable_lora", False)])
    assert out.tokens == ("--max_lora_rank=16", "--lora-backend=triton")
    out = edit_argv(["--tp", "2"], [Edit("set", "enable_lora", True), Edit("remove", "tp"), Edit("remove", "max_lora_rank")])
    assert out.tokens == ("--enable-lora",)


def test_argv_rename_and_what_is_not_an_argument():
    out = edit_argv(["--max-lora-rnk", "8"], [Edit("rename", "max_lora_rnk", to="max_lora_rank"), Edit("set", "env.SGLANG_X", True)])
    assert out.tokens == ("--max-lora-rank", "8")
    assert [(e.key, why) for e, why in out.skipped] == [("env.SGLANG_X", "SGLANG_X is an environment variable: set it in the launch environment")]
    out = edit_argv(["--max-lora-rnk", "8", "--max-lora-rank", "16"], [Edit("rename", "max_lora_rnk", to="max_lora_rank")])
    assert out.tokens == ("--max-lora-rnk", "8", "--max-lora-rank", "16") and "given too" in out.skipped[0][1]
    out = edit_argv(["--dtype", "half", "--dtype", "float16"], [Edit("set", "dtype", "bfloat16")], {"dtype": "one"})
    assert "given 2 times" in out.skipped[0][1]


def test_docs_list_of_fixes_is_current():
    from inkling_compat.publish.fixes_doc import DOC, rendered

    text = DOC.read_text(encoding="utf-8")
    assert rendered(text) == text, "run python -m inkling_compat.publish.fixes_doc"


def test_a_fix_whose_new_error_has_its_own_fix_is_kept(tmp_path):
    """Adding down_proj to the targets attaches LoRA to the legacy sink, whose multi-slot
    backend check then fires: that error has its own safe fix, so both are made."""
    path = tmp_path / "serve.yaml"
    path.write_text("enable_lora: true\nmax_lora_rank: 8\nlora_target_modules:\n  - gate_up_proj\n")
    adapter, model = str(REPO / "examples/adapter"), str(REPO / "examples/config.json")
    assert {p.rule_id for p in check(str(path), adapter, model=model).errors} == {"adapter-incompatible-with-pool"}
    safe = apply_fixes(str(path), adapter, model=model, write=False)
    assert safe.diff == "" and [f.reason for f in safe.fixes] == ["unsafe: applied only with --unsafe-fixes"]
    result = apply_fixes(str(path), adapter, model=model, unsafe=True)
    assert [f.rule_id for f in result.applied] == ["adapter-incompatible-with-pool", "sink-lora-multislot-needs-triton"]
    assert path.read_text() == "enable_lora: true\nmax_lora_rank: 8\nlora_target_modules:\n  - gate_up_proj\n  - down_proj\nlora_backend: triton\n"
    # The file is one sglang's own --config reads: --experts-shared-outer-loras
    # (BooleanOptionalAction) is a flag its ConfigArgumentMerger refuses, so it is not written.
    (left,) = result.remaining
    assert left.rule_id == "adapter-shared-outer-in-per-expert-pool" and "give that flag on the command line" in left.reason
    assert [p.rule_id for p in result.report.problems] == ["adapter-shared-outer-in-per-expert-pool"]
    path.write_text("enable_lora: true\nmax_lora_rank: 8\nlora_target_modules: [gate_up_proj]\nlora_paths: [a=/a]\n")  # the project's own format
    result = apply_fixes(str(path), adapter, model=model, unsafe=True)
    assert "experts_shared_outer_loras: true" in path.read_text()


def test_the_loop_over_a_launch_command():
    """apply_fixes_argv with a stand-in parser (flags -> a config dict) until the launch-command
    input is wired: the backend flag is appended, the command's other tokens kept."""
    from inkling_compat.fix import apply_fixes_argv

    model = str(REPO / "examples/config.json")
    arity = {"enable_lora": "flag", "lora_target_modules": "many"}

    def parse(tokens):
        config, index = {}, 0
        while index < len(tokens):
            key = tokens[index].lstrip("-").replace("-", "_")
            if arity.get(key) == "flag":
                config[key], index = True, index + 1
            elif arity.get(key) == "many":
                end = index + 1
                while end < len(tokens) and not tokens[end].startswith("--"):
                    end += 1
                config[key], index = list(tokens[index + 1 : end]), end
            else:
                config[key], index = int(tokens[index + 1]) if tokens[index + 1].isdigit() else tokens[index + 1], index + 2
        return config

    tokens = ["--enable-lora", "--max-lora-rank", "16", "--lora-target-modules", "all", "--max-loras-per-batch", "8"]
    result = apply_fixes_argv(tokens, run=lambda t: check(parse(t), model=model), arity=arity)
    assert result.config == tuple(tokens) + ("--lora-backend", "triton")
    assert [f.rule_id for f in result.applied] == ["sink-lora-multislot-needs-triton"] and result.report.ok
    assert result.diff.splitlines()[-1] == "+" + result.after


def test_a_launch_command_is_printed_corrected(tmp_path, capsys, monkeypatch):
    """`check --diff/--fix -- <launch command>` edits the command's words (a launch file is
    never rewritten): the multi-slot legacy sink gets the Triton backend it requires."""
    from inkling_compat.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    command = ["python", "-m", "sglang.launch_server", "--model-path", "examples/model", "--enable-lora", "--lora-backend", "csgmv",
               "--max-loras-per-batch", "4", "--max-lora-rank", "16", "--lora-target-modules", "gate_up_proj", "down_proj",
               "--experts-shared-outer-loras", "--lora-paths", "support=examples/adapter"]
    assert main(["check", "--diff", "--", *command]) == 1
    out = capsys.readouterr().out
    assert "-python -m sglang.launch_server" in out and "--lora-backend triton" in out.split("+python", 1)[1]
    launch = tmp_path / "launch.sh"
    launch.write_text("exec " + " ".join(command) + "\n")
    before = launch.read_bytes()
    assert main(["check", "--fix", "--launch", str(launch)]) == 0
    out = capsys.readouterr().out
    assert "corrected command: " in out and "--lora-backend triton" in out and "ok: no errors" in out
    assert launch.read_bytes() == before
