"""The package's layout shows its data flow: few top-level modules, no import cycle (between
modules, counting imports inside functions, nor between folders), and the checker never
imports the runtime's heavy dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import inkling_compat

PACKAGE = Path(inkling_compat.__file__).resolve().parent
MAX_TOP_LEVEL_MODULES = 9  # entry points (cli, api, __main__), errors, explain, fleet and the two writers (output_stream, write_file)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if "kernels" not in p.relative_to(PACKAGE).parts[:1]  # kernels/ maps in from the top-level folder
    }


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of the package that `name` imports anywhere (at its top, inside a function, or
    under TYPE_CHECKING): an import inside a function, or one for the types alone, still ties
    the two modules together (neither reads without the other)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(filter(None, (owner(a.name) for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                hit = owner(candidate if candidate in known else base)
                if hit:
                    found.add(hit)
    return {m for m in found if m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items()}


def _folder(name: str) -> str:
    """The folder a module belongs to: `inkling_compat.engine` for engine/rule_load.py; a top-level
    module (api, cli, fleet, ...) is its own."""
    parts = name.split(".")
    return ".".join(parts[:2])


def _assert_acyclic(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state and dep in graph:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_at_most_nine_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_import_cycle():
    _assert_acyclic(_graph())


def test_no_import_cycle_between_folders():
    folders: dict[str, set[str]] = {}
    for name, deps in _graph().items():
        here = _folder(name)
        folders.setdefault(here, set()).update(_folder(d) for d in deps if _folder(d) != here)
    _assert_acyclic(folders)


def test_sglang_replays_are_the_bottom_layer():
    """sglang/ replays sglang's functions on typed inputs: it imports nothing else of the
    package (the facts, inputs and engine build on it, never the other way)."""
    outside = {
        name: sorted(d for d in deps if not d.startswith("inkling_compat.sglang"))
        for name, deps in _graph().items()
        if name.startswith("inkling_compat.sglang")
    }
    assert {name: deps for name, deps in outside.items() if deps} == {}


def test_the_cycle_check_finds_a_cycle():
    with pytest.raises(AssertionError, match="a -> b -> a"):
        _assert_acyclic({"a": {"b"}, "b": {"a"}})


def test_the_checking_path_imports_no_runtime_dependency():
    code = (
        "import sys; from inkling_compat import check; import inkling_compat.cli, inkling_compat.fleet;"
        "check('examples/serve.yaml', 'examples/adapter', model='examples/config.json');"
        "print(sorted(m for m in ('torch', 'triton', 'hypothesis', 'numpy', 'safetensors') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_help_imports_no_engine():
    code = (
        "import sys, contextlib, io\nimport inkling_compat.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: c.main(['--help'])\n    except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'inkling_compat.engine', 'inkling_compat.facts'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert out.stdout.strip() == "[]"
