"""The shipped rules come from a read-only artifact inside the package (engine/compiled_rules.py),
never from a file a user can write: the artifact equals a fresh compile of rules/, a stale one is
not used, other folders are compiled from their files, and nothing in the cache folders (crafted
rule sets, parse caches, FIFOs, links to devices) changes a verdict or blocks a run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inkling_compat.engine import compiled_rules, coverage, definitions, paths
from inkling_compat.engine.rule_compile import reads_lora_paths_by_name
from inkling_compat.engine.rule_load import compile_folder, load_rules, rules_dir
from inkling_compat.engine.rule_order import check_order
from inkling_compat.errors import RuleFileError
from inkling_compat.publish import compiled_rules as publish

ROOT = Path(__file__).resolve().parent.parent
RULE = "adapter-weights-pickle"
BROKEN = ["check", "--config", "examples/broken/serve.yaml", "--model", "examples/config.json",
          "--adapter", "examples/broken/adapter_pool.yaml", "--format", "json", "--strict"]  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh():
    load_rules.cache_clear()
    yield
    load_rules.cache_clear()


def _reading(c):
    """What the plan reads of a rule: held by a rule of the artifact, worked out for the others."""
    reads = c.reads if c.reads is not None else coverage.rule_reads(c)
    by_name = c.by_name if c.by_name is not None else reads_lora_paths_by_name((c,))
    return (c.rank, sorted(c.when_paths), sorted(c.gate_paths), sorted(c.cel_paths), sorted(c.fields), c.when_conjuncts, c.exact_params, reads, by_name)


def _snapshot(compiled):
    out = []
    for c in compiled:
        versions = {v: (None if w is None else (w.file, w.expression, sorted(w.param_programs), sorted(w.paths), w.rule.model_dump(), _reading(w)))
                    for v, w in c._versions.items()}  # fmt: skip
        # (as JSON text: key order counts too, the rule pages print the examples in it)
        out.append((c.file, c.expression, sorted(c.paths), sorted(c.param_programs), json.dumps(c.rule.model_dump(), default=str), versions, _reading(c)))
    return out


def test_the_artifact_equals_a_fresh_compile():
    assert publish.is_current(), f"inkling_compat/data/{compiled_rules.ARTIFACT} is stale: run `{compiled_rules.COMMAND}`"


def test_the_shipped_rules_load_from_the_artifact_as_from_their_files(monkeypatch):
    fresh = _snapshot(load_rules(str(rules_dir()) + "/"))  # another folder string: compiled from the files
    load_rules.cache_clear()

    def refuse(*args, **kwargs):
        raise AssertionError("the shipped rules were compiled from their files although the artifact is current")

    monkeypatch.setattr(definitions, "load_definitions", refuse)
    monkeypatch.setattr(paths, "check_rule_paths", refuse)
    assert _snapshot(load_rules()) == fresh


def test_a_rule_reads_in_a_version_by_one_definition():
    """The validated model and the record a check reads merge a variant by the same code, over
    the same fields (the snapshot above: with the same result for every shipped rule)."""
    from inkling_compat.engine import rule_record, rule_schema

    assert rule_schema.Rule.for_version is rule_record.Rule.for_version is rule_record.RuleReading.for_version
    assert tuple(rule_schema.Variant.model_fields) == ("sglang_versions", *rule_record.VARIANT_FIELDS)
    assert tuple(name for name, _, _ in rule_record.Variant.FIELDS) == ("sglang_versions", *rule_record.VARIANT_FIELDS)


def test_the_shipped_rules_load_without_pydantic_or_compiling_cel():
    """A check reads the artifact into plain records (engine/rule_record.py): no rule is
    validated again and no CEL program is compiled until a check evaluates the rule."""
    code = (
        "import sys\n"
        "from inkling_compat.engine import cel\n"
        "from inkling_compat.engine.rule_load import load_rules\n"
        "compiled = []\n"
        "real = cel.compile\n"
        "cel.compile = lambda text: compiled.append(text) or real(text)\n"
        "rules = load_rules()\n"
        "assert len(rules) > 100, len(rules)\n"
        "assert 'pydantic' not in sys.modules and 'yaml' not in sys.modules, sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml'))\n"
        "assert compiled == [], compiled[:3]\n"
        "rules[0].when_program\n"
        "assert len(compiled) == 1\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_check_parses_the_whole_data_only_of_the_rules_it_reports():
    """The artifact's rule records hold the fields a check reads of every rule and variant; a
    rule's other fields (message, fixes, examples ...) are parsed from its own line when first
    read, and read as the whole record's: a load parses none, a check those it reports."""
    code = (
        "from inkling_compat.engine import compiled_rules\n"
        "from inkling_compat.engine.rule_load import load_rules\n"
        "parsed = []\n"
        "real = compiled_rules.Stored.whole\n"
        "compiled_rules.Stored.whole = lambda self, index: parsed.append(self.rules[index][0]) or real(self, index)\n"
        "from inkling_compat.api import check\n"
        "rules = load_rules()\n"
        "assert any(len({id(v) for v in c._versions.values() if v is not None}) > 1 for c in rules)\n"
        "assert parsed == [], parsed\n"
        "report = check(argv=['python', '-m', 'sglang.launch_server', '--model-path', 'examples/config.json', '--enable-lora', '--lora-target-modules', 'nonsense'])\n"
        "fired = {p.rule_id + '.yaml' for p in report.problems}\n"
        "assert fired and set(parsed) <= fired, (sorted(fired), sorted(set(parsed)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _write(folder, module, wholes, monkeypatch):
    path = folder / compiled_rules.ARTIFACT
    path.write_text(module, encoding="utf-8")
    (folder / compiled_rules.WHOLES).write_text(wholes, encoding="utf-8")
    monkeypatch.setattr(compiled_rules, "artifact_path", lambda: str(path))
    return path


@pytest.mark.parametrize("damage", ["line", "generation", "missing"])
def test_a_damaged_line_of_the_artifact_is_said_with_the_rule(tmp_path, monkeypatch, damage):
    compiled, expanded = compile_folder(rules_dir())
    module, wholes = compiled_rules.render(compiled_rules.rules_digest(rules_dir()), check_order(compiled), dict(expanded))
    lines = wholes.split("\n")
    first = 1 + json.loads(lines[0])["rules"]  # (the head, the check lines, then each rule's whole data)
    name = json.loads(lines[first])[0]
    if damage == "line":
        lines[first] = "[" + json.dumps(name) + ", {"
    elif damage == "generation":  # (a data file of another generation than the module's)
        lines[0] = lines[0].replace(compiled_rules.rules_digest(rules_dir()), "0" * 32)
    _write(tmp_path, module, "\n".join(lines), monkeypatch)
    if damage == "missing":
        (tmp_path / compiled_rules.WHOLES).unlink()
    first = load_rules()[0]
    assert first.file == name and first.rule.id  # (the fields a check reads: in the module)
    with pytest.raises(RuleFileError, match=name):
        first.rule.message


def test_a_variant_reads_its_other_fields_from_its_rules_data():
    """A variant's record holds the fields a check reads as the rule merged for its versions;
    its other fields are the merged whole record's, parsed when first read."""
    c = next(c for c in load_rules() if len({id(v) for v in c._versions.values() if v is not None}) > 1)
    variant = next(v for v in c._versions.values() if v is not None and v is not c)
    merged = c.rule.for_version(variant.rule.sglang_versions[0])
    assert variant.rule.model_dump() == merged.model_dump() and variant.rule.variants == []


def test_without_bytecode_the_rows_come_from_the_data_file(tmp_path, monkeypatch):
    """Where the module has no current bytecode and none may be written (PYTHONDONTWRITEBYTECODE),
    its rows are read from the data file's JSON lines (not its source compiled at every start):
    the same rows, the same rules."""
    fresh = _snapshot(load_rules(str(rules_dir()) + "/"))
    load_rules.cache_clear()
    path = _write(tmp_path, *(Path(p).read_text(encoding="utf-8") for p in (compiled_rules.artifact_path(), compiled_rules.wholes_path())), monkeypatch)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with pytest.raises(compiled_rules._NoBytecode):
        compiled_rules._constants(str(path))
    lines, rows, digest = compiled_rules._json_rows()
    assert _snapshot(load_rules()) == fresh
    load_rules.cache_clear()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert compiled_rules._constants(str(path))[:2] == (rows, digest)  # (its bytecode written now; the plan is worked out from the JSON rows)
    assert _snapshot(load_rules()) == fresh


def test_the_plan_the_artifact_holds_is_the_one_worked_out():
    """The default release's plan the module holds (engine/plan.Plan.held), read back at every
    start instead of worked out, is the plan of the rules compiled from their files, and of the
    artifact's rules when worked out (a plain tuple of them holds no plan)."""
    from inkling_compat.engine.plan import Plan
    from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION

    shipped = load_rules()
    assert set(shipped.plans) == {SGLANG_DEFAULT_VERSION}
    compiled, _ = compile_folder(rules_dir())
    plans = [Plan(rules, SGLANG_DEFAULT_VERSION) for rules in (shipped, tuple(shipped), tuple(check_order(compiled)))]

    def seen(plan):
        reads = {scope: [tuple(frozenset(names) for names in row) for row in rows] for scope, rows in plan.reads.items()}
        return (
            [c.rule.id for c in plan.ordered], plan.global_ids, plan.adapter_ids, plan.tree, plan.adapter_tree, plan.adapter_global_tree,
            plan.lora_paths_by_name, plan.item_keys, plan.adapter_keys, reads,
        )  # fmt: skip

    assert seen(plans[0]) == seen(plans[1]) == seen(plans[2])
    assert plans[0].held() == plans[1].held() == plans[2].held() == shipped.plans[SGLANG_DEFAULT_VERSION]
    assert all(type(row) is tuple for rows in plans[0].reads.values() for row in rows)  # (read back: not worked out)


def _artifact_with(tmp_path, monkeypatch, digest, condition="false"):
    compiled, expanded = compile_folder(rules_dir())
    for name, data in expanded:
        if name == f"{RULE}.yaml":
            data["condition"] = condition
    return _write(tmp_path, *compiled_rules.render(digest, check_order(compiled), dict(expanded)), monkeypatch)


def test_a_stale_artifact_is_not_used(tmp_path, monkeypatch):
    _artifact_with(tmp_path, monkeypatch, "0" * 32)
    (rule,) = [c for c in load_rules() if c.rule.id == RULE]
    assert rule.rule.condition != "false"


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b'{"format": 1, "digest": 5, "rules": 7}', b"\xff\xfe", b"FORMAT = 4\nDIGEST = 'x'\nRULES = 5\n",
     b"FORMAT = 4\nDIGEST = 'x'\nRULES = (('a.yaml', (), {}),)\n", b"FORMAT = 3\nDIGEST = 'x'\nRULES = ()\n", b"raise SystemExit(3)\n",
     b"FORMAT = 4\nDIGEST = 'x'\nRULES = (lambda: print('ran'))()\n"],
)  # fmt: skip
def test_an_unreadable_artifact_compiles_the_files(tmp_path, monkeypatch, content):
    path = tmp_path / compiled_rules.ARTIFACT
    path.write_bytes(content)
    monkeypatch.setattr(compiled_rules, "artifact_path", lambda: path)
    loaded = _snapshot(load_rules())
    load_rules.cache_clear()
    assert loaded == _snapshot(load_rules(str(rules_dir()) + "/"))


