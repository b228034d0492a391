"""The checking path stays light: importing inkling_compat and running check() pulls in
neither torch nor triton (the reference kernels in `kernels/` are optional).

Start-up time is deliberately not asserted here; benchmarks/bench_check.py measures it.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "triton")

PROBE = """
import json, sys
import inkling_compat
from inkling_compat import check
from inkling_compat.testing.scenarios import example_arguments
report = check(**example_arguments({}))
bad = check(**example_arguments({"config": {"lora_backend": "csgmv"}}))
from inkling_compat import cli  # the rest of the tool
from inkling_compat.report import text as render
from inkling_compat.publish import catalog, schemas as schema_export
heavy = sorted(m for m in sys.modules if m.split(".")[0] in %r)
print(json.dumps({"ok": report.ok, "bad_ok": bad.ok, "heavy": heavy}))
""" % (HEAVY,)


def test_check_imports_neither_torch_nor_triton():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["ok"] is True and data["bad_ok"] is False, data
    assert data["heavy"] == [], f"checking path imported {data['heavy']}"


def test_cli_check_imports_neither_torch_nor_triton(tmp_path):
    import yaml

    from inkling_compat.testing.scenarios import base_scenarios

    legacy = base_scenarios()["legacy"]
    (tmp_path / "serve.yaml").write_text(yaml.safe_dump(legacy["config"]), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(legacy["model"]), encoding="utf-8")
    (tmp_path / "adapter.yaml").write_text(yaml.safe_dump(legacy["adapter"]), encoding="utf-8")
    probe = (
        "import sys\n"
        "from inkling_compat import cli\n"
        "code = cli.main(['check', '--config', 'serve.yaml', '--model', 'config.json', '--adapter', 'adapter.yaml'])\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')]\n"
        "print(f'CODE={code} HEAVY=' + ','.join(sorted(heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "CODE=0 HEAVY="


# What a plain `check --launch` of a shell script never needs: YAML (a script and JSON files),
# TOML (a pyproject that does not name our table), pydantic and what only it imports (the inputs
# are read into plain records: inputs/models.py `read`; its validation is for input typed
# otherwise), the rules' sources and their schema (the compiled artifact is read), the fixers,
# explain, publishing, the runtime, the other output formats, modules whose one use has a
# lighter way (uuid: lora_id's uuid5; html: escaping a secret found), the terminal's size (shutil,
# and with it bz2 and lzma: no parser built for a check asks it), shlex (compose's string
# commands only), logging (the CEL core binds it and never logs: engine/cel.py), the CEL parse
# tree and the rules' path check (the compiled artifact says what each rule reads), string (its
# Formatter writes the messages of rules that fire), datetime (the CEL core reads its C API from
# `_datetime`: engine/cel.py), the CEL core itself (the rules' expressions run as their generated
# Python forms: engine/python_first.py; CEL only where a form cannot answer), the check order (the compiled artifact holds each rule's rank),
# the other releases' site data (a check of the default release), the structured deployment
# formats (Kubernetes, compose, SkyPilot, Dockerfile: a script is read by inputs/deployment.py)
# and the problems' places in the
# files (none to place in a check that passes: inputs/source_map.py), argparse with gettext and
# locale (the command line and sglang's arguments of a plain launch are read without a parser:
# cli._plain_check, argument_table.plain_values), the public API's module (the command
# calls inputs/launch.py itself). Each is imported only where it is used;
# the start-up figure is benchmarks/bench_check.py's.
NOT_ON_THE_LAUNCH_PATH = (
    "cel",
    "inkling_compat.engine.cel",
    "inkling_compat.engine.cel_python",
    "yaml",
    "logging",
    "string",
    "datetime",
    "inkling_compat.engine.cel_tree",
    "inkling_compat.engine.paths",
    "inkling_compat.engine.rule_order",
    "inkling_compat.engine.sites",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "importlib.metadata",
    "email",
    "uuid",
    "platform",
    "shutil",
    "bz2",
    "lzma",
    "shlex",
    "html",
    "huggingface_hub",
    "safetensors",
    "numpy",
    "inkling_compat.inputs.input_schema",
    "tomllib",
    "re2",
    "torch",
    "triton",
    "inkling_compat.inputs.yaml_read",
    "inkling_compat.inputs.deployment_formats",
    "inkling_compat.inputs.source_map",
    "inkling_compat.engine.rule_schema",
    "inkling_compat.engine.definitions",
    "inkling_compat.engine.fixes",
    "inkling_compat.fix",
    "inkling_compat.explain",
    "inkling_compat.publish",
    "inkling_compat.runtime",
    "inkling_compat.testing",
    "inkling_compat.fleet",
    "inkling_compat.report.sarif",
    "inkling_compat.report.junit",
    "inkling_compat.report.checkstyle",
    "inkling_compat.report.gitlab",
    "inkling_compat.report.github",
    "inkling_compat.report.json_report",
    "argparse",
    "gettext",
    "locale",
    "inkling_compat.inputs.argument_parser",
    "inkling_compat.inputs.cli_parser",
    "inkling_compat.api",
)


def _probe(flag: str, probe: str) -> dict:
    """The JSON the probe prints last, run by a fresh interpreter (with `flag`) from the repository root."""
    import inkling_compat

    root = Path(inkling_compat.__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, flag, "-c", probe], capture_output=True, text=True, timeout=120, cwd=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def _launch_check() -> dict:
    """The exit code of `check --launch examples/launch.sh` and the modules it imported, in a fresh
    interpreter (its output redirected without contextlib, which a check does not import)."""
    probe = (
        "import io, json, sys\n"
        "from inkling_compat.cli import main\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        "code = main(['check', '--launch', 'examples/launch.sh'])\n"
        "sys.stdout = real\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    return _probe("-P", probe)


def test_a_launch_check_imports_only_what_it_uses():
    data = _launch_check()
    assert data["code"] == 0, data["code"]
    found = sorted(m for m in data["modules"] if any(m == name or m.startswith(name + ".") for name in NOT_ON_THE_LAUNCH_PATH))
    assert found == [], f"a check of examples/launch.sh imported {found}"
    # tree-sitter's and tree-sitter-bash's compiled bindings, without their packages' `__init__`
    # (typing, importlib.resources: inputs/shell.py `_binding`)
    assert {"tree_sitter._binding", "tree_sitter_bash._binding"} <= set(data["modules"])
    assert not {"tree_sitter", "tree_sitter_bash"} & set(data["modules"])


# typing (and _typing, typing.io, typing.re with it) is the type checker's alone: the modules a
# check imports import it under `TYPE_CHECKING` (docs/architecture.md), and reading the inputs
# resolves no annotation (inputs/field_types.py).
NOT_IMPORTED_BY_A_PASSING_CHECK = ("typing", "_typing", "typing.io", "typing.re")


def test_a_passing_launch_check_imports_no_typing():
    data = _launch_check()
    assert data["code"] == 0, data["code"]
    assert [m for m in NOT_IMPORTED_BY_A_PASSING_CHECK if m in data["modules"]] == []


# The records of inputs/, facts/ and sglang/ are made without the dataclasses module
# (sglang/plain_dataclass.py) and their paths read without pathlib (inputs/path_text.py):
# reading a launch file, parsing its command, loading the inputs and deriving the facts import
# neither, nor what they import; nor hashlib (lora_id's SHA-1 is Python's own `_sha1`, without
# OpenSSL's), struct (the float32 range is a comparison) nor weakref (adapter_dir holds its tables
# weakly through the built-in _weakref). (Run without `site`, whose .pth files import pathlib in
# a development venv, the site-packages folders added as plain folders.)
NOT_ON_THE_INPUTS_PATH = ("dataclasses", "inspect", "ast", "dis", "tokenize", "pathlib", "urllib.parse", "ipaddress", "shutil", "bz2", "lzma", "hashlib", "_hashlib", "struct", "weakref")


def test_the_inputs_and_facts_of_a_launch_check_need_no_dataclasses_nor_pathlib():
    import site

    probe = (
        "import json, sys\n"
        f"sys.path.extend({site.getsitepackages()!r})\n"
        "from inkling_compat.inputs import argument_table\n"
        "from inkling_compat.inputs.deployment import read_deployment\n"
        "from inkling_compat.inputs.launch import parse_launch\n"
        "from inkling_compat.inputs.release import find_release\n"
        "from inkling_compat.facts.derive import derive\n"
        "from inkling_compat.facts.inputs import load_inputs\n"
        "release = find_release(None, 'examples/launch.sh')\n"
        "with argument_table.using(release.version):\n"
        "    command = read_deployment('examples/launch.sh').commands[0]\n"
        "    launch = parse_launch(list(command.words), command.file, env=dict(command.env), unknown=dict(command.unknown))\n"
        "    facts = derive(load_inputs(launch))\n"
        "print(json.dumps({'adapters': len(facts.adapters), 'modules': sorted(sys.modules)}))\n"
    )
    data = _probe("-S", probe)
    assert data["adapters"] == 1  # (examples/adapter read: the adapter's records made too)
    assert [m for m in NOT_ON_THE_INPUTS_PATH if m in data["modules"]] == []
    assert not any(m.startswith(("inkling_compat.engine", "inkling_compat.report")) for m in data["modules"])


def test_a_launch_check_imports_no_importlib_util():
    """The package's folders are found through the packages imported (inputs/package_files.py)
    and tree-sitter's bindings by importlib.machinery (inputs/shell.py `_binding`): importing
    importlib.util would cost a check about 0.6 ms. (Without `site`: a development venv's
    editable-install finder imports it at start.)"""
    import site

    probe = (
        "import io, json, sys\n"
        f"sys.path.extend({site.getsitepackages()!r})\n"
        "from inkling_compat.cli import main\n"
        "out, sys.stdout = sys.stdout, io.StringIO()\n"
        "code = main(['check', '--launch', 'examples/launch.sh'])\n"
        "sys.stdout = out\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    data = _probe("-S", probe)
    assert data["code"] == 0
    assert "importlib.util" not in data["modules"]
    assert {"tree_sitter._binding", "tree_sitter_bash._binding"} <= set(data["modules"])


def test_the_cel_core_is_loaded_without_importing_logging():
    """pyo3-log binds `logging` when the CEL core loads; it gets a stand-in that imports the real
    module on first use (engine/cel.py), and the stand-in is not left in sys.modules."""
    probe = (
        "import sys\n"
        "from inkling_compat.engine import cel\n"
        "assert 'logging' not in sys.modules, 'logging imported'\n"
        "assert cel.compile('1 + 1').execute(cel.Context()) == 2\n"
        "stand_in = cel._LoggingOnFirstUse('logging')\n"
        "import logging\n"
        "assert stand_in.getLogger is logging.getLogger and sys.modules['logging'] is logging\n"
        "del sys.modules['logging']\n"
        "loading = sys.modules['logging'] = cel._LoggingOnFirstUse('logging')\n"
        "getLogger = loading.getLogger  # (a read while the extension loads: the real module replaces it)\n"
        "assert sys.modules['logging'] is not loading and getLogger is sys.modules['logging'].getLogger\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