def test_an_artifact_that_is_a_fifo_or_device_is_never_read(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        monkeypatch.setattr(compiled_rules, "artifact_path", lambda target=target: target)
        assert compiled_rules.load(rules_dir()) is None


def test_another_folder_is_compiled_from_its_files(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    (path,) = folder.rglob(f"{RULE}.yaml")
    path.write_text(path.read_text(encoding="utf-8").replace("title:", "title: EDITED", 1), encoding="utf-8")
    (rule,) = [c for c in load_rules(str(folder)) if c.rule.id == RULE]
    assert rule.rule.title.startswith("EDITED")


def _cli(env_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, INKLING_COMPAT_CACHE_DIR=str(env_dir / "cache"), XDG_CACHE_HOME=str(env_dir / "xdg"), HOME=str(env_dir / "home"))
    env.pop("INKLING_COMPAT_NO_CACHE", None)
    return subprocess.run([sys.executable, "-m", "inkling_compat", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def _verdict(done: subprocess.CompletedProcess[str]) -> tuple[int, list[tuple[str, str]]]:
    report = json.loads(done.stdout)
    return done.returncode, sorted((p["rule_id"], p["severity"]) for p in report["problems"])


def _craft_every_cache(folder: Path) -> None:
    """What the tool's earlier caches looked like, each crafted to pass every check, plus a FIFO
    and a link to a device under each name a cache could have."""
    for base in (folder / "cache", folder / "xdg" / "inkling-compat", folder / "home" / ".cache" / "inkling-compat"):
        sets = base / "rule-sets-v1"
        sets.mkdir(parents=True)
        _, expanded = compile_folder(rules_dir())
        crafted = [[name, dict(data, condition="false")] for name, data in expanded]
        (sets / ("0" * 32 + ".json")).write_text(json.dumps(crafted), encoding="utf-8")
        (base / "rules-v1-pyyaml6.0.json").write_text(json.dumps({"x": json.dumps({"condition": "false"})}), encoding="utf-8")
        os.mkfifo(base / "rules-v1-pyyaml6.0.1.json")
        os.symlink("/dev/zero", base / "rules-v1-pyyaml6.0.2.json")
        os.mkfifo(base / compiled_rules.ARTIFACT)


def test_nothing_in_a_cache_folder_changes_a_verdict_and_nothing_is_written(tmp_path):
    clean = tmp_path / "clean"
    clean.mkdir()
    expected = _verdict(_cli(clean, *BROKEN))
    assert expected[0] == 1 and expected[1]
    assert not any(p.is_file() for p in clean.rglob("*")), "the checker wrote a file into a cache folder"
    crafted = tmp_path / "crafted"
    _craft_every_cache(crafted)
    before = sorted(str(p.relative_to(crafted)) for p in crafted.rglob("*"))
    assert _verdict(_cli(crafted, *BROKEN)) == expected
    assert sorted(str(p.relative_to(crafted)) for p in crafted.rglob("*")) == before


def test_an_installed_copy_uses_its_artifact_without_hashing_the_rule_files(monkeypatch):
    """A wheel's rules are inside the package folder: its build checked the artifact (setup.py),
    so a start reads no rule file; a source checkout's (beside the package) are hashed."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(compiled_rules.__file__)))
    assert compiled_rules.installed(os.path.join(package, "rules"))
    assert not compiled_rules.installed(rules_dir())  # (the tests run from the checkout)

    def refuse(folder):
        raise AssertionError("an installed copy hashed its rule files")

    monkeypatch.setattr(compiled_rules, "rules_digest", refuse)
    monkeypatch.setattr(compiled_rules, "installed", lambda folder: True)
    stored = compiled_rules.load(rules_dir())
    assert stored is not None and len(stored.rules) == len(load_rules())


def test_the_build_refuses_a_stale_artifact(tmp_path, monkeypatch):
    """setup.py's build step (`check_artifact`) passes on the checkout's artifact and refuses one
    that is not current for the rules and the code (what an installed copy then trusts)."""
    source = (ROOT / "setup.py").read_text(encoding="utf-8").replace('setup(packages=packages(), cmdclass={"build_py": BuildPy})', "")
    namespace: dict = {"__file__": str(ROOT / "setup.py")}
    exec(compile(source, "setup.py", "exec"), namespace)
    namespace["check_artifact"]()
    artifact = Path(compiled_rules.artifact_path()).read_bytes()
    assert compiled_rules.is_current_for(rules_dir(), artifact)
    stale = _artifact_with(tmp_path, monkeypatch, "0" * 32).read_bytes()
    assert not compiled_rules.is_current_for(rules_dir(), stale)
    assert not compiled_rules.is_current_for(rules_dir(), b"")


def test_the_digest_is_hashlibs_blake2b_without_importing_hashlib():
    import hashlib

    done = subprocess.run([sys.executable, "-c", "import sys\nfrom inkling_compat.engine import compiled_rules, rule_load\n"
                           "print(compiled_rules.rules_digest(rule_load.rules_folder()), 'hashlib' in sys.modules)"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    digest, imported = done.stdout.split()
    assert imported == "False"
    h = hashlib.blake2b(f"format {compiled_rules.FORMAT}".encode(), digest_size=16)
    for relative, path in sorted(compiled_rules._yaml_files(str(rules_dir()), "")):
        h.update(b"rules/" + relative.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    package = Path(compiled_rules.__file__).resolve().parent.parent
    for name in compiled_rules.VALIDITY_CODE:
        h.update(name.encode() + b"\0" + (package / name).read_bytes().replace(b"\r\n", b"\n") + b"\0")
    assert digest == h.hexdigest()
